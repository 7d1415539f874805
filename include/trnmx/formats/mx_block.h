// Scalar reference quantization of one MX block (shared/reference/formats.md
// sections 6.1-6.4, D8): one E8M0 scale X and up to 32 element codes with
// v_i = X * P_i.
//
// QuantizeMxBlock<Traits>(block, rule, options, special):
//   1. block holds n <= 32 FP32 values; a shorter (tail) block behaves as if
//      padded with +0, so codes[n..31] are the code of +0 (00).
//   2. Special blocks (section 6.3), decided before any scale rule:
//        any NaN                    -> scale FF, every code 00 (both policies)
//        any +-Inf, no NaN          -> kDefault: scale FF, every code 00;
//                                      kSatFiniteBlock: scale FE, each code =
//                                      saturating convert(V_i * 2^-127)
//                                      (+-Inf -> +-MAX, finite values as usual);
//                                      kInfPassThrough (E5M2 only): amax and
//                                      the scale over the finite values (step
//                                      3), +-Inf elements coded 7C / FC
//        all zero                   -> scale 00, elements by section 3 (-0 kept)
//   3. Otherwise A = max_i (bits(V_i) & 7FFFFFFF) and the scale code is
//      ScaleCodeFromAmax<Traits>(A, rule) (scale_rule.h), and
//      P_i = convert(V_i * ReciprocalE8M0(code)) with `options` (section 3:
//      EncodeWithFlags; MXINT8: EncodeMxInt8WithFlags). The FP32 multiply by
//      the exact reciprocal 2^(127 - code) is exact for quotients >= 2^-126;
//      smaller ones round to +-0 either way (section 6.2 step 4).
// Project defaults are a default-constructed EncodeOptions (RNE, kSatFinite)
// and SpecialBlock::kDefault. Under Rounding::kStochastic, random_bits[i] is
// element i's random word (missing entries read as 0).
//
// Preconditions (checked by CheckMxBlockArgs): n <= 32, `rule` defined for
// Traits, and `special` allowed for Traits (kInfPassThrough: E5M2 only, the
// one MX element format with an Inf code). When violated, the result is scale FF with every code 00 and
// kFlagInvalid, never undefined behaviour.
//
// DequantizeMxBlock<Traits>(block, out) writes decode(P_i) * X for i < out.size()
// (scale FF: NaN everywhere).
//
//   const float v[] = {960, 957, 902.4f, 1, -0.001f, 0, -0.0f, 17};
//   MxBlockCodes b = QuantizeMxBlock<Fp8E4M3Traits>(v, ScaleRule::kOcpFloor);
//   // b.scale.bits == 0x80; b.codes[0..7] == 7E 7E 7E 30 80 00 80 50
#ifndef TRNMX_FORMATS_MX_BLOCK_H_
#define TRNMX_FORMATS_MX_BLOCK_H_

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "trnmx/formats/codec.h"
#include "trnmx/formats/e8m0.h"
#include "trnmx/formats/int8.h"
#include "trnmx/formats/policy.h"
#include "trnmx/formats/scale_rule.h"
#include "trnmx/formats/types.h"
#include "trnmx/options.h"
#include "trnmx/status.h"

namespace trnmx {

inline constexpr std::size_t kMxBlockSize = 32;

constexpr std::string_view SpecialBlockName(SpecialBlock special) {
  switch (special) {
    case SpecialBlock::kDefault: return "kDefault";
    case SpecialBlock::kSatFiniteBlock: return "kSatFiniteBlock";
    case SpecialBlock::kInfPassThrough: return "kInfPassThrough";
  }
  return "unknown";
}

// Whether `special` may be used with the element format of Traits.
template <class Traits>
constexpr bool IsSpecialBlockDefined(SpecialBlock special) {
  switch (special) {
    case SpecialBlock::kDefault:
    case SpecialBlock::kSatFiniteBlock: return true;
    case SpecialBlock::kInfPassThrough: return std::is_same_v<Traits, Fp8E5M2Traits>;
  }
  return false;
}

// One quantized block, elements unpacked (one code per byte, low bits).
struct MxBlockCodes {
  ScaleE8M0 scale;
  std::array<std::uint8_t, kMxBlockSize> codes{};
  std::uint8_t flags = kFlagNone;  // OR of the element conversions' flags.
};

template <class Traits>
Status CheckMxBlockArgs(std::size_t n, ScaleRule rule,
                        SpecialBlock special = SpecialBlock::kDefault) {
  if (n > kMxBlockSize) {
    return InvalidArgumentError("MX block has " + std::to_string(n) + " elements; at most 32");
  }
  if (!IsSpecialBlockDefined<Traits>(special)) {
    return InvalidArgumentError(std::string("special-block policy ") +
                                std::string(SpecialBlockName(special)) +
                                " is defined for MXFP8 E5M2 only (formats.md section 6.3)");
  }
  return CheckScaleRule<Traits>(rule);
}

namespace detail {

template <class Traits>
constexpr EncodeResult EncodeMxElement(float x, const EncodeOptions& options,
                                       std::uint32_t random_bits) {
  if constexpr (kIsMxInt8<Traits>) {
    return EncodeMxInt8WithFlags(x, options, random_bits);
  } else {
    return EncodeWithFlags<Traits>(x, options, random_bits);
  }
}

template <class Traits>
constexpr float DecodeMxElement(std::uint32_t code) {
  if constexpr (kIsMxInt8<Traits>) {
    return DecodeMxInt8(code);
  } else {
    return DecodeBits<Traits>(code);
  }
}

}  // namespace detail

template <class Traits>
constexpr MxBlockCodes QuantizeMxBlock(std::span<const float> block,
                                       ScaleRule rule = ScaleRule::kOcpFloor,
                                       const EncodeOptions& options = {},
                                       SpecialBlock special = SpecialBlock::kDefault,
                                       std::span<const std::uint32_t> random_bits = {}) {
  static_assert(detail::kIsMxElement<Traits>, "not an MX element format");
  MxBlockCodes out;  // codes all 00: the code of +0, also the tail padding.
  if (block.size() > kMxBlockSize || !IsScaleRuleDefined<Traits>(rule) ||
      !IsSpecialBlockDefined<Traits>(special)) {
    out.scale = ScaleE8M0::FromBits(kE8M0Nan);
    out.flags = kFlagInvalid;
    return out;
  }
  std::uint32_t amax = 0;
  bool has_nan = false;
  bool has_inf = false;
  const bool pass_inf = special == SpecialBlock::kInfPassThrough;
  for (const float v : block) {
    const std::uint32_t a = std::bit_cast<std::uint32_t>(v) & 0x7FFFFFFFu;
    has_nan = has_nan || a > 0x7F800000u;
    has_inf = has_inf || a == 0x7F800000u;
    if (!(pass_inf && a == 0x7F800000u)) amax = a > amax ? a : amax;
  }
  const auto random_at = [random_bits](std::size_t i) -> std::uint32_t {
    return i < random_bits.size() ? random_bits[i] : 0u;
  };
  if (has_nan || (has_inf && special == SpecialBlock::kDefault)) {
    out.scale = ScaleE8M0::FromBits(kE8M0Nan);
    return out;
  }
  if (has_inf && special == SpecialBlock::kSatFiniteBlock) {  // Scale FE = 2^127, saturating elements.
    out.scale = ScaleE8M0::FromBits(0xFE);
    EncodeOptions sat = options;
    sat.overflow = Overflow::kSatFinite;
    const float r = ReciprocalE8M0(0xFE);
    for (std::size_t i = 0; i < block.size(); ++i) {
      const EncodeResult e = detail::EncodeMxElement<Traits>(block[i] * r, sat, random_at(i));
      out.codes[i] = static_cast<std::uint8_t>(e.code);
      out.flags |= e.flags;
    }
    return out;
  }
  out.scale = ScaleCodeFromAmax<Traits>(amax, rule);
  const float r = ReciprocalE8M0(out.scale.bits);
  for (std::size_t i = 0; i < block.size(); ++i) {
    if constexpr (std::is_same_v<Traits, Fp8E5M2Traits>) {  // kInfPassThrough: +-Inf -> 7C / FC.
      const std::uint32_t bits = std::bit_cast<std::uint32_t>(block[i]);
      if ((bits & 0x7FFFFFFFu) == 0x7F800000u) {
        out.codes[i] = static_cast<std::uint8_t>(
            ((bits >> 31) != 0 ? Traits::kSignMask : 0u) |
            (Traits::kExponentAllOnes << Traits::kMantissaBits));
        continue;
      }
    }
    const EncodeResult e = detail::EncodeMxElement<Traits>(block[i] * r, options, random_at(i));
    out.codes[i] = static_cast<std::uint8_t>(e.code);
    out.flags |= e.flags;
  }
  return out;
}

// out[i] = decode(codes[i]) * 2^(scale - 127) for i < out.size() (<= 32);
// scale FF gives NaN. Extra out entries beyond 32 are not written.
template <class Traits>
constexpr void DequantizeMxBlock(const MxBlockCodes& block, std::span<float> out) {
  static_assert(detail::kIsMxElement<Traits>, "not an MX element format");
  const float x = DecodeE8M0(block.scale.bits);
  const std::size_t n = out.size() < kMxBlockSize ? out.size() : kMxBlockSize;
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = detail::DecodeMxElement<Traits>(block.codes[i]) * x;
  }
}

}  // namespace trnmx

#endif  // TRNMX_FORMATS_MX_BLOCK_H_
