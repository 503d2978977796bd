#include "dmlps/auto/env.h"

#include <chrono>
#include <system_error>
#include <utility>

namespace dmlps::autopolicy {
namespace {

class SystemClockEnv : public Env {
 public:
  double NowMs() override {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
        .count();
  }
  std::optional<std::future<void>> Start(std::function<void()> work) override {
    try {
      return std::async(std::launch::async, std::move(work));
    } catch (const std::system_error&) {
      return std::nullopt;  // no thread to be had
    }
  }

 private:
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace

std::shared_ptr<Env> SystemEnv() { return std::make_shared<SystemClockEnv>(); }

}  // namespace dmlps::autopolicy
