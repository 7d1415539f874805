// Per-target array forms of the fixed exp and sigmoid (fixed_math.h), from
// the lanes of fixed_math_vec-inl.h: every element equals the scalar
// FixedExp / FixedSigmoid bit for bit on every target (checked per target by
// tests/kernels/moe/fixed_math_test.cc). Included through
// hwy/foreach_target.h by fixed_math_array.cc.
#if defined(TRNMX_SRC_INTERNAL_FIXED_MATH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TRNMX_SRC_INTERNAL_FIXED_MATH_INL_H_
#undef TRNMX_SRC_INTERNAL_FIXED_MATH_INL_H_
#else
#define TRNMX_SRC_INTERNAL_FIXED_MATH_INL_H_
#endif

#include <hwy/highway.h>

#include <cstddef>

#include "internal/fixed_math.h"
#include "internal/fixed_math_vec-inl.h"

HWY_BEFORE_NAMESPACE();
namespace trnmx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_HAVE_FLOAT64

// y[i] = FixedExp(x[i]) (kSigmoid = false) or FixedSigmoid(x[i]); x == y allowed.
template <bool kSigmoid>
HWY_INLINE void FixedArray(const float* x, float* y, std::size_t n) {
  const hn::ScalableTag<double> d;
  const hn::Rebind<float, decltype(d)> df;
  const std::size_t lanes = hn::Lanes(d);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(FixedLanes<kSigmoid>(d, hn::LoadU(df, x + i)), df, y + i);
  }
  for (; i < n; ++i) y[i] = kSigmoid ? internal::FixedSigmoid(x[i]) : internal::FixedExp(x[i]);
}

// y[i] = FixedExp(x[i]), then +0 where below 2^-126 (FixedExpFlushedLanes).
HWY_INLINE void FixedExpFlushed(const float* x, float* y, std::size_t n) {
  const hn::ScalableTag<float> df;
  const std::size_t lanes = hn::Lanes(df);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(FixedExpFlushedLanes(df, hn::LoadU(df, x + i)), df, y + i);
  }
  for (; i < n; ++i) y[i] = internal::FixedExpFlushed(x[i]);
}

#else  // No double lanes on this target: the scalar functions.

HWY_INLINE void FixedExpFlushed(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = internal::FixedExpFlushed(x[i]);
}

template <bool kSigmoid>
HWY_INLINE void FixedArray(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    y[i] = kSigmoid ? internal::FixedSigmoid(x[i]) : internal::FixedExp(x[i]);
  }
}

#endif  // HWY_HAVE_FLOAT64

HWY_NOINLINE void FixedExpArrayImpl(const float* x, float* y, std::size_t n) {
  FixedArray<false>(x, y, n);
}
HWY_NOINLINE void FixedExpFlushedArrayImpl(const float* x, float* y, std::size_t n) {
  FixedExpFlushed(x, y, n);
}
HWY_NOINLINE void FixedSigmoidArrayImpl(const float* x, float* y, std::size_t n) {
  FixedArray<true>(x, y, n);
}

}  // namespace HWY_NAMESPACE
}  // namespace trnmx
HWY_AFTER_NAMESPACE();

#endif  // TRNMX_SRC_INTERNAL_FIXED_MATH_INL_H_
