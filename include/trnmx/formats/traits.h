// One traits template for every small binary floating-point format trnmx
// handles (BF16, FP16, FP8, FP6, FP4), plus the project's default policies.
//
// A format is S.E.M: 1 sign bit, `exponent_bits`, `mantissa_bits`, a bias and
// a rule for the top exponent field. The values are
//
//   E >= 1:  (-1)^S * 2^(E - bias) * (1 + M / 2^m)
//   E == 0:  (-1)^S * 2^(1 - bias) * M / 2^m        (subnormals)
//
// except where `kNonFinite` reserves codes:
//   kIeee          E = all ones is Inf (M = 0) or NaN (M != 0)   BF16, FP16, E5M2,
//                                                                E4M3 IEEE-style
//   kNanAllOnes    only S.1111.111 is NaN; E = all ones is finite  E4M3 ("fn")
//   kNone          every code is finite                          FP6, FP4
//
// Reference: shared/reference/formats.md section 2 (OCP MX v1.0 section 5,
// OCP OFP8, IEEE 754 binary16). Example:
//
//   static_assert(trnmx::Fp8E4M3Traits::kMaxNormal == 448.0);
//   static_assert(trnmx::Fp8E5M2Traits::kMaxNormal == 57344.0);
#ifndef TRNMX_FORMATS_TRAITS_H_
#define TRNMX_FORMATS_TRAITS_H_

#include <cstdint>

#include "trnmx/options.h"

namespace trnmx {

// Which codes of the top exponent field are not finite numbers.
enum class NonFinite : std::uint8_t {
  kIeee,        // Inf at M == 0, NaN at M != 0.
  kNanAllOnes,  // Single NaN per sign at S.11..1.11..1; no Inf.
  kNone,        // No Inf, no NaN.
};


namespace detail {
// 2^e as a double, exact for -1074 <= e <= 1023; constexpr without <cmath>.
constexpr double Pow2(int e) {
  double r = 1.0;
  for (; e > 0; --e) r *= 2.0;
  for (; e < 0; ++e) r *= 0.5;
  return r;
}
}  // namespace detail

// Traits of one S.E.M format. All members are compile-time constants.
template <int ExponentBits, int MantissaBits, int Bias, NonFinite NonFiniteKind,
          Overflow DefaultOverflow, NanPolicy DefaultNan>
struct FloatTraits {
  static_assert(ExponentBits >= 1 && ExponentBits <= 8);
  static_assert(MantissaBits >= 1 && MantissaBits <= 10);
  static_assert(DefaultOverflow != Overflow::kFormatDefault);
  static_assert(DefaultNan != NanPolicy::kFormatDefault);

  static constexpr int kExponentBits = ExponentBits;
  static constexpr int kMantissaBits = MantissaBits;
  static constexpr int kBias = Bias;
  static constexpr int kTotalBits = 1 + ExponentBits + MantissaBits;
  static constexpr NonFinite kNonFinite = NonFiniteKind;
  static constexpr Overflow kDefaultOverflow = DefaultOverflow;
  static constexpr NanPolicy kDefaultNan = DefaultNan;

  static constexpr bool kHasInf = NonFiniteKind == NonFinite::kIeee;
  static constexpr bool kHasNan = NonFiniteKind != NonFinite::kNone;

  static constexpr std::uint32_t kSignMask = 1u << (ExponentBits + MantissaBits);
  static constexpr std::uint32_t kMantissaMask = (1u << MantissaBits) - 1;
  static constexpr std::uint32_t kExponentAllOnes = (1u << ExponentBits) - 1;
  // Magnitude code (sign cleared) of the largest finite value.
  static constexpr std::uint32_t kMaxMagnitudeCode =
      NonFiniteKind == NonFinite::kIeee
          ? ((kExponentAllOnes - 1) << MantissaBits) | kMantissaMask
      : NonFiniteKind == NonFinite::kNanAllOnes
          ? ((kExponentAllOnes << MantissaBits) | kMantissaMask) - 1
          : (kExponentAllOnes << MantissaBits) | kMantissaMask;
  // Unbiased exponent of the largest normal ("emax_elem" of the MX spec).
  static constexpr int kEmax = static_cast<int>(kMaxMagnitudeCode >> MantissaBits) - Bias;
  // Unbiased exponent of the smallest normal binade; subnormals share its quantum.
  static constexpr int kEmin = 1 - Bias;

  static constexpr double kMaxNormal =
      detail::Pow2(kEmax) *
      (1.0 + static_cast<double>(kMaxMagnitudeCode & kMantissaMask) /
                 static_cast<double>(1u << MantissaBits));
  static constexpr double kMinNormal = detail::Pow2(kEmin);
  static constexpr double kMinSubnormal = detail::Pow2(kEmin - MantissaBits);
  // Exponent q of the quantum 2^q (the smallest subnormal): every value is an
  // integer times 2^q, which the exact MX dot products work in.
  static constexpr int kQuantumExponent = kEmin - MantissaBits;
};

// BF16: FP32's exponent with 7 mantissa bits. Overflow -> Inf, NaN keeps its
// top payload (formats.md D11).
using Bf16Traits = FloatTraits<8, 7, 127, NonFinite::kIeee, Overflow::kNonSat,
                               NanPolicy::kQuietPayload>;
// IEEE 754 binary16. IEEE defaults: overflow -> Inf, NaN keeps top payload.
using Fp16Traits = FloatTraits<5, 10, 15, NonFinite::kIeee, Overflow::kNonSat,
                               NanPolicy::kQuietPayload>;
// OCP FP8 E4M3 ("float8_e4m3fn"): no Inf, NaN only at S.1111.111.
using Fp8E4M3Traits = FloatTraits<4, 3, 7, NonFinite::kNanAllOnes,
                                  Overflow::kSatFinite, NanPolicy::kCanonical>;
// FP8 E4M3 with IEEE-style Inf and NaN ("float8_e4m3" of ml_dtypes): the FP8
// of Trainium NeuronCore-v2/v3, which saturates at 240 (trainium.md section
// 5), hence the saturating default. Inf 78/F8, NaNs 79-7F/F9-FF, canonical
// NaN 7C/FC (the quiet bit, as E5M2's 7E/FE and ml_dtypes' casts).
using Fp8E4M3IeeeTraits = FloatTraits<4, 3, 7, NonFinite::kIeee, Overflow::kSatFinite,
                                      NanPolicy::kCanonical>;
// OCP FP8 E5M2: IEEE-style Inf and NaN.
using Fp8E5M2Traits = FloatTraits<5, 2, 15, NonFinite::kIeee, Overflow::kSatFinite,
                                  NanPolicy::kCanonical>;
// OCP MX FP6 E2M3, FP6 E3M2, FP4 E2M1: all codes finite.
using Fp6E2M3Traits = FloatTraits<2, 3, 1, NonFinite::kNone, Overflow::kSatFinite,
                                  NanPolicy::kZero>;
using Fp6E3M2Traits = FloatTraits<3, 2, 3, NonFinite::kNone, Overflow::kSatFinite,
                                  NanPolicy::kZero>;
using Fp4E2M1Traits = FloatTraits<2, 1, 1, NonFinite::kNone, Overflow::kSatFinite,
                                  NanPolicy::kZero>;

// The MXINT8 element (int8.h) as the MX layer sees it: 8 bits, emax_elem = 0
// for the scale rules (formats.md section 6.4). Not an S.E.M format, so not
// a FloatTraits; its codec is in int8.h.
struct MxInt8Traits {
  static constexpr int kTotalBits = 8;
  static constexpr int kEmax = 0;
  static constexpr int kQuantumExponent = -6;  // n * 2^-6 (int8.h kMxInt8FractionBits).
};

// Pinned facts (formats.md section 2).
static_assert(Bf16Traits::kMaxNormal == 3.3895313892515355e38);
static_assert(Bf16Traits::kMinSubnormal == detail::Pow2(-133));
static_assert(Fp16Traits::kMaxNormal == 65504.0);
static_assert(Fp16Traits::kMinSubnormal == detail::Pow2(-24));
static_assert(Fp8E4M3Traits::kMaxNormal == 448.0 && Fp8E4M3Traits::kEmax == 8);
static_assert(Fp8E4M3Traits::kMaxMagnitudeCode == 0x7E);
static_assert(Fp8E4M3Traits::kMinNormal == detail::Pow2(-6));
static_assert(Fp8E4M3Traits::kMinSubnormal == detail::Pow2(-9));
static_assert(Fp8E4M3IeeeTraits::kMaxNormal == 240.0 && Fp8E4M3IeeeTraits::kEmax == 7);
static_assert(Fp8E4M3IeeeTraits::kMaxMagnitudeCode == 0x77);
static_assert(Fp8E4M3IeeeTraits::kMinNormal == detail::Pow2(-6));
static_assert(Fp8E4M3IeeeTraits::kMinSubnormal == detail::Pow2(-9));
static_assert(Fp8E5M2Traits::kMaxNormal == 57344.0 && Fp8E5M2Traits::kEmax == 15);
static_assert(Fp8E5M2Traits::kMaxMagnitudeCode == 0x7B);
static_assert(Fp8E5M2Traits::kMinSubnormal == detail::Pow2(-16));
static_assert(Fp6E2M3Traits::kMaxNormal == 7.5 && Fp6E2M3Traits::kEmax == 2);
static_assert(Fp6E2M3Traits::kMinNormal == 1.0 && Fp6E2M3Traits::kMinSubnormal == 0.125);
static_assert(Fp6E3M2Traits::kMaxNormal == 28.0 && Fp6E3M2Traits::kEmax == 4);
static_assert(Fp6E3M2Traits::kMinNormal == 0.25 && Fp6E3M2Traits::kMinSubnormal == 0.0625);
static_assert(Fp4E2M1Traits::kMaxNormal == 6.0 && Fp4E2M1Traits::kEmax == 2);
static_assert(Fp4E2M1Traits::kMinNormal == 1.0 && Fp4E2M1Traits::kMinSubnormal == 0.5);

}  // namespace trnmx

#endif  // TRNMX_FORMATS_TRAITS_H_
