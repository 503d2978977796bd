// dmlps-bench advise: one run's traces in, each candidate policy's predicted
// time per iteration, compute ratio and time to target out, with the
// recommendation and its reason.
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <iostream>

#include "dmlps/advise/advisor.h"
#include "dmlps/advise/trace_profile.h"
#include "dmlps/base/json.h"
#include "dmlps/cli/bench_programs.h"
#include "dmlps/cli/cli.h"

namespace dmlps::cli {
namespace {

// BSP's iterations to `target`: given, or the run's own iterations to it
// divided by its policy's efficiency. 0 when neither says.
double BspIterations(const AdviseConfig& config, const advise::MeasuredRun& run, double target,
                     const advise::Advisor& advisor) {
  if (config.bsp_iterations > 0) return config.bsp_iterations;
  if (target <= 0) return 0;
  const int64_t iterations = run.IterationsTo(target);
  if (iterations <= 0) return 0;
  double efficiency = 1;
  if (std::optional<advise::Efficiency> e = advisor.table().Find(run.policy)) {
    efficiency =
        advise::EfficiencyUnder(*e, advise::SlowestRatio(run.profile),
                                advise::DelayCost(run.profile), advisor.table().straggler_ratio);
  }
  return static_cast<double>(iterations) / efficiency;
}

std::string Cell(double value, const char* spec, bool known) {
  return known ? fmt::format(fmt::runtime(spec), value) : "-";
}

// A prediction's efficiency cell: the figure, marked '*' when another
// entry's row priced it, "1 (?)" when none did.
std::string EfficiencyCell(const advise::Prediction& p) {
  if (!p.efficiency_known) return "1 (?)";
  return fmt::format("{:.2f}{}", p.efficiency, p.efficiency_row == p.policy ? "" : "*");
}

void WriteTable(const advise::MeasuredRun& run, const advise::Advice& advice, double target,
                std::ostream& out) {
  out << fmt::format("measured: {}, {} workers, batch {}, {} parameters; {} ms per iteration\n",
                     run.policy.empty() ? "policy unknown" : run.policy, run.profile.workers.size(),
                     run.profile.batch, run.profile.num_params,
                     Cell(run.IterationSeconds() * 1e3, "{:.1f}", run.IterationSeconds() > 0));
  out << fmt::format("{:<14} {:>12} {:>13} {:>10} {:>12} {:>14}\n", "policy", "ms/iteration",
                     "compute ratio", "efficiency", "effective ms",
                     target > 0 ? fmt::format("s to {:g}", target) : std::string("s to target"));
  for (const advise::Prediction& p : advice.predictions) {
    if (!p.failure.empty()) {
      out << fmt::format("{:<14} FAILED: {}\n", p.policy, p.failure);
      continue;
    }
    out << fmt::format("{:<14} {:>12.2f} {:>13.3f} {:>10} {:>12.2f} {:>14}\n", p.policy,
                       p.iteration_s * 1e3, p.compute_ratio, EfficiencyCell(p), p.effective_s * 1e3,
                       Cell(p.time_to_target_s, "{:.2f}", p.time_to_target_s > 0));
  }
  for (const advise::Prediction& p : advice.predictions) {
    if (p.failure.empty() && p.efficiency_known && p.efficiency_row != p.policy) {
      out << fmt::format("* {}: no row of its own in the efficiency table; priced by {}'s\n",
                         p.policy, p.efficiency_row);
    }
  }
  out << "recommendation: " << advice.recommended << " (" << advice.reason << ")\n";
}

void WriteTsv(const advise::Advice& advice, std::ostream& out) {
  out << "policy\titeration_ms\tcompute_ratio\tefficiency\teffective_ms\ttime_to_target_s\t"
         "recommended\tfailure\n";
  for (const advise::Prediction& p : advice.predictions) {
    out << fmt::format("{}\t{:.3f}\t{:.4f}\t{:.3f}\t{:.3f}\t{:.3f}\t{}\t{}\n", p.policy,
                       p.iteration_s * 1e3, p.compute_ratio, p.efficiency, p.effective_s * 1e3,
                       p.time_to_target_s, p.policy == advice.recommended ? 1 : 0, p.failure);
  }
}

void WriteJson(const advise::MeasuredRun& run, const advise::Advice& advice, double target,
               std::ostream& out) {
  out << "{\"measured\": {\"policy\": ";
  WriteJsonStringOrNull(run.policy, out);
  out << ", \"workers\": " << run.profile.workers.size() << ", \"batch\": " << run.profile.batch
      << ", \"params\": " << run.profile.num_params
      << ", \"iteration_s\": " << JsonNumber(run.IterationSeconds())
      << "}, \"target\": " << JsonNumber(target) << ", \"predictions\": [";
  for (size_t i = 0; i < advice.predictions.size(); ++i) {
    const advise::Prediction& p = advice.predictions[i];
    out << (i == 0 ? "" : ", ") << "{\"policy\": ";
    WriteJsonString(p.policy, out);
    out << ", \"iteration_s\": " << JsonNumber(p.iteration_s)
        << ", \"compute_ratio\": " << JsonNumber(p.compute_ratio)
        << ", \"efficiency\": " << JsonNumber(p.efficiency)
        << ", \"efficiency_known\": " << (p.efficiency_known ? "true" : "false")
        << ", \"efficiency_row\": ";
    WriteJsonStringOrNull(p.efficiency_row, out);
    out << ", \"effective_s\": " << JsonNumber(p.effective_s) << ", \"time_to_target_s\": "
        << (p.time_to_target_s > 0 ? JsonNumber(p.time_to_target_s) : "null") << ", \"failure\": ";
    WriteJsonStringOrNull(p.failure, out);
    out << "}";
  }
  out << "], \"recommended\": ";
  WriteJsonString(advice.recommended, out);
  out << ", \"reason\": ";
  WriteJsonString(advice.reason, out);
  out << "}\n";
}

// What was measured, for the log: the figures every prediction rests on.
void LogProfile(const advise::ClusterProfile& p) {
  for (size_t r = 0; r < p.workers.size(); ++r) {
    const advise::WorkerProfile& w = p.workers[r];
    spdlog::info(
        "worker-{}: steps of {:.2f} ms, jitter {:.2f}, delays in {:.0f}% of steps of {:.1f} ms", r,
        w.step_s * 1e3, w.jitter, w.delay_prob * 100, w.delay_s * 1e3);
  }
  spdlog::info(
      "links {:.2f} Gbit/s, {:.0f} us one way; the server {:.3f} ms a pass over the parameters",
      p.link_gbps, p.latency_s * 1e6, p.param_s * static_cast<double>(p.num_params) * 1e3);
}

}  // namespace

int RunBenchAdviseProgram(const AdviseConfig& config, bench::Format format) {
  Result<advise::MeasuredRun> run = advise::MeasureTraces(config.traces);
  if (!run.ok()) return ReportError(kBenchProgram, run.status());
  LogProfile(run->profile);
  // The efficiency table learned on the traced job's model and batch.
  Result<std::vector<advise::EfficiencyTable>> tables = advise::LoadEfficiencies();
  if (!tables.ok()) return ReportError(kBenchProgram, tables.status());
  const advise::Advisor advisor(advise::EfficiencyFor(
      *tables, run->model, run->profile.batch, static_cast<int64_t>(run->profile.workers.size())));
  const double target = config.target >= 0 ? config.target : run->target;
  advise::AdvisorOptions options;
  options.candidates = config.candidates;
  options.iterations = config.iterations;
  options.bsp_iterations_to_target = BspIterations(config, *run, target, advisor);
  const auto start = std::chrono::steady_clock::now();
  Result<advise::Advice> advice = advisor.Advise(run->profile, options);
  if (!advice.ok()) return ReportError(kBenchProgram, advice.status());
  spdlog::info(
      "predicted {} candidates in {:.1f} ms", advice->predictions.size(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * 1e3);
  if (target > 0 && options.bsp_iterations_to_target <= 0) {
    spdlog::warn(
        "the traces never reached {:g}: no time to target (--bsp-iterations gives BSP's count)",
        target);
  }
  switch (format) {
    case bench::Format::kTable:
      WriteTable(*run, *advice, target, std::cout);
      break;
    case bench::Format::kTsv:
      WriteTsv(*advice, std::cout);
      break;
    case bench::Format::kJson:
      WriteJson(*run, *advice, target, std::cout);
      break;
  }
  std::cout.flush();
  return 0;
}

}  // namespace dmlps::cli
