#include "server/evaluator.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "dmlps/trace/trace.h"

namespace dmlps::server {

int64_t SnapshotQueueLimit(int64_t params) {
  const int64_t bytes = std::max<int64_t>(params, 1) * static_cast<int64_t>(sizeof(float));
  return std::clamp(kQueueBytes / bytes, kMinQueued, kMaxQueued);
}

Evaluator::Evaluator(model::ModelSpec spec, data::Dataset test_set)
    : model_(std::move(spec)), test_set_(std::move(test_set)), thread_([this] { Loop(); }) {}

Evaluator::~Evaluator() {
  {
    MutexLock lock(&mutex_);
    stopping_ = true;
    queue_.clear();
  }
  wake_.SignalAll();
  thread_.join();
}

bool Evaluator::Submit(Snapshot snapshot, bool must) {
  {
    MutexLock lock(&mutex_);
    const auto params = static_cast<int64_t>(snapshot.params ? snapshot.params->size() : 0);
    if (!must && static_cast<int64_t>(queue_.size()) >= SnapshotQueueLimit(params)) return false;
    queue_.push_back(std::move(snapshot));
  }
  wake_.Signal();
  return true;
}

void Evaluator::SubmitOrSkip(Snapshot snapshot, bool must) {
  if (!Submit(std::move(snapshot), must) && skipped_++ == 0) {
    spdlog::warn("evaluation is falling behind training; skipping snapshots until it catches up");
  }
}

std::vector<Evaluation> Evaluator::TakeResults() {
  MutexLock lock(&mutex_);
  std::vector<Evaluation> out;
  out.swap(done_);
  return out;
}

void Evaluator::WaitIdle() {
  MutexLock lock(&mutex_);
  while (!queue_.empty() || busy_) idle_.Wait(&mutex_);
}

void Evaluator::DropPending() {
  MutexLock lock(&mutex_);
  queue_.clear();
}

std::optional<Snapshot> Evaluator::Next() {
  MutexLock lock(&mutex_);
  while (!stopping_ && queue_.empty()) wake_.Wait(&mutex_);
  if (stopping_) return std::nullopt;
  Snapshot snapshot = std::move(queue_.front());
  queue_.pop_front();
  busy_ = true;
  return snapshot;
}

void Evaluator::Done(Evaluation evaluation) {
  MutexLock lock(&mutex_);
  done_.push_back(std::move(evaluation));
  busy_ = false;
  if (queue_.empty()) idle_.SignalAll();
}

void Evaluator::Loop() {
  while (std::optional<Snapshot> snapshot = Next()) {
    const int64_t start_us = trace::NowMicros();
    model::EvalResult result = model_.Evaluate(*snapshot->params, test_set_);
    const int64_t duration_us = trace::NowMicros() - start_us;
    Done({std::move(*snapshot), result, start_us, duration_us});
  }
}

}  // namespace dmlps::server
