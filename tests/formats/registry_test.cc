// The runtime format registry: names, traits rows, batch conversions and
// their errors (nothing written on error).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <vector>

#include "trnmx/formats/codec.h"
#include "trnmx/formats/registry.h"

namespace trnmx {
namespace {

TEST(Registry, NamesRoundTrip) {
  for (const FormatInfo& info : AllFormats()) {
    const StatusOr<Format> f = ParseFormatName(info.name);
    ASSERT_TRUE(f.ok()) << info.name;
    EXPECT_EQ(*f, info.format);
    EXPECT_EQ(&GetFormatInfo(info.format), &info);
  }
}

TEST(Registry, UnknownNameListsValidOnes) {
  const StatusOr<Format> f = ParseFormatName("e4m3fnuz");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(f.status().message().find("'e4m3fnuz'"), std::string::npos);
  EXPECT_NE(f.status().message().find("e2m1"), std::string::npos);
  EXPECT_THROW((void)f.value(), StatusError);
}

TEST(Registry, TraitsRows) {
  const FormatInfo& e4m3 = GetFormatInfo(Format::kFp8E4M3);
  EXPECT_EQ(e4m3.max_normal, 448.0);
  EXPECT_EQ(e4m3.min_normal, 0x1p-6);
  EXPECT_EQ(e4m3.min_subnormal, 0x1p-9);
  EXPECT_FALSE(e4m3.has_inf);
  EXPECT_EQ(GetFormatInfo(Format::kFp8E5M2).max_normal, 57344.0);
  // Trainium's E4M3 beside OCP's: same shape and bias, other specials and max.
  const FormatInfo& ieee = GetFormatInfo(Format::kFp8E4M3Ieee);
  EXPECT_EQ(ieee.name, "e4m3-ieee");
  EXPECT_EQ(ieee.max_normal, 240.0);
  EXPECT_EQ(ieee.min_normal, 0x1p-6);
  EXPECT_EQ(ieee.min_subnormal, 0x1p-9);
  EXPECT_EQ(ieee.bias, e4m3.bias);
  EXPECT_TRUE(ieee.has_inf);
  EXPECT_TRUE(ieee.has_nan);
  EXPECT_EQ(*ParseFormatName("e4m3-ieee"), Format::kFp8E4M3Ieee);
  EXPECT_EQ(*ParseFormatName("e4m3"), Format::kFp8E4M3);
  EXPECT_EQ(GetFormatInfo(Format::kFp4E2M1).max_normal, 6.0);
  EXPECT_EQ(GetFormatInfo(Format::kScaleE8M0).min_subnormal, 0x1p-127);
  EXPECT_EQ(GetFormatInfo(Format::kMxInt8).max_normal, 127.0 / 64);
}

TEST(Registry, EncodeMatchesTemplates) {
  const std::vector<float> xs = {0.0f, -0.0f, 1.0f, -17.0f, 1000.0f, 1e-30f, NAN, -INFINITY, 0.3f};
  std::vector<std::uint32_t> codes(xs.size());
  ASSERT_TRUE(EncodeScalars(Format::kFp8E5M2, xs, codes, {}).ok());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    EXPECT_EQ(codes[i], EncodeWithFlags<Fp8E5M2Traits>(xs[i]).code) << i;
  }
  std::vector<float> back(xs.size());
  ASSERT_TRUE(DecodeScalars(Format::kFp8E5M2, codes, back).ok());
  EXPECT_EQ(back[3], -16.0f);
  EXPECT_EQ(back[4], 1024.0f);
}

TEST(Registry, Fp32IsIdentity) {
  const std::vector<float> xs = {1.5f, std::bit_cast<float>(0x7F800001u), std::bit_cast<float>(0x80000001u)};
  std::vector<std::uint32_t> codes(xs.size());
  ASSERT_TRUE(EncodeScalars(Format::kFp32, xs, codes, {}).ok());
  EXPECT_EQ(codes[1], 0x7F800001u);
  ConvertOptions daz;
  daz.element.subnormals = Subnormals::kFlush;
  ASSERT_TRUE(EncodeScalars(Format::kFp32, xs, codes, daz).ok());
  EXPECT_EQ(codes[2], 0x80000000u);
}

TEST(Registry, EncodeErrorsWriteNothing) {
  const std::vector<float> xs = {1.0f, 2.0f};
  std::vector<std::uint32_t> codes = {0xAAAA, 0xBBBB};
  std::vector<std::uint32_t> short_codes(1, 0xCCCC);
  EXPECT_EQ(EncodeScalars(Format::kFp8E4M3, xs, short_codes, {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(short_codes[0], 0xCCCCu);

  ConvertOptions sr;
  sr.element.rounding = Rounding::kStochastic;
  const Status s = EncodeScalars(Format::kFp8E4M3, xs, codes, sr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("random"), std::string::npos);
  EXPECT_EQ(codes[0], 0xAAAAu);

  const Status e8 = EncodeScalars(Format::kScaleE8M0, xs, codes, {});
  EXPECT_EQ(e8.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e8.message().find("rounding"), std::string::npos);
  EXPECT_EQ(codes[1], 0xBBBBu);

  ConvertOptions e8ok;
  e8ok.e8m0_rounding = E8M0Rounding::kUp;
  ASSERT_TRUE(EncodeScalars(Format::kScaleE8M0, xs, codes, e8ok).ok());
  EXPECT_EQ(codes[0], 0x7Fu);
  EXPECT_EQ(codes[1], 0x80u);

  std::vector<std::uint8_t> flags(3);
  EXPECT_FALSE(EncodeScalars(Format::kFp8E4M3, xs, codes, {}, {}, flags).ok());
}

TEST(Registry, DecodeRejectsOutOfRangeCodes) {
  const std::vector<std::uint32_t> codes = {0x7, 0x10};
  std::vector<float> out = {-1.0f, -1.0f};
  const Status s = DecodeScalars(Format::kFp4E2M1, codes, out);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_NE(s.message().find("0x10"), std::string::npos);
  EXPECT_NE(s.message().find("index 1"), std::string::npos);
  EXPECT_EQ(out[0], -1.0f);  // Nothing written.
  std::vector<float> short_out(1);
  EXPECT_EQ(DecodeScalars(Format::kFp4E2M1, codes, short_out).code(), StatusCode::kInvalidArgument);
}

TEST(Status, ToStringNamesTheCode) {
  EXPECT_EQ(OkStatus().ToString(), "OK");
  EXPECT_EQ(DataLossError("truncated").ToString(), "DATA_LOSS: truncated");
  const StatusOr<int> from_ok_status = OkStatus();  // A misuse: becomes an internal error.
  EXPECT_FALSE(from_ok_status.ok());
  EXPECT_EQ(from_ok_status.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace trnmx
