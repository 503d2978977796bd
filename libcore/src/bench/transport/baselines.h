// The limits dmlps-bench transport holds dmlps up against: a memcpy of the
// payload, the server's staging sum of a gradient of that size, and raw
// ZeroMQ ping-pong of the payload (as one message, or cut into chunks).
// Each returns the milliseconds of `config.rounds` rounds, taken after
// `config.warmup` untimed ones.
#ifndef DMLPS_BENCH_TRANSPORT_BASELINES_H_
#define DMLPS_BENCH_TRANSPORT_BASELINES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "bench/transport/support.h"
#include "dmlps/base/status.h"
#include "dmlps/bench/transport/transport.h"

namespace dmlps::bench {

// Raw ZeroMQ ping-pong: a DEALER sends the payload in `pieces` messages
// (without copying) to a DEALER that echoes each message as it arrives; a
// round ends when every piece is back. Unavailable when the echo stays
// silent past the timeout or `shared` stops.
Result<std::vector<double>> RawPingPong(const std::string& bind_address, int64_t bytes,
                                        int64_t pieces, const TransportConfig& config,
                                        Shared& shared);

// memcpy of the payload between two buffers already touched.
std::vector<double> MemcpyTimes(int64_t bytes, const TransportConfig& config);

// The server's staging sum: one gradient of the payload, whole, staged into
// the ModelStore's accumulator (acc += w * g, lane by lane) on `threads`
// threads.
Result<std::vector<double>> SumTimes(int64_t bytes, int64_t threads, const TransportConfig& config);

}  // namespace dmlps::bench

#endif  // DMLPS_BENCH_TRANSPORT_BASELINES_H_
