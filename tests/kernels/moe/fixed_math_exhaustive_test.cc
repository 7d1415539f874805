// Attention's flushed exp (FixedExpFlushedArray, fixed_math_vec-inl.h
// FixedExpFlushedLanes) against the scalar FixedExp and the flush, over every
// FP32 input in [-88, -2^-26] (271,581,185 inputs: the fast path's whole
// domain, where exp(x) is neither 1 nor flushed, plus half a unit either
// side of the flush), on every Highway target. The scalar reference runs once
// per chunk; each target then computes the same chunk. The rest of the FP32
// inputs (NaN, Inf, positive, |x| < 2^-26) are sampled by
// fixed_math_test.cc's FlushedExpEqualsScalar.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <vector>

#include "internal/fixed_math.h"
#include "internal/fixed_math_array.h"
#include "support/hwy_targets.h"

namespace trnmx::internal {
namespace {

TEST(FixedMathExhaustive, FlushedExpEqualsScalarOnEveryTarget) {
  const std::uint32_t first = std::bit_cast<std::uint32_t>(-0x1p-26f);
  const std::uint32_t last = std::bit_cast<std::uint32_t>(-88.0f);
  constexpr std::size_t kChunk = std::size_t{1} << 16;
  std::vector<float> x(kChunk), want(kChunk), got(kChunk);
  std::uint64_t checked = 0;
  for (std::uint64_t b = first; b <= last; b += kChunk) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, last + 1 - b));
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = std::bit_cast<float>(static_cast<std::uint32_t>(b + i));
      const float e = FixedExp(x[i]);
      want[i] = e < std::numeric_limits<float>::min() ? 0.0f : e;
    }
    testing::ForEachHwyTarget([&](const testing::HwyTarget& target) {
      FixedExpFlushedArray(x.data(), got.data(), n);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i]))
            << target.name << ": exp(" << x[i] << ")";
      }
    });
    if (HasFatalFailure()) return;
    checked += n;
  }
  std::printf("%llu inputs on %zu targets\n", static_cast<unsigned long long>(checked),
              testing::CompiledHwyTargets().size());
  EXPECT_EQ(checked, 271581185u);
}

}  // namespace
}  // namespace trnmx::internal
