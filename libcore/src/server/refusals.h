// How shard 0 refuses what its workers send, and tells of the workers it
// loses: the sender is told why; once training runs, the first
// kLoudRefusals refusals are warned of and the rest logged at debug level;
// before it, each is said with how many workers are still to come, a
// reason at most every few seconds (WaitingLog).
#ifndef DMLPS_SERVER_REFUSALS_H_
#define DMLPS_SERVER_REFUSALS_H_

#include <cstdint>
#include <string>
#include <zmq.hpp>

#include "dmlps/net/endpoint.h"
#include "dmlps/sync/driver.h"
#include "server/membership.h"
#include "server/waiting_log.h"

namespace dmlps::server {

class Refusals {
 public:
  // Refuses on `endpoint` for a job of `workers` ranks, whose members are
  // `members` and whose training runs once `driver` has started; all
  // outlive this.
  Refusals(net::Endpoint& endpoint, const sync::DriverCore& driver, const Membership& members,
           int64_t workers)
      : endpoint_(endpoint), driver_(driver), members_(members), workers_(workers) {}

  // Tells `who` at `identity` why its message was refused; `fatal`: it is
  // not to try again, unless `rejoin` (it may Hello again).
  void Refuse(const zmq::message_t& identity, const std::string& who, const std::string& why,
              bool fatal, bool rejoin = false);
  // Before training: logs `what` (a refusal, a worker gone) with how many
  // workers are still to come, `reason` said at most every few seconds.
  void NoteWhileWaiting(const std::string& reason, const std::string& what);

 private:
  net::Endpoint& endpoint_;
  const sync::DriverCore& driver_;
  const Membership& members_;
  const int64_t workers_;
  int64_t refused_ = 0;
  WaitingLog waiting_log_{std::chrono::seconds(5)};
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_REFUSALS_H_
