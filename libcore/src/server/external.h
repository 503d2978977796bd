// --model external: the server trains a model it does not compute. Its
// layout and initial values come from --resume's checkpoint, --initial
// FILE, or the Hello of the worker that presents the job secret (no peer
// chooses them by coming first); every worker must announce the same
// layout (Admissions checks), and snapshots go to an evaluator process
// (RemoteEvaluator) when one is asked for.
#ifndef DMLPS_SERVER_EXTERNAL_H_
#define DMLPS_SERVER_EXTERNAL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "dmlps/base/status.h"
#include "dmlps/model/model.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/server/server.h"
#include "server/hello_hold.h"

namespace dmlps::server {

class ExternalModel {
 public:
  // The model of `config`, announced by a worker presenting `secret`.
  ExternalModel(const ServerConfig& config, std::string secret);

  // Binds *endpoint on `context` and learns the model: its layout into
  // layout() and its initial values into *params (--resume: placeholders of
  // the whole model's size, since each shard resumes its own slice). Waits
  // for the announcing worker when neither --resume nor --initial gives it;
  // a `signal` first leaves layout() empty. Once the model is known, every
  // connection is bounded as a built-in model of its size bounds it.
  Status Open(zmq::context_t& context, net::BindOptions bind_options,
              const std::atomic<int>* signal, std::optional<net::Endpoint>* endpoint,
              std::vector<float>* params);
  // Empty until Open learned it.
  const std::vector<model::TensorSpec>& layout() const { return layout_; }
  // The largest message the endpoint takes.
  int64_t max_frame_bytes() const { return max_frame_bytes_; }
  // Before a peer's Hello is answered: ZeroMQ gives a connection the send
  // queue bound its listener had when it bound, which was what the largest
  // message needs; setting the model's again applies it to every open
  // connection, the new peer's included, before any reply to it is queued.
  void BoundNewPeer();
  // The whole model's initial values Open gave, for the other shards'
  // Welcomes (shard 0's store keeps only its slice); none after.
  std::shared_ptr<const std::vector<float>> TakeInitial() { return std::move(initial_); }
  // The Hellos that came while the layout was awaited (the announcer's,
  // other workers', an evaluator's, the other shards'), oldest first, to
  // answer once the model is set up.
  std::vector<HelloHold::Held> TakeHeldHellos() { return held_hellos_.Take(); }

 private:
  // Binds *endpoint: with the limits of the model's size when layout_ is
  // known, else with those of the largest message taken.
  Status Bind(zmq::context_t& context, net::BindOptions bind_options,
              std::optional<net::Endpoint>* endpoint);
  // --initial: sets layout_ and *params from the file.
  Status ReadInitialModel(std::vector<float>* params);
  // One message while the layout is awaited: a valid first worker's Hello
  // sets layout_ and *params; evaluators' Hellos are held, others refused.
  void TakeLayoutMessage(net::Frames& frames, std::vector<float>* params);
  // Once the model's size is known: each peer's unread bytes and send
  // queue bounded as a built-in model's are (SetServerLimits). The queue
  // bound reaches the connections open now; BoundNewPeer gives it to those
  // opened later.
  Status LimitToModel(int64_t num_params);
  // The connections the endpoint takes: --max-connections, else room for
  // the job's workers and shards.
  int64_t MaxConnections() const;

  const ServerConfig& config_;
  const std::string secret_;
  net::Endpoint* endpoint_ = nullptr;  // Open's
  std::vector<model::TensorSpec> layout_;
  HelloHold held_hellos_;
  int64_t max_frame_bytes_ = 0;                        // the largest message taken
  int64_t queue_limit_ = 0;                            // once the model is known: LimitToModel's
  std::shared_ptr<const std::vector<float>> initial_;  // see TakeInitial
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_EXTERNAL_H_
