// Shard 0's answers to Hellos: the other shards' registered with the
// coordinator; workers' held until every shard has registered, then
// checked (the layout an external model's workers must announce, one rank
// per CURVE key), the decision Membership takes carried out (the driver
// told of the worker, the other shards ordered to admit it with a ticket),
// and the Welcome sent.
#ifndef DMLPS_SERVER_ADMISSIONS_H_
#define DMLPS_SERVER_ADMISSIONS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "dmlps/model/model.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"
#include "dmlps/sync/driver.h"
#include "dmlps/trace/trace.h"
#include "server/coordinator.h"
#include "server/hello_hold.h"
#include "server/membership.h"
#include "server/refusals.h"

namespace dmlps::server {

class Admissions {
 public:
  // The Welcome of the worker of `rank`: the job and its place in it (where
  // the shards are, Admissions adds).
  using WelcomeFn = std::function<proto::Welcome(int64_t rank)>;
  // Goes on without the worker of `rank`, lost for `why`.
  using LoseFn = std::function<void(int64_t rank, const std::string& why)>;

  // Admits into `members` the workers of a job of `workers` ranks, telling
  // `driver` and (sharded) `shards`; an external model's workers must
  // announce `layout` (empty: a built-in model, not checked). `tracer`
  // (null: none) gets each admission. All outlive this.
  Admissions(int64_t workers, std::vector<model::TensorSpec> layout, net::Endpoint& endpoint,
             ShardCoordinator& shards, sync::DriverCore& driver, Membership& members,
             Refusals& refusals, trace::TraceWriter* tracer, WelcomeFn welcome, LoseFn lose)
      : workers_(workers),
        layout_(std::move(layout)),
        endpoint_(endpoint),
        shards_(shards),
        driver_(driver),
        members_(members),
        refusals_(refusals),
        tracer_(tracer),
        welcome_(std::move(welcome)),
        lose_(std::move(lose)) {}

  // A Hello that `identity`, the endpoint's last sender, sent; `rank` is
  // the rank it holds (-1: none), `who` names it. A sender whose Hello is
  // taken (registered, held, or welcomed) is admitted (Endpoint::AdmitSender);
  // any other is refused.
  void TakeHello(const zmq::message_t& identity, const proto::Hello& hello, int64_t rank,
                 const std::string& who);
  // A Hello held while an external model's layout was awaited, now that
  // the model is known: taken as TakeHello takes one, its sender admitted
  // already.
  void AnswerHeld(const HelloHold::Held& held);
  // Answers a worker's Hello (also those the coordinator held until every
  // shard had registered): a Welcome with a rank, or a refusal for good.
  // `sender` carries its CURVE key (empty: none): one rank per key, a key
  // joining again from a new connection taking its place. True when it was
  // welcomed.
  bool HandleHello(const zmq::message_t& identity, const proto::Hello& hello,
                   const net::Sender& sender);

 private:
  // Makes the sender of `hello` the member of rank `rank`.
  void Admit(const zmq::message_t& identity, const proto::Hello& hello, int64_t rank,
             const net::Sender& sender);
  // Tells the member of `rank` what the job is and where the shards are.
  void SendWelcome(const zmq::message_t& identity, int64_t rank);
  bool training() const { return driver_.started(); }

  const int64_t workers_;
  const std::vector<model::TensorSpec> layout_;
  net::Endpoint& endpoint_;
  ShardCoordinator& shards_;
  sync::DriverCore& driver_;
  Membership& members_;
  Refusals& refusals_;
  trace::TraceWriter* const tracer_;
  WelcomeFn welcome_;
  LoseFn lose_;
  // Sharded: by rank, the ticket of its worker's admission, which the other
  // shards ask of it.
  std::map<int64_t, int64_t> tickets_;
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_ADMISSIONS_H_
