// Internal: the router's per-row scans with Highway dynamic dispatch
// (router_scan-inl.h): the finiteness check of the logits, the top-k of
// rows and the groups' top two. Results are exact (comparisons and
// maxima of floats), so every target gives the same answer as the scalar
// loops they replace.
#ifndef TRNMX_SRC_KERNELS_MOE_ROUTER_SCAN_H_
#define TRNMX_SRC_KERNELS_MOE_ROUTER_SCAN_H_

#include <cstddef>
#include <cstdint>

namespace trnmx::internal {

// The first r in [0, rows) whose row x[r * stride .. r * stride + n) holds a
// NaN or +-Inf; rows if none does.
std::size_t FirstNonFiniteRow(const float* x, std::size_t stride, std::size_t rows, std::size_t n);

// For each row r of v (rows x n, row stride `stride`, n >= k >= 1, no NaN):
// best[r * k .. r * k + k) = the indices of its k best values in the
// router's order (moe_internal::Better: higher value, then lower index),
// best first. Method: a lower bound t of the k-th best (the k-th largest of
// the maxima of disjoint subsets of the row: the residue classes of the
// index mod the vector's lanes), then the values >= t, the candidates
// (usually k to k + 2; a value below t is never among the k best): up to
// one vector of them (two when k is more than half a vector) are ranked by
// lane-rotation compares, more are offered in increasing index order to an
// insertion list. With check_finite, a row
// holding a NaN or +-Inf stops the scan and its index is returned (best is
// then unspecified); rows when every row was finite and done.
std::size_t TopKRows(const float* v, std::size_t stride, std::size_t rows, std::size_t n,
                     std::size_t k, std::uint32_t* best, bool check_finite);

// For each group g of c (groups x size, packed; size >= 1, no NaN): its
// largest value first[g] and its second largest second[g] (with
// multiplicity: two equal maxima give first = second; -Inf when size = 1).
void GroupTopTwo(const float* c, std::size_t groups, std::size_t size, float* first, float* second);

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_KERNELS_MOE_ROUTER_SCAN_H_
