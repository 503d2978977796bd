// Shard 0's worker desk against one worker over inproc: what it refuses and
// why, the Welcome, the start of training once the worker is ready, the
// model reply, and a worker that gives up counted as lost.
#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "net_test_util.h"
#include "server/worker_desk.h"

namespace dmlps::server {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kWait{2000};

// The driver's other sinks: updates and evaluations do nothing here (the
// desk is its reply sink, as in the server).
class NoUpdates : public sync::UpdateSink<Gradient>, public sync::RunEvents {
 public:
  void Stage(const sync::HandledPush<Gradient>&, double) override {}
  void Apply(double, bool, int64_t) override {}
  void Evaluate(bool) override {}
};

// A desk of a one-worker bsp job on a model of 4 floats, not sharded, and
// the worker's end of the connection.
struct DeskFixture {
  DeskFixture() : pair("inproc://desk-test") {
    store.emplace(std::vector<float>(4, 0.5f), 4);
    coordinator.emplace(
        *pair.server, std::vector<int64_t>{0, 4}, proto::Welcome{}, [](Snapshot, bool) {},
        [this](const zmq::message_t& identity, const proto::Hello& hello,
               const net::Sender& sender) {
          desk->admissions().HandleHello(identity, hello, sender);
        });
    driver.emplace(std::move(sync::MakePolicy(sync::PolicyConfig{})).value(),
                   sync::DriverOptions{});
    desk.emplace(
        WorkerDeskOptions{.workers = 1,
                          .worker_timeout = milliseconds(60000),
                          .max_message_bytes = 1 << 20,
                          .layout = {},
                          .peer = nullptr},
        *pair.server, *coordinator, *driver, *store, nullptr,
        [this] {
          ++starts;
          driver->Start();
        },
        [](int64_t rank) {
          proto::Welcome welcome;
          welcome.rank = rank;
          welcome.model = "softmax";
          return welcome;
        });
    driver->Connect({.replies = *desk, .updates = others, .events = others});
  }

  // The worker sends `body`; the desk handles it.
  void Send(const proto::Body& body) {
    REQUIRE(pair.client->SendMessage(nullptr, body).ok());
    REQUIRE(desk->HandleNext(kWait).ok());
  }
  // The next message the worker gets.
  proto::Message Next() { return testing::NextMessage(*pair.client, kWait); }
  // Says Hello and takes the Welcome.
  void Join() {
    proto::Hello hello;
    hello.host = "worker-host";
    hello.pid = 42;
    Send(hello);
    const proto::Message welcome = Next();
    REQUIRE(std::holds_alternative<proto::Welcome>(welcome.body));
  }

  testing::EndpointPair pair;
  std::optional<ModelStore> store;
  std::optional<ShardCoordinator> coordinator;
  NoUpdates others;
  std::optional<sync::PolicyDriver<Gradient>> driver;
  std::optional<WorkerDesk> desk;
  int64_t starts = 0;
};

TEST_CASE("desk: a message before Hello is refused, and its sender may Hello again") {
  DeskFixture f;
  f.Send(proto::Pull{0});
  const proto::Message refused = f.Next();
  const auto* error = std::get_if<proto::Error>(&refused.body);
  REQUIRE(error != nullptr);
  CHECK(error->message == "Pull before Hello");
  CHECK(error->fatal);
  CHECK(error->rejoin);
}

TEST_CASE("desk: a worker is welcomed; its first pull starts training and gets the model") {
  DeskFixture f;
  proto::Hello hello;
  hello.host = "worker-host";
  hello.pid = 42;
  f.Send(hello);
  const proto::Message welcomed = f.Next();
  const auto* welcome = std::get_if<proto::Welcome>(&welcomed.body);
  REQUIRE(welcome != nullptr);
  CHECK(welcome->rank == 0);
  CHECK(welcome->model == "softmax");
  CHECK(welcome->servers.empty());

  f.Send(proto::Push{});
  const proto::Message early = f.Next();
  const auto* error = std::get_if<proto::Error>(&early.body);
  REQUIRE(error != nullptr);
  CHECK(error->message == "push before training started");
  CHECK_FALSE(error->fatal);
  CHECK(f.starts == 0);

  f.Send(proto::Pull{0});
  CHECK(f.starts == 1);
  const proto::Message reply = f.Next();
  const auto* model = std::get_if<proto::Model>(&reply.body);
  REQUIRE(model != nullptr);
  CHECK(model->version == 0);
  CHECK(model->num_params == 4);
  CHECK(f.desk->turnover().joined == 0);
}

TEST_CASE("desk: a worker that gives up is lost, and the turnover says who and why") {
  DeskFixture f;
  f.Join();
  proto::Error gave_up;
  gave_up.message = "out of memory";
  gave_up.fatal = true;
  f.Send(gave_up);
  const Turnover& turnover = f.desk->turnover();
  CHECK(turnover.lost == 1);
  CHECK(turnover.last_lost == "worker 0 (worker-host:42): gave up: out of memory");
  // Its rank is free: a message from it now is one before Hello.
  f.Send(proto::Heartbeat{});
  const proto::Message refused = f.Next();
  const auto* error = std::get_if<proto::Error>(&refused.body);
  REQUIRE(error != nullptr);
  CHECK(error->message == "Heartbeat before Hello");
  CHECK(f.desk->LogTotals(1.0).empty());
}

}  // namespace
}  // namespace dmlps::server
