// Internal: the opt-in Bf16Mode::kNativeDot kernel (AVX512_BF16 VDPBF16PS
// through intrinsics behind a run-time CPU check; gemm.h states its
// numerics). Preconditions: validated by Gemm(), A BF16, B a BF16 operand or
// prepacked BF16 pairs, CpuHasAvx512Bf16().
#ifndef TRNMX_SRC_KERNELS_GEMM_GEMM_BF16_NATIVE_H_
#define TRNMX_SRC_KERNELS_GEMM_GEMM_BF16_NATIVE_H_

#include "kernels/gemm/gemm_dense.h"

namespace trnmx::internal {

Status GemmBf16Native(const GemmOperand& a, const DenseSource& b, const GemmOutput& c,
                      const GemmParams& params, Executor& executor, const GemmBlocking& blocking);

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_KERNELS_GEMM_GEMM_BF16_NATIVE_H_
