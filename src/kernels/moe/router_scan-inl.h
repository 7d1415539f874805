// Per-target bodies of router_scan.h, included through hwy/foreach_target.h
// by router_scan.cc.
#if defined(TRNMX_SRC_KERNELS_MOE_ROUTER_SCAN_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TRNMX_SRC_KERNELS_MOE_ROUTER_SCAN_INL_H_
#undef TRNMX_SRC_KERNELS_MOE_ROUTER_SCAN_INL_H_
#else
#define TRNMX_SRC_KERNELS_MOE_ROUTER_SCAN_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace trnmx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

bool AnyNonFiniteImpl(const float* x, std::size_t n) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const std::size_t lanes = hn::Lanes(df);
  const auto exponent = hn::Set(du, 0x7F800000u);
  auto acc = hn::Zero(du);  // lanes become all-ones where an exponent is all ones
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto e = hn::And(hn::BitCast(du, hn::LoadU(df, x + i)), exponent);
    acc = hn::Or(acc, hn::VecFromMask(du, hn::Eq(e, exponent)));
  }
  bool bad = !hn::AllTrue(du, hn::Eq(acc, hn::Zero(du)));
  for (; i < n; ++i) bad |= (std::bit_cast<std::uint32_t>(x[i]) & 0x7F800000u) == 0x7F800000u;
  return bad;
}

// A value <= the k-th largest of v[0..n): the k-th largest of the maxima
// of disjoint subsets of v (any k of them are k distinct elements). With
// k <= lanes the subsets are the residue classes of the index mod lanes
// (one vector of running maxima); else k contiguous slices.
float TopKLowerBoundImpl(const float* v, std::size_t n, std::size_t k) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  if (k >= 1 && k <= lanes && n >= lanes && lanes <= 64) {
    auto acc = hn::LoadU(d, v);
    std::size_t i = lanes;
    for (; i + lanes <= n; i += lanes) acc = hn::Max(acc, hn::LoadU(d, v + i));
    float m[64];
    hn::StoreU(acc, d, m);
    for (; i < n; ++i) m[i % lanes] = std::max(m[i % lanes], v[i]);
    // The k-th largest of the lane maxima: keep the k largest, descending.
    float top[64];
    std::size_t have = 0;
    for (std::size_t j = 0; j < lanes; ++j) {
      if (have == k && !(m[j] > top[k - 1])) continue;
      std::size_t pos = have < k ? have++ : k - 1;
      for (; pos > 0 && top[pos - 1] < m[j]; --pos) top[pos] = top[pos - 1];
      top[pos] = m[j];
    }
    return top[k - 1];
  }
  float t = v[0];
  for (std::size_t b = 0; b < k; ++b) {
    const std::size_t lo = n * b / k, hi = n * (b + 1) / k;
    float m = v[lo];
    for (std::size_t i = lo + 1; i < hi; ++i) m = std::max(m, v[i]);
    t = b == 0 ? m : std::min(t, m);
  }
  return t;
}

std::size_t IndicesAtLeastImpl(const float* v, std::size_t n, float t, std::uint32_t* out) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  const auto threshold = hn::Set(d, t);
  std::size_t count = 0, i = 0;
  // The candidates are few (a handful per row): their mask bits are walked
  // one by one, which beats CompressStore's table copy on AVX2.
  std::uint8_t bits[HWY_MAX_BYTES / sizeof(float) / 8 + 8] = {};
  for (; i + lanes <= n; i += lanes) {
    const auto keep = hn::Ge(hn::LoadU(d, v + i), threshold);
    if (hn::AllFalse(d, keep)) continue;
    const std::size_t bytes = hn::StoreMaskBits(d, keep, bits);
    for (std::size_t b = 0; b < bytes; ++b) {
      for (unsigned m = bits[b]; m != 0; m &= m - 1) {
        out[count++] = static_cast<std::uint32_t>(i + 8 * b + std::countr_zero(m));
      }
    }
  }
  for (; i < n; ++i) {
    out[count] = static_cast<std::uint32_t>(i);
    count += v[i] >= t ? 1 : 0;
  }
  return count;
}

}  // namespace HWY_NAMESPACE
}  // namespace trnmx
HWY_AFTER_NAMESPACE();

#endif  // TRNMX_SRC_KERNELS_MOE_ROUTER_SCAN_INL_H_
