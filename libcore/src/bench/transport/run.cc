// How dmlps-bench transport runs: the measurements of each payload size
// planned as slots, their rounds taken in turns, their times made rows.
#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bench/transport/baselines.h"
#include "bench/transport/dmlps.h"
#include "bench/transport/support.h"
#include "dmlps/bench/report.h"
#include "dmlps/bench/transport/transport.h"

namespace dmlps::bench {
namespace {

// Takes `rounds` rounds of one measurement (after the warm-up).
using Take = std::function<Result<std::vector<double>>(const TransportConfig&)>;

// One measurement of a size: its row, how to take its rounds, and the
// times taken so far.
struct Slot {
  TransportRow row;
  Take take;
  std::vector<double> times;
};

// Where the measurements' sockets bind: any port on the tcp loopback, or
// an ipc socket of its own in the private folder.
class Addresses {
 public:
  explicit Addresses(const TempDir& dir) : dir_(dir) {}
  std::string Next(const std::string& transport) {
    if (transport == "tcp") return std::string("tcp://127.0.0.1:*");
    return "ipc://" + dir_.path() + "/s" + std::to_string(sockets_++);
  }

 private:
  const TempDir& dir_;
  int64_t sockets_ = 0;
};

// The measurements of one payload size, in the order of the report's rows.
// Their takes keep `addresses`, which must outlive them.
class SizePlan {
 public:
  SizePlan(int64_t bytes, const TransportConfig& config, const std::atomic<int>* signal,
           Addresses* addresses)
      : bytes_(bytes), config_(config), signal_(signal), addresses_(addresses) {}

  // Every measurement of the size; the plan is spent.
  std::vector<Slot> Slots() && {
    const bool all = !config_.sharded_only;
    if (all) AddLocal();
    for (const std::string& transport : config_.transports) {
      if (all) AddZmq(transport);
      if (all) AddDmlps(transport);
      AddSharded(transport);
    }
    return std::move(slots_);
  }

 private:
  void Add(std::string transport, std::string what, int64_t workers, int64_t shards, Take take) {
    Slot s;
    s.row.transport = std::move(transport);
    s.row.bytes = bytes_;
    s.row.what = std::move(what);
    s.row.workers = workers;
    s.row.shards = shards;
    s.take = std::move(take);
    slots_.push_back(std::move(s));
  }

  // memcpy and the server's staging sums: the limits without a network.
  void AddLocal() {
    const int64_t bytes = bytes_;
    Add("mem", "memcpy", 0, 0, [bytes](const TransportConfig& c) -> Result<std::vector<double>> {
      return MemcpyTimes(bytes, c);
    });
    for (int64_t threads : config_.sum_threads) {
      Add("mem", "sum", 0, 0,
          [bytes, threads](const TransportConfig& c) { return SumTimes(bytes, threads, c); });
      slots_.back().row.threads = threads;
    }
  }

  // Raw ZeroMQ: the payload as one message, and cut into the chunks dmlps
  // streams when it is more than one.
  void AddZmq(const std::string& transport) {
    const int64_t chunk = ChunkBytes(config_, bytes_);
    const int64_t pieces = (bytes_ + chunk - 1) / chunk;
    Add(transport, "zmq", 0, 0, PingPong(transport, 1));
    if (pieces > 1) Add(transport, "zmq-chunks", 0, 0, PingPong(transport, pieces));
  }

  // dmlps with 1 server and each cluster size, also over CURVE when asked.
  void AddDmlps(const std::string& transport) {
    for (int64_t workers : config_.workers) {
      Add(transport, "dmlps", workers, 0, RoundTrips(transport, 1, workers, false));
      if (config_.curve) {
        Add(transport, "dmlps-curve", workers, 0, RoundTrips(transport, 1, workers, true));
      }
    }
  }

  // dmlps with the model cut over each number of server shards.
  void AddSharded(const std::string& transport) {
    const int64_t workers = config_.shard_workers;
    for (int64_t shards : config_.shards) {
      Add(transport, "dmlps-sharded", workers, shards,
          RoundTrips(transport, shards, workers, false));
    }
  }

  Take PingPong(const std::string& transport, int64_t pieces) const {
    return [bytes = bytes_, signal = signal_, addresses = addresses_, transport,
            pieces](const TransportConfig& c) {
      Shared shared(signal);
      return RawPingPong(addresses->Next(transport), bytes, pieces, c, shared);
    };
  }

  Take RoundTrips(const std::string& transport, int64_t shards, int64_t workers, bool curve) const {
    return [bytes = bytes_, signal = signal_, addresses = addresses_, transport, shards, workers,
            curve](const TransportConfig& c) {
      Shared shared(signal);
      std::vector<std::string> binds;
      for (int64_t k = 0; k < shards; ++k) binds.push_back(addresses->Next(transport));
      return DmlpsRoundTrips(binds, bytes, workers, curve, c, shared);
    };
  }

  const int64_t bytes_;
  const TransportConfig& config_;
  const std::atomic<int>* const signal_;
  Addresses* const addresses_;
  std::vector<Slot> slots_;
};

// The measurements take turns, a few rounds each, so that whatever else
// the machine does meanwhile hits them alike; each turn starts afresh with
// its warm-up rounds.
Status TakeInTurns(const TransportConfig& config, const std::atomic<int>* signal,
                   std::vector<Slot>* slots) {
  const int64_t turns = std::min(config.rounds, kTurns);
  for (int64_t turn = 0; turn < turns; ++turn) {
    TransportConfig part = config;
    part.rounds = config.rounds / turns + (turn < config.rounds % turns ? 1 : 0);
    for (Slot& s : *slots) {
      if (signal != nullptr && signal->load() != 0) return Status::Unavailable("interrupted");
      DMLPS_ASSIGN_OR_RETURN(std::vector<double> times, s.take(part));
      s.times.insert(s.times.end(), times.begin(), times.end());
    }
  }
  return Status::Ok();
}

// The slot's row with the spread of its times and the rate at the median.
TransportRow Measured(const Slot& slot) {
  TransportRow row = slot.row;
  row.ms = SpreadOf(slot.times);
  const double seconds = row.ms.median / 1000.0;
  row.gbps = seconds > 0 ? static_cast<double>(BytesMoved(row)) / seconds / 1e9 : 0;
  return row;
}

}  // namespace

Result<TransportReport> RunTransportBench(const TransportConfig& config,
                                          const std::atomic<int>* signal,
                                          const TransportProgress& progress) {
  if (std::vector<std::string> problems = ValidateTransportConfig(config); !problems.empty()) {
    return Status::InvalidArgument(problems.front());
  }
  DMLPS_ASSIGN_OR_RETURN(TempDir dir, TempDir::Make());
  Addresses addresses(dir);
  TransportReport report;
  report.config = config;
  for (int64_t bytes : config.sizes) {
    std::vector<Slot> slots = SizePlan(bytes, config, signal, &addresses).Slots();
    DMLPS_RETURN_IF_ERROR(TakeInTurns(config, signal, &slots));
    for (const Slot& s : slots) {
      TransportRow row = Measured(s);
      if (progress) progress(row);
      report.rows.push_back(std::move(row));
    }
  }
  CompleteTransportReport(&report);
  return report;
}

}  // namespace dmlps::bench
