// The CUDA side of the model backends, behind an interface free of Eigen and
// of CUDA's headers, so that g++ code includes it and only cuda_net.cu needs
// nvcc. Built only with DMLPS_WITH_CUDA, as a module of its own
// (libdmlps-cuda.so, with cuBLAS and the CUDA runtime) that model/backend.cc
// loads when a GPU is first asked for: a process on the CPU alone never maps
// cuBLAS (over 200 MB resident once its relocations are done).
//
// Layouts are those of model.h and model/cnn.h: column-major matrices, so a
// cuBLAS GEMM sees the same matrices Eigen does.
#ifndef DMLPS_MODEL_CUDA_CUDA_NET_H_
#define DMLPS_MODEL_CUDA_CUDA_NET_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dmlps/base/status.h"

namespace dmlps::model::cuda {

// The shape of a network, as ModelSpec gives it.
struct NetShape {
  int64_t input_dim = 0;
  int64_t classes = 0;
  std::vector<int64_t> conv;  // empty, or the channels of the two convolutions
  int64_t image_side = 0;
  std::vector<std::pair<int64_t, int64_t>> layers;  // ModelSpec::LayerShapes()
};

// Device `index`: its name and memory. Unavailable when there is no driver,
// no device, or no device of that number.
Status QueryDevice(int index, std::string* name, int64_t* free_bytes, int64_t* total_bytes);

// One network's gradient step on one GPU, with its own stream, cuBLAS handle
// and device buffers (grown to the largest batch seen).
// An interface of pure virtual methods and an inline destructor, so that
// code outside the module calls them through the object without linking
// against the module, and every user has the class's type information (the
// undefined-behaviour sanitizer's checks of virtual calls need it).
class CudaNet {
 public:
  static Result<std::unique_ptr<CudaNet>> Create(const NetShape& shape, int device);
  virtual ~CudaNet() = default;
  CudaNet(const CudaNet&) = delete;
  CudaNet& operator=(const CudaNet&) = delete;

  // Mean cross-entropy over the n columns of x (input_dim x n) and its
  // gradient, copied into grad (num_params floats; page-locked with Pin, the
  // copy goes straight there).
  virtual Result<double> LossAndGradient(const float* params, const float* x, int64_t n,
                                         const int32_t* y, float* grad) = 0;
  virtual Status Pin(float* data, int64_t count) = 0;
  virtual void Unpin(float* data) = 0;

 protected:
  CudaNet() = default;
};

// The module's entry points, found by name (dlsym): QueryDevice and
// CudaNet::Create, their result in *status (and *net).
using QueryDeviceEntry = void (*)(int index, std::string* name, int64_t* free_bytes,
                                  int64_t* total_bytes, Status* status);
using CreateNetEntry = void (*)(const NetShape* shape, int device, std::unique_ptr<CudaNet>* net,
                                Status* status);
inline constexpr char kQueryDeviceSymbol[] = "dmlps_cuda_query_device";
inline constexpr char kCreateNetSymbol[] = "dmlps_cuda_create_net";

// Each kernel once, on host arrays copied to device 0 and back: what the GPU
// tests compare with the CPU versions in model/cnn.h and model.cc.
namespace kernels {
Status Im2Col(const std::vector<float>& in, int64_t c, int64_t s, int64_t n,
              std::vector<float>* cols);
Status Col2Im(const std::vector<float>& cols, int64_t c, int64_t s, int64_t n,
              std::vector<float>* out);
Status MaxPool2(const std::vector<float>& in, int64_t c, int64_t s, int64_t n,
                std::vector<float>* out, std::vector<uint8_t>* window);
Status MaxPool2Backward(const std::vector<float>& dout, const std::vector<uint8_t>& window,
                        int64_t c, int64_t s, int64_t n, std::vector<float>* din);
// a (rows x cols) += bias per row, then ReLU when `relu`.
Status AddBias(std::vector<float>* a, const std::vector<float>& bias, bool relu);
// delta = a > 0 ? delta : 0.
Status ReluBackward(const std::vector<float>& a, std::vector<float>* delta);
// Per column: loss of softmax cross-entropy; delta = scale * (softmax - onehot).
Status SoftmaxCrossEntropy(const std::vector<float>& logits, int64_t classes,
                           const std::vector<int32_t>& y, float scale, double* loss_sum,
                           std::vector<float>* delta);
}  // namespace kernels

}  // namespace dmlps::model::cuda

#endif  // DMLPS_MODEL_CUDA_CUDA_NET_H_
