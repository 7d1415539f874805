// Status and StatusOr<T>: how trnmx reports bad input without undefined
// behaviour (architecture page, principle 6).
//
// A function that can fail on its input returns a Status (or StatusOr<T>)
// whose message names the offending argument, index or token. Nothing is
// written to an output when the status is not ok.
//
//   trnmx::StatusOr<trnmx::Format> f = trnmx::ParseFormatName("e4m3");
//   if (!f.ok()) { std::cerr << f.status().ToString() << "\n"; return 1; }
//   trnmx::Format format = *f;
//
// Accessing the value of an error StatusOr (value(), operator*, operator->)
// is a programming error. With C++ exceptions on, it throws
// trnmx::StatusError carrying the status; compiled with -fno-exceptions (the
// choice is made in the caller's translation unit, as Abseil does), it
// prints "trnmx: StatusOr value accessed on an error: CODE: message" to
// stderr and calls std::abort(). Check ok() first to handle errors.
#ifndef TRNMX_STATUS_H_
#define TRNMX_STATUS_H_

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "trnmx/export.h"

namespace trnmx {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // Malformed input: bad name, shape, token, policy.
  kOutOfRange,          // A value or code outside what the format allows.
  kFailedPrecondition,  // The call is valid but not in this state or combination.
  kResourceExhausted,   // A buffer or budget is too small.
  kDataLoss,            // A truncated or corrupt file.
  kInternal,            // A broken invariant of trnmx itself.
};

TRNMX_API std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] TRNMX_API Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message", or "OK".
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgumentError(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status OutOfRangeError(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status FailedPreconditionError(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status ResourceExhaustedError(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status DataLossError(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status InternalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// Thrown by StatusOr<T>::value() on an error status (with exceptions on).
class TRNMX_API StatusError : public std::runtime_error {
 public:
  explicit StatusError(Status status)
      : std::runtime_error(status.ToString()), status_(std::move(status)) {}
  const Status& status() const { return status_; }

 private:
  Status status_;
};

namespace internal {
// Prints the message described at the top of this file and aborts. Defined
// in the library, so that it works whatever the caller's exception setting.
[[noreturn]] TRNMX_API void AbortOnErrorValueAccess(const Status& status) noexcept;
}  // namespace internal

// Either a T or an error Status.
template <class T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : data_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : data_(std::move(status)) {  // NOLINT
    if (std::get<Status>(data_).ok()) {
      data_ = Status(StatusCode::kInternal, "StatusOr constructed from an OK status");
    }
  }

  bool ok() const { return std::holds_alternative<T>(data_); }
  Status status() const { return ok() ? Status() : std::get<Status>(data_); }

  const T& value() const& {
    if (!ok()) FailValueAccess();
    return std::get<T>(data_);
  }
  T& value() & {
    if (!ok()) FailValueAccess();
    return std::get<T>(data_);
  }
  T&& value() && {
    if (!ok()) FailValueAccess();
    return std::get<T>(std::move(data_));
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }

 private:
  [[noreturn]] void FailValueAccess() const {
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(_CPPUNWIND)
    throw StatusError(std::get<Status>(data_));
#else
    internal::AbortOnErrorValueAccess(std::get<Status>(data_));
#endif
  }

  std::variant<T, Status> data_;
};

}  // namespace trnmx

#endif  // TRNMX_STATUS_H_
