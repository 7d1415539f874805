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
#include "trnmx/options.h"

namespace trnmx {

// How the exact value is rounded to the target's precision (formats.md D1).
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
