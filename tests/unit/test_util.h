// Scratch folders and file contents, for the tests that touch the disk.
#ifndef DMLPS_TESTS_UNIT_TEST_UTIL_H_
#define DMLPS_TESTS_UNIT_TEST_UTIL_H_

#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace dmlps::testing {

// A fresh folder under the temporary directory, removed with everything in
// it when the test leaves its scope, so tests never see each other's files.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "dmlps-test.XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

  const std::string& path() const { return path_; }
  // The path of `name` inside the folder.
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The whole content of the file at `path`; empty when it cannot be read.
inline std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace dmlps::testing

#endif  // DMLPS_TESTS_UNIT_TEST_UTIL_H_
