// The parsing of flag values made of parts, and the flags the binaries
// share: every good spelling, and every bad one with its one-line message.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "dmlps/bench/cluster/run.h"
#include "dmlps/bench/experiment.h"
#include "dmlps/bench/report.h"
#include "dmlps/cli/programs.h"
#include "dmlps/cli/subcommands.h"
#include "dmlps/cli/values.h"

namespace dmlps::cli {
namespace {

// 'text'; built by appending, as "'" + std::string(...) makes GCC 12 warn
// falsely (-Wrestrict).
std::string Quoted(const char* text) {
  std::string quoted = "'";
  quoted += text;
  quoted += '\'';
  return quoted;
}

// `parse` reads each case's text as the value beside it.
template <typename Value, typename Parse>
void CheckParsed(Parse parse, std::initializer_list<std::pair<const char*, Value>> cases) {
  // Not a structured binding: CAPTURE names `text` in a lambda, and clang
  // before 16 does not let a lambda capture a structured binding.
  for (const std::pair<const char*, Value>& one : cases) {
    const char* text = one.first;
    CAPTURE(text);
    auto result = parse(text);
    REQUIRE_MESSAGE(result.ok(), result.status().message());
    CHECK(*result == one.second);
  }
}

// `parse` refuses each of `texts` with InvalidArgument: 'TEXT' then `why`.
template <typename Parse>
void CheckRefused(Parse parse, std::initializer_list<const char*> texts, const std::string& why) {
  for (const char* text : texts) {
    CAPTURE(text);
    auto result = parse(text);
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().code() == StatusCode::kInvalidArgument);
    CHECK(result.status().message() == Quoted(text) + why);
  }
}

TEST_CASE("--shard reads I/S") {
  // strtoll's spelling: a sign and leading blanks pass; the range is
  // server::ValidateConfig's to check.
  CheckParsed<ShardFlag>(ParseShard, {{"0/1", {0, 1}},
                                      {"1/3", {1, 3}},
                                      {"2/2", {2, 2}},
                                      {"-1/3", {-1, 3}},
                                      {"1/0", {1, 0}},
                                      {" 1/3", {1, 3}},
                                      {"1/+3", {1, 3}},
                                      {"007/010", {7, 10}}});
}

TEST_CASE("--shard refuses what is not two integers around a slash") {
  CheckRefused(
      ParseShard,
      {"", "x", "1", "1/", "/3", "/", "1/3x", "x/3", "1/2/3", "1.0/3", "1 /3", "1/3 ", "a/b"},
      " is not I/S (e.g. 1/3)");
}

TEST_CASE("--checkpoint-every reads N iterations or T seconds") {
  CheckParsed<CheckpointEvery>(ParseCheckpointEvery, {{"10", {10, 0}},
                                                      {"1", {1, 0}},
                                                      {"1e3", {1000, 0}},
                                                      {"0x10", {16, 0}},
                                                      {"1000000000000", {1000000000000, 0}},
                                                      {"30s", {0, 30}},
                                                      {"1.5s", {0, 1.5}},
                                                      {"0.001s", {0, 0.001}},
                                                      {"2e12s", {0, 2e12}}});
}

TEST_CASE("--checkpoint-every refuses anything else with one message") {
  CheckRefused(ParseCheckpointEvery,
               {"",     "s",   "0",   "0s",   "-1",  "-1s",  "1.5",    "1e13", "2e12", "30s5",
                "30ss", "abc", "inf", "infs", "nan", "nans", "1e400s", "10 ",  "10m",  "s30"},
               " is neither a positive whole number of iterations nor seconds like 30s");
}

TEST_CASE("Lists split at their separator, keeping empty items") {
  using Items = std::vector<std::string>;
  CHECK(SplitList("") == Items{});
  CHECK(SplitList("a") == Items{"a"});
  CHECK(SplitList("a,b") == Items{"a", "b"});
  CHECK(SplitList("a,") == Items{"a", ""});
  CHECK(SplitList(",a") == Items{"", "a"});
  CHECK(SplitList("a,,b") == Items{"a", "", "b"});
  CHECK(SplitList(",") == Items{"", ""});
  CHECK(SplitList("0=0:1;3=150:4", ';') == Items{"0=0:1", "3=150:4"});
  CHECK(SplitList("a,b;c", ';') == Items{"a,b", "c"});
}

TEST_CASE("--report is written whole, or not at all with an IOError") {
  namespace fs = std::filesystem;
  std::string folder = (fs::temp_directory_path() / "dmlps-cli-test.XXXXXX").string();
  REQUIRE(mkdtemp(folder.data()) != nullptr);
  server::RunReport report;
  report.target_reached = true;
  report.iterations = 1234;
  report.seconds = 5.5;
  std::ostringstream expected;
  server::WriteRunReport(report, expected);

  const std::string path = folder + "/report.tsv";
  REQUIRE(WriteRunReportFile(report, path).ok());
  std::ifstream in(path);
  std::stringstream written;
  written << in.rdbuf();
  CHECK(written.str() == expected.str());
  CHECK_FALSE(fs::exists(path + ".tmp"));

  const Status missing = WriteRunReportFile(report, folder + "/no/such/folder/report.tsv");
  CHECK(missing.code() == StatusCode::kIOError);
  CHECK(missing.message() == "cannot write " + folder + "/no/such/folder/report.tsv");
  std::error_code ec;
  fs::remove_all(folder, ec);
}

TEST_CASE("A schedule entry names a rank below the workers, then its schedule") {
  Result<std::pair<int64_t, std::string>> entry = bench::ParseRankEntry("3=0:1,150:4", 4);
  REQUIRE(entry.ok());
  CHECK(entry->first == 3);
  CHECK(entry->second == "0:1,150:4");
  entry = bench::ParseRankEntry("0=", 1);
  REQUIRE(entry.ok());
  CHECK(entry->first == 0);
  CHECK(entry->second == "");
  for (const char* text :
       {"4=0:1", "x", "=0:1", "-1=0:1", "a=0:1", "1a=0:1", "1234567=0:1", "+1=0:1", ""}) {
    CAPTURE(text);
    entry = bench::ParseRankEntry(text, 4);
    REQUIRE_FALSE(entry.ok());
    CHECK(entry.status().message() == Quoted(text) + " is not RANK=I:V,... with RANK in [0, 3]");
  }
}

TEST_CASE("An experiment's title says its job, its stragglers and its end") {
  bench::Experiment e;
  e.stragglers.assign(4, worker::StragglerSpec{});
  e.stragglers.back().slowdown = 4;
  CHECK(bench::DescribeExperiment(e) ==
        "4 workers, mlp:128, fashion-mnist, batch 256, lr 0.1, slowdown 1,1,1,4, target 0.85, "
        "1 run each");
  e.job.workers = 4096;
  e.stragglers.assign(4096, worker::StragglerSpec{});
  e.stragglers.back().slowdown = 2.5;
  e.job.target_accuracy = 0;
  e.job.max_iterations = 300;
  e.repeat = 3;
  CHECK(bench::DescribeExperiment(e) ==
        "4096 workers, mlp:128, fashion-mnist, batch 256, lr 0.1, slowdown 1 (x4095),2.5, no "
        "target (times are to the end of each run), at most 300 iterations, 3 runs each");
}

TEST_CASE("An entry of --codecs is PUSH or PUSH/PULL, PUSH alone pulling in --pull-codec") {
  const compress::Codec int8 = compress::ParseCodec("int8").value();
  Result<bench::Codecs> c = bench::ParseCodecs("fp16", int8);
  REQUIRE(c.ok());
  CHECK(bench::CodecsName(*c) == "fp16/int8");
  c = bench::ParseCodecs("topk:0.01/bf16", int8);
  REQUIRE(c.ok());
  CHECK(bench::CodecsName(*c) == "topk:0.01/bf16");
  CHECK(bench::CodecsName(bench::Codecs{}) == bench::kDenseCodecs);
  for (const char* bad : {"", "int9", "int8/", "/int8", "topk:0/none", "int8/fp16/bf16"}) {
    CAPTURE(bad);
    c = bench::ParseCodecs(bad, int8);
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().message().find("is not a codec") != std::string::npos);
  }
  bench::Experiment e;
  e.stragglers.assign(4, worker::StragglerSpec{});
  e.codecs = {bench::Codecs{}, {int8, {}}, bench::Codecs{}};
  const std::vector<std::string> problems = bench::ValidateExperiment(e);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0] == "--codecs: none/none is listed twice");
  e.codecs.clear();
  CHECK(bench::ValidateExperiment(e) == std::vector<std::string>{"--codecs: no codec given"});
}

TEST_CASE("A table compares codecs in a column of their own, only when one compresses") {
  std::vector<bench::RunResult> runs(4);
  const std::vector<std::string> names = {"none/none", "int8/none"};
  for (size_t i = 0; i < runs.size(); ++i) {
    runs[i].policy = i < 2 ? "bsp" : "ssp:3";
    runs[i].codecs = names[i % 2];
    runs[i].reached = true;
    runs[i].seconds = 10.0 / static_cast<double>(i + 1);
    runs[i].bytes_per_worker = i % 2 ? 1e6 : 4e6;
  }
  const std::vector<bench::PolicyRow> rows = bench::Tabulate(runs, {"bsp", "ssp:3"}, names);
  REQUIRE(rows.size() == 4);
  CHECK(rows[1].policy == "bsp");
  CHECK(rows[1].codecs == "int8/none");
  CHECK(rows[1].bytes_per_worker.median == 1e6);
  CHECK(rows[3].speedup.value() == doctest::Approx(4));  // against bsp none/none
  std::ostringstream table;
  bench::WriteRows(rows, runs, "", bench::Format::kTable, table);
  CHECK(table.str().starts_with("policy  codecs     reached"));
  CHECK(table.str().find("\nssp:3   int8/none      1/1") != std::string::npos);
  std::ostringstream tsv;
  bench::WriteRows(rows, runs, "", bench::Format::kTsv, tsv);
  CHECK(tsv.str().starts_with("policy\tcodecs\truns\t"));
  CHECK(tsv.str().find("\nbsp\tint8/none\t1\t1\t") != std::string::npos);
  std::ostringstream json;
  bench::WriteRows(rows, runs, "", bench::Format::kJson, json);
  CHECK(json.str().find("{\"policy\":\"ssp:3\",\"codecs\":\"int8/none\",\"runs\":1") !=
        std::string::npos);
  // Dense runs alone: the table main has always printed, no codecs column.
  const std::vector<bench::RunResult> dense = {runs[0], runs[2]};
  std::ostringstream plain;
  bench::WriteRows(bench::Tabulate(dense, {"bsp", "ssp:3"}), dense, "", bench::Format::kTable,
                   plain);
  CHECK(plain.str().starts_with("policy  reached"));
  CHECK(plain.str().find("none/none") == std::string::npos);
}

TEST_CASE("A run of dmlps-bench run has a folder and a line of outcome") {
  CHECK(bench::RunFolderName("ssp:3", 2) == "ssp-3-2");
  CHECK(bench::RunFolderName("lbbsp:a/b", 1) == "lbbsp-a-b-1");
  bench::RunResult r;
  r.seconds = 12.345;
  r.iterations = 400;
  r.accuracy = 0.85123;
  r.compute_ratio_mean = 0.9;
  r.compute_ratio_min = 0.5;
  r.reached = true;
  CHECK(bench::DescribeOutcome(r, true) ==
        "reached the target in 12.35 s, 400 iterations, accuracy 0.8512, compute ratio "
        "0.900/0.500");
  r.reached = false;
  CHECK(bench::DescribeOutcome(r, true).rfind("missed the target after 12.35 s", 0) == 0);
  CHECK(bench::DescribeOutcome(r, false).rfind("ran 12.35 s", 0) == 0);
  r.failure = "the server exited 70";
  CHECK(bench::DescribeOutcome(r, true) == "FAILED: the server exited 70");
}

TEST_CASE("dmlps-bench run --shuffle: each repeat an order of its own, the same on every run") {
  const std::vector<std::string> policies = {"bsp", "backup:1", "ssp:3", "lbbsp", "auto"};
  CHECK(bench::RepeatOrder(policies, 1, 2, false) == policies);
  std::set<std::string> firsts, before_auto;
  for (int64_t repeat = 1; repeat <= 20; ++repeat) {
    const std::vector<std::string> order = bench::RepeatOrder(policies, 1, repeat, true);
    CHECK(order == bench::RepeatOrder(policies, 1, repeat, true));
    CHECK(std::is_permutation(order.begin(), order.end(), policies.begin(), policies.end()));
    firsts.insert(order.front());
    const auto at = std::find(order.begin(), order.end(), "auto");
    before_auto.insert(at == order.begin() ? "" : *(at - 1));
  }
  // In one fixed order auto always ran after lbbsp: over 20 repeats every
  // policy comes first and auto follows many.
  CHECK(firsts.size() == policies.size());
  CHECK(before_auto.size() >= 4);
  CHECK(bench::RepeatOrder(policies, 2, 1, true) != bench::RepeatOrder(policies, 1, 1, true));
}

struct Entry {
  const char* name;
  const char* help;
};
const Entry kTable[] = {{"summary", "one"}, {"merge", "two"}, {"plot", "three"}};

TEST_CASE("A subcommand table makes the help and names its entries") {
  CHECK(DescribeSubcommands("Intro.\n\n", kTable, 10) ==
        "Intro.\n\nSubcommands:\n  summary   one\n  merge     two\n  plot      three\n");
  CHECK(SubcommandNames(kTable) == "summary, merge, plot");
  CHECK(SubcommandNames(kTable, " or ") == "summary, merge or plot");
  const Entry one[] = {{"run", ""}};
  CHECK(SubcommandNames(one, " or ") == "run");
}

TEST_CASE("The subcommand is found by name, or its absence said") {
  cxxopts::Options options("prog");
  options.add_options()("subcommand", "", cxxopts::value<std::string>());
  options.parse_positional({"subcommand"});
  auto find = [&](std::vector<const char*> argv, std::vector<std::string>* problems) {
    argv.insert(argv.begin(), "prog");
    const cxxopts::ParseResult parsed =
        options.parse(static_cast<int>(argv.size()), const_cast<char**>(argv.data()));
    FlagReader flags(parsed);
    const Entry* entry = FindSubcommand(flags, kTable, "NAMES");
    *problems = flags.problems();
    return entry;
  };
  std::vector<std::string> problems;
  CHECK(find({"merge"}, &problems) == &kTable[1]);
  CHECK(problems.empty());
  CHECK(find({}, &problems) == nullptr);
  CHECK(problems == std::vector<std::string>{"no subcommand (NAMES)"});
  CHECK(find({"nope"}, &problems) == nullptr);
  CHECK(problems == std::vector<std::string>{"unknown subcommand 'nope' (NAMES)"});
}

}  // namespace
}  // namespace dmlps::cli

TEST_CASE("An unknown flag is named with the known one it most resembles") {
  const std::vector<std::string> known = {"policies", "workers", "slowdown", "seed"};
  CHECK(dmlps::cli::UnknownOption("--polices", known) ==
        "unknown option '--polices'; did you mean --policies?");
  CHECK(dmlps::cli::UnknownOption("--worker", known) ==
        "unknown option '--worker'; did you mean --workers?");
  CHECK(dmlps::cli::UnknownOption("--sed", known) ==
        "unknown option '--sed'; did you mean --seed?");
  // Nothing close: no guess.
  CHECK(dmlps::cli::UnknownOption("--frobnicate", known) == "unknown option '--frobnicate'");
  CHECK(dmlps::cli::UnknownOption("--xy", known) == "unknown option '--xy'");
}

TEST_CASE("A subcommand's help shows its own flags, the borrowed ones and Common only") {
  cxxopts::Options options("prog", "all of prog\n");
  dmlps::cli::AddFlags(options, "A", {{"alpha", "Alpha", "N", "1"}});
  dmlps::cli::AddFlags(options, "B", {{"beta", "Beta", "N"}, {"gamma", "Gamma", "G"}});
  dmlps::cli::AddCommonOptions(options);
  const std::string help =
      dmlps::cli::SubcommandHelp(options, "one", "does one thing", "[FILE...]", {"A"}, {{"gamma"}});
  CHECK(help.find("prog one: does one thing") == 0);
  CHECK(help.find("prog one [OPTION...] [FILE...]") != std::string::npos);
  CHECK(help.find("--alpha N") != std::string::npos);
  CHECK(help.find("(default: 1)") != std::string::npos);
  CHECK(help.find("Shared options") != std::string::npos);
  CHECK(help.find("--gamma G") != std::string::npos);
  CHECK(help.find("--beta") == std::string::npos);
  CHECK(help.find("all of prog") == std::string::npos);
  CHECK(help.find("--help") != std::string::npos);
}

TEST_CASE("A borrowed flag's help shows the borrowing subcommand's default, not its group's") {
  cxxopts::Options options("prog", "all of prog\n");
  dmlps::cli::AddFlags(options, "A", {{"alpha", "Alpha", "N", "1"}});
  dmlps::cli::AddFlags(options, "B", {{"beta", "Beta", "N", "7"}, {"gamma", "Gamma", "G", "8"}});
  const std::string help = dmlps::cli::SubcommandHelp(options, "one", "does one thing", "", {"A"},
                                                      {{"beta", "42"}, {"gamma"}});
  CHECK(help.find("(default: 42)") != std::string::npos);
  // No default of its own: shown without one, never with the group's.
  CHECK(help.find("(default: 7)") == std::string::npos);
  CHECK(help.find("(default: 8)") == std::string::npos);
  CHECK(help.find("--gamma G") != std::string::npos);
}
