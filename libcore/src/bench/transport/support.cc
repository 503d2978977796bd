#include "bench/transport/support.h"

#include <pthread.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace dmlps::bench {

void NameThread(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

Status FromZmq(const zmq::error_t& e, const std::string& what) {
  return Status::IOError(what + ": " + e.what());
}

Result<TempDir> TempDir::Make() {
  const char* base = std::getenv("TMPDIR");
  std::string root = base != nullptr && *base != '\0' ? base : "/tmp";
  // ipc socket paths must stay short (about 100 bytes).
  if (root.size() > 60) root = "/tmp";
  std::string pattern = root + "/dmlps-bench.XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    return Status::IOError("cannot make a folder in " + root + ": " + std::strerror(errno));
  }
  TempDir dir;
  dir.path_ = pattern;
  return dir;
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace dmlps::bench
