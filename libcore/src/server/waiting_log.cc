#include "server/waiting_log.h"

namespace dmlps::server {

std::optional<std::string> WaitingLog::Note(const std::string& reason, const std::string& what,
                                            int64_t missing, int64_t workers,
                                            Clock::time_point now) {
  auto it = said_.find(reason);
  if (it != said_.end() && now - it->second.at < interval_) {
    ++it->second.held;
    return std::nullopt;
  }
  std::string line = what;
  if (it != said_.end() && it->second.held > 0) {
    line += " (" + std::to_string(it->second.held) + " more like it since the last line)";
  }
  line += "; still waiting for " + std::to_string(missing) + " of " + std::to_string(workers) +
          " worker" + (workers == 1 ? "" : "s");
  // Reasons come from peers: a hostile one could make them many.
  if (said_.size() >= kMaxReasons && it == said_.end()) said_.clear();
  said_[reason] = Said{now, 0};
  return line;
}

}  // namespace dmlps::server
