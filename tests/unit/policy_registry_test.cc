// The policies' registry: its rows hold together, make what they say, parse
// dmlps-bench's entries, become dmlps-server's flags and come back from
// them, and the lists the completions and man pages take are every row's.
#include <doctest/doctest.h>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "dmlps/bench/experiment.h"
#include "dmlps/cli/policy_flags.h"
#include "dmlps/cli/policy_list.h"
#include "dmlps/cli/values.h"
#include "dmlps/sync/registry.h"
#include "test_util.h"

namespace dmlps::sync {
namespace {

// Every name in `row`'s flags, as written.
std::vector<std::string> FlagNamesOf(const PolicyRow& row) {
  std::vector<std::string> names;
  std::string rest(row.flags);
  for (size_t start = 0; start < rest.size();) {
    const size_t space = std::min(rest.find(' ', start), rest.size());
    names.push_back(rest.substr(start, space - start));
    start = space + 1;
  }
  return names;
}

// The settings dmlps-bench gives the entry `entry` on a job of 4 workers.
PolicyConfig EntryConfig(std::string_view entry, int64_t momentum_every = 0) {
  bench::Experiment experiment;
  experiment.job.workers = 4;
  experiment.job.batch = 64;
  experiment.job.target_accuracy = 0.8;
  experiment.momentum_every = momentum_every;
  Result<PolicyConfig> config = bench::PolicyFor(entry, experiment);
  REQUIRE_MESSAGE(config.ok(), entry);
  return *config;
}

TEST_CASE("registry: the rows hold together") {
  std::set<std::string_view> names;
  for (const PolicyRow& row : PolicyRows()) {
    CAPTURE(row.name);
    CHECK(names.insert(row.name).second);
    CHECK_FALSE(row.help.empty());
    if (!row.syntax.empty()) {
      CHECK(row.syntax.starts_with(std::string(row.name) + ":"));
      CHECK(static_cast<bool>(row.parse));
    }
    if (!row.runs.empty()) {
      // An entry that runs a policy with a preset takes that policy's flags.
      const PolicyRow* runs = FindPolicyRow(row.runs);
      REQUIRE(runs != nullptr);
      CHECK(runs->runs.empty());
      CHECK(row.flags.empty());
      CHECK(static_cast<bool>(row.preset));
      CHECK(PolicyRowOf(row.name) == runs);
      continue;
    }
    CHECK(PolicyRowOf(row.name) == &row);
    // A policy a switching policy runs is one of kSync workers.
    if (row.traits.switchable) CHECK(row.mode == WorkerMode::kSync);
    for (const std::string& flag : FlagNamesOf(row)) {
      CAPTURE(flag);
      CHECK(std::any_of(PolicyFlags().begin(), PolicyFlags().end(),
                        [&flag](const PolicyFlag& f) { return f.name == flag; }));
    }
  }
  // Every flag is some policy's.
  for (const PolicyFlag& f : PolicyFlags()) {
    CAPTURE(f.name);
    CHECK(std::any_of(PolicyRows().begin(), PolicyRows().end(), [&f](const PolicyRow& row) {
      const std::vector<std::string> flags = FlagNamesOf(row);
      return std::find(flags.begin(), flags.end(), f.name) != flags.end();
    }));
  }
  CHECK(FindPolicyRow("nope") == nullptr);
  CHECK(PolicyRowOf("ssp:3") == FindPolicyRow("ssp"));
  CHECK(FindPolicyRow(kReferencePolicy) != nullptr);
}

TEST_CASE("registry: each policy row makes a policy of its mode, named after it") {
  for (const PolicyRow& row : PolicyRows()) {
    if (!row.runs.empty()) continue;
    CAPTURE(row.name);
    const PolicyConfig config = EntryConfig(row.name);
    CHECK(config.name == row.name);
    CHECK(CheckPolicy(config).ok());
    Result<std::unique_ptr<Policy>> made = MakePolicy(config);
    if (row.make == nullptr) {
      // Made above the policies' room, by the programs' factory.
      CHECK_FALSE(made.ok());
      continue;
    }
    REQUIRE(made.ok());
    CHECK((*made)->mode() == row.mode);
    CHECK(ModeOf(row.name) == row.mode);
    CHECK((*made)->Name().starts_with(row.name));
  }
}

TEST_CASE("registry: entries set the policy, its preset and its parameter") {
  PolicyConfig c;
  REQUIRE(ApplyEntry("ssp:5", &c).ok());
  CHECK(c.name == "ssp");
  CHECK(c.staleness == 5);
  REQUIRE(ApplyEntry("lbbsp-gpu", &c).ok());
  CHECK(c.name == "lbbsp");
  CHECK(c.lb_mode == "gpu");
  c = {};
  REQUIRE(ApplyEntry("async-localsgd-dylu:4", &c).ok());
  CHECK(c.name == "async-localsgd");
  CHECK(c.dylu);
  CHECK(c.local_steps == 4);
  REQUIRE(ApplyEntry("dssp:0:2", &c).ok());
  CHECK(c.staleness_low == 0);
  CHECK(c.staleness_high == 2);
  REQUIRE(ApplyEntry("auto:bsp+ssp:3", &c).ok());
  CHECK(c.candidates == std::vector<std::string>{"bsp", "ssp:3"});
  REQUIRE(ApplyEntry("sync-switch:online", &c).ok());
  CHECK(c.switch_online);

  const Status unknown = ApplyEntry("nope:1", &c);
  CHECK(unknown.message().find("unknown policy 'nope'") != std::string::npos);
  CHECK(unknown.message().find("ssp[:S]") != std::string::npos);
  CHECK(ApplyEntry("bsp:1", &c).message().find("bsp takes no parameter") != std::string::npos);
  CHECK(ApplyEntry("ssp:-1", &c).message() == "ssp:S needs a whole number S >= 0");
  CHECK(ApplyEntry("dssp:3", &c).message() == "dssp:LOW:HIGH needs two whole numbers");
  CHECK_FALSE(ApplyEntry("sync-switch:soon", &c).ok());
}

TEST_CASE("registry: traits answer for entries and names") {
  for (const char* name :
       {"asp", "ssp", "ssp:3", "dssp", "async-localsgd", "async-localsgd-dylu"}) {
    CHECK_MESSAGE(AnswersEachPush(name), name);
  }
  for (const char* name : {"bsp", "backup:1", "wbsp", "abps", "lbbsp", "token", "localsgd",
                           "sync-switch", "auto", "nope"}) {
    CHECK_FALSE_MESSAGE(AnswersEachPush(name), name);
  }
  CHECK(TraitsOf("lbbsp-gpu").switchable);
  CHECK_FALSE(TraitsOf("wbsp").switchable);
  CHECK(PoliciesWith(&PolicyTraits::takes_momentum_every) == "asp, ssp, async-localsgd or dssp");
  PolicyConfig backup = EntryConfig("backup:3");
  CHECK(PushesKept(backup) == 1);
  CHECK(PushesKept(EntryConfig("bsp")) == 4);
  CHECK(ModeOf("wbsp-overlap") == WorkerMode::kLocalOverlap);
}

TEST_CASE("registry: a switching policy's candidates are switchable entries") {
  PolicyConfig automatic = EntryConfig("auto");
  CHECK(CheckSwitchCandidate("backup:2", automatic).ok());
  CHECK(CheckSwitchCandidate("lbbsp-gpu", automatic).ok());
  CHECK(CheckSwitchCandidate("auto", automatic).message() == "auto cannot be its own candidate");
  CHECK(CheckSwitchCandidate("wbsp", automatic).message().find("cannot switch into 'wbsp' live") !=
        std::string::npos);
  CHECK(CheckSwitchCandidate("backup:4", automatic).message().starts_with("'backup:4': backup"));
  automatic.candidates = {"bsp", "token"};
  CHECK(CheckPolicy(automatic).message().starts_with("--candidates: auto cannot switch"));
}

// Parses `argv` (the program's name first) with dmlps-server's policy flags
// and --policy, as the server reads them; problems into *problems.
PolicyConfig ReadServerFlags(std::vector<std::string> argv, std::vector<std::string>* problems) {
  cxxopts::Options options("dmlps-server");
  options.add_options()("policy", "", cxxopts::value<std::string>()->default_value("bsp"));
  cli::AddPolicyFlags(options, PolicyConfig{});
  argv.insert(argv.begin(), "dmlps-server");
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  const cxxopts::ParseResult parsed = options.parse(static_cast<int>(args.size()), args.data());
  cli::FlagReader flags(parsed);
  PolicyConfig read;
  read.name = flags.String("policy");
  cli::ReadPolicyFlags(flags, &read);
  *problems = flags.problems();
  return read;
}

TEST_CASE("registry: a policy's server flags read back as its settings") {
  for (const char* entry : {"bsp",
                            "asp",
                            "ssp:0",
                            "ssp:7",
                            "backup:2",
                            "wbsp",
                            "wbsp-overlap",
                            "abps",
                            "lbbsp",
                            "lbbsp:narx",
                            "lbbsp-gpu",
                            "token",
                            "localsgd:3",
                            "async-localsgd:5",
                            "async-localsgd-dylu:2",
                            "dssp:0:2",
                            "sync-switch:0.5",
                            "sync-switch:online",
                            "auto",
                            "auto:bsp+backup:1"}) {
    CAPTURE(entry);
    const PolicyConfig sent = EntryConfig(entry, 0);
    std::vector<std::string> argv = PolicyServerFlags(sent);
    std::vector<std::string> problems;
    const PolicyConfig read = ReadServerFlags(argv, &problems);
    CHECK(problems.empty());
    CHECK(read.name == sent.name);
    const PolicyRow* row = FindPolicyRow(sent.name);
    REQUIRE(row != nullptr);
    for (const std::string& flag : FlagNamesOf(*row)) {
      const auto f = std::find_if(PolicyFlags().begin(), PolicyFlags().end(),
                                  [&flag](const PolicyFlag& p) { return p.name == flag; });
      CHECK_MESSAGE(ShowFlag(*f, read) == ShowFlag(*f, sent), flag);
    }
  }
  // Delayed momentum is passed only where it is set.
  std::vector<std::string> problems;
  CHECK(ReadServerFlags(PolicyServerFlags(EntryConfig("asp", 3)), &problems).momentum_every == 3);
  CHECK(problems.empty());
}

TEST_CASE("registry: a policy flag given for another policy is refused, naming its own") {
  std::vector<std::string> problems;
  ReadServerFlags({"--policy", "bsp", "--staleness", "2", "--local-steps", "4"}, &problems);
  REQUIRE(problems.size() == 2);
  CHECK(problems[0] == "--staleness applies only to --policy ssp");
  // Every policy that takes it, as the rows list it.
  CHECK(problems[1].starts_with("--local-steps applies only to --policy localsgd, fedavg"));
  CHECK(problems[1].ends_with(" or async-localsgd"));
  ReadServerFlags({"--policy", "lbbsp", "--predictor", "ema", "--arima-order", "1,0,0"}, &problems);
  CHECK(problems == std::vector<std::string>{"--arima-order applies only to --predictor arima"});
  CHECK(MisplacedFlag("momentum-every", "bsp") ==
        "--momentum-every applies only to --policy asp, ssp, async-localsgd or dssp");
  CHECK(MisplacedFlag("momentum-every", "dssp").empty());
  CHECK(MisplacedFlag("workers", "bsp").empty());  // no policy's flag
}

// The lines of `text`, each split at its tabs.
std::vector<std::vector<std::string>> Fields(const std::string& text) {
  std::vector<std::vector<std::string>> lines;
  std::string rest = text;
  while (!rest.empty()) {
    const std::string line = rest.substr(0, rest.find('\n'));
    rest.erase(0, std::min(rest.size(), line.size() + 1));
    lines.push_back(cli::SplitList(line, '\t'));
  }
  return lines;
}

TEST_CASE("registry: --list-policies lists every row, in the registry's order") {
  const auto server = Fields(cli::PolicyListText(cli::PolicyList::kServer));
  const auto bench = Fields(cli::PolicyListText(cli::PolicyList::kBench));
  size_t policies = 0;
  REQUIRE(bench.size() == PolicyRows().size());
  for (size_t i = 0; i < PolicyRows().size(); ++i) {
    const PolicyRow& row = PolicyRows()[i];
    const std::string name(row.name);
    CAPTURE(name);
    // Four fields, none empty: a shell reading them at its tabs keeps them apart.
    REQUIRE(bench[i].size() == 4);
    for (const std::string& field : bench[i]) CHECK_FALSE(field.empty());
    CHECK(bench[i][0] == name);
    CHECK(bench[i][1] == (row.syntax.empty() ? "-" : EntrySyntax(row)));
    CHECK(bench[i][2] == (TraitsOf(row.name).switchable ? "switchable" : "-"));
    CHECK(bench[i][3] == row.help);
    if (!row.runs.empty()) continue;
    REQUIRE(policies < server.size());
    const std::vector<std::string>& line = server[policies++];
    REQUIRE(line.size() == 4);
    for (const std::string& field : line) CHECK_FALSE(field.empty());
    CHECK(line[0] == name);
    // Its flags, each as --help shows it.
    for (const std::string& flag : FlagNamesOf(row)) {
      CHECK(line[1].find("[--" + flag) != std::string::npos);
    }
    if (row.flags.empty()) CHECK(line[1] == "-");
  }
  CHECK(policies == server.size());
  CHECK(Fields(cli::PolicyListText(cli::PolicyList::kServer))[2][1] ==
        "[--staleness S] [--momentum-every N]");
}

TEST_CASE("registry: the man pages' policy lists are made from every row") {
  // Each item on a line of its own.
  const std::string server = "\n" + cli::PolicyListScdoc(cli::PolicyList::kServer);
  const std::string bench = "\n" + cli::PolicyListScdoc(cli::PolicyList::kBench);
  for (const PolicyRow& row : PolicyRows()) {
    const std::string name(row.name);
    CAPTURE(name);
    CHECK(bench.find("\n- *" + name + "*") != std::string::npos);
    if (!row.runs.empty()) {
      CHECK(server.find("\n- *" + name + "*") == std::string::npos);
      continue;
    }
    CHECK(server.find("\n- *" + name + "*") != std::string::npos);
    // What it does, and how its workers run.
    CHECK(server.find(std::string(row.help)) != std::string::npos);
    CHECK(server.find(fmt::format("workers: {}", WorkerModeName(row.mode))) != std::string::npos);
  }
  CHECK(server.starts_with("\n- *bsp*: bulk synchronous; workers: sync; a candidate of *auto*.\n"));
  CHECK(server.find("\n- *ssp* [*--staleness* _S_] [*--momentum-every* _N_]: ") !=
        std::string::npos);
  CHECK(bench.find("\n- *dssp*[*:*_LOW_*:*_HIGH_]: ") != std::string::npos);
  CHECK(bench.find("\n- *auto*[*:*_A+B+..._]: ") != std::string::npos);
  CHECK(bench.find("\n- *lbbsp-gpu*: lbbsp, batch sizes found numerically (*--policy lbbsp* "
                   "with a preset); a candidate of *auto*.\n") != std::string::npos);
  // The pages that list the policies hold the marker the build replaces.
  const std::string src = std::string(DMLPS_TEST_DATA_DIR) + "/../../man/";
  struct Page {
    std::string file;
    cli::PolicyList which;
  };
  for (const Page& page : {Page{"dmlps-server.1.scd", cli::PolicyList::kServer},
                           Page{"dmlps-bench.1.scd", cli::PolicyList::kBench}}) {
    CAPTURE(page.file);
    const cli::PolicyList which = page.which;
    const std::string source = dmlps::testing::Slurp(src + page.file);
    const Result<std::string> built = cli::SplicePolicyList(source, which);
    REQUIRE(built.ok());
    CHECK(built->find(cli::PolicyListScdoc(which)) != std::string::npos);
    CHECK(built->find(cli::kPolicyListMarker) == std::string::npos);
  }
  CHECK(cli::SplicePolicyList("# NAME\n", cli::PolicyList::kServer)
            .status()
            .message()
            .find("no line starts with '; @policy-list@'") != std::string::npos);
}

}  // namespace
}  // namespace dmlps::sync
