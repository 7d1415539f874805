// Every FP32 input whose magnitude lies in [min_subnormal / 4, 4 MAX] --
// every binade where an element format's rounding is decided -- against
// MPFR (formats.md section 13): precision m + 1, emin = 2 - bias - m, then
// mpfr_subnormalize. Overflow is decided on the MPFR result (> MAX) and the
// code built from the double value by frexp arithmetic, so nothing here
// shares code with trnmx's codec or the table oracle (whose breakpoints only
// say where MPFR is asked; see MpfrRuns). Inputs outside the window round to
// zero/min-subnormal or overflow; the table-oracle sweep covers them. RNE on
// both signs, RZ on positive inputs. Label: exhaustive.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "formats/oracle.h"
#include "formats/sweep_runs.h"
#include "trnmx/formats/codec.h"

namespace trnmx::test {
namespace {

std::string Hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

// Code of a representable finite value v of `spec`, by exponent arithmetic.
std::uint32_t CodeOfValue(const FormatSpec& spec, double v) {
  const std::uint32_t sign = std::signbit(v) ? spec.sign_mask() : 0;
  const double a = std::fabs(v);
  if (a == 0) return sign;
  const int m = spec.mantissa_bits;
  const int emin = 1 - spec.bias;
  const int e = std::ilogb(a);
  if (e < emin) return sign | static_cast<std::uint32_t>(std::ldexp(a, m - emin));
  const auto significand = static_cast<std::uint32_t>(std::ldexp(a, m - e));  // in [2^m, 2^(m+1))
  return sign | (static_cast<std::uint32_t>(e + spec.bias) << m) | (significand - (1u << m));
}

class MpfrRounder {
 public:
  explicit MpfrRounder(const FormatSpec& spec) : saved_emin_(mpfr_get_emin()) {
    mpfr_init2(value_, spec.mantissa_bits + 1);
    mpfr_set_emin(2 - spec.bias - spec.mantissa_bits);
  }
  ~MpfrRounder() {
    mpfr_clear(value_);
    mpfr_set_emin(saved_emin_);
  }
  double Round(float x, mpfr_rnd_t rnd) {
    int t = mpfr_set_flt(value_, x, rnd);
    t = mpfr_check_range(value_, t, rnd);
    mpfr_subnormalize(value_, t, rnd);
    return mpfr_get_d(value_, MPFR_RNDN);  // exact: few significant bits
  }

 private:
  mpfr_exp_t saved_emin_;
  mpfr_t value_;
};

// MPFR's answer for every input of the window, computed once per run. The
// window is cut at the table oracle's decision breakpoints (its values and
// midpoints, MAX's successor; sweep_runs.h) and MPFR rounds both ends of each
// run. Correct rounding is monotone in |x|, so when MPFR gives the same value
// at both ends it gives that value for every input between them, and the
// codec is then checked on every input against it. Ends that disagree mean
// the breakpoints missed a rounding change: a failure, not a fallback. The
// breakpoints only choose where MPFR is asked; every expected code is MPFR's.
struct MpfrRun {
  std::uint32_t first, last;           // |x| patterns, clipped to the window
  std::uint32_t rne_pos, rne_neg, rz;  // expected codes (rz: positive inputs)
};

template <class Traits>
std::vector<MpfrRun> MpfrRuns(const FormatSpec& spec, std::uint32_t lo_bits, std::uint32_t hi_bits,
                              SweepMismatches& mismatches) {
  MpfrRounder mpfr(spec);  // MPFR's exponent range is global: runs are built on one thread.
  const double max = Traits::kMaxNormal;
  const std::uint32_t max_code = Traits::kMaxMagnitudeCode;
  const std::uint32_t neg = Traits::kSignMask;
  // The codes MPFR gives x under RNE (kSatFinite: > MAX saturates) and RZ.
  const auto rne_code = [&](float x) {
    const double r = mpfr.Round(x, MPFR_RNDN);
    return std::fabs(r) > max ? (std::signbit(r) ? neg : 0u) | max_code : CodeOfValue(spec, r);
  };
  const auto rz_code = [&](float x) {
    // Round toward zero never passes MAX's binade carry beyond MAX + ulp;
    // anything above MAX clamps to MAX (IEEE round-toward-zero overflow).
    const double r = mpfr.Round(x, MPFR_RNDZ);
    return std::fabs(r) > max ? max_code : CodeOfValue(spec, r);
  };
  std::vector<MpfrRun> out;
  for (const BitRun& run : SplitAtBreakpoints(DecisionBreakpoints(TableOracle(spec)))) {
    if (run.last < lo_bits || run.first > hi_bits) continue;
    const std::uint32_t first = std::max(run.first, lo_bits), last = std::min(run.last, hi_bits);
    const float a = std::bit_cast<float>(first), b = std::bit_cast<float>(last);
    const MpfrRun r{first, last, rne_code(a), rne_code(-a), rz_code(a)};
    if (rne_code(b) != r.rne_pos || rne_code(-b) != r.rne_neg || rz_code(b) != r.rz) {
      mismatches.Add(1);
      mismatches.Report(std::string(spec.name) + ": MPFR's rounding changes inside the run [0x" +
                        Hex(first) + ", 0x" + Hex(last) + "]; the breakpoints miss a decision");
      continue;
    }
    out.push_back(r);
  }
  return out;
}

constexpr EncodeOptions kRne{.overflow = Overflow::kSatFinite};
constexpr EncodeOptions kRz{.rounding = Rounding::kTowardZero};

// Mismatches of the codec on the magnitudes [first, last] of one run against
// MPFR's codes: RNE on both signs, RZ on positive inputs. A SweepLoop
// (sweep_runs.h): the options are constants, so the loop vectorises.
template <class Traits>
struct CountMismatches {
  std::uint64_t operator()(std::uint32_t first, std::uint32_t last, std::uint32_t rne_pos,
                           std::uint32_t rne_neg, std::uint32_t rz) const {
    std::uint64_t bad = 0;
    for (std::uint64_t u = first; u <= last; ++u) {
      const auto bits = static_cast<std::uint32_t>(u);
      const std::uint32_t pos = EncodeWithFlags<Traits>(std::bit_cast<float>(bits), kRne).code;
      const std::uint32_t neg =
          EncodeWithFlags<Traits>(std::bit_cast<float>(bits | 0x80000000u), kRne).code;
      const std::uint32_t down = EncodeWithFlags<Traits>(std::bit_cast<float>(bits), kRz).code;
      bad += ((pos ^ rne_pos) | (neg ^ rne_neg) | (down ^ rz)) != 0;
    }
    return bad;
  }
};

template <class Traits>
void SweepWindow(const FormatSpec& spec) {
  const SweepTimer timer;
  const std::uint32_t lo_bits =
      std::bit_cast<std::uint32_t>(static_cast<float>(Traits::kMinSubnormal / 4));
  const std::uint32_t hi_bits =
      std::bit_cast<std::uint32_t>(static_cast<float>(4 * Traits::kMaxNormal));
  SweepMismatches mismatches;
  const std::vector<MpfrRun> runs = MpfrRuns<Traits>(spec, lo_bits, hi_bits, mismatches);
  std::vector<BitRun> bit_runs;
  for (const MpfrRun& r : runs) bit_runs.push_back({r.first, r.last});
  std::atomic<std::uint64_t> checks{0};
  const auto report = [&](std::uint32_t bits, const EncodeOptions& o, std::uint32_t want) {
    const std::uint32_t got = EncodeWithFlags<Traits>(std::bit_cast<float>(bits), o).code;
    if (got != want) {
      mismatches.Report(std::string(spec.name) + " x=0x" + Hex(bits) + " rounding " +
                        std::to_string(static_cast<int>(o.rounding)) + ": got 0x" + Hex(got) +
                        " MPFR 0x" + Hex(want));
    }
  };
  static const auto count = SweepLoop<CountMismatches<Traits>, std::uint32_t, std::uint32_t,
                                      std::uint32_t, std::uint32_t, std::uint32_t>();
  ParallelOverRuns(bit_runs, [&](std::size_t i, std::uint32_t first, std::uint32_t last) {
    const MpfrRun& run = runs[i];
    const std::uint64_t bad = count(first, last, run.rne_pos, run.rne_neg, run.rz);
    mismatches.Add(bad);
    for (std::uint64_t abs_bits = first; bad != 0 && abs_bits <= last; ++abs_bits) {
      const auto bits = static_cast<std::uint32_t>(abs_bits);
      report(bits, kRne, run.rne_pos);
      report(bits | 0x80000000u, kRne, run.rne_neg);
      report(bits, kRz, run.rz);
    }
    checks += 3 * (std::uint64_t{last} - first + 1);
  });
  std::printf(
      "%s: MPFR %s at both ends of %zu runs, %llu codec checks on |x| in [0x%08x, 0x%08x], "
      "%llu mismatches, %.1f s wall, %.1f s CPU\n",
      spec.name, mpfr_get_version(), runs.size(), static_cast<unsigned long long>(checks.load()),
      lo_bits, hi_bits, static_cast<unsigned long long>(mismatches.count()), timer.wall_seconds(),
      timer.cpu_seconds());
  EXPECT_EQ(mismatches.count(), 0u);
}

TEST(MpfrSweep, Fp8E4M3) { SweepWindow<Fp8E4M3Traits>(kSpecE4M3); }
TEST(MpfrSweep, Fp8E5M2) { SweepWindow<Fp8E5M2Traits>(kSpecE5M2); }
TEST(MpfrSweep, Fp6E2M3) { SweepWindow<Fp6E2M3Traits>(kSpecE2M3); }
TEST(MpfrSweep, Fp6E3M2) { SweepWindow<Fp6E3M2Traits>(kSpecE3M2); }
TEST(MpfrSweep, Fp4E2M1) { SweepWindow<Fp4E2M1Traits>(kSpecE2M1); }
TEST(MpfrSweep, Fp16) { SweepWindow<Fp16Traits>(kSpecFp16); }

}  // namespace
}  // namespace trnmx::test
