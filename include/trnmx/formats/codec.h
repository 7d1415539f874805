// Scalar FP32 <-> small-float codecs: the normative reference for the bits.
//
// Header-only and constexpr. Every SIMD codec in trnmx matches these
// functions bit for bit (shared/reference/formats.md section 3).
//
// Encoding FP32 x to a format with m mantissa bits, bias b, max MAX:
//   1. NaN -> the NaN policy; +-Inf -> the overflow policy; FP32 subnormals
//      are flushed to a signed zero first under Subnormals::kFlush.
//   2. e = floor(log2|x|) from the bits; q = max(e, 1 - b); the magnitude is
//      rounded to an integer n of quanta 2^(q - m) using all 24 significand
//      bits (exact sticky), with the rounding policy.
//   3. r = n * 2^(q - m) (a carry into the next binade is allowed). r > MAX is
//      overflow, decided after rounding -> the overflow policy. r == 0 gives
//      the zero code with x's sign. Target subnormals are always produced.
//
// Decoding is exact. NaN codes decode to FP32 quiet NaN 7FC00000/FFC00000 for
// FP8; BF16 and FP16 NaNs keep their payload (BF16 decode is bits << 16).
//
//   using namespace trnmx;
//   Fp8E4M3 a = Encode<Fp8E4M3>(17.0f);                  // 0x58 (16: tie to even)
//   Fp8E4M3 b = Encode<Fp8E4M3>(1000.0f);                // 0x7E (448, saturated)
//   EncodeOptions nonsat{.overflow = Overflow::kNonSat};
//   Fp8E4M3 c = Encode<Fp8E4M3>(1000.0f, nonsat);        // 0x7F (NaN)
//   float v = Decode(a);                                 // 16.0f
//   EncodeResult r = EncodeWithFlags<Fp4E2M1Traits>(0.25f);  // code 0, kFlagInexact|kFlagUnderflow
#ifndef TRNMX_FORMATS_CODEC_H_
#define TRNMX_FORMATS_CODEC_H_

#include <bit>
#include <cstdint>

#include "trnmx/formats/policy.h"
#include "trnmx/formats/traits.h"
#include "trnmx/formats/types.h"

namespace trnmx {
namespace detail {

// Result of rounding an unsigned magnitude `sig * 2^-shift` to an integer.
struct RoundedMagnitude {
  std::uint32_t n;
  bool inexact;
};

// Rounds sig / 2^shift (sig < 2^31, shift >= 0) to an integer by `rounding`.
// Exact: no floating point involved.
constexpr RoundedMagnitude RoundShiftRight(std::uint32_t sig, int shift, Rounding rounding,
                                           std::uint32_t random_bits) {
  if (shift == 0) return {sig, false};
  const std::uint64_t s = sig;
  const std::uint64_t n = shift >= 32 ? 0 : s >> shift;
  const std::uint64_t rem = shift >= 32 ? s : s & ((std::uint64_t{1} << shift) - 1);
  if (rem == 0) return {static_cast<std::uint32_t>(n), false};
  bool up = false;
  switch (rounding) {
    case Rounding::kTowardZero:
      up = false;
      break;
    case Rounding::kNearestEven:
    case Rounding::kTiesAway: {
      if (shift > 32) {  // rem < 2^31 < half: below the midpoint.
        up = false;
        break;
      }
      const std::uint64_t half = std::uint64_t{1} << (shift - 1);
      up = rem > half ||
           (rem == half && (rounding == Rounding::kTiesAway || (n & 1) != 0));
      break;
    }
    case Rounding::kStochastic: {
      // frac32 = floor(rem / 2^shift * 2^32); rem < 2^31 so rem << 32 fits.
      const std::uint64_t frac32 = shift >= 63 ? 0 : (rem << 32) >> shift;
      up = frac32 + random_bits >= (std::uint64_t{1} << 32);
      break;
    }
  }
  return {static_cast<std::uint32_t>(n + (up ? 1 : 0)), true};
}

template <class Traits>
constexpr Overflow ResolveOverflow(Overflow o) {
  return o == Overflow::kFormatDefault ? Traits::kDefaultOverflow : o;
}
template <class Traits>
constexpr NanPolicy ResolveNan(NanPolicy p) {
  return p == NanPolicy::kFormatDefault ? Traits::kDefaultNan : p;
}

// Code of +-Inf where the format has one, of NaN where it only has NaN,
// else +-MAX: the non-saturating overflow result.
template <class Traits>
constexpr std::uint32_t NonSatOverflowCode(std::uint32_t sign_code) {
  if constexpr (Traits::kNonFinite == NonFinite::kIeee) {
    return sign_code | (Traits::kExponentAllOnes << Traits::kMantissaBits);
  } else if constexpr (Traits::kNonFinite == NonFinite::kNanAllOnes) {
    return sign_code | (Traits::kMaxMagnitudeCode + 1);
  } else {
    return sign_code | Traits::kMaxMagnitudeCode;
  }
}

template <class Traits>
constexpr EncodeResult EncodeNan(std::uint32_t fp32_bits, NanPolicy policy) {
  const std::uint32_t sign_code = (fp32_bits >> 31) ? Traits::kSignMask : 0;
  if constexpr (!Traits::kHasNan) {
    if (policy == NanPolicy::kMlDtypesNaN) {
      // ml_dtypes flips the sign: +NaN -> negative-zero code, -NaN -> 0.
      return {sign_code ^ Traits::kSignMask, kFlagInvalid};
    }
    return {0, kFlagInvalid};
  } else if constexpr (Traits::kNonFinite == NonFinite::kNanAllOnes) {
    return {sign_code | (Traits::kMaxMagnitudeCode + 1), kFlagNone};
  } else {
    constexpr int m = Traits::kMantissaBits;
    constexpr std::uint32_t kQuietBit = 1u << (m - 1);
    const std::uint32_t exp_all_ones = Traits::kExponentAllOnes << m;
    if (policy == NanPolicy::kQuietPayload) {
      const std::uint32_t payload = (fp32_bits & 0x7FFFFFu) >> (23 - m);
      return {sign_code | exp_all_ones | kQuietBit | payload, kFlagNone};
    }
    return {sign_code | exp_all_ones | kQuietBit, kFlagNone};
  }
}

}  // namespace detail

// Encodes FP32 `x` into the format of `Traits` and reports the flags raised.
// `random_bits` is read only under Rounding::kStochastic.
template <class Traits>
constexpr EncodeResult EncodeWithFlags(float x, const EncodeOptions& options = {},
                                       std::uint32_t random_bits = 0) {
  constexpr int m = Traits::kMantissaBits;
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign_code = (bits >> 31) ? Traits::kSignMask : 0;
  const std::uint32_t abs_bits = bits & 0x7FFFFFFFu;
  const Overflow overflow = detail::ResolveOverflow<Traits>(options.overflow);

  if (abs_bits > 0x7F800000u) return detail::EncodeNan<Traits>(bits, detail::ResolveNan<Traits>(options.nan));
  if (abs_bits == 0x7F800000u) {
    if (overflow == Overflow::kSatFinite) {
      return {sign_code | Traits::kMaxMagnitudeCode, kFlagOverflow | kFlagInexact};
    }
    const std::uint32_t code = detail::NonSatOverflowCode<Traits>(sign_code);
    // Exact for formats with Inf; otherwise the Inf was not representable.
    const std::uint8_t flags = Traits::kHasInf ? kFlagNone : kFlagOverflow | kFlagInexact;
    return {code, flags};
  }
  const std::uint32_t exp_field = abs_bits >> 23;
  if (abs_bits == 0 || (exp_field == 0 && options.subnormals == Subnormals::kFlush)) {
    return {sign_code, abs_bits == 0 ? kFlagNone : kFlagInexact};
  }

  // |x| = sig * 2^(e - 23) with e = floor(log2 |x|) for normals. For FP32
  // subnormals e = -126 is not the true floor, but every target's minimum
  // exponent 1 - bias is >= -126, so q below is the same either way.
  const int e = exp_field != 0 ? static_cast<int>(exp_field) - 127 : -126;
  const std::uint32_t sig = exp_field != 0 ? ((abs_bits & 0x7FFFFFu) | 0x800000u) : abs_bits;
  const int q = e > Traits::kEmin ? e : Traits::kEmin;
  const int shift = 23 + q - m - e;  // >= 0: q >= e and m <= 23.
  const detail::RoundedMagnitude r = detail::RoundShiftRight(sig, shift, options.rounding, random_bits);

  std::uint8_t flags = r.inexact ? kFlagInexact : kFlagNone;
  if (r.inexact && q == Traits::kEmin && r.n <= (1u << m)) {
    // Tiny: |x| below the smallest normal (n == 2^m means it rounded up to it).
    if (e < Traits::kEmin) flags |= kFlagUnderflow;
  }
  // The value n * 2^(q - m) has the code ((q + b - 1) << m) + n, for
  // subnormals (q + b - 1 == 0), normals and a carry into the next binade.
  const std::uint32_t magnitude = (static_cast<std::uint32_t>(q + Traits::kBias - 1) << m) + r.n;
  if (magnitude > Traits::kMaxMagnitudeCode) {
    flags |= kFlagOverflow | kFlagInexact;
    if (overflow == Overflow::kNonSat && options.rounding != Rounding::kTowardZero) {
      return {detail::NonSatOverflowCode<Traits>(sign_code), flags};
    }
    return {sign_code | Traits::kMaxMagnitudeCode, flags};
  }
  return {sign_code | magnitude, flags};
}

// Decodes a code of the format of `Traits` to FP32, exactly. Bits above the
// format's width are ignored.
template <class Traits>
constexpr float DecodeBits(std::uint32_t code) {
  constexpr int m = Traits::kMantissaBits;
  const std::uint32_t sign32 = (code & Traits::kSignMask) ? 0x80000000u : 0;
  const std::uint32_t magnitude = code & (Traits::kSignMask - 1);
  const std::uint32_t exp_field = magnitude >> m;
  const std::uint32_t mantissa = magnitude & Traits::kMantissaMask;

  if constexpr (Traits::kNonFinite == NonFinite::kIeee) {
    if (exp_field == Traits::kExponentAllOnes) {
      if (mantissa == 0) return std::bit_cast<float>(sign32 | 0x7F800000u);
      if constexpr (m >= 7) {  // BF16, FP16: the payload fits; keep it.
        return std::bit_cast<float>(sign32 | 0x7F800000u | (mantissa << (23 - m)));
      } else {
        return std::bit_cast<float>(sign32 | 0x7FC00000u);
      }
    }
  } else if constexpr (Traits::kNonFinite == NonFinite::kNanAllOnes) {
    if (magnitude == Traits::kMaxMagnitudeCode + 1) return std::bit_cast<float>(sign32 | 0x7FC00000u);
  }
  if (exp_field != 0) {
    const std::uint32_t exp32 = exp_field - Traits::kBias + 127;
    return std::bit_cast<float>(sign32 | (exp32 << 23) | (mantissa << (23 - m)));
  }
  if (mantissa == 0) return std::bit_cast<float>(sign32);
  // Subnormal: mantissa * 2^(1 - b - m). Normalize on the leading bit p.
  if constexpr (Traits::kEmin - m < -126) {
    // The format's subnormals are FP32 subnormals too (BF16):
    // mantissa * 2^(1 - b - m) = (mantissa << (150 - b - m)) * 2^-149.
    return std::bit_cast<float>(sign32 | (mantissa << (150 - Traits::kBias - m)));
  } else {
    const int p = std::bit_width(mantissa) - 1;
    const int e = 1 - Traits::kBias - m + p;  // >= -126 here.
    const std::uint32_t frac = (mantissa - (1u << p)) << (23 - p);
    return std::bit_cast<float>(sign32 | (static_cast<std::uint32_t>(e + 127) << 23) | frac);
  }
}

// Typed front ends: Encode<Fp8E4M3>(x), Decode(code).
template <class Code>
constexpr Code Encode(float x, const EncodeOptions& options = {}, std::uint32_t random_bits = 0) {
  return Code::FromBits(EncodeWithFlags<typename Code::Traits>(x, options, random_bits).code);
}

template <class Traits, class Storage>
constexpr float Decode(FloatCode<Traits, Storage> code) {
  return DecodeBits<Traits>(code.bits);
}

// BF16 round-to-nearest-even from FP32 bits in integer ops (formats.md
// section 4): equal to Encode<Bf16>(x) for every input, kept as the fast
// formulation that SIMD paths mirror.
constexpr Bf16 Fp32ToBf16Rne(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    return Bf16::FromBits((bits >> 16) | 0x0040u);
  }
  return Bf16::FromBits((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

// Compile-time checks of the rules against formats.md section 12.3.
static_assert(EncodeWithFlags<Fp8E4M3Traits>(17.0f).code == 0x58);
static_assert(EncodeWithFlags<Fp8E4M3Traits>(464.0f).code == 0x7E);
static_assert(EncodeWithFlags<Fp8E5M2Traits>(61440.0f).code == 0x7B);
static_assert(EncodeWithFlags<Fp8E5M2Traits>(61440.0f, {.overflow = Overflow::kNonSat}).code == 0x7C);
static_assert(EncodeWithFlags<Fp4E2M1Traits>(-0.25f).code == 0x8);
static_assert(DecodeBits<Fp8E4M3Traits>(0x7E) == 448.0f);
static_assert(DecodeBits<Fp4E2M1Traits>(0x7) == 6.0f);
static_assert(Fp32ToBf16Rne(std::bit_cast<float>(0x3F818000u)).bits == 0x3F82);

}  // namespace trnmx

#endif  // TRNMX_FORMATS_CODEC_H_
