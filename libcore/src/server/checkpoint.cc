#include "dmlps/server/checkpoint.h"

#include <fcntl.h>
#include <spdlog/fmt/fmt.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <msgpack.hpp>
#include <utility>

#include "dmlps/base/file.h"
#include "dmlps/base/msgpack_double.h"

namespace dmlps::server {
namespace {

constexpr char kMagic[8] = {'D', 'M', 'L', 'P', 'S', 'C', 'K', 'P'};
constexpr size_t kFixedHeader = 32;
constexpr size_t kTrailer = 4;
// Metadata is a few names and counters plus LB-BSP's split: this is ample.
constexpr uint32_t kMaxMeta = 16 << 20;
// Training seconds beyond any run (about 30,000 years).
constexpr double kMaxSeconds = 1e12;

// The metadata: every field of checkpoint `c` (const to write it) but its
// floats, a msgpack map by the fields' names in this order. The
// layout is absent in checkpoints of built-in models; the shard and slice
// in files of one server (shard 0 of 1, the whole model); optimizer_steps
// in files written before it was kept (0).
template <typename C>
auto MetaMap(C& c) {
  return msgpack::type::make_define_map(
      "model", c.model, "policy", c.policy, "optimizer", c.optimizer, "workers", c.workers,
      "iteration", c.iteration, "version", c.version, "samples", c.samples, "seconds", c.seconds,
      "policy_extra", c.policy_extra, "layout", c.layout, "shard_index", c.shard_index,
      "shard_count", c.shard_count, "slice_begin", c.slice_begin, "model_params", c.model_params,
      "optimizer_steps", c.optimizer_steps);
}

// A checkpoint to read metadata into: the counts every file holds start
// out of range, so that MetaProblem refuses a file that lacks one.
Checkpoint Unread() {
  Checkpoint checkpoint;
  checkpoint.workers = 0;
  checkpoint.iteration = -1;
  checkpoint.version = -1;
  checkpoint.samples = -1;
  checkpoint.seconds = -1;
  return checkpoint;
}

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetLe(std::string_view bytes, size_t at, int width) {
  uint64_t v = 0;
  for (int i = 0; i < width; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[at + static_cast<size_t>(i)]))
         << (8 * i);
  }
  return v;
}

void PutFloats(std::string* out, const float* data, size_t count) {
  // The wire's float32 are little-endian too, and this host is (codec.h).
  out->append(reinterpret_cast<const char*>(data), count * sizeof(float));
}

std::vector<float> GetFloats(std::string_view bytes, size_t at, size_t count) {
  std::vector<float> values(count);
  if (count > 0) std::memcpy(values.data(), bytes.data() + at, count * sizeof(float));
  return values;
}

std::string Errno() { return std::strerror(errno); }

// What is wrong with a checkpoint's metadata, for a file of `num_params`
// parameters and `num_state` floats of optimizer state; empty when it fits
// (then a slice's model_params is set, the whole model's when it was 0).
std::string MetaProblem(Checkpoint& meta, uint64_t num_params, uint64_t num_state) {
  if (meta.model.empty() || meta.policy.empty() || meta.optimizer.empty()) {
    return std::string("the metadata lacks the model, policy or optimizer");
  }
  if (meta.workers < 1 || meta.iteration < 0 || meta.version < 0 || meta.samples < 0 ||
      !(meta.seconds >= 0) || !std::isfinite(meta.seconds)) {
    return std::string("the metadata holds a negative or missing count");
  }
  if (meta.iteration > kMaxCheckpointCount || meta.version > kMaxCheckpointCount ||
      meta.samples > kMaxCheckpointSamples || meta.workers > kMaxCheckpointWorkers) {
    return std::string("the metadata holds an implausible count (iteration " +
                       std::to_string(meta.iteration) + ", version " +
                       std::to_string(meta.version) + ", samples " + std::to_string(meta.samples) +
                       ", workers " + std::to_string(meta.workers) + ")");
  }
  for (const int64_t v : meta.policy_extra) {
    if (v < -kMaxCheckpointCount || v > kMaxCheckpointCount) {
      return std::string("the policy's state holds an implausible count " + std::to_string(v));
    }
  }
  // Written back, a double this large (2^64) would not even pack: msgpack
  // turns integral doubles into unsigned integers.
  if (meta.seconds > kMaxSeconds)
    return std::string("the metadata holds an implausible training time");
  if (num_params == 0) return std::string("the checkpoint holds no parameters");
  if (meta.model_params == 0) meta.model_params = static_cast<int64_t>(num_params);
  if (meta.shard_count < 1 || meta.shard_count > kMaxCheckpointWorkers || meta.shard_index < 0 ||
      meta.shard_index >= meta.shard_count || meta.slice_begin < 0 ||
      meta.model_params > kMaxCheckpointCount ||
      meta.slice_begin > meta.model_params - static_cast<int64_t>(num_params)) {
    return std::string("the metadata holds an implausible shard " +
                       std::to_string(meta.shard_index) + "/" + std::to_string(meta.shard_count) +
                       " or slice [" + std::to_string(meta.slice_begin) + ", +" +
                       std::to_string(num_params) + ") of " + std::to_string(meta.model_params) +
                       " parameters");
  }
  if (meta.optimizer_steps < 0 || meta.optimizer_steps > kMaxCheckpointCount) {
    return std::string("the metadata holds an implausible optimizer step count " +
                       std::to_string(meta.optimizer_steps));
  }
  if (!meta.layout.empty()) {
    Result<int64_t> layout_params = model::ValidateLayout(meta.layout);
    if (!layout_params.ok()) return std::string("its layout: " + layout_params.status().message());
    // The layout is the whole model's; a shard's file holds its slice.
    if (*layout_params != meta.model_params) {
      return std::string("a layout of " + std::to_string(*layout_params) +
                         " parameters for a model of " + std::to_string(meta.model_params) +
                         " parameters");
    }
  }
  // None, or one (momentum) or two (Adam's moments) floats per parameter of
  // the slice; the module state that ends the model has none.
  const int64_t state_begin = meta.model_params - model::StateFloats(meta.layout);
  const auto stepped = static_cast<uint64_t>(
      std::clamp<int64_t>(state_begin - meta.slice_begin, 0, static_cast<int64_t>(num_params)));
  if (num_state != 0 && num_state != stepped && num_state != 2 * stepped) {
    return std::string("optimizer state of " + std::to_string(num_state) + " floats for " +
                       std::to_string(stepped) + " parameters");
  }
  return {};
}

}  // namespace

uint32_t Crc32(std::string_view bytes, uint32_t crc) {
  // crc32_z takes a size_t length: a checkpoint may pass 4 GiB.
  return static_cast<uint32_t>(
      crc32_z(crc, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

std::string EncodeCheckpoint(const Checkpoint& checkpoint) {
  PackBuffer packed;
  msgpack::pack(packed, MetaMap(checkpoint));
  const std::vector<float>& params = *checkpoint.params;
  std::string out;
  out.reserve(kFixedHeader + packed.size() +
              (params.size() + checkpoint.optimizer_state.size()) * sizeof(float) + kTrailer);
  out.append(kMagic, sizeof(kMagic));
  PutU32(&out, kCheckpointFormat);
  PutU32(&out, static_cast<uint32_t>(packed.size()));
  PutU64(&out, params.size());
  PutU64(&out, checkpoint.optimizer_state.size());
  out.append(packed.data(), packed.size());
  PutFloats(&out, params.data(), params.size());
  PutFloats(&out, checkpoint.optimizer_state.data(), checkpoint.optimizer_state.size());
  PutU32(&out, Crc32(out));
  return out;
}

Result<Checkpoint> DecodeCheckpoint(std::string_view bytes, const std::string& source) {
  auto bad = [&](const std::string& why) { return Status::DataLoss(source + ": " + why); };
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return bad(bytes.size() < sizeof(kMagic) && std::string_view(kMagic, bytes.size()) == bytes
                   ? "truncated checkpoint (" + std::to_string(bytes.size()) + " bytes)"
                   : "not a dmlps checkpoint (bad magic)");
  }
  if (bytes.size() < kFixedHeader + kTrailer) {
    return bad("truncated checkpoint (" + std::to_string(bytes.size()) + " bytes)");
  }
  const auto format = static_cast<uint32_t>(GetLe(bytes, 8, 4));
  if (format != kCheckpointFormat) {
    return bad("checkpoint format " + std::to_string(format) + ", this dmlps reads format " +
               std::to_string(kCheckpointFormat));
  }
  const uint64_t meta_size = GetLe(bytes, 12, 4);
  const uint64_t num_params = GetLe(bytes, 16, 8);
  const uint64_t num_state = GetLe(bytes, 24, 8);
  // Sizes from the file are checked against what is there before any use,
  // each step small enough not to overflow.
  const uint64_t body = bytes.size() - kFixedHeader - kTrailer;
  const uint64_t max_floats = body / sizeof(float);
  if (meta_size > kMaxMeta || num_params > max_floats || num_state > max_floats ||
      meta_size + (num_params + num_state) * sizeof(float) != body) {
    const bool short_file = meta_size <= kMaxMeta && num_params <= (uint64_t{1} << 40) &&
                            num_state <= (uint64_t{1} << 40) &&
                            meta_size + (num_params + num_state) * sizeof(float) > body;
    return bad(short_file ? "truncated checkpoint (" + std::to_string(bytes.size()) +
                                " bytes, the header promises " +
                                std::to_string(kFixedHeader + kTrailer + meta_size +
                                               (num_params + num_state) * sizeof(float)) +
                                ")"
                          : "the header's sizes do not match the file's " +
                                std::to_string(bytes.size()) + " bytes");
  }
  const size_t crc_at = bytes.size() - kTrailer;
  const auto stored_crc = static_cast<uint32_t>(GetLe(bytes, crc_at, 4));
  if (Crc32(bytes.substr(0, crc_at)) != stored_crc)
    return bad("checksum mismatch (corrupt checkpoint)");

  Checkpoint checkpoint = Unread();
  try {
    size_t offset = 0;
    msgpack::object_handle handle = msgpack::unpack(
        bytes.data() + kFixedHeader, meta_size, offset, nullptr, nullptr,
        msgpack::unpack_limit(/*array=*/1 << 20, /*map=*/32, /*str=*/4096, /*bin=*/0,
                              /*ext=*/0, /*depth=*/4));
    if (offset != meta_size) return bad("trailing bytes after the metadata");
    if (handle.get().type != msgpack::type::MAP) return bad("the metadata is not a map");
    MetaMap(checkpoint).msgpack_unpack(handle.get());
  } catch (const std::exception& e) {
    return bad(std::string("unreadable metadata: ") + e.what());
  }
  if (std::string problem = MetaProblem(checkpoint, num_params, num_state); !problem.empty()) {
    return bad(problem);
  }
  const size_t params_at = kFixedHeader + meta_size;
  auto params = std::make_shared<std::vector<float>>(GetFloats(bytes, params_at, num_params));
  checkpoint.optimizer_state = GetFloats(bytes, params_at + num_params * sizeof(float), num_state);
  for (float v : *params) {
    if (!std::isfinite(v)) return bad("a parameter is NaN or infinite");
  }
  for (float v : checkpoint.optimizer_state) {
    if (!std::isfinite(v)) return bad("the optimizer state holds NaN or infinity");
  }
  checkpoint.params = std::move(params);
  return checkpoint;
}

Status WriteCheckpointFile(const std::string& path, const Checkpoint& checkpoint) {
  // Durable, since a restart reads it back; readable by its owner alone.
  return WriteFileAtomically(path, EncodeCheckpoint(checkpoint), {.mode = 0600, .durable = true});
}

Result<Checkpoint> ReadCheckpointFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound(path + ": no such checkpoint");
    return Status::IOError("cannot open " + path + ": " + Errno());
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::IOError(path + ": not a regular file");
  }
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = Errno();
      ::close(fd);
      return Status::IOError("cannot read " + path + ": " + why);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(got);
  return DecodeCheckpoint(bytes, path);
}

Checkpoint MakeCheckpoint(const CheckpointIdentity& identity, int64_t workers,
                          const sync::PolicyState& state, int64_t samples, double seconds,
                          std::vector<float> optimizer_state) {
  return Checkpoint{.model = identity.model,
                    .policy = identity.policy,
                    .optimizer = identity.optimizer,
                    .workers = workers,
                    .iteration = state.iteration,
                    .version = state.version,
                    .samples = samples,
                    .seconds = seconds,
                    .policy_extra = state.extra,
                    .optimizer_state = std::move(optimizer_state)};
}

Status CheckResumable(const Checkpoint& checkpoint, const std::string& source,
                      const CheckpointIdentity& identity, int64_t num_params) {
  if (checkpoint.model != identity.model ||
      static_cast<int64_t>(checkpoint.params->size()) != num_params) {
    return Status::Config(source + ": a checkpoint of model " + checkpoint.model + " (" +
                          std::to_string(checkpoint.params->size()) +
                          " parameters), this run's is " + identity.model + " (" +
                          std::to_string(num_params) + ")");
  }
  if (checkpoint.policy != identity.policy) {
    return Status::Config(source + ": a checkpoint of policy " + checkpoint.policy +
                          ", this run's is " + identity.policy);
  }
  if (checkpoint.optimizer != identity.optimizer) {
    return Status::Config(source + ": a checkpoint of optimizer " + checkpoint.optimizer +
                          ", this run's is " + identity.optimizer + " (see --momentum)");
  }
  return Status::Ok();
}

Status CheckShardOfCheckpoint(const Checkpoint& checkpoint, const std::string& source,
                              int64_t index, int64_t count, int64_t begin, int64_t end,
                              int64_t model_params) {
  const auto size = static_cast<int64_t>(checkpoint.params->size());
  if (checkpoint.shard_index != index || checkpoint.shard_count != count) {
    return Status::DataLoss(source + ": the checkpoint of server shard " +
                            std::to_string(checkpoint.shard_index) + "/" +
                            std::to_string(checkpoint.shard_count) + ", this is shard " +
                            std::to_string(index) + "/" + std::to_string(count));
  }
  if (checkpoint.model_params != model_params || checkpoint.slice_begin != begin ||
      checkpoint.slice_begin + size != end) {
    return Status::DataLoss(
        source + ": the checkpoint holds parameters [" + std::to_string(checkpoint.slice_begin) +
        ", " + std::to_string(checkpoint.slice_begin + size) + ") of " +
        std::to_string(checkpoint.model_params) + ", this shard holds [" + std::to_string(begin) +
        ", " + std::to_string(end) + ") of " + std::to_string(model_params));
  }
  return Status::Ok();
}

Status CheckTrainable(const Checkpoint& checkpoint, const std::string& source, double max_value) {
  if (max_value <= 0) return Status::Ok();
  auto beyond = [&](const std::vector<float>& values, const std::string& what) {
    const auto found = std::find_if(values.begin(), values.end(), [&](float v) {
      return std::abs(static_cast<double>(v)) > max_value;
    });
    if (found == values.end()) return Status::Ok();
    return Status::DataLoss(
        fmt::format("{}: {} {} is {:g}, beyond --resume-max-value {:g}: a model that cannot train",
                    source, what, found - values.begin(), static_cast<double>(*found), max_value));
  };
  DMLPS_RETURN_IF_ERROR(beyond(*checkpoint.params, "parameter"));
  return beyond(checkpoint.optimizer_state, "optimizer state value");
}

sync::PolicyState SavedPolicyState(const Checkpoint& checkpoint) {
  return {checkpoint.version, checkpoint.iteration, checkpoint.policy_extra};
}

}  // namespace dmlps::server
