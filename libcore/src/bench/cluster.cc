#include "dmlps/bench/cluster.h"

#include <fcntl.h>
#include <spdlog/fmt/fmt.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

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

namespace dmlps::bench {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

// One child process, its output going to files. Killed (TERM, then KILL) if
// still running when destroyed, so no exit path leaves it behind; it also
// gets SIGTERM should this process die first.
class Child {
 public:
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() { Kill(); }

  Status Start(const std::vector<std::string>& argv, const std::string& stdout_path,
               const std::string& stderr_path) {
    name_ = argv.front();
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) return Status::Unavailable("cannot start " + name_ + ": " + std::strerror(errno));
    if (pid == 0) {
      // Only async-signal-safe calls between fork and exec.
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(127);
      const int in = open("/dev/null", O_RDONLY);
      const int out = open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (in < 0 || out < 0 || err < 0) _exit(126);
      dup2(in, 0);
      dup2(out, 1);
      dup2(err, 2);
      execv(args[0], args.data());
      _exit(127);
    }
    pid_ = pid;
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

  // Asks it to stop (SIGTERM); it is killed outright if it has not within `grace`.
  void Kill(std::chrono::milliseconds grace = std::chrono::milliseconds(3000)) {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    const Clock::time_point deadline = Clock::now() + grace;
    while (!Poll() && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      int status = 0;
      waitpid(pid_, &status, 0);
      exit_code_ = 128 + SIGKILL;
      pid_ = -1;
    }
  }

  bool running() const { return pid_ > 0; }
  int exit_code() const { return exit_code_; }

 private:
  std::string name_;
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

std::string Number(double value) { return fmt::format("{}", value); }

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

}  // namespace

std::vector<std::string> ServerCommand(const Experiment& e, std::string_view policy_entry,
                                       const ClusterOptions& options,
                                       const std::string& endpoint_file,
                                       const std::string& report_file) {
  std::vector<std::string> argv = {(fs::path(options.bin_dir) / "dmlps-server").string(),
                                   "--workers", std::to_string(e.workers)};
  // PolicyFor has been checked by ValidateExperiment; a bad entry still
  // gives a command the server refuses with a clear message.
  Result<sync::PolicyConfig> p = PolicyFor(policy_entry, e);
  const sync::PolicyConfig policy = p.ok() ? *p : sync::PolicyConfig{std::string(policy_entry)};
  argv.insert(argv.end(), {"--policy", policy.name});
  if (policy.name == "ssp")
    argv.insert(argv.end(), {"--staleness", std::to_string(policy.staleness)});
  if (policy.name == "backup") argv.insert(argv.end(), {"--backup", std::to_string(policy.backup)});
  if (policy.name == "abps") argv.insert(argv.end(), {"--chunk", std::to_string(policy.chunk)});
  if (policy.name == "token")
    argv.insert(argv.end(), {"--token-size", std::to_string(policy.token_size)});
  if (policy.name == "lbbsp") {
    argv.insert(argv.end(), {"--lb-mode", policy.lb_mode});
    if (policy.lb_mode == "cpu") argv.insert(argv.end(), {"--predictor", policy.predictor});
  }
  argv.insert(argv.end(), {"--model",
                           e.model,
                           "--data",
                           e.data,
                           "--batch",
                           std::to_string(e.batch),
                           "--lr",
                           Number(e.lr),
                           "--momentum",
                           Number(e.momentum),
                           "--eval-every",
                           std::to_string(e.eval_every),
                           "--seed",
                           std::to_string(e.seed),
                           "--bind",
                           "tcp://127.0.0.1:*",
                           "--endpoint-file",
                           endpoint_file,
                           "--report",
                           report_file,
                           "--target-accuracy",
                           Number(e.target),
                           "--max-iterations",
                           std::to_string(e.max_iterations),
                           "--max-seconds",
                           Number(e.max_seconds)});
  if (!options.trace_dir.empty()) {
    argv.insert(argv.end(), {"--trace", (fs::path(options.trace_dir) / "server.trace").string()});
  }
  return argv;
}

std::vector<std::string> WorkerCommand(const Experiment& e, int64_t rank,
                                       const ClusterOptions& options, const std::string& endpoint) {
  const worker::StragglerSpec& s = e.stragglers[static_cast<size_t>(rank)];
  std::vector<std::string> argv = {
      (fs::path(options.bin_dir) / "dmlps-worker").string(),
      "--server",
      endpoint,
      "--rank",
      std::to_string(rank),
      "--data",
      e.data,
      "--threads",
      std::to_string(options.threads),
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
  auto add_schedule = [&argv](const char* flag,
                              const std::vector<std::pair<int64_t, double>>& entries) {
    if (entries.empty()) return;
    std::string text;
    for (const auto& [iteration, value] : entries) {
      if (!text.empty()) text += ',';
      text += std::to_string(iteration) + ":" + Number(value);
    }
    argv.insert(argv.end(), {flag, text});
  };
  add_schedule("--slowdown-schedule", s.schedule);
  add_schedule("--bandwidth-schedule", s.bandwidth_schedule);
  if (!options.trace_dir.empty()) {
    argv.insert(
        argv.end(),
        {"--trace", (fs::path(options.trace_dir) / fmt::format("worker-{}.trace", rank)).string()});
  }
  return argv;
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
        "wait_share", "wasted_samples"}) {
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
      (e.max_seconds > 0 ? std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(e.max_seconds))
                         : std::chrono::hours(24 * 365));
  Child server;
  std::vector<std::unique_ptr<Child>> workers;
  auto fail = [&](std::string why) {
    for (auto& w : workers) w->Kill();
    server.Kill();
    result.failure = std::move(why);
    return result;
  };
  if (Status s = server.Start(ServerCommand(e, policy_entry, options, endpoint_file, report_file),
                              server_tsv, server_log);
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
      for (int64_t r = 0; r < e.workers; ++r) {
        workers.push_back(std::make_unique<Child>());
        const std::string log = (dir / fmt::format("worker-{}.log", r)).string();
        if (Status s =
                workers.back()->Start(WorkerCommand(e, r, options, endpoint), "/dev/null", log);
            !s.ok()) {
          return fail(s.message());
        }
      }
    }
    for (size_t r = 0; r < workers.size(); ++r) {
      if (workers[r]->running() && workers[r]->Poll() && workers[r]->exit_code() != 0) {
        return fail(WhyExited(fmt::format("worker {}", r), workers[r]->exit_code(),
                              (dir / fmt::format("worker-{}.log", r)).string()));
      }
    }
    if (progress && Clock::now() >= next_progress) {
      next_progress = Clock::now() + std::chrono::milliseconds(200);
      shown.elapsed_s = std::chrono::duration<double>(Clock::now() - begin).count();
      ReadProgress(server_tsv, &shown);
      progress(shown);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // The server has stopped its workers; give them a moment to go.
  const Clock::time_point grace = Clock::now() + std::chrono::seconds(10);
  for (auto& w : workers) {
    while (w->running() && !w->Poll() && Clock::now() < grace) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    w->Kill();
  }
  const int code = server.exit_code();
  if (server_done && code != 0 && code != 1) return fail(WhyExited("the server", code, server_log));
  Result<RunResult> report = ReadServerReport(report_file);
  if (!report.ok())
    return fail(WhyExited("the server", code, server_log) + "; " + report.status().message());
  RunResult read = *report;
  // Without a target, a run that ran to its limits did what was asked.
  if (e.target == 0 && read.failure.empty()) read.reached = true;
  read.policy = result.policy;
  read.repeat = repeat;
  return read;
}

}  // namespace dmlps::bench
