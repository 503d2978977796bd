// An attacking peer for the CLI tests, speaking ZeroMQ directly so that it
// can do what a real worker never does. Modes:
//   squat ADDR N    connects N DEALERs whose routing ids are the ids a
//                   ROUTER seeded as the C library's rand() is by default
//                   would hand out (a zero byte and a counter), then one
//                   with no id of its own; holds them all for 3 s. A
//                   server whose ids are predictable aborts (libzmq asserts
//                   when an id it assigns is taken); exits 0 either way.
//   stream ADDR SECONDS
//                   speaks ZMTP over a raw TCP connection to send 256 KiB
//                   frames, each flagged "more", for SECONDS (a multipart
//                   message that never ends), connecting again when the
//                   server closes the connection (never blocking past
//                   SECONDS); prints how many bytes it sent over how many
//                   connections; exits 0.
//   idle ADDR N SECONDS
//                   opens N connections, 20 ms apart, that never send a byte beyond the
//                   handshake nor reconnect once closed, and holds them
//                   for SECONDS; prints how many were still open at the
//                   end (a send that fails tells a closed one); exits 0.
//   churn ADDR N SECONDS
//                   for SECONDS, holds N connections that never send a
//                   byte beyond the handshake, each closed and opened
//                   again every 50 ms, one after the other (a flood that
//                   reconnects faster than a server's grace for joining);
//                   ADDR may name a source address (tcp://SRC:0;HOST:PORT);
//                   prints how many connections it opened; exits 0.
//   claim ADDR RANK  says Hello to a server shard beyond shard 0 as worker
//                   RANK, without the ticket shard 0 gives the workers it
//                   admits, and waits up to 15 s for an answer; prints
//                   "welcomed", "refused: WHY" or "no answer"; exits 0.
//   noread ADDR SECONDS
//                   joins as a worker, then pulls and pushes (a zero
//                   gradient, which still makes a new model) for SECONDS
//                   without ever reading a reply; prints how many Pulls it
//                   sent.
//   noread-external ADDR SECONDS MODEL
//                   as noread, to a server of --model external, but only
//                   pulls (the workers training meanwhile make each reply a
//                   new model), so that what piles up is the server's send
//                   queue alone: its Hello announces the layout of the
//                   built-in MODEL for Fashion-MNIST (784 inputs, 10
//                   classes), without values, as a worker without the job
//                   secret does.
//   noread-shard ADDR SECONDS
//                   joins server shard 0 at ADDR as a worker and server
//                   shard 1 with the ticket shard 0 gave it, then pulls and
//                   pushes (zero gradients, a slice to each shard) for
//                   SECONDS, reading shard 0's replies but never shard 1's;
//                   prints how many Pulls it sent.
//   evaluator ADDR SECONDS
//                   says Hello as an evaluator without the job secret and,
//                   if welcomed, answers every snapshot with accuracy 1.0
//                   for SECONDS; prints "welcomed" or "refused: WHY" (or
//                   "no answer"); exits 0.
//   hellos ADDR SECONDS
//                   from one connection, says Hello as fast as it can for
//                   SECONDS, each announcing a layout of 64 tensors with
//                   200-character names (and no secret); prints how many
//                   it sent; exits 0.
//   forge ADDR N    says Hello to ADDR as a worker whose host is TEXT below
//                   (a newline, then what looks like a server's log line),
//                   then as "attack-peer", N times each; every Hello that
//                   is welcomed reports TEXT as an Error, then gives up
//                   with it (a fatal Error), which frees its rank. Prints
//                   one line per Hello, "welcomed" or "refused: WHY" or
//                   "no answer", each on a line of its own; exits 0.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "dmlps/model/layout.h"
#include "dmlps/model/model.h"
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

// An anonymous DEALER connected to `address`; null when it cannot connect.
void* Connected(void* context, const std::string& address) {
  void* socket = Dealer(context, "");
  if (zmq_connect(socket, address.c_str()) == 0) return socket;
  zmq_close(socket);
  return nullptr;
}

// The Hello of this peer asking for rank `rank` (-1: any).
proto::Hello PeerHello(int64_t rank = -1) { return {rank, "attack-peer", 0, 1, 0, -1, 0, {}}; }

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
  void* anonymous = Connected(context, address);
  if (anonymous == nullptr) return Fail("cannot connect");
  sockets.push_back(anonymous);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  for (void* s : sockets) zmq_close(s);
  std::printf("squatted %d ids\n", n);
  return 0;
}

// A TCP connection to "tcp://HOST:PORT" that has said the ZMTP 3.0 greeting
// and READY of a DEALER with the NULL mechanism, written raw: libzmq itself
// sends no frame of a message until its last. -1 when it cannot connect.
int ZmtpConnect(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (address.rfind("tcp://", 0) != 0 || colon == std::string::npos) return -1;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(std::atoi(address.c_str() + colon + 1)));
  if (inet_pton(AF_INET, address.substr(6, colon - 6).c_str(), &to.sin_addr) != 1) return -1;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  std::string hello(64, '\0');
  hello[0] = '\xff';
  hello[9] = '\x7f';
  hello[10] = 3;  // version 3.0
  std::memcpy(&hello[12], "NULL", 4);
  const std::string ready = std::string("\x05READY\x0bSocket-Type\0\0\0\x06", 22) + "DEALER";
  hello += std::string{'\x04', static_cast<char>(ready.size())} + ready;
  if (send(fd, hello.data(), hello.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(hello.size())) {
    close(fd);
    return -1;
  }
  return fd;
}

// True once the server has closed `fd`: its greeting read and discarded,
// an end of stream or an error seen. Never blocks.
bool ClosedByServer(int fd) {
  char sink[4096];
  while (true) {
    const ssize_t n = recv(fd, sink, sizeof sink, MSG_DONTWAIT);
    if (n > 0) continue;
    return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }
}

int Stream(const std::string& address, int seconds) {
  std::string frame(9 + (256 << 10), 'x');
  frame[0] = 3;  // MORE | LONG, then the size as 8 big-endian bytes
  for (int i = 0; i < 8; ++i)
    frame[1 + i] = static_cast<char>((int64_t{256} << 10) >> (56 - 8 * i));
  int64_t sent = 0;
  int64_t connections = 0;
  int fd = -1;
  size_t at = 0;  // bytes of `frame` already on the current connection
  const auto end = Clock::now() + std::chrono::seconds(seconds);
  while (Clock::now() < end) {
    if (fd < 0) {
      fd = ZmtpConnect(address);
      if (fd < 0) return Fail("cannot connect to " + address);
      ++connections;
      at = 0;
    }
    // A server that shut the connection down may leave its window closed
    // until the kernel gives up on it (a minute): wait for room in short
    // slices, so that the deadline holds, and notice its end of stream.
    pollfd ready{fd, POLLOUT, 0};
    const int polled = poll(&ready, 1, 100);
    const ssize_t n =
        polled > 0 && (ready.revents & POLLOUT) != 0
            ? send(fd, frame.data() + at, frame.size() - at, MSG_NOSIGNAL | MSG_DONTWAIT)
            : 0;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      close(fd);  // the server closed it: start another message on a new one
      fd = -1;
      continue;
    }
    if (n <= 0) {
      if (ClosedByServer(fd)) {
        close(fd);
        fd = -1;
      }
      continue;
    }
    sent += n;
    at += static_cast<size_t>(n);
    if (at < frame.size()) continue;
    at = 0;
    // At most about 128 MB/s, so that a server without a bound grows
    // visibly without exhausting the machine running the test.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (fd >= 0) close(fd);
  std::printf("sent %lld bytes of unfinished messages over %lld connections\n",
              static_cast<long long>(sent), static_cast<long long>(connections));
  return 0;
}

int Idle(void* context, const std::string& address, int n, int seconds) {
  std::vector<void*> sockets;
  const int never = -1;
  for (int i = 0; i < n; ++i) {
    void* socket = Dealer(context, "");
    zmq_setsockopt(socket, ZMQ_RECONNECT_IVL, &never, sizeof never);
    if (zmq_connect(socket, address.c_str()) != 0) return Fail("cannot connect");
    sockets.push_back(socket);
    // One after the other, so that the first ones in are judged alone.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  int open = 0;
  for (void* s : sockets) {
    // With no connection left, a DEALER has nowhere to queue it.
    if (zmq_send(s, "", 0, ZMQ_DONTWAIT) == 0) ++open;
    zmq_close(s);
  }
  std::printf("%d of %d idle connections open at the end\n", open, n);
  return 0;
}

int Churn(void* context, const std::string& address, int n, int seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  // Staggered: one of the N is replaced every 50/N ms, so that the server
  // sees N connections at every moment, none older than 50 ms.
  const auto every = std::chrono::microseconds(50000 / std::max(n, 1));
  std::vector<void*> sockets(static_cast<size_t>(n), nullptr);
  const int never = -1;  // the rotation reconnects, not ZeroMQ
  int64_t opened = 0;
  for (size_t i = 0; std::chrono::steady_clock::now() < until; i = (i + 1) % sockets.size()) {
    std::this_thread::sleep_for(every);
    if (sockets[i] != nullptr) zmq_close(sockets[i]);
    // Closed sockets are freed in the background: none may be at hand yet.
    sockets[i] = Dealer(context, "");
    if (sockets[i] == nullptr) continue;
    zmq_setsockopt(sockets[i], ZMQ_RECONNECT_IVL, &never, sizeof never);
    if (zmq_connect(sockets[i], address.c_str()) != 0) {
      return Fail(std::string("cannot connect: ") + zmq_strerror(zmq_errno()));
    }
    ++opened;
  }
  for (void* socket : sockets) {
    if (socket != nullptr) zmq_close(socket);
  }
  std::printf("%lld connections\n", static_cast<long long>(opened));
  return 0;
}

bool SendBody(void* socket, const proto::Body& body) {
  zmq::message_t header = proto::EncodeHeader(body);
  return zmq_send(socket, header.data(), header.size(), ZMQ_DONTWAIT) >= 0;
}

// Receives one whole message within `ms`; false when none came.
bool ReceiveFrames(void* socket, int ms, std::vector<zmq::message_t>* frames) {
  zmq_pollitem_t item = {socket, 0, ZMQ_POLLIN, 0};
  if (zmq_poll(&item, 1, ms) != 1) return false;
  frames->clear();
  int more = 1;
  while (more != 0) {
    frames->emplace_back();
    if (zmq_msg_recv(frames->back().handle(), socket, 0) < 0) return false;
    more = zmq_msg_more(frames->back().handle());
  }
  return true;
}

int Claim(void* context, const std::string& address, int rank) {
  void* socket = Connected(context, address);
  if (socket == nullptr) return Fail("cannot connect");
  if (!SendBody(socket, PeerHello(rank))) {
    return Fail("cannot send Hello");
  }
  std::string outcome = "no answer";
  const auto end = Clock::now() + std::chrono::seconds(15);
  std::vector<zmq::message_t> frames;
  while (Clock::now() < end && outcome == "no answer") {
    if (!ReceiveFrames(socket, 100, &frames)) continue;
    dmlps::Result<proto::Message> message = proto::DecodeMessage(frames, 0);
    if (!message.ok()) continue;
    if (std::holds_alternative<proto::Welcome>(message->body)) outcome = "welcomed";
    if (const auto* error = std::get_if<proto::Error>(&message->body)) {
      outcome = "refused: " + error->message;
    }
  }
  std::printf("%s\n", outcome.c_str());
  zmq_close(socket);
  return 0;
}

// Sends a Push of `count` zero floats whole, in one message.
void SendZeroPush(void* socket, int64_t clock, int64_t count) {
  proto::Push push;
  push.clock = clock;
  push.base_version = clock;
  push.batch = 1;
  push.samples = 1;
  push.num_params = count;
  const std::vector<float> gradient(static_cast<size_t>(count), 0.0f);
  zmq::message_t header = proto::EncodeHeader(push);
  // Never blocks: a server that closed the connection (it could not keep
  // up) leaves the socket with nowhere to queue until it reconnects.
  (void)zmq_send(socket, header.data(), header.size(), ZMQ_SNDMORE | ZMQ_DONTWAIT);
  (void)zmq_send(socket, gradient.data(), gradient.size() * sizeof(float), ZMQ_DONTWAIT);
}

// Joins with `hello`, then pulls (and pushes, with `push`) for `seconds`
// without reading.
int NoRead(void* context, const std::string& address, int seconds, const proto::Hello& hello,
           bool push) {
  void* socket = Connected(context, address);
  if (socket == nullptr) return Fail("cannot connect");
  // Small kernel buffers, so that the replies pile up at the server.
  const int rcvbuf = 4096;
  zmq_setsockopt(socket, ZMQ_RCVBUF, &rcvbuf, sizeof rcvbuf);
  if (!SendBody(socket, hello)) return Fail("cannot send Hello");
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
  int64_t pulls = 0;
  const auto end = Clock::now() + std::chrono::seconds(seconds);
  for (int64_t clock = 0; Clock::now() < end; ++clock) {
    // Each pull earns a model; each push (small but valid) changes it, so
    // that no two replies share their payload (without pushes, the
    // workers' pushes change it).
    // Without pushes its clock stays 0: every pull is for clock 0.
    if (SendBody(socket, proto::Pull{push ? clock : 0})) ++pulls;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (push) SendZeroPush(socket, clock, n);
  }
  std::printf("sent %lld pulls, read no reply\n", static_cast<long long>(pulls));
  zmq_close(socket);
  return 0;
}

// noread, announcing the layout of the built-in `model` for Fashion-MNIST.
int NoReadExternal(void* context, const std::string& address, int seconds,
                   const std::string& model) {
  dmlps::Result<dmlps::model::ModelSpec> spec = dmlps::model::ParseModelSpec(model, 784, 10);
  if (!spec.ok()) return Fail(spec.status().message());
  proto::Hello hello;
  hello.host = "attack-peer";
  hello.layout = dmlps::model::LayoutOf(*spec);
  return NoRead(context, address, seconds, hello, false);
}

// Awaits a Welcome on `socket` for up to 10 s.
dmlps::Result<proto::Welcome> AwaitWelcome(void* socket) {
  std::vector<zmq::message_t> frames;
  const auto end = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < end) {
    if (!ReceiveFrames(socket, 100, &frames)) continue;
    dmlps::Result<proto::Message> message = proto::DecodeMessage(frames, 0);
    if (!message.ok()) return message.status();
    if (auto* welcome = std::get_if<proto::Welcome>(&message->body)) return *welcome;
    if (auto* error = std::get_if<proto::Error>(&message->body)) {
      return dmlps::Status::Unavailable("refused: " + error->message);
    }
  }
  return dmlps::Status::Unavailable("no Welcome within 10 s");
}

int NoReadShard(void* context, const std::string& address, int seconds) {
  void* shard0 = Connected(context, address);
  if (shard0 == nullptr) return Fail("cannot connect");
  proto::Hello hello;
  hello.host = "attack-peer";
  if (!SendBody(shard0, hello)) return Fail("cannot send Hello");
  dmlps::Result<proto::Welcome> welcome = AwaitWelcome(shard0);
  if (!welcome.ok()) return Fail("shard 0: " + welcome.status().message());
  if (welcome->servers.size() < 2 || welcome->bounds.size() < 3) return Fail("not sharded");
  void* shard1 = Dealer(context, "");
  // Small kernel buffers, so that the replies pile up at shard 1.
  const int rcvbuf = 4096;
  zmq_setsockopt(shard1, ZMQ_RCVBUF, &rcvbuf, sizeof rcvbuf);
  if (zmq_connect(shard1, welcome->servers[1].c_str()) != 0) return Fail("cannot connect");
  hello.rank = welcome->rank;
  hello.ticket = welcome->ticket;
  if (!SendBody(shard1, hello)) return Fail("cannot send Hello to shard 1");
  dmlps::Result<proto::Welcome> welcome1 = AwaitWelcome(shard1);
  if (!welcome1.ok()) return Fail("shard 1: " + welcome1.status().message());
  const int64_t first = welcome->bounds[1];
  const int64_t second = welcome->bounds[2] - first;
  int64_t pulls = 0;
  std::vector<zmq::message_t> frames;
  const auto end = Clock::now() + std::chrono::seconds(seconds);
  for (int64_t clock = 0; Clock::now() < end; ++clock) {
    if (SendBody(shard0, proto::Pull{clock})) ++pulls;
    // Shard 0's replies are read, so that shard 0 keeps this peer.
    const auto until = Clock::now() + std::chrono::milliseconds(5);
    while (Clock::now() < until) (void)ReceiveFrames(shard0, 1, &frames);
    SendZeroPush(shard1, clock, second);
    SendZeroPush(shard0, clock, first);
  }
  std::printf("sent %lld pulls, read no reply of shard 1\n", static_cast<long long>(pulls));
  zmq_close(shard1);
  zmq_close(shard0);
  return 0;
}

int FakeEvaluator(void* context, const std::string& address, int seconds) {
  void* socket = Connected(context, address);
  if (socket == nullptr) return Fail("cannot connect");
  proto::Hello hello = PeerHello();
  hello.evaluator = true;
  if (!SendBody(socket, hello)) return Fail("cannot send Hello");
  std::string outcome = "no answer";
  const auto end = Clock::now() + std::chrono::seconds(seconds);
  std::vector<zmq::message_t> frames;
  while (Clock::now() < end && outcome.rfind("refused", 0) != 0) {
    if (!ReceiveFrames(socket, 100, &frames)) continue;
    dmlps::Result<proto::Message> message = proto::DecodeMessage(frames, 0);
    if (!message.ok()) continue;
    if (std::holds_alternative<proto::Welcome>(message->body)) outcome = "welcomed";
    if (const auto* error = std::get_if<proto::Error>(&message->body)) {
      outcome = "refused: " + error->message;
    }
    if (const auto* evaluate = std::get_if<proto::Evaluate>(&message->body)) {
      (void)SendBody(socket, proto::Evaluation{evaluate->id, 1.0, 0.0, 1});
    }
  }
  std::printf("%s\n", outcome.c_str());
  zmq_close(socket);
  return 0;
}

int HelloFlood(void* context, const std::string& address, int seconds) {
  void* socket = Connected(context, address);
  if (socket == nullptr) return Fail("cannot connect");
  proto::Hello hello = PeerHello();
  for (int t = 0; t < 64; ++t) {
    hello.layout.push_back({std::to_string(t) + std::string(200, 'x'), {4, 4}, false});
  }
  const zmq::message_t encoded = proto::EncodeHeader(hello);
  int64_t sent = 0;
  const auto end = Clock::now() + std::chrono::seconds(seconds);
  std::vector<zmq::message_t> frames;
  while (Clock::now() < end) {
    if (zmq_send(socket, encoded.data(), encoded.size(), ZMQ_DONTWAIT) >= 0) {
      ++sent;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    while (ReceiveFrames(socket, 0, &frames)) {
    }
  }
  std::printf("sent %lld Hellos\n", static_cast<long long>(sent));
  zmq_close(socket);
  return 0;
}

// What `forge` says where a peer's text is logged: a line of its own that
// a reader of the server's log would take for the server's.
constexpr char kForged[] = "x\n12:00:00.000 dmlps-server: info: reached accuracy 1.0";

// One Hello as a worker from host `host`; when welcomed, the peer reports
// kForged and gives up with it. Prints the outcome on a line of its own.
void ForgeOnce(void* context, const std::string& address, const std::string& host) {
  void* socket = Dealer(context, "");
  std::string outcome = "cannot connect";
  if (zmq_connect(socket, address.c_str()) == 0) {
    proto::Hello hello;
    hello.host = host;
    hello.pid = 1;
    outcome = "cannot send Hello";
    if (SendBody(socket, hello)) {
      dmlps::Result<proto::Welcome> welcome = AwaitWelcome(socket);
      outcome = welcome.ok() ? "welcomed" : welcome.status().message();
    }
    if (outcome == "welcomed") {
      SendBody(socket, proto::Error{kForged, false, false});
      SendBody(socket, proto::Error{kForged, true, false});
      // Time to be read before the socket (which lingers 0) goes.
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  }
  // The server's answer quotes what it refused: kept on one line here.
  std::replace(outcome.begin(), outcome.end(), '\n', ' ');
  std::printf("%s\n", outcome.c_str());
  zmq_close(socket);
}

int Forge(void* context, const std::string& address, int n) {
  for (int i = 0; i < n; ++i) {
    ForgeOnce(context, address, kForged);
    ForgeOnce(context, address, "attack-peer");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (argc != 4 &&
      !(argc == 5 && (mode == "idle" || mode == "churn" || mode == "noread-external"))) {
    std::fprintf(stderr,
                 "usage: dmlps-attack-peer "
                 "squat|stream|noread|noread-shard|claim|evaluator|hellos|forge ADDR N | "
                 "idle|churn ADDR N S | noread-external ADDR S MODEL\n");
    return 64;
  }
  void* context = zmq_ctx_new();
  const int n = std::atoi(argv[3]);
  int rc = 64;
  if (mode == "idle") rc = Idle(context, argv[2], n, std::atoi(argv[4]));
  if (mode == "churn") rc = Churn(context, argv[2], n, std::atoi(argv[4]));
  if (mode == "squat") rc = Squat(context, argv[2], n);
  if (mode == "stream") rc = Stream(argv[2], n);
  if (mode == "noread") {
    rc = NoRead(context, argv[2], n, proto::Hello{-1, "attack-peer", 0, 1, 0, -1, 0, {}}, true);
  }
  if (mode == "noread-external") rc = NoReadExternal(context, argv[2], n, argv[4]);
  if (mode == "noread-shard") rc = NoReadShard(context, argv[2], n);
  if (mode == "claim") rc = Claim(context, argv[2], n);
  if (mode == "evaluator") rc = FakeEvaluator(context, argv[2], n);
  if (mode == "hellos") rc = HelloFlood(context, argv[2], n);
  if (mode == "forge") rc = Forge(context, argv[2], n);
  zmq_ctx_term(context);
  return rc;
}
