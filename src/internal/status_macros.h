// Internal: early-return helpers for Status and StatusOr (as Abseil's
// RETURN_IF_ERROR / ASSIGN_OR_RETURN), so that a chain of checks reads as a
// list instead of `if (Status s = ...; !s.ok()) return s;` repeated.
//
//   Status Validate(const MxTensorView& v) {
//     TRNMX_RETURN_IF_ERROR(CheckMxView(v));
//     TRNMX_ASSIGN_OR_RETURN(MxTensor t, MxTensor::Create(v.shape));
//     ...
//   }
#ifndef TRNMX_SRC_INTERNAL_STATUS_MACROS_H_
#define TRNMX_SRC_INTERNAL_STATUS_MACROS_H_

#include <utility>

#include "trnmx/status.h"

// Evaluates `expr` (a Status) once and returns it from the enclosing function
// when it is not OK.
#define TRNMX_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::trnmx::Status trnmx_status_ = (expr);        \
    if (!trnmx_status_.ok()) return trnmx_status_; \
  } while (false)

#define TRNMX_STATUS_CONCAT_INNER_(a, b) a##b
#define TRNMX_STATUS_CONCAT_(a, b) TRNMX_STATUS_CONCAT_INNER_(a, b)

// Evaluates `expr` (a StatusOr<T>) once; on error returns its Status from
// the enclosing function, else moves the value into `lhs` (a declaration such
// as `auto x` or an existing variable).
#define TRNMX_ASSIGN_OR_RETURN(lhs, expr) \
  TRNMX_ASSIGN_OR_RETURN_IMPL_(TRNMX_STATUS_CONCAT_(trnmx_statusor_, __LINE__), lhs, expr)

#define TRNMX_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                 \
  if (!statusor.ok()) return statusor.status();           \
  lhs = std::move(statusor).value()

#endif  // TRNMX_SRC_INTERNAL_STATUS_MACROS_H_
