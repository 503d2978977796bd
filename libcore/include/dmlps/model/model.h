// Classifiers computed with Eigen on the CPU: softmax regression, a
// multi-layer perceptron with ReLU hidden layers, and a small convolutional
// network, all trained with cross-entropy. dmlps/model/backend.h runs them on
// a chosen device.
#ifndef DMLPS_MODEL_MODEL_H_
#define DMLPS_MODEL_MODEL_H_

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/data/dataset.h"

namespace dmlps::model {

class CnnScratch;

// What to build. Softmax regression is the MLP with no hidden layer. With
// `conv` set, the network first runs two 3x3 convolutions (padding 1, ReLU,
// 2x2 max pooling) over square one-channel images of side `image_side`, then
// the dense layers of `hidden` and the output layer.
struct ModelSpec {
  std::vector<int64_t> hidden;  // hidden layer widths, input side first
  std::vector<int64_t> conv;    // channels of the two convolutions; empty: dense only
  int64_t image_side = 0;       // with conv: input_dim == image_side^2
  int64_t input_dim = 0;
  int64_t classes = 0;

  bool is_cnn() const { return !conv.empty(); }
  // "softmax", "mlp:H1,H2,..." or "cnn:C1,C2,H" — the spelling
  // ParseModelSpec accepts.
  std::string Name() const;
  // {out, in} of every weight matrix, input side first: the layout of the
  // flat parameter vector (see Model) and the fan-ins of Initialize.
  std::vector<std::pair<int64_t, int64_t>> LayerShapes() const;
  int64_t NumParams() const;
  // Floats of scratch one sample needs during a gradient step, activations
  // and their gradients together: what sizes a batch to a memory budget.
  int64_t ScratchFloatsPerSample() const;
};

// Parses "softmax", "mlp:H1[,H2...]" (widths 1..65536), "cnn" (cnn:16,32,128)
// or "cnn:C1,C2,H" (channels 1..1024, width 1..65536; the input must be a
// square image whose side is a multiple of 4, as Fashion-MNIST's 28x28) for
// the given input size and class count. InvalidArgument says what was wrong.
Result<ModelSpec> ParseModelSpec(std::string_view text, int64_t input_dim, int64_t classes);

// Accuracy and mean loss over some samples.
struct EvalResult {
  double accuracy = 0;
  double loss = 0;
  int64_t samples = 0;
};

// The parameters live outside the model in one flat float vector: for each
// layer, its weight matrix (out x in, column-major) then its bias (out). A
// convolution's weight is out channels x (9 * in channels), its column
// (ky * 3 + kx) * in_channels + c; feature maps keep channels fastest.
// A Model holds only the shapes and scratch space, so one instance must not
// be used from two threads at once; make one per thread.
class Model {
 public:
  explicit Model(ModelSpec spec);
  Model(const Model& other);
  Model& operator=(const Model& other);
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

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
  void Score(std::span<const float> params, const Eigen::MatrixXf& x, std::span<const int32_t> y,
             double* loss_sum, int64_t* correct);

  // Accuracy and mean loss over a whole dataset, in batches of `batch`.
  EvalResult Evaluate(std::span<const float> params, const data::Dataset& dataset,
                      int64_t batch = 1000);

 private:
  ModelSpec spec_;
  int64_t num_params_ = 0;
  // The convolutional network's scratch, when spec_.is_cnn(); a copy of the
  // model gets its own.
  std::unique_ptr<CnnScratch> cnn_;
  // Scratch, reused across calls: activations of each layer and their gradients.
  std::vector<Eigen::MatrixXf> activations_;
  std::vector<Eigen::MatrixXf> deltas_;
};

}  // namespace dmlps::model

#endif  // DMLPS_MODEL_MODEL_H_
