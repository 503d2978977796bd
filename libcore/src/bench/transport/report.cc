// The report of dmlps-bench transport: the ratios and goals worked out from
// the rows' medians, and the rows written as a table, TSV or JSON.
#include "dmlps/bench/report.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "bench/transport/support.h"
#include "dmlps/base/json.h"
#include "dmlps/base/output_format.h"
#include "dmlps/bench/transport/transport.h"

namespace dmlps::bench {
namespace {

std::string Ratio(const std::optional<double>& r) {
  return r.has_value() ? Fixed(*r, 2) + "x" : std::string("-");
}

// The texts of `items`, comma-separated.
template <typename T, typename Text>
std::string Commas(const std::vector<T>& items, Text text) {
  std::string list;
  for (const T& item : items) {
    if (!list.empty()) list += ',';
    list += text(item);
  }
  return list;
}

std::string Title(const TransportConfig& c) {
  auto number = [](int64_t n) { return std::to_string(n); };
  std::string title =
      fmt::format("dmlps-bench transport: payloads {} over {}", Commas(c.sizes, FormatByteSize),
                  Commas(c.transports, [](const std::string& t) { return t; }));
  if (!c.sharded_only) {
    title += fmt::format("; dmlps with 1 server and {} workers (bsp, sgd); sums on {} threads",
                         Commas(c.workers, number), Commas(c.sum_threads, number));
  }
  if (!c.shards.empty()) {
    title += fmt::format("; dmlps-sharded with {} server shards and {} workers",
                         Commas(c.shards, number), c.shard_workers);
  }
  title += fmt::format("; chunks of {}; median of {} rounds in {} turns, each after {} warm-up",
                       c.chunk_bytes == 0 ? "dmlps's (auto)" : FormatByteSize(c.chunk_bytes),
                       c.rounds, std::min(c.rounds, kTurns), c.warmup);
  return title;
}

std::string GoalLine(const TransportGoal& g) {
  return fmt::format("goal: {}: {} {:.2f}x ({} {:.2f}x): {}", g.goal, g.transport, g.value,
                     g.met ? "<=" : ">", g.limit, g.met ? "met" : "not met");
}

void WriteTable(const TransportReport& report, std::ostream& out) {
  // The shards column and the speedup only when sharded rows are measured.
  bool sharded = false;
  for (const TransportRow& r : report.rows) sharded = sharded || r.shards > 0;
  std::vector<std::string> header = {"transport", "size",      "what",     "workers",
                                     "threads",   "median ms", "min ms",   "max ms",
                                     "GB/s",      "vs zmq",    "vs memcpy"};
  if (sharded) {
    header.insert(header.begin() + 4, "shards");
    header.push_back("speedup");
  }
  std::vector<std::vector<std::string>> cells;
  for (const TransportRow& r : report.rows) {
    std::vector<std::string> row = {r.transport,
                                    FormatByteSize(r.bytes),
                                    r.what,
                                    r.workers > 0 ? std::to_string(r.workers) : std::string("-"),
                                    r.threads > 0 ? std::to_string(r.threads) : std::string("-"),
                                    Fixed(r.ms.median, 3),
                                    Fixed(r.ms.min, 3),
                                    Fixed(r.ms.max, 3),
                                    Fixed(r.gbps, 2),
                                    Ratio(r.vs_zmq),
                                    Ratio(r.vs_memcpy)};
    if (sharded) {
      row.insert(row.begin() + 4, r.shards > 0 ? std::to_string(r.shards) : std::string("-"));
      row.push_back(Ratio(r.speedup));
    }
    cells.push_back(std::move(row));
  }
  out << Title(report.config) << '\n';
  WriteAligned(header, cells, 3, out);
  for (const TransportGoal& g : report.goals) out << GoalLine(g) << '\n';
  // Aggregation against memcpy, for each size and number of threads.
  for (const TransportRow& sum : report.rows) {
    if (sum.what != "sum") continue;
    for (const TransportRow& copy : report.rows) {
      if (copy.what != "memcpy" || copy.bytes != sum.bytes) continue;
      out << fmt::format(
          "aggregation: {} summed on {} thread{} at {:.2f} GB/s of gradient, "
          "{:.2f}x memcpy's {:.2f} GB/s\n",
          FormatByteSize(sum.bytes), sum.threads, sum.threads == 1 ? "" : "s", sum.gbps,
          copy.gbps > 0 ? sum.gbps / copy.gbps : 0.0, copy.gbps);
    }
  }
}

void WriteTsv(const TransportReport& report, std::ostream& out) {
  out << "transport\tbytes\twhat\tworkers\tmedian_ms\tmin_ms\tmax_ms\trounds\tgbps\tvs_zmq"
         "\tvs_memcpy\tshards\tspeedup\tthreads\n";
  auto ratio = [](const std::optional<double>& r) {
    return r.has_value() ? fmt::format("{}", *r) : std::string("-");
  };
  for (const TransportRow& r : report.rows) {
    out << r.transport << '\t' << r.bytes << '\t' << r.what << '\t' << r.workers << '\t'
        << fmt::format("{}\t{}\t{}\t{}\t{}", r.ms.median, r.ms.min, r.ms.max, r.ms.count, r.gbps)
        << '\t' << ratio(r.vs_zmq) << '\t' << ratio(r.vs_memcpy) << '\t' << r.shards << '\t'
        << ratio(r.speedup) << '\t' << r.threads << '\n';
  }
}

void WriteJson(const TransportReport& report, std::ostream& out) {
  const TransportConfig& c = report.config;
  auto ratio = [](const std::optional<double>& r) {
    return r.has_value() ? JsonNumber(*r) : std::string("null");
  };
  out << "{\"title\":";
  WriteJsonString(Title(c), out);
  out << ",\"config\":{\"sizes\":[";
  for (size_t i = 0; i < c.sizes.size(); ++i) out << (i ? "," : "") << c.sizes[i];
  out << "],\"transports\":[";
  for (size_t i = 0; i < c.transports.size(); ++i) {
    if (i) out << ',';
    WriteJsonString(c.transports[i], out);
  }
  out << "],\"workers\":[";
  for (size_t i = 0; i < c.workers.size(); ++i) out << (i ? "," : "") << c.workers[i];
  out << "],\"shards\":[";
  for (size_t i = 0; i < c.shards.size(); ++i) out << (i ? "," : "") << c.shards[i];
  out << "],\"shard_workers\":" << c.shard_workers
      << ",\"sharded_only\":" << (c.sharded_only ? "true" : "false");
  out << ",\"sum_threads\":[";
  for (size_t i = 0; i < c.sum_threads.size(); ++i) out << (i ? "," : "") << c.sum_threads[i];
  out << "],\"rounds\":" << c.rounds << ",\"warmup\":" << c.warmup
      << ",\"chunk_bytes\":" << c.chunk_bytes << "},\"rows\":[";
  for (size_t i = 0; i < report.rows.size(); ++i) {
    const TransportRow& r = report.rows[i];
    if (i) out << ',';
    out << "{\"transport\":";
    WriteJsonString(r.transport, out);
    out << ",\"bytes\":" << r.bytes << ",\"what\":";
    WriteJsonString(r.what, out);
    out << ",\"workers\":" << r.workers << ",\"threads\":" << r.threads
        << ",\"median_ms\":" << JsonNumber(r.ms.median) << ",\"min_ms\":" << JsonNumber(r.ms.min)
        << ",\"max_ms\":" << JsonNumber(r.ms.max) << ",\"rounds\":" << r.ms.count
        << ",\"gbps\":" << JsonNumber(r.gbps) << ",\"vs_zmq\":" << ratio(r.vs_zmq)
        << ",\"vs_memcpy\":" << ratio(r.vs_memcpy) << ",\"shards\":" << r.shards
        << ",\"speedup\":" << ratio(r.speedup) << '}';
  }
  out << "],\"goals\":[";
  for (size_t i = 0; i < report.goals.size(); ++i) {
    const TransportGoal& g = report.goals[i];
    if (i) out << ',';
    out << "{\"goal\":";
    WriteJsonString(g.goal, out);
    out << ",\"transport\":";
    WriteJsonString(g.transport, out);
    out << ",\"bytes\":" << g.bytes << ",\"value\":" << JsonNumber(g.value)
        << ",\"limit\":" << JsonNumber(g.limit) << ",\"met\":" << (g.met ? "true" : "false") << '}';
  }
  out << "]}\n";
}

}  // namespace

int64_t BytesMoved(const TransportRow& row) {
  if (row.what == "memcpy" || row.what == "sum") return row.bytes;
  if (row.what == "dmlps" || row.what == "dmlps-curve" || row.what == "dmlps-sharded") {
    return 2 * std::max<int64_t>(row.workers, 1) * row.bytes;
  }
  return 2 * row.bytes;
}

void CompleteTransportReport(TransportReport* report) {
  auto find = [&](const std::string& transport, int64_t bytes, const std::string& what,
                  int64_t workers, int64_t shards = 0) -> const TransportRow* {
    for (const TransportRow& r : report->rows) {
      if (r.transport == transport && r.bytes == bytes && r.what == what && r.workers == workers &&
          r.shards == shards && r.ms.count > 0 && r.ms.median > 0) {
        return &r;
      }
    }
    return nullptr;
  };
  for (TransportRow& r : report->rows) {
    if (const TransportRow* zmq = find(r.transport, r.bytes, "zmq", 0); zmq != nullptr) {
      r.vs_zmq = r.ms.median / zmq->ms.median;
    }
    if (const TransportRow* copy = find("mem", r.bytes, "memcpy", 0); copy != nullptr) {
      r.vs_memcpy = r.ms.median / copy->ms.median;
    }
    if (r.what != "dmlps-sharded" || r.ms.median <= 0) continue;
    if (const TransportRow* one = find(r.transport, r.bytes, r.what, r.workers, 1);
        one != nullptr) {
      r.speedup = one->ms.median / r.ms.median;
    }
  }
  report->goals.clear();
  struct Asked {
    int64_t bytes;
    double limit;
    const char* goal;
  };
  const Asked asked[] = {
      {int64_t{4} << 20, 1.15, "4M push+pull within 1.15x raw ZeroMQ ping-pong"},
      {int64_t{64} << 20, 0.5, "64M push+pull within 0.5x raw ZeroMQ single-message ping-pong"},
  };
  for (const std::string& transport : report->config.transports) {
    for (const Asked& a : asked) {
      const TransportRow* ours = find(transport, a.bytes, "dmlps", 1);
      const TransportRow* zmq = find(transport, a.bytes, "zmq", 0);
      if (ours == nullptr || zmq == nullptr) continue;
      TransportGoal goal;
      goal.goal = a.goal;
      goal.transport = transport;
      goal.bytes = a.bytes;
      goal.value = ours->ms.median / zmq->ms.median;
      goal.limit = a.limit;
      goal.met = goal.value <= a.limit;
      report->goals.push_back(goal);
    }
  }
}

void WriteTransportReport(const TransportReport& report, Format format, std::ostream& out) {
  switch (format) {
    case Format::kTable:
      WriteTable(report, out);
      break;
    case Format::kTsv:
      WriteTsv(report, out);
      break;
    case Format::kJson:
      WriteJson(report, out);
      break;
  }
}

}  // namespace dmlps::bench
