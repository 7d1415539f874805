// AVX-512 VNNI micro-kernels of the MX x MX GEMM and the MXFP4 GEMVs
// (gemm_mx_kernels.h): intrinsics Highway 1.0.3 cannot express (vpdpbusd,
// vpdpwssd), compiled with target attributes and chosen at run time next to
// the Highway dispatch (CpuHasAvx512Vnni, gemm_mx-inl.h GetMxTileKernels).
// Each gives the bits of ref::MxDot / the gemm.h dense x MX contract.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/gemm/gemm_mx_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
// GCC 12.2's AVX-512 intrinsics (_mm512_reduce_*, _mm512_broadcast_i32x4)
// trip -W(maybe-)uninitialized on their own _mm512_undefined_epi32() once
// inlined (GCC PR 105593, fixed in 12.3); the location is inside
// <immintrin.h>, so silence it for that include only, as Highway's x86
// headers and trnmx/inline/common.h do.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

namespace trnmx::internal {

// ---------------------------------------------------------------------------
// AVX-512 VNNI kernel: 6 rows x 32 columns, int8 codes, vpdpbusd.
// ---------------------------------------------------------------------------

#if defined(__x86_64__) || defined(__i386__)
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
// kThree = false: t2 is zero and skipped (adding +0 to the exact, never -0
// sum of t0 and t1 changes no bit).
template <bool kThree>
TRNMX_VNNI_TARGET inline __m512 AccumulatePlanes(__m512 acc, __m512i t0, __m512i t1, __m512i t2,
                                                 double fa, const double* fb) {
  const __m512d f = _mm512_set1_pd(fa);
  const __m512d k512 = _mm512_set1_pd(512.0);
  __m512d lo = _mm512_cvtepi32_pd(_mm512_castsi512_si256(t0));
  __m512d hi = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(t0, 1));
  lo = _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(t1)), k512, lo);
  hi = _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(t1, 1)), k512, hi);
  if constexpr (kThree) {
    const __m512d k2p18 = _mm512_set1_pd(262144.0);
    lo = _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(t2)), k2p18, lo);
    hi = _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(t2, 1)), k2p18, hi);
  }
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
//
// Combining a window row: fa and fb are powers of two 2^ea, 2^eb (ea
// including w; the packers' exponent arrays) or NaN. In int32, T0 + 512 T1 = 2^15 H + L with
//   U = T0 + 512 (T1 mod 64),  H = floor(T1 / 64) + floor(U / 2^15),
//   L = U mod 2^15,
// where |H| < 2^23 (|S / 2^w| < 2^38) and L < 2^15 are exact in FP32, so
// fma(H, 2^15, L) rounds S / 2^w once: fl32(S / 2^w). When every ea + eb of
// the tile lies in [-126, 88], fl32(S / 2^w) 2^(ea + eb) is exact (normal,
// finite) and equals y = fl32(S fa fb), and one FMA gives fl32(acc + y).
// Otherwise the FP64 combine (AccumulatePlanes).
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
    // Fully unrolled: with 4, GCC 12 stored the 24 accumulators to the stack
    // after every 4 pairs.
#pragma GCC unroll 16
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
    // The tile's block exponents (ea includes w; NaN: kMxScaleNanExponent,
    // out of range).
    const std::int32_t* ebk = t.eb + blk * t.ldfb;
    __m512i eb_bits[kC];
    __m512i vmin = _mm512_set1_epi32(std::numeric_limits<std::int32_t>::max());
    __m512i vmax = _mm512_set1_epi32(std::numeric_limits<std::int32_t>::min());
#pragma GCC unroll 4
    for (std::size_t c = 0; c < kC; ++c) {
      const __m512i eb = _mm512_loadu_si512(ebk + 16 * c);
      vmin = _mm512_min_epi32(vmin, eb);
      vmax = _mm512_max_epi32(vmax, eb);
      eb_bits[c] = _mm512_slli_epi32(eb, 23);
    }
    std::int32_t ea[kR];
    std::int32_t a_min = std::numeric_limits<std::int32_t>::max();
    std::int32_t a_max = std::numeric_limits<std::int32_t>::min();
    for (std::size_t r = 0; r < kR; ++r) {
      ea[r] = t.ea[r * t.ldfa + blk];
      if (t.aflag[r * t.ldfa + blk] == 0) {
        a_min = std::min(a_min, ea[r]);
        a_max = std::max(a_max, ea[r]);
      }
    }
    const bool scale_exact = a_min <= a_max && a_min + _mm512_reduce_min_epi32(vmin) >= -126 &&
                             a_max + _mm512_reduce_max_epi32(vmax) <= 88;
#pragma GCC unroll 8
    for (std::size_t r = 0; r < kR; ++r) {
      float* acc = t.acc + r * t.ldacc;
      const double fa = t.fa[r * t.ldfa + blk];
      if (t.aflag[r * t.ldfa + blk] == 0) {
        if (scale_exact) {
          const __m512i bias = _mm512_set1_epi32((ea[r] + 127) << 23);
#pragma GCC unroll 4
          for (std::size_t c = 0; c < kC; ++c) {
            const __m512i t0 = lo[r][c];
            const __m512i t1 = hi[r][c];
            const __m512i u = _mm512_add_epi32(
                t0, _mm512_slli_epi32(_mm512_and_si512(t1, _mm512_set1_epi32(63)), 9));
            const __m512i h = _mm512_add_epi32(_mm512_srai_epi32(t1, 6), _mm512_srai_epi32(u, 15));
            const __m512i l = _mm512_and_si512(u, _mm512_set1_epi32(0x7FFF));
            const __m512 s = _mm512_fmadd_ps(_mm512_cvtepi32_ps(h), _mm512_set1_ps(32768.0f),
                                             _mm512_cvtepi32_ps(l));
            const __m512 scale = _mm512_castsi512_ps(_mm512_add_epi32(bias, eb_bits[c]));
            _mm512_storeu_ps(acc + 16 * c,
                             _mm512_fmadd_ps(s, scale, _mm512_loadu_ps(acc + 16 * c)));
          }
          continue;
        }
#pragma GCC unroll 4
        for (std::size_t c = 0; c < kC; ++c) {
          const __m512 sum = _mm512_loadu_ps(acc + 16 * c);
          _mm512_storeu_ps(acc + 16 * c,
                           AccumulatePlanes<false>(sum, lo[r][c], hi[r][c], zero, fa, fb + 16 * c));
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
          _mm512_storeu_ps(acc + 16 * c, AccumulatePlanes<true>(sum, ll, mid, hh, fa, fb + 16 * c));
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
            al[l] = al[l] + GemvFp4BlockValue(sl[l], ea, (bl[l] >> (8 * b)) & 0xFFu);
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

TRNMX_VNNI_TARGET void GemvDenseFp4Vnni(const float* x, std::size_t k, const std::uint8_t* codes,
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
  constexpr std::size_t kPrefetchChunks = 16;  // 1 KiB ahead in each column (measured best).
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
          // 64 column streams are more than the hardware prefetchers follow.
          _mm_prefetch(reinterpret_cast<const char*>(col[16 * g + l] + 64 * (ch + kPrefetchChunks)),
                       _MM_HINT_T0);
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
// One int16 of a 256-entry table (8 vectors of 32) per 16-bit lane of idx
// (0..255): VPERMT2W picks within each 64-entry quarter, bits 6 and 7 of
// the index pick the quarter.
TRNMX_VNNI_TARGET inline __m512i Lookup256Epi16(const __m512i* tab, __m512i idx) {
  const __m512i q0 = _mm512_permutex2var_epi16(tab[0], idx, tab[1]);
  const __m512i q1 = _mm512_permutex2var_epi16(tab[2], idx, tab[3]);
  const __m512i q2 = _mm512_permutex2var_epi16(tab[4], idx, tab[5]);
  const __m512i q3 = _mm512_permutex2var_epi16(tab[6], idx, tab[7]);
  const __mmask32 bit6 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(0x40));
  const __mmask32 bit7 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(0x80));
  return _mm512_mask_blend_epi16(bit7, _mm512_mask_blend_epi16(bit6, q0, q1),
                                 _mm512_mask_blend_epi16(bit6, q2, q3));
}

// kPair16 B (gemm_mx_kernels.h). Per 16 columns and block: each column's 32
// codes widened to int16 and looked up (lo16_nan: -1 marks the NaN codes,
// whose lo is then set to 0), so that a column's plane is 16 dwords (pairs
// k = 2p, 2p + 1); a 16 x 16 dword transpose turns them into the 16 pair
// rows of the layout.
TRNMX_VNNI_TARGET void PackPair16BVnni(const std::uint8_t* codes, std::size_t codes_stride,
                                       std::size_t cols, std::size_t nb,
                                       const std::int16_t* lo16_nan, const std::int16_t* hi16,
                                       std::int16_t* bp, std::size_t ldb, std::uint8_t* nan_flags,
                                       std::size_t ld_nan) {
  __m512i lo_tab[8], hi_tab[8];
  for (std::size_t i = 0; i < 8; ++i) {
    lo_tab[i] = _mm512_loadu_si512(lo16_nan + 32 * i);
    hi_tab[i] = _mm512_loadu_si512(hi16 + 32 * i);
  }
  const __m512i minus_one = _mm512_set1_epi16(-1);
  constexpr std::size_t kPairs = kMxK / 2;
  for (std::size_t c0 = 0; c0 < cols; c0 += 16) {
    for (std::size_t b = 0; b < nb; ++b) {
      alignas(64) __m512i lo[16];
      alignas(64) __m512i hi[16];
      for (std::size_t l = 0; l < 16; ++l) {
        const __m512i idx = _mm512_cvtepu8_epi16(_mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(codes + (c0 + l) * codes_stride + b * kMxK)));
        const __m512i v = Lookup256Epi16(lo_tab, idx);
        const __mmask32 is_nan = _mm512_cmpeq_epi16_mask(v, minus_one);
        lo[l] = _mm512_maskz_mov_epi16(static_cast<__mmask32>(~is_nan), v);
        hi[l] = Lookup256Epi16(hi_tab, idx);
        nan_flags[b * ld_nan + c0 + l] = is_nan != 0 ? 1 : 0;
      }
      Transpose16x16Epi32(lo);
      Transpose16x16Epi32(hi);
      std::int16_t* dst = bp + b * kMxK * ldb + 2 * c0;
      for (std::size_t p = 0; p < kPairs; ++p) {
        _mm512_storeu_si512(dst + p * ldb, lo[p]);
        _mm512_storeu_si512(dst + (kPairs + p) * ldb, hi[p]);
      }
    }
  }
}
#undef TRNMX_VNNI_TARGET
#else
bool CpuHasAvx512Vnni() { return false; }
void MxTileQuadI8Vnni(const MxTileArgs&) {}
void MxTilePair16Vnni(const MxTileArgs&) {}
void MxGemvFp4Vnni(const MxGemvArgs&, std::size_t, std::size_t, float*) {}
void GemvDenseFp4Vnni(const float*, std::size_t, const std::uint8_t*, std::size_t,
                        const std::uint8_t*, std::size_t, std::size_t, std::size_t, float*) {}
void PackPair16BVnni(const std::uint8_t*, std::size_t, std::size_t, std::size_t,
                     const std::int16_t*, const std::int16_t*, std::int16_t*, std::size_t,
                     std::uint8_t*, std::size_t) {}
#endif

}  // namespace trnmx::internal
