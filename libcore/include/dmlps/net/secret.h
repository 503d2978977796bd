// The job secret: what the operator gives the processes it trusts with a
// role (the evaluator, the worker that announces an external model, the
// server shards), so that no peer takes a role by coming first.
//
// A secret file is text: 64 hexadecimal characters (32 random bytes) on a
// line of its own; blank lines and lines starting with '#' are ignored. It
// must be readable by its owner only. dmlps-keygen --secret FILE writes one.
// Every program that takes --secret FILE reads DMLPS_SECRET_FILE when the
// flag is not given. The secret travels in the peer's Hello: under CURVE it
// is encrypted; without CURVE, whoever can read the traffic can read it.
#ifndef DMLPS_NET_SECRET_H_
#define DMLPS_NET_SECRET_H_

#include <string>
#include <string_view>

#include "dmlps/base/status.h"

namespace dmlps::net {

// Characters in a secret: 32 bytes in hexadecimal.
inline constexpr size_t kSecretLength = 64;
// The environment variable naming the secret file when --secret is not given.
inline constexpr char kSecretFileVariable[] = "DMLPS_SECRET_FILE";

// A fresh secret from the kernel's random source. Unavailable when it
// cannot be read.
Result<std::string> GenerateSecret();

// Reads a secret file. NotFound when missing; DataLoss when malformed or
// readable by anyone but its owner (mode wider than 0600); IOError when
// unreadable.
Result<std::string> ReadSecretFile(const std::string& path);

// Writes `secret` to `path` (mode 0600, durable, creating missing parent
// folders). InvalidArgument when the file exists and not `force`.
Status WriteSecretFile(const std::string& secret, const std::string& path, bool force);

// The secret file `flag` names, else the one DMLPS_SECRET_FILE names; empty
// when neither names one.
std::string SecretFilePath(const std::string& flag);

// Whether the secret a peer presented equals `expected`, in time that does
// not depend on where they differ. Never true for an empty `expected`.
bool SecretMatches(std::string_view presented, std::string_view expected);

}  // namespace dmlps::net

#endif  // DMLPS_NET_SECRET_H_
