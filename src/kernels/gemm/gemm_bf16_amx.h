// Internal: the micro-kernel of the opt-in Bf16Mode::kAmxTile path (AMX-BF16
// TDPBF16PS through intrinsics in functions compiled for that instruction
// set, called only after AmxBf16Usable(); gemm.h states the numerics). The
// blocking and B packing are the native path's (gemm-inl.h, the pair layout
// of gemm_dense.h); A is packed row-major as BF16 pairs.
#ifndef TRNMX_SRC_KERNELS_GEMM_GEMM_BF16_AMX_H_
#define TRNMX_SRC_KERNELS_GEMM_GEMM_BF16_AMX_H_

#include <cstddef>
#include <cstdint>

namespace trnmx::internal {

// Register tile of the AMX kernel: 32 rows x 32 columns (2 x 2 tiles of
// 16 x 16 FP32), K in steps of 16 pairs (one TDPBF16PS per tile).
inline constexpr std::size_t kAmxBf16Mr = 32;
inline constexpr std::size_t kAmxPairsPerStep = 16;

// True when the CPU has AMX-TILE and AMX-BF16 and the kernel lets this
// process use the tile registers (Linux arch_prctl(ARCH_REQ_XCOMP_PERM),
// requested once).
bool AmxBf16Usable();

// C[0..rows) x [0..32) (row stride ldc) = (load ? C : 0), then for each step
// of 16 K pairs (the last may be shorter) one TDPBF16PS per 16 x 16 tile:
// A rows r = 0..31 at a + r * lda (32-bit words, a_2t | a_2t+1 << 16; rows
// past `rows` are +0), B pair row t at bp + t * ldb (32 columns x 2 BF16,
// gemm_dense.h). Needs AmxBf16Usable(). The tile registers stay configured
// for the calling thread until AmxBf16Release().
void AmxBf16Kernel(std::size_t kpairs, const std::uint32_t* a, std::size_t lda,
                   const std::uint16_t* bp, std::size_t ldb, float* c, std::size_t ldc,
                   std::size_t rows, bool load);

// Releases the calling thread's tile registers (TILERELEASE).
void AmxBf16Release();

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_KERNELS_GEMM_GEMM_BF16_AMX_H_
