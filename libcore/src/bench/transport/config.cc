// The configuration of dmlps-bench transport: what makes it runnable, and
// the byte sizes its flags take.
#include <algorithm>
#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "dmlps/bench/transport/transport.h"
#include "dmlps/net/curve.h"

namespace dmlps::bench {

int64_t ChunkBytes(const TransportConfig& config, int64_t payload_bytes) {
  return config.chunk_bytes > 0 ? config.chunk_bytes : proto::ChunkBytesFor(payload_bytes);
}

std::vector<std::string> ValidateTransportConfig(const TransportConfig& config) {
  std::vector<std::string> problems;
  if (config.sizes.empty()) problems.push_back("--sizes: no payload size");
  for (int64_t s : config.sizes) {
    if (s < 4 || s > (int64_t{1} << 30) || s % 4 != 0) {
      problems.push_back("--sizes: " + std::to_string(s) +
                         " bytes is not a whole number of floats from 4 bytes to 1G");
    }
  }
  if (config.transports.empty()) problems.push_back("--transports: no transport");
  if (config.curve && !net::CurveAvailable()) {
    problems.push_back("--curve: this libzmq was built without CURVE");
  }
  for (const std::string& t : config.transports) {
    if (t != "tcp" && t != "ipc") {
      problems.push_back("--transports: unknown transport '" + t + "' (tcp or ipc)");
    }
  }
  if (config.workers.empty()) problems.push_back("--worker-counts: no cluster size");
  if (config.sum_threads.empty()) problems.push_back("--sum-threads: no number of threads");
  for (int64_t t : config.sum_threads) {
    if (t < 1 || t > 256) {
      problems.push_back("--sum-threads: " + std::to_string(t) + " is not in [1, 256]");
    }
  }
  for (int64_t w : config.workers) {
    if (w < 1 || w > 64) {
      problems.push_back("--worker-counts: " + std::to_string(w) + " is not in [1, 64]");
    }
  }
  if (config.rounds < 1 || config.rounds > 1000000) {
    problems.push_back("--rounds must be in [1, 1000000]");
  }
  if (config.warmup < 0 || config.warmup > 1000000) {
    problems.push_back("--warmup must be in [0, 1000000]");
  }
  if (config.chunk_bytes != 0 &&
      (config.chunk_bytes < 4 || config.chunk_bytes % 4 != 0 ||
       config.chunk_bytes > proto::kMaxChunkFloats * static_cast<int64_t>(sizeof(float)))) {
    problems.push_back(
        "--chunk-bytes must be auto or a whole number of floats from 4 bytes to 256M");
  }
  for (int64_t k : config.shards) {
    if (k < 1 || k > 64) {
      problems.push_back("--shards: " + std::to_string(k) + " is not in [1, 64]");
      continue;
    }
    for (int64_t s : config.sizes) {
      if (s >= 4 && s / 4 < k) {
        problems.push_back("--shards: " + std::to_string(k) + " shards need at least " +
                           std::to_string(k) + " floats; --sizes gives " + std::to_string(s) +
                           " bytes");
      }
    }
  }
  if (config.shard_workers < 1 || config.shard_workers > 64) {
    problems.push_back("--shard-workers must be in [1, 64]");
  }
  if (config.sharded_only && config.shards.empty()) {
    problems.push_back("--sharded-only: no shard count to measure (--shards none)");
  }
  if (config.timeout.count() <= 0) problems.push_back("the timeout must be positive");
  return problems;
}

Result<int64_t> ParseByteSize(std::string_view text) {
  const std::string original(text);
  int64_t unit = 1;
  if (!text.empty()) {
    switch (std::toupper(static_cast<unsigned char>(text.back()))) {
      case 'K':
        unit = int64_t{1} << 10;
        break;
      case 'M':
        unit = int64_t{1} << 20;
        break;
      case 'G':
        unit = int64_t{1} << 30;
        break;
      default:
        break;
    }
    if (unit > 1) text.remove_suffix(1);
  }
  if (text.empty() || text.size() > 10 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return Status::InvalidArgument("'" + original + "' is not a size such as 4096, 512K or 4M");
  }
  const int64_t bytes = std::stoll(std::string(text)) * unit;
  if (bytes <= 0 || bytes > (int64_t{1} << 30)) {
    return Status::InvalidArgument("'" + original + "' is not a size from 1 byte to 1G");
  }
  return bytes;
}

std::string FormatByteSize(int64_t bytes) {
  for (auto [unit, suffix] : {std::pair<int64_t, const char*>{int64_t{1} << 30, "G"},
                              {int64_t{1} << 20, "M"},
                              {int64_t{1} << 10, "K"}}) {
    if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + suffix;
  }
  return std::to_string(bytes);
}

}  // namespace dmlps::bench
