// Known-answer vectors of shared/reference/formats.md section 12, both signs.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "trnmx/formats/codec.h"
#include "trnmx/formats/e8m0.h"
#include "trnmx/formats/int8.h"
#include "trnmx/formats/registry.h"

namespace trnmx {
namespace {

float F(std::uint32_t bits) { return std::bit_cast<float>(bits); }

// 12.1: BF16. Columns: default | Intel (kFlush = DAZ) | Eigen (kCanonical).
TEST(KnownAnswers, Bf16) {
  struct Row {
    std::uint32_t in;
    std::uint32_t def, intel, eigen;
  };
  const Row rows[] = {
      {0x3F800000, 0x3F80, 0x3F80, 0x3F80}, {0x3F808000, 0x3F80, 0x3F80, 0x3F80},
      {0x3F818000, 0x3F82, 0x3F82, 0x3F82}, {0x3F807FFF, 0x3F80, 0x3F80, 0x3F80},
      {0x7F7FFFFF, 0x7F80, 0x7F80, 0x7F80}, {0x00400000, 0x0040, 0x0000, 0x0040},
      {0x00018000, 0x0002, 0x0000, 0x0002}, {0x7F800000, 0x7F80, 0x7F80, 0x7F80},
      {0xFF800000, 0xFF80, 0xFF80, 0xFF80}, {0x7FC00000, 0x7FC0, 0x7FC0, 0x7FC0},
      {0xFFC00000, 0xFFC0, 0xFFC0, 0xFFC0}, {0x7F800001, 0x7FC0, 0x7FC0, 0x7FC0},
      {0xFFA12345, 0xFFE1, 0xFFE1, 0xFFC0}, {0x7FFFFFFF, 0x7FFF, 0x7FFF, 0x7FC0},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(testing::Message() << "x=0x" << std::hex << r.in);
    EXPECT_EQ(Encode<Bf16>(F(r.in)).bits, r.def);
    EXPECT_EQ(Fp32ToBf16Rne(F(r.in)).bits, r.def);
    EXPECT_EQ(Encode<Bf16>(F(r.in), {.subnormals = Subnormals::kFlush}).bits, r.intel);
    EXPECT_EQ(Encode<Bf16>(F(r.in), {.nan = NanPolicy::kCanonical}).bits, r.eigen);
    const bool finite = (r.in & 0x7F800000u) != 0x7F800000u;
    if (finite) {  // Mirror: negative input, same magnitude code with the sign.
      EXPECT_EQ(Encode<Bf16>(F(r.in ^ 0x80000000u)).bits, r.def ^ 0x8000u);
    }
  }
}

// 12.2 / section 5: float -> E8M0 under the project's named roundings.
TEST(KnownAnswers, E8M0) {
  using R = E8M0Rounding;
  struct Row {
    std::uint32_t in;
    std::uint32_t down, up, nearest;
  };
  const Row rows[] = {
      {0x3F800000, 0x7F, 0x7F, 0x7F},  // 1.0
      {0x3FA00000, 0x7F, 0x80, 0x7F},  // 1.25
      {0x3FC00000, 0x7F, 0x80, 0x80},  // 1.5 tie rounds up
      {0x00400000, 0x00, 0x00, 0x00},  // 2^-127
      {0x00400001, 0x00, 0x01, 0x01},  // just above 2^-127
      {0x00200000, 0x00, 0x00, 0x00},  // 2^-128
      {0x7F000000, 0xFE, 0xFE, 0xFE},  // 2^127
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(testing::Message() << "x=0x" << std::hex << r.in);
    EXPECT_EQ(ToE8M0(F(r.in), R::kDown, E8M0Saturation::kSaturate).code, r.down);
    EXPECT_EQ(ToE8M0(F(r.in), R::kUp, E8M0Saturation::kSaturate).code, r.up);
    EXPECT_EQ(ToE8M0(F(r.in), R::kNearestTiesUp, E8M0Saturation::kSaturate).code, r.nearest);
  }
  // 1.5 * 2^127 rounds up past FE: FE with saturation (CUDA), FF without (ml_dtypes).
  EXPECT_EQ(ToE8M0(F(0x7F400000), R::kNearestTiesUp, E8M0Saturation::kSaturate).code, 0xFEu);
  EXPECT_EQ(ToE8M0(F(0x7F400000), R::kNearestTiesUp, E8M0Saturation::kNaN).code, 0xFFu);
  EXPECT_EQ(ToE8M0(F(0x7F800000), R::kUp, E8M0Saturation::kSaturate).code, 0xFEu);
  EXPECT_EQ(ToE8M0(F(0x7F800000), R::kUp, E8M0Saturation::kNaN).code, 0xFFu);
  // Project rules: +-0 -> 00; negative and NaN -> FF, flagged invalid.
  EXPECT_EQ(ToE8M0(0.0f, R::kDown, E8M0Saturation::kSaturate).code, 0x00u);
  EXPECT_EQ(ToE8M0(-0.0f, R::kUp, E8M0Saturation::kSaturate).code, 0x00u);
  const EncodeResult neg = ToE8M0(-2.0f, R::kNearestTiesUp, E8M0Saturation::kSaturate);
  EXPECT_EQ(neg.code, 0xFFu);
  EXPECT_EQ(neg.flags, kFlagInvalid);
  EXPECT_EQ(ToE8M0(F(0x7FC00000), R::kDown, E8M0Saturation::kSaturate).code, 0xFFu);
}

// 12.3: FP32 -> element. "sat" = defaults; "nonsat" = kNonSat + kMlDtypesNaN.
struct ElementRow {
  Format format;
  std::uint32_t in;
  std::uint32_t sat;
  std::uint32_t nonsat;
};

const ElementRow kElementRows[] = {
    {Format::kFp8E4M3, 0x3F800000, 0x38, 0x38}, {Format::kFp8E4M3, 0x43E00000, 0x7E, 0x7E},
    {Format::kFp8E4M3, 0x43E80000, 0x7E, 0x7E}, {Format::kFp8E4M3, 0x447A0000, 0x7E, 0x7F},
    {Format::kFp8E4M3, 0x7F800000, 0x7E, 0x7F}, {Format::kFp8E4M3, 0xFF800000, 0xFE, 0xFF},
    {Format::kFp8E4M3, 0x7FC00000, 0x7F, 0x7F}, {Format::kFp8E4M3, 0xFFC00000, 0xFF, 0xFF},
    {Format::kFp8E4M3, 0x41880000, 0x58, 0x58}, {Format::kFp8E4M3, 0x3B000000, 0x01, 0x01},
    {Format::kFp8E4M3, 0x3A800000, 0x00, 0x00}, {Format::kFp8E4M3, 0x80000000, 0x80, 0x80},
    // E4M3 IEEE-style (Trainium NC-v2/v3, ml_dtypes float8_e4m3): MAX 240 = 77,
    // Inf 78/F8, canonical NaN 7C/FC. 248 is the tie of 240 (odd) and 256:
    // it rounds to 256, past MAX. 256 and 448 are finite in OCP E4M3 only.
    {Format::kFp8E4M3Ieee, 0x3F800000, 0x38, 0x38}, {Format::kFp8E4M3Ieee, 0x43700000, 0x77, 0x77},
    {Format::kFp8E4M3Ieee, 0x4377FFFF, 0x77, 0x77}, {Format::kFp8E4M3Ieee, 0x43780000, 0x77, 0x78},
    {Format::kFp8E4M3Ieee, 0x43800000, 0x77, 0x78}, {Format::kFp8E4M3Ieee, 0x43E00000, 0x77, 0x78},
    {Format::kFp8E4M3Ieee, 0x7F800000, 0x77, 0x78}, {Format::kFp8E4M3Ieee, 0xFF800000, 0xF7, 0xF8},
    {Format::kFp8E4M3Ieee, 0x7FC00000, 0x7C, 0x7C}, {Format::kFp8E4M3Ieee, 0xFFC00000, 0xFC, 0xFC},
    {Format::kFp8E4M3Ieee, 0x41880000, 0x58, 0x58}, {Format::kFp8E4M3Ieee, 0x3B000000, 0x01, 0x01},
    {Format::kFp8E4M3Ieee, 0x3A800000, 0x00, 0x00}, {Format::kFp8E4M3Ieee, 0x3AC00000, 0x01, 0x01},
    {Format::kFp8E4M3Ieee, 0x3C600000, 0x07, 0x07}, {Format::kFp8E4M3Ieee, 0x3C800000, 0x08, 0x08},
    {Format::kFp8E4M3Ieee, 0x80000000, 0x80, 0x80},
    {Format::kFp8E5M2, 0x47600000, 0x7B, 0x7B}, {Format::kFp8E5M2, 0x47700000, 0x7B, 0x7C},
    {Format::kFp8E5M2, 0x37800000, 0x01, 0x01}, {Format::kFp8E5M2, 0x37000000, 0x00, 0x00},
    {Format::kFp8E5M2, 0x7FC00000, 0x7E, 0x7E}, {Format::kFp8E5M2, 0xFFC00000, 0xFE, 0xFE},
    {Format::kFp8E5M2, 0x7F800000, 0x7B, 0x7C}, {Format::kFp6E2M3, 0x40F00000, 0x1F, 0x1F},
    {Format::kFp6E2M3, 0x40F80000, 0x1F, 0x1F}, {Format::kFp6E2M3, 0x3D800000, 0x00, 0x00},
    {Format::kFp6E2M3, 0x3D80000D, 0x01, 0x01}, {Format::kFp6E3M2, 0x41E00000, 0x1F, 0x1F},
    {Format::kFp6E3M2, 0x41F00000, 0x1F, 0x1F}, {Format::kFp6E3M2, 0x3D000000, 0x00, 0x00},
    {Format::kFp6E3M2, 0x3D00001B, 0x01, 0x01}, {Format::kFp4E2M1, 0x3E800000, 0x0, 0x0},
    {Format::kFp4E2M1, 0x3F400000, 0x2, 0x2},   {Format::kFp4E2M1, 0x3FA00000, 0x2, 0x2},
    {Format::kFp4E2M1, 0x3FE00000, 0x4, 0x4},   {Format::kFp4E2M1, 0xBE800000, 0x8, 0x8},
    {Format::kFp4E2M1, 0x3E800003, 0x1, 0x1},
    // NaN -> FP6/FP4: D4 (+0) vs ml_dtypes (sign flipped).
    {Format::kFp6E2M3, 0x7FC00000, 0x00, 0x20}, {Format::kFp6E2M3, 0xFFC00000, 0x00, 0x00},
    {Format::kFp6E3M2, 0x7FC00000, 0x00, 0x20}, {Format::kFp6E3M2, 0xFFC00000, 0x00, 0x00},
    {Format::kFp4E2M1, 0x7FC00000, 0x0, 0x8},   {Format::kFp4E2M1, 0xFFC00000, 0x0, 0x0},
    // +-Inf -> FP6/FP4: +-MAX under both.
    {Format::kFp6E2M3, 0x7F800000, 0x1F, 0x1F}, {Format::kFp6E2M3, 0xFF800000, 0x3F, 0x3F},
    {Format::kFp6E3M2, 0x7F800000, 0x1F, 0x1F}, {Format::kFp6E3M2, 0xFF800000, 0x3F, 0x3F},
    {Format::kFp4E2M1, 0x7F800000, 0x7, 0x7},   {Format::kFp4E2M1, 0xFF800000, 0xF, 0xF},
};

std::uint32_t EncodeOne(Format f, std::uint32_t in, const EncodeOptions& o) {
  std::uint32_t code = 0;
  const float x = F(in);
  ConvertOptions c;
  c.element = o;
  EXPECT_TRUE(EncodeScalars(f, {&x, 1}, {&code, 1}, c).ok());
  return code;
}

TEST(KnownAnswers, Elements) {
  const EncodeOptions nonsat{.overflow = Overflow::kNonSat, .nan = NanPolicy::kMlDtypesNaN};
  for (const ElementRow& r : kElementRows) {
    const FormatInfo& info = GetFormatInfo(r.format);
    SCOPED_TRACE(testing::Message() << info.name << " x=0x" << std::hex << r.in);
    EXPECT_EQ(EncodeOne(r.format, r.in, {}), r.sat);
    EXPECT_EQ(EncodeOne(r.format, r.in, nonsat), r.nonsat);
    // Mirror finite rows: -x gives the same magnitude code with the sign bit.
    const std::uint32_t abs_bits = r.in & 0x7FFFFFFFu;
    if (abs_bits < 0x7F800000u) {
      const std::uint32_t sign = 1u << (info.total_bits - 1);
      EXPECT_EQ(EncodeOne(r.format, r.in ^ 0x80000000u, {}), r.sat ^ sign);
      EXPECT_EQ(EncodeOne(r.format, r.in ^ 0x80000000u, nonsat), r.nonsat ^ sign);
    }
  }
}

// E4M3 IEEE-style under every rounding, overflow and NaN policy, from the
// definition: 224 = 76 and 240 = 77 are the top two values, 232 their tie,
// 248 the tie of 240 with 256 (the first value past MAX).
TEST(KnownAnswers, Fp8E4M3IeeePolicies) {
  struct Row {
    float x;
    Rounding rounding;
    Overflow overflow;
    std::uint32_t code;
  };
  using R = Rounding;
  using O = Overflow;
  const Row rows[] = {
      {232.0f, R::kNearestEven, O::kFormatDefault, 0x76},  // tie to even (76)
      {232.0f, R::kTiesAway, O::kFormatDefault, 0x77},
      {232.0f, R::kTowardZero, O::kFormatDefault, 0x76},
      {244.0f, R::kNearestEven, O::kNonSat, 0x77},  // below the 248 tie
      {244.0f, R::kTiesAway, O::kNonSat, 0x77},
      {248.0f, R::kNearestEven, O::kFormatDefault, 0x77},  // saturates (Trainium)
      {248.0f, R::kNearestEven, O::kSatFinite, 0x77},
      {248.0f, R::kNearestEven, O::kNonSat, 0x78},  // rounds to 256: Inf
      {248.0f, R::kNearestEven, O::kMlDtypesSat, 0x77},
      {248.0f, R::kTiesAway, O::kNonSat, 0x78},
      {248.0f, R::kTowardZero, O::kNonSat, 0x77},  // never past MAX (IEEE 4.3.2)
      {1e6f, R::kTowardZero, O::kNonSat, 0x77},
      {INFINITY, R::kNearestEven, O::kFormatDefault, 0x77},
      {INFINITY, R::kNearestEven, O::kNonSat, 0x78},
      {INFINITY, R::kTowardZero, O::kNonSat, 0x78},  // Inf is exact when not saturating
      {-INFINITY, R::kNearestEven, O::kMlDtypesSat, 0xF8},
      {-INFINITY, R::kTiesAway, O::kSatFinite, 0xF7},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(testing::Message() << "x=" << r.x << " rounding=" << static_cast<int>(r.rounding)
                                    << " overflow=" << static_cast<int>(r.overflow));
    EXPECT_EQ(EncodeOne(Format::kFp8E4M3Ieee, std::bit_cast<std::uint32_t>(r.x),
                        {.rounding = r.rounding, .overflow = r.overflow}),
              r.code);
  }
  // NaN: sign kept; the quiet bit 04 set; kQuietPayload keeps the top 2
  // payload bits of FP32's 22 (0x7FA12345: 0x212345 >> 20 = 2 -> 7E).
  const auto nan = [](std::uint32_t in, NanPolicy p) {
    return EncodeOne(Format::kFp8E4M3Ieee, in, {.nan = p});
  };
  EXPECT_EQ(nan(0x7FA12345, NanPolicy::kFormatDefault), 0x7Cu);
  EXPECT_EQ(nan(0x7FA12345, NanPolicy::kCanonical), 0x7Cu);
  EXPECT_EQ(nan(0x7FA12345, NanPolicy::kQuietPayload), 0x7Eu);
  EXPECT_EQ(nan(0xFFFFFFFF, NanPolicy::kQuietPayload), 0xFFu);
  EXPECT_EQ(nan(0xFF800001, NanPolicy::kQuietPayload), 0xFCu);  // signalling, payload cut to 0
  EXPECT_EQ(nan(0x7FC00000, NanPolicy::kZero), 0x7Cu);          // the format has a NaN
  EXPECT_EQ(nan(0xFFC00000, NanPolicy::kMlDtypesNaN), 0xFCu);
  // FP32 subnormals: exact conversion gives 0 (all are below 2^-10); DAZ too.
  EXPECT_EQ(EncodeOne(Format::kFp8E4M3Ieee, 0x807FFFFF, {}), 0x80u);
  EXPECT_EQ(EncodeOne(Format::kFp8E4M3Ieee, 0x807FFFFF, {.subnormals = Subnormals::kFlush}), 0x80u);
}

// 12.5, rounding policies on E2M1 at scale 1: RNE vs ties away.
TEST(KnownAnswers, Fp4RoundingPolicies) {
  const float in[] = {4.0f, 2.5f, 0.75f, 1.25f, 5.0f, -2.5f, 0.25f};
  const float rne[] = {4, 2, 1, 1, 4, -2, 0};
  const float away[] = {4, 3, 1, 1.5f, 6, -3, 0.5f};
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(Decode(Encode<Fp4E2M1>(in[i])), rne[i]) << in[i];
    EXPECT_EQ(Decode(Encode<Fp4E2M1>(in[i], {.rounding = Rounding::kTiesAway})), away[i]) << in[i];
  }
}

// 12.5, MXINT8 at scale 1 (X = 1).
TEST(KnownAnswers, MxInt8) {
  const float in[] = {1.0f, 0.5f, -1.0f, 1.0f / 128, 0.01171875f, -0.01171875f, 1.99f, -1.999f};
  const std::uint32_t want[] = {0x40, 0x20, 0xC0, 0x00, 0x01, 0xFF, 0x7F, 0x81};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(EncodeMxInt8(in[i]).bits, want[i]) << in[i];
  EXPECT_EQ(EncodeMxInt8(-1.999f, {.int8_range = Int8Range::kAllowMinus128}).bits, 0x80u);
  EXPECT_EQ(EncodeMxInt8(F(0x7FC00000)).bits, 0x00u);
  EXPECT_EQ(EncodeMxInt8WithFlags(F(0x7FC00000)).flags, kFlagInvalid);
  EXPECT_EQ(EncodeMxInt8(F(0xFF800000)).bits, 0x81u);
}

}  // namespace
}  // namespace trnmx
