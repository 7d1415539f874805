// Properties of the scalar codecs beyond the tables: stochastic rounding's
// rule and bias, status flags, subnormal inputs, the BF16 fast formulation.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <random>

#include "formats/oracle.h"
#include "trnmx/formats/codec.h"
#include "trnmx/formats/int8.h"

namespace trnmx::test {
namespace {

float F(std::uint32_t bits) { return std::bit_cast<float>(bits); }

constexpr std::uint64_t kSeed = 0x7e57'5eedULL;

// Stochastic rounding rounds |x| up iff frac32 + r >= 2^32 with frac32 the
// discarded fraction truncated to 32 bits (policy.h). Checked against the
// table oracle's neighbours for random inputs and random bits.
template <class Traits>
void ExpectStochasticRule(const FormatSpec& spec) {
  std::printf("%s stochastic rule: seed 0x%llx\n", spec.name, static_cast<unsigned long long>(kSeed));
  std::mt19937_64 rng(kSeed);
  const TableOracle oracle(spec);
  int checked = 0;
  for (int i = 0; i < 200000; ++i) {
    const std::uint32_t bits = static_cast<std::uint32_t>(rng());
    const float x = F(bits);
    if (!std::isfinite(x) || std::fabs(static_cast<double>(x)) >= oracle.max()) continue;
    const std::uint32_t r = static_cast<std::uint32_t>(rng());
    const Bracket b = oracle.Locate(std::fabs(static_cast<double>(x)));
    const std::uint32_t got = EncodeWithFlags<Traits>(x, {.rounding = Rounding::kStochastic}, r).code;
    const std::uint32_t sign = (bits >> 31) ? Traits::kSignMask : 0;
    if (b.position == 0) {
      ASSERT_EQ(got, sign | b.lo_code) << "exact value moved: 0x" << std::hex << bits;
      continue;
    }
    const double lo = std::fabs(SpecDecode(spec, b.lo_code));
    const double hi = std::fabs(SpecDecode(spec, b.hi_code));
    const double frac = (std::fabs(static_cast<double>(x)) - lo) / (hi - lo);  // exact: hi-lo = 2^k
    const std::uint64_t frac32 = static_cast<std::uint64_t>(std::floor(std::ldexp(frac, 32)));
    const bool up = frac32 + r >= (std::uint64_t{1} << 32);
    ASSERT_EQ(got, sign | (up ? b.hi_code : b.lo_code))
        << "x=0x" << std::hex << bits << " r=0x" << r << " frac32=0x" << frac32;
    ++checked;
  }
  EXPECT_GT(checked, 1000);
}

TEST(Stochastic, RuleE4M3) { ExpectStochasticRule<Fp8E4M3Traits>(kSpecE4M3); }
TEST(Stochastic, RuleE4M3Ieee) { ExpectStochasticRule<Fp8E4M3IeeeTraits>(kSpecE4M3Ieee); }
TEST(Stochastic, RuleE5M2) { ExpectStochasticRule<Fp8E5M2Traits>(kSpecE5M2); }
TEST(Stochastic, RuleE2M1) { ExpectStochasticRule<Fp4E2M1Traits>(kSpecE2M1); }
TEST(Stochastic, RuleE3M2) { ExpectStochasticRule<Fp6E3M2Traits>(kSpecE3M2); }
TEST(Stochastic, RuleBf16) { ExpectStochasticRule<Bf16Traits>(kSpecBf16); }
TEST(Stochastic, RuleFp16) { ExpectStochasticRule<Fp16Traits>(kSpecFp16); }

TEST(Stochastic, UnbiasedOnAverage) {
  std::printf("stochastic bias: seed 0x%llx\n", static_cast<unsigned long long>(kSeed));
  std::mt19937 rng(static_cast<std::uint32_t>(kSeed));
  for (float x : {1.2f, -2.6f, 0.3f, 5.1f, 0.1f}) {
    double sum = 0;
    constexpr int kN = 1 << 16;
    for (int i = 0; i < kN; ++i) {
      sum += Decode(Encode<Fp4E2M1>(x, {.rounding = Rounding::kStochastic}, rng()));
    }
    // Neighbours differ by at most 1 (x < 4), so the mean's standard error is < 0.002.
    EXPECT_NEAR(sum / kN, x, 0.01) << x;
  }
}

TEST(Stochastic, TinyInputsRoundUpWithTheirProbability) {
  // 2^-20 in E4M3 (min subnormal 2^-9): frac32 = 2^-11 * 2^32 = 2^21.
  const float x = 0x1p-20f;
  EXPECT_EQ(Encode<Fp8E4M3>(x, {.rounding = Rounding::kStochastic}, 0xFFFFFFFFu - (1u << 21)).bits, 0x00);
  EXPECT_EQ(Encode<Fp8E4M3>(x, {.rounding = Rounding::kStochastic}, 0xFFFFFFFFu - (1u << 21) + 1).bits, 0x01);
  // Far below 2^-32 of the quantum: frac32 == 0, never rounds up.
  EXPECT_EQ(Encode<Fp8E4M3>(0x1p-60f, {.rounding = Rounding::kStochastic}, 0xFFFFFFFFu).bits, 0x00);
}

TEST(Flags, ElementConversions) {
  EXPECT_EQ(EncodeWithFlags<Fp8E4M3Traits>(1.0f).flags, kFlagNone);
  EXPECT_EQ(EncodeWithFlags<Fp8E4M3Traits>(1.01f).flags, kFlagInexact);
  EXPECT_EQ(EncodeWithFlags<Fp8E4M3Traits>(1000.0f).flags, kFlagInexact | kFlagOverflow);
  EXPECT_EQ(EncodeWithFlags<Fp8E4M3Traits>(0x1p-10f).flags, kFlagInexact | kFlagUnderflow);
  // A tiny value that rounds exactly onto a subnormal is not an underflow.
  EXPECT_EQ(EncodeWithFlags<Fp8E4M3Traits>(0x1p-9f).flags, kFlagNone);
  EXPECT_EQ(EncodeWithFlags<Fp4E2M1Traits>(F(0x7FC00000)).flags, kFlagInvalid);
  EXPECT_EQ(EncodeWithFlags<Fp8E4M3Traits>(F(0x7FC00000)).flags, kFlagNone);
  EXPECT_EQ(EncodeWithFlags<Fp8E5M2Traits>(F(0x7F800000), {.overflow = Overflow::kNonSat}).flags, kFlagNone);
  EXPECT_EQ(EncodeWithFlags<Fp8E5M2Traits>(F(0x7F800000)).flags, kFlagOverflow | kFlagInexact);
  // E4M3 IEEE-style: Inf saturates by default (Trainium), is exact under kNonSat.
  EXPECT_EQ(EncodeWithFlags<Fp8E4M3IeeeTraits>(F(0x7F800000)).flags, kFlagOverflow | kFlagInexact);
  EXPECT_EQ(
      EncodeWithFlags<Fp8E4M3IeeeTraits>(F(0x7F800000), {.overflow = Overflow::kNonSat}).flags,
      kFlagNone);
  EXPECT_EQ(EncodeWithFlags<Fp8E4M3IeeeTraits>(256.0f).flags, kFlagInexact | kFlagOverflow);
  EXPECT_EQ(EncodeWithFlags<Fp8E4M3IeeeTraits>(240.0f).flags, kFlagNone);
}

TEST(Overflow, TowardZeroNeverOverflowsToNonFinite) {
  // IEEE: round-toward-zero overflow gives MAX even when non-saturating.
  EXPECT_EQ(Encode<Fp8E4M3>(1000.0f, {.rounding = Rounding::kTowardZero, .overflow = Overflow::kNonSat}).bits, 0x7E);
  EXPECT_EQ(Encode<Fp8E5M2>(1e6f, {.rounding = Rounding::kTowardZero, .overflow = Overflow::kNonSat}).bits, 0x7B);
  EXPECT_EQ(Encode<Fp8E4M3Ieee>(
                1000.0f, {.rounding = Rounding::kTowardZero, .overflow = Overflow::kNonSat})
                .bits,
            0x77);
  EXPECT_EQ(Encode<Bf16>(F(0x7F7FFFFF), {.rounding = Rounding::kTowardZero}).bits, 0x7F7F);
  // Inf inputs are exact under kNonSat whatever the rounding.
  EXPECT_EQ(Encode<Fp8E5M2>(F(0x7F800000), {.rounding = Rounding::kTowardZero, .overflow = Overflow::kNonSat}).bits, 0x7C);
}

TEST(Overflow, MlDtypesSatKeepsInf) {
  const EncodeOptions o{.overflow = Overflow::kMlDtypesSat};
  EXPECT_EQ(Encode<Fp8E5M2>(1e6f, o).bits, 0x7B);
  EXPECT_EQ(Encode<Fp8E5M2>(F(0xFF800000), o).bits, 0xFC);
  EXPECT_EQ(Encode<Fp8E4M3>(F(0x7F800000), o).bits, 0x7F);
  EXPECT_EQ(Encode<Fp8E4M3Ieee>(1000.0f, o).bits, 0x77);
  EXPECT_EQ(Encode<Fp8E4M3Ieee>(F(0xFF800000), o).bits, 0xF8);
  EXPECT_EQ(Encode<Fp4E2M1>(F(0x7F800000), o).bits, 0x7);
}

TEST(Subnormals, FlushKeepsTheSign) {
  EXPECT_EQ(Encode<Bf16>(F(0x80400000), {.subnormals = Subnormals::kFlush}).bits, 0x8000);
  EXPECT_EQ(Encode<Bf16>(F(0x80400000)).bits, 0x8040);
  EXPECT_EQ(Encode<Fp16>(F(0x00000001), {.rounding = Rounding::kTiesAway}).bits, 0x0000);
  EXPECT_EQ(Encode<Fp8E4M3>(F(0x807FFFFF)).bits, 0x80);  // -tiny -> -0
}

TEST(Bf16, FastFormulationMatchesGenericCodec) {
  // Every FP32 exponent, random mantissas and the tie/boundary mantissas.
  std::mt19937 rng(static_cast<std::uint32_t>(kSeed));
  std::printf("bf16 fast path: seed 0x%llx\n", static_cast<unsigned long long>(kSeed));
  for (std::uint32_t e = 0; e < 256; ++e) {
    for (std::uint32_t m : {0x0u, 0x1u, 0x7FFFu, 0x8000u, 0x8001u, 0x18000u, 0x7FFFFFu, 0x7F8000u}) {
      for (std::uint32_t s : {0u, 0x80000000u}) {
        const float x = F(s | e << 23 | m);
        ASSERT_EQ(Fp32ToBf16Rne(x).bits, Encode<Bf16>(x).bits) << std::hex << (s | e << 23 | m);
      }
    }
    for (int i = 0; i < 2000; ++i) {
      const float x = F((rng() & 0x807FFFFFu) | e << 23);
      ASSERT_EQ(Fp32ToBf16Rne(x).bits, Encode<Bf16>(x).bits);
    }
  }
}

TEST(Traits, MatchTheSpecTables) {
  EXPECT_EQ(Fp8E4M3Traits::kTotalBits, 8);
  EXPECT_EQ(Fp6E2M3Traits::kTotalBits, 6);
  EXPECT_EQ(Fp4E2M1Traits::kTotalBits, 4);
  EXPECT_FALSE(Fp8E4M3Traits::kHasInf);
  EXPECT_TRUE(Fp8E4M3Traits::kHasNan);
  EXPECT_TRUE(Fp8E5M2Traits::kHasInf);
  EXPECT_TRUE(Fp8E4M3IeeeTraits::kHasInf);
  EXPECT_TRUE(Fp8E4M3IeeeTraits::kHasNan);
  EXPECT_EQ(DecodeBits<Fp8E4M3IeeeTraits>(Fp8E4M3IeeeTraits::kMaxMagnitudeCode), 240.0f);
  EXPECT_FALSE(Fp6E3M2Traits::kHasNan);
  // Traits agree with the decoded max code.
  EXPECT_EQ(DecodeBits<Fp8E4M3Traits>(Fp8E4M3Traits::kMaxMagnitudeCode), Fp8E4M3Traits::kMaxNormal);
  EXPECT_EQ(DecodeBits<Fp8E5M2Traits>(Fp8E5M2Traits::kMaxMagnitudeCode), Fp8E5M2Traits::kMaxNormal);
  EXPECT_EQ(DecodeBits<Fp16Traits>(Fp16Traits::kMaxMagnitudeCode), Fp16Traits::kMaxNormal);
  EXPECT_EQ(DecodeBits<Bf16Traits>(Bf16Traits::kMaxMagnitudeCode), static_cast<float>(Bf16Traits::kMaxNormal));
  EXPECT_EQ(DecodeBits<Fp8E4M3Traits>(1), Fp8E4M3Traits::kMinSubnormal);
  EXPECT_EQ(DecodeBits<Fp8E4M3Traits>(1u << 3), Fp8E4M3Traits::kMinNormal);
}

TEST(StorageTypes, BitsOnly) {
  static_assert(sizeof(Fp8E4M3) == 1 && sizeof(Bf16) == 2 && sizeof(ScaleE8M0) == 1);
  static_assert(!std::is_convertible_v<float, Fp8E4M3>);
  static_assert(!std::is_convertible_v<Fp8E4M3, float>);
  static_assert(!std::is_convertible_v<Fp8E4M3, Fp8E5M2>);
  // The two E4M3 encodings are distinct types: no silent mixing.
  static_assert(!std::is_convertible_v<Fp8E4M3, Fp8E4M3Ieee>);
  static_assert(!std::is_convertible_v<Fp8E4M3Ieee, Fp8E4M3>);
  EXPECT_EQ(Fp4E2M1::FromBits(0xFF).bits, 0x0F);  // masked to the format width
  EXPECT_EQ(Fp6E2M3::FromBits(0xFF).bits, 0x3F);
  EXPECT_NE(Fp8E4M3::FromBits(0x00), Fp8E4M3::FromBits(0x80));  // +0 and -0 differ as codes
}

}  // namespace
}  // namespace trnmx::test
