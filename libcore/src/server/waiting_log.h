// What the server says while it waits for --workers: a worker refused or
// gone before training is the one thing a newcomer needs to hear about then,
// with who, why and how many workers are still to come. A worker that keeps
// retrying would repeat the same line every second: the same reason is said
// again only after an interval, with how many times it came meanwhile.
#ifndef DMLPS_SERVER_WAITING_LOG_H_
#define DMLPS_SERVER_WAITING_LOG_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "server/loop.h"

namespace dmlps::server {

class WaitingLog {
 public:
  // Says a reason at most once per `interval`.
  explicit WaitingLog(std::chrono::milliseconds interval) : interval_(interval) {}

  // The line to log at `now` for `what` (who was refused or left, and why),
  // `missing` of `workers` still to come; `reason` is what repeats (the why,
  // without the sender's changing identity). nullopt: said less than an
  // interval ago, counted for the next line of that reason.
  std::optional<std::string> Note(const std::string& reason, const std::string& what,
                                  int64_t missing, int64_t workers, Clock::time_point now);

 private:
  struct Said {
    Clock::time_point at;
    int64_t held = 0;  // repeats not said since
  };
  static constexpr size_t kMaxReasons = 64;  // past it, forgotten all at once
  const std::chrono::milliseconds interval_;
  std::map<std::string, Said> said_;  // by reason
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_WAITING_LOG_H_
