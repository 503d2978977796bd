#include "dmlps/cli/bench_programs.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "dmlps/auto/auto.h"
#include "dmlps/cli/cli.h"
#include "dmlps/cli/status_line.h"

namespace dmlps::cli {
namespace {

namespace fs = std::filesystem;

bool AnyFailed(const std::vector<bench::RunResult>& runs) {
  return std::any_of(runs.begin(), runs.end(),
                     [](const bench::RunResult& r) { return !r.failure.empty(); });
}

// Runs a measurement that stops early on a signal, and writes its report.
template <typename Report, typename Run, typename Write>
int MeasureAndWrite(const Run& run, const Write& write) {
  const std::atomic<int>* signal = InstallSignalHandlers();
  Result<Report> report = run(signal);
  if (signal->load() != 0) return ExitCodeForSignal(signal->load());
  if (!report.ok()) return ReportError(kBenchProgram, report.status());
  write(*report, std::cout);
  std::cout.flush();
  return 0;
}

// " over 2 shards with 4 workers": who took part in a transport row.
std::string Participants(const bench::TransportRow& row) {
  std::string who;
  if (row.shards > 0)
    who += fmt::format(" over {} shard{}", row.shards, row.shards == 1 ? "" : "s");
  if (row.workers > 0) {
    who += fmt::format(" with {} worker{}", row.workers, row.workers == 1 ? "" : "s");
  }
  if (row.threads > 0) {
    who += fmt::format(" on {} thread{}", row.threads, row.threads == 1 ? "" : "s");
  }
  return who;
}

// "[2/10] bsp run 1/2: 12.3 s, iteration 150, accuracy 0.8012 at 10.1 s":
// a run's status line.
std::string ProgressText(const std::string& label, const bench::Progress& p) {
  std::string line = fmt::format("{}: {:.1f} s", label, p.elapsed_s);
  if (p.accuracy >= 0) {
    line += fmt::format(", iteration {}, accuracy {:.4f} at {:.1f} s of training", p.iteration,
                        p.accuracy, p.seconds);
  }
  return line;
}

}  // namespace

int RunBenchRunProgram(const bench::Experiment& experiment, bench::ExperimentOptions options,
                       bench::Format format) {
  const std::atomic<int>* signal = InstallSignalHandlers();
  const bool keep = !options.out_dir.empty();
  if (!keep) {
    std::string pattern = (fs::temp_directory_path() / "dmlps-bench.XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      return ReportError(kBenchProgram, Status::IOError("cannot create a temporary folder"));
    }
    options.out_dir = pattern;
  }
  const std::string title = bench::DescribeExperiment(experiment);
  if (keep) {
    spdlog::info("{}; logs in {}", title, options.out_dir);
  } else {
    spdlog::info("{}; logs in {}, removed at the end unless a run fails (--out DIR keeps them)",
                 title, options.out_dir);
  }
  StatusLine status;
  if (status.shown()) {
    options.show = [&status](const std::string& label, const bench::Progress& p) {
      status.Show(ProgressText(label, p));
    };
    options.clear = [&status] { status.Clear(); };
  }
  const std::vector<bench::RunResult> runs = bench::RunExperiment(experiment, options, signal);
  if (signal->load() != 0) {
    spdlog::warn("interrupted; logs kept in {}", options.out_dir);
    return ExitCodeForSignal(signal->load());
  }
  bench::WriteRows(
      bench::Tabulate(runs, experiment.policies, bench::CodecsNames(experiment.codecs)), runs,
      title, format, std::cout);
  std::cout.flush();
  const bool any_failed = AnyFailed(runs);
  if (!keep && !any_failed) {
    std::error_code ec;
    fs::remove_all(options.out_dir, ec);
  } else if (any_failed) {
    spdlog::warn("some runs failed; their logs are in {}", options.out_dir);
  }
  if (!std::cout) {
    return ReportError(kBenchProgram, Status::IOError("cannot write to standard output"));
  }
  return any_failed ? kExitRunFailed : 0;
}

int RunBenchSimProgram(const bench::Experiment& experiment, sim::SimOptions options,
                       bench::Format format) {
  StatusLine status;
  if (status.shown()) {
    // Simulated seconds, after the wall time the simulation has taken.
    options.show = [&status, shown = std::string()](const std::string& label,
                                                    const bench::Progress& p) mutable {
      if (label != shown) status.Clear();  // a new run: drawn at once
      shown = label;
      status.Show(ProgressText(label, p) + " (virtual)");
    };
  }
  options.make_policy = autopolicy::MakePolicy;
  Result<std::vector<bench::RunResult>> runs = sim::SimulateExperiment(experiment, options);
  status.Clear();
  if (!runs.ok()) return ReportError(kBenchProgram, runs.status());
  std::string title = fmt::format("simulated: {}; links {} Gbit/s, latency {} us",
                                  bench::DescribeExperiment(experiment), options.network.link_gbps,
                                  options.network.latency_s * 1e6);
  if (options.shared_cores > 0) title += fmt::format(", {} shared cores", options.shared_cores);
  bench::WriteRows(
      bench::Tabulate(*runs, experiment.policies, bench::CodecsNames(experiment.codecs)), *runs,
      title, format, std::cout);
  std::cout.flush();
  return AnyFailed(*runs) ? kExitRunFailed : 0;
}

int RunBenchTransportProgram(const bench::TransportConfig& config, bench::Format format) {
  auto progress = [](const bench::TransportRow& row) {
    spdlog::info("{} {} {}{}: median {:.3f} ms (min {:.3f}, max {:.3f}), {:.2f} GB/s",
                 row.transport, bench::FormatByteSize(row.bytes), row.what, Participants(row),
                 row.ms.median, row.ms.min, row.ms.max, row.gbps);
  };
  return MeasureAndWrite<bench::TransportReport>(
      [&](const std::atomic<int>* signal) {
        return bench::RunTransportBench(config, signal, progress);
      },
      [&](const bench::TransportReport& report, std::ostream& out) {
        bench::WriteTransportReport(report, format, out);
      });
}

int RunBenchProfileProgram(const bench::ProfileConfig& config, bench::Format format) {
  auto progress = [](const bench::ProfileRow& row) {
    spdlog::info("batch {}: median {:.3f} ms (min {:.3f}, max {:.3f}), {:.0f} samples/s", row.batch,
                 row.ms.median, row.ms.min, row.ms.max, row.samples_per_s);
  };
  return MeasureAndWrite<bench::ProfileReport>(
      [&](const std::atomic<int>* signal) { return bench::RunProfile(config, signal, progress); },
      [&](const bench::ProfileReport& report, std::ostream& out) {
        bench::WriteProfileReport(report, format, out);
      });
}

int RunBenchCodecProgram(const bench::CodecBenchConfig& config, bench::Format format) {
  auto progress = [](const bench::CodecRow& row) {
    spdlog::info(
        "{} {} on {}: encode {:.2f} GB/s, decode {:.2f} GB/s, memcpy {:.2f} GB/s, {:.2f}x "
        "smaller",
        row.codec, bench::FormatByteSize(row.bytes), row.kernels, row.encode_gbps, row.decode_gbps,
        row.memcpy_gbps, row.ratio);
  };
  return MeasureAndWrite<bench::CodecReport>(
      [&](const std::atomic<int>* signal) {
        return bench::RunCodecBench(config, signal, progress);
      },
      [&](const bench::CodecReport& report, std::ostream& out) {
        bench::WriteCodecReport(report, format, out);
      });
}

}  // namespace dmlps::cli
