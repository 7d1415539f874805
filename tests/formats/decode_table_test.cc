// Every code of every format decoded and checked against hand-written tables
// (FP4, FP6, E8M0, MXINT8) or against the S.E.M formula evaluated in double
// (FP8, FP16, BF16) plus hand-picked values; encode(decode(c)) == c for every
// non-NaN code, negative zeros included (formats.md section 11).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "formats/oracle.h"
#include "trnmx/formats/codec.h"
#include "trnmx/formats/e8m0.h"
#include "trnmx/formats/int8.h"

namespace trnmx::test {
namespace {

std::uint32_t Bits(float x) { return std::bit_cast<std::uint32_t>(x); }

// Checks a full positive-half table and its mirrored negative half.
template <class Traits, std::size_t N>
void ExpectTable(const double (&positive)[N]) {
  static_assert(N == (1u << (Traits::kTotalBits - 1)));
  for (std::uint32_t c = 0; c < N; ++c) {
    EXPECT_EQ(DecodeBits<Traits>(c), static_cast<float>(positive[c])) << "code 0x" << std::hex << c;
    const float neg = DecodeBits<Traits>(c | Traits::kSignMask);
    EXPECT_EQ(Bits(neg), Bits(-static_cast<float>(positive[c]))) << "code 0x" << std::hex
                                                                   << (c | Traits::kSignMask);
  }
}

TEST(DecodeTable, Fp4E2M1) {
  const double t[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  ExpectTable<Fp4E2M1Traits>(t);
}

TEST(DecodeTable, Fp6E2M3) {
  const double t[32] = {0,     0.125, 0.25, 0.375, 0.5,  0.625, 0.75, 0.875,  // E=0
                        1,     1.125, 1.25, 1.375, 1.5,  1.625, 1.75, 1.875,  // E=1
                        2,     2.25,  2.5,  2.75,  3,    3.25,  3.5,  3.75,   // E=2
                        4,     4.5,   5,    5.5,   6,    6.5,   7,    7.5};   // E=3
  ExpectTable<Fp6E2M3Traits>(t);
}

TEST(DecodeTable, Fp6E3M2) {
  const double t[32] = {0,   0.0625, 0.125, 0.1875, 0.25, 0.3125, 0.375, 0.4375,
                        0.5, 0.625,  0.75,  0.875,  1,    1.25,   1.5,   1.75,
                        2,   2.5,    3,     3.5,    4,    5,      6,     7,
                        8,   10,     12,    14,     16,   20,     24,    28};
  ExpectTable<Fp6E3M2Traits>(t);
}

template <class Traits>
void ExpectFormula(const FormatSpec& spec) {
  for (std::uint32_t c = 0; c < (1u << Traits::kTotalBits); ++c) {
    const double want = SpecDecode(spec, c);
    const float got = DecodeBits<Traits>(c);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << "code 0x" << std::hex << c;
      EXPECT_EQ(std::signbit(got), (c & Traits::kSignMask) != 0) << "code 0x" << std::hex << c;
    } else {
      EXPECT_EQ(Bits(got), Bits(static_cast<float>(want))) << "code 0x" << std::hex << c;
      EXPECT_EQ(static_cast<double>(got), want) << "not exact in FP32: code 0x" << std::hex << c;
    }
  }
}

TEST(DecodeTable, Fp8E4M3) {
  ExpectFormula<Fp8E4M3Traits>(kSpecE4M3);
  EXPECT_EQ(DecodeBits<Fp8E4M3Traits>(0x01), 0x1p-9f);
  EXPECT_EQ(DecodeBits<Fp8E4M3Traits>(0x08), 0x1p-6f);
  EXPECT_EQ(DecodeBits<Fp8E4M3Traits>(0x38), 1.0f);
  EXPECT_EQ(DecodeBits<Fp8E4M3Traits>(0x78), 256.0f);  // Exponent 1111 is finite.
  EXPECT_EQ(DecodeBits<Fp8E4M3Traits>(0x7E), 448.0f);
  EXPECT_EQ(Bits(DecodeBits<Fp8E4M3Traits>(0x7F)), 0x7FC00000u);
  EXPECT_EQ(Bits(DecodeBits<Fp8E4M3Traits>(0xFF)), 0xFFC00000u);
  EXPECT_EQ(Bits(DecodeBits<Fp8E4M3Traits>(0x80)), 0x80000000u);
}

// Trainium NeuronCore-v2/v3 FP8 (ml_dtypes float8_e4m3): bias 7 like OCP
// E4M3FN, but exponent 1111 holds Inf (M = 0) and NaNs (M != 0), so the top
// binade ends at 1110.111 = 240.
TEST(DecodeTable, Fp8E4M3Ieee) {
  using T = Fp8E4M3IeeeTraits;
  ExpectFormula<T>(kSpecE4M3Ieee);
  EXPECT_EQ(DecodeBits<T>(0x01), 0x1p-9f);  // smallest subnormal
  EXPECT_EQ(DecodeBits<T>(0x02), 0x1p-8f);
  EXPECT_EQ(DecodeBits<T>(0x04), 0x1p-7f);
  EXPECT_EQ(DecodeBits<T>(0x07), 7 * 0x1p-9f);  // largest subnormal
  EXPECT_EQ(DecodeBits<T>(0x08), 0x1p-6f);      // smallest normal
  EXPECT_EQ(DecodeBits<T>(0x38), 1.0f);
  EXPECT_EQ(DecodeBits<T>(0x70), 128.0f);
  EXPECT_EQ(DecodeBits<T>(0x77), 240.0f);
  EXPECT_EQ(DecodeBits<T>(0xF7), -240.0f);
  EXPECT_EQ(Bits(DecodeBits<T>(0x78)), 0x7F800000u);  // OCP E4M3FN: 256
  EXPECT_EQ(Bits(DecodeBits<T>(0xF8)), 0xFF800000u);
  for (std::uint32_t c = 0x79; c <= 0x7F; ++c) {
    EXPECT_EQ(Bits(DecodeBits<T>(c)), 0x7FC00000u) << std::hex << c;
    EXPECT_EQ(Bits(DecodeBits<T>(c | 0x80)), 0xFFC00000u) << std::hex << c;
  }
  EXPECT_EQ(Bits(DecodeBits<T>(0x80)), 0x80000000u);
}

TEST(DecodeTable, Fp8E5M2) {
  ExpectFormula<Fp8E5M2Traits>(kSpecE5M2);
  EXPECT_EQ(DecodeBits<Fp8E5M2Traits>(0x01), 0x1p-16f);
  EXPECT_EQ(DecodeBits<Fp8E5M2Traits>(0x04), 0x1p-14f);
  EXPECT_EQ(DecodeBits<Fp8E5M2Traits>(0x3C), 1.0f);
  EXPECT_EQ(DecodeBits<Fp8E5M2Traits>(0x7B), 57344.0f);
  EXPECT_EQ(Bits(DecodeBits<Fp8E5M2Traits>(0x7C)), 0x7F800000u);
  EXPECT_EQ(Bits(DecodeBits<Fp8E5M2Traits>(0xFC)), 0xFF800000u);
  for (std::uint32_t c : {0x7Du, 0x7Eu, 0x7Fu}) {
    EXPECT_EQ(Bits(DecodeBits<Fp8E5M2Traits>(c)), 0x7FC00000u);
    EXPECT_EQ(Bits(DecodeBits<Fp8E5M2Traits>(c | 0x80)), 0xFFC00000u);
  }
}

TEST(DecodeTable, Fp16) {
  ExpectFormula<Fp16Traits>(kSpecFp16);
  EXPECT_EQ(DecodeBits<Fp16Traits>(0x3C00), 1.0f);
  EXPECT_EQ(DecodeBits<Fp16Traits>(0x7BFF), 65504.0f);
  EXPECT_EQ(DecodeBits<Fp16Traits>(0x0001), 0x1p-24f);
  EXPECT_EQ(DecodeBits<Fp16Traits>(0x0400), 0x1p-14f);
  EXPECT_EQ(Bits(DecodeBits<Fp16Traits>(0x7C00)), 0x7F800000u);
  // NaN payloads are kept: 7E01 -> quiet bit + lowest payload bit, shifted.
  EXPECT_EQ(Bits(DecodeBits<Fp16Traits>(0x7E01)), 0x7FC02000u);
  EXPECT_EQ(Bits(DecodeBits<Fp16Traits>(0xFC01)), 0xFF802000u);
}

TEST(DecodeTable, Bf16IsShiftBySixteen) {
  for (std::uint32_t c = 0; c < 0x10000; ++c) {
    ASSERT_EQ(Bits(DecodeBits<Bf16Traits>(c)), c << 16) << "code 0x" << std::hex << c;
  }
}

TEST(DecodeTable, ScaleE8M0) {
  EXPECT_EQ(Bits(DecodeE8M0(0x00)), 0x00400000u);  // 2^-127: an FP32 subnormal, not +0.
  EXPECT_EQ(DecodeE8M0(0x7F), 1.0f);
  EXPECT_EQ(DecodeE8M0(0xFE), 0x1p127f);
  EXPECT_TRUE(std::isnan(DecodeE8M0(0xFF)));
  for (std::uint32_t c = 0; c < 0xFF; ++c) {
    EXPECT_EQ(static_cast<double>(DecodeE8M0(c)), std::ldexp(1.0, static_cast<int>(c) - 127));
    EXPECT_EQ(static_cast<double>(ReciprocalE8M0(c)), std::ldexp(1.0, 127 - static_cast<int>(c)));
    if (c != 0) {
      EXPECT_EQ(Bits(DecodeE8M0(c)), c << 23);
    }
  }
  EXPECT_EQ(Bits(ReciprocalE8M0(0x00)), 0x7F000000u);
  EXPECT_EQ(Bits(ReciprocalE8M0(0xFE)), 0x00400000u);
  EXPECT_TRUE(std::isnan(ReciprocalE8M0(0xFF)));
}

TEST(DecodeTable, MxInt8) {
  for (int n = -128; n <= 127; ++n) {
    const auto code = static_cast<std::uint32_t>(static_cast<std::uint8_t>(n));
    EXPECT_EQ(DecodeMxInt8(code), static_cast<float>(n) / 64.0f) << n;
  }
  EXPECT_EQ(DecodeMxInt8(0x7F), 1.984375f);
  EXPECT_EQ(DecodeMxInt8(0x80), -2.0f);
}

template <class Traits>
void ExpectRoundTrip() {
  for (std::uint32_t c = 0; c < (1u << Traits::kTotalBits); ++c) {
    const float v = DecodeBits<Traits>(c);
    const EncodeResult r = EncodeWithFlags<Traits>(v);
    if (std::isnan(v)) {
      // A NaN comes back as a NaN code of the same sign.
      EXPECT_TRUE(std::isnan(DecodeBits<Traits>(r.code))) << "code 0x" << std::hex << c;
      EXPECT_EQ(r.code & Traits::kSignMask, c & Traits::kSignMask);
      continue;
    }
    if (std::isinf(v)) {  // Inf codes come back only when not saturating (D2).
      EXPECT_EQ(EncodeWithFlags<Traits>(v, {.overflow = Overflow::kNonSat}).code, c);
      continue;
    }
    EXPECT_EQ(r.code, c) << "code 0x" << std::hex << c;
    EXPECT_EQ(r.flags, kFlagNone) << "code 0x" << std::hex << c;
    // Every policy leaves representable values alone.
    for (Overflow ov : {Overflow::kSatFinite, Overflow::kNonSat, Overflow::kMlDtypesSat}) {
      for (Rounding rd : {Rounding::kTowardZero, Rounding::kTiesAway, Rounding::kStochastic}) {
        EXPECT_EQ(EncodeWithFlags<Traits>(v, {.rounding = rd, .overflow = ov}, 0xFFFFFFFFu).code, c);
      }
    }
  }
}

TEST(RoundTrip, EveryFiniteCode) {
  ExpectRoundTrip<Fp4E2M1Traits>();
  ExpectRoundTrip<Fp6E2M3Traits>();
  ExpectRoundTrip<Fp6E3M2Traits>();
  ExpectRoundTrip<Fp8E4M3Traits>();
  ExpectRoundTrip<Fp8E4M3IeeeTraits>();
  ExpectRoundTrip<Fp8E5M2Traits>();
  ExpectRoundTrip<Fp16Traits>();
  ExpectRoundTrip<Bf16Traits>();
}

TEST(RoundTrip, BF16NaNsKeepTheirBits) {
  // A quiet BF16 NaN decodes to FP32 with the same top bits and re-encodes to itself.
  for (std::uint32_t c = 0x7FC0; c <= 0x7FFF; ++c) {
    EXPECT_EQ(EncodeWithFlags<Bf16Traits>(DecodeBits<Bf16Traits>(c)).code, c);
    EXPECT_EQ(EncodeWithFlags<Bf16Traits>(DecodeBits<Bf16Traits>(c | 0x8000)).code, c | 0x8000);
  }
}

TEST(RoundTrip, MxInt8AndE8M0) {
  for (std::uint32_t c = 0; c < 256; ++c) {
    const Int8Range range = c == 0x80 ? Int8Range::kAllowMinus128 : Int8Range::kSymmetric;
    EXPECT_EQ(EncodeMxInt8(DecodeMxInt8(c), {.int8_range = range}).bits, c);
    if (c != 0xFF) {
      for (E8M0Rounding r : {E8M0Rounding::kDown, E8M0Rounding::kUp, E8M0Rounding::kNearestTiesUp}) {
        EXPECT_EQ(ToE8M0(DecodeE8M0(c), r, E8M0Saturation::kNaN).code, c);
      }
    }
  }
}

}  // namespace
}  // namespace trnmx::test
