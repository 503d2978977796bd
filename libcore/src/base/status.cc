#include "dmlps/base/status.h"

#include <array>
#include <cstddef>

namespace dmlps {
namespace {

// Each code's name and the sysexits code a program that fails with it
// exits with, one row a code, in the enum's order.
struct CodeRow {
  StatusCode code;
  std::string_view name;
  int exit_code;
};

constexpr std::array kCodes = {
    CodeRow{StatusCode::kOk, "ok", 0},
    CodeRow{StatusCode::kInvalidArgument, "invalid argument", 64},  // EX_USAGE
    CodeRow{StatusCode::kNotFound, "not found", 66},                // EX_NOINPUT
    CodeRow{StatusCode::kDataLoss, "data loss", 65},                // EX_DATAERR
    CodeRow{StatusCode::kIOError, "I/O error", 74},                 // EX_IOERR
    CodeRow{StatusCode::kUnavailable, "unavailable", 69},           // EX_UNAVAILABLE
    CodeRow{StatusCode::kProtocol, "protocol error", 76},           // EX_PROTOCOL
    CodeRow{StatusCode::kConfig, "configuration error", 78},        // EX_CONFIG
    CodeRow{StatusCode::kInternal, "internal error", 70},           // EX_SOFTWARE
    CodeRow{StatusCode::kRefused, "refused", 69},                   // EX_UNAVAILABLE
};

constexpr bool RowsInOrder() {
  for (size_t i = 0; i < kCodes.size(); ++i) {
    if (static_cast<size_t>(kCodes[i].code) != i) return false;
  }
  return kCodes.size() == static_cast<size_t>(StatusCode::kRefused) + 1;
}
static_assert(RowsInOrder(), "kCodes holds one row per StatusCode, in the enum's order");

// The row of `code`; null for a value outside the enum.
const CodeRow* RowOf(StatusCode code) {
  const auto i = static_cast<size_t>(code);
  return i < kCodes.size() ? &kCodes[i] : nullptr;
}

}  // namespace

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + message_);
}

std::string Status::ToString() const { return ok() ? "ok" : message_; }

std::string_view StatusCodeName(StatusCode code) {
  const CodeRow* row = RowOf(code);
  return row != nullptr ? row->name : "unknown";
}

int ExitCodeFor(const Status& status) {
  const CodeRow* row = RowOf(status.code());
  return row != nullptr ? row->exit_code : 70;  // EX_SOFTWARE
}

}  // namespace dmlps
