// Where a model's gradient steps run: the CPU (model::Model, Eigen) or a
// CUDA GPU (cuBLAS and small kernels; built with DMLPS_WITH_CUDA). Both take
// the same flat parameter vector and write the same gradient.
#ifndef DMLPS_MODEL_BACKEND_H_
#define DMLPS_MODEL_BACKEND_H_

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "dmlps/base/status.h"
#include "dmlps/model/model.h"

namespace dmlps::model {

struct Device {
  enum class Kind { kCpu, kCuda };
  Kind kind = Kind::kCpu;
  int index = 0;  // the CUDA device number

  bool is_cuda() const { return kind == Kind::kCuda; }
  // "cpu" or "cuda:N".
  std::string Name() const;
};

// Parses "cpu", "cuda" (device 0) or "cuda:N". InvalidArgument says why not.
Result<Device> ParseDevice(std::string_view text);

// True when this build has the CUDA backend.
bool BuiltWithCuda();

// Memory a device has for scratch: for the CPU, MemAvailable of
// /proc/meminfo; for a GPU, what cudaMemGetInfo reports free.
struct DeviceMemory {
  int64_t free_bytes = 0;
  int64_t total_bytes = 0;
};

// What `device` is and how much memory it has free. Unavailable, with the
// reason in one line, when it cannot be used: no CUDA in this build, no
// driver, no such device.
Result<DeviceMemory> ProbeDevice(const Device& device, std::string* description = nullptr);

// The largest batch whose scratch fits `fraction` of `free_bytes` for `spec`
// (at least 1, at most 1 << 24).
int64_t MaxBatchForMemory(const ModelSpec& spec, int64_t free_bytes, double fraction = 0.8);

// Computes gradients of one model on one device. Not thread-safe: one per
// thread, as model::Model.
class Backend {
 public:
  virtual ~Backend() = default;

  virtual const ModelSpec& spec() const = 0;
  virtual int64_t num_params() const = 0;
  virtual Device device() const = 0;

  // Mean cross-entropy over the batch and its gradient, as
  // Model::LossAndGradient; Internal on a device failure.
  virtual Result<double> LossAndGradient(std::span<const float> params, const Eigen::MatrixXf& x,
                                         std::span<const int32_t> y, std::span<float> grad) = 0;

  // Page-locks a host buffer that gradients are copied into or parameters
  // copied from, so that those copies run at full speed with no staging
  // copy; the CPU backend does nothing. Undo with UnpinHostBuffer before the
  // buffer is freed.
  virtual Status PinHostBuffer(std::span<float> buffer) { return Status::Ok(); }
  virtual void UnpinHostBuffer(std::span<float> buffer) {}
};

// A backend for `spec` on `device`; Unavailable when the device cannot be
// used.
Result<std::unique_ptr<Backend>> MakeBackend(const ModelSpec& spec, const Device& device);

}  // namespace dmlps::model

#endif  // DMLPS_MODEL_BACKEND_H_
