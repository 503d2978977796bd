// The simulator's worker on its own, driven by hand through a host that
// records what it asks for: the steps of each mode, times worked out by hand.
#include <doctest/doctest.h>

#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "sim/worker.h"

namespace dmlps::sim {
namespace {

struct Job {
  double work = 0;
  double shared_speed = 0;
};

struct Wakeup {
  double time = 0;
  WorkerThread thread = WorkerThread::kCompute;
};

// Keeps the virtual clock where a test sets it and records every request.
class RecordingHost : public WorkerHost {
 public:
  double now() const override { return time; }
  void Wake(int64_t /*w*/, double at, WorkerThread thread) override {
    wakeups.push_back({at, thread});
  }
  void StartJob(int64_t /*w*/, double work, double shared_speed) override {
    jobs.push_back({work, shared_speed});
  }
  void SendToServer(int64_t /*w*/, int64_t /*bytes*/, Message message) override {
    sent.push_back(std::move(message));
  }
  void Fail(std::string why) override { failures.push_back(std::move(why)); }

  double time = 0;
  std::vector<Job> jobs;
  std::vector<Wakeup> wakeups;
  std::vector<Message> sent;
  std::vector<std::string> failures;
};

data::Dataset Random(int64_t rows) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> u(0, 1);
  data::Dataset d;
  d.dim = 4;
  d.classes = 2;
  for (int64_t i = 0; i < rows; ++i) {
    for (int j = 0; j < 4; ++j) d.dense.push_back(u(rng));
    d.labels.push_back(static_cast<int32_t>(i % 2));
  }
  return d;
}

// One worker of two, steps costing 1 ms + 1 ms a sample, a pass over the
// parameters 1 µs, nothing else.
struct SimWorkerFixture {
  explicit SimWorkerFixture(sync::WorkerMode mode, double slowdown = 1) {
    worker::StragglerSpec spec;
    spec.slowdown = slowdown;
    config.job = {.workers = 2, .batch = 4, .lr = 0.5, .momentum = 0.5};
    config.policy = sync::PolicyConfig{.chunk = 2, .token_size = 2};
    config.model = *model::ParseModelSpec("softmax", 4, 2);
    config.stragglers = {spec, spec};
    config.cost = CostModel::Linear(1e-3, 1e-3);
    config.cost.param_s = 1e-6;
    math = std::make_unique<StepMath>(config.model, train);
    worker = std::make_unique<SimWorker>(config, mode, 0, std::pair<int64_t, int64_t>{0, 16}, *math,
                                         host);
  }

  // The model, version `version`, arrives at time `at`.
  void Model(double at, int64_t version, int64_t token = -1) {
    host.time = at;
    Message m;
    m.kind = MessageKind::kModel;
    m.model = std::make_shared<const std::vector<float>>(math->model.num_params(), 0.f);
    m.version = version;
    m.token = token;
    worker->Receive(std::move(m));
  }
  void Continue(double at, bool download, int64_t token = -1) {
    host.time = at;
    Message m;
    m.kind = MessageKind::kContinue;
    m.download = download;
    m.token = token;
    worker->Receive(std::move(m));
  }
  void JobDone(double at) {
    host.time = at;
    worker->OnJobDone();
  }

  data::Dataset train = Random(16);
  SimConfig config;
  RecordingHost host;
  std::unique_ptr<StepMath> math;
  std::unique_ptr<SimWorker> worker;
};

TEST_CASE("sim worker: a worker holds no random generator it does not draw from") {
  // Thousands are simulated at once: without noise and --delay-prob only
  // the data cursor's generator (2.5 KB) is there, not three.
  CHECK(sizeof(worker::StragglerProfile) < 1024);
  CHECK(sizeof(SimWorker) < 2 * sizeof(std::mt19937_64));
}

TEST_CASE("sim worker: sync: compute a batch, push, pull the next model") {
  SimWorkerFixture f(sync::WorkerMode::kSync, 2);
  f.Model(0.5, 3);
  REQUIRE(f.host.jobs.size() == 1);
  CHECK(f.host.jobs[0].work == doctest::Approx(5e-3));  // 1 ms + 4 samples
  f.JobDone(0.505);
  // A slowdown of 2 sleeps as long again before the push goes.
  REQUIRE(f.host.wakeups.size() == 1);
  CHECK(f.host.wakeups[0].time == doctest::Approx(0.510));
  CHECK(f.host.sent.empty());
  f.host.time = 0.510;
  f.worker->OnWake(WorkerThread::kCompute);
  REQUIRE(f.host.sent.size() == 2);
  const sync::PushInfo& push = f.host.sent[0].push;
  CHECK(f.host.sent[0].kind == MessageKind::kPush);
  CHECK(push.clock == 0);
  CHECK(push.base_version == 3);
  CHECK(push.samples == 4);
  CHECK(push.busy_s == doctest::Approx(10e-3));
  CHECK(push.cpu == doctest::Approx(0.5));
  // From the model's arrival to the push leaving; no link cap, no sending time.
  CHECK(push.cycle_s == doctest::Approx(10e-3));
  CHECK(push.comm_s == 0);
  CHECK(f.host.sent[1].kind == MessageKind::kPull);
  CHECK(f.host.sent[1].clock == 1);
  CHECK(f.worker->stats().wait_s == doctest::Approx(0.5));
  CHECK(f.worker->stats().straggle_s == doctest::Approx(5e-3));
  CHECK(f.host.failures.empty());
}

TEST_CASE("sim worker: chunked: told to sync, it pushes after the chunk it is in") {
  SimWorkerFixture f(sync::WorkerMode::kChunked);
  f.Model(0, 0);
  REQUIRE(f.host.jobs.size() == 1);
  CHECK(f.host.jobs[0].work == doctest::Approx(3e-3));  // a chunk of 2
  Message now;
  now.kind = MessageKind::kSyncNow;
  now.round = 0;
  f.worker->Receive(std::move(now));
  f.JobDone(3e-3);
  REQUIRE(f.host.sent.size() == 2);
  CHECK(f.host.sent[0].push.samples == 2);
  CHECK(f.host.jobs.size() == 1);  // no second chunk
}

TEST_CASE("sim worker: local: the staged delta is the local step's, then it awaits Continue") {
  SimWorkerFixture f(sync::WorkerMode::kLocal);
  f.Model(0, 0);
  f.JobDone(5e-3);
  // The local optimizer step: 4 passes over the parameters.
  REQUIRE(f.host.jobs.size() == 2);
  const auto n = static_cast<double>(f.math->model.num_params());
  CHECK(f.host.jobs[1].work == doctest::Approx(4 * n * 1e-6));
  f.JobDone(6e-3);
  REQUIRE(f.host.sent.size() == 1);
  CHECK(f.host.sent[0].push.samples == 4);
  CHECK(f.worker->SamplesOf(f.host.sent[0].push).empty());
  // From zero momentum the step moves the model by -lr * grad: the delta
  // staged with weight 2 is twice that, and not zero.
  std::vector<float> acc(f.math->model.num_params(), 0.f);
  f.worker->AddPush({}, 2, acc);
  double norm = 0;
  for (float v : acc) norm += static_cast<double>(v) * v;
  CHECK(norm > 0);
  // Continue without download: the next step starts at once.
  f.Continue(7e-3, false);
  CHECK(f.host.jobs.size() == 3);
  CHECK(f.worker->stats().wait_s == doctest::Approx(1e-3));
}

TEST_CASE("sim worker: local-overlap: the compute loop goes on while a push is out") {
  SimWorkerFixture f(sync::WorkerMode::kLocalOverlap);
  f.Model(0, 0);
  f.JobDone(5e-3);  // compute
  f.JobDone(6e-3);  // update: pushed, and the next step starts
  REQUIRE(f.host.sent.size() == 1);
  CHECK(f.host.jobs.size() == 3);
  f.JobDone(11e-3);
  f.JobDone(12e-3);  // the second step waits for the first push's answer
  CHECK(f.host.sent.size() == 1);
  f.Continue(13e-3, false);  // answered: the pending step goes
  REQUIRE(f.host.sent.size() == 2);
  CHECK(f.host.sent[1].push.clock == 1);
  CHECK(f.host.sent[1].push.samples == 4);
  // A download asked for pulls, without stopping the compute loop.
  f.Continue(14e-3, true);
  REQUIRE(f.host.sent.size() == 3);
  CHECK(f.host.sent[2].kind == MessageKind::kPull);
  CHECK(f.host.failures.empty());
}

TEST_CASE("sim worker: token: a step needs a token, and each grant is a step") {
  SUBCASE("granted") {
    SimWorkerFixture f(sync::WorkerMode::kToken);
    f.Model(0, 0, 5);
    REQUIRE(f.host.jobs.size() == 1);
    CHECK(f.host.jobs[0].work == doctest::Approx(3e-3));  // a token of 2
    f.JobDone(3e-3);
    REQUIRE(f.host.sent.size() == 1);
    CHECK(f.host.sent[0].push.batch == 2);
    f.Continue(4e-3, false, 6);
    CHECK(f.host.jobs.size() == 2);
  }
  SUBCASE("none") {
    SimWorkerFixture f(sync::WorkerMode::kToken);
    f.Model(0, 0);
    CHECK(f.host.jobs.empty());
    REQUIRE(f.host.failures.size() == 1);
  }
}

TEST_CASE("sim worker: a Continue in a sync mode is a failure") {
  SimWorkerFixture f(sync::WorkerMode::kSync);
  f.Continue(0, false);
  CHECK(f.host.failures.size() == 1);
}

}  // namespace
}  // namespace dmlps::sim
