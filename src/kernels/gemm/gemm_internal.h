// Internal split of the GEMM implementation between the dense kernels
// (gemm.cc: FP32/BF16 and dense x MX through FP32 decoding) and the MX x MX
// kernels (gemm_mx.cc: exact block sums, formats.md section 10). gemm.cc
// validates every call and routes MX x MX here.
#ifndef TRNMX_SRC_KERNELS_GEMM_GEMM_INTERNAL_H_
#define TRNMX_SRC_KERNELS_GEMM_GEMM_INTERNAL_H_

#include <cstddef>

#include "trnmx/executor.h"
#include "trnmx/gemm.h"

namespace trnmx::internal {

// Preconditions: arguments already validated by Gemm(); a and b are MX, A
// blocked along rows, B along columns, same K. Writes every C element.
Status GemmMxMx(const GemmOperand& a, const GemmOperand& b, const GemmOutput& c,
                const GemmParams& params, Executor& executor);

// Every check listed under "Errors" in gemm.h, with a message naming the
// operand and the problem. check_cpu: also fail Bf16Mode::kNativeDot on a
// CPU without AVX512_BF16 and Bf16Mode::kAmxTile without usable AMX-BF16
// (ref::Gemm passes false: its models run anywhere).
Status ValidateGemm(const GemmOperand& a, const GemmOperand& b, const GemmOutput& c,
                    const GemmParams& params, bool check_cpu);

// True when this CPU executes AVX512_BF16 (VDPBF16PS) and the OS saves the
// AVX-512 state.
bool CpuHasAvx512Bf16();

// Run-time cache blocking of the dense kernels (elements). Zero = the
// default. Rounded as the kernels need (mc to the register tile's rows, nc to
// whole 32-column panels, kc to whole K pairs or AMX steps); the results do
// not depend on them.
struct GemmBlocking {
  std::size_t mc = 0;
  std::size_t kc = 0;
  std::size_t nc = 0;
  // Use the executor even for tiny products (normally run on the caller).
  bool force_parallel = false;
};

// Gemm() with explicit blocking (tests use small blocks to cover the K-block
// reloads and every edge with small matrices). Validates like Gemm().
Status GemmWithBlocking(const GemmOperand& a, const GemmOperand& b, const GemmOutput& c,
                        const GemmParams& params, Executor* executor,
                        const GemmBlocking& blocking);
Status GemmWithBlocking(const GemmOperand& a, const PackedWeights& b, const GemmOutput& c,
                        const GemmParams& params, Executor* executor,
                        const GemmBlocking& blocking);

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_KERNELS_GEMM_GEMM_INTERNAL_H_
