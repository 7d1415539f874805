// Internal: micro-kernels of the opt-in Bf16Mode::kNativeDot path (AVX512_BF16
// VDPBF16PS through intrinsics in functions compiled for that instruction
// set, called only after CpuHasAvx512Bf16(); gemm.h states the numerics).
// The blocking and packing are the dense driver's (gemm-inl.h).
#ifndef TRNMX_SRC_KERNELS_GEMM_GEMM_BF16_NATIVE_H_
#define TRNMX_SRC_KERNELS_GEMM_GEMM_BF16_NATIVE_H_

#include <cstddef>
#include <cstdint>

namespace trnmx::internal {

// Register tile of the native kernels: 14 rows x 32 columns (2 x 16 lanes).
inline constexpr std::size_t kNativeBf16Mr = 14;

// C[0..rows) x [0..32) (row stride ldc) = (load ? C : 0) then, for each of
// kpairs K pairs t in order, one VDPBF16PS per 16 columns with A word
// ap[t * 14 + r] (BF16 a_2t in bits 15..0, a_2t+1 in bits 31..16) and B row
// bp + t * ldb (32 columns x 2 BF16, the pair layout of gemm_dense.h).
using NativeBf16KernelFn = void (*)(std::size_t kpairs, const std::uint32_t* ap,
                                    const std::uint16_t* bp, std::size_t ldb, float* c,
                                    std::size_t ldc, bool load);

// kernels[rows - 1] for rows 1..14; nullptr when not compiled (non-x86).
const NativeBf16KernelFn* NativeBf16Kernels();

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_KERNELS_GEMM_GEMM_BF16_NATIVE_H_
