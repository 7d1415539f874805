// Internal: the per-call constants of the vector FP32 -> element encoders
// (element_codec-inl.h), derived once per call from a format's traits and an
// EncodeOptions. Plain C++ (no Highway): the policy logic of codec.h is
// resolved here into a handful of codes, so that the per-target kernels only
// select between precomputed values and stay branch-free per element.
//
// Every constant is the code that codec.h's EncodeWithFlags produces for the
// class of inputs it names (shared/reference/formats.md sections 3.2, D2-D5):
//
//   finite overflow   overflow_finite_mag (with x's sign)
//   +-Inf             overflow_inf_mag    (with x's sign)
//   NaN               ((sign_code & nan_sign_keep) ^ nan_sign_xor) | nan_mag
//                     | ((|x| >> (23 - m)) & nan_payload_mask)
//   |x| < 2^-126      flushed to a signed zero first when flush_below != 0
//
//   ElementEncodeConsts k = MakeElementEncodeConsts<Fp8E4M3Traits>({});
//   // k.overflow_finite_mag == 0x7E (448), k.nan_mag == 0x7F
#ifndef TRNMX_SRC_FORMATS_ELEMENT_CONSTS_H_
#define TRNMX_SRC_FORMATS_ELEMENT_CONSTS_H_

#include <cstdint>

#include "trnmx/formats/codec.h"
#include "trnmx/formats/format_list.h"
#include "trnmx/formats/policy.h"
#include "trnmx/formats/scale_rule.h"
#include "trnmx/formats/traits.h"

namespace trnmx::internal {

struct ElementEncodeConsts {
  std::uint32_t flush_below = 0;          // 0x00800000 under Subnormals::kFlush, else 0.
  std::uint32_t overflow_finite_mag = 0;  // Magnitude code of a finite overflow.
  std::uint32_t overflow_inf_mag = 0;     // Magnitude code of +-Inf.
  std::uint32_t nan_sign_keep = 0;        // NaN code: see the file comment.
  std::uint32_t nan_sign_xor = 0;
  std::uint32_t nan_mag = 0;
  std::uint32_t nan_payload_mask = 0;
  std::uint32_t int8_negative_limit = 127;  // MXINT8: 127, or 128 under kAllowMinus128.
};

// Whether the vector encoders implement `options` (stochastic rounding is
// left to the scalar codec).
constexpr bool SimdSupportsRounding(Rounding rounding) {
  return rounding == Rounding::kNearestEven || rounding == Rounding::kTiesAway ||
         rounding == Rounding::kTowardZero;
}

template <class Traits>
constexpr ElementEncodeConsts MakeElementEncodeConsts(const EncodeOptions& options) {
  ElementEncodeConsts k;
  k.flush_below = options.subnormals == Subnormals::kFlush ? 0x00800000u : 0u;
  if constexpr (detail::kIsMxInt8<Traits>) {
    k.int8_negative_limit = options.int8_range == Int8Range::kAllowMinus128 ? 128u : 127u;
    return k;
  } else {
    const Overflow overflow = detail::ResolveOverflow<Traits>(options.overflow);
    const std::uint32_t nonsat = detail::NonSatOverflowCode<Traits>(0);
    k.overflow_finite_mag =
        overflow == Overflow::kNonSat && options.rounding != Rounding::kTowardZero
            ? nonsat
            : Traits::kMaxMagnitudeCode;
    k.overflow_inf_mag = overflow == Overflow::kSatFinite ? Traits::kMaxMagnitudeCode : nonsat;
    const NanPolicy nan = detail::ResolveNan<Traits>(options.nan);
    if constexpr (!Traits::kHasNan) {
      const bool flip = nan == NanPolicy::kMlDtypesNaN;
      k.nan_sign_keep = flip ? Traits::kSignMask : 0u;
      k.nan_sign_xor = flip ? Traits::kSignMask : 0u;
    } else if constexpr (Traits::kNonFinite == NonFinite::kNanAllOnes) {
      k.nan_sign_keep = Traits::kSignMask;
      k.nan_mag = Traits::kMaxMagnitudeCode + 1;
    } else {
      constexpr int m = Traits::kMantissaBits;
      k.nan_sign_keep = Traits::kSignMask;
      k.nan_mag = (Traits::kExponentAllOnes << m) | (1u << (m - 1));
      k.nan_payload_mask = nan == NanPolicy::kQuietPayload ? Traits::kMantissaMask : 0u;
    }
    return k;
  }
}

static_assert(MakeElementEncodeConsts<Fp8E4M3Traits>({}).overflow_finite_mag == 0x7E);
static_assert(MakeElementEncodeConsts<Fp8E4M3Traits>({.overflow = Overflow::kNonSat})
                  .overflow_finite_mag == 0x7F);
static_assert(MakeElementEncodeConsts<Bf16Traits>({}).overflow_finite_mag == 0x7F80);
static_assert(MakeElementEncodeConsts<Bf16Traits>({}).nan_mag == 0x7FC0);

// The vector encoders clamp a finite overflow with one Min(code,
// overflow_finite_mag) (element_codec-inl.h), which is exact only while that
// code is MAX or MAX + 1: no code may lie strictly between. Checked here for
// every float format, overflow policy and rounding.
template <class Traits>
constexpr bool OverflowCodeIsMaxOrNext() {
  for (Overflow o : {Overflow::kFormatDefault, Overflow::kSatFinite, Overflow::kNonSat,
                     Overflow::kMlDtypesSat}) {
    for (Rounding r : {Rounding::kNearestEven, Rounding::kTiesAway, Rounding::kTowardZero}) {
      EncodeOptions options;
      options.overflow = o;
      options.rounding = r;
      const std::uint32_t code = MakeElementEncodeConsts<Traits>(options).overflow_finite_mag;
      if (code != Traits::kMaxMagnitudeCode && code != Traits::kMaxMagnitudeCode + 1) return false;
    }
  }
  return true;
}
#define TRNMX_CHECK_OVERFLOW_CODE(Name, ...) \
  static_assert(OverflowCodeIsMaxOrNext<Name##Traits>(), #Name);
TRNMX_FOREACH_FLOAT_FORMAT(TRNMX_CHECK_OVERFLOW_CODE)
#undef TRNMX_CHECK_OVERFLOW_CODE

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_FORMATS_ELEMENT_CONSTS_H_
