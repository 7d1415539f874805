// Internal: the pieces of the MX x MX GEMM shared by its files (formats.md
// section 10):
//   gemm_mx.cc             driver: plan choice, the tiled loop nest, entry points
//   gemm_mx_pack.cc        element tables, operand lines, packing into the
//                          kernels' layouts (gemm_mx_kernels.h)
//   gemm_mx_avx512vnni.cc  the AVX-512 VNNI micro-kernels and GEMVs
//   gemm_mx_wide.cc        the wide path (int64 / __int128 block sums)
//   gemv_mx.cc             the M <= 4 and dense-activation GEMVs with MXFP4
//                          weights
#ifndef TRNMX_SRC_KERNELS_GEMM_GEMM_MX_INTERNAL_H_
#define TRNMX_SRC_KERNELS_GEMM_GEMM_MX_INTERNAL_H_

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "kernels/gemm/gemm_mx_kernels.h"
#include "trnmx/executor.h"
#include "trnmx/formats/e8m0.h"
#include "trnmx/formats/mx_format.h"
#include "trnmx/gemm.h"
#include "trnmx/mx.h"

namespace trnmx::internal {

// ---------------------------------------------------------------------------
// Element values in units of 2^q (gemm_mx_pack.cc).
// ---------------------------------------------------------------------------

struct FormatTable {
  int q = 0;
  int element_bits = 8;
  std::size_t block_bytes = 32;
  bool small = false;  // Every |v| <= 448 and finite: exact FP32 block sums.
  bool int8 = false;   // Every v in [-128, 127] and finite.
  bool wide = false;   // Some |v| >= 2^18 (E5M2): exact FP64 sums only with a small partner.
  // Signed int8 planes of 7-bit digits that hold every finite v (MxGemvArgs):
  // 1 for int8 formats (v itself), E3M2 2, E4M3 3; 0 when wide.
  std::size_t i8_planes = 0;
  std::array<double, 256> value{};          // v; NaN / +-Inf for the special codes.
  std::array<float, 256> value_f32{};       // Same, for the FP32 path (small formats).
  std::array<std::int8_t, 256> value_i8{};  // Same, for the int8 path (int8 formats).
  std::array<std::int32_t, 256>
      value_i32{};                       // v for finite codes (|v| < 2^18 unless wide), else 0.
  std::array<std::uint8_t, 256> nan{};   // 1 for NaN codes.
  std::array<std::int16_t, 256> lo16{};  // v = hi16 * 512 + lo16, lo16 in [0, 511].
  std::array<std::int16_t, 256> hi16{};
  // lo16 with -1 at the NaN codes (outside lo16's [0, 511]): one lookup gives
  // the plane and the NaN test (PackPair16BVnni).
  std::array<std::int16_t, 256> lo16_nan{};
};

// The table of `f` (any MX format value; built once).
const FormatTable& GetFormatTable(MxFormat f);

// Unpacks the codes of one block (formats.md section 9); codes at positions
// >= n_valid (tail padding) are taken as 00 = +0 whatever the buffer holds.
void UnpackBlock(int element_bits, const std::uint8_t* blk, std::size_t n_valid,
                 std::uint8_t* codes);

// One line of an MX operand (a row of A or a column of B).
struct LineReader {
  const MxTensorView* view;
  const FormatTable* table;
  std::size_t k;  // Line length.

  const std::uint8_t* Block(std::size_t line, std::size_t blk) const {
    return view->codes + line * view->codes_stride + blk * table->block_bytes;
  }
  std::uint8_t Scale(std::size_t line, std::size_t blk) const {
    return view->scales[line * view->scales_stride + blk];
  }
  std::size_t Valid(std::size_t blk) const {
    const std::size_t start = blk * kMxK;
    return k - start < kMxK ? k - start : kMxK;
  }
  void Codes(std::size_t line, std::size_t blk, std::uint8_t* codes) const {
    UnpackBlock(table->element_bits, Block(line, blk), Valid(blk), codes);
  }
  // Block factor 2^(s - 127 + q) (NaN for FF) and its exponent.
  double Factor(std::size_t line, std::size_t blk) const {
    const std::uint8_t s = Scale(line, blk);
    if (s == kE8M0Nan) return std::numeric_limits<double>::quiet_NaN();
    const std::int64_t biased = static_cast<std::int64_t>(s) - 127 + table->q + 1023;  // >= 880.
    return std::bit_cast<double>(static_cast<std::uint64_t>(biased) << 52);
  }
  std::int32_t Exponent(std::size_t line, std::size_t blk) const {
    const std::uint8_t s = Scale(line, blk);
    if (s == kE8M0Nan) return kMxScaleNanExponent;
    return static_cast<std::int32_t>(s) - 127 + table->q;
  }
};

// ---------------------------------------------------------------------------
// Output epilogue (gemm.h): alpha, beta * C_old, bias, FP32 or BF16 (RNE)
// (gemm_mx.cc).
// ---------------------------------------------------------------------------

void StoreOutput(const GemmOutput& c, const GemmParams& p, std::size_t i, std::size_t j, float acc);
// Outputs (i, j0 .. j0 + count - 1) from their accumulators.
void StoreOutputRow(const GemmOutput& c, const GemmParams& p, std::size_t i, std::size_t j0,
                    std::size_t count, const float* acc);

// Below this many multiply-adds a GEMM runs on the calling thread: the
// parallel sections would cost more than they save (the bits are the same).
inline constexpr std::size_t kSerialMacs = std::size_t{1} << 21;

// `pool`, or `serial` when `macs` multiply-adds are below `threshold`.
inline Executor& ExecutorFor(double macs, double threshold, Executor& pool,
                             SerialExecutor& serial) {
  return macs < threshold ? static_cast<Executor&>(serial) : pool;
}

// The MX tile kernels of the target the Highway dispatcher chose (gemm_mx.cc).
MxTileKernels CurrentMxTileKernels();

// ---------------------------------------------------------------------------
// Packing into the kernels' layouts (gemm_mx_pack.cc; layouts in
// gemm_mx_kernels.h). Rows/columns past m/n and blocks past K are packed as
// +0 with factor 1. The B packers write columns [c0, c1) of the panel
// starting at col_base, column c0 at bp (c at bp + width * (c - c0)); fb /
// eb / colsum are indexed by the panel column c.
// ---------------------------------------------------------------------------

template <class T>  // float or double
void PackFlatA(const LineReader& ra, std::size_t row0, std::size_t row1, std::size_t m,
               std::size_t blk0, std::size_t nb, T* a, std::size_t lda, double* fa,
               std::int32_t* ea, std::size_t ldfa);
template <class T>
void PackFlatB(const LineReader& rb, std::size_t col_base, std::size_t c0, std::size_t c1,
               std::size_t n, std::size_t blk0, std::size_t nb, T* bp, std::size_t ldb, double* fb,
               std::int32_t* eb, std::size_t ldfb);
void PackQuadA(const LineReader& ra, std::size_t row0, std::size_t row1, std::size_t m,
               std::size_t blk0, std::size_t nb, std::uint8_t* a, std::size_t lda, double* fa,
               std::int32_t* ea, std::size_t ldfa);
void PackQuadB(const LineReader& rb, std::size_t col_base, std::size_t c0, std::size_t c1,
               std::size_t n, std::size_t blk0, std::size_t nb, std::int8_t* bp, std::size_t ldb,
               double* fb, std::int32_t* eb, std::int32_t* colsum, std::size_t ldfb);
void PackPair16A(const LineReader& ra, std::size_t row0, std::size_t row1, std::size_t m,
                 std::size_t blk0, std::size_t nb, std::int16_t* a, std::size_t lda, double* fa,
                 std::int32_t* ea, std::uint8_t* aflag, std::size_t ldfa);
void PackPair16B(const LineReader& rb, std::size_t col_base, std::size_t c0, std::size_t c1,
                 std::size_t n, std::size_t blk0, std::size_t nb, std::int16_t* bp, std::size_t ldb,
                 double* fb, std::int32_t* eb, std::size_t ldfb);

// ---------------------------------------------------------------------------
// Paths other than the tiled one.
// ---------------------------------------------------------------------------

// Exact block products in __int128 for any pairing (gemm_mx_wide.cc; also
// attention's MX x MX products, src/kernels/attention).
enum class WideSpecial : std::uint8_t { kFinite, kNan, kPosInf, kNegInf };
struct WideElement {
  std::int64_t v;  // Value in units of 2^q (kFinite only).
  WideSpecial kind;
};
// The kMxK codes of one block (UnpackBlock) as values of `table`'s format.
void DecodeWideBlock(const FormatTable& table, const std::uint8_t* codes, WideElement* out);
// fl32 of the exact sum over one block of x_i * w_i * 2^(ea + eb), one
// rounding (ref::MxDot's y_j); either exponent kMxScaleNanExponent gives NaN;
// a NaN element, Inf * 0 or Infs of both signs give NaN.
float WideBlock(const WideElement* x, const WideElement* w, std::int32_t ea, std::int32_t eb);

// E5M2 x E4M3 and E5M2 x E5M2: scalar, block sums in __int128 (gemm_mx_wide.cc).
Status RunWide(const LineReader& ra, const LineReader& rb, std::size_t m, std::size_t n,
               std::size_t k, const GemmOutput& c, const GemmParams& params, Executor& pool);

// Whether GemmMxMx streams MXFP4 weights once per row of A (gemv_mx.cc).
bool UseGemv(const FormatTable& ta, MxFormat fb, std::size_t m, const MxTileKernels& kernels);
Status RunGemvFp4(const LineReader& ra, const LineReader& rb, std::size_t m, std::size_t n,
                  std::size_t k, const GemmOutput& c, const GemmParams& params, Executor& pool);

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_KERNELS_GEMM_GEMM_MX_INTERNAL_H_
