// dmlps-bench codec: how fast each compression codec (dmlps/compress)
// encodes and decodes on one core, against memcpy of the same float bytes
// in the same run, and how much it saves: whether a codec costs less time
// than the bytes it saves take on a link (docs/compression.md).
#ifndef DMLPS_BENCH_CODEC_H_
#define DMLPS_BENCH_CODEC_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/bench/report.h"

namespace dmlps::bench {

struct CodecBenchConfig {
  std::vector<std::string> codecs = {"fp16", "bf16", "int8", "topk:0.01"};  // compress::ParseCodec
  // Dense float32 payloads, in bytes (whole floats).
  std::vector<int64_t> sizes = {int64_t{256} << 10, int64_t{4} << 20, int64_t{64} << 20};
  // Kernel sets: "auto" (what Encode and Decode run on this CPU), "scalar" or
  // "avx2" (Unavailable where the CPU lacks it).
  std::vector<std::string> kernels = {"auto"};
  int64_t repeat = 5;  // timed samples per measurement, after one untimed; medians reported
  uint64_t seed = 1;
};

// Every problem with the config, one per line.
std::vector<std::string> ValidateCodecBenchConfig(const CodecBenchConfig& config);

struct CodecRow {
  std::string codec;    // as compress::CodecName spells it
  std::string kernels;  // the set that ran: "avx2" or "scalar"
  int64_t bytes = 0;    // the dense payload
  int64_t encoded_bytes = 0;
  // Milliseconds per call: Encode, Decode, DecodeAdd, and memcpy of the
  // dense payload, each sample taken in turn.
  Spread encode_ms;
  Spread decode_ms;
  Spread add_ms;
  Spread memcpy_ms;
  // Dense bytes per second at the medians, in GB/s (1e9 bytes).
  double encode_gbps = 0;
  double decode_gbps = 0;
  double add_gbps = 0;
  double memcpy_gbps = 0;
  double vs_memcpy = 0;  // memcpy's median over encode's plus decode's
  double ratio = 0;      // bytes / encoded_bytes
  // The link speed in Gbit/s below which the bytes saved take longer to send
  // than encoding and decoding take: 8 (bytes - encoded) / (encode + decode).
  double pays_below_gbps = 0;
};

struct CodecReport {
  CodecBenchConfig config;
  std::vector<CodecRow> rows;
};

// Times every codec on every size and kernel set, on this thread alone, on
// values drawn as gradients are (normal, magnitudes over three decades).
// Unavailable when a kernel set asked for cannot run here; stops early
// (what was measured so far) on a signal.
Result<CodecReport> RunCodecBench(const CodecBenchConfig& config, const std::atomic<int>* signal,
                                  const std::function<void(const CodecRow&)>& progress);

// Table (title, rows, then int8's goal: encode plus decode at least a
// quarter of memcpy's speed), TSV (a header and the rows) or JSON (title,
// config, rows).
void WriteCodecReport(const CodecReport& report, Format format, std::ostream& out);

}  // namespace dmlps::bench

#endif  // DMLPS_BENCH_CODEC_H_
