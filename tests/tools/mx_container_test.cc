// The .mx container of the trnmx program: round trips for every MX format
// and axis (with tails and strided views), and every way a file can be
// truncated or corrupted giving an error, never a crash.
#include "mx_container.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace trnmx::cli {
namespace {

struct Owned {
  MxShape shape;
  std::vector<std::uint8_t> codes;
  std::vector<std::uint8_t> scales;
  std::size_t codes_stride = 0;
  std::size_t scales_stride = 0;
  float tensor_scale = 1.0f;
  MxTensorView view() const {
    return {shape, codes.data(), codes_stride, scales.data(), scales_stride, tensor_scale};
  }
};

// Random bytes with padded strides (the container stores minimal strides).
Owned RandomTensor(MxFormat f, std::size_t rows, std::size_t cols, BlockAxis axis,
                   std::mt19937& rng) {
  Owned t;
  t.shape = {f, rows, cols, axis};
  t.codes_stride = t.shape.line_code_bytes() + 3;
  t.scales_stride = t.shape.line_scale_bytes() + 1;
  t.codes.resize(t.shape.num_lines() * t.codes_stride + 1);
  t.scales.resize(t.shape.num_lines() * t.scales_stride + 1);
  for (auto& b : t.codes) b = static_cast<std::uint8_t>(rng());
  for (auto& b : t.scales) b = static_cast<std::uint8_t>(rng());
  if (GetMxFormatInfo(f).has_tensor_scale) t.tensor_scale = 0.0371f;
  return t;
}

TEST(MxContainer, RoundTripsEveryFormatAndAxis) {
  const unsigned seed = 20261130;
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (const MxFormatInfo& info : AllMxFormats()) {
    for (const BlockAxis axis : {BlockAxis::kRows, BlockAxis::kCols}) {
      for (const auto& [rows, cols] :
           {std::pair<std::size_t, std::size_t>{0, 0}, {1, 1}, {3, 33}, {40, 7}, {2, 64}}) {
        const Owned t = RandomTensor(info.format, rows, cols, axis, rng);
        const std::vector<std::uint8_t> bytes = SerializeMxContainer(t.view(), ScaleRule::kCeil);
        ASSERT_EQ(bytes.size(), kMxContainerHeaderBytes +
                                    t.shape.num_lines() *
                                        (t.shape.line_code_bytes() + t.shape.line_scale_bytes()));
        StatusOr<MxContainer> c = ParseMxContainer(bytes, "t.mx");
        ASSERT_TRUE(c.ok()) << c.status().ToString();
        EXPECT_EQ(c->shape.format, info.format);
        EXPECT_EQ(c->shape.axis, axis);
        EXPECT_EQ(c->shape.rows, rows);
        EXPECT_EQ(c->shape.cols, cols);
        EXPECT_EQ(c->rule, ScaleRule::kCeil);
        EXPECT_EQ(c->tensor_scale, t.tensor_scale);
        const MxTensorView v = c->view();
        for (std::size_t line = 0; line < t.shape.num_lines(); ++line) {
          for (std::size_t b = 0; b < t.shape.line_code_bytes(); ++b) {
            ASSERT_EQ(v.codes[line * v.codes_stride + b], t.codes[line * t.codes_stride + b]);
          }
          for (std::size_t b = 0; b < t.shape.line_scale_bytes(); ++b) {
            ASSERT_EQ(v.scales[line * v.scales_stride + b], t.scales[line * t.scales_stride + b]);
          }
        }
      }
    }
  }
}

void ExpectCorrupt(const std::vector<std::uint8_t>& bytes, const std::string& needle) {
  StatusOr<MxContainer> c = ParseMxContainer(bytes, "bad.mx");
  ASSERT_FALSE(c.ok()) << "expected '" << needle << "'";
  EXPECT_EQ(c.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(c.status().message().find("bad.mx"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status().message();
}

TEST(MxContainer, EveryTruncationAndEveryBitFlipIsAnError) {
  std::mt19937 rng(7);
  const Owned t = RandomTensor(MxFormat::kMxfp6E2M3, 3, 40, BlockAxis::kRows, rng);
  const std::vector<std::uint8_t> good = SerializeMxContainer(t.view(), ScaleRule::kOcpFloor);
  for (std::size_t n = 0; n < good.size(); ++n) {
    StatusOr<MxContainer> c = ParseMxContainer(std::span(good).first(n), "bad.mx");
    EXPECT_FALSE(c.ok()) << "prefix of " << n << " bytes parsed";
  }
  for (std::size_t byte = 0; byte < good.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<std::uint8_t> bad = good;
      bad[byte] ^= static_cast<std::uint8_t>(1u << bit);
      StatusOr<MxContainer> c = ParseMxContainer(bad, "bad.mx");
      EXPECT_FALSE(c.ok()) << "flip of byte " << byte << " bit " << bit << " parsed";
    }
  }
  std::vector<std::uint8_t> longer = good;
  longer.push_back(0);
  ExpectCorrupt(longer, "trailing bytes");
  ExpectCorrupt(std::vector<std::uint8_t>(good.begin(), good.end() - 1), "truncated");
  ExpectCorrupt(std::vector<std::uint8_t>(good.begin(), good.begin() + 20), "truncated header");
  ExpectCorrupt({'P', 'K'}, "magic");
  std::vector<std::uint8_t> payload = good;
  payload[100] ^= 1;
  ExpectCorrupt(payload, "data checksum");
  std::vector<std::uint8_t> header = good;
  header[17] ^= 1;
  ExpectCorrupt(header, "header checksum");
}

// Rewrites the header CRC (bytes 60..63: zlib CRC-32 of bytes 0..59, computed
// bitwise here, independently of the writer) after a header field was changed.
void PatchHeaderCrc(std::vector<std::uint8_t>* file) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t j = 0; j < 60; ++j) {
    c ^= (*file)[j];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  c = ~c;
  for (int i = 0; i < 4; ++i) (*file)[60 + i] = static_cast<std::uint8_t>(c >> (8 * i));
}

// Fields that are wrong although the header checksum was recomputed (a
// writer bug, not bit rot) are each named.
TEST(MxContainer, InconsistentHeadersAreNamed) {
  std::mt19937 rng(11);
  const Owned t = RandomTensor(MxFormat::kMxfp4, 2, 32, BlockAxis::kRows, rng);
  const std::vector<std::uint8_t> good = SerializeMxContainer(t.view(), ScaleRule::kOcpFloor);
  auto with = [&](std::size_t offset, std::uint8_t value) {
    std::vector<std::uint8_t> bad = good;
    bad[offset] = value;
    PatchHeaderCrc(&bad);
    return bad;
  };
  ExpectCorrupt(with(8, 2), "version 2");
  ExpectCorrupt(with(10, 99), "unknown MX format 99");
  ExpectCorrupt(with(11, 5), "unknown block axis 5");
  ExpectCorrupt(with(12, 200), "unknown scale rule 200");
  ExpectCorrupt(with(14, 1), "reserved");
  ExpectCorrupt(with(16, 3), "byte counts");                  // rows 2 -> 3
  ExpectCorrupt(with(23, 0x40), "needs more bytes");          // rows ~2^62
  ExpectCorrupt(with(35, 0x40), "tensor scale must be 1.0");  // 1.0 -> 2.0
}

// NVFP4's tensor scale must be finite and > 0, as CheckMxView requires: a
// header of 0.0 (the fuzzer's finding, tests/fuzz/corpus/mx_container) or
// -1.0 is refused, with the header CRC correct.
TEST(MxContainer, Nvfp4TensorScaleMustBePositive) {
  std::mt19937 rng(12);
  Owned t = RandomTensor(MxFormat::kNvfp4, 2, 32, BlockAxis::kRows, rng);
  for (const float bad_scale : {0.0f, -0.0f, -1.0f}) {
    t.tensor_scale = 1.0f;
    std::vector<std::uint8_t> file = SerializeMxContainer(t.view(), ScaleRule::kOcpFloor);
    ASSERT_TRUE(ParseMxContainer(file, "good.mx").ok());
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(bad_scale);
    for (int i = 0; i < 4; ++i) file[32 + i] = static_cast<std::uint8_t>(bits >> (8 * i));
    PatchHeaderCrc(&file);
    ExpectCorrupt(file, "tensor scale is not a finite value > 0");
  }
}

}  // namespace
}  // namespace trnmx::cli
