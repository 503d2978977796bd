// The efficiency tables' file: what it holds, what is refused, and where
// the programs find it (docs/advise-efficiency.md).
#include <doctest/doctest.h>
#include <stdlib.h>

#include <string>

#include "dmlps/advise/efficiency.h"
#include "test_util.h"

namespace dmlps::advise {
namespace {

constexpr std::string_view kTwoTables = R"(# two jobs
table mlp:128 256 4
auto-start backup:2
source real runs
command auto-profiles.sh --efficiency
row	bsp	1.00	1.00	1.00	197 iterations
row   ssp:3   14.3  2.46  5.03  spaces also separate fields

table softmax 16 16
straggler-ratio 3
row bsp 1 1 0
)";

TEST_CASE("efficiency file: tables, their rows and provenance") {
  Result<std::vector<EfficiencyTable>> tables = ParseEfficiencies(kTwoTables, "t.tsv");
  REQUIRE(tables.ok());
  REQUIRE(tables->size() == 2);
  const EfficiencyTable& first = (*tables)[0];
  CHECK(first.model == "mlp:128");
  CHECK(first.batch == 256);
  CHECK(first.workers == 4);
  CHECK(first.auto_start == "backup:2");
  CHECK(first.source == "real runs");
  CHECK(first.command == "auto-profiles.sh --efficiency");
  CHECK(first.straggler_ratio == 4);
  REQUIRE(first.rows.size() == 2);
  CHECK(first.rows[1].policy == "ssp:3");
  CHECK(first.rows[1].even == doctest::Approx(14.3));
  CHECK(first.rows[1].straggler == doctest::Approx(2.46));
  CHECK(first.rows[1].delays == doctest::Approx(5.03));
  const EfficiencyTable& second = (*tables)[1];
  CHECK(second.workers == 16);
  CHECK(second.straggler_ratio == 3);
  CHECK(second.rows[0].delays == 0);
  // A model without a table takes the first; a model of its kind the nearest.
  CHECK(EfficiencyFor(*tables, "external").model == "mlp:128");
  CHECK(EfficiencyFor(*tables, "softmax", 64, 4).workers == 16);
}

TEST_CASE("efficiency file: what it cannot read is refused with its line") {
  auto problem = [](std::string_view text) {
    Result<std::vector<EfficiencyTable>> tables = ParseEfficiencies(text, "t.tsv");
    CHECK(tables.status().code() == StatusCode::kDataLoss);
    return tables.status().message();
  };
  CHECK(problem("row bsp 1 1 1\n") == "t.tsv:1: 'row' before the first 'table' line");
  CHECK(problem("table mlp 256\n") == "t.tsv:1: a table starts 'table MODEL BATCH WORKERS'");
  CHECK(problem("table mlp 256 4\n# ok\nrow bsp 1 x 1\n").starts_with("t.tsv:3: a row is"));
  CHECK(problem("table mlp 256 4\nrow bsp -1 1 1\n").starts_with("t.tsv:2: a row is"));
  CHECK(problem("table mlp 256 4\nstraggler-ratio 1\nrow bsp 1 1 1\n") ==
        "t.tsv:2: straggler-ratio needs a number above 1");
  CHECK(problem("table mlp 256 4\nrows bsp 1 1 1\n") == "t.tsv:2: unknown line 'rows'");
  CHECK(problem("# nothing\n") == "t.tsv: no efficiency table");
  CHECK(problem("table mlp 256 4\n") == "t.tsv: the table of mlp 256 4 has no row");
}

// Sets DMLPS_EFFICIENCY for the scope (unset: nullptr), as it was after.
class EfficiencyVariable {
 public:
  explicit EfficiencyVariable(const char* value) {
    if (const char* old = ::getenv("DMLPS_EFFICIENCY")) old_ = old;
    value != nullptr ? ::setenv("DMLPS_EFFICIENCY", value, 1) : ::unsetenv("DMLPS_EFFICIENCY");
  }
  ~EfficiencyVariable() {
    old_.empty() ? ::unsetenv("DMLPS_EFFICIENCY") : ::setenv("DMLPS_EFFICIENCY", old_.c_str(), 1);
  }

 private:
  std::string old_;
};

TEST_CASE("efficiency file: the installed one, another one named, or a clear error") {
  {
    const EfficiencyVariable unset(nullptr);
    // Beside the programs, else the source tree's: this build's.
    Result<std::vector<EfficiencyTable>> installed = LoadEfficiencies();
    REQUIRE_MESSAGE(installed.ok(), installed.status().message());
    CHECK(installed->front().model == "mlp:128");
    CHECK(installed->front().auto_start == "backup:2");
    for (const EfficiencyTable& t : *installed) {
      REQUIRE(t.Find("bsp").has_value());
      CHECK(t.Find("bsp")->even == 1);
    }
  }
  testing::TempDir dir;
  const std::string file = dir.File("mine.tsv");
  {
    std::ofstream(file) << kTwoTables;
    const EfficiencyVariable named(file.c_str());
    CHECK(EfficiencyFiles() == std::vector<std::string>{file});
    Result<std::vector<EfficiencyTable>> mine = LoadEfficiencies();
    REQUIRE(mine.ok());
    CHECK(mine->size() == 2);
  }
  const std::string missing = dir.File("missing.tsv");
  const EfficiencyVariable named(missing.c_str());
  const Status status = LoadEfficiencies().status();
  CHECK(status.code() == StatusCode::kNotFound);
  CHECK(status.message().find(missing) != std::string::npos);
  CHECK(status.message().find('\n') == std::string::npos);
}

}  // namespace
}  // namespace dmlps::advise
