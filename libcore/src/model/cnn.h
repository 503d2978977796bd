// The convolutional network of model.h on the CPU, and its building blocks,
// templated on the scalar so that tests can check gradients in double.
//
// Layout: a feature map of C channels over n square images of side s is a
// C x (n*s*s) column-major matrix, channels fastest, then x, then y, then
// image. A batch of one-channel images (input_dim x n) is such a map as it is.
#ifndef DMLPS_MODEL_CNN_H_
#define DMLPS_MODEL_CNN_H_

#include <Eigen/Core>
#include <cstdint>
#include <span>
#include <vector>

#include "dmlps/model/model.h"

namespace dmlps::model {

// cols (9c x n*s*s): for every pixel its 3x3 neighbourhood, row
// (ky * 3 + kx) * c + channel, zero outside the image (padding 1).
template <typename T>
void Im2Col(const T* in, int64_t c, int64_t s, int64_t n, T* cols);

// The adjoint of Im2Col: every entry of cols added back onto the pixel it was
// copied from. Overwrites out (c x n*s*s).
template <typename T>
void Col2Im(const T* cols, int64_t c, int64_t s, int64_t n, T* out);

// 2x2 max pooling with stride 2 (s even): out is c x n*(s/2)^2, and
// window[i] the position (dy * 2 + dx) of out[i]'s maximum in its window.
template <typename T>
void MaxPool2(const T* in, int64_t c, int64_t s, int64_t n, T* out, uint8_t* window);

// The gradient of MaxPool2: each dout entry goes to its window's maximum.
// Overwrites din (c x n*s*s).
template <typename T>
void MaxPool2Backward(const T* dout, const uint8_t* window, int64_t c, int64_t s, int64_t n,
                      T* din);

// Sum over the n columns of logits (classes x n) of softmax cross-entropy
// with labels y; counts right predictions into *correct when given. With
// delta, writes scale * (softmax - onehot(y)) there, column by column.
template <typename T>
double SoftmaxCrossEntropy(const T* logits, int64_t classes, int64_t n, const int32_t* y, T scale,
                           T* delta, int64_t* correct);

// The network of a ModelSpec with conv set. Holds scratch for one slice of
// at most kSlice samples; a batch runs slice by slice, so memory stays
// bounded whatever the batch.
template <typename T>
class CnnCore {
 public:
  using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  static constexpr int64_t kSlice = 128;

  // REQUIRES: spec.is_cnn().
  explicit CnnCore(const ModelSpec& spec);

  // Mean cross-entropy over the columns of x (input_dim x n, column-major)
  // and its gradient, written to grad.
  double LossAndGradient(std::span<const T> params, const T* x, int64_t n,
                         std::span<const int32_t> y, std::span<T> grad);
  // Sum of cross-entropy and count of right predictions.
  void Score(std::span<const T> params, const T* x, int64_t n, std::span<const int32_t> y,
             double* loss_sum, int64_t* correct);

 private:
  // One slice: forward, loss, and with grad, adds scale * the gradient of
  // the loss sum to grad.
  double Slice(const T* params, const T* x, int64_t n, const int32_t* y, T scale, T* grad,
               int64_t* correct);

  ModelSpec spec_;
  std::vector<std::pair<int64_t, int64_t>> shapes_;  // spec_.LayerShapes()
  std::vector<int64_t> offsets_;                     // of each layer's weight
  int64_t s1_, s2_, s3_;                             // image sides: input, after each pooling
  Matrix cols1_, a1_, p1_, cols2_, a2_, p2_, d1_, dp1_, dcols2_, d2_, dp2_;
  std::vector<uint8_t> w1_, w2_;
  std::vector<Matrix> dense_, dense_delta_;
};

}  // namespace dmlps::model

#endif  // DMLPS_MODEL_CNN_H_
