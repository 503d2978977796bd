#include "server/evaluator.h"

#include "dmlps/trace/trace.h"

namespace dmlps::server {

Evaluator::Evaluator(model::ModelSpec spec, data::Dataset test_set)
    : model_(std::move(spec)), test_set_(std::move(test_set)), thread_([this] { Loop(); }) {}

Evaluator::~Evaluator() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  thread_.join();
}

bool Evaluator::Submit(Snapshot snapshot, bool must) {
  {
    std::lock_guard lock(mutex_);
    if (!must && static_cast<int64_t>(queue_.size()) >= kMaxQueued) return false;
    queue_.push_back(std::move(snapshot));
  }
  wake_.notify_one();
  return true;
}

std::vector<Evaluation> Evaluator::TakeResults() {
  std::lock_guard lock(mutex_);
  std::vector<Evaluation> out;
  out.swap(done_);
  return out;
}

void Evaluator::WaitIdle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

void Evaluator::DropPending() {
  std::lock_guard lock(mutex_);
  queue_.clear();
}

void Evaluator::Loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Snapshot snapshot = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    const int64_t start_us = trace::NowMicros();
    model::EvalResult result = model_.Evaluate(*snapshot.params, test_set_);
    const int64_t duration_us = trace::NowMicros() - start_us;
    lock.lock();
    done_.push_back({std::move(snapshot), result, start_us, duration_us});
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
}

}  // namespace dmlps::server
