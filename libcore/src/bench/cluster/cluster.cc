#include "dmlps/bench/cluster/cluster.h"

#include <spdlog/fmt/fmt.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "bench/cluster/child.h"
#include "dmlps/bench/cluster/commands.h"
#include "dmlps/net/secret.h"

namespace dmlps::bench {
namespace {

namespace fs = std::filesystem;

// The last non-empty line of a file, or "".
std::string LastLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::string last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The newest evaluation in the server's TSV (seconds, iteration, accuracy, loss).
void ReadProgress(const std::string& tsv, Progress* progress) {
  std::istringstream line(LastLine(tsv));
  double seconds = 0;
  int64_t iteration = 0;
  double accuracy = 0;
  if (line >> seconds >> iteration >> accuracy) {
    progress->seconds = seconds;
    progress->iteration = iteration;
    progress->accuracy = accuracy;
  }
}

std::string WhyExited(const std::string& who, int code, const std::string& log) {
  std::string why = who + (code > 128 ? " was killed by signal " + std::to_string(code - 128)
                                      : " exited with status " + std::to_string(code));
  const std::string last = LastLine(log);
  if (!last.empty()) why += ": " + last;
  return why + " (log: " + log + ")";
}

// How long the server may go on once every worker, or the evaluator, has
// exited without error: a command that exits without having joined would
// otherwise leave the server waiting until the run's deadline.
constexpr std::chrono::seconds kClientsGoneGrace{10};

// The processes of one run beside the server: the other server shards, its
// workers (dmlps-worker or the user's command) and the user's evaluator, if
// any. Killed when destroyed, as each Child is.
class Clients {
 public:
  // `secret_env` ("DMLPS_SECRET_FILE=...") goes into every client's environment.
  Clients(const Experiment& e, const ClusterOptions& options, const fs::path& dir,
          std::string secret_env)
      : e_(e), options_(options), dir_(dir), secret_env_(std::move(secret_env)) {}

  // Starts them all, the server (shard 0) being at `endpoint`.
  Status Start(const std::string& endpoint) {
    for (int64_t k = 1; k < options_.shards; ++k) {
      shards_.push_back(std::make_unique<Child>());
      if (Status s = shards_.back()->Start(ShardCommand(options_, k, endpoint), "/dev/null",
                                           ShardLog(k), {secret_env_});
          !s.ok()) {
        return s;
      }
    }
    const bool own = !options_.worker_command.empty();
    for (int64_t r = 0; r < e_.job.workers; ++r) {
      workers_.push_back(std::make_unique<Child>());
      if (own) workers_.back()->set_own_group();
      const std::string log = WorkerLog(r);
      std::vector<std::string> env = WorkerEnvironment(e_, r, options_, endpoint);
      env.push_back(secret_env_);
      Status s = own ? workers_.back()->Start({"/bin/sh", "-c", options_.worker_command}, log, log,
                                              std::move(env))
                     : workers_.back()->Start(WorkerCommand(e_, r, options_, endpoint), "/dev/null",
                                              log, {secret_env_});
      if (!s.ok()) return s;
    }
    if (options_.evaluator_command.empty()) return Status::Ok();
    evaluator_ = std::make_unique<Child>();
    evaluator_->set_own_group();
    const std::string log = (dir_ / "evaluator.log").string();
    return evaluator_->Start(
        {"/bin/sh", "-c", options_.evaluator_command}, log, log,
        {"DMLPS_SERVER=" + endpoint, "DMLPS_MODEL=" + e_.job.model, "DMLPS_DATA=" + e_.job.data,
         "DMLPS_SEED=" + std::to_string(e_.job.seed), "DMLPS_BIN=" + options_.bin_dir,
         secret_env_});
  }

  // Why the run cannot go on: a client exited with an error, or every
  // worker (or the evaluator) is gone and the server has not ended within
  // kClientsGoneGrace. "" while all is well.
  std::string Failure() {
    for (size_t i = 0; i < shards_.size(); ++i) {
      Child& shard = *shards_[i];
      if (shard.running() && shard.Poll() && shard.exit_code() != 0) {
        const auto k = static_cast<int64_t>(i) + 1;
        return WhyExited(fmt::format("server shard {}", k), shard.exit_code(), ShardLog(k));
      }
    }
    bool all_gone = !workers_.empty();
    for (size_t r = 0; r < workers_.size(); ++r) {
      Child& w = *workers_[r];
      if (w.running() && w.Poll() && w.exit_code() != 0) {
        return WhyExited(WorkerName(static_cast<int64_t>(r)), w.exit_code(),
                         WorkerLog(static_cast<int64_t>(r)));
      }
      all_gone = all_gone && !w.running();
    }
    bool evaluator_gone = false;
    if (evaluator_ != nullptr) {
      if (evaluator_->running() && evaluator_->Poll() && evaluator_->exit_code() != 0) {
        return WhyExited(EvaluatorName(), evaluator_->exit_code(),
                         (dir_ / "evaluator.log").string());
      }
      evaluator_gone = !evaluator_->running();
    }
    if (!all_gone && !evaluator_gone) return "";
    const Clock::time_point now = Clock::now();
    if (!gone_since_) gone_since_ = now;
    if (now - *gone_since_ < kClientsGoneGrace) return "";
    const std::string who =
        all_gone ? (options_.worker_command.empty()
                        ? std::string("every worker")
                        : "every worker (--worker-command " + Quote(options_.worker_command) + ")")
                 : EvaluatorName();
    return who + " exited with status 0 but the server went on for " +
           std::to_string(kClientsGoneGrace.count()) +
           " s without them (did they join it?); logs in " + dir_.string();
  }

  // Gives them `grace` to exit on their own (the server has stopped them),
  // then kills whatever is left.
  void Finish(std::chrono::milliseconds grace) {
    const Clock::time_point deadline = Clock::now() + grace;
    for (Child* c : All()) {
      while (c->running() && !c->Poll() && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      c->Kill();
    }
  }

  void Kill() {
    for (Child* c : All()) c->Kill();
  }

 private:
  std::vector<Child*> All() {
    std::vector<Child*> all;
    for (auto& w : workers_) all.push_back(w.get());
    if (evaluator_ != nullptr) all.push_back(evaluator_.get());
    for (auto& shard : shards_) all.push_back(shard.get());  // after the workers they serve
    return all;
  }
  std::string ShardLog(int64_t k) const { return (dir_ / fmt::format("shard-{}.log", k)).string(); }
  std::string WorkerLog(int64_t rank) const {
    return (dir_ / fmt::format("worker-{}.log", rank)).string();
  }
  std::string WorkerName(int64_t rank) const {
    return options_.worker_command.empty() ? fmt::format("worker {}", rank)
                                           : fmt::format("worker {} (--worker-command {})", rank,
                                                         Quote(options_.worker_command));
  }
  std::string EvaluatorName() const {
    return "the evaluator (--evaluator-command " + Quote(options_.evaluator_command) + ")";
  }
  static std::string Quote(const std::string& text) {
    std::string quoted = "'";
    quoted += text;
    quoted += '\'';
    return quoted;
  }

  const Experiment& e_;
  const ClusterOptions& options_;
  const fs::path dir_;
  std::vector<std::unique_ptr<Child>> shards_;
  std::vector<std::unique_ptr<Child>> workers_;
  std::unique_ptr<Child> evaluator_;
  std::string secret_env_;
  std::optional<Clock::time_point> gone_since_;
};

// The files of one run, in its folder.
struct RunFiles {
  explicit RunFiles(const fs::path& dir)
      : endpoint((dir / "endpoint").string()),
        report((dir / "report.tsv").string()),
        server_log((dir / "server.log").string()),
        server_tsv((dir / "server.tsv").string()),
        secret((dir / "secret").string()) {}
  std::string endpoint;
  std::string report;
  std::string server_log;
  std::string server_tsv;  // the server's evaluations
  std::string secret;
};

// Makes the run's folders, clears what a run before it left there, and
// writes the run's own job secret, which its evaluator and shards present;
// the variable that names the secret's file.
Result<std::string> PrepareRun(const ClusterOptions& options, const RunFiles& files) {
  std::error_code ec;
  fs::create_directories(options.run_dir, ec);
  if (!options.trace_dir.empty()) fs::create_directories(options.trace_dir, ec);
  if (ec) return Status::Unavailable("cannot create " + options.run_dir + ": " + ec.message());
  fs::remove(files.endpoint, ec);
  fs::remove(files.report, ec);
  DMLPS_ASSIGN_OR_RETURN(std::string secret, net::GenerateSecret());
  DMLPS_RETURN_IF_ERROR(net::WriteSecretFile(secret, files.secret, true));
  return std::string(net::kSecretFileVariable) + "=" + files.secret;
}

// When a run that began at `begin` has taken too long: its --max-seconds
// (none: a year) and the slack.
Clock::time_point Deadline(const Experiment& e, const ClusterOptions& options,
                           Clock::time_point begin) {
  return begin + options.slack +
         (e.job.max_seconds > 0 ? std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(e.job.max_seconds))
                                : std::chrono::hours(24 * 365));
}

// Follows a run until its server exits, starting the clients once the
// server listens and showing `progress` about every 200 ms. Why the run
// cannot go on (the signal, the deadline, a client), or "" once the server
// has exited.
std::string AwaitServer(Child& server, Clients& clients, const RunFiles& files,
                        const std::string& dir, Clock::time_point begin, Clock::time_point deadline,
                        const std::atomic<int>* signal,
                        const std::function<void(const Progress&)>& progress) {
  Progress shown;
  Clock::time_point next_progress = begin;
  std::string endpoint;
  while (true) {
    if (signal != nullptr && signal->load() != 0) return "interrupted";
    if (Clock::now() > deadline) return "timed out; logs in " + dir;
    if (server.Poll()) return "";
    if (endpoint.empty() && fs::exists(files.endpoint)) {
      endpoint = ReadFirstLine(files.endpoint);
      if (Status s = clients.Start(endpoint); !s.ok()) return s.message();
    }
    if (std::string why = clients.Failure(); !why.empty()) return why;
    if (progress && Clock::now() >= next_progress) {
      next_progress = Clock::now() + std::chrono::milliseconds(200);
      shown.elapsed_s = std::chrono::duration<double>(Clock::now() - begin).count();
      ReadProgress(files.server_tsv, &shown);
      progress(shown);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

Result<RunResult> ReadServerReport(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("no report at " + path);
  std::map<std::string, std::string> values;
  std::string line;
  while (std::getline(in, line)) {
    const size_t tab = line.find('\t');
    if (tab != std::string::npos) values[line.substr(0, tab)] = line.substr(tab + 1);
  }
  auto number = [&](const std::string& key) -> std::optional<double> {
    auto it = values.find(key);
    if (it == values.end()) return std::nullopt;
    try {
      size_t used = 0;
      const double v = std::stod(it->second, &used);
      if (used != it->second.size()) return std::nullopt;
      return v;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  };
  for (const char* key :
       {"target_reached", "seconds_to_target", "iterations_to_target", "samples_to_target",
        "iterations", "samples", "seconds", "accuracy", "compute_ratio_mean", "compute_ratio_min",
        "wait_share", "wasted_samples", "bytes_per_worker"}) {
    if (!number(key)) return Status::DataLoss(path + ": no number for '" + key + "'");
  }
  RunResult r;
  r.reached = *number("target_reached") != 0;
  r.seconds = r.reached ? *number("seconds_to_target") : *number("seconds");
  r.iterations =
      static_cast<int64_t>(r.reached ? *number("iterations_to_target") : *number("iterations"));
  r.samples = static_cast<int64_t>(r.reached ? *number("samples_to_target") : *number("samples"));
  r.compute_ratio_mean = *number("compute_ratio_mean");
  r.compute_ratio_min = *number("compute_ratio_min");
  r.wait_share = *number("wait_share");
  r.wasted_samples = static_cast<int64_t>(*number("wasted_samples"));
  r.bytes_per_worker = *number("bytes_per_worker");
  r.accuracy = *number("accuracy");
  // The server goes on without a lost worker, but then the run no longer
  // measures the experiment's cluster.
  if (auto it = values.find("last_lost"); it != values.end() && !it->second.empty()) {
    r.failure = "lost " + it->second;
  }
  return r;
}

RunResult RunCluster(const Experiment& e, std::string_view policy_entry, const Codecs& codecs,
                     int64_t repeat, const ClusterOptions& options, const std::atomic<int>* signal,
                     const std::function<void(const Progress&)>& progress) {
  RunResult result;
  result.policy = std::string(policy_entry);
  result.codecs = CodecsName(codecs);
  result.repeat = repeat;
  const fs::path dir(options.run_dir);
  const RunFiles files(dir);
  const Clock::time_point begin = Clock::now();
  const Result<std::string> secret_env = PrepareRun(options, files);
  if (!secret_env.ok()) {
    result.failure = secret_env.status().message();
    return result;
  }
  Child server;
  Clients clients(e, options, dir, *secret_env);
  auto fail = [&](std::string why) {
    clients.Kill();
    server.Kill();
    result.failure = std::move(why);
    return result;
  };
  // ValidateExperiment has checked the entry; one that is bad still ends
  // this run alone, with the reason.
  Result<sync::PolicyConfig> policy = PolicyFor(policy_entry, e);
  if (!policy.ok()) return fail(policy.status().message());
  if (Status s =
          server.Start(ServerCommand(e, *policy, options, files.endpoint, files.report, codecs),
                       files.server_tsv, files.server_log, {*secret_env});
      !s.ok()) {
    return fail(s.message());
  }
  if (std::string why = AwaitServer(server, clients, files, dir.string(), begin,
                                    Deadline(e, options, begin), signal, progress);
      !why.empty()) {
    return fail(why);
  }
  // The server has stopped its workers; give them a moment to go.
  clients.Finish(std::chrono::seconds(10));
  const int code = server.exit_code();
  if (code != 0 && code != 1) return fail(WhyExited("the server", code, files.server_log));
  Result<RunResult> report = ReadServerReport(files.report);
  if (!report.ok())
    return fail(WhyExited("the server", code, files.server_log) + "; " + report.status().message());
  RunResult read = *report;
  // Without a target, a run that ran to its limits did what was asked.
  if (e.job.target_accuracy == 0 && options.target_loss == 0 && read.failure.empty())
    read.reached = true;
  read.policy = result.policy;
  read.codecs = result.codecs;
  read.repeat = repeat;
  return read;
}

}  // namespace dmlps::bench
