#include "model/cnn.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace dmlps::model {

template <typename T>
void Im2Col(const T* in, int64_t c, int64_t s, int64_t n, T* cols) {
  const int64_t rows = 9 * c;
  for (int64_t img = 0; img < n; ++img) {
    for (int64_t y = 0; y < s; ++y) {
      for (int64_t x = 0; x < s; ++x) {
        T* dst = cols + ((img * s + y) * s + x) * rows;
        for (int64_t ky = 0; ky < 3; ++ky) {
          const int64_t yy = y + ky - 1;
          for (int64_t kx = 0; kx < 3; ++kx, dst += c) {
            const int64_t xx = x + kx - 1;
            if (yy < 0 || yy >= s || xx < 0 || xx >= s) {
              std::fill(dst, dst + c, T(0));
            } else {
              std::copy_n(in + ((img * s + yy) * s + xx) * c, c, dst);
            }
          }
        }
      }
    }
  }
}

template <typename T>
void Col2Im(const T* cols, int64_t c, int64_t s, int64_t n, T* out) {
  const int64_t rows = 9 * c;
  std::fill(out, out + c * n * s * s, T(0));
  for (int64_t img = 0; img < n; ++img) {
    for (int64_t y = 0; y < s; ++y) {
      for (int64_t x = 0; x < s; ++x) {
        const T* src = cols + ((img * s + y) * s + x) * rows;
        for (int64_t ky = 0; ky < 3; ++ky) {
          const int64_t yy = y + ky - 1;
          for (int64_t kx = 0; kx < 3; ++kx, src += c) {
            const int64_t xx = x + kx - 1;
            if (yy < 0 || yy >= s || xx < 0 || xx >= s) continue;
            T* dst = out + ((img * s + yy) * s + xx) * c;
            for (int64_t ch = 0; ch < c; ++ch) dst[ch] += src[ch];
          }
        }
      }
    }
  }
}

template <typename T>
void MaxPool2(const T* in, int64_t c, int64_t s, int64_t n, T* out, uint8_t* window) {
  const int64_t h = s / 2;
  for (int64_t img = 0; img < n; ++img) {
    for (int64_t py = 0; py < h; ++py) {
      for (int64_t px = 0; px < h; ++px) {
        const int64_t corner = (img * s + 2 * py) * s + 2 * px;
        const T* p[4] = {in + corner * c, in + (corner + 1) * c, in + (corner + s) * c,
                         in + (corner + s + 1) * c};
        const int64_t o = ((img * h + py) * h + px) * c;
        for (int64_t ch = 0; ch < c; ++ch) {
          T best = p[0][ch];
          uint8_t k = 0;
          for (uint8_t j = 1; j < 4; ++j) {
            if (p[j][ch] > best) {
              best = p[j][ch];
              k = j;
            }
          }
          out[o + ch] = best;
          window[o + ch] = k;
        }
      }
    }
  }
}

template <typename T>
void MaxPool2Backward(const T* dout, const uint8_t* window, int64_t c, int64_t s, int64_t n,
                      T* din) {
  const int64_t h = s / 2;
  std::fill(din, din + c * n * s * s, T(0));
  for (int64_t img = 0; img < n; ++img) {
    for (int64_t py = 0; py < h; ++py) {
      for (int64_t px = 0; px < h; ++px) {
        const int64_t corner = (img * s + 2 * py) * s + 2 * px;
        const int64_t o = ((img * h + py) * h + px) * c;
        for (int64_t ch = 0; ch < c; ++ch) {
          const int64_t k = window[o + ch];
          din[(corner + (k & 1) + (k >> 1) * s) * c + ch] = dout[o + ch];
        }
      }
    }
  }
}

template <typename T>
double SoftmaxCrossEntropy(const T* logits, int64_t classes, int64_t n, const int32_t* y, T scale,
                           T* delta, int64_t* correct) {
  double loss = 0.0;
  int64_t hits = 0;
  for (int64_t j = 0; j < n; ++j) {
    const T* z = logits + j * classes;
    const T* best = std::max_element(z, z + classes);
    const T max = *best;
    T sum = 0;
    for (int64_t k = 0; k < classes; ++k) sum += std::exp(z[k] - max);
    const int32_t label = y[j];
    assert(label >= 0 && label < classes);
    loss += std::log(static_cast<double>(sum)) + static_cast<double>(max) -
            static_cast<double>(z[label]);
    if (best - z == label) ++hits;
    if (delta != nullptr) {
      T* d = delta + j * classes;
      const T factor = scale / sum;
      for (int64_t k = 0; k < classes; ++k) d[k] = std::exp(z[k] - max) * factor;
      d[label] -= scale;
    }
  }
  if (correct != nullptr) *correct += hits;
  return loss;
}

template <typename T>
CnnCore<T>::CnnCore(const ModelSpec& spec) : spec_(spec), shapes_(spec.LayerShapes()) {
  assert(spec.is_cnn());
  int64_t offset = 0;
  for (const auto& [out, in] : shapes_) {
    offsets_.push_back(offset);
    offset += out * in + out;
  }
  s1_ = spec.image_side;
  s2_ = s1_ / 2;
  s3_ = s2_ / 2;
  dense_.resize(shapes_.size() - 2);
  dense_delta_.resize(shapes_.size() - 2);
}

template <typename T>
double CnnCore<T>::Slice(const T* params, const T* x, int64_t n, const int32_t* y, T scale, T* grad,
                         int64_t* correct) {
  using ConstMap = Eigen::Map<const Matrix>;
  using Map = Eigen::Map<Matrix>;
  using ConstVector = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>;
  using Vector = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>;
  const int64_t c1 = spec_.conv[0];
  const int64_t c2 = spec_.conv[1];
  const int64_t p1 = n * s1_ * s1_;  // pixels of the slice at each scale
  const int64_t p2 = n * s2_ * s2_;
  const int64_t p3 = n * s3_ * s3_;
  auto weight = [&](size_t l) {
    return ConstMap(params + offsets_[l], shapes_[l].first, shapes_[l].second);
  };
  auto bias = [&](size_t l) {
    return ConstVector(params + offsets_[l] + shapes_[l].first * shapes_[l].second,
                       shapes_[l].first);
  };

  // Forward: two convolutions with ReLU and pooling. Stage l turns `in`
  // maps of `pixels` pixels into `out` maps, pooled down to `pooled` pixels.
  auto convolve = [&](size_t l, const T* input, int64_t in, int64_t side, int64_t out,
                      int64_t pixels, int64_t pooled, Matrix& cols, Matrix& a, Matrix& pool,
                      std::vector<uint8_t>& window) {
    cols.resize(9 * in, pixels);
    Im2Col(input, in, side, n, cols.data());
    a.resize(out, pixels);
    a.noalias() = weight(l) * cols;
    a.colwise() += bias(l);
    a = a.cwiseMax(T(0));
    pool.resize(out, pooled);
    window.resize(static_cast<size_t>(out * pooled));
    MaxPool2(a.data(), out, side, n, pool.data(), window.data());
  };
  convolve(0, x, 1, s1_, c1, p1, p2, cols1_, a1_, p1_, w1_);
  convolve(1, p1_.data(), c1, s2_, c2, p2, p3, cols2_, a2_, p2_, w2_);

  // The dense layers see each image's pooled map as one column.
  const size_t layers = shapes_.size();
  ConstMap flat(p2_.data(), c2 * s3_ * s3_, n);
  for (size_t l = 2; l < layers; ++l) {
    Matrix& a = dense_[l - 2];
    a.resize(shapes_[l].first, n);
    if (l == 2) {
      a.noalias() = weight(l) * flat;
    } else {
      a.noalias() = weight(l) * dense_[l - 3];
    }
    a.colwise() += bias(l);
    if (l + 1 < layers) a = a.cwiseMax(T(0));
  }
  const Matrix& logits = dense_.back();
  Matrix& top = dense_delta_.back();
  if (grad != nullptr) top.resize(spec_.classes, n);
  const double loss = SoftmaxCrossEntropy(logits.data(), spec_.classes, n, y, scale,
                                          grad != nullptr ? top.data() : nullptr, correct);
  if (grad == nullptr) return loss;

  auto add_gradient = [&](size_t l, const auto& delta, const auto& input) {
    const int64_t out = shapes_[l].first;
    const int64_t in = shapes_[l].second;
    Map dw(grad + offsets_[l], out, in);
    Vector db(grad + offsets_[l] + out * in, out);
    dw.noalias() += delta * input.transpose();
    db.noalias() += delta.rowwise().sum();
  };
  // Back through the dense layers, down to the pooled map.
  dp2_.resize(c2 * s3_ * s3_, n);
  for (size_t l = layers; l-- > 2;) {
    const Matrix& delta = dense_delta_[l - 2];
    if (l == 2) {
      add_gradient(l, delta, flat);
      dp2_.noalias() = weight(l).transpose() * delta;
    } else {
      add_gradient(l, delta, dense_[l - 3]);
      Matrix& below = dense_delta_[l - 3];
      below.resize(shapes_[l].second, n);
      below.noalias() = weight(l).transpose() * delta;
      below = (dense_[l - 3].array() > T(0)).select(below, T(0));
    }
  }
  // Second convolution.
  d2_.resize(c2, p2);
  MaxPool2Backward(dp2_.data(), w2_.data(), c2, s2_, n, d2_.data());
  d2_ = (a2_.array() > T(0)).select(d2_, T(0));
  add_gradient(1, d2_, cols2_);
  dcols2_.resize(9 * c1, p2);
  dcols2_.noalias() = weight(1).transpose() * d2_;
  dp1_.resize(c1, p2);
  Col2Im(dcols2_.data(), c1, s2_, n, dp1_.data());
  // First convolution; the input needs no gradient.
  d1_.resize(c1, p1);
  MaxPool2Backward(dp1_.data(), w1_.data(), c1, s1_, n, d1_.data());
  d1_ = (a1_.array() > T(0)).select(d1_, T(0));
  add_gradient(0, d1_, cols1_);
  return loss;
}

template <typename T>
double CnnCore<T>::LossAndGradient(std::span<const T> params, const T* x, int64_t n,
                                   std::span<const int32_t> y, std::span<T> grad) {
  assert(n > 0 && static_cast<int64_t>(y.size()) == n);
  std::fill(grad.begin(), grad.end(), T(0));
  const T scale = T(1) / static_cast<T>(n);
  double loss = 0.0;
  for (int64_t first = 0; first < n; first += kSlice) {
    const int64_t m = std::min(kSlice, n - first);
    loss += Slice(params.data(), x + first * spec_.input_dim, m, y.data() + first, scale,
                  grad.data(), nullptr);
  }
  return loss / static_cast<double>(n);
}

template <typename T>
void CnnCore<T>::Score(std::span<const T> params, const T* x, int64_t n, std::span<const int32_t> y,
                       double* loss_sum, int64_t* correct) {
  double loss = 0.0;
  int64_t hits = 0;
  for (int64_t first = 0; first < n; first += kSlice) {
    const int64_t m = std::min(kSlice, n - first);
    loss += Slice(params.data(), x + first * spec_.input_dim, m, y.data() + first, T(0), nullptr,
                  &hits);
  }
  *loss_sum = loss;
  *correct = hits;
}

#define DMLPS_INSTANTIATE(T)                                                                  \
  template void Im2Col<T>(const T*, int64_t, int64_t, int64_t, T*);                           \
  template void Col2Im<T>(const T*, int64_t, int64_t, int64_t, T*);                           \
  template void MaxPool2<T>(const T*, int64_t, int64_t, int64_t, T*, uint8_t*);               \
  template void MaxPool2Backward<T>(const T*, const uint8_t*, int64_t, int64_t, int64_t, T*); \
  template double SoftmaxCrossEntropy<T>(const T*, int64_t, int64_t, const int32_t*, T, T*,   \
                                         int64_t*);                                           \
  template class CnnCore<T>;
DMLPS_INSTANTIATE(float)
DMLPS_INSTANTIATE(double)
#undef DMLPS_INSTANTIATE

}  // namespace dmlps::model
