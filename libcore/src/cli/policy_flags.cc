#include "dmlps/cli/policy_flags.h"

#include <utility>
#include <variant>
#include <vector>

#include "dmlps/cli/values.h"
#include "dmlps/sync/registry.h"

namespace dmlps::cli {
namespace {

// Reads one policy flag into its field.
void ReadPolicyFlag(FlagReader& flags, const sync::PolicyFlag& f, sync::PolicyConfig* policy) {
  const std::string name(f.name);
  if (f.parse != nullptr) {
    if (Status s = f.parse(flags.String(name), policy); !s.ok()) {
      flags.AddProblem("--" + name + ": " + s.message());
    }
    return;
  }
  struct Read {
    FlagReader& flags;
    const sync::PolicyFlag& f;
    const std::string& name;
    sync::PolicyConfig* p;
    void operator()(int64_t sync::PolicyConfig::*field) const {
      p->*field = flags.Int(name, static_cast<int64_t>(f.min), static_cast<int64_t>(f.max));
    }
    void operator()(double sync::PolicyConfig::*field) const {
      p->*field = flags.Real(name, f.min, f.max);
    }
    void operator()(std::string sync::PolicyConfig::*field) const {
      p->*field = flags.String(name);
    }
    void operator()(bool sync::PolicyConfig::*field) const {
      p->*field = flags.Has(name) != f.negated;
    }
    void operator()(std::vector<std::string> sync::PolicyConfig::*field) const {
      if (flags.Has(name)) p->*field = SplitList(flags.String(name));
    }
  };
  std::visit(Read{flags, f, name, policy}, f.field);
}

}  // namespace

void AddPolicyFlags(cxxopts::Options& options, const sync::PolicyConfig& defaults) {
  std::vector<Flag> flags;
  for (const sync::PolicyFlag& f : sync::PolicyFlags()) {
    std::string taking;
    for (std::string_view policy : sync::PoliciesTaking(f.name)) {
      taking += (taking.empty() ? "" : ", ") + std::string(policy);
    }
    Flag flag{f.name.data(), taking + ": " + std::string(f.help)};
    if (!f.arg.empty()) {
      flag.arg = f.arg.data();
      // A list has no default: absent unless given.
      if (!std::holds_alternative<std::vector<std::string> sync::PolicyConfig::*>(f.field)) {
        flag.default_value = sync::ShowFlag(f, defaults);
      }
    }
    flags.push_back(std::move(flag));
  }
  AddFlags(options, "Policy", flags);
}

void ReadPolicyFlags(FlagReader& flags, sync::PolicyConfig* policy) {
  for (const sync::PolicyFlag& f : sync::PolicyFlags()) ReadPolicyFlag(flags, f, policy);
  if (flags.Has("switch-at") && policy->switch_online) {
    flags.AddProblem("--switch-at and --switch-online exclude each other");
  }
  if (flags.Has("candidates") && policy->candidates.empty()) {
    flags.AddProblem("--candidates needs at least one policy");
  }
  if (flags.Has("arima-order") && policy->predictor != "arima") {
    flags.AddProblem("--arima-order applies only to --predictor arima");
  }
  // A policy flag given for another policy is a mistake worth saying.
  for (const sync::PolicyFlag& f : sync::PolicyFlags()) {
    if (!flags.Has(std::string(f.name))) continue;
    if (std::string why = sync::MisplacedFlag(f.name, policy->name); !why.empty()) {
      flags.AddProblem(std::move(why));
    }
  }
}

}  // namespace dmlps::cli
