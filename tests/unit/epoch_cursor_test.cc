#include "dmlps/worker/epoch_cursor.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>

namespace dmlps::worker {
namespace {

TEST_CASE("steps cut short at random still process every sample exactly once per epoch") {
  const int64_t rows = 997;
  EpochCursor cursor(rows, 42);
  std::mt19937_64 rng(7);
  std::vector<int64_t> seen(rows, 0);
  std::vector<int64_t> indices;
  int64_t epoch = 0;
  int64_t taken_in_epoch = 0;
  for (int step = 0; step < 5000; ++step) {
    // A batch of 64 in chunks of 16, cut after a random number of chunks.
    const int64_t chunks = 1 + static_cast<int64_t>(rng() % 4);
    for (int64_t c = 0; c < chunks; ++c) {
      cursor.Take(16, &indices);
      for (int64_t i : indices) {
        REQUIRE(i >= 0);
        REQUIRE(i < rows);
        ++seen[i];
        if (++taken_in_epoch == rows) {
          // Every sample once in this epoch, none twice.
          for (int64_t s : seen) CHECK(s == 1);
          std::fill(seen.begin(), seen.end(), 0);
          taken_in_epoch = 0;
          ++epoch;
        }
      }
    }
  }
  CHECK(epoch > 100);
  CHECK(cursor.epoch() >= epoch - 1);
}

TEST_CASE("each epoch is a new order") {
  EpochCursor cursor(50, 1);
  std::vector<int64_t> first, second;
  cursor.Take(50, &first);
  cursor.Take(50, &second);
  CHECK(first != second);
  std::sort(first.begin(), first.end());
  std::sort(second.begin(), second.end());
  CHECK(first == second);
}

TEST_CASE("skipping n samples goes on where taking them would, across epochs") {
  // A worker taking a lost one's rank skips what that one processed
  // (docs/algorithms-robustness.md, workers leaving and joining).
  for (const int64_t n : {int64_t{0}, int64_t{1}, int64_t{96}, int64_t{97}, int64_t{250}}) {
    CAPTURE(n);
    EpochCursor taken(97, 5);
    EpochCursor skipped(97, 5);
    std::vector<int64_t> indices;
    taken.Take(n, &indices);
    skipped.Skip(n);
    CHECK(skipped.epoch() == taken.epoch());
    std::vector<int64_t> after_take;
    std::vector<int64_t> after_skip;
    taken.Take(150, &after_take);
    skipped.Take(150, &after_skip);
    CHECK(after_take == after_skip);
  }
}

}  // namespace
}  // namespace dmlps::worker
