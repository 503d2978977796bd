// How sharded servers cut the parameter vector.
#include <doctest/doctest.h>

#include <numeric>

#include "dmlps/server/server.h"

using dmlps::server::ShardBounds;

TEST_CASE("shard bounds cover the parameters contiguously, balanced by size") {
  for (int64_t n : {1, 7, 100, 25450, 1 << 24}) {
    for (int64_t s : {1, 2, 3, 4, 7}) {
      if (s > n) continue;
      const std::vector<int64_t> b = ShardBounds(n, s);
      REQUIRE(b.size() == static_cast<size_t>(s) + 1);
      CHECK(b.front() == 0);
      CHECK(b.back() == n);
      int64_t smallest = n;
      int64_t largest = 0;
      for (int64_t k = 0; k < s; ++k) {
        const int64_t size = b[static_cast<size_t>(k) + 1] - b[static_cast<size_t>(k)];
        CHECK(size >= 1);
        smallest = std::min(smallest, size);
        largest = std::max(largest, size);
      }
      // By floats, not by tensors: a single large tensor is split too.
      CHECK(largest - smallest <= 1);
    }
  }
  // The split of mlp:32 on Fashion-MNIST over three shards, worked by hand:
  // 25450 = 3 * 8483 + 1, the first shard takes the extra float.
  CHECK(ShardBounds(25450, 3) == std::vector<int64_t>{0, 8484, 16967, 25450});
}
