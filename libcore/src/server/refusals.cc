#include "server/refusals.h"

#include <spdlog/spdlog.h>

#include <optional>

#include "server/loop.h"

namespace dmlps::server {

void Refusals::Refuse(const zmq::message_t& identity, const std::string& who,
                      const std::string& why, bool fatal, bool rejoin) {
  ++refused_;
  if (!driver_.started()) {
    NoteWhileWaiting(why, "refused a message from " + who + ": " + why);
  } else if (refused_ <= kLoudRefusals) {
    spdlog::warn("refused a message from {}: {}", who, why);
    if (refused_ == kLoudRefusals) spdlog::warn("further refusals are logged at debug level");
  } else {
    spdlog::debug("refused a message from {}: {}", who, why);
  }
  Status sent = endpoint_.SendMessage(&identity, proto::Error{why, fatal, rejoin});
  if (!sent.ok()) spdlog::debug("could not tell {} why: {}", who, sent.ToString());
}

void Refusals::NoteWhileWaiting(const std::string& reason, const std::string& what) {
  const std::optional<std::string> line =
      waiting_log_.Note(reason, what, workers_ - members_.joined(), workers_, Clock::now());
  if (line) spdlog::warn("{}", *line);
}

}  // namespace dmlps::server
