#include "sim/gradients.h"

#include <algorithm>
#include <utility>

namespace dmlps::sim {
namespace {

// Gradients computed at once per thread when one is needed: enough to keep
// the threads busy between two waits, few enough that those of pushes the
// server drops cost little.
constexpr int64_t kTasksPerThread = 4;

}  // namespace

PushGradients::PushGradients(const model::ModelSpec& spec, const data::Dataset& train,
                             int64_t threads, bool math)
    : spec_(spec),
      train_(train),
      num_params_(model::Model(spec).num_params()),
      math_(math),
      rows_kernel_(model::SoftmaxRowsFit(spec, train)),
      pool_(std::max<int64_t>(threads, 1)) {
  // The pool may have started fewer threads than asked for.
  for (int64_t t = 0; t < pool_.threads(); ++t) scratch_.emplace_back(spec);
}

void PushGradients::Expect(int64_t w, std::shared_ptr<const std::vector<float>> model,
                           std::span<const int64_t> samples) {
  if (static_cast<size_t>(w) >= tasks_.size()) tasks_.resize(static_cast<size_t>(w) + 1);
  Task& task = tasks_[static_cast<size_t>(w)];
  Release(task.grad);
  task.model = std::move(model);
  task.samples.assign(samples.begin(), samples.end());
  // A task still waiting from a dropped push keeps its place in the queue.
  if (task.ticket == 0) {
    task.ticket = next_ticket_++;
    pending_.push_back({w, task.ticket});
  }
}

std::span<const int64_t> PushGradients::SamplesOf(int64_t w) const {
  return tasks_[static_cast<size_t>(w)].samples;
}

std::span<const float> PushGradients::Take(int64_t w) {
  Task& task = tasks_[static_cast<size_t>(w)];
  if (task.grad.empty()) {
    // This one, and the next expected ones while the threads have room.
    std::vector<int64_t> batch{w};
    task.ticket = 0;
    const int64_t room = pool_.threads() > 1 ? kTasksPerThread * pool_.threads() : 1;
    while (!pending_.empty() && static_cast<int64_t>(batch.size()) < room) {
      const Entry entry = pending_.front();
      pending_.pop_front();
      Task& other = tasks_[static_cast<size_t>(entry.worker)];
      if (other.ticket != entry.ticket) continue;  // taken already
      other.ticket = 0;
      batch.push_back(entry.worker);
    }
    // Stale entries left at the front go too, so that pending_ stays short.
    while (!pending_.empty() &&
           tasks_[static_cast<size_t>(pending_.front().worker)].ticket != pending_.front().ticket) {
      pending_.pop_front();
    }
    ComputeAll(batch);
  }
  Release(taken_);
  taken_ = std::move(task.grad);
  task.grad.clear();
  task.model.reset();
  return taken_;
}

void PushGradients::ComputeAll(const std::vector<int64_t>& ws) {
  for (int64_t w : ws) tasks_[static_cast<size_t>(w)].grad = Buffer();
  if (!math_) {
    for (int64_t w : ws) {
      std::vector<float>& grad = tasks_[static_cast<size_t>(w)].grad;
      std::fill(grad.begin(), grad.end(), 0.f);
    }
    return;
  }
  const auto threads = static_cast<int64_t>(scratch_.size());
  const auto count = static_cast<int64_t>(ws.size());
  // Thread slot t computes tasks t, t + threads, ...: each slot one scratch.
  pool_.ParallelFor(std::min(threads, count), [&](int64_t t) {
    Scratch& s = scratch_[static_cast<size_t>(t)];
    for (int64_t i = t; i < count; i += threads) {
      Task& task = tasks_[static_cast<size_t>(ws[static_cast<size_t>(i)])];
      if (rows_kernel_) {
        // Tasks on one model version (all of a BSP round's) lay it out once.
        if (s.rows_model != task.model) {
          model::SoftmaxRowsLoadWeights(spec_, *task.model, &s.rows);
          s.rows_model = task.model;
        }
        model::SoftmaxRowsLossAndGradient(spec_, *task.model, train_, task.samples, task.grad,
                                          &s.rows);
        continue;
      }
      train_.Gather(task.samples, &s.x, &s.y);
      s.model.LossAndGradient(*task.model, s.x, s.y, task.grad);
    }
  });
}

std::vector<float> PushGradients::Buffer() {
  if (spare_.empty()) return std::vector<float>(static_cast<size_t>(num_params_));
  std::vector<float> buffer = std::move(spare_.back());
  spare_.pop_back();
  return buffer;
}

void PushGradients::Release(std::vector<float>& buffer) {
  if (!buffer.empty()) spare_.push_back(std::move(buffer));
  buffer.clear();
}

}  // namespace dmlps::sim
