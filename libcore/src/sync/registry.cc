// The policies' rows, the flags that set them, and the look-ups every tool
// that names a policy goes through.
#include "dmlps/sync/registry.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <system_error>

#include "dmlps/predict/predictor.h"
#include "dmlps/sync/abps.h"
#include "dmlps/sync/backup.h"
#include "dmlps/sync/dssp.h"
#include "dmlps/sync/fedavg.h"
#include "dmlps/sync/lbbsp.h"
#include "dmlps/sync/localsgd.h"
#include "dmlps/sync/postlocal.h"
#include "dmlps/sync/syncswitch.h"
#include "dmlps/sync/token.h"
#include "dmlps/sync/wbsp.h"

namespace dmlps::sync {
namespace {

using Made = std::unique_ptr<Policy>;

bool Always(const PolicyConfig& /*config*/) { return true; }

Status ParseArimaOrderFlag(std::string_view text, PolicyConfig* config) {
  predict::PredictorOptions order;
  DMLPS_RETURN_IF_ERROR(predict::ParseArimaOrder(std::string(text), &order));
  config->arima_p = order.arima_p;
  config->arima_d = order.arima_d;
  config->arima_q = order.arima_q;
  return Status::Ok();
}

std::string ShowArimaOrder(const PolicyConfig& config) {
  return fmt::format("{},{},{}", config.arima_p, config.arima_d, config.arima_q);
}

// In the order dmlps-server's --help lists them.
const PolicyFlag kFlags[] = {
    {"staleness", "S", "clocks a worker may run ahead of the slowest", &PolicyConfig::staleness, 0,
     1000000, false, nullptr, nullptr, Always},
    {"staleness-low", "S", "the lowest staleness bound a worker is given",
     &PolicyConfig::staleness_low, 0, 1000000, false, nullptr, nullptr, Always},
    {"staleness-high", "S",
     "the highest staleness bound, given to a worker as fast as fits that many more clocks into "
     "the slowest's iteration",
     &PolicyConfig::staleness_high, 0, 1000000, false, nullptr, nullptr, Always},
    {"switch-at", "FRACTION",
     "switch once FRACTION of the run is done (sync-switch: from BSP to ASP): of the accuracy "
     "progress toward --target-accuracy when given, else of --max-iterations",
     &PolicyConfig::switch_at, 0, 1, false, nullptr, nullptr,
     [](const PolicyConfig& c) { return !c.switch_online; }},
    {"switch-online", "",
     "ASP while a worker's recent iterations take over twice the others' median (a transient "
     "straggler), BSP otherwise",
     &PolicyConfig::switch_online, 0, 0, false, nullptr, nullptr, Always},
    {"candidates", "LIST",
     "the policies it may switch between, comma-separated as dmlps-bench names them, those "
     "dmlps-bench --list-policies calls switchable; it starts under the first "
     "(default backup:1,bsp,ssp:3,lbbsp, with backup:2... after bsp where the job's efficiency "
     "table has their rows, as mlp:128 on 4 workers; on two workers bsp first, on one without "
     "backup:1)",
     &PolicyConfig::candidates, 0, 0, false, nullptr, nullptr, Always},
    {"backup", "B", "pushes per iteration not waited for", &PolicyConfig::backup, 0, 100000, false,
     nullptr, nullptr, Always},
    {"chunk", "N", "samples per chunk; workers look for SyncNow between chunks",
     &PolicyConfig::chunk, 1, 1 << 24, false, nullptr, nullptr, Always},
    {"rebalance-every", "N", "iterations between batch-size changes",
     &PolicyConfig::rebalance_every, 1, 1 << 30},
    {"lb-mode", "MODE", "cpu (batch proportional to predicted speed) or gpu (numerical)",
     &PolicyConfig::lb_mode, 0, 0, false, nullptr, nullptr, Always},
    {"predictor", "NAME", "the speed predictor of --lb-mode cpu: last, ema, arima or narx",
     &PolicyConfig::predictor, 0, 0, false, nullptr, nullptr,
     [](const PolicyConfig& c) { return c.lb_mode == "cpu"; }},
    {"ema-alpha", "A", "--predictor ema's weight of the newest speed", &PolicyConfig::ema_alpha,
     1e-9, 1},
    {"arima-order", "P,D,Q", "--predictor arima's order P,D,Q", &PolicyConfig::arima_p, 0, 0, false,
     ParseArimaOrderFlag, ShowArimaOrder},
    {"lb-step", "N", "samples --lb-mode gpu moves per rebalance at first (0: B/(4N))",
     &PolicyConfig::lb_step, 0, 1 << 24},
    {"token-size", "N", "samples per token", &PolicyConfig::token_size, 1, 1 << 24, false, nullptr,
     nullptr, Always},
    {"local-steps", "H", "local steps each worker takes per push (H)", &PolicyConfig::local_steps,
     1, 1 << 20, false, nullptr, nullptr, Always},
    {"outer-lr", "LR",
     "learning rate of the server's outer SGD on the pseudo-gradients (--lr and --momentum then "
     "drive the workers' local steps)",
     &PolicyConfig::outer_lr, 1e-12, 1e6},
    {"outer-momentum", "M", "momentum of the outer SGD (Nesterov's unless told)",
     &PolicyConfig::outer_momentum, 0, 0.999999},
    {"no-outer-nesterov", "", "heavy-ball outer momentum instead of Nesterov's",
     &PolicyConfig::outer_nesterov, 0, 0, true},
    {"dylu", "",
     "Dynamic Local Updates, each worker's local steps scaled to its measured speed (the fastest "
     "takes H)",
     &PolicyConfig::dylu, 0, 0, false, nullptr, nullptr, Always},
    {"momentum-every", "N",
     "take the momentum (async-localsgd: the outer one, delayed Nesterov) once every N pushes, "
     "plain steps in between (0: at every push; async-localsgd: every number of workers)",
     &PolicyConfig::momentum_every, 0, 1 << 20, false, nullptr, nullptr,
     [](const PolicyConfig& c) { return c.momentum_every > 0; }},
};

// A whole number >= 0 for `*field`, else `complaint`.
Status CountParameter(std::string_view text, int64_t* field, std::string_view complaint) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    return Status::InvalidArgument(std::string(complaint));
  }
  *field = value;
  return Status::Ok();
}

Status ParseDsspRange(std::string_view parameter, PolicyConfig* config) {
  const size_t second = parameter.find(':');
  constexpr std::string_view kNeeds = "dssp:LOW:HIGH needs two whole numbers";
  if (second == std::string_view::npos) return Status::InvalidArgument(std::string(kNeeds));
  DMLPS_RETURN_IF_ERROR(
      CountParameter(parameter.substr(0, second), &config->staleness_low, kNeeds));
  return CountParameter(parameter.substr(second + 1), &config->staleness_high, kNeeds);
}

Status ParseSwitchAt(std::string_view parameter, PolicyConfig* config) {
  if (parameter == "online") {
    config->switch_online = true;
    return Status::Ok();
  }
  const auto [end, ec] =
      std::from_chars(parameter.data(), parameter.data() + parameter.size(), config->switch_at);
  if (parameter.empty() || ec != std::errc() || end != parameter.data() + parameter.size()) {
    return Status::InvalidArgument("sync-switch:FRACTION needs a number in [0, 1] or 'online'");
  }
  return Status::Ok();
}

Status ParseCandidates(std::string_view parameter, PolicyConfig* config) {
  // auto:A+B+..., since commas separate dmlps-bench's entries.
  size_t start = 0;
  while (start <= parameter.size()) {
    const size_t plus = std::min(parameter.find('+', start), parameter.size());
    config->candidates.emplace_back(parameter.substr(start, plus - start));
    start = plus + 1;
  }
  return Status::Ok();
}

Status CheckLocalSgd(const PolicyConfig& config) {
  if (config.local_steps < 1) {
    return Status::InvalidArgument(config.name + " needs at least 1 local step");
  }
  if (!(config.outer_lr > 0) || !(config.outer_momentum >= 0 && config.outer_momentum < 1)) {
    return Status::InvalidArgument(
        config.name + " needs an outer learning rate > 0 and an outer momentum in [0, 1)");
  }
  return Status::Ok();
}

Status CheckLbBsp(const PolicyConfig& config) {
  if (config.rebalance_every < 1) {
    return Status::InvalidArgument("lbbsp needs --rebalance-every of at least 1");
  }
  if (config.lb_mode != "cpu" && config.lb_mode != "gpu") {
    return Status::InvalidArgument("unknown lbbsp mode '" + config.lb_mode + "' (cpu or gpu)");
  }
  if (config.lb_step < 0) return Status::InvalidArgument("lbbsp needs a step of 0 or more");
  return predict::MakePredictor(config.predictor, PredictorOptionsFor(config)).status();
}

Status CheckSwitchCandidates(const PolicyConfig& config);

constexpr PolicyTraits kRounds{.aggregates_rounds = true};
constexpr PolicyTraits kRoundsSwitchable{.aggregates_rounds = true, .switchable = true};
constexpr PolicyTraits kEachPush{
    .answers_each_push = true, .takes_momentum_every = true, .switchable = true};

const PolicyRow kRows[] = {
    {.name = "bsp",
     .help = "bulk synchronous",
     .traits = kRoundsSwitchable,
     .make = [](const PolicyConfig& c) -> Made {
       return std::make_unique<BspPolicy>(c.job.workers);
     }},
    {.name = "asp",
     .help = "asynchronous",
     .traits = kEachPush,
     .flags = "momentum-every",
     .make = [](const PolicyConfig& c) -> Made {
       return std::make_unique<SspPolicy>(c.job.workers, -1);
     }},
    {.name = "ssp",
     .syntax = "ssp:S",
     .help = "stale synchronous",
     .traits = kEachPush,
     .flags = "staleness momentum-every",
     .parse =
         [](std::string_view p, PolicyConfig* c) {
           return CountParameter(p, &c->staleness, "ssp:S needs a whole number S >= 0");
         },
     .check =
         [](const PolicyConfig& c) {
           return c.staleness < 0 ? Status::InvalidArgument("ssp needs a staleness of 0 or more")
                                  : Status::Ok();
         },
     .make = [](const PolicyConfig& c) -> Made {
       return std::make_unique<SspPolicy>(c.job.workers, c.staleness);
     }},
    {.name = "backup",
     .syntax = "backup:B",
     .help = "backup workers",
     .traits = kRoundsSwitchable,
     .flags = "backup",
     .parse =
         [](std::string_view p, PolicyConfig* c) {
           return CountParameter(p, &c->backup, "backup:B needs a whole number B >= 0");
         },
     .check =
         [](const PolicyConfig& c) {
           if (c.backup >= 0 && c.backup < c.job.workers) return Status::Ok();
           return Status::InvalidArgument(fmt::format(
               "backup needs 0 <= backup workers < workers ({} of {})", c.backup, c.job.workers));
         },
     .make = [](const PolicyConfig& c) -> Made {
       return std::make_unique<BackupPolicy>(c.job.workers, c.backup);
     },
     .kept = [](const PolicyConfig& c) { return c.job.workers - c.backup; }},
    {.name = "wbsp",
     .help = "worker-busy synchronous",
     .mode = WorkerMode::kLocal,
     .make = [](const PolicyConfig& c) -> Made {
       return std::make_unique<WbspPolicy>(c.job.workers, false);
     }},
    {.name = "wbsp-overlap",
     .help = "wbsp, compute and communication overlapped",
     .mode = WorkerMode::kLocalOverlap,
     .make = [](const PolicyConfig& c) -> Made {
       return std::make_unique<WbspPolicy>(c.job.workers, true);
     }},
    {.name = "abps",
     .help = "aggressive synchronization with partial processing",
     .mode = WorkerMode::kChunked,
     .traits = kRounds,
     .flags = "chunk",
     .check =
         [](const PolicyConfig& c) {
           if (c.chunk >= 1 && c.chunk <= c.job.batch) return Status::Ok();
           return Status::InvalidArgument(fmt::format(
               "abps needs a chunk of 1 to {} samples (the batch), not {}", c.job.batch, c.chunk));
         },
     .make = [](const PolicyConfig& c) -> Made {
       return std::make_unique<AbpsPolicy>(c.job.workers);
     }},
    {.name = "lbbsp",
     .syntax = "lbbsp:PREDICTOR",
     .help = "load-balanced batch sizes",
     .traits = kRoundsSwitchable,
     .flags = "lb-mode predictor rebalance-every ema-alpha arima-order lb-step",
     .parse =
         [](std::string_view p, PolicyConfig* c) {
           c->predictor = std::string(p);  // CheckPolicy checks the name
           return Status::Ok();
         },
     .check = CheckLbBsp,
     .make = [](const PolicyConfig& c) -> Made { return std::make_unique<LbBspPolicy>(c); }},
    {.name = "token",
     .help = "token scheduling",
     .mode = WorkerMode::kToken,
     .traits = kRounds,
     .flags = "token-size",
     .check =
         [](const PolicyConfig& c) {
           if (c.token_size >= 1 && c.token_size <= c.job.batch * c.job.workers)
             return Status::Ok();
           return Status::InvalidArgument(
               fmt::format("token needs a token size of 1 to {} samples (the global batch)",
                           c.job.batch * c.job.workers));
         },
     .make = [](const PolicyConfig& c) -> Made {
       return std::make_unique<TokenPolicy>(c.job.workers, c.job.batch, c.token_size);
     }},
    {.name = "localsgd",
     .syntax = "localsgd:H",
     .help = "local SGD with an outer optimizer",
     .mode = WorkerMode::kLocalSgd,
     .traits = {.outer_optimizer = true},
     .flags = "local-steps outer-lr outer-momentum no-outer-nesterov",
     .parse =
         [](std::string_view p, PolicyConfig* c) {
           return CountParameter(p, &c->local_steps, "localsgd:H needs a number H");
         },
     .check = CheckLocalSgd,
     .make = [](const PolicyConfig& c) -> Made {
       return std::make_unique<BspPolicy>(c.job.workers, "localsgd");
     }},
    {.name = "fedavg",
     .syntax = "fedavg:H",
     .help = "federated averaging: localsgd averaging the workers' models",
     .mode = WorkerMode::kLocalSgd,
     .traits = {.outer_optimizer = true},
     .flags = "local-steps",
     .parse =
         [](std::string_view p, PolicyConfig* c) {
           return CountParameter(p, &c->local_steps, "fedavg:H needs a number H");
         },
     .check = CheckFedAvg,
     .make = [](const PolicyConfig& c) -> Made {
       return std::make_unique<BspPolicy>(c.job.workers, "fedavg");
     }},
    {.name = "post-localsgd",
     .syntax = "post-localsgd:H[:FRACTION]",
     .help = "mini-batch SGD, then fedavg from a point of the run",
     .mode = WorkerMode::kLocalSgd,
     .traits = {.outer_optimizer = true},
     .flags = "local-steps switch-at",
     .parse = ParsePostLocalSgd,
     .check = CheckPostLocalSgd,
     .make = [](const PolicyConfig& c) -> Made { return std::make_unique<PostLocalSgdPolicy>(c); }},
    {.name = "async-localsgd",
     .syntax = "async-localsgd:H",
     .help = "asynchronous local SGD",
     .mode = WorkerMode::kLocalSgd,
     .traits = {.answers_each_push = true, .takes_momentum_every = true, .outer_optimizer = true},
     .flags = "local-steps dylu momentum-every outer-lr outer-momentum no-outer-nesterov",
     .parse =
         [](std::string_view p, PolicyConfig* c) {
           return CountParameter(p, &c->local_steps, "async-localsgd:H needs a number H");
         },
     .check = CheckLocalSgd,
     .make = [](const PolicyConfig& c) -> Made {
       return std::make_unique<AsyncLocalSgdPolicy>(c.job.workers, c.local_steps, c.dylu);
     }},
    {.name = "dssp",
     .syntax = "dssp:LOW:HIGH",
     .help = "dynamic stale synchronous",
     .traits = kEachPush,
     .flags = "momentum-every staleness-low staleness-high",
     .parse = ParseDsspRange,
     .check =
         [](const PolicyConfig& c) {
           if (c.staleness_low >= 0 && c.staleness_high >= c.staleness_low) return Status::Ok();
           return Status::InvalidArgument("dssp needs 0 <= --staleness-low <= --staleness-high");
         },
     .make = [](const PolicyConfig& c) -> Made {
       return std::make_unique<DsspPolicy>(c.job.workers, c.staleness_low, c.staleness_high);
     }},
    {.name = "sync-switch",
     .syntax = "sync-switch:FRACTION|online",
     .help = "BSP, then ASP",
     .flags = "switch-at switch-online",
     .parse = ParseSwitchAt,
     .check = CheckSyncSwitch,
     .make = MakeSyncSwitch},
    {.name = "auto",
     .syntax = "auto:A+B+...",
     .help = "switches among candidates as it measures",
     .flags = "candidates",
     .parse = ParseCandidates,
     .check =
         [](const PolicyConfig& c) {
           DMLPS_RETURN_IF_ERROR(CheckSwitchCandidates(c));
           return c.decide_every < 1 ? Status::InvalidArgument("auto decides every 1 or more")
                                     : Status::Ok();
         }},  // made above the policies' room: autopolicy::MakePolicy
    // dmlps-bench's entries that run a policy above with a preset.
    {.name = "lbbsp-gpu",
     .help = "lbbsp, batch sizes found numerically",
     .runs = "lbbsp",
     .preset = [](PolicyConfig* c) { c->lb_mode = "gpu"; }},
    {.name = "async-localsgd-dylu",
     .syntax = "async-localsgd-dylu:H",
     .help = "async-localsgd with Dynamic Local Updates",
     .runs = "async-localsgd",
     .preset = [](PolicyConfig* c) { c->dylu = true; },
     .parse =
         [](std::string_view p, PolicyConfig* c) {
           return CountParameter(p, &c->local_steps, "async-localsgd-dylu:H needs a number H");
         }},
};

const PolicyFlag* FindFlag(std::string_view name) {
  for (const PolicyFlag& f : kFlags) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

bool ListsFlag(const PolicyRow& row, std::string_view flag) {
  const std::vector<const PolicyFlag*> flags = FlagsOf(row);
  return std::any_of(flags.begin(), flags.end(),
                     [flag](const PolicyFlag* f) { return f->name == flag; });
}

// "a", "a or b", "a, b or c".
std::string JoinOr(const std::vector<std::string_view>& items) {
  std::string text;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) text += i + 1 == items.size() ? " or " : ", ";
    text += items[i];
  }
  return text;
}

}  // namespace

Status CheckSwitchCandidate(std::string_view entry, const PolicyConfig& config) {
  const std::string_view name = entry.substr(0, entry.find(':'));
  if (name == config.name) {
    return Status::InvalidArgument(config.name + " cannot be its own candidate");
  }
  PolicyConfig inner;
  inner.job.workers = config.job.workers;
  inner.job.batch = config.job.batch;
  inner.chunk = std::max<int64_t>(1, (config.job.batch + 3) / 4);
  inner.token_size = inner.chunk;
  Status s = ApplyEntry(entry, &inner);
  if (s.ok()) s = CheckPolicy(inner);
  if (!s.ok()) return Status::InvalidArgument(fmt::format("'{}': {}", entry, s.message()));
  if (!TraitsOf(name).switchable) {
    std::string switchable;
    for (const PolicyRow& row : kRows) {
      if (TraitsOf(row.name).switchable) {
        switchable += (switchable.empty() ? "" : ", ") + EntrySyntax(row);
      }
    }
    return Status::InvalidArgument(fmt::format(
        "{} cannot switch into '{}' live: its workers run in another mode ({}'s candidates: {})",
        config.name, entry, config.name, switchable));
  }
  return Status::Ok();
}

namespace {

Status CheckSwitchCandidates(const PolicyConfig& config) {
  for (const std::string& c : config.candidates) {
    if (Status s = CheckSwitchCandidate(c, config); !s.ok()) {
      return Status::InvalidArgument("--candidates: " + s.message());
    }
  }
  return Status::Ok();
}

}  // namespace

std::span<const PolicyRow> PolicyRows() { return kRows; }

std::span<const PolicyFlag> PolicyFlags() { return kFlags; }

const PolicyRow* FindPolicyRow(std::string_view name) {
  for (const PolicyRow& row : kRows) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

const PolicyRow* PolicyRowOf(std::string_view entry) {
  const PolicyRow* row = FindPolicyRow(entry.substr(0, entry.find(':')));
  if (row != nullptr && !row->runs.empty()) row = FindPolicyRow(row->runs);
  return row;
}

PolicyTraits TraitsOf(std::string_view entry) {
  const PolicyRow* row = PolicyRowOf(entry);
  return row != nullptr ? row->traits : PolicyTraits{};
}

Status ApplyEntry(std::string_view entry, PolicyConfig* config) {
  const size_t colon = entry.find(':');
  const std::string_view name = entry.substr(0, colon);
  const PolicyRow* row = FindPolicyRow(name);
  if (row == nullptr) {
    return Status::InvalidArgument(
        fmt::format("unknown policy '{}' (expected one of {})", name, EntrySyntaxes()));
  }
  config->name = std::string(row->runs.empty() ? row->name : row->runs);
  if (row->preset != nullptr) row->preset(config);
  if (colon == std::string_view::npos) return Status::Ok();
  if (row->parse == nullptr) {
    std::vector<std::string_view> taking;
    for (const PolicyRow& r : kRows) {
      if (r.parse != nullptr) taking.push_back(r.syntax);
    }
    return Status::InvalidArgument(
        fmt::format("{} takes no parameter; only {} do", name, JoinOr(taking)));
  }
  return row->parse(entry.substr(colon + 1), config);
}

Status CheckPolicy(const PolicyConfig& config) {
  if (config.job.workers < 1) return Status::InvalidArgument("a run needs at least one worker");
  if (config.job.batch < 1) return Status::InvalidArgument("the batch must be at least 1 sample");
  const PolicyRow* row = FindPolicyRow(config.name);
  if (row == nullptr || !row->runs.empty()) {
    return Status::InvalidArgument("unknown policy '" + config.name + "' (expected one of " +
                                   PolicyNames() + ")");
  }
  if (row->traits.takes_momentum_every && config.momentum_every < 0) {
    return Status::InvalidArgument(config.name + " needs --momentum-every of 0 or more");
  }
  return row->check != nullptr ? row->check(config) : Status::Ok();
}

Result<std::unique_ptr<Policy>> MakePolicy(const PolicyConfig& config) {
  DMLPS_RETURN_IF_ERROR(CheckPolicy(config));
  const PolicyRow* row = FindPolicyRow(config.name);
  if (row->make == nullptr) {
    return Status::InvalidArgument(config.name +
                                   " is made by the programs that run it (dmlps-server, "
                                   "dmlps-bench), through their policy factory");
  }
  return row->make(config);
}

std::string PoliciesWith(bool PolicyTraits::*trait) {
  std::vector<std::string_view> names;
  for (const PolicyRow& row : kRows) {
    if (row.runs.empty() && row.traits.*trait) names.push_back(row.name);
  }
  return JoinOr(names);
}

int64_t PushesKept(const PolicyConfig& config) {
  const PolicyRow* row = PolicyRowOf(config.name);
  return row != nullptr && row->kept != nullptr ? row->kept(config) : config.job.workers;
}

WorkerMode ModeOf(std::string_view entry) {
  const PolicyRow* row = PolicyRowOf(entry);
  return row != nullptr ? row->mode : WorkerMode::kSync;
}

WorkerMode Policy::mode() const { return ModeOf(Name()); }

bool UsesOuterOptimizer(const PolicyConfig& config) {
  return TraitsOf(config.name).outer_optimizer;
}

bool TakesMomentumEvery(const PolicyConfig& config) {
  return TraitsOf(config.name).takes_momentum_every;
}

bool AnswersEachPush(std::string_view name) { return TraitsOf(name).answers_each_push; }

std::string ShowFlag(const PolicyFlag& flag, const PolicyConfig& config) {
  if (flag.show != nullptr) return flag.show(config);
  struct Show {
    const PolicyConfig& c;
    std::string operator()(int64_t PolicyConfig::*f) const { return std::to_string(c.*f); }
    std::string operator()(double PolicyConfig::*f) const { return fmt::format("{}", c.*f); }
    std::string operator()(std::string PolicyConfig::*f) const { return c.*f; }
    std::string operator()(bool PolicyConfig::*f) const { return c.*f ? "on" : ""; }
    std::string operator()(std::vector<std::string> PolicyConfig::*f) const {
      std::string list;
      for (const std::string& item : c.*f) list += (list.empty() ? "" : ",") + item;
      return list;
    }
  };
  return std::visit(Show{config}, flag.field);
}

std::vector<std::string> PolicyServerFlags(const PolicyConfig& config) {
  std::vector<std::string> argv = {"--policy", config.name};
  const PolicyRow* row = FindPolicyRow(config.name);
  if (row == nullptr) return argv;
  for (const PolicyFlag* flag : FlagsOf(*row)) {
    if (flag->passed == nullptr || !flag->passed(config)) continue;
    const std::string value = ShowFlag(*flag, config);
    const std::string name = "--" + std::string(flag->name);
    if (flag->arg.empty()) {
      // A switch given sets its field to !negated; the server's default is the other.
      if (value.empty() == flag->negated) argv.push_back(name);
    } else if (!value.empty()) {
      argv.insert(argv.end(), {name, value});  // an empty list: the server's default
    }
  }
  return argv;
}

std::string MisplacedFlag(std::string_view flag, std::string_view policy) {
  if (FindFlag(flag) == nullptr) return {};
  const PolicyRow* row = FindPolicyRow(policy);
  if (row != nullptr && row->runs.empty() && ListsFlag(*row, flag)) return {};
  return fmt::format("--{} applies only to --policy {}", flag, JoinOr(PoliciesTaking(flag)));
}

std::vector<std::string_view> PoliciesTaking(std::string_view flag) {
  std::vector<std::string_view> taking;
  for (const PolicyRow& r : kRows) {
    if (r.runs.empty() && ListsFlag(r, flag)) taking.push_back(r.name);
  }
  return taking;
}

std::string PolicyNames() {
  std::string text;
  for (const PolicyRow& row : kRows) {
    if (!row.runs.empty()) continue;
    if (!text.empty()) text += ", ";
    text += row.name;
  }
  return text;
}

std::string EntrySyntax(const PolicyRow& row) {
  // "ssp:S" as "ssp[:S]": the parameter has a default.
  if (row.syntax.empty()) return std::string(row.name);
  return fmt::format("{}[{}]", row.name, row.syntax.substr(row.name.size()));
}

std::string EntrySyntaxes() {
  std::string text;
  for (const PolicyRow& row : kRows) text += (text.empty() ? "" : ", ") + EntrySyntax(row);
  return text;
}

std::vector<const PolicyFlag*> FlagsOf(const PolicyRow& row) {
  std::vector<const PolicyFlag*> flags;
  std::string_view rest = row.flags;
  while (!rest.empty()) {
    const size_t space = rest.find(' ');
    if (const PolicyFlag* flag = FindFlag(rest.substr(0, space)); flag != nullptr) {
      flags.push_back(flag);
    }
    rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
  }
  return flags;
}

}  // namespace dmlps::sync
