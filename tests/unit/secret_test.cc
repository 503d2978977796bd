// The job secret (docs/security.md): written private, read back only from
// a private file holding exactly one, compared whole.
#include "dmlps/net/secret.h"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "test_util.h"

namespace dmlps::net {
namespace {

using testing::TempDir;

TEST_CASE("a job secret is written private and read back; others are refused") {
  TempDir dir;
  const std::string path = dir.File("job.secret");
  Result<std::string> secret = GenerateSecret();
  REQUIRE(secret.ok());
  CHECK(secret->size() == kSecretLength);
  CHECK(*secret != GenerateSecret().value());
  REQUIRE(WriteSecretFile(*secret, path, false).ok());
  CHECK(WriteSecretFile(*secret, path, false).code() == StatusCode::kInvalidArgument);
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(ReadSecretFile(path).value() == *secret);

  REQUIRE(chmod(path.c_str(), 0644) == 0);
  Result<std::string> open = ReadSecretFile(path);
  CHECK(open.status().code() == StatusCode::kDataLoss);
  CHECK(open.status().message().find("mode 0644") != std::string::npos);

  const std::string bad = dir.File("bad.secret");
  for (const std::string& text : {std::string("not hex at all\n"), std::string("abcd\n"),
                                  *secret + "\n" + *secret + "\n", std::string("# only\n")}) {
    std::ofstream(bad) << text;
    REQUIRE(chmod(bad.c_str(), 0600) == 0);
    CAPTURE(text);
    CHECK(ReadSecretFile(bad).status().code() == StatusCode::kDataLoss);
  }
  CHECK(ReadSecretFile(dir.File("missing")).status().code() == StatusCode::kNotFound);
}

TEST_CASE("a presented secret matches only the whole expected one, never an empty one") {
  const std::string expected(kSecretLength, 'a');
  CHECK(SecretMatches(expected, expected));
  CHECK_FALSE(SecretMatches(expected.substr(1), expected));
  std::string off = expected;
  off.back() = 'b';
  CHECK_FALSE(SecretMatches(off, expected));
  CHECK_FALSE(SecretMatches("", ""));
  CHECK_FALSE(SecretMatches(expected, ""));
}

}  // namespace
}  // namespace dmlps::net
