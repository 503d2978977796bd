// The dmlps rows of dmlps-bench transport: round trips between bench
// servers (dmlps.cc) and bench workers (worker.cc), each on
// threads of its own within this process.
#ifndef DMLPS_BENCH_TRANSPORT_DMLPS_H_
#define DMLPS_BENCH_TRANSPORT_DMLPS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "bench/transport/support.h"
#include "dmlps/base/status.h"
#include "dmlps/bench/transport/transport.h"

namespace dmlps::bench {

// The milliseconds of `config.rounds` BSP rounds (after the warm-up) of
// `workers` workers pushing a gradient of `bytes` and pulling the model
// back, from one server per address in `bind_addresses`, the model cut over
// them as server::ShardBounds cuts it; each round as long as its slowest
// worker's. With `curve`, every connection is encrypted. Every thread is
// joined on every path; the first error any of them met, or Unavailable
// once `shared` stops.
Result<std::vector<double>> DmlpsRoundTrips(const std::vector<std::string>& bind_addresses,
                                            int64_t bytes, int64_t workers, bool curve,
                                            const TransportConfig& config, Shared& shared);

}  // namespace dmlps::bench

#endif  // DMLPS_BENCH_TRANSPORT_DMLPS_H_
