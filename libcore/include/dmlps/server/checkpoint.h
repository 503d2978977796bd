// Checkpoints: the server's model, optimizer state, iteration and policy
// state in one file, written atomically and checked on reading.
//
// The file (all integers little-endian):
//   0   8  magic "DMLPSCKP"
//   8   4  format version (kCheckpointFormat)
//   12  4  M, bytes of the metadata
//   16  8  P, parameters
//   24  8  S, floats of optimizer state (0, P or 2P)
//   32  M  metadata: a msgpack map of the fields below but the floats
//   ..  4P parameters, float32
//   ..  4S optimizer state, float32
//   end 4  CRC-32 (IEEE 802.3) of every byte before it
#ifndef DMLPS_SERVER_CHECKPOINT_H_
#define DMLPS_SERVER_CHECKPOINT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/model/layout.h"
#include "dmlps/sync/policy.h"

namespace dmlps::server {

inline constexpr uint32_t kCheckpointFormat = 1;

// The largest counts a checkpoint may hold (DecodeCheckpoint refuses more):
// iterations, versions and each of the policy's own counters (in absolute
// value) beyond any run, a million a second for 12 days, and small enough
// that the arithmetic a resumed run does on them (adding rounds, summing a
// split over the workers) cannot overflow; samples, iterations times a
// batch; workers, more than --workers allows.
inline constexpr int64_t kMaxCheckpointCount = int64_t{1} << 40;
inline constexpr int64_t kMaxCheckpointSamples = int64_t{1} << 60;
inline constexpr int64_t kMaxCheckpointWorkers = int64_t{1} << 20;

struct Checkpoint {
  std::string model;                  // model::ModelSpec::Name()
  std::string policy;                 // sync::Policy::Name()
  std::string optimizer;              // optim::Optimizer::Name()
  int64_t workers = 1;                // --workers of the run that wrote it
  int64_t iteration = 0;              // global iterations completed
  int64_t version = 0;                // applies made to the model
  int64_t samples = 0;                // samples whose gradients went into the model
  double seconds = 0;                 // training time behind it, summed over restarts
  std::vector<int64_t> policy_extra;  // sync::PolicyState::extra
  std::shared_ptr<const std::vector<float>> params;
  std::vector<float> optimizer_state;  // empty, or one or two floats per parameter
  int64_t optimizer_steps = 0;         // optim::Optimizer::steps(): the schedule's position
  // An external model's layout (its parameter count is the params'); empty
  // for a built-in model.
  std::vector<model::TensorSpec> layout;
  // Sharded servers: which shard wrote it, of how many, and where its
  // slice (params) begins in a model of model_params parameters. Files of
  // one server (and those written before shards could checkpoint) are shard
  // 0 of 1, holding the whole model.
  int64_t shard_index = 0;
  int64_t shard_count = 1;
  int64_t slice_begin = 0;
  int64_t model_params = 0;  // 0: params->size(), the whole model
};

// The names a checkpoint records of the run that wrote it: a run resumes
// only a checkpoint of its own model, policy and optimizer, since their
// states mean nothing to another.
struct CheckpointIdentity {
  std::string model;      // model::ModelSpec::Name()
  std::string policy;     // sync::Policy::Name()
  std::string optimizer;  // optim::Optimizer::Name()
};

// A checkpoint of run `identity` (of --workers `workers`) whose policy
// saved `state`, after `samples` samples and `seconds` of training; its
// params are left unset, for the model's snapshot to fill once its updates
// are in.
Checkpoint MakeCheckpoint(const CheckpointIdentity& identity, int64_t workers,
                          const sync::PolicyState& state, int64_t samples, double seconds,
                          std::vector<float> optimizer_state);

// Config naming `source` when `checkpoint` is not one of run `identity`
// with `num_params` parameters: another model or size, policy or optimizer.
Status CheckResumable(const Checkpoint& checkpoint, const std::string& source,
                      const CheckpointIdentity& identity, int64_t num_params);

// DataLoss naming `source` when `checkpoint` is not the file of shard
// `index` of `count` holding [begin, end) of a model of `model_params`
// parameters: each shard resumes only its own slice, and a file of another
// shard, another shard count or model would mix slices of different models.
Status CheckShardOfCheckpoint(const Checkpoint& checkpoint, const std::string& source,
                              int64_t index, int64_t count, int64_t begin, int64_t end,
                              int64_t model_params);

// The bound --resume-max-value sets by default. Beyond it a float32's
// neighbours are more than 2^17 apart, so that no step of a learning rate
// that trains moves the value; and its square, which norms and second
// moments take, is within 10^14 of overflowing. No parameter, optimizer
// state or counted buffer (a float32 count is exact only to 2^24) of a model
// that trains comes near it.
inline constexpr double kDefaultResumeMaxValue = 1e12;

// DataLoss naming `source` when a parameter (module state included) or an
// optimizer state value of `checkpoint` is beyond +-`max_value` (0: no
// bound): a model that cannot train, whose updates would all be refused
// or change nothing.
Status CheckTrainable(const Checkpoint& checkpoint, const std::string& source, double max_value);

// The policy state `checkpoint` saved, for sync::Policy::Restore.
sync::PolicyState SavedPolicyState(const Checkpoint& checkpoint);

// The bytes of the file for `checkpoint`. REQUIRES: params set.
std::string EncodeCheckpoint(const Checkpoint& checkpoint);

// Reads the bytes of a checkpoint file; DataLoss naming `source` and what is
// wrong (truncated, not a checkpoint, another format, checksum mismatch,
// inconsistent contents) when they are not one EncodeCheckpoint wrote.
Result<Checkpoint> DecodeCheckpoint(std::string_view bytes, const std::string& source);

// Writes `checkpoint` to `path` atomically: a temporary file in the same
// folder, fsync, rename over `path`, fsync of the folder. On any failure
// the temporary file is removed and whatever `path` held is left as it was
// (IOError).
Status WriteCheckpointFile(const std::string& path, const Checkpoint& checkpoint);

// Reads and checks a checkpoint file: NotFound, IOError or DataLoss.
Result<Checkpoint> ReadCheckpointFile(const std::string& path);

// CRC-32 (IEEE 802.3, reflected) of `bytes`, continuing from `crc`: zlib's
// crc32, so any zlib (Python's zlib.crc32 too) checks a file's trailer.
uint32_t Crc32(std::string_view bytes, uint32_t crc = 0);

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_CHECKPOINT_H_
