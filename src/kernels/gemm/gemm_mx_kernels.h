// Internal: the micro-kernels of the MX x MX GEMM (gemm_mx_internal.h) and how the
// driver finds the ones for the current Highway target.
//
// Every kernel computes, for a register tile of output rows x columns and a
// run of consecutive K blocks, the exact block sums S (formats.md section 10),
// then y = fl32(S * fa * fb) and acc = fl32(acc + y) per block in increasing
// K, where fa = 2^(sa - 127 + qA) and fb = 2^(sb - 127 + qB) are the rows' and
// columns' block factors (q: the element format's quantum, so that element
// values are integers v * 2^q) and NaN for scale FF.
//
// Why the kernels agree bit for bit with each other and with ref::MxDot:
//   - every element is an integer v in units 2^q, held exactly in the packed
//     type (int8, float or double);
//   - a block's 32 products and all their partial sums are integers below
//     2^24 for the "small" formats (E2M1, E2M3, E3M2, MXINT8: |S| <= 32 * 448
//     * 448 < 2^23), so FP32 FMAs (or int32 dot instructions) are exact in
//     any order; with E4M3 (or E5M2 against a small format) the sums stay
//     below 2^53 units (|S| <= 32 * 229376 * 229376 < 2^41), so FP64 FMAs are
//     exact;
//   - S * fa * fb is computed in FP64 (exact: no FP64 overflow or underflow in
//     these ranges) and rounded once to FP32 by the conversion, or, on the
//     int32 fast path, as fl32(S) * 2^e in FP32 when 2^e and every possible
//     S * 2^e are normal FP32 values (then the multiply is exact). The FP64
//     flat layout packs v * fa and v * fb: scaling every term of the block
//     by the same power of two keeps each product and partial sum exact
//     (units of at least 2^-280, sums below 2^290), so its FMAs give S * fa * fb
//     itself, and NaN factors give NaN sums as the multiply would;
//   - FP32 accumulation over blocks is one chain per output in K order.
// NaN and Inf element values (E4M3 7F/FF, E5M2 Inf/NaN codes) are packed as
// FP64 NaN/Inf, so IEEE arithmetic gives the reference's results.
#ifndef TRNMX_SRC_KERNELS_GEMM_GEMM_MX_KERNELS_H_
#define TRNMX_SRC_KERNELS_GEMM_GEMM_MX_KERNELS_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "trnmx/formats/mx_format.h"

namespace trnmx::internal {

inline constexpr std::size_t kMxK = 32;  // Elements per MX block.

// Exponent sentinel for scale FF in the int32 exponent arrays (fast-path
// checks see it as out of range; the slow path turns it into NaN).
inline constexpr std::int32_t kMxScaleNanExponent = 1 << 20;

// One call: rows [0, tile_rows) x columns [0, tile_cols) of the packed
// panels, blocks [0, nblocks) of the current K chunk.
//
// Packed layouts (chunk of kc = nblocks_chunk * 32 elements):
//   kFlat (float or double):  a: row r, element k at a[r * lda + k]
//                             b: element k, column c at b[k * ldb + c]
//                             (double: v * fa and v * fb, factors folded in)
//   kQuad (int8, VNNI):       a: uint8 v + 128, row r, element k at a[r * lda + k]
//                             b: int8 v, element k = 4q + t, column c at
//                                b[q * ldb + 4 * c + t]
//                             colsum[blk * ldcs + c] = -128 * sum_k b
//   kPair16 (int16, VNNI):    E4M3 pairings. Per row and block, 96 int16 at
//                             a[r * lda + blk * 96]: d[32] = v >> w (the
//                             window digits, fa and ea include 2^w), then the
//                             exact split v = vh * 512 + vl: vl[32] in
//                             [0, 511], vh[32] in [-448, 447]. aflag[r * ldfa
//                             + blk] != 0: v does not fit a 15-bit window
//                             (fa then excludes w; the kernel uses vl, vh).
//                             b: v = hi * 512 + lo per column, two planes;
//                             per block 32 * ldb int16: lo for k = 2p + t,
//                             column c at [p * ldb + 2 * c + t], then hi at
//                             [(16 + p) * ldb + 2 * c + t].
// lda/ldb are in elements of the packed type (bytes for kQuad).
struct MxTileArgs {
  const void* a = nullptr;
  std::size_t lda = 0;
  const void* b = nullptr;
  std::size_t ldb = 0;
  const double* fa = nullptr;  // fa[r * ldfa + blk]
  std::size_t ldfa = 0;
  const double* fb = nullptr;  // fb[blk * ldfb + c]
  std::size_t ldfb = 0;
  // log2 of fa / fb (sa - 127 + qA, kPair16 window rows + w), or
  // kMxScaleNanExponent where fa / fb is NaN; [r * ldfa + blk]
  const std::int32_t* ea = nullptr;
  const std::int32_t* eb = nullptr;  // [blk * ldfb + c]
  const std::int32_t* colsum = nullptr;  // kQuad only, [blk * ldfb + c]
  const std::uint8_t* aflag = nullptr;   // kPair16 only, [r * ldfa + blk]
  std::size_t nblocks = 0;
  float* acc = nullptr;  // acc[r * ldacc + c], FP32 accumulators
  std::size_t ldacc = 0;
};

using MxTileFn = void (*)(const MxTileArgs&);

struct MxTileKernel {
  MxTileFn fn = nullptr;
  std::size_t rows = 0;  // Register tile.
  std::size_t cols = 0;
};

// Streaming GEMV for MXFP4 weights (B, K x N, kCols) and one row of MX
// activations: reads every weight byte once. Per block: S = sum (w + 12) * a
// - 12 * sum a with w = 2 * E2M1 value (vpshufb of the nibbles; vpdpbusd or
// vpmaddubsw), exact in int32; one column per vector lane, FP32 accumulation
// per column in block order (formats.md section 10). Activations whose
// values (units 2^qa) are int8 (E2M1 / E2M3 / MXINT8) take one plane; wider
// ones (E3M2: |a| < 2^9, E4M3: |a| < 2^18) are split into `planes` int8
// planes, a = p0 + 2^7 p1 + 2^14 p2 with p_i = sign(a) * (7-bit digit i of
// |a|), whose block sums are combined in int32 (|S| < 2^28).
//   a_even / a_odd: plane i's int8 values of the even and odd elements at
//     a_even + i * plane_stride (a_odd likewise), 16 per block, blocks padded
//     to a multiple of 4 with 0 and 64 bytes more;
//   corr: per chunk of 4 blocks, 16 int32 with -12 * (sum of block b's
//     activation values) in lane 4 b and 0 elsewhere;
//   ea[blk] = sa - 127 + qa, or kMxScaleNanExponent for scale FF or a block
//     holding a NaN code.
struct MxGemvArgs {
  const std::int8_t* a_even = nullptr;
  const std::int8_t* a_odd = nullptr;
  std::size_t planes = 1;        // 1 (gemv_fp4), 2 or 3 (gemv_fp4_planes).
  std::size_t plane_stride = 0;  // Bytes from one plane to the next.
  const std::int32_t* corr = nullptr;  // 16 per chunk (see above).
  const std::int32_t* ea = nullptr;
  std::size_t blocks = 0;  // ceil(K / 32)
  const std::uint8_t* codes = nullptr;  // B codes, column j at codes + j * codes_stride
  std::size_t codes_stride = 0;
  const std::uint8_t* scales = nullptr;
  std::size_t scales_stride = 0;
};
// Writes acc[j - j0] for the columns j in [j0, j1).
using MxGemvFn = void (*)(const MxGemvArgs& args, std::size_t j0, std::size_t j1, float* acc);

// The GEMVs' exact slow path for one block of one column: y = fl32(S *
// 2^(ea + sb - 128)) (qb = -1 for E2M1) with one rounding (FP64 holds S *
// 2^e exactly here), NaN for scale FF on either side.
inline float GemvFp4BlockValue(std::int32_t s, std::int32_t ea, std::uint32_t sb) {
  if (ea == kMxScaleNanExponent || sb == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return static_cast<float>(std::ldexp(static_cast<double>(s), ea + static_cast<int>(sb) - 128));
}

// Dense FP32 activations x (K x N, blocked along K) MXFP4 weights (gemv_mx.h
// contract): writes out[j - j0] for the columns j in [j0, j1).
using DenseGemvFn = void (*)(const float* x, std::size_t k, const std::uint8_t* codes,
                             std::size_t codes_stride, const std::uint8_t* scales,
                             std::size_t scales_stride, std::size_t j0, std::size_t j1,
                             float* out);

// The kernels of one target; fn == nullptr where the target has none.
struct MxTileKernels {
  MxTileKernel flat_f32;  // Small formats (exact in FP32).
  MxTileKernel flat_f64;  // E4M3, or E5M2 x small format (exact in FP64).
  MxTileKernel quad_i8;   // E2M1 / E2M3 / MXINT8 pairs: AVX-512 VNNI vpdpbusd.
  MxTileKernel pair_i16;  // E4M3 x (E4M3 or small): AVX-512 VNNI vpdpwssd.
  MxGemvFn gemv_fp4 = nullptr;           // AVX-512 VNNI or AVX2.
  MxGemvFn gemv_fp4_planes = nullptr;    // 2 or 3 activation planes: AVX2 (on AVX-512 too).
  DenseGemvFn gemv_dense_fp4 = nullptr;  // AVX-512 VNNI or AVX2.
  const char* gemv_name = "none";        // Of the two GEMVs: "avx512-vnni", "avx2".
  const char* gemv_planes_name = "none";  // Of gemv_fp4_planes: "avx2".
};

// The kernel GemmMxMx uses for this pairing on the current target:
// "vnni-i8", "flat-f32", "flat-f64" or "wide" (tests and benchmarks).
const char* GemmMxMxPathName(MxFormat a, MxFormat b);

// AVX-512 VNNI kernels (gemm_mx_avx512vnni.cc, intrinsics): tiles of 6 rows
// x 32 columns; GEMVs with 16 columns per vector.
void MxTileQuadI8Vnni(const MxTileArgs& args);
inline constexpr std::size_t kMxVnniRows = 6;
inline constexpr std::size_t kMxVnniCols = 32;
void MxTilePair16Vnni(const MxTileArgs& args);
void MxGemvFp4Vnni(const MxGemvArgs& args, std::size_t j0, std::size_t j1, float* acc);
void GemvDenseFp4Vnni(const float* x, std::size_t k, const std::uint8_t* codes,
                      std::size_t codes_stride, const std::uint8_t* scales,
                      std::size_t scales_stride, std::size_t j0, std::size_t j1, float* out);
// kPair16 B of 8-bit codes (the layout above), `cols` (a multiple of 16)
// columns x nb full blocks: column c's block b at codes + c * codes_stride +
// b * 32, its planes from FormatTable's lo16_nan / hi16 into bp + 2 * c (a
// NaN code's lo is lo16's 0); nan_flags[b * ld_nan + c] = 1 when that block
// holds a NaN code, else 0. PackPair16B's planes, 16 columns per step;
// AVX-512 VNNI CPUs only.
void PackPair16BVnni(const std::uint8_t* codes, std::size_t codes_stride, std::size_t cols,
                     std::size_t nb, const std::int16_t* lo16_nan, const std::int16_t* hi16,
                     std::int16_t* bp, std::size_t ldb, std::uint8_t* nan_flags,
                     std::size_t ld_nan);
// True when the CPU runs AVX512F/BW/VNNI (checked once).
bool CpuHasAvx512Vnni();

// AVX2 + FMA GEMVs (gemm_mx_avx2.cc, intrinsics; same contracts as the
// AVX-512 ones above): 8 columns per vector, vpmaddubsw block sums for MX
// activations, a vpshufb weight decode and one scale multiply for dense ones.
void MxGemvFp4Avx2(const MxGemvArgs& args, std::size_t j0, std::size_t j1, float* acc);
void MxGemvFp4PlanesAvx2(const MxGemvArgs& args, std::size_t j0, std::size_t j1, float* acc);
void GemvDenseFp4Avx2(const float* x, std::size_t k, const std::uint8_t* codes,
                      std::size_t codes_stride, const std::uint8_t* scales,
                      std::size_t scales_stride, std::size_t j0, std::size_t j1, float* out);

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_KERNELS_GEMM_GEMM_MX_KERNELS_H_
