// dmlps-trace chrome: records as Chrome Trace Event JSON.
#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "dmlps/base/json.h"
#include "dmlps/trace/tools.h"
#include "trace/records.h"

namespace dmlps::trace {
namespace {

void WriteJsonValue(const ArgValue& v, std::ostream& out) {
  if (const auto* i = std::get_if<int64_t>(&v)) {
    out << *i;
  } else if (const auto* d = std::get_if<double>(&v)) {
    out << JsonNumber(*d);
  } else {
    WriteJsonString(std::get<std::string>(v), out);
  }
}

void WriteJsonArgs(const Args& args, std::ostream& out) {
  out << '{';
  bool first = true;
  for (const auto& [k, v] : args) {
    if (!first) out << ',';
    first = false;
    WriteJsonString(k, out);
    out << ':';
    WriteJsonValue(v, out);
  }
  out << '}';
}

// Chrome's numbers for a trace's nodes (processes, in NodeLess order) and
// lanes (threads, numbered per node in the order they first appear).
struct ChromeIds {
  std::map<std::string, int64_t> pid;
  std::map<std::pair<std::string, std::string>, int64_t> tid;

  int64_t Thread(const Record& r) const { return tid.at({r.node, r.lane}); }
};

ChromeIds NumberNodesAndLanes(const std::vector<std::string>& nodes,
                              const std::vector<const Record*>& sorted) {
  ChromeIds ids;
  for (size_t i = 0; i < nodes.size(); ++i) ids.pid[nodes[i]] = static_cast<int64_t>(i);
  std::map<std::string, int64_t> lanes_of;
  for (const Record* r : sorted) {
    const auto key = std::make_pair(r->node, r->lane);
    if (!ids.tid.count(key)) ids.tid[key] = lanes_of[r->node]++;
  }
  return ids;
}

// Starts each event of the traceEvents array on a line of its own, with a
// comma after the one before.
class EventList {
 public:
  explicit EventList(std::ostream& out) : out_(out) {}
  std::ostream& Next() {
    out_ << (first_ ? "\n" : ",\n");
    first_ = false;
    return out_;
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

// The metadata events: each node's process name and sort index, each lane's
// thread name.
void WriteChromeNames(const std::vector<std::string>& nodes, const ChromeIds& ids,
                      EventList& events) {
  for (const std::string& node : nodes) {
    const int64_t pid = ids.pid.at(node);
    std::ostream& out = events.Next();
    out << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" << pid
        << ",\"tid\":0,\"args\":{\"name\":";
    WriteJsonString(node, out);
    out << "}}";
    events.Next() << "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" << pid
                  << ",\"tid\":0,\"args\":{\"sort_index\":" << pid << "}}";
  }
  for (const auto& [key, id] : ids.tid) {
    std::ostream& out = events.Next();
    out << "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" << ids.pid.at(key.first)
        << ",\"tid\":" << id << ",\"args\":{\"name\":";
    WriteJsonString(key.second, out);
    out << "}}";
  }
}

// One record as an event: a span as a complete event, a counter as a
// counter event, anything else as an instant.
void WriteChromeEvent(const Record& r, const ChromeIds& ids, std::ostream& o) {
  o << "{\"name\":";
  WriteJsonString(r.name, o);
  o << ",\"cat\":";
  WriteJsonString(r.lane, o);
  if (r.kind == "span") {
    o << ",\"ph\":\"X\",\"ts\":" << r.time_us << ",\"dur\":" << r.dur_us;
  } else if (r.kind == "counter") {
    o << ",\"ph\":\"C\",\"ts\":" << r.time_us;
  } else {
    o << ",\"ph\":\"i\",\"s\":\"t\",\"ts\":" << r.time_us;
  }
  o << ",\"pid\":" << ids.pid.at(r.node) << ",\"tid\":" << ids.Thread(r) << ",\"args\":";
  if (r.kind == "counter") {
    o << '{';
    WriteJsonString(r.name, o);
    o << ':' << JsonNumber(r.Number("value")) << '}';
  } else {
    WriteJsonArgs(r.args, o);
  }
  o << '}';
}

// A worker's push span and the server's apply span that followed the
// push's arrival.
struct PushFlow {
  const Record* push;
  const Record* apply;
};

// The flows of `sorted` (records by time): for each worker push span, the
// server push instant of the same worker and clock at or after it, then
// the first apply span of that server at or after the instant.
std::vector<PushFlow> FindPushFlows(const std::vector<const Record*>& sorted) {
  std::map<std::tuple<int64_t, int64_t>, std::vector<const Record*>> arrivals;  // (rank, clock)
  std::map<std::string, std::vector<const Record*>> applies;                    // by server node
  for (const Record* r : sorted) {
    if (!IsServer(*r)) continue;
    if (IsInstant(*r, "comm", "push") && r->Has("worker") && r->Has("clock")) {
      int64_t rank = -1;
      for (const auto& [k, v] : r->args) {
        if (k != "worker") continue;
        if (const auto* i = std::get_if<int64_t>(&v)) rank = *i;
        if (const auto* s = std::get_if<std::string>(&v)) rank = WorkerRank(*s);
      }
      arrivals[{rank, static_cast<int64_t>(r->Number("clock"))}].push_back(r);
    } else if (IsSpan(*r, "apply", "apply")) {
      applies[r->node].push_back(r);
    }
  }
  std::vector<PushFlow> flows;
  for (const Record* r : sorted) {
    if (!IsWorker(*r) || !IsSpan(*r, "comm", "push") || !r->Has("clock")) continue;
    const auto it = arrivals.find({WorkerRank(r->node), static_cast<int64_t>(r->Number("clock"))});
    if (it == arrivals.end()) continue;
    // The arrival of this push: the first one at or after the push started.
    const auto arrival = std::find_if(it->second.begin(), it->second.end(),
                                      [r](const Record* a) { return a->time_us >= r->time_us; });
    if (arrival == it->second.end()) continue;
    const std::vector<const Record*>& server_applies = applies[(*arrival)->node];
    const auto apply =
        std::lower_bound(server_applies.begin(), server_applies.end(), (*arrival)->time_us,
                         [](const Record* a, int64_t t) { return a->time_us < t; });
    if (apply == server_applies.end()) continue;
    flows.push_back({r, *apply});
  }
  return flows;
}

// Each flow as an arrow: starts at the push, ends at the apply.
void WriteChromeFlows(const std::vector<PushFlow>& flows, const ChromeIds& ids, EventList& events) {
  int64_t flow_id = 0;
  for (const PushFlow& flow : flows) {
    ++flow_id;
    events.Next() << "{\"name\":\"push\",\"cat\":\"flow\",\"ph\":\"s\",\"id\":" << flow_id
                  << ",\"ts\":" << flow.push->time_us << ",\"pid\":" << ids.pid.at(flow.push->node)
                  << ",\"tid\":" << ids.Thread(*flow.push) << "}";
    events.Next() << "{\"name\":\"push\",\"cat\":\"flow\",\"ph\":\"f\",\"bp\":\"e\",\"id\":"
                  << flow_id << ",\"ts\":" << flow.apply->time_us
                  << ",\"pid\":" << ids.pid.at(flow.apply->node)
                  << ",\"tid\":" << ids.Thread(*flow.apply) << "}";
  }
}

}  // namespace

void WriteChrome(const std::vector<Record>& records, std::ostream& out) {
  const std::vector<std::string> nodes = SortedNodes(records, /*workers_only=*/false);
  std::vector<const Record*> sorted;
  for (const Record& r : records) sorted.push_back(&r);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Record* a, const Record* b) { return a->time_us < b->time_us; });
  const ChromeIds ids = NumberNodesAndLanes(nodes, sorted);
  out << "{\"traceEvents\":[";
  EventList events(out);
  WriteChromeNames(nodes, ids, events);
  for (const Record* r : sorted) WriteChromeEvent(*r, ids, events.Next());
  WriteChromeFlows(FindPushFlows(sorted), ids, events);
  out << "\n],\"displayTimeUnit\":\"ms\"}\n";
}

}  // namespace dmlps::trace
