#pragma once
// Status and Result<T>: the error model of every fedrt module (Pigweed-style
// codes). Device code only ever attaches static messages; host builds
// (FEDRT_HOST) may attach an owned detail string, e.g. naming a file and array.

#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

// constexpr only where Status is a literal type (device builds).
#if defined(FEDRT_HOST)
#define FEDRT_STATUS_CONSTEXPR
#else
#define FEDRT_STATUS_CONSTEXPR constexpr
#endif

#if defined(FEDRT_HOST)
#include <string>
#endif

namespace fedrt {

enum class StatusCode : uint8_t {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// Short upper-case name of a code ("INVALID_ARGUMENT").
inline const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kUnknown: return "UNKNOWN";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kAborted: return "ABORTED";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kDataLoss: return "DATA_LOSS";
    case StatusCode::kUnauthenticated: return "UNAUTHENTICATED";
  }
  return "UNKNOWN";
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  FEDRT_STATUS_CONSTEXPR Status(StatusCode code, const char* message) : code_(code), message_(message) {}
#if defined(FEDRT_HOST)
  Status(StatusCode code, std::string detail) : code_(code), message_(""), detail_(std::move(detail)) {}
#endif

  static FEDRT_STATUS_CONSTEXPR Status Ok() { return Status(); }
  static FEDRT_STATUS_CONSTEXPR Status InvalidArgument(const char* m) { return {StatusCode::kInvalidArgument, m}; }
  static FEDRT_STATUS_CONSTEXPR Status OutOfRange(const char* m) { return {StatusCode::kOutOfRange, m}; }
  static FEDRT_STATUS_CONSTEXPR Status ResourceExhausted(const char* m) { return {StatusCode::kResourceExhausted, m}; }
  static FEDRT_STATUS_CONSTEXPR Status FailedPrecondition(const char* m) { return {StatusCode::kFailedPrecondition, m}; }
  static FEDRT_STATUS_CONSTEXPR Status DataLoss(const char* m) { return {StatusCode::kDataLoss, m}; }
  static FEDRT_STATUS_CONSTEXPR Status NotFound(const char* m) { return {StatusCode::kNotFound, m}; }
  static FEDRT_STATUS_CONSTEXPR Status Internal(const char* m) { return {StatusCode::kInternal, m}; }
  static FEDRT_STATUS_CONSTEXPR Status Unimplemented(const char* m) { return {StatusCode::kUnimplemented, m}; }
#if defined(FEDRT_HOST)
  // Host only: kInvalidArgument with a message built at run time (file, line, value).
  static Status Invalid(std::string detail) { return Status(StatusCode::kInvalidArgument, std::move(detail)); }
#endif

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  // Human-readable reason; never null.
  const char* message() const {
#if defined(FEDRT_HOST)
    if (!detail_.empty()) return detail_.c_str();
#endif
    return message_ ? message_ : "";
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  const char* message_ = "";
#if defined(FEDRT_HOST)
  std::string detail_;
#endif
};

// Result<T>: either a value or a non-OK Status. No exceptions, no heap.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(const T& value) : has_value_(true) { new (&storage_) T(value); }       // NOLINT
  Result(T&& value) : has_value_(true) { new (&storage_) T(std::move(value)); }  // NOLINT
  Result(Status status) : status_(std::move(status)), has_value_(false) {       // NOLINT
    if (status_.ok()) status_ = Status::Internal("Result constructed from OK status without a value");
  }
  Result(const Result& o) : status_(o.status_), has_value_(o.has_value_) {
    if (has_value_) new (&storage_) T(*o);
  }
  Result(Result&& o) noexcept : status_(std::move(o.status_)), has_value_(o.has_value_) {
    if (has_value_) new (&storage_) T(std::move(*o));
  }
  Result& operator=(Result o) = delete;
  ~Result() {
    if (has_value_) value_ptr()->~T();
  }

  bool ok() const { return has_value_; }
  const Status& status() const { return status_; }
  T& operator*() { return *value_ptr(); }
  const T& operator*() const { return *value_ptr(); }
  T* operator->() { return value_ptr(); }
  const T* operator->() const { return value_ptr(); }
  T&& take() { return std::move(*value_ptr()); }

 private:
  T* value_ptr() { return std::launder(reinterpret_cast<T*>(&storage_)); }
  const T* value_ptr() const { return std::launder(reinterpret_cast<const T*>(&storage_)); }

  Status status_;
  bool has_value_;
  alignas(T) unsigned char storage_[sizeof(T)];
};

}  // namespace fedrt

#define FEDRT_CONCAT_INNER(a, b) a##b
#define FEDRT_CONCAT(a, b) FEDRT_CONCAT_INNER(a, b)

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define FEDRT_TRY(expr)                          \
  do {                                           \
    auto fedrt_try_status_ = (expr);             \
    if (!fedrt_try_status_.ok()) return fedrt_try_status_; \
  } while (0)

// `lhs = *result` when `rexpr` holds a value; otherwise returns its Status.
#define FEDRT_ASSIGN_OR_RETURN(lhs, rexpr) \
  FEDRT_ASSIGN_OR_RETURN_IMPL(FEDRT_CONCAT(fedrt_result_, __LINE__), lhs, rexpr)
#define FEDRT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                \
  if (!tmp.ok()) return tmp.status();                \
  lhs = tmp.take()
