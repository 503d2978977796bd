#include "dmlps/sync/postlocal.h"

#include <spdlog/fmt/fmt.h>

#include <charconv>
#include <string>
#include <system_error>

namespace dmlps::sync {

PostLocalSgdPolicy::PostLocalSgdPolicy(const PolicyConfig& config)
    : BspPolicy(config.job.workers),
      local_steps_(config.local_steps),
      when_(config.switch_at, config.job.target_accuracy, config.job.max_iterations),
      local_(config.switch_at == 0) {}

void PostLocalSgdPolicy::BeforeReply(WorkerId w, Actions* out) {
  out->push_back(SetLocalSteps{w, local_steps()});
}

void PostLocalSgdPolicy::OnRoundClosed(Actions* out) {
  // OfflineSwitch reads the iteration only, not the push.
  if (!local_) GoLocal(when_.AfterPush(Context(), -1, PushInfo{}), out);
}

void PostLocalSgdPolicy::OnEvaluation(double accuracy, Actions* out) {
  // Every evaluation, the first one's accuracy being the start of the progress.
  const std::optional<SwitchRequest> request = when_.AfterEvaluation(Context(), accuracy);
  if (!local_) GoLocal(request, out);
}

void PostLocalSgdPolicy::GoLocal(const std::optional<SwitchRequest>& request, Actions* out) {
  if (!request) return;
  local_ = true;
  out->push_back(Switch{"localsgd:1", fmt::format("localsgd:{}", local_steps_), request->why,
                        request->measured, request->threshold, round(), true});
}

void PostLocalSgdPolicy::OnRestore(const PolicyState& state) {
  BspPolicy::OnRestore(state);
  if (state.extra.size() == 1) local_ = state.extra[0] != 0;
}

Status ParsePostLocalSgd(std::string_view parameter, PolicyConfig* config) {
  const size_t colon = parameter.find(':');
  const std::string_view steps = parameter.substr(0, colon);
  const std::string_view fraction =
      colon == std::string_view::npos ? std::string_view() : parameter.substr(colon + 1);
  const std::from_chars_result h =
      std::from_chars(steps.data(), steps.data() + steps.size(), config->local_steps);
  bool read = h.ec == std::errc() && h.ptr == steps.data() + steps.size();
  if (read && colon != std::string_view::npos) {
    const std::from_chars_result f =
        std::from_chars(fraction.data(), fraction.data() + fraction.size(), config->switch_at);
    read = !fraction.empty() && f.ec == std::errc() && f.ptr == fraction.data() + fraction.size();
  }
  if (read) return Status::Ok();
  return Status::InvalidArgument(
      "post-localsgd:H[:FRACTION] needs a whole number H and a FRACTION in [0, 1]");
}

Status CheckPostLocalSgd(const PolicyConfig& config) {
  DMLPS_RETURN_IF_ERROR(CheckFedAvg(config));
  if (!(config.switch_at >= 0 && config.switch_at <= 1)) {
    return Status::InvalidArgument("post-localsgd needs --switch-at in [0, 1]");
  }
  if (config.job.target_accuracy <= 0 && config.job.max_iterations <= 0) {
    return Status::InvalidArgument(
        "post-localsgd places --switch-at by the target accuracy or the iteration limit: give "
        "--target-accuracy or --max-iterations");
  }
  return Status::Ok();
}

}  // namespace dmlps::sync
