#include "dmlps/bench/profile.h"

#include <spdlog/spdlog.h>

#include <Eigen/Core>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <random>
#include <system_error>

#include "dmlps/base/json.h"
#include "dmlps/base/output_format.h"
#include "dmlps/data/dataset.h"
#include "dmlps/model/backend.h"
#include "dmlps/model/model.h"

namespace dmlps::bench {
namespace {

constexpr int64_t kMaxBatch = int64_t{1} << 24;

std::string Title(const ProfileReport& report) {
  std::string title = "dmlps-bench profile: ";
  title += report.model;
  title += " (";
  title += std::to_string(report.num_params);
  title += " parameters) on ";
  title += report.device;
  title += ", median of ";
  title += std::to_string(report.config.reps);
  title += " steps per batch size";
  return title;
}

}  // namespace

std::vector<std::string> ValidateProfileConfig(const ProfileConfig& config) {
  std::vector<std::string> problems;
  if (Result<model::Device> d = model::ParseDevice(config.device); !d.ok()) {
    problems.push_back("--device: " + d.status().message());
  }
  if (Result<model::ModelSpec> m = model::ParseModelSpec(config.model, 16, 2); !m.ok()) {
    problems.push_back("--model: " + m.status().message());
  }
  if (Result<data::DataSpec> d = data::ParseDataSpec(config.data); !d.ok()) {
    problems.push_back("--data: " + d.status().message());
  }
  if (config.min_batch < 1 || config.max_batch < config.min_batch || config.max_batch > kMaxBatch) {
    problems.push_back("--batch: the sizes must satisfy 1 <= LO <= HI <= 16777216");
  }
  if (!(config.factor > 1.0) || config.factor > 1024) {
    problems.push_back("--factor must be above 1 and at most 1024");
  }
  if (config.reps < 1) problems.push_back("--reps must be at least 1");
  if (config.warmup < 0) problems.push_back("--warmup must not be negative");
  if (config.threads < 1 || config.threads > 1024)
    problems.push_back("--threads must be in [1, 1024]");
  return problems;
}

Status ParseBatchRange(std::string_view text, int64_t* lo, int64_t* hi) {
  auto number = [&](std::string_view part, int64_t* out) {
    auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), *out);
    return !part.empty() && ec == std::errc() && ptr == part.data() + part.size() && *out >= 1 &&
           *out <= kMaxBatch;
  };
  const size_t dots = text.find("..");
  const std::string_view first = text.substr(0, dots);
  const std::string_view last = dots == std::string_view::npos ? first : text.substr(dots + 2);
  int64_t low = 0, high = 0;
  std::string quoted = "\"";
  quoted += text;
  quoted += '"';
  if (!number(first, &low) || !number(last, &high)) {
    return Status::InvalidArgument(quoted + " is not LO..HI or N with sizes in [1, 16777216]");
  }
  if (low > high) return Status::InvalidArgument(quoted + ": LO is above HI");
  *lo = low;
  *hi = high;
  return Status::Ok();
}

std::vector<int64_t> GeometricSizes(int64_t lo, int64_t hi, double factor) {
  std::vector<int64_t> sizes;
  double next = static_cast<double>(lo);
  while (true) {
    const auto size = static_cast<int64_t>(std::llround(next));
    if (size >= hi) break;
    if (sizes.empty() || size > sizes.back()) sizes.push_back(size);
    next *= factor;
  }
  sizes.push_back(hi);
  return sizes;
}

Result<ProfileReport> RunProfile(const ProfileConfig& config, const std::atomic<int>* signal,
                                 const std::function<void(const ProfileRow&)>& progress) {
  using Clock = std::chrono::steady_clock;
  ProfileReport report;
  report.config = config;
  DMLPS_ASSIGN_OR_RETURN(model::Device device, model::ParseDevice(config.device));
  DMLPS_ASSIGN_OR_RETURN(model::DeviceMemory memory, model::ProbeDevice(device, &report.device));
  DMLPS_ASSIGN_OR_RETURN(data::DataSpec data_spec, data::ParseDataSpec(config.data));
  DMLPS_ASSIGN_OR_RETURN(data::Dataset train, data::LoadTrain(data_spec, data::Shard{0, 1}));
  if (train.rows() == 0) return Status::DataLoss(config.data + ": no training samples");
  DMLPS_ASSIGN_OR_RETURN(
      model::ModelSpec spec,
      model::ParseModelSpec(config.model, train.dim, std::max<int64_t>(2, train.classes)));
  report.model = spec.Name();
  report.num_params = spec.NumParams();
  if (device.is_cuda()) {
    const int64_t fits = model::MaxBatchForMemory(spec, memory.free_bytes);
    if (config.max_batch > fits) {
      spdlog::warn("batches above {} may not fit the {:.2f} GiB free on {}", fits,
                   static_cast<double>(memory.free_bytes) / (1 << 30), report.device);
    }
  }
  Eigen::setNbThreads(static_cast<int>(config.threads));
  DMLPS_ASSIGN_OR_RETURN(std::unique_ptr<model::Backend> backend, model::MakeBackend(spec, device));
  std::vector<float> params(static_cast<size_t>(spec.NumParams()));
  model::Model(spec).Initialize(config.seed, params);
  std::vector<float> grad(params.size());
  DMLPS_RETURN_IF_ERROR(backend->PinHostBuffer(grad));
  struct Unpin {
    model::Backend* backend;
    std::vector<float>* grad;
    ~Unpin() { backend->UnpinHostBuffer(*grad); }
  } unpin{backend.get(), &grad};

  std::mt19937_64 rng(config.seed);
  std::uniform_int_distribution<int64_t> pick(0, train.rows() - 1);
  std::vector<int64_t> indices;
  Eigen::MatrixXf x;
  std::vector<int32_t> y;
  for (int64_t batch : GeometricSizes(config.min_batch, config.max_batch, config.factor)) {
    std::vector<double> ms;
    for (int64_t rep = 0; rep < config.warmup + config.reps; ++rep) {
      if (signal != nullptr && signal->load() != 0) return report;
      indices.resize(static_cast<size_t>(batch));
      for (int64_t& i : indices) i = pick(rng);
      const Clock::time_point start = Clock::now();
      train.Gather(indices, &x, &y);
      DMLPS_ASSIGN_OR_RETURN(double loss, backend->LossAndGradient(params, x, y, grad));
      const double elapsed =
          std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      if (!std::isfinite(loss)) {
        std::string message = "the loss is not finite at batch ";
        message += std::to_string(batch);
        return Status::Internal(message);
      }
      if (rep >= config.warmup) ms.push_back(elapsed);
    }
    ProfileRow row;
    row.batch = batch;
    row.ms = SpreadOf(ms);
    row.samples_per_s = static_cast<double>(batch) / (row.ms.median * 1e-3);
    row.us_per_sample = row.ms.median * 1e3 / static_cast<double>(batch);
    report.rows.push_back(row);
    if (progress) progress(row);
  }
  return report;
}

void WriteProfileReport(const ProfileReport& report, Format format, std::ostream& out) {
  switch (format) {
    case Format::kTable: {
      out << Title(report) << '\n';
      std::vector<std::vector<std::string>> cells;
      for (const ProfileRow& r : report.rows) {
        cells.push_back({std::to_string(r.batch), Fixed(r.ms.median, 3), Fixed(r.ms.min, 3),
                         Fixed(r.ms.max, 3), Fixed(r.samples_per_s, 0), Fixed(r.us_per_sample, 2)});
      }
      WriteAligned({"batch", "median ms", "min ms", "max ms", "samples/s", "us/sample"}, cells, 0,
                   out);
      break;
    }
    case Format::kTsv:
      out << "batch\tmedian_ms\tmin_ms\tmax_ms\treps\tsamples_per_s\tus_per_sample\n";
      for (const ProfileRow& r : report.rows) {
        out << r.batch << '\t' << Fixed(r.ms.median, 4) << '\t' << Fixed(r.ms.min, 4) << '\t'
            << Fixed(r.ms.max, 4) << '\t' << r.ms.count << '\t' << Fixed(r.samples_per_s, 1) << '\t'
            << Fixed(r.us_per_sample, 3) << '\n';
      }
      break;
    case Format::kJson: {
      const ProfileConfig& c = report.config;
      out << "{\"title\":";
      WriteJsonString(Title(report), out);
      out << ",\"device\":";
      WriteJsonString(report.device, out);
      out << ",\"model\":";
      WriteJsonString(report.model, out);
      out << ",\"num_params\":" << report.num_params << ",\"config\":{\"data\":";
      WriteJsonString(c.data, out);
      out << ",\"min_batch\":" << c.min_batch << ",\"max_batch\":" << c.max_batch
          << ",\"factor\":" << JsonNumber(c.factor) << ",\"reps\":" << c.reps
          << ",\"warmup\":" << c.warmup << ",\"threads\":" << c.threads << "},\"rows\":[";
      for (size_t i = 0; i < report.rows.size(); ++i) {
        const ProfileRow& r = report.rows[i];
        if (i) out << ',';
        out << "{\"batch\":" << r.batch << ",\"median_ms\":" << JsonNumber(r.ms.median)
            << ",\"min_ms\":" << JsonNumber(r.ms.min) << ",\"max_ms\":" << JsonNumber(r.ms.max)
            << ",\"reps\":" << r.ms.count << ",\"samples_per_s\":" << JsonNumber(r.samples_per_s)
            << ",\"us_per_sample\":" << JsonNumber(r.us_per_sample) << '}';
      }
      out << "]}\n";
      break;
    }
  }
}

}  // namespace dmlps::bench
