// Packed MX element layouts (mx_pack.h, formats.md section 9): exhaustive
// round trips over every code value and byte pattern, an independent
// bit-by-bit reference, and known-answer byte vectors.
#include <array>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "trnmx/formats/mx_pack.h"

namespace trnmx {
namespace {

// Independent reference: bit k of code i goes to stream bit i * bits + k,
// stream bit s is bit s % 8 of byte s / 8 (LSB first).
std::vector<std::uint8_t> RefPack(const std::vector<std::uint8_t>& codes, int bits) {
  std::vector<std::uint8_t> out(PackedBytes(bits, codes.size()), 0);
  for (std::size_t i = 0; i < codes.size(); ++i) {
    for (int k = 0; k < bits; ++k) {
      const std::size_t s = i * static_cast<std::size_t>(bits) + static_cast<std::size_t>(k);
      if ((codes[i] >> k) & 1) out[s / 8] = static_cast<std::uint8_t>(out[s / 8] | 1u << (s % 8));
    }
  }
  return out;
}

TEST(MxPack, PackedBytes) {
  EXPECT_EQ(PackedBytes(4, 32), 16u);
  EXPECT_EQ(PackedBytes(6, 32), 24u);
  EXPECT_EQ(PackedBytes(8, 32), 32u);
  EXPECT_EQ(PackedBytes(4, 16), 8u);
  EXPECT_EQ(PackedBytes(4, 3), 2u);
  EXPECT_EQ(PackedBytes(6, 5), 4u);  // 30 bits
  EXPECT_EQ(PackedBytes(6, 0), 0u);
}

TEST(MxPack, Fp4EveryByteAndPair) {
  for (unsigned byte = 0; byte < 256; ++byte) {
    const std::uint8_t in[1] = {static_cast<std::uint8_t>(byte)};
    std::uint8_t codes[2];
    ASSERT_TRUE(UnpackFp4(in, codes));
    EXPECT_EQ(codes[0], byte & 0xF);  // element 2i in bits 3..0
    EXPECT_EQ(codes[1], byte >> 4);
    std::uint8_t out[1] = {0x5A};
    ASSERT_TRUE(PackFp4(codes, out));
    EXPECT_EQ(out[0], byte);
  }
}

TEST(MxPack, Fp6EveryThreeBytePattern) {
  // All 2^24 groups of four codes: unpack(bytes) then pack gives the bytes back,
  // and unpack agrees with the bit-level definition.
  std::uint64_t bad = 0;
  for (std::uint32_t v = 0; v < (1u << 24); ++v) {
    const std::uint8_t bytes[3] = {static_cast<std::uint8_t>(v), static_cast<std::uint8_t>(v >> 8),
                                   static_cast<std::uint8_t>(v >> 16)};
    std::uint8_t codes[4];
    UnpackFp6(bytes, codes);
    std::uint8_t back[3];
    PackFp6(codes, back);
    bool ok = back[0] == bytes[0] && back[1] == bytes[1] && back[2] == bytes[2];
    for (int i = 0; i < 4; ++i) ok = ok && codes[i] == ((v >> (6 * i)) & 0x3F);
    if (!ok && ++bad < 5) ADD_FAILURE() << std::hex << "bytes " << v;
  }
  EXPECT_EQ(bad, 0u);
}

TEST(MxPack, KnownAnswers) {
  // formats.md section 9: 01 02 03 3F -> 81 30 FC.
  const std::uint8_t fp6[4] = {0x01, 0x02, 0x03, 0x3F};
  std::uint8_t b6[3] = {};
  ASSERT_TRUE(PackFp6(fp6, b6));
  EXPECT_EQ(b6[0], 0x81);
  EXPECT_EQ(b6[1], 0x30);
  EXPECT_EQ(b6[2], 0xFC);
  // FP4: element 2i low nibble. E2M1 codes 1.0 (2), -0.5 (9), 6 (7), -6 (F).
  const std::uint8_t fp4[4] = {0x2, 0x9, 0x7, 0xF};
  std::uint8_t b4[2] = {};
  ASSERT_TRUE(PackFp4(fp4, b4));
  EXPECT_EQ(b4[0], 0x92);
  EXPECT_EQ(b4[1], 0xF7);
  // A whole FP4 block 0..F, 0..F -> 10 32 54 76 98 BA DC FE twice.
  std::array<std::uint8_t, 32> ramp{};
  for (int i = 0; i < 32; ++i) ramp[i] = static_cast<std::uint8_t>(i % 16);
  std::array<std::uint8_t, 16> blk{};
  ASSERT_TRUE(PackMxCodes(MxFormat::kMxfp4, ramp, blk));
  const std::uint8_t want4[8] = {0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(blk[i], want4[i % 8]) << i;
  // A whole FP6 block of codes 0..31 (bits 6i..6i+5 hold i).
  std::array<std::uint8_t, 32> ramp6{};
  for (int i = 0; i < 32; ++i) ramp6[i] = static_cast<std::uint8_t>(i);
  std::array<std::uint8_t, 24> blk6{};
  ASSERT_TRUE(PackMxCodes(MxFormat::kMxfp6E2M3, ramp6, blk6));
  const std::uint8_t want6[6] = {0x40, 0x20, 0x0C, 0x44, 0x61, 0x1C};  // codes 0..7
  for (int i = 0; i < 6; ++i) EXPECT_EQ(blk6[i], want6[i]) << i;
  // Odd counts: the unused bits are zero.
  const std::uint8_t three[3] = {0xF, 0xF, 0xF};
  std::uint8_t b3[2] = {0xAA, 0xAA};
  ASSERT_TRUE(PackFp4(three, b3));
  EXPECT_EQ(b3[1], 0x0F);
  const std::uint8_t one6[1] = {0x3F};
  std::uint8_t b1[1] = {0xFF};
  ASSERT_TRUE(PackFp6(one6, b1));
  EXPECT_EQ(b1[0], 0x3F);
}

TEST(MxPack, EveryCodeAtEveryPosition) {
  for (const int bits : {4, 6}) {
    const MxFormat f = bits == 4 ? MxFormat::kMxfp4 : MxFormat::kMxfp6E3M2;
    for (unsigned code = 0; code < (1u << bits); ++code) {
      for (std::size_t pos = 0; pos < 32; ++pos) {
        std::vector<std::uint8_t> codes(32, 0);
        codes[pos] = static_cast<std::uint8_t>(code);
        std::vector<std::uint8_t> bytes(PackedBytes(bits, 32), 0xEE);
        ASSERT_TRUE(PackMxCodes(f, codes, bytes));
        EXPECT_EQ(bytes, RefPack(codes, bits)) << bits << " " << code << " " << pos;
        std::vector<std::uint8_t> back(32, 0xEE);
        ASSERT_TRUE(UnpackMxCodes(f, bytes, back));
        EXPECT_EQ(back, codes);
      }
    }
  }
}

TEST(MxPack, RandomBlocksAndLengthsAgainstReference) {
  const std::uint64_t seed = 20240611;
  std::printf("  seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  for (int iter = 0; iter < 2000; ++iter) {
    for (const int bits : {4, 6, 8}) {
      const std::size_t n = rng() % 70;
      std::vector<std::uint8_t> codes(n);
      for (auto& c : codes) c = static_cast<std::uint8_t>(rng() & ((1u << bits) - 1));
      const MxFormat f = bits == 4 ? MxFormat::kMxfp4
                         : bits == 6 ? MxFormat::kMxfp6E2M3
                                     : MxFormat::kMxfp8E5M2;
      std::vector<std::uint8_t> bytes(PackedBytes(bits, n) + 1, 0x77);
      ASSERT_TRUE(PackMxCodes(f, codes, bytes));
      EXPECT_EQ(bytes.back(), 0x77) << "wrote past the packed length";
      bytes.pop_back();
      EXPECT_EQ(bytes, RefPack(codes, bits));
      std::vector<std::uint8_t> back(n);
      ASSERT_TRUE(UnpackMxCodes(f, bytes, back));
      EXPECT_EQ(back, codes);
    }
  }
}

TEST(MxPack, HighBitsMaskedAndShortSpansRefused) {
  const std::uint8_t codes[2] = {0xF3, 0xC5};  // bits above 4 ignored
  std::uint8_t b[1];
  ASSERT_TRUE(PackFp4(codes, b));
  EXPECT_EQ(b[0], 0x53);
  const std::uint8_t c6[4] = {0xC1, 0x42, 0x83, 0xFF};
  std::uint8_t b6[3];
  ASSERT_TRUE(PackFp6(c6, b6));
  EXPECT_EQ(b6[0], 0x81);
  EXPECT_EQ(b6[2], 0xFC);
  std::uint8_t small[2] = {1, 2};
  const std::uint8_t five[5] = {1, 2, 3, 4, 5};
  EXPECT_FALSE(PackFp4(five, small));  // needs 3 bytes
  EXPECT_EQ(small[0], 1);
  EXPECT_FALSE(PackFp6(five, std::span<std::uint8_t>(small, 2)));  // needs 4
  std::uint8_t out5[5];
  EXPECT_FALSE(UnpackFp6(std::span<const std::uint8_t>(five, 3), out5));
  EXPECT_FALSE(UnpackMxCodes(MxFormat::kMxint8, std::span<const std::uint8_t>(five, 4), out5));
}

}  // namespace
}  // namespace trnmx
