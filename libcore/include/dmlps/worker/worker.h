// The worker: joins a server, loads its shard, and runs steps the way the
// server's policy asks (see sync::WorkerMode) until the server says stop.
// RunWorker with a Computation is the library's way in: the caller's model
// trained by an ordinary dmlps worker.
#ifndef DMLPS_WORKER_WORKER_H_
#define DMLPS_WORKER_WORKER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/model/layout.h"
#include "dmlps/worker/computation.h"
#include "dmlps/worker/link_spec.h"
#include "dmlps/worker/straggler.h"

namespace dmlps::worker {

struct WorkerConfig {
  LinkSpec link;      // the server and how to reach it
  int64_t rank = -1;  // -1: the server assigns one
  std::string data = "fashion-mnist";
  int64_t threads = 1;
  int64_t max_batch = 0;  // the most samples this worker takes in one step; 0: no cap
  // Derive max_batch from the device's free memory, for `model` (the
  // server's model must be that one).
  bool max_batch_auto = false;
  std::string model = "mlp:128";
  std::string device = "cpu";  // model::ParseDevice: cpu, cuda, cuda:N
  StragglerSpec straggler;
  // How long to keep trying to reach a server that went away before giving up.
  std::chrono::milliseconds reconnect_timeout{30000};
  std::string trace;  // trace file ("-": standard output); empty: none
  // Announces the model's layout and initial values in the Hello, as a
  // server of --model external needs (the first worker's values become the
  // model's). With `layout` empty, `model`'s own layout (model::LayoutOf)
  // and its initial values drawn with seed 1, as a server's default --seed.
  bool announce_layout = false;
  // A library user's model: its layout and initial values (as many floats
  // as the layout has parameters), announced as they are.
  std::vector<model::TensorSpec> layout;
  std::shared_ptr<const std::vector<float>> initial_values;
  // Data declaring more features than this is refused (data::DataSpec).
  int64_t max_features = int64_t{1} << 26;
};

// Checks a config before anything starts; every problem found, one per line.
std::vector<std::string> ValidateConfig(const WorkerConfig& config);

struct WorkerReport {
  int64_t rank = -1;
  int64_t steps = 0;
  int64_t samples = 0;
  double compute_s = 0;
  double straggle_s = 0;
  double wait_s = 0;
  double comm_s = 0;
  double seconds = 0;
  std::string stop_reason;
  int64_t reconnects = 0;  // times the worker joined a server again
  int signal = 0;          // the signal that ended the run, or 0
};

// Runs one worker until the server stops it (ok), no server answers within
// the timeouts (Unavailable; a server that goes away mid-run is retried with
// back-off for reconnect_timeout, and the worker Hellos again when it is
// back), the server refuses it (Refused), its data is missing or
// corrupt, or a signal arrives (nonzero in *signal; reported, not an error).
Result<WorkerReport> RunWorker(const WorkerConfig& config, const std::atomic<int>* signal);

// As above, but the worker computes with `computation` instead of the
// built-in model the server names: config.data, model, device and
// max_batch_auto are not used. The server's parameter vector must have the
// computation's layout (num_params() is checked; the order of the floats
// is the caller's to match). A store of a nonzero value into *signal (null:
// none) stops the worker as a signal does. An error from the computation
// ends the run with that error, after the worker has left the server.
Result<WorkerReport> RunWorker(const WorkerConfig& config, std::unique_ptr<Computation> computation,
                               const std::atomic<int>* signal);

}  // namespace dmlps::worker

#endif  // DMLPS_WORKER_WORKER_H_
