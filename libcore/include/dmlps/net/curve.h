// CURVE keys for authenticated, encrypted clusters: reading and writing key
// files, and the folder of worker keys a server admits.
//
// A key file is text: the key as 40 Z85 characters on a line of its own;
// blank lines and lines whose first non-blank character is '#' are ignored,
// and anything else is an error. NAME.key holds a secret key (the public key
// is derived from it) and must be readable by its owner only; NAME.pub holds
// a public key. dmlps-keygen writes both.
#ifndef DMLPS_NET_CURVE_H_
#define DMLPS_NET_CURVE_H_

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"

namespace dmlps::net {

// A key in Z85 text, 40 characters for 32 bytes.
inline constexpr size_t kZ85KeyLength = 40;

struct CurveKeyPair {
  std::string public_key;  // Z85
  std::string secret_key;  // Z85
};

// Whether this libzmq was built with CURVE (libsodium).
bool CurveAvailable();

// Unavailable when this libzmq has no CURVE.
Status RequireCurve();

// A fresh key pair. Unavailable without CURVE.
Result<CurveKeyPair> GenerateKeyPair();

// Whether `text` is exactly a Z85 key (40 characters of the Z85 alphabet).
bool IsZ85Key(std::string_view text);

// The one key in the text of a key file (format above). DataLoss naming
// `origin` and the line when there is no key, more than one, or a line that
// is not a key.
Result<std::string> ParseKeyText(std::string_view text, const std::string& origin);

// Reads a secret key file and derives its public key. NotFound when missing,
// DataLoss when malformed or readable by anyone but its owner (mode wider
// than 0600), IOError when unreadable.
Result<CurveKeyPair> ReadSecretKeyFile(const std::string& path);

// Reads a public key file. NotFound when missing, DataLoss when malformed.
Result<std::string> ReadPublicKeyFile(const std::string& path);

// A public key given inline (40 Z85 characters) or as the name of a key
// file: an existing file wins.
Result<std::string> ReadPublicKey(const std::string& key_or_file);

// The public keys in every *.pub file of `dir` (other files are ignored).
// NotFound when the folder is missing, DataLoss when a file is malformed or
// the folder holds no key at all: a server never starts admitting nobody
// by mistake, nor anybody.
Result<std::set<std::string>> ReadAllowedKeys(const std::string& dir);

// Why the key pairs `names` cannot all be written: InvalidArgument for each
// NAME.key or NAME.pub that exists (unless `force`) and each name given
// twice. Empty when all can be: checked before anything is written, so a
// refused run leaves nothing behind and can simply be run again.
std::vector<Status> CheckKeyPairTargets(const std::vector<std::string>& names, bool force);

// Writes NAME.key (mode 0600) and NAME.pub, creating NAME's missing parent
// folders. Without `force`, InvalidArgument when either exists; IOError when
// a folder or file cannot be written.
Status WriteKeyPair(const CurveKeyPair& pair, const std::string& name, bool force);

}  // namespace dmlps::net

#endif  // DMLPS_NET_CURVE_H_
