#include "dmlps/cli/policy_list.h"

#include <spdlog/fmt/fmt.h>

#include <cctype>
#include <cstdio>
#include <vector>

#include "dmlps/sync/registry.h"

namespace dmlps::cli {
namespace {

// The rows `which` lists, in the registry's order.
std::vector<const sync::PolicyRow*> RowsOf(PolicyList which) {
  std::vector<const sync::PolicyRow*> rows;
  for (const sync::PolicyRow& row : sync::PolicyRows()) {
    if (which == PolicyList::kBench || row.runs.empty()) rows.push_back(&row);
  }
  return rows;
}

// "[--staleness S] [--switch-online]", or in scdoc "[*--staleness* _S_]".
std::string FlagsUsage(const sync::PolicyRow& row, bool scdoc) {
  std::string text;
  for (const sync::PolicyFlag* flag : sync::FlagsOf(row)) {
    if (!text.empty()) text += ' ';
    if (scdoc) {
      text += fmt::format("[*--{}*", flag->name);
      if (!flag->arg.empty()) text += fmt::format(" _{}_", flag->arg);
    } else {
      text += fmt::format("[--{}", flag->name);
      if (!flag->arg.empty()) text += fmt::format(" {}", flag->arg);
    }
    text += ']';
  }
  return text;
}

// `text` with scdoc's markup characters taken literally.
std::string Escaped(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '*' || c == '_' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// An entry's syntax in scdoc, as the pages write it by hand: the name,
// the ':' and the keywords (lower case) in bold, the parameters (upper
// case, with the '+' and '...' between them) in italics:
// "*ssp*[*:*_S_]", "*auto*[*:*_A+B+..._]". (scdoc takes no '_' for
// italics right after a '+'.)
std::string EntryScdoc(const sync::PolicyRow& row) {
  const std::string syntax = sync::EntrySyntax(row);
  const auto keyword = [](char c) {
    return std::islower(static_cast<unsigned char>(c)) != 0 || c == '-';
  };
  const auto parameter = [](char c) {
    return std::isupper(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '.';
  };
  std::string out = fmt::format("*{}*", row.name);
  for (size_t i = row.name.size(); i < syntax.size();) {
    const bool is_keyword = keyword(syntax[i]);
    if (!is_keyword && !parameter(syntax[i])) {
      out += syntax[i] == ':' ? "*:*" : Escaped(syntax.substr(i, 1));
      ++i;
      continue;
    }
    size_t end = i;
    while (end < syntax.size() && (is_keyword ? keyword(syntax[end]) : parameter(syntax[end]))) {
      ++end;
    }
    const char mark = is_keyword ? '*' : '_';
    out += mark + syntax.substr(i, end - i) + mark;
    i = end;
  }
  return out;
}

}  // namespace

std::string PolicyListText(PolicyList which) {
  std::string text;
  for (const sync::PolicyRow* row : RowsOf(which)) {
    std::string usage;
    if (which == PolicyList::kServer) {
      usage = FlagsUsage(*row, false);
    } else if (!row->syntax.empty()) {
      usage = sync::EntrySyntax(*row);
    }
    const bool switchable = sync::TraitsOf(row->name).switchable;
    text += fmt::format("{}\t{}\t{}\t{}\n", row->name, usage.empty() ? "-" : usage,
                        switchable ? "switchable" : "-", row->help);
  }
  return text;
}

std::string PolicyListScdoc(PolicyList which) {
  std::string text;
  for (const sync::PolicyRow* row : RowsOf(which)) {
    const sync::PolicyRow& runs = *sync::PolicyRowOf(row->name);
    std::string item;
    if (which == PolicyList::kServer) {
      item = fmt::format("- *{}*", row->name);
      if (const std::string flags = FlagsUsage(*row, true); !flags.empty()) item += " " + flags;
      item += fmt::format(": {}; workers: {}", Escaped(row->help), sync::WorkerModeName(row->mode));
    } else {
      item = fmt::format("- {}: {}", EntryScdoc(*row), Escaped(row->help));
      if (&runs != row) item += fmt::format(" (*--policy {}* with a preset)", runs.name);
      if (runs.traits.takes_momentum_every) item += "; takes *--momentum-every*";
    }
    if (runs.traits.switchable) item += "; a candidate of *auto*";
    text += item + ".\n";
  }
  return text;
}

Result<std::string> SplicePolicyList(std::string_view page, PolicyList which) {
  std::string out;
  bool spliced = false;
  while (!page.empty()) {
    const size_t end = page.find('\n');
    const std::string_view line = page.substr(0, end);
    page = end == std::string_view::npos ? std::string_view() : page.substr(end + 1);
    if (line.starts_with(kPolicyListMarker)) {
      out += PolicyListScdoc(which);
      spliced = true;
    } else {
      out += line;
      out += '\n';
    }
  }
  if (!spliced) {
    return Status::InvalidArgument(
        fmt::format("no line starts with '{}' to put the policies at", kPolicyListMarker));
  }
  return out;
}

void AddListPoliciesFlag(cxxopts::Options& options, const std::string& group, PolicyList which) {
  AddFlags(options, group,
           {{"list-policies",
             which == PolicyList::kServer
                 ? "Print the policies --policy takes, one a line: its name, flags, whether "
                   "auto can switch into it, and what it does (tab-separated); then exit"
                 : "Print the entries --policies takes, one a line: its name, syntax, whether "
                   "auto can switch into it, and what it does (tab-separated); then exit"}});
}

Program ListPoliciesProgram(PolicyList which) {
  return [which] {
    const std::string text = PolicyListText(which);
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (std::fflush(stdout) == 0) return 0;
    return ReportError(which == PolicyList::kServer ? "dmlps-server" : "dmlps-bench",
                       Status::IOError("writing the list to stdout failed"));
  };
}

}  // namespace dmlps::cli
