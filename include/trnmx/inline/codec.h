// FP32 <-> FP8 E4M3 / FP8 E5M2 / FP4 E2M1 batch codecs (optional xsimd inline
// layer, see common.h).
//
// Bits: identical to trnmx::EncodeWithFlags<Traits>(x, {.overflow = P}).code
// and trnmx::DecodeBits<Traits>(code) (trnmx/formats/codec.h) for every FP32
// input and every code, with Traits one of Fp8E4M3Traits, Fp8E5M2Traits,
// Fp4E2M1Traits. The contract (shared/reference/formats.md section 3, D1-D6):
//   - rounding: to nearest, ties to even, exact over all 24 significand bits;
//     FP32 subnormals converted exactly; element subnormals produced;
//   - overflow is decided after rounding, by the template argument P:
//       kSatFinite (default for all three)  finite overflow and +-Inf -> +-MAX
//       kNonSat (= kOfp8NonSat)             -> E4M3 NaN 7F/FF, E5M2 +-Inf
//                                              7C/FC, E2M1 +-MAX
//       kMlDtypesSat                        finite overflow -> +-MAX, +-Inf as
//                                              kNonSat
//   - NaN: E4M3 7F/FF, E5M2 7E/FE (sign kept, payload dropped, D3); E2M1 +0
//     (D4; the scalar API's kFlagInvalid has no batch counterpart);
//   - signed zero kept: -0 and negatives rounding to 0 give the sign code;
//   - decode is exact; NaN codes give 7FC00000 / FFC00000.
// Only RNE and the formats' default NaN rule are offered here; the other
// rounding and NaN policies stay in the scalar codec. Encoding uses integer
// ops only (independent of MXCSR); decoding converts a small integer to float,
// which is exact under any rounding mode, FTZ or DAZ.
//
//   Encode<Traits[, P]>(Batch<float, Arch>) -> Codes<Arch>   one code per lane
//   Decode<Traits>(Codes<Arch>)             -> Batch<float, Arch>
//   Encode<Traits[, P]>(const float* in, std::uint8_t* out, std::size_t n)
//   Decode<Traits>(const std::uint8_t* in, float* out, std::size_t n)
// Arrays hold one code per byte (E2M1 in bits 3..0; packed FP4 is in fp4.h),
// any alignment, any n (full batches, then a scalar tail through the scalar
// reference); `in` and `out` must not overlap. Decode reads only the low
// Traits::kTotalBits of each byte, like DecodeBits.
//
//   #include <trnmx/inline/codec.h>
//   namespace tis = trnmx::inline_simd;
//   std::uint8_t q[64];
//   tis::Encode<trnmx::Fp8E4M3Traits>(x, q, 64);                    // saturating
//   tis::Encode<trnmx::Fp8E5M2Traits, trnmx::Overflow::kNonSat>(x, q, 64);
//   tis::Decode<trnmx::Fp8E4M3Traits>(q, y, 64);
//   auto c = tis::Encode<trnmx::Fp4E2M1Traits>(xsimd::batch<float>(0.75f));  // 2 (= 1.0)
#ifndef TRNMX_INLINE_CODEC_H_
#define TRNMX_INLINE_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "trnmx/formats/codec.h"
#include "trnmx/formats/policy.h"
#include "trnmx/formats/traits.h"
#include "trnmx/inline/common.h"

namespace trnmx::inline_simd {
namespace detail {

template <class Traits>
inline constexpr bool kIsSupported = std::is_same_v<Traits, Fp8E4M3Traits> ||
                                     std::is_same_v<Traits, Fp8E5M2Traits> ||
                                     std::is_same_v<Traits, Fp4E2M1Traits>;

// One step of ShiftRightJam: t >> S where bit S of d is set, the shifted-out
// bits ORed into bit 0.
template <int S, class Arch>
inline Codes<Arch> JamStep(const Codes<Arch>& t, const Codes<Arch>& d) noexcept {
  using I = Codes<Arch>;
  const I sticky = xsimd::select((t & I((1 << S) - 1)) != I(0), I(1), I(0));
  return xsimd::select((d & I(S)) != I(0), (t >> S) | sticky, t);
}

// t >> d for 0 <= d <= 7, with every bit shifted out ORed into bit 0
// ("shift right and jam"), so that a later rounding at a higher bit still sees
// an exact sticky bit. AVX2 shifts each lane by its own d (a third fewer
// instructions per encode than the steps); xsimd 8.1 has no native per-lane
// variable shift on SSE2 or AVX-512, where d is applied as constant shifts by
// its bits 1, 2, 4. Lanes with d outside [0, 7] are discarded by the caller.
template <class Arch>
inline Codes<Arch> ShiftRightJam(const Codes<Arch>& t, const Codes<Arch>& d) noexcept {
#if XSIMD_WITH_AVX2
  if constexpr (std::is_base_of_v<xsimd::avx2, Arch>) {  // AVX2's per-lane shifts (VPSRAVD, VPSLLVD)
    using I = Codes<Arch>;
    const I lost = t & ((I(1) << d) - I(1));
    return (t >> d) | xsimd::select(lost != I(0), I(1), I(0));
  }
#endif
  return JamStep<4>(JamStep<2>(JamStep<1>(t, d), d), d);
}

}  // namespace detail

template <class Traits, Overflow P = Overflow::kFormatDefault, class Arch>
inline Codes<Arch> Encode(const Batch<float, Arch>& x) noexcept {
  static_assert(detail::kIsSupported<Traits>, "E4M3, E5M2 or E2M1");
  constexpr Overflow kPolicy = P == Overflow::kFormatDefault ? Traits::kDefaultOverflow : P;
  constexpr int m = Traits::kMantissaBits;
  constexpr int kRound = 23 - m;                         // FP32 bits dropped from a normal
  constexpr int kRebias = 127 - Traits::kBias;           // FP32 bias - format bias
  constexpr int kMinNormalField = Traits::kEmin + 127;   // FP32 exponent field of min normal
  constexpr int kMax = static_cast<int>(Traits::kMaxMagnitudeCode);
  static_assert(kRebias == kMinNormalField - 1);
  using I = Codes<Arch>;

  const I bits = BitCast<std::int32_t>(x);
  const I a = bits & I(0x7FFFFFFF);  // |x| bits: unsigned order = |x| order; >> is logical
  const I sign = (bits >> (31 - (Traits::kTotalBits - 1))) & I(static_cast<int>(Traits::kSignMask));
  const I exp_field = a >> 23;

  // Below the format's min normal the quantum stops shrinking. Denormalise
  // such inputs to the min-normal binade first: shift the 24-bit significand
  // right by d = kMinNormalField - max(E, 1) (jamming lost bits into bit 0;
  // d > m + 2 is below half the min subnormal, which rounds to 0 like
  // d = m + 2), and give it that binade's exponent field. Then one rounding
  // at the fixed position kRound serves normals, subnormals and zero:
  //
  //   FP32 bits   S | EEEEEEEE | mmm.......m      (normal: used as they are)
  //   small x     0 | minE-1   | 0..01mmm..mj     (j = jammed sticky bit)
  //                              ^^^ kept  ^^^^ rounded away at kRound
  const I sig = xsimd::select(exp_field == I(0), a, (a & I(0x7FFFFF)) | I(0x800000));
  const I d = xsimd::min(I(kMinNormalField) - xsimd::max(exp_field, I(1)), I(m + 2));
  const I small = detail::ShiftRightJam(sig, d) | I(kRebias << 23);  // field minE - 1
  // NaN lanes are rounded as Inf (so nothing wraps) and replaced below.
  const I t = xsimd::select(exp_field < I(kMinNormalField), small, xsimd::min(a, I(0x7F800000)));
  // RNE at kRound (as for BF16: add half - 1 plus the kept LSB), then rebias
  // the exponent. A carry into the next binade is the right code; values past
  // MAX (and Inf, whose field is all ones) land above kMax.
  const I mag = ((t + I((1 << (kRound - 1)) - 1) + ((t >> kRound) & I(1))) >> kRound) -
                I(kRebias << m);

  constexpr int kNonSat = static_cast<int>(trnmx::detail::NonSatOverflowCode<Traits>(0));
  const I max_code = I(kMax);
  const I nonsat_code = I(kNonSat);
  I limited;
  if constexpr (kPolicy == Overflow::kSatFinite) {
    limited = max_code;
  } else if constexpr (kPolicy == Overflow::kNonSat) {
    limited = nonsat_code;
  } else {
    static_assert(kPolicy == Overflow::kMlDtypesSat);
    limited = xsimd::select(a == I(0x7F800000), nonsat_code, max_code);
  }
  const I finite = sign | xsimd::select(mag > max_code, limited, mag);

  // NaN (D3/D4): E4M3 S.1111.111, E5M2 S.11111.10 (sign kept), E2M1 +0.
  constexpr int kNanCode =
      static_cast<int>(trnmx::detail::EncodeNan<Traits>(0x7FC00000u, NanPolicy::kCanonical).code);
  const I nan = Traits::kHasNan ? sign | I(kNanCode) : I(0);
  return xsimd::select(a > I(0x7F800000), nan, finite);
}

template <class Traits, class Arch>
inline Batch<float, Arch> Decode(const Codes<Arch>& codes) noexcept {
  static_assert(detail::kIsSupported<Traits>, "E4M3, E5M2 or E2M1");
  constexpr int m = Traits::kMantissaBits;
  constexpr int kSign = static_cast<int>(Traits::kSignMask);
  using I = Codes<Arch>;

  const I sign32 = (codes & I(kSign)) << (31 - (Traits::kTotalBits - 1));
  const I mag = codes & I(kSign - 1);
  // Normal: move the fields into place and rebias the exponent.
  const I normal = (mag << (23 - m)) + I((127 - Traits::kBias) << 23);
  // Subnormal mag * 2^(emin - m): the int -> float conversion of mag (< 2^m,
  // exact) normalises it; then subtract from its exponent field. mag == 0 is 0.
  const I sub_bits = BitCast<std::int32_t>(xsimd::to_float(mag)) + I((Traits::kEmin - m) * (1 << 23));
  const I subnormal = xsimd::select(mag == I(0), I(0), sub_bits);
  I value = xsimd::select(mag < I(1 << m), subnormal, normal);
  if constexpr (Traits::kNonFinite == NonFinite::kNanAllOnes) {  // E4M3: S.1111.111
    value = xsimd::select(mag == I(static_cast<int>(Traits::kMaxMagnitudeCode) + 1), I(0x7FC00000), value);
  } else if constexpr (Traits::kNonFinite == NonFinite::kIeee) {  // E5M2: Inf, NaN
    constexpr int kInf = static_cast<int>(Traits::kExponentAllOnes << m);
    value = xsimd::select(mag == I(kInf), I(0x7F800000), value);
    value = xsimd::select(mag > I(kInf), I(0x7FC00000), value);
  }
  return BitCast<float>(sign32 | value);
}

template <class Traits, Overflow P = Overflow::kFormatDefault, class Arch = xsimd::default_arch>
inline void Encode(const float* in, std::uint8_t* out, std::size_t n) noexcept {
  constexpr std::size_t kLanes = Batch<float, Arch>::size;
  const std::size_t full = n - n % kLanes;  // whole batches, then a scalar tail
  for (std::size_t i = 0; i < full; i += kLanes) {
    StoreCodes<Arch>(Encode<Traits, P>(Batch<float, Arch>::load_unaligned(in + i)), out + i);
  }
  for (std::size_t i = full; i < n; ++i) {
    out[i] = static_cast<std::uint8_t>(EncodeWithFlags<Traits>(in[i], {.overflow = P}).code);
  }
}

template <class Traits, class Arch = xsimd::default_arch>
inline void Decode(const std::uint8_t* in, float* out, std::size_t n) noexcept {
  constexpr std::size_t kLanes = Batch<float, Arch>::size;
  constexpr int kMask = (1 << Traits::kTotalBits) - 1;
  const std::size_t full = n - n % kLanes;  // whole batches, then a scalar tail
  for (std::size_t i = 0; i < full; i += kLanes) {
    Decode<Traits>(LoadCodes<Arch>(in + i) & Codes<Arch>(kMask)).store_unaligned(out + i);
  }
  for (std::size_t i = full; i < n; ++i) out[i] = DecodeBits<Traits>(in[i]);
}

}  // namespace trnmx::inline_simd

#endif  // TRNMX_INLINE_CODEC_H_
