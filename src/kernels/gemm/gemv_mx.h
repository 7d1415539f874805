// Internal: a fast M = 1 path for dense activations times MXFP4 weights
// (decode-style GEMV), for gemm.cc's dense x MX route to call first.
//
// Numerics: gemm.h "dense x MX" contract, bit for bit. Each weight is
// w_kj = fl32(E2M1(code) * 2^(s - 127)) (NaN for scale FF; one FP32 multiply,
// so FP32 subnormal weights are rounded and overflow gives Inf), activations
// are FP32 (BF16 widened exactly), and each output is acc = +0.0f,
// acc = fma(a_k, w_kj, acc) for k = 0 .. K-1 in increasing order, followed by
// the gemm.h epilogue (alpha, beta, bias, FP32 or BF16 RNE store).
//
// Implementation (gemm_mx_kernels.h DenseGemvFn): 4 independent FMA chains of
// 16 (AVX-512) or 8 (AVX2) columns; 64 code bytes per column loaded and
// transposed so that a vector holds 8 consecutive elements of its columns;
// nibbles to values by VPERMPS (AVX-512) or to 2 x value bytes by VPSHUFB and
// a conversion (AVX2), multiplied by the column's block scale; streams the
// weights once. Threads split columns.
#ifndef TRNMX_SRC_KERNELS_GEMM_GEMV_MX_H_
#define TRNMX_SRC_KERNELS_GEMM_GEMV_MX_H_

#include <cstddef>
#include <string>

#include "trnmx/executor.h"
#include "trnmx/formats/mx_format.h"
#include "trnmx/gemm.h"

namespace trnmx::internal {

// Returns true when it computed C: a is dense (FP32 or BF16) with one row,
// b is MXFP4 blocked along K (BlockAxis::kCols), and the current dispatch
// target is AVX2 or AVX-512 (x86). Otherwise returns false without writing
// anything, and the caller runs its general path.
// Preconditions: the call was validated by Gemm() (shapes agree).
bool GemvDenseMx(const GemmOperand& a, const GemmOperand& b, const GemmOutput& c,
                 const GemmParams& params, Executor& executor);

// The streaming GEMV kernel (RunGemvFp4) GemmMxMx runs an M-row product of MX
// formats a x b with on the current target ("avx512-vnni", "avx2", "avx2, 3
// planes", ...), or "" when it takes its tiled paths (benchmark labels).
std::string MxGemvKernelName(MxFormat a, MxFormat b, std::size_t m);

// The current target's MXFP4 GEMV kernels (this one and GemmMxMx's M <= 4
// path): "avx512-vnni", "avx2" or "none" (benchmark labels).
const char* GemvMxfp4KernelName();

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_KERNELS_GEMM_GEMV_MX_H_
