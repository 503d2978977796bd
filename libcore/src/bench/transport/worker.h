// A bench worker's side of the dmlps round trips, as dmlps-worker does it,
// against the bench servers that dmlps.cc runs.
#ifndef DMLPS_BENCH_TRANSPORT_WORKER_H_
#define DMLPS_BENCH_TRANSPORT_WORKER_H_

#include <cstdint>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "bench/transport/support.h"
#include "dmlps/base/status.h"
#include "dmlps/bench/transport/transport.h"
#include "dmlps/net/endpoint.h"

namespace dmlps::bench {

// Push (the gradient, streamed when larger than a chunk, with the next Pull
// right after its header), then the Model, copied into its parameters chunk
// by chunk as it arrives; the milliseconds of each timed round into
// `times`. With server shards (`addresses` and `bounds`, where each shard's
// slice begins, plus the end), as dmlps-worker does with sharded servers:
// each shard gets its slice of the gradient without copying, shard 0's
// last, and the model is assembled from the slices, shard 0's first; shards
// 1 and up are reached through `shard_context`. Unlike dmlps-server's
// shards, which take their orders from shard 0, each bench shard runs BSP
// over its slice on its own, so each gets the next Pull. Internal when the
// model ends up not finite or not uniform: a slice lost or misplaced.
Status RunBenchWorker(zmq::context_t& context, zmq::context_t* shard_context,
                      const std::vector<std::string>& addresses, const std::vector<int64_t>& bounds,
                      const net::ConnectOptions& keys, int64_t rank, const TransportConfig& config,
                      Shared& shared, std::vector<double>* times);

}  // namespace dmlps::bench

#endif  // DMLPS_BENCH_TRANSPORT_WORKER_H_
