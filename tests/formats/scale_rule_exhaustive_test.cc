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
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "formats/sweep_runs.h"
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
// kGgml: glibc's floor(log2f(x)). log2f is called where log2 x lies close to
// an integer: normal x whose mantissa field is below kGgmlNearLow or at least
// kGgmlNearHigh (|x / 2^k - 1| < 2^-9 for the nearest power of two 2^k), and
// subnormals. Elsewhere log2 x is more than log2(1 + 2^-10) > 1.4e-3 from
// every integer, so any log2f with an error below that (glibc's is under one
// ulp of its result, at most 2^-16 here) floors to ilogb(x), which is then
// the answer: the sweep asks log2f about 2^24 times instead of 2^31.
constexpr std::uint32_t kGgmlNearLow = 1u << 14;
constexpr std::uint32_t kGgmlNearHigh = (1u << 23) - (1u << 15);
int RefGgml(float xf) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(xf);
  const std::uint32_t mantissa = bits & 0x7FFFFFu;
  const bool near_integer =
      (bits >> 23) == 0 || mantissa < kGgmlNearLow || mantissa >= kGgmlNearHigh;
  const int floor_log2 =
      near_integer ? static_cast<int>(std::floor(std::log2f(xf))) : std::ilogb(xf);
  return Clamp(floor_log2 - 2 + 127);
}

// kGgml's runs (log2f need not be monotone, so no bisection): zero; the
// subnormals and each binade's two ends near a power of two, where RefGgml
// calls log2f, asked input by input (`per_input`); each binade's middle,
// where RefGgml is ilogb, as one constant run; Inf and NaN.
std::vector<test::BitRun> GgmlRuns(std::vector<bool>* per_input) {
  std::vector<test::BitRun> runs = {{0, 0}, {1, 0x7FFFFFu}};
  *per_input = {false, true};
  for (std::uint32_t e = 1; e < 0xFF; ++e) {
    const std::uint32_t b = e << 23;
    runs.insert(runs.end(), {{b, b + kGgmlNearLow - 1},
                             {b + kGgmlNearLow, b + kGgmlNearHigh - 1},
                             {b + kGgmlNearHigh, b + 0x7FFFFFu}});
    per_input->insert(per_input->end(), {true, false, true});
  }
  runs.push_back({test::kPosInfBits, test::kMaxNanBits});
  per_input->push_back(false);
  return runs;
}

// The expected code of amax bits a in [0, 2^31): FF for Inf and NaN, 00 for
// zero, else the reference.
template <class Ref>
unsigned Want(std::uint32_t a, const Ref& ref) {
  if (a >= test::kPosInfBits) return 0xFF;
  if (a == 0) return 0x00;
  return static_cast<unsigned>(ref(std::bit_cast<float>(a)));
}

// Appends the patterns u in (lo, hi] where want(u) != want(u - 1), for a
// non-decreasing want with want(lo) = wlo, want(hi) = whi, by bisection.
template <class WantFn>
void FindSteps(const WantFn& want, std::uint32_t lo, unsigned wlo, std::uint32_t hi, unsigned whi,
               std::vector<std::uint32_t>* steps) {
  if (wlo == whi) return;
  if (hi == lo + 1) {
    steps->push_back(hi);
    return;
  }
  const std::uint32_t mid = lo + (hi - lo) / 2;
  const unsigned wmid = want(mid);
  FindSteps(want, lo, wlo, mid, wmid, steps);
  FindSteps(want, mid, wmid, hi, whi, steps);
}

// Mismatches of ScaleCodeFromAmax on [a, b] against one expected code: the
// sweep's cost, compiled as sweep_runs.h's SweepLoop (for AVX2 where the CPU
// has it).
template <class Traits, ScaleRule kRule>
struct CountMismatches {
  std::uint64_t operator()(std::uint32_t a, std::uint32_t b, unsigned want) const {
    std::uint64_t bad = 0;
    for (std::uint64_t u = a; u <= b; ++u) {
      bad += ScaleCodeFromAmax<Traits>(static_cast<std::uint32_t>(u), kRule).bits != want;
    }
    return bad;
  }
};

// Runs of a reference that is non-decreasing in amax (every reference but
// kGgml's: an exponent, floor or ceil of log2, of amax or of a monotone
// rounding of it: RNE to m + 1 bits, fl32(amax * r), amax / T): its answer is
// constant between the patterns where it steps, found by bisection on the
// reference (a few thousand calls).
template <class WantFn>
std::vector<test::BitRun> MonotoneRuns(const WantFn& want) {
  std::vector<std::uint32_t> steps;
  FindSteps(want, 1, want(1), test::kMaxFiniteBits, want(test::kMaxFiniteBits), &steps);
  std::vector<test::BitRun> runs = {{0, 0}};
  std::uint32_t first = 1;
  for (const std::uint32_t s : steps) {
    runs.push_back({first, s - 1});
    first = s;
  }
  runs.push_back({first, test::kMaxFiniteBits});
  runs.push_back({test::kPosInfBits, test::kMaxNanBits});
  return runs;
}

// Compares ScaleCodeFromAmax with ref over all bits in [0, 2^31) on two
// threads; prints the first mismatches and the time taken. The runs cover
// [0, 2^31) in order: on a run with per_input[i] the reference is asked for
// every input, on the others once at each end (which must agree), and every
// input is compared with that answer (sweep_runs.h). per_input empty: none.
template <class Traits, ScaleRule kRule, class Ref>
void Sweep(Ref ref, std::vector<test::BitRun> runs = {}, std::vector<bool> per_input = {}) {
  const test::SweepTimer timer;
  const auto want = [&](std::uint32_t a) { return Want(a, ref); };
  if (runs.empty()) runs = MonotoneRuns(want);
  per_input.resize(runs.size(), false);
  std::vector<unsigned> expect(runs.size());
  std::uint64_t asked_per_input = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (i > 0) {
      ASSERT_EQ(runs[i].first, runs[i - 1].last + 1) << "runs must cover [0, 2^31)";
    }
    if (per_input[i]) {
      asked_per_input += runs[i].last - runs[i].first + 1;
      continue;
    }
    expect[i] = want(runs[i].first);
    ASSERT_EQ(expect[i], want(runs[i].last))
        << "run " << std::hex << runs[i].first << ".." << runs[i].last << " is not constant";
  }
  ASSERT_EQ(runs.back().last, test::kMaxNanBits);
  const auto count_mismatches =
      test::SweepLoop<CountMismatches<Traits, kRule>, std::uint32_t, std::uint32_t, unsigned>();
  test::SweepMismatches mismatches;
  const auto report = [&](std::uint32_t a, unsigned got, unsigned w) {
    char line[96];
    std::snprintf(line, sizeof line, "%s amax %08X: got %02X want %02X",
                  std::string(ScaleRuleName(kRule)).c_str(), a, got, w);
    mismatches.Report(line);
  };
  test::ParallelOverRuns(runs, [&](std::size_t run, std::uint32_t a, std::uint32_t b) {
    if (per_input[run]) {
      for (std::uint64_t u = a; u <= b; ++u) {
        const auto x = static_cast<std::uint32_t>(u);
        const unsigned got = ScaleCodeFromAmax<Traits>(x, kRule).bits;
        const unsigned w = want(x);
        if (got != w) {
          mismatches.Add(1);
          report(x, got, w);
        }
      }
      return;
    }
    const std::uint64_t bad = count_mismatches(a, b, expect[run]);
    mismatches.Add(bad);
    if (bad == 0) return;
    for (std::uint64_t u = a; u <= b; ++u) {
      const unsigned got = ScaleCodeFromAmax<Traits>(static_cast<std::uint32_t>(u), kRule).bits;
      if (got != expect[run]) report(static_cast<std::uint32_t>(u), got, expect[run]);
    }
  });
  std::printf("  %-9s 2^31 amax patterns, %zu runs (%llu inputs asked one by one), 2 threads: "
              "%.1f s (%.1f s CPU)\n",
              std::string(ScaleRuleName(kRule)).c_str(), runs.size(),
              static_cast<unsigned long long>(asked_per_input), timer.wall_seconds(),
              timer.cpu_seconds());
  EXPECT_EQ(mismatches.count(), 0u) << ScaleRuleName(kRule);
}

template <class Traits>
Params ParamsOf() {
  return {Traits::kEmax, Traits::kMantissaBits, Traits::kMaxNormal};
}

// One test per (format, rule), each a few seconds.
#define TRNMX_SWEEP_STD(Name, Traits, TosaT, TosaE4M3)                                    \
  TEST(ScaleRuleExhaustive, Name##OcpFloor) {                                             \
    const Params p = ParamsOf<Traits>();                                                  \
    Sweep<Traits, ScaleRule::kOcpFloor>([p](float x) { return RefOcpFloor(x, p); });      \
  }                                                                                       \
  TEST(ScaleRuleExhaustive, Name##Ceil) {                                                 \
    const Params p = ParamsOf<Traits>();                                                  \
    Sweep<Traits, ScaleRule::kCeil>([p](float x) { return RefCeil(x, p); });              \
  }                                                                                       \
  TEST(ScaleRuleExhaustive, Name##Even) {                                                 \
    const Params p = ParamsOf<Traits>();                                                  \
    Sweep<Traits, ScaleRule::kEven>([p](float x) { return RefEven(x, p); });              \
  }                                                                                       \
  TEST(ScaleRuleExhaustive, Name##Rceil) {                                                \
    const Params p = ParamsOf<Traits>();                                                  \
    Sweep<Traits, ScaleRule::kRceil>([p](float x) { return RefRceil(x, p); });            \
  }                                                                                       \
  TEST(ScaleRuleExhaustive, Name##Tosa) {                                                 \
    Sweep<Traits, ScaleRule::kTosa>([](float x) { return RefTosa(x, TosaT, TosaE4M3); }); \
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
  Sweep<Fp8E4M3Traits, ScaleRule::kNki>([](float x) { return RefNki(x, 7); });
}
TEST(ScaleRuleExhaustive, E5M2Nki) {
  Sweep<Fp8E5M2Traits, ScaleRule::kNki>([](float x) { return RefNki(x, 14); });
}
TEST(ScaleRuleExhaustive, E2M1Nki) {
  Sweep<Fp4E2M1Traits, ScaleRule::kNki>([](float x) { return RefNki(x, 2); });
}
TEST(ScaleRuleExhaustive, E2M1Ggml) {
  std::vector<bool> per_input;
  std::vector<test::BitRun> runs = GgmlRuns(&per_input);
  Sweep<Fp4E2M1Traits, ScaleRule::kGgml>([](float x) { return RefGgml(x); }, std::move(runs),
                                         std::move(per_input));
}
TEST(ScaleRuleExhaustive, MxInt8OcpFloor) {
  Sweep<MxInt8Traits, ScaleRule::kOcpFloor>([](float x) { return Clamp(FloorLog2(x) + 127); });
}

}  // namespace
}  // namespace trnmx
