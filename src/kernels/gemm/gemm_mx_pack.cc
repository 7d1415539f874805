// MX x MX GEMM operands (gemm_mx_internal.h): the per-format element tables,
// block unpacking, and packing into the micro-kernels' layouts
// (gemm_mx_kernels.h). Plain C++ (kPair16 B of 8-bit codes through the
// AVX-512 VNNI file's vector form, which writes the same bytes): the same
// packed bytes on every target.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/gemm/gemm_mx_internal.h"
#include "kernels/gemm/gemm_mx_kernels.h"
#include "trnmx/formats/mx_block.h"
#include "trnmx/formats/visit.h"

namespace trnmx::internal {
namespace {

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
  const int max_bits = std::bit_width(static_cast<std::uint32_t>(max_abs));
  t.i8_planes = t.int8 ? 1 : t.wide ? 0 : static_cast<std::size_t>((max_bits + 6) / 7);
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
    t.lo16_nan[c] = t.nan[c] != 0 ? std::int16_t{-1} : t.lo16[c];
  }
  return t;
}

// The packed element of the kFlat layouts (gemm_mx_kernels.h): float v,
// or double v * f with the block factor f folded in (exact: a power of two
// within FP64's normal range, or NaN for scale FF).
template <class T>
T Folded(const FormatTable& t, std::uint8_t code, double f) {
  if constexpr (sizeof(T) == sizeof(float)) {
    return t.value_f32[code];
  } else {
    return t.value[code] * f;
  }
}

// FP4 code byte -> its two int8 values (element 2i low byte), for packing
// without unpacking nibbles one by one.
const std::array<std::uint16_t, 256>& Fp4PairTable() {
  static const std::array<std::uint16_t, 256> table = [] {
    std::array<std::uint16_t, 256> t{};
    const FormatTable& f = GetFormatTable(MxFormat::kMxfp4);
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

}  // namespace

const FormatTable& GetFormatTable(MxFormat f) {
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
        const double f = ra.Factor(r, blk0 + b);
        for (std::size_t i = 0; i < kMxK; ++i) {
          dst[b * kMxK + i] = Folded<T>(*ra.table, codes[i], f);
        }
        fa[r * ldfa + b] = f;
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
  // Per block, the codes of up to 64 columns of the tile first, then each
  // of the block's 32 rows of them stored in one run (stores 8 bytes apart,
  // not a tile row apart, column by column: 2 - 3 % of the exact MXFP8
  // GEMM's time on Zen 3).
  constexpr std::size_t kGroup = 64;
  std::uint8_t codes[kGroup][kMxK];
  double f[kGroup];
  for (std::size_t g0 = c0; g0 < c1; g0 += kGroup) {
    const std::size_t cols = std::min(kGroup, c1 - g0);
    for (std::size_t b = 0; b < nb; ++b) {
      for (std::size_t c = 0; c < cols; ++c) {
        const std::size_t j = col_base + g0 + c;
        const bool real = j < n;
        if (real) {
          rb.Codes(j, blk0 + b, codes[c]);
        } else {
          std::memset(codes[c], 0, kMxK);
        }
        f[c] = real ? rb.Factor(j, blk0 + b) : 1.0;
        fb[b * ldfb + g0 + c] = f[c];
        eb[b * ldfb + g0 + c] = real ? rb.Exponent(j, blk0 + b) : 0;
      }
      T* dst = bp + b * kMxK * ldb + (g0 - c0);
      for (std::size_t i = 0; i < kMxK; ++i) {
        for (std::size_t c = 0; c < cols; ++c) {
          dst[i * ldb + c] = Folded<T>(*rb.table, codes[c][i], f[c]);
        }
      }
    }
  }
}

template void PackFlatA<float>(const LineReader&, std::size_t, std::size_t, std::size_t,
                               std::size_t, std::size_t, float*, std::size_t, double*,
                               std::int32_t*, std::size_t);
template void PackFlatA<double>(const LineReader&, std::size_t, std::size_t, std::size_t,
                                std::size_t, std::size_t, double*, std::size_t, double*,
                                std::int32_t*, std::size_t);
template void PackFlatB<float>(const LineReader&, std::size_t, std::size_t, std::size_t,
                               std::size_t, std::size_t, std::size_t, float*, std::size_t,
                               double*, std::int32_t*, std::size_t);
template void PackFlatB<double>(const LineReader&, std::size_t, std::size_t, std::size_t,
                                std::size_t, std::size_t, std::size_t, double*, std::size_t,
                                double*, std::int32_t*, std::size_t);

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
      std::int8_t* dst = bp + b * (kMxK / 4) * ldb + 4 * (c - c0);
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
                 std::int32_t* ea, std::uint8_t* aflag, std::size_t ldfa) {
  std::uint8_t codes[kMxK];
  for (std::size_t r = row0; r < row1; ++r) {
    for (std::size_t b = 0; b < nb; ++b) {
      std::int16_t* dst = a + r * lda + b * 3 * kMxK;
      if (r >= m) {
        std::memset(dst, 0, 3 * kMxK * sizeof(std::int16_t));
        fa[r * ldfa + b] = 1.0;
        ea[r * ldfa + b] = 0;
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
      // log2(fa) (window shift included), as fa's NaN: the sentinel.
      const std::int32_t e = ra.Exponent(r, blk0 + b);
      ea[r * ldfa + b] = nan != 0 || e == kMxScaleNanExponent ? kMxScaleNanExponent
                         : fits                               ? e + shift
                                                              : e;
      aflag[r * ldfa + b] = fits ? 0 : 1;
    }
  }
}

// kPair16 B: v = hi * 512 + lo in two planes of k-pairs.
void PackPair16B(const LineReader& rb, std::size_t col_base, std::size_t c0, std::size_t c1,
                 std::size_t n, std::size_t blk0, std::size_t nb, std::int16_t* bp, std::size_t ldb,
                 double* fb, std::int32_t* eb, std::size_t ldfb) {
  const FormatTable& table = *rb.table;
  // 8-bit codes: the whole blocks of 16-column groups inside B in vectors.
  const std::size_t whole_blocks = rb.k / kMxK > blk0 ? std::min(nb, rb.k / kMxK - blk0) : 0;
  std::size_t vector_cols = 0;
  if (table.element_bits == 8 && whole_blocks != 0 && col_base + c0 < n && CpuHasAvx512Vnni()) {
    vector_cols = (std::min(c1, n - col_base) - c0) / 16 * 16;
  }
  if (vector_cols != 0) {
    std::vector<std::uint8_t> nan_flags(whole_blocks * vector_cols);
    PackPair16BVnni(rb.Block(col_base + c0, blk0), rb.view->codes_stride, vector_cols, whole_blocks,
                    table.lo16_nan.data(), table.hi16.data(), bp, ldb, nan_flags.data(),
                    vector_cols);
    for (std::size_t b = 0; b < whole_blocks; ++b) {
      for (std::size_t c = 0; c < vector_cols; ++c) {
        const bool nan = nan_flags[b * vector_cols + c] != 0;
        fb[b * ldfb + c0 + c] =
            nan ? std::numeric_limits<double>::quiet_NaN() : rb.Factor(col_base + c0 + c, blk0 + b);
        eb[b * ldfb + c0 + c] =
            nan ? kMxScaleNanExponent : rb.Exponent(col_base + c0 + c, blk0 + b);
      }
    }
  }
  std::uint8_t codes[kMxK];
  for (std::size_t c = c0; c < c1; ++c) {
    const std::size_t j = col_base + c;
    for (std::size_t b = c < c0 + vector_cols ? whole_blocks : 0; b < nb; ++b) {
      std::int16_t* dst = bp + b * kMxK * ldb + 2 * (c - c0);  // 16 lo + 16 hi pair rows per block.
      std::uint32_t nan = 0;
      if (j < n) {
        rb.Codes(j, blk0 + b, codes);
      } else {
        std::memset(codes, 0, sizeof(codes));
      }
      for (std::size_t i = 0; i < kMxK; i += 2) {
        nan |= table.nan[codes[i]] | table.nan[codes[i + 1]];
        const std::int16_t lo_pair[2] = {table.lo16[codes[i]], table.lo16[codes[i + 1]]};
        const std::int16_t hi_pair[2] = {table.hi16[codes[i]], table.hi16[codes[i + 1]]};
        std::memcpy(dst + (i / 2) * ldb, lo_pair, sizeof(lo_pair));
        std::memcpy(dst + (kMxK / 2 + i / 2) * ldb, hi_pair, sizeof(hi_pair));
      }
      fb[b * ldfb + c] = j >= n   ? 1.0
                         : nan != 0 ? std::numeric_limits<double>::quiet_NaN()
                                    : rb.Factor(j, blk0 + b);
      eb[b * ldfb + c] = j >= n ? 0 : nan != 0 ? kMxScaleNanExponent : rb.Exponent(j, blk0 + b);
    }
  }
}

}  // namespace trnmx::internal
