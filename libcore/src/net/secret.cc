#include "dmlps/net/secret.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "dmlps/base/file.h"

namespace dmlps::net {
namespace {

namespace fs = std::filesystem;

// A secret file is a few lines; anything much larger is not one.
constexpr std::streamsize kMaxSecretFileBytes = 4 << 10;

bool IsHex(std::string_view text) {
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

Result<std::string> ParseSecretText(std::string_view text, const std::string& path) {
  std::string secret;
  int64_t line_number = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_number;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;
    const std::string where = path + ":" + std::to_string(line_number);
    if (line.size() != kSecretLength || !IsHex(line)) {
      return Status::DataLoss(where + ": not a secret (" + std::to_string(kSecretLength) +
                              " hexadecimal characters; dmlps-keygen --secret FILE makes one)");
    }
    if (!secret.empty()) return Status::DataLoss(where + ": a second secret (one per file)");
    secret.assign(line);
  }
  if (secret.empty()) return Status::DataLoss(path + ": no secret in the file");
  return secret;
}

}  // namespace

Result<std::string> GenerateSecret() {
  unsigned char bytes[kSecretLength / 2];
  if (getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    return Status::Unavailable(std::string("cannot read random bytes: ") + std::strerror(errno));
  }
  std::string secret;
  for (const unsigned char b : bytes) {
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", b);
    secret += hex;
  }
  return secret;
}

Result<std::string> ReadSecretFile(const std::string& path) {
  DMLPS_RETURN_IF_ERROR(RequirePrivateFile(path, "a secret"));
  DMLPS_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path, kMaxSecretFileBytes, "secret file"));
  return ParseSecretText(text, path);
}

Status WriteSecretFile(const std::string& secret, const std::string& path, bool force) {
  std::error_code ec;
  if (!force && fs::exists(fs::symlink_status(path, ec))) {
    return Status::InvalidArgument(path + " exists (--force replaces it)");
  }
  const fs::path folder = fs::path(path).parent_path();
  if (!folder.empty() && !fs::create_directories(folder, ec) && ec) {
    return Status::IOError("cannot create folder " + folder.string() + ": " + ec.message());
  }
  const std::string text =
      "# dmlps job secret: give it to the server and to the processes trusted with a role\n"
      "# (--secret FILE or DMLPS_SECRET_FILE); keep it private (mode 0600).\n" +
      secret + "\n";
  return WriteFileAtomically(path, text, {.mode = 0600, .durable = true});
}

std::string SecretFilePath(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* path = std::getenv(kSecretFileVariable);
  return path == nullptr ? std::string() : std::string(path);
}

bool SecretMatches(std::string_view presented, std::string_view expected) {
  if (expected.empty() || presented.size() != expected.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned char>(presented[i] ^ expected[i]);
  }
  return diff == 0;
}

}  // namespace dmlps::net
