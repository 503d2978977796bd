// dmlps-bench transport: how close a dmlps push+pull round trip comes to the
// machine's limits. Side by side for each payload size: memcpy of the
// payload, the server's staging sum of a gradient of that size, raw ZeroMQ
// ping-pong of the payload (one message, and cut into the chunks dmlps
// streams), and dmlps round trips with 1 server and N workers, over tcp
// loopback and ipc, and with the model cut over S server shards. The dmlps
// side is the server's and the worker's own code: Endpoint, streamed
// payloads (IncomingTensor), the BSP policy and the ModelStore that sums,
// applies and replies.
#ifndef DMLPS_BENCH_TRANSPORT_TRANSPORT_H_
#define DMLPS_BENCH_TRANSPORT_TRANSPORT_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/bench/report.h"
#include "dmlps/proto/codec.h"

namespace dmlps::bench {

struct TransportConfig {
  std::vector<int64_t> sizes = {int64_t{4} << 20, int64_t{64} << 20};  // payload bytes
  std::vector<std::string> transports = {"tcp", "ipc"};
  std::vector<int64_t> workers = {1, 2, 4};   // dmlps cluster sizes
  std::vector<int64_t> sum_threads = {1, 2};  // ModelStore threads of the sum rows
  int64_t rounds = 21;  // timed repetitions of each measurement, taken in 3 turns
  int64_t warmup = 2;   // untimed ones at the start of each turn
  // Streamed chunk (and raw piece) size; 0: the size dmlps-server and
  // dmlps-worker choose for each payload (proto::ChunkBytesFor).
  int64_t chunk_bytes = 0;
  std::chrono::milliseconds timeout{30000};  // the longest any one wait may last
  bool curve = false;  // also measure dmlps round trips encrypted with CURVE (dmlps-curve rows)
  // dmlps-sharded rows: the model cut over each of these numbers of server
  // shards (see server::ShardBounds), with shard_workers workers; empty: none.
  std::vector<int64_t> shards = {1, 2, 4};
  int64_t shard_workers = 4;
  bool sharded_only = false;  // measure the dmlps-sharded rows and nothing else
};

// The chunk size a payload of `payload_bytes` is measured with.
int64_t ChunkBytes(const TransportConfig& config, int64_t payload_bytes);

// Every problem with a config, one line each; empty when it can run.
std::vector<std::string> ValidateTransportConfig(const TransportConfig& config);

// Parses a byte count: digits with an optional K, M or G (binary: 4M is
// 4 MiB). InvalidArgument otherwise, or when zero or above 1G.
Result<int64_t> ParseByteSize(std::string_view text);
// The shortest form ParseByteSize reads back: "4M", "512K", "1000".
std::string FormatByteSize(int64_t bytes);

// One measurement, timed `rounds` times.
struct TransportRow {
  std::string transport;  // tcp, ipc; "mem" for memcpy and sum
  int64_t bytes = 0;      // the payload
  // memcpy: one copy of the payload. sum: the server staging one gradient
  // (acc += w * g) on `threads` threads. zmq: raw ZeroMQ ping-pong, the payload as one message
  // echoed back. zmq-chunks: the same cut into pieces of the chunk size, each
  // echoed as it arrives. dmlps: each worker pushes a gradient of the
  // payload and pulls the model back; the server sums all workers' gradients
  // (BSP) before it answers; a round is timed to its slowest worker.
  // dmlps-curve: the same over CURVE, with the server's ZAP handler.
  // dmlps-sharded: the dmlps round trips with the model cut over `shards`
  // servers, each summing, applying and streaming back its slice; every
  // worker pushes each shard its slice and assembles the model from theirs.
  std::string what;
  int64_t workers = 0;  // dmlps: workers; others 0
  int64_t shards = 0;   // dmlps-sharded: server shards; others 0
  // sum: the ModelStore's threads asked for (a payload of one chunk is
  // summed on the caller's thread alone); others 0.
  int64_t threads = 0;
  Spread ms;                        // milliseconds per round
  double gbps = 0;                  // bytes moved per second at the median (see GbPerSecond)
  std::optional<double> vs_zmq;     // median over zmq's (same transport and size)
  std::optional<double> vs_memcpy;  // median over memcpy's (same size)
  // dmlps-sharded: the median of 1 shard over this one's (same transport,
  // size and workers): the speedup the shards give.
  std::optional<double> speedup;
};

// Bytes a row's round moves: the payload for memcpy and sum, twice it for
// ping-pong (there and back), 2 * workers times it for dmlps (sharded or not).
int64_t BytesMoved(const TransportRow& row);

// A goal of the tracker's issue, checked against the medians.
struct TransportGoal {
  std::string goal;  // what is asked
  std::string transport;
  int64_t bytes = 0;
  double value = 0;  // the ratio measured
  double limit = 0;  // the ratio asked for
  bool met = false;
};

struct TransportReport {
  TransportConfig config;
  std::vector<TransportRow> rows;
  // 4M: dmlps with 1 worker within 1.15x raw ZeroMQ; 64M: within 0.5x of
  // raw ZeroMQ's single message. Only for the sizes measured.
  std::vector<TransportGoal> goals;
};

// Progress, one line per measurement, for the log.
using TransportProgress = std::function<void(const TransportRow& row)>;

// Runs every measurement of `config`, in one process: threads with a ZeroMQ
// context each, over tcp://127.0.0.1 and ipc:// sockets in a private
// temporary folder. The measurements of a size take turns (three, or fewer
// when rounds are fewer), each turn afresh with its warm-up rounds, so that
// drift in the machine's load hits them alike. Unavailable when a peer stays silent past the
// timeout; stops early (Unavailable, "interrupted") once *signal is nonzero. Every thread is joined
// and the folder removed on every path.
Result<TransportReport> RunTransportBench(const TransportConfig& config,
                                          const std::atomic<int>* signal,
                                          const TransportProgress& progress = {});

// Fills in ratios and goals from the rows' medians.
void CompleteTransportReport(TransportReport* report);

// Table (title, rows, goal lines), TSV (a header and the rows) or JSON
// (title, config, rows, goals).
void WriteTransportReport(const TransportReport& report, Format format, std::ostream& out);

}  // namespace dmlps::bench

#endif  // DMLPS_BENCH_TRANSPORT_TRANSPORT_H_
