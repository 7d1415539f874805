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

#endif  // HWY_HAVE_FLOAT64

}  // namespace HWY_NAMESPACE
}  // namespace trnmx
HWY_AFTER_NAMESPACE();

#endif  // TRNMX_SRC_INTERNAL_FIXED_MATH_VEC_INL_H_
