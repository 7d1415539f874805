// Conversion policies and the per-conversion status flags.
//
// Every FP32 -> small-format conversion takes an `EncodeOptions`. A
// default-constructed one gives the project defaults of
// shared/reference/formats.md section 1 for every format:
// round to nearest even, the format's own overflow and NaN rules
// (FP8/FP6/FP4 saturate, BF16/FP16 overflow to Inf), FP32 subnormal inputs
// converted exactly.
//
//   trnmx::EncodeOptions opts;                          // defaults
//   opts.overflow = trnmx::Overflow::kNonSat;           // OFP8 non-saturating
//   opts.rounding = trnmx::Rounding::kStochastic;       // needs random bits
#ifndef TRNMX_FORMATS_POLICY_H_
#define TRNMX_FORMATS_POLICY_H_

#include <cstdint>

#include "trnmx/formats/traits.h"

namespace trnmx {

// How the exact value is rounded to the target's precision (formats.md D1).
enum class Rounding : std::uint8_t {
  // Round to nearest, ties to even, with an exact sticky bit over all 24
  // significand bits of the FP32 input (default).
  kNearestEven,
  // Round to nearest, ties away from zero (microxcaling "nearest").
  kTiesAway,
  // Truncate the magnitude. Finite overflow then gives +-MAX under every
  // overflow policy (IEEE 754 section 4.3.2 for round-toward-zero).
  kTowardZero,
  // Stochastic: with `frac32` the discarded fraction of the magnitude (in
  // units of the target's quantum) truncated to 32 bits, the magnitude rounds
  // away from zero iff frac32 + random_bits >= 2^32. With uniform random bits
  // the probability of rounding up is frac32 / 2^32. Exact values never move.
  kStochastic,
};

// What FP32 subnormal inputs (exponent field 0) are (formats.md D5).
enum class Subnormals : std::uint8_t {
  kKeep,   // Converted exactly (default).
  kFlush,  // Replaced by a zero of the same sign first (DAZ; `kDaz`).
};

// The range of MXINT8 elements (formats.md D9).
enum class Int8Range : std::uint8_t {
  kSymmetric,      // Clamp to [-127, 127] (default).
  kAllowMinus128,  // Clamp to [-128, 127].
};

struct EncodeOptions {
  Rounding rounding = Rounding::kNearestEven;
  Overflow overflow = Overflow::kFormatDefault;
  NanPolicy nan = NanPolicy::kFormatDefault;
  Subnormals subnormals = Subnormals::kKeep;
  Int8Range int8_range = Int8Range::kSymmetric;  // MXINT8 only.
};

// IEEE-style exception flags of one conversion, ORed into EncodeResult::flags.
inline constexpr std::uint8_t kFlagNone = 0;
inline constexpr std::uint8_t kFlagInexact = 1 << 0;    // The result differs from the input.
inline constexpr std::uint8_t kFlagOverflow = 1 << 1;   // Rounded above MAX, or Inf saturated.
inline constexpr std::uint8_t kFlagUnderflow = 1 << 2;  // Tiny (below min normal) and inexact.
inline constexpr std::uint8_t kFlagInvalid = 1 << 3;    // NaN into a format without NaN;
                                                        // a negative E8M0 input.

// A code and the flags its conversion raised.
struct EncodeResult {
  std::uint32_t code = 0;
  std::uint8_t flags = kFlagNone;
};

}  // namespace trnmx

#endif  // TRNMX_FORMATS_POLICY_H_
