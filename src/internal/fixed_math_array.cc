// Highway dynamic dispatch of the array exp and sigmoid (fixed_math_array.h).
#include "internal/fixed_math_array.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "internal/fixed_math-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "internal/fixed_math-inl.h"

#if HWY_ONCE

namespace trnmx {

HWY_EXPORT(FixedExpArrayImpl);
HWY_EXPORT(FixedExpFlushedArrayImpl);
HWY_EXPORT(FixedSigmoidArrayImpl);

namespace internal {

void FixedExpArray(const float* x, float* y, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(FixedExpArrayImpl)(x, y, n);
}

void FixedExpFlushedArray(const float* x, float* y, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(FixedExpFlushedArrayImpl)(x, y, n);
}

void FixedSigmoidArray(const float* x, float* y, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(FixedSigmoidArrayImpl)(x, y, n);
}

}  // namespace internal
}  // namespace trnmx

#endif  // HWY_ONCE
