// MXINT8 elements: two's-complement int8 n standing for n * 2^-6.
//
//     7 6           0
//   +-+-------------+
//   |  n (int8)     |   value n / 64, range -2 .. 1 + 63/64
//   +-+-------------+
//
// Encoding (formats.md section 6.4, D9): n = round(x * 64) with the rounding
// policy (RNE by default, exact), clamped to [-127, 127], or to [-128, 127]
// under Int8Range::kAllowMinus128. +-Inf clamp like large finite values;
// NaN gives 0 with kFlagInvalid. The sign of zero is not representable.
// Decoding is exact; code 80 decodes to -2.0 whatever the range policy.
//
//   trnmx::MxInt8 c = trnmx::EncodeMxInt8(0.5f);    // 0x20
//   float v = trnmx::Decode(c);                     // 0.5f
#ifndef TRNMX_FORMATS_INT8_H_
#define TRNMX_FORMATS_INT8_H_

#include <bit>
#include <cstdint>

#include "trnmx/formats/codec.h"
#include "trnmx/formats/policy.h"
#include "trnmx/formats/types.h"

namespace trnmx {

inline constexpr int kMxInt8FractionBits = 6;

constexpr EncodeResult EncodeMxInt8WithFlags(float x, const EncodeOptions& options = {},
                                             std::uint32_t random_bits = 0) {
  // Selects without branches on the data, so that loops of conversions
  // under fixed options vectorise (as codec.h).
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t abs_bits = bits & 0x7FFFFFFFu;
  const bool negative = (bits >> 31) != 0;
  const std::uint32_t limit =
      negative && options.int8_range == Int8Range::kAllowMinus128 ? 128u : 127u;
  const std::uint32_t exp_field = abs_bits >> 23;
  // |x| * 64 = sig * 2^(e - 23 + 6). From exponent 8 on (and for Inf)
  // |x| * 64 >= 2^14 only clamps; e is capped there to keep the shift >= 10.
  const std::uint32_t biased = exp_field < 1 ? 1 : exp_field > 127 + 7 ? 127 + 7 : exp_field;
  const int e = static_cast<int>(biased) - 127;
  const std::uint32_t sig = (abs_bits & 0x7FFFFFu) | (exp_field != 0 ? 0x800000u : 0);
  const detail::RoundedMagnitude r =
      detail::RoundShiftRight(sig, 23 - kMxInt8FractionBits - e, options.rounding, random_bits);
  const bool clamps = (r.n > limit) | (exp_field >= 127 + 8);
  std::uint32_t n = clamps ? limit : r.n;
  std::uint32_t flags = r.inexact != 0 ? kFlagInexact | (r.n == 0 ? kFlagUnderflow : 0u) : 0u;
  flags = clamps ? kFlagOverflow | kFlagInexact : flags;
  if (options.subnormals == Subnormals::kFlush) {
    const bool flushed = exp_field == 0 && abs_bits != 0;
    n = flushed ? 0u : n;
    flags = flushed ? std::uint32_t{kFlagInexact} : flags;
  }
  const std::uint32_t code = (negative ? 0u - n : n) & 0xFFu;
  const bool nan = abs_bits > 0x7F800000u;
  return {nan ? 0u : code, static_cast<std::uint8_t>(nan ? kFlagInvalid : flags)};
}

constexpr MxInt8 EncodeMxInt8(float x, const EncodeOptions& options = {},
                              std::uint32_t random_bits = 0) {
  return MxInt8::FromBits(EncodeMxInt8WithFlags(x, options, random_bits).code);
}

// n / 64 exactly, for the int8 n in the low byte of `code`.
constexpr float DecodeMxInt8(std::uint32_t code) {
  const auto n = static_cast<std::int8_t>(static_cast<std::uint8_t>(code));
  return static_cast<float>(n) * 0x1p-6f;
}
constexpr float Decode(MxInt8 code) { return DecodeMxInt8(code.bits); }

// formats.md section 12.5 (MXINT8 row, scale 1).
static_assert(EncodeMxInt8(0.0078125f).bits == 0x00);     // 1/128 * 64 = 0.5 ties to 0
static_assert(EncodeMxInt8(-1.999f).bits == 0x81);        // -127.936 -> -128 -> clamp -127
static_assert(EncodeMxInt8(-1.999f, {.int8_range = Int8Range::kAllowMinus128}).bits == 0x80);
static_assert(DecodeMxInt8(0x80) == -2.0f);

}  // namespace trnmx

#endif  // TRNMX_FORMATS_INT8_H_
