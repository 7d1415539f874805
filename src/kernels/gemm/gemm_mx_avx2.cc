// AVX2 + FMA streaming GEMVs with MXFP4 weights (gemm_mx_kernels.h): the
// AVX-512 VNNI kernels' counterparts for CPUs and dispatch targets without
// AVX-512, so that decode-shaped products stream the weights at memory speed
// there too. Intrinsics with target attributes (vpmaddubsw, vpermps and
// vblendvps have no Highway 1.0.3 form that keeps these instruction counts);
// chosen by gemm_mx-inl.h GetMxTileKernels on the AVX2 and AVX-512 targets.
// Each gives the bits of ref::MxDot / the gemm.h dense x MX contract.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

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

// The chunk's scale bytes of 8 columns, one uint32 (4 blocks, byte b = block
// b, 0 past the last block) per column.
TRNMX_AVX2_TARGET inline __m256i ChunkScales(const std::uint8_t* const* sc, std::size_t ch,
                                             std::size_t nb) {
  alignas(32) std::uint32_t w[kLanes];
  for (std::size_t l = 0; l < kLanes; ++l) {
    w[l] = 0;
    if (nb == kChunkBlocks) {
      std::memcpy(&w[l], sc[l] + kChunkBlocks * ch, 4);
    } else {
      for (std::size_t b = 0; b < nb; ++b) {
        w[l] |= static_cast<std::uint32_t>(sc[l][kChunkBlocks * ch + b]) << (8 * b);
      }
    }
  }
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(w));
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

}  // namespace

// GEMV, MX activations x MXFP4 weights (gemm_mx_kernels.h MxGemvArgs): per
// group of 8 columns and chunk of 4 blocks, per column two 32-byte loads,
// nibbles through a vpshufb table to w + 12 (0..24, unsigned), vpmaddubsw
// against the even / odd activation bytes (pairs |.| <= 2 * 24 * 128: no
// saturation), vpmaddwd to int32, a vphaddd tree to one int32 per (block,
// column), plus -12 * sum a: the exact block sum S (|S| < 2^16). Then per
// block y = fl32(S * 2^e), e = ea + sb - 128, computed as float(S) * 2^e when
// every lane's 2^e is a normal FP32 value with S * 2^e normal (the product is
// exact), otherwise per lane in FP64 with one rounding (also NaN for scale
// FF); acc = fl32(acc + y) in block order.
TRNMX_AVX2_TARGET void MxGemvFp4Avx2(const MxGemvArgs& g, std::size_t j0, std::size_t j1,
                                     float* acc_out) {
  const __m256i lut = _mm256_broadcastsi128_si256(
      _mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i ones16 = _mm256_set1_epi16(1);
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
    for (std::size_t ch = 0; ch < chunks; ++ch) {
      const std::size_t nb = std::min(kChunkBlocks, g.blocks - kChunkBlocks * ch);
      const std::uint8_t* bytes[kLanes];
      for (std::size_t l = 0; l < kLanes; ++l) bytes[l] = ChunkBytes(col[l], ch, nb, tail[l]);
      __m256i s[kChunkBlocks];  // s[b]: block b's S, lane = column.
      for (std::size_t h = 0; h < 2; ++h) {
        const __m256i ae = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(g.a_even + kChunkBytes * ch + 32 * h));
        const __m256i ao = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(g.a_odd + kChunkBytes * ch + 32 * h));
        __m256i p[kLanes];  // Lanes 0-3: block 2h, lanes 4-7: block 2h + 1.
#pragma GCC unroll 8
        for (std::size_t l = 0; l < kLanes; ++l) {
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes[l] + 32 * h));
          const __m256i wl = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, nibble));
          const __m256i wh =
              _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
          p[l] = _mm256_madd_epi16(
              _mm256_add_epi16(_mm256_maddubs_epi16(wl, ae), _mm256_maddubs_epi16(wh, ao)), ones16);
        }
        const __m256i q0 =
            _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
        const __m256i q1 =
            _mm256_hadd_epi32(_mm256_hadd_epi32(p[4], p[5]), _mm256_hadd_epi32(p[6], p[7]));
        // q0: [block 2h: columns 0-3 | block 2h + 1: columns 0-3], q1 likewise for 4-7.
        s[2 * h] = _mm256_permute2x128_si256(q0, q1, 0x20);
        s[2 * h + 1] = _mm256_permute2x128_si256(q0, q1, 0x31);
      }
      const __m256i sv = ChunkScales(sc, ch, nb);
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

// Dense x MXFP4 GEMV (gemv_mx.h): 4 FMA chains of 8 columns. Per group and
// chunk of 4 blocks the 8 x 64 code bytes are transposed as two 8 x 8
// matrices of dwords (dword d of a column holds its elements 8 d .. 8 d + 7),
// so that one vector holds element k of 8 columns after a shift; VPERMPS maps
// the nibble's low 3 bits to |E2M1| (it reads bits 0-2 of each index lane),
// VBLENDVPS picks +2^(s - 127) or -2^(s - 127) by the nibble's sign bit (moved
// to bit 31), and one multiply gives w = fl32(value * 2^(s - 127)) as the
// contract's single FP32 multiply (for code 8, -0 = 0 * -2^(s - 127)); scale
// FF gives +NaN either way. acc = fma(x_k, w, acc) in K order.
TRNMX_AVX2_TARGET void GemvDenseFp4Avx2(const float* x, std::size_t k, const std::uint8_t* codes,
                                        std::size_t codes_stride, const std::uint8_t* scales,
                                        std::size_t scales_stride, std::size_t j0, std::size_t j1,
                                        float* out) {
  const __m256 magnitude = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
  const __m256i byte_mask = _mm256_set1_epi32(0xFF);
  const __m256i zero = _mm256_setzero_si256();
  const __m256 nan = _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN());
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const std::size_t blocks = (k + kMxK - 1) / kMxK;
  const std::size_t chunks = (blocks + kChunkBlocks - 1) / kChunkBlocks;
  constexpr std::size_t kG = 4;
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
    for (std::size_t ch = 0; ch < chunks; ++ch) {
      const std::size_t nb = std::min(kChunkBlocks, blocks - kChunkBlocks * ch);
      alignas(32) __m256i q[kG][16];             // q[g][d]: dword d of the group's 8 columns.
      alignas(32) __m256 pos[kG][kChunkBlocks];  // +2^(s - 127) per column, block.
      alignas(32) __m256 neg[kG][kChunkBlocks];
      for (std::size_t g = 0; g < kG; ++g) {
        for (std::size_t l = 0; l < kLanes; ++l) {
          const std::uint8_t* bytes = ChunkBytes(col[kLanes * g + l], ch, nb, tail[kLanes * g + l]);
          q[g][l] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes));
          q[g][8 + l] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes + 32));
        }
        Transpose8x8Epi32(q[g]);
        Transpose8x8Epi32(q[g] + 8);
        const __m256i sv = ChunkScales(sc + kLanes * g, ch, nb);
        for (std::size_t b = 0; b < kChunkBlocks; ++b) {
          // 2^(s - 127): s << 23 for s >= 1, the subnormal 2^-127 for 00, NaN for FF.
          const __m256i s =
              _mm256_and_si256(_mm256_srli_epi32(sv, static_cast<int>(8 * b)), byte_mask);
          __m256 f = _mm256_castsi256_ps(_mm256_slli_epi32(s, 23));
          f = _mm256_blendv_ps(f, _mm256_castsi256_ps(_mm256_set1_epi32(1 << 22)),
                               _mm256_castsi256_ps(_mm256_cmpeq_epi32(s, zero)));
          const __m256 is_nan = _mm256_castsi256_ps(_mm256_cmpeq_epi32(s, byte_mask));
          pos[g][b] = _mm256_blendv_ps(f, nan, is_nan);
          neg[g][b] = _mm256_blendv_ps(_mm256_xor_ps(f, sign), nan, is_nan);
        }
      }
      const float* xc = x + ch * kChunkBlocks * kMxK;
      const std::size_t valid = std::min(kChunkBlocks * kMxK, k - ch * kChunkBlocks * kMxK);
      for (std::size_t d = 0; d < 16 && 8 * d < valid; ++d) {
        const std::size_t b = d / 4;
        if (8 * d + 8 <= valid) {
#pragma GCC unroll 8
          for (int e = 0; e < 8; ++e) {
            const __m256 xv = _mm256_broadcast_ss(xc + 8 * d + static_cast<std::size_t>(e));
#pragma GCC unroll 4
            for (std::size_t g = 0; g < kG; ++g) {
              const __m256 mag =
                  _mm256_permutevar8x32_ps(magnitude, _mm256_srli_epi32(q[g][d], 4 * e));
              const __m256 f =
                  _mm256_blendv_ps(pos[g][b], neg[g][b],
                                   _mm256_castsi256_ps(_mm256_slli_epi32(q[g][d], 28 - 4 * e)));
              acc[g] = _mm256_fmadd_ps(xv, _mm256_mul_ps(mag, f), acc[g]);
            }
          }
        } else {
          for (std::size_t e = 0; 8 * d + e < valid; ++e) {
            const __m256 xv = _mm256_broadcast_ss(xc + 8 * d + e);
            const __m128i right = _mm_cvtsi32_si128(static_cast<int>(4 * e));
            const __m128i left = _mm_cvtsi32_si128(static_cast<int>(28 - 4 * e));
            for (std::size_t g = 0; g < kG; ++g) {
              const __m256 mag =
                  _mm256_permutevar8x32_ps(magnitude, _mm256_srl_epi32(q[g][d], right));
              const __m256 f = _mm256_blendv_ps(
                  pos[g][b], neg[g][b], _mm256_castsi256_ps(_mm256_sll_epi32(q[g][d], left)));
              acc[g] = _mm256_fmadd_ps(xv, _mm256_mul_ps(mag, f), acc[g]);
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
