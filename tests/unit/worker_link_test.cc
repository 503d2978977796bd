// The worker's side of the protocol against fake servers on real sockets:
// the modes a Welcome names, a ServerLink joining sharded servers and
// assembling a model from their slices, and joining again as it joined,
// heartbeating from its own thread while busy computing, a worker refusing steps it cannot run, and
// the overlapping steps following the batch each download sets.
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"
#include "dmlps/sync/policy.h"
#include "dmlps/worker/worker.h"
#include "worker/link.h"

namespace dmlps {
namespace {

using std::chrono::milliseconds;

TEST_CASE("every worker mode parses back from its name, and nothing else does") {
  for (sync::WorkerMode mode :
       {sync::WorkerMode::kSync, sync::WorkerMode::kChunked, sync::WorkerMode::kLocal,
        sync::WorkerMode::kLocalOverlap, sync::WorkerMode::kToken, sync::WorkerMode::kLocalSgd}) {
    Result<sync::WorkerMode> parsed = sync::ParseWorkerMode(sync::WorkerModeName(mode));
    REQUIRE(parsed.ok());
    CHECK(*parsed == mode);
  }
  for (const char* bad : {"", "Sync", "local_overlap", "tokens"}) {
    Result<sync::WorkerMode> parsed = sync::ParseWorkerMode(bad);
    CHECK(parsed.status().code() == StatusCode::kInvalidArgument);
  }
}

// One fake server shard: a ROUTER on a free local port.
struct FakeShard {
  explicit FakeShard(zmq::context_t& context)
      : endpoint(std::move(net::Endpoint::Bind(context, "tcp://127.0.0.1:*")).value()) {}

  // The next message from any worker, within 5 s; its frames in `frames`.
  proto::Message Next(net::Frames& frames) {
    REQUIRE(*endpoint.Receive(&frames, milliseconds(5000)));
    Result<proto::Message> message = proto::DecodeMessage(frames, 1);
    REQUIRE(message.ok());
    return std::move(*message);
  }
  // Waits for the worker's Hello and keeps its identity for the answers.
  proto::Hello AwaitHello() {
    net::Frames frames;
    while (true) {
      proto::Message message = Next(frames);
      if (auto* hello = std::get_if<proto::Hello>(&message.body)) {
        worker.copy(frames[0]);
        return *hello;
      }
    }
  }
  // The worker's next message other than a heartbeat.
  proto::Message Receive() {
    net::Frames frames;
    while (true) {
      proto::Message message = Next(frames);
      if (proto::TypeOf(message.body) != proto::MsgType::kHeartbeat) return message;
    }
  }
  void Send(const proto::Body& body) { REQUIRE(endpoint.SendMessage(&worker, body).ok()); }
  // Sends `values` as a Model of `version` that sets the worker's batch
  // (0: unchanged), streamed in chunks of two floats.
  void SendModel(int64_t version, std::vector<float> values, int64_t batch = 0) {
    proto::Model model;
    model.version = version;
    model.batch = batch;
    model.num_params = static_cast<int64_t>(values.size());
    auto payload = std::make_shared<const std::vector<float>>(std::move(values));
    REQUIRE(endpoint.SendWithPayload(&worker, model, payload, 2 * sizeof(float)).ok());
  }

  net::Endpoint endpoint;
  zmq::message_t worker;
};

worker::WorkerConfig ConfigFor(const std::string& server) {
  worker::WorkerConfig config;
  config.link.server = server;
  config.link.connect_timeout = milliseconds(5000);
  config.link.server_timeout = milliseconds(5000);
  return config;
}

TEST_CASE("a link joins sharded servers and assembles the model from their slices") {
  zmq::context_t context;
  FakeShard shard0(context);
  FakeShard shard1(context);
  const worker::WorkerConfig config = ConfigFor(shard0.endpoint.address());

  for (const int64_t slice_version : {7, 6}) {
    CAPTURE(slice_version);
    std::thread servers([&] {
      CHECK(shard0.AwaitHello().rank == -1);
      proto::Welcome welcome;
      welcome.rank = 3;
      welcome.num_params = 5;
      welcome.servers = {shard0.endpoint.address(), shard1.endpoint.address()};
      welcome.bounds = {0, 3, 5};
      shard0.Send(welcome);
      CHECK(shard1.AwaitHello().rank == 3);  // the rank shard 0 gave
      proto::Welcome slice;
      slice.num_params = 2;
      shard1.Send(slice);
      shard0.SendModel(7, {1, 2, 3});
      shard1.SendModel(slice_version, {4, 5});
    });
    worker::ServerLink link(config, nullptr);
    const Status joined = link.Join(0);
    Result<proto::Message> reply =
        joined.ok() ? link.Await({proto::MsgType::kModel}) : Result<proto::Message>(joined);
    servers.join();
    REQUIRE(joined.ok());
    CHECK(link.rank() == 3);
    REQUIRE(reply.ok());
    std::vector<float> params(5);
    Result<proto::Model> header = link.TakeModel(*reply, params);
    if (slice_version == 7) {
      REQUIRE(header.ok());
      CHECK(header->version == 7);
      CHECK(params == std::vector<float>{1, 2, 3, 4, 5});
    } else {
      CHECK(header.status().code() == StatusCode::kProtocol);
      CHECK(header.status().message() ==
            "server shard 1 sent version 6 of its slice, shard 0 version 7");
    }
    CHECK_FALSE(link.stopped());
  }
}

TEST_CASE("a link with no server there says where it looked and for how long") {
  zmq::context_t context;
  FakeShard silent(context);  // bound, never answering
  worker::WorkerConfig config = ConfigFor(silent.endpoint.address());
  config.link.connect_timeout = milliseconds(200);
  worker::ServerLink link(config, nullptr);
  const Status joined = link.Join(0);
  CHECK(joined.code() == StatusCode::kUnavailable);
  CHECK(joined.message() == "no server answered at " + config.link.server + " within 0.2 s");
  CHECK(link.rank() == -1);
}

TEST_CASE("a link the server refuses says Refused, with the server's reason") {
  zmq::context_t context;
  FakeShard server(context);
  const worker::WorkerConfig config = ConfigFor(server.endpoint.address());
  std::thread fake([&] {
    server.AwaitHello();
    server.Send(proto::Error{"the worker's layout is not the external model's", true});
  });
  worker::ServerLink link(config, nullptr);
  const Status joined = link.Join(0);
  fake.join();
  CHECK(joined.code() == StatusCode::kRefused);
  CHECK(joined.message() ==
        "the server refused this worker: the worker's layout is not the external model's");
  CHECK(ExitCodeFor(joined) == 69);  // as dmlps-worker exits for any unavailable server
  CHECK(link.rank() == -1);
}

TEST_CASE("a link joins again with the max_batch it joined with") {
  zmq::context_t context;
  FakeShard server(context);
  worker::WorkerConfig config = ConfigFor(server.endpoint.address());
  // As with --max-batch auto: the flag's value is not what was offered.
  config.max_batch_auto = true;
  config.max_batch = 0;
  config.reconnect_timeout = milliseconds(5000);
  proto::Welcome welcome;
  welcome.rank = 1;
  welcome.model = "softmax";
  welcome.num_params = 6;
  std::vector<int64_t> offered;
  std::thread fake([&] {
    offered.push_back(server.AwaitHello().max_batch);
    server.Send(welcome);
    server.Send(proto::Error{"the server restarted", true, true});
    offered.push_back(server.AwaitHello().max_batch);  // from the fresh socket
    server.Send(welcome);
  });
  worker::ServerLink link(config, nullptr);
  const Status joined = link.Join(37);
  const Status lost = joined.ok() ? link.Await({proto::MsgType::kModel}).status() : joined;
  const bool server_lost = link.server_lost();
  const Result<bool> rejoined = server_lost ? link.Rejoin() : Result<bool>(lost);
  fake.join();
  REQUIRE(joined.ok());
  CHECK(lost.code() == StatusCode::kUnavailable);
  CHECK(server_lost);
  REQUIRE(rejoined.ok());
  CHECK_FALSE(*rejoined);  // the same rank and shard
  CHECK(link.reconnects() == 1);
  CHECK(offered == std::vector<int64_t>{37, 37});
}

// Heartbeats the fake server receives within `window`, and nothing else.
int CountHeartbeats(FakeShard& server, milliseconds window) {
  const auto until = std::chrono::steady_clock::now() + window;
  int beats = 0;
  net::Frames frames;
  while (true) {
    const auto left =
        std::chrono::duration_cast<milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return beats;
    Result<bool> got = server.endpoint.Receive(&frames, left);
    REQUIRE(got.ok());
    if (!*got) continue;
    Result<proto::Message> message = proto::DecodeMessage(frames, 1);
    REQUIRE(message.ok());
    if (proto::TypeOf(message->body) != proto::MsgType::kHeartbeat) return -1;
    ++beats;
  }
}

TEST_CASE("a busy link heartbeats from its own thread, an idle one does not") {
  zmq::context_t context;
  FakeShard server(context);
  worker::WorkerConfig config = ConfigFor(server.endpoint.address());
  config.link.heartbeat = milliseconds(50);
  proto::Welcome welcome;
  welcome.model = "softmax";
  welcome.num_params = 6;
  std::thread fake([&] {
    server.AwaitHello();
    server.Send(welcome);
  });
  worker::ServerLink link(config, nullptr);
  const Status joined = link.Join(8);
  fake.join();
  REQUIRE(joined.ok());
  (void)CountHeartbeats(server, milliseconds(100));  // those Join's wait sent
  int busy_beats = 0;
  const auto busy_from = std::chrono::steady_clock::now();
  {
    // A step this long, on the caller's thread, sends nothing itself.
    const worker::ServerLink::BusyScope busy(&link);
    // What the server sends meanwhile is taken off the socket, its
    // heartbeats dropped, the rest kept for the caller.
    for (int i = 0; i < 500; ++i) server.Send(proto::Heartbeat{i});
    server.Send(proto::SyncNow{7});
    busy_beats = CountHeartbeats(server, milliseconds(600));
    const worker::ServerLink::BusyScope nested(&link);
  }
  // The count began after the 501 sends above (slow under a sanitizer),
  // and takes in the beats sent meanwhile: the busy time bounds them.
  const auto busy_ms =
      std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - busy_from);
  REQUIRE(link.PollControl().ok());
  CHECK(link.sync_round() == 7);
  // One sent as the scope closed may still be on its way (on a loaded
  // machine, for longer than a heartbeat); after it, silence: an idle
  // link beating every 50 ms would send some ten in this window.
  const int late_beats = CountHeartbeats(server, milliseconds(500));
  CHECK(busy_beats >= 6);  // every 50 ms for 600 ms, with room for a slow machine
  CHECK(busy_beats <= busy_ms / config.link.heartbeat + 1);  // not more often than --heartbeat-ms
  CHECK(late_beats <= 1);  // a worker stuck outside a computation falls silent
  CHECK(link.busy_heartbeats() == busy_beats + late_beats);
}

// A fake server, and a worker's config to train against it on a small
// libsvm file that the fixture writes and removes.
struct DataServer {
  DataServer()
      : data("/tmp/dmlps-worker-link-test-" + std::to_string(getpid()) + ".svm"),
        server(context),
        config(ConfigFor(server.endpoint.address())) {
    std::ofstream out(data);
    out << "0 1:0.5 2:1\n1 1:1 2:0.25\n0 1:0.75 2:1\n1 1:1 2:0.5\n";
    config.data = "libsvm:" + data;
  }
  ~DataServer() { std::remove(data.c_str()); }

  const std::string data;
  zmq::context_t context;
  FakeShard server;
  worker::WorkerConfig config;
};

// The Welcome for DataServer's data: softmax over 2 features and 2 classes.
proto::Welcome SoftmaxWelcome(const std::string& mode, int64_t batch) {
  proto::Welcome welcome;
  welcome.model = "softmax";
  welcome.input_dim = 2;
  welcome.classes = 2;
  welcome.num_params = 6;
  welcome.batch = batch;
  welcome.mode = mode;
  return welcome;
}

TEST_CASE_FIXTURE(DataServer,
                  "a worker refuses steps of a kind it does not know, or without their sizes") {
  struct Case {
    std::string mode;
    std::string error;
  };
  for (const Case& c : {Case{"bogus", "the server asks for steps of an unknown kind 'bogus'"},
                        Case{"chunked", "chunked steps need a chunk size"},
                        Case{"token", "token steps need a token size"}}) {
    CAPTURE(c.mode);
    std::string farewell;
    std::thread fake([&] {
      server.AwaitHello();
      server.Send(SoftmaxWelcome(c.mode, 2));
      // The worker says why it leaves.
      net::Frames frames;
      while (farewell.empty() && *server.endpoint.Receive(&frames, milliseconds(5000))) {
        Result<proto::Message> message = proto::DecodeMessage(frames, 1);
        if (auto* error = message.ok() ? std::get_if<proto::Error>(&message->body) : nullptr) {
          farewell = error->message;
        }
      }
    });
    Result<worker::WorkerReport> report = worker::RunWorker(config, nullptr);
    fake.join();
    CHECK(report.status().code() == StatusCode::kProtocol);
    CHECK(report.status().message() == c.error);
    CHECK(farewell == c.error);
  }
}

// The compute thread of the overlapping steps takes its batch from the
// communication thread with each model it downloads, never from under it.
// Under ThreadSanitizer (share/dmlps/check-hardening.sh) a batch read where
// a download may change it shows as a data race.
TEST_CASE_FIXTURE(DataServer, "overlapping steps take the batch each download sets") {
  // Batch 1 from the Welcome; the answers to the first pushes say download,
  // and each model sets the next of these batches; no download after them.
  const std::vector<int64_t> batches = {2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3};
  constexpr size_t kAfter = 6;  // pushes after the last download
  std::vector<proto::Push> pushes;
  std::vector<int64_t> expected;  // the batch each push should report: the last one set
  std::thread fake([&] {
    server.AwaitHello();
    proto::Welcome welcome = SoftmaxWelcome("local-overlap", 1);
    welcome.lr = 0.1;
    server.Send(welcome);
    REQUIRE(std::holds_alternative<proto::Pull>(server.Receive().body));
    server.SendModel(1, std::vector<float>(6, 0.f));
    int64_t batch = 1;
    while (pushes.size() < batches.size() + kAfter) {
      proto::Message message = server.Receive();
      REQUIRE(std::holds_alternative<proto::Push>(message.body));
      pushes.push_back(std::get<proto::Push>(message.body));
      expected.push_back(batch);
      const bool download = pushes.size() <= batches.size();
      server.Send(proto::Continue{download, -1, 0});
      if (download) {
        REQUIRE(std::holds_alternative<proto::Pull>(server.Receive().body));
        // The compute thread steps on meanwhile, as it does while a real
        // server's model is on its way.
        std::this_thread::sleep_for(milliseconds(20));
        batch = batches[pushes.size() - 1];
        server.SendModel(static_cast<int64_t>(pushes.size()) + 1, std::vector<float>(6, 0.5f),
                         batch);
      }
    }
    server.Send(proto::Stop{"enough"});
  });
  Result<worker::WorkerReport> report = worker::RunWorker(config, nullptr);
  fake.join();
  REQUIRE(report.ok());
  CHECK(report->stop_reason == "enough");
  REQUIRE(pushes.size() == batches.size() + kAfter);
  for (size_t i = 0; i < pushes.size(); ++i) {
    CAPTURE(i);
    CHECK(pushes[i].batch == expected[i]);
    // The first two pushes after the last download may still hold a step
    // begun before its model was adopted; the later ones only steps of 3.
    if (i > batches.size() + 1) CHECK(pushes[i].samples % 3 == 0);
  }
}

}  // namespace
}  // namespace dmlps
