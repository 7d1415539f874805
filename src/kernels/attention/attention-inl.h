// Per-target inner loops of attention (Highway dynamic dispatch; included
// once per target by attention.cc through hwy/foreach_target.h).
//
// Numerics (attention.h steps 2 and 4): a score is one FP32 FMA chain over d
// increasing from +0, and acc_d continues one FMA chain over the allowed keys
// j increasing. QK^T vectorises across keys (lanes = keys of the K tile, held
// transposed, [d][key]); PV vectorises across d (lanes = d, broadcast p_j).
// No chain is split, so every target gives the bits of the scalar reference.
// Targets without a fused multiply-add (HWY_NATIVE_FMA == 0: SSSE3, SSE4,
// EMU128) run the same loops with std::fma: slower, same bits.
#if defined(TRNMX_SRC_KERNELS_ATTENTION_ATTENTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TRNMX_SRC_KERNELS_ATTENTION_ATTENTION_INL_H_
#undef TRNMX_SRC_KERNELS_ATTENTION_ATTENTION_INL_H_
#else
#define TRNMX_SRC_KERNELS_ATTENTION_ATTENTION_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "formats/mx_line.h"
#include "internal/fixed_math.h"
#include "internal/fixed_math_vec-inl.h"
#include "internal/vec_array-inl.h"
#include "kernels/attention/attention_args.h"
#include "trnmx/formats/e8m0.h"
#include "trnmx/formats/mx_format.h"

HWY_BEFORE_NAMESPACE();
namespace trnmx {
namespace HWY_NAMESPACE {
namespace attn {

namespace hn = hwy::HWY_NAMESPACE;
constexpr std::size_t kMxKeyChunk = internal::kAttnMxKeyChunk;

// Floats per vector of this target (a power of two; on SVE known at run time
// only): attention.cc pads the rows ScoreRows and PvRows read and write to a
// multiple of it.
HWY_INLINE std::size_t VectorFloats() { return hn::Lanes(hn::ScalableTag<float>()); }

// out[r * ldo + col + i] = (load ? out[...] : +0) + the sum over t in [t0,
// t1) increasing of a[r * lda + t] * b[t * ldb + col + i], one FMA chain per
// output, for r < kR and the kC vectors of columns from col: QK^T and PV's
// register tile.
template <std::size_t kR, std::size_t kC, class DF>
HWY_INLINE void RowTile(DF df, const float* HWY_RESTRICT a, std::size_t lda, std::size_t t0,
                        std::size_t t1, const float* HWY_RESTRICT b, std::size_t ldb,
                        std::size_t col, bool load, float* HWY_RESTRICT out, std::size_t ldo) {
  const std::size_t lanes = hn::Lanes(df);
  VecArray<DF, kR * kC> acc;
#pragma GCC unroll 8
  for (std::size_t r = 0; r < kR; ++r) {
#pragma GCC unroll 2
    for (std::size_t c = 0; c < kC; ++c) {
      acc.Set(r * kC + c, load ? hn::LoadU(df, out + r * ldo + col + c * lanes) : hn::Zero(df));
    }
  }
  for (std::size_t t = t0; t < t1; ++t) {
    VecArray<DF, kC> bv;
#pragma GCC unroll 2
    for (std::size_t c = 0; c < kC; ++c) bv.Set(c, hn::LoadU(df, b + t * ldb + col + c * lanes));
#pragma GCC unroll 8
    for (std::size_t r = 0; r < kR; ++r) {
      const auto x = hn::Set(df, a[r * lda + t]);
#pragma GCC unroll 2
      for (std::size_t c = 0; c < kC; ++c) {
        acc.Set(r * kC + c, hn::MulAdd(x, bv.Get(c), acc.Get(r * kC + c)));
      }
    }
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < kR; ++r) {
#pragma GCC unroll 2
    for (std::size_t c = 0; c < kC; ++c) {
      hn::StoreU(acc.Get(r * kC + c), df, out + r * ldo + col + c * lanes);
    }
  }
}

// Rows per register tile: 6 rows x 2 vectors (12 accumulators, 2 loaded
// vectors and a broadcast fit 16 registers). With 4 rows (8 accumulators,
// just enough chains for two FMA pipes of latency 4, and 2 vector loads per 8
// FMAs instead of per 12) QK^T and PV took about 5 % more time in the
// prefill on Zen 3 (perf samples, alternated runs).
inline constexpr std::size_t kAttnTileRows = 6;

// RowTile over `rows` rows and the columns [0, n): tiles of two vectors (the
// second may be padding up to n's whole vector), then one; rows in blocks of
// kAttnTileRows, then 4, 2, 1.
template <class DF>
HWY_INLINE void RowTiles(DF df, const float* HWY_RESTRICT a, std::size_t lda, std::size_t rows,
                         std::size_t t0, std::size_t t1, const float* HWY_RESTRICT b,
                         std::size_t ldb, std::size_t n, bool load, float* HWY_RESTRICT out,
                         std::size_t ldo) {
  const std::size_t lanes = hn::Lanes(df);
  const auto block = [&]<std::size_t kR>(std::size_t r) {
    std::size_t j = 0;
    for (; j + lanes < n; j += 2 * lanes) {
      RowTile<kR, 2>(df, a + r * lda, lda, t0, t1, b, ldb, j, load, out + r * ldo, ldo);
    }
    for (; j < n; j += lanes) {
      RowTile<kR, 1>(df, a + r * lda, lda, t0, t1, b, ldb, j, load, out + r * ldo, ldo);
    }
  };
  std::size_t r = 0;
  for (; r + kAttnTileRows <= rows; r += kAttnTileRows) {
    block.template operator()<kAttnTileRows>(r);
  }
  // A remainder of 4 or 5 rows (decode with a group of 4 query heads)
  // takes one 4-row tile: 8 chains keep both FMA pipes busy, two 2-row
  // tiles of 4 chains each would wait on the FMA latency.
  if (r + 4 <= rows) {
    block.template operator()<4>(r);
    r += 4;
  }
  for (; r + 2 <= rows; r += 2) block.template operator()<2>(r);
  if (r < rows) block.template operator()<1>(r);
}

// s[r * lds + j] = sum over d increasing of q[r * ldq + d] * kt[d * ldk + j]
// (FMA chain from +0) for r < rows and j < n. Lanes past n (up to the next
// whole vector) are computed from kt's padding and written to s's padding:
// ldk and lds must hold n rounded up to a whole number of vectors.
HWY_NOINLINE void ScoreRows(const float* HWY_RESTRICT q, std::size_t ldq, std::size_t rows,
                            const float* HWY_RESTRICT kt, std::size_t ldk, std::size_t dqk,
                            std::size_t n, float* HWY_RESTRICT s, std::size_t lds) {
#if HWY_NATIVE_FMA
  RowTiles(hn::ScalableTag<float>(), q, ldq, rows, 0, dqk, kt, ldk, n, /*load=*/false, s, lds);
#else
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t j = 0; j < n; ++j) {
      float a = 0.0f;
      for (std::size_t d = 0; d < dqk; ++d) a = std::fma(q[r * ldq + d], kt[d * ldk + j], a);
      s[r * lds + j] = a;
    }
  }
#endif
}

// acc[r * lda + d] = fma(p[r * ldp + j], v[j * ldv + d], acc[...]) for j
// in [j0, j1) increasing, for the `rows` rows from r0 on and every d < dv.
// lda and ldv must hold dv rounded up to a whole number of vectors (the
// padding lanes of acc are written with garbage).
HWY_NOINLINE void PvRows(const float* HWY_RESTRICT p, std::size_t ldp, std::size_t rows,
                         std::size_t j0, std::size_t j1, const float* HWY_RESTRICT v,
                         std::size_t ldv, std::size_t dv, float* HWY_RESTRICT acc,
                         std::size_t lda) {
#if HWY_NATIVE_FMA
  RowTiles(hn::ScalableTag<float>(), p, ldp, rows, j0, j1, v, ldv, dv, /*load=*/true, acc, lda);
#else
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t d = 0; d < dv; ++d) {
      float a = acc[r * lda + d];
      for (std::size_t j = j0; j < j1; ++j) a = std::fma(p[r * ldp + j], v[j * ldv + d], a);
      acc[r * lda + d] = a;
    }
  }
#endif
}

// One row of n values of T (float, or uint16_t BF16 bits) as FP32: exact
// (BF16: bits << 16).
template <class T>
HWY_INLINE float WidenOne(T v) {
  if constexpr (sizeof(T) == 2) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(v) << 16);
  } else {
    return v;
  }
}

// dst[j * ldd + d] = row j's value d as FP32, for j < count and d < n; row
// j of BF16 bits at src + j * stride. Exact.
HWY_NOINLINE void WidenBf16Rows(const std::uint16_t* HWY_RESTRICT src, std::size_t stride,
                                std::size_t count, std::size_t n, float* HWY_RESTRICT dst,
                                std::size_t ldd) {
  const hn::ScalableTag<std::uint32_t> du;
  const hn::Rebind<std::uint16_t, decltype(du)> d16;
  const hn::Rebind<float, decltype(du)> df;
  const std::size_t lanes = hn::Lanes(du);
  for (std::size_t j = 0; j < count; ++j) {
    const std::uint16_t* row = src + j * stride;
    float* out = dst + j * ldd;
    std::size_t d = 0;
    for (; d + lanes <= n; d += lanes) {
      hn::StoreU(hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, row + d)))), df,
                 out + d);
    }
    for (; d < n; ++d) out[d] = WidenOne(row[d]);
  }
}

// kt[d * ldk + j] = key j's value d as FP32 (K transposed for ScoreRows),
// for j < count and d < n; key j's row of T (float or BF16 bits) at src + j
// * stride. Exact. On x86 8 x 8 blocks go through registers (8 row loads,
// the usual unpack / shuffle / permute transpose, 8 column stores); the
// rest, and other targets, element by element.
template <class T>
HWY_INLINE void TransposeKeys(const T* HWY_RESTRICT src, std::size_t stride, std::size_t count,
                              std::size_t n, float* HWY_RESTRICT kt, std::size_t ldk) {
  // Keys [j_begin, j_end), values d_begin .. n - 1.
  const auto by_element = [&](std::size_t j_begin, std::size_t j_end, std::size_t d_begin) {
    for (std::size_t j = j_begin; j < j_end; ++j) {
      for (std::size_t d = d_begin; d < n; ++d) kt[d * ldk + j] = WidenOne(src[j * stride + d]);
    }
  };
  std::size_t j0 = 0;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  const auto load = [&](std::size_t j, std::size_t d) HWY_ATTR {
    const T* p = src + j * stride + d;
    if constexpr (sizeof(T) == 2) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    } else {
      return _mm256_loadu_ps(p);
    }
  };
  for (; j0 + 8 <= count; j0 += 8) {
    std::size_t d0 = 0;
    for (; d0 + 8 <= n; d0 += 8) {
      __m256 r[8], t[8], u[8];
      for (std::size_t i = 0; i < 8; ++i) r[i] = load(j0 + i, d0);
      for (std::size_t i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);      // keys i, i+1: values 0, 1 | 4, 5
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);  // 2, 3 | 6, 7
      }
      for (std::size_t i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);          // keys i..i+3: value 0 | 4
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);      // 1 | 5
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);  // 2 | 6
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);  // 3 | 7
      }
      float* out = kt + d0 * ldk + j0;
      for (std::size_t i = 0; i < 4; ++i) {
        _mm256_storeu_ps(out + i * ldk, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
        _mm256_storeu_ps(out + (i + 4) * ldk, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
      }
    }
    by_element(j0, j0 + 8, d0);
  }
#endif
  by_element(j0, count, 0);
}

#undef TRNMX_ATTN_MXFP8_DECODE  // Defined per target, below.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
// MXFP8 decoders for AVX2 and AVX-512 (F16C; other targets take the
// portable path of attention.cc). A whole 8 x 32 block of codes -- one
// 32-element block in each of 8 lines (K: key rows along d; V: d lines
// along keys) -- is transposed as bytes in 256-bit vectors by three
// rounds of interleaves (DecodeWholeBlock8; a block of which only some
// positions are wanted is decoded whole and those copied), after which
// each vector holds positions of the 8 lines. Each code is then widened
// exactly: an FP8 code is an FP16 bit pattern once
// moved into place (E5M2: the top byte; E4M3: sign to bit 15, the rest
// shifted by 7, FP16(code) = element * 2^-8, subnormals included), F16C
// widens it to FP32, and one multiply by the line's factor m (E5M2:
// 2^(scale - 127), the E8M0 value; E4M3: 2^(scale - 119)) rounds element *
// 2^(scale - 127) once: the value of the MX line decoder (mx_line-inl.h
// DequantizeBlock), bit for bit. Blocks holding a NaN or Inf code, a NaN
// scale or an E4M3 scale above F6 (2^(scale - 119) not an FP32) are decoded
// by that line decoder itself.
#define TRNMX_ATTN_MXFP8_DECODE 1

constexpr std::size_t kMxLines = 8;  // Lines per block decode (lanes of the FP32 vectors).
constexpr std::size_t kMxKeyAhead = 32;  // Keys of an MXFP8 K prefetched ahead of use.

// A whole 8 x 32 block (lines rows[t], factors mv[t]) into out[p * ldo + t],
// p < 32, in 256-bit vectors; false, with nothing written, if a code is
// NaN or Inf. The block is transposed as bytes by three rounds of
// interleaves within 128-bit halves, after which vector c[i] holds, in its
// half L, positions 16 L + 2 i and 16 L + 2 i + 1 of the 8 lines (8 bytes
// each). Interleaving a zero below each code puts it in the top byte of a
// 16-bit lane, where E5M2 already is an FP16 pattern and E4M3 becomes one
// with an arithmetic shift by 1 (the sign then also lands in bit 14, which
// the mask clears).
template <bool kE4M3>
HWY_INLINE bool DecodeWholeBlock8(const std::uint8_t* const* rows,
                                  hn::Vec<hn::FixedTag<float, 8>> mv, float* HWY_RESTRICT out,
                                  std::size_t ldo) {
  const hn::FixedTag<std::uint8_t, 32> d8;
  const hn::FixedTag<std::int8_t, 32> di8;
  const hn::FixedTag<std::uint16_t, 16> d16;
  const hn::FixedTag<std::int16_t, 16> di16;
  const hn::FixedTag<std::uint32_t, 8> d32;
  const hn::FixedTag<std::uint16_t, 8> dh;
  const hn::FixedTag<hwy::float16_t, 8> df16;
  const hn::FixedTag<float, 8> df;
  using V8 = hn::Vec<decltype(d8)>;
  V8 r[kMxLines];
  auto top = hn::Zero(di8);  // The largest code magnitude (below the sign).
  for (std::size_t t = 0; t < kMxLines; ++t) {
    r[t] = hn::LoadU(d8, rows[t]);
    top = hn::Max(top, hn::BitCast(di8, hn::And(r[t], hn::Set(d8, 0x7F))));
  }
  // E4M3: S.1111.111 is NaN; E5M2: S.11111.xx is Inf or NaN.
  if (!hn::AllFalse(di8, hn::Gt(top, hn::Set(di8, kE4M3 ? 0x7E : 0x7B)))) return false;
  V8 a[8];  // a[2 q + u]: lines 2q, 2q + 1, positions 16 L + 8 u + 0..7.
  for (std::size_t q = 0; q < 4; ++q) {
    a[2 * q] = hn::InterleaveLower(d8, r[2 * q], r[2 * q + 1]);
    a[2 * q + 1] = hn::InterleaveUpper(d8, r[2 * q], r[2 * q + 1]);
  }
  V8 b[8];  // b[4 u + 2 w + v]: lines 4w..4w+3, positions 16 L + 8 u + 4 v + 0..3.
  for (std::size_t u = 0; u < 2; ++u) {
    for (std::size_t w = 0; w < 2; ++w) {
      const auto x = hn::BitCast(d16, a[4 * w + u]);
      const auto y = hn::BitCast(d16, a[4 * w + 2 + u]);
      b[4 * u + 2 * w] = hn::BitCast(d8, hn::InterleaveLower(d16, x, y));
      b[4 * u + 2 * w + 1] = hn::BitCast(d8, hn::InterleaveUpper(d16, x, y));
    }
  }
  const auto zero = hn::Zero(d8);
  for (std::size_t i = 0; i < 8; ++i) {  // i = 4 u + 2 v + e: positions 2 i, 2 i + 1.
    const std::size_t u = i / 4;
    const std::size_t v = (i / 2) % 2;
    const auto x = hn::BitCast(d32, b[4 * u + v]);
    const auto y = hn::BitCast(d32, b[4 * u + 2 + v]);
    const V8 c = hn::BitCast(d8, i % 2 == 0 ? hn::InterleaveLower(d32, x, y)
                                            : hn::InterleaveUpper(d32, x, y));
    for (std::size_t k = 0; k < 2; ++k) {  // Positions 2 i + k and 16 + 2 i + k.
      auto w = hn::BitCast(d16, k == 0 ? hn::InterleaveLower(d8, zero, c)
                                       : hn::InterleaveUpper(d8, zero, c));
      if constexpr (kE4M3) {
        w = hn::And(hn::BitCast(d16, hn::ShiftRight<1>(hn::BitCast(di16, w))),
                    hn::Set(d16, 0xBFFF));
      }
      const auto lo = hn::PromoteTo(df, hn::BitCast(df16, hn::LowerHalf(dh, w)));
      const auto hi = hn::PromoteTo(df, hn::BitCast(df16, hn::UpperHalf(dh, w)));
      hn::StoreU(hn::Mul(lo, mv), df, out + (2 * i + k) * ldo);
      hn::StoreU(hn::Mul(hi, mv), df, out + (16 + 2 * i + k) * ldo);
    }
  }
  return true;
}

// The 8 x 32 block of lines rows[t] (each at its block's first code) with
// scales byte t of sc8 (its first position pbase): decoded and transposed
// into out[(p - origin) * ldo + t] for p in [p0, p1) within [pbase, pbase +
// 32), origin <= p0. The factors are built in registers from sc8 (x86:
// little-endian): eight float stores read back as one vector cannot be
// forwarded, and that wait took about 6 % of the decode benchmark's time on
// a Zen 3.
template <bool kE4M3>
HWY_INLINE void DecodeBlock8(MxFormat format, const std::uint8_t* const* rows, std::uint64_t sc8,
                             std::size_t pbase, std::size_t p0, std::size_t p1,
                             float* HWY_RESTRICT out, std::size_t origin, std::size_t ldo) {
  const hn::FixedTag<std::uint64_t, 1> d64;
  const hn::FixedTag<std::uint8_t, 8> d8;
  const hn::FixedTag<std::uint32_t, 8> d32;
  const hn::FixedTag<float, 8> df;
  const auto s = hn::PromoteTo(d32, hn::BitCast(d8, hn::Set(d64, sc8)));
  bool special;
  hn::Vec<decltype(df)> mv;
  if constexpr (kE4M3) {  // 2^(scale - 119); above F6 that is no FP32.
    special = !hn::AllFalse(d32, hn::Gt(s, hn::Set(d32, 0xF6u)));
    mv = hn::BitCast(df, hn::ShiftLeft<23>(hn::Add(s, hn::Set(d32, 8u))));
  } else {  // The E8M0 value: 2^(scale - 127), 2^-127 (subnormal) for 0; FF is NaN.
    special = !hn::AllFalse(d32, hn::Eq(s, hn::Set(d32, std::uint32_t{kE8M0Nan})));
    mv = hn::BitCast(df, hn::IfThenElse(hn::Eq(s, hn::Zero(d32)), hn::Set(d32, 0x00400000u),
                                        hn::ShiftLeft<23>(s)));
  }
  if (!special) {
    if (p0 == pbase && p1 == pbase + 32) {
      if (DecodeWholeBlock8<kE4M3>(rows, mv, out + (pbase - origin) * ldo, ldo)) return;
    } else {  // Part of the block (the edges of a key range): decoded whole, then copied.
      HWY_ALIGN float v[32][kMxLines];
      if (DecodeWholeBlock8<kE4M3>(rows, mv, &v[0][0], kMxLines)) {
        for (std::size_t p = p0; p < p1; ++p) {
          std::memcpy(out + (p - origin) * ldo, v[p - pbase], sizeof(v[0]));
        }
        return;
      }
    }
  }
  // A special code or scale: the MX line decoder, line by line.
  std::uint8_t sc[kMxLines];
  std::memcpy(sc, &sc8, sizeof(sc));
  HWY_ALIGN float v[kMxLines][32];
  for (std::size_t t = 0; t < kMxLines; ++t) {
    if (!internal::DequantizeMxLineSimd(format, rows[t], sc + t, 32, 1.0f, v[t])) {
      internal::DequantizeMxLineScalar(format, rows[t], sc + t, 32, 1.0f, v[t]);
    }
  }
  for (std::size_t p = p0; p < p1; ++p) {
    for (std::size_t t = 0; t < kMxLines; ++t) out[(p - origin) * ldo + t] = v[t][p - pbase];
  }
}

// ScoreRows of `rows` rows of q against the n keys of an MXFP8 K blocked
// along d (key t: codes at codes + t * cstride, scales at scales + t *
// sstride; `readable` >= n keys there): kMxKeyChunk keys at a time are
// decoded into stage ([d][16], while in L1) and scored from there.
template <bool kE4M3>
HWY_INLINE void MxKScoreRowsT(MxFormat format, const float* HWY_RESTRICT q, std::size_t ldq,
                              std::size_t rows, const std::uint8_t* codes, std::size_t cstride,
                              const std::uint8_t* scales, std::size_t sstride, std::size_t dqk,
                              std::size_t n, std::size_t readable, float* HWY_RESTRICT stage,
                              float* HWY_RESTRICT s, std::size_t lds) {
  constexpr std::size_t kC = kMxKeyChunk;
  static_assert(kC % kMxLines == 0);
  for (std::size_t c0 = 0; c0 < n; c0 += kC) {
    for (std::size_t g0 = 0; g0 < kC; g0 += kMxLines) {
      // Lines past the last key repeat it (their scores land in padding).
      const std::uint8_t* row[kMxLines];
      std::size_t key[kMxLines];
      for (std::size_t t = 0; t < kMxLines; ++t) key[t] = std::min(c0 + g0 + t, n - 1);
      // The codes kMxKeyAhead keys on (into the next tile while the view
      // has keys): the hardware prefetchers alone leave these loads waiting
      // on memory.
      for (std::size_t t = 0; t < kMxLines; ++t) {
        const std::uint8_t* ahead =
            codes + std::min(c0 + g0 + t + kMxKeyAhead, readable - 1) * cstride;
        for (std::size_t at = 0; at < dqk; at += 64) hwy::Prefetch(ahead + at);
      }
      for (std::size_t blk = 0; blk * 32 < dqk; ++blk) {
        std::uint64_t sc8 = 0;  // Byte t: key t's scale.
        for (std::size_t t = 0; t < kMxLines; ++t) {
          row[t] = codes + key[t] * cstride + blk * 32;
          sc8 |= std::uint64_t{scales[key[t] * sstride + blk]} << (8 * t);
        }
        DecodeBlock8<kE4M3>(format, row, sc8, blk * 32, blk * 32, std::min(dqk, blk * 32 + 32),
                            stage + g0, 0, kC);
      }
    }
    ScoreRows(q, ldq, rows, stage, kC, dqk, kC, s + c0, lds);
  }
}

// Rows of keys [s0, s0 + len) of an MXFP8 V blocked along s (line d: codes
// at codes + d * cstride, scales at scales + d * sstride) into out[(s - s0)
// * ldo + d] for d < dv rounded up to a multiple of 8 (lanes past dv repeat
// line dv - 1). The lines lie cstride apart, often a multiple of 4 KiB:
// they share cache sets and are more streams than the hardware prefetchers
// follow. So the codes of up to 64 lines x 128 positions are first copied
// into a local buffer by independent loads (the misses overlap), and the
// decode reads the copy.
template <bool kE4M3>
HWY_INLINE void MxVRowsT(MxFormat format, const std::uint8_t* codes, std::size_t cstride,
                         const std::uint8_t* scales, std::size_t sstride, std::size_t dv,
                         std::size_t s0, std::size_t len, float* HWY_RESTRICT out,
                         std::size_t ldo) {
  constexpr std::size_t kSpan = 4;   // Blocks per copy.
  constexpr std::size_t kCopy = 64;  // Lines per copy.
  const hn::FixedTag<std::uint8_t, 16> d8;
  const std::size_t s1 = s0 + len;
  const std::size_t blocks = (s1 + 31) / 32;
  const std::size_t lines = (dv + kMxLines - 1) / kMxLines * kMxLines;
  for (std::size_t b0 = s0 / 32; b0 < blocks; b0 += kSpan) {
    const std::size_t b1 = std::min(b0 + kSpan, blocks);
    for (std::size_t c0 = 0; c0 < lines; c0 += kCopy) {
      const std::size_t c1 = std::min(lines, c0 + kCopy);
      HWY_ALIGN std::uint8_t buf[kCopy][kSpan * 32];
      std::uint8_t sc[kSpan][kCopy];
      for (std::size_t d = c0; d < c1; ++d) {
        const std::size_t line = std::min(d, dv - 1);
        const std::uint8_t* src = codes + line * cstride;
        for (std::size_t blk = b0; blk < b1; ++blk) {
          for (std::size_t i = 0; i < 32; i += 16) {
            hn::Store(hn::LoadU(d8, src + blk * 32 + i), d8, &buf[d - c0][(blk - b0) * 32 + i]);
          }
          sc[blk - b0][d - c0] = scales[line * sstride + blk];
        }
      }
      for (std::size_t d0 = c0; d0 < c1; d0 += kMxLines) {
        for (std::size_t blk = b0; blk < b1; ++blk) {
          const std::uint8_t* row[kMxLines];
          for (std::size_t t = 0; t < kMxLines; ++t) row[t] = &buf[d0 - c0 + t][(blk - b0) * 32];
          const std::size_t pb = blk * 32;
          std::uint64_t sc8;  // Byte t: line d0 + t's scale.
          std::memcpy(&sc8, &sc[blk - b0][d0 - c0], sizeof(sc8));
          DecodeBlock8<kE4M3>(format, row, sc8, pb, std::max(s0, pb),
                              std::min(s1, pb + 32), out + d0, s0, ldo);
        }
      }
    }
  }
}

// Runs fn(std::bool_constant<E4M3>) for MXFP8 E4M3 / E5M2; false otherwise.
template <class F>
HWY_INLINE bool WithMxfp8(MxFormat format, F&& fn) {
  if (format == MxFormat::kMxfp8E4M3) {
    fn(std::true_type{});
    return true;
  }
  if (format == MxFormat::kMxfp8E5M2) {
    fn(std::false_type{});
    return true;
  }
  return false;
}
#endif  // HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2

// p[i] = f(p[i]) for i < n, n less than a vector: through an aligned buffer
// whose lanes past n are +0 (computed, then dropped), so nothing past p + n
// is read or written. Returns f's whole vector.
template <class D, class F>
HWY_INLINE hn::Vec<D> PartialInPlace(D d, float* HWY_RESTRICT p, std::size_t n, const F& f) {
  HWY_ALIGN float buf[hn::MaxLanes(d)] = {};
  std::memcpy(buf, p, n * sizeof(float));
  const hn::Vec<D> v = f(hn::Load(d, buf));
  hn::Store(v, d, buf);
  std::memcpy(p, buf, n * sizeof(float));
  return v;
}

// s[j] = fl32(s[j] * scale) for j < n; returns the max of the results, NaN
// if any is NaN, -Inf for n = 0 (the max is exact, so any order gives it).
HWY_NOINLINE float ScaleMax(float* HWY_RESTRICT s, std::size_t n, float scale) {
  const hn::ScalableTag<float> df;
  const std::size_t lanes = hn::Lanes(df);
  const auto vs = hn::Set(df, scale);
  auto vmax = hn::Set(df, -std::numeric_limits<float>::infinity());
  auto nan = hn::Zero(df);
  std::size_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    const auto v = hn::Mul(hn::LoadU(df, s + j), vs);
    hn::StoreU(v, df, s + j);
    vmax = hn::Max(vmax, v);
    nan = hn::Or(nan, hn::VecFromMask(df, hn::IsNaN(v)));
  }
  if (j < n) {
    const auto in = hn::FirstN(df, n - j);
    const auto v = PartialInPlace(df, s + j, n - j, [&](auto x) HWY_ATTR { return hn::Mul(x, vs); });
    vmax = hn::Max(vmax, hn::IfThenElse(in, v, hn::Set(df, -std::numeric_limits<float>::infinity())));
    nan = hn::Or(nan, hn::VecFromMask(df, hn::IsNaN(v)));
  }
  const float m = hn::GetLane(hn::MaxOfLanes(df, vmax));
  const bool any_nan = !hn::AllFalse(df, hn::MaskFromVec(nan));
  return any_nan ? std::numeric_limits<float>::quiet_NaN() : m;
}

// Step 4 on one row's scores s[0, n) with the row's new max m:
// s[j] = FixedExp(fl32(s[j] - m)), then values below 2^-126 flushed to +0
// (FlushSubnormalProbs; NaN stays). Lanes equal the scalar functions' bits
// (fixed_math_vec-inl.h); nothing past n is read or written (PartialInPlace).
HWY_NOINLINE void ExpRow(float* HWY_RESTRICT s, std::size_t n, float m) {
#if HWY_HAVE_FLOAT64
  const hn::ScalableTag<float> df;
  const std::size_t lanes = hn::Lanes(df);
  const auto vm = hn::Set(df, m);
  const auto p_of = [&](hn::Vec<decltype(df)> x)
                        HWY_ATTR { return FixedExpFlushedLanes(df, hn::Sub(x, vm)); };
  std::size_t j = 0;
  for (; j + lanes <= n; j += lanes) hn::StoreU(p_of(hn::LoadU(df, s + j)), df, s + j);
  if (j < n) PartialInPlace(df, s + j, n - j, p_of);
#else
  for (std::size_t j = 0; j < n; ++j) s[j] = internal::FixedExp(s[j] - m);
  internal::FlushSubnormalProbs(s, n);
#endif
}

}  // namespace attn
}  // namespace HWY_NAMESPACE
}  // namespace trnmx
HWY_AFTER_NAMESPACE();

#endif  // TRNMX_SRC_KERNELS_ATTENTION_ATTENTION_INL_H_
