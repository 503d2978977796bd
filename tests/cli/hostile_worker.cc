// A worker that joins properly and then pushes hostile gradients, for the
// CLI tests.
//   dmlps-hostile-worker MODE ADDR SECONDS
// Modes:
//   poison   the first push carries the batch's samples and every value
//            1e37, whose weighted sum overflows a float; the second claims
//            a million samples; every later push is all zeros.
//   garbage  every push carries the batch's samples and values drawn
//            uniformly from [-1000, 1000): finite, but nothing like a
//            gradient.
// Pushes until the server says Stop (exit 0) or SECONDS pass (exit 1), then
// prints how many pushes it made and how many the server refused.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"

namespace {

using dmlps::net::Endpoint;
using dmlps::net::Frames;
namespace proto = dmlps::proto;
using Clock = std::chrono::steady_clock;

int Fail(const std::string& why) {
  std::fprintf(stderr, "dmlps-hostile-worker: error: %s\n", why.c_str());
  return 1;
}

// The next message other than a heartbeat or a model's chunk; false once
// `deadline` passes or on garbage.
bool Next(Endpoint& endpoint, Clock::time_point deadline, proto::Message* out) {
  Frames frames;
  while (Clock::now() < deadline) {
    dmlps::Result<bool> got = endpoint.Receive(&frames, std::chrono::milliseconds(200));
    if (!got.ok()) return false;
    if (!*got) continue;
    dmlps::Result<proto::Message> message = proto::DecodeMessage(frames, 0);
    if (!message.ok()) return false;
    const proto::MsgType type = proto::TypeOf(message->body);
    if (type == proto::MsgType::kHeartbeat || type == proto::MsgType::kChunk) continue;
    *out = std::move(message).value();
    return true;
  }
  return false;
}

int Run(Endpoint& endpoint, const std::string& mode, Clock::time_point deadline) {
  if (!endpoint.SendMessage(nullptr, proto::Hello{-1, "hostile", 0, 1, 0, -1, 0, {}}).ok()) {
    return Fail("cannot send Hello");
  }
  proto::Message reply;
  if (!Next(endpoint, deadline, &reply)) return Fail("no Welcome");
  auto* welcome = std::get_if<proto::Welcome>(&reply.body);
  if (welcome == nullptr) return Fail("not welcomed");
  const int64_t n = welcome->num_params;
  const int64_t batch = welcome->batch;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> garbage(-1000.f, 1000.f);
  int64_t refused = 0;
  for (int64_t clock = 0;; ++clock) {
    if (!endpoint.SendMessage(nullptr, proto::Pull{clock}).ok()) return Fail("cannot pull");
    while (true) {
      if (!Next(endpoint, deadline, &reply)) return Fail("no model from the server in time");
      auto* error = std::get_if<proto::Error>(&reply.body);
      if (error == nullptr) break;
      ++refused;
      if (error->fatal) return Fail("refused for good: " + error->message);
    }
    if (std::holds_alternative<proto::Stop>(reply.body)) {
      std::printf("stopped after %lld pushes, %lld refused\n", static_cast<long long>(clock),
                  static_cast<long long>(refused));
      return 0;
    }
    auto* model = std::get_if<proto::Model>(&reply.body);
    if (model == nullptr) return Fail("expected a model");
    proto::Push push;
    push.clock = clock;
    push.base_version = model->version;
    push.batch = batch;
    push.samples = batch;
    push.num_params = n;
    push.loss = 1;
    push.compute_us = 1000;
    std::vector<float> values(static_cast<size_t>(n), 0.f);
    if (mode == "poison" && clock == 0) {
      values.assign(values.size(), 1e37f);
    } else if (mode == "poison" && clock == 1) {
      push.samples = 1000000;
      values.assign(values.size(), 1.f);
    } else if (mode == "garbage") {
      for (float& v : values) v = garbage(rng);
    }
    Frames payload;
    payload.emplace_back(values.data(), values.size() * sizeof(float));
    if (!endpoint.SendMessage(nullptr, push, std::move(payload)).ok()) return Fail("cannot push");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: dmlps-hostile-worker poison|garbage ADDR SECONDS\n");
    return 64;
  }
  const std::string mode = argv[1];
  if (mode != "poison" && mode != "garbage") return Fail("unknown mode " + mode);
  zmq::context_t context;
  dmlps::Result<Endpoint> endpoint = Endpoint::Connect(context, argv[2]);
  if (!endpoint.ok()) return Fail(endpoint.status().message());
  return Run(*endpoint, mode, Clock::now() + std::chrono::seconds(std::atoll(argv[3])));
}
