// One child process of a cluster dmlps-bench run starts, its output going to
// files. Killed (TERM, then KILL) if still running when destroyed, so that no
// exit path leaves it behind; it also gets SIGTERM should this process die
// first.
#ifndef DMLPS_BENCH_CLUSTER_CHILD_H_
#define DMLPS_BENCH_CLUSTER_CHILD_H_

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "dmlps/base/status.h"

namespace dmlps::bench {

using Clock = std::chrono::steady_clock;

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
               const std::string& stderr_path, const std::vector<std::string>& env = {});

  // Whether it has exited; its status is then in exit_code().
  bool Poll();

  // Asks it to stop (SIGTERM); it is killed outright if it has not within
  // `grace`. A child started in its own process group takes the whole group
  // with it, whatever a shell command started.
  void Kill(std::chrono::milliseconds grace = std::chrono::milliseconds(3000));

  bool running() const { return pid_ > 0; }

  // Start() puts the next child in a process group of its own.
  void set_own_group() { own_group_ = true; }
  int exit_code() const { return exit_code_; }

 private:
  void Signal(int sig);

  std::string name_;
  bool own_group_ = false;
  pid_t group_ = -1;  // the child's own process group, or -1
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

}  // namespace dmlps::bench

#endif  // DMLPS_BENCH_CLUSTER_CHILD_H_
