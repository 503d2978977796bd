// The intake of pushes the servers share: which pushes are refused and
// why, and how a streamed push's chunks are followed to its end.
#include "server/intake.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace dmlps::server {
namespace {

net::Frames FramesOf(const std::vector<float>& values, size_t begin, size_t end) {
  net::Frames frames;
  frames.emplace_back(values.data() + begin, (end - begin) * sizeof(float));
  return frames;
}

proto::Push PushOf(int64_t num_params, int64_t chunks = 0, int64_t chunk_floats = 0) {
  proto::Push push;
  push.clock = 7;
  push.num_params = num_params;
  push.chunks = chunks;
  push.chunk_floats = chunk_floats;
  return push;
}

TEST_CASE("a push is refused for negative counts or times, nothing else in its header") {
  proto::Push push = PushOf(4);
  CHECK_FALSE(HasNegativeCounts(push));
  for (int64_t proto::Push::*field :
       {&proto::Push::samples, &proto::Push::batch, &proto::Push::compute_us, &proto::Push::wait_us,
        &proto::Push::straggle_us}) {
    proto::Push bad = push;
    bad.*field = -1;
    CHECK(HasNegativeCounts(bad));
  }
  push.comm_us = -1;  // unknown: taken as 0
  CHECK_FALSE(HasNegativeCounts(push));
}

TEST_CASE("a push is refused for counts or times beyond any run, which would overflow") {
  proto::Push push = PushOf(4);
  push.samples = 64;
  push.compute_us = 1'000'000;
  CHECK_FALSE(HasImplausibleCounts(push));
  for (int64_t proto::Push::*field :
       {&proto::Push::clock, &proto::Push::base_version, &proto::Push::samples, &proto::Push::batch,
        &proto::Push::compute_us, &proto::Push::wait_us, &proto::Push::straggle_us,
        &proto::Push::comm_us, &proto::Push::memory_bytes}) {
    for (const int64_t v :
         {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()}) {
      proto::Push bad = push;
      bad.*field = v;
      CHECK(HasImplausibleCounts(bad));
    }
  }
  // Staleness is the model's version less the push's base: no overflow.
  push.base_version = int64_t{1} << 40;
  CHECK_FALSE(HasImplausibleCounts(push));
}

TEST_CASE("the policy learns a push's step, its transfer and its cycle since the reply") {
  proto::Push push = PushOf(4);
  push.compute_us = 1'500'000;
  push.straggle_us = 500'000;
  push.comm_us = -3;
  push.cpu = std::numeric_limits<double>::quiet_NaN();
  push.memory_bytes = 1024;
  const Clock::time_point now = Clock::now();
  sync::PushInfo info = PushInfoOf(push, now - std::chrono::seconds(3), now);
  CHECK(info.clock == 7);
  CHECK(info.busy_s == doctest::Approx(2.0));
  CHECK(info.comm_s == 0);
  CHECK(info.cpu == 0);
  CHECK(info.memory == 1024);
  CHECK(info.cycle_s == doctest::Approx(3.0));
  CHECK(PushInfoOf(push, Clock::time_point{}, now).cycle_s == 0);  // no reply yet
}

TEST_CASE("a whole push is opened when it fits, refused with the reason when not") {
  const std::vector<float> values{1, 2, 3, 4};
  net::Frames payload = FramesOf(values, 0, 4);
  OpenedPush opened = OpenPush(PushOf(4), 4, "the model", payload);
  CHECK(opened.fault == OpenedPush::kNone);
  CHECK(opened.why.empty());
  REQUIRE(opened.tensor != nullptr);
  CHECK(opened.tensor->complete());
  CHECK_FALSE(opened.tensor->streamed());

  payload = FramesOf(values, 0, 4);
  opened = OpenPush(PushOf(4), 3, "this shard's slice", payload);
  CHECK(opened.fault == OpenedPush::kSize);
  CHECK(opened.why == "push carries 4 parameters, this shard's slice has 3");
  CHECK(opened.tensor == nullptr);

  payload = FramesOf(values, 0, 3);  // a float short
  opened = OpenPush(PushOf(4), 4, "the model", payload);
  CHECK(opened.fault == OpenedPush::kLayout);
  CHECK(opened.why == "payload holds 3 floats, expected 4");
  CHECK(opened.tensor == nullptr);

  const std::vector<float> nan{1, std::nanf(""), 3, 4};
  payload = FramesOf(nan, 0, 4);
  opened = OpenPush(PushOf(4), 4, "the model", payload);
  CHECK(opened.fault == OpenedPush::kNonFinite);
  CHECK(opened.why == "gradient contains NaN or infinite values");
  CHECK(opened.tensor != nullptr);  // a shard still stages it, all left out
}

TEST_CASE("a streamed push is opened empty, its layout checked, NaN left to its chunks") {
  net::Frames none;
  OpenedPush opened = OpenPush(PushOf(10, 3, 4), 10, "the model", none);
  CHECK(opened.fault == OpenedPush::kNone);
  REQUIRE(opened.tensor != nullptr);
  CHECK(opened.tensor->streamed());
  CHECK(opened.tensor->received() == 0);

  opened = OpenPush(PushOf(10, 2, 4), 10, "the model", none);
  CHECK(opened.fault == OpenedPush::kLayout);
  CHECK(opened.why.find("not 2") != std::string::npos);
}

TEST_CASE("streams are followed chunk by chunk to their end, and refused when broken") {
  PushStreams streams;
  net::Frames none;
  OpenedPush opened = OpenPush(PushOf(8, 2, 4), 8, "the model", none);
  streams.Follow(3, opened.tensor, 7);
  CHECK(streams.open(3));
  CHECK(streams.any_open());
  CHECK(streams.clock(3) == 7);

  std::vector<float> grad(8, 1.f);
  grad[5] = std::numeric_limits<float>::infinity();
  net::Frames chunk = FramesOf(grad, 0, 4);
  CHECK(streams.Take(4, 0, chunk).verdict == PushStreams::Verdict::kNoStream);
  chunk = FramesOf(grad, 4, 8);
  PushStreams::Taken taken = streams.Take(3, 1, chunk);  // out of order
  CHECK(taken.verdict == PushStreams::Verdict::kBroken);
  CHECK(taken.clock == 7);
  CHECK(taken.error.message() == "chunk 1 arrived, expected chunk 0 of 2");
  CHECK(streams.open(3));  // the caller decides to close it

  chunk = FramesOf(grad, 0, 4);
  CHECK(streams.Take(3, 0, chunk).verdict == PushStreams::Verdict::kTaken);
  CHECK(streams.open(3));
  chunk = FramesOf(grad, 4, 8);
  taken = streams.Take(3, 1, chunk);
  CHECK(taken.verdict == PushStreams::Verdict::kNonFinite);
  CHECK(taken.clock == 7);
  CHECK_FALSE(streams.open(3));  // its last chunk is in
  CHECK(opened.tensor->complete());
  CHECK(opened.tensor->AllFinite(0, 8));  // the chunk with infinity is left out
}

TEST_CASE("a stream no chunk comes for is stalled; a closed one leaves its rest out") {
  PushStreams streams;
  net::Frames none;
  OpenedPush first = OpenPush(PushOf(8, 2, 4), 8, "the model", none);
  OpenedPush second = OpenPush(PushOf(8, 2, 4), 8, "the model", none);
  streams.Follow(2, first.tensor, 1);
  streams.Follow(0, second.tensor, 5);
  const std::vector<float> whole(4, 1.f);
  net::Frames payload = FramesOf(whole, 0, 4);
  streams.Follow(1, OpenPush(PushOf(4), 4, "the model", payload).tensor, 2);  // nothing to follow
  CHECK_FALSE(streams.open(1));

  const Clock::time_point later = Clock::now() + kStreamStall;
  CHECK(streams.StalledAt(Clock::now(), kStreamStall).empty());
  CHECK(streams.StalledAt(later, kStreamStall) == std::vector<int64_t>{0, 2});

  CHECK(streams.Close(2));
  CHECK(first.tensor->settled());
  CHECK_FALSE(first.tensor->complete());
  CHECK_FALSE(streams.Close(2));
  CHECK(streams.StalledAt(later, kStreamStall) == std::vector<int64_t>{0});
}

}  // namespace
}  // namespace dmlps::server
