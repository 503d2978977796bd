// dmlps-bench transport: parses the Transport flags, runs
// bench::RunTransportBench and prints its table on stdout.
#include <algorithm>

#include "cmd/dmlps-bench/commands.h"
#include "dmlps/cli/bench_programs.h"
#include "dmlps/cli/values.h"

namespace dmlps::bench_cli {
namespace {

// The values as `format` spells each, comma-separated: a default for --help.
std::string JoinValues(const std::vector<int64_t>& values, std::string (*format)(int64_t)) {
  std::string text;
  for (int64_t v : values) {
    if (!text.empty()) text += ',';
    text += format(v);
  }
  return text;
}

std::string JoinCounts(const std::vector<int64_t>& counts) {
  return JoinValues(counts, [](int64_t n) { return std::to_string(n); });
}

// A comma-separated list of counts (range checks are ValidateTransportConfig's).
std::vector<int64_t> ReadCounts(cli::FlagReader& flags, const std::string& flag,
                                const std::string& noun) {
  std::vector<int64_t> counts;
  for (const std::string& item : cli::SplitList(flags.String(flag))) {
    if (item.empty() || item.size() > 4 ||
        !std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      flags.AddProblem("--" + flag + ": '" + item + "' is not a number of " + noun);
      continue;
    }
    counts.push_back(std::stoll(item));
  }
  return counts;
}

}  // namespace

void AddTransportOptions(cxxopts::Options& options) {
  const bench::TransportConfig d;
  cli::AddFlags(
      options, "Transport",
      {{"sizes", "Payload sizes, comma-separated, in bytes with an optional K, M or G", "SIZE,...",
        JoinValues(d.sizes, bench::FormatByteSize)},
       {"transports", "Transports to measure: tcp (loopback), ipc", "LIST", "tcp,ipc"},
       {"worker-counts", "Workers of the dmlps clusters measured, comma-separated", "N,...",
        JoinCounts(d.workers)},
       {"shards",
        "Server shards of the dmlps-sharded clusters measured, comma-separated, or none "
        "(run: one count, the server run as that many shards; sim: the server shards "
        "simulated, one count; default 1 for both)",
        "N,...", JoinCounts(d.shards)},
       {"shard-workers", "Workers of the dmlps-sharded clusters", "N",
        std::to_string(d.shard_workers)},
       {"sharded-only", "Measure the dmlps-sharded rows and nothing else"},
       {"sum-threads", "Threads of the server's sum, comma-separated: a sum row for each", "N,...",
        JoinCounts(d.sum_threads)},
       {"rounds", "Timed rounds per measurement, taken in 3 turns; the table gives their median",
        "R", std::to_string(d.rounds)},
       {"warmup", "Untimed rounds at the start of each turn", "W", std::to_string(d.warmup)},
       {"chunk-bytes",
        "Chunk size of streamed payloads and of zmq-chunks; auto: the size "
        "dmlps-server and dmlps-worker choose for each payload",
        "SIZE", "auto"},
       {"curve", "Also measure the dmlps round trips encrypted with CURVE (dmlps-curve rows)"}});
}

cli::Program ReadTransportFlags(cli::FlagReader& flags) {
  bench::TransportConfig config;
  auto read_size = [&](const std::string& flag, const std::string& text, int64_t* out) {
    Result<int64_t> bytes = bench::ParseByteSize(text);
    if (!bytes.ok()) {
      flags.AddProblem("--" + flag + ": " + bytes.status().message());
      return false;
    }
    *out = *bytes;
    return true;
  };
  config.sizes.clear();
  for (const std::string& item : cli::SplitList(flags.String("sizes"))) {
    int64_t bytes = 0;
    if (read_size("sizes", item, &bytes)) config.sizes.push_back(bytes);
  }
  config.transports = cli::SplitList(flags.String("transports"));
  config.workers = ReadCounts(flags, "worker-counts", "workers");
  config.shards.clear();
  if (flags.String("shards") != "none") config.shards = ReadCounts(flags, "shards", "shards");
  config.shard_workers = flags.Int("shard-workers", 1, 64);
  config.sharded_only = flags.Has("sharded-only");
  config.sum_threads = ReadCounts(flags, "sum-threads", "threads");
  config.rounds = flags.Int("rounds", 1, 1000000);
  config.warmup = flags.Int("warmup", 0, 1000000);
  if (flags.String("chunk-bytes") != "auto") {
    read_size("chunk-bytes", flags.String("chunk-bytes"), &config.chunk_bytes);
  }
  config.curve = flags.Has("curve");
  return ProgramFor(flags, std::move(config), bench::ValidateTransportConfig,
                    cli::RunBenchTransportProgram);
}

}  // namespace dmlps::bench_cli
