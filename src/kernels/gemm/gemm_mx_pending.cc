// TEMPORARY placeholders for the MX x MX part of GEMM, which is written on
// another branch (ref::MxDot and ref::MxElement in
// src/reference/gemm_mx_ref.cc, internal::GemmMxMx in
// src/kernels/gemm/gemm_mx.cc). Delete this file when those are merged
// (and move the two ref:: functions' file to the trnmx_reference target).
// Until then MX x MX GEMM returns FailedPrecondition and the references
// return NaN. The file is compiled into both trnmx (the kernel) and
// trnmx_reference (TRNMX_REFERENCE_LIBRARY defined: the two ref:: functions).
#include <limits>

#include "kernels/gemm/gemm_internal.h"
#include "reference/gemm_ref.h"

namespace trnmx {
#ifndef TRNMX_REFERENCE_LIBRARY
namespace internal {

Status GemmMxMx(const GemmOperand&, const GemmOperand&, const GemmOutput&, const GemmParams&,
                Executor&) {
  return FailedPreconditionError(
      "MX x MX GEMM is not implemented yet (pending src/kernels/gemm/gemm_mx.cc)");
}

}  // namespace internal
#else
namespace ref {

float MxDot(const MxTensorView&, std::size_t, const MxTensorView&, std::size_t) {
  return std::numeric_limits<float>::quiet_NaN();
}

float MxElement(const MxTensorView&, std::size_t, std::size_t) {
  return std::numeric_limits<float>::quiet_NaN();
}

}  // namespace ref
#endif
}  // namespace trnmx
