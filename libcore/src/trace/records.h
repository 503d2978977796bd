// What the trace tools ask of records: which kind of node wrote one, what
// it is (a span or an instant of a lane), and the nodes in reading order.
#ifndef DMLPS_TRACE_RECORDS_H_
#define DMLPS_TRACE_RECORDS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/trace/trace.h"

namespace dmlps::trace {

inline bool IsWorker(const Record& r) { return r.node.rfind("worker-", 0) == 0; }
inline bool IsServer(const Record& r) { return r.node.rfind("server", 0) == 0; }

inline bool IsSpan(const Record& r, std::string_view lane, std::string_view name = {}) {
  return r.kind == "span" && r.lane == lane && (name.empty() || r.name == name);
}
inline bool IsInstant(const Record& r, std::string_view lane, std::string_view name) {
  return r.kind == "instant" && r.lane == lane && r.name == name;
}

// The nodes of `records` (of the workers only, with `workers_only`):
// servers, then workers, then the rest; by the number after the last '-'
// within each, so that worker-10 follows worker-9.
std::vector<std::string> SortedNodes(const std::vector<Record>& records, bool workers_only);

// The rank in "worker-R", or -1.
int64_t WorkerRank(const std::string& node);

}  // namespace dmlps::trace

#endif  // DMLPS_TRACE_RECORDS_H_
