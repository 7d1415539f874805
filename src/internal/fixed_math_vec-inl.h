// Per-target lanes of the fixed exp and sigmoid (fixed_math.h): the same
// IEEE double operations in the same order, lane by lane, so every lane
// equals the scalar FixedExp / FixedSigmoid bit for bit on every target.
// Shared by the array forms (fixed_math-inl.h) and the kernels that fuse
// them with their own steps (attention's ExpRow). Defines only inline
// functions: any per-target source may include it (through its own
// hwy/foreach_target.h pass).
#if defined(TRNMX_SRC_INTERNAL_FIXED_MATH_VEC_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TRNMX_SRC_INTERNAL_FIXED_MATH_VEC_INL_H_
#undef TRNMX_SRC_INTERNAL_FIXED_MATH_VEC_INL_H_
#else
#define TRNMX_SRC_INTERNAL_FIXED_MATH_VEC_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>
#include <limits>

#include "internal/fixed_math.h"

HWY_BEFORE_NAMESPACE();
namespace trnmx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_HAVE_FLOAT64

// internal::ExpDouble, lane by lane (x within its domain).
template <class D>
HWY_INLINE hn::Vec<D> ExpDoubleV(D d, hn::Vec<D> x) {
  const hn::RebindToSigned<D> di;
  const auto round = hn::Set(d, 6755399441055744.0);  // 1.5 * 2^52
  // t holds N in its low mantissa bits: bits(t) - bits(1.5 * 2^52) = N.
  const auto t = hn::Add(hn::Mul(x, hn::Set(d, 92.332482616893656)), round);
  const auto n = hn::Sub(t, round);
  const auto big_n = hn::Sub(hn::BitCast(di, t), hn::BitCast(di, round));
  const auto r = hn::Sub(hn::Sub(x, hn::Mul(n, hn::Set(d, internal::kLn2Hi / 64.0))),
                         hn::Mul(n, hn::Set(d, internal::kLn2Lo / 64.0)));
  auto p = hn::Set(d, 1.0 / 120.0);
  p = hn::Add(hn::Mul(p, r), hn::Set(d, 1.0 / 24.0));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, 1.0 / 6.0));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, 0.5));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, 1.0));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, 1.0));
  const auto j = hn::And(big_n, hn::Set(di, 63));
  // (N - j) is a multiple of 64: the arithmetic shift is the exact m.
  const auto m = hn::ShiftRight<6>(hn::Sub(big_n, j));
  const auto pow2 = hn::BitCast(d, hn::ShiftLeft<52>(hn::Add(m, hn::Set(di, 1023))));
  return hn::Mul(hn::Mul(hn::GatherIndex(d, internal::kExp2Table, j), p), pow2);
}

// FixedExp (kSigmoid = false) or FixedSigmoid of each lane of xf, a vector
// of Lanes(d) floats (d: the double tag the computation runs in).
template <bool kSigmoid, class D>
HWY_INLINE hn::Vec<hn::Rebind<float, D>> FixedLanes(D d, hn::Vec<hn::Rebind<float, D>> xf) {
  const hn::Rebind<float, D> df;
  const float hi = kSigmoid ? 40.0f : 100.0f;
  const auto lo_v = hn::Set(df, -110.0f);
  const auto hi_v = hn::Set(df, hi);
  const auto above = hn::Set(df, kSigmoid ? 1.0f : std::numeric_limits<float>::infinity());
  const auto nan = hn::IsNaN(xf);
  const auto xc = hn::IfThenElseZero(hn::Not(nan), hn::Min(hn::Max(xf, lo_v), hi_v));
  const auto xd = hn::PromoteTo(d, xc);
  hn::Vec<D> r;
  if constexpr (kSigmoid) {
    const auto one = hn::Set(d, 1.0);
    const auto pos = hn::Ge(xd, hn::Zero(d));
    const auto e = ExpDoubleV(d, hn::IfThenElse(pos, hn::Neg(xd), xd));
    const auto den = hn::Add(one, e);
    r = hn::IfThenElse(pos, hn::Div(one, den), hn::Div(e, den));
  } else {
    r = ExpDoubleV(d, xd);
  }
  auto rf = hn::DemoteTo(df, r);
  // Above: 1 for the sigmoid; +Inf for exp from x = 0x1.62e43p+6 =
  // 88.72283935546875 on, the least FP32 whose exp reaches FLT_MAX + half
  // an ulp (its predecessor's exp is 3e-7 relative below, far beyond
  // ExpDouble's error). On x86 the demotion rounds those to +Inf already;
  // Highway's EMU128 demotion saturates to FLT_MAX instead.
  rf = hn::IfThenElse(kSigmoid ? hn::Gt(xf, hi_v) : hn::Ge(xf, hn::Set(df, 0x1.62e43p+6f)), above,
                      rf);
  rf = hn::IfThenElseZero(hn::Not(hn::Lt(xf, lo_v)), rf);
  return hn::IfThenElse(nan, xf, rf);
}

// Below this FixedExp is a subnormal (exp(-87.5) < 2^-126 by 9 %), flushed.
inline constexpr float kExpFlushedBelow = -87.5f;
// From here up to 0 exp(x) >= 2^-125.5: a normal float, far from the flush.
inline constexpr float kExpFastFrom = -87.0f;

namespace fixed_exp_flushed {

// y = 2^N P(r) as double bits for lanes x in [-87.5, 0]; *hard gets the
// lanes near a float rounding midpoint.
template <class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> Fast(D d, hn::Vec<D> x,
                                               hn::Mask<hn::RebindToSigned<D>>* hard) {
  const hn::RebindToSigned<D> di;
  const auto round = hn::Set(d, 6755399441055744.0);                    // 1.5 * 2^52
  const auto t = hn::MulAdd(x, hn::Set(d, 1.4426950408889634), round);  // x / ln 2 + round.
  const auto n = hn::Sub(t, round);
  const auto big_n = hn::Sub(hn::BitCast(di, t), hn::BitCast(di, round));
  const auto r = hn::NegMulAdd(n, hn::Set(d, internal::kLn2Lo),
                               hn::NegMulAdd(n, hn::Set(d, internal::kLn2Hi), x));
  constexpr double kInvFact[13] = {1.0,
                                   1.0,
                                   1.0 / 2,
                                   1.0 / 6,
                                   1.0 / 24,
                                   1.0 / 120,
                                   1.0 / 720,
                                   1.0 / 5040,
                                   1.0 / 40320,
                                   1.0 / 362880,
                                   1.0 / 3628800,
                                   1.0 / 39916800,
                                   1.0 / 479001600};
  // Estrin's scheme: a short dependency chain, so that the out-of-order
  // window holds several vectors at once.
  const auto c = [&](int k) HWY_ATTR { return hn::Set(d, kInvFact[k]); };
  const auto r2 = hn::Mul(r, r);
  const auto r4 = hn::Mul(r2, r2);
  const auto q01 = hn::MulAdd(hn::MulAdd(c(3), r, c(2)), r2, hn::MulAdd(c(1), r, c(0)));
  const auto q23 = hn::MulAdd(hn::MulAdd(c(7), r, c(6)), r2, hn::MulAdd(c(5), r, c(4)));
  const auto q45 = hn::MulAdd(hn::MulAdd(c(11), r, c(10)), r2, hn::MulAdd(c(9), r, c(8)));
  const auto p = hn::MulAdd(hn::MulAdd(c(12), r4, q45), hn::Mul(r4, r4), hn::MulAdd(q23, r4, q01));
  // (low 29 bits - (2^28 - 256)) mod 2^29 < 512: near a float midpoint
  // (the low bits are p's: 2^N changes only the exponent).
  const auto near = hn::And(hn::Sub(hn::BitCast(di, p), hn::Set(di, std::int64_t{(1 << 28) - 256})),
                            hn::Set(di, std::int64_t{(1 << 29) - 1}));
  *hard = hn::Lt(near, hn::Set(di, std::int64_t{512}));
  // p in [0.7, 1.42] and N >= -127: adding N to the exponent is exact.
  return hn::Add(hn::BitCast(di, p), hn::ShiftLeft<52>(big_n));
}

}  // namespace fixed_exp_flushed

// The lanes FixedLanes<false> gives, then +0 where they are below 2^-126
// (attention's flush of subnormal probabilities; NaN stays): bit for bit,
// without ExpDouble's table gather and its unfused double steps.
//
// Why the bits agree. For x in [-87, 0], y = 2^N P(r) with N = round(x /
// ln 2), r = x - N ln 2 (fdlibm's two-part ln 2, |r| <= 0.347) and P the
// degree-12 Taylor polynomial (truncation below 2^-52 relative) in FMA
// steps, is within about 2^-50 of exp(x) relative; so is
// ExpDouble(x). Both then round to the same float unless y lies within
// 2^-44 relative of a float rounding midpoint: its low 29 mantissa bits
// within 256 of 2^28 (about one lane in 2^20). A vector holding such a lane,
// or a lane in (0, +Inf] or [-87.5, -87), takes FixedLanes instead; lanes
// below -87.5 (-Inf included) are +0. Checked over every FP32 input in
// [-88, -2^-26] and a sample of the rest on every target
// (tests/kernels/moe/fixed_math_exhaustive_test.cc, fixed_math_test.cc).
template <class DF>
HWY_INLINE hn::Vec<DF> FixedExpFlushedLanes(DF df, hn::Vec<DF> xf) {
  // FixedLanes's exp of lanes e, flushed.
  const auto flush = [df](hn::Vec<DF> e) HWY_ATTR {
    return hn::IfThenZeroElse(hn::Lt(e, hn::Set(df, std::numeric_limits<float>::min())), e);
  };
#if HWY_TARGET == HWY_SCALAR  // One lane: no halves; the plain lanes.
  return flush(FixedLanes<false>(hn::Repartition<double, DF>(), xf));
#else
  const hn::Half<DF> dh;
  const hn::Repartition<double, DF> d;  // Half the lanes of df.
  const auto nan = hn::IsNaN(xf);
  const auto flushed = hn::Lt(xf, hn::Set(df, kExpFlushedBelow));
  const auto slow =
      hn::Or(hn::Gt(xf, hn::Zero(df)), hn::AndNot(flushed, hn::Lt(xf, hn::Set(df, kExpFastFrom))));
  // Lanes below -87.5 (-Inf too) at -87.5, so their fast steps stay
  // finite; positive and NaN lanes are slow or replaced by x.
  const auto xc = hn::Max(xf, hn::Set(df, kExpFlushedBelow));
  hn::Mask<hn::RebindToSigned<decltype(d)>> hard_lo, hard_hi;
  const auto lo = fixed_exp_flushed::Fast(d, hn::PromoteTo(d, hn::LowerHalf(dh, xc)), &hard_lo);
  const auto hi = fixed_exp_flushed::Fast(d, hn::PromoteTo(d, hn::UpperHalf(dh, xc)), &hard_hi);
  if (HWY_UNLIKELY(!hn::AllFalse(df, slow) ||
                   !hn::AllFalse(hn::RebindToSigned<decltype(d)>(), hn::Or(hard_lo, hard_hi)))) {
    return flush(hn::Combine(df, FixedLanes<false>(d, hn::UpperHalf(dh, xf)),
                             FixedLanes<false>(d, hn::LowerHalf(dh, xf))));
  }
  const auto rf =
      hn::Combine(df, hn::DemoteTo(dh, hn::BitCast(d, hi)), hn::DemoteTo(dh, hn::BitCast(d, lo)));
  return hn::IfThenElse(nan, xf, hn::IfThenZeroElse(flushed, rf));
#endif
}

#endif  // HWY_HAVE_FLOAT64

}  // namespace HWY_NAMESPACE
}  // namespace trnmx
HWY_AFTER_NAMESPACE();

#endif  // TRNMX_SRC_INTERNAL_FIXED_MATH_VEC_INL_H_
