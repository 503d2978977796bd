#include "dmlps/net/curve.h"

#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <vector>

#include "dmlps/base/file.h"

namespace dmlps::net {
namespace {

namespace fs = std::filesystem;

// Key files are a few lines; anything much larger is not one.
constexpr std::streamsize kMaxKeyFileBytes = 64 << 10;

std::string_view Trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

bool CurveAvailable() { return zmq_has("curve") != 0; }

Status RequireCurve() {
  if (CurveAvailable()) return Status::Ok();
  return Status::Unavailable(
      "this libzmq was built without CURVE (zmq_has(\"curve\") is false); install a libzmq "
      "built with libsodium");
}

Result<CurveKeyPair> GenerateKeyPair() {
  DMLPS_RETURN_IF_ERROR(RequireCurve());
  char public_key[kZ85KeyLength + 1] = {};
  char secret_key[kZ85KeyLength + 1] = {};
  if (zmq_curve_keypair(public_key, secret_key) != 0) {
    return Status::Unavailable(std::string("cannot generate a key pair: ") +
                               zmq_strerror(zmq_errno()));
  }
  return CurveKeyPair{public_key, secret_key};
}

bool IsZ85Key(std::string_view text) {
  if (text.size() != kZ85KeyLength) return false;
  static constexpr std::string_view kAlphabet =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
  if (!std::all_of(text.begin(), text.end(),
                   [](char c) { return kAlphabet.find(c) != std::string_view::npos; })) {
    return false;
  }
  // Every group of five characters must also stand for a 32-bit number.
  const std::string z85(text);
  uint8_t bytes[32];
  return zmq_z85_decode(bytes, z85.c_str()) != nullptr;
}

Result<std::string> ParseKeyText(std::string_view text, const std::string& origin) {
  std::string key;
  int64_t line_number = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view line = Trim(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_number;
    if (line.empty() || line.front() == '#') continue;
    const std::string where = origin + ":" + std::to_string(line_number);
    if (!IsZ85Key(line)) {
      return Status::DataLoss(where +
                              ": not a key (a key is 40 Z85 characters on a line of its "
                              "own; comments start with #)");
    }
    if (!key.empty()) return Status::DataLoss(where + ": a second key (one key per file)");
    key.assign(line);
  }
  if (key.empty()) return Status::DataLoss(origin + ": no key in the file");
  return key;
}

Result<CurveKeyPair> ReadSecretKeyFile(const std::string& path) {
  DMLPS_RETURN_IF_ERROR(RequirePrivateFile(path, "a secret key"));
  DMLPS_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path, kMaxKeyFileBytes, "key file"));
  DMLPS_ASSIGN_OR_RETURN(std::string secret, ParseKeyText(text, path));
  DMLPS_RETURN_IF_ERROR(RequireCurve());
  char public_key[kZ85KeyLength + 1] = {};
  if (zmq_curve_public(public_key, secret.c_str()) != 0) {
    return Status::DataLoss(path + ": not a CURVE secret key");
  }
  return CurveKeyPair{public_key, std::move(secret)};
}

Result<std::string> ReadPublicKeyFile(const std::string& path) {
  DMLPS_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path, kMaxKeyFileBytes, "key file"));
  return ParseKeyText(text, path);
}

Result<std::string> ReadPublicKey(const std::string& key_or_file) {
  std::error_code ec;
  if (IsZ85Key(key_or_file) && !fs::exists(key_or_file, ec)) return key_or_file;
  return ReadPublicKeyFile(key_or_file);
}

Result<std::set<std::string>> ReadAllowedKeys(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return Status::NotFound(dir + ": no such folder");
  if (!fs::is_directory(dir, ec)) return Status::DataLoss(dir + ": not a folder of public keys");
  std::vector<std::string> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".pub" && entry.is_regular_file(ec)) {
      files.push_back(entry.path().string());
    }
  }
  if (ec) return Status::IOError(dir + ": cannot list: " + ec.message());
  std::sort(files.begin(), files.end());
  std::set<std::string> keys;
  for (const std::string& file : files) {
    DMLPS_ASSIGN_OR_RETURN(std::string key, ReadPublicKeyFile(file));
    keys.insert(std::move(key));
  }
  if (keys.empty()) {
    return Status::DataLoss(dir + ": no worker public keys (*.pub files) to admit");
  }
  return keys;
}

namespace {

// InvalidArgument when NAME.key or NAME.pub exists, naming the first.
Status RequireNoKeyFiles(const std::string& name) {
  std::error_code ec;
  for (const std::string& path : {name + ".key", name + ".pub"}) {
    if (fs::exists(fs::symlink_status(path, ec))) {
      return Status::InvalidArgument(path + " exists (--force replaces it)");
    }
  }
  return Status::Ok();
}

}  // namespace

std::vector<Status> CheckKeyPairTargets(const std::vector<std::string>& names, bool force) {
  std::vector<Status> problems;
  std::set<std::string> seen;
  for (const std::string& name : names) {
    if (!seen.insert(name).second) {
      problems.push_back(Status::InvalidArgument("'" + name + "' is named twice"));
      continue;
    }
    if (force) continue;
    if (Status clear = RequireNoKeyFiles(name); !clear.ok()) problems.push_back(std::move(clear));
  }
  return problems;
}

Status WriteKeyPair(const CurveKeyPair& pair, const std::string& name, bool force) {
  const std::string secret_path = name + ".key";
  const std::string public_path = name + ".pub";
  if (!force) DMLPS_RETURN_IF_ERROR(RequireNoKeyFiles(name));
  const fs::path folder = fs::path(secret_path).parent_path();
  std::error_code ec;
  if (!folder.empty() && !fs::create_directories(folder, ec) && ec) {
    return Status::IOError("cannot create folder " + folder.string() + ": " + ec.message());
  }
  std::string secret_text = "# dmlps CURVE secret key: keep it private (mode 0600).\n";
  secret_text += "# Its public key: " + pair.public_key + "\n" + pair.secret_key + "\n";
  // Durable, and the secret never readable by others, not even half written.
  DMLPS_RETURN_IF_ERROR(
      WriteFileAtomically(secret_path, secret_text, {.mode = 0600, .durable = true}));
  std::string public_text = "# dmlps CURVE public key\n";
  public_text += pair.public_key + "\n";
  return WriteFileAtomically(public_path, public_text, {.mode = 0644, .durable = true});
}

}  // namespace dmlps::net
