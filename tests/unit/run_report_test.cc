// The closing lines of a server's log: a run that missed its target says
// the best accuracy it saw and the last, each under its own name.
#include "server/run_report.h"

#include <doctest/doctest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "server/evaluation_log.h"

namespace dmlps::server {
namespace {

Evaluation EvaluationAt(int64_t iteration, double accuracy) {
  Evaluation e;
  e.snapshot.iteration = iteration;
  e.snapshot.seconds = static_cast<double>(iteration);
  e.result.accuracy = accuracy;
  e.result.loss = 0.5;
  return e;
}

// The log lines written while `log` runs, with the default logger restored.
template <typename F>
std::string CaptureLog(F log) {
  std::ostringstream text;
  std::shared_ptr<spdlog::logger> saved = spdlog::default_logger();
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(text);
  auto capture = std::make_shared<spdlog::logger>("capture", sink);
  capture->set_pattern("%v");
  spdlog::set_default_logger(capture);
  log();
  spdlog::set_default_logger(saved);
  return text.str();
}

// Records `evaluations` afresh: no evaluation met the target before them.
void Record(const std::vector<Evaluation>& evaluations, const Targets& targets, std::ostream& tsv,
            RunReport* report) {
  TargetProgress progress;
  RecordEvaluations(evaluations, targets, 0, tsv, nullptr, &progress, report);
}

TEST_CASE("a missed target is reported with the best accuracy and the last") {
  RunReport report;
  std::ostringstream tsv;
  Record({EvaluationAt(10, 0.8213), EvaluationAt(20, 0.8478), EvaluationAt(30, 0.8418)},
         Targets{0.9}, tsv, &report);
  CHECK_FALSE(report.target_reached);
  CHECK(report.best_accuracy == doctest::Approx(0.8478));
  CHECK(report.last_eval.accuracy == doctest::Approx(0.8418));

  const std::string log = CaptureLog([&] { LogRunSummary(report, "bsp", Targets{0.9}, 0, 0); });
  CHECK(log.find("target accuracy 0.9 not reached (best 0.8478, last 0.8418)") !=
        std::string::npos);
}

TEST_CASE("the report keeps a lost worker's reason on its one line, escaped") {
  RunReport report;
  report.last_lost = "worker 0 (h:1): gave up: x\ntarget_reached\t1\r";
  std::ostringstream out;
  WriteRunReport(report, out);
  CHECK(out.str().find("\nlast_lost\tworker 0 (h:1): gave up: x\\ntarget_reached\\t1\\r\n") !=
        std::string::npos);
  CHECK(out.str().find("\ntarget_reached") == std::string::npos);
}

TEST_CASE("the best accuracy counts the snapshot that reached the target, not later ones") {
  RunReport report;
  std::ostringstream tsv;
  Record({EvaluationAt(10, 0.5), EvaluationAt(20, 0.85), EvaluationAt(30, 0.95)}, Targets{0.8}, tsv,
         &report);
  CHECK(report.target_reached);
  CHECK(report.best_accuracy == doctest::Approx(0.85));
  const std::string log = CaptureLog([&] { LogRunSummary(report, "bsp", Targets{0.8}, 0, 0); });
  CHECK(log.find("reached accuracy 0.8500 >= 0.8") != std::string::npos);
  CHECK(log.find("not reached") == std::string::npos);
}

TEST_CASE("a loss target is met by the first evaluation at or below it, with the accuracy's") {
  std::vector<Evaluation> evaluations = {EvaluationAt(10, 0.5), EvaluationAt(20, 0.6),
                                         EvaluationAt(30, 0.9)};
  evaluations[0].result.loss = 2.0;
  evaluations[1].result.loss = 1.2;
  evaluations[2].result.loss = 1.1;
  RunReport report;
  std::ostringstream tsv;
  Record(evaluations, Targets{0, 1.2}, tsv, &report);
  CHECK(report.target_reached);
  CHECK(report.iterations_to_target == 20);
  std::string log = CaptureLog([&] { LogRunSummary(report, "bsp", Targets{0, 1.2}, 0, 0); });
  CHECK(log.find("reached loss 1.2000 <= 1.2") != std::string::npos);
  // Both targets: the first evaluation that meets both.
  RunReport both;
  Record(evaluations, Targets{0.85, 1.2}, tsv, &both);
  CHECK(both.iterations_to_target == 30);
  // Missed: the log says so.
  RunReport missed;
  Record(evaluations, Targets{0, 0.5}, tsv, &missed);
  CHECK_FALSE(missed.target_reached);
  log = CaptureLog([&] { LogRunSummary(missed, "bsp", Targets{0, 0.5}, 0, 0); });
  CHECK(log.find("target loss 0.5 not reached (last 1.1000)") != std::string::npos);
  CHECK_FALSE(Targets{}.MetBy(evaluations[2].result));
}

TEST_CASE("an evaluator process's report counts once the next evaluation meets it too") {
  // docs/external-model.md: one report cannot end the run. Met at 20, not
  // at 30: no target; met at 40 and 50, across two calls: reached at 40.
  const Targets targets{0.8, 0, kRemoteConfirmations};
  RunReport report;
  TargetProgress progress;
  std::ostringstream tsv;
  RecordEvaluations({EvaluationAt(10, 0.5), EvaluationAt(20, 0.85), EvaluationAt(30, 0.75)},
                    targets, 0, tsv, nullptr, &progress, &report);
  CHECK_FALSE(report.target_reached);
  RecordEvaluations({EvaluationAt(40, 0.81)}, targets, 0, tsv, nullptr, &progress, &report);
  CHECK_FALSE(report.target_reached);
  RecordEvaluations({EvaluationAt(50, 0.82)}, targets, 0, tsv, nullptr, &progress, &report);
  CHECK(report.target_reached);
  CHECK(report.iterations_to_target == 40);
}

}  // namespace
}  // namespace dmlps::server
