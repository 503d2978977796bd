// What auto reads of the cores its workers share (docs/auto-readings.md).
#include "dmlps/auto/shared_cores.h"

#include <algorithm>

#include "dmlps/advise/trace_profile.h"

namespace dmlps::autopolicy {

int64_t SharedCores::ServerHostCores(const sync::Policy& policy, int64_t* live) const {
  std::vector<int64_t> host_cores;
  for (sync::WorkerId w = 0; w < policy.num_workers(); ++w) {
    if (policy.joined(w)) host_cores.push_back(host_cores_[w]);
  }
  if (live != nullptr) *live = static_cast<int64_t>(host_cores.size());
  return advise::CommonHostCores(host_cores);
}

int64_t SharedCores::CrowdedCores(const sync::Policy& policy) const {
  int64_t live = 0;
  const int64_t cores = ServerHostCores(policy, &live);
  return live > cores ? cores : 0;
}

void SharedCores::Read(const sync::Policy& policy, bool after_change,
                       advise::ClusterProfile* profile) {
  // Workers all on the server's host share at most its cores, and more
  // workers there than cores share them whatever their steps read
  // (docs/auto-readings.md, "Shared cores").
  const int64_t host = ServerHostCores(policy);
  int64_t read = advise::SharedCoresAtMost(*profile, host);
  if (read == 0) read = CrowdedCores(policy);
  if (read == 0 && cores_ == 0) return;
  // After a lasting change of the workers' speed (at this decision or the
  // next, whose readings hold every worker's steps since), the reading, at
  // most the host's cores, is the host's now: other work took a core or
  // left it.
  const bool recent_change = after_change || changed_before_;
  changed_before_ = after_change;
  if (recent_change && host > 0 && read > cores_) cores_ = read;
  // Otherwise a host does not gain cores: a reading of more than before is
  // workers that computed less at once, and it flips with the policy
  // running. Once shared, the cores stay shared.
  cores_ = cores_ == 0 ? read : std::min(cores_, read > 0 ? read : cores_);
  profile->cores = cores_;
}

}  // namespace dmlps::autopolicy
