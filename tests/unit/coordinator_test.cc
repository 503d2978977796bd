// Shard 0's coordination of the other server shards: who may register, the
// worker Hellos held meanwhile, and snapshots assembled from slices.
#include "server/coordinator.h"

#include <doctest/doctest.h>

#include <vector>

namespace dmlps::server {
namespace {

struct Evaluated {
  Snapshot snapshot;
  bool must = false;
};

// A coordinator over an endpoint no one connects to: what it sends goes nowhere.
struct CoordinatorFixture {
  explicit CoordinatorFixture(std::vector<int64_t> bounds) {
    Result<net::Endpoint> bound = net::Endpoint::Bind(context, "inproc://coordinator-test");
    REQUIRE(bound.ok());
    endpoint.emplace(std::move(bound).value());
    proto::Welcome welcome;
    welcome.model = "softmax";
    coordinator.emplace(
        *endpoint, std::move(bounds), welcome,
        [this](Snapshot snapshot, bool must) {
          evaluated.push_back({std::move(snapshot), must});
        },
        [this](const zmq::message_t& identity, const proto::Hello& hello, const net::Sender&) {
          answered.emplace_back(static_cast<const char*>(identity.data()), identity.size());
          CHECK(hello.host == "worker-host");
        });
  }

  zmq::context_t context;
  std::optional<net::Endpoint> endpoint;
  std::optional<ShardCoordinator> coordinator;
  std::vector<Evaluated> evaluated;
  std::vector<std::string> answered;
};

proto::Hello ShardHello(int64_t shard, int64_t shards) {
  proto::Hello hello;
  hello.host = "shard-host";
  hello.shard = shard;
  hello.shards = shards;
  hello.address = "tcp://127.0.0.1:7000";
  return hello;
}

proto::Message SliceMessage(int64_t id, const std::vector<float>& values) {
  proto::Message message;
  message.body = proto::Slice{id, static_cast<int64_t>(values.size())};
  message.payload.emplace_back(values.data(), values.size() * sizeof(float));
  return message;
}

TEST_CASE("coordinator: with one shard it registers no one and sends nothing") {
  CoordinatorFixture f({0, 5});
  ShardCoordinator& c = *f.coordinator;
  CHECK_FALSE(c.sharded());
  CHECK(c.AllRegistered());
  const Status refused = c.Register(zmq::message_t(std::string("s1")), ShardHello(1, 2));
  CHECK(refused.message() == "this server is not sharded (no --shard 0/S)");
  CHECK(c.ShardOf(zmq::message_t(std::string("s1"))) == -1);
  proto::Welcome welcome;
  c.DescribeShards(&welcome);
  CHECK(welcome.servers.empty());
  CHECK(welcome.bounds.empty());
  c.Order({proto::Order::kApply, -1, 0, 1});
  c.SendOrders();
  CHECK(c.fatal().ok());
}

TEST_CASE("coordinator: workers wait for every shard to be ready; a shard registers once") {
  CoordinatorFixture f({0, 3, 5});
  ShardCoordinator& c = *f.coordinator;
  CHECK(c.sharded());
  CHECK_FALSE(c.AllRegistered());
  proto::Hello worker;
  worker.host = "worker-host";
  REQUIRE(c.HoldHello(zmq::message_t(std::string("w0")), worker, {}).ok());
  CHECK(c.Holds(zmq::message_t(std::string("w0"))));
  CHECK_FALSE(c.Holds(zmq::message_t(std::string("w1"))));

  CHECK(c.Register(zmq::message_t(std::string("s1")), ShardHello(1, 3)).message() ==
        "shard 1/3 does not fit this job of 2 shards");
  CHECK(c.Register(zmq::message_t(std::string("s1")), ShardHello(2, 2)).message() ==
        "shard 2/2 does not fit this job of 2 shards");
  proto::Hello no_address = ShardHello(1, 2);
  no_address.address.clear();
  CHECK(c.Register(zmq::message_t(std::string("s1")), no_address).message() ==
        "no address for workers to reach it at");
  CHECK(f.answered.empty());

  REQUIRE(c.Register(zmq::message_t(std::string("s1")), ShardHello(1, 2)).ok());
  // Registered, but not ready until its first message after the Welcome
  // (it binds again with its slice's limits first).
  CHECK_FALSE(c.AllRegistered());
  CHECK(f.answered.empty());
  proto::Message ready{proto::Heartbeat{1}, {}};
  c.HandleMessage(1, ready);
  CHECK(c.AllRegistered());
  CHECK(f.answered == std::vector<std::string>{"w0"});
  CHECK_FALSE(c.Holds(zmq::message_t(std::string("w0"))));
  CHECK(c.ShardOf(zmq::message_t(std::string("s1"))) == 1);
  CHECK(c.Register(zmq::message_t(std::string("s9")), ShardHello(1, 2)).message() ==
        "shard 1 is taken");

  proto::Welcome welcome;
  c.DescribeShards(&welcome);
  CHECK(welcome.bounds == std::vector<int64_t>{0, 3, 5});
  REQUIRE(welcome.servers.size() == 2);
  CHECK(welcome.servers[0] == "inproc://coordinator-test");
  CHECK(welcome.servers[1] == "tcp://127.0.0.1:7000");
}

TEST_CASE("coordinator: a snapshot is evaluated once every slice is in, in place") {
  CoordinatorFixture f({0, 3, 5});
  ShardCoordinator& c = *f.coordinator;
  REQUIRE(c.Register(zmq::message_t(std::string("s1")), ShardHello(1, 2)).ok());

  const int64_t first = c.BeginSnapshot({0, 10, 9, 640, nullptr}, true);
  const int64_t second = c.BeginSnapshot({0, 20, 19, 1280, nullptr}, false);
  CHECK(second != first);
  // The other shard's slice may come first.
  proto::Message slice = SliceMessage(first, {4, 5});
  c.HandleMessage(1, slice);
  CHECK(f.evaluated.empty());
  c.AddOwnSlice(first, 1.5, {1, 2, 3});
  REQUIRE(f.evaluated.size() == 1);
  const Evaluated& e = f.evaluated[0];
  CHECK(e.must);
  CHECK(e.snapshot.seconds == 1.5);
  CHECK(e.snapshot.iteration == 10);
  CHECK(e.snapshot.version == 9);
  CHECK(e.snapshot.samples == 640);
  CHECK(*e.snapshot.params == std::vector<float>{1, 2, 3, 4, 5});

  // A slice of the wrong size drops its snapshot; the run goes on.
  c.AddOwnSlice(second, 2.5, {1, 2, 3});
  proto::Message wrong = SliceMessage(second, {4, 5, 6});
  c.HandleMessage(1, wrong);
  CHECK(f.evaluated.size() == 1);
  CHECK(c.fatal().ok());

  // A shard that gives up ends the run.
  proto::Message error;
  error.body = proto::Error{"out of memory", true, false};
  c.HandleMessage(1, error);
  CHECK(c.fatal().code() == StatusCode::kUnavailable);
  CHECK(c.fatal().message() == "server shard 1 gave up: out of memory");
}

TEST_CASE("coordinator: a silent shard ends the run") {
  CoordinatorFixture f({0, 3, 5});
  ShardCoordinator& c = *f.coordinator;
  REQUIRE(c.Register(zmq::message_t(std::string("s1")), ShardHello(1, 2)).ok());
  c.CheckSilence(Clock::now(), std::chrono::milliseconds(60000));
  CHECK(c.fatal().ok());
  c.CheckSilence(Clock::now() + std::chrono::milliseconds(2000), std::chrono::milliseconds(1000));
  CHECK(c.fatal().message() == "server shard 1 at tcp://127.0.0.1:7000 lost: silent for 1 s");
}

TEST_CASE("coordinator: a checkpoint counts as written once every shard echoed its order") {
  CoordinatorFixture f({0, 2, 4, 6});
  ShardCoordinator& c = *f.coordinator;
  REQUIRE(c.Register(zmq::message_t(std::string("s1")), ShardHello(1, 3)).ok());
  CHECK_FALSE(c.Written(20));  // shard 2 has not even registered
  REQUIRE(c.Register(zmq::message_t(std::string("s2")), ShardHello(2, 3)).ok());
  auto echo = [&](int64_t shard, int64_t version) {
    proto::Message message;
    message.body = proto::Orders{{{proto::Order::kCheckpoint, -1, version, 1.0 * version}}};
    c.HandleMessage(shard, message);
  };
  echo(1, 20);
  CHECK_FALSE(c.Written(20));
  echo(2, 20);
  CHECK(c.Written(20));
  CHECK_FALSE(c.Written(30));
  echo(2, 30);
  echo(1, 10);  // an older echo changes nothing
  CHECK(c.Written(20));
  CHECK_FALSE(c.Written(30));
  CHECK(c.lost() == -1);
  proto::Message gave_up;
  gave_up.body = proto::Error{"interrupted", true};
  c.HandleMessage(2, gave_up);
  CHECK_FALSE(c.fatal().ok());
  CHECK(c.lost() == 2);
}

TEST_CASE("coordinator: a worker's Hello held again from a new socket replaces the old one") {
  CoordinatorFixture f({0, 3, 5});
  ShardCoordinator& c = *f.coordinator;
  proto::Hello worker;
  worker.host = "worker-host";
  worker.rank = 1;
  REQUIRE(c.HoldHello(zmq::message_t(std::string("old")), worker, {}).ok());
  REQUIRE(c.HoldHello(zmq::message_t(std::string("new")), worker, {}).ok());
  CHECK_FALSE(c.Holds(zmq::message_t(std::string("old"))));
  REQUIRE(c.Register(zmq::message_t(std::string("s1")), ShardHello(1, 2)).ok());
  proto::Message ready{proto::Heartbeat{1}, {}};
  c.HandleMessage(1, ready);
  CHECK(f.answered == std::vector<std::string>{"new"});
}

TEST_CASE("hello hold: one per connection, and no more than its bound") {
  // docs/security.md: a peer saying Hello again and again, or many peers,
  // cannot make a server hold more.
  HelloHold hold(3, kMaxHeldHelloBytes);
  proto::Hello hello;
  hello.host = "h";
  for (int i = 0; i < 1000; ++i) {
    REQUIRE(hold.Hold(zmq::message_t(std::string("same")), hello, {}).ok());
  }
  CHECK(hold.size() == 1);
  REQUIRE(hold.Hold(zmq::message_t(std::string("b")), hello, {}).ok());
  REQUIRE(hold.Hold(zmq::message_t(std::string("c")), hello, {"KEY"}).ok());
  const Status full = hold.Hold(zmq::message_t(std::string("d")), hello, {});
  CHECK(full.code() == StatusCode::kUnavailable);
  CHECK(hold.size() == 3);
  // A bound on bytes too: 64 tensors of 200-character names, twice, pass
  // one of 30 KB.
  HelloHold small(100, 30000);
  proto::Hello large;
  for (int t = 0; t < 64; ++t) large.layout.push_back({std::string(200, 'x'), {4, 4}, false});
  REQUIRE(HelloHold::HeldBytes(large) > 15000);
  REQUIRE(small.Hold(zmq::message_t(std::string("a")), large, {}).ok());
  CHECK_FALSE(small.Hold(zmq::message_t(std::string("b")), large, {}).ok());
  std::vector<HelloHold::Held> taken = small.Take();
  REQUIRE(taken.size() == 1);
  CHECK(small.size() == 0);
  CHECK(small.bytes() == 0);
  // Held keys come back with their Hellos.
  CHECK(hold.Take().back().sender.key == "KEY");
}

}  // namespace
}  // namespace dmlps::server
