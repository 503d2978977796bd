// Whole-file writes that a concurrent reader can never see half done, and
// reads of small files that a hostile one cannot make large.
#ifndef DMLPS_BASE_FILE_H_
#define DMLPS_BASE_FILE_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "dmlps/base/status.h"

namespace dmlps {

struct AtomicWriteOptions {
  // The file's permission bits, set exactly (the umask does not apply);
  // unset: 0666 less the umask, as for any new file. Set before a byte is
  // written, so a secret is never readable by others.
  std::optional<mode_t> mode;
  // Syncs the file, then its folder after the rename, so that the new
  // content survives a crash once this returns: for files a restart reads
  // (checkpoints, keys), not for ones a run only hands to another process.
  bool durable = false;
};

// Replaces `path` with a file holding `bytes`: they go to a new file beside
// it (same folder, so one file system) that is then renamed over it, so any
// reader sees the old file or the new one whole. On failure `path` is as it
// was, the temporary file is gone, and the IOError says which step failed
// and why (a folder that does not exist among them).
Status WriteFileAtomically(const std::string& path, std::string_view bytes,
                           const AtomicWriteOptions& options = {});

// Renames `from` over `to` (one file system) and syncs `to`'s folder, so that
// the rename survives a crash once this returns. IOError on failure, with
// the files as they were when the rename failed.
Status RenameDurably(const std::string& from, const std::string& to);

// DataLoss when `path`, a regular file holding `what` ("a secret key"),
// may be read by anyone but its owner (a mode wider than 0600), naming the
// chmod that fixes it; Ok otherwise (a missing file is the reader's to say).
Status RequirePrivateFile(const std::string& path, const std::string& what);

// The whole of `path`, a small file of the kind `what` names ("key file"):
// NotFound when missing; DataLoss when a folder or larger than `max_bytes`
// (never read past them); IOError when unreadable.
Result<std::string> ReadSmallFile(const std::string& path, int64_t max_bytes,
                                  const std::string& what);

}  // namespace dmlps

#endif  // DMLPS_BASE_FILE_H_
