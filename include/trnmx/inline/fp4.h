// Packed FP4 E2M1 arrays (optional xsimd inline layer, see common.h).
//
// Layout (shared/reference/formats.md section 9, D12): two codes per byte,
// element 2i in bits 3..0 and element 2i+1 in bits 7..4, independent of the
// vector width (PyTorch float4_e2m1fn_x2, torchao pack_uint4):
//
//     byte i:   7   6   5   4   3   2   1   0
//             | element 2i+1  | element 2i    |
//
// n elements take (n + 1) / 2 bytes; for odd n the last high nibble is 0.
//
//   EncodeE2M1Packed<P>(const float* in, std::uint8_t* out, std::size_t n)
//   DecodeE2M1Packed(const std::uint8_t* in, float* out, std::size_t n)
// Codes are those of Encode<Fp4E2M1Traits, P> / Decode<Fp4E2M1Traits>
// (codec.h): RNE, saturate to +-6 by default, NaN -> +0, signed zero kept;
// bit for bit the scalar EncodeWithFlags<Fp4E2M1Traits> / DecodeBits. Any
// alignment; full batches, then a scalar tail through the scalar reference;
// `in` and `out` must not overlap.
//
//   #include <trnmx/inline/fp4.h>
//   const float x[3] = {0.75f, -6.5f, 2.5f};
//   std::uint8_t p[2];
//   trnmx::inline_simd::EncodeE2M1Packed(x, p, 3);    // p = {0xF2, 0x04}
//   float y[3];
//   trnmx::inline_simd::DecodeE2M1Packed(p, y, 3);    // {1, -6, 2}
#ifndef TRNMX_INLINE_FP4_H_
#define TRNMX_INLINE_FP4_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "trnmx/formats/codec.h"
#include "trnmx/formats/policy.h"
#include "trnmx/formats/traits.h"
#include "trnmx/inline/codec.h"
#include "trnmx/inline/common.h"

namespace trnmx::inline_simd {
namespace detail {

// Packs kLanes (even) codes from a batch into kLanes / 2 bytes. On SSE2 and
// AVX2 (and the architectures built on them) the pairs are combined in the
// register: as 64-bit lanes a pair is lo + hi * 2^32 with lo, hi < 16, so
// (v | v >> 28) holds lo | hi << 4 in its low byte; elsewhere through an
// aligned buffer.
template <class Arch>
inline void StorePackedNibbles(const Codes<Arch>& codes, std::uint8_t* out) noexcept {
  constexpr std::size_t kLanes = Codes<Arch>::size;
  static_assert(kLanes % 2 == 0);
#if XSIMD_WITH_AVX2
  if constexpr (std::is_base_of_v<xsimd::avx2, Arch>) {
    const __m256i v = codes;
    const __m256i pairs = _mm256_or_si256(v, _mm256_srli_epi64(v, 28));
    // Byte 0 of each 64-bit lane to bytes 0-1 of its 128-bit half.
    const __m256i pick = _mm256_setr_epi8(0, 8, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                          0, 8, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i b = _mm256_shuffle_epi8(pairs, pick);
    const std::int32_t four = _mm_cvtsi128_si32(
        _mm_unpacklo_epi16(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1)));
    std::memcpy(out, &four, 4);
    return;
  }
#endif
#if XSIMD_WITH_SSE2
  if constexpr (std::is_base_of_v<xsimd::sse2, Arch>) {
    const __m128i v = codes;
    const __m128i pairs = _mm_or_si128(v, _mm_srli_epi64(v, 28));
    out[0] = static_cast<std::uint8_t>(_mm_cvtsi128_si32(pairs));
    out[1] = static_cast<std::uint8_t>(_mm_extract_epi16(pairs, 4));
    return;
  }
#endif
  alignas(Arch::alignment()) std::int32_t tmp[kLanes];
  codes.store_aligned(tmp);
  for (std::size_t j = 0; j < kLanes / 2; ++j) {
    out[j] = static_cast<std::uint8_t>(tmp[2 * j] | (tmp[2 * j + 1] << 4));
  }
}

// Unpacks kLanes / 2 bytes into kLanes codes. On SSE2 and AVX2 byte j goes
// to 64-bit lane j, where (x | x << 28) & 0xF in each 32-bit half gives its
// low and its high nibble.
template <class Arch>
inline Codes<Arch> LoadPackedNibbles(const std::uint8_t* in) noexcept {
  constexpr std::size_t kLanes = Codes<Arch>::size;
#if XSIMD_WITH_AVX2
  if constexpr (std::is_base_of_v<xsimd::avx2, Arch>) {
    std::int32_t four;
    std::memcpy(&four, in, 4);
    const __m256i x = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(four));
    return _mm256_and_si256(_mm256_or_si256(x, _mm256_slli_epi64(x, 28)), _mm256_set1_epi32(0xF));
  }
#endif
#if XSIMD_WITH_SSE2
  if constexpr (std::is_base_of_v<xsimd::sse2, Arch>) {
    const __m128i x = _mm_set_epi64x(in[1], in[0]);
    return _mm_and_si128(_mm_or_si128(x, _mm_slli_epi64(x, 28)), _mm_set1_epi32(0xF));
  }
#endif
  alignas(Arch::alignment()) std::int32_t tmp[kLanes];
  for (std::size_t j = 0; j < kLanes / 2; ++j) {
    tmp[2 * j] = in[j] & 0xF;
    tmp[2 * j + 1] = in[j] >> 4;
  }
  return Codes<Arch>::load_aligned(tmp);
}

}  // namespace detail

template <Overflow P = Overflow::kFormatDefault, class Arch = xsimd::default_arch>
inline void EncodeE2M1Packed(const float* in, std::uint8_t* out, std::size_t n) noexcept {
  constexpr std::size_t kLanes = Batch<float, Arch>::size;
  const std::size_t full = n - n % kLanes;  // whole batches, then a scalar tail
  for (std::size_t i = 0; i < full; i += kLanes) {
    detail::StorePackedNibbles<Arch>(Encode<Fp4E2M1Traits, P>(Batch<float, Arch>::load_unaligned(in + i)),
                                     out + i / 2);
  }
  // Tail: `full` is even (kLanes is), so pairs stay aligned to bytes.
  for (std::size_t i = full; i < n; i += 2) {
    const std::uint32_t lo = EncodeWithFlags<Fp4E2M1Traits>(in[i], {.overflow = P}).code;
    const std::uint32_t hi = i + 1 < n ? EncodeWithFlags<Fp4E2M1Traits>(in[i + 1], {.overflow = P}).code : 0;
    out[i / 2] = static_cast<std::uint8_t>(lo | (hi << 4));
  }
}

template <class Arch = xsimd::default_arch>
inline void DecodeE2M1Packed(const std::uint8_t* in, float* out, std::size_t n) noexcept {
  constexpr std::size_t kLanes = Batch<float, Arch>::size;
  const std::size_t full = n - n % kLanes;  // whole batches, then a scalar tail
  for (std::size_t i = 0; i < full; i += kLanes) {
    Decode<Fp4E2M1Traits>(detail::LoadPackedNibbles<Arch>(in + i / 2)).store_unaligned(out + i);
  }
  for (std::size_t i = full; i < n; ++i) {
    const std::uint32_t byte = in[i / 2];
    out[i] = DecodeBits<Fp4E2M1Traits>(i % 2 == 0 ? byte & 0xF : byte >> 4);
  }
}

}  // namespace trnmx::inline_simd

#endif  // TRNMX_INLINE_FP4_H_
