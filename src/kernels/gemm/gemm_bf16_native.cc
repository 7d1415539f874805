#include "kernels/gemm/gemm_bf16_native.h"

namespace trnmx::internal {

Status GemmBf16Native(const GemmOperand&, const DenseSource&, const GemmOutput&,
                      const GemmParams&, Executor&, const GemmBlocking&) {
  return FailedPreconditionError("Bf16Mode::kNativeDot is not implemented yet");
}

}  // namespace trnmx::internal
