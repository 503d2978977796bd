#include "worker/compute.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace dmlps::worker {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;

constexpr std::chrono::milliseconds kUsageEvery{100};

// Tells `busy` +1 now and -1 at the end of the scope, however it ends.
class BusyWhile {
 public:
  explicit BusyWhile(const StepComputer::Busy& busy) : busy_(busy) {
    if (busy_) busy_(+1);
  }
  ~BusyWhile() {
    if (busy_) busy_(-1);
  }
  BusyWhile(const BusyWhile&) = delete;
  BusyWhile& operator=(const BusyWhile&) = delete;

 private:
  const StepComputer::Busy& busy_;
};

}  // namespace

StepComputer::StepComputer(Computation& computation, uint64_t seed, StragglerProfile straggler,
                           trace::TraceWriter* tracer, Pause pause, Busy busy)
    : computation_(computation),
      cursor_(computation.num_samples(), seed),
      straggler_(std::move(straggler)),
      tracer_(tracer),
      pause_(std::move(pause)),
      busy_(std::move(busy)) {}

Result<StepResult> StepComputer::Compute(int64_t step, int64_t samples,
                                         std::span<const float> params, std::span<float> grad,
                                         StraggleAt at) {
  StepResult result;
  const Clock::time_point start = Clock::now();
  const int64_t start_us = trace::NowMicros();
  cursor_.Take(samples, &indices_);
  Result<double> loss = Status::Internal("no computation");
  const Result<double> wait_before = ReadThreadRunDelay();
  {
    const BusyWhile busy(busy_);
    loss = computation_.Compute(params, indices_, grad);
  }
  DMLPS_ASSIGN_OR_RETURN(result.loss, std::move(loss));
  result.compute = microseconds(Micros(Clock::now() - start));
  result.run_wait = RunDelaySince(wait_before, result.compute);
  result.samples = samples;
  result.straggle = at.first_part
                        ? straggler_.ExtraDelay(at.iteration, result.compute)
                        : microseconds(std::llround((straggler_.SlowdownAt(at.iteration) - 1) *
                                                    static_cast<double>(result.compute.count())));
  if (tracer_) {
    tracer_->Span("compute", "step", start_us, result.compute.count(),
                  {{"clock", step},
                   {"samples", samples},
                   {"loss", result.loss},
                   {"run_wait_us", result.run_wait.count()}});
  }
  if (result.straggle.count() > 0) {
    if (tracer_) {
      tracer_->Span("compute", "straggle", start_us + result.compute.count(),
                    result.straggle.count(), {{"clock", step}});
    }
    DMLPS_RETURN_IF_ERROR(pause_(result.straggle));
  }
  if (!std::isfinite(result.loss))
    spdlog::warn("step {}: the training loss is {}", step, result.loss);
  return result;
}

Status StepComputer::EmulateTransfer(int64_t step, int64_t bytes) {
  const microseconds transfer = straggler_.TransferTime(step, bytes);
  if (transfer.count() > 0) return pause_(transfer);
  return Status::Ok();
}

PushBuffers::~PushBuffers() {
  for (const auto& buffer : buffers_) computation_->UnpinHostBuffer(*buffer);
}

std::vector<float>& PushBuffers::Take(std::shared_ptr<std::vector<float>>* held) {
  held->reset();
  for (const auto& buffer : buffers_) {
    if (buffer.use_count() == 1) {
      *held = buffer;
      return **held;
    }
  }
  auto buffer = std::make_shared<std::vector<float>>(size_);
  if (Status pinned = computation_->PinHostBuffer(*buffer); !pinned.ok()) {
    spdlog::warn("pushes will be staged through pageable memory: {}", pinned.message());
  } else {
    buffers_.push_back(buffer);
  }
  *held = std::move(buffer);
  return **held;
}

UsageMeter::Usage UsageMeter::Read() {
  if (usage_ == std::nullopt || Clock::now() - read_ >= kUsageEvery) {
    if (Result<ResourceSample> now = ReadSelfUsage(); now.ok()) {
      if (usage_.has_value()) cpu_cores_ = CpuCores(*usage_, *now);
      usage_ = *now;
    }
    read_ = Clock::now();
  }
  return Usage{cpu_cores_, usage_.has_value() ? usage_->resident_bytes : 0};
}

}  // namespace dmlps::worker
