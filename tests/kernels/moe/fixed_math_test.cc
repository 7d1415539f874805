// trnmx's own exp, sigmoid, tanh and log (src/internal/fixed_math.h) against long
// double expl/tanhl/logl over a sweep of FP32 inputs: the accuracy its header
// documents (within 0.5 + 2^-20 ulp) and its special values; and the array
// forms (fixed_math_array.h) equal to the scalar ones on every Highway target.
#include "internal/fixed_math.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <vector>

#include "internal/fixed_math_array.h"
#include "support/hwy_targets.h"

namespace trnmx::internal {
namespace {

// The documented bound, in FP32 ulps of the exact value.
constexpr long double kMaxUlps = 0.5L + 0x1p-20L;
// Every kStride-th FP32 bit pattern (a prime, so every exponent and many
// mantissa patterns are visited).
constexpr std::uint32_t kStride = 509;

// |f - exact| in units of the FP32 ulp at `exact` (subnormal ulp below 2^-126).
long double UlpError(float f, long double exact) {
  int e = 0;
  std::frexp(static_cast<double>(exact), &e);
  const long double ulp = std::ldexp(1.0L, std::max(e - 24, -149));
  return std::fabs(static_cast<long double>(f) - exact) / ulp;
}

struct SweepResult {
  long double max_ulps = 0;
  std::uint64_t count = 0;
  std::uint64_t not_correctly_rounded = 0;
};

// Sweeps the FP32 inputs in (lo, hi) for f against `exact`.
template <class F, class Exact>
SweepResult Sweep(float lo, float hi, F f, Exact exact) {
  SweepResult r;
  auto visit = [&](float x) {
    if (!(x > lo && x < hi)) return;
    const long double want = exact(static_cast<long double>(x));
    const long double err = UlpError(f(x), want);
    r.max_ulps = std::max(r.max_ulps, err);
    r.not_correctly_rounded += err > 0.5L ? 1 : 0;
    ++r.count;
  };
  for (std::uint64_t b = 0; b <= 0xFFFFFFFFull; b += kStride) {
    visit(std::bit_cast<float>(static_cast<std::uint32_t>(b)));
  }
  // The ends of the domain and their neighbours.
  for (float x : {lo, hi}) {
    for (int i = 1; i <= 3; ++i) {
      visit(std::nextafter(x, 0.0f));
      x = std::nextafter(x, 0.0f);
    }
  }
  return r;
}

void Report(const char* name, const SweepResult& r) {
  std::printf("%s: %llu inputs, max error %.12Lf ulp, %llu not correctly rounded\n", name,
              static_cast<unsigned long long>(r.count), r.max_ulps,
              static_cast<unsigned long long>(r.not_correctly_rounded));
  EXPECT_LE(r.max_ulps, kMaxUlps) << name;
  EXPECT_GT(r.count, 1000000u) << name;
}

TEST(FixedMath, ExpWithinBound) {
  // exp is finite and not below the subnormal range on (-103.97, 88.72).
  Report("FixedExp", Sweep(-103.9f, 88.72f, FixedExp, [](long double x) { return expl(x); }));
}

TEST(FixedMath, SigmoidWithinBound) {
  Report("FixedSigmoid", Sweep(-103.0f, 60.0f, FixedSigmoid,
                               [](long double x) { return 1.0L / (1.0L + expl(-x)); }));
}

TEST(FixedMath, TanhWithinBound) {
  // Beyond |x| = 10 FixedTanh saturates to +-1 (checked below); 0 has no
  // relative ulp and is checked exactly below.
  Report("FixedTanh", Sweep(
                          -10.0f, 10.0f, [](float x) { return x == 0.0f ? 0.0f : FixedTanh(x); },
                          [](long double x) { return tanhl(x); }));
}

TEST(FixedMath, LogWithinBound) {
  // log(1) = 0 has no relative ulp; it is checked exactly below.
  Report("FixedLog", Sweep(
                         0.0f, std::numeric_limits<float>::max(),
                         [](float x) { return x == 1.0f ? 0.0f : FixedLog(x); },
                         [](long double x) { return x == 1.0L ? 0.0L : logl(x); }));
}

TEST(FixedMath, LogDoubleOfDoubles) {
  // The synthetic logits take logs of doubles in (0, 1): relative error ~2^-52.
  for (double u : {0x1p-53, 1e-300, 0.1, 0.5, 0.999999, 1.0 - 0x1p-53}) {
    const long double want = logl(static_cast<long double>(u));
    EXPECT_LE(std::fabs((static_cast<long double>(LogDouble(u)) - want) / want), 0x1p-50L) << u;
  }
}

TEST(FixedMath, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(FixedExp(0.0f), 1.0f);
  EXPECT_EQ(FixedExp(-0.0f), 1.0f);
  EXPECT_EQ(FixedExp(1.0f), 2.71828182845904523536f);  // Correctly rounded e.
  // The overflow threshold (fixed_math-inl.h relies on it): exp of
  // 0x1.62e42ep+6 is finite, of 0x1.62e43p+6 = 88.72283935546875 it is +Inf.
  EXPECT_EQ(FixedExp(0x1.62e42ep+6f), std::bit_cast<float>(0x7F7FFF84u));
  EXPECT_EQ(FixedExp(0x1.62e43p+6f), inf);
  EXPECT_EQ(FixedExp(89.0f), inf);
  EXPECT_EQ(FixedExp(1000.0f), inf);
  EXPECT_EQ(FixedExp(inf), inf);
  EXPECT_EQ(FixedExp(-inf), 0.0f);
  EXPECT_EQ(FixedExp(-104.0f), 0.0f);
  EXPECT_EQ(FixedExp(-103.0f), std::bit_cast<float>(0x00000001u));  // 1.32 x 2^-149.
  EXPECT_TRUE(std::isnan(FixedExp(nan)));
  EXPECT_EQ(FixedSigmoid(0.0f), 0.5f);
  EXPECT_EQ(FixedSigmoid(41.0f), 1.0f);
  EXPECT_EQ(FixedSigmoid(inf), 1.0f);
  EXPECT_EQ(FixedSigmoid(-inf), 0.0f);
  EXPECT_TRUE(std::isnan(FixedSigmoid(nan)));
  EXPECT_EQ(std::bit_cast<std::uint32_t>(FixedTanh(0.0f)), 0u);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(FixedTanh(-0.0f)), 0x80000000u);
  EXPECT_EQ(FixedTanh(std::bit_cast<float>(1u)), std::bit_cast<float>(1u));
  EXPECT_EQ(FixedTanh(1.0f), 0.761594155955764888f);  // Correctly rounded tanh(1).
  EXPECT_EQ(FixedTanh(-1.0f), -0.761594155955764888f);
  EXPECT_EQ(FixedTanh(9.5f), 1.0f);  // 1 - tanh(9.5) < 2^-25: rounds to 1.
  EXPECT_EQ(FixedTanh(10.5f), 1.0f);
  EXPECT_EQ(FixedTanh(-inf), -1.0f);
  EXPECT_EQ(FixedTanh(inf), 1.0f);
  EXPECT_TRUE(std::isnan(FixedTanh(nan)));
  EXPECT_EQ(FixedLog(1.0f), 0.0f);
  EXPECT_EQ(FixedLog(0.0f), -inf);
  EXPECT_EQ(FixedLog(-0.0f), -inf);
  EXPECT_EQ(FixedLog(inf), inf);
  EXPECT_TRUE(std::isnan(FixedLog(-1.0f)));
  EXPECT_TRUE(std::isnan(FixedLog(nan)));
  EXPECT_EQ(FixedLog(std::bit_cast<float>(1u)), -103.278929903431851103f);  // log(2^-149).
}

// Inputs for the array forms: every 4099th bit pattern (NaNs, infinities,
// subnormals and both clamps included) and the clamp edges.
std::vector<float> ArrayInputs() {
  std::vector<float> v;
  for (std::uint64_t b = 0; b <= 0xFFFFFFFFull; b += 4099) {
    v.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(b)));
  }
  for (float edge : {-110.0f, 100.0f, 40.0f, 0.0f, -0.0f, 88.72f, -103.9f}) {
    for (float x = std::nextafter(edge, -1000.0f), i = 0; i < 3; ++i) {
      v.push_back(x);
      x = std::nextafter(x, 1000.0f);
    }
  }
  v.push_back(std::bit_cast<float>(0x7FA00001u));  // A signaling NaN.
  return v;
}

class FixedMathPerTarget : public testing::HwyTargetTest {};
TRNMX_INSTANTIATE_PER_HWY_TARGET(FixedMathPerTarget);

TEST_P(FixedMathPerTarget, ArraysEqualScalar) {
  const std::vector<float> x = ArrayInputs();
  for (bool sigmoid : {false, true}) {
    std::vector<float> y(x.size());
    (sigmoid ? FixedSigmoidArray : FixedExpArray)(x.data(), y.data(), x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float want = sigmoid ? FixedSigmoid(x[i]) : FixedExp(x[i]);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(y[i])) << i;
      } else {
        ASSERT_EQ(std::bit_cast<std::uint32_t>(y[i]), std::bit_cast<std::uint32_t>(want))
            << (sigmoid ? "sigmoid(" : "exp(") << x[i] << ")";
      }
    }
    // Every length up to 17 and every offset up to 3 (tails), in place.
    for (std::size_t off = 0; off < 4; ++off) {
      for (std::size_t n = 0; n <= 17; ++n) {
        std::vector<float> z(x.begin() + 1000, x.begin() + 1000 + off + n);
        (sigmoid ? FixedSigmoidArray : FixedExpArray)(z.data() + off, z.data() + off, n);
        for (std::size_t i = 0; i < n; ++i) {
          const float in = x[1000 + off + i];
          const float want = sigmoid ? FixedSigmoid(in) : FixedExp(in);
          if (!std::isnan(want)) {
            ASSERT_EQ(std::bit_cast<std::uint32_t>(z[off + i]), std::bit_cast<std::uint32_t>(want));
          }
        }
      }
    }
  }
}

// FixedExp, then +0 below 2^-126: what FixedExpFlushedArray must give.
float FlushedExp(float x) {
  const float e = FixedExp(x);
  return e < std::numeric_limits<float>::min() ? 0.0f : e;
}

// Inputs whose fast double result lies near a float rounding midpoint, so
// that FixedExpFlushedLanes takes its FixedLanes path (found by emulating
// the fast steps over every FP32 input in [-87, -2^-26]: 253 such inputs;
// none of them would round wrongly even without that path).
constexpr float kNearMidpoint[] = {-0x1.fffffp-26f, -0x1.ffffe2p-26f, -0x1.18000ap-20f,
                                   -0x1.38000cp-20f, -0x1.2c0016p-19f};

TEST_P(FixedMathPerTarget, FlushedExpEqualsScalar) {
  std::vector<float> x = ArrayInputs();
  // The flush, the fast path's ends and NaN/Inf lanes beside ordinary ones.
  for (float edge : {-87.5f, -87.0f, -87.3365f, -0x1.5d589ep+6f, 0.0f}) {
    float v = edge;
    for (int i = 0; i < 64; ++i) v = std::nextafter(v, -1000.0f);
    for (int i = 0; i < 128; ++i, v = std::nextafter(v, 1000.0f)) x.push_back(v);
  }
  for (float v : kNearMidpoint) x.insert(x.end(), {v, -1.0f, -2.0f, -3.0f, v, -0.5f, -0.25f, v});
  const float inf = std::numeric_limits<float>::infinity();
  x.insert(x.end(), {-1.0f, -inf, -2.0f, std::numeric_limits<float>::quiet_NaN(), -3.0f, -4.0f,
                     -5.0f, -6.0f, -0.0f, 1e-45f, -1e-45f, 0.5f});
  for (std::size_t off = 0; off < 8; ++off) {
    std::vector<float> y(x.size() - off);
    FixedExpFlushedArray(x.data() + off, y.data(), y.size());
    for (std::size_t i = 0; i < y.size(); ++i) {
      const float in = x[off + i];
      const float want = FlushedExp(in);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(y[i])) << in;
      } else {
        ASSERT_EQ(std::bit_cast<std::uint32_t>(y[i]), std::bit_cast<std::uint32_t>(want))
            << "exp(" << in << ") at offset " << off;
      }
    }
  }
  // In place, every length up to 17.
  for (std::size_t n = 0; n <= 17; ++n) {
    std::vector<float> z(kNearMidpoint, kNearMidpoint + 5);
    z.insert(z.end(), {-1.5f, -90.0f, -87.2f, -0.125f, 3.0f, -7.0f, -8.0f, -9.0f, -10.0f, -11.0f,
                       -12.0f, -13.0f});
    z.resize(n);
    const std::vector<float> in = z;
    FixedExpFlushedArray(z.data(), z.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(z[i]), std::bit_cast<std::uint32_t>(FlushedExp(in[i])))
          << "exp(" << in[i] << "), n " << n;
    }
  }
}

}  // namespace
}  // namespace trnmx::internal
