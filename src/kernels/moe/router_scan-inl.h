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
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/moe/moe_internal.h"

HWY_BEFORE_NAMESPACE();
namespace trnmx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Lane counts up to which the vector top-k runs (rotation tables on the
// stack, a vector's mask bits in two bytes); wider vectors (SVE or RVV
// beyond 512 bits) take the slice bound and the scalar walk.
constexpr std::size_t kMaxRankLanes = 16;

// Whether x[0..n) are all finite: v - v is +0 for a finite v and NaN for NaN
// or +-Inf, so the OR of those bits is 0 iff every value is finite (two
// independent operations per vector, no long dependency chain).
template <class D>
HWY_INLINE bool RowFinite(D d, const float* x, std::size_t n) {
  const hn::RebindToUnsigned<D> du;
  const std::size_t lanes = hn::Lanes(d);
  auto acc = hn::Zero(d);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::LoadU(d, x + i);
    acc = hn::Or(acc, hn::Sub(v, v));
  }
  bool finite = hn::AllTrue(du, hn::Eq(hn::BitCast(du, acc), hn::Zero(du)));
  for (; i < n; ++i) finite &= (std::bit_cast<std::uint32_t>(x[i]) & 0x7F800000u) != 0x7F800000u;
  return finite;
}

std::size_t FirstNonFiniteRowImpl(const float* x, std::size_t stride, std::size_t rows,
                                  std::size_t n) {
  const hn::ScalableTag<float> d;
  for (std::size_t r = 0; r < rows; ++r) {
    if (!RowFinite(d, x + r * stride, n)) return r;
  }
  return rows;
}

// The ranks of x's lanes in the router's order: lane i gets the number of
// lanes j with x_j > x_i, or x_j == x_i and j < i (a permutation of 0 ..
// lanes - 1). Lane i meets lane (i + r) mod lanes in rotation r, which is
// the lower lane exactly when i >= lanes - r. lanes <= kMaxRankLanes.
template <class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> LaneRanks(D d, hn::Vec<D> x,
                                                    const std::int32_t* rotations) {
  const hn::RebindToSigned<D> di;
  const std::size_t lanes = hn::Lanes(d);
  auto count = hn::Zero(di);
  for (std::size_t r = 1; r < lanes; ++r) {
    const auto rotated = hn::TableLookupLanes(x, hn::SetTableIndices(d, rotations + r * lanes));
    const auto lower = hn::Not(hn::FirstN(d, lanes - r));
    const auto better = hn::Or(hn::Gt(rotated, x), hn::And(hn::Eq(rotated, x), lower));
    count = hn::Sub(count, hn::BitCast(di, hn::VecFromMask(d, better)));
  }
  return count;
}

// The lane of rank `rank` (LaneRanks).
template <class D>
HWY_INLINE std::size_t LaneOfRank(D d, hn::Vec<hn::RebindToSigned<D>> ranks, std::size_t rank) {
  const hn::RebindToSigned<D> di;
  const auto at = hn::Eq(ranks, hn::Set(di, static_cast<std::int32_t>(rank)));
  return static_cast<std::size_t>(hn::FindFirstTrue(d, hn::RebindMask(d, at)));
}

// k contiguous slices' maxima: their least is a value <= the k-th best of
// v[0..n) (they are k distinct elements); n >= k >= 1.
inline float SliceLowerBound(const float* v, std::size_t n, std::size_t k) {
  float t = v[0];
  for (std::size_t b = 0; b < k; ++b) {
    const std::size_t lo = n * b / k, hi = n * (b + 1) / k;
    float m = v[lo];
    for (std::size_t i = lo + 1; i < hi; ++i) m = std::max(m, v[i]);
    t = b == 0 ? m : std::min(t, m);
  }
  return t;
}

// Writes the indices i (increasing) with v[i] >= t to index (room for
// count + take) and returns their count; the indices are complete when the
// count is at most `take` (else the caller walks the row itself). The
// comparisons of a word's 64 values form one mask word, and `take` set bits
// of each word are taken branch-free (as many as the selection's vectors
// hold), so neither a vector nor a candidate costs a branch. A word whose
// lane maxima (word_max, the first `words` words) are all below t is
// skipped: it holds no candidate (logits of popular experts often leave
// whole words behind). lanes <= kMaxRankLanes, take <= 2 lanes.
template <class D>
HWY_INLINE std::size_t CandidatesAtLeast(D d, const float* v, std::size_t n, float t,
                                         const float* word_max, std::size_t words, std::size_t take,
                                         std::uint32_t* index) {
  const std::size_t lanes = hn::Lanes(d);
  const auto threshold = hn::Set(d, t);
  const std::size_t whole = n / lanes * lanes;  // values in whole vectors
  const hn::RebindToUnsigned<D> du;
  // Read by the caller even if every word is skipped.
  for (std::size_t j = 0; j < take; j += lanes) hn::StoreU(hn::Zero(du), du, index + j);
  std::size_t count = 0, i = 0;
  for (std::size_t w = 0; i < whole; ++w) {
    const std::size_t base = i;
    const std::size_t end = std::min(whole, base + 64);
    i = end;
    if (w < words && hn::AllFalse(d, hn::Ge(hn::Load(d, word_max + w * lanes), threshold))) {
      continue;
    }
    std::uint64_t word = 0;
    for (std::size_t j = 0, at = base; at < end; ++j, at += lanes) {
      std::uint8_t bits[2] = {0, 0};  // StoreMaskBits writes ceil(lanes / 8) bytes
      hn::StoreMaskBits(d, hn::Ge(hn::LoadU(d, v + at), threshold), bits);
      word |= (std::uint64_t{bits[0]} | std::uint64_t{bits[1]} << 8) << (j * lanes);
    }
    const std::size_t set = static_cast<std::size_t>(std::popcount(word));
    for (std::size_t j = 0; j < take; ++j) {
      // Past the set bits: index 0, a valid one that FirstN masks off.
      index[count + j] = word != 0 ? static_cast<std::uint32_t>(base + std::countr_zero(word)) : 0;
      word &= word - 1;
    }
    count += set;
  }
  for (; i < n; ++i) {
    index[count] = static_cast<std::uint32_t>(i);
    count += v[i] >= t ? 1 : 0;
  }
  return count;
}

void GroupTopTwoImpl(const float* c, std::size_t groups, std::size_t size, float* first,
                     float* second) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  const auto low = hn::Set(d, -std::numeric_limits<float>::infinity());
  // Butterfly tables: rotations by lanes / 2, lanes / 4, ..., 1.
  std::int32_t rotations[kMaxRankLanes * 4];
  std::size_t steps = 0;
  const bool vector = size % lanes == 0 && lanes <= kMaxRankLanes && lanes > 1;
  if (vector) {
    for (std::size_t half = lanes / 2; half >= 1; half /= 2, ++steps) {
      for (std::size_t i = 0; i < lanes; ++i) {
        rotations[steps * lanes + i] = static_cast<std::int32_t>((i + half) % lanes);
      }
    }
  }
  for (std::size_t g = 0; g < groups; ++g) {
    const float* x = c + g * size;
    if (vector) {
      // Per lane the two largest of its values, then the butterfly: after
      // the step with rotation h, lane i holds the top two of a set of
      // lanes disjoint from lane i + h's, so their combination (the larger
      // first; second = the larger of the smaller first and both seconds)
      // never counts a value twice.
      auto f = hn::LoadU(d, x);
      auto sec = low;
      for (std::size_t i = lanes; i < size; i += lanes) {
        const auto v = hn::LoadU(d, x + i);
        sec = hn::Max(sec, hn::Min(f, v));
        f = hn::Max(f, v);
      }
      for (std::size_t step = 0; step < steps; ++step) {
        const auto idx = hn::SetTableIndices(d, rotations + step * lanes);
        const auto f2 = hn::TableLookupLanes(f, idx);
        const auto s2 = hn::TableLookupLanes(sec, idx);
        sec = hn::Max(hn::Min(f, f2), hn::Max(sec, s2));
        f = hn::Max(f, f2);
      }
      first[g] = hn::GetLane(f);
      second[g] = hn::GetLane(sec);
    } else {
      float f = x[0];
      float sec = -std::numeric_limits<float>::infinity();
      for (std::size_t i = 1; i < size; ++i) {
        sec = std::max(sec, std::min(f, x[i]));
        f = std::max(f, x[i]);
      }
      first[g] = f;
      second[g] = sec;
    }
  }
}

// The scan runs in three passes over the rows (thresholds, candidates,
// selection), so that each pass's chain of dependent steps (loads, ranks,
// stores then loads of the candidates, a gather) overlaps with the next
// row's instead of stalling one row at a time.
std::size_t TopKRowsImpl(const float* v, std::size_t stride, std::size_t rows, std::size_t n,
                         std::size_t k, std::uint32_t* best, bool check_finite) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const std::size_t lanes = hn::Lanes(d);
  const auto zero = hn::Zero(d);
  const auto low = hn::Set(d, -std::numeric_limits<float>::infinity());
  // The vector method: k <= lanes <= n. Else k slices and a scalar walk.
  if (!(k <= lanes && lanes <= n && lanes <= kMaxRankLanes)) {
    for (std::size_t r = 0; r < rows; ++r) {
      const float* row = v + r * stride;
      if (check_finite && !RowFinite(d, row, n)) return r;
      const float t = SliceLowerBound(row, n, k);
      std::size_t have = 0;
      for (std::size_t i = 0; i < n; ++i) {
        if (row[i] >= t) moe_internal::TopKInsert(row, i, k, best + r * k, &have);
      }
    }
    return rows;
  }
  // rotations[r * lanes + i] = (i + r) mod lanes: LaneRanks' tables.
  std::int32_t rotations[kMaxRankLanes * kMaxRankLanes];
  for (std::size_t r = 0; r < lanes; ++r) {
    for (std::size_t i = 0; i < lanes; ++i) {
      rotations[r * lanes + i] = static_cast<std::int32_t>((i + r) % lanes);
    }
  }
  // Per row of a chunk: its threshold, then its candidates (n at most,
  // written a vector at a time; every entry that pass 3 reads is written)
  // and their count; on the stack for rows of up to 240 values.
  constexpr std::size_t kChunk = 8;
  constexpr std::size_t kStackRoom = 256;
  // Candidates a row's selection takes in vectors: one vector, or two when
  // k is more than half a vector (the candidates are then often more than
  // one vector holds).
  const std::size_t take = 2 * k <= lanes ? lanes : 2 * lanes;
  const std::size_t room = n + take;
  float threshold[kChunk];
  std::size_t count[kChunk];
  std::uint32_t stack_index[kChunk * kStackRoom];
  // Per row of a chunk: the lane maxima of its first kMaxWords words.
  constexpr std::size_t kMaxWords = 16;
  HWY_ALIGN float word_max[kChunk * kMaxWords * kMaxRankLanes];
  const std::size_t whole = n / lanes * lanes;  // values in whole vectors
  std::vector<std::uint32_t> heap_index(room > kStackRoom ? kChunk * room : 0);
  std::uint32_t* const index = room > kStackRoom ? heap_index.data() : stack_index;
  for (std::size_t r0 = 0; r0 < rows; r0 += kChunk) {
    const std::size_t chunk = std::min(kChunk, rows - r0);
    const float* const vc = v + r0 * stride;
    std::uint32_t* const bc = best + r0 * k;
    // 1. Thresholds: the maxima of the residue classes of the index mod lanes
    // (disjoint subsets, so the k-th largest of them is a lower bound of the
    // k-th best), kept per word of 64 values for pass 2, and the finiteness
    // (v * 0 + f stays 0 iff every v is finite: Inf * 0 and NaN give NaN;
    // two chains).
    for (std::size_t r = 0; r < chunk; ++r) {
      const float* row = vc + r * stride;
      float* wm = word_max + r * kMaxWords * lanes;
      auto m = hn::LoadU(d, row);
      auto f0 = zero;
      auto f1 = zero;
      std::size_t i = 0;
      for (std::size_t w = 0; i < whole; ++w) {
        const std::size_t end = std::min(whole, i + 64);
        auto mw = hn::LoadU(d, row + i);
        f0 = hn::MulAdd(mw, zero, f0);
        for (i += lanes; i + lanes < end; i += 2 * lanes) {
          const auto a = hn::LoadU(d, row + i);
          const auto b = hn::LoadU(d, row + i + lanes);
          mw = hn::Max(mw, hn::Max(a, b));
          f1 = hn::MulAdd(a, zero, f1);
          f0 = hn::MulAdd(b, zero, f0);
        }
        if (i < end) {
          const auto a = hn::LoadU(d, row + i);
          mw = hn::Max(mw, a);
          f1 = hn::MulAdd(a, zero, f1);
          i += lanes;
        }
        if (w < kMaxWords) hn::Store(mw, d, wm + w * lanes);
        m = hn::Max(m, mw);
      }
      if (check_finite) {
        bool finite = hn::AllTrue(d, hn::Eq(hn::Add(f0, f1), zero));
        for (std::size_t j = i; j < n; ++j) finite &= std::isfinite(row[j]);
        if (!finite) return r0 + r;
      }
      HWY_ALIGN float mt[kMaxRankLanes];
      hn::Store(m, d, mt);
      for (; i < n; ++i) mt[i % lanes] = std::max(mt[i % lanes], row[i]);  // the tail
      threshold[r] = mt[LaneOfRank(d, LaneRanks(d, hn::Load(d, mt), rotations), k - 1)];
    }
    // 2. Candidates.
    for (std::size_t r = 0; r < chunk; ++r) {
      count[r] =
          CandidatesAtLeast(d, vc + r * stride, n, threshold[r], word_max + r * kMaxWords * lanes,
                            kMaxWords, take, index + r * room);
    }
    // 3. Selection.
    for (std::size_t r = 0; r < chunk; ++r) {
      const float* row = vc + r * stride;
      const std::uint32_t* at = index + r * room;
      std::uint32_t* top = bc + r * k;
      if (count[r] <= lanes) {
        // One vector of candidates in increasing index order (so the lower
        // lane is the lower index), the rest -Inf: they rank after every
        // candidate, -Inf ones included (equal values, higher lanes).
        const auto gathered =
            hn::GatherIndex(d, row, hn::LoadU(di, reinterpret_cast<const std::int32_t*>(at)));
        const auto ranks =
            LaneRanks(d, hn::IfThenElse(hn::FirstN(d, count[r]), gathered, low), rotations);
        for (std::size_t j = 0; j < k; ++j) top[j] = at[LaneOfRank(d, ranks, j)];
      } else if (count[r] <= take) {
        // Two vectors, a full and b (the rest -Inf, as above). Ranks within
        // each as above, plus across: b's indices are all above a's, so
        // b_j beats a_i iff b_j > a_i, and a_j beats b_i iff a_j >= b_i.
        const auto a =
            hn::GatherIndex(d, row, hn::LoadU(di, reinterpret_cast<const std::int32_t*>(at)));
        const auto b = hn::IfThenElse(
            hn::FirstN(d, count[r] - lanes),
            hn::GatherIndex(d, row,
                            hn::LoadU(di, reinterpret_cast<const std::int32_t*>(at + lanes))),
            low);
        auto rank_a = LaneRanks(d, a, rotations);
        auto rank_b = LaneRanks(d, b, rotations);
        for (std::size_t q = 0; q < lanes; ++q) {
          const auto idx = hn::SetTableIndices(d, rotations + q * lanes);
          const auto bq = hn::TableLookupLanes(b, idx);
          const auto aq = hn::TableLookupLanes(a, idx);
          rank_a = hn::Sub(rank_a, hn::BitCast(di, hn::VecFromMask(d, hn::Gt(bq, a))));
          rank_b = hn::Sub(rank_b, hn::BitCast(di, hn::VecFromMask(d, hn::Ge(aq, b))));
        }
        std::int32_t rank[2 * kMaxRankLanes];
        hn::StoreU(rank_a, di, rank);
        hn::StoreU(rank_b, di, rank + lanes);
        std::uint32_t sorted[2 * kMaxRankLanes];  // the ranks are a permutation
        for (std::size_t j = 0; j < 2 * lanes; ++j) sorted[rank[j]] = at[j];
        std::copy_n(sorted, k, top);
      } else {
        // Many candidates: each v[i] >= t, in increasing order, to an
        // insertion list.
        std::size_t have = 0;
        for (std::size_t i = 0; i < n; ++i) {
          if (row[i] >= threshold[r]) moe_internal::TopKInsert(row, i, k, top, &have);
        }
      }
    }
  }
  return rows;
}

}  // namespace HWY_NAMESPACE
}  // namespace trnmx
HWY_AFTER_NAMESPACE();

#endif  // TRNMX_SRC_KERNELS_MOE_ROUTER_SCAN_INL_H_
