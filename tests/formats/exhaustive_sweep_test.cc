// Every FP32 bit pattern (2^32) through every element codec, under every
// rounding (but stochastic) and overflow policy, against the independent
// table oracle of oracle.h. Every input is checked under each rounding with
// the format's default overflow policy; the other overflow policies, which
// can only differ where the rounded value may pass MAX, are checked on every
// input in [MAX, 4 MAX) and on +-Inf (beyond 4 MAX every rounding overflows
// the same way, and the default policy is checked there on every input). NaN inputs are checked
// under every NaN policy, FP32 subnormals also under Subnormals::kFlush. ctest label: exhaustive.
//
// The oracle is asked once per run of inputs, not once per input (see
// sweep_runs.h): between two consecutive breakpoints -- the format's values,
// the midpoints of neighbouring values, MAX's midpoint with its unbounded
// successor, that successor and 4 MAX -- the oracle's bracket (neighbours and
// side of the midpoint) and the overflow-policy window cannot change, so
// neither can the expected code or flags. Each run's answer is taken at its
// first input and must be the same at its last. NaN codes carry the payload
// and are computed per input. The codec itself runs on every input.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <utility>

#include "formats/oracle.h"
#include "formats/sweep_runs.h"
#include "trnmx/formats/codec.h"
#include "trnmx/formats/e8m0.h"
#include "trnmx/formats/int8.h"

namespace trnmx::test {
namespace {

constexpr Overflow kOverflows[] = {Overflow::kFormatDefault, Overflow::kSatFinite,
                                   Overflow::kNonSat, Overflow::kMlDtypesSat};
constexpr Rounding kRoundings[] = {Rounding::kNearestEven, Rounding::kTiesAway,
                                   Rounding::kTowardZero};
constexpr NanPolicy kNanPolicies[] = {NanPolicy::kFormatDefault, NanPolicy::kQuietPayload,
                                      NanPolicy::kCanonical, NanPolicy::kZero,
                                      NanPolicy::kMlDtypesNaN};
constexpr std::uint32_t kSigns[] = {0u, 0x80000000u};

// The (rounding, overflow) modes of finite inputs, rounding-major, then
// Subnormals::kFlush under the defaults.
constexpr std::size_t kFlushMode = 12;
constexpr std::array<EncodeOptions, 13> kModes = [] {
  std::array<EncodeOptions, 13> modes{};
  for (std::size_t r = 0; r < 3; ++r) {
    for (std::size_t o = 0; o < 4; ++o)
      modes[r * 4 + o] = {.rounding = kRoundings[r], .overflow = kOverflows[o]};
  }
  modes[kFlushMode] = {.subnormals = Subnormals::kFlush};
  return modes;
}();

// The flags checked on finite inputs: inexact iff not representable,
// overflow iff the rounded value passed MAX (under RNE, default overflow).
constexpr std::uint8_t kCheckedFlags = kFlagInexact | kFlagOverflow;

std::string Describe(const char* format, std::uint32_t bits, const EncodeOptions& o,
                     const EncodeResult& got, std::uint32_t want, int want_flags) {
  std::ostringstream s;
  s << format << ": x=0x" << std::hex << bits << std::dec
    << " rounding=" << static_cast<int>(o.rounding) << " overflow=" << static_cast<int>(o.overflow)
    << " nan=" << static_cast<int>(o.nan) << " subnormals=" << static_cast<int>(o.subnormals)
    << std::hex << " got 0x" << got.code << " want 0x" << want;
  if (want_flags >= 0)
    s << " flags 0x" << int{got.flags} << " want 0x" << want_flags << " of 0x"
      << int{kCheckedFlags};
  return s.str();
}

// Mismatches of the codec under kModes[kMode] on magnitudes [a, b] with
// `sign` against one expected code (and, if want_flags >= 0, the checked
// flags). The options are a template argument so that the codec is compiled
// for them: this loop is the sweep's cost (SweepLoop in sweep_runs.h).
template <class Traits, std::size_t kMode>
struct CountMismatches {
  std::uint64_t operator()(std::uint32_t a, std::uint32_t b, std::uint32_t sign, std::uint32_t want,
                           int want_flags) const {
    constexpr EncodeOptions kOptions = kModes[kMode];
    // One 32-bit comparison per input (comparisons of mixed widths keep GCC
    // from vectorising): flags outside `mask` must be 0 in `flags`.
    const std::uint32_t mask = want_flags >= 0 ? kCheckedFlags : 0u;
    const std::uint32_t flags = want_flags >= 0 ? static_cast<std::uint32_t>(want_flags) : 0u;
    std::uint64_t bad = 0;
    for (std::uint64_t u = a; u <= b; ++u) {
      const EncodeResult r = EncodeWithFlags<Traits>(
          std::bit_cast<float>(static_cast<std::uint32_t>(u) | sign), kOptions);
      bad += ((r.code ^ want) | ((r.flags & mask) ^ flags)) != 0;
    }
    return bad;
  }
};

template <class Traits, std::size_t... kMode>
auto MismatchCounters(std::index_sequence<kMode...>) {
  return std::array{SweepLoop<CountMismatches<Traits, kMode>, std::uint32_t, std::uint32_t,
                              std::uint32_t, std::uint32_t, int>()...};
}

// What the oracle says for one run of finite magnitudes (or +Inf).
struct RunExpectation {
  std::uint32_t code[2][kModes.size()];  // [sign][mode]
  int flags = -1;                        // Checked flags under mode 0; -1: not checked.
  bool near_max = false;                 // All overflow policies apply.
};

bool SameBracket(const Bracket& x, const Bracket& y) {
  return x.lo_code == y.lo_code && x.hi_code == y.hi_code && x.position == y.position &&
         x.hi_is_even == y.hi_is_even;
}

template <class Traits>
void SweepAllInputs(const FormatSpec& spec) {
  const SweepTimer timer;
  const TableOracle oracle(spec);
  const std::vector<BitRun> runs = SplitAtBreakpoints(DecisionBreakpoints(oracle));

  // The oracle's answer per run, taken at its first input, checked at its last.
  std::vector<RunExpectation> expect(runs.size());
  const auto near_max = [&](std::uint32_t abs_bits, const Bracket& b) {
    return b.lo_code == oracle.max_code() &&
           static_cast<double>(std::bit_cast<float>(abs_bits)) < 4 * oracle.max();
  };
  for (std::size_t i = 0; i + 1 < runs.size(); ++i) {  // The last run is NaN.
    const BitRun& run = runs[i];
    RunExpectation& e = expect[i];
    const bool is_inf = run.first == kPosInfBits;
    Bracket bracket{};
    if (!is_inf) {
      const auto magnitude = [](std::uint32_t u) {
        return static_cast<double>(std::bit_cast<float>(u));
      };
      bracket = oracle.Locate(magnitude(run.first));
      const Bracket at_last = oracle.Locate(magnitude(run.last));
      ASSERT_TRUE(SameBracket(bracket, at_last) &&
                  near_max(run.first, bracket) == near_max(run.last, at_last))
          << spec.name << ": decision table run 0x" << std::hex << run.first << "..0x" << run.last
          << " is not constant";
      e.near_max = near_max(run.first, bracket);
      e.flags = (bracket.position != 0 ? kFlagInexact : 0) |
                (TableOracle::Round(bracket, Rounding::kNearestEven) == TableOracle::kOverflowCode
                     ? kFlagOverflow
                     : 0);
    } else {
      e.near_max = true;
    }
    for (int s = 0; s < 2; ++s) {
      for (std::size_t m = 0; m < kFlushMode; ++m) {
        e.code[s][m] =
            ExpectedCode(oracle, run.first | kSigns[s], kModes[m], is_inf ? nullptr : &bracket);
      }
      // Flushing sends every FP32 subnormal to the code of zero: one answer.
      e.code[s][kFlushMode] = ExpectedCode(oracle, 1u | kSigns[s], kModes[kFlushMode]);
    }
  }

  static const auto kCounters = MismatchCounters<Traits>(std::make_index_sequence<kModes.size()>());
  SweepMismatches mismatches;
  std::atomic<std::uint64_t> checks{0};
  const auto check_piece = [&](std::size_t run, std::uint32_t a, std::uint32_t b) {
    std::uint64_t done = 0;
    const std::uint64_t width = std::uint64_t{b} - a + 1;
    const auto report_all = [&](std::uint32_t lo, std::uint32_t hi, std::uint32_t sign,
                                std::size_t m, std::uint32_t want, int want_flags) {
      for (std::uint64_t u = lo; u <= hi; ++u) {
        const std::uint32_t bits = static_cast<std::uint32_t>(u) | sign;
        const EncodeResult r = EncodeWithFlags<Traits>(std::bit_cast<float>(bits), kModes[m]);
        if (r.code != want || (want_flags >= 0 && (r.flags & kCheckedFlags) != want_flags)) {
          mismatches.Report(Describe(spec.name, bits, kModes[m], r, want, want_flags));
        }
      }
    };
    if (run + 1 == runs.size()) {  // NaN: the code carries the payload.
      for (const std::uint32_t sign : kSigns) {
        for (const NanPolicy p : kNanPolicies) {
          const EncodeOptions o{.nan = p};
          std::uint64_t bad = 0;
          for (std::uint64_t u = a; u <= b; ++u) {
            const std::uint32_t bits = static_cast<std::uint32_t>(u) | sign;
            const EncodeResult r = EncodeWithFlags<Traits>(std::bit_cast<float>(bits), o);
            const std::uint32_t want = ExpectedCode(oracle, bits, o);
            if (r.code != want) {
              ++bad;
              mismatches.Report(Describe(spec.name, bits, o, r, want, -1));
            }
          }
          mismatches.Add(bad);
          done += width;
        }
      }
      checks += done;
      return;
    }
    const RunExpectation& e = expect[run];
    for (int s = 0; s < 2; ++s) {
      for (std::size_t r = 0; r < 3; ++r) {
        for (std::size_t o = 0; o < 4; ++o) {
          if (!e.near_max && o != 0) continue;
          const std::size_t m = r * 4 + o;
          const int want_flags = m == 0 ? e.flags : -1;
          const std::uint64_t bad = kCounters[m](a, b, kSigns[s], e.code[s][m], want_flags);
          if (bad != 0) report_all(a, b, kSigns[s], m, e.code[s][m], want_flags);
          mismatches.Add(bad);
          done += width;
        }
      }
      if (a < 0x00800000u) {  // FP32 subnormals (and zero) under kFlush.
        const std::uint32_t hi = std::min(b, 0x007FFFFFu);
        const std::uint64_t bad =
            kCounters[kFlushMode](a, hi, kSigns[s], e.code[s][kFlushMode], -1);
        if (bad != 0) report_all(a, hi, kSigns[s], kFlushMode, e.code[s][kFlushMode], -1);
        mismatches.Add(bad);
        done += std::uint64_t{hi} - a + 1;
      }
    }
    checks += done;
  };
  ParallelOverRuns(runs, check_piece);
  std::printf(
      "%s: %zu runs in the decision table, %llu checks over all 2^32 inputs, %llu mismatches, "
      "%.1f s (2 threads, %.1f s CPU)\n",
      spec.name, runs.size(), static_cast<unsigned long long>(checks.load()),
      static_cast<unsigned long long>(mismatches.count()), timer.wall_seconds(),
      timer.cpu_seconds());
  EXPECT_EQ(mismatches.count(), 0u);
}

TEST(ExhaustiveSweep, Fp8E4M3) { SweepAllInputs<Fp8E4M3Traits>(kSpecE4M3); }
TEST(ExhaustiveSweep, Fp8E4M3Ieee) { SweepAllInputs<Fp8E4M3IeeeTraits>(kSpecE4M3Ieee); }
TEST(ExhaustiveSweep, Fp8E5M2) { SweepAllInputs<Fp8E5M2Traits>(kSpecE5M2); }
TEST(ExhaustiveSweep, Fp6E2M3) { SweepAllInputs<Fp6E2M3Traits>(kSpecE2M3); }
TEST(ExhaustiveSweep, Fp6E3M2) { SweepAllInputs<Fp6E3M2Traits>(kSpecE3M2); }
TEST(ExhaustiveSweep, Fp4E2M1) { SweepAllInputs<Fp4E2M1Traits>(kSpecE2M1); }
TEST(ExhaustiveSweep, Fp16) { SweepAllInputs<Fp16Traits>(kSpecFp16); }
TEST(ExhaustiveSweep, Bf16) { SweepAllInputs<Bf16Traits>(kSpecBf16); }

// Sweeps a codec over all 2^32 inputs in every mode against a reference that
// is constant, per sign and mode, on each of `runs`: the reference `want`
// (bits, mode) is asked at both ends of each run, the codec -- counted by
// counters[mode](a, b, sign, want), called once per input by `got`(bits,
// mode) for the report -- on every input. Returns the mismatches.
template <class Want, class Counters, class Got>
std::uint64_t SweepConstantRuns(const char* name, const std::vector<BitRun>& runs, const Want& want,
                                const Counters& counters, const Got& got) {
  const SweepTimer timer;
  constexpr std::size_t kNumModes = std::tuple_size_v<Counters>;
  std::vector<std::array<std::array<std::uint32_t, kNumModes>, 2>> expect(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (int s = 0; s < 2; ++s) {
      for (std::size_t m = 0; m < kNumModes; ++m) {
        expect[i][s][m] = want(runs[i].first | kSigns[s], m);
        EXPECT_EQ(expect[i][s][m], want(runs[i].last | kSigns[s], m))
            << name << ": decision table run 0x" << std::hex << runs[i].first << "..0x"
            << runs[i].last << " is not constant, sign " << s << " mode " << m;
      }
    }
  }
  SweepMismatches mismatches;
  ParallelOverRuns(runs, [&](std::size_t run, std::uint32_t a, std::uint32_t b) {
    for (int s = 0; s < 2; ++s) {
      for (std::size_t m = 0; m < kNumModes; ++m) {
        const std::uint32_t w = expect[run][s][m];
        const std::uint64_t bad = counters[m](a, b, kSigns[s], w);
        mismatches.Add(bad);
        if (bad == 0) continue;
        for (std::uint64_t u = a; u <= b; ++u) {
          const std::uint32_t bits = static_cast<std::uint32_t>(u) | kSigns[s];
          const std::uint32_t g = got(bits, m);
          if (g != w) {
            std::ostringstream msg;
            msg << name << ": x=0x" << std::hex << bits << std::dec << " mode " << m << std::hex
                << " got 0x" << g << " want 0x" << w;
            mismatches.Report(msg.str());
          }
        }
      }
    }
  });
  std::printf(
      "%s: all 2^32 inputs x %zu modes, %zu runs in the decision table, %llu mismatches, "
      "%.1f s (2 threads, %.1f s CPU)\n",
      name, kNumModes, runs.size(), static_cast<unsigned long long>(mismatches.count()),
      timer.wall_seconds(), timer.cpu_seconds());
  return mismatches.count();
}

// MXINT8 elements against exact double arithmetic: x * 64 is exact in
// double; RNE is (v + 1.5 * 2^52) - 1.5 * 2^52 for |v| < 2^51, ties away is
// floor(|v| + 0.5) (exact: |v| < 2^14 has few bits), toward zero truncates.
// Inputs with |x| >= 2^12 only clamp; they are checked under every rounding
// too, the arithmetic just saturates earlier. The answer changes only where
// x * 64 is an integer or half an integer, and not beyond |x * 64| = 129.
constexpr EncodeOptions kInt8Modes[] = {
    {.rounding = Rounding::kNearestEven, .int8_range = Int8Range::kSymmetric},
    {.rounding = Rounding::kNearestEven, .int8_range = Int8Range::kAllowMinus128},
    {.rounding = Rounding::kTiesAway, .int8_range = Int8Range::kSymmetric},
    {.rounding = Rounding::kTiesAway, .int8_range = Int8Range::kAllowMinus128},
    {.rounding = Rounding::kTowardZero, .int8_range = Int8Range::kSymmetric},
    {.rounding = Rounding::kTowardZero, .int8_range = Int8Range::kAllowMinus128},
};

std::uint32_t Int8Reference(std::uint32_t bits, Rounding r, Int8Range range) {
  const float x = std::bit_cast<float>(bits);
  const bool nan = x != x;
  const double v = nan ? 0.0 : std::clamp(static_cast<double>(x), -4096.0, 4096.0) * 64.0;
  const double magnitude = v < 0 ? -v : v;
  const double sign = v < 0 ? -1.0 : 1.0;
  double rounded;
  if (r == Rounding::kNearestEven) {
    volatile double t = v + 0x1.8p52;  // volatile: keep the rounding add
    rounded = t - 0x1.8p52;
  } else if (r == Rounding::kTiesAway) {
    rounded = sign * static_cast<double>(static_cast<std::int64_t>(magnitude + 0.5));
  } else {
    rounded = sign * static_cast<double>(static_cast<std::int64_t>(magnitude));
  }
  const double lo = range == Int8Range::kAllowMinus128 ? -128.0 : -127.0;
  return static_cast<std::uint32_t>(static_cast<std::int32_t>(std::clamp(rounded, lo, 127.0))) &
         0xFFu;
}

template <std::size_t kMode>
struct CountInt8Mismatches {
  std::uint64_t operator()(std::uint32_t a, std::uint32_t b, std::uint32_t sign,
                           std::uint32_t want) const {
    constexpr EncodeOptions kOptions = kInt8Modes[kMode];
    std::uint64_t bad = 0;
    for (std::uint64_t u = a; u <= b; ++u) {
      bad +=
          EncodeMxInt8(std::bit_cast<float>(static_cast<std::uint32_t>(u) | sign), kOptions).bits !=
          want;
    }
    return bad;
  }
};

template <std::size_t... kMode>
auto Int8Counters(std::index_sequence<kMode...>) {
  return std::array{SweepLoop<CountInt8Mismatches<kMode>, std::uint32_t, std::uint32_t,
                              std::uint32_t, std::uint32_t>()...};
}

TEST(ExhaustiveSweep, MxInt8) {
  std::vector<double> points;
  for (int k = 0; k <= 2 * 130; ++k) points.push_back(k / 128.0);
  const std::uint64_t mismatches = SweepConstantRuns(
      "int8", SplitAtBreakpoints(points),
      [](std::uint32_t bits, std::size_t m) {
        return Int8Reference(bits, kInt8Modes[m].rounding, kInt8Modes[m].int8_range);
      },
      Int8Counters(std::make_index_sequence<std::size(kInt8Modes)>()),
      [](std::uint32_t bits, std::size_t m) {
        return std::uint32_t{EncodeMxInt8(std::bit_cast<float>(bits), kInt8Modes[m]).bits};
      });
  EXPECT_EQ(mismatches, 0u);
}

// float -> E8M0 against comparisons with exact powers of two: for x in
// [2^k, 2^(k+1)), floor(log2 x) = k (std::ilogb, exact), up iff x > 2^k,
// nearest-ties-up iff x >= 1.5 * 2^k. Below 2^-126 the codes are 00 (2^-127)
// and 01 (2^-126). The answer changes only at powers of two and at 1.5 times
// them.
struct E8M0Mode {
  E8M0Rounding rounding;
  E8M0Saturation saturation;
};
constexpr E8M0Mode kE8M0Modes[] = {
    {E8M0Rounding::kDown, E8M0Saturation::kSaturate},
    {E8M0Rounding::kDown, E8M0Saturation::kNaN},
    {E8M0Rounding::kUp, E8M0Saturation::kSaturate},
    {E8M0Rounding::kUp, E8M0Saturation::kNaN},
    {E8M0Rounding::kNearestTiesUp, E8M0Saturation::kSaturate},
    {E8M0Rounding::kNearestTiesUp, E8M0Saturation::kNaN},
};

std::uint32_t E8M0Reference(std::uint32_t bits, E8M0Rounding r, E8M0Saturation sat) {
  const double a = std::bit_cast<float>(bits);
  const std::uint32_t overflow = sat == E8M0Saturation::kSaturate ? 0xFE : 0xFF;
  if (!(a >= 0)) return 0xFF;  // NaN or negative
  if (a == 0) return 0x00;
  if (a == INFINITY) return overflow;
  if (a < 0x1p-126) return (r != E8M0Rounding::kDown && a > 0x1p-127) ? 0x01 : 0x00;
  const int k = std::ilogb(a);
  const double p = std::ldexp(1.0, k);
  int e = k;
  if (r == E8M0Rounding::kUp && a > p) ++e;
  if (r == E8M0Rounding::kNearestTiesUp && a >= 1.5 * p) ++e;
  return e + 127 > 0xFE ? overflow : static_cast<std::uint32_t>(e + 127);
}

template <std::size_t kMode>
struct CountE8M0Mismatches {
  std::uint64_t operator()(std::uint32_t a, std::uint32_t b, std::uint32_t sign,
                           std::uint32_t want) const {
    constexpr E8M0Mode kM = kE8M0Modes[kMode];
    std::uint64_t bad = 0;
    for (std::uint64_t u = a; u <= b; ++u) {
      bad += ToE8M0(std::bit_cast<float>(static_cast<std::uint32_t>(u) | sign), kM.rounding,
                    kM.saturation)
                 .code != want;
    }
    return bad;
  }
};

template <std::size_t... kMode>
auto E8M0Counters(std::index_sequence<kMode...>) {
  return std::array{SweepLoop<CountE8M0Mismatches<kMode>, std::uint32_t, std::uint32_t,
                              std::uint32_t, std::uint32_t>()...};
}

TEST(ExhaustiveSweep, ScaleE8M0) {
  std::vector<double> points;
  for (int k = -150; k <= 128; ++k) {
    points.push_back(std::ldexp(1.0, k));
    points.push_back(std::ldexp(1.5, k));
  }
  const std::uint64_t mismatches = SweepConstantRuns(
      "e8m0", SplitAtBreakpoints(points),
      [](std::uint32_t bits, std::size_t m) {
        return E8M0Reference(bits, kE8M0Modes[m].rounding, kE8M0Modes[m].saturation);
      },
      E8M0Counters(std::make_index_sequence<std::size(kE8M0Modes)>()),
      [](std::uint32_t bits, std::size_t m) {
        return ToE8M0(std::bit_cast<float>(bits), kE8M0Modes[m].rounding, kE8M0Modes[m].saturation)
            .code;
      });
  EXPECT_EQ(mismatches, 0u);
}

}  // namespace
}  // namespace trnmx::test
