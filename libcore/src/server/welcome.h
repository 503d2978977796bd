// What shard 0 tells those who join it: the other shards (what the job is)
// and the workers (that, and their place in it).
#ifndef DMLPS_SERVER_WELCOME_H_
#define DMLPS_SERVER_WELCOME_H_

#include <cstdint>
#include <string>

#include "dmlps/model/model.h"
#include "dmlps/proto/codec.h"
#include "dmlps/server/server.h"
#include "dmlps/sync/policy.h"
#include "server/worker_desk.h"

namespace dmlps::server {

// The job every shard must agree on: the model `spec` (null: an external
// model, "external" with no input size or classes), the policy's name, the
// seed and the optimizer's settings of `config`.
proto::Welcome JobWelcome(const ServerConfig& config, const model::ModelSpec* spec,
                          const std::string& policy);

// A worker's Welcome as `rank` of a job of `num_params` floats, the last
// `num_state` of them module state, whose policy runs `mode`: the job, the
// batch and the sync settings, the data shard it reads. (Where the server
// shards are is the coordinator's to add.)
proto::Welcome WorkerWelcome(const ServerConfig& config, const model::ModelSpec* spec,
                             const sync::Policy& policy, int64_t rank, int64_t num_params,
                             int64_t num_state = 0);

// The most samples one push of a worker may claim under a policy running
// `mode`, before the driver gives it another batch: the Welcome's batch, or
// its token size; 0 (no cap) for the local modes, whose deltas sum many
// steps and are weighted alike.
int64_t MaxPushSamples(const ServerConfig& config, sync::WorkerMode mode);

// How shard 0's desk takes the workers of `config`'s job, whose policy
// runs `mode`, on an endpoint taking messages of `max_message_bytes` at
// most: the ranks to fill and the most a running job grows to, the
// silence allowed, the samples a push may claim (MaxPushSamples), and the
// layout an external model's workers must announce (`layout`; empty: a
// built-in model). Its peer is the caller's to set.
WorkerDeskOptions DeskOptions(const ServerConfig& config, sync::WorkerMode mode,
                              std::vector<model::TensorSpec> layout, int64_t max_message_bytes);

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_WELCOME_H_
