// Errors as values: every libcore function that can fail returns a Status or
// a Result<T>; no exception escapes the library.
#ifndef DMLPS_BASE_STATUS_H_
#define DMLPS_BASE_STATUS_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace dmlps {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // a bad flag or argument from the user
  kNotFound,         // a file or peer that does not exist
  kDataLoss,         // a file or message whose content is corrupt
  kIOError,          // reading or writing failed
  kUnavailable,      // a peer did not answer in time
  kProtocol,         // a peer spoke something other than our protocol
  kConfig,           // settings that contradict each other or the peer's
  kInternal,         // a bug: an invariant of ours did not hold
  // A peer that answered and said no: to our role, rank, layout or secret.
  // Exits as kUnavailable does (69): to the caller, the service is not there.
  kRefused,
};

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
  static Status IOError(std::string m) { return {StatusCode::kIOError, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status Protocol(std::string m) { return {StatusCode::kProtocol, std::move(m)}; }
  static Status Config(std::string m) { return {StatusCode::kConfig, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status Refused(std::string m) { return {StatusCode::kRefused, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns the same status with "context: " put before its message.
  Status WithContext(std::string_view context) const;
  // "ok", or the message alone: what a person reads after "error: ".
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// The exit code from sysexits.h that a binary returns for this status.
int ExitCodeFor(const Status& status);
std::string_view StatusCodeName(StatusCode code);

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design
  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace dmlps

#define DMLPS_CONCAT_INNER(a, b) a##b
#define DMLPS_CONCAT(a, b) DMLPS_CONCAT_INNER(a, b)

// Returns from the enclosing function when `expr` yields a non-ok Status.
#define DMLPS_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::dmlps::Status dmlps_status_ = (expr);        \
    if (!dmlps_status_.ok()) return dmlps_status_; \
  } while (0)

// `lhs = value of result-expr`, or return its Status.
#define DMLPS_ASSIGN_OR_RETURN(lhs, expr) \
  DMLPS_ASSIGN_OR_RETURN_IMPL(DMLPS_CONCAT(dmlps_result_, __LINE__), lhs, expr)
#define DMLPS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

#endif  // DMLPS_BASE_STATUS_H_
