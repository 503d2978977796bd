// The worker's side of the protocol against fake servers on real sockets:
// the modes a Welcome names, a ServerLink joining sharded servers and
// assembling a model from their slices, and a worker refusing steps it
// cannot run.
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
  for (sync::WorkerMode mode : {sync::WorkerMode::kSync, sync::WorkerMode::kChunked,
                                sync::WorkerMode::kLocal, sync::WorkerMode::kLocalOverlap,
                                sync::WorkerMode::kToken}) {
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

  // Waits for the worker's Hello and keeps its identity for the answers.
  proto::Hello AwaitHello() {
    net::Frames frames;
    while (true) {
      REQUIRE(*endpoint.Receive(&frames, milliseconds(5000)));
      Result<proto::Message> message = proto::DecodeMessage(frames, 1);
      REQUIRE(message.ok());
      if (auto* hello = std::get_if<proto::Hello>(&message->body)) {
        worker.copy(frames[0]);
        return *hello;
      }
    }
  }
  void Send(const proto::Body& body) { REQUIRE(endpoint.SendMessage(&worker, body).ok()); }
  // Sends `values` as a Model of `version`, streamed in chunks of two floats.
  void SendModel(int64_t version, std::vector<float> values) {
    proto::Model model;
    model.version = version;
    model.num_params = static_cast<int64_t>(values.size());
    auto payload = std::make_shared<const std::vector<float>>(std::move(values));
    REQUIRE(endpoint.SendWithPayload(&worker, model, payload, 2 * sizeof(float)).ok());
  }

  net::Endpoint endpoint;
  zmq::message_t worker;
};

worker::WorkerConfig ConfigFor(const std::string& server) {
  worker::WorkerConfig config;
  config.server = server;
  config.connect_timeout = milliseconds(5000);
  config.server_timeout = milliseconds(5000);
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
    Result<proto::Message> reply = joined.ok() ? link.Await({proto::MsgType::kModel})
                                               : Result<proto::Message>(joined);
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
  config.connect_timeout = milliseconds(200);
  worker::ServerLink link(config, nullptr);
  const Status joined = link.Join(0);
  CHECK(joined.code() == StatusCode::kUnavailable);
  CHECK(joined.message() == "no server answered at " + config.server + " within 0.2 s");
  CHECK(link.rank() == -1);
}

TEST_CASE("a worker refuses steps of a kind it does not know, or without their sizes") {
  const std::string data = "/tmp/dmlps-worker-link-test-" + std::to_string(getpid()) + ".svm";
  {
    std::ofstream out(data);
    out << "0 1:0.5 2:1\n1 1:1 2:0.25\n0 1:0.75 2:1\n1 1:1 2:0.5\n";
  }
  zmq::context_t context;
  FakeShard server(context);
  worker::WorkerConfig config = ConfigFor(server.endpoint.address());
  config.data = "libsvm:" + data;
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
      proto::Welcome welcome;
      welcome.model = "softmax";
      welcome.input_dim = 2;
      welcome.classes = 2;
      welcome.num_params = 6;
      welcome.batch = 2;
      welcome.mode = c.mode;
      server.Send(welcome);
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
  std::remove(data.c_str());
}

}  // namespace
}  // namespace dmlps
