// Streamed payloads: chunk layouts, IncomingTensor's checks, the ModelStore's
// lane-by-lane pipelining, and a streamed message across real sockets.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <thread>

#include "dmlps/net/endpoint.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/proto/codec.h"
#include "net_test_util.h"
#include "server/model_store.h"
#include "tensor_test_util.h"

namespace dmlps {
namespace {

using proto::ChunkLayout;
using proto::IncomingTensor;
using testing::SameBits;

net::Frames FramesOf(const std::vector<float>& values, int64_t begin, int64_t end) {
  net::Frames frames;
  frames.emplace_back(values.data() + begin, static_cast<size_t>(end - begin) * sizeof(float));
  return frames;
}

std::shared_ptr<IncomingTensor> Streamed(int64_t n, int64_t chunks, int64_t chunk_floats) {
  Result<IncomingTensor> opened = IncomingTensor::Open(n, chunks, chunk_floats, {});
  REQUIRE(opened.ok());
  return std::make_shared<IncomingTensor>(std::move(opened).value());
}

std::vector<float> Iota(int64_t n, float start = 0.f) {
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

TEST_CASE("chunk layouts cut a payload into whole chunks, the last one the rest") {
  ChunkLayout layout = ChunkLayout::ForBytes(10, 16);  // 4 floats a chunk
  CHECK(layout.chunk_floats == 4);
  CHECK(layout.count() == 3);
  CHECK(layout.streamed());
  CHECK(layout.begin(2) == 8);
  CHECK(layout.end(2) == 10);
  CHECK_FALSE(ChunkLayout::ForBytes(4, 16).streamed());
  CHECK(ChunkLayout::ForBytes(0, 16).count() == 0);
  CHECK(ChunkLayout::ForBytes(10, 3).chunk_floats == 1);  // never less than one float

  CHECK(ChunkLayout::FromHeader(10, 3, 4).ok());
  CHECK_FALSE(ChunkLayout::FromHeader(10, 2, 4).ok());  // the count does not match
  CHECK_FALSE(ChunkLayout::FromHeader(10, 11, 1).ok());
  CHECK_FALSE(ChunkLayout::FromHeader(10, 1, 0).ok());  // empty chunks
  CHECK_FALSE(ChunkLayout::FromHeader(0, 1, 4).ok());   // nothing to stream
  CHECK_FALSE(ChunkLayout::FromHeader(-4, 1, 4).ok());
  CHECK_FALSE(ChunkLayout::FromHeader(10, 1, proto::kMaxChunkFloats + 1).ok());
  CHECK(ChunkLayout::FromHeader(proto::kMaxChunks, proto::kMaxChunks, 1).ok());
  CHECK_FALSE(ChunkLayout::FromHeader(proto::kMaxChunks + 1, proto::kMaxChunks + 1, 1).ok());
  // Huge announcements are refused by arithmetic, not by allocating.
  CHECK_FALSE(ChunkLayout::FromHeader(std::numeric_limits<int64_t>::max(), 1, 1).ok());
}

TEST_CASE("payloads above a chunk go in at least 16 chunks of 256 KiB to 1 MiB") {
  constexpr int64_t kMiB = int64_t{1} << 20;
  // Up to a chunk: whole.
  CHECK(ChunkLayout::ForBytes(kMiB / 4, proto::ChunkBytesFor(kMiB)).count() == 1);
  CHECK(proto::ChunkBytesFor(1) == proto::kDefaultChunkBytes);
  // 4 MiB: 16 chunks of 256 KiB, so the last chunk's work is a sixteenth.
  CHECK(proto::ChunkBytesFor(4 * kMiB) == 256 * 1024);
  CHECK(proto::ChunkBytesFor(8 * kMiB) == 512 * 1024);
  // Just above a chunk: never below 256 KiB.
  CHECK(proto::ChunkBytesFor(kMiB + 4) == proto::kMinChunkBytes);
  // Large payloads: 1 MiB, as before.
  CHECK(proto::ChunkBytesFor(64 * kMiB) == proto::kDefaultChunkBytes);
  for (int64_t bytes = kMiB + 4; bytes <= 40 * kMiB; bytes += 999'996) {
    const int64_t chunk = proto::ChunkBytesFor(bytes);
    CAPTURE(bytes);
    CHECK(chunk % 4096 == 0);
    CHECK(chunk >= proto::kMinChunkBytes);
    CHECK(chunk <= proto::kDefaultChunkBytes);
    const int64_t chunks = ChunkLayout::ForBytes(bytes / 4, chunk).count();
    CHECK(chunks >= std::min<int64_t>(proto::kMinChunksPerPayload, bytes / proto::kMinChunkBytes));
  }
}

TEST_CASE("a streamed payload takes its chunks in order and refuses anything else") {
  const std::vector<float> values = Iota(10);
  Result<IncomingTensor> opened = IncomingTensor::Open(10, 3, 4, {});
  REQUIRE(opened.ok());
  IncomingTensor& in = *opened;
  CHECK(in.streamed());
  CHECK(in.received() == 0);
  CHECK_FALSE(in.settled());

  net::Frames wrong_index = FramesOf(values, 4, 8);
  CHECK(in.Add(1, wrong_index).code() == StatusCode::kProtocol);
  net::Frames short_chunk = FramesOf(values, 0, 3);
  CHECK(in.Add(0, short_chunk).code() == StatusCode::kProtocol);
  net::Frames two = FramesOf(values, 0, 2);
  two.emplace_back(values.data() + 2, 2 * sizeof(float));
  CHECK(in.Add(0, two).code() == StatusCode::kProtocol);
  net::Frames ragged;
  ragged.emplace_back(values.data(), 15);  // not whole floats
  CHECK(in.Add(0, ragged).code() == StatusCode::kProtocol);
  net::Frames none;
  CHECK(in.Add(0, none).code() == StatusCode::kProtocol);
  CHECK(in.received() == 0);  // nothing refused was taken

  for (int64_t i = 0; i < 3; ++i) {
    net::Frames chunk = FramesOf(values, 4 * i, std::min<int64_t>(10, 4 * i + 4));
    REQUIRE(in.Add(i, chunk).ok());
  }
  CHECK(in.complete());
  net::Frames extra = FramesOf(values, 8, 10);
  CHECK(in.Add(3, extra).code() == StatusCode::kProtocol);
  std::vector<float> out(10, -1.f);
  in.CopyTo(0, 10, out);
  CHECK(out == values);

  // A header that announces chunks and carries frames is refused, as are
  // inconsistent announcements and a Chunk for a payload that came whole.
  CHECK_FALSE(IncomingTensor::Open(10, 3, 4, FramesOf(values, 0, 10)).ok());
  CHECK_FALSE(IncomingTensor::Open(10, -1, 4, {}).ok());
  CHECK_FALSE(IncomingTensor::Open(10, 2, 4, {}).ok());
  Result<IncomingTensor> whole = IncomingTensor::Open(10, 0, 0, FramesOf(values, 0, 10));
  REQUIRE(whole.ok());
  CHECK(whole->complete());
  net::Frames stray = FramesOf(values, 0, 4);
  CHECK(whole->Add(0, stray).code() == StatusCode::kProtocol);
  CHECK_FALSE(IncomingTensor::Open(11, 0, 0, FramesOf(values, 0, 10)).ok());
  CHECK_FALSE(IncomingTensor::Open(-1, 0, 0, {}).ok());
}

TEST_CASE("left-out chunks are skipped, and a misaligned chunk is copied once") {
  std::vector<float> values = Iota(8, 1.f);
  values[5] = std::numeric_limits<float>::quiet_NaN();
  Result<IncomingTensor> in = IncomingTensor::Open(8, 2, 4, {});
  REQUIRE(in.ok());
  net::Frames first = FramesOf(values, 0, 4);
  REQUIRE(in->Add(0, first).ok());
  CHECK(in->AllFinite(0, 4));
  // The second chunk at an odd address, as a frame inside a batch read may be.
  std::vector<char> raw(4 * sizeof(float) + 1);
  std::memcpy(raw.data() + 1, values.data() + 4, 4 * sizeof(float));
  net::Frames second;
  second.emplace_back(static_cast<void*>(raw.data() + 1), 4 * sizeof(float), nullptr, nullptr);
  REQUIRE(in->Add(1, second).ok());
  CHECK_FALSE(in->AllFinite(4, 8));
  in->Exclude(4, 8);
  float sum = 0;
  int64_t seen = 0;
  in->ForEachIn(2, 8, [&](int64_t offset, const IncomingTensor::ConstMap& part) {
    CHECK(offset == 2);
    sum += part.sum();
    seen += part.size();
  });
  CHECK(seen == 2);
  CHECK(sum == 3.f + 4.f);
}

TEST_CASE("slice by slice, an optimizer ends where one whole step would") {
  const std::vector<float> grad = Iota(10, -3.f);
  for (double momentum : {0.0, 0.9}) {
    std::vector<float> whole(10, 1.f), sliced(10, 1.f);
    auto a = optim::MakeOptimizer(0.1, momentum, 10);
    auto b = optim::MakeOptimizer(0.1, momentum, 10);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    for (int step = 0; step < 3; ++step) {
      (*a)->Step(whole, grad, 0.5f);
      const optim::StepInfo info = (*b)->Begin(0.5f);
      (*b)->StepSlice(std::span<float>(sliced).subspan(0, 4),
                      std::span<const float>(grad).subspan(0, 4), info, 0);
      (*b)->StepSlice(std::span<float>(sliced).subspan(4), std::span<const float>(grad).subspan(4),
                      info, 4);
    }
    CHECK(whole == sliced);
  }
}

TEST_CASE("the model store sums, applies and answers lane by lane as chunks arrive") {
  const int64_t n = 10;
  server::ModelStore store(std::vector<float>(n, 1.f), 4);  // lanes of 4, 4, 2
  REQUIRE(store.layout().count() == 3);
  auto sgd = optim::MakeOptimizer(0.5, 0, n);
  REQUIRE(sgd.ok());
  const std::vector<float> grad = Iota(n);
  auto push = Streamed(n, 3, 4);
  store.Stage(push, 2.f);
  store.Apply(sgd->get(), 0.25f);  // params -= 0.5 * 0.25 * 2 * grad = 0.25 * grad
  std::vector<std::pair<int64_t, std::vector<float>>> sent;
  store.Send([&](int64_t index, zmq::message_t frame) {
    const float* data = static_cast<const float*>(frame.data());
    sent.emplace_back(index, std::vector<float>(data, data + frame.size() / sizeof(float)));
  });
  std::shared_ptr<const std::vector<float>> snapshot;
  store.Snapshot([&](std::shared_ptr<const std::vector<float>> values) { snapshot = values; });
  CHECK(store.pending() == 5);  // the stage, the apply's check, the apply, the reply, the snapshot
  CHECK(sent.empty());

  // Chunk 0 arrives: its lane is summed and checked, but applies only once
  // every lane is known to stay finite, so nothing is sent yet.
  net::Frames chunk0 = FramesOf(grad, 0, 4);
  REQUIRE(server::TakeChunk(*push, 0, chunk0).ok());
  store.Advance();
  CHECK(sent.empty());
  CHECK(snapshot == nullptr);
  CHECK(store.Params()[1] == 1.f);

  net::Frames chunk1 = FramesOf(grad, 4, 8);
  REQUIRE(server::TakeChunk(*push, 1, chunk1).ok());
  net::Frames chunk2 = FramesOf(grad, 8, 10);
  REQUIRE(server::TakeChunk(*push, 2, chunk2).ok());
  store.Advance();
  REQUIRE(sent.size() == 3);
  CHECK(sent[0].first == 0);
  CHECK(sent[0].second == std::vector<float>{1.f, 0.75f, 0.5f, 0.25f});
  REQUIRE(sent.size() == 3);
  CHECK(sent[2].first == 2);
  CHECK(sent[2].second == std::vector<float>{1.f - 0.25f * 8, 1.f - 0.25f * 9});
  REQUIRE(snapshot != nullptr);
  CHECK((*snapshot)[9] == 1.f - 0.25f * 9);
  CHECK(store.pending() == 0);
  CHECK(store.Params()[5] == 1.f - 0.25f * 5);
}

TEST_CASE("a chunk with NaN is left out, and a closed stream lets the lanes go on") {
  const int64_t n = 8;
  server::ModelStore store(std::vector<float>(n, 0.f), 4);
  std::vector<float> grad(n, 1.f);
  grad[1] = std::numeric_limits<float>::infinity();
  auto push = Streamed(n, 2, 4);
  store.Stage(push, 1.f);
  store.Apply(nullptr, 1.f);  // params += acc
  std::shared_ptr<const std::vector<float>> snapshot;
  store.Snapshot([&](std::shared_ptr<const std::vector<float>> values) { snapshot = values; });
  net::Frames chunk0 = FramesOf(grad, 0, 4);
  Result<bool> finite = server::TakeChunk(*push, 0, chunk0);
  REQUIRE(finite.ok());
  CHECK_FALSE(*finite);
  store.Advance();
  CHECK(snapshot == nullptr);  // lane 1 still waits for chunk 1
  push->Close();               // which never comes
  store.Advance();
  REQUIRE(snapshot != nullptr);
  CHECK(*snapshot == std::vector<float>(n, 0.f));
  for (float v : *snapshot) CHECK(std::isfinite(v));
}

TEST_CASE("replies view the model in place; a lane still being sent never changes under them") {
  for (const int64_t threads : {1, 4}) {
    CAPTURE(threads);
    server::ModelStore store(std::vector<float>(6, 2.f), 4, threads);  // lanes of 4 and 2
    CHECK(store.threads() == threads);
    std::vector<zmq::message_t> held;  // as ZeroMQ holds frames not yet sent
    auto sink = [&](int64_t, zmq::message_t frame) { held.push_back(std::move(frame)); };
    store.Send(sink);
    store.Send(sink);
    REQUIRE(held.size() == 4);
    CHECK(held[0].data() == held[2].data());  // one buffer per lane, no copy
    std::vector<std::shared_ptr<const std::vector<float>>> snapshots;
    auto keep = [&](std::shared_ptr<const std::vector<float>> v) { snapshots.push_back(v); };
    store.Snapshot(keep);
    store.Snapshot(keep);
    REQUIRE(snapshots.size() == 2);
    CHECK(snapshots[0] == snapshots[1]);  // snapshots of one state share a copy
    CHECK(*snapshots[0] == std::vector<float>(6, 2.f));

    const std::vector<float> ones(6, 1.f);
    Result<IncomingTensor> opened = IncomingTensor::Open(6, 0, 0, FramesOf(ones, 0, 6));
    REQUIRE(opened.ok());
    store.Stage(std::make_shared<IncomingTensor>(std::move(opened).value()), 1.f);
    store.Apply(nullptr, 1.f);  // params += acc
    CHECK(store.Params() == std::vector<float>(6, 3.f));
    // The frames still held show the model they were sent from.
    CHECK(static_cast<const float*>(held[0].data())[3] == 2.f);
    CHECK(static_cast<const float*>(held[1].data())[1] == 2.f);
    CHECK(*snapshots[0] == std::vector<float>(6, 2.f));
    store.Send(sink);
    REQUIRE(held.size() == 6);
    CHECK(held[4].data() != held[0].data());
    CHECK(static_cast<const float*>(held[4].data())[0] == 3.f);

    // Once nothing views a lane, an apply needs no new buffer: the step,
    // computed out of place, goes to the lane's other buffer, and the two
    // take turns.
    held.clear();
    store.Send(sink);
    const void* before0 = held[0].data();
    const void* before1 = held[1].data();
    held.clear();
    store.Apply(nullptr, 1.f);  // acc is 0: nothing changes but the buffer
    store.Send(sink);
    const void* other0 = held[0].data();
    CHECK(other0 != before0);
    held.clear();
    store.Apply(nullptr, 1.f);
    store.Send(sink);
    CHECK(held[0].data() == before0);
    CHECK(held[1].data() == before1);
    CHECK(store.pending() == 0);

    // Also when the lanes are summed in different calls, lane 1 after lane
    // 0 (they apply together, once the whole step is checked).
    held.clear();
    auto push = Streamed(6, 2, 4);
    store.Stage(push, 1.f);
    store.Apply(nullptr, 1.f);  // params += acc
    store.Send(sink);
    net::Frames chunk0 = FramesOf(ones, 0, 4);
    REQUIRE(server::TakeChunk(*push, 0, chunk0).ok());
    store.Advance();
    CHECK(held.empty());
    net::Frames chunk1 = FramesOf(ones, 4, 6);
    REQUIRE(server::TakeChunk(*push, 1, chunk1).ok());
    store.Advance();
    REQUIRE(held.size() == 2);
    CHECK(held[0].data() == other0);
    CHECK(store.Params() == std::vector<float>(6, 4.f));
  }
}

// What a sequence of rounds did to a ModelStore: the model, and what its
// sinks and callbacks saw, in the order they were called.
struct Rounds {
  std::vector<float> params;
  std::vector<std::string> events;
  std::vector<std::vector<float>> sent;  // round * 5 + index: the chunk's values when handed over
  std::vector<std::vector<float>> snapshots;
  bool off_thread = false;  // a sink or callback ran on another thread
  bool frames_kept = true;  // frames still held show what they showed when sent
  int64_t threads = 0;
};

// Pseudo-random floats in [-1, 1), the same for the same seed.
std::vector<float> Noise(int64_t n, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (float& f : v) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    f = static_cast<float>(static_cast<double>(x >> 40) / static_cast<double>(1 << 23)) - 1.f;
  }
  return v;
}

constexpr int64_t kRoundLane = 40000;                    // floats: a lane of several blocks
constexpr int64_t kRoundFloats = 4 * kRoundLane + 1234;  // 5 lanes, the last one short
constexpr int kRounds = 4;

// Four rounds of two pushes each, summed with weights 0.75 and 0.25 and
// applied with momentum, each followed by a reply and a snapshot; all of it
// queued first, then the pushes' chunks arrive interleaved in a fixed
// shuffled order (round 2's second push whole, round 1's first push with a
// NaN chunk), while some replies' frames are held as ZeroMQ would hold them.
Rounds RunRounds(int64_t threads) {
  const int64_t n = kRoundFloats;
  server::ModelStore store(Noise(n, 99), kRoundLane, threads);
  const int64_t lanes = store.layout().count();
  REQUIRE(lanes == 5);
  auto momentum = optim::MakeOptimizer(0.05, 0.9, n);
  REQUIRE(momentum.ok());
  const std::thread::id caller = std::this_thread::get_id();
  Rounds out;
  out.threads = store.threads();
  auto note = [&](std::string event) {
    if (std::this_thread::get_id() != caller) out.off_thread = true;
    out.events.push_back(std::move(event));
  };
  std::vector<std::pair<zmq::message_t, size_t>> held;  // frame, its index in out.sent
  out.sent.resize(static_cast<size_t>(kRounds * lanes));

  std::vector<std::vector<float>> grads;
  std::vector<std::shared_ptr<IncomingTensor>> pushes;
  for (int round = 0; round < kRounds; ++round) {
    for (int w = 0; w < 2; ++w) {
      grads.push_back(Noise(n, static_cast<uint64_t>(round * 2 + w)));
      if (round == 1 && w == 0) grads.back()[2 * kRoundLane + 7] = std::nanf("");
      if (round == 2 && w == 1) {
        Result<IncomingTensor> whole = IncomingTensor::Open(n, 0, 0, FramesOf(grads.back(), 0, n));
        REQUIRE(whole.ok());
        pushes.push_back(std::make_shared<IncomingTensor>(std::move(whole).value()));
      } else {
        pushes.push_back(Streamed(n, lanes, kRoundLane));
      }
      store.Stage(pushes.back(), w == 0 ? 0.75f : 0.25f);
    }
    store.Apply(momentum->get(), 1.f / 3,
                [&note, round](bool) { note("applied " + std::to_string(round)); });
    store.Send([&, round](int64_t index, zmq::message_t frame) {
      note("chunk " + std::to_string(round) + "." + std::to_string(index));
      const float* data = static_cast<const float*>(frame.data());
      const auto at = static_cast<size_t>(round * lanes + index);
      out.sent[at].assign(data, data + frame.size() / sizeof(float));
      if (round % 2 == 0) held.emplace_back(std::move(frame), at);
    });
    store.Snapshot([&, round](std::shared_ptr<const std::vector<float>> values) {
      note("snapshot " + std::to_string(round));
      out.snapshots.push_back(*values);
    });
  }

  // Deliver every streamed chunk, each push's in order, pushes picked in a
  // fixed pseudo-random order; Advance after some of them, so that one
  // Advance finds one lane ready, or several.
  std::vector<int64_t> next(pushes.size(), 0);
  uint64_t pick = 12345;
  for (int64_t delivered = 0;; ++delivered) {
    std::vector<size_t> open;
    for (size_t p = 0; p < pushes.size(); ++p) {
      if (!pushes[p]->complete()) open.push_back(p);
    }
    if (open.empty()) break;
    pick = pick * 6364136223846793005ull + 1442695040888963407ull;
    const size_t p = open[(pick >> 33) % open.size()];
    const int64_t index = next[p]++;
    net::Frames chunk =
        FramesOf(grads[p], index * kRoundLane, std::min(n, (index + 1) * kRoundLane));
    REQUIRE(server::TakeChunk(*pushes[p], index, chunk).ok());
    if ((pick >> 20) % 4 == 0) store.Advance();
    // Now and then ZeroMQ is done sending the oldest frame held.
    if (delivered % 5 == 4 && !held.empty()) held.erase(held.begin());
  }
  store.Advance();
  CHECK(store.pending() == 0);
  for (const auto& [frame, at] : held) {
    const float* data = static_cast<const float*>(frame.data());
    if (!std::equal(out.sent[at].begin(), out.sent[at].end(), data)) out.frames_kept = false;
  }
  out.params = store.Params();
  return out;
}

TEST_CASE("the model store's threads end bit for bit where one thread does") {
  const Rounds one = RunRounds(1);
  const Rounds four = RunRounds(4);
  CHECK(one.threads == 1);
  CHECK(four.threads == 4);

  // The same rounds computed plainly, over the whole model at once: the
  // store (with one thread) computes what it should.
  std::vector<float> params = Noise(kRoundFloats, 99);
  std::vector<float> velocity(params.size(), 0.f);
  for (int round = 0; round < kRounds; ++round) {
    const std::vector<float> g0 = Noise(kRoundFloats, static_cast<uint64_t>(round * 2));
    const std::vector<float> g1 = Noise(kRoundFloats, static_cast<uint64_t>(round * 2 + 1));
    for (size_t i = 0; i < params.size(); ++i) {
      const bool nan_chunk = round == 1 && i >= 2 * kRoundLane && i < 3 * kRoundLane;
      const float acc = (nan_chunk ? 0.f : 0.75f * g0[i]) + 0.25f * g1[i];
      velocity[i] = 0.9f * velocity[i] + acc / 3;
      params[i] -= 0.05f * velocity[i];
    }
  }
  REQUIRE(one.params.size() == params.size());
  for (size_t i = 0; i < params.size(); i += 997) {
    CHECK(one.params[i] == doctest::Approx(params[i]).epsilon(1e-4));
  }

  for (const Rounds* r : {&one, &four}) {
    CHECK_FALSE(r->off_thread);
    CHECK(r->frames_kept);
    REQUIRE(r->sent.size() == static_cast<size_t>(kRounds * 5));
    REQUIRE(r->snapshots.size() == static_cast<size_t>(kRounds));
    // A reply shows the model as it stood when it was queued, as does the
    // snapshot queued right after it, however late its chunks went out.
    for (int round = 0; round < kRounds; ++round) {
      for (int64_t index = 0; index < 5; ++index) {
        const std::vector<float>& snapshot = r->snapshots[static_cast<size_t>(round)];
        const auto begin = snapshot.begin() + index * kRoundLane;
        const auto end = snapshot.begin() + std::min(kRoundFloats, (index + 1) * kRoundLane);
        CHECK(SameBits(r->sent[static_cast<size_t>(round * 5 + index)],
                       std::vector<float>(begin, end)));
      }
    }
    // Each reply's chunks in index order.
    for (int round = 0; round < kRounds; ++round) {
      int64_t expected = 0;
      for (const std::string& e : r->events) {
        if (e.rfind("chunk " + std::to_string(round) + ".", 0) == 0) {
          CHECK(e == "chunk " + std::to_string(round) + "." + std::to_string(expected++));
        }
      }
      CHECK(expected == 5);
    }
  }
  CHECK(one.events == four.events);
  CHECK(SameBits(one.params, four.params));
  for (size_t i = 0; i < one.sent.size(); ++i) {
    INFO("chunk handed over ", i);
    CHECK(SameBits(one.sent[i], four.sent[i]));
  }
  for (size_t i = 0; i < one.snapshots.size(); ++i) {
    INFO("snapshot ", i);
    CHECK(SameBits(one.snapshots[i], four.snapshots[i]));
  }
  // The last snapshot is the model as it ends.
  CHECK(SameBits(one.snapshots.back(), one.params));
}

TEST_CASE("a model of one lane runs on the caller's thread whatever the threads asked") {
  server::ModelStore small(std::vector<float>(100, 1.f), 128, 8);
  CHECK(small.threads() == 1);
  server::ModelStore large(std::vector<float>(300, 1.f), 128, 3);
  CHECK(large.threads() == 3);
}

TEST_CASE("a payload larger than a chunk crosses real sockets as Chunk messages") {
  testing::EndpointPair pair("inproc://stream-test");
  auto grad = std::make_shared<const std::vector<float>>(Iota(1000));
  proto::Push push;
  push.num_params = 1000;
  REQUIRE(pair.client->SendWithPayload(nullptr, push, grad, 256 * sizeof(float)).ok());
  CHECK(pair.client->SendWithPayload(nullptr, proto::Pull{}, grad, 1024).code() ==
        StatusCode::kInvalidArgument);

  net::Frames frames;
  REQUIRE(*pair.server->Receive(&frames, std::chrono::milliseconds(2000)));
  Result<proto::Message> header = proto::DecodeMessage(frames, 1);
  REQUIRE(header.ok());
  const auto& got = std::get<proto::Push>(header->body);
  CHECK(got.chunks == 4);
  CHECK(got.chunk_floats == 256);
  CHECK(header->payload.empty());
  Result<IncomingTensor> in = IncomingTensor::Open(got.num_params, got.chunks, got.chunk_floats,
                                                   std::move(header->payload));
  REQUIRE(in.ok());
  while (!in->complete()) {
    REQUIRE(*pair.server->Receive(&frames, std::chrono::milliseconds(2000)));
    Result<proto::Message> piece = proto::DecodeMessage(frames, 1);
    REQUIRE(piece.ok());
    REQUIRE(in->Add(std::get<proto::Chunk>(piece->body).index, piece->payload).ok());
  }
  std::vector<float> out(1000);
  in->CopyTo(0, 1000, out);
  CHECK(out == *grad);

  // One chunk or less: header and payload in one message, as before.
  REQUIRE(pair.client->SendWithPayload(nullptr, push, grad, 4096 * sizeof(float)).ok());
  REQUIRE(*pair.server->Receive(&frames, std::chrono::milliseconds(2000)));
  CHECK(frames.size() == 3);  // identity, header, payload
  Result<proto::Message> whole = proto::DecodeMessage(frames, 1);
  REQUIRE(whole.ok());
  CHECK(std::get<proto::Push>(whole->body).chunks == 0);
}

}  // namespace
}  // namespace dmlps
