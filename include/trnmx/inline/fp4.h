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

#include "trnmx/formats/codec.h"
#include "trnmx/formats/policy.h"
#include "trnmx/formats/traits.h"
#include "trnmx/inline/codec.h"
#include "trnmx/inline/common.h"

namespace trnmx::inline_simd {
namespace detail {

// Packs kLanes (even) codes from a batch into kLanes / 2 bytes.
template <class Arch>
inline void StorePackedNibbles(const Codes<Arch>& codes, std::uint8_t* out) noexcept {
  constexpr std::size_t kLanes = Codes<Arch>::size;
  static_assert(kLanes % 2 == 0);
  alignas(Arch::alignment()) std::int32_t tmp[kLanes];
  codes.store_aligned(tmp);
  for (std::size_t j = 0; j < kLanes / 2; ++j) {
    out[j] = static_cast<std::uint8_t>(tmp[2 * j] | (tmp[2 * j + 1] << 4));
  }
}

// Unpacks kLanes / 2 bytes into kLanes codes.
template <class Arch>
inline Codes<Arch> LoadPackedNibbles(const std::uint8_t* in) noexcept {
  constexpr std::size_t kLanes = Codes<Arch>::size;
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
