#include "auto_run_test_util.h"

#include <doctest/doctest.h>

#include <chrono>
#include <random>
#include <thread>
#include <utility>
#include <variant>

#include "advise_test_util.h"
#include "dmlps/auto/auto.h"
#include "dmlps/sync/driver.h"
#include "driver_test_util.h"
#include "policy_test_util.h"

namespace dmlps::sync::testing {

std::function<double(WorkerId, int64_t)> RandomDelays(double held_s, int one_in, WorkerId heavy) {
  return [held_s, one_in, heavy](WorkerId w, int64_t step) {
    std::mt19937_64 random(static_cast<uint64_t>(w) * 100003 + static_cast<uint64_t>(step));
    const double u = std::uniform_real_distribution<double>(0, 1)(random);
    return u < (w == heavy ? 0.5 : 1.0 / one_in) ? held_s : 0.01;
  };
}

AutoRun RunAuto(int64_t n, const std::function<double(WorkerId, int64_t)>& step_s, double until,
                const AutoRunOptions& options) {
  const auto& accuracy = options.accuracy;
  const auto& send_s = options.send_s;
  const auto& share_of = options.share_of;
  const auto& pause_s = options.pause_s;
  const bool background = options.background;
  PolicyConfig config;
  config.name = "auto";
  config.job.model = options.model;
  config.candidates = options.candidates;
  config.job.workers = n;
  config.job.batch = kAutoBatch;
  config.decide_in_background = background;
  if (options.every > 0) config.decide_every = options.every;
  if (accuracy) config.job.target_accuracy = 0.85;
  const auto make = [&]() -> std::unique_ptr<Policy> {
    Result<std::unique_ptr<Policy>> made =
        options.env ? autopolicy::MakeAuto(config, advise::fixtures::Tables(), options.env)
                    : autopolicy::MakePolicy(config);
    REQUIRE(made.ok());
    return std::move(made).value();
  };
  // The server's evaluations: every 10 iterations when there is an accuracy.
  DrivenPolicy driven(make(), DriverOptions{.eval_every = accuracy ? 10 : 0},
                      WorkerInfo{.host_cores = options.host_cores});
  const SwitchingPolicy& switching = driven.policy_as<SwitchingPolicy>();
  VirtualTime time;
  std::vector<int64_t> clock(n, 0);
  std::vector<int64_t> base(n, 0);
  std::vector<double> took(n, 0);
  std::vector<double> paused(n, 0);
  std::vector<int64_t> batch(n, kAutoBatch);
  AutoRun run;
  // Plays `effects`; an evaluation asked for is answered at once, at the
  // accuracy of the iteration reached, and what the answer does is played.
  const auto play = [&](Effects effects) {
    for (; !effects.empty(); effects = driven.Take()) {
      int64_t asked = 0;
      for (const Effect& e : effects) {
        if (const auto* d = std::get_if<effect::Decided>(&e)) run.decisions.push_back(d->decision);
        if (const auto* s = std::get_if<effect::Switched>(&e)) run.switches.push_back(s->change);
        if (std::holds_alternative<effect::EvaluationAsked>(e)) ++asked;
        const auto* sent = std::get_if<effect::ModelSent>(&e);
        if (sent == nullptr) continue;
        const WorkerId w = sent->worker;
        if (sent->reply.batch > 0) batch[w] = sent->reply.batch;
        base[w] = sent->reply.version;
        took[w] = step_s(w, clock[w]) * static_cast<double>(batch[w]) / kAutoBatch;
        paused[w] = pause_s ? pause_s(w, clock[w]) : 0;
        time.Start(w, took[w] + paused[w] + (send_s ? send_s(w, clock[w]) : 0));
      }
      for (; accuracy && asked > 0; --asked) {
        driven.driver.Evaluated(accuracy(driven.driver.iteration()));
      }
    }
  };
  play(driven.StartPulled());
  // In the background the run goes on past `until` (up to 60 s of wall
  // clock) until a switch is done: an instrumented build predicts slowly.
  const auto started = std::chrono::steady_clock::now();
  const auto waiting = [&] {
    return background && run.switches.size() < 2 &&
           std::chrono::steady_clock::now() - started < std::chrono::seconds(60);
  };
  while (time.Due(until) || (waiting() && !time.empty())) {
    const WorkerId w = time.Next();
    PushInfo push{clock[w], base[w], batch[w], true};
    push.batch = batch[w];
    push.busy_s = took[w] + paused[w];
    push.compute_s = took[w];
    push.run_wait_s = took[w] * (1 - (share_of ? share_of(w, clock[w]) : options.core_share));
    push.comm_s = send_s ? send_s(w, clock[w]) : 0;
    push.cycle_s = push.busy_s + push.comm_s + 0.0005;
    if (options.reported) options.reported(w, clock[w], &push);
    ++clock[w];
    if (background) std::this_thread::sleep_for(std::chrono::microseconds(200));
    driven.Push(w, push);
    driven.driver.Pull(w);
    play(driven.Take());
  }
  run.running = switching.running();
  return run;
}

}  // namespace dmlps::sync::testing
