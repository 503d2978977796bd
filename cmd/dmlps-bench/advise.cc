// dmlps-bench advise: which policy suits the cluster a run's traces show.
#include <algorithm>
#include <string>

#include "cmd/dmlps-bench/commands.h"
#include "dmlps/cli/bench_programs.h"

namespace dmlps::bench_cli {

void AddAdviseOptions(cxxopts::Options& options) {
  cli::AddFlags(
      options, "Advise",
      {{"candidates",
        "Policies to predict, as --policies names them (default: bsp,backup:1,ssp:3,wbsp,abps,"
        "lbbsp)",
        "LIST"},
       {"bsp-iterations",
        "BSP's iterations to the target (default: the run's own, scaled by its policy's "
        "efficiency)",
        "N"},
       {"sim-iterations", "Iterations simulated per candidate", "N",
        std::to_string(advise::kSimIterations)}});
}

cli::Program ReadAdviseFlags(cli::FlagReader& flags) {
  cli::AdviseConfig config;
  config.traces = flags.List("traces");
  if (config.traces.empty()) {
    flags.AddProblem("advise needs the traces of a run: TRACE... or a run's trace folder");
  }
  if (flags.Has("candidates")) {
    const std::string list = flags.String("candidates");
    size_t start = 0;
    while (start <= list.size()) {
      const size_t comma = std::min(list.find(',', start), list.size());
      if (comma == start) {
        flags.AddProblem("--candidates: an empty entry in '" + list + "'");
        break;
      }
      config.candidates.push_back(list.substr(start, comma - start));
      start = comma + 1;
    }
    bench::Experiment job;
    for (const std::string& c : config.candidates) {
      if (Result<sync::PolicyConfig> p = bench::PolicyFor(c, job); !p.ok()) {
        flags.AddProblem("--candidates: " + p.status().message());
      }
    }
  }
  // --target is the Experiment group's, borrowed: without it, the run's own.
  if (flags.Has("target")) config.target = flags.Real("target", 0, 1);
  if (flags.Has("bsp-iterations")) config.bsp_iterations = flags.Real("bsp-iterations", 1, 1e12);
  config.iterations = flags.Int("sim-iterations", 10, 100000);
  return ProgramFor<cli::AdviseConfig>(flags, std::move(config), nullptr,
                                       cli::RunBenchAdviseProgram);
}

}  // namespace dmlps::bench_cli
