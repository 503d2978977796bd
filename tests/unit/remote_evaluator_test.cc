#include "server/remote_evaluator.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <thread>

#include "net_test_util.h"

namespace dmlps::server {
namespace {

using std::chrono::milliseconds;

// The job secret the fixture's server asks of an evaluator.
constexpr char kSecret[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

// A server-side RemoteEvaluator and an evaluator's socket, on inproc.
// The evaluator is dropped when an answer is `limit` late: long enough by
// default that a loaded machine running a sanitized build never trips it.
struct EvaluatorFixture {
  explicit EvaluatorFixture(milliseconds limit = milliseconds(5000))
      : pair("inproc://remote-evaluator-test"),
        remote(*pair.server, Welcome(), kSecret, limit, [this] { Pump(); }) {}

  static proto::Welcome Welcome() {
    proto::Welcome welcome;
    welcome.model = "external";
    welcome.num_params = 3;
    return welcome;
  }

  // Hands one message the server received, if any within 50 ms, to `remote`.
  void Pump() {
    net::Frames frames;
    Result<bool> got = pair.server->Receive(&frames, milliseconds(50));
    REQUIRE(got.ok());
    if (!*got) return;
    Result<proto::Message> message = DecodeBounded(frames, 1 << 20);
    REQUIRE(message.ok());
    handled.push_back(remote.Handle(frames[0], *message));
  }

  // The next message the evaluator gets (within 2 s).
  proto::Message Next() { return testing::NextMessage(*pair.client, milliseconds(2000)); }

  // Says Hello as an evaluator presenting `secret`.
  void SayHello(const std::string& secret) {
    proto::Hello hello;
    hello.evaluator = true;
    hello.secret = secret;
    REQUIRE(pair.client->SendMessage(nullptr, hello).ok());
    Pump();
  }

  void Join() {
    proto::Hello hello;
    hello.evaluator = true;
    hello.secret = kSecret;
    REQUIRE(pair.client->SendMessage(nullptr, hello).ok());
    Pump();
    REQUIRE(remote.connected());
    CHECK(std::get<proto::Welcome>(Next().body).num_params == 3);
  }

  static Snapshot At(int64_t iteration) {
    return {0.5 * static_cast<double>(iteration), iteration, iteration, 0,
            std::make_shared<const std::vector<float>>(std::vector<float>{1, 2, 3})};
  }

  // Answers with `evaluation` and lets the server take it.
  void Answer(const proto::Evaluation& evaluation) {
    REQUIRE(pair.client->SendMessage(nullptr, evaluation).ok());
    Pump();
  }

  testing::EndpointPair pair;
  RemoteEvaluator remote;
  std::vector<bool> handled;
};

TEST_CASE("remote evaluator: an answer becomes the snapshot's result, stamped with its time") {
  EvaluatorFixture f;
  f.Join();
  f.remote.SubmitOrSkip(EvaluatorFixture::At(10), true);
  proto::Message sent = f.Next();
  const auto& evaluate = std::get<proto::Evaluate>(sent.body);
  CHECK(evaluate.iteration == 10);
  CHECK(evaluate.num_params == 3);
  f.Answer({evaluate.id, 0.75, 0.5, 100});
  std::vector<Evaluation> results = f.remote.TakeResults();
  REQUIRE(results.size() == 1);
  CHECK(results[0].snapshot.iteration == 10);
  CHECK(results[0].snapshot.seconds == 5.0);
  CHECK(results[0].result.accuracy == 0.75);
  CHECK(results[0].result.loss == 0.5);
  CHECK(f.remote.skipped() == 0);
}

TEST_CASE("remote evaluator: impossible or unasked-for answers are no results") {
  EvaluatorFixture f;
  f.Join();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  int64_t expected_skips = 0;
  for (const auto& [accuracy, loss] : std::vector<std::pair<double, double>>{
           {1.5, 0.5}, {-0.1, 0.5}, {nan, 0.5}, {0.5, nan}, {0.5, inf}, {0.5, -1}}) {
    f.remote.SubmitOrSkip(EvaluatorFixture::At(20), true);
    const int64_t id = std::get<proto::Evaluate>(f.Next().body).id;
    f.Answer({id + 100, 0.5, 0.5, 1});  // not the snapshot asked for: ignored
    f.Answer({id, accuracy, loss, 1});
    CHECK(f.remote.TakeResults().empty());
    CHECK(f.remote.skipped() == ++expected_skips);
  }
  // A late answer to a snapshot already answered is ignored too.
  f.Answer({1, 0.5, 0.5, 1});
  CHECK(f.remote.TakeResults().empty());
  CHECK(f.remote.connected());
}

TEST_CASE("snapshot queue: as many as 64 MiB hold, between 2 and 64") {
  CHECK(SnapshotQueueLimit(3) == kMaxQueued);
  CHECK(SnapshotQueueLimit(0) == kMaxQueued);
  // mlp:128 on Fashion-MNIST: 101,770 parameters, 0.4 MB a snapshot.
  CHECK(SnapshotQueueLimit(101770) == kMaxQueued);
  CHECK(SnapshotQueueLimit(kQueueBytes / 4 / 10) == 10);
  CHECK(SnapshotQueueLimit(kQueueBytes / 4) == kMinQueued);
  CHECK(SnapshotQueueLimit(int64_t{1} << 40) == kMinQueued);
}

TEST_CASE(
    "remote evaluator: snapshots wait while it is busy, and only beyond the limit are skipped") {
  EvaluatorFixture f;
  f.Join();
  const int64_t limit = SnapshotQueueLimit(3);
  // One goes out; `limit` wait; the ones beyond are skipped.
  for (int64_t i = 0; i < limit + 4; ++i) f.remote.SubmitOrSkip(EvaluatorFixture::At(i), false);
  CHECK(f.remote.skipped() == 3);
  // A `must` is never skipped.
  f.remote.SubmitOrSkip(EvaluatorFixture::At(1000), true);
  CHECK(f.remote.skipped() == 3);
  // Every one that waited is sent in turn, in order, the must last.
  std::vector<int64_t> seen;
  for (int64_t i = 0; i < limit + 2; ++i) {
    const auto evaluate = std::get<proto::Evaluate>(f.Next().body);
    seen.push_back(evaluate.iteration);
    f.Answer({evaluate.id, 0.5, 0.5, 1});
  }
  CHECK(seen.front() == 0);
  CHECK(seen[static_cast<size_t>(limit)] == limit);
  CHECK(seen.back() == 1000);
  CHECK(f.remote.TakeResults().size() == static_cast<size_t>(limit + 2));
}

TEST_CASE("remote evaluator: one that does not answer in time is dropped, never waited for") {
  EvaluatorFixture f(milliseconds(300));
  f.Join();
  f.remote.SubmitOrSkip(EvaluatorFixture::At(30), true);
  f.remote.SubmitOrSkip(EvaluatorFixture::At(40), true);
  (void)f.Next();
  const auto start = std::chrono::steady_clock::now();
  f.remote.WaitIdle();  // bounded by the 300 ms limit
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK_FALSE(f.remote.connected());
  CHECK(f.remote.joined_once());
  CHECK(f.remote.skipped() == 2);
  // Later snapshots are skipped, and its answers are no longer taken.
  f.remote.SubmitOrSkip(EvaluatorFixture::At(50), true);
  CHECK(f.remote.skipped() == 3);
  f.Answer({1, 0.5, 0.5, 1});
  CHECK(f.handled.back() == false);
  CHECK(f.remote.TakeResults().empty());
  // One with the job secret takes its place, and gets the next snapshot.
  f.Join();
  f.remote.SubmitOrSkip(EvaluatorFixture::At(60), true);
  CHECK(std::get<proto::Evaluate>(f.Next().body).iteration == 60);
}

TEST_CASE("remote evaluator: the role is the job secret's, never the first peer's") {
  EvaluatorFixture f;
  // None, a wrong one, one of another length: refused for good, nothing taken.
  std::string wrong = kSecret;
  wrong.back() = '0';
  for (const std::string& secret : {std::string(), wrong, std::string(kSecret).substr(1)}) {
    CAPTURE(secret);
    f.SayHello(secret);
    CHECK_FALSE(f.remote.connected());
    CHECK_FALSE(f.remote.joined_once());
    const proto::Message refusal = f.Next();
    REQUIRE(std::holds_alternative<proto::Error>(refusal.body));
    CHECK(std::get<proto::Error>(refusal.body).fatal);
    CHECK(std::get<proto::Error>(refusal.body).message.find("job secret") != std::string::npos);
  }
  // Its answers are not taken either.
  f.remote.SubmitOrSkip(EvaluatorFixture::At(10), true);
  f.Answer({1, 1.0, 0.0, 1});
  CHECK(f.remote.TakeResults().empty());
  f.Join();
  CHECK(f.remote.connected());
}

}  // namespace
}  // namespace dmlps::server
