// E8M0 scale codes (the MX block scale, "float8_e8m0fnu").
//
// Layout: 8 exponent bits, no sign, no mantissa, bias 127.
//
//     7             0
//   +---------------+
//   |   exponent c  |   value 2^(c - 127), c = 00..FE;  FF = NaN
//   +---------------+
//
// Decode (formats.md section 2): 00 -> 2^-127 = FP32 subnormal 00400000
// (not +0: `code << 23` is wrong there), 01..FE -> code << 23, FF -> NaN.
//
// The standalone float -> E8M0 cast has no universal rounding, so the caller
// names it (formats.md section 5, D10). MX quantization never uses this cast:
// block scales come from the scale rules of the MX layer.
//
//   auto r = trnmx::ToE8M0(1.5f, trnmx::E8M0Rounding::kNearestTiesUp,
//                          trnmx::E8M0Saturation::kSaturate);   // r.code == 0x80
//   float s = trnmx::Decode(trnmx::ScaleE8M0::FromBits(0x7F));   // 1.0f
#ifndef TRNMX_FORMATS_E8M0_H_
#define TRNMX_FORMATS_E8M0_H_

#include <bit>
#include <cstdint>

#include "trnmx/formats/policy.h"
#include "trnmx/formats/types.h"
#include "trnmx/options.h"

namespace trnmx {

inline constexpr int kE8M0Bias = 127;
inline constexpr std::uint8_t kE8M0Nan = 0xFF;

// Converts x >= 0 to an E8M0 code. +-0 -> 00 (2^-127, the smallest code).
// Negative x -> FF with kFlagInvalid; NaN -> FF with kFlagInvalid.
// Written as selects without branches on the data, so that loops of
// conversions under a fixed rounding vectorise.
constexpr EncodeResult ToE8M0(float x, E8M0Rounding rounding, E8M0Saturation saturation) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t abs_bits = bits & 0x7FFFFFFFu;
  const std::uint32_t exp_field = abs_bits >> 23;
  const std::uint32_t mantissa = abs_bits & 0x7FFFFFu;
  const std::uint32_t overflow_code =
      saturation == E8M0Saturation::kSaturate ? 0xFEu : std::uint32_t{kE8M0Nan};

  // Normal x (and +Inf: 255 + 0 overflows): 2^(exp_field - 127), rounded up
  // by the rounding; past FE the overflow code.
  std::uint32_t up = 0;
  switch (rounding) {
    case E8M0Rounding::kDown:
      up = 0;
      break;
    case E8M0Rounding::kUp:
      up = mantissa != 0 ? 1u : 0u;
      break;
    case E8M0Rounding::kNearestTiesUp:
      up = mantissa >= 0x400000u ? 1u : 0u;
      break;
  }
  std::uint32_t code = exp_field + up;
  std::uint32_t flags = mantissa != 0 ? kFlagInexact : kFlagNone;
  flags = code > 0xFEu ? kFlagOverflow | kFlagInexact : flags;
  code = code > 0xFEu ? overflow_code : code;
  // (0, 2^-126): 2^-127 (M 0x400000) is code 00, 2^-126 is code 01.
  const std::uint32_t sub_code = rounding != E8M0Rounding::kDown && mantissa > 0x400000u ? 1u : 0u;
  const std::uint32_t sub_flags = mantissa == 0x400000u ? kFlagNone : kFlagInexact | kFlagUnderflow;
  code = exp_field == 0 ? sub_code : code;
  flags = exp_field == 0 ? sub_flags : flags;
  // +-0 -> 00 (inexact); negative and NaN -> FF (invalid).
  code = abs_bits == 0 ? 0u : code;
  flags = abs_bits == 0 ? std::uint32_t{kFlagInexact} : flags;
  const bool invalid = abs_bits > 0x7F800000u || (abs_bits != 0 && (bits >> 31) != 0);
  code = invalid ? std::uint32_t{kE8M0Nan} : code;
  flags = invalid ? std::uint32_t{kFlagInvalid} : flags;
  return {code, static_cast<std::uint8_t>(flags)};
}

// 2^(code - 127) as FP32; FF -> quiet NaN 7FC00000.
constexpr float DecodeE8M0(std::uint32_t code) {
  code &= 0xFFu;
  if (code == 0xFF) return std::bit_cast<float>(0x7FC00000u);
  if (code == 0x00) return std::bit_cast<float>(0x00400000u);
  return std::bit_cast<float>(code << 23);
}
constexpr float Decode(ScaleE8M0 scale) { return DecodeE8M0(scale.bits); }

// 2^(127 - code), the exact reciprocal used to divide by a scale:
// (254 - c) << 23 for c = 01..FD, 00 -> 2^127 (7F000000), FE -> 2^-127
// (00400000, an FP32 subnormal), FF -> NaN.
constexpr float ReciprocalE8M0(std::uint32_t code) {
  code &= 0xFFu;
  if (code == 0xFF) return std::bit_cast<float>(0x7FC00000u);
  if (code == 0xFE) return std::bit_cast<float>(0x00400000u);
  return std::bit_cast<float>((254u - code) << 23);
}

static_assert(ToE8M0(1.5f, E8M0Rounding::kNearestTiesUp, E8M0Saturation::kSaturate).code == 0x80);
static_assert(ToE8M0(1.25f, E8M0Rounding::kUp, E8M0Saturation::kSaturate).code == 0x80);
static_assert(ReciprocalE8M0(0x00) == 0x1p127f && DecodeE8M0(0x00) == 0x1p-127f);

}  // namespace trnmx

#endif  // TRNMX_FORMATS_E8M0_H_
