// MX x MX GEMM (internal::GemmMxMx): formats.md section 10, bit for bit.
//
// Paths, chosen per pairing of element formats (values v * 2^q, q the
// format's quantum: E2M1 -1, E2M3 -3, E3M2 -4, MXINT8 -6, E4M3 -9, E5M2 -16):
//
//   pairing                               block sum S (exact)        kernel
//   M <= 4, MXFP4 weights, activations    int32, VNNI vpdpbusd,      MxGemvFp4Vnni (AVX-512 VNNI;
//     E2M1 / E2M3 / MXINT8                weights streamed once        RunGemvFp4)
//   E2M1 / E2M3 / MXINT8 x same class     int32, VNNI vpdpbusd       MxTileQuadI8Vnni (AVX-512 VNNI)
//     (portable targets, or with E3M2)    FP32 FMA (|S| < 2^23)      MxTileFlat<float>
//   E4M3 x E4M3 or a small format         int16 VNNI vpdpwssd,       MxTilePair16Vnni (AVX-512 VNNI)
//                                         two planes, FP64 combine
//     (portable targets), and             FP64 FMA (|S| < 2^53)      MxTileFlat<double>
//     E5M2 x E2M1/E2M3/E3M2/MXINT8
//   E5M2 x E4M3, E5M2 x E5M2              int64 / __int128, scalar  RunWide (slow path)
// The VNNI kernels are used only when the dispatcher chose an AVX-512 target
// (tests force every target) and the CPU has AVX512-VNNI. GemvDenseMx
// (gemv_mx.h) is the dense-activation x MXFP4 GEMV for gemm.cc.
//
// Driver (BLIS-like, one output = one FP32 chain in K order):
//   for each panel of nc columns of B:
//     acc[M x nc] = +0
//     for each chunk of kc K-blocks, in increasing K:
//       pack: decode A[all rows, chunk] and B[chunk, panel] into the kernel's
//             layout (parallel over row and column groups)
//       compute: tasks = (row group x column sub-panel) of the output; each
//             runs register tiles over the chunk's blocks, updating acc
//     epilogue: alpha, beta * C, bias, FP32 or BF16 (RNE) store
// Threads split outputs only (row groups x column sub-panels), never K, so the
// bits do not depend on the executor. Packing buffers are re-used across
// chunks; the layout depends on the target only inside one call.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "internal/checks.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_mx_kernels.h"
#include "kernels/gemm/gemv_mx.h"
#include "trnmx/formats/codec.h"
#include "trnmx/formats/e8m0.h"
#include "trnmx/formats/int8.h"
#include "trnmx/formats/mx_block.h"
#include "trnmx/formats/visit.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/gemm/gemm_mx-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/gemm/gemm_mx-inl.h"

#if HWY_ONCE
#if HWY_ARCH_X86
#include <immintrin.h>
#endif

namespace trnmx {
HWY_EXPORT(GetMxTileKernels);

namespace internal {
namespace {

// ---------------------------------------------------------------------------
// Element values in units of 2^q.
// ---------------------------------------------------------------------------

struct FormatTable {
  int q = 0;
  int element_bits = 8;
  std::size_t block_bytes = 32;
  bool small = false;  // Every |v| <= 448 and finite: exact FP32 block sums.
  bool int8 = false;   // Every v in [-128, 127] and finite.
  bool wide = false;   // Some |v| >= 2^18 (E5M2): exact FP64 sums only with a small partner.
  std::array<double, 256> value{};  // v; NaN / +-Inf for the special codes.
  std::array<float, 256> value_f32{};     // Same, for the FP32 path (small formats).
  std::array<std::int8_t, 256> value_i8{};  // Same, for the int8 path (int8 formats).
  std::array<std::int32_t, 256> value_i32{};  // v for finite codes (|v| < 2^18 unless wide), else 0.
  std::array<std::uint8_t, 256> nan{};        // 1 for NaN codes.
  std::array<std::int16_t, 256> lo16{};       // v = hi16 * 512 + lo16, lo16 in [0, 511].
  std::array<std::int16_t, 256> hi16{};
};

// The table of one MX format: its element values in units of its quantum,
// and the kernel classes those values allow.
template <class Tag>
FormatTable MakeTable() {
  using Traits = typename Tag::Traits;
  FormatTable t;
  t.q = Traits::kQuantumExponent;
  t.element_bits = Tag::kInfo.element_bits;
  t.block_bytes = Tag::kInfo.block_bytes;
  bool finite = true;
  double lo = 0.0;
  double hi = 0.0;
  for (std::uint32_t c = 0; c < (1u << t.element_bits); ++c) {
    const double v =
        std::ldexp(static_cast<double>(detail::DecodeMxElement<Traits>(c)), -t.q);
    t.value[c] = v;
    if (std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    } else {
      finite = false;
    }
  }
  const double max_abs = std::max(-lo, hi);
  t.small = finite && max_abs <= 448.0;
  t.int8 = finite && lo >= -128.0 && hi <= 127.0;
  t.wide = max_abs >= 262144.0;  // 2^18
  for (std::size_t c = 0; c < 256; ++c) {
    const double v = t.value[c];
    t.value_f32[c] = static_cast<float>(v);
    t.value_i8[c] = t.int8 ? static_cast<std::int8_t>(v) : std::int8_t{0};
    t.nan[c] = std::isnan(v) ? 1 : 0;
    if (!t.wide && std::isfinite(v)) {
      const auto i = static_cast<std::int32_t>(v);
      t.value_i32[c] = i;
      t.lo16[c] = static_cast<std::int16_t>(i - (i >> 9) * 512);
      t.hi16[c] = static_cast<std::int16_t>(i >> 9);
    }
  }
  return t;
}

const FormatTable& Table(MxFormat f) {
  static const std::array<FormatTable, std::size(kMxFormatInfos)> tables = {{
#define TRNMX_X(Name, ...) MakeTable<mx_tags::Mx##Name##Tag>(),
      TRNMX_FOREACH_MX_FORMAT(TRNMX_X)
#undef TRNMX_X
  }};
  return tables[static_cast<std::size_t>(f)];
}

// Unpacks the codes of one block (formats.md section 9); codes at positions
// >= n_valid (tail padding) are taken as 00 = +0 whatever the buffer holds.
void UnpackBlock(int element_bits, const std::uint8_t* blk, std::size_t n_valid,
                 std::uint8_t* codes) {
  if (element_bits == 8) {
    std::memcpy(codes, blk, kMxK);
  } else if (element_bits == 4) {
    for (std::size_t i = 0; i < kMxK / 2; ++i) {
      codes[2 * i] = blk[i] & 0xFu;
      codes[2 * i + 1] = blk[i] >> 4;
    }
  } else {  // 6 bits: a | b << 6, b >> 2 | c << 4, c >> 4 | d << 2 per 3 bytes.
    for (std::size_t g = 0; g < kMxK / 4; ++g) {
      const std::uint32_t b0 = blk[3 * g];
      const std::uint32_t b1 = blk[3 * g + 1];
      const std::uint32_t b2 = blk[3 * g + 2];
      codes[4 * g] = static_cast<std::uint8_t>(b0 & 0x3Fu);
      codes[4 * g + 1] = static_cast<std::uint8_t>((b0 >> 6) | ((b1 & 0xFu) << 2));
      codes[4 * g + 2] = static_cast<std::uint8_t>((b1 >> 4) | ((b2 & 0x3u) << 4));
      codes[4 * g + 3] = static_cast<std::uint8_t>(b2 >> 2);
    }
  }
  for (std::size_t i = n_valid; i < kMxK; ++i) codes[i] = 0;
}

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
// Output epilogue (gemm.h): alpha, beta * C_old, bias, FP32 or BF16 (RNE).
// ---------------------------------------------------------------------------

void StoreOutput(const GemmOutput& c, const GemmParams& p, std::size_t i, std::size_t j,
                 float acc) {
  float r = acc;
  if (p.alpha != 1.0f) r = p.alpha * r;
  const std::size_t at = i * c.row_stride + j * c.col_stride;
  if (p.beta != 0.0f) {
    float old = 0.0f;
    if (c.type == OutputType::kFp32) {
      old = static_cast<const float*>(c.data)[at];
    } else {
      const std::uint32_t bits = static_cast<const Bf16*>(c.data)[at].bits;
      old = std::bit_cast<float>(bits << 16);
    }
    const float scaled = p.beta * old;
    r = r + scaled;
  }
  if (p.bias != nullptr) r = r + p.bias[j];
  if (c.type == OutputType::kFp32) {
    static_cast<float*>(c.data)[at] = r;
  } else {
    static_cast<Bf16*>(c.data)[at] = Fp32ToBf16Rne(r);
  }
}

// Below this many multiply-adds a GEMM runs on the calling thread.
constexpr std::size_t kSerialMacs = std::size_t{1} << 21;

// Outputs (i, j0 .. j0 + count - 1) from their accumulators.
void StoreOutputRow(const GemmOutput& c, const GemmParams& p, std::size_t i, std::size_t j0,
                    std::size_t count, const float* acc) {
  if (c.type == OutputType::kFp32 && c.col_stride == 1 && p.alpha == 1.0f && p.beta == 0.0f &&
      p.bias == nullptr) {
    std::memcpy(static_cast<float*>(c.data) + i * c.row_stride + j0, acc, count * sizeof(float));
    return;
  }
  for (std::size_t j = 0; j < count; ++j) StoreOutput(c, p, i, j0 + j, acc[j]);
}


// ---------------------------------------------------------------------------
// Tiled driver for the kFlat (float / double) and kQuad (int8) layouts.
// ---------------------------------------------------------------------------

enum class Layout : std::uint8_t { kFlatF32, kFlatF64, kQuadI8, kPair16 };

struct TiledPlan {
  Layout layout;
  MxTileKernel kernel;
  std::size_t chunk_blocks;  // K blocks per packed chunk.
  std::size_t panel_cols;    // Columns of B per panel (multiple of kernel.cols).
};

template <class T>
T Value(const FormatTable& t, std::uint8_t code) {
  if constexpr (sizeof(T) == sizeof(float)) {
    return t.value_f32[code];
  } else {
    return t.value[code];
  }
}

template <class T>
void PackFlatA(const LineReader& ra, std::size_t row0, std::size_t row1, std::size_t m,
               std::size_t blk0, std::size_t nb, T* a, std::size_t lda, double* fa,
               std::int32_t* ea, std::size_t ldfa) {
  std::uint8_t codes[kMxK];
  for (std::size_t r = row0; r < row1; ++r) {
    T* dst = a + r * lda;
    for (std::size_t b = 0; b < nb; ++b) {
      if (r < m) {
        ra.Codes(r, blk0 + b, codes);
        for (std::size_t i = 0; i < kMxK; ++i) {
          dst[b * kMxK + i] = Value<T>(*ra.table, codes[i]);
        }
        fa[r * ldfa + b] = ra.Factor(r, blk0 + b);
        ea[r * ldfa + b] = ra.Exponent(r, blk0 + b);
      } else {
        for (std::size_t i = 0; i < kMxK; ++i) dst[b * kMxK + i] = T(0);
        fa[r * ldfa + b] = 1.0;
        ea[r * ldfa + b] = 0;
      }
    }
  }
}

template <class T>
void PackFlatB(const LineReader& rb, std::size_t col_base, std::size_t c0, std::size_t c1,
               std::size_t n, std::size_t blk0, std::size_t nb, T* bp, std::size_t ldb,
               double* fb, std::int32_t* eb, std::size_t ldfb) {
  std::uint8_t codes[kMxK];
  for (std::size_t c = c0; c < c1; ++c) {
    const std::size_t j = col_base + c;
    for (std::size_t b = 0; b < nb; ++b) {
      T* dst = bp + b * kMxK * ldb + c;
      if (j < n) {
        rb.Codes(j, blk0 + b, codes);
        for (std::size_t i = 0; i < kMxK; ++i) {
          dst[i * ldb] = Value<T>(*rb.table, codes[i]);
        }
        fb[b * ldfb + c] = rb.Factor(j, blk0 + b);
        eb[b * ldfb + c] = rb.Exponent(j, blk0 + b);
      } else {
        for (std::size_t i = 0; i < kMxK; ++i) dst[i * ldb] = T(0);
        fb[b * ldfb + c] = 1.0;
        eb[b * ldfb + c] = 0;
      }
    }
  }
}

// FP4 code byte -> its two int8 values (element 2i low byte), for packing
// without unpacking nibbles one by one.
const std::array<std::uint16_t, 256>& Fp4PairTable() {
  static const std::array<std::uint16_t, 256> table = [] {
    std::array<std::uint16_t, 256> t{};
    const FormatTable& f = Table(MxFormat::kMxfp4);
    for (std::size_t b = 0; b < 256; ++b) {
      t[b] = static_cast<std::uint16_t>(static_cast<std::uint8_t>(f.value_i8[b & 0xF]) |
                                        (static_cast<std::uint8_t>(f.value_i8[b >> 4]) << 8));
    }
    return t;
  }();
  return table;
}

// Whole FP4 blocks (all 32 elements inside K) in the kQuad layouts.
bool PackQuadFp4Block(const LineReader& r, std::size_t line, std::size_t blk, std::int8_t* v) {
  if (r.table->element_bits != 4 || r.Valid(blk) != kMxK) return false;
  const std::array<std::uint16_t, 256>& pairs = Fp4PairTable();
  const std::uint8_t* src = r.Block(line, blk);
  for (std::size_t i = 0; i < kMxK / 2; ++i) std::memcpy(v + 2 * i, &pairs[src[i]], 2);
  return true;
}

void PackQuadA(const LineReader& ra, std::size_t row0, std::size_t row1, std::size_t m,
               std::size_t blk0, std::size_t nb, std::uint8_t* a, std::size_t lda, double* fa,
               std::int32_t* ea, std::size_t ldfa) {
  std::uint8_t codes[kMxK];
  for (std::size_t r = row0; r < row1; ++r) {
    std::uint8_t* dst = a + r * lda;
    for (std::size_t b = 0; b < nb; ++b) {
      if (r < m) {
        std::int8_t v[kMxK];
        if (!PackQuadFp4Block(ra, r, blk0 + b, v)) {
          ra.Codes(r, blk0 + b, codes);
          for (std::size_t i = 0; i < kMxK; ++i) v[i] = ra.table->value_i8[codes[i]];
        }
        for (std::size_t i = 0; i < kMxK; ++i) {
          // Unsigned operand: v + 128.
          dst[b * kMxK + i] = static_cast<std::uint8_t>(v[i] ^ 0x80);
        }
        fa[r * ldfa + b] = ra.Factor(r, blk0 + b);
        ea[r * ldfa + b] = ra.Exponent(r, blk0 + b);
      } else {
        std::memset(dst + b * kMxK, 128, kMxK);
        fa[r * ldfa + b] = 1.0;
        ea[r * ldfa + b] = 0;
      }
    }
  }
}

void PackQuadB(const LineReader& rb, std::size_t col_base, std::size_t c0, std::size_t c1,
               std::size_t n, std::size_t blk0, std::size_t nb, std::int8_t* bp, std::size_t ldb,
               double* fb, std::int32_t* eb, std::int32_t* colsum, std::size_t ldfb) {
  std::uint8_t codes[kMxK];
  for (std::size_t c = c0; c < c1; ++c) {
    const std::size_t j = col_base + c;
    for (std::size_t b = 0; b < nb; ++b) {
      std::int8_t* dst = bp + b * (kMxK / 4) * ldb + 4 * c;
      std::int32_t sum = 0;
      if (j < n) {
        std::int8_t v[kMxK];
        if (!PackQuadFp4Block(rb, j, blk0 + b, v)) {
          rb.Codes(j, blk0 + b, codes);
          for (std::size_t i = 0; i < kMxK; ++i) v[i] = rb.table->value_i8[codes[i]];
        }
        for (std::size_t q = 0; q < kMxK / 4; ++q) {
          std::memcpy(dst + q * ldb, v + 4 * q, 4);
          sum += v[4 * q] + v[4 * q + 1] + v[4 * q + 2] + v[4 * q + 3];
        }
        fb[b * ldfb + c] = rb.Factor(j, blk0 + b);
        eb[b * ldfb + c] = rb.Exponent(j, blk0 + b);
      } else {
        for (std::size_t i = 0; i < kMxK; ++i) dst[(i / 4) * ldb + (i % 4)] = 0;
        fb[b * ldfb + c] = 1.0;
        eb[b * ldfb + c] = 0;
      }
      colsum[b * ldfb + c] = -128 * sum;  // Removes the +128 bias of A.
    }
  }
}

// kPair16 A: window digits, exact split, flag (gemm_mx_kernels.h).
void PackPair16A(const LineReader& ra, std::size_t row0, std::size_t row1, std::size_t m,
                 std::size_t blk0, std::size_t nb, std::int16_t* a, std::size_t lda, double* fa,
                 std::uint8_t* aflag, std::size_t ldfa) {
  std::uint8_t codes[kMxK];
  for (std::size_t r = row0; r < row1; ++r) {
    for (std::size_t b = 0; b < nb; ++b) {
      std::int16_t* dst = a + r * lda + b * 3 * kMxK;
      if (r >= m) {
        std::memset(dst, 0, 3 * kMxK * sizeof(std::int16_t));
        fa[r * ldfa + b] = 1.0;
        aflag[r * ldfa + b] = 0;
        continue;
      }
      ra.Codes(r, blk0 + b, codes);
      const FormatTable& t = *ra.table;
      std::int32_t v[kMxK];
      std::uint32_t nan = 0;
      std::uint32_t max_abs = 0;
      std::uint32_t low_bits = 0;  // OR of the |v|: its trailing zeros bound every v's.
      for (std::size_t i = 0; i < kMxK; ++i) {
        v[i] = t.value_i32[codes[i]];
        nan |= t.nan[codes[i]];
        const std::uint32_t mag = static_cast<std::uint32_t>(v[i] < 0 ? -v[i] : v[i]);
        max_abs = std::max(max_abs, mag);
        low_bits |= mag;
        dst[kMxK + i] = t.lo16[codes[i]];
        dst[2 * kMxK + i] = t.hi16[codes[i]];
      }
      // Shift that brings |v| below 2^15; exact if no set bit is shifted out.
      const int width = std::bit_width(max_abs);
      const int shift = width > 15 ? width - 15 : 0;
      const bool fits = (low_bits & ((1u << shift) - 1u)) == 0;
      for (std::size_t i = 0; i < kMxK; ++i) {
        dst[i] = static_cast<std::int16_t>(fits ? v[i] >> shift : 0);
      }
      const double factor = ra.Factor(r, blk0 + b);
      fa[r * ldfa + b] = nan != 0 ? std::numeric_limits<double>::quiet_NaN()
                             : fits ? std::ldexp(factor, shift) : factor;
      aflag[r * ldfa + b] = fits ? 0 : 1;
    }
  }
}

// kPair16 B: v = hi * 512 + lo in two planes of k-pairs.
void PackPair16B(const LineReader& rb, std::size_t col_base, std::size_t c0, std::size_t c1,
                 std::size_t n, std::size_t blk0, std::size_t nb, std::int16_t* bp,
                 std::size_t ldb, double* fb, std::size_t ldfb) {
  std::uint8_t codes[kMxK];
  for (std::size_t c = c0; c < c1; ++c) {
    const std::size_t j = col_base + c;
    for (std::size_t b = 0; b < nb; ++b) {
      std::int16_t* dst = bp + b * kMxK * ldb + 2 * c;  // 16 lo + 16 hi pair rows per block.
      std::uint32_t nan = 0;
      if (j < n) {
        rb.Codes(j, blk0 + b, codes);
      } else {
        std::memset(codes, 0, sizeof(codes));
      }
      const FormatTable& t = *rb.table;
      for (std::size_t i = 0; i < kMxK; i += 2) {
        nan |= t.nan[codes[i]] | t.nan[codes[i + 1]];
        const std::int16_t lo_pair[2] = {t.lo16[codes[i]], t.lo16[codes[i + 1]]};
        const std::int16_t hi_pair[2] = {t.hi16[codes[i]], t.hi16[codes[i + 1]]};
        std::memcpy(dst + (i / 2) * ldb, lo_pair, sizeof(lo_pair));
        std::memcpy(dst + (kMxK / 2 + i / 2) * ldb, hi_pair, sizeof(hi_pair));
      }
      fb[b * ldfb + c] = j >= n   ? 1.0
                         : nan != 0 ? std::numeric_limits<double>::quiet_NaN()
                                    : rb.Factor(j, blk0 + b);
    }
  }
}

Status RunTiled(const TiledPlan& plan, const LineReader& ra, const LineReader& rb,
                std::size_t m, std::size_t n, std::size_t k, const GemmOutput& c,
                const GemmParams& params, Executor& pool) {
  // Small products run on the calling thread: the many short parallel
  // sections would cost more than they save (the bits are the same).
  SerialExecutor serial;
  Executor& executor = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) <
                               static_cast<double>(kSerialMacs)
                           ? static_cast<Executor&>(serial)
                           : pool;
  const std::size_t tr = plan.kernel.rows;
  const std::size_t tc = plan.kernel.cols;
  const std::size_t total_blocks = CeilDiv(k, kMxK);
  const std::size_t kcb = plan.chunk_blocks;
  const std::size_t kc = kcb * kMxK;
  const std::size_t mpad = RoundUp(m, tr);
  const std::size_t ncap = std::min(RoundUp(n, tc), RoundUp(plan.panel_cols, tc));
  const std::size_t threads = std::max<std::size_t>(1, executor.NumThreads());

  // Bytes per packed element of A and B (kPair16: A keeps 3, B 2 int16 per element).
  const std::size_t elem = plan.layout == Layout::kFlatF64   ? sizeof(double)
                           : plan.layout == Layout::kFlatF32 ? sizeof(float)
                                                             : 1;
  const std::size_t a_elem = plan.layout == Layout::kPair16 ? 3 * sizeof(std::int16_t) : elem;
  const std::size_t b_elem = plan.layout == Layout::kPair16 ? 2 * sizeof(std::int16_t) : elem;
  // 64-byte alignment of the packed panels and accumulators.
  auto aligned = [](std::vector<std::uint8_t>& buf, std::size_t bytes) {
    buf.assign(bytes + 64, 0);
    const auto p = reinterpret_cast<std::uintptr_t>(buf.data());
    return buf.data() + ((64 - p % 64) % 64);
  };
  std::vector<std::uint8_t> a_buf, b_buf, acc_buf;
  std::uint8_t* a_pack = aligned(a_buf, mpad * kc * a_elem);
  std::uint8_t* b_pack = aligned(b_buf, kc * ncap * b_elem);
  float* acc = reinterpret_cast<float*>(aligned(acc_buf, mpad * ncap * sizeof(float)));
  std::vector<double> fa(mpad * kcb), fb(kcb * ncap);
  std::vector<std::int32_t> ea(mpad * kcb), eb(kcb * ncap), colsum(kcb * ncap);
  std::vector<std::uint8_t> aflag(mpad * kcb);

  constexpr std::size_t kPackRows = 64;
  constexpr std::size_t kPackCols = 64;

  for (std::size_t jc = 0; jc < n; jc += ncap) {
    const std::size_t nc = std::min(ncap, RoundUp(n - jc, tc));
    std::fill(acc, acc + mpad * ncap, 0.0f);
    if (params.accumulate) {  // Chains continue from C (FP32, col_stride 1: validated).
      const auto* cd = static_cast<const float*>(c.data);
      const std::size_t cols = std::min(nc, n - jc);
      for (std::size_t i = 0; i < m; ++i) {
        std::memcpy(acc + i * ncap, cd + i * c.row_stride + jc, cols * sizeof(float));
      }
    }

    // Output tasks: row groups x column sub-panels, enough for the threads.
    const std::size_t group_rows = tr * 8;
    const std::size_t row_groups = CeilDiv(mpad, group_rows);
    const std::size_t want = 4 * threads;
    const std::size_t col_tiles = nc / tc;
    // Column sub-panels: enough tasks, and at most ~256 KB of packed B each
    // (re-read from L2 by every row tile).
    const std::size_t cap_tiles = std::max<std::size_t>(1, (256 << 10) / (kc * b_elem * tc));
    const std::size_t subs = std::min(
        col_tiles, std::max({std::size_t{1}, CeilDiv(want, row_groups), CeilDiv(col_tiles, cap_tiles)}));
    const std::size_t sub_cols = CeilDiv(col_tiles, subs) * tc;
    const std::size_t num_subs = CeilDiv(nc, sub_cols);

    for (std::size_t kb = 0; kb < total_blocks; kb += kcb) {
      const std::size_t nb = std::min(kcb, total_blocks - kb);
      const std::size_t a_tasks = CeilDiv(mpad, kPackRows);
      const std::size_t b_tasks = CeilDiv(nc, kPackCols);
      executor.ParallelFor(a_tasks + b_tasks, [&](std::size_t task) {
        if (task < a_tasks) {
          const std::size_t r0 = task * kPackRows;
          const std::size_t r1 = std::min(mpad, r0 + kPackRows);
          switch (plan.layout) {
            case Layout::kFlatF32:
              PackFlatA(ra, r0, r1, m, kb, nb, reinterpret_cast<float*>(a_pack), kc, fa.data(),
                        ea.data(), kcb);
              break;
            case Layout::kFlatF64:
              PackFlatA(ra, r0, r1, m, kb, nb, reinterpret_cast<double*>(a_pack), kc, fa.data(),
                        ea.data(), kcb);
              break;
            case Layout::kQuadI8:
              PackQuadA(ra, r0, r1, m, kb, nb, a_pack, kc, fa.data(), ea.data(), kcb);
              break;
            case Layout::kPair16:
              PackPair16A(ra, r0, r1, m, kb, nb, reinterpret_cast<std::int16_t*>(a_pack), 3 * kc,
                          fa.data(), aflag.data(), kcb);
              break;
          }
        } else {
          const std::size_t c0 = (task - a_tasks) * kPackCols;
          const std::size_t c1 = std::min(nc, c0 + kPackCols);
          switch (plan.layout) {
            case Layout::kFlatF32:
              PackFlatB(rb, jc, c0, c1, n, kb, nb, reinterpret_cast<float*>(b_pack), ncap,
                        fb.data(), eb.data(), ncap);
              break;
            case Layout::kFlatF64:
              PackFlatB(rb, jc, c0, c1, n, kb, nb, reinterpret_cast<double*>(b_pack), ncap,
                        fb.data(), eb.data(), ncap);
              break;
            case Layout::kQuadI8:
              PackQuadB(rb, jc, c0, c1, n, kb, nb, reinterpret_cast<std::int8_t*>(b_pack),
                        4 * ncap, fb.data(), eb.data(), colsum.data(), ncap);
              break;
            case Layout::kPair16:
              PackPair16B(rb, jc, c0, c1, n, kb, nb, reinterpret_cast<std::int16_t*>(b_pack),
                          2 * ncap, fb.data(), ncap);
              break;
          }
        }
      });

      executor.ParallelFor(row_groups * num_subs, [&](std::size_t task) {
        const std::size_t g = task / num_subs;
        const std::size_t s = task % num_subs;
        const std::size_t r_begin = g * group_rows;
        const std::size_t r_end = std::min(mpad, r_begin + group_rows);
        const std::size_t c_begin = s * sub_cols;
        const std::size_t c_end = std::min(nc, c_begin + sub_cols);
        MxTileArgs args;
        args.nblocks = nb;
        args.ldfa = kcb;
        args.ldfb = ncap;
        args.ldacc = ncap;
        for (std::size_t r = r_begin; r < r_end; r += tr) {
          for (std::size_t col = c_begin; col < c_end; col += tc) {
            args.a = a_pack + r * kc * a_elem;
            args.lda = kc;
            if (plan.layout == Layout::kQuadI8) {
              args.b = b_pack + 4 * col;
              args.ldb = 4 * ncap;
              args.colsum = colsum.data() + col;
            } else if (plan.layout == Layout::kPair16) {
              args.lda = 3 * kc;
              args.b = b_pack + 2 * sizeof(std::int16_t) * col;
              args.ldb = 2 * ncap;
              args.aflag = aflag.data() + r * kcb;
            } else {
              args.b = b_pack + col * elem;
              args.ldb = ncap;
            }
            args.fa = fa.data() + r * kcb;
            args.ea = ea.data() + r * kcb;
            args.fb = fb.data() + col;
            args.eb = eb.data() + col;
            args.acc = acc + r * ncap + col;
            plan.kernel.fn(args);
          }
        }
      });
    }

    // Epilogue for this panel's columns.
    const std::size_t cols_here = std::min(n - jc, nc);
    const std::size_t out_groups = CeilDiv(m, 16);
    executor.ParallelFor(out_groups, [&](std::size_t g) {
      const std::size_t i1 = std::min(m, (g + 1) * 16);
      for (std::size_t i = g * 16; i < i1; ++i) {
        StoreOutputRow(c, params, i, jc, cols_here, acc + i * ncap);
      }
    });
  }
  return OkStatus();
}

// ---------------------------------------------------------------------------
// Wide path: E5M2 x E4M3 and E5M2 x E5M2 (sums up to 2^69 units), scalar.
// ---------------------------------------------------------------------------

enum class Special : std::uint8_t { kFinite, kNan, kPosInf, kNegInf };

// 128-bit integers (GCC/Clang extension; __extension__ keeps -Wpedantic quiet).
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

struct WideElement {
  std::int64_t v;
  Special kind;
};

void DecodeWideLine(const LineReader& r, std::size_t line, WideElement* out) {
  const std::size_t blocks = CeilDiv(r.k, kMxK);
  std::uint8_t codes[kMxK];
  for (std::size_t b = 0; b < blocks; ++b) {
    r.Codes(line, b, codes);
    for (std::size_t i = 0; i < kMxK; ++i) {
      const double v = r.table->value[codes[i]];
      WideElement& e = out[b * kMxK + i];
      if (std::isnan(v)) {
        e = {0, Special::kNan};
      } else if (std::isinf(v)) {
        e = {0, v > 0 ? Special::kPosInf : Special::kNegInf};
      } else {
        e = {static_cast<std::int64_t>(v), Special::kFinite};
      }
    }
  }
}

// fl32(s * 2^e), one rounding: s rounded to 53 bits with round-to-odd (exact
// below 2^53), which a later round-to-nearest to <= 24 bits cannot tell from
// s itself; then an exact FP64 scaling and one FP64 -> FP32 conversion.
float RoundWide(Int128 s, int e) {
  if (s == 0) return 0.0f;
    const bool negative = s < 0;
  UInt128 u = negative ? UInt128(0) - static_cast<UInt128>(s) : static_cast<UInt128>(s);
  int shift = 0;
  while ((u >> 53) != 0) {
    const bool sticky = (u & 1u) != 0;
    u >>= 1;
    u |= sticky ? 1u : 0u;
    ++shift;
  }
  const double d = std::ldexp(static_cast<double>(static_cast<std::uint64_t>(u)), shift + e);
  const float f = static_cast<float>(d);
  return negative ? -f : f;
}

float WideBlock(const WideElement* x, const WideElement* w, std::int32_t ea, std::int32_t eb) {
  bool nan = ea == kMxScaleNanExponent || eb == kMxScaleNanExponent;
  bool pos_inf = false;
  bool neg_inf = false;
  Int128 s = 0;
  for (std::size_t i = 0; i < kMxK; ++i) {
    const WideElement a = x[i];
    const WideElement b = w[i];
    if (a.kind == Special::kFinite && b.kind == Special::kFinite) {
      s += static_cast<Int128>(a.v) * b.v;
      continue;
    }
    if (a.kind == Special::kNan || b.kind == Special::kNan) {
      nan = true;
      continue;
    }
    if ((a.kind == Special::kFinite && a.v == 0) || (b.kind == Special::kFinite && b.v == 0)) {
      nan = true;  // Inf * 0.
      continue;
    }
    const bool an = a.kind == Special::kFinite ? a.v < 0 : a.kind == Special::kNegInf;
    const bool bn = b.kind == Special::kFinite ? b.v < 0 : b.kind == Special::kNegInf;
    (an != bn ? neg_inf : pos_inf) = true;
  }
  if (nan || (pos_inf && neg_inf)) return std::numeric_limits<float>::quiet_NaN();
  if (pos_inf) return std::numeric_limits<float>::infinity();
  if (neg_inf) return -std::numeric_limits<float>::infinity();
  return RoundWide(s, ea + eb);
}

Status RunWide(const LineReader& ra, const LineReader& rb, std::size_t m, std::size_t n,
               std::size_t k, const GemmOutput& c, const GemmParams& params,
               Executor& pool) {
  SerialExecutor serial;
  Executor& executor = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) <
                               static_cast<double>(kSerialMacs) / 16
                           ? static_cast<Executor&>(serial)
                           : pool;
  constexpr std::size_t kTile = 32;
  const std::size_t blocks = CeilDiv(k, kMxK);
  const std::size_t kp = blocks * kMxK;
  const std::size_t row_tiles = CeilDiv(m, kTile);
  const std::size_t col_tiles = CeilDiv(n, kTile);
  executor.ParallelFor(row_tiles * col_tiles, [&](std::size_t task) {
    const std::size_t i0 = (task / col_tiles) * kTile;
    const std::size_t j0 = (task % col_tiles) * kTile;
    const std::size_t i1 = std::min(m, i0 + kTile);
    const std::size_t j1 = std::min(n, j0 + kTile);
    std::vector<WideElement> av((i1 - i0) * kp), bv((j1 - j0) * kp);
    std::vector<std::int32_t> eav((i1 - i0) * blocks), ebv((j1 - j0) * blocks);
    for (std::size_t i = i0; i < i1; ++i) {
      DecodeWideLine(ra, i, av.data() + (i - i0) * kp);
      for (std::size_t b = 0; b < blocks; ++b) eav[(i - i0) * blocks + b] = ra.Exponent(i, b);
    }
    for (std::size_t j = j0; j < j1; ++j) {
      DecodeWideLine(rb, j, bv.data() + (j - j0) * kp);
      for (std::size_t b = 0; b < blocks; ++b) ebv[(j - j0) * blocks + b] = rb.Exponent(j, b);
    }
    for (std::size_t i = i0; i < i1; ++i) {
      for (std::size_t j = j0; j < j1; ++j) {
        float acc = params.accumulate ? static_cast<const float*>(c.data)[i * c.row_stride + j] : 0.0f;
        for (std::size_t b = 0; b < blocks; ++b) {
          const float y = WideBlock(av.data() + (i - i0) * kp + b * kMxK,
                                    bv.data() + (j - j0) * kp + b * kMxK,
                                    eav[(i - i0) * blocks + b], ebv[(j - j0) * blocks + b]);
          acc = acc + y;
        }
        StoreOutput(c, params, i, j, acc);
      }
    }
  });
  return OkStatus();
}

}  // namespace

// ---------------------------------------------------------------------------
// AVX-512 VNNI kernel: 6 rows x 32 columns, int8 codes, vpdpbusd.
// ---------------------------------------------------------------------------

#if HWY_ARCH_X86
bool CpuHasAvx512Vnni() {
  static const bool has = __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512vnni");
  return has;
}

#define TRNMX_VNNI_TARGET \
  __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))

// Per block: S = sum (a + 128) * b + colsum = sum a * b (int32, exact, |S| <
// 2^19); fast epilogue when every 2^(ea + eb) of the tile is a normal FP32
// value and S * 2^(ea + eb) cannot overflow or become subnormal: then
// fma(float(S), 2^(ea + eb), acc) = fl32(acc + fl32(S * 2^e)) because the
// product is exact. Otherwise a scalar FP64 epilogue per output.
TRNMX_VNNI_TARGET void MxTileQuadI8Vnni(const MxTileArgs& t) {
  constexpr std::size_t kR = kMxVnniRows;
  constexpr std::size_t kC = kMxVnniCols / 16;
  const std::uint8_t* a = static_cast<const std::uint8_t*>(t.a);
  const std::int8_t* b = static_cast<const std::int8_t*>(t.b);
  __m512 acc[kR][kC];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < kR; ++r) {
#pragma GCC unroll 4
    for (std::size_t c = 0; c < kC; ++c) acc[r][c] = _mm512_loadu_ps(t.acc + r * t.ldacc + 16 * c);
  }
  for (std::size_t blk = 0; blk < t.nblocks; ++blk) {
    __m512i s[kR][kC];
    const std::int32_t* cs = t.colsum + blk * t.ldfb;
#pragma GCC unroll 4
    for (std::size_t c = 0; c < kC; ++c) {
      const __m512i init = _mm512_loadu_si512(cs + 16 * c);
#pragma GCC unroll 8
      for (std::size_t r = 0; r < kR; ++r) s[r][c] = init;
    }
    const std::int8_t* bk = b + blk * (kMxK / 4) * t.ldb;
    const std::uint8_t* ak = a + blk * kMxK;
#pragma GCC unroll 8
    for (std::size_t q = 0; q < kMxK / 4; ++q) {
      __m512i bv[kC];
#pragma GCC unroll 4
      for (std::size_t c = 0; c < kC; ++c) bv[c] = _mm512_loadu_si512(bk + q * t.ldb + 64 * c);
#pragma GCC unroll 8
      for (std::size_t r = 0; r < kR; ++r) {
        std::int32_t quad;
        std::memcpy(&quad, ak + r * t.lda + 4 * q, 4);
        const __m512i av = _mm512_set1_epi32(quad);
#pragma GCC unroll 4
        for (std::size_t c = 0; c < kC; ++c) s[r][c] = _mm512_dpbusd_epi32(s[r][c], av, bv[c]);
      }
    }
    // Range of the block exponents over the tile.
    std::int32_t a_min = t.ea[blk];
    std::int32_t a_max = a_min;
    for (std::size_t r = 1; r < kR; ++r) {
      a_min = std::min(a_min, t.ea[r * t.ldfa + blk]);
      a_max = std::max(a_max, t.ea[r * t.ldfa + blk]);
    }
    const std::int32_t* ebk = t.eb + blk * t.ldfb;
    __m512i eb[kC];
    __m512i vmin = _mm512_set1_epi32(std::numeric_limits<std::int32_t>::max());
    __m512i vmax = _mm512_set1_epi32(std::numeric_limits<std::int32_t>::min());
#pragma GCC unroll 4
    for (std::size_t c = 0; c < kC; ++c) {
      eb[c] = _mm512_loadu_si512(ebk + 16 * c);
      vmin = _mm512_min_epi32(vmin, eb[c]);
      vmax = _mm512_max_epi32(vmax, eb[c]);
    }
    const std::int32_t b_min = _mm512_reduce_min_epi32(vmin);
    const std::int32_t b_max = _mm512_reduce_max_epi32(vmax);
    // |S| < 2^23: S * 2^e is normal for e >= -126 and finite for e <= 104.
    if (a_min + b_min >= -126 && a_max + b_max <= 104) {
#pragma GCC unroll 4
      for (std::size_t c = 0; c < kC; ++c) {
        const __m512i eb_bits = _mm512_slli_epi32(eb[c], 23);
#pragma GCC unroll 8
        for (std::size_t r = 0; r < kR; ++r) {
          const __m512i bias = _mm512_set1_epi32((t.ea[r * t.ldfa + blk] + 127) << 23);
          const __m512 scale = _mm512_castsi512_ps(_mm512_add_epi32(bias, eb_bits));
          acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[r][c]), scale, acc[r][c]);
        }
      }
    } else {
      alignas(64) std::int32_t sv[16];
      alignas(64) float av[16];
      for (std::size_t r = 0; r < kR; ++r) {
        const double fa = t.fa[r * t.ldfa + blk];
        for (std::size_t c = 0; c < kC; ++c) {
          _mm512_store_si512(sv, s[r][c]);
          _mm512_store_ps(av, acc[r][c]);
          for (std::size_t l = 0; l < 16; ++l) {
            const double scale = fa * t.fb[blk * t.ldfb + 16 * c + l];
            const float y = static_cast<float>(static_cast<double>(sv[l]) * scale);
            av[l] = av[l] + y;
          }
          acc[r][c] = _mm512_load_ps(av);
        }
      }
    }
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < kR; ++r) {
#pragma GCC unroll 4
    for (std::size_t c = 0; c < kC; ++c) _mm512_storeu_ps(t.acc + r * t.ldacc + 16 * c, acc[r][c]);
  }
}

namespace {

// acc + fl32((t0 + 512 t1 + 2^18 t2) * fa * fb[0..15]) for 16 lanes: the
// int32 plane sums combine exactly in FP64 (|S| < 2^42), the scaling is
// exact in FP64 and CVTPD2PS rounds once (round-to-nearest-even, MXCSR
// default; overflow gives Inf, FP32 subnormals are rounded, not flushed).
TRNMX_VNNI_TARGET inline __m512 AccumulatePlanes(__m512 acc, __m512i t0, __m512i t1, __m512i t2,
                                                 double fa, const double* fb) {
  const __m512d f = _mm512_set1_pd(fa);
  const __m512d k512 = _mm512_set1_pd(512.0);
  const __m512d k2p18 = _mm512_set1_pd(262144.0);
  __m512d lo = _mm512_cvtepi32_pd(_mm512_castsi512_si256(t0));
  __m512d hi = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(t0, 1));
  lo = _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(t1)), k512, lo);
  hi = _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(t1, 1)), k512, hi);
  lo = _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(t2)), k2p18, lo);
  hi = _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(t2, 1)), k2p18, hi);
  const __m256 ylo = _mm512_cvtpd_ps(_mm512_mul_pd(lo, _mm512_mul_pd(f, _mm512_loadu_pd(fb))));
  const __m256 yhi = _mm512_cvtpd_ps(_mm512_mul_pd(hi, _mm512_mul_pd(f, _mm512_loadu_pd(fb + 8))));
  const __m512 y = _mm512_insertf32x8(_mm512_zextps256_ps512(ylo), yhi, 1);
  return _mm512_add_ps(acc, y);
}

TRNMX_VNNI_TARGET inline __m512i BroadcastPair(const std::int16_t* p) {
  std::int32_t pair;
  std::memcpy(&pair, p, sizeof(pair));
  return _mm512_set1_epi32(pair);
}

}  // namespace

// Per block, rows with a window (aflag 0): T0 = sum d * lo, T1 = sum d * hi
// (|T| < 2^29), S / 2^w = T0 + 512 T1. Rows without (aflag 1, values spread
// over more than 15 bits, rare): the exact split of A, four plane products.
TRNMX_VNNI_TARGET void MxTilePair16Vnni(const MxTileArgs& t) {
  constexpr std::size_t kR = kMxVnniRows;
  constexpr std::size_t kC = kMxVnniCols / 16;
  constexpr std::size_t kPairs = kMxK / 2;
  const std::int16_t* a = static_cast<const std::int16_t*>(t.a);
  const std::int16_t* b = static_cast<const std::int16_t*>(t.b);
  const __m512i zero = _mm512_setzero_si512();
  for (std::size_t blk = 0; blk < t.nblocks; ++blk) {
    const std::int16_t* bl = b + blk * kMxK * t.ldb;
    const std::int16_t* bh = bl + kPairs * t.ldb;
    const std::int16_t* ak = a + blk * 3 * kMxK;
    __m512i lo[kR][kC];
    __m512i hi[kR][kC];
#pragma GCC unroll 8
    for (std::size_t r = 0; r < kR; ++r) {
#pragma GCC unroll 4
      for (std::size_t c = 0; c < kC; ++c) lo[r][c] = hi[r][c] = zero;
    }
#pragma GCC unroll 4
    for (std::size_t p = 0; p < kPairs; ++p) {
      __m512i vl[kC];
      __m512i vh[kC];
#pragma GCC unroll 4
      for (std::size_t c = 0; c < kC; ++c) {
        vl[c] = _mm512_loadu_si512(bl + p * t.ldb + 32 * c);
        vh[c] = _mm512_loadu_si512(bh + p * t.ldb + 32 * c);
      }
#pragma GCC unroll 8
      for (std::size_t r = 0; r < kR; ++r) {
        const __m512i av = BroadcastPair(ak + r * t.lda + 2 * p);
#pragma GCC unroll 4
        for (std::size_t c = 0; c < kC; ++c) {
          lo[r][c] = _mm512_dpwssd_epi32(lo[r][c], av, vl[c]);
          hi[r][c] = _mm512_dpwssd_epi32(hi[r][c], av, vh[c]);
        }
      }
    }
    const double* fb = t.fb + blk * t.ldfb;
#pragma GCC unroll 8
    for (std::size_t r = 0; r < kR; ++r) {
      float* acc = t.acc + r * t.ldacc;
      const double fa = t.fa[r * t.ldfa + blk];
      if (t.aflag[r * t.ldfa + blk] == 0) {
#pragma GCC unroll 4
        for (std::size_t c = 0; c < kC; ++c) {
          const __m512 sum = _mm512_loadu_ps(acc + 16 * c);
          _mm512_storeu_ps(acc + 16 * c, AccumulatePlanes(sum, lo[r][c], hi[r][c], zero, fa, fb + 16 * c));
        }
      } else {
        const std::int16_t* avl = ak + r * t.lda + kMxK;
        const std::int16_t* avh = avl + kMxK;
        for (std::size_t c = 0; c < kC; ++c) {
          __m512i ll = zero, mid = zero, hh = zero;
          for (std::size_t p = 0; p < kPairs; ++p) {
            const __m512i bvl = _mm512_loadu_si512(bl + p * t.ldb + 32 * c);
            const __m512i bvh = _mm512_loadu_si512(bh + p * t.ldb + 32 * c);
            const __m512i xl = BroadcastPair(avl + 2 * p);
            const __m512i xh = BroadcastPair(avh + 2 * p);
            ll = _mm512_dpwssd_epi32(ll, xl, bvl);
            mid = _mm512_dpwssd_epi32(mid, xl, bvh);
            mid = _mm512_dpwssd_epi32(mid, xh, bvl);
            hh = _mm512_dpwssd_epi32(hh, xh, bvh);
          }
          const __m512 sum = _mm512_loadu_ps(acc + 16 * c);
          _mm512_storeu_ps(acc + 16 * c, AccumulatePlanes(sum, ll, mid, hh, fa, fb + 16 * c));
        }
      }
    }
  }
}

// GEMV, MXFP4 weights: see gemm_mx_kernels.h. Per group of 16 columns and
// chunk of 4 blocks (64 code bytes per column): 16 loads, nibbles through a
// vpshufb table to w + 12, two vpdpbusd against the even / odd activation
// bytes (the accumulator starts at -12 * sum a in the block's first lane), a
// transpose-reduction to one int32 per (block, column), then per block
// y = VSCALEFPS(float(S), e) = fl32(S * 2^e) (one rounding, subnormals and
// overflow included; S is exact in FP32) and acc = fl32(acc + y).
TRNMX_VNNI_TARGET void MxGemvFp4Vnni(const MxGemvArgs& g, std::size_t j0, std::size_t j1,
                                     float* acc_out) {
  const __m512i lut = _mm512_broadcast_i32x4(
      _mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  // Byte b of every int32 lane to the lane's low byte, zeros above (vpshufb
  // indexes within 128-bit lanes: int32 lane t % 4 starts at byte 4 (t % 4)).
  __m512i pick[4];
  for (int b = 0; b < 4; ++b) {
    pick[b] = _mm512_broadcast_i32x4(_mm_setr_epi32(
        static_cast<int>(0x80808000u | static_cast<unsigned>(b)), static_cast<int>(0x80808004u | static_cast<unsigned>(b)),
        static_cast<int>(0x80808008u | static_cast<unsigned>(b)), static_cast<int>(0x8080800Cu | static_cast<unsigned>(b))));
  }
  const std::size_t chunks = (g.blocks + 3) / 4;
  for (std::size_t jg = j0; jg < j1; jg += 16) {
    const std::uint8_t* col[16];
    for (std::size_t l = 0; l < 16; ++l) {
      const std::size_t j = std::min(jg + l, j1 - 1);  // Tail lanes repeat the last column.
      col[l] = g.codes + j * g.codes_stride;
    }
    const std::size_t last = std::min<std::size_t>(15, j1 - 1 - jg);
    const __m512i scale_index = _mm512_mullo_epi32(
        _mm512_min_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int>(last))),
        _mm512_set1_epi32(static_cast<int>(g.scales_stride)));
    const std::uint8_t* scales = g.scales + jg * g.scales_stride;
    __m512 acc = _mm512_setzero_ps();
    for (std::size_t ch = 0; ch < chunks; ++ch) {
      const std::size_t nb = std::min<std::size_t>(4, g.blocks - 4 * ch);
      const __mmask64 load_mask = nb == 4 ? ~__mmask64{0} : (__mmask64{1} << (16 * nb)) - 1;
      const __m512i ae = _mm512_loadu_si512(g.a_even + 64 * ch);
      const __m512i ao = _mm512_loadu_si512(g.a_odd + 64 * ch);
      const __m512i init = _mm512_loadu_si512(g.corr + 16 * ch);
      __m512i p[16];
#pragma GCC unroll 16
      for (std::size_t l = 0; l < 16; ++l) {
        const __m512i v = _mm512_maskz_loadu_epi8(load_mask, col[l] + 64 * ch);
        const __m512i wl = _mm512_shuffle_epi8(lut, _mm512_and_si512(v, nibble));
        const __m512i wh = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble));
        p[l] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(init, wl, ae), wh, ao);
      }
      // Sum the 4 lanes of each block and transpose to z[block][column].
      __m512i y[4];
#pragma GCC unroll 4
      for (std::size_t q = 0; q < 4; ++q) {
        const __m512i* pq = p + 4 * q;
        const __m512i x01 = _mm512_add_epi32(_mm512_unpacklo_epi32(pq[0], pq[1]),
                                             _mm512_unpackhi_epi32(pq[0], pq[1]));
        const __m512i x23 = _mm512_add_epi32(_mm512_unpacklo_epi32(pq[2], pq[3]),
                                             _mm512_unpackhi_epi32(pq[2], pq[3]));
        y[q] = _mm512_add_epi32(_mm512_unpacklo_epi64(x01, x23), _mm512_unpackhi_epi64(x01, x23));
      }
      const __m512i t0 = _mm512_shuffle_i32x4(y[0], y[1], _MM_SHUFFLE(1, 0, 1, 0));
      const __m512i t1 = _mm512_shuffle_i32x4(y[0], y[1], _MM_SHUFFLE(3, 2, 3, 2));
      const __m512i t2 = _mm512_shuffle_i32x4(y[2], y[3], _MM_SHUFFLE(1, 0, 1, 0));
      const __m512i t3 = _mm512_shuffle_i32x4(y[2], y[3], _MM_SHUFFLE(3, 2, 3, 2));
      const __m512i z[4] = {_mm512_shuffle_i32x4(t0, t2, _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_i32x4(t0, t2, _MM_SHUFFLE(3, 1, 3, 1)),
                            _mm512_shuffle_i32x4(t1, t3, _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_i32x4(t1, t3, _MM_SHUFFLE(3, 1, 3, 1))};
      // Scale bytes of the chunk's blocks: one int32 (4 blocks) per column.
      __m512i sv;
      if (nb == 4) {
        sv = _mm512_i32gather_epi32(scale_index, scales + 4 * ch, 1);
      } else {
        alignas(64) std::uint32_t sbytes[16];
        for (std::size_t l = 0; l < 16; ++l) {
          const std::uint8_t* sc = scales + std::min(l, last) * g.scales_stride + 4 * ch;
          std::uint32_t w = 0;
          for (std::size_t b = 0; b < nb; ++b) w |= static_cast<std::uint32_t>(sc[b]) << (8 * b);
          sbytes[l] = w;
        }
        sv = _mm512_load_si512(sbytes);
      }
      // Scale FF (NaN) anywhere in the chunk (unused bytes of a tail chunk are
      // 0): exact scalar handling.
      bool nan_scale = _mm512_cmpeq_epi8_mask(sv, _mm512_set1_epi8(-1)) != 0;
      for (std::size_t b = 0; b < nb; ++b) nan_scale = nan_scale || g.ea[4 * ch + b] == kMxScaleNanExponent;
      if (!nan_scale) {
#pragma GCC unroll 4
        for (std::size_t b = 0; b < 4; ++b) {
          if (b >= nb) break;
          // e = (sa - 127 + qa) + (sb - 127 + qb), qb = -1 for E2M1.
          const __m512i sb = _mm512_shuffle_epi8(sv, pick[b]);
          const __m512 e = _mm512_cvtepi32_ps(_mm512_add_epi32(sb, _mm512_set1_epi32(g.ea[4 * ch + b] - 128)));
          acc = _mm512_add_ps(acc, _mm512_scalef_ps(_mm512_cvtepi32_ps(z[b]), e));
        }
      } else {
        alignas(64) std::int32_t sl[16];
        alignas(64) std::uint32_t bl[16];
        alignas(64) float al[16];
        _mm512_store_si512(bl, sv);
        _mm512_store_ps(al, acc);
        for (std::size_t b = 0; b < nb; ++b) {
          _mm512_store_si512(sl, z[b]);
          const std::int32_t ea = g.ea[4 * ch + b];
          for (std::size_t l = 0; l < 16; ++l) {
            const std::uint32_t sb = (bl[l] >> (8 * b)) & 0xFFu;
            const float yv = ea == kMxScaleNanExponent || sb == 0xFF
                                 ? std::numeric_limits<float>::quiet_NaN()
                                 : static_cast<float>(std::ldexp(static_cast<double>(sl[l]),
                                                                 ea + static_cast<int>(sb) - 128));
            al[l] = al[l] + yv;
          }
        }
        acc = _mm512_load_ps(al);
      }
    }
    alignas(64) float out[16];
    _mm512_store_ps(out, acc);
    for (std::size_t l = 0; l < 16 && jg + l < j1; ++l) acc_out[jg - j0 + l] = out[l];
  }
}

// Dense x MXFP4 GEMV (gemv_mx.h): 64 columns per step as 4 FMA chains of 16
// lanes. Per group of 16 columns and chunk of 4 blocks, the 16 x 64 code
// bytes are loaded row by row and transposed as a 16 x 16 matrix of dwords
// (dword d of a column holds its elements 8 d .. 8 d + 7), so that one
// vector holds 8 consecutive elements of 16 columns; VPERMPS maps nibbles to
// E2M1 values (it reads the low 4 bits of each index lane), one multiply by
// the column's block scale gives w = fl32(value * 2^(s - 127)), and
// acc = fma(x_k, w, acc) runs in K order. No gathers (slow on some x86).
TRNMX_VNNI_TARGET inline void Transpose16x16Epi32(__m512i* r) {
  __m512i t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  __m512i u[16];
  for (int i = 0; i < 4; ++i) {
    u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  // u[4 i + j], 128-bit lane L: rows 4 i .. 4 i + 3 at column 4 L + j.
  for (int j = 0; j < 4; ++j) {
    const __m512i a0 = _mm512_shuffle_i32x4(u[j], u[4 + j], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i a1 = _mm512_shuffle_i32x4(u[j], u[4 + j], _MM_SHUFFLE(3, 2, 3, 2));
    const __m512i a2 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i a3 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], _MM_SHUFFLE(3, 2, 3, 2));
    r[j] = _mm512_shuffle_i32x4(a0, a2, _MM_SHUFFLE(2, 0, 2, 0));
    r[4 + j] = _mm512_shuffle_i32x4(a0, a2, _MM_SHUFFLE(3, 1, 3, 1));
    r[8 + j] = _mm512_shuffle_i32x4(a1, a3, _MM_SHUFFLE(2, 0, 2, 0));
    r[12 + j] = _mm512_shuffle_i32x4(a1, a3, _MM_SHUFFLE(3, 1, 3, 1));
  }
}

TRNMX_VNNI_TARGET void GemvDenseFp4Kernel(const float* x, std::size_t k, const std::uint8_t* codes,
                                          std::size_t codes_stride, const std::uint8_t* scales,
                                          std::size_t scales_stride, std::size_t j0,
                                          std::size_t j1, float* out) {
  const __m512 lut = _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f,
                                    -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f);
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 nan = _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN());
  const __m512i byte_mask = _mm512_set1_epi32(0xFF);
  const std::size_t blocks = (k + kMxK - 1) / kMxK;
  const std::size_t chunks = (blocks + 3) / 4;
  constexpr std::size_t kG = 4;
  for (std::size_t jg = j0; jg < j1; jg += 16 * kG) {
    const std::uint8_t* col[16 * kG];
    const std::uint8_t* sc[16 * kG];
    for (std::size_t l = 0; l < 16 * kG; ++l) {
      const std::size_t j = std::min(jg + l, j1 - 1);  // Tail lanes repeat the last column.
      col[l] = codes + j * codes_stride;
      sc[l] = scales + j * scales_stride;
    }
    __m512 acc[kG];
    for (std::size_t g = 0; g < kG; ++g) acc[g] = _mm512_setzero_ps();
    for (std::size_t ch = 0; ch < chunks; ++ch) {
      const std::size_t nb = std::min<std::size_t>(4, blocks - 4 * ch);
      const __mmask64 load_mask = nb == 4 ? ~__mmask64{0} : (__mmask64{1} << (16 * nb)) - 1;
      alignas(64) __m512i q[kG][16];
      __m512 scale[kG][4];
      for (std::size_t g = 0; g < kG; ++g) {
#pragma GCC unroll 16
        for (std::size_t l = 0; l < 16; ++l) {
          q[g][l] = _mm512_maskz_loadu_epi8(load_mask, col[16 * g + l] + 64 * ch);
        }
        Transpose16x16Epi32(q[g]);
        alignas(64) std::uint32_t sbytes[16];
        for (std::size_t l = 0; l < 16; ++l) {
          std::uint32_t w = 0;
          if (nb == 4) {
            std::memcpy(&w, sc[16 * g + l] + 4 * ch, 4);
          } else {
            for (std::size_t b = 0; b < nb; ++b) w |= static_cast<std::uint32_t>(sc[16 * g + l][4 * ch + b]) << (8 * b);
          }
          sbytes[l] = w;
        }
        const __m512i sv = _mm512_load_si512(sbytes);
        for (std::size_t b = 0; b < 4; ++b) {
          // 2^(s - 127) by VSCALEFPS (00 -> the subnormal 2^-127), FF -> NaN.
          const __m512i sb = _mm512_and_si512(_mm512_srli_epi32(sv, static_cast<unsigned>(8 * b)), byte_mask);
          const __m512 e = _mm512_cvtepi32_ps(_mm512_sub_epi32(sb, _mm512_set1_epi32(127)));
          scale[g][b] = _mm512_mask_blend_ps(_mm512_cmpeq_epi32_mask(sb, byte_mask), _mm512_scalef_ps(one, e), nan);
        }
      }
      const float* xc = x + ch * 4 * kMxK;
      const std::size_t valid = std::min<std::size_t>(4 * kMxK, k - ch * 4 * kMxK);
      for (std::size_t d = 0; d < 16 && 8 * d < valid; ++d) {
        const std::size_t b = d / 4;
        if (8 * d + 8 <= valid) {
#pragma GCC unroll 8
          for (std::size_t e = 0; e < 8; ++e) {
            const __m512 xv = _mm512_set1_ps(xc[8 * d + e]);
#pragma GCC unroll 4
            for (std::size_t g = 0; g < kG; ++g) {
              const __m512i idx = _mm512_srli_epi32(q[g][d], static_cast<unsigned>(4 * e));
              const __m512 w = _mm512_mul_ps(_mm512_permutexvar_ps(idx, lut), scale[g][b]);
              acc[g] = _mm512_fmadd_ps(xv, w, acc[g]);
            }
          }
        } else {
          for (std::size_t e = 0; 8 * d + e < valid; ++e) {
            const __m512 xv = _mm512_set1_ps(xc[8 * d + e]);
            for (std::size_t g = 0; g < kG; ++g) {
              const __m512i idx = _mm512_srlv_epi32(q[g][d], _mm512_set1_epi32(static_cast<int>(4 * e)));
              const __m512 w = _mm512_mul_ps(_mm512_permutexvar_ps(idx, lut), scale[g][b]);
              acc[g] = _mm512_fmadd_ps(xv, w, acc[g]);
            }
          }
        }
      }
    }
    alignas(64) float lanes[16 * kG];
    for (std::size_t g = 0; g < kG; ++g) _mm512_store_ps(lanes + 16 * g, acc[g]);
    for (std::size_t l = 0; l < 16 * kG && jg + l < j1; ++l) out[jg - j0 + l] = lanes[l];
  }
}
#undef TRNMX_VNNI_TARGET
#else
bool CpuHasAvx512Vnni() { return false; }
void MxTileQuadI8Vnni(const MxTileArgs&) {}
void MxTilePair16Vnni(const MxTileArgs&) {}
void MxGemvFp4Vnni(const MxGemvArgs&, std::size_t, std::size_t, float*) {}
void GemvDenseFp4Kernel(const float*, std::size_t, const std::uint8_t*, std::size_t,
                        const std::uint8_t*, std::size_t, std::size_t, std::size_t, float*) {}
#endif

// ---------------------------------------------------------------------------
// Entry point.
// ---------------------------------------------------------------------------

namespace {

// The tiled plan for a pairing on the current target; false: the wide path.
bool ChoosePlan(const FormatTable& ta, const FormatTable& tb, TiledPlan* plan) {
  if ((ta.wide && !tb.small) || (tb.wide && !ta.small)) return false;
  const MxTileKernels kernels = HWY_DYNAMIC_DISPATCH(GetMxTileKernels)();
  const bool e4m3_pair = !ta.wide && !tb.wide && !(ta.small && tb.small);
  if (ta.int8 && tb.int8 && kernels.quad_i8.fn != nullptr) {
    *plan = {Layout::kQuadI8, kernels.quad_i8, 16, 2048};
  } else if (e4m3_pair && kernels.pair_i16.fn != nullptr) {
    *plan = {Layout::kPair16, kernels.pair_i16, 8, 2048};
  } else if (ta.small && tb.small) {
    *plan = {Layout::kFlatF32, kernels.flat_f32, 8, 2048};
  } else {
    *plan = {Layout::kFlatF64, kernels.flat_f64, 4, 2048};
  }
  return true;
}

}  // namespace

namespace {

// Rows of A one at a time against MXFP4 weights, streaming B once per row.
Status RunGemvFp4(const LineReader& ra, const LineReader& rb, std::size_t m, std::size_t n,
                  std::size_t k, const GemmOutput& c, const GemmParams& params,
                  Executor& pool) {
  const std::size_t blocks = CeilDiv(k, kMxK);
  const std::size_t padded = RoundUp(blocks, 4) * (kMxK / 2);
  std::vector<std::int8_t> a_even(padded + 64), a_odd(padded + 64);
  std::vector<std::int32_t> corr(RoundUp(blocks, 4) * 4), ea(blocks);
  SerialExecutor serial;
  Executor& executor = static_cast<double>(n) * static_cast<double>(k) < static_cast<double>(kSerialMacs)
                           ? static_cast<Executor&>(serial)
                           : pool;
  const std::size_t threads = std::max<std::size_t>(1, executor.NumThreads());
  // Column ranges: multiples of 16, about 4 per thread, at most 4096 columns.
  const std::size_t per_task =
      std::clamp<std::size_t>(RoundUp(CeilDiv(n, 4 * threads), 16), 16, 4096);
  const std::size_t tasks = CeilDiv(n, per_task);
  MxGemvArgs g;
  g.a_even = a_even.data();
  g.a_odd = a_odd.data();
  g.corr = corr.data();
  g.ea = ea.data();
  g.blocks = blocks;
  g.codes = rb.view->codes;
  g.codes_stride = rb.view->codes_stride;
  g.scales = rb.view->scales;
  g.scales_stride = rb.view->scales_stride;
  std::uint8_t codes[kMxK];
  for (std::size_t i = 0; i < m; ++i) {
    std::fill(a_even.begin(), a_even.end(), std::int8_t{0});
    std::fill(a_odd.begin(), a_odd.end(), std::int8_t{0});
    for (std::size_t b = 0; b < blocks; ++b) {
      ra.Codes(i, b, codes);  // Codes past K read as 0: those products vanish.
      std::int32_t sum = 0;
      for (std::size_t e = 0; e < kMxK / 2; ++e) {
        a_even[b * (kMxK / 2) + e] = ra.table->value_i8[codes[2 * e]];
        a_odd[b * (kMxK / 2) + e] = ra.table->value_i8[codes[2 * e + 1]];
        sum += ra.table->value_i8[codes[2 * e]] + ra.table->value_i8[codes[2 * e + 1]];
      }
      corr[4 * b] = -12 * sum;  // Lane 4 (b % 4) of chunk b / 4; the other lanes stay 0.
      ea[b] = ra.Exponent(i, b);
    }
    executor.ParallelFor(tasks, [&](std::size_t t) {
      const std::size_t j0 = t * per_task;
      const std::size_t j1 = std::min(n, j0 + per_task);
      std::vector<float> acc(j1 - j0);
      MxGemvFp4Vnni(g, j0, j1, acc.data());
      StoreOutputRow(c, params, i, j0, j1 - j0, acc.data());
    });
  }
  return OkStatus();
}

// M up to this many rows with MXFP4 weights stream B once per row.
constexpr std::size_t kGemvMaxRows = 4;

bool UseGemv(const FormatTable& ta, MxFormat fb, std::size_t m) {
  const MxTileKernels kernels = HWY_DYNAMIC_DISPATCH(GetMxTileKernels)();
  return m <= kGemvMaxRows && fb == MxFormat::kMxfp4 && ta.int8 && kernels.quad_i8.fn != nullptr;
}

}  // namespace

bool GemvDenseMx(const GemmOperand& a, const GemmOperand& b, const GemmOutput& c,
                 const GemmParams& params, Executor& pool) {
  if (a.type == OperandType::kMx || b.type != OperandType::kMx || a.rows != 1 || params.accumulate) {
    return false;
  }
  const MxTensorView& w = b.mx;
  if (w.shape.format != MxFormat::kMxfp4 || w.shape.axis != BlockAxis::kCols) return false;
  const std::size_t k = a.cols;
  const std::size_t n = w.shape.cols;
  if (HWY_DYNAMIC_DISPATCH(GetMxTileKernels)().quad_i8.fn == nullptr) return false;
  if (n == 0) return true;
  std::vector<float> x(k);
  for (std::size_t i = 0; i < k; ++i) {
    const std::size_t at = i * a.col_stride;
    x[i] = a.type == OperandType::kFp32
               ? static_cast<const float*>(a.data)[at]
               : std::bit_cast<float>(static_cast<std::uint32_t>(static_cast<const Bf16*>(a.data)[at].bits) << 16);
  }
  SerialExecutor serial;
  Executor& executor = static_cast<double>(n) * static_cast<double>(k) < static_cast<double>(kSerialMacs)
                           ? static_cast<Executor&>(serial)
                           : pool;
  const std::size_t threads = std::max<std::size_t>(1, executor.NumThreads());
  const std::size_t per_task = std::clamp<std::size_t>(RoundUp(CeilDiv(n, 4 * threads), 64), 64, 4096);
  executor.ParallelFor(CeilDiv(n, per_task), [&](std::size_t t) {
    const std::size_t j0 = t * per_task;
    const std::size_t j1 = std::min(n, j0 + per_task);
    std::vector<float> acc(j1 - j0);
    GemvDenseFp4Kernel(x.data(), k, w.codes, w.codes_stride, w.scales, w.scales_stride, j0, j1,
                       acc.data());
    StoreOutputRow(c, params, 0, j0, j1 - j0, acc.data());
  });
  return true;
}

const char* GemmMxMxPathName(MxFormat a, MxFormat b) {
  if (a == MxFormat::kNvfp4 || b == MxFormat::kNvfp4) return "unsupported";
  TiledPlan plan;
  if (!ChoosePlan(Table(a), Table(b), &plan)) return "wide";
  switch (plan.layout) {
    case Layout::kQuadI8: return "vnni-i8";
    case Layout::kFlatF32: return "flat-f32";
    case Layout::kFlatF64: return "flat-f64";
    case Layout::kPair16: return "vnni-i16";
  }
  return "";
}

Status GemmMxMx(const GemmOperand& a, const GemmOperand& b, const GemmOutput& c,
                const GemmParams& params, Executor& executor) {
  const MxTensorView& av = a.mx;
  const MxTensorView& bv = b.mx;
  const std::size_t m = av.shape.rows;
  const std::size_t k = av.shape.cols;
  const std::size_t n = bv.shape.cols;
  if (av.shape.format == MxFormat::kNvfp4 || bv.shape.format == MxFormat::kNvfp4 ||
      av.shape.axis != BlockAxis::kRows || bv.shape.axis != BlockAxis::kCols ||
      bv.shape.rows != k || c.rows != m || c.cols != n) {
    // Gemm() rejects these before calling; never read such operands.
    return InvalidArgumentError("GemmMxMx: operands not validated (NVFP4, axis or shape)");
  }
  if (m == 0 || n == 0) return OkStatus();
  const FormatTable& ta = Table(av.shape.format);
  const FormatTable& tb = Table(bv.shape.format);
  const LineReader ra{&av, &ta, k};
  const LineReader rb{&bv, &tb, k};

  if (UseGemv(ta, bv.shape.format, m) && !params.accumulate) return RunGemvFp4(ra, rb, m, n, k, c, params, executor);
  TiledPlan plan;
  if (!ChoosePlan(ta, tb, &plan)) return RunWide(ra, rb, m, n, k, c, params, executor);
  return RunTiled(plan, ra, rb, m, n, k, c, params, executor);
}

}  // namespace internal
}  // namespace trnmx
#endif  // HWY_ONCE
