#include "bench/cluster/child.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string_view>
#include <thread>

namespace dmlps::bench {
namespace {

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

}  // namespace

Status Child::Start(const std::vector<std::string>& argv, const std::string& stdout_path,
                    const std::string& stderr_path, const std::vector<std::string>& env) {
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
    const int out = one_file ? err : open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
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

bool Child::Poll() {
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

void Child::Kill(std::chrono::milliseconds grace) {
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

void Child::Signal(int sig) {
  if (group_ > 0) {
    kill(-group_, sig);
  } else {
    kill(pid_, sig);
  }
}

}  // namespace dmlps::bench
