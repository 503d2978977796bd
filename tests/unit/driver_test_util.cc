#include "driver_test_util.h"

#include <utility>

#include "dmlps/auto/auto.h"

namespace dmlps::sync::testing {

void RecordingSink::Stage(const HandledPush<int64_t>& push, double weight) {
  effects_.push_back(effect::Staged{push.worker, push.clock, push.payload, weight});
}

void RecordingSink::Apply(double scale, bool with_optimizer, int64_t version) {
  effects_.push_back(effect::Applied{scale, with_optimizer, version});
}

void RecordingSink::SendModel(WorkerId w, const Reply& reply) {
  effects_.push_back(effect::ModelSent{w, reply});
}

void RecordingSink::SendContinue(WorkerId w, bool download, const Reply& reply) {
  effects_.push_back(effect::Continued{w, download, reply});
}

void RecordingSink::SendSyncNow(WorkerId w, int64_t round) {
  effects_.push_back(effect::SyncNowSent{w, round});
}

void RecordingSink::Dropped(WorkerId w, const Drop& drop) {
  effects_.push_back(effect::Dropped{w, drop});
}

void RecordingSink::Evaluate(bool must) { effects_.push_back(effect::EvaluationAsked{must}); }

void RecordingSink::LimitReached() { effects_.push_back(effect::LimitReached{}); }

void RecordingSink::HoldChanged(bool holding, int64_t live) {
  effects_.push_back(effect::HoldChanged{holding, live});
}

void RecordingSink::Switched(const Switch& change) { effects_.push_back(effect::Switched{change}); }

void RecordingSink::Decided(const Decision& decision) {
  effects_.push_back(effect::Decided{decision});
}

Effects RecordingSink::Take() {
  Effects taken;
  taken.swap(effects_);
  return taken;
}

void CheckPlainRoundEffects(const Effects& effects) {
  for (const Effect& e : effects) {
    CHECK_FALSE(std::holds_alternative<effect::Continued>(e));
    CHECK_FALSE(std::holds_alternative<effect::SyncNowSent>(e));
    CHECK_FALSE(std::holds_alternative<effect::Switched>(e));
    CHECK_FALSE(std::holds_alternative<effect::Decided>(e));
    if (const auto* apply = std::get_if<effect::Applied>(&e)) CHECK(apply->with_optimizer);
    if (const auto* sent = std::get_if<effect::ModelSent>(&e)) {
      CHECK(sent->reply.batch == 0);
      CHECK(sent->reply.token == -1);
      CHECK(sent->reply.local_steps == 0);
    }
  }
}

namespace {

// x as printed in effect lines: no trailing zeros ("0.025", "1").
std::string EffectNumber(double x) {
  std::string s = std::to_string(x);
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s;
}

std::string ReplyFields(const Reply& reply) {
  return " v" + std::to_string(reply.version) + " b" + std::to_string(reply.batch) + " t" +
         std::to_string(reply.token);
}

struct EffectLine {
  std::string operator()(const effect::Staged& e) const {
    return "stage " + std::to_string(e.worker) + " c" + std::to_string(e.clock) + " p" +
           std::to_string(e.payload) + " x" + EffectNumber(e.weight);
  }
  std::string operator()(const effect::Applied& e) const {
    return (e.with_optimizer ? "apply " : "delta ") + EffectNumber(e.scale) + " v" +
           std::to_string(e.version);
  }
  std::string operator()(const effect::ModelSent& e) const {
    return "model " + std::to_string(e.worker) + ReplyFields(e.reply);
  }
  std::string operator()(const effect::Continued& e) const {
    return "continue " + std::to_string(e.worker) + (e.download ? " download" : "") +
           ReplyFields(e.reply);
  }
  std::string operator()(const effect::SyncNowSent& e) const {
    return "syncnow " + std::to_string(e.worker) + " r" + std::to_string(e.round);
  }
  std::string operator()(const effect::Dropped& e) const {
    return "drop " + std::to_string(e.worker) + (e.drop.late ? " late" : " error");
  }
  std::string operator()(const effect::EvaluationAsked& e) const {
    return e.must ? "eval must" : "eval";
  }
  std::string operator()(const effect::LimitReached& /*e*/) const { return "limit"; }
  std::string operator()(const effect::HoldChanged& e) const {
    return (e.holding ? "hold " : "go on ") + std::to_string(e.live);
  }
  std::string operator()(const effect::Switched& e) const {
    return "switch " + e.change.from + " " + e.change.to + (e.change.done ? " done" : "");
  }
  std::string operator()(const effect::Decided& e) const {
    return "decided " + e.decision.running + " " + e.decision.chosen;
  }
};

}  // namespace

std::vector<std::string> Describe(const Effects& effects) {
  std::vector<std::string> lines;
  for (const Effect& e : effects) lines.push_back(std::visit(EffectLine{}, e));
  return lines;
}

DrivenPolicy::DrivenPolicy(const PolicyConfig& config, const DriverOptions& options,
                           const WorkerInfo& info)
    : DrivenPolicy(
          [&config] {
            // auto's room makes auto, and every other policy as sync does.
            Result<std::unique_ptr<Policy>> made = autopolicy::MakePolicy(config);
            REQUIRE(made.ok());
            return std::move(made).value();
          }(),
          options, info) {}

DrivenPolicy::DrivenPolicy(std::unique_ptr<Policy> policy, const DriverOptions& options,
                           const WorkerInfo& info)
    : driver(std::move(policy), options,
             DriverSinks<int64_t>{.replies = sink, .updates = sink, .events = sink}) {
  for (WorkerId w = 0; w < num_workers(); ++w) driver.Attach(w, info);
}

Effects DrivenPolicy::StartPulled() {
  for (WorkerId w = 0; w < num_workers(); ++w) driver.Pull(w);
  driver.Start();
  return Take();
}

PushOutcome DrivenPolicy::Push(WorkerId w, const PushInfo& push, int64_t payload) {
  const PushOutcome outcome = driver.Push(w, push, payload);
  driver.Advance();
  return outcome;
}

}  // namespace dmlps::sync::testing
