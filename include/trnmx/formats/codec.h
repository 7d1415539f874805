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
//   Fp8E4M3Ieee t = Encode<Fp8E4M3Ieee>(1000.0f);        // 0x77 (240, Trainium's saturation)
//   Fp8E4M3Ieee u = Encode<Fp8E4M3Ieee>(1000.0f, nonsat);  // 0x78 (+Inf)
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
  std::uint32_t inexact;  // 0 or 1; a 32-bit field keeps the struct in registers.
};

// Rounds sig / 2^shift (sig < 2^24, an FP32 significand; shift >= 0) to an
// integer by `rounding`. Exact: no floating point involved. Written without
// branches on the data (selects only) in 32-bit integers, so that loops of
// conversions vectorise.
constexpr RoundedMagnitude RoundShiftRight(std::uint32_t sig, int shift, Rounding rounding,
                                           std::uint32_t random_bits) {
  // From 25 on every bit of sig is discarded and sig < 2^24 <= half: the
  // nearest roundings go down whatever the shift, so clamp it there.
  const int s = shift < 25 ? shift : 25;
  const std::uint32_t n = sig >> s;
  const std::uint32_t rem = sig & ((1u << s) - 1);
  const std::uint32_t half = (1u << s) >> 1;
  bool up = false;
  switch (rounding) {
    case Rounding::kTowardZero:
      break;
    case Rounding::kNearestEven:
      // Above half, or at half with n odd (rem == 0 needs no rounding).
      up = (rem + (n & 1u) > half) & (rem != 0);
      break;
    case Rounding::kTiesAway:
      up = (rem >= half) & (rem != 0);
      break;
    case Rounding::kStochastic: {
      // frac32 = floor(rem / 2^shift * 2^32), with the unclamped shift;
      // rem < 2^24, so it is 0 from shift 56 on.
      const int right = shift - 32 < 31 ? shift - 32 : 31;
      const std::uint32_t frac32 = shift <= 32 ? rem << (32 - shift) : rem >> right;
      up = frac32 != 0 && random_bits >= 0u - frac32;  // frac32 + random_bits >= 2^32
      break;
    }
  }
  return {n + (up ? 1u : 0u), rem != 0 ? 1u : 0u};
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
//
// The finite path runs for every input and the special cases (NaN, Inf,
// flushed subnormals) are selected at the end, with no branch on the data:
// a loop of conversions under fixed options vectorises (the 2^32 sweeps of
// the tests run this function on every input under every mode).
template <class Traits>
constexpr EncodeResult EncodeWithFlags(float x, const EncodeOptions& options = {},
                                       std::uint32_t random_bits = 0) {
  constexpr int m = Traits::kMantissaBits;
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign_code = (bits >> 31) * Traits::kSignMask;
  const std::uint32_t abs_bits = bits & 0x7FFFFFFFu;
  const Overflow overflow = detail::ResolveOverflow<Traits>(options.overflow);
  const std::uint32_t non_sat_code = detail::NonSatOverflowCode<Traits>(sign_code);
  const std::uint32_t max_code = sign_code | Traits::kMaxMagnitudeCode;

  // |x| = sig * 2^(e - 23) with e = floor(log2 |x|) for normals. For FP32
  // subnormals e = -126 is not the true floor, but every target's minimum
  // exponent 1 - bias is >= -126, so q below is the same either way. Zero
  // gives n = 0, the zero code.
  const std::uint32_t exp_field = abs_bits >> 23;
  const int e = static_cast<int>(exp_field > 1 ? exp_field : 1) - 127;
  const std::uint32_t sig = (abs_bits & 0x7FFFFFu) | (exp_field != 0 ? 0x800000u : 0);
  const int q = e > Traits::kEmin ? e : Traits::kEmin;
  const int shift = 23 + q - m - e;  // >= 0: q >= e and m <= 23.
  const detail::RoundedMagnitude r =
      detail::RoundShiftRight(sig, shift, options.rounding, random_bits);

  // Flags and code as 32-bit selects on 32-bit comparisons (booleans of
  // mixed widths keep GCC from vectorising). Tiny: |x| below the smallest
  // normal; underflow if also inexact (rounding up to the smallest normal,
  // n == 2^m, still counts).
  std::uint32_t flags =
      r.inexact != 0 ? kFlagInexact | (e < Traits::kEmin ? kFlagUnderflow : 0u) : 0u;
  // The value n * 2^(q - m) has the code ((q + b - 1) << m) + n, for
  // subnormals (q + b - 1 == 0), normals and a carry into the next binade.
  const std::uint32_t magnitude = (static_cast<std::uint32_t>(q + Traits::kBias - 1) << m) + r.n;
  const bool overflow_to_non_sat =
      overflow == Overflow::kNonSat && options.rounding != Rounding::kTowardZero;
  const std::uint32_t overflow_code = overflow_to_non_sat ? non_sat_code : max_code;
  std::uint32_t code =
      magnitude > Traits::kMaxMagnitudeCode ? overflow_code : sign_code | magnitude;
  flags |= magnitude > Traits::kMaxMagnitudeCode ? kFlagOverflow | kFlagInexact : 0u;

  // The special cases, by select.
  if (options.subnormals == Subnormals::kFlush) {
    const bool flushed = exp_field == 0 && abs_bits != 0;
    code = flushed ? sign_code : code;
    flags = flushed ? std::uint32_t{kFlagInexact} : flags;
  }
  // +-Inf: exact for formats with Inf; otherwise it was not representable.
  const bool saturate = overflow == Overflow::kSatFinite;
  const std::uint32_t inf_code = saturate ? max_code : non_sat_code;
  const std::uint32_t inf_flags = saturate || !Traits::kHasInf ? kFlagOverflow | kFlagInexact : 0u;
  code = abs_bits == 0x7F800000u ? inf_code : code;
  flags = abs_bits == 0x7F800000u ? inf_flags : flags;
  const EncodeResult nan = detail::EncodeNan<Traits>(bits, detail::ResolveNan<Traits>(options.nan));
  code = abs_bits > 0x7F800000u ? nan.code : code;
  flags = abs_bits > 0x7F800000u ? nan.flags : flags;
  return {code, static_cast<std::uint8_t>(flags)};
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
static_assert(EncodeWithFlags<Fp8E4M3IeeeTraits>(248.0f).code == 0x77);
static_assert(EncodeWithFlags<Fp8E4M3IeeeTraits>(248.0f, {.overflow = Overflow::kNonSat}).code ==
              0x78);
static_assert(EncodeWithFlags<Fp8E5M2Traits>(61440.0f).code == 0x7B);
static_assert(EncodeWithFlags<Fp8E5M2Traits>(61440.0f, {.overflow = Overflow::kNonSat}).code == 0x7C);
static_assert(EncodeWithFlags<Fp4E2M1Traits>(-0.25f).code == 0x8);
static_assert(DecodeBits<Fp8E4M3Traits>(0x7E) == 448.0f);
static_assert(DecodeBits<Fp8E4M3IeeeTraits>(0x77) == 240.0f);
static_assert(DecodeBits<Fp4E2M1Traits>(0x7) == 6.0f);
static_assert(Fp32ToBf16Rne(std::bit_cast<float>(0x3F818000u)).bits == 0x3F82);

}  // namespace trnmx

#endif  // TRNMX_FORMATS_CODEC_H_
