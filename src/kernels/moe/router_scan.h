// Internal: the router's per-row scans with Highway dynamic dispatch
// (router_scan-inl.h): the finiteness check of the logits and the two
// passes of the threshold top-k (router.cc TopKThreshold). Results are
// exact (comparisons and maxima of finite floats), so every target gives
// the same answer as the scalar loops they replace.
#ifndef TRNMX_SRC_KERNELS_MOE_ROUTER_SCAN_H_
#define TRNMX_SRC_KERNELS_MOE_ROUTER_SCAN_H_

#include <cstddef>
#include <cstdint>

namespace trnmx::internal {

// Whether any of x[0..n) is NaN or +-Inf.
bool AnyNonFinite(const float* x, std::size_t n);

// A lower bound of the k-th largest of v[0..n) (v finite, n >= k >= 1): the
// k-th largest of the maxima of disjoint subsets of v, which are k distinct
// elements (router.cc TopKThreshold).
float TopKLowerBound(const float* v, std::size_t n, std::size_t k);

// Writes the indices i (increasing) with v[i] >= t to out (room for n);
// returns their count.
std::size_t IndicesAtLeast(const float* v, std::size_t n, float t, std::uint32_t* out);

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_KERNELS_MOE_ROUTER_SCAN_H_
