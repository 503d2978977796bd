// Traces: the record format (writer, reader, damage) and dmlps-trace's tools
// (merge, summary, chrome, tsv, plot) on a small hand-built run.
#include "dmlps/trace/trace.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dmlps/trace/tools.h"

namespace dmlps::trace {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000'000;  // µs since the epoch
constexpr int64_t kMs = 1000;

Record Span(std::string node, std::string lane, std::string name, int64_t t, int64_t dur,
            Args args = {}) {
  return {t, std::move(node), std::move(lane), "span", std::move(name), dur, std::move(args)};
}
Record Instant(std::string node, std::string lane, std::string name, int64_t t, Args args = {}) {
  return {t, std::move(node), std::move(lane), "instant", std::move(name), 0, std::move(args)};
}
Record Counter(std::string node, std::string name, int64_t t, double value, Args args = {}) {
  args.insert(args.begin(), {"value", value});
  return {t, std::move(node), "counter", "counter", std::move(name), 0, std::move(args)};
}

// The run behind tests/data/small.trace, laid out so that every figure of the
// summary can be worked out by hand. Both workers are active for exactly
// 1.6 s and take 32 samples a step.
//   worker-0: 16 steps, one every 100 ms: step 50 ms, push 10 ms, wait 40 ms
//             -> compute 0.8 s (50%), comm 0.16 s (10%), wait 0.64 s (40%).
//   worker-1: 4 steps, one every 400 ms: step 50 ms, straggle 300 ms, push
//             10 ms, wait 40 ms -> compute 0.2 s (12.5%), straggle 1.2 s
//             (75%), comm 0.04 s (2.5%), wait 0.16 s (10%).
// Median step intervals 100 and 400 ms; their median 250 ms; 400 > 1.5 x
// 250, so worker-1 is a deterministic straggler. The server stamps pushes
// of worker-0 with staleness 0 and of worker-1 with staleness 3, applies
// each 1 ms after it arrives, evaluates at 0.8 s (accuracy 0.4) and 1.6 s
// (0.55) and reaches the target 0.5 at 1.62 s.
std::vector<Record> SmallTrace() {
  std::vector<Record> w0, w1, server;
  server.push_back(
      Instant("server-0", "run", "start", kT0,
              {{"policy", std::string("bsp")}, {"workers", int64_t{2}}, {"target", 0.5}}));
  int64_t version = 0;
  auto arrive = [&](int64_t rank, int64_t clock, int64_t t, int64_t staleness) {
    server.push_back(Instant(
        "server-0", "comm", "push", t,
        {{"worker", rank}, {"clock", clock}, {"samples", int64_t{32}}, {"staleness", staleness}}));
    server.push_back(
        Span("server-0", "apply", "apply", t + 1 * kMs, 1 * kMs, {{"version", ++version}}));
  };
  for (int64_t i = 0; i < 16; ++i) {
    const int64_t t = kT0 + i * 100 * kMs;
    w0.push_back(Counter("worker-0", "batch", t, 32));
    w0.push_back(Span("worker-0", "compute", "step", t, 50 * kMs,
                      {{"clock", i}, {"samples", int64_t{32}}, {"loss", 1.0 / (i + 1)}}));
    w0.push_back(Span("worker-0", "comm", "push", t + 50 * kMs, 10 * kMs,
                      {{"clock", i}, {"bytes", int64_t{31400}}}));
    w0.push_back(Span("worker-0", "wait", "pull", t + 60 * kMs, 40 * kMs));
    arrive(0, i, t + 60 * kMs, 0);
  }
  for (int64_t i = 0; i < 4; ++i) {
    const int64_t t = kT0 + i * 400 * kMs;
    w1.push_back(Counter("worker-1", "batch", t, 32));
    w1.push_back(Span("worker-1", "compute", "step", t, 50 * kMs,
                      {{"clock", i}, {"samples", int64_t{32}}, {"loss", 2.0 / (i + 1)}}));
    w1.push_back(Span("worker-1", "compute", "straggle", t + 50 * kMs, 300 * kMs, {{"clock", i}}));
    w1.push_back(Span("worker-1", "comm", "push", t + 350 * kMs, 10 * kMs,
                      {{"clock", i}, {"bytes", int64_t{31400}}}));
    w1.push_back(Span("worker-1", "wait", "reply", t + 360 * kMs, 40 * kMs));
    arrive(1, i, t + 363 * kMs, 3);
  }
  for (const auto& [at_ms, accuracy] :
       std::vector<std::pair<int64_t, double>>{{800, 0.4}, {1600, 0.55}}) {
    const int64_t iteration = at_ms / 80;
    server.push_back(Span("server-0", "eval", "eval", kT0 + at_ms * kMs + 2 * kMs, 15 * kMs,
                          {{"iteration", iteration},
                           {"accuracy", accuracy},
                           {"loss", 1 - accuracy},
                           {"snapshot_us", kT0 + at_ms * kMs}}));
    server.push_back(
        Counter("server-0", "accuracy", kT0 + at_ms * kMs, accuracy, {{"iteration", iteration}}));
    server.push_back(
        Counter("server-0", "loss", kT0 + at_ms * kMs, 1 - accuracy, {{"iteration", iteration}}));
  }
  server.push_back(Instant("server-0", "run", "target", kT0 + 1620 * kMs,
                           {{"accuracy", 0.55}, {"seconds", 1.62}, {"iteration", int64_t{20}}}));
  server.push_back(Instant("server-0", "run", "end", kT0 + 1630 * kMs,
                           {{"seconds", 1.63}, {"iterations", int64_t{20}}}));
  // As three files would concatenate: each node's records in its own order.
  std::vector<Record> all = server;
  all.insert(all.end(), w1.begin(), w1.end());
  all.insert(all.end(), w0.begin(), w0.end());
  return all;
}

std::string Merged(const std::vector<Record>& records) {
  std::ostringstream out;
  REQUIRE(WriteMerged(records, out).ok());
  return out.str();
}

std::filesystem::path FixturePath() {
  return std::filesystem::path(DMLPS_TEST_DATA_DIR) / "small.trace";
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A minimal JSON reader: checks the syntax and counts, per "ph" value, the
// objects that carry one. No dependency beyond the standard library.
class JsonCheck {
 public:
  explicit JsonCheck(std::string_view text) : s_(text) {}
  bool Valid() {
    SkipSpace();
    if (!Value()) return false;
    SkipSpace();
    return i_ == s_.size();
  }
  std::map<std::string, int> phases;

 private:
  void SkipSpace() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r'))
      ++i_;
  }
  bool String(std::string* out) {
    if (i_ >= s_.size() || s_[i_] != '"') return false;
    ++i_;
    while (i_ < s_.size() && s_[i_] != '"') {
      if (static_cast<unsigned char>(s_[i_]) < 0x20) return false;
      if (s_[i_] == '\\') {
        ++i_;
        if (i_ >= s_.size()) return false;
        if (s_[i_] == 'u') {
          i_ += 4;
          if (i_ >= s_.size()) return false;
        }
      }
      if (out != nullptr) *out += s_[i_];
      ++i_;
    }
    if (i_ >= s_.size()) return false;
    ++i_;
    return true;
  }
  bool Value() {
    SkipSpace();
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '{') {
      ++i_;
      SkipSpace();
      if (i_ < s_.size() && s_[i_] == '}') return ++i_, true;
      while (true) {
        SkipSpace();
        std::string key;
        if (!String(&key)) return false;
        SkipSpace();
        if (i_ >= s_.size() || s_[i_++] != ':') return false;
        SkipSpace();
        if (key == "ph" && i_ < s_.size() && s_[i_] == '"') {
          std::string phase;
          if (!String(&phase)) return false;
          ++phases[phase];
        } else if (!Value()) {
          return false;
        }
        SkipSpace();
        if (i_ >= s_.size()) return false;
        if (s_[i_] == '}') return ++i_, true;
        if (s_[i_++] != ',') return false;
      }
    }
    if (c == '[') {
      ++i_;
      SkipSpace();
      if (i_ < s_.size() && s_[i_] == ']') return ++i_, true;
      while (true) {
        if (!Value()) return false;
        SkipSpace();
        if (i_ >= s_.size()) return false;
        if (s_[i_] == ']') return ++i_, true;
        if (s_[i_++] != ',') return false;
      }
    }
    if (c == '"') return String(nullptr);
    for (std::string_view word : {"true", "false", "null"}) {
      if (s_.substr(i_, word.size()) == word) return i_ += word.size(), true;
    }
    const size_t start = i_;
    while (i_ < s_.size() &&
           std::string_view("+-0123456789.eE").find(s_[i_]) != std::string_view::npos)
      ++i_;
    return i_ > start;
  }

  std::string_view s_;
  size_t i_ = 0;
};

TEST_CASE("trace: a written trace reads back record for record") {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("dmlps-trace-test-" + std::to_string(getpid()));
  {
    auto writer = TraceWriter::Open(path.string(), "worker-3");
    REQUIRE(writer.ok());
    (*writer)->Span("compute", "step", 100, 50, {{"clock", int64_t{7}}, {"loss", 0.25}});
    (*writer)->Instant("run", "start", 90, {{"policy", std::string("ssp")}});
    (*writer)->Counter("batch", 95, 64);
    REQUIRE((*writer)->Flush().ok());
  }
  const ReadResult read = ReadTrace(path.string());
  std::filesystem::remove(path);
  REQUIRE(read.status.ok());
  REQUIRE(read.records.size() == 3);  // the meta record is not returned
  const Record& step = read.records[0];
  CHECK(step.time_us == 100);
  CHECK(step.dur_us == 50);
  CHECK(step.node == "worker-3");
  CHECK(step.lane == "compute");
  CHECK(step.kind == "span");
  CHECK(step.name == "step");
  CHECK(step.Number("clock") == 7);
  CHECK(step.Number("loss") == 0.25);
  CHECK(read.records[1].Text("policy") == "ssp");
  CHECK(read.records[2].kind == "counter");
  CHECK(read.records[2].Number("value") == 64);
}

TEST_CASE("trace: a double beyond int64, packed as an unsigned integer, reads back as a double") {
  // msgpack writes a double that is a whole number as an integer; 2^63 is
  // one that int64 cannot hold.
  Record r;
  r.time_us = 5;
  r.node = "server-0";
  r.lane = "run";
  r.kind = "instant";
  r.name = "start";
  r.args = {{"target", 9223372036854775808.0}, {"small", int64_t{-5}}};
  msgpack::sbuffer bytes;
  Pack(MetaRecord(0, "test"), &bytes);
  Pack(r, &bytes);
  const ReadResult read = ParseTrace(std::string_view(bytes.data(), bytes.size()), "big.trace");
  REQUIRE(read.status.ok());
  REQUIRE(read.records.size() == 1);
  CHECK(read.records[0].Number("target") == 9223372036854775808.0);
  CHECK(read.records[0].Number("small") == -5);
  msgpack::sbuffer again;
  Pack(read.records[0], &again);
  msgpack::sbuffer first;
  Pack(r, &first);
  CHECK(std::string(again.data(), again.size()) == std::string(first.data(), first.size()));
}

TEST_CASE("trace: a truncated stream keeps the records before the cut and names its offset") {
  const std::string bytes = Merged(SmallTrace());
  const size_t total = ParseTrace(bytes, "whole").records.size();
  // Cut inside the third record: find where it starts by re-encoding.
  std::vector<Record> sorted = SmallTrace();
  SortByTime(&sorted);
  msgpack::sbuffer prefix;
  Record meta{sorted.front().time_us,       "dmlps-trace", "run", "meta", "dmlps-trace", 0,
              {{"version", kFormatVersion}}};
  Pack(meta, &prefix);
  Pack(sorted[0], &prefix);
  Pack(sorted[1], &prefix);
  const size_t cut_at = prefix.size();
  const ReadResult read = ParseTrace(std::string_view(bytes).substr(0, cut_at + 5), "cut.trace");
  CHECK(read.status.code() == StatusCode::kDataLoss);
  CHECK(read.records.size() == 2);
  CHECK(read.status.message().find("cut.trace") != std::string::npos);
  CHECK(read.status.message().find("truncated") != std::string::npos);
  CHECK(read.status.message().find("offset " + std::to_string(cut_at)) != std::string::npos);
  CHECK(total == SmallTrace().size());
}

TEST_CASE("trace: a corrupt byte ends the reading with DataLoss, keeping the prefix") {
  std::string bytes = Merged(SmallTrace());
  msgpack::sbuffer prefix;
  std::vector<Record> sorted = SmallTrace();
  SortByTime(&sorted);
  Pack({sorted.front().time_us,
        "dmlps-trace",
        "run",
        "meta",
        "dmlps-trace",
        0,
        {{"version", kFormatVersion}}},
       &prefix);
  Pack(sorted[0], &prefix);
  // 0xc1 is never used in msgpack; put it where the second record starts.
  bytes[prefix.size()] = static_cast<char>(0xc1);
  const ReadResult read = ParseTrace(bytes, "bad.trace");
  CHECK(read.status.code() == StatusCode::kDataLoss);
  CHECK(read.records.size() == 1);
  CHECK(read.status.message().find("offset " + std::to_string(prefix.size())) != std::string::npos);
}

TEST_CASE("trace: merge sorts by time, stably, behind a meta record") {
  std::vector<Record> records = {
      Instant("b", "run", "x", 30), Instant("a", "run", "first-at-10", 10),
      Instant("c", "run", "second-at-10", 10), Instant("a", "run", "y", 20)};
  const std::string bytes = Merged(records);
  const ReadResult read = ParseTrace(bytes, "merged");
  REQUIRE(read.status.ok());
  REQUIRE(read.records.size() == 4);
  CHECK(read.records[0].name == "first-at-10");
  CHECK(read.records[1].name == "second-at-10");
  CHECK(read.records[2].time_us == 20);
  CHECK(read.records[3].time_us == 30);
  // A merged trace merged with itself is still a valid, sorted trace.
  const ReadResult twice = ParseTrace(bytes + bytes, "twice");
  REQUIRE(twice.status.ok());
  CHECK(twice.records.size() == 8);
}

TEST_CASE("trace: tests/data/small.trace is the merged SmallTrace, byte for byte") {
  const std::string expected = Merged(SmallTrace());
  if (std::getenv("DMLPS_REGENERATE_TRACE") != nullptr) {
    std::ofstream(FixturePath(), std::ios::binary) << expected;
  }
  const std::string actual = ReadFile(FixturePath());
  CHECK(actual.size() == expected.size());
  CHECK(actual == expected);
  const ReadResult read = ReadTrace(FixturePath().string());
  CHECK(read.status.ok());
  CHECK(read.records.size() == SmallTrace().size());
}

TEST_CASE("trace: the summary of the small trace matches the figures worked out by hand") {
  const TraceSummary s = Summarize(SmallTrace());
  REQUIRE(s.runs.size() == 1);
  CHECK(s.runs[0].policy == "bsp");
  CHECK(s.runs[0].workers == 2);
  CHECK(s.runs[0].reached);
  CHECK(s.runs[0].time_to_accuracy_s == doctest::Approx(1.62));
  CHECK(s.runs[0].target_iteration == 20);
  CHECK(s.runs[0].best_accuracy == doctest::Approx(0.55));
  REQUIRE(s.workers.size() == 2);
  const WorkerSummary& w0 = s.workers[0];
  const WorkerSummary& w1 = s.workers[1];
  CHECK(w0.node == "worker-0");
  CHECK(w0.steps == 16);
  CHECK(w0.samples == 512);
  CHECK(w0.mean_batch == 32);
  CHECK(w0.active_s == doctest::Approx(1.6));
  CHECK(w0.Share(w0.compute_s) == doctest::Approx(0.5));
  CHECK(w0.Share(w0.comm_s) == doctest::Approx(0.1));
  CHECK(w0.Share(w0.wait_s) == doctest::Approx(0.4));
  CHECK(w0.straggle_s == 0);
  CHECK(w0.pushes == 16);
  CHECK(w0.mean_staleness == 0);
  CHECK(w0.median_step_s == doctest::Approx(0.05));  // busy 50 ms a step
  CHECK(w0.slow_steps == 0);
  CHECK(w0.straggler.empty());
  CHECK(w1.node == "worker-1");
  CHECK(w1.steps == 4);
  CHECK(w1.samples == 128);
  CHECK(w1.Share(w1.compute_s) == doctest::Approx(0.125));
  CHECK(w1.Share(w1.straggle_s) == doctest::Approx(0.75));
  CHECK(w1.Share(w1.comm_s) == doctest::Approx(0.025));
  CHECK(w1.Share(w1.wait_s) == doctest::Approx(0.1));
  CHECK(w1.mean_staleness == 3);
  CHECK(w1.median_step_s == doctest::Approx(0.35));  // 50 ms compute + 300 ms straggle
  CHECK(w1.slow_steps == 4);                         // all over 1.5 x 0.2 s
  CHECK(w1.straggler == "deterministic");
  CHECK(s.median_step_s == doctest::Approx(0.2));

  std::ostringstream text;
  WriteSummary(s, SummaryFormat::kText, text);
  CHECK(text.str().find("time to accuracy 1.620 s (iteration 20)") != std::string::npos);
  CHECK(text.str().find("straggler: worker-1 deterministic") != std::string::npos);
  std::ostringstream json;
  WriteSummary(s, SummaryFormat::kJson, json);
  CHECK(JsonCheck(json.str()).Valid());
  std::ostringstream tsv;
  WriteSummary(s, SummaryFormat::kTsv, tsv);
  CHECK(tsv.str().rfind("node\tsteps\tsamples\t", 0) == 0);
  CHECK(tsv.str().find("worker-1\t4\t128\t32.000\t") != std::string::npos);
}

TEST_CASE("trace: a slow step now and then makes a transient straggler") {
  std::vector<Record> records;
  for (int64_t rank = 0; rank < 3; ++rank) {
    for (int64_t i = 0; i < 10; ++i) {
      // worker-2's sixth step is 5x longer; every other step takes 50 ms.
      const int64_t t = i * 100 * kMs + (rank == 2 && i > 5 ? 200 * kMs : 0);
      const int64_t busy = (rank == 2 && i == 5 ? 250 : 50) * kMs;
      records.push_back(
          Span("worker-" + std::to_string(rank), "compute", "step", t, busy, {{"clock", i}}));
    }
  }
  const TraceSummary s = Summarize(records);
  REQUIRE(s.workers.size() == 3);
  CHECK(s.workers[0].straggler.empty());
  CHECK(s.workers[2].slow_steps == 1);
  CHECK(s.workers[1].slow_steps == 0);
  CHECK(s.workers[2].straggler == "transient");
  CHECK(s.runs.empty());
  std::ostringstream text;
  WriteSummary(s, SummaryFormat::kText, text);
  CHECK(text.str().find("straggler: worker-2 transient") != std::string::npos);
}

TEST_CASE("trace: a run that misses its target reports the best accuracy") {
  std::vector<Record> records = {
      Instant("server-0", "run", "start", 0, {{"policy", std::string("asp")}}),
      Counter("server-0", "accuracy", 10, 0.3), Counter("server-0", "accuracy", 20, 0.45),
      Counter("server-0", "accuracy", 30, 0.41), Instant("server-0", "run", "end", 40)};
  const TraceSummary s = Summarize(records);
  REQUIRE(s.runs.size() == 1);
  CHECK_FALSE(s.runs[0].reached);
  CHECK(s.runs[0].best_accuracy == doctest::Approx(0.45));
  std::ostringstream text;
  WriteSummary(s, SummaryFormat::kText, text);
  CHECK(text.str().find("not reached; best accuracy 0.4500") != std::string::npos);
}

TEST_CASE("trace: auto's decisions are listed by the summary and are instants with args") {
  const Args decision = {{"running", std::string("bsp")},
                         {"chosen", std::string("backup:1")},
                         {"reason", std::string("switch: saves 1.2 s")},
                         {"measured", std::string("steps ms 10 10 10 40")},
                         {"predicted", std::string("bsp=0.04 backup:1=0.0128")},
                         {"decide_ms", 3.5},
                         {"iteration", int64_t{12}}};
  std::vector<Record> records = {
      Instant("server-0", "run", "start", 1'000'000, {{"policy", std::string("auto")}}),
      Instant("server-0", "run", "policy decision", 3'500'000, decision),
      Instant("server-0", "run", "end", 9'000'000)};
  const TraceSummary s = Summarize(records);
  REQUIRE(s.runs.size() == 1);
  REQUIRE(s.runs[0].decisions.size() == 1);
  const PolicyDecision& d = s.runs[0].decisions[0];
  CHECK(d.seconds == doctest::Approx(2.5));
  CHECK(d.iteration == 12);
  CHECK(d.running == "bsp");
  CHECK(d.chosen == "backup:1");
  CHECK(d.predicted == "bsp=0.04 backup:1=0.0128");
  CHECK(d.decide_ms == doctest::Approx(3.5));
  std::ostringstream text;
  WriteSummary(s, SummaryFormat::kText, text);
  CHECK(text.str().find("  decision at 2.500 s, iteration 12: bsp -> backup:1 (switch: saves 1.2 "
                        "s); measured: steps ms 10 10 10 40; predicted s/iteration: bsp=0.04 "
                        "backup:1=0.0128; took 3.50 ms\n") != std::string::npos);
  std::ostringstream json;
  WriteSummary(s, SummaryFormat::kJson, json);
  CHECK(JsonCheck(json.str()).Valid());
  CHECK(json.str().find("\"decisions\":[{\"seconds\":2.5,\"iteration\":12,\"running\":\"bsp\","
                        "\"chosen\":\"backup:1\"") != std::string::npos);
  std::ostringstream chrome;
  WriteChrome(records, chrome);
  CHECK(chrome.str().find("{\"name\":\"policy decision\",\"cat\":\"run\",\"ph\":\"i\"") !=
        std::string::npos);
  CHECK(chrome.str().find("\"predicted\":\"bsp=0.04 backup:1=0.0128\"") != std::string::npos);
}

TEST_CASE("trace: chrome JSON parses and holds spans, counters, instants and flows") {
  std::vector<Record> records = SmallTrace();
  records.push_back(
      Instant("worker-0", "run", "odd \"name\"\n\\", kT0, {{"s", std::string("\t\x01")}}));
  std::ostringstream out;
  WriteChrome(records, out);
  const std::string json = out.str();
  JsonCheck check(json);
  REQUIRE(check.Valid());
  CHECK(json.rfind("{\"traceEvents\":[", 0) == 0);
  CHECK(json.find("\"displayTimeUnit\":\"ms\"") != std::string::npos);
  // Spans: 16*3 + 4*4 worker spans, 20 applies and 2 evals on the server.
  CHECK(check.phases["X"] == 48 + 16 + 20 + 2);
  CHECK(check.phases["C"] == 16 + 4 + 4);
  CHECK(check.phases["i"] == 20 + 3 + 1);
  // One arrow per push, each from a worker's push span to an apply.
  CHECK(check.phases["s"] == 20);
  CHECK(check.phases["f"] == 20);
  // Processes: server-0, worker-0, worker-1 (named and sorted); threads by lane.
  CHECK(json.find("\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,\"args\":{\"name\":"
                  "\"server-0\"}") != std::string::npos);
  CHECK(json.find("\"args\":{\"name\":\"worker-1\"}") != std::string::npos);
  CHECK(json.find("\"args\":{\"accuracy\":0.55}") != std::string::npos);
  // The flow of worker-1's push of clock 0 (the fourth push to start, at 350 ms)
  // ends at the apply 1 ms after it arrived.
  const std::string apply_ts = std::to_string(kT0 + 364 * kMs);
  CHECK(json.find("\"ph\":\"f\",\"bp\":\"e\",\"id\":4,\"ts\":" + apply_ts) != std::string::npos);
}

TEST_CASE("trace: tsv has a header and one line per record") {
  std::vector<Record> records = {
      Span("worker-0", "comm", "push", 5, 3, {{"clock", int64_t{2}}, {"bytes", int64_t{10}}})};
  std::ostringstream out;
  WriteTsv(records, out);
  CHECK(out.str() ==
        "t_us\tnode\tlane\tkind\tname\tdur_us\targs\n"
        "5\tworker-0\tcomm\tspan\tpush\t3\tclock=2;bytes=10\n");
}

TEST_CASE("trace: plot scripts hold their data inline and the chosen terminal") {
  const std::vector<Record> records = SmallTrace();
  for (const char* kind : {"tta", "gantt", "wait"}) {
    CAPTURE(kind);
    PlotOptions options;
    options.kind = kind;
    options.term = "dumb";
    std::ostringstream out;
    REQUIRE(WritePlot(records, options, out).ok());
    CHECK(out.str().find("set terminal dumb") != std::string::npos);
    CHECK(out.str().find(" << EOD\n") != std::string::npos);
    CHECK(out.str().find("\nplot ") != std::string::npos);
  }
  PlotOptions gantt;
  gantt.kind = "gantt";
  gantt.window_s = 0.5;
  std::ostringstream out;
  REQUIRE(WritePlot(records, gantt, out).ok());
  CHECK(out.str().find("set terminal svg") != std::string::npos);
  CHECK(out.str().find("\"straggle\"") != std::string::npos);
  CHECK(out.str().find("0.800000") == std::string::npos);  // past the window

  PlotOptions bad;
  bad.kind = "pie";
  std::ostringstream ignored;
  CHECK(WritePlot(records, bad, ignored).code() == StatusCode::kInvalidArgument);
  PlotOptions tta;
  CHECK(WritePlot({}, tta, ignored).code() == StatusCode::kDataLoss);
}

TEST_CASE("trace: the plots say what they show: the target, the window, a fixed batch") {
  std::vector<Record> records = SmallTrace();
  std::ostringstream tta;
  REQUIRE(WritePlot(records, PlotOptions{}, tta).ok());
  CHECK(tta.str().find("0.5 with lines dashtype 2") != std::string::npos);
  CHECK(tta.str().find("title \"target 0.5\"") != std::string::npos);

  PlotOptions gantt;
  gantt.kind = "gantt";
  std::ostringstream whole;
  REQUIRE(WritePlot(records, gantt, whole).ok());
  // The run lasts 1.6 s: the default 20 s window shows all of it.
  CHECK(whole.str().find("set title \"What each worker did (all 1.6 s)\"") != std::string::npos);
  // Compute, straggle, comm and wait: four colours, and bands of their own
  // in a worker's row (worker-0 is row 0: its first step, push and wait).
  std::set<std::string> colours;
  for (const char* title : {"compute", "straggle", "comm", "wait"}) {
    const size_t at = whole.str().find(std::string("title \"") + title + "\"");
    REQUIRE(at != std::string::npos);
    colours.insert(whole.str().substr(at - 9, 7));
  }
  CHECK(colours.size() == 4);
  CHECK(whole.str().find("\n0.000000 0.050000 0.2\n") != std::string::npos);
  CHECK(whole.str().find("\n0.050000 0.060000 0\n") != std::string::npos);
  CHECK(whole.str().find("\n0.060000 0.100000 -0.2\n") != std::string::npos);
  gantt.window_s = 0.5;
  std::ostringstream part;
  REQUIRE(WritePlot(records, gantt, part).ok());
  CHECK(part.str().find("(first 0.5 s)") != std::string::npos);

  // Every worker at batch 32 all along: said, not drawn.
  PlotOptions batch;
  batch.kind = "batch";
  std::ostringstream ignored;
  const Status fixed = WritePlot(records, batch, ignored);
  CHECK(fixed.code() == StatusCode::kDataLoss);
  CHECK(fixed.message().find("the batch size stayed 32 on every worker under policy bsp") == 0);
  records.push_back(Counter("worker-1", "batch", kT0 + 900 * kMs, 48));
  std::ostringstream moved;
  REQUIRE(WritePlot(records, batch, moved).ok());
  CHECK(moved.str().find("with steps title \"worker-1\"") != std::string::npos);
}

TEST_CASE("trace: the time-to-accuracy plot labels runs of several traces by policy") {
  std::vector<Record> records;
  for (const auto& [policy, start] :
       std::vector<std::pair<std::string, int64_t>>{{"bsp", 0}, {"wbsp", 1'000'000'000}}) {
    records.push_back(Instant("server-0", "run", "start", start, {{"policy", policy}}));
    records.push_back(Counter("server-0", "accuracy", start + 500'000, 0.5));
  }
  PlotOptions options;
  std::ostringstream out;
  REQUIRE(WritePlot(records, options, out).ok());
  CHECK(out.str().find("title \"bsp\"") != std::string::npos);
  CHECK(out.str().find("title \"wbsp\"") != std::string::npos);
  CHECK(out.str().find("0.500000 0.5\n") != std::string::npos);
}

}  // namespace
}  // namespace dmlps::trace
