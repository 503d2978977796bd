// The flags run and sim share: the job, per-worker straggler profiles and
// the policies to compare; --format; and the one parser of them all.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "cmd/dmlps-bench/commands.h"
#include "dmlps/cli/flags.h"
#include "dmlps/cli/policy_list.h"
#include "dmlps/cli/values.h"
#include "dmlps/sync/registry.h"

namespace dmlps::bench_cli {

void AddExperimentOptions(cxxopts::Options& options) {
  const bench::Experiment d;
  cli::AddFlags(
      options, "Experiment",
      {{"workers", "Workers per cluster", "N", std::to_string(d.job.workers)},
       {"policies", "Policies to compare, comma-separated: " + sync::EntrySyntaxes(), "LIST",
        "bsp,ssp:3,wbsp,abps,lbbsp"},
       {"slowdown", "Slowdown factor per worker, or one for all (default: the last worker at 4)",
        "K,..."},
       {"slowdown-schedule",
        "Slowdown by iteration for some workers: RANK=I:K,...[;RANK=...], "
        "e.g. 3=0:1,150:4",
        "SPEC"},
       {"delay-ms", "Fixed delay per step in milliseconds, per worker or one for all", "D,...",
        "0"},
       {"delay-prob",
        "Probability per step of the --delay-ms delay (0: every step), per worker or "
        "one for all",
        "P,...", "0"},
       {"round-robin-ms", "In iteration t the worker of rank t mod N sleeps D milliseconds", "D",
        "0"},
       {"bandwidth-mbps",
        "Cap on what each worker sends, megabits/s, per worker or one for all "
        "(0: no cap)",
        "M,...", "0"},
       {"bandwidth-schedule",
        "Bandwidth cap by iteration for some workers: "
        "RANK=I:M,...[;RANK=...], e.g. 3=0:0,150:100",
        "SPEC"}});
  cli::AddTrainingOptions(options, "Experiment", d.job, /*external_model=*/true);
  cli::AddFlags(
      options, "Experiment",
      {{"momentum-every",
        sync::PoliciesWith(&sync::PolicyTraits::takes_momentum_every) +
            ": take the momentum once every N pushes (0: each policy's own)",
        "N", "0"},
       {"target", "Target test accuracy: a run's time is its time to reach it (0: no target)",
        "ACC", "0.85"},
       {"eval-every", "Iterations between evaluations: the granularity of the time to target", "N",
        std::to_string(d.job.eval_every)},
       {"max-iterations", "End a run after N iterations (0: no limit)", "N", "0"},
       {"max-seconds", "End a run that has not reached the target after SECONDS of training",
        "SECONDS", "300"},
       {"repeat", "Runs per policy; the policies take turns, so drift hits all alike", "R", "1"},
       {"seed", "Seed for the model, the sampling and the random delays", "N", "1"},
       {"push-codec", "Codec of every push: none, fp16, bf16, int8 or topk:F (docs/compression.md)",
        "CODEC", "none"},
       {"pull-codec", "Codec of the model the server sends: none, fp16, bf16, int8 or topk:F",
        "CODEC", "none"}});
  cli::AddListPoliciesFlag(options, "Experiment", cli::PolicyList::kBench);
}

namespace {

// --push-codec and --pull-codec, or the pairs of --codecs (the Codec group's
// flag, a list of PUSH[/PULL] here).
std::vector<bench::Codecs> ReadCodecs(cli::FlagReader& flags) {
  auto parse = [&flags](const std::string& flag) {
    Result<compress::Codec> codec = compress::ParseCodec(flags.String(flag));
    if (codec.ok()) return *codec;
    flags.AddProblem("--" + flag + ": " + codec.status().message());
    return compress::Codec{};
  };
  const compress::Codec pull = parse("pull-codec");
  if (!flags.Has("codecs")) return {{parse("push-codec"), pull}};
  if (flags.Has("push-codec")) flags.AddProblem("--push-codec: give it or --codecs, not both");
  std::vector<bench::Codecs> codecs;
  for (const std::string& entry : cli::SplitList(flags.String("codecs"), ',')) {
    Result<bench::Codecs> pair = bench::ParseCodecs(entry, pull);
    if (pair.ok()) {
      codecs.push_back(*pair);
    } else {
      flags.AddProblem("--codecs: " + pair.status().message());
    }
  }
  return codecs;
}

}  // namespace

bench::Experiment ReadExperiment(cli::FlagReader& flags) {
  bench::Experiment e;
  e.job.workers = flags.Int("workers", 1, 100000);
  e.policies = cli::SplitList(flags.String("policies"), ',');
  for (const std::string& p : e.policies) {
    if (p.empty()) flags.AddProblem("--policies: an empty entry");
  }
  cli::ReadTrainingOptions(flags, &e.job);
  e.momentum_every = flags.Int("momentum-every", 0, 1 << 20);
  if (flags.Has("momentum-every") &&
      std::none_of(e.policies.begin(), e.policies.end(), [&e](const std::string& entry) {
        // A bad entry is ValidateExperiment's to report.
        const Result<sync::PolicyConfig> policy = bench::PolicyFor(entry, e);
        return policy.ok() && sync::TakesMomentumEvery(*policy);
      })) {
    flags.AddProblem("--momentum-every applies to " +
                     sync::PoliciesWith(&sync::PolicyTraits::takes_momentum_every) +
                     "; --policies lists none of them");
  }
  e.job.target_accuracy = flags.Real("target", 0, 1);
  e.job.eval_every = flags.Int("eval-every", 1);
  e.job.max_iterations = flags.Int("max-iterations", 0);
  e.job.max_seconds = flags.Real("max-seconds", 0);
  e.repeat = flags.Int("repeat", 1, 10000);
  e.job.seed = static_cast<uint64_t>(flags.Int("seed", 0));
  e.codecs = ReadCodecs(flags);
  const int64_t n = std::max<int64_t>(e.job.workers, 1);

  e.stragglers.assign(static_cast<size_t>(n), worker::StragglerSpec{});
  auto per_worker = [&](const std::string& flag, auto apply) {
    const std::string text = flags.String(flag);
    Result<std::vector<double>> values = bench::ParsePerWorker(text, n);
    if (!values.ok()) {
      flags.AddProblem("--" + flag + ": " + values.status().message());
      return;
    }
    for (int64_t r = 0; r < n; ++r)
      apply(e.stragglers[static_cast<size_t>(r)], (*values)[static_cast<size_t>(r)]);
  };
  if (flags.Has("slowdown")) {
    per_worker("slowdown", [](worker::StragglerSpec& s, double v) { s.slowdown = v; });
  } else if (n > 1) {
    e.stragglers.back().slowdown = 4;
  }
  // dmlps-worker takes whole milliseconds.
  bool whole = true;
  per_worker("delay-ms", [&whole](worker::StragglerSpec& s, double v) {
    whole = whole && v == std::floor(v);
    s.delay = std::chrono::milliseconds(static_cast<int64_t>(v));
  });
  if (!whole) flags.AddProblem("--delay-ms: whole milliseconds only");
  per_worker("delay-prob", [](worker::StragglerSpec& s, double v) { s.delay_prob = v; });
  per_worker("bandwidth-mbps", [](worker::StragglerSpec& s, double v) { s.bandwidth_mbps = v; });
  const int64_t round_robin_ms = flags.Int("round-robin-ms", 0, 86400000);
  for (worker::StragglerSpec& s : e.stragglers) {
    s.round_robin = std::chrono::milliseconds(round_robin_ms);
    s.seed = e.job.seed;
  }
  // RANK=I:V,...[;RANK=...]: a schedule for each worker named.
  auto schedules = [&](const std::string& flag, auto parse, auto member) {
    if (!flags.Has(flag)) return;
    for (const std::string& entry : cli::SplitList(flags.String(flag), ';')) {
      Result<std::pair<int64_t, std::string>> ranked = bench::ParseRankEntry(entry, n);
      if (!ranked.ok()) {
        flags.AddProblem("--" + flag + ": " + ranked.status().message());
        continue;
      }
      auto schedule = parse(ranked->second);
      if (!schedule.ok()) {
        flags.AddProblem("--" + flag + ": " + schedule.status().message());
        continue;
      }
      e.stragglers[static_cast<size_t>(ranked->first)].*member = *schedule;
    }
  };
  schedules("slowdown-schedule", worker::ParseSlowdownSchedule, &worker::StragglerSpec::schedule);
  schedules("bandwidth-schedule", worker::ParseBandwidthSchedule,
            &worker::StragglerSpec::bandwidth_schedule);
  flags.AddProblems(bench::ValidateExperiment(e));
  return e;
}

const std::vector<std::string>& HelpGroups() {
  static const std::vector<std::string> kGroups = {"Experiment", "Run",     "Simulation",
                                                   "Transport",  "Profile", "Codec",
                                                   "Advise",     "Output",  "Common"};
  return kGroups;
}

void AddOptions(cxxopts::Options& options) {
  AddExperimentOptions(options);
  AddRunOptions(options);
  AddSimOptions(options);
  AddTransportOptions(options);
  AddProfileOptions(options);
  AddCodecOptions(options);
  AddAdviseOptions(options);
  AddOutputOptions(options);
  options.add_options("Positional")("subcommand", "", cxxopts::value<std::string>())(
      "traces", "", cxxopts::value<std::vector<std::string>>());
  options.parse_positional({"subcommand", "traces"});
  cli::AddCommonOptions(options);
}

void AddOutputOptions(cxxopts::Options& options) {
  cli::AddFlags(options, "Output", {{"format", "Output: table, tsv or json", "FORMAT", "table"}});
}

bench::Format ReadFormat(cli::FlagReader& flags) {
  Result<bench::Format> format = bench::ParseFormat(flags.String("format"));
  if (!format.ok()) {
    flags.AddProblem("--format: " + format.status().message());
    return bench::Format::kTable;
  }
  return *format;
}

}  // namespace dmlps::bench_cli
