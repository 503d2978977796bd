#include "server/remote_evaluator.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <string>
#include <utility>

#include "dmlps/net/secret.h"
#include "dmlps/trace/trace.h"

namespace dmlps::server {

bool RemoteEvaluator::Handle(const zmq::message_t& identity, proto::Message& message) {
  if (auto* hello = std::get_if<proto::Hello>(&message.body); hello != nullptr) {
    if (!hello->evaluator) return false;
    Join(identity, *hello);
    return true;
  }
  if (!identity_.has_value() || *identity_ != identity) return false;
  if (auto* evaluation = std::get_if<proto::Evaluation>(&message.body)) {
    Take(*evaluation);
  } else if (auto* error = std::get_if<proto::Error>(&message.body)) {
    if (error->fatal) Lose("it gave up: " + error->message);
  }
  return true;  // heartbeats: arriving is all they say
}

void RemoteEvaluator::Refuse(const zmq::message_t& identity, const std::string& why) {
  spdlog::warn("refused an evaluator ({}): {}", HexPrefix(identity), why);
  Status sent = endpoint_.SendMessage(&identity, proto::Error{why, true, false});
  if (!sent.ok()) spdlog::debug("could not tell the evaluator why: {}", sent.ToString());
}

void RemoteEvaluator::Join(const zmq::message_t& identity, const proto::Hello& hello) {
  if (!net::SecretMatches(hello.secret, secret_)) {
    return Refuse(identity,
                  "the evaluator role needs the job secret (--secret FILE or DMLPS_SECRET_FILE)");
  }
  if (identity_.has_value() && *identity_ != identity) {
    return Refuse(identity, "an evaluator is already connected");
  }
  if (!identity_.has_value()) {
    identity_.emplace(net::CopyFrame(identity));
    spdlog::info("evaluator {}joined from {}:{}", lost_ ? "re" : "", hello.host, hello.pid);
  }
  Status sent = endpoint_.SendMessage(&*identity_, welcome_);
  if (!sent.ok()) spdlog::warn("cannot welcome the evaluator: {}", sent.ToString());
  SendNext();
}

void RemoteEvaluator::SubmitOrSkip(Snapshot snapshot, bool must) {
  const auto params = static_cast<int64_t>(snapshot.params ? snapshot.params->size() : 0);
  // Snapshots queued beyond the one out, at most: as the local evaluator's.
  // Lost and none back yet: skipped, not queued without bound.
  const bool gone = lost_ && !identity_.has_value();
  if (gone || (!must && static_cast<int64_t>(queue_.size()) >= SnapshotQueueLimit(params))) {
    if (skipped_++ == 0 && !gone) {
      spdlog::warn("evaluation is falling behind training; skipping snapshots until it catches up");
    }
    return;
  }
  queue_.push_back(std::move(snapshot));
  SendNext();
}

void RemoteEvaluator::SendNext() {
  if (!identity_.has_value() || out_.has_value() || queue_.empty()) return;
  out_.emplace(std::move(queue_.front()));
  queue_.pop_front();
  out_id_ = next_id_++;
  sent_at_ = Clock::now();
  sent_us_ = trace::NowMicros();
  const auto size = static_cast<int64_t>(out_->params->size());
  net::Frames payload;
  proto::AppendTensor(out_->params,
                      proto::ChunkBytesFor(size * static_cast<int64_t>(sizeof(float))), &payload);
  Status sent = endpoint_.SendMessage(&*identity_, proto::Evaluate{out_id_, out_->iteration, size},
                                      std::move(payload));
  if (!sent.ok()) Lose("cannot send it a snapshot: " + sent.ToString());
}

void RemoteEvaluator::Take(const proto::Evaluation& evaluation) {
  if (!out_.has_value() || evaluation.id != out_id_) {
    // Warned of once: a confused evaluator must not flood the log.
    spdlog::log(unasked_++ == 0 ? spdlog::level::warn : spdlog::level::debug,
                "the evaluator answered snapshot {}, which it was not asked for (ignored)",
                evaluation.id);
    return;
  }
  if (!(evaluation.accuracy >= 0 && evaluation.accuracy <= 1) ||
      !(evaluation.loss >= 0 && std::isfinite(evaluation.loss)) || evaluation.samples < 0) {
    spdlog::warn(
        "the evaluator's result for iteration {} is impossible (accuracy {}, loss {}); "
        "the snapshot counts as skipped",
        out_->iteration, evaluation.accuracy, evaluation.loss);
    ++skipped_;
  } else {
    model::EvalResult result{evaluation.accuracy, evaluation.loss, evaluation.samples};
    done_.push_back({std::move(*out_), result, sent_us_, trace::NowMicros() - sent_us_});
  }
  out_.reset();
  SendNext();
}

void RemoteEvaluator::Lose(const std::string& why) {
  const int64_t dropped = static_cast<int64_t>(queue_.size()) + (out_.has_value() ? 1 : 0);
  spdlog::warn(
      "lost the evaluator: {}; {} snapshot{} unevaluated, later ones are skipped until an "
      "evaluator with the job secret joins",
      why, dropped, dropped == 1 ? "" : "s");
  skipped_ += dropped;
  queue_.clear();
  out_.reset();
  identity_.reset();
  lost_ = true;
}

void RemoteEvaluator::CheckTimeout() {
  if (out_.has_value() && Clock::now() - sent_at_ >= timeout_) {
    Lose(
        fmt::format("no answer for the snapshot of iteration {} within {:g} s "
                    "(--evaluator-timeout)",
                    out_->iteration, std::chrono::duration<double>(timeout_).count()));
  }
}

std::vector<Evaluation> RemoteEvaluator::TakeResults() {
  std::vector<Evaluation> out;
  out.swap(done_);
  return out;
}

void RemoteEvaluator::WaitIdle() {
  // Bounded: CheckTimeout drops an evaluator that does not answer in time.
  while (identity_.has_value() && (out_.has_value() || !queue_.empty())) {
    pump_();
    CheckTimeout();
  }
}

void RemoteEvaluator::SendHeartbeat(int64_t now_us) {
  if (!identity_.has_value()) return;
  Status sent = endpoint_.SendMessage(&*identity_, proto::Heartbeat{now_us});
  if (!sent.ok()) Lose("cannot reach it: " + sent.ToString());
}

void RemoteEvaluator::Stop(const std::string& reason) {
  if (!identity_.has_value()) return;
  Status sent = endpoint_.SendMessage(&*identity_, proto::Stop{reason});
  if (!sent.ok()) spdlog::debug("cannot stop the evaluator: {}", sent.ToString());
}

}  // namespace dmlps::server
