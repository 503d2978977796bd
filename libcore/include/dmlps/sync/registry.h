// The policies' registry: one row per policy, the one place that knows the
// policies by name. dmlps-server's flags, dmlps-bench's entries and the
// servers it starts, the simulator, auto's candidates, the aggregation
// checks and the help texts all ask here, so that a policy is added by its
// own file and one row (docs/algorithms.md, "Policies, actions and the
// driver").
#ifndef DMLPS_SYNC_REGISTRY_H_
#define DMLPS_SYNC_REGISTRY_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/sync/policy.h"

namespace dmlps::sync {

// A setting of PolicyConfig as dmlps-server's flag --NAME VALUE (or --NAME
// alone, a switch) sets it.
struct PolicyFlag {
  using Field =
      std::variant<int64_t PolicyConfig::*, double PolicyConfig::*, std::string PolicyConfig::*,
                   bool PolicyConfig::*, std::vector<std::string> PolicyConfig::*>;
  std::string_view name;  // without the dashes: "staleness"
  std::string_view arg;   // the value's name ("S"); empty: a switch
  // One line, for --help, which puts the policies that take the flag
  // before it (PoliciesTaking: "ssp: "), so that it names none itself.
  std::string_view help;
  Field field;
  double min = 0;  // a number's range, both ends allowed
  double max = 0;
  bool negated = false;  // a switch that sets its field false (--no-outer-nesterov)
  // A value that fills more than one field (--arima-order P,D,Q): how it is
  // read and shown; null: as `field` says.
  Status (*parse)(std::string_view text, PolicyConfig* config) = nullptr;
  std::string (*show)(const PolicyConfig& config) = nullptr;
  // Whether dmlps-bench passes the flag to the servers it starts, for a
  // policy that takes it; null: never, the server's default stands. Only
  // what an entry or the experiment sets is passed.
  bool (*passed)(const PolicyConfig& config) = nullptr;
};

// What the tools that name a policy need to know of it.
struct PolicyTraits {
  // Answers each push on its own rather than broadcasting the model at the
  // end of a round: its workers compute on models that miss the others'
  // latest gradients (asp, ssp, dssp, async-localsgd).
  bool answers_each_push = false;
  // Takes PolicyConfig::momentum_every (delayed momentum).
  bool takes_momentum_every = false;
  // The server steps the model with the outer optimizer (outer_lr,
  // outer_momentum, outer_nesterov) rather than the job's --lr and
  // --momentum, which then drive the workers' local steps.
  bool outer_optimizer = false;
  // Aggregates each round's pushes into one update, which a robust
  // --aggregate rule can then make (server/aggregate.h).
  bool aggregates_rounds = false;
  // A SwitchingPolicy (sync-switch, auto) can switch into it live: its
  // workers run in kSync mode and it tells its round boundaries.
  bool switchable = false;
};

struct PolicyRow {
  // As --policy and dmlps-bench's entries name it: "ssp".
  std::string_view name;
  // Its entry with a parameter, as dmlps-bench spells it ("ssp:S"); empty:
  // it takes none.
  std::string_view syntax;
  std::string_view help;  // a few words, for help texts and completions
  WorkerMode mode = WorkerMode::kSync;
  PolicyTraits traits;
  // The dmlps-server flags it takes, space-separated, in the order
  // dmlps-bench passes them.
  std::string_view flags;
  // A dmlps-bench entry only: it runs the policy of this name with
  // `preset` applied (lbbsp-gpu: lbbsp in gpu mode); its traits and flags
  // are that policy's. Empty: the row is a policy of its own.
  std::string_view runs;
  void (*preset)(PolicyConfig* config) = nullptr;
  // Reads the entry's parameter (after the first ':') into `config`; the
  // message says what the syntax needs. Null: it takes none.
  Status (*parse)(std::string_view parameter, PolicyConfig* config) = nullptr;
  // The settings it refuses, beyond those every policy needs (CheckPolicy);
  // InvalidArgument, one line. Null: none.
  Status (*check)(const PolicyConfig& config) = nullptr;
  // Makes the policy. REQUIRES: CheckPolicy(config) passed. Null: it is
  // made above the policies' room (auto: autopolicy::MakePolicy), by the
  // PolicyFactory the server and the simulator are given.
  std::unique_ptr<Policy> (*make)(const PolicyConfig& config) = nullptr;
  // The pushes a round's update keeps (backup: the first num_workers - B
  // to arrive); null: every live worker's.
  int64_t (*kept)(const PolicyConfig& config) = nullptr;
};

// Every row, policies first in the order help texts list them, then
// dmlps-bench's entries that run one of them with a preset.
std::span<const PolicyRow> PolicyRows();
// The row called `name` (an entry's name, without its parameter), or null.
const PolicyRow* FindPolicyRow(std::string_view name);
// The policy row an entry or policy name stands for: the row itself, or
// the one it runs; null for none. "ssp:3", "ssp" and "lbbsp-gpu" are taken.
const PolicyRow* PolicyRowOf(std::string_view entry);
// PolicyRowOf's traits; all false for a name that is none.
PolicyTraits TraitsOf(std::string_view entry);
// Every flag a policy takes, in the order --help lists them.
std::span<const PolicyFlag> PolicyFlags();
// The flags `row` takes (PolicyRow::flags), in its order; none for an
// entry that runs another row's policy.
std::vector<const PolicyFlag*> FlagsOf(const PolicyRow& row);

// The policy every other is measured against: efficiency tables give each
// policy's iterations over its, and auto's decider holds a switch into it
// to a bar of its own (docs/auto.md).
inline constexpr std::string_view kReferencePolicy = "bsp";

// Sets config->name (and what a preset or the parameter says) from a
// dmlps-bench entry "NAME[:PARAMETER]"; InvalidArgument, one line without
// the entry, for an unknown name or a bad parameter. Other fields stay.
Status ApplyEntry(std::string_view entry, PolicyConfig* config);
// The settings MakePolicy would refuse; InvalidArgument, one line.
Status CheckPolicy(const PolicyConfig& config);
// Whether the switching policy `switcher` (auto: its name, workers and
// batch) can run `entry` ("ssp:3", as dmlps-bench names policies):
// InvalidArgument, one line, for itself, an entry CheckPolicy refuses, or a
// policy not PolicyTraits::switchable, since a worker learns its mode once,
// when it joins.
Status CheckSwitchCandidate(std::string_view entry, const PolicyConfig& switcher);
// The policies (not entries) with `trait`, "asp, ssp, async-localsgd or
// dssp", for messages.
std::string PoliciesWith(bool PolicyTraits::*trait);
// The pushes a round of `config`'s policy keeps: PolicyRow::kept, else
// num_workers.
int64_t PushesKept(const PolicyConfig& config);
// The policy's worker mode (PolicyRowOf's), or kSync for a name that is none.
WorkerMode ModeOf(std::string_view entry);
// The dmlps-server flags that set `config`'s policy: --policy NAME, then
// those of its flags dmlps-bench passes (PolicyFlag::passed).
std::vector<std::string> PolicyServerFlags(const PolicyConfig& config);
// The policies (not entries) that take --`flag`, in the rows' order.
std::vector<std::string_view> PoliciesTaking(std::string_view flag);
// The problem with giving --`flag` to --policy `policy`: "--FLAG applies
// only to --policy A or B"; empty where `policy` takes it or `flag` is no
// policy's.
std::string MisplacedFlag(std::string_view flag, std::string_view policy);
// The names --policy takes, "bsp, asp, ..." (policies only), and every
// entry dmlps-bench takes with its syntax, "bsp, asp, ssp:S, ...".
std::string PolicyNames();
std::string EntrySyntaxes();
// How dmlps-bench's entries spell `row`: "ssp[:S]" (the parameter has a
// default), "bsp".
std::string EntrySyntax(const PolicyRow& row);
// What a flag's field holds in `config`, as the flag would be given
// ("3", "0.125", "a,b"); "" for a switch that is off.
std::string ShowFlag(const PolicyFlag& flag, const PolicyConfig& config);

}  // namespace dmlps::sync

#endif  // DMLPS_SYNC_REGISTRY_H_
