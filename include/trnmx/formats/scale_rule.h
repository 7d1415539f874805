// MX scale rules: the E8M0 block-scale code chosen from a block's amax.
//
// Contract (shared/reference/formats.md sections 6.2-6.4 and 7, decision D7):
// `ScaleCodeFromAmax<Traits>(amax_bits, rule)` takes the FP32 bits of amax =
// max |V_i| of a block (bit 31 is ignored) and returns the E8M0 scale code c
// (scale X = 2^(c - 127)). With A = amax bits, E = A >> 23, M = A & 0x7FFFFF,
// m = element mantissa bits, emax = Traits::kEmax, MAX = Traits::kMaxNormal:
//
//   A = 0                        -> 00 under every rule
//   A >= 7F800000 (Inf or NaN)   -> FF (the default special block, section 6.3;
//                                   kSatFiniteBlock is decided in mx_block.h)
//   kOcpFloor (default)  c = E - emax                      OCP MX v1.0 section 6.3
//   kCeil                c = E + (M != 0) - emax           torchao CEIL
//   kEven                c = E' - emax, E' = ((A + 2^(22-m)) & 7F800000) >> 23
//                        (amax rounded half-up to m mantissa bits)  torchao EVEN
//   kRceil               d = fl32(amax * r), r = fl32(1/MAX); c = E_d + (M_d != 0)
//                        for E_d >= 1, else (M_d > 400000); d = 0 -> 00. This is
//                        ToE8M0(d, kUp, kSaturate).  cuBLAS/TE/torchao RCEIL
//   kNki (Trainium3)     c = E - emax', emax' = 7 (E4M3), 14 (E5M2), 2 (E2M1)
//                                                           nki.isa.quantize_mx
//   kGgml (E2M1 only)    c = floor((float)log2((double)amax)) - 2 + 127: glibc's
//                        floorf(log2f(amax)) on every normal FP32 (formats.md
//                        section 7); GGML quantize_row_mxfp4_ref
//   kTosa (FP8/FP6/FP4)  the smallest s such that no element overflows after RNE,
//                        c = s + 127, in exact integer arithmetic:
//                          E4M3: s = ceil(log2(amax / 464))   (464 ties down to 448)
//                          others: s = floor(log2(amax / T)) + 1 with the first
//                          overflowing value T = 61440 (E5M2), 7.75 (E2M3),
//                          30 (E3M2), 7 (E2M1)          TOSA calc_block_scale
//
// and every c is clamped to [00, FE]. MXINT8 (`MxInt8Traits`, emax 0) has only
// kOcpFloor (section 6.4). Rules not defined for a format (kNki on FP6 and
// MXINT8, kGgml on anything but E2M1, kCeil/kEven/kRceil on MXINT8) are
// rejected: `IsScaleRuleDefined` / `CheckScaleRule` say so, and
// `ScaleCodeFromAmax` returns FF (NaN scale) for them rather than a guess.
//
// Everything is constexpr except kGgml, which is defined through libm's log2
// and so is evaluated at run time only (not usable in a constant expression).
//
//   // amax 0x417FFFFF (15.999999) into E2M1:
//   ScaleCodeFromAmax<Fp4E2M1Traits>(0x417FFFFF, ScaleRule::kOcpFloor).bits == 0x80
//   ScaleCodeFromAmax<Fp4E2M1Traits>(0x417FFFFF, ScaleRule::kCeil).bits     == 0x81
//   ScaleCodeFromAmax<Fp4E2M1Traits>(0x417FFFFF, ScaleRule::kGgml).bits     == 0x81
//   ScaleCodeFromAmax<Fp8E4M3Traits>(0x43F00000, ScaleRule::kTosa).bits     == 0x80  // 480
//
// Command-line names: ParseScaleRuleName("ocp-floor" | "ceil" | "even" | "rceil" |
// "nki" | "ggml" | "tosa"); ScaleRuleCliName(rule) is the inverse.
#ifndef TRNMX_FORMATS_SCALE_RULE_H_
#define TRNMX_FORMATS_SCALE_RULE_H_

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "trnmx/formats/e8m0.h"
#include "trnmx/formats/format_list.h"
#include "trnmx/formats/traits.h"
#include "trnmx/formats/types.h"
#include "trnmx/options.h"
#include "trnmx/status.h"

namespace trnmx {

constexpr std::string_view ScaleRuleName(ScaleRule rule) {
  switch (rule) {
    case ScaleRule::kOcpFloor: return "kOcpFloor";
    case ScaleRule::kCeil: return "kCeil";
    case ScaleRule::kEven: return "kEven";
    case ScaleRule::kRceil: return "kRceil";
    case ScaleRule::kNki: return "kNki";
    case ScaleRule::kGgml: return "kGgml";
    case ScaleRule::kTosa: return "kTosa";
  }
  return "unknown";
}

// The command-line token of a rule ("ocp-floor", "ceil", "even", "rceil",
// "nki", "ggml", "tosa"); "unknown" for a value outside the enum.
constexpr std::string_view ScaleRuleCliName(ScaleRule rule) {
  switch (rule) {
    case ScaleRule::kOcpFloor: return "ocp-floor";
    case ScaleRule::kCeil: return "ceil";
    case ScaleRule::kEven: return "even";
    case ScaleRule::kRceil: return "rceil";
    case ScaleRule::kNki: return "nki";
    case ScaleRule::kGgml: return "ggml";
    case ScaleRule::kTosa: return "tosa";
  }
  return "unknown";
}

inline constexpr ScaleRule kAllScaleRules[] = {ScaleRule::kOcpFloor, ScaleRule::kCeil,
                                              ScaleRule::kEven,     ScaleRule::kRceil,
                                              ScaleRule::kNki,      ScaleRule::kGgml,
                                              ScaleRule::kTosa};

// Parses a command-line token (case-sensitive, the ScaleRuleCliName
// spellings). An unknown token gets kInvalidArgument listing the valid names:
//   ParseScaleRuleName("rceil")  -> ScaleRule::kRceil
//   ParseScaleRuleName("floor")  -> INVALID_ARGUMENT: unknown scale rule 'floor'
//                                   (valid: ocp-floor, ceil, even, rceil, nki, ggml, tosa)
inline StatusOr<ScaleRule> ParseScaleRuleName(std::string_view name) {
  std::string valid;
  for (const ScaleRule rule : kAllScaleRules) {
    if (ScaleRuleCliName(rule) == name) return rule;
    valid += valid.empty() ? "" : ", ";
    valid += ScaleRuleCliName(rule);
  }
  return InvalidArgumentError("unknown scale rule '" + std::string(name) + "' (valid: " + valid +
                              ")");
}

namespace detail {

template <class Traits>
inline constexpr bool kIsMxInt8 = std::is_same_v<Traits, MxInt8Traits>;
// The element traits of some MX format (format_list.h).
template <class Traits>
inline constexpr bool kIsMxElement = false
#define TRNMX_X(Name, value, cli_name, Element, ...) || std::is_same_v<Traits, Element##Traits>
    TRNMX_FOREACH_MX_FORMAT(TRNMX_X)
#undef TRNMX_X
    ;
// The MX element classes of the spec by width: FP8, FP6, FP4.
template <class Traits>
inline constexpr bool kIsFp8 = kIsMxElement<Traits> && !kIsMxInt8<Traits> && Traits::kTotalBits == 8;
template <class Traits>
inline constexpr bool kIsFp6 = kIsMxElement<Traits> && Traits::kTotalBits == 6;
template <class Traits>
inline constexpr bool kIsFp4 = kIsMxElement<Traits> && Traits::kTotalBits == 4;

// r = fl32(1 / MAX) as FP32 bits (formats.md section 7, kRceil details).
template <class Traits>
constexpr std::uint32_t RceilReciprocalBits() {
  constexpr std::uint32_t bits = std::bit_cast<std::uint32_t>(
      1.0f / static_cast<float>(Traits::kMaxNormal));
  return bits;
}
static_assert(RceilReciprocalBits<Fp8E4M3Traits>() == 0x3B124925u);
static_assert(RceilReciprocalBits<Fp8E5M2Traits>() == 0x37924925u);
static_assert(RceilReciprocalBits<Fp6E2M3Traits>() == 0x3E088889u);
static_assert(RceilReciprocalBits<Fp6E3M2Traits>() == 0x3D124925u);
static_assert(RceilReciprocalBits<Fp4E2M1Traits>() == 0x3E2AAAABu);

// emax' of kNki: one binade more headroom for FP8, = emax for E2M1.
template <class Traits>
constexpr int NkiEmax() {
  return kIsFp8<Traits> ? Traits::kEmax - 1 : Traits::kEmax;
}
static_assert(NkiEmax<Fp8E4M3Traits>() == 7 && NkiEmax<Fp8E5M2Traits>() == 14 &&
              NkiEmax<Fp4E2M1Traits>() == 2);

constexpr std::uint8_t ClampScaleCode(int c) {
  return static_cast<std::uint8_t>(c < 0 ? 0 : c > 0xFE ? 0xFE : c);
}

// floor(log2f(x)) of glibc for the finite x > 0 of bits A in (0, 7F800000),
// as floor((float)log2((double)x)): equal on every such FP32 (checked over all
// of them against glibc 2.36's log2f, formats.md section 7). In [-149, 128]:
// 128 where log2 rounds up to 128 just below 2^128.
// libm is only asked for subnormals and mantissa fields >= 2^23 - 2^15: for a
// normal x = 2^k (1 + f) with f < 1 - 2^-8, k <= log2 x < k + 1 - 2.8e-3, and
// rounding to FP32 (ulp <= 2^-16 for |k| <= 128) cannot reach k + 1, so the
// floor is the exponent k (the exhaustive scale-rule test checks every input).
inline int GgmlFloorLog2(std::uint32_t a) {
  const std::uint32_t exponent_field = a >> 23;
  if (exponent_field != 0 && (a & 0x7FFFFFu) < (1u << 23) - (1u << 15)) {
    return static_cast<int>(exponent_field) - 127;
  }
  const float l = static_cast<float>(std::log2(static_cast<double>(std::bit_cast<float>(a))));
  return static_cast<int>(std::floor(l));
}

// kGgml: floor((float)log2((double)x)) - 2 + 127, clamped; A in (0, 7F800000).
// (The GGML-compatible codec of mx.h wraps the same value modulo 256 instead.)
inline std::uint8_t GgmlScaleCode(std::uint32_t a) {
  return ClampScaleCode(GgmlFloorLog2(a) - 2 + 127);
}

// kTosa: the midpoint T between MAX and the next binade step, MAX + ulp/2,
// as t * 2^k with t odd (formats.md sections 3.1 and 7). Under RNE it is
// the first overflowing magnitude when MAX's mantissa is odd (the tie rounds
// up), and the largest one that does not overflow when it is even (E4M3:
// 464 rounds to 448).
struct TosaThreshold {
  std::uint32_t t;
  int k;
  bool inclusive;  // amax <= T * 2^s is fine (even MAX mantissa); otherwise amax < T * 2^s.
};
template <class Traits>
constexpr TosaThreshold TosaThresholdOf() {
  constexpr int m = Traits::kMantissaBits;
  constexpr std::uint32_t max_mantissa = Traits::kMaxMagnitudeCode & Traits::kMantissaMask;
  return {2 * ((1u << m) | max_mantissa) + 1, Traits::kEmax - m - 1, max_mantissa % 2 == 0};
}
static_assert(TosaThresholdOf<Fp8E4M3Traits>().t == 29 && TosaThresholdOf<Fp8E4M3Traits>().k == 4 &&
              TosaThresholdOf<Fp8E4M3Traits>().inclusive);  // 464
static_assert(TosaThresholdOf<Fp8E5M2Traits>().t == 15 && TosaThresholdOf<Fp8E5M2Traits>().k == 12 &&
              !TosaThresholdOf<Fp8E5M2Traits>().inclusive);  // 61440
static_assert(TosaThresholdOf<Fp6E2M3Traits>().t == 31 && TosaThresholdOf<Fp6E2M3Traits>().k == -2 &&
              !TosaThresholdOf<Fp6E2M3Traits>().inclusive);  // 7.75
static_assert(TosaThresholdOf<Fp6E3M2Traits>().t == 15 && TosaThresholdOf<Fp6E3M2Traits>().k == 1 &&
              !TosaThresholdOf<Fp6E3M2Traits>().inclusive);  // 30
static_assert(TosaThresholdOf<Fp4E2M1Traits>().t == 7 && TosaThresholdOf<Fp4E2M1Traits>().k == 0 &&
              !TosaThresholdOf<Fp4E2M1Traits>().inclusive);  // 7

// kTosa code for finite a in (0, 7F800000). amax = sig * 2^x exactly; the
// smallest s with amax <= (<) t * 2^(k + s) is s = j - k + x for the smallest
// integer j with sig <= (<) t * 2^j, found by comparing integers. With b and c
// the bit widths of sig and t, t * 2^(b - c - 1) < 2^(b - 1) <= sig < 2^b <=
// t * 2^(b - c + 1), so j is b - c or b - c + 1: one comparison, no loop.
template <class Traits>
constexpr std::uint8_t TosaScaleCode(std::uint32_t a) {
  constexpr TosaThreshold th = TosaThresholdOf<Traits>();
  const std::uint32_t exp_field = a >> 23;
  const std::uint64_t sig = exp_field != 0 ? ((a & 0x7FFFFFu) | 0x800000u) : a;
  const int x = exp_field != 0 ? static_cast<int>(exp_field) - 150 : -149;
  const int j = std::bit_width(sig) - std::bit_width(th.t);
  const std::uint64_t lhs = j >= 0 ? sig : sig << -j;
  const std::uint64_t rhs = j >= 0 ? std::uint64_t{th.t} << j : std::uint64_t{th.t};
  const bool fits = th.inclusive ? lhs <= rhs : lhs < rhs;
  return ClampScaleCode(j + (fits ? 0 : 1) - th.k + x + 127);
}

}  // namespace detail

// Whether `rule` is defined for the element format of `Traits`.
template <class Traits>
constexpr bool IsScaleRuleDefined(ScaleRule rule) {
  if constexpr (!detail::kIsMxElement<Traits>) {
    return false;
  } else {
    switch (rule) {
      case ScaleRule::kOcpFloor: return true;
      case ScaleRule::kCeil:
      case ScaleRule::kEven:
      case ScaleRule::kRceil: return !detail::kIsMxInt8<Traits>;
      case ScaleRule::kNki: return detail::kIsFp8<Traits> || detail::kIsFp4<Traits>;
      case ScaleRule::kGgml: return detail::kIsFp4<Traits>;
      case ScaleRule::kTosa: return !detail::kIsMxInt8<Traits>;
    }
    return false;
  }
}

// OK, or kInvalidArgument naming the rule when it is not defined for Traits.
template <class Traits>
Status CheckScaleRule(ScaleRule rule) {
  if (IsScaleRuleDefined<Traits>(rule)) return OkStatus();
  return InvalidArgumentError(std::string("scale rule ") + std::string(ScaleRuleName(rule)) +
                              " is not defined for this element format (formats.md section 7)");
}

// The scale code for amax bits `amax_bits` (see the file comment). Returns FF
// when `rule` is not defined for Traits (check with CheckScaleRule first).
template <class Traits>
constexpr ScaleE8M0 ScaleCodeFromAmax(std::uint32_t amax_bits, ScaleRule rule = ScaleRule::kOcpFloor) {
  if (!IsScaleRuleDefined<Traits>(rule)) return ScaleE8M0::FromBits(kE8M0Nan);
  const std::uint32_t abs_bits = amax_bits & 0x7FFFFFFFu;
  // Zero, Inf and NaN get their codes by the selects at the end; the rule's
  // arithmetic sees 1.0 in their place, so that every rule runs without
  // branches on the data and loops over amax values vectorise (and kGgml's
  // log2 never sees 0 or NaN).
  const bool special = abs_bits == 0 || abs_bits >= 0x7F800000u;
  const std::uint32_t a = special ? 0x3F800000u : abs_bits;
  const int e = static_cast<int>(a >> 23);
  const std::uint32_t mant = a & 0x7FFFFFu;
  std::uint32_t code = 0;
  switch (rule) {
    case ScaleRule::kOcpFloor: code = detail::ClampScaleCode(e - Traits::kEmax); break;
    case ScaleRule::kCeil:
      code = detail::ClampScaleCode(e + (mant != 0 ? 1 : 0) - Traits::kEmax);
      break;
    case ScaleRule::kEven:
      if constexpr (!detail::kIsMxInt8<Traits>) {
        const std::uint32_t rounded = a + (1u << (22 - Traits::kMantissaBits));
        code = detail::ClampScaleCode(static_cast<int>((rounded & 0x7F800000u) >> 23) -
                                      Traits::kEmax);
      }
      break;
    case ScaleRule::kRceil:
      if constexpr (!detail::kIsMxInt8<Traits>) {
        // From amax itself, not `a`: a multiply on a path that depends on
        // the special test is one GCC will not make branch-free (it may trap).
        const float d = std::bit_cast<float>(abs_bits) *
                        std::bit_cast<float>(detail::RceilReciprocalBits<Traits>());
        code = ToE8M0(d, E8M0Rounding::kUp, E8M0Saturation::kSaturate).code;
      }
      break;
    case ScaleRule::kNki:
      if constexpr (!detail::kIsMxInt8<Traits>) {
        code = detail::ClampScaleCode(e - detail::NkiEmax<Traits>());
      }
      break;
    case ScaleRule::kGgml: code = detail::GgmlScaleCode(a); break;
    case ScaleRule::kTosa:
      if constexpr (!detail::kIsMxInt8<Traits>) code = detail::TosaScaleCode<Traits>(a);
      break;
  }
  code = abs_bits == 0 ? 0x00u : code;
  code = abs_bits >= 0x7F800000u ? std::uint32_t{kE8M0Nan} : code;
  return ScaleE8M0::FromBits(static_cast<std::uint8_t>(code));
}

// formats.md section 12.4 (a few rows; the rest are in tests/formats/scale_rule_test.cc).
static_assert(ScaleCodeFromAmax<Fp8E4M3Traits>(0x43E80000u, ScaleRule::kRceil).bits == 0x80);
static_assert(ScaleCodeFromAmax<Fp8E4M3Traits>(0x43E80000u, ScaleRule::kOcpFloor).bits == 0x7F);
static_assert(ScaleCodeFromAmax<Fp4E2M1Traits>(0x417FFFFFu, ScaleRule::kEven).bits == 0x81);
static_assert(ScaleCodeFromAmax<Fp8E5M2Traits>(0x3F800000u, ScaleRule::kNki).bits == 0x71);
static_assert(ScaleCodeFromAmax<MxInt8Traits>(0x3FFFDF3Bu).bits == 0x7F);  // 1.999
static_assert(ScaleCodeFromAmax<Fp6E2M3Traits>(0x3F800000u, ScaleRule::kNki).bits == kE8M0Nan);
static_assert(ScaleCodeFromAmax<Fp8E4M3Traits>(0x43E80000u, ScaleRule::kTosa).bits == 0x7F);  // 464
static_assert(ScaleCodeFromAmax<Fp8E4M3Traits>(0x43F00000u, ScaleRule::kTosa).bits == 0x80);  // 480
static_assert(ScaleCodeFromAmax<Fp8E5M2Traits>(0x3FF00000u, ScaleRule::kTosa).bits == 0x71);
static_assert(ScaleCodeFromAmax<Fp4E2M1Traits>(0x40E00000u, ScaleRule::kTosa).bits == 0x80);  // 7

}  // namespace trnmx

#endif  // TRNMX_FORMATS_SCALE_RULE_H_
