// AVX2 + FMA streaming GEMVs with MXFP4 weights (gemm_mx_kernels.h): the
// AVX-512 VNNI kernels' counterparts for CPUs and dispatch targets without
// AVX-512, so that decode-shaped products stream the weights at memory speed
// there too. Intrinsics with target attributes (vpmaddubsw, vphaddd and the
// 256-bit in-lane transposes have no Highway 1.0.3 form that keeps these
// instruction counts);
// chosen by gemm_mx-inl.h GetMxTileKernels on the AVX2 and AVX-512 targets.
// Each gives the bits of ref::MxDot / the gemm.h dense x MX contract.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "formats/mx_decode.h"
#include "kernels/gemm/gemm_mx_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace trnmx::internal {

#if defined(__x86_64__) || defined(__i386__)

#define TRNMX_AVX2_TARGET __attribute__((target("avx2,fma")))

namespace {

constexpr std::size_t kLanes = 8;        // Columns per vector.
constexpr std::size_t kChunkBlocks = 4;  // K blocks per step.
constexpr std::size_t kChunkBytes = 64;  // MXFP4 code bytes of a column per step.

// The 64 code bytes of columns col[0..7] for K chunk `ch`; a chunk with fewer
// than 4 blocks is copied into `tail` (zero-padded) so nothing past the
// column's last block is read.
TRNMX_AVX2_TARGET inline const std::uint8_t* ChunkBytes(const std::uint8_t* col, std::size_t ch,
                                                        std::size_t nb, std::uint8_t* tail) {
  if (nb == kChunkBlocks) return col + kChunkBytes * ch;
  std::memset(tail, 0, kChunkBytes);
  std::memcpy(tail, col + kChunkBytes * ch, nb * (kChunkBytes / kChunkBlocks));
  return tail;
}

// Dwords d = 0..7 of eight rows (r[l] = row l) to r[d] = dword d of rows 0..7.
TRNMX_AVX2_TARGET inline void Transpose8x8Epi32(__m256i* r) {
  __m256i t[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  __m256i u[8];
  for (int i = 0; i < 2; ++i) {
    u[4 * i] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    r[j] = _mm256_permute2x128_si256(u[j], u[4 + j], 0x20);
    r[4 + j] = _mm256_permute2x128_si256(u[j], u[4 + j], 0x31);
  }
}

constexpr std::size_t kSpanChunks = 8;  // Chunks whose scales one SpanScales call reads.

// The scale bytes of 8 columns (sc[l]: column l's scale line) for the chunks
// kSpanChunks * span onwards: out[c] holds chunk kSpanChunks * span + c, one
// uint32 per column (byte b = block b; 0 past the line's last block, which no
// caller uses). One 32-byte load per column and a dword transpose; a line's
// last, shorter span is copied zero-padded first, so nothing past it is read.
TRNMX_AVX2_TARGET inline void SpanScales(const std::uint8_t* const* sc, std::size_t span,
                                         std::size_t blocks, __m256i* out) {
  constexpr std::size_t kSpanBlocks = kSpanChunks * kChunkBlocks;
  const std::size_t first = kSpanBlocks * span;
  const std::size_t n = std::min(kSpanBlocks, blocks - first);
  alignas(32) std::uint8_t tail[kSpanBlocks];
  for (std::size_t l = 0; l < kLanes; ++l) {
    const std::uint8_t* from = sc[l] + first;
    if (n < kSpanBlocks) {
      std::memset(tail, 0, kSpanBlocks);
      std::memcpy(tail, from, n);
      from = tail;
    }
    out[l] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from));
  }
  Transpose8x8Epi32(out);
}

// Elements [0, valid) of one chunk of 8 columns (bytes[l], sc[l]: column l's
// chunk codes and scale line) one at a time, in K order: acc_l = fma(x_i, w,
// acc_l) with w from MxScaledValue, the contract's definition. The dense GEMV's
// path for chunks whose scales it cannot fold into one normal factor.
TRNMX_AVX2_TARGET __m256 DenseFp4ChunkExact(const float* xc, std::size_t valid,
                                            const std::uint8_t* const* bytes,
                                            const std::uint8_t* const* sc, std::size_t ch,
                                            __m256 acc) {
  const MxValueTable& values = *MxValues(MxFormat::kMxfp4);
  alignas(32) float a[kLanes];
  _mm256_store_ps(a, acc);
  for (std::size_t l = 0; l < kLanes; ++l) {
    for (std::size_t i = 0; i < valid; ++i) {
      const std::uint32_t code =
          MxElementCode(MxFormat::kMxfp4, bytes[l] + (i / kMxK) * (kMxK / 2), i % kMxK);
      const float w = MxScaledValue(values[code], sc[l][kChunkBlocks * ch + i / kMxK]);
      a[l] = std::fma(xc[i], w, a[l]);
    }
  }
  return _mm256_load_ps(a);
}

}  // namespace

// GEMV, MX activations x MXFP4 weights (gemm_mx_kernels.h MxGemvArgs): per
// group of 8 columns and chunk of 4 blocks, per column two 32-byte loads,
// nibbles through a vpshufb table to w + 12 (0..24, unsigned), per activation
// plane vpmaddubsw against its even / odd bytes (pairs |.| <= 2 * 24 * 128,
// two pairs <= 12288: no saturation) and vpmaddwd by the plane's weight (1,
// 2^7, 2^14) to int32, the planes added, a vphaddd tree to one int32 per
// (block, column), plus -12 * sum a: the exact block sum S (|S| < 2^28).
// Then per block y = fl32(S * 2^e), e = ea + sb - 128, computed as float(S)
// * 2^e when every lane's 2^e is a normal FP32 value with S * 2^e normal
// (float(S) rounds S once, to nearest even, and the scaling is exact),
// otherwise per lane in FP64 with one rounding (also NaN for scale FF);
// acc = fl32(acc + y) in block order.
template <std::size_t kPlanes>
TRNMX_AVX2_TARGET void MxGemvFp4PlanesT(const MxGemvArgs& g, std::size_t j0, std::size_t j1,
                                        float* acc_out) {
  static_assert(kPlanes >= 1 && kPlanes <= 3);
  const __m256i lut = _mm256_broadcastsi128_si256(
      _mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  // vpmaddwd factors of the planes' int16 pair sums: 1, 2^7, 2^14.
  const __m256i plane_weight[3] = {_mm256_set1_epi16(1), _mm256_set1_epi16(1 << 7),
                                   _mm256_set1_epi16(1 << 14)};
  const __m256i byte_mask = _mm256_set1_epi32(0xFF);
  const std::size_t chunks = (g.blocks + kChunkBlocks - 1) / kChunkBlocks;
  alignas(32) std::uint8_t tail[kLanes][kChunkBytes];
  for (std::size_t jg = j0; jg < j1; jg += kLanes) {
    const std::uint8_t* col[kLanes];
    const std::uint8_t* sc[kLanes];
    for (std::size_t l = 0; l < kLanes; ++l) {
      const std::size_t j = std::min(jg + l, j1 - 1);  // Tail lanes repeat the last column.
      col[l] = g.codes + j * g.codes_stride;
      sc[l] = g.scales + j * g.scales_stride;
    }
    __m256 acc = _mm256_setzero_ps();
    __m256i span_scales[kSpanChunks];
    for (std::size_t ch = 0; ch < chunks; ++ch) {
      const std::size_t nb = std::min(kChunkBlocks, g.blocks - kChunkBlocks * ch);
      if (ch % kSpanChunks == 0) SpanScales(sc, ch / kSpanChunks, g.blocks, span_scales);
      // Column l's code bytes of the chunk at from[l] + off: the column, or
      // for a short last chunk its zero-padded copy. Not an array of
      // per-chunk pointers: GCC computed one with vector adds, stored it to
      // the stack and read the addresses back for every chunk, which cost
      // 4-7 % (Zen 3, K = 8192, in cache and from memory; docs/performance.md).
      const std::uint8_t* const* from = col;
      std::size_t off = kChunkBytes * ch;
      const std::uint8_t* tails[kLanes];
      if (nb < kChunkBlocks) {
        for (std::size_t l = 0; l < kLanes; ++l) tails[l] = ChunkBytes(col[l], ch, nb, tail[l]);
        from = tails;
        off = 0;
      }
      __m256i s[kChunkBlocks];  // s[b]: block b's S, lane = column.
      for (std::size_t h = 0; h < 2; ++h) {
        __m256i ae[kPlanes], ao[kPlanes];
        for (std::size_t i = 0; i < kPlanes; ++i) {
          const std::size_t at = i * g.plane_stride + kChunkBytes * ch + 32 * h;
          ae[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.a_even + at));
          ao[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.a_odd + at));
        }
        __m256i p[kLanes];  // Lanes 0-3: block 2h, lanes 4-7: block 2h + 1.
#pragma GCC unroll 8
        for (std::size_t l = 0; l < kLanes; ++l) {
          const __m256i v =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from[l] + off + 32 * h));
          const __m256i wl = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, nibble));
          const __m256i wh =
              _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
          for (std::size_t i = 0; i < kPlanes; ++i) {
            const __m256i q = _mm256_madd_epi16(
                _mm256_add_epi16(_mm256_maddubs_epi16(wl, ae[i]), _mm256_maddubs_epi16(wh, ao[i])),
                plane_weight[i]);
            p[l] = i == 0 ? q : _mm256_add_epi32(p[l], q);
          }
        }
        const __m256i q0 =
            _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
        const __m256i q1 =
            _mm256_hadd_epi32(_mm256_hadd_epi32(p[4], p[5]), _mm256_hadd_epi32(p[6], p[7]));
        // q0: [block 2h: columns 0-3 | block 2h + 1: columns 0-3], q1 likewise for 4-7.
        s[2 * h] = _mm256_permute2x128_si256(q0, q1, 0x20);
        s[2 * h + 1] = _mm256_permute2x128_si256(q0, q1, 0x31);
      }
      const __m256i sv = span_scales[ch % kSpanChunks];
      __m256i e[kChunkBlocks];
      __m256i bad = _mm256_setzero_si256();
      for (std::size_t b = 0; b < nb; ++b) {
        s[b] = _mm256_add_epi32(s[b], _mm256_set1_epi32(g.corr[16 * ch + 4 * b]));
        const __m256i sb =
            _mm256_and_si256(_mm256_srli_epi32(sv, static_cast<int>(8 * b)), byte_mask);
        // e = (sa - 127 + qa) + (sb - 127 + qb), qb = -1 for E2M1.
        e[b] = _mm256_add_epi32(sb, _mm256_set1_epi32(g.ea[kChunkBlocks * ch + b] - 128));
        bad = _mm256_or_si256(bad, _mm256_cmpeq_epi32(sb, byte_mask));
        bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(_mm256_set1_epi32(-126), e[b]));
        bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(e[b], _mm256_set1_epi32(108)));
      }
      if (_mm256_testz_si256(bad, bad)) {
        for (std::size_t b = 0; b < nb; ++b) {
          const __m256 f = _mm256_castsi256_ps(
              _mm256_slli_epi32(_mm256_add_epi32(e[b], _mm256_set1_epi32(127)), 23));
          acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(s[b]), f));
        }
      } else {
        alignas(32) std::int32_t sl[kLanes];
        alignas(32) std::uint32_t bl[kLanes];
        alignas(32) float al[kLanes];
        _mm256_store_si256(reinterpret_cast<__m256i*>(bl), sv);
        _mm256_store_ps(al, acc);
        for (std::size_t b = 0; b < nb; ++b) {
          _mm256_store_si256(reinterpret_cast<__m256i*>(sl), s[b]);
          const std::int32_t ea = g.ea[kChunkBlocks * ch + b];
          for (std::size_t l = 0; l < kLanes; ++l) {
            al[l] = al[l] + GemvFp4BlockValue(sl[l], ea, (bl[l] >> (8 * b)) & 0xFFu);
          }
        }
        acc = _mm256_load_ps(al);
      }
    }
    alignas(32) float out[kLanes];
    _mm256_store_ps(out, acc);
    for (std::size_t l = 0; l < kLanes && jg + l < j1; ++l) acc_out[jg - j0 + l] = out[l];
  }
}

TRNMX_AVX2_TARGET void MxGemvFp4Avx2(const MxGemvArgs& g, std::size_t j0, std::size_t j1,
                                     float* acc_out) {
  MxGemvFp4PlanesT<1>(g, j0, j1, acc_out);
}

TRNMX_AVX2_TARGET void MxGemvFp4PlanesAvx2(const MxGemvArgs& g, std::size_t j0, std::size_t j1,
                                           float* acc_out) {
  if (g.planes == 2) {
    MxGemvFp4PlanesT<2>(g, j0, j1, acc_out);
  } else {
    MxGemvFp4PlanesT<3>(g, j0, j1, acc_out);
  }
}

// Dense x MXFP4 GEMV (gemv_mx.h): 4 FMA chains of 8 columns. Per group and
// chunk of 4 blocks the 8 x 64 code bytes are transposed as two 8 x 8
// matrices of dwords (dword d of a column holds its elements 8 d .. 8 d + 7).
// VPSHUFB maps each nibble to the signed integer 2 * value (-12..12) in its
// byte; a shift and a mask put element e's byte alone in the top byte of each
// column's lane, whose conversion is 2 * value * 2^24, exact. One multiply
// by 2^(s - 152) gives w = value * 2^(s - 127), the contract's single FP32
// multiply (the product is exact, or overflows alike); -0 codes give +0 there,
// which no chain can tell apart: acc starts at +0 and is never -0, and
// 0 * Inf is the same default NaN for either sign. Scale FF gives +NaN. A
// chunk with a scale below 26 in any lane, where 2^(s - 152) is not a normal
// float, runs element by element (DenseFp4ChunkExact). acc = fma(x_k, w, acc)
// in K order.
TRNMX_AVX2_TARGET void GemvDenseFp4Avx2(const float* x, std::size_t k, const std::uint8_t* codes,
                                        std::size_t codes_stride, const std::uint8_t* scales,
                                        std::size_t scales_stride, std::size_t j0, std::size_t j1,
                                        float* out) {
  const __m256i twice_value = _mm256_broadcastsi128_si256(
      _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12));
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i top_byte = _mm256_set1_epi32(static_cast<int>(0xFF000000u));
  const __m256i byte_mask = _mm256_set1_epi32(0xFF);
  const __m256i min_fast_scale = _mm256_set1_epi32(26);
  const __m256 nan = _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN());
  const std::size_t blocks = (k + kMxK - 1) / kMxK;
  const std::size_t chunks = (blocks + kChunkBlocks - 1) / kChunkBlocks;
  constexpr std::size_t kG = 4;
  constexpr std::size_t kPrefetchChunks = 2;  // Measured best of 2, 4, 8 (Zen 3).
  alignas(32) std::uint8_t tail[kG * kLanes][kChunkBytes];
  for (std::size_t jg = j0; jg < j1; jg += kG * kLanes) {
    const std::uint8_t* col[kG * kLanes];
    const std::uint8_t* sc[kG * kLanes];
    for (std::size_t l = 0; l < kG * kLanes; ++l) {
      const std::size_t j = std::min(jg + l, j1 - 1);  // Tail lanes repeat the last column.
      col[l] = codes + j * codes_stride;
      sc[l] = scales + j * scales_stride;
    }
    __m256 acc[kG];
    for (std::size_t g = 0; g < kG; ++g) acc[g] = _mm256_setzero_ps();
    alignas(32) __m256i span_scales[kG][kSpanChunks];
    for (std::size_t ch = 0; ch < chunks; ++ch) {
      const std::size_t nb = std::min(kChunkBlocks, blocks - kChunkBlocks * ch);
      if (ch % kSpanChunks == 0) {
        for (std::size_t g = 0; g < kG; ++g) {
          SpanScales(sc + kLanes * g, ch / kSpanChunks, blocks, span_scales[g]);
        }
      }
      const float* xc = x + ch * kChunkBlocks * kMxK;
      const std::size_t valid = std::min(kChunkBlocks * kMxK, k - ch * kChunkBlocks * kMxK);
      const std::uint8_t* bytes[kG * kLanes];
      alignas(32) __m256i q[kG][16];  // q[g][d]: dword d of group g's 8 columns.
      alignas(32) __m256 f[kG][kChunkBlocks];  // 2^(s - 152) per column, block; NaN for FF.
      __m256i slow = _mm256_setzero_si256();
      for (std::size_t g = 0; g < kG; ++g) {
        for (std::size_t l = 0; l < kLanes; ++l) {
          const std::size_t c = kLanes * g + l;
          bytes[c] = ChunkBytes(col[c], ch, nb, tail[c]);
          // 32 column streams are more than the hardware prefetchers follow.
          _mm_prefetch(reinterpret_cast<const char*>(col[c] + kChunkBytes * (ch + kPrefetchChunks)),
                       _MM_HINT_T0);
          q[g][l] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes[c]));
          q[g][8 + l] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes[c] + 32));
        }
        Transpose8x8Epi32(q[g]);
        Transpose8x8Epi32(q[g] + 8);
        const __m256i sv = span_scales[g][ch % kSpanChunks];
        for (std::size_t b = 0; b < kChunkBlocks; ++b) {
          const __m256i s =
              _mm256_and_si256(_mm256_srli_epi32(sv, static_cast<int>(8 * b)), byte_mask);
          if (b < nb) slow = _mm256_or_si256(slow, _mm256_cmpgt_epi32(min_fast_scale, s));
          const __m256i pow2 = _mm256_slli_epi32(_mm256_sub_epi32(s, _mm256_set1_epi32(25)), 23);
          f[g][b] = _mm256_blendv_ps(_mm256_castsi256_ps(pow2), nan,
                                     _mm256_castsi256_ps(_mm256_cmpeq_epi32(s, byte_mask)));
        }
      }
      if (!_mm256_testz_si256(slow, slow)) {
        for (std::size_t g = 0; g < kG; ++g) {
          acc[g] = DenseFp4ChunkExact(xc, valid, bytes + kLanes * g, sc + kLanes * g, ch, acc[g]);
        }
        continue;
      }
      for (std::size_t d = 0; d < 16 && 8 * d < valid; ++d) {
        const std::size_t b = d / 4;
        __m256i lo[kG], hi[kG];  // Byte t: 2 * value of element 8 d + 2 t (lo), + 1 (hi).
        for (std::size_t g = 0; g < kG; ++g) {
          lo[g] = _mm256_shuffle_epi8(twice_value, _mm256_and_si256(q[g][d], nibble));
          hi[g] = _mm256_shuffle_epi8(twice_value,
                                      _mm256_and_si256(_mm256_srli_epi16(q[g][d], 4), nibble));
        }
        if (8 * d + 8 <= valid) {
          // The groups' chains interleave: each FMA waits on its own group's previous one.
#pragma GCC unroll 8
          for (int e = 0; e < 8; ++e) {
            const __m256 xv = _mm256_broadcast_ss(xc + 8 * d + static_cast<std::size_t>(e));
            const int byte = e / 2;
#pragma GCC unroll 4
            for (std::size_t g = 0; g < kG; ++g) {
              const __m256i v = (e & 1) != 0 ? hi[g] : lo[g];
              const __m256i top =
                  byte == 0 ? _mm256_slli_epi32(v, 24)
                            : _mm256_and_si256(byte == 3 ? v : _mm256_slli_epi32(v, 24 - 8 * byte),
                                               top_byte);
              const __m256 w = _mm256_mul_ps(_mm256_cvtepi32_ps(top), f[g][b]);
              acc[g] = _mm256_fmadd_ps(xv, w, acc[g]);
            }
          }
        } else {
          for (std::size_t e = 0; 8 * d + e < valid; ++e) {
            const __m256 xv = _mm256_broadcast_ss(xc + 8 * d + e);
            const __m128i left = _mm_cvtsi32_si128(static_cast<int>(24 - 8 * (e / 2)));
            for (std::size_t g = 0; g < kG; ++g) {
              const __m256i v = (e & 1) != 0 ? hi[g] : lo[g];
              const __m256i top = _mm256_and_si256(_mm256_sll_epi32(v, left), top_byte);
              const __m256 w = _mm256_mul_ps(_mm256_cvtepi32_ps(top), f[g][b]);
              acc[g] = _mm256_fmadd_ps(xv, w, acc[g]);
            }
          }
        }
      }
    }
    alignas(32) float lanes[kG * kLanes];
    for (std::size_t g = 0; g < kG; ++g) _mm256_store_ps(lanes + kLanes * g, acc[g]);
    for (std::size_t l = 0; l < kG * kLanes && jg + l < j1; ++l) out[jg - j0 + l] = lanes[l];
  }
}

#undef TRNMX_AVX2_TARGET
#endif  // x86: elsewhere nothing refers to these kernels.

}  // namespace trnmx::internal
