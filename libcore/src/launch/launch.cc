#include "dmlps/launch/launch.h"

#include <unistd.h>

#include <charconv>
#include <cstdlib>

namespace dmlps::launch {
namespace {

constexpr int64_t kMaxHosts = 1000000;

// Joins text by appending (GCC 12 warns falsely on "literal" + std::string).
template <typename... Parts>
std::string Cat(const Parts&... parts) {
  std::string text;
  (text.append(std::string_view(parts)), ...);
  return text;
}

Status TooMany(std::string_view item) {
  return Status::InvalidArgument(
      Cat("'", item, "' names more than ", std::to_string(kMaxHosts), " hosts"));
}

// A name's pieces: literal text, or the numbers of one bracket group as
// zero-padded text.
struct Piece {
  std::vector<std::string> choices;
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
    return Status::InvalidArgument(Cat("'", text, "' in '", where, "' is not a number"));
  }
  std::from_chars(text.data(), text.data() + text.size(), *value);
  return Status::Ok();
}

std::string Padded(int64_t value, size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

// Expands the inside of one bracket group, e.g. "01-03,07".
Status ExpandGroup(std::string_view group, std::string_view item, std::vector<std::string>* out) {
  size_t start = 0;
  while (true) {
    const size_t comma = group.find(',', start);
    const std::string_view entry = group.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    const size_t dash = entry.find('-');
    int64_t lo = 0;
    int64_t hi = 0;
    DMLPS_RETURN_IF_ERROR(ParseNumber(entry.substr(0, dash), item, &lo));
    if (dash == std::string_view::npos) {
      hi = lo;
    } else {
      DMLPS_RETURN_IF_ERROR(ParseNumber(entry.substr(dash + 1), item, &hi));
      if (hi < lo) {
        return Status::InvalidArgument(Cat("range '", entry, "' in '", item, "' runs backwards"));
      }
    }
    if (hi - lo >= kMaxHosts || static_cast<int64_t>(out->size()) + (hi - lo + 1) > kMaxHosts) {
      return TooMany(item);
    }
    const size_t width = dash == std::string_view::npos ? entry.size() : dash;
    for (int64_t v = lo; v <= hi; ++v) out->push_back(Padded(v, width));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return Status::Ok();
}

// Expands one item of the list, e.g. "rack[1-2]-node[01-02]".
Status ExpandItem(std::string_view item, std::vector<std::string>* hosts) {
  if (item.empty()) return Status::InvalidArgument("empty host name");
  std::vector<Piece> pieces;
  size_t i = 0;
  while (i < item.size()) {
    if (item[i] == ']') {
      return Status::InvalidArgument(Cat("']' without '[' in '", item, "'"));
    }
    if (item[i] == '[') {
      const size_t close = item.find(']', i);
      if (close == std::string_view::npos) {
        return Status::InvalidArgument(Cat("'[' without ']' in '", item, "'"));
      }
      const std::string_view group = item.substr(i + 1, close - i - 1);
      if (group.find('[') != std::string_view::npos) {
        return Status::InvalidArgument(Cat("nested '[' in '", item, "'"));
      }
      Piece piece;
      DMLPS_RETURN_IF_ERROR(ExpandGroup(group, item, &piece.choices));
      pieces.push_back(std::move(piece));
      i = close + 1;
      continue;
    }
    const size_t next = item.find_first_of("[]", i);
    const std::string_view text = item.substr(i, next == std::string_view::npos ? next : next - i);
    for (char c : text) {
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        return Status::InvalidArgument(Cat("white space in '", item, "'"));
      }
    }
    pieces.push_back(Piece{{std::string(text)}});
    i = next == std::string_view::npos ? item.size() : next;
  }
  int64_t count = 1;
  for (const Piece& p : pieces) {
    count *= static_cast<int64_t>(p.choices.size());
    if (count + static_cast<int64_t>(hosts->size()) > kMaxHosts) {
      return TooMany(item);
    }
  }
  // The leftmost group varies slowest, as Slurm lists them.
  std::vector<size_t> at(pieces.size(), 0);
  for (int64_t n = 0; n < count; ++n) {
    std::string host;
    for (size_t p = 0; p < pieces.size(); ++p) host += pieces[p].choices[at[p]];
    hosts->push_back(std::move(host));
    for (size_t p = pieces.size(); p-- > 0;) {
      if (++at[p] < pieces[p].choices.size()) break;
      at[p] = 0;
    }
  }
  return Status::Ok();
}

// Reads one of the launcher's integers: set, a whole number, in min..max.
Status ReadInt(const EnvLookup& env, const char* name, int64_t min, int64_t max, int64_t* value) {
  const char* text = env(name);
  const std::string_view s = text == nullptr ? std::string_view() : std::string_view(text);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    return Status::Config(Cat(name, "='", s, "' is not an integer"));
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
    return Status::Config(Cat("HOSTNAME='", host, "' is not JOBNAME", suffix,
                              ", the name of an indexed Job's pod of JOB_COMPLETION_INDEX=",
                              std::to_string(launcher->rank)));
  }
  launcher->server_host = Cat(std::string_view(host).substr(0, host.size() - suffix.size()), "-0.",
                              env("DMLPS_SERVICE"));
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> ExpandHostList(std::string_view list) {
  if (list.empty()) return Status::InvalidArgument("empty host list");
  std::vector<std::string> hosts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    if (i < list.size() && list[i] == '[') ++depth;
    if (i < list.size() && list[i] == ']') --depth;
    if (i == list.size() || (list[i] == ',' && depth == 0)) {
      Status s = ExpandItem(list.substr(start, i - start), &hosts);
      if (!s.ok()) return s.WithContext(Cat("host list '", list, "'"));
      start = i + 1;
    }
  }
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
    return Status::Config(
        Cat("DMLPS_LAUNCHER='", choice,
            "' is none of auto, none, torchrun, openmpi, pmi, slurm, kubernetes"));
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
    Result<std::vector<std::string>> hosts = ExpandHostList(list);
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
  if (host.empty()) host = d.launcher.hosts.empty() ? "127.0.0.1" : d.launcher.hosts.front();
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
  if (!launcher.hosts.empty()) {
    text += Cat(" on ", std::to_string(launcher.hosts.size()), " host");
    if (launcher.hosts.size() != 1) text += "s";
    text += Cat(" from ", launcher.hosts.front());
  }
  return text;
}

}  // namespace dmlps::launch
