#include "dmlps/base/status.h"

namespace dmlps {

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + message_);
}

std::string Status::ToString() const { return ok() ? "ok" : message_; }

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kDataLoss:
      return "data loss";
    case StatusCode::kIOError:
      return "I/O error";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kProtocol:
      return "protocol error";
    case StatusCode::kConfig:
      return "configuration error";
    case StatusCode::kInternal:
      return "internal error";
    case StatusCode::kRefused:
      return "refused";
  }
  return "unknown";
}

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return 0;
    case StatusCode::kInvalidArgument:
      return 64;  // EX_USAGE
    case StatusCode::kDataLoss:
      return 65;  // EX_DATAERR
    case StatusCode::kNotFound:
      return 66;  // EX_NOINPUT
    case StatusCode::kUnavailable:
    case StatusCode::kRefused:
      return 69;  // EX_UNAVAILABLE
    case StatusCode::kInternal:
      return 70;  // EX_SOFTWARE
    case StatusCode::kIOError:
      return 74;  // EX_IOERR
    case StatusCode::kProtocol:
      return 76;  // EX_PROTOCOL
    case StatusCode::kConfig:
      return 78;  // EX_CONFIG
  }
  return 70;
}

}  // namespace dmlps
