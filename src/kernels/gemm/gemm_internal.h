// Internal split of the GEMM implementation between the dense kernels
// (gemm.cc: FP32/BF16 and dense x MX through FP32 decoding) and the MX x MX
// kernels (gemm_mx.cc: exact block sums, formats.md section 10). gemm.cc
// validates every call and routes MX x MX here.
#ifndef TRNMX_SRC_KERNELS_GEMM_GEMM_INTERNAL_H_
#define TRNMX_SRC_KERNELS_GEMM_GEMM_INTERNAL_H_

#include "trnmx/executor.h"
#include "trnmx/gemm.h"

namespace trnmx::internal {

// Preconditions: arguments already validated by Gemm(); a and b are MX, A
// blocked along rows, B along columns, same K. Writes every C element.
Status GemmMxMx(const GemmOperand& a, const GemmOperand& b, const GemmOutput& c,
                const GemmParams& params, Executor& executor);

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_KERNELS_GEMM_GEMM_INTERNAL_H_
