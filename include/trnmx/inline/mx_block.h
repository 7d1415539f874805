// One MX block (32 elements, one E8M0 scale) with xsimd batches: MXFP8 E4M3,
// MXFP8 E5M2 and MXFP4 E2M1 (optional xsimd inline layer, see common.h).
//
// Bits: the scale and every code equal trnmx::QuantizeMxBlock<Traits>(
// {in, n}, rule, {}, special) of trnmx/formats/mx_block.h (project defaults:
// RNE, kSatFinite elements) for every input, and dequantized values equal
// trnmx::DequantizeMxBlock<Traits>. The contract (shared/reference/formats.md
// sections 6.1-6.3, 7, D7, D8):
//   1. n <= 32 values; a shorter block behaves as if padded with +0 (codes
//      n..31 are 00). n > 32 or a rule not defined for the format (section 7)
//      -> scale FF, every code 00 (the reference's kFlagInvalid case).
//   2. Special blocks: any NaN -> scale FF, codes 00. Any +-Inf without NaN ->
//      kDefault: scale FF, codes 00; kSatFiniteBlock: scale FE, codes =
//      saturating convert(V_i * 2^-127). All zero -> scale 00, -0 keeps its code.
//   3. Otherwise amax = max |V_i| on the FP32 bits, scale = the scalar
//      trnmx::ScaleCodeFromAmax<Traits>(amax, rule) (kOcpFloor by default:
//      exponent field of amax - emax_elem, floored at 00), and
//      P_i = Encode<Traits, kSatFinite>(V_i * 2^(127 - scale)) (codec.h).
// The scaling V_i * 2^(127 - scale) and the dequantization decode(P_i) *
// 2^(scale - 127) are single FP32 multiplies, exactly as in the reference; run
// with FTZ/DAZ off (the default) to get formats.md's bits (section 11). The
// reduction to amax is an integer max, so it does not depend on the width.
//
//   QuantizeMxBlock<Traits>(const float* in, std::size_t n, std::uint8_t codes[32],
//                           ScaleRule rule = kOcpFloor, SpecialBlock = kDefault) -> scale
//   QuantizeMxBlockE2M1Packed(const float* in, std::size_t n, std::uint8_t packed[16],
//                             ScaleRule, SpecialBlock) -> scale   (layout of fp4.h)
//   DequantizeMxBlock<Traits>(std::uint8_t scale, const std::uint8_t* codes, float* out, std::size_t n)
//   DequantizeMxBlockE2M1Packed(std::uint8_t scale, const std::uint8_t* packed, float* out, std::size_t n)
// Quantize always writes all 32 codes (16 packed bytes); dequantize writes
// out[0 .. min(n, 32)). Pointers need no alignment.
//
//   #include <trnmx/inline/mx_block.h>
//   const float v[8] = {960, 957, 902.4f, 1, -0.001f, 0, -0.0f, 17};
//   std::uint8_t codes[32];
//   std::uint8_t s = trnmx::inline_simd::QuantizeMxBlock<trnmx::Fp8E4M3Traits>(v, 8, codes);
//   // s == 0x80; codes[0..7] == 7E 7E 7E 30 80 00 80 50; codes[8..31] == 00
//   float back[8];
//   trnmx::inline_simd::DequantizeMxBlock<trnmx::Fp8E4M3Traits>(s, codes, back, 8);
//   // back == 896, 896, 896, 1, -0, 0, -0, 16
#ifndef TRNMX_INLINE_MX_BLOCK_H_
#define TRNMX_INLINE_MX_BLOCK_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "trnmx/formats/codec.h"
#include "trnmx/formats/e8m0.h"
#include "trnmx/formats/mx_block.h"
#include "trnmx/formats/scale_rule.h"
#include "trnmx/inline/codec.h"
#include "trnmx/inline/common.h"
#include "trnmx/inline/fp4.h"

namespace trnmx::inline_simd {
namespace detail {

// Stores code 00 for every element and returns scale FF (NaN): the result for
// special blocks and invalid arguments.
template <class Arch, class Store>
inline std::uint8_t StoreNanBlock(Store& store) noexcept {
  for (std::size_t k = 0; k < kMxBlockSize / Codes<Arch>::size; ++k) store(k, Codes<Arch>(0));
  return kE8M0Nan;
}

// Quantizes in[0..n) (+0 padded to 32); store(k, codes) receives batch k
// (elements k * lanes ..). Returns the scale code.
template <class Traits, class Arch, class Store>
inline std::uint8_t QuantizeBlock(const float* in, std::size_t n, ScaleRule rule, SpecialBlock special,
                                  Store&& store) noexcept {
  using F = Batch<float, Arch>;
  using I = Codes<Arch>;
  constexpr std::size_t kLanes = F::size;
  constexpr std::size_t kBatches = kMxBlockSize / kLanes;
  static_assert(kMxBlockSize % kLanes == 0);
  if (n > kMxBlockSize || !IsScaleRuleDefined<Traits>(rule)) return StoreNanBlock<Arch>(store);

  float padded[kMxBlockSize];
  const float* v = in;
  if (n < kMxBlockSize) {
    std::fill(std::copy(in, in + n, padded), padded + kMxBlockSize, 0.0f);
    v = padded;
  }
  F x[kBatches];
  I amax_lanes(0);
  for (std::size_t k = 0; k < kBatches; ++k) {
    x[k] = F::load_unaligned(v + k * kLanes);
    amax_lanes = xsimd::max(amax_lanes, BitCast<std::int32_t>(x[k]) & I(0x7FFFFFFF));
  }
  alignas(Arch::alignment()) std::int32_t lanes[kLanes];
  amax_lanes.store_aligned(lanes);
  const std::uint32_t amax = static_cast<std::uint32_t>(*std::max_element(lanes, lanes + kLanes));

  // amax > 7F800000: the block holds a NaN; == 7F800000: an Inf and no NaN.
  std::uint8_t scale;
  if (amax > 0x7F800000u || (amax == 0x7F800000u && special == SpecialBlock::kDefault)) {
    return StoreNanBlock<Arch>(store);
  } else if (amax == 0x7F800000u) {
    scale = 0xFE;  // kSatFiniteBlock: 2^127, saturating elements.
  } else {
    scale = ScaleCodeFromAmax<Traits>(amax, rule).bits;
  }
  const F r(ReciprocalE8M0(scale));
  for (std::size_t k = 0; k < kBatches; ++k) store(k, Encode<Traits, Overflow::kSatFinite>(x[k] * r));
  return scale;
}

}  // namespace detail

template <class Traits, class Arch = xsimd::default_arch>
inline std::uint8_t QuantizeMxBlock(const float* in, std::size_t n, std::uint8_t* codes,
                                    ScaleRule rule = ScaleRule::kOcpFloor,
                                    SpecialBlock special = SpecialBlock::kDefault) noexcept {
  constexpr std::size_t kLanes = Batch<float, Arch>::size;
  return detail::QuantizeBlock<Traits, Arch>(in, n, rule, special,
                                             [codes](std::size_t k, const Codes<Arch>& c) {
                                               StoreCodes<Arch>(c, codes + k * kLanes);
                                             });
}

template <class Arch = xsimd::default_arch>
inline std::uint8_t QuantizeMxBlockE2M1Packed(const float* in, std::size_t n, std::uint8_t* packed,
                                              ScaleRule rule = ScaleRule::kOcpFloor,
                                              SpecialBlock special = SpecialBlock::kDefault) noexcept {
  constexpr std::size_t kLanes = Batch<float, Arch>::size;
  return detail::QuantizeBlock<Fp4E2M1Traits, Arch>(
      in, n, rule, special, [packed](std::size_t k, const Codes<Arch>& c) {
        detail::StorePackedNibbles<Arch>(c, packed + k * kLanes / 2);
      });
}

template <class Traits, class Arch = xsimd::default_arch>
inline void DequantizeMxBlock(std::uint8_t scale, const std::uint8_t* codes, float* out,
                              std::size_t n) noexcept {
  static_assert(detail::kIsSupported<Traits>, "E4M3, E5M2 or E2M1");
  using F = Batch<float, Arch>;
  constexpr std::size_t kLanes = F::size;
  constexpr int kMask = (1 << Traits::kTotalBits) - 1;
  const float x = DecodeE8M0(scale);
  n = std::min(n, kMxBlockSize);
  const std::size_t full = n - n % kLanes;  // whole batches, then a scalar tail
  for (std::size_t i = 0; i < full; i += kLanes) {
    (Decode<Traits>(LoadCodes<Arch>(codes + i) & Codes<Arch>(kMask)) * F(x)).store_unaligned(out + i);
  }
  for (std::size_t i = full; i < n; ++i) out[i] = DecodeBits<Traits>(codes[i]) * x;
}

template <class Arch = xsimd::default_arch>
inline void DequantizeMxBlockE2M1Packed(std::uint8_t scale, const std::uint8_t* packed, float* out,
                                        std::size_t n) noexcept {
  using F = Batch<float, Arch>;
  constexpr std::size_t kLanes = F::size;
  const float x = DecodeE8M0(scale);
  n = std::min(n, kMxBlockSize);
  const std::size_t full = n - n % kLanes;  // whole batches, then a scalar tail
  for (std::size_t i = 0; i < full; i += kLanes) {
    (Decode<Fp4E2M1Traits>(detail::LoadPackedNibbles<Arch>(packed + i / 2)) * F(x)).store_unaligned(out + i);
  }
  for (std::size_t i = full; i < n; ++i) {
    const std::uint32_t byte = packed[i / 2];
    out[i] = DecodeBits<Fp4E2M1Traits>(i % 2 == 0 ? byte & 0xF : byte >> 4) * x;
  }
}

}  // namespace trnmx::inline_simd

#endif  // TRNMX_INLINE_MX_BLOCK_H_
