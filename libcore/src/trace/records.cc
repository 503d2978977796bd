#include "trace/records.h"

#include <algorithm>
#include <charconv>
#include <set>

namespace dmlps::trace {
namespace {

// Orders node names: servers, then workers, then the rest; by the number
// after the last '-' within each, so that worker-10 follows worker-9.
bool NodeLess(const std::string& a, const std::string& b) {
  auto rank_of = [](const std::string& n) {
    if (n.rfind("server", 0) == 0) return 0;
    if (n.rfind("worker", 0) == 0) return 1;
    return 2;
  };
  auto number_of = [](const std::string& n) -> int64_t {
    const size_t dash = n.rfind('-');
    if (dash == std::string::npos) return -1;
    int64_t value = -1;
    auto [end, ec] = std::from_chars(n.data() + dash + 1, n.data() + n.size(), value);
    return ec == std::errc() && end == n.data() + n.size() ? value : -1;
  };
  const int ra = rank_of(a), rb = rank_of(b);
  if (ra != rb) return ra < rb;
  const int64_t na = number_of(a), nb = number_of(b);
  if (na != nb) return na < nb;
  return a < b;
}

}  // namespace

std::vector<std::string> SortedNodes(const std::vector<Record>& records, bool workers_only) {
  std::set<std::string> nodes;
  for (const Record& r : records) {
    if (!workers_only || IsWorker(r)) nodes.insert(r.node);
  }
  std::vector<std::string> sorted(nodes.begin(), nodes.end());
  std::sort(sorted.begin(), sorted.end(), NodeLess);
  return sorted;
}

int64_t WorkerRank(const std::string& node) {
  if (node.rfind("worker-", 0) != 0) return -1;
  int64_t rank = -1;
  auto [end, ec] = std::from_chars(node.data() + 7, node.data() + node.size(), rank);
  return ec == std::errc() && end == node.data() + node.size() ? rank : -1;
}

}  // namespace dmlps::trace
