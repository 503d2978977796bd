#include "model/softmax_rows.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <utility>

#include "model/cnn.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DMLPS_SOFTMAX_ROWS_AVX2 1
#include <immintrin.h>
#else
#define DMLPS_SOFTMAX_ROWS_AVX2 0
#endif

namespace dmlps::model {
namespace {

// Features per class in the weights by class: whole AVX registers.
int64_t PaddedDim(int64_t dim) { return (dim + 7) / 8 * 8; }

#if DMLPS_SOFTMAX_ROWS_AVX2
#define DMLPS_AVX2 __attribute__((target("avx2,fma")))

constexpr int64_t kLanes = 8;  // floats in an AVX register
// Classes whose sums one pass keeps in registers: 12 accumulators, the
// sample's features and a broadcast weight leave 2 of the 16 registers.
constexpr int kMaxBlock = 12;

// A part of the classes that one pass over the features computes.
struct Block {
  int64_t first = 0;
  int size = 0;
};

// The classes in near-equal blocks of at most kMaxBlock.
std::vector<Block> Blocks(int64_t classes) {
  const int64_t count = (classes + kMaxBlock - 1) / kMaxBlock;
  std::vector<Block> blocks;
  int64_t first = 0;
  for (int64_t b = 0; b < count; ++b) {
    const int64_t size = classes / count + (b < classes % count ? 1 : 0);
    blocks.push_back({first, static_cast<int>(size)});
    first += size;
  }
  return blocks;
}

// The features of one row: `full` whole registers, then `mask` over the rest.
struct Row {
  int64_t full = 0;
  bool tail = false;
  __m256i mask;
};

DMLPS_AVX2 inline __m256 LoadTail(const float* x, const Row& row) {
  return _mm256_maskload_ps(x, row.mask);
}

DMLPS_AVX2 inline float Sum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// z[k] = w_k . x for the K classes whose weights start at w, pdim apart.
// Asks for `next`'s row meanwhile: rows lie anywhere in the data set, and
// this pass is the first to touch them.
template <int K>
DMLPS_AVX2 void ForwardBlock(const float* w, int64_t pdim, const float* x, const Row& row,
                             const float* next, float* z) {
  __m256 acc[K];
  for (int k = 0; k < K; ++k) acc[k] = _mm256_setzero_ps();
  for (int64_t c = 0; c < row.full; ++c) {
    if (c % 2 == 0) _mm_prefetch(reinterpret_cast<const char*>(next + c * kLanes), _MM_HINT_T0);
    const __m256 xv = _mm256_loadu_ps(x + c * kLanes);
    for (int k = 0; k < K; ++k) {
      acc[k] = _mm256_fmadd_ps(_mm256_loadu_ps(w + k * pdim + c * kLanes), xv, acc[k]);
    }
  }
  if (row.tail) {
    const int64_t c = row.full;
    const __m256 xv = LoadTail(x + c * kLanes, row);
    for (int k = 0; k < K; ++k) {
      acc[k] = _mm256_fmadd_ps(_mm256_loadu_ps(w + k * pdim + c * kLanes), xv, acc[k]);
    }
  }
  for (int k = 0; k < K; ++k) z[k] = Sum8(acc[k]);
}

// g[k*pdim .. +8] = sum over the samples j of delta(k, j) * x_j, for the K
// classes from `first` and the features from `offset`, j in order.
template <int K>
DMLPS_AVX2 void BackwardBlock(const float* rows, int64_t dim, std::span<const int64_t> samples,
                              const float* delta, int64_t classes, int64_t first, int64_t offset,
                              const Row* tail, float* g, int64_t pdim) {
  __m256 acc[K];
  for (int k = 0; k < K; ++k) acc[k] = _mm256_setzero_ps();
  for (size_t j = 0; j < samples.size(); ++j) {
    const float* x = rows + samples[j] * dim + offset;
    const __m256 xv = tail != nullptr ? LoadTail(x, *tail) : _mm256_loadu_ps(x);
    const float* d = delta + static_cast<int64_t>(j) * classes + first;
    for (int k = 0; k < K; ++k) acc[k] = _mm256_fmadd_ps(_mm256_broadcast_ss(d + k), xv, acc[k]);
  }
  for (int k = 0; k < K; ++k) _mm256_storeu_ps(g + k * pdim, acc[k]);
}

using ForwardFn = void (*)(const float*, int64_t, const float*, const Row&, const float*, float*);
using BackwardFn = void (*)(const float*, int64_t, std::span<const int64_t>, const float*, int64_t,
                            int64_t, int64_t, const Row*, float*, int64_t);

template <int... K>
constexpr std::array<ForwardFn, sizeof...(K)> ForwardTable(std::integer_sequence<int, K...>) {
  return {&ForwardBlock<K + 1>...};
}
template <int... K>
constexpr std::array<BackwardFn, sizeof...(K)> BackwardTable(std::integer_sequence<int, K...>) {
  return {&BackwardBlock<K + 1>...};
}
constexpr auto kForward = ForwardTable(std::make_integer_sequence<int, kMaxBlock>());
constexpr auto kBackward = BackwardTable(std::make_integer_sequence<int, kMaxBlock>());

DMLPS_AVX2 Row MakeRow(int64_t dim) {
  Row row;
  row.full = dim / kLanes;
  const int64_t rest = dim % kLanes;
  row.tail = rest > 0;
  alignas(32) std::array<int32_t, kLanes> lanes{};
  for (int64_t i = 0; i < rest; ++i) lanes[static_cast<size_t>(i)] = -1;
  row.mask = _mm256_load_si256(reinterpret_cast<const __m256i*>(lanes.data()));
  return row;
}

// logits (classes x n) of the samples' rows, without the bias.
DMLPS_AVX2 void Forward(const float* weights, int64_t pdim, const data::Dataset& data,
                        std::span<const int64_t> samples, const std::vector<Block>& blocks,
                        float* logits) {
  const Row row = MakeRow(data.dim);
  const int64_t classes = data.classes;
  for (size_t j = 0; j < samples.size(); ++j) {
    const float* x = data.dense.data() + samples[j] * data.dim;
    const float* next = data.dense.data() + samples[std::min(j + 1, samples.size() - 1)] * data.dim;
    float* z = logits + static_cast<int64_t>(j) * classes;
    for (const Block& b : blocks) {
      kForward[static_cast<size_t>(b.size - 1)](weights + b.first * pdim, pdim, x, row, next,
                                                z + b.first);
    }
  }
}

// The weights' gradient by class (classes x pdim) from delta (classes x n).
DMLPS_AVX2 void Backward(const data::Dataset& data, std::span<const int64_t> samples,
                         const float* delta, const std::vector<Block>& blocks, float* g,
                         int64_t pdim) {
  const Row row = MakeRow(data.dim);
  const int64_t chunks = row.full + (row.tail ? 1 : 0);
  for (int64_t c = 0; c < chunks; ++c) {
    const Row* tail = c == row.full ? &row : nullptr;
    for (const Block& b : blocks) {
      kBackward[static_cast<size_t>(b.size - 1)](data.dense.data(), data.dim, samples, delta,
                                                 data.classes, b.first, c * kLanes, tail,
                                                 g + b.first * pdim + c * kLanes, pdim);
    }
  }
}

bool CpuHasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}
#else
bool CpuHasAvx2() { return false; }
#endif  // DMLPS_SOFTMAX_ROWS_AVX2

}  // namespace

bool SoftmaxRowsFit(const ModelSpec& spec, const data::Dataset& data) {
  return !spec.is_cnn() && spec.hidden.empty() && !data.sparse() && data.dim == spec.input_dim &&
         data.classes == spec.classes && CpuHasAvx2();
}

void SoftmaxRowsLoadWeights(const ModelSpec& spec, std::span<const float> params,
                            SoftmaxRowsScratch* scratch) {
  assert(static_cast<int64_t>(params.size()) == spec.NumParams());
  const int64_t dim = spec.input_dim;
  const int64_t classes = spec.classes;
  const int64_t pdim = PaddedDim(dim);
  // The weights (classes x dim, column-major) by class, zero past dim.
  std::vector<float>& weights = scratch->weights;
  weights.assign(static_cast<size_t>(classes * pdim), 0.0f);
  for (int64_t i = 0; i < dim; ++i) {
    for (int64_t k = 0; k < classes; ++k) weights[k * pdim + i] = params[i * classes + k];
  }
}

double SoftmaxRowsLossAndGradient(const ModelSpec& spec, std::span<const float> params,
                                  const data::Dataset& data, std::span<const int64_t> samples,
                                  std::span<float> grad, SoftmaxRowsScratch* scratch) {
  assert(SoftmaxRowsFit(spec, data));
  assert(static_cast<int64_t>(params.size()) == spec.NumParams());
  assert(grad.size() == params.size() && !samples.empty());
#if DMLPS_SOFTMAX_ROWS_AVX2
  const int64_t dim = spec.input_dim;
  const int64_t classes = spec.classes;
  const int64_t pdim = PaddedDim(dim);
  assert(static_cast<int64_t>(scratch->weights.size()) == classes * pdim);
  const auto n = static_cast<int64_t>(samples.size());
  const std::vector<Block> blocks = Blocks(classes);
  const std::vector<float>& weights = scratch->weights;
  std::vector<float>& logits = scratch->logits;
  logits.resize(static_cast<size_t>(classes * n));
  Forward(weights.data(), pdim, data, samples, blocks, logits.data());
  const float* bias = params.data() + classes * dim;
  std::vector<int32_t>& labels = scratch->labels;
  labels.resize(samples.size());
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t k = 0; k < classes; ++k) logits[j * classes + k] += bias[k];
    labels[j] = data.labels[samples[j]];
  }
  // The loss's gradient with respect to the logits replaces them.
  const float inv_n = 1.0f / static_cast<float>(n);
  const double loss = SoftmaxCrossEntropy<float>(logits.data(), classes, n, labels.data(), inv_n,
                                                 logits.data(), nullptr);
  std::vector<float>& g = scratch->grad;
  g.resize(static_cast<size_t>(classes * pdim));
  Backward(data, samples, logits.data(), blocks, g.data(), pdim);
  for (int64_t i = 0; i < dim; ++i) {
    for (int64_t k = 0; k < classes; ++k) grad[i * classes + k] = g[k * pdim + i];
  }
  float* bias_grad = grad.data() + classes * dim;
  std::fill(bias_grad, bias_grad + classes, 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t k = 0; k < classes; ++k) bias_grad[k] += logits[j * classes + k];
  }
  return loss / static_cast<double>(n);
#else
  return 0.0;
#endif
}

}  // namespace dmlps::model
