// Post-local SGD (Lin et al., "Don't Use Large Mini-Batches, Use Local
// SGD", ICLR 2020): mini-batch SGD for the first part of the run, then
// local SGD (docs/algorithms-local-sgd.md, "Post-local SGD").
#ifndef DMLPS_SYNC_POSTLOCAL_H_
#define DMLPS_SYNC_POSTLOCAL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/sync/fedavg.h"
#include "dmlps/sync/policy.h"
#include "dmlps/sync/syncswitch.h"

namespace dmlps::sync {

// Synchronous local SGD's rounds (sync/localsgd.h), the model the mean of the
// workers' copies (an outer SGD of learning rate 1 without momentum), of one
// local step each until switch_at of the run is done, then of H. A round of one
// step is a step of mini-batch SGD over the global batch: the mean of the
// workers' copies after one step each from the same model is the model stepped
// along their mean gradient, and the mean of their momentum buffers moves as
// one buffer would. The point is placed as sync-switch places its switch
// (OfflineSwitch): by the accuracy's progress toward the target when there is
// one, else by iterations over max_iterations. Every model sent says the local
// steps of the round it starts (SetLocalSteps); the switch is logged and traced
// as a Switch. switch_at 0: rounds of H from the first, FedAvg.
class PostLocalSgdPolicy : public BspPolicy {
 public:
  // REQUIRES: CheckPostLocalSgd(config) passed.
  explicit PostLocalSgdPolicy(const PolicyConfig& config);
  std::string Name() const override { return "post-localsgd"; }
  // The local steps of a round that starts now: 1, then H once switched.
  int64_t local_steps() const { return local_ ? local_steps_ : 1; }

 protected:
  void BeforeReply(WorkerId w, Actions* out) override;
  void OnRoundClosed(Actions* out) override;
  void OnEvaluation(double accuracy, Actions* out) override;
  // A checkpoint keeps whether the local rounds have begun.
  std::vector<int64_t> SaveExtra() const override { return {local_ ? 1 : 0}; }
  void OnRestore(const PolicyState& state) override;

 private:
  // Begins the local rounds, once, when `request` asks for the switch.
  void GoLocal(const std::optional<SwitchRequest>& request, Actions* out);
  // What OfflineSwitch is told: its first policy stands for the rounds of
  // one step.
  SwitchContext Context() const { return {kSyncSwitchFirst, round(), this}; }

  int64_t local_steps_;
  OfflineSwitch when_;
  bool local_;  // the rounds of H steps have begun
};

// Reads post-localsgd's entry parameter, "H" or "H:FRACTION", into
// local_steps and switch_at; InvalidArgument, one line, for any other.
Status ParsePostLocalSgd(std::string_view parameter, PolicyConfig* config);
// The settings post-localsgd refuses: FedAvg's (CheckFedAvg), and a
// switch_at outside [0, 1] or one it cannot place (neither target_accuracy
// nor max_iterations).
Status CheckPostLocalSgd(const PolicyConfig& config);

}  // namespace dmlps::sync

#endif  // DMLPS_SYNC_POSTLOCAL_H_
