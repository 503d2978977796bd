#include "dmlps/bench/cluster.h"

#include <fcntl.h>
#include <spdlog/fmt/fmt.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "dmlps/base/json.h"
#include "dmlps/net/secret.h"
#include "dmlps/sync/registry.h"

namespace dmlps::bench {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

// This process's environment with `extra` ("NAME=VALUE") added, an extra
// variable replacing one of the same name.
std::vector<std::string> MergedEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> merged;
  for (char** v = environ; v != nullptr && *v != nullptr; ++v) {
    const std::string_view entry(*v);
    const std::string_view name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const std::string& e : extra) {
      replaced = replaced || (e.size() > name.size() && e.compare(0, name.size(), name) == 0 &&
                              e[name.size()] == '=');
    }
    if (!replaced) merged.emplace_back(entry);
  }
  merged.insert(merged.end(), extra.begin(), extra.end());
  return merged;
}

// One child process, its output going to files. Killed (TERM, then KILL) if
// still running when destroyed, so no exit path leaves it behind; it also
// gets SIGTERM should this process die first.
class Child {
 public:
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() { Kill(); }

  // Starts argv (program first) with stdin from /dev/null. `env`
  // ("NAME=VALUE") adds to or replaces this process's variables. Output to
  // the same path for both streams lands in one file.
  Status Start(const std::vector<std::string>& argv, const std::string& stdout_path,
               const std::string& stderr_path, const std::vector<std::string>& env = {}) {
    name_ = argv.front();
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<std::string> merged = MergedEnvironment(env);
    std::vector<char*> envp;
    for (std::string& v : merged) envp.push_back(v.data());
    envp.push_back(nullptr);
    const bool one_file = stdout_path == stderr_path;
    const bool own_group = own_group_;
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) return Status::Unavailable("cannot start " + name_ + ": " + std::strerror(errno));
    if (pid == 0) {
      // Only async-signal-safe calls between fork and exec.
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(127);
      if (own_group) setpgid(0, 0);
      const int in = open("/dev/null", O_RDONLY);
      const int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int out =
          one_file ? err : open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (in < 0 || out < 0 || err < 0) _exit(126);
      dup2(in, 0);
      dup2(out, 1);
      dup2(err, 2);
      execve(args[0], args.data(), envp.data());
      _exit(127);
    }
    pid_ = pid;
    if (own_group_) {
      setpgid(pid, pid);  // as the child does, so that either order works
      group_ = pid;
    }
    return Status::Ok();
  }

  // Whether it has exited; its status is then in exit_code().
  bool Poll() {
    if (pid_ <= 0) return true;
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == 0) return false;
    exit_code_ = r < 0                 ? 255
                 : WIFEXITED(status)   ? WEXITSTATUS(status)
                 : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                       : 255;
    pid_ = -1;
    return true;
  }

  // Asks it to stop (SIGTERM); it is killed outright if it has not within
  // `grace`. A child started in its own process group takes the whole group
  // with it, whatever a shell command started.
  void Kill(std::chrono::milliseconds grace = std::chrono::milliseconds(3000)) {
    if (pid_ > 0) {
      Signal(SIGTERM);
      const Clock::time_point deadline = Clock::now() + grace;
      while (!Poll() && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (pid_ > 0) {
      Signal(SIGKILL);
      int status = 0;
      waitpid(pid_, &status, 0);
      exit_code_ = 128 + SIGKILL;
      pid_ = -1;
    }
    if (group_ > 0) kill(-group_, SIGKILL);
    group_ = -1;
  }

  bool running() const { return pid_ > 0; }

  // Start() puts the next child in a process group of its own.
  void set_own_group() { own_group_ = true; }
  int exit_code() const { return exit_code_; }

 private:
  void Signal(int sig) {
    if (group_ > 0) {
      kill(-group_, sig);
    } else {
      kill(pid_, sig);
    }
  }

  std::string name_;
  bool own_group_ = false;
  pid_t group_ = -1;  // the child's own process group, or -1
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

std::string Number(double value) { return fmt::format("{}", value); }

// A schedule as its flag takes it: I:V,I:V...
std::string ScheduleText(const std::vector<std::pair<int64_t, double>>& entries) {
  std::string text;
  for (const auto& entry : entries) {
    if (!text.empty()) text += ',';
    text += std::to_string(entry.first) + ":" + Number(entry.second);
  }
  return text;
}

// "K/S", as --shard takes it.
std::string ShardName(int64_t k, int64_t shards) { return fmt::format("{}/{}", k, shards); }

std::string WorkerTrace(const ClusterOptions& options, int64_t rank) {
  return (fs::path(options.trace_dir) / fmt::format("worker-{}.trace", rank)).string();
}

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
      const std::string server = (fs::path(options_.bin_dir) / "dmlps-server").string();
      if (Status s =
              shards_.back()->Start({server, "--bind", "tcp://127.0.0.1:*", "--shard",
                                     ShardName(k, options_.shards), "--coordinator", endpoint},
                                    "/dev/null", ShardLog(k), {secret_env_});
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

}  // namespace

std::string ServerOptimizerRule(const std::vector<std::string>& server_args) {
  std::string rule = "sgd";
  for (size_t i = 0; i < server_args.size(); ++i) {
    if (server_args[i] == "--optimizer" && i + 1 < server_args.size()) rule = server_args[i + 1];
    if (server_args[i].starts_with("--optimizer=")) rule = server_args[i].substr(12);
  }
  return rule;
}

std::vector<std::string> ServerCommand(const Experiment& e, const sync::PolicyConfig& policy,
                                       const ClusterOptions& options,
                                       const std::string& endpoint_file,
                                       const std::string& report_file) {
  std::vector<std::string> argv = {(fs::path(options.bin_dir) / "dmlps-server").string(),
                                   "--workers", std::to_string(e.job.workers)};
  const std::vector<std::string> policy_flags = sync::PolicyServerFlags(policy);
  argv.insert(argv.end(), policy_flags.begin(), policy_flags.end());
  argv.insert(argv.end(), {"--model",
                           e.job.model,
                           "--data",
                           e.job.data,
                           "--batch",
                           std::to_string(e.job.batch),
                           "--lr",
                           Number(e.job.lr),
                           "--eval-every",
                           std::to_string(e.job.eval_every),
                           "--seed",
                           std::to_string(e.job.seed),
                           "--bind",
                           "tcp://127.0.0.1:*",
                           "--endpoint-file",
                           endpoint_file,
                           "--report",
                           report_file,
                           "--target-accuracy",
                           Number(e.job.target_accuracy),
                           "--max-iterations",
                           std::to_string(e.job.max_iterations),
                           "--max-seconds",
                           Number(e.job.max_seconds)});
  if (!options.trace_dir.empty()) {
    argv.insert(argv.end(), {"--trace", (fs::path(options.trace_dir) / "server.trace").string()});
  }
  // --momentum is SGD's: a server told to use Adam takes its --betas.
  if (ServerOptimizerRule(options.server_args) == "sgd") {
    argv.insert(argv.end(), {"--momentum", Number(e.job.momentum)});
  }
  if (!options.evaluator_command.empty()) argv.push_back("--evaluator");
  if (options.deterministic) argv.push_back("--deterministic");
  if (options.shards > 1) argv.insert(argv.end(), {"--shard", ShardName(0, options.shards)});
  if (options.target_loss > 0)
    argv.insert(argv.end(), {"--target-loss", Number(options.target_loss)});
  argv.insert(argv.end(), options.server_args.begin(), options.server_args.end());
  return argv;
}

std::vector<std::string> StragglerFlags(const Experiment& e, int64_t rank) {
  const worker::StragglerSpec& s = e.stragglers[static_cast<size_t>(rank)];
  std::vector<std::string> argv = {
      "--slowdown",
      Number(s.slowdown),
      "--delay-ms",
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(s.delay).count()),
      "--delay-prob",
      Number(s.delay_prob),
      "--round-robin-ms",
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(s.round_robin).count()),
      "--bandwidth-mbps",
      Number(s.bandwidth_mbps)};
  if (!s.schedule.empty())
    argv.insert(argv.end(), {"--slowdown-schedule", ScheduleText(s.schedule)});
  if (!s.bandwidth_schedule.empty()) {
    argv.insert(argv.end(), {"--bandwidth-schedule", ScheduleText(s.bandwidth_schedule)});
  }
  return argv;
}

std::vector<std::string> WorkerCommand(const Experiment& e, int64_t rank,
                                       const ClusterOptions& options, const std::string& endpoint) {
  std::vector<std::string> argv = {(fs::path(options.bin_dir) / "dmlps-worker").string(),
                                   "--server",
                                   endpoint,
                                   "--rank",
                                   std::to_string(rank),
                                   "--data",
                                   e.job.data,
                                   "--threads",
                                   std::to_string(options.threads)};
  const std::vector<std::string> straggler = StragglerFlags(e, rank);
  argv.insert(argv.end(), straggler.begin(), straggler.end());
  if (!options.trace_dir.empty()) argv.insert(argv.end(), {"--trace", WorkerTrace(options, rank)});
  return argv;
}

std::vector<std::string> WorkerEnvironment(const Experiment& e, int64_t rank,
                                           const ClusterOptions& options,
                                           const std::string& endpoint) {
  const std::vector<std::string> flags = StragglerFlags(e, rank);
  std::string flag_text;
  // The options as dmlps.Worker's keywords: rank, threads and seed as the
  // worker would have them, the flags without their leading "--", dashes
  // turned into underscores; numbers as numbers, schedules as text.
  std::ostringstream json;
  json << "{\"rank\": " << rank << ", \"threads\": " << options.threads
       << ", \"seed\": " << e.job.seed;
  std::vector<std::string> env;
  for (size_t i = 0; i + 1 < flags.size(); i += 2) {
    flag_text += (flag_text.empty() ? "" : " ") + flags[i] + " " + flags[i + 1];
    std::string key = flags[i].substr(2);
    std::string name = "DMLPS_";
    for (char& c : key) {
      if (c == '-') c = '_';
      name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    json << ", ";
    WriteJsonString(key, json);
    json << ": ";
    if (key.find("schedule") != std::string::npos) {
      WriteJsonString(flags[i + 1], json);
    } else {
      json << flags[i + 1];
    }
    env.push_back(name + "=" + flags[i + 1]);
  }
  const std::string trace = options.trace_dir.empty() ? "" : WorkerTrace(options, rank);
  if (!trace.empty()) {
    json << ", \"trace\": ";
    WriteJsonString(trace, json);
  }
  json << "}";
  const worker::StragglerSpec& s = e.stragglers[static_cast<size_t>(rank)];
  if (s.schedule.empty()) env.push_back("DMLPS_SLOWDOWN_SCHEDULE=");
  if (s.bandwidth_schedule.empty()) env.push_back("DMLPS_BANDWIDTH_SCHEDULE=");
  env.insert(env.end(),
             {"DMLPS_SERVER=" + endpoint, "DMLPS_RANK=" + std::to_string(rank),
              "DMLPS_WORKERS=" + std::to_string(e.job.workers), "DMLPS_MODEL=" + e.job.model,
              "DMLPS_DATA=" + e.job.data, "DMLPS_THREADS=" + std::to_string(options.threads),
              "DMLPS_SEED=" + std::to_string(e.job.seed), "DMLPS_BIN=" + options.bin_dir,
              "DMLPS_TRACE=" + trace, "DMLPS_WORKER_FLAGS=" + flag_text,
              "DMLPS_WORKER_OPTIONS=" + json.str()});
  return env;
}

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

RunResult RunCluster(const Experiment& e, std::string_view policy_entry, int64_t repeat,
                     const ClusterOptions& options, const std::atomic<int>* signal,
                     const std::function<void(const Progress&)>& progress) {
  RunResult result;
  result.policy = std::string(policy_entry);
  result.repeat = repeat;
  const fs::path dir(options.run_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!options.trace_dir.empty()) fs::create_directories(options.trace_dir, ec);
  if (ec) {
    result.failure = "cannot create " + dir.string() + ": " + ec.message();
    return result;
  }
  const std::string endpoint_file = (dir / "endpoint").string();
  const std::string report_file = (dir / "report.tsv").string();
  const std::string server_log = (dir / "server.log").string();
  const std::string server_tsv = (dir / "server.tsv").string();
  fs::remove(endpoint_file, ec);
  fs::remove(report_file, ec);

  const Clock::time_point begin = Clock::now();
  const Clock::time_point deadline =
      begin + options.slack +
      (e.job.max_seconds > 0 ? std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(e.job.max_seconds))
                             : std::chrono::hours(24 * 365));
  // The run's own job secret, which its evaluator and shards present.
  const std::string secret_file = (dir / "secret").string();
  Result<std::string> secret = net::GenerateSecret();
  if (!secret.ok()) {
    result.failure = secret.status().message();
    return result;
  }
  if (Status written = net::WriteSecretFile(*secret, secret_file, true); !written.ok()) {
    result.failure = written.message();
    return result;
  }
  const std::string secret_env = std::string(net::kSecretFileVariable) + "=" + secret_file;
  Child server;
  Clients clients(e, options, dir, secret_env);
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
  if (Status s = server.Start(ServerCommand(e, *policy, options, endpoint_file, report_file),
                              server_tsv, server_log, {secret_env});
      !s.ok()) {
    return fail(s.message());
  }

  Progress shown;
  Clock::time_point next_progress = begin;
  std::string endpoint;
  bool server_done = false;
  while (true) {
    if (signal != nullptr && signal->load() != 0) return fail("interrupted");
    if (Clock::now() > deadline) return fail("timed out; logs in " + dir.string());
    if (server.Poll()) {
      server_done = true;
      break;
    }
    if (endpoint.empty() && fs::exists(endpoint_file)) {
      endpoint = ReadFirstLine(endpoint_file);
      if (Status s = clients.Start(endpoint); !s.ok()) return fail(s.message());
    }
    if (std::string why = clients.Failure(); !why.empty()) return fail(why);
    if (progress && Clock::now() >= next_progress) {
      next_progress = Clock::now() + std::chrono::milliseconds(200);
      shown.elapsed_s = std::chrono::duration<double>(Clock::now() - begin).count();
      ReadProgress(server_tsv, &shown);
      progress(shown);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // The server has stopped its workers; give them a moment to go.
  clients.Finish(std::chrono::seconds(10));
  const int code = server.exit_code();
  if (server_done && code != 0 && code != 1) return fail(WhyExited("the server", code, server_log));
  Result<RunResult> report = ReadServerReport(report_file);
  if (!report.ok())
    return fail(WhyExited("the server", code, server_log) + "; " + report.status().message());
  RunResult read = *report;
  // Without a target, a run that ran to its limits did what was asked.
  if (e.job.target_accuracy == 0 && options.target_loss == 0 && read.failure.empty())
    read.reached = true;
  read.policy = result.policy;
  read.repeat = repeat;
  return read;
}

}  // namespace dmlps::bench
