// Pushes for the model store's tests, made from plain values.
#ifndef DMLPS_TESTS_UNIT_TENSOR_TEST_UTIL_H_
#define DMLPS_TESTS_UNIT_TENSOR_TEST_UTIL_H_

#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "dmlps/proto/codec.h"
#include "server/model_store.h"

namespace dmlps::testing {

// A push that came whole (not streamed) holding `values`; fails the test
// when it cannot be opened.
inline std::shared_ptr<proto::IncomingTensor> WholeTensor(const std::vector<float>& values) {
  net::Frames frames;
  frames.emplace_back(values.data(), values.size() * sizeof(float));
  Result<proto::IncomingTensor> opened =
      proto::IncomingTensor::Open(static_cast<int64_t>(values.size()), 0, 0, std::move(frames));
  REQUIRE(opened.ok());
  return std::make_shared<proto::IncomingTensor>(std::move(opened).value());
}

// A push of `size` floats streamed in `chunks` chunks of `chunk_floats`,
// none of which has come yet; fails the test when it cannot be opened.
inline std::shared_ptr<proto::IncomingTensor> StreamedTensor(int64_t size, int64_t chunks,
                                                             int64_t chunk_floats) {
  Result<proto::IncomingTensor> opened =
      proto::IncomingTensor::Open(size, chunks, chunk_floats, {});
  REQUIRE(opened.ok());
  return std::make_shared<proto::IncomingTensor>(std::move(opened).value());
}

// Chunk `index` of the streamed `push` comes, holding `values` (in one
// frame); fails the test when the push refuses it.
inline void ChunkComes(proto::IncomingTensor& push, int64_t index,
                       const std::vector<float>& values) {
  net::Frames frames;
  frames.emplace_back(values.data(), values.size() * sizeof(float));
  REQUIRE(server::TakeChunk(push, index, frames).ok());
}

// Whether `a` and `b` hold the same floats bit for bit (NaNs and signed
// zeros included, which == does not tell apart).
inline bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  // memcmp must not see the null data() of an empty vector.
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace dmlps::testing

#endif  // DMLPS_TESTS_UNIT_TENSOR_TEST_UTIL_H_
