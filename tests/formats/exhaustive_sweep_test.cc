// Every FP32 bit pattern (2^32) through every element codec, under every
// rounding (but stochastic) and overflow policy, against the independent
// table oracle of oracle.h. Every input is checked under each rounding with
// the format's default overflow policy; the other overflow policies, which
// can only differ where the rounded value may pass MAX, are checked on every
// input in [MAX, 4 MAX) and on +-Inf (beyond 4 MAX every rounding overflows
// the same way, and the default policy is checked there on every input). NaN inputs are checked under every NaN policy,
// FP32 subnormals also under Subnormals::kFlush. ctest label: exhaustive.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "formats/oracle.h"
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

struct MismatchLog {
  std::uint64_t count = 0;
  void Report(const char* format, std::uint32_t bits, const EncodeOptions& o, std::uint32_t got,
              std::uint32_t want) {
    if (++count <= 10) {
      ADD_FAILURE() << format << ": x=0x" << std::hex << bits << " rounding=" << std::dec
                    << static_cast<int>(o.rounding) << " overflow=" << static_cast<int>(o.overflow)
                    << " nan=" << static_cast<int>(o.nan)
                    << " subnormals=" << static_cast<int>(o.subnormals) << " got 0x" << std::hex
                    << got << " want 0x" << want;
    }
  }
};

template <class Traits>
void SweepAllInputs(const FormatSpec& spec) {
  const auto start = std::chrono::steady_clock::now();
  const TableOracle oracle(spec);
  MismatchLog log;
  std::uint64_t checks = 0;
  const auto check = [&](std::uint32_t bits, const EncodeOptions& o, const Bracket* b) {
    const EncodeResult r = EncodeWithFlags<Traits>(std::bit_cast<float>(bits), o);
    // Fast path for in-range finite values: sign | rounded magnitude.
    std::uint32_t want;
    const std::uint32_t mag = b != nullptr ? TableOracle::Round(*b, o.rounding) : TableOracle::kOverflowCode;
    if (mag != TableOracle::kOverflowCode && o.subnormals == Subnormals::kKeep) {
      want = ((bits >> 31) ? Traits::kSignMask : 0) | mag;
    } else {
      want = ExpectedCode(oracle, bits, o, b);
    }
    ++checks;
    if (r.code != want) log.Report(spec.name, bits, o, r.code, want);
    return r;
  };
  std::size_t hint = 0;
  for (std::uint32_t abs_bits = 0;; ++abs_bits) {
    const bool is_nan = abs_bits > 0x7F800000u;
    const bool is_inf = abs_bits == 0x7F800000u;
    if (is_nan) {
      for (std::uint32_t sign : {0u, 0x80000000u}) {
        for (NanPolicy p : kNanPolicies) check(abs_bits | sign, {.nan = p}, nullptr);
      }
    } else {
      Bracket bracket{};
      if (!is_inf) bracket = oracle.Locate(static_cast<double>(std::bit_cast<float>(abs_bits)), &hint);
      // Overflow policies act only where the rounded magnitude can pass MAX;
      // all of them are checked on [MAX, 4 MAX) and Inf.
      const bool near_max =
          is_inf || (bracket.lo_code == oracle.max_code() &&
                     static_cast<double>(std::bit_cast<float>(abs_bits)) < 4 * oracle.max());
      for (std::uint32_t sign : {0u, 0x80000000u}) {
        const std::uint32_t bits = abs_bits | sign;
        for (Rounding r : kRoundings) {
          for (Overflow ov : kOverflows) {
            if (!near_max && ov != Overflow::kFormatDefault) continue;
            const EncodeResult got = check(bits, {.rounding = r, .overflow = ov}, is_inf ? nullptr : &bracket);
            if (is_inf || r != Rounding::kNearestEven || ov != Overflow::kFormatDefault) continue;
            // Flags of finite inputs: inexact iff not representable; overflow
            // iff the rounded value passed MAX.
            const bool inexact = bracket.position != 0;
            const bool overflow = TableOracle::Round(bracket, r) == TableOracle::kOverflowCode;
            if (((got.flags & kFlagInexact) != 0) != inexact ||
                ((got.flags & kFlagOverflow) != 0) != overflow) {
              if (++log.count <= 10) {
                ADD_FAILURE() << spec.name << ": flags 0x" << std::hex << int{got.flags}
                              << " for x=0x" << bits;
              }
            }
          }
        }
        if (abs_bits < 0x00800000u) check(bits, {.subnormals = Subnormals::kFlush}, nullptr);
      }
    }
    if (abs_bits == 0x7FFFFFFFu) break;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: %llu checks over all 2^32 inputs, %llu mismatches, %.1f s\n", spec.name,
              static_cast<unsigned long long>(checks), static_cast<unsigned long long>(log.count),
              seconds);
  EXPECT_EQ(log.count, 0u);
}

TEST(ExhaustiveSweep, Fp8E4M3) { SweepAllInputs<Fp8E4M3Traits>(kSpecE4M3); }
TEST(ExhaustiveSweep, Fp8E5M2) { SweepAllInputs<Fp8E5M2Traits>(kSpecE5M2); }
TEST(ExhaustiveSweep, Fp6E2M3) { SweepAllInputs<Fp6E2M3Traits>(kSpecE2M3); }
TEST(ExhaustiveSweep, Fp6E3M2) { SweepAllInputs<Fp6E3M2Traits>(kSpecE3M2); }
TEST(ExhaustiveSweep, Fp4E2M1) { SweepAllInputs<Fp4E2M1Traits>(kSpecE2M1); }
TEST(ExhaustiveSweep, Fp16) { SweepAllInputs<Fp16Traits>(kSpecFp16); }
TEST(ExhaustiveSweep, Bf16) { SweepAllInputs<Bf16Traits>(kSpecBf16); }

// MXINT8 elements against exact double arithmetic: x * 64 is exact in
// double; RNE is (v + 1.5 * 2^52) - 1.5 * 2^52 for |v| < 2^51, ties away is
// floor(|v| + 0.5) (exact: |v| < 2^14 has few bits), toward zero truncates.
// Inputs with |x| >= 2^12 only clamp; they are checked under every rounding
// too, the arithmetic just saturates earlier.
TEST(ExhaustiveSweep, MxInt8) {
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t mismatches = 0;
  for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); ++b) {
    const auto bits = static_cast<std::uint32_t>(b);
    const float x = std::bit_cast<float>(bits);
    const bool nan = x != x;
    const double v = nan ? 0.0 : std::clamp(static_cast<double>(x), -4096.0, 4096.0) * 64.0;
    const double magnitude = v < 0 ? -v : v;
    const double sign = v < 0 ? -1.0 : 1.0;
    for (Rounding r : kRoundings) {
      double rounded;
      if (r == Rounding::kNearestEven) {
        volatile double t = v + 0x1.8p52;  // volatile: keep the rounding add
        rounded = t - 0x1.8p52;
      } else if (r == Rounding::kTiesAway) {
        rounded = sign * static_cast<double>(static_cast<std::int64_t>(magnitude + 0.5));
      } else {
        rounded = sign * static_cast<double>(static_cast<std::int64_t>(magnitude));
      }
      for (Int8Range range : {Int8Range::kSymmetric, Int8Range::kAllowMinus128}) {
        const double lo = range == Int8Range::kAllowMinus128 ? -128.0 : -127.0;
        const auto want = static_cast<std::uint32_t>(
                              static_cast<std::int32_t>(std::clamp(rounded, lo, 127.0))) & 0xFFu;
        const std::uint32_t got = EncodeMxInt8(x, {.rounding = r, .int8_range = range}).bits;
        if (got != want && ++mismatches <= 10) {
          ADD_FAILURE() << "x=0x" << std::hex << bits << " rounding " << static_cast<int>(r)
                        << " got 0x" << got << " want 0x" << want;
        }
      }
    }
  }
  std::printf("int8: all 2^32 inputs x 3 roundings x 2 ranges, %llu mismatches, %.1f s\n",
              static_cast<unsigned long long>(mismatches),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  EXPECT_EQ(mismatches, 0u);
}

// float -> E8M0 against comparisons with exact powers of two. Positive FP32
// patterns increase with value, so a cursor holds the binade [2^k, 2^(k+1))
// of the current input: floor(log2 x) = k, up iff x > 2^k, nearest-ties-up
// iff x >= 1.5 * 2^k. Below 2^-126 the codes are 00 (2^-127) and 01 (2^-126).
TEST(ExhaustiveSweep, ScaleE8M0) {
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t mismatches = 0;
  int k = -150;  // 2^-150 is below the smallest positive FP32.
  double p = std::ldexp(1.0, k);
  for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); ++b) {
    const auto bits = static_cast<std::uint32_t>(b);
    const float x = std::bit_cast<float>(bits);
    const double a = x;
    if (bits == 0x80000000u) {  // Restart the cursor for the negative half.
      k = -150;
      p = std::ldexp(1.0, k);
    }
    if (a > 0 && a < INFINITY) {
      while (a >= 2 * p) {
        ++k;
        p *= 2;
      }
    }
    for (E8M0Rounding r : {E8M0Rounding::kDown, E8M0Rounding::kUp, E8M0Rounding::kNearestTiesUp}) {
      for (E8M0Saturation sat : {E8M0Saturation::kSaturate, E8M0Saturation::kNaN}) {
        const std::uint32_t overflow = sat == E8M0Saturation::kSaturate ? 0xFE : 0xFF;
        std::uint32_t want;
        if (!(a >= 0)) {
          want = 0xFF;  // NaN or negative
        } else if (a == 0) {
          want = 0x00;
        } else if (a == INFINITY) {
          want = overflow;
        } else if (a < 0x1p-126) {
          want = (r != E8M0Rounding::kDown && a > 0x1p-127) ? 0x01 : 0x00;
        } else {
          int e = k;
          if (r == E8M0Rounding::kUp && a > p) ++e;
          if (r == E8M0Rounding::kNearestTiesUp && a >= 1.5 * p) ++e;
          want = e + 127 > 0xFE ? overflow : static_cast<std::uint32_t>(e + 127);
        }
        const std::uint32_t got = ToE8M0(x, r, sat).code;
        if (got != want && ++mismatches <= 10) {
          ADD_FAILURE() << "x=0x" << std::hex << bits << " rounding " << static_cast<int>(r)
                        << " got 0x" << got << " want 0x" << want;
        }
      }
    }
  }
  std::printf("e8m0: all 2^32 inputs x 3 roundings x 2 saturations, %llu mismatches, %.1f s\n",
              static_cast<unsigned long long>(mismatches),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  EXPECT_EQ(mismatches, 0u);
}

}  // namespace
}  // namespace trnmx::test
