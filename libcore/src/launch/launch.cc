#include "dmlps/launch/launch.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "dmlps/base/printable.h"

namespace dmlps::launch {
namespace {

constexpr int64_t kMaxHosts = 1000000;
// The most characters of one host name (a DNS name's), and of a whole
// expanded list: a list is parsed and counted before anything is expanded.
constexpr size_t kMaxHostName = 255;
constexpr int64_t kMaxExpandedChars = int64_t{64} << 20;
// The most of a list, or of one of its items, an error quotes.
constexpr size_t kQuoted = 60;

// Joins text by appending (GCC 12 warns falsely on "literal" + std::string).
template <typename... Parts>
std::string Cat(const Parts&... parts) {
  std::string text;
  (text.append(std::string_view(parts)), ...);
  return text;
}

// Text of the environment as an error quotes it: on one line, and short.
std::string Quote(std::string_view text) { return Cat("'", PrintableExcerpt(text, kQuoted), "'"); }

Status TooMany(std::string_view item) {
  return Status::InvalidArgument(
      Cat(Quote(item), " names more than ", std::to_string(kMaxHosts), " hosts"));
}

// The numbers lo..hi of a bracket group, zero-padded to `width`.
struct Range {
  int64_t lo = 0;
  int64_t hi = 0;
  size_t width = 0;
};

// A name's pieces: literal text, or the ranges of one bracket group.
struct Piece {
  std::string_view text;      // where `ranges` is empty
  std::vector<Range> ranges;  // a bracket group's, in order
  int64_t count = 1;          // its choices
  size_t width = 0;           // the longest choice's characters
};

// One item of the list, parsed: its pieces and how many names they make.
struct Item {
  std::vector<Piece> pieces;
  int64_t count = 1;
  size_t width = 0;  // the longest name's characters
};

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

Status ParseNumber(std::string_view text, std::string_view where, int64_t* value) {
  if (!AllDigits(text) || text.size() > 18) {
    return Status::InvalidArgument(Cat(Quote(text), " in ", Quote(where), " is not a number"));
  }
  std::from_chars(text.data(), text.data() + text.size(), *value);
  return Status::Ok();
}

std::string Padded(int64_t value, size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

// The `i`th choice of `piece` (0 <= i < piece.count).
std::string Choice(const Piece& piece, int64_t i) {
  if (piece.ranges.empty()) return std::string(piece.text);
  for (const Range& r : piece.ranges) {
    if (i <= r.hi - r.lo) return Padded(r.lo + i, r.width);
    i -= r.hi - r.lo + 1;
  }
  return "";
}

// Parses the inside of one bracket group, e.g. "01-03,07", counting its
// numbers without writing them out.
Status ParseGroup(std::string_view group, std::string_view item, Piece* piece) {
  piece->count = 0;
  size_t start = 0;
  while (true) {
    const size_t comma = group.find(',', start);
    const std::string_view entry = group.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    const size_t dash = entry.find('-');
    Range r;
    DMLPS_RETURN_IF_ERROR(ParseNumber(entry.substr(0, dash), item, &r.lo));
    r.hi = r.lo;
    if (dash != std::string_view::npos) {
      DMLPS_RETURN_IF_ERROR(ParseNumber(entry.substr(dash + 1), item, &r.hi));
      if (r.hi < r.lo) {
        return Status::InvalidArgument(
            Cat("range ", Quote(entry), " in ", Quote(item), " runs backwards"));
      }
    }
    if (r.hi - r.lo >= kMaxHosts || piece->count + (r.hi - r.lo + 1) > kMaxHosts) {
      return TooMany(item);
    }
    r.width = dash == std::string_view::npos ? entry.size() : dash;
    piece->count += r.hi - r.lo + 1;
    piece->width = std::max({piece->width, r.width, std::to_string(r.hi).size()});
    piece->ranges.push_back(r);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return Status::Ok();
}

// Parses one item of the list, e.g. "rack[1-2]-node[01-02]", and counts
// the names it makes.
Status ParseItem(std::string_view item, Item* parsed) {
  if (item.empty()) return Status::InvalidArgument("empty host name");
  size_t i = 0;
  while (i < item.size()) {
    if (item[i] == ']') {
      return Status::InvalidArgument(Cat("']' without '[' in ", Quote(item)));
    }
    Piece piece;
    if (item[i] == '[') {
      const size_t close = item.find(']', i);
      if (close == std::string_view::npos) {
        return Status::InvalidArgument(Cat("'[' without ']' in ", Quote(item)));
      }
      const std::string_view group = item.substr(i + 1, close - i - 1);
      if (group.find('[') != std::string_view::npos) {
        return Status::InvalidArgument(Cat("nested '[' in ", Quote(item)));
      }
      DMLPS_RETURN_IF_ERROR(ParseGroup(group, item, &piece));
      i = close + 1;
    } else {
      const size_t next = item.find_first_of("[]", i);
      piece.text = item.substr(i, next == std::string_view::npos ? next : next - i);
      if (piece.text.find_first_of(" \t\n\r") != std::string_view::npos) {
        return Status::InvalidArgument(Cat("white space in ", Quote(item)));
      }
      piece.width = piece.text.size();
      i = next == std::string_view::npos ? item.size() : next;
    }
    // (Every piece makes one choice at least.)
    if (parsed->count > kMaxHosts / piece.count) return TooMany(item);
    parsed->count *= piece.count;
    parsed->width += piece.width;
    if (parsed->width > kMaxHostName) {
      return Status::InvalidArgument(Cat(Quote(item), " makes host names of more than ",
                                         std::to_string(kMaxHostName), " characters"));
    }
    parsed->pieces.push_back(std::move(piece));
  }
  return Status::Ok();
}

// Parses every item of `list` and counts the hosts they name, expanding none.
Result<std::vector<Item>> ParseHostList(std::string_view list) {
  if (list.empty()) return Status::InvalidArgument("empty host list");
  std::vector<Item> items;
  int64_t hosts = 0;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    if (i < list.size() && list[i] == '[') ++depth;
    if (i < list.size() && list[i] == ']') --depth;
    if (i == list.size() || (list[i] == ',' && depth == 0)) {
      const std::string_view text = list.substr(start, i - start);
      Item item;
      Status s = ParseItem(text, &item);
      if (s.ok() && hosts + item.count > kMaxHosts) s = TooMany(text);
      if (!s.ok()) return s.WithContext(Cat("host list ", Quote(list)));
      hosts += item.count;
      items.push_back(std::move(item));
      start = i + 1;
    }
  }
  return items;
}

// Writes out the names `item` makes; the leftmost group varies slowest,
// as Slurm lists them.
void ExpandItem(const Item& item, std::vector<std::string>* hosts) {
  std::vector<std::vector<std::string>> choices;
  for (const Piece& p : item.pieces) {
    choices.emplace_back();
    for (int64_t c = 0; c < p.count; ++c) choices.back().push_back(Choice(p, c));
  }
  std::vector<size_t> at(choices.size(), 0);
  for (int64_t n = 0; n < item.count; ++n) {
    std::string host;
    for (size_t p = 0; p < choices.size(); ++p) host += choices[p][at[p]];
    hosts->push_back(std::move(host));
    for (size_t p = choices.size(); p-- > 0;) {
      if (++at[p] < choices[p].size()) break;
      at[p] = 0;
    }
  }
}

// Reads one of the launcher's integers: set, a whole number, in min..max.
Status ReadInt(const EnvLookup& env, const char* name, int64_t min, int64_t max, int64_t* value) {
  const char* text = env(name);
  const std::string_view s = text == nullptr ? std::string_view() : std::string_view(text);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    return Status::Config(Cat(name, "=", Quote(s), " is not an integer"));
  }
  if (*value < min || *value > max) {
    return Status::Config(
        Cat(name, "=", s, " is outside [", std::to_string(min), ", ", std::to_string(max), "]"));
  }
  return Status::Ok();
}

struct Source {
  const char* name;
  const char* rank;
  const char* size;
};
// In the order of precedence (see DetectLauncher's contract).
constexpr Source kSources[] = {{"torchrun", "RANK", "WORLD_SIZE"},
                               {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                               {"pmi", "PMI_RANK", "PMI_SIZE"},
                               {"slurm", "SLURM_PROCID", "SLURM_NTASKS"},
                               {"kubernetes", "JOB_COMPLETION_INDEX", "DMLPS_WORLD_SIZE"}};

bool IsSet(const EnvLookup& env, const char* name) { return env(name) != nullptr; }

bool IsSetNonEmpty(const EnvLookup& env, const char* name) {
  const char* value = env(name);
  return value != nullptr && *value != '\0';
}

// torchrun (and the operators that set its variables): rank 0 runs on
// MASTER_ADDR; MASTER_PORT is taken by torchrun's own store (its static
// rendezvous), so the server gets the port above it.
Status ReadTorchrun(const EnvLookup& env, Launcher* launcher) {
  if (!IsSetNonEmpty(env, "MASTER_ADDR")) {
    return Status::Config(
        "RANK and WORLD_SIZE are set but MASTER_ADDR is not (torchrun sets all three)");
  }
  launcher->server_host = env("MASTER_ADDR");
  if (IsSet(env, "MASTER_PORT")) {
    int64_t port = 0;
    DMLPS_RETURN_IF_ERROR(ReadInt(env, "MASTER_PORT", 1, 65534, &port));
    launcher->server_port = port + 1;
  }
  return Status::Ok();
}

// A Kubernetes indexed Job: its pod of index I is named JOBNAME-I, and with
// the pods' subdomain set to a headless Service, JOBNAME-0.SERVICE is the
// pod of index 0 wherever this one runs. DMLPS_SERVER, when set, names the
// server instead.
Status ReadKubernetes(const EnvLookup& env, Launcher* launcher) {
  if (!IsSetNonEmpty(env, "DMLPS_SERVICE")) {
    if (IsSetNonEmpty(env, "DMLPS_SERVER")) return Status::Ok();
    return Status::Config(
        "JOB_COMPLETION_INDEX is set but neither DMLPS_SERVICE (the Job's headless Service) nor "
        "DMLPS_SERVER says where the server is");
  }
  const char* host_text = env("HOSTNAME");
  const std::string host = host_text == nullptr ? "" : host_text;
  const std::string suffix = Cat("-", std::to_string(launcher->rank));
  if (host.size() <= suffix.size() ||
      host.compare(host.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return Status::Config(Cat("HOSTNAME=", Quote(host), " is not JOBNAME", suffix,
                              ", the name of an indexed Job's pod of JOB_COMPLETION_INDEX=",
                              std::to_string(launcher->rank)));
  }
  launcher->server_host = Cat(std::string_view(host).substr(0, host.size() - suffix.size()), "-0.",
                              env("DMLPS_SERVICE"));
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> ExpandHostList(std::string_view list) {
  DMLPS_ASSIGN_OR_RETURN(std::vector<Item> items, ParseHostList(list));
  int64_t chars = 0;
  for (const Item& item : items) chars += item.count * static_cast<int64_t>(item.width);
  if (chars > kMaxExpandedChars) {
    return Status::InvalidArgument(Cat("host list ", Quote(list), " expands to more than ",
                                       std::to_string(kMaxExpandedChars), " characters"));
  }
  std::vector<std::string> hosts;
  for (const Item& item : items) ExpandItem(item, &hosts);
  return hosts;
}

Result<HostList> ReadHostList(std::string_view list) {
  DMLPS_ASSIGN_OR_RETURN(std::vector<Item> items, ParseHostList(list));
  HostList hosts;
  for (const Item& item : items) hosts.count += item.count;
  for (const Piece& piece : items.front().pieces) hosts.first += Choice(piece, 0);
  return hosts;
}

Result<Launcher> DetectLauncher(const EnvLookup& env) {
  const char* choice_text = env("DMLPS_LAUNCHER");
  const std::string choice = choice_text == nullptr || *choice_text == '\0' ? "auto" : choice_text;
  Launcher launcher;
  if (choice == "none") return launcher;
  const Source* source = nullptr;
  for (const Source& s : kSources) {
    if (choice == s.name) source = &s;
  }
  if (source == nullptr && choice != "auto") {
    return Status::Config(Cat("DMLPS_LAUNCHER=", Quote(choice),
                              " is none of auto, none, torchrun, openmpi, pmi, slurm, kubernetes"));
  }
  if (source == nullptr) {
    for (const Source& s : kSources) {
      if (IsSet(env, s.rank)) {  // an salloc shell sets SLURM_NTASKS alone
        source = &s;
        break;
      }
    }
  }
  if (source == nullptr) return launcher;
  if (!IsSet(env, source->rank) || !IsSet(env, source->size)) {
    const bool has_rank = IsSet(env, source->rank);
    return Status::Config(Cat(has_rank ? source->rank : source->size, " is set but ",
                              has_rank ? source->size : source->rank, " is not"));
  }
  launcher.name = source->name;
  DMLPS_RETURN_IF_ERROR(ReadInt(env, source->size, 1, kMaxHosts, &launcher.size));
  DMLPS_RETURN_IF_ERROR(ReadInt(env, source->rank, 0, launcher.size - 1, &launcher.rank));
  for (const char* name : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"}) {
    const char* list = env(name);
    if (list == nullptr || *list == '\0') continue;
    // Counted, not expanded: the server's default address needs the first.
    Result<HostList> hosts = ReadHostList(list);
    if (!hosts.ok()) return Status::Config(Cat(name, ": ", hosts.status().message()));
    launcher.hosts = std::move(*hosts);
    break;
  }
  if (launcher.name == "torchrun") DMLPS_RETURN_IF_ERROR(ReadTorchrun(env, &launcher));
  if (launcher.name == "kubernetes") DMLPS_RETURN_IF_ERROR(ReadKubernetes(env, &launcher));
  return launcher;
}

LaunchDefaults ReadLaunchDefaults(const EnvLookup& env) {
  LaunchDefaults d;
  if (Result<Launcher> launcher = DetectLauncher(env); launcher.ok()) {
    d.launcher = std::move(*launcher);
  } else {
    d.problems.push_back(launcher.status().message());
  }
  if (!d.launcher.name.empty()) {
    if (d.launcher.size >= 2) d.workers = d.launcher.size - 1;
    if (d.launcher.rank >= 1) d.worker_rank = d.launcher.rank - 1;
  }
  int64_t port = d.launcher.server_port > 0 ? d.launcher.server_port : kDefaultPort;
  if (env("DMLPS_PORT") != nullptr) {
    if (Status s = ReadInt(env, "DMLPS_PORT", 1, 65535, &port); !s.ok()) {
      d.problems.push_back(s.message());
      port = kDefaultPort;
    }
  }
  std::string host = d.launcher.server_host;
  if (host.empty()) host = d.launcher.hosts.count == 0 ? "127.0.0.1" : d.launcher.hosts.first;
  // An IPv6 address (torchrun's MASTER_ADDR may be one) goes in brackets.
  if (host.find(':') != std::string::npos && !host.starts_with("[")) host = Cat("[", host, "]");
  d.server = Cat("tcp://", host, ":", std::to_string(port));
  if (const char* server = env("DMLPS_SERVER"); server != nullptr && *server != '\0') {
    d.server = server;
  }
  d.bind = Cat("tcp://127.0.0.1:", std::to_string(port));
  return d;
}

LaunchDefaults ReadLaunchDefaults() {
  // A shell does not always export HOSTNAME; the pod's name is the host's.
  static char host_name[256] = {};
  return ReadLaunchDefaults([](const char* name) -> const char* {
    const char* value = std::getenv(name);
    if (value != nullptr || std::string_view(name) != "HOSTNAME") return value;
    if (gethostname(host_name, sizeof(host_name) - 1) != 0) return nullptr;
    return host_name;
  });
}

std::string Describe(const Launcher& launcher) {
  if (launcher.name.empty()) return "";
  std::string text = Cat("rank ", std::to_string(launcher.rank), " of ",
                         std::to_string(launcher.size), " under ", launcher.name);
  if (launcher.hosts.count > 0) {
    text += Cat(" on ", std::to_string(launcher.hosts.count), " host");
    if (launcher.hosts.count != 1) text += "s";
    text += Cat(" from ", launcher.hosts.first);
  }
  return text;
}

}  // namespace dmlps::launch
