// Softmax regression's gradient read straight from a dense data set's rows,
// with AVX2 and FMA where the CPU has them. Model::LossAndGradient wants its
// batch gathered into a matrix first and runs Eigen's products at the
// build's instruction set (baseline x86-64 unless DMLPS_NATIVE): for the
// simulator, which computes millions of small gradients, the copy and the
// narrow products were most of its time. These kernels are compiled for
// AVX2 in this one file, function by function, and chosen at run time; no
// Eigen or other shared inline code is built with those instructions, so
// nothing compiled for them can leak into code that runs on an older CPU.
#ifndef DMLPS_MODEL_SOFTMAX_ROWS_H_
#define DMLPS_MODEL_SOFTMAX_ROWS_H_

#include <cstdint>
#include <span>
#include <vector>

#include "dmlps/data/dataset.h"
#include "dmlps/model/model.h"

namespace dmlps::model {

// Whether SoftmaxRowsLossAndGradient can compute `spec` on `data`: softmax
// regression on dense rows, on a CPU with AVX2 and FMA. Otherwise gather
// the batch and call Model::LossAndGradient.
bool SoftmaxRowsFit(const ModelSpec& spec, const data::Dataset& data);

// Scratch of one thread: the weights by class and the gradient's rows.
struct SoftmaxRowsScratch {
  std::vector<float> weights;  // classes x padded dim, one class's weights contiguous
  std::vector<float> grad;     // the same layout
  std::vector<float> logits;   // classes x n, then the loss's gradient
  std::vector<int32_t> labels;
};

// Lays out the weights of `params` by class in `scratch`, for the
// gradients of this model that follow: a model's gradients on many batches
// need this once.
void SoftmaxRowsLoadWeights(const ModelSpec& spec, std::span<const float> params,
                            SoftmaxRowsScratch* scratch);

// Mean cross-entropy of softmax regression `params` over the rows `samples`
// of `data`, and its gradient, written to `grad`: what Gather and
// Model::LossAndGradient give, to rounding (the sums run in another order).
// The same inputs give the same bits on every call and thread.
// REQUIRES: SoftmaxRowsFit(spec, data), params and grad have
// spec.NumParams() entries, samples non-empty and within data, and the
// last SoftmaxRowsLoadWeights on scratch was given these params.
double SoftmaxRowsLossAndGradient(const ModelSpec& spec, std::span<const float> params,
                                  const data::Dataset& data, std::span<const int64_t> samples,
                                  std::span<float> grad, SoftmaxRowsScratch* scratch);

}  // namespace dmlps::model

#endif  // DMLPS_MODEL_SOFTMAX_ROWS_H_
