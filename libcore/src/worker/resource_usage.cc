#include "dmlps/worker/resource_usage.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>

namespace dmlps::worker {
namespace {

Result<std::string> Slurp(const char* path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(std::string(path) + " cannot be read");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

Result<ResourceSample> ParseProcStat(const std::string& stat, const std::string& statm,
                                     double ticks_per_second, int64_t page_bytes) {
  // The command name (field 2) is in parentheses and may hold spaces or
  // parentheses itself: fields are counted from the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || ticks_per_second <= 0) {
    return Status::DataLoss("/proc stat has no command name");
  }
  std::istringstream fields(stat.substr(close + 1));
  std::string field;
  double utime = 0, stime = 0;
  // After ')' come field 3 (state) onwards; utime and stime are fields 14 and 15.
  for (int index = 3; index <= 15; ++index) {
    if (!(fields >> field)) return Status::DataLoss("/proc stat is too short");
    if (index == 14 || index == 15) {
      try {
        (index == 14 ? utime : stime) = std::stod(field);
      } catch (const std::exception&) {
        return Status::DataLoss("/proc stat has a bad time field '" + field + "'");
      }
    }
  }
  std::istringstream pages(statm);
  int64_t size = 0, resident = 0;
  if (!(pages >> size >> resident)) return Status::DataLoss("/proc statm is malformed");
  ResourceSample sample;
  sample.cpu_seconds = (utime + stime) / ticks_per_second;
  sample.resident_bytes = resident * page_bytes;
  sample.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  return sample;
}

Result<ResourceSample> ReadSelfUsage() {
  DMLPS_ASSIGN_OR_RETURN(std::string stat, Slurp("/proc/self/stat"));
  DMLPS_ASSIGN_OR_RETURN(std::string statm, Slurp("/proc/self/statm"));
  return ParseProcStat(stat, statm, static_cast<double>(sysconf(_SC_CLK_TCK)),
                       static_cast<int64_t>(sysconf(_SC_PAGESIZE)));
}

double CpuCores(const ResourceSample& before, const ResourceSample& after) {
  const double wall = after.wall_seconds - before.wall_seconds;
  if (wall <= 0) return 0;
  return std::max(0.0, (after.cpu_seconds - before.cpu_seconds) / wall);
}

Result<double> ParseRunDelay(const std::string& schedstat) {
  std::istringstream fields(schedstat);
  std::string run, wait;
  if (!(fields >> run >> wait)) return Status::DataLoss("schedstat is too short");
  if (wait.empty() || wait.size() > 19 ||
      wait.find_first_not_of("0123456789") != std::string::npos) {
    return Status::DataLoss("schedstat has a bad wait field '" + wait.substr(0, 24) + "'");
  }
  return static_cast<double>(std::stoull(wait)) * 1e-9;
}

namespace {

// The calling thread's schedstat file, open while the thread lives (the
// path names the thread that opens it).
class SchedstatFile {
 public:
  SchedstatFile() : fd_(open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)) {}
  ~SchedstatFile() {
    if (fd_ >= 0) close(fd_);
  }
  SchedstatFile(const SchedstatFile&) = delete;
  SchedstatFile& operator=(const SchedstatFile&) = delete;
  int fd() const { return fd_; }

 private:
  const int fd_;
};

}  // namespace

Result<double> ReadThreadRunDelay() {
  // Read twice a step: the file stays open and is read from its start each
  // time, 2 us a read here against 12 us opening it each time.
  thread_local const SchedstatFile file;
  if (file.fd() < 0) return Status::NotFound("/proc/thread-self/schedstat cannot be read");
  char text[128];
  const ssize_t n = pread(file.fd(), text, sizeof(text) - 1, 0);
  if (n <= 0) return Status::DataLoss("/proc/thread-self/schedstat cannot be read");
  return ParseRunDelay(std::string(text, static_cast<size_t>(n)));
}

std::chrono::microseconds RunDelaySince(const Result<double>& before,
                                        std::chrono::microseconds most) {
  const Result<double> after = ReadThreadRunDelay();
  if (!before.ok() || !after.ok()) return std::chrono::microseconds(0);
  return std::clamp(std::chrono::microseconds(std::llround((*after - *before) * 1e6)),
                    std::chrono::microseconds(0), most);
}

}  // namespace dmlps::worker
