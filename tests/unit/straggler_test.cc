// Checks each kind of emulated slowness against its definition in the
// "Emulating heterogeneity" section of docs/algorithms-stragglers.md.
#include "dmlps/worker/straggler.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

namespace dmlps::worker {
namespace {

using std::chrono::microseconds;

bool Contains(const std::vector<std::string>& problems, const std::string& text) {
  return std::any_of(problems.begin(), problems.end(),
                     [&](const std::string& p) { return p.find(text) != std::string::npos; });
}

// Fails unless ValidateStragglerSpec finds one problem per entry of `wanted`,
// each named by a problem that contains it.
void CheckProblems(const StragglerSpec& spec, std::initializer_list<std::string> wanted) {
  const std::vector<std::string> problems = ValidateStragglerSpec(spec);
  CHECK(problems.size() == wanted.size());
  for (const std::string& text : wanted) CHECK_MESSAGE(Contains(problems, text), text);
}

TEST_CASE("slowdown K sleeps exactly (K-1) times the compute time") {
  StragglerSpec spec;
  spec.slowdown = 4;
  StragglerProfile profile(spec, 0, 1);
  CHECK(profile.ExtraDelay(0, microseconds(12345)) == microseconds(3 * 12345));
  CHECK(profile.ExtraDelay(1, microseconds(0)) == microseconds(0));
  CHECK(profile.ExtraDelay(2, microseconds(1)) == microseconds(3));

  spec.slowdown = 1.5;
  StragglerProfile half(spec, 0, 1);
  CHECK(half.ExtraDelay(0, microseconds(1000)) == microseconds(500));

  StragglerProfile none(StragglerSpec{}, 0, 1);
  for (int64_t i = 0; i < 100; ++i)
    CHECK(none.ExtraDelay(i, microseconds(5000)) == microseconds(0));
}

TEST_CASE("a schedule switches the factor at the given iteration") {
  StragglerSpec spec;
  spec.schedule = {{0, 1}, {150, 4}};
  StragglerProfile profile(spec, 0, 1);
  const microseconds t(2000);
  CHECK(profile.ExtraDelay(0, t) == microseconds(0));
  CHECK(profile.ExtraDelay(149, t) == microseconds(0));
  CHECK(profile.ExtraDelay(150, t) == 3 * t);
  CHECK(profile.ExtraDelay(10000, t) == 3 * t);
  CHECK(profile.SlowdownAt(149) == 1);
  CHECK(profile.SlowdownAt(150) == 4);
}

TEST_CASE("before the schedule's first entry, --slowdown applies") {
  StragglerSpec spec;
  spec.slowdown = 2;
  spec.schedule = {{10, 1}, {20, 3}};
  StragglerProfile profile(spec, 0, 1);
  CHECK(profile.SlowdownAt(0) == 2);
  CHECK(profile.SlowdownAt(9) == 2);
  CHECK(profile.SlowdownAt(10) == 1);
  CHECK(profile.SlowdownAt(19) == 1);
  CHECK(profile.SlowdownAt(20) == 3);
  CHECK(profile.ExtraDelay(5, microseconds(100)) == microseconds(100));
  CHECK(profile.ExtraDelay(15, microseconds(100)) == microseconds(0));
  CHECK(profile.ExtraDelay(25, microseconds(100)) == microseconds(200));
}

TEST_CASE("a delay without a probability is paid every step") {
  StragglerSpec spec;
  spec.delay = microseconds(7000);
  StragglerProfile profile(spec, 1, 2);
  for (int64_t i = 0; i < 1000; ++i) CHECK(profile.ExtraDelay(i, microseconds(300)) == spec.delay);

  spec.slowdown = 2;
  StragglerProfile both(spec, 1, 2);
  CHECK(both.ExtraDelay(0, microseconds(300)) == microseconds(7300));
}

TEST_CASE("a probabilistic delay comes at the right rate and repeats for a seed") {
  StragglerSpec spec;
  spec.delay_prob = 0.3;
  spec.delay = microseconds(1000);
  spec.seed = 12345;
  constexpr int64_t kTrials = 20000;
  StragglerProfile a(spec, 2, 4);
  StragglerProfile b(spec, 2, 4);
  std::vector<bool> pattern;
  int64_t delayed = 0;
  for (int64_t i = 0; i < kTrials; ++i) {
    const microseconds extra = a.ExtraDelay(i, microseconds(10));
    REQUIRE((extra == microseconds(0) || extra == spec.delay));
    CHECK(b.ExtraDelay(i, microseconds(10)) == extra);
    pattern.push_back(extra > microseconds(0));
    delayed += extra > microseconds(0) ? 1 : 0;
  }
  const double mean = kTrials * spec.delay_prob;
  const double sigma = std::sqrt(kTrials * spec.delay_prob * (1 - spec.delay_prob));
  CHECK(std::abs(static_cast<double>(delayed) - mean) < 5 * sigma);

  // Another seed, or another rank with the same seed, draws another stream.
  StragglerSpec other_seed = spec;
  other_seed.seed = 54321;
  StragglerProfile c(other_seed, 2, 4);
  StragglerProfile d(spec, 3, 4);
  std::vector<bool> pattern_c, pattern_d;
  for (int64_t i = 0; i < kTrials; ++i) {
    pattern_c.push_back(c.ExtraDelay(i, microseconds(10)) > microseconds(0));
    pattern_d.push_back(d.ExtraDelay(i, microseconds(10)) > microseconds(0));
  }
  CHECK(pattern_c != pattern);
  CHECK(pattern_d != pattern);
}

TEST_CASE("a seed gives the same delays with any standard library") {
  // mt19937_64 is fully specified and the uniform doubles are our own bits,
  // so this pattern (seed 42, rank 0, p = 0.5) must never change.
  StragglerSpec spec;
  spec.delay_prob = 0.5;
  spec.delay = microseconds(1);
  spec.seed = 42;
  StragglerProfile profile(spec, 0, 1);
  std::string pattern;
  for (int64_t i = 0; i < 32; ++i)
    pattern += std::to_string(profile.ExtraDelay(i, microseconds(0)).count());
  CHECK(pattern == "00110011101010111110110000101100");
}

TEST_CASE("probability 1 delays every step") {
  StragglerSpec spec;
  spec.delay_prob = 1;
  spec.delay = microseconds(50);
  StragglerProfile always(spec, 0, 1);
  for (int64_t i = 0; i < 1000; ++i) CHECK(always.ExtraDelay(i, microseconds(0)) == spec.delay);
}

TEST_CASE("round-robin: in iteration t only rank t mod N sleeps") {
  constexpr int64_t kWorkers = 5;
  StragglerSpec spec;
  spec.round_robin = microseconds(4000);
  for (int64_t rank = 0; rank < kWorkers; ++rank) {
    StragglerProfile profile(spec, rank, kWorkers);
    int64_t slept = 0;
    for (int64_t t = 0; t < 4 * kWorkers; ++t) {
      const microseconds extra = profile.ExtraDelay(t, microseconds(100));
      if (t % kWorkers == rank) {
        CHECK(extra == spec.round_robin);
        ++slept;
      } else {
        CHECK(extra == microseconds(0));
      }
    }
    CHECK(slept == 4);
  }
  // A rank outside the cluster never takes a turn.
  StragglerProfile outsider(spec, kWorkers, kWorkers);
  for (int64_t t = 0; t < 4 * kWorkers; ++t)
    CHECK(outsider.ExtraDelay(t, microseconds(1)).count() == 0);
}

TEST_CASE("transfer time under a bandwidth cap") {
  StragglerSpec spec;
  spec.bandwidth_mbps = 8;
  StragglerProfile profile(spec, 0, 1);
  CHECK(profile.TransferTime(0, 1'000'000) == microseconds(1'000'000));
  CHECK(profile.TransferTime(0, 1) == microseconds(1));
  CHECK(profile.TransferTime(0, 0) == microseconds(0));

  spec.bandwidth_mbps = 1000;
  StragglerProfile gigabit(spec, 0, 1);
  CHECK(gigabit.TransferTime(0, 125'000'000) == microseconds(1'000'000));

  StragglerProfile uncapped(StragglerSpec{}, 0, 1);
  CHECK(uncapped.TransferTime(0, 1'000'000'000) == microseconds(0));
}

TEST_CASE("a bandwidth schedule caps sends from its iterations on") {
  StragglerSpec spec;
  spec.bandwidth_mbps = 0;  // no cap before the first entry
  Result<std::vector<std::pair<int64_t, double>>> schedule = ParseBandwidthSchedule("150:8,300:0");
  REQUIRE(schedule.ok());
  spec.bandwidth_schedule = *schedule;
  CHECK(ValidateStragglerSpec(spec).empty());
  StragglerProfile profile(spec, 0, 1);
  CHECK(profile.TransferTime(149, 1'000'000) == microseconds(0));
  CHECK(profile.TransferTime(150, 1'000'000) == microseconds(1'000'000));
  CHECK(profile.TransferTime(299, 1'000'000) == microseconds(1'000'000));
  CHECK(profile.TransferTime(300, 1'000'000) == microseconds(0));
  CHECK(profile.BandwidthAt(200) == 8);

  // Caps may be 0 (none) but not negative; factors of a slowdown schedule
  // still must be at least 1.
  CHECK(ParseBandwidthSchedule("0:0").ok());
  Result<std::vector<std::pair<int64_t, double>>> negative = ParseBandwidthSchedule("10:-1");
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.status().message() == "entry 1 \"10:-1\": cap -1 is below 0");
  CHECK_FALSE(ParseSlowdownSchedule("10:0.5").ok());
  Result<std::vector<std::pair<int64_t, double>>> bad = ParseBandwidthSchedule("x");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "entry 1 \"x\": expected ITERATION:MBPS");
  spec.bandwidth_schedule = {{5, 1}, {5, 2}};
  REQUIRE(ValidateStragglerSpec(spec).size() == 1);
  CHECK(ValidateStragglerSpec(spec)[0].rfind("--bandwidth-schedule: entry 2", 0) == 0);
}

TEST_CASE("ParseSlowdownSchedule reads a good schedule") {
  Result<std::vector<std::pair<int64_t, double>>> s = ParseSlowdownSchedule("0:1,150:4");
  REQUIRE(s.ok());
  CHECK(*s == std::vector<std::pair<int64_t, double>>{{0, 1}, {150, 4}});

  s = ParseSlowdownSchedule("20:2.5");
  REQUIRE(s.ok());
  CHECK(*s == std::vector<std::pair<int64_t, double>>{{20, 2.5}});
}

TEST_CASE("ParseSlowdownSchedule rejects bad text and names the entry") {
  struct Case {
    const char* text;
    const char* expected;  // a part of the message
  };
  const Case cases[] = {
      {"0:1,150", "entry 2 \"150\""},
      {"150:4,100:2", "entry 2 \"100:2\""},
      {"0:0.5", "entry 1 \"0:0.5\""},
      {"a:1", "entry 1 \"a:1\""},
      {"0:1,", "entry 2 is empty"},
      {"", "empty"},
      {"0:nan", "entry 1 \"0:nan\""},
      {"0:inf", "not a finite number"},
      {"-1:2", "negative"},
      {"0:1,,5:2", "entry 2 is empty"},
      {"0: 1", "is not a number"},
      {" 0:1", "not a whole number"},
      {"0:1x", "is not a number"},
      {"1.5:2", "not a whole number"},
      {"99999999999999999999:2", "out of range"},
      {"0:1:2", "entry 1"},
      {"5:2,5:3", "does not come after"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    Result<std::vector<std::pair<int64_t, double>>> s = ParseSlowdownSchedule(c.text);
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().code() == StatusCode::kInvalidArgument);
    CHECK(s.status().message().find(c.expected) != std::string::npos);
  }
  CHECK(ParseSlowdownSchedule("0:0.5").status().message().find("below 1") != std::string::npos);
  CHECK(ParseSlowdownSchedule("150:4,100:2").status().message().find("150") != std::string::npos);
}

TEST_CASE("ValidateStragglerSpec accepts the defaults and each sound setting") {
  CHECK(ValidateStragglerSpec(StragglerSpec{}).empty());
  StragglerSpec spec;
  spec.slowdown = 3;
  spec.schedule = {{0, 1}, {150, 4}};
  spec.delay_prob = 0.2;
  spec.delay = microseconds(5000);
  spec.round_robin = microseconds(1000);
  spec.bandwidth_mbps = 100;
  CHECK(ValidateStragglerSpec(spec).empty());
}

TEST_CASE("ValidateStragglerSpec reports every problem, naming its flag") {
  StragglerSpec spec;
  spec.slowdown = 0.5;
  spec.schedule = {{150, 4}, {100, 0.5}};
  spec.delay_prob = 1.5;
  spec.delay = microseconds(-1);
  spec.round_robin = microseconds(-3);
  spec.bandwidth_mbps = -8;
  CheckProblems(spec, {"--slowdown must be a number of at least 1", "--slowdown-schedule: entry 2",
                       "--delay-prob must be in [0, 1]", "--delay-ms must not be negative",
                       "--round-robin-ms must not be negative", "--bandwidth-mbps"});

  StragglerSpec needs_delay;
  needs_delay.delay_prob = 0.5;
  CHECK(ValidateStragglerSpec(needs_delay) ==
        std::vector<std::string>{"--delay-prob needs --delay-ms"});

  StragglerSpec not_finite;
  not_finite.slowdown = std::nan("");
  not_finite.delay_prob = std::nan("");
  not_finite.bandwidth_mbps = INFINITY;
  not_finite.schedule = {{0, INFINITY}};
  CheckProblems(not_finite,
                {"--slowdown must", "--delay-prob must", "--bandwidth-mbps must",
                 "--slowdown-schedule: entry 1 \"0:inf\": factor inf is not a finite number"});
}

}  // namespace
}  // namespace dmlps::worker
