// Known answers for the MX scale rules and the scalar MX block reference:
// every row of shared/reference/formats.md sections 12.4 and 12.5 except the
// GGML 17-byte block (GGML element search is not implemented; the GGML
// interchange layout is tested in mx_tensor_test.cc), plus the command-line
// names of the rules and SpecialBlock::kInfPassThrough.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "trnmx/formats/mx_block.h"
#include "trnmx/formats/scale_rule.h"

namespace trnmx {
namespace {

constexpr ScaleRule kAllRules[] = {ScaleRule::kOcpFloor, ScaleRule::kCeil, ScaleRule::kEven,
                                   ScaleRule::kRceil,    ScaleRule::kNki,  ScaleRule::kGgml,
                                   ScaleRule::kTosa};

template <class Traits>
unsigned Code(std::uint32_t amax, ScaleRule rule) {
  return ScaleCodeFromAmax<Traits>(amax, rule).bits;
}

// Section 12.4 row: amax -> kOcpFloor, kCeil, kEven, kRceil, kNki.
struct Row {
  std::uint32_t amax;
  unsigned ocp, ceil, even, rceil, nki;
};

template <class Traits>
void CheckRows(const std::vector<Row>& rows) {
  for (const Row& r : rows) {
    SCOPED_TRACE(::testing::Message() << std::hex << "amax " << r.amax);
    EXPECT_EQ(Code<Traits>(r.amax, ScaleRule::kOcpFloor), r.ocp);
    EXPECT_EQ(Code<Traits>(r.amax, ScaleRule::kCeil), r.ceil);
    EXPECT_EQ(Code<Traits>(r.amax, ScaleRule::kEven), r.even);
    EXPECT_EQ(Code<Traits>(r.amax, ScaleRule::kRceil), r.rceil);
    EXPECT_EQ(Code<Traits>(r.amax, ScaleRule::kNki), r.nki);
  }
}

TEST(ScaleRuleKnownAnswer, E4M3) {
  CheckRows<Fp8E4M3Traits>({{0x3F800000, 0x77, 0x77, 0x77, 0x77, 0x78},
                            {0x3FE00000, 0x77, 0x78, 0x77, 0x77, 0x78},
                            {0x3FF00000, 0x77, 0x78, 0x77, 0x78, 0x78},
                            {0x40E00000, 0x79, 0x7A, 0x79, 0x79, 0x7A},
                            {0x43E00000, 0x7F, 0x80, 0x7F, 0x7F, 0x80},
                            {0x43E80000, 0x7F, 0x80, 0x7F, 0x80, 0x80},
                            {0x43F00000, 0x7F, 0x80, 0x7F, 0x80, 0x80},
                            {0x417FFFFF, 0x7A, 0x7B, 0x7B, 0x7B, 0x7B}});
}

TEST(ScaleRuleKnownAnswer, E5M2) {
  CheckRows<Fp8E5M2Traits>({{0x3F800000, 0x70, 0x70, 0x70, 0x70, 0x71},
                            {0x3FE00000, 0x70, 0x71, 0x70, 0x70, 0x71},
                            {0x3FF00000, 0x70, 0x71, 0x71, 0x71, 0x71},
                            {0x40E00000, 0x72, 0x73, 0x72, 0x72, 0x73},
                            {0x43E00000, 0x78, 0x79, 0x78, 0x78, 0x79},
                            {0x43E80000, 0x78, 0x79, 0x78, 0x79, 0x79},
                            {0x43F00000, 0x78, 0x79, 0x79, 0x79, 0x79},
                            {0x417FFFFF, 0x73, 0x74, 0x74, 0x74, 0x74}});
}

TEST(ScaleRuleKnownAnswer, E2M1) {
  // E2M1: kNki = kOcpFloor.
  CheckRows<Fp4E2M1Traits>({{0x3F800000, 0x7D, 0x7D, 0x7D, 0x7D, 0x7D},
                            {0x3FE00000, 0x7D, 0x7E, 0x7E, 0x7E, 0x7D},
                            {0x3FF00000, 0x7D, 0x7E, 0x7E, 0x7E, 0x7D},
                            {0x40E00000, 0x7F, 0x80, 0x80, 0x80, 0x7F},
                            {0x43E00000, 0x85, 0x86, 0x86, 0x86, 0x85},
                            {0x43E80000, 0x85, 0x86, 0x86, 0x86, 0x85},
                            {0x43F00000, 0x85, 0x86, 0x86, 0x86, 0x85},
                            {0x417FFFFF, 0x80, 0x81, 0x81, 0x81, 0x80}});
  // kGgml: 81 for 0x417FFFFF (section 11 trap); the other rows are not near a
  // power of two, so kGgml equals kOcpFloor there.
  EXPECT_EQ(Code<Fp4E2M1Traits>(0x417FFFFF, ScaleRule::kGgml), 0x81u);
  for (std::uint32_t a : {0x3F800000u, 0x3FE00000u, 0x3FF00000u, 0x40E00000u, 0x43E00000u,
                          0x43E80000u, 0x43F00000u}) {
    EXPECT_EQ(Code<Fp4E2M1Traits>(a, ScaleRule::kGgml), Code<Fp4E2M1Traits>(a, ScaleRule::kOcpFloor));
  }
}

// Section 12.4, kTosa column: {amax, E4M3, E5M2, E2M1}.
TEST(ScaleRuleKnownAnswer, Tosa) {
  struct TosaRow {
    std::uint32_t amax;
    unsigned e4m3, e5m2, e2m1;
  };
  const TosaRow rows[] = {{0x3F800000, 0x77, 0x70, 0x7D}, {0x3FE00000, 0x77, 0x70, 0x7E},
                          {0x3FF00000, 0x78, 0x71, 0x7E}, {0x40E00000, 0x79, 0x72, 0x80},
                          {0x43E00000, 0x7F, 0x78, 0x86}, {0x43E80000, 0x7F, 0x78, 0x86},
                          {0x43F00000, 0x80, 0x79, 0x86}, {0x417FFFFF, 0x7B, 0x74, 0x81}};
  for (const TosaRow& r : rows) {
    SCOPED_TRACE(::testing::Message() << std::hex << "amax " << r.amax);
    EXPECT_EQ(Code<Fp8E4M3Traits>(r.amax, ScaleRule::kTosa), r.e4m3);
    EXPECT_EQ(Code<Fp8E5M2Traits>(r.amax, ScaleRule::kTosa), r.e5m2);
    EXPECT_EQ(Code<Fp4E2M1Traits>(r.amax, ScaleRule::kTosa), r.e2m1);
  }
  // The thresholds themselves (section 3.1): the first overflowing value T
  // needs one more binade; E4M3's 464 still fits (it ties down to 448).
  EXPECT_EQ(Code<Fp8E5M2Traits>(0x47700000, ScaleRule::kTosa), 0x80u);  // 61440
  EXPECT_EQ(Code<Fp8E5M2Traits>(0x476FFFFF, ScaleRule::kTosa), 0x7Fu);
  EXPECT_EQ(Code<Fp6E2M3Traits>(0x40F80000, ScaleRule::kTosa), 0x80u);  // 7.75
  EXPECT_EQ(Code<Fp6E2M3Traits>(0x40F7FFFF, ScaleRule::kTosa), 0x7Fu);
  EXPECT_EQ(Code<Fp6E3M2Traits>(0x41F00000, ScaleRule::kTosa), 0x80u);  // 30
  EXPECT_EQ(Code<Fp6E3M2Traits>(0x41EFFFFF, ScaleRule::kTosa), 0x7Fu);
  EXPECT_EQ(Code<Fp8E4M3Traits>(0x43E80001, ScaleRule::kTosa), 0x80u);  // just above 464
  // No overflow after RNE at the chosen scale, and one binade less would overflow.
  const float v[] = {7.0f, -6.9f, 1.0f};
  const MxBlockCodes b = QuantizeMxBlock<Fp4E2M1Traits>(v, ScaleRule::kTosa);
  EXPECT_EQ(b.scale.bits, 0x80);
  EXPECT_EQ(b.flags & kFlagOverflow, 0);
}

TEST(ScaleRuleNames, ParseAndPrint) {
  const std::pair<const char*, ScaleRule> names[] = {
      {"ocp-floor", ScaleRule::kOcpFloor}, {"ceil", ScaleRule::kCeil}, {"even", ScaleRule::kEven},
      {"rceil", ScaleRule::kRceil},        {"nki", ScaleRule::kNki},   {"ggml", ScaleRule::kGgml},
      {"tosa", ScaleRule::kTosa}};
  for (const auto& [name, rule] : names) {
    const StatusOr<ScaleRule> r = ParseScaleRuleName(name);
    ASSERT_TRUE(r.ok()) << name;
    EXPECT_EQ(*r, rule);
    EXPECT_EQ(ScaleRuleCliName(rule), name);
  }
  for (const char* bad : {"", "floor", "OCP-FLOOR", "kOcpFloor", "tosa "}) {
    const StatusOr<ScaleRule> r = ParseScaleRuleName(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    const std::string m = r.status().message();
    EXPECT_NE(m.find(std::string("'") + bad + "'"), std::string::npos) << m;
    EXPECT_NE(m.find("ocp-floor, ceil, even, rceil, nki, ggml, tosa"), std::string::npos) << m;
  }
}

TEST(MxBlockKnownAnswer, InfPassThroughE5M2) {
  const float inf = std::numeric_limits<float>::infinity();
  // amax over the finite values only: 3, exponent field 128, kOcpFloor 128 - 15 = 0x71.
  const std::vector<float> v = {inf, 3.0f, -inf, -0.75f, 1.0f};
  const MxBlockCodes b = QuantizeMxBlock<Fp8E5M2Traits>(v, ScaleRule::kOcpFloor, {},
                                                        SpecialBlock::kInfPassThrough);
  EXPECT_EQ(b.scale.bits, 0x71);
  EXPECT_EQ(b.codes[0], 0x7C);
  EXPECT_EQ(b.codes[1], 0x7A);  // 3 * 2^14 = 49152 = 1.5 * 2^15
  EXPECT_EQ(b.codes[2], 0xFC);
  EXPECT_EQ(b.codes[3], 0xF2);  // -0.75 * 2^14 = -1.5 * 2^13
  EXPECT_EQ(b.codes[4], 0x74);
  std::vector<float> out(v.size());
  DequantizeMxBlock<Fp8E5M2Traits>(b, out);
  EXPECT_EQ(out, v);
  // Only Inf: amax 0 -> scale 00; NaN still wins.
  const MxBlockCodes bi = QuantizeMxBlock<Fp8E5M2Traits>(std::vector<float>{-inf, 0.0f},
                                                         ScaleRule::kRceil, {},
                                                         SpecialBlock::kInfPassThrough);
  EXPECT_EQ(bi.scale.bits, 0x00);
  EXPECT_EQ(bi.codes[0], 0xFC);
  const MxBlockCodes bn = QuantizeMxBlock<Fp8E5M2Traits>(
      std::vector<float>{inf, std::numeric_limits<float>::quiet_NaN()}, ScaleRule::kOcpFloor, {},
      SpecialBlock::kInfPassThrough);
  EXPECT_EQ(bn.scale.bits, 0xFF);
  EXPECT_EQ(bn.codes[0], 0x00);
  // Rejected for every other element format.
  EXPECT_TRUE(CheckMxBlockArgs<Fp8E5M2Traits>(32, ScaleRule::kOcpFloor,
                                              SpecialBlock::kInfPassThrough).ok());
  const Status s = CheckMxBlockArgs<Fp8E4M3Traits>(32, ScaleRule::kOcpFloor,
                                                   SpecialBlock::kInfPassThrough);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("kInfPassThrough"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("E5M2"), std::string::npos) << s.message();
  const MxBlockCodes bad = QuantizeMxBlock<Fp4E2M1Traits>(std::vector<float>{1.0f},
                                                          ScaleRule::kOcpFloor, {},
                                                          SpecialBlock::kInfPassThrough);
  EXPECT_EQ(bad.scale.bits, 0xFF);
  EXPECT_EQ(bad.flags & kFlagInvalid, kFlagInvalid);
}

TEST(ScaleRuleKnownAnswer, E2M3) {
  EXPECT_EQ(Code<Fp6E2M3Traits>(0x3F800000, ScaleRule::kOcpFloor), 0x7Du);
  EXPECT_EQ(Code<Fp6E2M3Traits>(0x3F800000, ScaleRule::kRceil), 0x7Du);
  EXPECT_EQ(Code<Fp6E2M3Traits>(0x40F00000, ScaleRule::kOcpFloor), 0x7Fu);  // 7.5
  EXPECT_EQ(Code<Fp6E2M3Traits>(0x40F00000, ScaleRule::kRceil), 0x7Fu);
  EXPECT_EQ(Code<Fp6E2M3Traits>(0x43E00000, ScaleRule::kOcpFloor), 0x85u);  // 448
  EXPECT_EQ(Code<Fp6E2M3Traits>(0x43E00000, ScaleRule::kRceil), 0x85u);
  EXPECT_EQ(Code<Fp6E2M3Traits>(0x417FFFFF, ScaleRule::kOcpFloor), 0x80u);
  EXPECT_EQ(Code<Fp6E2M3Traits>(0x417FFFFF, ScaleRule::kRceil), 0x81u);
}

template <class Traits>
void CheckSpecialAmax() {
  for (ScaleRule rule : kAllRules) {
    if (!IsScaleRuleDefined<Traits>(rule)) continue;
    SCOPED_TRACE(ScaleRuleName(rule));
    // 2^-127, 2^-149, 0 (and -0: bit 31 is ignored) -> 00.
    for (std::uint32_t a : {0x00400000u, 0x00000001u, 0u, 0x80000000u}) {
      EXPECT_EQ(Code<Traits>(a, rule), 0x00u) << std::hex << a;
    }
    // +Inf, NaN -> FF (default special block).
    for (std::uint32_t a : {0x7F800000u, 0x7FC00000u, 0x7F800001u, 0xFFFFFFFFu}) {
      EXPECT_EQ(Code<Traits>(a, rule), 0xFFu) << std::hex << a;
    }
  }
}

TEST(ScaleRuleKnownAnswer, ZeroTinyInfNan) {
  CheckSpecialAmax<Fp8E4M3Traits>();
  CheckSpecialAmax<Fp8E5M2Traits>();
  CheckSpecialAmax<Fp6E2M3Traits>();
  CheckSpecialAmax<Fp6E3M2Traits>();
  CheckSpecialAmax<Fp4E2M1Traits>();
  CheckSpecialAmax<MxInt8Traits>();
}

TEST(ScaleRuleKnownAnswer, LargestFiniteClampsToFE) {
  // kCeil and kEven reach 255 - emax at most; kRceil saturates at FE.
  EXPECT_EQ(Code<Fp4E2M1Traits>(0x7F7FFFFF, ScaleRule::kCeil), 0xFDu);
  EXPECT_EQ(Code<Fp4E2M1Traits>(0x7F7FFFFF, ScaleRule::kOcpFloor), 0xFCu);
  EXPECT_EQ(Code<MxInt8Traits>(0x7F7FFFFF, ScaleRule::kOcpFloor), 0xFEu);
  EXPECT_EQ(Code<Fp4E2M1Traits>(0x7F7FFFFF, ScaleRule::kGgml), 0xFDu);  // log2 rounds to 128
}

TEST(ScaleRuleDefinedness, RejectsUndefinedRules) {
  EXPECT_TRUE(IsScaleRuleDefined<Fp8E4M3Traits>(ScaleRule::kNki));
  EXPECT_TRUE(IsScaleRuleDefined<Fp4E2M1Traits>(ScaleRule::kGgml));
  EXPECT_FALSE(IsScaleRuleDefined<Fp6E2M3Traits>(ScaleRule::kNki));
  EXPECT_FALSE(IsScaleRuleDefined<Fp6E3M2Traits>(ScaleRule::kNki));
  EXPECT_FALSE(IsScaleRuleDefined<Fp8E4M3Traits>(ScaleRule::kGgml));
  EXPECT_FALSE(IsScaleRuleDefined<Fp6E2M3Traits>(ScaleRule::kGgml));
  for (ScaleRule rule : kAllRules) {
    EXPECT_EQ(IsScaleRuleDefined<MxInt8Traits>(rule), rule == ScaleRule::kOcpFloor);
    EXPECT_EQ(IsScaleRuleDefined<Fp6E3M2Traits>(rule),
              rule != ScaleRule::kNki && rule != ScaleRule::kGgml);
    EXPECT_FALSE(IsScaleRuleDefined<Bf16Traits>(rule));
  }
  const Status s = CheckScaleRule<Fp6E2M3Traits>(ScaleRule::kNki);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("kNki"), std::string::npos);
  EXPECT_TRUE(CheckScaleRule<Fp8E5M2Traits>(ScaleRule::kNki).ok());
  EXPECT_EQ(Code<Fp6E2M3Traits>(0x3F800000, ScaleRule::kNki), 0xFFu);
  EXPECT_EQ(Code<MxInt8Traits>(0x3F800000, ScaleRule::kCeil), 0xFFu);

  const float v[] = {1.0f};
  const MxBlockCodes b = QuantizeMxBlock<Fp8E4M3Traits>(v, ScaleRule::kGgml);
  EXPECT_EQ(b.scale.bits, 0xFF);
  EXPECT_EQ(b.flags & kFlagInvalid, kFlagInvalid);
  EXPECT_EQ(CheckMxBlockArgs<Fp8E4M3Traits>(33, ScaleRule::kOcpFloor).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckMxBlockArgs<Fp8E4M3Traits>(32, ScaleRule::kOcpFloor).ok());
  const std::vector<float> big(33, 1.0f);
  EXPECT_EQ(QuantizeMxBlock<Fp8E4M3Traits>(big).scale.bits, 0xFF);
}

// ---- Section 12.5 ----

template <class Traits>
void CheckBlock(const std::vector<float>& in, ScaleRule rule, unsigned scale,
                const std::vector<unsigned>& codes, const std::vector<float>& deq,
                const EncodeOptions& options = {}) {
  const MxBlockCodes b = QuantizeMxBlock<Traits>(in, rule, options);
  EXPECT_EQ(b.scale.bits, scale);
  ASSERT_EQ(codes.size(), in.size());
  for (std::size_t i = 0; i < kMxBlockSize; ++i) {
    const unsigned want = i < codes.size() ? codes[i] : 0u;  // tail padded with +0
    EXPECT_EQ(b.codes[i], want) << "element " << i;
  }
  std::vector<float> out(kMxBlockSize, -1.0f);
  DequantizeMxBlock<Traits>(b, out);
  for (std::size_t i = 0; i < kMxBlockSize; ++i) {
    const float want = i < deq.size() ? deq[i] : 0.0f;
    EXPECT_EQ(std::bit_cast<std::uint32_t>(out[i]), std::bit_cast<std::uint32_t>(want))
        << "element " << i << ": " << out[i] << " vs " << want;
  }
}

TEST(MxBlockKnownAnswer, E4M3OcpFloor) {
  CheckBlock<Fp8E4M3Traits>({960, 957, 902.4f, 1, -0.001f, 0, -0.0f, 17}, ScaleRule::kOcpFloor,
                            0x80, {0x7E, 0x7E, 0x7E, 0x30, 0x80, 0x00, 0x80, 0x50},
                            {896, 896, 896, 1, -0.0f, 0, -0.0f, 16});
}

TEST(MxBlockKnownAnswer, E4M3Rceil) {
  const std::vector<float> v = {1.875f, 1, 0x1p-7f, 0x1p-8f, 0.0029296875f, -1.5f};
  CheckBlock<Fp8E4M3Traits>(v, ScaleRule::kRceil, 0x78, {0x77, 0x70, 0x38, 0x30, 0x2C, 0xF4}, v);
}

TEST(MxBlockKnownAnswer, E5M2OcpFloor) {
  CheckBlock<Fp8E5M2Traits>({127.9999f, 1, 3, -0.75f}, ScaleRule::kOcpFloor, 0x76,
                            {0x7B, 0x60, 0x66, 0xDE}, {112, 1, 3, -0.75f});
}

const std::vector<float> kE2M1Block = {7, 2.5f, 0.75f, 1.25f, 1.75f, 3.5f, 5, -0.75f, -0.1f, 6.5f, 1};

TEST(MxBlockKnownAnswer, E2M1OcpFloor) {
  CheckBlock<Fp4E2M1Traits>(kE2M1Block, ScaleRule::kOcpFloor, 0x7F,
                            {0x7, 0x4, 0x2, 0x2, 0x4, 0x6, 0x6, 0xA, 0x8, 0x7, 0x2},
                            {6, 2, 1, 1, 2, 4, 4, -1, -0.0f, 6, 1});
}

TEST(MxBlockKnownAnswer, E2M1Rceil) {
  CheckBlock<Fp4E2M1Traits>(kE2M1Block, ScaleRule::kRceil, 0x80,
                            {0x6, 0x2, 0x1, 0x1, 0x2, 0x4, 0x4, 0x9, 0x8, 0x5, 0x1},
                            {8, 2, 1, 1, 2, 4, 4, -1, -0.0f, 6, 1});
}

TEST(MxBlockKnownAnswer, E2M3OcpFloor) {
  CheckBlock<Fp6E2M3Traits>({7.75f, 1.0625f, 3.25f, 0.0625f, -7.5f}, ScaleRule::kOcpFloor, 0x7F,
                            {0x1F, 0x08, 0x15, 0x00, 0x3F}, {7.5f, 1, 3.25f, 0, -7.5f});
}

TEST(MxBlockKnownAnswer, E3M2Rceil) {
  CheckBlock<Fp6E3M2Traits>({30, 5, 0.3125f, 0.0625f, -20}, ScaleRule::kRceil, 0x80,
                            {0x1C, 0x11, 0x02, 0x00, 0x39}, {32, 5, 0.25f, 0, -20});
}

TEST(MxBlockKnownAnswer, RoundingPolicyE2M1) {
  const std::vector<float> v = {4.0f, 2.5f, 0.75f, 1.25f, 5.0f, -2.5f, 0.25f};
  const auto values = [&](const EncodeOptions& o) {
    const MxBlockCodes b = QuantizeMxBlock<Fp4E2M1Traits>(v, ScaleRule::kOcpFloor, o);
    EXPECT_EQ(b.scale.bits, 0x7F);
    std::vector<float> out(v.size());
    DequantizeMxBlock<Fp4E2M1Traits>(b, out);
    return out;
  };
  EXPECT_EQ(values({}), (std::vector<float>{4, 2, 1, 1, 4, -2, 0}));
  EXPECT_EQ(values({.rounding = Rounding::kTiesAway}),
            (std::vector<float>{4, 3, 1, 1.5f, 6, -3, 0.5f}));
}

TEST(MxBlockKnownAnswer, MxInt8) {
  const std::vector<float> v = {1.0f, 0.5f, -1.0f, 1.0f / 128, 0.01171875f, -0.01171875f, 1.99f, -1.999f};
  const std::vector<unsigned> codes = {0x40, 0x20, 0xC0, 0x00, 0x01, 0xFF, 0x7F, 0x81};
  std::vector<float> deq;
  for (unsigned c : codes) deq.push_back(DecodeMxInt8(c));
  CheckBlock<MxInt8Traits>(v, ScaleRule::kOcpFloor, 0x7F, codes, deq);
  const MxBlockCodes b = QuantizeMxBlock<MxInt8Traits>(v, ScaleRule::kOcpFloor,
                                                       {.int8_range = Int8Range::kAllowMinus128});
  EXPECT_EQ(b.scale.bits, 0x7F);
  EXPECT_EQ(b.codes[7], 0x80);
  EXPECT_EQ(b.codes[6], 0x7F);
}

template <class Traits>
void CheckSpecialBlocks(ScaleRule rule) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (const std::vector<float>& v : {std::vector<float>{1, nan, 2}, std::vector<float>{-inf, 1},
                                      std::vector<float>{inf, nan}}) {
    const MxBlockCodes b = QuantizeMxBlock<Traits>(v, rule);
    EXPECT_EQ(b.scale.bits, 0xFF);
    for (std::uint8_t c : b.codes) EXPECT_EQ(c, 0);
    std::vector<float> out(kMxBlockSize);
    DequantizeMxBlock<Traits>(b, out);
    for (float x : out) EXPECT_TRUE(std::isnan(x));
  }
  // NaN stays FF/00 under kSatFiniteBlock too.
  const MxBlockCodes bn = QuantizeMxBlock<Traits>(std::vector<float>{inf, nan}, rule, {},
                                                  SpecialBlock::kSatFiniteBlock);
  EXPECT_EQ(bn.scale.bits, 0xFF);
  for (std::uint8_t c : bn.codes) EXPECT_EQ(c, 0);
  // All zero: scale 00, -0 keeps its code (section 3), decodes to 0.
  const MxBlockCodes bz = QuantizeMxBlock<Traits>(std::vector<float>{0.0f, -0.0f, 0.0f}, rule);
  EXPECT_EQ(bz.scale.bits, 0x00);
  std::vector<float> out(kMxBlockSize);
  DequantizeMxBlock<Traits>(bz, out);
  for (float x : out) EXPECT_EQ(x, 0.0f);
}

TEST(MxBlockKnownAnswer, SpecialBlocks) {
  for (ScaleRule rule : kAllRules) {
    SCOPED_TRACE(ScaleRuleName(rule));
    if (IsScaleRuleDefined<Fp8E4M3Traits>(rule)) CheckSpecialBlocks<Fp8E4M3Traits>(rule);
    if (IsScaleRuleDefined<Fp8E5M2Traits>(rule)) CheckSpecialBlocks<Fp8E5M2Traits>(rule);
    if (IsScaleRuleDefined<Fp6E2M3Traits>(rule)) CheckSpecialBlocks<Fp6E2M3Traits>(rule);
    if (IsScaleRuleDefined<Fp6E3M2Traits>(rule)) CheckSpecialBlocks<Fp6E3M2Traits>(rule);
    if (IsScaleRuleDefined<Fp4E2M1Traits>(rule)) CheckSpecialBlocks<Fp4E2M1Traits>(rule);
    if (IsScaleRuleDefined<MxInt8Traits>(rule)) CheckSpecialBlocks<MxInt8Traits>(rule);
  }
}

TEST(MxBlockKnownAnswer, SatFiniteBlockInf) {
  // TE/PTX style: scale FE, elements saturating convert(V_i * 2^-127).
  const float inf = std::numeric_limits<float>::infinity();
  for (ScaleRule rule : {ScaleRule::kOcpFloor, ScaleRule::kRceil}) {
    const MxBlockCodes b = QuantizeMxBlock<Fp8E4M3Traits>(
        std::vector<float>{inf, -inf, 3e38f, 1.0f}, rule, {.overflow = Overflow::kNonSat},
        SpecialBlock::kSatFiniteBlock);
    EXPECT_EQ(b.scale.bits, 0xFE);
    EXPECT_EQ(b.codes[0], 0x7E);  // +-448
    EXPECT_EQ(b.codes[1], 0xFE);
    EXPECT_EQ(b.codes[2], 0x3E);  // 3e38 * 2^-127 = 1.763 -> 1.75
    EXPECT_EQ(b.codes[3], 0x00);  // 2^-127 -> +0
  }
  const MxBlockCodes bi = QuantizeMxBlock<MxInt8Traits>(std::vector<float>{-inf, 2e38f},
                                                        ScaleRule::kOcpFloor, {},
                                                        SpecialBlock::kSatFiniteBlock);
  EXPECT_EQ(bi.scale.bits, 0xFE);
  EXPECT_EQ(bi.codes[0], 0x81);  // -127
  EXPECT_EQ(bi.codes[1], 0x4B);  // 2e38 * 2^-127 = 1.1755 * 64 = 75.2 -> 75
}

TEST(MxBlockKnownAnswer, TailBlockPaddedWithZero) {
  // A 3-element tail gives the same block as the 32-element zero-padded one.
  std::vector<float> full(kMxBlockSize, 0.0f);
  full[0] = 3.0f;
  full[1] = -0.3f;
  full[2] = 0.01f;
  const std::vector<float> tail(full.begin(), full.begin() + 3);
  for (ScaleRule rule : kAllRules) {
    const MxBlockCodes a = QuantizeMxBlock<Fp4E2M1Traits>(tail, rule);
    const MxBlockCodes b = QuantizeMxBlock<Fp4E2M1Traits>(full, rule);
    EXPECT_EQ(a.scale, b.scale);
    EXPECT_EQ(a.codes, b.codes);
  }
}

}  // namespace
}  // namespace trnmx
