// Backup workers, WBSP and A-BSP against stragglers: scripted event sequences,
// and a discrete-event driver in virtual time that plays the worker side of
// each mode, so that the invariants docs/algorithms-stragglers.md states ("Backup
// workers", "WBSP", "A-BSP") are checked on the schedules a slow worker
// actually produces.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "dmlps/sync/abps.h"
#include "dmlps/sync/backup.h"
#include "dmlps/sync/policy.h"
#include "dmlps/sync/wbsp.h"
#include "driver_test_util.h"
#include "policy_test_util.h"

namespace dmlps::sync::testing {
namespace {

PolicyConfig Config(const std::string& name, int64_t n) {
  return {.name = name, .job = {.workers = n}};
}

PolicyConfig BackupConfig(int64_t n, int64_t backup) {
  return {.name = "backup", .job = {.workers = n}, .backup = backup};
}

std::unique_ptr<Policy> MakeBackup(int64_t n, int64_t backup) {
  return MakeJoined(BackupConfig(n, backup));
}

// How long worker w's step (or chunk) takes when it starts at `now`.
using StepTimeAt = std::function<double(WorkerId w, double now)>;

StepTimeAt FixedSpeeds(std::vector<double> durations) {
  return [durations](WorkerId w, double) { return durations[w]; };
}

// ---------------------------------------------------------------- backup

struct BackupRun {
  std::vector<int64_t> pushes;
  std::vector<int64_t> dropped;
  int64_t applies = 0;
  int64_t wasted_samples = 0;
};

int64_t BackupSamples(WorkerId w) { return 10 + w; }

// Plays kSync workers against backup:b through the driver: pull, compute one
// step, push, pull again. Checks every event: a push is dropped iff it was
// computed on a version older than the model's, and each apply aggregates
// exactly N - b pushes, weighted by their samples.
BackupRun RunBackup(int64_t n, int64_t b, const StepTimeAt& step_time, double until) {
  DrivenPolicy driven(BackupConfig(n, b));
  const Policy& policy = driven.policy();
  driven.driver.Start();
  driven.Take();  // the first evaluation
  BackupRun run;
  run.pushes.assign(n, 0);
  run.dropped.assign(n, 0);
  std::vector<int64_t> base(n, -1);  // version the worker computes on; -1 while it waits
  std::vector<int64_t> clock(n, 0);
  VirtualTime time;
  int64_t staged_pushes = 0;
  int64_t staged_samples = 0;
  int64_t version = 0;  // as the applies seen so far count it

  const auto play = [&](const Effects& effects) {
    CheckPlainRoundEffects(effects);
    for (const Effect& e : effects) {
      if (const auto* stage = std::get_if<effect::Staged>(&e)) {
        ++staged_pushes;
        staged_samples += static_cast<int64_t>(stage->weight);
      } else if (const auto* apply = std::get_if<effect::Applied>(&e)) {
        CHECK(staged_pushes == n - b);
        CHECK(apply->scale == doctest::Approx(1.0 / static_cast<double>(staged_samples)));
        staged_pushes = 0;
        staged_samples = 0;
        ++version;
        ++run.applies;
      } else if (const auto* sent = std::get_if<effect::ModelSent>(&e)) {
        REQUIRE(base[sent->worker] == -1);
        CHECK(sent->reply.version == version);
        base[sent->worker] = version;
        time.Start(sent->worker, step_time(sent->worker, time.now()));
      }
    }
    CHECK(version == policy.version());
  };

  for (WorkerId w = 0; w < n; ++w) {
    driven.driver.Pull(w);
    const Effects pulled = driven.Take();
    CHECK(Describe(pulled) ==
          std::vector<std::string>{"model " + std::to_string(w) + " v0 b0 t-1"});
    play(pulled);
  }
  while (time.Due(until)) {
    const WorkerId w = time.Next();
    const int64_t version_before = policy.version();
    const PushInfo push{clock[w], base[w], BackupSamples(w), true};
    ++clock[w];
    base[w] = -1;
    ++run.pushes[w];
    const PushOutcome outcome = driven.Push(w, push);
    const Effects pushed = driven.Take();
    CHECK(policy.clock(w) == clock[w]);  // counted, used or not
    const bool late = push.base_version < version_before;
    CHECK(outcome.dropped == late);
    if (late) {
      REQUIRE(pushed.size() == 1);
      const std::vector<effect::Dropped> drops = All<effect::Dropped>(pushed, w);
      REQUIRE(drops.size() == 1);
      CHECK(drops[0].drop.reason.find("late") != std::string::npos);
      CHECK(drops[0].drop.late);  // expected by the policy: wasted work, not an error
      ++run.dropped[w];
      run.wasted_samples += push.samples;
    } else {
      CHECK(push.base_version == version_before);  // on time means on the current model
      CHECK(Count<effect::Dropped>(pushed) == 0);
      const std::vector<effect::Staged> staged = All<effect::Staged>(pushed, w);
      REQUIRE(staged.size() == 1);
      CHECK(staged[0].weight == static_cast<double>(push.samples));
    }
    play(pushed);
    driven.driver.Pull(w);
    const Effects pulled = driven.Take();
    // A late worker starts again on the newest model at once.
    if (late) CHECK(Count<effect::ModelSent>(pulled, w) == 1);
    play(pulled);
    // Only a worker that waits for the model is held.
    for (WorkerId u = 0; u < n; ++u) {
      if (driven.driver.pull_pending(u)) CHECK(base[u] == -1);
    }
  }
  CHECK(policy.iteration() == run.applies);
  return run;
}

TEST_CASE("backup: Name, mode, and the settings MakePolicy refuses") {
  CHECK(MakeBackup(4, 1)->Name() == "backup:1");
  CHECK(MakeBackup(5, 2)->Name() == "backup:2");
  CHECK(MakeBackup(4, 1)->mode() == WorkerMode::kSync);
  PolicyConfig config = Config("backup", 3);
  config.backup = 3;
  CHECK_FALSE(MakePolicy(config).ok());
  config.backup = -1;
  CHECK_FALSE(MakePolicy(config).ok());
}

TEST_CASE("backup: the first N - b pushes apply, sample-weighted; a late one is dropped") {
  auto backup = MakeBackup(4, 1);
  CHECK(Count<ReplyModel>(PullEach(backup.get(), 4)) == 4);

  Actions a;
  backup->PushArrived(0, {0, 0, 10, true}, &a);
  backup->PushArrived(1, {0, 0, 20, true}, &a);
  backup->PullRequested(0, &a);
  CHECK(Count<Stage>(a) == 2);
  CHECK(Count<Apply>(a) == 0);
  CHECK(CountFor<Hold>(a, 0) == 1);  // worker 0 already pushed on round 0
  CHECK(std::get<Stage>(a[0]).weight == 10);
  CHECK(std::get<Stage>(a[1]).weight == 20);

  a.clear();
  backup->PushArrived(2, {0, 0, 30, true}, &a);  // the third of N - b = 3 closes round 0
  REQUIRE(Count<Apply>(a) == 1);
  CHECK(Find<Apply>(a)->scale == doctest::Approx(1.0 / 60));
  REQUIRE(Find<ReplyModel>(a) != nullptr);
  CHECK(IndexOf<Apply>(a) < IndexOf<ReplyModel>(a));
  CHECK(CountFor<ReplyModel>(a, 0) == 1);
  CHECK(backup->version() == 1);
  CHECK(backup->iteration() == 1);

  // Worker 3 computed on version 0: late. Its clock counts, its gradient does not.
  const Drop late = OnlyDrop(PushActions(backup.get(), 3, {0, 0, 40, true}));
  CHECK(late.worker == 3);
  CHECK(late.reason.find("late") != std::string::npos);
  CHECK(backup->clock(3) == 1);
  a.clear();
  backup->PullRequested(3, &a);  // it has not pushed on round 1: starts at once
  CHECK(CountFor<ReplyModel>(a, 3) == 1);

  // Round 1: worker 3 is now among the first three; worker 1 becomes the late one.
  a.clear();
  backup->PullRequested(2, &a);
  backup->PushArrived(3, {1, 1, 40, true}, &a);
  backup->PushArrived(0, {1, 1, 10, true}, &a);
  backup->PushArrived(2, {1, 1, 30, true}, &a);
  REQUIRE(Count<Apply>(a) == 1);
  CHECK(Find<Apply>(a)->scale == doctest::Approx(1.0 / 80));
  OnlyDrop(PushActions(backup.get(), 1, {1, 1, 20, true}));
}

TEST_CASE("backup: a second push in one round is not counted twice") {
  auto backup = MakeBackup(3, 1);
  Actions a;
  backup->PushArrived(0, {0, 0, 8, true}, &a);
  OnlyDrop(PushActions(backup.get(), 0, {1, 0, 8, true}));  // no pull in between
  CHECK(backup->version() == 0);
  a.clear();
  backup->PushArrived(1, {0, 0, 8, true}, &a);
  CHECK(Count<Apply>(a) == 1);  // 0 and 1: two distinct workers
}

TEST_CASE("backup: a round of unusable pushes closes without an apply and nothing is late") {
  auto backup = MakeBackup(3, 1);
  Actions a;
  backup->PushArrived(0, {0, 0, 8, false}, &a);
  backup->PushArrived(1, {0, 0, 8, false}, &a);
  CHECK(Count<Stage>(a) == 0);
  CHECK(Count<Apply>(a) == 0);
  CHECK(backup->iteration() == 1);  // the round closed
  CHECK(backup->version() == 0);    // the model did not change
  // Worker 2's gradient is on version 0, which is still the model: on time.
  a.clear();
  backup->PushArrived(2, {0, 0, 8, true}, &a);
  CHECK(Count<Drop>(a) == 0);
  CHECK(Count<Stage>(a) == 1);
}

TEST_CASE("backup driver: with b = 1 and a 4x straggler, exactly the straggler's pushes drop") {
  // Steps take 1, 1, 1 and 4 units. The three fast workers close every round;
  // each of the straggler's gradients is computed on a model that is four
  // rounds old when it arrives.
  const BackupRun run = RunBackup(4, 1, FixedSpeeds({1, 1, 1, 4}), 100);
  CHECK(run.applies == 100);
  CHECK(run.pushes[3] == 25);
  CHECK(run.dropped[3] == 25);
  for (WorkerId w = 0; w < 3; ++w) {
    CHECK(run.pushes[w] == 100);
    CHECK(run.dropped[w] == 0);
  }
  CHECK(run.wasted_samples == 25 * BackupSamples(3));
}

TEST_CASE("backup driver: b = 0 is BSP, the straggler sets the pace and nothing drops") {
  const BackupRun run = RunBackup(4, 0, FixedSpeeds({1, 1, 1, 4}), 100);
  CHECK(run.applies == 25);
  for (WorkerId w = 0; w < 4; ++w) CHECK(run.dropped[w] == 0);
}

TEST_CASE("backup driver: under random step times only late pushes drop") {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    std::mt19937_64 rng(seed);
    StepTimeAt jitter = [&rng](WorkerId w, double) {
      // Worker 0 is 4x slower on average; the others vary around 1.
      const double d = std::uniform_real_distribution<double>(0.5, 1.5)(rng);
      return w == 0 ? 4 * d : d;
    };
    const int64_t b = 1 + static_cast<int64_t>(seed % 2);
    const BackupRun run = RunBackup(5, b, jitter, 200);
    CHECK(run.applies > 100);
    CHECK(run.dropped[0] > 0);
    int64_t dropped = 0;
    for (WorkerId w = 0; w < 5; ++w) dropped += run.dropped[w];
    CHECK(dropped > 0);
  }
}

// ---------------------------------------------------------------- wbsp

struct WbspRun {
  std::vector<WorkerId> closers;             // per closed round
  std::vector<double> close_times;           // per closed round
  std::vector<std::vector<int64_t>> deltas;  // per closed round, per worker
  std::vector<int64_t> downloads;            // per worker, the first pull included
  int64_t pushes = 0;
};

// Plays kLocal workers against wbsp: a worker pushes the delta of every local
// step and goes straight on; when the answer to a push says so, it downloads
// the model first. Nobody ever waits for anybody. Checks every event against
// the WBSP invariants.
WbspRun RunWbsp(int64_t n, const StepTimeAt& step_time, double until) {
  auto policy = MakeJoined(Config("wbsp", n));
  WbspRun run;
  run.downloads.assign(n, 0);
  std::vector<int64_t> clock(n, 0);
  std::vector<int64_t> base(n, -1);
  std::vector<bool> flagged(n, false);  // a round closed since the worker's last download
  std::vector<bool> pushed(n, false);   // pushed in the current round
  std::vector<int64_t> round_deltas(n, 0);
  std::set<std::pair<int64_t, WorkerId>> downloaded;  // (round, worker)
  std::map<int64_t, int64_t> round_version;           // the version every download of a round got
  VirtualTime time;

  auto download = [&](WorkerId w) {
    Actions actions;
    policy->PullRequested(w, &actions);
    REQUIRE(actions.size() == 1);  // answered at once, never held
    CHECK(Is<ReplyModel>(actions[0]));
    CHECK(WorkerOf(actions[0]) == w);
    const int64_t round = policy->iteration();
    CHECK(downloaded.insert({round, w}).second);  // at most once per round
    auto [it, first] = round_version.emplace(round, policy->version());
    CHECK(it->second == policy->version());
    base[w] = policy->version();
    flagged[w] = false;
    ++run.downloads[w];
  };

  for (WorkerId w = 0; w < n; ++w) {
    download(w);
    time.Start(w, step_time(w, 0));
  }
  while (time.Due(until)) {
    const WorkerId w = time.Next();
    const int64_t version_before = policy->version();
    const int64_t round_before = policy->iteration();
    Actions actions;
    policy->PushArrived(w, {clock[w], base[w], 32, true}, &actions);
    ++clock[w];
    ++run.pushes;
    pushed[w] = true;
    ++round_deltas[w];
    const bool closes = std::all_of(pushed.begin(), pushed.end(), [](bool p) { return p; });

    CHECK(Count<Hold>(actions) == 0);
    CHECK(Count<Drop>(actions) == 0);
    CHECK(Count<ReplyModel>(actions) == 0);
    // The push is answered in the same event, by one Continue, after the rest.
    REQUIRE(!actions.empty());
    CHECK(Count<Continue>(actions) == 1);
    const Action& answer = actions.back();
    REQUIRE(Is<Continue>(answer));
    CHECK(WorkerOf(answer) == w);
    REQUIRE(CountFor<Stage>(actions, w) == 1);
    CHECK(Find<Stage>(actions)->weight == 1.0);  // each delta counts on its own
    // The global model changes only when the last worker of the round pushes.
    REQUIRE(Count<ApplyDelta>(actions) == (closes ? 1 : 0));
    if (closes) {
      const double scale = Find<ApplyDelta>(actions)->scale;
      CHECK(scale == doctest::Approx(1.0 / static_cast<double>(n)));  // 1/N per delta
      CHECK(policy->version() == version_before + 1);
      CHECK(policy->iteration() == round_before + 1);
      run.closers.push_back(w);
      run.close_times.push_back(time.now());
      run.deltas.push_back(round_deltas);
      std::fill(pushed.begin(), pushed.end(), false);
      std::fill(round_deltas.begin(), round_deltas.end(), 0);
      std::fill(flagged.begin(), flagged.end(), true);
    } else {
      CHECK(policy->version() == version_before);
      CHECK(policy->iteration() == round_before);
    }
    // Told to download exactly when a round closed since its last download.
    CHECK(std::get<Continue>(answer).download == flagged[w]);
    if (std::get<Continue>(answer).download) download(w);
    time.Start(w, step_time(w, time.now()));
  }
  return run;
}

TEST_CASE("wbsp: Name and mode") {
  auto wbsp = MakeJoined(Config("wbsp", 2));
  CHECK(wbsp->Name() == "wbsp");
  CHECK(wbsp->mode() == WorkerMode::kLocal);
  auto overlap = MakeJoined(Config("wbsp-overlap", 2));
  CHECK(overlap->Name() == "wbsp-overlap");
  CHECK(overlap->mode() == WorkerMode::kLocalOverlap);
}

TEST_CASE("wbsp: deltas stage as they come; the last worker of the round applies them") {
  auto wbsp = MakeJoined(Config("wbsp", 3));
  CHECK(Count<ReplyModel>(PullEach(wbsp.get(), 3)) == 3);
  Actions a;

  // Worker 0 runs three local steps before worker 2 manages one.
  for (int64_t c = 0; c < 3; ++c) {
    a.clear();
    wbsp->PushArrived(0, {c, 0, 32, true}, &a);
    REQUIRE(a.size() == 2);
    CHECK(Is<Stage>(a[0]));
    CHECK(std::get<Stage>(a[0]).weight == 1.0);
    CHECK(Is<Continue>(a[1]));
    CHECK(WorkerOf(a[1]) == 0);
    CHECK_FALSE(std::get<Continue>(a[1]).download);
  }
  a.clear();
  wbsp->PushArrived(1, {0, 0, 32, true}, &a);
  CHECK(Count<ApplyDelta>(a) == 0);
  CHECK(wbsp->version() == 0);
  a.clear();
  wbsp->PushArrived(2, {0, 0, 32, true}, &a);
  REQUIRE(a.size() == 3);
  CHECK(Is<Stage>(a[0]));
  CHECK(Is<ApplyDelta>(a[1]));
  // 1/N per delta, not a per-worker mean.
  CHECK(std::get<ApplyDelta>(a[1]).scale == doctest::Approx(1.0 / 3));
  CHECK(Is<Continue>(a[2]));
  CHECK(std::get<Continue>(a[2]).download);  // the closer downloads at once
  CHECK(wbsp->version() == 1);
  CHECK(wbsp->iteration() == 1);

  // Worker 0 learns of the flag from its next push, keeps it until it downloads.
  a.clear();
  wbsp->PushArrived(0, {3, 0, 32, true}, &a);
  CHECK(std::get<Continue>(a.back()).download);
  a.clear();
  wbsp->PushArrived(0, {4, 0, 32, true}, &a);
  CHECK(std::get<Continue>(a.back()).download);
  a.clear();
  wbsp->PullRequested(0, &a);
  REQUIRE(a.size() == 1);
  CHECK(Is<ReplyModel>(a[0]));
  a.clear();
  wbsp->PushArrived(0, {5, 1, 32, true}, &a);
  CHECK_FALSE(std::get<Continue>(a.back()).download);  // downloaded once; no new round since
}

TEST_CASE("wbsp: a round of unusable deltas ends without changing the model, and flags") {
  auto wbsp = MakeJoined(Config("wbsp", 2));
  Actions a;
  wbsp->PushArrived(0, {0, 0, 32, false}, &a);
  a.clear();
  wbsp->PushArrived(1, {0, 0, 32, false}, &a);
  CHECK(Count<Stage>(a) == 0);
  CHECK(Count<ApplyDelta>(a) == 0);
  CHECK(wbsp->version() == 0);
  CHECK(wbsp->iteration() == 1);
  REQUIRE(a.size() == 1);
  CHECK(Is<Continue>(a[0]));
  CHECK(std::get<Continue>(a[0]).download);
}

TEST_CASE("wbsp driver: a 4x straggler closes every round; fast workers never wait") {
  const WbspRun run = RunWbsp(4, FixedSpeeds({1, 1, 1, 4}), 100);
  REQUIRE(run.closers.size() == 25);
  for (size_t r = 0; r < run.closers.size(); ++r) {
    CAPTURE(r);
    CHECK(run.closers[r] == 3);
    CHECK(run.deltas[r][3] == 1);
    for (WorkerId w = 0; w < 3; ++w) {
      // A fast worker contributes several deltas per round, 3 in the first
      // (it pushes at 1, 2, 3 before the straggler at 4), 4 afterwards.
      CHECK(run.deltas[r][w] > 1);
      CHECK(run.deltas[r][w] == (r == 0 ? 3 : 4));
    }
  }
  // Every worker downloaded once at the start and once per closed round (the
  // fast ones learn of the close at 100 from their push at 100).
  CHECK(run.downloads[3] == 1 + 25);
  for (WorkerId w = 0; w < 3; ++w) CHECK(run.downloads[w] == 1 + 25);
  // Nobody waited: every worker pushed once per unit of its own step time.
  CHECK(run.pushes == 3 * 100 + 25);
}

TEST_CASE("wbsp driver: the closer follows the straggler when a different worker slows down") {
  // Worker 3 is 4x slow until time 40, then worker 1 is and worker 3 is fast.
  StepTimeAt schedule = [](WorkerId w, double now) {
    const WorkerId slow = now < 40 ? 3 : 1;
    return w == slow ? 4.0 : 1.0;
  };
  const WbspRun run = RunWbsp(4, schedule, 120);
  int64_t closed_by_3 = 0;
  int64_t closed_by_1 = 0;
  for (size_t r = 0; r < run.closers.size(); ++r) {
    CAPTURE(r);
    CAPTURE(run.close_times[r]);
    if (run.close_times[r] <= 40) {
      CHECK(run.closers[r] == 3);
      ++closed_by_3;
    } else if (run.close_times[r] > 48) {
      CHECK(run.closers[r] == 1);
      ++closed_by_1;
    }
  }
  CHECK(closed_by_3 == 10);
  CHECK(closed_by_1 >= 15);
}

TEST_CASE("wbsp driver: with equal speeds every worker contributes one delta per round") {
  const WbspRun run = RunWbsp(3, FixedSpeeds({2, 2, 2}), 40);
  REQUIRE(run.closers.size() == 20);
  for (const std::vector<int64_t>& deltas : run.deltas) {
    for (int64_t k : deltas) CHECK(k == 1);
  }
}

// ---------------------------------------------------------------- abps

struct ChunkedRun {
  std::vector<double> apply_times;
  std::vector<std::vector<int64_t>> samples;  // per applied round, per worker
  std::vector<int64_t> sync_nows;             // per applied round: workers told to stop
  int64_t max_chunks_after_sync = 0;
};

// The round in progress of RunChunked: who pushed how many samples, who was
// told to stop.
struct ChunkedRound {
  explicit ChunkedRound(int64_t n) : pushed(n, false), samples(n, 0), told(n, 0) {}

  bool none_pushed() const { return std::none_of(pushed.begin(), pushed.end(), std::identity{}); }
  // The round closed with `apply` at `now`: every worker pushed, and the
  // update is the mean over the round's samples. Recorded in `run`; the
  // next round begins.
  void Closed(const effect::Applied& apply, double now, ChunkedRun* run) {
    CHECK(apply.with_optimizer);
    CHECK(std::all_of(pushed.begin(), pushed.end(), std::identity{}));
    const int64_t total = std::accumulate(samples.begin(), samples.end(), int64_t{0});
    CHECK(apply.scale == doctest::Approx(1.0 / static_cast<double>(total)));
    run->apply_times.push_back(now);
    run->samples.push_back(samples);
    run->sync_nows.push_back(std::accumulate(told.begin(), told.end(), int64_t{0}));
    std::fill(pushed.begin(), pushed.end(), false);
    std::fill(samples.begin(), samples.end(), 0);
    std::fill(told.begin(), told.end(), 0);
  }

  std::vector<bool> pushed;
  std::vector<int64_t> samples;
  std::vector<int64_t> told;  // SyncNows received
};

// Plays kChunked workers through the driver: pull (held until the round
// may start), process the batch chunk by chunk, look for SyncNow between
// chunks, push the samples processed. With `expect_sync` false the policy
// must never send SyncNow (bsp as the baseline).
ChunkedRun RunChunked(const PolicyConfig& config, const StepTimeAt& chunk_time, double until,
                      bool expect_sync) {
  DrivenPolicy driven(config);
  const Policy& policy = driven.policy();
  driven.driver.Start();
  driven.Take();  // the first evaluation
  const int64_t n = config.job.workers;
  ChunkedRun run;
  std::vector<int64_t> base(n, -1);  // -1 while waiting for the model
  std::vector<int64_t> clock(n, 0);  // pushes done, = the round the worker is in
  std::vector<int64_t> processed(n, 0);
  std::vector<int64_t> sync_round(n, -1);  // round of the last SyncNow received
  std::vector<int64_t> chunks_after_sync(n, 0);
  ChunkedRound current(n);
  VirtualTime time;
  int64_t version = 0;  // as the applies seen so far count it

  const auto play = [&](const Effects& effects) {
    for (const Effect& e : effects) {
      if (const auto* apply = std::get_if<effect::Applied>(&e)) {
        current.Closed(*apply, time.now(), &run);
        ++version;
      } else if (const auto* sent = std::get_if<effect::ModelSent>(&e)) {
        const WorkerId u = sent->worker;
        REQUIRE(base[u] == -1);
        CHECK(sent->reply.version == version);
        base[u] = version;
        processed[u] = 0;
        chunks_after_sync[u] = 0;
        time.Start(u, chunk_time(u, time.now()));
      } else if (const auto* sync_now = std::get_if<effect::SyncNowSent>(&e)) {
        const WorkerId u = sync_now->worker;
        CHECK(sync_now->round == clock[u]);  // the round the worker is in
        CHECK_FALSE(current.pushed[u]);
        CHECK(++current.told[u] == 1);  // once per worker per round
        sync_round[u] = sync_now->round;
      } else {
        CHECK(std::holds_alternative<effect::Staged>(e));
      }
    }
    CHECK(version == policy.version());
  };

  for (WorkerId w = 0; w < n; ++w) {
    driven.driver.Pull(w);
    play(driven.Take());
  }
  while (time.Due(until)) {
    const WorkerId w = time.Next();
    processed[w] = std::min(config.job.batch, processed[w] + config.chunk);
    const bool stop = sync_round[w] == clock[w];
    if (stop) ++chunks_after_sync[w];
    if (processed[w] < config.job.batch && !stop) {
      time.Start(w, chunk_time(w, time.now()));
      continue;
    }
    // No worker computes more than one chunk past SyncNow.
    CHECK(chunks_after_sync[w] <= 1);
    run.max_chunks_after_sync = std::max(run.max_chunks_after_sync, chunks_after_sync[w]);

    const int64_t version_before = policy.version();
    const int64_t round = policy.iteration();
    REQUIRE(clock[w] == round);
    std::vector<WorkerId> expected;
    if (current.none_pushed() && expect_sync) {
      for (WorkerId u = 0; u < n; ++u) {
        if (u != w) expected.push_back(u);
      }
    }
    const PushInfo push{clock[w], base[w], processed[w], true};
    ++clock[w];
    base[w] = -1;
    current.pushed[w] = true;
    current.samples[w] = push.samples;
    driven.Push(w, push);
    const Effects effects = driven.Take();
    CHECK(Count<effect::Dropped>(effects) == 0);
    const std::vector<effect::Staged> staged = All<effect::Staged>(effects, w);
    REQUIRE(staged.size() == 1);
    CHECK(staged[0].weight == static_cast<double>(push.samples));
    CHECK(push.base_version == version_before);  // the BSP invariant at Stage

    std::vector<WorkerId> got;
    for (const effect::SyncNowSent& sync_now : All<effect::SyncNowSent>(effects)) {
      CHECK(sync_now.round == round);
      CHECK(sync_now.worker != w);
      got.push_back(sync_now.worker);
    }
    std::sort(got.begin(), got.end());
    CHECK(got == expected);
    play(effects);
    driven.driver.Pull(w);
    play(driven.Take());
  }
  CHECK(policy.iteration() == static_cast<int64_t>(run.apply_times.size()));
  return run;
}

PolicyConfig ChunkedConfig(const std::string& name) {
  PolicyConfig config = Config(name, 4);
  config.job.batch = 128;
  config.chunk = 16;  // 8 chunks per batch
  return config;
}

TEST_CASE("abps: Name and mode") {
  auto abps = MakeJoined(Config("abps", 2));
  CHECK(abps->Name() == "abps");
  CHECK(abps->mode() == WorkerMode::kChunked);
  PolicyConfig config = Config("abps", 2);
  config.chunk = config.job.batch + 1;
  CHECK_FALSE(MakePolicy(config).ok());
}

TEST_CASE("abps: the first push tells the others to stop; the round applies their mean") {
  auto abps = MakeJoined(Config("abps", 3));
  CHECK(Count<ReplyModel>(PullEach(abps.get(), 3)) == 3);

  Actions a = PushActions(abps.get(), 1, {0, 0, 64, true});  // worker 1 finished its whole batch
  CHECK(Count<Stage>(a) == 1);
  CHECK(Count<SyncNow>(a) == 2);
  CHECK(CountFor<SyncNow>(a, 0) == 1);
  CHECK(CountFor<SyncNow>(a, 2) == 1);
  CHECK(CountFor<SyncNow>(a, 1) == 0);
  for (const Action& x : a) {
    if (Is<SyncNow>(x)) CHECK(std::get<SyncNow>(x).round == 0);
  }
  a.clear();
  abps->PullRequested(1, &a);
  CHECK(CountFor<Hold>(a, 1) == 1);

  a.clear();
  abps->PushArrived(0, {0, 0, 32, true}, &a);  // stopped after 2 of 4 chunks
  CHECK(Count<SyncNow>(a) == 0);
  CHECK(Count<Apply>(a) == 0);
  a.clear();
  abps->PushArrived(2, {0, 0, 16, true}, &a);
  CHECK(Count<SyncNow>(a) == 0);
  REQUIRE(Count<Apply>(a) == 1);
  CHECK(Find<Apply>(a)->scale == doctest::Approx(1.0 / 112));  // Σ S_i / Σ n_i
  CHECK(CountFor<ReplyModel>(a, 1) == 1);
  CHECK(abps->version() == 1);
  CHECK(abps->iteration() == 1);

  // Round 1: SyncNow carries the new round and goes to the others again.
  a.clear();
  abps->PullRequested(0, &a);
  abps->PullRequested(2, &a);
  a.clear();
  abps->PushArrived(2, {1, 1, 64, true}, &a);
  CHECK(CountFor<SyncNow>(a, 0) == 1);
  CHECK(CountFor<SyncNow>(a, 1) == 1);
  CHECK(CountFor<SyncNow>(a, 2) == 0);
  REQUIRE(Find<SyncNow>(a) != nullptr);
  CHECK(Find<SyncNow>(a)->round == 1.0);
}

TEST_CASE("abps: a stale gradient or a second push in a round is refused and not counted") {
  auto abps = MakeJoined(Config("abps", 2));
  OnlyDrop(PushStale(abps.get(), 16));
  CHECK(abps->clock(0) == 1);
  CHECK(Count<SyncNow>(PushActions(abps.get(), 0, {1, 1, 16, true})) == 1);
  // Again in round 1, without a pull.
  OnlyDrop(PushActions(abps.get(), 0, {2, 1, 16, true}));
  CHECK(abps->clock(0) == 2);
  CHECK(abps->version() == 1);
}

TEST_CASE("abps driver: with a 4x straggler a round takes about the fast workers' batch time") {
  // Chunks take 1 unit on the fast workers, 4 on the straggler; a batch is 8
  // chunks: 8 units fast, 32 on the straggler.
  const PolicyConfig config = ChunkedConfig("abps");
  const ChunkedRun run = RunChunked(config, FixedSpeeds({1, 1, 1, 4}), 200, true);
  REQUIRE(run.apply_times.size() >= 10);
  double previous = 0;
  for (size_t r = 0; r < run.apply_times.size(); ++r) {
    CAPTURE(r);
    const double round_time = run.apply_times[r] - previous;
    previous = run.apply_times[r];
    // The fast batch plus at most the straggler's chunk in progress.
    CHECK(round_time <= 8 + 4);
    CHECK(round_time < 32);
    for (WorkerId w = 0; w < 3; ++w) CHECK(run.samples[r][w] == config.job.batch);
    CHECK(run.samples[r][3] > 0);
    CHECK(run.samples[r][3] < config.job.batch);  // the straggler stopped early
    CHECK(run.sync_nows[r] == 3);                 // everyone but the first pusher
  }
  CHECK(run.max_chunks_after_sync == 1);
}

TEST_CASE("abps driver: bsp under the same straggler waits its whole batch every round") {
  const ChunkedRun run = RunChunked(ChunkedConfig("bsp"), FixedSpeeds({1, 1, 1, 4}), 200, false);
  REQUIRE(run.apply_times.size() == 6);
  for (size_t r = 0; r < run.apply_times.size(); ++r) {
    CHECK(run.apply_times[r] == doctest::Approx(32.0 * static_cast<double>(r + 1)));
  }
  for (int64_t told : run.sync_nows) CHECK(told == 0);
}

TEST_CASE("abps driver: the stopping set changes with the straggler, invariants hold throughout") {
  std::mt19937_64 rng(7);
  // Each chunk, each worker is 4x slow with probability 0.2.
  StepTimeAt jitter = [&rng](WorkerId, double) {
    return std::bernoulli_distribution(0.2)(rng) ? 4.0 : 1.0;
  };
  const PolicyConfig config = ChunkedConfig("abps");
  const ChunkedRun run = RunChunked(config, jitter, 500, true);
  REQUIRE(run.apply_times.size() >= 20);
  CHECK(run.max_chunks_after_sync <= 1);
  // Different workers end up stopping early in different rounds.
  std::set<WorkerId> stopped_early;
  for (const std::vector<int64_t>& samples : run.samples) {
    for (WorkerId w = 0; w < 4; ++w) {
      if (samples[w] < config.job.batch) stopped_early.insert(w);
    }
  }
  CHECK(stopped_early.size() == 4);
}

}  // namespace
}  // namespace dmlps::sync::testing
