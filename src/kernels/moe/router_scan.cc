// Highway dynamic dispatch of the router's scans (router_scan.h).
#include "kernels/moe/router_scan.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/moe/router_scan-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/moe/router_scan-inl.h"

#if HWY_ONCE

namespace trnmx {

HWY_EXPORT(AnyNonFiniteImpl);
HWY_EXPORT(TopKLowerBoundImpl);
HWY_EXPORT(IndicesAtLeastImpl);

namespace internal {

bool AnyNonFinite(const float* x, std::size_t n) {
  return HWY_DYNAMIC_DISPATCH(AnyNonFiniteImpl)(x, n);
}

float TopKLowerBound(const float* v, std::size_t n, std::size_t k) {
  return HWY_DYNAMIC_DISPATCH(TopKLowerBoundImpl)(v, n, k);
}

std::size_t IndicesAtLeast(const float* v, std::size_t n, float t, std::uint32_t* out) {
  return HWY_DYNAMIC_DISPATCH(IndicesAtLeastImpl)(v, n, t, out);
}

}  // namespace internal
}  // namespace trnmx

#endif  // HWY_ONCE
