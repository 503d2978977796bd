// What the server's optimizer is told: the update rule and its
// hyperparameters, parameter groups by tensor-name patterns, clipping and
// the learning-rate schedule (the flags --optimizer, --lr, --momentum,
// --dampening, --nesterov, --weight-decay, --betas, --eps, --param-group,
// --clip-grad-norm, --lr-schedule and --warmup).
#ifndef DMLPS_OPTIM_SETTINGS_H_
#define DMLPS_OPTIM_SETTINGS_H_

#include <cstdint>
#include <msgpack.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/model/layout.h"
#include "dmlps/optim/schedule.h"

namespace dmlps::optim {

struct OptimizerSettings {
  std::string algorithm = "sgd";  // sgd | adam | adamw
  double lr = 0.05;
  double momentum = 0;  // sgd
  double dampening = 0;
  bool nesterov = false;
  double weight_decay = 0;  // sgd, adam: added to the gradient; adamw: decoupled
  double beta1 = 0.9;       // adam, adamw
  double beta2 = 0.999;
  double eps = 1e-8;
  // Steps per momentum step (plain momentum only; see DelayedMomentum).
  int64_t momentum_every = 1;
  std::string schedule = "constant";  // see ParseSchedule
  int64_t warmup = 0;
  // --param-group specs, first match wins: "PATTERN[|PATTERN...]:key=value[:key=value]"
  // with the keys lr and weight_decay; a PATTERN is a glob on tensor names.
  std::vector<std::string> groups;
  // The gradient a step takes is first scaled so its L2 norm over the whole
  // model is at most this (torch.nn.utils.clip_grad_norm_); 0: not clipped.
  double clip_norm = 0;
  MSGPACK_DEFINE_MAP(algorithm, lr, momentum, dampening, nesterov, weight_decay, beta1, beta2, eps,
                     momentum_every, schedule, warmup, groups, clip_norm);

  // Whether these settings ask for nothing beyond SGD with (heavy-ball,
  // Nesterov or delayed) momentum at a constant rate: such steps are taken
  // by the classes of optimizer.h, bit for bit as before groups and
  // schedules existed.
  bool Plain() const;
  // "adamw lr=0.001 betas=0.9,0.999 eps=1e-08 weight_decay=0.01, cosine:1000:0 after 100 warmup
  // steps, clip 1": for the log.
  std::string Describe() const;
};

// Every problem with `settings`, one line each, naming the flag.
std::vector<std::string> SettingsProblems(const OptimizerSettings& settings);

// One parameter group's hyperparameters over a range of the flat vector.
struct GroupRange {
  int64_t begin = 0;
  int64_t end = 0;
  double lr = 0;
  double weight_decay = 0;
  friend bool operator==(const GroupRange&, const GroupRange&) = default;
};

// The groups of `settings` over the model `layout` (its tensors laid end to
// end), restricted to [begin, end) and shifted so that `begin` is 0 (a
// server shard's slice): ranges in order covering [0, end - begin), each
// with the lr and weight decay of the first group whose pattern matches its
// tensor, or the settings' own. InvalidArgument for a malformed group or a
// pattern that matches no tensor. An empty layout makes one range.
Result<std::vector<GroupRange>> ResolveGroups(const OptimizerSettings& settings,
                                              std::span<const model::TensorSpec> layout,
                                              int64_t begin, int64_t end);

}  // namespace dmlps::optim

#endif  // DMLPS_OPTIM_SETTINGS_H_
