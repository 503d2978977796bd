// What auto's decider takes from its surroundings, as LevelDB's Env: the
// time, and a thread to predict on. The server and the simulator give it
// SystemEnv(); a test gives it a clock it moves and runs the predictions
// where it likes, so that the decider runs the same code everywhere.
#ifndef DMLPS_AUTO_ENV_H_
#define DMLPS_AUTO_ENV_H_

#include <functional>
#include <future>
#include <memory>
#include <optional>

namespace dmlps::autopolicy {

class Env {
 public:
  virtual ~Env() = default;
  // Milliseconds on a clock that never goes back (its start is the Env's).
  virtual double NowMs() = 0;
  // Starts `work` off the calling thread. The future is ready once it has
  // run, and waits for it when destroyed (as std::async's), so that what
  // `work` uses may be destroyed after it. Nothing when no thread can be
  // had: the caller then runs `work` itself.
  virtual std::optional<std::future<void>> Start(std::function<void()> work) = 0;
};

// The steady clock, and a thread of its own for each Start.
std::shared_ptr<Env> SystemEnv();

}  // namespace dmlps::autopolicy

#endif  // DMLPS_AUTO_ENV_H_
