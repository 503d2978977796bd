#include "dmlps/base/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace dmlps {
namespace {

std::string Errno() { return std::strerror(errno); }

bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Creates a new file ".NAME.<unique>" in `dir` with `mode` (less the umask)
// and returns its descriptor, or -1 with errno set. The name is unique
// across the threads and processes that write beside the same target.
int CreateTemporary(const std::filesystem::path& dir, const std::string& name, mode_t mode,
                    std::string* tmp) {
  static std::atomic<uint64_t> counter{0};
  const auto now =
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  for (int attempt = 0; attempt < 100; ++attempt) {
    const uint64_t n = counter.fetch_add(1, std::memory_order_relaxed);
    char suffix[64];
    std::snprintf(suffix, sizeof(suffix), ".%ld.%llx.%llu", static_cast<long>(::getpid()),
                  static_cast<unsigned long long>(now), static_cast<unsigned long long>(n));
    *tmp = (dir / ("." + name + suffix)).string();
    const int fd = ::open(tmp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

// Makes a finished rename durable: it is part of the folder.
Status SyncFolder(const std::filesystem::path& dir) {
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return Status::IOError("cannot open " + dir.string() + ": " + Errno());
  const bool synced = ::fsync(dir_fd) == 0;
  const std::string why = synced ? "" : Errno();
  ::close(dir_fd);
  if (!synced) return Status::IOError("cannot sync " + dir.string() + ": " + why);
  return Status::Ok();
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view bytes,
                           const AtomicWriteOptions& options) {
  const std::filesystem::path target(path);
  std::filesystem::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  std::string tmp;
  const int fd =
      CreateTemporary(dir, target.filename().string(), options.mode.value_or(0666), &tmp);
  if (fd < 0) {
    return Status::IOError("cannot create a temporary file in " + dir.string() + ": " + Errno());
  }
  // Unlinks the temporary file and says what failed, with errno's reason.
  auto fail = [&](const std::string& what) {
    const std::string why = Errno();
    ::unlink(tmp.c_str());
    return Status::IOError(what + ": " + why);
  };
  auto fail_open = [&](const std::string& what) {
    Status s = fail(what);
    ::close(fd);
    return s;
  };
  if (options.mode.has_value() && ::fchmod(fd, *options.mode) != 0) {
    return fail_open("cannot set the mode of " + tmp);
  }
  if (!WriteAll(fd, bytes)) return fail_open("cannot write " + tmp);
  if (options.durable && ::fsync(fd) != 0) return fail_open("cannot sync " + tmp);
  if (::close(fd) != 0) return fail("cannot close " + tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("cannot rename " + tmp + " to " + path);
  return options.durable ? SyncFolder(dir) : Status::Ok();
}

Status RenameDurably(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return Status::IOError("cannot rename " + from + " to " + to + ": " + Errno());
  }
  std::filesystem::path dir = std::filesystem::path(to).parent_path();
  if (dir.empty()) dir = ".";
  return SyncFolder(dir);
}

Status RequirePrivateFile(const std::string& path, const std::string& what) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) == 0) {
    return Status::Ok();
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return Status::DataLoss(path + ": " + what + " readable by others (mode " + mode +
                          "); make it private: chmod 600 " + path);
}

Result<std::string> ReadSmallFile(const std::string& path, int64_t max_bytes,
                                  const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::NotFound(path + ": no such file");
  if (std::filesystem::is_directory(path, ec)) {
    return Status::DataLoss(path + ": is a folder, not a " + what);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError(path + ": cannot open: " + std::strerror(errno));
  std::string text(static_cast<size_t>(max_bytes) + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(max_bytes) + 1);
  if (in.bad()) return Status::IOError(path + ": cannot read");
  text.resize(static_cast<size_t>(in.gcount()));
  if (static_cast<int64_t>(text.size()) > max_bytes) {
    return Status::DataLoss(path + ": too large to be a " + what);
  }
  return text;
}

}  // namespace dmlps
