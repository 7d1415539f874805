// Exhaustive check of ScaleCodeFromAmax: for every MX element format and every
// scale rule defined for it, all 2^31 non-negative FP32 amax bit patterns
// (finite ones against an independent double-precision reference; Inf and NaN
// patterns must give FF, the default special block) -- formats.md section 7.
//
// The references use no bit fields of amax: exponents come from std::ilogb on
// the exact double value, rounding is done in double arithmetic, and kGgml
// uses glibc's floorf(log2f(x)) (the implementation uses (float)log2(double);
// formats.md section 7 says they agree on every normal FP32, and below 2^-125
// both clamp to 00).
#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "trnmx/formats/scale_rule.h"

namespace trnmx {
namespace {

int Clamp(int c) { return std::clamp(c, 0, 0xFE); }

// floor(log2 x) for finite x > 0, exact (also for FP32 subnormals).
int FloorLog2(double x) { return std::ilogb(x); }

// ceil(log2 x) for finite x > 0 by comparing with the power of two below.
int CeilLog2(double x) {
  const int e = std::ilogb(x);
  return x == std::ldexp(1.0, e) ? e : e + 1;
}

// Reference codes; x = amax > 0, finite. emax, m, max from the traits.
struct Params {
  int emax;
  int m;
  double max;
};

int RefOcpFloor(double x, const Params& p) { return Clamp(FloorLog2(x) + 127 - p.emax); }
int RefCeil(double x, const Params& p) { return Clamp(CeilLog2(x) + 127 - p.emax); }
int RefEven(double x, const Params& p) {
  // Round x to m + 1 significant bits, ties up, in exact double arithmetic.
  const double q = std::ldexp(1.0, FloorLog2(x) - p.m);
  const double r = std::floor(x / q + 0.5) * q;
  return Clamp(FloorLog2(r) + 127 - p.emax);
}
int RefRceil(float xf, const Params& p) {
  const float r = 1.0f / static_cast<float>(p.max);  // fl32(1/MAX)
  const float d = xf * r;                            // fl32(amax * r)
  if (d == 0.0f) return 0;
  return Clamp(CeilLog2(static_cast<double>(d)) + 127);
}
int RefNki(double x, int emax_prime) { return Clamp(FloorLog2(x) + 127 - emax_prime); }
// kTosa: the smallest s with no overflow after RNE (formats.md section 7),
// from the double quotient amax / T (no integer thresholds involved):
// E4M3 s = ceil(log2(amax / 464)); others s = floor(log2(amax / T)) + 1.
int RefTosa(double x, double t, bool e4m3) {
  const double q = x / t;  // Cannot round onto a power of two unless exact.
  const int s = e4m3 ? CeilLog2(q) : FloorLog2(q) + 1;
  return Clamp(s + 127);
}
int RefGgml(float xf) { return Clamp(static_cast<int>(std::floor(std::log2f(xf))) - 2 + 127); }

// Compares ScaleCodeFromAmax with ref over all bits in [0, 2^31) on all cores;
// prints the first mismatches and the time taken.
template <class Traits, class Ref>
void Sweep(ScaleRule rule, Ref ref) {
  const auto start = std::chrono::steady_clock::now();
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<std::uint64_t> mismatches{0};
  std::atomic<int> printed{0};
  std::vector<std::thread> pool;
  constexpr std::uint64_t kEnd = 1ull << 31;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const std::uint64_t lo = kEnd * t / threads;
      const std::uint64_t hi = kEnd * (t + 1) / threads;
      std::uint64_t bad = 0;
      for (std::uint64_t i = lo; i < hi; ++i) {
        const auto a = static_cast<std::uint32_t>(i);
        const unsigned got = ScaleCodeFromAmax<Traits>(a, rule).bits;
        unsigned want;
        if (a >= 0x7F800000u) {
          want = 0xFF;
        } else if (a == 0) {
          want = 0x00;
        } else {
          want = static_cast<unsigned>(ref(std::bit_cast<float>(a)));
        }
        if (got != want) {
          ++bad;
          if (printed.fetch_add(1) < 10) {
            std::fprintf(stderr, "  %s amax %08X: got %02X want %02X\n",
                         std::string(ScaleRuleName(rule)).c_str(), a, got, want);
          }
        }
      }
      mismatches += bad;
    });
  }
  for (std::thread& th : pool) th.join();
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("  %-9s 2^31 amax patterns, %u threads: %.1f s\n",
              std::string(ScaleRuleName(rule)).c_str(), threads, s);
  EXPECT_EQ(mismatches.load(), 0u) << ScaleRuleName(rule);
}

template <class Traits>
Params ParamsOf() {
  return {Traits::kEmax, Traits::kMantissaBits, Traits::kMaxNormal};
}

// One test per (format, rule), each a few seconds to ~30 s on 2 cores.
#define TRNMX_SWEEP_STD(Name, Traits, TosaT, TosaE4M3)                                         \
  TEST(ScaleRuleExhaustive, Name##OcpFloor) {                                          \
    const Params p = ParamsOf<Traits>();                                               \
    Sweep<Traits>(ScaleRule::kOcpFloor, [p](float x) { return RefOcpFloor(x, p); });   \
  }                                                                                    \
  TEST(ScaleRuleExhaustive, Name##Ceil) {                                              \
    const Params p = ParamsOf<Traits>();                                               \
    Sweep<Traits>(ScaleRule::kCeil, [p](float x) { return RefCeil(x, p); });           \
  }                                                                                    \
  TEST(ScaleRuleExhaustive, Name##Even) {                                              \
    const Params p = ParamsOf<Traits>();                                               \
    Sweep<Traits>(ScaleRule::kEven, [p](float x) { return RefEven(x, p); });           \
  }                                                                                    \
  TEST(ScaleRuleExhaustive, Name##Rceil) {                                             \
    const Params p = ParamsOf<Traits>();                                               \
    Sweep<Traits>(ScaleRule::kRceil, [p](float x) { return RefRceil(x, p); });         \
  }                                                                                    \
  TEST(ScaleRuleExhaustive, Name##Tosa) {                                              \
    Sweep<Traits>(ScaleRule::kTosa, [](float x) { return RefTosa(x, TosaT, TosaE4M3); }); \
  }

// TOSA thresholds T: the first value that overflows after RNE, except E4M3,
// whose 464 is the last value that does not (it ties down to 448).
TRNMX_SWEEP_STD(E4M3, Fp8E4M3Traits, 464.0, true)
TRNMX_SWEEP_STD(E5M2, Fp8E5M2Traits, 61440.0, false)
TRNMX_SWEEP_STD(E2M3, Fp6E2M3Traits, 7.75, false)
TRNMX_SWEEP_STD(E3M2, Fp6E3M2Traits, 30.0, false)
TRNMX_SWEEP_STD(E2M1, Fp4E2M1Traits, 7.0, false)
#undef TRNMX_SWEEP_STD

TEST(ScaleRuleExhaustive, E4M3Nki) {
  Sweep<Fp8E4M3Traits>(ScaleRule::kNki, [](float x) { return RefNki(x, 7); });
}
TEST(ScaleRuleExhaustive, E5M2Nki) {
  Sweep<Fp8E5M2Traits>(ScaleRule::kNki, [](float x) { return RefNki(x, 14); });
}
TEST(ScaleRuleExhaustive, E2M1Nki) {
  Sweep<Fp4E2M1Traits>(ScaleRule::kNki, [](float x) { return RefNki(x, 2); });
}
TEST(ScaleRuleExhaustive, E2M1Ggml) {
  Sweep<Fp4E2M1Traits>(ScaleRule::kGgml, [](float x) { return RefGgml(x); });
}
TEST(ScaleRuleExhaustive, MxInt8OcpFloor) {
  Sweep<MxInt8Traits>(ScaleRule::kOcpFloor, [](float x) { return Clamp(FloorLog2(x) + 127); });
}

}  // namespace
}  // namespace trnmx
