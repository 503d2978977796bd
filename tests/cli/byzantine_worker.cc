// A worker that trains as an ordinary dmlps worker does (the same joining,
// shard, batches and pushes) but pushes a Byzantine gradient in place of
// its own, for the CLI tests and for measuring the robust rules.
//   dmlps-byzantine-worker ATTACK ADDR [DATA]
// Attacks:
//   alie:Z       "a little is enough" (Baruch et al. 2019): each coordinate
//                of the honest gradients' mean, moved by Z of their
//                standard deviations, mu - Z sigma. The worker estimates
//                both from its own shard: it cuts its batch into 16 parts,
//                takes the mean of the parts' gradients (its batch's
//                gradient) for mu and their spread over sqrt(16) for the
//                standard deviation of a batch's gradient.
//   signflip:N   its batch's gradient reversed and scaled to L2 norm N (the
//                server's --max-update-norm, so the bound leaves it whole).
// DATA defaults to fashion-mnist. Exits 0 once the server says stop, 1 on
// an error, 64 on bad arguments.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "dmlps/data/dataset.h"
#include "dmlps/model/backend.h"
#include "dmlps/model/model.h"
#include "dmlps/worker/computation.h"
#include "dmlps/worker/worker.h"

namespace {

namespace data = dmlps::data;
namespace model = dmlps::model;
namespace worker = dmlps::worker;
using dmlps::Result;
using dmlps::Status;

constexpr int64_t kParts = 16;

struct Attack {
  bool alie = true;
  double value = 0;  // alie: Z; signflip: the norm
};

class ByzantineComputation : public worker::Computation {
 public:
  ByzantineComputation(Attack attack, std::string data) : attack_(attack), data_(std::move(data)) {}

  Status Join(const worker::JobInfo& job) override {
    DMLPS_ASSIGN_OR_RETURN(data::DataSpec spec, data::ParseDataSpec(data_));
    DMLPS_ASSIGN_OR_RETURN(data::Dataset shard,
                           data::LoadTrain(spec, data::Shard{job.shard_index, job.shard_count}));
    DMLPS_RETURN_IF_ERROR(shard.ConformTo(job.input_dim, job.classes));
    DMLPS_ASSIGN_OR_RETURN(model::ModelSpec model_spec,
                           model::ParseModelSpec(job.model, job.input_dim, job.classes));
    DMLPS_ASSIGN_OR_RETURN(std::unique_ptr<model::Backend> backend,
                           model::MakeBackend(model_spec, model::Device{}));
    honest_ = std::make_unique<worker::DatasetComputation>(std::move(shard), std::move(backend));
    return Status::Ok();
  }
  int64_t num_params() const override { return honest_->num_params(); }
  int64_t num_samples() const override { return honest_->num_samples(); }

  Result<double> Compute(std::span<const float> params, std::span<const int64_t> ids,
                         std::span<float> grad) override {
    if (!attack_.alie) {
      DMLPS_ASSIGN_OR_RETURN(double loss, honest_->Compute(params, ids, grad));
      double squares = 0;
      for (const float g : grad) squares += double{g} * g;
      const double scale = squares > 0 ? -attack_.value / std::sqrt(squares) : 0;
      for (float& g : grad) g = static_cast<float>(scale * g);
      return loss;
    }
    return Alie(params, ids, grad);
  }

 private:
  Result<double> Alie(std::span<const float> params, std::span<const int64_t> ids,
                      std::span<float> grad) {
    const auto parts = std::min<int64_t>(kParts, static_cast<int64_t>(ids.size()));
    const size_t n = grad.size();
    std::vector<double> sum(n, 0.0);
    std::vector<double> squares(n, 0.0);
    std::vector<float> part(n);
    double loss = 0;
    for (int64_t p = 0; p < parts; ++p) {
      // Parts as even as they come: [size * p / parts, size * (p + 1) / parts).
      const auto from = static_cast<size_t>(static_cast<int64_t>(ids.size()) * p / parts);
      const auto to = static_cast<size_t>(static_cast<int64_t>(ids.size()) * (p + 1) / parts);
      DMLPS_ASSIGN_OR_RETURN(double part_loss,
                             honest_->Compute(params, ids.subspan(from, to - from), part));
      loss += part_loss / static_cast<double>(parts);
      for (size_t i = 0; i < n; ++i) {
        sum[i] += part[i];
        squares[i] += double{part[i]} * part[i];
      }
    }
    const auto k = static_cast<double>(parts);
    for (size_t i = 0; i < n; ++i) {
      const double mean = sum[i] / k;
      // The parts' sample variance; a batch of k parts has 1 / k of it.
      const double variance =
          parts > 1 ? std::max(0.0, (squares[i] - k * mean * mean) / (k - 1)) / k : 0.0;
      grad[i] = static_cast<float>(mean - attack_.value * std::sqrt(variance));
    }
    return loss;
  }

  const Attack attack_;
  const std::string data_;
  std::unique_ptr<worker::DatasetComputation> honest_;
};

int Usage(const std::string& why) {
  std::fprintf(stderr,
               "dmlps-byzantine-worker: error: %s\n"
               "usage: dmlps-byzantine-worker alie:Z|signflip:NORM ADDR [DATA]\n",
               why.c_str());
  return 64;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) return Usage("expected 2 or 3 arguments");
  const std::string text = argv[1];
  const size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  Attack attack;
  char* end = nullptr;
  const std::string number = colon == std::string::npos ? "" : text.substr(colon + 1);
  attack.value = std::strtod(number.c_str(), &end);
  if ((kind != "alie" && kind != "signflip") || number.empty() || *end != '\0' ||
      !std::isfinite(attack.value) || !(attack.value >= 0)) {
    return Usage("unknown attack '" + text + "' (alie:Z or signflip:NORM, numbers >= 0)");
  }
  attack.alie = kind == "alie";
  worker::WorkerConfig config;
  config.link.server = argv[2];
  const std::string data = argc == 4 ? argv[3] : "fashion-mnist";
  Result<worker::WorkerReport> report =
      worker::RunWorker(config, std::make_unique<ByzantineComputation>(attack, data), nullptr);
  if (!report.ok()) {
    std::fprintf(stderr, "dmlps-byzantine-worker: error: %s\n", report.status().message().c_str());
    return 1;
  }
  std::printf("stopped after %lld steps\n", static_cast<long long>(report->steps));
  return 0;
}
