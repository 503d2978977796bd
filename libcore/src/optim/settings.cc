#include "dmlps/optim/settings.h"

#include <fnmatch.h>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace dmlps::optim {
namespace {

// One --param-group spec, parsed.
struct GroupRule {
  std::vector<std::string> patterns;
  std::optional<double> lr;
  std::optional<double> weight_decay;
};

std::vector<std::string> SplitOn(const std::string& text, char at) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (true) {
    const size_t end = text.find(at, begin);
    parts.push_back(text.substr(begin, end == std::string::npos ? end : end - begin));
    if (end == std::string::npos) return parts;
    begin = end + 1;
  }
}

Result<double> NonNegative(const std::string& text, const std::string& what) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value) ||
      value < 0) {
    return Status::InvalidArgument(what + ": '" + text + "' is not a finite number >= 0");
  }
  return value;
}

Result<GroupRule> ParseGroup(const std::string& spec) {
  const std::string what = "--param-group '" + spec + "'";
  const std::vector<std::string> parts = SplitOn(spec, ':');
  if (parts.size() < 2) {
    return Status::InvalidArgument(
        what + ": expected PATTERN[|PATTERN...]:key=value[:key=value] (keys lr, weight_decay)");
  }
  GroupRule rule;
  rule.patterns = SplitOn(parts[0], '|');
  for (const std::string& pattern : rule.patterns) {
    if (pattern.empty()) return Status::InvalidArgument(what + ": an empty pattern");
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t equals = parts[i].find('=');
    const std::string key = parts[i].substr(0, equals);
    if (equals == std::string::npos || (key != "lr" && key != "weight_decay")) {
      return Status::InvalidArgument(what + ": '" + parts[i] +
                                     "' is not lr=RATE or weight_decay=WD");
    }
    DMLPS_ASSIGN_OR_RETURN(double value, NonNegative(parts[i].substr(equals + 1), what));
    if (key == "lr") {
      if (value == 0) return Status::InvalidArgument(what + ": lr must be positive");
      rule.lr = value;
    } else {
      rule.weight_decay = value;
    }
  }
  return rule;
}

bool Matches(const GroupRule& rule, const std::string& name) {
  return std::any_of(rule.patterns.begin(), rule.patterns.end(), [&](const std::string& pattern) {
    return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
  });
}

int64_t Elements(const model::TensorSpec& tensor) {
  int64_t n = 1;
  for (const int64_t d : tensor.shape) n *= d;
  return n;
}

}  // namespace

bool OptimizerSettings::Plain() const {
  return algorithm == "sgd" && dampening == 0 && weight_decay == 0 && schedule == "constant" &&
         warmup == 0 && groups.empty() && clip_norm == 0;
}

std::string OptimizerSettings::Describe() const {
  std::string text = fmt::format("{} lr={}", algorithm, lr);
  if (algorithm == "sgd") {
    if (momentum > 0) text += fmt::format(" momentum={}{}", momentum, nesterov ? " nesterov" : "");
    if (dampening > 0) text += fmt::format(" dampening={}", dampening);
  } else {
    text += fmt::format(" betas={},{} eps={}", beta1, beta2, eps);
  }
  if (weight_decay > 0) text += fmt::format(" weight_decay={}", weight_decay);
  for (const std::string& group : groups) text += " group " + group;
  if (schedule != "constant" || warmup > 0) {
    text += ", schedule " + schedule;
    if (warmup > 0) text += fmt::format(" after {} warmup steps", warmup);
  }
  if (clip_norm > 0) text += fmt::format(", gradient norm clipped to {}", clip_norm);
  return text;
}

std::vector<std::string> SettingsProblems(const OptimizerSettings& s) {
  std::vector<std::string> problems;
  const bool sgd = s.algorithm == "sgd";
  if (!sgd && s.algorithm != "adam" && s.algorithm != "adamw") {
    problems.push_back("--optimizer must be sgd, adam or adamw, not '" + s.algorithm + "'");
  }
  if (!(s.lr > 0) || !std::isfinite(s.lr)) problems.push_back("--lr must be positive");
  if (!(s.momentum >= 0 && s.momentum < 1)) problems.push_back("--momentum must be in [0, 1)");
  if (!(s.dampening >= 0 && s.dampening <= 1)) problems.push_back("--dampening must be in [0, 1]");
  if (!(s.weight_decay >= 0) || !std::isfinite(s.weight_decay)) {
    problems.push_back("--weight-decay must be a finite number >= 0");
  }
  if (!(s.beta1 >= 0 && s.beta1 < 1) || !(s.beta2 >= 0 && s.beta2 < 1)) {
    problems.push_back("--betas must both be in [0, 1)");
  }
  if (!(s.eps > 0) || !std::isfinite(s.eps)) problems.push_back("--eps must be positive");
  if (!(s.clip_norm >= 0) || !std::isfinite(s.clip_norm)) {
    problems.push_back("--clip-grad-norm must be a finite number >= 0");
  }
  if (sgd && s.nesterov && (s.momentum == 0 || s.dampening != 0)) {
    problems.push_back(
        "--nesterov needs --momentum above 0 and no --dampening (as torch.optim.SGD)");
  }
  if (!sgd && (s.momentum != 0 || s.dampening != 0 || s.nesterov)) {
    problems.push_back(
        "--momentum, --dampening and --nesterov are sgd's; adam and adamw take "
        "--betas");
  }
  if (s.momentum_every > 1 && !s.Plain()) {
    problems.push_back(
        "--momentum-every takes plain momentum only: no --optimizer adam(w), "
        "--weight-decay, --dampening, --param-group, --clip-grad-norm or schedule");
  }
  if (Result<Schedule> schedule = ParseSchedule(s.schedule, s.warmup); !schedule.ok()) {
    problems.push_back("--lr-schedule: " + schedule.status().message());
  }
  for (const std::string& group : s.groups) {
    if (Result<GroupRule> rule = ParseGroup(group); !rule.ok()) {
      problems.push_back(rule.status().message());
    }
  }
  return problems;
}

Result<std::vector<GroupRange>> ResolveGroups(const OptimizerSettings& settings,
                                              std::span<const model::TensorSpec> layout,
                                              int64_t begin, int64_t end) {
  std::vector<GroupRule> rules;
  for (const std::string& group : settings.groups) {
    DMLPS_ASSIGN_OR_RETURN(GroupRule rule, ParseGroup(group));
    rules.push_back(std::move(rule));
  }
  std::vector<bool> used(rules.size(), false);
  std::vector<GroupRange> ranges;
  auto add = [&](int64_t from, int64_t to, double lr, double decay) {
    from = std::max(from, begin) - begin;
    to = std::min(to, end) - begin;
    if (from >= to) return;
    if (!ranges.empty() && ranges.back().end == from && ranges.back().lr == lr &&
        ranges.back().weight_decay == decay) {
      ranges.back().end = to;
    } else {
      ranges.push_back({from, to, lr, decay});
    }
  };
  int64_t offset = 0;
  for (const model::TensorSpec& tensor : layout) {
    const int64_t n = Elements(tensor);
    double lr = settings.lr;
    double decay = settings.weight_decay;
    bool taken = false;  // the first group that matches sets the values
    for (size_t r = 0; r < rules.size(); ++r) {
      if (!Matches(rules[r], tensor.name)) continue;
      used[r] = true;
      if (taken) continue;
      taken = true;
      lr = rules[r].lr.value_or(lr);
      decay = rules[r].weight_decay.value_or(decay);
    }
    add(offset, offset + n, lr, decay);
    offset += n;
  }
  if (layout.empty()) add(begin, end, settings.lr, settings.weight_decay);
  for (size_t r = 0; r < rules.size(); ++r) {
    if (used[r]) continue;
    std::vector<std::string> names;
    for (const model::TensorSpec& tensor : layout) names.push_back(tensor.name);
    return Status::InvalidArgument(
        fmt::format("--param-group '{}': no tensor of the model matches "
                    "(its tensors: {})",
                    settings.groups[r], fmt::join(names, ", ")));
  }
  if (!layout.empty() && offset < end) {
    return Status::InvalidArgument(
        fmt::format("the layout's tensors hold {} parameters, the model {}", offset, end));
  }
  return ranges;
}

}  // namespace dmlps::optim
