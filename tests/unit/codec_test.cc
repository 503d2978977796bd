#include "dmlps/proto/codec.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <variant>
#include <vector>

#include "dmlps/base/msgpack_double.h"
#include "dmlps/net/endpoint.h"
#include "message_test_util.h"
#include "net_test_util.h"

namespace dmlps::proto {
namespace {

std::string Encoded(const Body& body) {
  zmq::message_t frame = EncodeHeader(body);
  return std::string(static_cast<const char*>(frame.data()), frame.size());
}

std::string PackRaw(const std::function<void(msgpack::packer<msgpack::sbuffer>&)>& fn) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> packer(buffer);
  fn(packer);
  return std::string(buffer.data(), buffer.size());
}

Result<Body> Decode(const std::string& bytes) { return DecodeHeader(bytes.data(), bytes.size()); }

TEST_CASE("every message type survives a round trip") {
  Push push = testing::SamplePush();
  push.straggle_us = 3702;
  push.wait_us = 55;
  Result<Body> got = Decode(Encoded(push));
  REQUIRE(got.ok());
  const Push& p = std::get<Push>(*got);
  CHECK(p.clock == push.clock);
  CHECK(p.base_version == push.base_version);
  CHECK(p.samples == push.samples);
  CHECK(p.num_params == push.num_params);
  CHECK(p.loss == push.loss);
  CHECK(p.compute_us == push.compute_us);
  CHECK(p.cpu == push.cpu);
  CHECK(p.memory_bytes == push.memory_bytes);
  CHECK(p.straggle_us == 3702);
  CHECK(p.wait_us == 55);

  // Every field set, the strings and lists too.
  Welcome welcome = testing::SampleWelcome();
  welcome.seed = std::numeric_limits<uint64_t>::max();
  welcome.mode = "chunked";
  welcome.chunk = 16;
  welcome.token_size = 8;
  welcome.servers = {"tcp://a:5555", "tcp://b:5556"};
  welcome.bounds = {0, 50000, 101770};
  got = Decode(Encoded(welcome));
  REQUIRE(got.ok());
  const Welcome& w = std::get<Welcome>(*got);
  CHECK(w.rank == welcome.rank);
  CHECK(w.model == welcome.model);
  CHECK(w.policy == welcome.policy);
  CHECK(w.shard_index == welcome.shard_index);
  CHECK(w.shard_count == welcome.shard_count);
  CHECK(w.lr == welcome.lr);
  CHECK(w.momentum == welcome.momentum);
  CHECK(w.seed == std::numeric_limits<uint64_t>::max());
  CHECK(w.mode == "chunked");
  CHECK(w.chunk == 16);
  CHECK(w.token_size == 8);
  CHECK(w.servers == welcome.servers);
  CHECK(w.bounds == welcome.bounds);

  got = Decode(Encoded(Hello{2, "node-a", 4242, 2, 0, 1, 3, "tcp://node-a:7000", {}, 0, false}));
  REQUIRE(got.ok());
  CHECK(std::get<Hello>(*got).host == "node-a");
  CHECK(std::get<Hello>(*got).shard == 1);
  CHECK(std::get<Hello>(*got).shards == 3);
  CHECK(std::get<Hello>(*got).address == "tcp://node-a:7000");
  CHECK(std::get<Hello>(*got).rank == 2);
  CHECK(std::get<Hello>(*got).layout.empty());
  CHECK_FALSE(std::get<Hello>(*got).evaluator);

  // An external model's announcement, and an evaluator's Hello.
  Hello announce;
  announce.host = "node-b";
  announce.layout = {{"fc0.weight", {10, 784}}, {"fc0.bias", {10}}};
  announce.num_params = 7850;
  got = Decode(Encoded(announce));
  REQUIRE(got.ok());
  CHECK(std::get<Hello>(*got).layout == announce.layout);
  CHECK(std::get<Hello>(*got).num_params == 7850);
  Hello evaluator;
  evaluator.evaluator = true;
  got = Decode(Encoded(evaluator));
  REQUIRE(got.ok());
  CHECK(std::get<Hello>(*got).evaluator);
  got = Decode(Encoded(Evaluate{4, 250, 7850}));
  REQUIRE(got.ok());
  REQUIRE(TypeOf(*got) == MsgType::kEvaluate);
  CHECK(std::get<Evaluate>(*got).id == 4);
  CHECK(std::get<Evaluate>(*got).iteration == 250);
  CHECK(std::get<Evaluate>(*got).num_params == 7850);
  got = Decode(Encoded(Evaluation{4, 0.8125, 0.53, 10000}));
  REQUIRE(got.ok());
  REQUIRE(TypeOf(*got) == MsgType::kEvaluation);
  CHECK(std::get<Evaluation>(*got).id == 4);
  CHECK(std::get<Evaluation>(*got).accuracy == 0.8125);
  CHECK(std::get<Evaluation>(*got).loss == 0.53);
  CHECK(std::get<Evaluation>(*got).samples == 10000);

  // Shard 0's orders to the other shards keep their order and values.
  Orders orders;
  orders.orders = {{Order::kStage, 2, 7, 0.25},
                   {Order::kApply, -1, 0, -0.05},
                   {Order::kReply, 2, 0, 12},
                   {Order::kSnapshot, -1, 0, 3}};
  got = Decode(Encoded(orders));
  REQUIRE(got.ok());
  REQUIRE(TypeOf(*got) == MsgType::kOrders);
  const auto& back = std::get<Orders>(*got).orders;
  REQUIRE(back.size() == 4);
  CHECK(back[0].kind == Order::kStage);
  CHECK(back[0].worker == 2);
  CHECK(back[0].clock == 7);
  CHECK(back[0].value == 0.25);
  CHECK(back[1].value == -0.05);
  CHECK(back[3].kind == Order::kSnapshot);
  got = Decode(Encoded(Slice{5, 1000}));
  REQUIRE(got.ok());
  CHECK(std::get<Slice>(*got).num_params == 1000);
  got = Decode(Encoded(Pull{19}));
  REQUIRE(got.ok());
  CHECK(std::get<Pull>(*got).clock == 19);
  got = Decode(Encoded(Model{5, 10}));
  REQUIRE(got.ok());
  CHECK(std::get<Model>(*got).version == 5);
  got = Decode(Encoded(Stop{"target reached"}));
  REQUIRE(got.ok());
  CHECK(std::get<Stop>(*got).reason == "target reached");
  got = Decode(Encoded(Heartbeat{99}));
  REQUIRE(got.ok());
  CHECK(std::get<Heartbeat>(*got).time_us == 99);
  got = Decode(Encoded(Continue{true, 17, 96}));
  REQUIRE(got.ok());
  CHECK(std::get<Continue>(*got).download);
  CHECK(std::get<Continue>(*got).token == 17);
  CHECK(std::get<Continue>(*got).batch == 96);
  got = Decode(Encoded(SyncNow{12}));
  REQUIRE(got.ok());
  CHECK(std::get<SyncNow>(*got).round == 12);
  got = Decode(Encoded(Model{5, 10, 48, 3}));
  REQUIRE(got.ok());
  CHECK(std::get<Model>(*got).batch == 48);
  CHECK(std::get<Model>(*got).token == 3);
  Model streamed{5, 10, 0, -1, 3, 4};
  got = Decode(Encoded(streamed));
  REQUIRE(got.ok());
  CHECK(std::get<Model>(*got).chunks == 3);
  CHECK(std::get<Model>(*got).chunk_floats == 4);
  got = Decode(Encoded(Chunk{2}));
  REQUIRE(got.ok());
  CHECK(std::get<Chunk>(*got).index == 2);
  CHECK(TypeOf(*got) == MsgType::kChunk);
  got = Decode(Encoded(Error{"nope", true}));
  REQUIRE(got.ok());
  CHECK(std::get<Error>(*got).fatal);
  CHECK(TypeOf(*got) == MsgType::kError);
}

TEST_CASE("doubles pack as msgpack-c packs them, and 2^64 without undefined behaviour") {
  // msgpack-c writes whole doubles as integers; its wholeness test casts
  // 2^64 to uint64_t, out of range. PackDouble must agree with it on every
  // other value, so the wire and checkpoint formats stay as they were.
  const double two64 = std::ldexp(1.0, 64);
  for (double x : {0.0, -0.0, 1.0, 0.25, -3.0, 255.0, 65536.0, std::ldexp(1.0, 63),
                   -std::ldexp(1.0, 63), -std::ldexp(1.0, 64), std::ldexp(1.0, 65), 1e300, -1e-300,
                   std::numeric_limits<double>::infinity(),
                   std::numeric_limits<double>::quiet_NaN(), std::nextafter(two64, 0.0)}) {
    CAPTURE(x);
    PackBuffer ours;
    msgpack::packer<PackBuffer> packer(ours);
    packer.pack(x);
    CHECK(std::string(ours.data(), ours.size()) == PackRaw([&](auto& p) { p.pack(x); }));
  }
  Push push{.loss = two64, .cpu = -two64};
  Result<Body> got = Decode(Encoded(push));
  REQUIRE(got.ok());
  CHECK(std::get<Push>(*got).loss == two64);
  CHECK(std::get<Push>(*got).cpu == -two64);
  CHECK(Encoded(std::get<Push>(*got)) == Encoded(push));
}

TEST_CASE("each message type has its name, in the order of the Body variant") {
  const std::vector<std::pair<MsgType, std::string_view>> names = {
      {MsgType::kHello, "Hello"},
      {MsgType::kWelcome, "Welcome"},
      {MsgType::kPull, "Pull"},
      {MsgType::kModel, "Model"},
      {MsgType::kPush, "Push"},
      {MsgType::kStop, "Stop"},
      {MsgType::kHeartbeat, "Heartbeat"},
      {MsgType::kError, "Error"},
      {MsgType::kContinue, "Continue"},
      {MsgType::kSyncNow, "SyncNow"},
      {MsgType::kChunk, "Chunk"},
      {MsgType::kOrders, "Orders"},
      {MsgType::kSlice, "Slice"},
      {MsgType::kEvaluate, "Evaluate"},
      {MsgType::kEvaluation, "Evaluation"}};
  for (const auto& [type, name] : names) CHECK(MsgTypeName(type) == name);
  CHECK(MsgTypeName(TypeOf(Body(Heartbeat{}))) == "Heartbeat");
  CHECK(MsgTypeName(static_cast<MsgType>(0)) == "unknown");
  CHECK(MsgTypeName(static_cast<MsgType>(16)) == "unknown");
}

TEST_CASE("malformed headers are refused with a protocol error, never a crash") {
  const std::string valid = Encoded(Push{});
  // Every proper prefix of a valid header is refused.
  for (size_t n = 0; n < valid.size(); ++n) {
    Result<Body> got = Decode(valid.substr(0, n));
    CHECK_FALSE(got.ok());
    CHECK(got.status().code() == StatusCode::kProtocol);
  }
  CHECK_FALSE(Decode(valid + "x").ok());
  CHECK_FALSE(Decode("\xc1").ok());  // a byte msgpack never uses
  CHECK_FALSE(Decode("hello world").ok());

  // [version, type, body], the body an empty map unless `body` packs another.
  auto header = [](auto version, auto type, auto body) {
    return PackRaw([&](auto& p) {
      p.pack_array(3);
      p.pack(version);
      p.pack(type);
      body(p);
    });
  };
  auto empty = [](auto& p) { p.pack_map(0); };
  CHECK(Decode(header(kProtocolVersion, 3, empty)).ok());
  Result<Body> other = Decode(header(kProtocolVersion + 1, 3, empty));
  REQUIRE_FALSE(other.ok());
  CHECK(other.status().message().find("version " + std::to_string(kProtocolVersion + 1)) !=
        std::string::npos);
  CHECK_FALSE(Decode(header(kProtocolVersion, 0, empty)).ok());
  CHECK(Decode(header(kProtocolVersion, 10, empty)).ok());  // SyncNow
  CHECK(Decode(header(kProtocolVersion, 11, empty)).ok());  // Chunk
  CHECK(Decode(header(kProtocolVersion, 13, empty)).ok());  // Slice
  CHECK(Decode(header(kProtocolVersion, 15, empty)).ok());  // Evaluation, the last type
  CHECK_FALSE(Decode(header(kProtocolVersion, 16, empty)).ok());
  CHECK_FALSE(Decode(header(kProtocolVersion, 200, empty)).ok());

  // Shapes that are not [version, type, map].
  CHECK_FALSE(Decode(PackRaw([](auto& p) { p.pack(std::string("hi")); })).ok());
  CHECK_FALSE(Decode(PackRaw([](auto& p) {
                p.pack_array(2);
                p.pack(1);
                p.pack(3);
              })).ok());
  CHECK_FALSE(Decode(header(-1, 3, empty)).ok());
  CHECK_FALSE(Decode(header(kProtocolVersion, 3, [](auto& p) { p.pack(42); })).ok());
  // A field of the wrong type.
  CHECK_FALSE(Decode(header(kProtocolVersion, 3, [](auto& p) {
                p.pack_map(1);
                p.pack(std::string("clock"));
                p.pack(std::string("seven"));
              })).ok());
  // A negative number where an unsigned one belongs.
  CHECK_FALSE(Decode(header(kProtocolVersion, 2, [](auto& p) {
                p.pack_map(1);
                p.pack(std::string("seed"));
                p.pack(-5);
              })).ok());
  // A header that asks for a huge array is refused before allocating it.
  std::string huge = PackRaw([](auto& p) { p.pack_array(3); });
  huge += "\xdd\xff\xff\xff\xff";  // array32 of 4 billion entries
  CHECK_FALSE(Decode(huge).ok());
}

TEST_CASE("a Hello whose names hold control characters is refused; other text is kept") {
  // A newline in a host name would start a forged line in the server's log.
  const std::string forged = "x\n12:00:00.000 dmlps-server: info: reached accuracy 1.0";
  Hello hello;
  hello.host = forged;
  Result<Body> host = Decode(Encoded(hello));
  REQUIRE_FALSE(host.ok());
  CHECK(host.status().code() == StatusCode::kProtocol);
  CHECK(host.status().message() == "a Hello whose host has control characters");
  hello.host = "worker-1";
  hello.address = "tcp://a:1\r";
  CHECK(Decode(Encoded(hello)).status().message().find("address") != std::string::npos);
  hello.address = "tcp://a:1";
  hello.layout = {{"fc.weight\x1b[2J", {2, 2}, false}};
  CHECK(Decode(Encoded(hello)).status().message().find("tensor name") != std::string::npos);
  hello.layout = {{"fc.weight", {2, 2}, false}};
  CHECK(Decode(Encoded(hello)).ok());
  // An Error's message is the peer's to word: kept, escaped where logged.
  Result<Body> error = Decode(Encoded(Error{forged, false, false}));
  REQUIRE(error.ok());
  CHECK(std::get<Error>(*error).message == forged);
}

TEST_CASE("unknown fields are ignored and missing ones keep their defaults") {
  std::string bytes = PackRaw([](auto& p) {
    p.pack_array(3);
    p.pack(kProtocolVersion);
    p.pack(static_cast<uint32_t>(MsgType::kPull));
    p.pack_map(2);
    p.pack(std::string("clock"));
    p.pack(4);
    p.pack(std::string("from_the_future"));
    p.pack(true);
  });
  Result<Body> got = Decode(bytes);
  REQUIRE(got.ok());
  CHECK(std::get<Pull>(*got).clock == 4);
}

TEST_CASE("tensors are cut into frames without copying and viewed back in place") {
  auto values = std::make_shared<std::vector<float>>(1000);
  std::iota(values->begin(), values->end(), 0.f);
  std::vector<zmq::message_t> frames;
  AppendTensor(values, /*chunk_bytes=*/256, &frames);
  REQUIRE(frames.size() == 16);  // 64 floats per frame: 15 full frames and one of 40
  CHECK(frames.back().size() == 40 * sizeof(float));
  for (size_t i = 0; i < frames.size(); ++i) {
    CHECK(frames[i].data() == values->data() + 64 * i);  // no copy
  }
  const float* original = values->data();
  std::weak_ptr<std::vector<float>> alive = values;
  values.reset();
  CHECK_FALSE(alive.expired());  // the frames keep the tensor alive
  Result<TensorView> view = TensorView::Make(frames, 1000);
  REQUIRE(view.ok());
  CHECK(view->size() == 1000);
  int64_t seen = 0;
  view->ForEachChunk([&](int64_t offset, const TensorView::ConstMap& chunk) {
    CHECK(offset == seen);
    for (Eigen::Index i = 0; i < chunk.size(); ++i)
      CHECK(chunk[i] == static_cast<float>(offset + i));
    seen += chunk.size();
  });
  CHECK(seen == 1000);
  std::vector<float> copy(1000);
  view->CopyTo(copy);
  CHECK(copy[999] == 999.f);
  CHECK(view->AllFinite());
  frames.clear();
  CHECK(alive.expired());  // released once ZeroMQ is done with every frame
  (void)original;
}

TEST_CASE("payloads of the wrong size or shape are refused") {
  std::vector<float> data(10, 1.f);
  auto frame = [](const void* p, size_t n) { return zmq::message_t(p, n); };
  std::vector<zmq::message_t> frames;
  frames.push_back(frame(data.data(), 10 * sizeof(float)));
  CHECK(TensorView::Make(frames, 10).ok());
  CHECK_FALSE(TensorView::Make(frames, 11).ok());  // too few floats
  CHECK_FALSE(TensorView::Make(frames, 9).ok());   // too many
  CHECK_FALSE(TensorView::Make(frames, -1).ok());
  frames.push_back(frame(data.data(), 0));  // an empty frame
  CHECK_FALSE(TensorView::Make(frames, 10).ok());
  frames.pop_back();
  frames.push_back(frame(data.data(), 7));  // not whole floats
  CHECK_FALSE(TensorView::Make(frames, 12).ok());
  std::vector<zmq::message_t> none;
  CHECK(TensorView::Make(none, 0).ok());
  CHECK_FALSE(TensorView::Make(none, 1).ok());
}

TEST_CASE("misaligned frames are copied once, and NaN or Inf is detected") {
  std::vector<char> raw(4 * sizeof(float) + 1);
  const float values[4] = {1.f, 2.f, 3.f, 4.f};
  std::memcpy(raw.data() + 1, values, sizeof(values));
  std::vector<zmq::message_t> frames;
  // Zero-copy construction keeps the odd address, as a frame inside a batch read may have.
  frames.emplace_back(static_cast<void*>(raw.data() + 1), sizeof(values), nullptr, nullptr);
  REQUIRE(reinterpret_cast<uintptr_t>(frames[0].data()) % alignof(float) != 0);
  Result<TensorView> view = TensorView::Make(frames, 4);
  REQUIRE(view.ok());
  std::vector<float> out(4);
  view->CopyTo(out);
  CHECK(out == std::vector<float>{1.f, 2.f, 3.f, 4.f});

  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    std::vector<float> grad(100, 0.5f);
    grad[73] = bad;
    std::vector<zmq::message_t> f;
    f.emplace_back(grad.data(), 50 * sizeof(float));
    f.emplace_back(grad.data() + 50, 50 * sizeof(float));
    Result<TensorView> v = TensorView::Make(f, 100);
    REQUIRE(v.ok());
    CHECK_FALSE(v->AllFinite());
  }
}

TEST_CASE("a message crosses a real ROUTER/DEALER pair with its payload") {
  testing::EndpointPair pair("inproc://codec-test");
  auto grad = std::make_shared<std::vector<float>>(3000, 0.25f);
  std::vector<zmq::message_t> payload;
  AppendTensor(grad, 1024, &payload);
  Push push;
  push.num_params = 3000;
  push.samples = 8;
  REQUIRE(pair.client->SendMessage(nullptr, push, std::move(payload)).ok());
  net::Frames frames;
  Result<bool> got = pair.server->Receive(&frames, std::chrono::milliseconds(2000));
  REQUIRE(got.ok());
  REQUIRE(*got);
  Result<Message> message = DecodeMessage(frames, 1);  // frame 0 names the peer
  REQUIRE(message.ok());
  CHECK(std::get<Push>(message->body).samples == 8);
  Result<TensorView> view = TensorView::Make(message->payload, 3000);
  REQUIRE(view.ok());
  std::vector<float> out(3000);
  view->CopyTo(out);
  CHECK(out[2999] == 0.25f);

  // Nothing more is coming: the wait ends at its timeout with no message.
  got = pair.server->Receive(&frames, std::chrono::milliseconds(50));
  REQUIRE(got.ok());
  CHECK_FALSE(*got);
}

// Whether this host has an IPv6 loopback; tests of IPv6 addresses skip
// without one.
bool HasIpv6Loopback() {
  std::ifstream interfaces("/proc/net/if_inet6");
  std::string line;
  while (std::getline(interfaces, line)) {
    if (line.rfind("00000000000000000000000000000001", 0) == 0) return true;
  }
  return false;
}

TEST_CASE("IPv6 addresses and wildcard binds speak IPv6, and a wildcard IPv4 too") {
  if (!HasIpv6Loopback()) {
    MESSAGE("skipped: this host has no IPv6 loopback");
    return;
  }
  for (const std::string bind : {"tcp://[::1]:*", "tcp://*:*"}) {
    CAPTURE(bind);
    zmq::context_t context;
    Result<net::Endpoint> server = net::Endpoint::Bind(context, bind);
    REQUIRE(server.ok());
    const std::string port = server->address().substr(server->address().rfind(':') + 1);
    std::vector<std::string> peers = {"tcp://[::1]:" + port};
    if (bind == "tcp://*:*") peers.push_back("tcp://127.0.0.1:" + port);
    for (const std::string& peer : peers) {
      CAPTURE(peer);
      Result<net::Endpoint> client = net::Endpoint::Connect(context, peer);
      REQUIRE(client.ok());
      REQUIRE(client->SendMessage(nullptr, Pull{7}).ok());
      net::Frames frames;
      Result<bool> arrived = server->Receive(&frames, std::chrono::seconds(5));
      REQUIRE(arrived.ok());
      REQUIRE(*arrived);
      REQUIRE(frames.size() == 2);  // the peer's routing id, then the message
      Result<Message> got = DecodeMessage(frames, 1);
      REQUIRE(got.ok());
      REQUIRE(std::holds_alternative<Pull>(got->body));
      CHECK(std::get<Pull>(got->body).clock == 7);
    }
  }
}

TEST_CASE("binding an address twice is an Unavailable error, a bad address InvalidArgument") {
  zmq::context_t context;
  Result<net::Endpoint> first = net::Endpoint::Bind(context, "tcp://127.0.0.1:*");
  REQUIRE(first.ok());
  CHECK(first->address().rfind("tcp://127.0.0.1:", 0) == 0);
  Result<net::Endpoint> second = net::Endpoint::Bind(context, first->address());
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == StatusCode::kUnavailable);
  Result<net::Endpoint> bad = net::Endpoint::Bind(context, "carrier-pigeon://home");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dmlps::proto
