// dmlps-bench sim's job: one experiment, every policy, simulated.
#include <spdlog/spdlog.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "dmlps/sim/sim.h"
#include "dmlps/sync/switching.h"

namespace dmlps::sim {
namespace {

// The staleness of the run's pushes, worker by worker: the median worker's
// mean and the stalest worker's, as `dmlps-trace summary` gives them for a
// real run; empty when no worker pushed.
std::string StalenessLine(const SimReport& report) {
  std::vector<std::pair<double, size_t>> means;
  for (size_t w = 0; w < report.workers.size(); ++w) {
    const WorkerStats& s = report.workers[w];
    if (s.steps > 0) means.emplace_back(s.staleness_sum / static_cast<double>(s.steps), w);
  }
  if (means.empty()) return {};
  std::sort(means.begin(), means.end());
  return fmt::format("mean staleness per push: {:.2f} (the median worker), {:.2f} (worker {})",
                     means[(means.size() - 1) / 2].first, means.back().first, means.back().second);
}

// The experiment's data, loaded once for all its runs, and its model.
struct Job {
  data::Dataset train;
  data::Dataset test;
  model::ModelSpec spec;
};

Result<Job> LoadJob(const bench::Experiment& experiment) {
  DMLPS_ASSIGN_OR_RETURN(data::DataSpec data_spec, data::ParseDataSpec(experiment.job.data));
  spdlog::info("loading {}", experiment.job.data);
  DMLPS_ASSIGN_OR_RETURN(data::Dataset test, data::LoadTest(data_spec));
  DMLPS_ASSIGN_OR_RETURN(data::Dataset train, data::LoadTrain(data_spec, {0, 1}));
  if (test.rows() == 0) return Status::DataLoss(experiment.job.data + ": the test set is empty");
  DMLPS_ASSIGN_OR_RETURN(
      model::ModelSpec spec,
      model::ParseModelSpec(experiment.job.model, test.dim, std::max<int64_t>(test.classes, 2)));
  DMLPS_RETURN_IF_ERROR(train.ConformTo(spec.input_dim, spec.classes)
                            .WithContext(experiment.job.data + " does not fit the model"));
  if (train.rows() < experiment.job.workers) {
    return Status::InvalidArgument(std::to_string(experiment.job.workers) + " workers but only " +
                                   std::to_string(train.rows()) + " training samples in " +
                                   experiment.job.data);
  }
  return Job{std::move(train), std::move(test), std::move(spec)};
}

// options.cost, else the costs Calibrate times on this machine; logged.
Result<CostModel> CostOf(const Job& job, const bench::Experiment& experiment,
                         const SimOptions& options) {
  CostModel cost;
  if (options.cost.has_value()) {
    cost = *options.cost;
  } else {
    spdlog::info("calibrating: timing real steps of {} around batch {}", job.spec.Name(),
                 experiment.job.batch);
    DMLPS_ASSIGN_OR_RETURN(
        cost, Calibrate(job.spec, job.train, job.test, experiment.job.batch, options.shared_cores));
  }
  for (const StepCost& s : cost.steps) {
    spdlog::info("step of {:5} samples: {:9.3f} ms alone, {:9.3f} ms on shared cores", s.samples,
                 s.seconds * 1e3, s.shared_seconds * 1e3);
  }
  spdlog::info(
      "a pass over the parameters: {:.3f} ms; a message at the server: {:.3f} ms; "
      "an evaluation: {:.3f} ms",
      cost.param_s * static_cast<double>(model::Model(job.spec).num_params()) * 1e3,
      cost.message_s * 1e3, cost.eval_s * 1e3);
  return cost;
}

// The simulator's configuration of run `repeat` of `policy`; its live
// progress (options.show) under `label`.
SimConfig RunConfig(const bench::Experiment& experiment, const SimOptions& options,
                    sync::PolicyConfig policy, const bench::Codecs& codecs,
                    const model::ModelSpec& spec, const CostModel& cost, int64_t repeat,
                    const std::string& label) {
  SimConfig config;
  config.job = experiment.job;
  config.policy = std::move(policy);
  config.push_codec = codecs.push;
  config.pull_codec = codecs.pull;
  config.model = spec;
  // The first run draws its delays as a real cluster's workers would;
  // later ones draw afresh.
  config.noise_seed = static_cast<uint64_t>(repeat - 1);
  config.stragglers = experiment.stragglers;
  config.noise = options.noise;
  config.network = options.network;
  config.cost = cost;
  config.shared_cores = options.shared_cores;
  config.cpu_slice_s = options.cpu_slice_s;
  config.cpu_wake_preempts = options.cpu_wake_preempts;
  config.cpu_wake_credit_s = options.cpu_wake_credit_s;
  config.threads = options.threads;
  config.shards = options.shards;
  config.make_policy = options.make_policy;
  if (options.show) {
    const auto begin = std::chrono::steady_clock::now();
    config.on_eval = [&options, label, begin](const EvalPoint& point) {
      options.show(label,
                   {std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count(),
                    point.seconds, point.iteration, point.accuracy});
    };
  }
  return config;
}

// Logs what run `repeat` of `entry` did: its decisions (at debug level),
// switches, failure, result and staleness.
void LogRun(const std::string& entry, int64_t repeat, int64_t repeats, const SimReport& report,
            const bench::RunResult& run) {
  for (const SimDecision& d : report.decisions) {
    if (!spdlog::should_log(spdlog::level::debug)) break;
    spdlog::debug("{} ({}/{}): at {:.3f} virtual s, {}", entry, repeat, repeats, d.seconds,
                  sync::DescribeDecision(d.decision));
  }
  for (const SimSwitch& s : report.switches) {
    spdlog::info(
        "{} ({}/{}): policy switch {}: {} -> {} at iteration {}, {:.3f} virtual s "
        "({}: {:.4g}, threshold {:.4g})",
        entry, repeat, repeats, s.change.done ? "done" : "decided", s.change.from, s.change.to,
        s.change.iteration, s.seconds, s.change.why, s.change.measured, s.change.threshold);
  }
  if (!report.failure.empty())
    spdlog::warn("{} ({}/{}): {}", entry, repeat, repeats, report.failure);
  spdlog::info(
      "{} ({}/{}): {} accuracy {:.4f} at {:.3f} virtual s, iteration {}; "
      "{} events simulated in {:.1f} s",
      entry, repeat, repeats, report.reached ? "reached" : "ended with", run.accuracy, run.seconds,
      run.iterations, report.events, report.wall_seconds);
  if (std::string line = StalenessLine(report); !line.empty()) {
    spdlog::info("{} ({}/{}): {}", entry, repeat, repeats, line);
  }
}

}  // namespace

Result<std::vector<bench::RunResult>> SimulateExperiment(
    const bench::Experiment& experiment, const SimOptions& options,
    const std::function<void(const bench::RunResult&, const SimReport&)>& progress) {
  if (std::vector<std::string> problems = bench::ValidateExperiment(experiment);
      !problems.empty()) {
    return Status::InvalidArgument(problems.front());
  }
  // One core per simulated computation, as each dmlps-worker has.
  Eigen::setNbThreads(1);
  DMLPS_ASSIGN_OR_RETURN(const Job job, LoadJob(experiment));
  DMLPS_ASSIGN_OR_RETURN(const CostModel cost, CostOf(job, experiment, options));
  std::vector<bench::RunResult> runs;
  const int64_t total = experiment.repeat *
                        static_cast<int64_t>(experiment.policies.size() * experiment.codecs.size());
  // Runs are named by their policy, and by their codecs where the table compares them.
  const bool compares = experiment.codecs != std::vector<bench::Codecs>{bench::Codecs{}};
  for (int64_t repeat = 1; repeat <= experiment.repeat; ++repeat) {
    for (const std::string& entry : experiment.policies) {
      for (const bench::Codecs& codecs : experiment.codecs) {
        DMLPS_ASSIGN_OR_RETURN(sync::PolicyConfig policy, bench::PolicyFor(entry, experiment));
        const std::string name =
            compares ? entry + " " + bench::CodecsName(codecs) : std::string(entry);
        const std::string label = fmt::format("[{}/{}] {} run {}/{}", runs.size() + 1, total, name,
                                              repeat, experiment.repeat);
        const SimConfig config = RunConfig(experiment, options, std::move(policy), codecs, job.spec,
                                           cost, repeat, label);
        spdlog::info("simulating {} ({}/{}) with {} workers", name, repeat, experiment.repeat,
                     experiment.job.workers);
        DMLPS_ASSIGN_OR_RETURN(SimReport report, Simulate(config, job.train, job.test));
        bench::RunResult run = ToRunResult(report, entry, repeat);
        run.codecs = bench::CodecsName(codecs);
        // As dmlps-bench run counts them: with no target, a run that ended
        // normally counts, to its limit.
        if (experiment.job.target_accuracy == 0 && run.failure.empty()) run.reached = true;
        LogRun(name, repeat, experiment.repeat, report, run);
        if (progress) progress(run, report);
        runs.push_back(std::move(run));
      }
    }
  }
  return runs;
}

}  // namespace dmlps::sim
