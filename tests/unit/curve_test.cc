#include "dmlps/net/curve.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"
#include "test_util.h"

namespace dmlps::net {
namespace {

using std::chrono::milliseconds;
using testing::TempDir;

void WriteText(const std::string& path, const std::string& text, mode_t mode = 0600) {
  std::ofstream(path) << text;
  REQUIRE(chmod(path.c_str(), mode) == 0);
}

// Two keys from libzmq, so the tests do not depend on one fixed value.
const CurveKeyPair& SomePair() {
  static const CurveKeyPair pair = GenerateKeyPair().value();
  return pair;
}

TEST_CASE("a key file holds one Z85 key among comments and blank lines") {
  REQUIRE(CurveAvailable());
  const std::string key = SomePair().public_key;
  Result<std::string> parsed =
      ParseKeyText("# a comment\n\n   " + key + "  \r\n  # another\n", "k.pub");
  REQUIRE(parsed.ok());
  CHECK(*parsed == key);
  CHECK(ParseKeyText(key, "k.pub").value() == key);  // no final newline

  Result<std::string> empty = ParseKeyText("# only a comment\n\n", "k.pub");
  CHECK(empty.status().code() == StatusCode::kDataLoss);
  CHECK(empty.status().message() == "k.pub: no key in the file");

  Result<std::string> two = ParseKeyText(key + "\n" + key + "\n", "k.pub");
  CHECK(two.status().code() == StatusCode::kDataLoss);
  CHECK(two.status().message() == "k.pub:2: a second key (one key per file)");

  // One character short: the last one dropped, since a key's second
  // character may be '#', which would make the line a comment; its first
  // never is ('#' is 84 in Z85, and 84 * 85^4 does not fit 32 bits).
  Result<std::string> short_key = ParseKeyText("# x\n" + key.substr(0, 39) + "\n", "k.pub");
  CHECK(short_key.status().code() == StatusCode::kDataLoss);
  CHECK(short_key.status().message().starts_with("k.pub:2: not a key"));

  // Right length, but a character outside Z85, or groups of five that do
  // not fit 32 bits ("#####" is 85^5 - 1).
  CHECK_FALSE(ParseKeyText(key.substr(0, 39) + "~", "k").ok());
  CHECK_FALSE(IsZ85Key(std::string(40, '#')));
  CHECK_FALSE(ParseKeyText(std::string(40, '#'), "k").ok());
  CHECK(IsZ85Key(key));
  CHECK_FALSE(IsZ85Key(key + "0"));
}

TEST_CASE("secret key files: private, well formed, and their public key derived") {
  TempDir dir;
  const CurveKeyPair& pair = SomePair();
  REQUIRE(WriteKeyPair(pair, dir.File("w0"), false).ok());
  struct stat st {};
  REQUIRE(stat(dir.File("w0.key").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  Result<CurveKeyPair> read = ReadSecretKeyFile(dir.File("w0.key"));
  REQUIRE(read.ok());
  CHECK(read->secret_key == pair.secret_key);
  CHECK(read->public_key == pair.public_key);
  CHECK(ReadPublicKeyFile(dir.File("w0.pub")).value() == pair.public_key);

  // Never overwritten by accident; replaced with --force.
  Status again = WriteKeyPair(GenerateKeyPair().value(), dir.File("w0"), false);
  CHECK(again.code() == StatusCode::kInvalidArgument);
  CHECK(ReadSecretKeyFile(dir.File("w0.key")).value().secret_key == pair.secret_key);
  const CurveKeyPair other = GenerateKeyPair().value();
  REQUIRE(WriteKeyPair(other, dir.File("w0"), true).ok());
  CHECK(ReadSecretKeyFile(dir.File("w0.key")).value().public_key == other.public_key);

  REQUIRE(chmod(dir.File("w0.key").c_str(), 0644) == 0);
  Result<CurveKeyPair> open = ReadSecretKeyFile(dir.File("w0.key"));
  CHECK(open.status().code() == StatusCode::kDataLoss);
  CHECK(open.status().message().find("mode 0644") != std::string::npos);
  REQUIRE(chmod(dir.File("w0.key").c_str(), 0400) == 0);
  CHECK(ReadSecretKeyFile(dir.File("w0.key")).ok());

  CHECK(ReadSecretKeyFile(dir.File("missing.key")).status().code() == StatusCode::kNotFound);
  WriteText(dir.File("bad.key"), "not a key\n");
  CHECK(ReadSecretKeyFile(dir.File("bad.key")).status().code() == StatusCode::kDataLoss);
}

TEST_CASE("key pairs: every target checked before any is written, folders made") {
  TempDir dir;
  REQUIRE(WriteKeyPair(SomePair(), dir.File("server"), false).ok());
  const std::vector<std::string> names = {dir.File("server"), dir.File("workers/w0"),
                                          dir.File("workers/w1"), dir.File("workers/w0")};
  std::vector<Status> refused = CheckKeyPairTargets(names, false);
  REQUIRE(refused.size() == 2);
  CHECK(refused[0].code() == StatusCode::kInvalidArgument);
  CHECK(refused[0].message() == dir.File("server.key") + " exists (--force replaces it)");
  CHECK(refused[1].message() == "'" + dir.File("workers/w0") + "' is named twice");
  // --force lets files be replaced, never a name be written twice.
  CHECK(CheckKeyPairTargets(names, true).size() == 1);
  CHECK(CheckKeyPairTargets({dir.File("workers/w0"), dir.File("workers/w1")}, false).empty());

  // A missing parent folder is made, however deep.
  REQUIRE(WriteKeyPair(SomePair(), dir.File("workers/deep/w0"), false).ok());
  CHECK(ReadPublicKeyFile(dir.File("workers/deep/w0.pub")).value() == SomePair().public_key);
  WriteText(dir.File("plain"), "a file, not a folder\n", 0644);
  CHECK(WriteKeyPair(SomePair(), dir.File("plain/w0"), false).code() == StatusCode::kIOError);
}

TEST_CASE("a server key is given inline or as a file") {
  TempDir dir;
  const std::string key = SomePair().public_key;
  CHECK(ReadPublicKey(key).value() == key);
  WriteText(dir.File("server.pub"), "# the server\n" + key + "\n", 0644);
  CHECK(ReadPublicKey(dir.File("server.pub")).value() == key);
  CHECK(ReadPublicKey(dir.File("nope.pub")).status().code() == StatusCode::kNotFound);
}

TEST_CASE("the allow folder: every *.pub file, at least one key") {
  TempDir dir;
  CHECK(ReadAllowedKeys(dir.File("missing")).status().code() == StatusCode::kNotFound);
  Result<std::set<std::string>> none = ReadAllowedKeys(dir.path());
  CHECK(none.status().code() == StatusCode::kDataLoss);

  const CurveKeyPair a = GenerateKeyPair().value();
  const CurveKeyPair b = GenerateKeyPair().value();
  REQUIRE(WriteKeyPair(a, dir.File("a"), false).ok());
  REQUIRE(WriteKeyPair(b, dir.File("b"), false).ok());
  WriteText(dir.File("README"), "not a key, not read\n", 0644);
  Result<std::set<std::string>> keys = ReadAllowedKeys(dir.path());
  REQUIRE(keys.ok());
  CHECK(*keys == std::set<std::string>{a.public_key, b.public_key});  // the .key files ignored

  WriteText(dir.File("c.pub"), "garbage\n", 0644);
  Result<std::set<std::string>> bad = ReadAllowedKeys(dir.path());
  CHECK(bad.status().code() == StatusCode::kDataLoss);
  CHECK(bad.status().message().find("c.pub:1") != std::string::npos);
}

// Receives on `endpoint` for up to `limit`; the first message, or an error.
Result<bool> ReceiveWithin(Endpoint& endpoint, Frames* frames, milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    DMLPS_ASSIGN_OR_RETURN(bool got, endpoint.Receive(frames, milliseconds(20)));
    if (got) return true;
  }
  return false;
}

// A CURVE server's options: it holds `server`'s key pair and admits the
// holder of `allowed`'s.
BindOptions CurveServer(const CurveKeyPair& server, const CurveKeyPair& allowed) {
  BindOptions options;
  options.curve_secret = server.secret_key;
  options.allowed_keys = {allowed.public_key};
  return options;
}

// A client joins `server` and sends a heartbeat, which the server takes
// and admits: a peer that joined.
Endpoint Admitted(zmq::context_t& context, Endpoint& server, int64_t heartbeat, Frames* frames) {
  Endpoint client = Endpoint::Connect(context, server.address()).value();
  REQUIRE(client.SendMessage(nullptr, proto::Heartbeat{heartbeat}).ok());
  REQUIRE(ReceiveWithin(server, frames, milliseconds(5000)).value());
  server.AdmitSender();
  return client;
}

// A client connecting to `server` beyond its limit is refused at the
// handshake, and its heartbeat never reaches the server; returns why.
Status Refused(zmq::context_t& context, Endpoint& server, Frames* frames) {
  Endpoint late = Endpoint::Connect(context, server.address()).value();
  (void)late.SendMessage(nullptr, proto::Heartbeat{99});
  Result<bool> refused = ReceiveWithin(late, frames, milliseconds(5000));
  CHECK(refused.status().code() == StatusCode::kUnavailable);
  CHECK_FALSE(ReceiveWithin(server, frames, milliseconds(300)).value());
  return refused.status();
}

TEST_CASE("a CURVE server admits listed keys only, never any key") {
  const CurveKeyPair server = GenerateKeyPair().value();
  const CurveKeyPair allowed = GenerateKeyPair().value();
  const CurveKeyPair stranger = GenerateKeyPair().value();
  zmq::context_t server_context;
  const BindOptions options = CurveServer(server, allowed);
  Result<Endpoint> bound = Endpoint::Bind(server_context, "tcp://127.0.0.1:*", options);
  REQUIRE(bound.ok());
  const std::string address = bound->address();

  zmq::context_t client_context;
  // The listed worker gets through, encrypted both ways.
  Endpoint good =
      Endpoint::Connect(client_context, address, {allowed.secret_key, server.public_key}).value();
  REQUIRE(good.SendMessage(nullptr, proto::Heartbeat{7}).ok());
  Frames frames;
  REQUIRE(ReceiveWithin(*bound, &frames, milliseconds(5000)).value());
  REQUIRE(frames.size() == 2);
  zmq::message_t identity = CopyFrame(frames[0]);
  REQUIRE(bound->SendMessage(&identity, proto::Heartbeat{8}).ok());
  REQUIRE(ReceiveWithin(good, &frames, milliseconds(5000)).value());

  // An unknown key and no key at all are refused at the handshake: the
  // server never sees their messages, and each client learns why.
  Endpoint bad =
      Endpoint::Connect(client_context, address, {stranger.secret_key, server.public_key}).value();
  Endpoint plain = Endpoint::Connect(client_context, address).value();
  (void)bad.SendMessage(nullptr, proto::Heartbeat{1});
  (void)plain.SendMessage(nullptr, proto::Heartbeat{2});
  Result<bool> bad_got = ReceiveWithin(bad, &frames, milliseconds(5000));
  CHECK(bad_got.status().code() == StatusCode::kConfig);
  CHECK(bad_got.status().message().find("refused this client's key") != std::string::npos);
  Result<bool> plain_got = ReceiveWithin(plain, &frames, milliseconds(5000));
  CHECK(plain_got.status().code() == StatusCode::kConfig);
  CHECK(plain_got.status().message().find("requires CURVE") != std::string::npos);
  CHECK_FALSE(ReceiveWithin(*bound, &frames, milliseconds(300)).value());
  CHECK(bound->refused_connections() >= 1);

  // A client that has the wrong server key cannot finish the handshake.
  Endpoint lost =
      Endpoint::Connect(client_context, address, {allowed.secret_key, stranger.public_key}).value();
  (void)lost.SendMessage(nullptr, proto::Heartbeat{3});
  CHECK_FALSE(ReceiveWithin(*bound, &frames, milliseconds(500)).value());

  // CURVE with nobody to admit is refused rather than run open.
  zmq::context_t other;
  BindOptions open = options;
  open.allowed_keys.clear();
  CHECK(Endpoint::Bind(other, "tcp://127.0.0.1:*", open).status().code() == StatusCode::kConfig);
}

TEST_CASE("connections beyond the limit are refused at the handshake") {
  zmq::context_t server_context;
  BindOptions options;
  options.max_connections = 2;
  Endpoint server = Endpoint::Bind(server_context, "tcp://127.0.0.1:*", options).value();
  zmq::context_t client_context;
  std::vector<Endpoint> clients;
  Frames frames;
  // Admitted: never closed to make room for a newcomer.
  for (int i = 0; i < 2; ++i) clients.push_back(Admitted(client_context, server, i, &frames));
  CHECK(Refused(client_context, server, &frames).message().find("too many connections") !=
        std::string::npos);
  CHECK(server.refused_connections() >= 1);

  // A connection that closes makes room for the next.
  clients.pop_back();
  bool admitted = false;
  for (int attempt = 0; attempt < 50 && !admitted; ++attempt) {
    Endpoint next = Endpoint::Connect(client_context, server.address()).value();
    (void)next.SendMessage(nullptr, proto::Heartbeat{4});
    Result<bool> got = ReceiveWithin(server, &frames, milliseconds(100));
    admitted = got.ok() && *got;
  }
  CHECK(admitted);
}

TEST_CASE("a host flooding young connections gives way to another host, never takes its place") {
  zmq::context_t server_context;
  BindOptions options;
  options.max_connections = 3;
  Endpoint server = Endpoint::Bind(server_context, "tcp://127.0.0.1:*", options).value();
  const std::string port = server.address().substr(server.address().rfind(':') + 1);
  // Three connections from 127.0.0.2 that never join, younger than the grace.
  zmq::context_t flood_context;
  std::vector<zmq::socket_t> flood;
  Frames frames;
  auto connect_flood = [&] {
    flood.emplace_back(flood_context, zmq::socket_type::dealer);
    flood.back().set(zmq::sockopt::linger, 0);
    flood.back().set(zmq::sockopt::reconnect_ivl, -1);
    flood.back().connect("tcp://127.0.0.2:0;127.0.0.1:" + port);
    (void)flood.back().send(zmq::str_buffer("x"), zmq::send_flags::dontwait);
  };
  for (int i = 0; i < 3; ++i) {
    connect_flood();
    REQUIRE(ReceiveWithin(server, &frames, milliseconds(5000)).value());
  }
  // A worker from 127.0.0.1 gets in at once, in the place of one of them.
  zmq::context_t client_context;
  Endpoint worker = Endpoint::Connect(client_context, server.address()).value();
  REQUIRE(worker.SendMessage(nullptr, proto::Heartbeat{1}).ok());
  REQUIRE(ReceiveWithin(server, &frames, milliseconds(5000)).value());
  CHECK(proto::DecodeMessage(frames, 1).ok());
  // Another from the flooding host is refused: the worker, not joined yet,
  // keeps its place.
  const int64_t refused = server.refused_connections();
  connect_flood();
  for (int i = 0; i < 50 && server.refused_connections() == refused; ++i) {
    (void)ReceiveWithin(server, &frames, milliseconds(20));
  }
  CHECK(server.refused_connections() == refused + 1);
  REQUIRE(worker.SendMessage(nullptr, proto::Heartbeat{2}).ok());
  bool heard = false;
  for (int i = 0; i < 50 && !heard; ++i) {
    if (!ReceiveWithin(server, &frames, milliseconds(100)).value()) continue;
    Result<proto::Message> message = proto::DecodeMessage(frames, 1);
    heard = message.ok() && std::get<proto::Heartbeat>(message->body).time_us == 2;
  }
  CHECK(heard);
}

TEST_CASE("the decoder refuses huge headers and messages of many frames") {
  std::vector<zmq::message_t> frames;
  frames.push_back(proto::EncodeHeader(proto::Heartbeat{1}));
  for (int64_t i = 0; i < proto::kMaxMessageFrames; ++i) frames.emplace_back(4);
  Result<proto::Message> many = proto::DecodeMessage(frames, 0);
  CHECK(many.status().code() == StatusCode::kProtocol);
  CHECK(many.status().message() == "message of 1025 frames (at most 1024)");
  frames.pop_back();
  CHECK(proto::DecodeMessage(frames, 0).ok());

  std::string huge(static_cast<size_t>(proto::kMaxHeaderBytes) + 1, '\0');
  Result<proto::Body> body = proto::DecodeHeader(huge.data(), huge.size());
  CHECK(body.status().code() == StatusCode::kProtocol);
  CHECK(body.status().message().starts_with("header of 65537 bytes"));
}

TEST_CASE("connection limits set after binding apply to the connections to come") {
  zmq::context_t plain_context;
  Endpoint plain = Endpoint::Bind(plain_context, "tcp://127.0.0.1:*").value();
  // An endpoint bound without a connection guard cannot get one later.
  CHECK(plain.SetConnectionLimits(4, 1 << 20).code() == StatusCode::kInvalidArgument);

  zmq::context_t server_context;
  BindOptions loose;
  loose.max_unread_bytes = int64_t{1} << 30;
  Endpoint server = Endpoint::Bind(server_context, "tcp://127.0.0.1:*", loose).value();
  CHECK(server.SetConnectionLimits(-1, 0).code() == StatusCode::kInvalidArgument);
  REQUIRE(server.SetConnectionLimits(1, 1 << 20).ok());
  zmq::context_t client_context;
  Frames frames;
  Endpoint first = Admitted(client_context, server, 1, &frames);
  Refused(client_context, server, &frames);
}

TEST_CASE("the servers' own key is admitted as a shard's, and marked so") {
  const CurveKeyPair server = GenerateKeyPair().value();
  const CurveKeyPair worker = GenerateKeyPair().value();
  zmq::context_t server_context;
  BindOptions options = CurveServer(server, worker);
  options.shard_key = server.public_key;
  Endpoint bound = Endpoint::Bind(server_context, "tcp://127.0.0.1:*", options).value();
  zmq::context_t client_context;
  // A shard holds the server's own key pair; it is in no allow list.
  Endpoint shard =
      Endpoint::Connect(client_context, bound.address(), {server.secret_key, server.public_key})
          .value();
  Endpoint listed =
      Endpoint::Connect(client_context, bound.address(), {worker.secret_key, server.public_key})
          .value();
  Frames frames;
  REQUIRE(shard.SendMessage(nullptr, proto::Heartbeat{1}).ok());
  REQUIRE(ReceiveWithin(bound, &frames, milliseconds(5000)).value());
  CHECK(bound.LastSenderMayBeShard());
  REQUIRE(listed.SendMessage(nullptr, proto::Heartbeat{2}).ok());
  REQUIRE(ReceiveWithin(bound, &frames, milliseconds(5000)).value());
  CHECK_FALSE(bound.LastSenderMayBeShard());

  // Without a shard key, the server's own key is a stranger's.
  zmq::context_t other_context;
  options.shard_key.clear();
  Endpoint unsharded = Endpoint::Bind(other_context, "tcp://127.0.0.1:*", options).value();
  Endpoint posing =
      Endpoint::Connect(client_context, unsharded.address(), {server.secret_key, server.public_key})
          .value();
  (void)posing.SendMessage(nullptr, proto::Heartbeat{3});
  CHECK(ReceiveWithin(posing, &frames, milliseconds(5000)).status().code() == StatusCode::kConfig);
}

TEST_CASE("a rebound endpoint takes its new frame limit for the connections to come") {
  zmq::context_t server_context;
  Endpoint server = Endpoint::Bind(server_context, "tcp://127.0.0.1:*").value();
  const std::string address = server.address();
  CHECK(server.Rebind(0, 10).code() == StatusCode::kInvalidArgument);
  REQUIRE(server.Rebind(1024, 10).ok());
  CHECK(server.address() == address);  // the same port: workers are told it later
  zmq::context_t client_context;
  Endpoint client = Endpoint::Connect(client_context, address).value();
  Frames frames;
  // Within the limit, it arrives; a frame beyond it drops the connection.
  REQUIRE(client.SendMessage(nullptr, proto::Heartbeat{1}).ok());
  REQUIRE(ReceiveWithin(server, &frames, milliseconds(5000)).value());
  Frames big;
  big.push_back(proto::EncodeHeader(proto::Heartbeat{2}));
  big.emplace_back(4096);
  REQUIRE(client.Send(big).ok());
  CHECK_FALSE(ReceiveWithin(server, &frames, milliseconds(500)).value());
}

}  // namespace
}  // namespace dmlps::net
