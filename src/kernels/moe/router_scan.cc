// Highway dynamic dispatch of the router's scans (router_scan.h).
#include "kernels/moe/router_scan.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/moe/router_scan-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/moe/router_scan-inl.h"

#if HWY_ONCE

namespace trnmx {

HWY_EXPORT(FirstNonFiniteRowImpl);
HWY_EXPORT(TopKRowsImpl);
HWY_EXPORT(GroupTopTwoImpl);

namespace internal {

std::size_t FirstNonFiniteRow(const float* x, std::size_t stride, std::size_t rows, std::size_t n) {
  return HWY_DYNAMIC_DISPATCH(FirstNonFiniteRowImpl)(x, stride, rows, n);
}

std::size_t TopKRows(const float* v, std::size_t stride, std::size_t rows, std::size_t n,
                     std::size_t k, std::uint32_t* best, bool check_finite) {
  return HWY_DYNAMIC_DISPATCH(TopKRowsImpl)(v, stride, rows, n, k, best, check_finite);
}

void GroupTopTwo(const float* c, std::size_t groups, std::size_t size, float* first,
                 float* second) {
  HWY_DYNAMIC_DISPATCH(GroupTopTwoImpl)(c, groups, size, first, second);
}

}  // namespace internal
}  // namespace trnmx

#endif  // HWY_ONCE
