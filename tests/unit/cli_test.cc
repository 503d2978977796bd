// The parsing of flag values made of parts, and the flags the binaries
// share: every good spelling, and every bad one with its one-line message.
#include <doctest/doctest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "dmlps/cli/programs.h"
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

TEST_CASE("--shard reads I/S") {
  struct Case {
    const char* text;
    int64_t index;
    int64_t count;
  };
  // strtoll's spelling: a sign and leading blanks pass; the range is
  // server::ValidateConfig's to check.
  for (const Case& c : {Case{"0/1", 0, 1}, Case{"1/3", 1, 3}, Case{"2/2", 2, 2},
                        Case{"-1/3", -1, 3}, Case{"1/0", 1, 0}, Case{" 1/3", 1, 3},
                        Case{"1/+3", 1, 3}, Case{"007/010", 7, 10}}) {
    CAPTURE(c.text);
    Result<ShardFlag> shard = ParseShard(c.text);
    REQUIRE_MESSAGE(shard.ok(), shard.status().message());
    CHECK(shard->index == c.index);
    CHECK(shard->count == c.count);
  }
}

TEST_CASE("--shard refuses what is not two integers around a slash") {
  for (const char* text : {"", "x", "1", "1/", "/3", "/", "1/3x", "x/3", "1/2/3", "1.0/3", "1 /3",
                           "1/3 ", "a/b"}) {
    CAPTURE(text);
    Result<ShardFlag> shard = ParseShard(text);
    REQUIRE_FALSE(shard.ok());
    CHECK(shard.status().code() == StatusCode::kInvalidArgument);
    CHECK(shard.status().message() == Quoted(text) + " is not I/S (e.g. 1/3)");
  }
}

TEST_CASE("--checkpoint-every reads N iterations or T seconds") {
  struct Case {
    const char* text;
    int64_t iterations;
    double seconds;
  };
  for (const Case& c : {Case{"10", 10, 0}, Case{"1", 1, 0}, Case{"1e3", 1000, 0},
                        Case{"0x10", 16, 0}, Case{"1000000000000", 1000000000000, 0},
                        Case{"30s", 0, 30}, Case{"1.5s", 0, 1.5}, Case{"0.001s", 0, 0.001},
                        Case{"2e12s", 0, 2e12}}) {
    CAPTURE(c.text);
    Result<CheckpointEvery> every = ParseCheckpointEvery(c.text);
    REQUIRE_MESSAGE(every.ok(), every.status().message());
    CHECK(every->iterations == c.iterations);
    CHECK(every->seconds == c.seconds);
  }
}

TEST_CASE("--checkpoint-every refuses anything else with one message") {
  for (const char* text : {"", "s", "0", "0s", "-1", "-1s", "1.5", "1e13", "2e12", "30s5", "30ss",
                           "abc", "inf", "infs", "nan", "nans", "1e400s", "10 ", "10m", "s30"}) {
    CAPTURE(text);
    Result<CheckpointEvery> every = ParseCheckpointEvery(text);
    REQUIRE_FALSE(every.ok());
    CHECK(every.status().code() == StatusCode::kInvalidArgument);
    CHECK(every.status().message() ==
          Quoted(text) + " is neither a positive whole number of iterations nor seconds like 30s");
  }
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

}  // namespace
}  // namespace dmlps::cli
