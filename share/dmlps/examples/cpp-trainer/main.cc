// A dmlps worker that trains a model of its own: softmax regression written
// in plain loops, over this worker's shard of a data set read with dmlps'
// reader. It trains against a server whose model has the same flat layout,
// `dmlps-server --model softmax`: the weights (classes x features, stored
// column-major: weight (c, f) at f * classes + c), then the biases.
//
//   dmlps-cpp-trainer SERVER [DATA]     e.g. tcp://127.0.0.1:5555 fashion-mnist
#include <dmlps/data/dataset.h>
#include <dmlps/worker/computation.h>
#include <dmlps/worker/worker.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace {

std::atomic<int> g_signal{0};

void OnSignal(int signal) { g_signal.store(signal); }

class SoftmaxRegression : public dmlps::worker::Computation {
 public:
  explicit SoftmaxRegression(dmlps::data::DataSpec data) : data_(std::move(data)) {}

  // Loads this worker's shard, once the server has said which it is.
  dmlps::Status Join(const dmlps::worker::JobInfo& job) override {
    dmlps::Result<dmlps::data::Dataset> shard =
        dmlps::data::LoadTrain(data_, dmlps::data::Shard{job.shard_index, job.shard_count});
    if (!shard.ok()) return shard.status();
    shard_ = std::move(*shard);
    if (shard_.sparse()) return dmlps::Status::Config("this example reads dense data only");
    features_ = shard_.dim;
    classes_ = job.classes;
    return dmlps::Status::Ok();
  }
  int64_t num_params() const override { return classes_ * features_ + classes_; }
  int64_t num_samples() const override { return shard_.rows(); }

  dmlps::Result<double> Compute(std::span<const float> params, std::span<const int64_t> sample_ids,
                                std::span<float> grad) override {
    const float* weight = params.data();
    const float* bias = params.data() + classes_ * features_;
    std::fill(grad.begin(), grad.end(), 0.0f);
    float* grad_weight = grad.data();
    float* grad_bias = grad.data() + classes_ * features_;
    std::vector<double> logits(static_cast<size_t>(classes_));
    const double scale = 1.0 / static_cast<double>(sample_ids.size());
    double loss = 0;
    for (int64_t id : sample_ids) {
      const float* x = shard_.dense.data() + id * features_;
      const int32_t label = shard_.labels[static_cast<size_t>(id)];
      for (int64_t c = 0; c < classes_; ++c) logits[c] = bias[c];
      for (int64_t f = 0; f < features_; ++f) {
        if (x[f] == 0) continue;
        for (int64_t c = 0; c < classes_; ++c) logits[c] += weight[f * classes_ + c] * x[f];
      }
      const double top = *std::max_element(logits.begin(), logits.end());
      double sum = 0;
      for (double& z : logits) sum += (z = std::exp(z - top));
      loss += (std::log(sum) - std::log(logits[label])) * scale;
      for (int64_t c = 0; c < classes_; ++c) {
        // d loss / d logit: softmax minus the one-hot label, over the batch.
        const float delta = static_cast<float>((logits[c] / sum - (c == label)) * scale);
        grad_bias[c] += delta;
        for (int64_t f = 0; f < features_; ++f) grad_weight[f * classes_ + c] += delta * x[f];
      }
    }
    return loss;
  }

 private:
  dmlps::data::DataSpec data_;
  dmlps::data::Dataset shard_;
  int64_t features_ = 0;
  int64_t classes_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s SERVER [DATA]\n", argv[0]);
    return 64;
  }
  dmlps::Result<dmlps::data::DataSpec> data =
      dmlps::data::ParseDataSpec(argc == 3 ? argv[2] : "fashion-mnist");
  if (!data.ok()) {
    std::fprintf(stderr, "%s: %s\n", argv[0], data.status().message().c_str());
    return 64;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  dmlps::worker::WorkerConfig config;
  config.link.server = argv[1];
  dmlps::Result<dmlps::worker::WorkerReport> report =
      dmlps::worker::RunWorker(config, std::make_unique<SoftmaxRegression>(*data), &g_signal);
  if (!report.ok()) {
    std::fprintf(stderr, "%s: %s\n", argv[0], report.status().message().c_str());
    return 1;
  }
  std::printf("%lld steps, %lld samples: %s\n", static_cast<long long>(report->steps),
              static_cast<long long>(report->samples), report->stop_reason.c_str());
  return report->signal != 0 ? 128 + report->signal : 0;
}
