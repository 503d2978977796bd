// Dense classifiers computed with Eigen on the CPU: softmax regression and a
// multi-layer perceptron with ReLU hidden layers, trained with cross-entropy.
#ifndef DMLPS_MODEL_MODEL_H_
#define DMLPS_MODEL_MODEL_H_

#include <Eigen/Core>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/data/dataset.h"

namespace dmlps::model {

// What to build. Softmax regression is the MLP with no hidden layer.
struct ModelSpec {
  std::vector<int64_t> hidden;  // hidden layer widths, input side first
  int64_t input_dim = 0;
  int64_t classes = 0;

  // "softmax" or "mlp:H1,H2,..." — the spelling ParseModelSpec accepts.
  std::string Name() const;
};

// Parses "softmax" or "mlp:H1[,H2...]" (widths 1..65536) for the given input
// size and class count. InvalidArgument says what was wrong.
Result<ModelSpec> ParseModelSpec(std::string_view text, int64_t input_dim, int64_t classes);

// Accuracy and mean loss over some samples.
struct EvalResult {
  double accuracy = 0;
  double loss = 0;
  int64_t samples = 0;
};

// The parameters live outside the model in one flat float vector: for each
// layer, its weight matrix (out x in, column-major) then its bias (out).
// A Model holds only the shapes and scratch space, so one instance must not
// be used from two threads at once; make one per thread.
class Model {
 public:
  explicit Model(ModelSpec spec);

  const ModelSpec& spec() const { return spec_; }
  int64_t num_params() const { return num_params_; }

  // Fills `params` with weights drawn He-uniform from `seed` and zero biases.
  // REQUIRES: params.size() == num_params().
  void Initialize(uint64_t seed, std::span<float> params) const;

  // Mean cross-entropy over the batch (columns of x, labels y) and its gradient
  // with respect to params, written to `grad`.
  // REQUIRES: params and grad have num_params() entries, x.rows() == input_dim,
  // x.cols() == y.size() > 0, every label in [0, classes).
  double LossAndGradient(std::span<const float> params, const Eigen::MatrixXf& x,
                         std::span<const int32_t> y, std::span<float> grad);

  // Sum of cross-entropy and count of correct predictions over the batch.
  // REQUIRES: as LossAndGradient.
  void Score(std::span<const float> params, const Eigen::MatrixXf& x,
             std::span<const int32_t> y, double* loss_sum, int64_t* correct);

  // Accuracy and mean loss over a whole dataset, in batches of `batch`.
  EvalResult Evaluate(std::span<const float> params, const data::Dataset& dataset,
                      int64_t batch = 1000);

 private:
  ModelSpec spec_;
  int64_t num_params_ = 0;
  // Scratch, reused across calls: activations of each layer and their gradients.
  std::vector<Eigen::MatrixXf> activations_;
  std::vector<Eigen::MatrixXf> deltas_;
};

}  // namespace dmlps::model

#endif  // DMLPS_MODEL_MODEL_H_
