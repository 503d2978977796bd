#include "dmlps/bench/codec.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

#include "compress/kernels.h"
#include "dmlps/base/json.h"
#include "dmlps/base/output_format.h"
#include "dmlps/bench/transport/transport.h"
#include "dmlps/compress/compress.h"

namespace dmlps::bench {
namespace {

using CodecClock = std::chrono::steady_clock;

// Each timed sample runs the operation on at least this many dense bytes,
// so that a small payload's sample is not one clock tick.
constexpr int64_t kCodecSampleBytes = int64_t{8} << 20;
constexpr double kCodecGoal = 0.25;  // int8 encode + decode against memcpy

// Keeps the compiler from dropping a copy nobody reads.
void CodecKeep(const void* p) { __asm__ __volatile__("" : : "r"(p) : "memory"); }

Result<const compress::Kernels*> CodecKernels(const std::string& name) {
  if (name == "auto") return &compress::BestKernels();
  if (name == "scalar") return &compress::ScalarKernels();
  if (compress::Avx2Kernels() == nullptr) {
    return Status::Unavailable("--kernels avx2: this CPU lacks AVX2, F16C or FMA");
  }
  return compress::Avx2Kernels();
}

std::vector<float> CodecValues(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> decades(-3.0f, 0.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng) * std::pow(10.0f, decades(rng));
  return v;
}

double CodecGbps(int64_t bytes, const Spread& ms) {
  return ms.median > 0 ? static_cast<double>(bytes) / (ms.median * 1e6) : 0;
}

// One measurement: each sample of each operation in turn, so that drift in
// the machine's load hits all four alike.
Result<CodecRow> MeasureCodec(const compress::Kernels& kernels, const compress::Codec& codec,
                              std::span<const float> values, int64_t repeat) {
  const auto bytes = static_cast<int64_t>(4 * values.size());
  const int64_t calls = std::max<int64_t>(1, kCodecSampleBytes / bytes);
  std::vector<std::byte> encoded;
  compress::EncodeWith(kernels, codec, values, &encoded);
  std::vector<float> out(values.size());
  std::vector<float> sum(values.size(), 0.0f);
  std::vector<float> copy(values.size());
  std::vector<double> encode_ms, decode_ms, add_ms, memcpy_ms;
  Status status;
  auto sample = [&](std::vector<double>* samples, bool timed, const auto& op) {
    const CodecClock::time_point start = CodecClock::now();
    for (int64_t c = 0; c < calls; ++c) op();
    const double ms = std::chrono::duration<double, std::milli>(CodecClock::now() - start).count();
    if (timed) samples->push_back(ms / static_cast<double>(calls));
  };
  for (int64_t r = 0; r <= repeat && status.ok(); ++r) {
    const bool timed = r > 0;
    sample(&memcpy_ms, timed, [&] {
      std::memcpy(copy.data(), values.data(), static_cast<size_t>(bytes));
      CodecKeep(copy.data());
    });
    sample(&encode_ms, timed, [&] { compress::EncodeWith(kernels, codec, values, &encoded); });
    sample(&decode_ms, timed, [&] {
      if (status.ok()) status = compress::DecodeWith(kernels, codec, encoded, out);
    });
    sample(&add_ms, timed, [&] {
      if (status.ok()) status = compress::DecodeAddWith(kernels, codec, encoded, 0.5f, sum);
    });
  }
  if (!status.ok()) return Status::Internal("the benchmark's own bytes: " + status.message());
  CodecRow row;
  row.codec = compress::CodecName(codec);
  row.kernels = kernels.name;
  row.bytes = bytes;
  row.encoded_bytes = static_cast<int64_t>(encoded.size());
  row.encode_ms = SpreadOf(encode_ms);
  row.decode_ms = SpreadOf(decode_ms);
  row.add_ms = SpreadOf(add_ms);
  row.memcpy_ms = SpreadOf(memcpy_ms);
  row.encode_gbps = CodecGbps(bytes, row.encode_ms);
  row.decode_gbps = CodecGbps(bytes, row.decode_ms);
  row.add_gbps = CodecGbps(bytes, row.add_ms);
  row.memcpy_gbps = CodecGbps(bytes, row.memcpy_ms);
  const double both_ms = row.encode_ms.median + row.decode_ms.median;
  row.vs_memcpy = both_ms > 0 ? row.memcpy_ms.median / both_ms : 0;
  row.ratio = row.encoded_bytes > 0 ? static_cast<double>(bytes) / row.encoded_bytes : 0;
  const double saved_bits = 8.0 * static_cast<double>(bytes - row.encoded_bytes);
  row.pays_below_gbps = both_ms > 0 ? saved_bits / (both_ms * 1e6) : 0;
  return row;
}

std::string CodecTitle(const CodecReport& report) {
  std::string kernels;
  for (const std::string& k : report.config.kernels) {
    if (!kernels.empty()) kernels += ',';
    kernels += k == "auto" ? std::string(compress::BestKernels().name) + " (auto)" : k;
  }
  return fmt::format(
      "dmlps-bench codec: one core, kernels {}; median of {} samples per codec and size; GB/s of "
      "dense float32 bytes",
      kernels, report.config.repeat);
}

void WriteCodecTable(const CodecReport& report, std::ostream& out) {
  out << CodecTitle(report) << '\n';
  std::vector<std::vector<std::string>> cells;
  for (const CodecRow& r : report.rows) {
    cells.push_back({r.codec, r.kernels, FormatByteSize(r.bytes), Fixed(r.ratio, 2),
                     Fixed(r.encode_gbps, 2), Fixed(r.decode_gbps, 2), Fixed(r.add_gbps, 2),
                     Fixed(r.memcpy_gbps, 2), Fixed(r.vs_memcpy, 2) + "x",
                     Fixed(r.pays_below_gbps, 1)});
  }
  WriteAligned({"codec", "kernels", "size", "ratio", "encode GB/s", "decode GB/s", "add GB/s",
                "memcpy GB/s", "vs memcpy", "pays below Gbit/s"},
               cells, 3, out);
  for (const CodecRow& r : report.rows) {
    if (r.codec != "int8") continue;
    out << fmt::format(
        "goal: int8 encode+decode at {} on {}: {:.2f}x memcpy's speed ({} {:.2f}x): {}\n",
        FormatByteSize(r.bytes), r.kernels, r.vs_memcpy, r.vs_memcpy >= kCodecGoal ? ">=" : "<",
        kCodecGoal, r.vs_memcpy >= kCodecGoal ? "met" : "not met");
  }
}

void WriteCodecJson(const CodecReport& report, std::ostream& out) {
  const CodecBenchConfig& c = report.config;
  auto list = [&out](const auto& items, const auto& write) {
    out << '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out << ',';
      write(items[i]);
    }
    out << ']';
  };
  out << "{\"title\":";
  WriteJsonString(CodecTitle(report), out);
  out << ",\"config\":{\"codecs\":";
  list(c.codecs, [&](const std::string& s) { WriteJsonString(s, out); });
  out << ",\"sizes\":";
  list(c.sizes, [&](int64_t s) { out << s; });
  out << ",\"kernels\":";
  list(c.kernels, [&](const std::string& s) { WriteJsonString(s, out); });
  out << ",\"repeat\":" << c.repeat << "},\"rows\":";
  list(report.rows, [&](const CodecRow& r) {
    out << "{\"codec\":";
    WriteJsonString(r.codec, out);
    out << ",\"kernels\":";
    WriteJsonString(r.kernels, out);
    out << ",\"bytes\":" << r.bytes << ",\"encoded_bytes\":" << r.encoded_bytes
        << ",\"ratio\":" << JsonNumber(r.ratio)
        << ",\"encode_ms\":" << JsonNumber(r.encode_ms.median)
        << ",\"decode_ms\":" << JsonNumber(r.decode_ms.median)
        << ",\"add_ms\":" << JsonNumber(r.add_ms.median)
        << ",\"memcpy_ms\":" << JsonNumber(r.memcpy_ms.median)
        << ",\"encode_gbps\":" << JsonNumber(r.encode_gbps)
        << ",\"decode_gbps\":" << JsonNumber(r.decode_gbps)
        << ",\"add_gbps\":" << JsonNumber(r.add_gbps)
        << ",\"memcpy_gbps\":" << JsonNumber(r.memcpy_gbps)
        << ",\"vs_memcpy\":" << JsonNumber(r.vs_memcpy)
        << ",\"pays_below_gbps\":" << JsonNumber(r.pays_below_gbps)
        << ",\"repeat\":" << r.encode_ms.count << '}';
  });
  out << "}\n";
}

}  // namespace

std::vector<std::string> ValidateCodecBenchConfig(const CodecBenchConfig& config) {
  std::vector<std::string> problems;
  if (config.codecs.empty()) problems.push_back("--codecs: name at least one codec");
  for (const std::string& name : config.codecs) {
    if (Result<compress::Codec> c = compress::ParseCodec(name); !c.ok()) {
      problems.push_back("--codecs: " + c.status().message());
    }
  }
  if (config.sizes.empty()) problems.push_back("--sizes: name at least one size");
  for (int64_t bytes : config.sizes) {
    if (bytes <= 0 || bytes % 4 != 0 || bytes > (int64_t{1} << 30)) {
      problems.push_back(
          fmt::format("--sizes: {} bytes is not a whole number of floats up to 1G", bytes));
    }
  }
  if (config.kernels.empty()) problems.push_back("--kernels: name at least one kernel set");
  for (const std::string& k : config.kernels) {
    if (k != "auto" && k != "scalar" && k != "avx2") {
      problems.push_back("--kernels: '" + k + "' is not auto, scalar or avx2");
    }
  }
  if (config.repeat < 1 || config.repeat > 10000) {
    problems.push_back("--repeat must be in [1, 10000]");
  }
  return problems;
}

Result<CodecReport> RunCodecBench(const CodecBenchConfig& config, const std::atomic<int>* signal,
                                  const std::function<void(const CodecRow&)>& progress) {
  CodecReport report;
  report.config = config;
  std::vector<const compress::Kernels*> kernels;
  for (const std::string& name : config.kernels) {
    DMLPS_ASSIGN_OR_RETURN(const compress::Kernels* k, CodecKernels(name));
    kernels.push_back(k);
  }
  std::vector<compress::Codec> codecs;
  for (const std::string& name : config.codecs) {
    DMLPS_ASSIGN_OR_RETURN(compress::Codec c, compress::ParseCodec(name));
    codecs.push_back(c);
  }
  for (int64_t bytes : config.sizes) {
    const std::vector<float> values = CodecValues(static_cast<size_t>(bytes / 4), config.seed);
    for (const compress::Kernels* k : kernels) {
      for (const compress::Codec& codec : codecs) {
        if (signal != nullptr && signal->load() != 0) return report;
        DMLPS_ASSIGN_OR_RETURN(CodecRow row, MeasureCodec(*k, codec, values, config.repeat));
        if (progress) progress(row);
        report.rows.push_back(std::move(row));
      }
    }
  }
  return report;
}

void WriteCodecReport(const CodecReport& report, Format format, std::ostream& out) {
  switch (format) {
    case Format::kTable:
      WriteCodecTable(report, out);
      break;
    case Format::kTsv:
      // Six significant digits: a small payload's times are fractions of a
      // microsecond.
      out << "codec\tkernels\tbytes\tencoded_bytes\tratio\tencode_ms\tdecode_ms\tadd_ms\tmemcpy_"
             "ms\tencode_gbps\tdecode_gbps\tadd_gbps\tmemcpy_gbps\tvs_memcpy\tpays_below_gbps\t"
             "repeat\n";
      for (const CodecRow& r : report.rows) {
        out << r.codec << '\t' << r.kernels << '\t' << r.bytes << '\t' << r.encoded_bytes;
        for (const double x : {r.ratio, r.encode_ms.median, r.decode_ms.median, r.add_ms.median,
                               r.memcpy_ms.median, r.encode_gbps, r.decode_gbps, r.add_gbps,
                               r.memcpy_gbps, r.vs_memcpy, r.pays_below_gbps}) {
          out << fmt::format("\t{:.6g}", x);
        }
        out << '\t' << r.encode_ms.count << '\n';
      }
      break;
    case Format::kJson:
      WriteCodecJson(report, out);
      break;
  }
}

}  // namespace dmlps::bench
