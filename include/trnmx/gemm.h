// GEMM: C = alpha * A * B + beta * C (+ bias), with A (M x K) and B (K x N)
// each FP32, BF16, dense FP8 or an MX tensor, C FP32 or BF16.
//
// Operands
//   Dense (FP32, BF16 or FP8): element (i, j) at data[i * row_stride + j *
//   col_stride] (strides in elements, any sign-free values >= 0). Row-major =
//   (ld, 1), column-major = (1, ld); op(A) = A^T is the same memory with the
//   strides swapped (see Transposed()).
//   Dense FP8 (OperandType::kFp8, no block scales): one code per byte in the
//   encoding `fp8_format`, set by the Fp8() helpers from the storage type:
//   Fp8E4M3 (OCP E4M3FN), Fp8E5M2 (OCP), or Fp8E4M3Ieee (the FP8 of
//   Trainium NeuronCore-v2/v3, formats.md). A and B may use different FP8
//   encodings here (each is decoded exactly); Trainium's TensorE cannot mix
//   OCP E4M3FN with its own E4M3 in one matmul (trainium.md section 5).
//   MX (mx.h): blocked along K. A is M x K with BlockAxis::kRows, B is K x N
//   with BlockAxis::kCols (each column of B is a K-contiguous line). NVFP4 is
//   not a GEMM operand.
//
// Numerics contract (bits, not tolerances; identical on every compiled
// Highway target and for every Executor / thread count):
//   dense x dense (FP32, BF16, FP8, any mix): each output starts at acc =
//     +0.0f and for k = 0, 1, ..., K-1 in increasing order acc = fma(a_ik,
//     b_kj, acc) in FP32 (BF16 and FP8 inputs widened exactly: DecodeBits,
//     so an FP8 NaN code is a quiet NaN and an Inf code Inf). This is the
//     default (Bf16Mode::kExactFma) also for BF16 x BF16.
//   MX x MX (MXFP8 E4M3/E5M2 in any pairing, MXFP6, MXFP4, MXFP4 x MXFP8,
//     MXINT8): formats.md section 10: per 32-block j, S_j = exact sum of the
//     element products; y_j = fl32(S_j * 2^(sa_j + sb_j - 254)) (NaN if a
//     scale is FF); acc = +0.0f, acc = fl32(acc + y_j) for j increasing.
//   dense x MX or MX x dense (e.g. MXFP4 weights x BF16 or FP8
//     activations): the MX operand is decoded to FP32 (element value times its scale, one FP32
//     rounding, which is exact except on overflow to Inf), then the dense
//     contract above.
//   Epilogue, per output: r = fl32(alpha * acc) (skipped when alpha == 1);
//     if beta != 0: r = fl32(r + fl32(beta * C_old)) (when beta == 0, C_old is
//     not read, so NaN in C is ignored as in BLAS); if bias: r = fl32(r +
//     bias[j]); a BF16 output stores RNE(r) (formats.md D11).
//   Bf16Mode::kNativeDot (opt-in, BF16 x BF16 only): the CPU's AVX512_BF16
//     VDPBF16PS instruction. K is taken in pairs t = (2t, 2t+1) in increasing
//     order, an odd K padded with a +0 pair member; acc = +0.0f and per pair
//       acc = F(fma(D(a_2t+1), D(b_2t+1), D(acc)))     (odd member first)
//       acc = F(fma(D(a_2t),   D(b_2t),   acc))
//     where D flushes a denormal input (BF16 element or the accumulator) to
//     a zero of its sign, F flushes a denormal result likewise, each fma is
//     exact product plus one round-to-nearest-even (products that are FP32
//     denormals are kept); per the SDM, MXCSR is not consulted. Then the
//     epilogue above.
//     Verified against the instruction (Intel SDM pseudocode order) by
//     tests/kernels/gemm_test.cc (NativeBf16.*: crafted cases for each rule
//     and 200k random lanes); ref::Vdpbf16psStep is this model. On the
//     development machine VDPBF16PS issues at half the FP32 FMA rate, so
//     the default exact mode is faster there (docs/gemm.md).
//     Returns FailedPrecondition on a CPU without AVX512_BF16.
//   Bf16Mode::kAmxTile (opt-in, BF16 x BF16 only): the CPU's AMX-BF16
//     TDPBF16PS instruction. K is taken in steps of 32 elements (16 pairs)
//     from k = 0, the last step shorter; acc = +0.0f and per step
//       e = +0, o = +0
//       for each pair t of the step, in increasing order:
//         e = F(fma(D(a_2t),   D(b_2t),   e))
//         o = F(fma(D(a_2t+1), D(b_2t+1), o))     (a missing odd member: skipped)
//       acc = F(acc + F(e + o))
//     with D, F and fma as for kNativeDot (each operation one RNE rounding,
//     MXCSR not consulted). So the even and the odd elements of a step are
//     two separate chains, and each step reaches acc through one rounded sum:
//     the bits differ from kExactFma's and kNativeDot's. Measured against the
//     instruction on a Sapphire Rapids-class CPU (45,000 random lanes of 1, 2
//     and 16 pairs, all equal to this model; the SDM's older pseudocode, one
//     FMA chain in pair order, gives other bits on 10 % of the one-pair
//     lanes and 67 % of the 16-pair lanes) and checked by
//     tests/kernels/gemm_test.cc (AmxBf16.*) wherever the
//     CPU has AMX; ref::Tdpbf16psLane is this model. Returns
//     FailedPrecondition where the CPU lacks AMX-TILE/AMX-BF16 or the
//     operating system does not let the process use the tile registers
//     (Linux 5.16+ grants them on request).
//   MxGemmMode::kViaBf16 (opt-in, MX x MX only): every element of A and B
//     becomes its MX value (element times 2^(scale - 127)) as a BF16,
//     which is exact for MX elements (at most 8 significant bits) when the
//     value is zero or a normal finite BF16; then the dense BF16 x BF16
//     contract of params.bf16_mode (kExactFma, kNativeDot or kAmxTile)
//     and the epilogue. If any value of A or B is not (a subnormal, an
//     overflow to Inf, a NaN element or a NaN scale), the call computes
//     the kExact contract instead, so a result never rests on a rounded
//     operand. Decided per call, not per block: the BF16 contracts chain
//     products across blocks, so a block cannot be swapped for its exact
//     sum without a third contract. Allocates (M + N) x K BF16 values per
//     call (ResourceExhausted when it cannot).
//   NaN: a NaN output is some NaN; its sign and payload are not specified
//     (they depend on which NaN operand an FMA propagates).
//
// Errors (Status, nothing written): shapes that do not agree (A.cols != B.rows,
// C not M x N), null data with a non-zero extent, strides whose last element
// overflows the address space, C strides that make two outputs share memory,
// C overlapping A, B or the bias, invalid enum values, MX operands not
// blocked along K, with a shape differing from their view or line strides
// shorter than a line, NVFP4 operands, FP8 operands whose fp8_format is not
// an FP8 format, Bf16Mode::kNativeDot or kAmxTile with a pair other than
// BF16 x BF16 (or MX x MX under MxGemmMode::kViaBf16) or without CPU
// support, MxGemmMode::kViaBf16 with a pair other than MX x MX or with
// accumulate. The bias must hold N floats (a pointer's length cannot be
// checked).
//
// Threads: the executor runs tasks that each own a block of outputs (M
// blocks x groups of 32 columns); K is never split, so every thread count
// gives the same bits. Products under ~1 MFLOP run on the calling thread, and
// so does everything when executor is nullptr (executor.h); Pack() too.
//
// Memory: each thread that runs a dense task keeps its buffers between calls
// (thread-local, grown on demand, freed at thread exit): packed A (MC x KC),
// packed B (KC x NC, at most 3 MiB for FP32) and, where the partial sums
// between K blocks cannot or should not live in C, a scratch of the task's
// outputs in tile order (at most 16 MiB): always when C is BF16, strided or
// beta != 0, and on the FP32 FMA path (dense x dense, dense x MX, and
// kViaBf16, in kExactFma) when K > 192 and the task owns at most 2^22
// outputs (docs/gemm.md). The exact MX x MX kernels keep their own buffers.
//
// Example (row-major FP32, 2 threads):
//   trnmx::ThreadPoolExecutor pool(2);
//   Status s = trnmx::Gemm(trnmx::GemmOperand::Fp32(a, M, K, K),
//                          trnmx::GemmOperand::Fp32(b, K, N, N),
//                          trnmx::GemmOutput::Fp32(c, M, N, N), {}, &pool);
//
// Example (Trainium2's FP8: A and B as Fp8E4M3Ieee codes, e.g. from BulkEncode):
//   Status s = trnmx::Gemm(trnmx::GemmOperand::Fp8(a8, M, K, K),
//                          trnmx::GemmOperand::Fp8(b8, K, N, N),
//                          trnmx::GemmOutput::Fp32(c, M, N, N));
#ifndef TRNMX_GEMM_H_
#define TRNMX_GEMM_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "trnmx/executor.h"
#include "trnmx/export.h"
#include "trnmx/formats/format_id.h"
#include "trnmx/formats/types.h"
#include "trnmx/mx_view.h"
#include "trnmx/options.h"
#include "trnmx/status.h"

namespace trnmx {

struct GemmOperand {
  OperandType type = OperandType::kFp32;
  const void* data = nullptr;    // Dense: float*, Bf16* or FP8 codes (one byte each).
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t row_stride = 0;    // Dense, in elements.
  std::size_t col_stride = 1;
  MxTensorView mx;               // kMx only; rows/cols mirror mx.shape.
  // kFp8 only: the encoding of the codes, Format::kFp8E4M3, kFp8E5M2 or
  // kFp8E4M3Ieee (the Fp8() helpers set it from the storage type).
  Format fp8_format = Format::kFp8E4M3;

  // Row-major helpers: ld = elements from one row to the next (>= cols).
  static GemmOperand Fp32(const float* data, std::size_t rows, std::size_t cols, std::size_t ld) {
    return {OperandType::kFp32, data, rows, cols, ld, 1, {}};
  }
  static GemmOperand Bf16(const trnmx::Bf16* data, std::size_t rows, std::size_t cols,
                          std::size_t ld) {
    return {OperandType::kBf16, data, rows, cols, ld, 1, {}};
  }
  // Dense FP8 codes, no block scales; the encoding follows the type.
  static GemmOperand Fp8(const Fp8E4M3* data, std::size_t rows, std::size_t cols, std::size_t ld) {
    return {OperandType::kFp8, data, rows, cols, ld, 1, {}, Format::kFp8E4M3};
  }
  static GemmOperand Fp8(const Fp8E5M2* data, std::size_t rows, std::size_t cols, std::size_t ld) {
    return {OperandType::kFp8, data, rows, cols, ld, 1, {}, Format::kFp8E5M2};
  }
  static GemmOperand Fp8(const Fp8E4M3Ieee* data, std::size_t rows, std::size_t cols,
                         std::size_t ld) {
    return {OperandType::kFp8, data, rows, cols, ld, 1, {}, Format::kFp8E4M3Ieee};
  }
  static GemmOperand Mx(const MxTensorView& view) {
    return {OperandType::kMx, nullptr, view.shape.rows, view.shape.cols, 0, 0, view};
  }
  // The transpose of a dense operand (same memory, strides swapped).
  GemmOperand Transposed() const {
    GemmOperand t = *this;
    t.rows = cols;
    t.cols = rows;
    t.row_stride = col_stride;
    t.col_stride = row_stride;
    return t;
  }
};

struct GemmOutput {
  OutputType type = OutputType::kFp32;
  void* data = nullptr;  // float* or Bf16*.
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t row_stride = 0;  // In elements.
  std::size_t col_stride = 1;

  static GemmOutput Fp32(float* data, std::size_t rows, std::size_t cols, std::size_t ld) {
    return {OutputType::kFp32, data, rows, cols, ld, 1};
  }
  static GemmOutput Bf16(trnmx::Bf16* data, std::size_t rows, std::size_t cols, std::size_t ld) {
    return {OutputType::kBf16, data, rows, cols, ld, 1};
  }
};

struct GemmParams {
  float alpha = 1.0f;
  float beta = 0.0f;
  const float* bias = nullptr;  // N values added to every row, or nullptr.
  Bf16Mode bf16_mode = Bf16Mode::kExactFma;
  MxGemmMode mx_mode = MxGemmMode::kExact;  // MX x MX only (see the contract).
  // Continue the accumulation already in C (like a PSUM accumulation group):
  // each output's chain starts from C's FP32 value instead of +0.0f, so
  // splitting K into consecutive ranges, the first call with accumulate =
  // false and the next ones with true, gives the same bits as one call over
  // all of K (MX: split at multiples of 32). Needs an FP32 C with
  // col_stride 1, alpha = 1, beta = 0, no bias, Bf16Mode::kExactFma and
  // MxGemmMode::kExact (InvalidArgument otherwise).
  bool accumulate = false;
};

// C = alpha * A * B + beta * C (+ bias). executor == nullptr: the calling
// thread only (executor.h); pass &DefaultExecutor() or your own pool for threads.
TRNMX_API Status Gemm(const GemmOperand& a, const GemmOperand& b, const GemmOutput& c,
                      const GemmParams& params = {}, Executor* executor = nullptr);

// B packed once for many multiplications (weights), owned by this object:
// FP32 and FP8 -> 32-column FP32 panels (K x 32 each; FP8 decoded exactly); BF16 -> 32-column
// panels of K pairs (the VDPBF16PS operand layout; the exact mode widens them while packing each
// call); MX -> a compact copy of the codes and scales (decoded while packing each call, or read by
// the MX x MX kernels). The layout is internal and does not depend on the SIMD target, so results
// equal Gemm() with the unpacked B, bit for bit, on every target.
class TRNMX_API PackedWeights {
 public:
  static StatusOr<PackedWeights> Pack(const GemmOperand& b, Executor* executor = nullptr);
  PackedWeights(PackedWeights&&) noexcept;
  PackedWeights& operator=(PackedWeights&&) noexcept;
  ~PackedWeights();

  std::size_t k() const;
  std::size_t n() const;
  OperandType type() const;
  std::size_t bytes() const;  // Memory held.

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit PackedWeights(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

TRNMX_API Status Gemm(const GemmOperand& a, const PackedWeights& b, const GemmOutput& c,
                      const GemmParams& params = {}, Executor* executor = nullptr);

}  // namespace trnmx

#endif  // TRNMX_GEMM_H_
