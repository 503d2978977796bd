// Messages of the wire with their fields set apart from the defaults, so
// that a field the codec lost would show: codec_test.cc round-trips them and
// tests/fuzz/make_seeds.cc writes them into the codec's seed corpus (which
// changes with them: make_seeds's header says how to write it again).
#ifndef DMLPS_TESTS_UNIT_MESSAGE_TEST_UTIL_H_
#define DMLPS_TESTS_UNIT_MESSAGE_TEST_UTIL_H_

#include "dmlps/proto/messages.h"

namespace dmlps::testing {

// A worker's Hello (set by name: messages.h may grow fields).
inline proto::Hello SampleHello() {
  return {.host = "node-1", .pid = 4242, .threads = 4, .max_batch = 512};
}

// The server's Welcome to a worker of a sharded job.
inline proto::Welcome SampleWelcome() {
  return {.rank = 2,
          .num_workers = 4,
          .model = "mlp:128",
          .policy = "wbsp",
          .batch = 64,
          .input_dim = 784,
          .classes = 10,
          .num_params = 101770,
          .shard_index = 2,
          .shard_count = 4,
          .seed = 7,
          .mode = "local",
          .lr = 0.1,
          .momentum = 0.9};
}

// A worker's push of a gradient sent whole.
inline proto::Push SamplePush() {
  return {.clock = 5,
          .base_version = 4,
          .batch = 64,
          .samples = 64,
          .num_params = 5,
          .loss = 0.75,
          .compute_us = 1200,
          .cpu = 1.5,
          .memory_bytes = 1 << 20};
}

}  // namespace dmlps::testing

#endif  // DMLPS_TESTS_UNIT_MESSAGE_TEST_UTIL_H_
