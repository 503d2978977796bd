// A misbehaving peer for the CLI tests. Modes:
//   garbage ADDR    sends malformed messages without joining and checks that
//                   each one is answered with an Error; exits 0 when all were.
//   bad-worker ADDR joins, then answers every model with a broken push
//                   (wrong size, NaN, Inf, misframed, wrong parameter count;
//                   streamed: a chunk out of order, a chunk with NaN, a
//                   chunk of the wrong size) until the server says stop;
//                   exits 0 on Stop.
//   bad-encoded-worker ADDR
//                   as bad-worker, to a server of --push-codec int8, its
//                   pushes encoded and broken (a byte short, dense, another
//                   codec, a NaN scale, a header lying about its bytes,
//                   chunks announced, a scale out of range); checks that
//                   its first model came whole; exits 0 on Stop.
//   oversized ADDR LIMIT
//                   sends a message whose frames together exceed LIMIT
//                   bytes, one of too many frames, then a single frame
//                   over LIMIT (which ZeroMQ drops with the connection),
//                   and checks the server still answers; exits 0 when
//                   the first two got an Error and no frame came back for
//                   the third.
//   flood ADDR N    opens N connections at once, each a new identity that
//                   sends a Pull without joining, and prints how many the
//                   server answered with an Error and how many it refused
//                   at the handshake; exits 0 when every one was either.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"

namespace {

using dmlps::net::Endpoint;
using dmlps::net::Frames;
namespace proto = dmlps::proto;

constexpr std::chrono::milliseconds kWait{5000};

int Fail(const std::string& why) {
  std::fprintf(stderr, "dmlps-test-peer: error: %s\n", why.c_str());
  return 1;
}

// Receives one message, skipping heartbeats; returns false on timeout or garbage.
bool ReceiveBody(Endpoint& endpoint, proto::Message* out) {
  Frames frames;
  for (int i = 0; i < 50; ++i) {
    dmlps::Result<bool> got = endpoint.Receive(&frames, kWait);
    if (!got.ok() || !*got) return false;
    dmlps::Result<proto::Message> message = proto::DecodeMessage(frames, 0);
    if (!message.ok()) return false;
    if (proto::TypeOf(message->body) == proto::MsgType::kHeartbeat) continue;
    *out = std::move(message).value();
    return true;
  }
  return false;
}

zmq::message_t Bytes(const std::string& s) { return zmq::message_t(s.data(), s.size()); }

std::string Packed(uint32_t version, uint32_t type, const msgpack::object& body) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> packer(buffer);
  packer.pack_array(3);
  packer.pack(version);
  packer.pack(type);
  packer.pack(body);
  return std::string(buffer.data(), buffer.size());
}

int Garbage(Endpoint& endpoint) {
  msgpack::zone zone;
  std::vector<std::pair<std::string, Frames>> cases;
  auto add = [&](std::string name, std::vector<std::string> parts) {
    Frames frames;
    for (const std::string& p : parts) frames.push_back(Bytes(p));
    cases.emplace_back(std::move(name), std::move(frames));
  };
  add("random bytes", {"\x93\xff\x00garbage\x01\x02"});
  add("empty frame", {""});
  const std::string hello =
      Packed(proto::kProtocolVersion, 1, msgpack::object(proto::Hello{}, zone));
  add("truncated header", {hello.substr(0, hello.size() / 2)});
  add("wrong protocol version",
      {Packed(proto::kProtocolVersion + 41, 1, msgpack::object(proto::Hello{}, zone))});
  add("unknown message type",
      {Packed(proto::kProtocolVersion, 99, msgpack::object(proto::Hello{}, zone))});
  add("not an array", {std::string("\xa5hello")});
  std::map<std::string, std::string> bad_fields{{"rank", "seven"}};
  add("field of the wrong type",
      {Packed(proto::kProtocolVersion, 1, msgpack::object(bad_fields, zone))});
  add("push before hello",
      {Packed(proto::kProtocolVersion, 5, msgpack::object(proto::Push{}, zone)),
       std::string(16, '\0')});
  add("hello with trailing bytes", {hello + "xx"});

  int answered = 0;
  for (auto& [name, frames] : cases) {
    dmlps::Status sent = endpoint.Send(frames);
    if (!sent.ok()) return Fail(name + ": " + sent.message());
    proto::Message reply;
    if (!ReceiveBody(endpoint, &reply)) return Fail(name + ": no reply from the server");
    auto* error = std::get_if<proto::Error>(&reply.body);
    if (error == nullptr) return Fail(name + ": the server did not answer with an Error");
    std::printf("%s: refused: %s\n", name.c_str(), error->message.c_str());
    ++answered;
  }
  std::printf("%d of %zu malformed messages refused\n", answered, cases.size());
  return 0;
}

// Sends push `push` (its clock, version, counts and size filled in),
// broken some way; false when a send failed.
using Breaker =
    std::function<bool(Endpoint& endpoint, const proto::Welcome& welcome, proto::Push push)>;

// Joins, then answers every model with a push `send_broken` breaks, until
// the server says stop; exits 0 on Stop when a push was refused, and
// prints how many models came encoded (a first one encoded fails it).
int BrokenWorker(Endpoint& endpoint, const Breaker& send_broken) {
  if (!endpoint.SendMessage(nullptr, proto::Hello{-1, "test-peer", 0, 1, 0, -1, 0, {}}).ok()) {
    return Fail("cannot send Hello");
  }
  proto::Message reply;
  if (!ReceiveBody(endpoint, &reply)) return Fail("no Welcome");
  auto* welcome_body = std::get_if<proto::Welcome>(&reply.body);
  if (welcome_body == nullptr) return Fail("the server did not welcome this peer");
  const proto::Welcome welcome = *welcome_body;
  int64_t refused = 0;
  int64_t encoded = 0;
  for (int64_t clock = 0;; ++clock) {
    if (!endpoint.SendMessage(nullptr, proto::Pull{clock}).ok()) return Fail("cannot pull");
    // Skip the Errors that answer our broken pushes; wait for the model or Stop.
    while (true) {
      if (!ReceiveBody(endpoint, &reply)) return Fail("no model from the server");
      if (auto* error = std::get_if<proto::Error>(&reply.body)) {
        ++refused;
        if (error->fatal) return Fail("the server gave up on this peer: " + error->message);
        continue;
      }
      break;
    }
    if (std::holds_alternative<proto::Stop>(reply.body)) {
      std::printf("stopped after %lld steps, %lld pushes refused, %lld models encoded\n",
                  static_cast<long long>(clock), static_cast<long long>(refused),
                  static_cast<long long>(encoded));
      return refused > 0 ? 0 : Fail("no broken push was refused");
    }
    const auto& model = std::get<proto::Model>(reply.body);
    if (model.encoded_bytes > 0) ++encoded;
    if (clock == 0 && model.encoded_bytes != 0) return Fail("the first model came encoded");
    proto::Push push;
    push.clock = clock;
    push.base_version = model.version;
    push.batch = welcome.batch;
    push.samples = welcome.batch;
    push.num_params = welcome.num_params;
    if (!send_broken(endpoint, welcome, push)) return Fail("cannot push");
  }
}

// bad-worker: dense pushes broken every way the dense format allows.
bool SendBrokenDense(Endpoint& endpoint, const proto::Welcome& welcome, proto::Push push) {
  const int64_t n = welcome.num_params;
  const int64_t clock = push.clock;
  std::vector<float> values(n, 0.f);
  Frames payload;
  if (clock % 8 >= 5) {
    // Streamed in four chunks, one of them broken.
    const int64_t per = (n + 3) / 4;
    push.chunks = (n + per - 1) / per;
    push.chunk_floats = per;
    if (!endpoint.SendMessage(nullptr, push).ok()) return false;
    if (clock % 8 == 6) values[per + 1] = std::numeric_limits<float>::quiet_NaN();
    for (int64_t i = 0; i < push.chunks; ++i) {
      int64_t index = i;
      int64_t count = std::min(per, n - i * per);
      if (clock % 8 == 5 && i == 1) index = 2;   // out of order: the stream ends here
      if (clock % 8 == 7 && i == 2) count -= 1;  // a float short
      Frames chunk;
      chunk.emplace_back(values.data() + i * per, static_cast<size_t>(count) * sizeof(float));
      if (!endpoint.SendMessage(nullptr, proto::Chunk{index}, std::move(chunk)).ok()) {
        return false;
      }
    }
    return true;
  }
  switch (clock % 5) {
    case 0:  // one float short
      values.pop_back();
      break;
    case 1:
      values[n / 2] = std::numeric_limits<float>::quiet_NaN();
      break;
    case 2:
      values[0] = std::numeric_limits<float>::infinity();
      break;
    case 3:  // a frame that is not a whole number of floats
      payload.push_back(Bytes(std::string(7, '\1')));
      break;
    case 4:  // a header that lies about the model size
      push.num_params = n + 1;
      break;
  }
  if (payload.empty()) payload.emplace_back(values.data(), values.size() * sizeof(float));
  return endpoint.SendMessage(nullptr, push, std::move(payload)).ok();
}

// bad-encoded-worker: pushes to a job of --push-codec int8 broken every way
// the encoded format allows: a byte short, a dense push, another codec, a
// NaN scale, a header that lies about its bytes, chunks announced, a scale
// past the largest allowed.
bool SendBrokenInt8(Endpoint& endpoint, const proto::Welcome& welcome, proto::Push push) {
  const auto n = static_cast<size_t>(welcome.num_params);
  const size_t blocks = (n + 255) / 256;
  std::string bytes(blocks * sizeof(float) + n, '\0');  // zeros: a valid int8 encoding
  push.codec = "int8";
  push.encoded_bytes = static_cast<int64_t>(bytes.size());
  switch (push.clock % 7) {
    case 0:  // a byte short
      bytes.pop_back();
      break;
    case 1: {  // dense
      push.codec.clear();
      push.encoded_bytes = 0;
      bytes.assign(n * sizeof(float), '\0');
      break;
    }
    case 2:  // another codec, its size right
      push.codec = "fp16";
      bytes.assign(n * 2, '\0');
      push.encoded_bytes = static_cast<int64_t>(bytes.size());
      break;
    case 3: {  // a NaN scale
      const float nan = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(bytes.data(), &nan, sizeof(nan));
      break;
    }
    case 4:  // the header lies about the bytes
      push.encoded_bytes += 4;
      break;
    case 5:  // chunks announced
      push.chunks = 2;
      push.chunk_floats = static_cast<int64_t>((n + 1) / 2);
      break;
    case 6: {  // a scale past the largest the format allows
      const float huge = 1e38F;
      std::memcpy(bytes.data(), &huge, sizeof(huge));
      bytes[blocks * sizeof(float)] = '\x7f';
      break;
    }
  }
  Frames payload;
  payload.push_back(Bytes(bytes));
  return endpoint.SendMessage(nullptr, push, std::move(payload)).ok();
}

// Waits for the server's answer to what was just sent: an Error, or nothing.
bool ErrorArrives(Endpoint& endpoint, const std::string& name) {
  proto::Message reply;
  if (!ReceiveBody(endpoint, &reply)) {
    Fail(name + ": no reply from the server");
    return false;
  }
  auto* error = std::get_if<proto::Error>(&reply.body);
  if (error == nullptr) {
    Fail(name + ": the server did not answer with an Error");
    return false;
  }
  std::printf("%s: refused: %s\n", name.c_str(), error->message.c_str());
  return true;
}

int Oversized(Endpoint& endpoint, int64_t limit) {
  msgpack::zone zone;
  const std::string pull = Packed(proto::kProtocolVersion, 3, msgpack::object(proto::Pull{}, zone));
  {
    // Each frame within the limit, together over it.
    Frames frames;
    frames.push_back(Bytes(pull));
    frames.emplace_back(static_cast<size_t>(limit / 2 + 8));
    frames.emplace_back(static_cast<size_t>(limit / 2 + 8));
    if (!endpoint.Send(frames).ok()) return Fail("cannot send");
    if (!ErrorArrives(endpoint, "message over the limit")) return 1;
  }
  {
    Frames frames;
    frames.push_back(Bytes(pull));
    for (int64_t i = 0; i < proto::kMaxMessageFrames + 10; ++i) frames.emplace_back(4);
    if (!endpoint.Send(frames).ok()) return Fail("cannot send");
    if (!ErrorArrives(endpoint, "message of too many frames")) return 1;
  }
  {
    Frames frames;
    frames.push_back(Bytes(pull));
    frames.emplace_back(static_cast<size_t>(limit + 1));
    if (!endpoint.Send(frames).ok()) return Fail("cannot send");
    Frames reply;
    dmlps::Result<bool> got = endpoint.Receive(&reply, std::chrono::milliseconds(2000));
    if (got.ok() && *got) return Fail("the server answered a frame over its limit");
    std::printf("frame over the limit: dropped with its connection\n");
  }
  // The peer reconnects by itself; the server still answers it.
  Frames frames;
  frames.push_back(Bytes("\x93\xff\x00garbage"));
  if (!endpoint.Send(frames).ok()) return Fail("cannot send");
  if (!ErrorArrives(endpoint, "garbage after the drop")) return 1;
  std::printf("oversized messages refused\n");
  return 0;
}

int Flood(zmq::context_t& context, const std::string& address, int64_t count) {
  std::vector<Endpoint> peers;
  for (int64_t i = 0; i < count; ++i) {
    dmlps::Result<Endpoint> peer = Endpoint::Connect(context, address);
    if (!peer.ok()) return Fail(peer.status().message());
    if (!peer->SendMessage(nullptr, proto::Pull{0}).ok()) return Fail("cannot send");
    peers.push_back(std::move(peer).value());
  }
  int64_t answered = 0;
  int64_t refused = 0;
  std::vector<bool> done(peers.size(), false);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (answered + refused < count && std::chrono::steady_clock::now() < deadline) {
    for (size_t i = 0; i < peers.size(); ++i) {
      if (done[i]) continue;
      Frames frames;
      dmlps::Result<bool> got = peers[i].Receive(&frames, std::chrono::milliseconds(1));
      if (!got.ok()) {
        if (got.status().message().find("too many connections") == std::string::npos) {
          return Fail("unexpected: " + got.status().message());
        }
        ++refused;
        done[i] = true;
      } else if (*got) {
        dmlps::Result<proto::Message> message = proto::DecodeMessage(frames, 0);
        if (!message.ok() || !std::holds_alternative<proto::Error>(message->body)) {
          return Fail("a flood peer got something other than an Error");
        }
        ++answered;
        done[i] = true;
      }
    }
  }
  std::printf("%lld answered with an Error, %lld refused at the handshake, of %lld\n",
              static_cast<long long>(answered), static_cast<long long>(refused),
              static_cast<long long>(count));
  if (answered + refused != count) return Fail("some flood peers got no answer");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr,
                 "usage: dmlps-test-peer garbage|bad-worker|bad-encoded-worker ADDR | oversized "
                 "ADDR LIMIT | "
                 "flood ADDR N\n");
    return 64;
  }
  zmq::context_t context;
  const std::string mode = argv[1];
  if (mode == "flood" && argc == 4) return Flood(context, argv[2], std::atoll(argv[3]));
  dmlps::Result<Endpoint> endpoint = Endpoint::Connect(context, argv[2]);
  if (!endpoint.ok()) return Fail(endpoint.status().message());
  if (mode == "garbage") return Garbage(*endpoint);
  if (mode == "oversized" && argc == 4) return Oversized(*endpoint, std::atoll(argv[3]));
  if (mode == "bad-worker") return BrokenWorker(*endpoint, SendBrokenDense);
  if (mode == "bad-encoded-worker") return BrokenWorker(*endpoint, SendBrokenInt8);
  return Fail("unknown mode " + mode);
}
