// Shard 0's intake of its workers' pushes: each checked (training runs,
// its counts are plausible, it claims no more samples than its worker was
// given), opened whole or followed chunk by chunk as it streams in (a
// stream that breaks, stalls or is broken off by the next push is left
// out), handed to the policy driver and counted in its worker's totals.
#ifndef DMLPS_SERVER_PUSH_INTAKE_H_
#define DMLPS_SERVER_PUSH_INTAKE_H_

#include <cstdint>
#include <map>
#include <string>

#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"
#include "dmlps/sync/driver.h"
#include "dmlps/trace/trace.h"
#include "server/coordinator.h"
#include "server/intake.h"
#include "server/membership.h"
#include "server/model_store.h"
#include "server/refusals.h"

namespace dmlps::server {

class PushIntake {
 public:
  // Takes the pushes of `members` into `driver`, their gradients streaming
  // into `store`; the other shards (`shards`) free what is not staged.
  // A push claims at most `max_push_samples` (0: no cap) until the driver
  // gives its worker a batch (GiveBatch). `tracer` (null: none) gets each
  // push. All outlive this. Pushes are dense until set_codec says otherwise.
  PushIntake(int64_t max_push_samples, ShardCoordinator& shards,
             sync::PolicyDriver<Gradient>& driver, ModelStore& store, Membership& members,
             Refusals& refusals, trace::TraceWriter* tracer)
      : max_push_samples_(max_push_samples),
        shards_(shards),
        driver_(driver),
        store_(store),
        members_(members),
        refusals_(refusals),
        tracer_(tracer) {}

  // The push of the member of `rank`, its payload's frames `payload`.
  void Push(int64_t rank, const proto::Push& push, net::Frames& payload);
  // A chunk of the streamed push of the member of `rank`.
  void Chunk(int64_t rank, const proto::Chunk& chunk, net::Frames& payload);
  // The driver gave the worker of `rank` a batch of `batch` samples: what
  // its pushes may claim from now on.
  void GiveBatch(int64_t rank, int64_t batch) { batch_given_[rank] = batch; }
  // The job's push codec (Welcome::push_codec): each push is decoded from
  // it, and one in another is refused (OpenPush).
  void set_codec(const compress::Codec& codec) { codec_ = codec; }
  // The worker of `rank` is gone: its stream's missing chunks will never
  // come, and are left out.
  void Forget(int64_t rank);
  // Closes the streamed pushes whose chunks stopped coming (kStreamStall),
  // so that the model's other lanes and replies go on.
  void CloseStalled();
  // Whether an update waits for the chunks of a stream still open.
  bool streaming() const { return store_.pending() > 0 && streams_.any_open(); }

 private:
  // The streamed push of worker `rank` will get no more chunks: what is
  // missing is left out.
  void Abandon(int64_t rank, const std::string& why);

  const int64_t max_push_samples_;
  ShardCoordinator& shards_;
  sync::PolicyDriver<Gradient>& driver_;
  ModelStore& store_;
  Membership& members_;
  Refusals& refusals_;
  trace::TraceWriter* const tracer_;
  compress::Codec codec_;
  PushStreams streams_;  // the pushes whose chunks are still coming, by rank
  // By rank: the batch the driver gave it last, which caps its pushes'
  // samples in place of max_push_samples_.
  std::map<int64_t, int64_t> batch_given_;
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_PUSH_INTAKE_H_
