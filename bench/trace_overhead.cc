// Measures what tracing costs a training step: the time to record one
// worker step's trace records (a step span, a push span, a wait span) in
// the buffered writer, against one gradient computation of the same run's
// model (mlp:128, Fashion-MNIST-sized input, batch 256), both timed here.
// Prints the ratio; dmlps's goal is under 1%.
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "dmlps/trace/trace.h"
#include "gradient_job.h"

int main() {
  using namespace dmlps;
  using bench::Clock;
  using bench::Seconds;
  const int64_t batch = 256;
  const std::unique_ptr<bench::GradientJob> job = bench::DefaultGradientJob(batch);
  if (job == nullptr) return 70;

  const int steps = 200;
  job->Step();  // warm up
  Clock::time_point start = Clock::now();
  for (int i = 0; i < steps; ++i) job->Step();
  const double step_s = Seconds(start) / steps;

  Result<std::unique_ptr<trace::TraceWriter>> writer =
      trace::TraceWriter::Open("/dev/null", "worker-0");
  if (!writer.ok()) return 74;
  const int records = 200000;  // steps' worth of records, three per step
  start = Clock::now();
  for (int i = 0; i < records / 3; ++i) {
    const int64_t t = trace::NowMicros();
    (*writer)->Span("compute", "step", t, 9000,
                    {{"clock", int64_t{i}}, {"samples", batch}, {"loss", 0.42}});
    (*writer)->Span("comm", "push", t + 9000, 300,
                    {{"clock", int64_t{i}}, {"bytes", int64_t{407080}}});
    (*writer)->Span("wait", "pull", t + 9300, 2000, {{"clock", int64_t{i}}});
  }
  (void)(*writer)->Flush();
  const double per_step_trace_s = Seconds(start) / (records / 3);

  std::printf("gradient step (mlp:128, batch %lld): %.3f ms\n", static_cast<long long>(batch),
              step_s * 1e3);
  std::printf("tracing one step (3 records): %.2f us\n", per_step_trace_s * 1e6);
  std::printf("overhead: %.4f%% of a step\n", 100.0 * per_step_trace_s / step_s);
  return 0;
}
