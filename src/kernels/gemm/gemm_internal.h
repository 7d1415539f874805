// Internal split of the GEMM implementation between the dense kernels
// (gemm.cc: FP32/BF16 and dense x MX through FP32 decoding) and the MX x MX
// kernels (gemm_mx.cc: exact block sums, formats.md section 10). gemm.cc
// validates every call and routes MX x MX here.
#ifndef TRNMX_SRC_KERNELS_GEMM_GEMM_INTERNAL_H_
#define TRNMX_SRC_KERNELS_GEMM_GEMM_INTERNAL_H_

#include <hwy/aligned_allocator.h>

#include <cstddef>
#include <cstdint>
#include <memory>

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

// MxGemmMode::kViaBf16: an MX value (FP32, exact) is its own BF16 when it
// is a zero or a normal finite number whose low 16 bits are 0 (always the
// case for MX elements, at most 8 significant bits).
inline bool MxValueIsBf16(std::uint32_t bits) {
  const std::uint32_t mag = bits & 0x7FFFFFFFu;
  return mag == 0 || (mag >= 0x00800000u && mag < 0x7F800000u && (bits & 0xFFFFu) == 0);
}

// MX x MX operands as BF16 (gemm_mx_via_bf16.cc): exact = every value of
// both passed MxValueIsBf16, and then `a` (M x K, row-major) views
// a_values and b_panels holds B in BF16 pair panels (gemm_dense.h, as
// PackedWeights packs BF16).
struct MxAsBf16 {
  bool exact = false;
  std::unique_ptr<Bf16[]> a_values;
  hwy::AlignedFreeUniquePtr<std::uint16_t[]> b_panels;
  GemmOperand a;
};
// Preconditions: a and b are validated MX operands of Gemm(). Fails only
// when the copies cannot be allocated.
Status FoldMxPairToBf16(const GemmOperand& a, const GemmOperand& b, Executor& executor,
                        MxAsBf16* out);

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_KERNELS_GEMM_GEMM_INTERNAL_H_
