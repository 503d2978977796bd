// An attacking peer for the CLI tests, speaking ZeroMQ directly so that it
// can do what a real worker never does. Modes:
//   squat ADDR N    connects N DEALERs whose routing ids are the ids a
//                   ROUTER seeded as the C library's rand() is by default
//                   would hand out (a zero byte and a counter), then one
//                   with no id of its own; holds them all for 3 s. A
//                   server whose ids are predictable aborts (libzmq asserts
//                   when an id it assigns is taken); exits 0 either way.
//   stream ADDR SECONDS
//                   sends 256 KiB frames, each flagged "more", for SECONDS
//                   (a multipart message that never ends); prints how many
//                   bytes it got out; exits 0.
//   noread ADDR SECONDS
//                   joins as a worker, then pulls and pushes (a zero
//                   gradient, which still makes a new model) for SECONDS
//                   without ever reading a reply; prints how many Pulls it
//                   sent.
#include <zmq.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "dmlps/proto/codec.h"

namespace {

namespace proto = dmlps::proto;
using Clock = std::chrono::steady_clock;

int Fail(const std::string& why) {
  std::fprintf(stderr, "dmlps-attack-peer: error: %s\n", why.c_str());
  return 1;
}

void* Dealer(void* context, const std::string& id) {
  void* socket = zmq_socket(context, ZMQ_DEALER);
  const int linger = 0;
  zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof linger);
  if (!id.empty()) zmq_setsockopt(socket, ZMQ_ROUTING_ID, id.data(), id.size());
  return socket;
}

// The ids a ROUTER numbers its anonymous peers with: a zero byte, then a
// big-endian counter that starts at a value drawn from rand().
std::string AutoId(uint32_t counter) {
  const char id[5] = {0, static_cast<char>(counter >> 24), static_cast<char>(counter >> 16),
                      static_cast<char>(counter >> 8), static_cast<char>(counter)};
  return std::string(id, sizeof id);
}

int Squat(void* context, const std::string& address, int n) {
  // This process's rand() is unseeded, as libzmq's is in a process that
  // never seeds it: the first few counters a ROUTER could start at.
  std::vector<uint32_t> starts;
  for (int i = 0; i < 4; ++i) {
    const auto low = static_cast<uint32_t>(std::rand());
    const auto high = static_cast<uint32_t>(std::rand()) << 31;
    starts.push_back(high | low);
  }
  std::vector<void*> sockets;
  for (int i = 0; i < n; ++i) {
    const uint32_t counter = starts[i % starts.size()] + static_cast<uint32_t>(i / starts.size());
    void* socket = Dealer(context, AutoId(counter));
    if (zmq_connect(socket, address.c_str()) != 0) return Fail("cannot connect");
    sockets.push_back(socket);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  void* anonymous = Dealer(context, "");
  if (zmq_connect(anonymous, address.c_str()) != 0) return Fail("cannot connect");
  sockets.push_back(anonymous);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  for (void* s : sockets) zmq_close(s);
  std::printf("squatted %d ids\n", n);
  return 0;
}

int Stream(void* context, const std::string& address, int seconds) {
  void* socket = Dealer(context, "");
  const int hwm = 0;
  zmq_setsockopt(socket, ZMQ_SNDHWM, &hwm, sizeof hwm);
  if (zmq_connect(socket, address.c_str()) != 0) return Fail("cannot connect");
  std::vector<char> frame(256 * 1024, 'x');
  int64_t sent = 0;
  const auto end = Clock::now() + std::chrono::seconds(seconds);
  while (Clock::now() < end) {
    if (zmq_send(socket, frame.data(), frame.size(), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    sent += static_cast<int64_t>(frame.size());
    // Keep libzmq's own queue short: what counts is what reaches the server.
    if (sent % (64 << 20) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::printf("queued %lld bytes of one unfinished message\n", static_cast<long long>(sent));
  zmq_close(socket);
  return 0;
}

bool SendBody(void* socket, const proto::Body& body) {
  zmq::message_t header = proto::EncodeHeader(body);
  return zmq_send(socket, header.data(), header.size(), ZMQ_DONTWAIT) >= 0;
}

int NoRead(void* context, const std::string& address, int seconds) {
  void* socket = Dealer(context, "");
  if (zmq_connect(socket, address.c_str()) != 0) return Fail("cannot connect");
  // Small kernel buffers, so that the replies pile up at the server.
  const int rcvbuf = 4096;
  zmq_setsockopt(socket, ZMQ_RCVBUF, &rcvbuf, sizeof rcvbuf);
  if (!SendBody(socket, proto::Hello{-1, "attack-peer", 0, 1, 0, -1, 0, {}})) {
    return Fail("cannot send Hello");
  }
  // The Welcome is the one message it reads: it tells the model's size.
  zmq_pollitem_t item = {socket, 0, ZMQ_POLLIN, 0};
  if (zmq_poll(&item, 1, 10000) != 1) return Fail("no Welcome within 10 s");
  std::vector<zmq::message_t> frames;
  int more = 1;
  while (more != 0) {
    frames.emplace_back();
    if (zmq_msg_recv(frames.back().handle(), socket, 0) < 0) return Fail("cannot receive");
    more = zmq_msg_more(frames.back().handle());
  }
  dmlps::Result<proto::Message> welcome = proto::DecodeMessage(frames, 0);
  if (!welcome.ok() || !std::holds_alternative<proto::Welcome>(welcome->body)) {
    return Fail("the server did not welcome this peer");
  }
  const int64_t n = std::get<proto::Welcome>(welcome->body).num_params;
  const std::vector<float> gradient(static_cast<size_t>(n), 0.0f);
  int64_t pulls = 0;
  const auto end = Clock::now() + std::chrono::seconds(seconds);
  for (int64_t clock = 0; Clock::now() < end; ++clock) {
    // Each pull earns a model; each push (small but valid) changes it, so
    // that no two replies share their payload.
    if (SendBody(socket, proto::Pull{clock})) ++pulls;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    proto::Push push;
    push.clock = clock;
    push.base_version = clock;
    push.batch = 1;
    push.samples = 1;
    push.num_params = n;
    zmq::message_t header = proto::EncodeHeader(push);
    (void)zmq_send(socket, header.data(), header.size(), ZMQ_SNDMORE);
    (void)zmq_send(socket, gradient.data(), gradient.size() * sizeof(float), 0);
  }
  std::printf("sent %lld pulls, read no reply\n", static_cast<long long>(pulls));
  zmq_close(socket);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: dmlps-attack-peer squat|stream|noread ADDR N\n");
    return 64;
  }
  void* context = zmq_ctx_new();
  const std::string mode = argv[1];
  const int n = std::atoi(argv[3]);
  int rc = 64;
  if (mode == "squat") rc = Squat(context, argv[2], n);
  if (mode == "stream") rc = Stream(context, argv[2], n);
  if (mode == "noread") rc = NoRead(context, argv[2], n);
  zmq_ctx_term(context);
  return rc;
}
