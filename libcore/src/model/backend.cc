#include "dmlps/model/backend.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <system_error>

// libcore/CMakeLists.txt defines it for this file; a copy of the library
// built elsewhere (the fuzz targets') gets the CPU backend only.
#ifndef DMLPS_HAVE_CUDA
#define DMLPS_HAVE_CUDA 0
#endif

#if DMLPS_HAVE_CUDA
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>

#include "model/cuda/cuda_net.h"
#endif

namespace dmlps::model {
namespace {

// MemAvailable and MemTotal of /proc/meminfo.
Result<DeviceMemory> HostMemory() {
  std::ifstream in("/proc/meminfo");
  if (!in) return Status::Unavailable("cannot read /proc/meminfo");
  DeviceMemory memory;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    int64_t kib = 0;
    fields >> key >> kib;
    if (key == "MemAvailable:") memory.free_bytes = kib * 1024;
    if (key == "MemTotal:") memory.total_bytes = kib * 1024;
  }
  if (memory.total_bytes <= 0) return Status::Unavailable("/proc/meminfo has no MemTotal");
  return memory;
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const ModelSpec& spec) : model_(spec) {}
  const ModelSpec& spec() const override { return model_.spec(); }
  int64_t num_params() const override { return model_.num_params(); }
  Device device() const override { return Device{}; }
  Result<double> LossAndGradient(std::span<const float> params, const Eigen::MatrixXf& x,
                                 std::span<const int32_t> y, std::span<float> grad) override {
    return model_.LossAndGradient(params, x, y, grad);
  }

 private:
  Model model_;
};

#if DMLPS_HAVE_CUDA
// The CUDA backend's module (cuda_net.h), loaded at the first use.
struct CudaModule {
  cuda::QueryDeviceEntry query = nullptr;
  cuda::CreateNetEntry create = nullptr;
  std::string error;  // why it could not be loaded; empty when it was
};

// DMLPS_CUDA_MODULE when set; else beside the installed binaries
// (DMLPS_CUDA_MODULE_RELATIVE from the executable's folder), then where
// this build put it (DMLPS_CUDA_MODULE_BUILT). The first that loads wins.
CudaModule OpenCudaModule() {
  std::vector<std::string> paths;
  if (const char* path = std::getenv("DMLPS_CUDA_MODULE"); path != nullptr && *path != '\0') {
    paths.emplace_back(path);
  } else {
    std::error_code error;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
    if (!error) paths.push_back((exe.parent_path() / DMLPS_CUDA_MODULE_RELATIVE).string());
    paths.emplace_back(DMLPS_CUDA_MODULE_BUILT);
  }
  CudaModule module;
  std::string why;
  for (const std::string& path : paths) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* error = dlerror();
      why += (why.empty() ? "" : "; ") + std::string(error != nullptr ? error : path);
      continue;
    }
    module.query =
        reinterpret_cast<cuda::QueryDeviceEntry>(dlsym(handle, cuda::kQueryDeviceSymbol));
    module.create = reinterpret_cast<cuda::CreateNetEntry>(dlsym(handle, cuda::kCreateNetSymbol));
    if (module.query != nullptr && module.create != nullptr) return module;
    why += (why.empty() ? "" : "; ") + path + " lacks the backend's entry points";
    dlclose(handle);
  }
  module.query = nullptr;
  module.create = nullptr;
  module.error = "cannot load the CUDA backend (" + why + ")";
  return module;
}

// Loaded once per process, and never unloaded.
const CudaModule& LoadCudaModule() {
  static const CudaModule module = OpenCudaModule();
  return module;
}

class CudaBackend final : public Backend {
 public:
  CudaBackend(const ModelSpec& spec, const Device& device, std::unique_ptr<cuda::CudaNet> net)
      : spec_(spec), num_params_(spec.NumParams()), device_(device), net_(std::move(net)) {}
  const ModelSpec& spec() const override { return spec_; }
  int64_t num_params() const override { return num_params_; }
  Device device() const override { return device_; }
  Result<double> LossAndGradient(std::span<const float> params, const Eigen::MatrixXf& x,
                                 std::span<const int32_t> y, std::span<float> grad) override {
    return net_->LossAndGradient(params.data(), x.data(), x.cols(), y.data(), grad.data());
  }
  Status PinHostBuffer(std::span<float> buffer) override {
    return net_->Pin(buffer.data(), static_cast<int64_t>(buffer.size()));
  }
  void UnpinHostBuffer(std::span<float> buffer) override { net_->Unpin(buffer.data()); }

 private:
  ModelSpec spec_;
  int64_t num_params_;
  Device device_;
  std::unique_ptr<cuda::CudaNet> net_;
};
#endif

}  // namespace

std::string Device::Name() const {
  if (kind == Kind::kCpu) return "cpu";
  std::string name = "cuda:";
  name += std::to_string(index);
  return name;
}

Result<Device> ParseDevice(std::string_view text) {
  Device device;
  if (text == "cpu") return device;
  device.kind = Device::Kind::kCuda;
  if (text == "cuda") return device;
  constexpr std::string_view kPrefix = "cuda:";
  if (text.starts_with(kPrefix)) {
    std::string_view number = text.substr(kPrefix.size());
    int index = -1;
    auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), index);
    if (!number.empty() && ec == std::errc() && ptr == number.data() + number.size() &&
        index >= 0 && index <= 1023) {
      device.index = index;
      return device;
    }
    std::string message = "device \"";
    message += text;
    message += "\": the CUDA device number must be in [0, 1023]";
    return Status::InvalidArgument(message);
  }
  std::string message = "unknown device \"";
  message += text;
  message += "\"; expected cpu, cuda or cuda:N";
  return Status::InvalidArgument(message);
}

bool BuiltWithCuda() { return DMLPS_HAVE_CUDA != 0; }

Result<DeviceMemory> ProbeDevice(const Device& device, std::string* description) {
  if (!device.is_cuda()) {
    if (description != nullptr) *description = "cpu";
    return HostMemory();
  }
#if DMLPS_HAVE_CUDA
  const CudaModule& module = LoadCudaModule();
  if (!module.error.empty()) return Status::Unavailable(device.Name() + ": " + module.error);
  DeviceMemory memory;
  std::string name;
  Status queried;
  module.query(device.index, &name, &memory.free_bytes, &memory.total_bytes, &queried);
  DMLPS_RETURN_IF_ERROR(queried.WithContext(device.Name()));
  if (description != nullptr) {
    *description = device.Name();
    *description += " (";
    *description += name;
    *description += ')';
  }
  return memory;
#else
  return Status::Unavailable(device.Name() +
                             ": this build has no CUDA backend (configure with "
                             "-DDMLPS_WITH_CUDA=ON where the CUDA toolkit is installed)");
#endif
}

int64_t MaxBatchForMemory(const ModelSpec& spec, int64_t free_bytes, double fraction) {
  const double per_sample = static_cast<double>(spec.ScratchFloatsPerSample()) * sizeof(float);
  const double budget =
      std::max(0.0, static_cast<double>(free_bytes) * fraction -
                        3.0 * static_cast<double>(spec.NumParams()) * sizeof(float));
  const double batch = std::floor(budget / per_sample);
  return static_cast<int64_t>(std::clamp(batch, 1.0, static_cast<double>(int64_t{1} << 24)));
}

Result<std::unique_ptr<Backend>> MakeBackend(const ModelSpec& spec, const Device& device) {
  if (!device.is_cuda()) return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(spec));
#if DMLPS_HAVE_CUDA
  cuda::NetShape shape;
  shape.input_dim = spec.input_dim;
  shape.classes = spec.classes;
  shape.conv = spec.conv;
  shape.image_side = spec.image_side;
  shape.layers = spec.LayerShapes();
  const CudaModule& module = LoadCudaModule();
  if (!module.error.empty()) return Status::Unavailable(device.Name() + ": " + module.error);
  std::unique_ptr<cuda::CudaNet> net;
  Status created;
  module.create(&shape, device.index, &net, &created);
  DMLPS_RETURN_IF_ERROR(created);
  return std::unique_ptr<Backend>(std::make_unique<CudaBackend>(spec, device, std::move(net)));
#else
  return ProbeDevice(device).status();
#endif
}

}  // namespace dmlps::model
