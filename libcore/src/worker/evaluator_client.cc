#include "dmlps/worker/evaluator_client.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <vector>

#include "dmlps/worker/worker.h"
#include "worker/link.h"

namespace dmlps::worker {
namespace {

// Checks and evaluates the snapshot of `message`, an Evaluate of `size` floats.
Result<proto::Evaluation> EvaluateSnapshot(proto::Message& message, int64_t size,
                                           const EvaluateFn& evaluate, std::vector<float>* params) {
  const auto& request = std::get<proto::Evaluate>(message.body);
  if (request.num_params != size) {
    return Status::Protocol("a snapshot of " + std::to_string(request.num_params) +
                            " parameters, the model has " + std::to_string(size));
  }
  DMLPS_ASSIGN_OR_RETURN(proto::TensorView view, proto::TensorView::Make(message.payload, size));
  params->resize(static_cast<size_t>(size));
  view.CopyTo(*params);
  DMLPS_ASSIGN_OR_RETURN(model::EvalResult result, evaluate(*params));
  if (!(result.accuracy >= 0 && result.accuracy <= 1) ||
      !(result.loss >= 0 && std::isfinite(result.loss))) {
    return Status::Internal("the evaluation gave accuracy " + std::to_string(result.accuracy) +
                            " and loss " + std::to_string(result.loss));
  }
  return proto::Evaluation{request.id, result.accuracy, result.loss, result.samples};
}

}  // namespace

Result<EvaluatorReport> RunEvaluator(const EvaluatorConfig& config, const EvaluateFn& evaluate,
                                     const std::atomic<int>* signal) {
  WorkerConfig link_config;
  link_config.link = config.link;
  ServerLink link(link_config, signal);
  link.JoinAsEvaluator();
  DMLPS_RETURN_IF_ERROR(link.LoadKeys());
  EvaluatorReport report;
  Status joined = link.Join(0);
  if (link.Interrupted()) {
    report.signal = signal->load();
    return report;
  }
  DMLPS_RETURN_IF_ERROR(joined);
  const int64_t size = link.welcome().num_params;
  spdlog::info("evaluating snapshots of the server at {} (model {}, {} parameters)",
               config.link.server, link.welcome().model, size);
  if (config.on_join) {
    if (Status ready = config.on_join(link.welcome().model, size); !ready.ok()) {
      link.Leave(ready.message());
      return ready;
    }
  }
  std::vector<float> params;
  while (!link.stopped()) {
    Result<proto::Message> message = link.Await({proto::MsgType::kEvaluate});
    if (link.Interrupted()) {
      report.signal = signal->load();
      link.Leave("evaluator interrupted");
      return report;
    }
    if (!message.ok()) return message.status();
    if (link.stopped()) break;
    Result<proto::Evaluation> result = Status::Internal("not evaluated");
    {
      // Heard from while it evaluates, however long that takes; the
      // server's --evaluator-timeout still bounds the answer.
      const ServerLink::BusyScope busy(&link);
      result = EvaluateSnapshot(*message, size, evaluate, &params);
    }
    if (!result.ok()) {
      link.Leave(result.status().message());
      return result.status();
    }
    DMLPS_RETURN_IF_ERROR(link.SendEvaluation(*result));
    ++report.snapshots;
    spdlog::debug("snapshot {}: accuracy {:.4f}, loss {:.4f}", result->id, result->accuracy,
                  result->loss);
  }
  report.stop_reason = link.stop_reason();
  spdlog::info("stopped by the server ({}): {} snapshots evaluated", report.stop_reason,
               report.snapshots);
  return report;
}

}  // namespace dmlps::worker
