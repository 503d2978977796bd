// dmlps-bench transport: parses the Transport flags, runs
// bench::RunTransportBench and prints its table on stdout.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>

#include "cmd/dmlps-bench/commands.h"
#include "dmlps/bench/transport.h"
#include "dmlps/cli/values.h"

namespace dmlps::bench_cli {
namespace {

std::string JoinSizes(const std::vector<int64_t>& sizes) {
  std::string text;
  for (int64_t s : sizes) {
    if (!text.empty()) text += ',';
    text += bench::FormatByteSize(s);
  }
  return text;
}

std::string JoinCounts(const std::vector<int64_t>& counts) {
  std::string text;
  for (int64_t n : counts) {
    if (!text.empty()) text += ',';
    text += std::to_string(n);
  }
  return text;
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
  options.add_options("Transport")
      ("sizes", "Payload sizes, comma-separated, in bytes with an optional K, M or G",
       cxxopts::value<std::string>()->default_value(JoinSizes(d.sizes)), "SIZE,...")
      ("transports", "Transports to measure: tcp (loopback), ipc",
       cxxopts::value<std::string>()->default_value("tcp,ipc"), "LIST")
      ("worker-counts", "Workers of the dmlps clusters measured, comma-separated",
       cxxopts::value<std::string>()->default_value(JoinCounts(d.workers)), "N,...")
      ("shards", "Server shards of the dmlps-sharded clusters measured, comma-separated, or none",
       cxxopts::value<std::string>()->default_value(JoinCounts(d.shards)), "N,...")
      ("shard-workers", "Workers of the dmlps-sharded clusters",
       cxxopts::value<std::string>()->default_value(std::to_string(d.shard_workers)), "N")
      ("sharded-only", "Measure the dmlps-sharded rows and nothing else")
      ("sum-threads", "Threads of the server's sum, comma-separated: a sum row for each",
       cxxopts::value<std::string>()->default_value(JoinCounts(d.sum_threads)), "N,...")
      ("rounds", "Timed rounds per measurement, taken in 3 turns; the table gives their median",
       cxxopts::value<std::string>()->default_value(std::to_string(d.rounds)), "R")
      ("warmup", "Untimed rounds at the start of each turn",
       cxxopts::value<std::string>()->default_value(std::to_string(d.warmup)), "W")
      ("chunk-bytes", "Chunk size of streamed payloads and of zmq-chunks (dmlps-server and "
       "dmlps-worker use the default)",
       cxxopts::value<std::string>()->default_value(bench::FormatByteSize(d.chunk_bytes)), "SIZE")
      ("curve", "Also measure the dmlps round trips encrypted with CURVE (dmlps-curve rows)");
}

int TransportCommand(const cxxopts::ParseResult& parsed, cli::FlagReader& flags) {
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
  read_size("chunk-bytes", flags.String("chunk-bytes"), &config.chunk_bytes);
  config.curve = flags.Has("curve");
  const bench::Format format = ReadFormat(flags);
  flags.AddProblems(bench::ValidateTransportConfig(config));
  if (!flags.problems().empty()) return cli::ReportUsageErrors(kProgram, flags.problems());

  cli::SetupLogging(kProgram, parsed);
  const std::atomic<int>* signal = cli::InstallSignalHandlers();
  auto progress = [](const bench::TransportRow& row) {
    std::string who;
    if (row.shards > 0) who += fmt::format(" over {} shard{}", row.shards, row.shards == 1 ? "" : "s");
    if (row.workers > 0) {
      who += fmt::format(" with {} worker{}", row.workers, row.workers == 1 ? "" : "s");
    }
    if (row.threads > 0) {
      who += fmt::format(" on {} thread{}", row.threads, row.threads == 1 ? "" : "s");
    }
    spdlog::info("{} {} {}{}: median {:.3f} ms (min {:.3f}, max {:.3f}), {:.2f} GB/s",
                 row.transport, bench::FormatByteSize(row.bytes), row.what, who,
                 row.ms.median, row.ms.min, row.ms.max, row.gbps);
  };
  Result<bench::TransportReport> report = bench::RunTransportBench(config, signal, progress);
  if (signal->load() != 0) return cli::ExitCodeForSignal(signal->load());
  if (!report.ok()) return cli::ReportError(kProgram, report.status());
  bench::WriteTransportReport(*report, format, std::cout);
  std::cout.flush();
  return 0;
}

}  // namespace dmlps::bench_cli
