// Scalar reference GEMM: the bits every trnmx GEMM kernel must reproduce
// (contract in include/trnmx/gemm.h and formats.md section 10). Plain loops,
// no SIMD, no threads; linked by tests and benchmarks only.
#ifndef TRNMX_SRC_REFERENCE_GEMM_REF_H_
#define TRNMX_SRC_REFERENCE_GEMM_REF_H_

#include <cstddef>
#include <cstdint>

#include "trnmx/gemm.h"
#include "trnmx/status.h"

namespace trnmx::ref {

// Validates like trnmx::Gemm, then computes C. Every operand combination.
Status Gemm(const GemmOperand& a, const GemmOperand& b, const GemmOutput& c,
            const GemmParams& params = {});

// The MX x MX accumulation of one output (formats.md section 10): a_line and
// b_line are the K-long lines (row i of A, column j of B) of two MX tensors.
// Returns acc before the epilogue. Exact block sums (integer or wide
// arithmetic), one rounding per block, FP32 accumulation in K order starting
// from acc_in (+0, or C's value under GemmParams::accumulate).
float MxDot(const MxTensorView& a, std::size_t a_line, const MxTensorView& b, std::size_t b_line,
            float acc_in = 0.0f);

// Value of element (row, col) of an MX tensor decoded to FP32 (element value
// times scale, rounded once; FF scale -> NaN).
float MxElement(const MxTensorView& t, std::size_t row, std::size_t col);

// Scalar model of one VDPBF16PS lane step (Bf16Mode::kNativeDot): acc plus
// the pair products a1*b1 then a0*b0 (BF16 bits), as gemm.h states it.
float Vdpbf16psStep(float acc, std::uint16_t a0, std::uint16_t a1, std::uint16_t b0,
                    std::uint16_t b1);

// Scalar model of one TDPBF16PS output lane (Bf16Mode::kAmxTile), as gemm.h
// states it: count <= 32 elements a[i], b[i] (BF16 bits; pair t = elements
// 2t, 2t + 1) added to acc: the even and the odd products in two FP32 FMA
// chains from +0, then acc + (even + odd).
float Tdpbf16psLane(float acc, const std::uint16_t* a, const std::uint16_t* b,
                    std::size_t count);

}  // namespace trnmx::ref

#endif  // TRNMX_SRC_REFERENCE_GEMM_REF_H_
