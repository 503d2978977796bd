#include "dmlps/cli/programs.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "dmlps/auto/auto.h"
#include "dmlps/base/file.h"
#include "dmlps/cli/cli.h"
#include "dmlps/data/dataset.h"
#include "dmlps/model/model.h"
#include "dmlps/net/curve.h"
#include "dmlps/net/secret.h"
#include "dmlps/worker/evaluator_client.h"

namespace dmlps::cli {

Status WriteRunReportFile(const server::RunReport& report, const std::string& path) {
  std::ostringstream text;
  server::WriteRunReport(report, text);
  if (!WriteFileAtomically(path, text.str()).ok()) return Status::IOError("cannot write " + path);
  return Status::Ok();
}

namespace {

// Says which launcher started this process, if one did, and takes over
// SIGINT and SIGTERM: what a server and a worker do first.
const std::atomic<int>* StartUnderLauncher(const launch::Launcher& launcher) {
  if (!launcher.name.empty()) spdlog::info("{}", launch::Describe(launcher));
  return InstallSignalHandlers();
}

}  // namespace

int RunLaunchedMain(const LaunchedMain& program, int argc, char** argv) {
  const launch::LaunchDefaults launch = launch::ReadLaunchDefaults();
  cxxopts::Options options(std::string(program.program), program.description);
  program.add_options(options, launch);
  return RunMain(options, program.help_groups, argc, argv, [&program, &launch](FlagReader& flags) {
    return program.read_flags(flags, launch);
  });
}

int RunServerProgram(server::ServerConfig config, const launch::Launcher& launcher) {
  const std::atomic<int>* signal = StartUnderLauncher(launcher);
  config.make_policy = autopolicy::MakePolicy;
  // With the trace on standard output, the evaluations are in it, not in a TSV.
  std::ostringstream no_tsv;
  std::ostream& tsv = config.trace == "-" ? static_cast<std::ostream&>(no_tsv) : std::cout;
  Result<server::RunReport> report = server::RunServer(config, tsv, signal);
  if (!report.ok()) return ReportError(kServerProgram, report.status());
  if (!config.report.empty()) {
    if (Status written = WriteRunReportFile(*report, config.report); !written.ok()) {
      return ReportError(kServerProgram, written);
    }
  }
  if (report->signal != 0) return ExitCodeForSignal(report->signal);
  if ((config.job.target_accuracy > 0 || config.job.target_loss > 0) && !report->target_reached) {
    return kExitRunFailed;
  }
  return 0;
}

int RunWorkerProgram(const worker::WorkerConfig& config, const launch::Launcher& launcher) {
  const std::atomic<int>* signal = StartUnderLauncher(launcher);
  Result<worker::WorkerReport> report = worker::RunWorker(config, signal);
  if (!report.ok()) return ReportError(kWorkerProgram, report.status());
  if (report->signal != 0) return ExitCodeForSignal(report->signal);
  return 0;
}

namespace {

// Scores snapshots with a built-in model on a test set: the server's own
// model, or --model when the server's is external.
class BuiltInEvaluator {
 public:
  // Loads the test set of config.data.
  static Result<std::shared_ptr<BuiltInEvaluator>> Load(const worker::WorkerConfig& config) {
    DMLPS_ASSIGN_OR_RETURN(data::DataSpec spec, data::ParseDataSpec(config.data));
    DMLPS_ASSIGN_OR_RETURN(data::Dataset test_set, data::LoadTest(spec));
    if (test_set.rows() == 0) return Status::DataLoss(config.data + ": the test set is empty");
    return std::make_shared<BuiltInEvaluator>(config.model, std::move(test_set));
  }
  BuiltInEvaluator(std::string model, data::Dataset test_set)
      : model_name_(std::move(model)), test_set_(std::move(test_set)) {}

  // Builds the model once the server has said which it trains.
  Status Join(const std::string& server_model, int64_t num_params) {
    const std::string name = server_model == server::kExternalModel ? model_name_ : server_model;
    DMLPS_ASSIGN_OR_RETURN(
        model::ModelSpec spec,
        model::ParseModelSpec(name, test_set_.dim, std::max<int64_t>(test_set_.classes, 2)));
    model_.emplace(spec);
    if (model_->num_params() != num_params) {
      return Status::Config("the server's model has " + std::to_string(num_params) +
                            " parameters, " + spec.Name() + " here has " +
                            std::to_string(model_->num_params()));
    }
    return Status::Ok();
  }
  Result<model::EvalResult> Evaluate(std::span<const float> params) {
    if (!model_.has_value()) return Status::Internal("a snapshot before the server's Welcome");
    return model_->Evaluate(params, test_set_);
  }

 private:
  const std::string model_name_;
  const data::Dataset test_set_;
  std::optional<model::Model> model_;
};

}  // namespace

int RunEvaluatorProgram(const worker::WorkerConfig& config) {
  const std::atomic<int>* signal = InstallSignalHandlers();
  Result<std::shared_ptr<BuiltInEvaluator>> evaluator = BuiltInEvaluator::Load(config);
  if (!evaluator.ok()) return ReportError(kWorkerProgram, evaluator.status());
  std::shared_ptr<BuiltInEvaluator> scorer = *evaluator;
  worker::EvaluatorConfig options{config.link,
                                  [scorer](const std::string& model, int64_t num_params) {
                                    return scorer->Join(model, num_params);
                                  }};
  Result<worker::EvaluatorReport> report = worker::RunEvaluator(
      options, [scorer](std::span<const float> params) { return scorer->Evaluate(params); },
      signal);
  if (!report.ok()) return ReportError(kWorkerProgram, report.status());
  if (report->signal != 0) return ExitCodeForSignal(report->signal);
  return 0;
}

int RunSecretProgram(const std::string& path, bool force) {
  Result<std::string> secret = net::GenerateSecret();
  if (!secret.ok()) return ReportError(kKeygenProgram, secret.status());
  if (Status written = net::WriteSecretFile(*secret, path, force); !written.ok()) {
    return ReportError(kKeygenProgram, written);
  }
  spdlog::info("wrote the job secret to {}", path);
  return 0;
}

int RunKeygenProgram(const std::vector<std::string>& names, bool force) {
  if (Status curve = net::RequireCurve(); !curve.ok()) return ReportError(kKeygenProgram, curve);
  // Every refusal at once, and nothing written unless every pair can be.
  const std::vector<Status> refused = net::CheckKeyPairTargets(names, force);
  int exit_code = 0;
  for (const Status& problem : refused) exit_code = ReportError(kKeygenProgram, problem);
  if (exit_code != 0) return exit_code;
  for (const std::string& name : names) {
    Result<net::CurveKeyPair> pair = net::GenerateKeyPair();
    if (!pair.ok()) return ReportError(kKeygenProgram, pair.status());
    if (Status written = net::WriteKeyPair(*pair, name, force); !written.ok()) {
      return ReportError(kKeygenProgram, written);
    }
    spdlog::info("wrote {0}.key and {0}.pub", name);
    std::printf("%s\n", pair->public_key.c_str());
  }
  return 0;
}

}  // namespace dmlps::cli
