#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "model/cuda/cuda_net.h"

namespace dmlps::model::cuda {
namespace {

constexpr int kThreads = 256;

std::string CudaError(const char* what, cudaError_t e) {
  std::string text = what;
  text += ": ";
  text += cudaGetErrorString(e);
  return text;
}

#define DMLPS_CUDA_RETURN(expr)                                    \
  do {                                                             \
    cudaError_t dmlps_cuda_error = (expr);                         \
    if (dmlps_cuda_error != cudaSuccess) {                         \
      return Status::Internal(CudaError(#expr, dmlps_cuda_error)); \
    }                                                              \
  } while (false)

#define DMLPS_CUBLAS_RETURN(expr)                         \
  do {                                                    \
    cublasStatus_t dmlps_cublas_status = (expr);          \
    if (dmlps_cublas_status != CUBLAS_STATUS_SUCCESS) {   \
      std::string text = #expr;                           \
      text += ": ";                                       \
      text += cublasGetStatusString(dmlps_cublas_status); \
      return Status::Internal(text);                      \
    }                                                     \
  } while (false)

unsigned Blocks(int64_t count) {
  return static_cast<unsigned>(std::min<int64_t>((count + kThreads - 1) / kThreads, 65535));
}

// ---- Kernels. Grid-stride loops over int64_t indices. ----

// Runs its body for every i in [0, total), each thread taking every
// (blocks x threads)-th index, so that any grid covers any total.
#define DMLPS_GRID_STRIDE_LOOP(i, total)                                                     \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (total); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// Entry i of an array of n images of side x side pixels with `inner` values
// per pixel (fastest), split into that value's index, column, row and image.
struct PixelIndex {
  int64_t inner;
  int64_t x;
  int64_t y;
  int64_t img;
};

__device__ PixelIndex SplitIndex(int64_t i, int64_t inner, int64_t side) {
  const int64_t pixel = i / inner;
  return {i % inner, pixel % side, (pixel / side) % side, pixel / (side * side)};
}

__global__ void Im2ColKernel(const float* in, int64_t c, int64_t s, int64_t n, float* cols) {
  const int64_t rows = 9 * c;
  const int64_t total = rows * n * s * s;
  DMLPS_GRID_STRIDE_LOOP(i, total) {
    // Column i / rows is an output pixel, row i % rows = k * c + ch its
    // neighbour k's channel ch.
    const PixelIndex p = SplitIndex(i, rows, s);
    const int64_t ch = p.inner % c;
    const int64_t k = p.inner / c;
    const int64_t yy = p.y + k / 3 - 1;
    const int64_t xx = p.x + k % 3 - 1;
    cols[i] =
        (yy < 0 || yy >= s || xx < 0 || xx >= s) ? 0.0f : in[((p.img * s + yy) * s + xx) * c + ch];
  }
}

// Each input entry gathers from the (up to) nine columns that copied it.
__global__ void Col2ImKernel(const float* cols, int64_t c, int64_t s, int64_t n, float* out) {
  const int64_t rows = 9 * c;
  const int64_t total = c * n * s * s;
  DMLPS_GRID_STRIDE_LOOP(i, total) {
    const PixelIndex p = SplitIndex(i, c, s);
    float sum = 0.0f;
    for (int64_t k = 0; k < 9; ++k) {
      const int64_t oy = p.y - k / 3 + 1;
      const int64_t ox = p.x - k % 3 + 1;
      if (oy < 0 || oy >= s || ox < 0 || ox >= s) continue;
      sum += cols[((p.img * s + oy) * s + ox) * rows + k * c + p.inner];
    }
    out[i] = sum;
  }
}

__global__ void MaxPool2Kernel(const float* in, int64_t c, int64_t s, int64_t n, float* out,
                               uint8_t* window) {
  const int64_t h = s / 2;
  const int64_t total = c * n * h * h;
  DMLPS_GRID_STRIDE_LOOP(i, total) {
    const PixelIndex p = SplitIndex(i, c, h);
    const int64_t corner = (p.img * s + 2 * p.y) * s + 2 * p.x;
    const int64_t at[4] = {corner, corner + 1, corner + s, corner + s + 1};
    float best = in[at[0] * c + p.inner];
    uint8_t k = 0;
    for (uint8_t j = 1; j < 4; ++j) {
      const float v = in[at[j] * c + p.inner];
      if (v > best) {
        best = v;
        k = j;
      }
    }
    out[i] = best;
    window[i] = k;
  }
}

// din must be zero; windows do not overlap, so no two threads write one entry.
__global__ void MaxPool2BackwardKernel(const float* dout, const uint8_t* window, int64_t c,
                                       int64_t s, int64_t n, float* din) {
  const int64_t h = s / 2;
  const int64_t total = c * n * h * h;
  DMLPS_GRID_STRIDE_LOOP(i, total) {
    const PixelIndex p = SplitIndex(i, c, h);
    const int64_t k = window[i];
    const int64_t at = (p.img * s + 2 * p.y + (k >> 1)) * s + 2 * p.x + (k & 1);
    din[at * c + p.inner] = dout[i];
  }
}

__global__ void AddBiasKernel(float* a, const float* bias, int64_t rows, int64_t total, bool relu) {
  DMLPS_GRID_STRIDE_LOOP(i, total) {
    const float v = a[i] + bias[i % rows];
    a[i] = relu ? fmaxf(v, 0.0f) : v;
  }
}

__global__ void ReluBackwardKernel(const float* a, float* delta, int64_t total) {
  DMLPS_GRID_STRIDE_LOOP(i, total) {
    if (!(a[i] > 0.0f)) delta[i] = 0.0f;
  }
}

// One thread per column: the classes of a column are few and contiguous.
__global__ void SoftmaxCrossEntropyKernel(const float* logits, int64_t classes, int64_t n,
                                          const int32_t* y, float scale, double* loss,
                                          float* delta) {
  DMLPS_GRID_STRIDE_LOOP(j, n) {
    const float* z = logits + j * classes;
    float max = z[0];
    for (int64_t k = 1; k < classes; ++k) max = fmaxf(max, z[k]);
    float sum = 0.0f;
    for (int64_t k = 0; k < classes; ++k) sum += expf(z[k] - max);
    const int32_t label = y[j];
    loss[j] =
        log(static_cast<double>(sum)) + static_cast<double>(max) - static_cast<double>(z[label]);
    float* d = delta + j * classes;
    const float factor = scale / sum;
    for (int64_t k = 0; k < classes; ++k) d[k] = expf(z[k] - max) * factor;
    d[label] -= scale;
  }
}

__global__ void FillKernel(float* a, float value, int64_t total) {
  DMLPS_GRID_STRIDE_LOOP(i, total) { a[i] = value; }
}

// A device array that only grows.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);
  }
  Status Reserve(int64_t count) {
    if (count <= capacity_) return Status::Ok();
    if (data_ != nullptr) cudaFree(data_);
    data_ = nullptr;
    capacity_ = 0;
    DMLPS_CUDA_RETURN(
        cudaMalloc(reinterpret_cast<void**>(&data_), static_cast<size_t>(count) * sizeof(T)));
    capacity_ = count;
    return Status::Ok();
  }
  T* get() const { return data_; }

 private:
  T* data_ = nullptr;
  int64_t capacity_ = 0;
};

// Copies host data to a fresh device buffer.
template <typename T>
Status Upload(const std::vector<T>& host, DeviceBuffer<T>* device) {
  DMLPS_RETURN_IF_ERROR(device->Reserve(std::max<int64_t>(1, static_cast<int64_t>(host.size()))));
  DMLPS_CUDA_RETURN(
      cudaMemcpy(device->get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return Status::Ok();
}

template <typename T>
Status Download(const DeviceBuffer<T>& device, int64_t count, std::vector<T>* host) {
  host->resize(static_cast<size_t>(count));
  DMLPS_CUDA_RETURN(cudaDeviceSynchronize());
  DMLPS_CUDA_RETURN(cudaMemcpy(host->data(), device.get(), static_cast<size_t>(count) * sizeof(T),
                               cudaMemcpyDeviceToHost));
  return Status::Ok();
}

Status CheckLaunch() {
  DMLPS_CUDA_RETURN(cudaGetLastError());
  return Status::Ok();
}

}  // namespace

Status QueryDevice(int index, std::string* name, int64_t* free_bytes, int64_t* total_bytes) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaErrorInsufficientDriver) {
    return Status::Unavailable(
        "no usable CUDA device: no NVIDIA driver, or one too old for "
        "CUDA " +
        std::to_string(CUDART_VERSION / 1000) + " (" + cudaGetErrorString(e) + ")");
  }
  if (e == cudaErrorNoDevice) return Status::Unavailable("no CUDA device present");
  if (e != cudaSuccess) {
    return Status::Unavailable(std::string("no usable CUDA device: ") + cudaGetErrorString(e));
  }
  if (count == 0) return Status::Unavailable("no CUDA device present");
  if (index < 0 || index >= count) {
    return Status::Unavailable("no CUDA device " + std::to_string(index) + " (this machine has " +
                               std::to_string(count) + ")");
  }
  cudaDeviceProp prop{};
  e = cudaGetDeviceProperties(&prop, index);
  if (e != cudaSuccess) return Status::Unavailable(CudaError("cudaGetDeviceProperties", e));
  if (name != nullptr) *name = prop.name;
  e = cudaSetDevice(index);
  if (e != cudaSuccess) return Status::Unavailable(CudaError("cudaSetDevice", e));
  size_t free = 0, total = 0;
  e = cudaMemGetInfo(&free, &total);
  if (e != cudaSuccess) return Status::Unavailable(CudaError("cudaMemGetInfo", e));
  if (free_bytes != nullptr) *free_bytes = static_cast<int64_t>(free);
  if (total_bytes != nullptr) *total_bytes = static_cast<int64_t>(total);
  return Status::Ok();
}

struct NetImpl {
  NetShape shape;
  int device = 0;
  int64_t num_params = 0;
  std::vector<int64_t> offsets;  // of each layer's weight in the parameter vector
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  DeviceBuffer<float> params, grad, x, ones;
  DeviceBuffer<int32_t> y;
  DeviceBuffer<double> loss;
  std::vector<double> host_loss;
  // Activations (post-ReLU) and their gradients; for a CNN the first ones
  // are the convolution stages.
  DeviceBuffer<float> cols1, a1, p1, cols2, a2, p2, d1, dp1, dcols2, d2, dp2;
  DeviceBuffer<uint8_t> w1, w2;
  std::vector<DeviceBuffer<float>> dense, dense_delta;

  ~NetImpl() {
    if (blas != nullptr) cublasDestroy(blas);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }

  const float* Weight(size_t l) const { return params.get() + offsets[l]; }
  const float* Bias(size_t l) const {
    return params.get() + offsets[l] + layers(l).first * layers(l).second;
  }
  float* WeightGrad(size_t l) const { return grad.get() + offsets[l]; }
  float* BiasGrad(size_t l) const {
    return grad.get() + offsets[l] + layers(l).first * layers(l).second;
  }
  const std::pair<int64_t, int64_t>& layers(size_t l) const { return shape.layers[l]; }

  // out (rows x cols) = W_l (rows x in) * input (in x cols) + bias, ReLU'd when asked.
  Status Affine(size_t l, const float* input, int64_t cols, float* out, bool relu) {
    const auto [rows, in] = layers(l);
    const float one = 1.0f, zero = 0.0f;
    DMLPS_CUBLAS_RETURN(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(rows),
                                    static_cast<int>(cols), static_cast<int>(in), &one, Weight(l),
                                    static_cast<int>(rows), input, static_cast<int>(in), &zero, out,
                                    static_cast<int>(rows)));
    AddBiasKernel<<<Blocks(rows * cols), kThreads, 0, stream>>>(out, Bias(l), rows, rows * cols,
                                                                relu);
    return CheckLaunch();
  }

  // Gradients of layer l from its output delta (rows x cols) and its input
  // (in x cols); with below, also W_l^T * delta (in x cols).
  Status AffineBackward(size_t l, const float* delta, const float* input, int64_t cols,
                        float* below) {
    const auto [rows, in] = layers(l);
    const float one = 1.0f, zero = 0.0f;
    DMLPS_CUBLAS_RETURN(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, static_cast<int>(rows),
                                    static_cast<int>(in), static_cast<int>(cols), &one, delta,
                                    static_cast<int>(rows), input, static_cast<int>(in), &zero,
                                    WeightGrad(l), static_cast<int>(rows)));
    DMLPS_CUBLAS_RETURN(cublasSgemv(blas, CUBLAS_OP_N, static_cast<int>(rows),
                                    static_cast<int>(cols), &one, delta, static_cast<int>(rows),
                                    ones.get(), 1, &zero, BiasGrad(l), 1));
    if (below != nullptr) {
      DMLPS_CUBLAS_RETURN(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(in),
                                      static_cast<int>(cols), static_cast<int>(rows), &one,
                                      Weight(l), static_cast<int>(rows), delta,
                                      static_cast<int>(rows), &zero, below, static_cast<int>(in)));
    }
    return Status::Ok();
  }

  Status ReluBackward(const float* a, float* delta, int64_t count) {
    ReluBackwardKernel<<<Blocks(count), kThreads, 0, stream>>>(a, delta, count);
    return CheckLaunch();
  }

  Status Reserve(int64_t n) {
    const size_t layer_count = shape.layers.size();
    const size_t first_dense = shape.conv.empty() ? 0 : 2;
    for (size_t l = first_dense; l < layer_count; ++l) {
      DMLPS_RETURN_IF_ERROR(dense[l - first_dense].Reserve(layers(l).first * n));
      DMLPS_RETURN_IF_ERROR(dense_delta[l - first_dense].Reserve(layers(l).first * n));
    }
    DMLPS_RETURN_IF_ERROR(x.Reserve(shape.input_dim * n));
    DMLPS_RETURN_IF_ERROR(y.Reserve(n));
    DMLPS_RETURN_IF_ERROR(loss.Reserve(n));
    int64_t ones_needed = n;
    if (!shape.conv.empty()) {
      const int64_t c1 = shape.conv[0], c2 = shape.conv[1];
      const int64_t s = shape.image_side;
      const int64_t q1 = n * s * s, q2 = q1 / 4, q3 = q2 / 4;
      DMLPS_RETURN_IF_ERROR(cols1.Reserve(9 * q1));
      DMLPS_RETURN_IF_ERROR(a1.Reserve(c1 * q1));
      DMLPS_RETURN_IF_ERROR(d1.Reserve(c1 * q1));
      DMLPS_RETURN_IF_ERROR(p1.Reserve(c1 * q2));
      DMLPS_RETURN_IF_ERROR(dp1.Reserve(c1 * q2));
      DMLPS_RETURN_IF_ERROR(w1.Reserve(c1 * q2));
      DMLPS_RETURN_IF_ERROR(cols2.Reserve(9 * c1 * q2));
      DMLPS_RETURN_IF_ERROR(dcols2.Reserve(9 * c1 * q2));
      DMLPS_RETURN_IF_ERROR(a2.Reserve(c2 * q2));
      DMLPS_RETURN_IF_ERROR(d2.Reserve(c2 * q2));
      DMLPS_RETURN_IF_ERROR(p2.Reserve(c2 * q3));
      DMLPS_RETURN_IF_ERROR(dp2.Reserve(c2 * q3));
      DMLPS_RETURN_IF_ERROR(w2.Reserve(c2 * q3));
      ones_needed = q1;
    }
    if (ones_needed > ones_count) {
      DMLPS_RETURN_IF_ERROR(ones.Reserve(ones_needed));
      FillKernel<<<Blocks(ones_needed), kThreads, 0, stream>>>(ones.get(), 1.0f, ones_needed);
      DMLPS_RETURN_IF_ERROR(CheckLaunch());
      ones_count = ones_needed;
    }
    return Status::Ok();
  }
  int64_t ones_count = 0;

  Result<double> Step(const float* host_params, const float* host_x, int64_t n,
                      const int32_t* host_y, float* host_grad) {
    DMLPS_CUDA_RETURN(cudaSetDevice(device));
    DMLPS_RETURN_IF_ERROR(Reserve(n));
    DMLPS_CUDA_RETURN(cudaMemcpyAsync(params.get(), host_params,
                                      static_cast<size_t>(num_params) * sizeof(float),
                                      cudaMemcpyHostToDevice, stream));
    DMLPS_CUDA_RETURN(cudaMemcpyAsync(x.get(), host_x,
                                      static_cast<size_t>(shape.input_dim * n) * sizeof(float),
                                      cudaMemcpyHostToDevice, stream));
    DMLPS_CUDA_RETURN(cudaMemcpyAsync(y.get(), host_y, static_cast<size_t>(n) * sizeof(int32_t),
                                      cudaMemcpyHostToDevice, stream));
    const size_t layer_count = shape.layers.size();
    const bool cnn = !shape.conv.empty();
    const size_t first_dense = cnn ? 2 : 0;
    const float* dense_input = x.get();
    int64_t c1 = 0, c2 = 0, s = 0, q1 = 0, q2 = 0;
    if (cnn) {
      c1 = shape.conv[0];
      c2 = shape.conv[1];
      s = shape.image_side;
      q1 = n * s * s;
      q2 = q1 / 4;
      Im2ColKernel<<<Blocks(9 * q1), kThreads, 0, stream>>>(x.get(), 1, s, n, cols1.get());
      DMLPS_RETURN_IF_ERROR(CheckLaunch());
      DMLPS_RETURN_IF_ERROR(Affine(0, cols1.get(), q1, a1.get(), true));
      MaxPool2Kernel<<<Blocks(c1 * q2), kThreads, 0, stream>>>(a1.get(), c1, s, n, p1.get(),
                                                               w1.get());
      DMLPS_RETURN_IF_ERROR(CheckLaunch());
      Im2ColKernel<<<Blocks(9 * c1 * q2), kThreads, 0, stream>>>(p1.get(), c1, s / 2, n,
                                                                 cols2.get());
      DMLPS_RETURN_IF_ERROR(CheckLaunch());
      DMLPS_RETURN_IF_ERROR(Affine(1, cols2.get(), q2, a2.get(), true));
      MaxPool2Kernel<<<Blocks(c2 * q2 / 4), kThreads, 0, stream>>>(a2.get(), c2, s / 2, n, p2.get(),
                                                                   w2.get());
      DMLPS_RETURN_IF_ERROR(CheckLaunch());
      dense_input = p2.get();
    }
    for (size_t l = first_dense; l < layer_count; ++l) {
      const float* input = l == first_dense ? dense_input : dense[l - first_dense - 1].get();
      DMLPS_RETURN_IF_ERROR(Affine(l, input, n, dense[l - first_dense].get(), l + 1 < layer_count));
    }
    float* top = dense_delta[layer_count - 1 - first_dense].get();
    SoftmaxCrossEntropyKernel<<<Blocks(n), kThreads, 0, stream>>>(
        dense[layer_count - 1 - first_dense].get(), shape.classes, n, y.get(),
        1.0f / static_cast<float>(n), loss.get(), top);
    DMLPS_RETURN_IF_ERROR(CheckLaunch());
    for (size_t l = layer_count; l-- > first_dense;) {
      const size_t k = l - first_dense;
      const float* input = l == first_dense ? dense_input : dense[k - 1].get();
      float* below = nullptr;
      if (l > first_dense) {
        below = dense_delta[k - 1].get();
      } else if (cnn) {
        below = dp2.get();
      }
      DMLPS_RETURN_IF_ERROR(AffineBackward(l, dense_delta[k].get(), input, n, below));
      if (l > first_dense) {
        DMLPS_RETURN_IF_ERROR(ReluBackward(dense[k - 1].get(), below, layers(l).second * n));
      }
    }
    if (cnn) {
      DMLPS_CUDA_RETURN(
          cudaMemsetAsync(d2.get(), 0, static_cast<size_t>(c2 * q2) * sizeof(float), stream));
      MaxPool2BackwardKernel<<<Blocks(c2 * q2 / 4), kThreads, 0, stream>>>(dp2.get(), w2.get(), c2,
                                                                           s / 2, n, d2.get());
      DMLPS_RETURN_IF_ERROR(CheckLaunch());
      DMLPS_RETURN_IF_ERROR(ReluBackward(a2.get(), d2.get(), c2 * q2));
      DMLPS_RETURN_IF_ERROR(AffineBackward(1, d2.get(), cols2.get(), q2, dcols2.get()));
      Col2ImKernel<<<Blocks(c1 * q2), kThreads, 0, stream>>>(dcols2.get(), c1, s / 2, n, dp1.get());
      DMLPS_RETURN_IF_ERROR(CheckLaunch());
      DMLPS_CUDA_RETURN(
          cudaMemsetAsync(d1.get(), 0, static_cast<size_t>(c1 * q1) * sizeof(float), stream));
      MaxPool2BackwardKernel<<<Blocks(c1 * q2), kThreads, 0, stream>>>(dp1.get(), w1.get(), c1, s,
                                                                       n, d1.get());
      DMLPS_RETURN_IF_ERROR(CheckLaunch());
      DMLPS_RETURN_IF_ERROR(ReluBackward(a1.get(), d1.get(), c1 * q1));
      DMLPS_RETURN_IF_ERROR(AffineBackward(0, d1.get(), cols1.get(), q1, nullptr));
    }
    host_loss.resize(static_cast<size_t>(n));
    DMLPS_CUDA_RETURN(cudaMemcpyAsync(host_loss.data(), loss.get(),
                                      static_cast<size_t>(n) * sizeof(double),
                                      cudaMemcpyDeviceToHost, stream));
    DMLPS_CUDA_RETURN(cudaMemcpyAsync(host_grad, grad.get(),
                                      static_cast<size_t>(num_params) * sizeof(float),
                                      cudaMemcpyDeviceToHost, stream));
    DMLPS_CUDA_RETURN(cudaStreamSynchronize(stream));
    double sum = 0.0;
    for (double v : host_loss) sum += v;
    return sum / static_cast<double>(n);
  }
};

namespace {

// The network on the GPU, behind CudaNet.
class GpuNet final : public CudaNet {
 public:
  explicit GpuNet(std::unique_ptr<NetImpl> impl) : impl_(std::move(impl)) {}

  Result<double> LossAndGradient(const float* params, const float* x, int64_t n, const int32_t* y,
                                 float* grad) override {
    return impl_->Step(params, x, n, y, grad);
  }
  Status Pin(float* data, int64_t count) override {
    DMLPS_CUDA_RETURN(cudaHostRegister(data, static_cast<size_t>(count) * sizeof(float),
                                       cudaHostRegisterDefault));
    return Status::Ok();
  }
  void Unpin(float* data) override { cudaHostUnregister(data); }

 private:
  std::unique_ptr<NetImpl> impl_;
};

}  // namespace

Result<std::unique_ptr<CudaNet>> CudaNet::Create(const NetShape& shape, int device) {
  DMLPS_RETURN_IF_ERROR(QueryDevice(device, nullptr, nullptr, nullptr));
  auto impl = std::make_unique<NetImpl>();
  impl->shape = shape;
  impl->device = device;
  for (const auto& [out, in] : shape.layers) {
    impl->offsets.push_back(impl->num_params);
    impl->num_params += out * in + out;
  }
  const size_t dense_layers = shape.layers.size() - (shape.conv.empty() ? 0 : 2);
  impl->dense = std::vector<DeviceBuffer<float>>(dense_layers);
  impl->dense_delta = std::vector<DeviceBuffer<float>>(dense_layers);
  DMLPS_CUDA_RETURN(cudaStreamCreateWithFlags(&impl->stream, cudaStreamNonBlocking));
  DMLPS_CUBLAS_RETURN(cublasCreate(&impl->blas));
  DMLPS_CUBLAS_RETURN(cublasSetStream(impl->blas, impl->stream));
  DMLPS_RETURN_IF_ERROR(impl->params.Reserve(impl->num_params));
  DMLPS_RETURN_IF_ERROR(impl->grad.Reserve(impl->num_params));
  return std::unique_ptr<CudaNet>(new GpuNet(std::move(impl)));
}

namespace kernels {

Status Im2Col(const std::vector<float>& in, int64_t c, int64_t s, int64_t n,
              std::vector<float>* cols) {
  DeviceBuffer<float> din, dcols;
  DMLPS_RETURN_IF_ERROR(Upload(in, &din));
  const int64_t count = 9 * c * n * s * s;
  DMLPS_RETURN_IF_ERROR(dcols.Reserve(count));
  Im2ColKernel<<<Blocks(count), kThreads>>>(din.get(), c, s, n, dcols.get());
  DMLPS_RETURN_IF_ERROR(CheckLaunch());
  return Download(dcols, count, cols);
}

Status Col2Im(const std::vector<float>& cols, int64_t c, int64_t s, int64_t n,
              std::vector<float>* out) {
  DeviceBuffer<float> dcols, dout;
  DMLPS_RETURN_IF_ERROR(Upload(cols, &dcols));
  const int64_t count = c * n * s * s;
  DMLPS_RETURN_IF_ERROR(dout.Reserve(count));
  Col2ImKernel<<<Blocks(count), kThreads>>>(dcols.get(), c, s, n, dout.get());
  DMLPS_RETURN_IF_ERROR(CheckLaunch());
  return Download(dout, count, out);
}

Status MaxPool2(const std::vector<float>& in, int64_t c, int64_t s, int64_t n,
                std::vector<float>* out, std::vector<uint8_t>* window) {
  DeviceBuffer<float> din, dout;
  DeviceBuffer<uint8_t> dwindow;
  DMLPS_RETURN_IF_ERROR(Upload(in, &din));
  const int64_t count = c * n * (s / 2) * (s / 2);
  DMLPS_RETURN_IF_ERROR(dout.Reserve(count));
  DMLPS_RETURN_IF_ERROR(dwindow.Reserve(count));
  MaxPool2Kernel<<<Blocks(count), kThreads>>>(din.get(), c, s, n, dout.get(), dwindow.get());
  DMLPS_RETURN_IF_ERROR(CheckLaunch());
  DMLPS_RETURN_IF_ERROR(Download(dout, count, out));
  return Download(dwindow, count, window);
}

Status MaxPool2Backward(const std::vector<float>& dout, const std::vector<uint8_t>& window,
                        int64_t c, int64_t s, int64_t n, std::vector<float>* din) {
  DeviceBuffer<float> ddout, ddin;
  DeviceBuffer<uint8_t> dwindow;
  DMLPS_RETURN_IF_ERROR(Upload(dout, &ddout));
  DMLPS_RETURN_IF_ERROR(Upload(window, &dwindow));
  const int64_t count = c * n * s * s;
  DMLPS_RETURN_IF_ERROR(ddin.Reserve(count));
  DMLPS_CUDA_RETURN(cudaMemset(ddin.get(), 0, static_cast<size_t>(count) * sizeof(float)));
  MaxPool2BackwardKernel<<<Blocks(count / 4), kThreads>>>(ddout.get(), dwindow.get(), c, s, n,
                                                          ddin.get());
  DMLPS_RETURN_IF_ERROR(CheckLaunch());
  return Download(ddin, count, din);
}

Status AddBias(std::vector<float>* a, const std::vector<float>& bias, bool relu) {
  DeviceBuffer<float> da, dbias;
  DMLPS_RETURN_IF_ERROR(Upload(*a, &da));
  DMLPS_RETURN_IF_ERROR(Upload(bias, &dbias));
  const auto total = static_cast<int64_t>(a->size());
  AddBiasKernel<<<Blocks(total), kThreads>>>(da.get(), dbias.get(),
                                             static_cast<int64_t>(bias.size()), total, relu);
  DMLPS_RETURN_IF_ERROR(CheckLaunch());
  return Download(da, total, a);
}

Status ReluBackward(const std::vector<float>& a, std::vector<float>* delta) {
  DeviceBuffer<float> da, ddelta;
  DMLPS_RETURN_IF_ERROR(Upload(a, &da));
  DMLPS_RETURN_IF_ERROR(Upload(*delta, &ddelta));
  const auto total = static_cast<int64_t>(a.size());
  ReluBackwardKernel<<<Blocks(total), kThreads>>>(da.get(), ddelta.get(), total);
  DMLPS_RETURN_IF_ERROR(CheckLaunch());
  return Download(ddelta, total, delta);
}

Status SoftmaxCrossEntropy(const std::vector<float>& logits, int64_t classes,
                           const std::vector<int32_t>& y, float scale, double* loss_sum,
                           std::vector<float>* delta) {
  DeviceBuffer<float> dlogits, ddelta;
  DeviceBuffer<int32_t> dy;
  DeviceBuffer<double> dloss;
  DMLPS_RETURN_IF_ERROR(Upload(logits, &dlogits));
  DMLPS_RETURN_IF_ERROR(Upload(y, &dy));
  const auto n = static_cast<int64_t>(y.size());
  DMLPS_RETURN_IF_ERROR(ddelta.Reserve(classes * n));
  DMLPS_RETURN_IF_ERROR(dloss.Reserve(n));
  SoftmaxCrossEntropyKernel<<<Blocks(n), kThreads>>>(dlogits.get(), classes, n, dy.get(), scale,
                                                     dloss.get(), ddelta.get());
  DMLPS_RETURN_IF_ERROR(CheckLaunch());
  std::vector<double> losses;
  DMLPS_RETURN_IF_ERROR(Download(dloss, n, &losses));
  *loss_sum = 0;
  for (double v : losses) *loss_sum += v;
  return Download(ddelta, classes * n, delta);
}

}  // namespace kernels

}  // namespace dmlps::model::cuda

// The entry points (kQueryDeviceSymbol, kCreateNetSymbol), unmangled.
extern "C" void dmlps_cuda_query_device(int index, std::string* name, int64_t* free_bytes,
                                        int64_t* total_bytes, dmlps::Status* status) {
  *status = dmlps::model::cuda::QueryDevice(index, name, free_bytes, total_bytes);
}

extern "C" void dmlps_cuda_create_net(const dmlps::model::cuda::NetShape* shape, int device,
                                      std::unique_ptr<dmlps::model::cuda::CudaNet>* net,
                                      dmlps::Status* status) {
  dmlps::Result<std::unique_ptr<dmlps::model::cuda::CudaNet>> created =
      dmlps::model::cuda::CudaNet::Create(*shape, device);
  if (!created.ok()) {
    *status = created.status();
    return;
  }
  *net = std::move(created).value();
  *status = dmlps::Status::Ok();
}
