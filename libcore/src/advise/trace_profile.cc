// Measuring a cluster profile from one run's traces.
#include "dmlps/advise/trace_profile.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "dmlps/predict/replay.h"
#include "dmlps/sync/policy.h"

namespace dmlps::advise {
namespace {

namespace fs = std::filesystem;

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Per worker (by node), the time per step its spans do not account for:
// from its first span's start to its last one's end, less the spans (compute,
// comm, wait), over its steps. On a busy host, the time a process waits to
// be scheduled; anywhere, the handling of a model between its arrival and
// the next step. Every step pays it, whatever the policy.
std::map<std::string, double> UnaccountedPerStep(const std::vector<trace::Record>& records) {
  struct Extent {
    int64_t first = -1, last = 0, spans = 0, steps = 0;
  };
  std::map<std::string, Extent> extents;
  for (const trace::Record& r : records) {
    if (r.kind != "span" || r.node.rfind("worker", 0) != 0) continue;
    if (r.lane != "compute" && r.lane != "comm" && r.lane != "wait") continue;
    Extent& e = extents[r.node];
    if (e.first < 0 || r.time_us < e.first) e.first = r.time_us;
    e.last = std::max(e.last, r.time_us + r.dur_us);
    e.spans += r.dur_us;
    if (r.lane == "compute" && r.name == "step") ++e.steps;
  }
  std::map<std::string, double> gaps;
  for (const auto& [node, e] : extents) {
    const int64_t gap = e.last - e.first - e.spans;
    gaps[node] = e.steps > 0 && gap > 0 ? static_cast<double>(gap) * 1e-6 / e.steps : 0;
  }
  return gaps;
}

// One step's computing as its compute/step span tells it.
struct StepCore {
  double compute_s = 0;  // the span's length
  double share = 1;      // of it, on a core: 1 less run_wait_us over the length
  double work_s = 0;     // per sample on a core
};

// Per worker (by node), its steps' computing by clock. Traces written
// before workers timed their wait for a core have none.
std::map<std::string, std::map<int64_t, StepCore>> StepCores(
    const std::vector<trace::Record>& records) {
  std::map<std::string, std::map<int64_t, StepCore>> cores;
  for (const trace::Record& r : records) {
    if (r.kind != "span" || r.lane != "compute" || r.name != "step" || r.dur_us <= 0 ||
        !r.Has("run_wait_us") || !(r.Number("samples") >= 1)) {
      continue;
    }
    const double waited = r.Number("run_wait_us");
    if (!std::isfinite(waited)) continue;
    StepCore step;
    step.compute_s = static_cast<double>(r.dur_us) * 1e-6;
    step.share =
        std::max(0.01, 1 - std::clamp(waited * 1e-6, 0.0, step.compute_s) / step.compute_s);
    step.work_s = step.compute_s * step.share / r.Number("samples");
    cores[r.node][static_cast<int64_t>(r.Number("clock"))] = step;
  }
  return cores;
}

// Each worker's median core share into `core_shares` (by history; 1 where
// not traced). On shared cores (SharedCoresOf them) each step becomes the
// host's work per sample at the typical share, times the step's own
// slowness (its time over its computing): what a worker waited for a core,
// and the few percent its work differs from step to step, are the host's
// and the step's noise. The spread of each worker's work, its jitter then,
// into `work_jitter` (-1: not shared).
void OnSharedCores(const std::vector<trace::Record>& records,
                   std::vector<predict::WorkerHistory>* histories, std::vector<double>* core_shares,
                   std::vector<double>* work_jitter) {
  const std::map<std::string, std::map<int64_t, StepCore>> by_node = StepCores(records);
  core_shares->assign(histories->size(), 1);
  work_jitter->assign(histories->size(), -1);
  std::vector<std::vector<double>> work(histories->size());
  std::vector<double> host_work;
  for (size_t r = 0; r < histories->size(); ++r) {
    auto found = by_node.find((*histories)[r].node);
    if (found == by_node.end() || found->second.empty()) continue;
    std::vector<double> shares;
    for (const auto& [clock, step] : found->second) {
      shares.push_back(step.share);
      work[r].push_back(step.work_s);
    }
    (*core_shares)[r] = Median(shares);
    host_work.insert(host_work.end(), work[r].begin(), work[r].end());
  }
  if (SharedCoresOf(*core_shares) == 0) return;
  const double per_sample_s = Median(host_work) / Median(*core_shares);
  for (size_t r = 0; r < histories->size(); ++r) {
    predict::WorkerHistory& h = (*histories)[r];
    auto found = by_node.find(h.node);
    if (found == by_node.end()) continue;
    std::vector<size_t> at;  // the steps with a computing span, and their times
    std::vector<double> took, slowness;
    for (size_t i = 0; i < h.steps.size() && i < h.clocks.size(); ++i) {
      auto step = found->second.find(h.clocks[i]);
      const predict::Observation& o = h.steps[i];
      if (step == found->second.end() || !(o.speed > 0) || o.batch < 1) continue;
      at.push_back(i);
      took.push_back(1 / o.speed);
      slowness.push_back(
          std::max(1.0, static_cast<double>(o.batch) / o.speed / step->second.compute_s));
    }
    const std::vector<double> shared = SharedSteps(took, slowness, per_sample_s);
    for (size_t k = 0; k < at.size(); ++k) h.steps[at[k]].speed = 1 / shared[k];
    (*work_jitter)[r] = LogSpread(work[r]);
  }
}

}  // namespace

std::vector<double> SharedSteps(const std::vector<double>& measured,
                                const std::vector<double>& slowness, double per_sample_s) {
  // A pause is time, not a factor of the step's computing: scaled as one,
  // a 50 ms pause after computing that waited for a core (4.5 ms, where
  // the host's work at the typical share is 3.3 ms) read as 37 ms, and
  // backup:3 under such delays as 1.04-1.09x as fast as backup:2 where it
  // took half its time an iteration.
  const auto n = static_cast<int64_t>(slowness.size());
  const double quartile = predict::LowerQuantile(slowness, 0, n, 0.25);
  std::vector<double> usual;
  for (const double s : slowness) {
    if (s < kDelayFactor * quartile) usual.push_back(s);
  }
  const double steady = predict::LowerQuantile(usual, 0, static_cast<int64_t>(usual.size()), 0.5);
  std::vector<double> steps;
  for (size_t j = 0; j < measured.size() && j < slowness.size(); ++j) {
    const double s = slowness[j];
    // measured / s: what this step's computing took a sample.
    steps.push_back(s < kDelayFactor * steady
                        ? s * per_sample_s
                        : steady * per_sample_s + (s - steady) * measured[j] / s);
  }
  return steps;
}

namespace {

// Per worker (by node), the time each of its pushes took to send (comm/push
// spans by clock) less what its thread waited for a core meanwhile (the
// span's run_wait_us; absent from older traces: 0), seconds.
std::map<std::string, std::map<int64_t, double>> PushSeconds(
    const std::vector<trace::Record>& records) {
  std::map<std::string, std::map<int64_t, double>> pushes;
  for (const trace::Record& r : records) {
    if (r.kind != "span" || r.lane != "comm" || r.name != "push") continue;
    const double dur_us = static_cast<double>(r.dur_us);
    const double waited_us = std::clamp(r.Number("run_wait_us"), 0.0, dur_us);
    pushes[r.node][static_cast<int64_t>(r.Number("clock"))] += (dur_us - waited_us) * 1e-6;
  }
  return pushes;
}

// Adds to each step of `histories` the time its push took to send beyond
// the workers' usual push (the upper median over the workers of each one's
// median push). A push returns once its message is queued; one that takes
// longer than most workers' was held up on its worker's own link (a capped
// one, as --bandwidth-schedule makes it: 19 ms a push against 0.2-0.6 ms
// for the others on loopback), which the round waits for as it does for a
// slow step, and which the level, the changes and the delays must then
// see. What half the workers' pushes take (a busy host whose server reads
// late: 25-30 ms for two fast workers' pushes of four) is no worker's own.
void AddSlowSending(const std::vector<trace::Record>& records,
                    std::vector<predict::WorkerHistory>* histories) {
  const std::map<std::string, std::map<int64_t, double>> pushes = PushSeconds(records);
  std::vector<double> medians;
  for (const predict::WorkerHistory& h : *histories) {
    auto it = pushes.find(h.node);
    if (it == pushes.end()) return;  // a worker without pushes: nothing to compare
    std::vector<double> seconds;
    for (const auto& [clock, s] : it->second) seconds.push_back(s);
    medians.push_back(Median(seconds));
  }
  if (medians.empty()) return;  // no worker's steps: nothing to add to
  // The upper median: a push counts as held up only when at least half of
  // the workers send quicker (with two workers, never).
  std::sort(medians.begin(), medians.end());
  const double common = medians[medians.size() / 2];
  for (predict::WorkerHistory& h : *histories) {
    const std::map<int64_t, double>& mine = pushes.at(h.node);
    std::vector<double> sent;  // by step; 0 where the step has no push
    for (int64_t clock : h.clocks) {
      auto it = mine.find(clock);
      sent.push_back(it == mine.end() ? 0 : it->second);
    }
    // Sending slowly counts as the worker's level only where three pushes
    // in four of the steps around do (the lower quartile of kChangeWindow
    // steps on each side): on a busy host half of the fast workers' pushes
    // wait 40-120 ms while the round waits for the straggler anyway.
    const auto n = static_cast<int64_t>(std::min(sent.size(), h.steps.size()));
    for (int64_t i = 0; i < n; ++i) {
      predict::Observation& o = h.steps[static_cast<size_t>(i)];
      const double usual =
          predict::LowerQuantile(sent, std::max<int64_t>(0, i - predict::kChangeWindow),
                                 std::min(n, i + predict::kChangeWindow), 0.25);
      if (!(o.speed > 0) || o.batch < 1 || usual <= common) continue;
      const double busy = static_cast<double>(o.batch) / o.speed + (usual - common);
      o.speed = static_cast<double>(o.batch) / busy;
    }
  }
}

// One worker's steady level, delays and jitter from its history; the
// clock and time of each step measured into `steps`.
WorkerProfile MeasureWorker(const predict::WorkerHistory& history, int64_t batch,
                            StepTimes* steps) {
  std::vector<double> per_sample;  // seconds per sample, step by step
  const size_t skip = history.steps.size() > static_cast<size_t>(2 * kWarmupSteps)
                          ? static_cast<size_t>(kWarmupSteps)
                          : 0;
  for (size_t i = skip; i < history.steps.size(); ++i) {
    per_sample.push_back(1 / history.steps[i].speed);
  }
  // The level now: since the last lasting change of speed, sought in the
  // lower quartile, which moves only when three steps in four do (as auto
  // seeks them): delays of 50 ms on one step in five moved the mean of
  // logs enough to read a change, and one worker's window of 80 steps
  // held 36% delayed.
  size_t from = 0;
  if (std::vector<int64_t> changes =
          predict::FindLastingChanges(per_sample, predict::ChangeLevel::kLowerQuartile);
      !changes.empty()) {
    from = static_cast<size_t>(changes.back());
  }
  const std::vector<double> recent(per_sample.begin() + static_cast<std::ptrdiff_t>(from),
                                   per_sample.end());
  const double level = Median(recent);
  WorkerProfile w;
  w.step_s = level * static_cast<double>(batch);
  std::vector<double> logs;
  double delayed_s = 0;
  int64_t delayed = 0;
  for (size_t i = 0; i < recent.size(); ++i) {
    const double s = recent[i];
    steps->clocks.push_back(history.clocks[skip + from + i]);
    steps->seconds.push_back(s * static_cast<double>(batch));
    if (s >= kDelayFactor * level) {
      ++delayed;
      delayed_s += (s - level) * static_cast<double>(batch);
    } else {
      logs.push_back(std::log(s / level));
    }
  }
  if (delayed > 0 && !recent.empty()) {
    w.delay_prob =
        std::min(0.95, static_cast<double>(delayed) / static_cast<double>(recent.size()));
    w.delay_s = delayed_s / static_cast<double>(delayed);
  }
  // The robust standard deviation: 1.4826 times the median absolute deviation.
  const double center = Median(logs);
  for (double& l : logs) l = std::abs(l - center);
  w.jitter = std::min(1.0, 1.4826 * Median(logs));
  return w;
}

// The run's instants from the server: start, target, end.
Status ReadRun(const std::vector<trace::Record>& records, MeasuredRun* run) {
  int64_t starts = 0;
  for (const trace::Record& r : records) {
    if (r.kind == "counter" && r.name == "accuracy") {
      run->accuracy.emplace_back(static_cast<int64_t>(r.Number("iteration")), r.Number("value"));
    }
    if (r.lane != "run" || r.kind != "instant") continue;
    if (r.name == "start") {
      ++starts;
      run->policy = r.Text("policy");
      run->model = r.Text("model");
      run->target = r.Number("target");
    } else if (r.name == "target") {
      run->reached = true;
      run->target_iteration = static_cast<int64_t>(r.Number("iteration"));
    } else if (r.name == "end") {
      run->seconds = r.Number("seconds");
      run->iterations = static_cast<int64_t>(r.Number("iterations"));
    }
  }
  if (starts > 1) {
    return Status::InvalidArgument(
        fmt::format("the traces hold {} runs; give the traces of one", starts));
  }
  return Status::Ok();
}

// The cores of the server's host where every worker of `histories` runs
// there (the server's "worker admitted" instants: CommonHostCores); else 0.
int64_t HostCores(const std::vector<trace::Record>& records,
                  const std::vector<predict::WorkerHistory>& histories) {
  std::map<std::string, int64_t> by_node;
  for (const trace::Record& r : records) {
    if (r.lane != "run" || r.kind != "instant" || r.name != "worker admitted") continue;
    // A crafted trace's figures are checked before they become integers.
    const double worker = r.Number("worker", -1), cores = r.Number("host_cores");
    if (!(worker >= 0 && worker < 1e9)) continue;
    by_node["worker-" + std::to_string(static_cast<int64_t>(worker))] =
        cores >= 1 && cores < 1e9 ? static_cast<int64_t>(cores) : 0;
  }
  std::vector<int64_t> cores;
  for (const predict::WorkerHistory& h : histories) {
    const auto found = by_node.find(h.node);
    cores.push_back(found == by_node.end() ? 0 : found->second);
  }
  return CommonHostCores(cores);
}

// Parameters, links and the server's costs into `profile`, for a run under
// `policy` (the server's name for it).
Status MeasureNetwork(const std::vector<trace::Record>& records, const std::string& policy,
                      ClusterProfile* profile) {
  std::vector<double> bytes, applies;
  std::map<std::string, std::vector<double>> waits;  // by worker and kind of wait
  for (const trace::Record& r : records) {
    if (r.kind != "span") continue;
    if (r.lane == "comm" && r.name == "push" && r.Number("bytes") > 0) {
      bytes.push_back(r.Number("bytes"));
    } else if (r.lane == "wait" && (r.name == "pull" || r.name == "reply")) {
      waits[r.node + "/" + r.name].push_back(static_cast<double>(r.dur_us) * 1e-6);
    } else if (r.lane == "apply" && r.name == "apply") {
      applies.push_back(static_cast<double>(r.dur_us) * 1e-6);
    }
  }
  if (bytes.empty()) return Status::DataLoss("the traces hold no pushes (comm/push spans)");
  profile->num_params = std::max<int64_t>(1, std::llround(Median(bytes) / 4));
  const double params = static_cast<double>(profile->num_params);
  // Staging, the mean and momentum: about three passes over the parameters.
  if (!applies.empty()) profile->param_s = Median(applies) / (3 * params);
  // A push returns once its message is queued, so its span says nothing of
  // the link. A worker that is the last of its round waits for the round
  // trip alone: two latencies, the server's handling, and the transfer of
  // its model behind those sent before it, half the round's on average (one
  // where each push is answered alone). The link's bandwidth is what makes
  // that transfer take the rest. A steady straggler is the last of every
  // round, and its median wait is the round trip. Under delays taking turns
  // each worker is the last in one round of N and waits for the sleeper in
  // the others: the quantile 1/(2N) of each worker's waits is then such a
  // round's. (Taken always, that quantile is the luckiest round trips of a
  // steady straggler on a busy host: BSP predicted 23% fast on a traced run
  // where the median gave +9%.) Under independent delays most rounds wait
  // for a delayed worker (three in five, four workers delayed one step in
  // five), and the median wait is a delay: read as the link, 50 ms delays
  // made it 1.2 Gbit/s, 2.7 ms a model on loopback, and backup:3's round
  // 13 ms where it took 8; the same quantile is then the rounds that
  // waited for no delay. The least over the workers is the quickest round
  // trip.
  const double q = profile->rotation_s > 0 || ReadsDelays(*profile)
                       ? 0.5 / static_cast<double>(std::max<size_t>(1, profile->workers.size()))
                       : 0.5;
  double quickest = -1;
  for (const auto& entry : waits) {
    const double m =
        predict::LowerQuantile(entry.second, 0, static_cast<int64_t>(entry.second.size()), q);
    if (quickest < 0 || m < quickest) quickest = m;
  }
  const double models =
      sync::AnswersEachPush(policy) ? 1 : (static_cast<double>(profile->workers.size()) + 1) / 2;
  const double server = profile->message_s + 3 * params * profile->param_s;
  const double transfer = (quickest - 2 * profile->latency_s - server) / models;
  if (quickest > 0 && transfer > 0) profile->link_gbps = Median(bytes) * 8 / transfer / 1e9;
  return Status::Ok();
}

}  // namespace

int64_t MeasuredRun::IterationsTo(double target) const {
  for (const auto& [iteration, value] : accuracy) {
    if (value >= target) return iteration;
  }
  return 0;
}

Result<MeasuredRun> MeasureRun(const std::vector<trace::Record>& records) {
  MeasuredRun run;
  DMLPS_RETURN_IF_ERROR(ReadRun(records, &run));
  std::vector<predict::WorkerHistory> histories = predict::ExtractHistories(records);
  AddSlowSending(records, &histories);
  std::vector<double> core_shares, work_jitter;
  OnSharedCores(records, &histories, &core_shares, &work_jitter);
  double samples = 0, steps = 0;
  for (const predict::WorkerHistory& h : histories) {
    for (const predict::Observation& o : h.steps) {
      samples += static_cast<double>(o.batch);
      steps += 1;
    }
  }
  if (steps == 0) {
    return Status::DataLoss("the traces hold no worker steps (compute/step spans)");
  }
  run.profile.batch = std::max<int64_t>(1, std::llround(samples / steps));
  std::map<std::string, double> gaps = UnaccountedPerStep(records);
  if (SharedCoresOf(core_shares) > 0 && !gaps.empty()) {
    // On shared cores the gaps differ by how long each worker waited for a
    // core between its spans: every worker pays the least of them.
    double least = gaps.begin()->second;
    for (const auto& entry : gaps) least = std::min(least, entry.second);
    for (auto& entry : gaps) entry.second = least;
  }
  std::vector<StepTimes> times(histories.size());
  for (size_t r = 0; r < histories.size(); ++r) {
    const predict::WorkerHistory& h = histories[r];
    if (h.steps.empty()) {
      return Status::DataLoss(h.node + " took no step in the traces");
    }
    run.profile.workers.push_back(MeasureWorker(h, run.profile.batch, &times[r]));
    if (auto gap = gaps.find(h.node); gap != gaps.end()) {
      run.profile.workers.back().step_s += gap->second;
    }
    run.profile.workers.back().core_share = core_shares[r];
    if (work_jitter[r] >= 0) run.profile.workers.back().jitter = work_jitter[r];
  }
  run.profile.rotation_s = RotatingDelay(times);
  run.host_cores = HostCores(records, histories);
  if (run.host_cores > 0) {
    // As auto reads them (SharedCoresAtMost); 0 leaves the shares to tell.
    const int64_t cores = SharedCoresAtMost(run.profile, run.host_cores);
    if (cores > 0) run.profile.cores = cores;
  }
  DMLPS_RETURN_IF_ERROR(MeasureNetwork(records, run.policy, &run.profile));
  return run;
}

Result<MeasuredRun> MeasureTraces(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
      files.push_back(path);
      continue;
    }
    std::vector<std::string> runs, found;
    for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
      const std::string name = e.path().filename().string();
      if (e.is_directory()) {
        if (fs::exists(e.path() / "server.trace")) runs.push_back(name);
      } else if (name.ends_with(".trace")) {
        found.push_back(e.path().string());
      }
    }
    if (ec) return Status::IOError(path + ": " + ec.message());
    std::sort(runs.begin(), runs.end());
    std::sort(found.begin(), found.end());
    if (found.empty() && !runs.empty()) {
      std::string names;
      for (const std::string& r : runs) names += (names.empty() ? "" : ", ") + r;
      return Status::InvalidArgument(path + " holds the traces of several runs (" + names +
                                     "): give one of its folders");
    }
    if (found.empty()) return Status::NotFound(path + ": no .trace files in it");
    files.insert(files.end(), found.begin(), found.end());
  }
  if (files.empty()) return Status::InvalidArgument("no traces given");
  trace::ReadResult read = trace::ReadTraces(files, [](const Status&) {});
  if (!read.status.ok()) return read.status;
  return MeasureRun(read.records);
}

}  // namespace dmlps::advise
