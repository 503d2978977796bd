// Atomic whole-file writes: the content lands whole, replaces what was
// there, and a failure leaves the old file and no temporary one behind.
#include "dmlps/base/file.h"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "test_util.h"

namespace dmlps {
namespace {

namespace fs = std::filesystem;
using testing::Slurp;
using testing::TempDir;

int64_t Entries(const std::string& dir) {
  return std::distance(fs::directory_iterator(dir), fs::directory_iterator());
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

TEST_CASE("file: an atomic write creates, then replaces, and leaves one file") {
  TempDir dir;
  const std::string path = dir.File("out.bin");
  REQUIRE(WriteFileAtomically(path, std::string("one\0two", 7)).ok());
  CHECK(Slurp(path) == std::string("one\0two", 7));
  REQUIRE(WriteFileAtomically(path, "three", {.mode = std::nullopt, .durable = true}).ok());
  CHECK(Slurp(path) == "three");
  REQUIRE(WriteFileAtomically(path, "").ok());
  CHECK(Slurp(path).empty());
  CHECK(Entries(dir.path()) == 1);
}

TEST_CASE("file: the mode is exact when given, else what the umask leaves") {
  TempDir dir;
  const mode_t old_mask = ::umask(022);
  REQUIRE(WriteFileAtomically(dir.File("plain"), "x").ok());
  CHECK(ModeOf(dir.File("plain")) == 0644);
  REQUIRE(WriteFileAtomically(dir.File("secret"), "x", {.mode = 0600}).ok());
  CHECK(ModeOf(dir.File("secret")) == 0600);
  ::umask(077);
  REQUIRE(WriteFileAtomically(dir.File("public"), "x", {.mode = 0644}).ok());
  CHECK(ModeOf(dir.File("public")) == 0644);
  ::umask(old_mask);
}

TEST_CASE("file: a failed write keeps the old file and leaves no temporary") {
  TempDir dir;
  // A folder that does not exist is an I/O error that names it.
  const Status missing = WriteFileAtomically(dir.File("missing/x"), "x");
  CHECK(missing.code() == StatusCode::kIOError);
  CHECK(missing.message().find(dir.File("missing")) != std::string::npos);
  // A target the rename cannot replace (a non-empty folder).
  REQUIRE(WriteFileAtomically(dir.File("keep"), "old").ok());
  fs::create_directory(dir.File("busy"));
  std::ofstream(dir.File("busy/f")) << "x";
  const Status busy =
      WriteFileAtomically(dir.File("busy"), "new", {.mode = std::nullopt, .durable = true});
  CHECK(busy.code() == StatusCode::kIOError);
  CHECK(busy.message().find("cannot rename") != std::string::npos);
  CHECK(Slurp(dir.File("keep")) == "old");
  CHECK(Entries(dir.path()) == 2);
}

TEST_CASE("file: a durable rename replaces the target; a failed one leaves both") {
  TempDir dir;
  REQUIRE(WriteFileAtomically(dir.File("a"), "new").ok());
  REQUIRE(WriteFileAtomically(dir.File("b"), "old").ok());
  REQUIRE(RenameDurably(dir.File("a"), dir.File("b")).ok());
  CHECK(Slurp(dir.File("b")) == "new");
  CHECK(Entries(dir.path()) == 1);
  const Status gone = RenameDurably(dir.File("a"), dir.File("b"));
  CHECK(gone.code() == StatusCode::kIOError);
  CHECK(gone.message().find("cannot rename " + dir.File("a")) != std::string::npos);
  CHECK(Slurp(dir.File("b")) == "new");
}

}  // namespace
}  // namespace dmlps
