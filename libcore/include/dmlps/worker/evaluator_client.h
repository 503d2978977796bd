// An evaluator process: joins a server started with --evaluator, receives
// the model snapshots the server would have evaluated itself, and answers
// each with the accuracy and loss a user function computes. The server
// stamps the results with the snapshots' times, so that its evaluation log,
// --target-accuracy and traces behave as for a model it evaluates itself.
#ifndef DMLPS_WORKER_EVALUATOR_CLIENT_H_
#define DMLPS_WORKER_EVALUATOR_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "dmlps/base/status.h"
#include "dmlps/model/model.h"
#include "dmlps/worker/link_spec.h"

namespace dmlps::worker {

struct EvaluatorConfig {
  // The server and how to reach it; the server asks its evaluator for the
  // job secret.
  LinkSpec link;
  // Called once the server has welcomed the evaluator, with the model it
  // trains (a built-in model's spec, or "external") and its parameter
  // count, before any snapshot; an error ends the evaluator. Null: none.
  std::function<Status(const std::string& model, int64_t num_params)> on_join;
};

// Computes a snapshot's accuracy (in [0, 1]) and mean loss; an error ends
// the evaluator (the server goes on without it).
using EvaluateFn = std::function<Result<model::EvalResult>(std::span<const float> params)>;

// What an evaluator did.
struct EvaluatorReport {
  int64_t snapshots = 0;    // evaluated and answered
  std::string stop_reason;  // the server's, when it stopped the evaluator
  int signal = 0;           // the signal that ended it, or 0
};

// Joins the server of `config` as its evaluator and answers its snapshots
// with `evaluate` until the server stops it (ok), a signal arrives (nonzero
// in *signal; reported, not an error), the server refuses it (Refused) or
// goes silent (Unavailable), or `evaluate` fails. The snapshots' size is the
// Welcome's num_params; a snapshot of another size is a protocol error.
Result<EvaluatorReport> RunEvaluator(const EvaluatorConfig& config, const EvaluateFn& evaluate,
                                     const std::atomic<int>* signal);

}  // namespace dmlps::worker

#endif  // DMLPS_WORKER_EVALUATOR_CLIENT_H_
