// The training job: what is trained, on what, by how many workers, at what
// rate and until when. One struct shared by every configuration that runs
// or plans a job (the server's, the simulator's, dmlps-bench's experiment
// and the policies'), so that a job passes from one to another whole, in
// one assignment, and each field has one name everywhere. Each holder sets
// its own defaults (a binary keeps those its documented results were
// measured with).
#ifndef DMLPS_BASE_JOB_H_
#define DMLPS_BASE_JOB_H_

#include <cstdint>
#include <string>

namespace dmlps {

struct JobSpec {
  int64_t workers = 1;
  // A model name as model::ParseModelSpec reads it (mlp:128, cnn:32,64,...),
  // or "external" (a model the server does not compute).
  std::string model = "mlp:128";
  std::string data = "fashion-mnist";
  int64_t batch = 64;  // samples per worker step; the global batch is batch * workers
  double lr = 0.05;
  double momentum = 0.9;
  double target_accuracy = 0;  // 0: no target
  // 0: no target; else the run is done at the first evaluation whose mean
  // loss is at most this (and whose accuracy reaches target_accuracy, when
  // that is set too): for models whose quality is a loss or perplexity.
  double target_loss = 0;
  int64_t eval_every = 50;     // iterations between evaluations
  int64_t max_iterations = 0;  // 0: no limit
  double max_seconds = 0;      // 0: no limit
  uint64_t seed = 1;           // the model's initial values, the data's order
};

}  // namespace dmlps

#endif  // DMLPS_BASE_JOB_H_
