#include "dmlps/sync/switching.h"

#include <spdlog/fmt/fmt.h>

#include <type_traits>
#include <utility>
#include <variant>

namespace dmlps::sync {

namespace {

std::unique_ptr<Policy> MakeInner(const InnerPolicyMaker& make, std::string_view name,
                                  int64_t num_workers) {
  Result<std::unique_ptr<Policy>> made = make(name, num_workers);
  // The maker's names are checked when the switching policy is made.
  return made.ok() ? std::move(made).value() : nullptr;
}

}  // namespace

SwitchingPolicy::SwitchingPolicy(int64_t num_workers, std::unique_ptr<SwitchDecider> decider,
                                 InnerPolicyMaker make, int64_t batch)
    : Policy(num_workers),
      decider_(std::move(decider)),
      make_(std::move(make)),
      running_(decider_->Initial()),
      held_(num_workers, false),
      offset_(num_workers, 0),
      info_(num_workers),
      batch_set_(num_workers, false),
      batch_(batch) {
  inner_ = MakeInner(make_, running_, num_workers);
}

SwitchContext SwitchingPolicy::Context() const { return {running_, iteration(), this}; }

PushInfo SwitchingPolicy::Translate(WorkerId w, const PushInfo& push) const {
  PushInfo inner = push;
  inner.clock -= offset_[w];
  // A gradient computed before the inner policy started has a negative base.
  inner.base_version -= version_offset_;
  return inner;
}

void SwitchingPolicy::Forward(const Actions& inner, Actions* out) {
  for (const Action& action : inner) {
    if (const auto* apply = std::get_if<Apply>(&action)) {
      EmitApply(apply->scale, out);
    } else if (const auto* delta = std::get_if<ApplyDelta>(&action)) {
      EmitApplyDelta(delta->scale, out);
    } else if (const auto* batch = std::get_if<SetBatch>(&action)) {
      batch_set_[batch->worker] = true;
      out->push_back(action);
    } else if (const auto* sync_now = std::get_if<SyncNow>(&action)) {
      out->push_back(SyncNow{sync_now->worker, sync_now->round + offset_[sync_now->worker]});
    } else {
      out->push_back(action);
    }
  }
}

void SwitchingPolicy::OnJoin(WorkerId w, const WorkerInfo& info, Actions* out) {
  Actions inner;
  inner_->WorkerJoined(w, info, &inner);
  decider_->WorkerJoined(w, info);
  info_[w] = info;
  held_[w] = false;
  offset_[w] = clock(w) - inner_->clock(w);
  Forward(inner, out);
}

void SwitchingPolicy::OnLeave(WorkerId w, Actions* out) {
  held_[w] = false;
  decider_->WorkerGone(w);
  Actions inner;
  inner_->WorkerLeft(w, &inner);
  Forward(inner, out);
  Drain(out);
}

void SwitchingPolicy::OnAddWorker() {
  inner_->AddWorker();
  held_.push_back(false);
  offset_.push_back(0);
  info_.emplace_back();
  batch_set_.push_back(false);
  decider_->RankAdded();
}

void SwitchingPolicy::OnRestore(const PolicyState& state) {
  // Workers rejoin at the start of an iteration: the initial policy starts
  // afresh from the checkpoint's model, and the decider decides again.
  version_offset_ = state.version;
  iteration_offset_ = state.iteration;
}

std::string SwitchingPolicy::Refuse(WorkerId w, const PushInfo& push) const {
  // The inner policy's own checks, so that both count the push or neither.
  return inner_->Refuse(w, Translate(w, push));
}

void SwitchingPolicy::OnPush(WorkerId w, const PushInfo& push, Actions* out) {
  Actions inner;
  inner_->PushArrived(w, Translate(w, push), &inner);
  Forward(inner, out);
  const std::optional<SwitchRequest> request = decider_->AfterPush(Context(), w, push);
  Report(out);
  Request(request, out);
  Drain(out);
}

bool SwitchingPolicy::MayStart(WorkerId w) const { return !pending_ && inner_->MayStart(w); }

void SwitchingPolicy::OnPull(WorkerId w, Actions* out) {
  // While draining, only a worker the inner policy still needs (one that
  // has not pushed in a round in progress) gets the model.
  if (pending_ && !(!inner_->AtBoundary() && inner_->MayStart(w))) {
    held_[w] = true;
    out->push_back(Hold{w});
    Drain(out);
    return;
  }
  Actions inner;
  inner_->PullRequested(w, &inner);
  Forward(inner, out);
}

void SwitchingPolicy::OnEvaluation(double accuracy, Actions* out) {
  const std::optional<SwitchRequest> request = decider_->AfterEvaluation(Context(), accuracy);
  Report(out);
  Request(request, out);
  Drain(out);
}

void SwitchingPolicy::Request(const std::optional<SwitchRequest>& request, Actions* out) {
  if (!request || pending_ || request->to == running_) return;
  pending_ = *request;
  out->push_back(Switch{running_, request->to, request->why, request->measured, request->threshold,
                        iteration(), false});
}

void SwitchingPolicy::Report(Actions* out) {
  for (Decision& decision : decider_->TakeDecisions()) out->push_back(std::move(decision));
}

void SwitchingPolicy::Drain(Actions* out) {
  if (!pending_) return;
  // A round in progress needs the pushes of the workers that have not made
  // theirs: their held pulls go to the inner policy after all.
  if (!inner_->AtBoundary()) {
    for (WorkerId w = 0; w < num_workers(); ++w) {
      if (!held_[w] || !inner_->MayStart(w)) continue;
      held_[w] = false;
      Actions inner;
      inner_->PullRequested(w, &inner);
      Forward(inner, out);
    }
    return;
  }
  for (WorkerId w = 0; w < num_workers(); ++w) {
    if (joined(w) && !held_[w]) return;  // still computing, or its pull not yet here
  }
  Finish(out);
}

void SwitchingPolicy::Finish(Actions* out) {
  std::unique_ptr<Policy> next = MakeInner(make_, pending_->to, num_workers());
  if (next == nullptr) {
    // Not a policy the maker can make (a broken REQUIRES): stay, and let the
    // workers held for the switch go on under the running policy, which
    // would otherwise never answer them.
    pending_.reset();
    Actions inner;
    AnswerHeld(&inner);
    Forward(inner, out);
    return;
  }
  iteration_offset_ += inner_->iteration();
  version_offset_ = version();
  inner_ = std::move(next);
  const std::string from = std::exchange(running_, pending_->to);
  out->push_back(Switch{from, running_, pending_->why, pending_->measured, pending_->threshold,
                        iteration(), true});
  pending_.reset();
  ++switches_;
  decider_->Switched(running_);
  // A batch the last policy set goes back to the job's; the new policy may
  // set its own (its SetBatch comes later and wins).
  for (WorkerId w = 0; w < num_workers(); ++w) {
    if (!batch_set_[w] || batch_ < 1) continue;
    batch_set_[w] = false;
    if (joined(w)) out->push_back(SetBatch{w, batch_});
  }
  Actions inner;
  for (WorkerId w = 0; w < num_workers(); ++w) {
    if (!joined(w)) continue;
    inner_->WorkerJoined(w, info_[w], &inner);
    offset_[w] = clock(w) - inner_->clock(w);
  }
  // Every held pull is answered (or held) by the new policy, on one model.
  AnswerHeld(&inner);
  Forward(inner, out);
}

void SwitchingPolicy::AnswerHeld(Actions* inner) {
  for (WorkerId w = 0; w < num_workers(); ++w) {
    if (!held_[w]) continue;
    held_[w] = false;
    inner_->PullRequested(w, inner);
  }
}

std::string DescribePredictions(const Decision& decision) {
  std::string predicted;
  for (const auto& [policy, seconds] : decision.predicted) {
    predicted += fmt::format("{}{}={:.4g}", predicted.empty() ? "" : " ", policy, seconds);
  }
  return predicted;
}

std::string DescribeDecision(const Decision& decision) {
  return fmt::format(
      "policy decision at iteration {}: {} -> {} ({}); measured: {}; predicted s/iteration: {}; "
      "took {:.2f} ms",
      decision.iteration, decision.running, decision.chosen, decision.reason, decision.measured,
      DescribePredictions(decision), decision.decide_ms);
}

}  // namespace dmlps::sync
