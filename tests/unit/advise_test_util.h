// Cluster profiles and advice for the advise tests (advise_test.cc,
// advise_trace_test.cc).
#ifndef DMLPS_TESTS_UNIT_ADVISE_TEST_UTIL_H_
#define DMLPS_TESTS_UNIT_ADVISE_TEST_UTIL_H_

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/advise/advisor.h"

namespace dmlps::advise::fixtures {

// The installed efficiency tables (share/dmlps/efficiency.tsv, found as the
// programs find it), read once.
inline const std::vector<EfficiencyTable>& Tables() {
  static const std::vector<EfficiencyTable> tables = [] {
    Result<std::vector<EfficiencyTable>> loaded = LoadEfficiencies();
    REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
    return *loaded;
  }();
  return tables;
}

// The table of a job of `model` at `batch` on `workers` (EfficiencyFor).
inline EfficiencyTable TableFor(std::string_view model = {}, int64_t batch = 0,
                                int64_t workers = 0) {
  return EfficiencyFor(Tables(), model, batch, workers);
}

// 4 workers of 10 ms steps at batch 256, mlp:128's parameters, loopback-like
// links.
inline ClusterProfile Even() {
  ClusterProfile p;
  p.workers.assign(4, WorkerProfile{.step_s = 0.010, .jitter = 0.05});
  p.batch = 256;
  p.num_params = 101770;
  p.link_gbps = 3;
  p.latency_s = 300e-6;
  return p;
}

// Every worker of `p` held up `delay_s` on a share `prob` of its steps.
inline void DelayEvery(double prob, double delay_s, ClusterProfile* p) {
  for (WorkerProfile& w : p->workers) {
    w.delay_prob = prob;
    w.delay_s = delay_s;
  }
}

inline const Prediction& Find(const Advice& advice, const std::string& policy) {
  auto it = std::find_if(advice.predictions.begin(), advice.predictions.end(),
                         [&](const Prediction& p) { return p.policy == policy; });
  REQUIRE(it != advice.predictions.end());
  return *it;
}

inline Advice MustAdvise(const ClusterProfile& profile, AdvisorOptions options = {}) {
  Result<Advice> advice = Advisor(TableFor()).Advise(profile, options);
  REQUIRE(advice.ok());
  for (const Prediction& p : advice->predictions) CHECK_MESSAGE(p.failure.empty(), p.failure);
  return *advice;
}

}  // namespace dmlps::advise::fixtures

#endif  // DMLPS_TESTS_UNIT_ADVISE_TEST_UTIL_H_
