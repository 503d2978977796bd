// The model digest a worker checks its first model after joining against
// (docs/algorithms-robustness.md, workers leaving and joining).
#include "dmlps/proto/digest.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

namespace dmlps::proto {
namespace {

uint64_t DigestOf(std::span<const float> values) {
  ModelDigest d;
  d.Add(values);
  return d.value();
}

TEST_CASE("a digest taken chunk by chunk in order equals the whole's") {
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = std::sin(static_cast<float>(i));
  const std::span<const float> all(values);
  for (const size_t chunk : {size_t{1}, size_t{7}, size_t{256}, size_t{999}}) {
    CAPTURE(chunk);
    ModelDigest pieces;
    for (size_t at = 0; at < all.size(); at += chunk) {
      const std::span<const float> piece = all.subspan(at, std::min(chunk, all.size() - at));
      pieces.AddBytes(piece.data(), piece.size_bytes());
    }
    CHECK(pieces.value() == DigestOf(all));
  }
}

TEST_CASE("any one float that differs changes the digest, and so does the order") {
  std::vector<float> values(64, 0.25f);
  const uint64_t whole = DigestOf(values);
  CHECK(whole != 0);
  for (size_t i = 0; i < values.size(); ++i) {
    std::vector<float> changed = values;
    changed[i] = std::nextafter(changed[i], 1.f);  // the least change there is
    CHECK(DigestOf(changed) != whole);
    changed[i] = -0.25f;
    CHECK(DigestOf(changed) != whole);
  }
  std::vector<float> ordered = {1.f, 2.f, 3.f};
  std::vector<float> swapped = {2.f, 1.f, 3.f};
  CHECK(DigestOf(ordered) != DigestOf(swapped));
  // A prefix is not the whole.
  CHECK(DigestOf(std::span<const float>(ordered).first(2)) != DigestOf(ordered));
}

}  // namespace
}  // namespace dmlps::proto
