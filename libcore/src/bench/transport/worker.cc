#include "bench/transport/worker.h"

#include <spdlog/fmt/fmt.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <span>
#include <utility>
#include <variant>

#include "dmlps/proto/codec.h"
#include "dmlps/worker/model_receiver.h"

namespace dmlps::bench {
namespace {

using Gradient = std::shared_ptr<const std::vector<float>>;
constexpr int64_t kFloatBytes = sizeof(float);

// Waits for a message of type `want` from the bench server, for at most
// the timeout; an Error from it ends the wait.
Result<proto::Message> AwaitFromServer(net::Endpoint& endpoint, proto::MsgType want,
                                       const TransportConfig& config, Shared& shared) {
  const Clock::time_point deadline = Clock::now() + config.timeout;
  net::Frames frames;
  while (true) {
    if (shared.Stopping()) return shared.Reason();
    if (Clock::now() >= deadline) {
      return Status::Unavailable(fmt::format("no {} from the bench server for {:g} s",
                                             proto::MsgTypeName(want),
                                             config.timeout.count() / 1000.0));
    }
    DMLPS_ASSIGN_OR_RETURN(bool got, endpoint.Receive(&frames, kSlice));
    if (!got) continue;
    DMLPS_ASSIGN_OR_RETURN(proto::Message message, proto::DecodeMessage(frames, 0));
    if (auto* error = std::get_if<proto::Error>(&message.body)) {
      return Status::Protocol("the bench server says: " + error->message);
    }
    if (proto::TypeOf(message.body) == want) return message;
  }
}

// Connects to every shard and says Hello as worker `rank`: shard 0 through
// `context`, the others through `shard_context` when there is one.
Result<std::vector<net::Endpoint>> ConnectShards(zmq::context_t& context,
                                                 zmq::context_t* shard_context,
                                                 const std::vector<std::string>& addresses,
                                                 const net::ConnectOptions& keys, int64_t rank) {
  std::vector<net::Endpoint> endpoints;
  endpoints.reserve(addresses.size());
  for (size_t k = 0; k < addresses.size(); ++k) {
    zmq::context_t& own = k == 0 || shard_context == nullptr ? context : *shard_context;
    DMLPS_ASSIGN_OR_RETURN(net::Endpoint endpoint, net::Endpoint::Connect(own, addresses[k], keys));
    DMLPS_RETURN_IF_ERROR(endpoint.SendMessage(
        nullptr,
        proto::Hello{rank, "dmlps-bench", static_cast<int64_t>(getpid()), 1, 0, -1, 0, {}}));
    endpoints.push_back(std::move(endpoint));
  }
  return endpoints;
}

// One shard's slice of the model into `out`, copied chunk by chunk as it
// arrives; the slice's version.
Result<int64_t> ReceiveSlice(net::Endpoint& endpoint, std::span<float> out,
                             const TransportConfig& config, Shared& shared) {
  DMLPS_ASSIGN_OR_RETURN(proto::Message reply,
                         AwaitFromServer(endpoint, proto::MsgType::kModel, config, shared));
  const auto& header = std::get<proto::Model>(reply.body);
  if (header.num_params != static_cast<int64_t>(out.size())) {
    return Status::Protocol("a model of " + std::to_string(header.num_params) + " floats");
  }
  DMLPS_ASSIGN_OR_RETURN(worker::ModelReceiver model, worker::ModelReceiver::Open(reply, out));
  while (!model.complete()) {
    DMLPS_ASSIGN_OR_RETURN(proto::Message piece,
                           AwaitFromServer(endpoint, proto::MsgType::kChunk, config, shared));
    DMLPS_RETURN_IF_ERROR(model.Take(piece));
  }
  return header.version;
}

// The whole model into `params`, assembled from the shards' slices (shard
// 0's first); its version, which every shard must agree on.
Result<int64_t> ReceiveModel(std::vector<net::Endpoint>& endpoints,
                             const std::vector<int64_t>& bounds, std::vector<float>& params,
                             const TransportConfig& config, Shared& shared) {
  auto slice = [&](size_t k) {
    const auto count = static_cast<size_t>(bounds[k + 1] - bounds[k]);
    return std::span<float>(params.data() + bounds[k], count);
  };
  DMLPS_ASSIGN_OR_RETURN(int64_t first, ReceiveSlice(endpoints[0], slice(0), config, shared));
  for (size_t k = 1; k < endpoints.size(); ++k) {
    DMLPS_ASSIGN_OR_RETURN(int64_t other, ReceiveSlice(endpoints[k], slice(k), config, shared));
    if (other != first) {
      return Status::Protocol("bench shard " + std::to_string(k) + " sent version " +
                              std::to_string(other) + ", shard 0 version " + std::to_string(first));
    }
  }
  return first;
}

// Round `round`'s push: each shard its slice of `gradient`, shard 0's last,
// and, as dmlps-worker does, the next Pull right after the push's header.
Status PushToShards(std::vector<net::Endpoint>& endpoints, const std::vector<int64_t>& bounds,
                    const Gradient& gradient, int64_t round, int64_t version,
                    const TransportConfig& config) {
  const size_t shards = endpoints.size();
  proto::Push push;
  push.clock = round;
  push.base_version = version;
  push.batch = 1;
  push.samples = 1;
  const proto::Body pull = proto::Pull{round + 1};
  for (size_t i = 1; i <= shards; ++i) {
    const size_t k = i % shards;  // 1, 2, ..., then 0
    push.num_params = bounds[k + 1] - bounds[k];
    DMLPS_RETURN_IF_ERROR(
        endpoints[k].SendWithPayload(nullptr, push, gradient, bounds[k], push.num_params,
                                     ChunkBytes(config, push.num_params * kFloatBytes), &pull));
  }
  return Status::Ok();
}

// Every parameter went through the same updates, in whichever slice: a
// slice lost or put in the wrong place shows as a value apart.
Status CheckModel(const std::vector<float>& params) {
  if (!std::all_of(params.begin(), params.end(), [](float v) { return std::isfinite(v); })) {
    return Status::Internal("the bench model is no longer finite");
  }
  const float first = params.front();
  if (!(first < 0) || !std::all_of(params.begin(), params.end(), [first](float v) {
        return std::abs(v - first) <= 1e-4f * std::abs(first);
      })) {
    return Status::Internal("the bench model's parameters differ after the same updates");
  }
  return Status::Ok();
}

}  // namespace

Status RunBenchWorker(zmq::context_t& context, zmq::context_t* shard_context,
                      const std::vector<std::string>& addresses, const std::vector<int64_t>& bounds,
                      const net::ConnectOptions& keys, int64_t rank, const TransportConfig& config,
                      Shared& shared, std::vector<double>* times) {
  const size_t shards = addresses.size();
  if (shards == 0 || bounds.size() != shards + 1) return Status::Internal("bad bench shards");
  const int64_t floats = bounds.back();
  DMLPS_ASSIGN_OR_RETURN(std::vector<net::Endpoint> endpoints,
                         ConnectShards(context, shard_context, addresses, keys, rank));
  auto gradient =
      std::make_shared<const std::vector<float>>(static_cast<size_t>(floats), kGradientValue);
  std::vector<float> params(static_cast<size_t>(floats));
  for (net::Endpoint& endpoint : endpoints) {
    DMLPS_RETURN_IF_ERROR(endpoint.SendMessage(nullptr, proto::Pull{0}));
  }
  DMLPS_ASSIGN_OR_RETURN(int64_t version, ReceiveModel(endpoints, bounds, params, config, shared));
  for (int64_t round = 0; round < config.warmup + config.rounds; ++round) {
    const Clock::time_point start = Clock::now();
    DMLPS_RETURN_IF_ERROR(PushToShards(endpoints, bounds, gradient, round, version, config));
    DMLPS_ASSIGN_OR_RETURN(version, ReceiveModel(endpoints, bounds, params, config, shared));
    if (round >= config.warmup) times->push_back(Millis(Clock::now() - start));
  }
  return CheckModel(params);
}

}  // namespace dmlps::bench
