// XORWOW (xorwow.h): the generator against an independent implementation of
// Marsaglia's published algorithm (known answers computed with Python from
// the paper's recurrence and stochastic.h's SplitMix64 seeding), and MX
// quantization with StochasticSource::kXorwow: a known answer, and equality
// with the one-block reference fed the generator's words in row-major order
// on both block axes and any thread count.
#include "trnmx/formats/xorwow.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "trnmx/executor.h"
#include "trnmx/formats/mx_block.h"
#include "trnmx/mx.h"

namespace trnmx {
namespace {

TEST(Xorwow, MarsagliaStateKnownAnswers) {
  Xorwow g = Xorwow::Marsaglia();
  const std::uint32_t want[] = {0x0EB70507u, 0xDBF10AA0u, 0x4B5FF98Du, 0xE8DBAE01u, 0x6F3BC4A7u};
  for (std::uint32_t w : want) EXPECT_EQ(g.Next(), w);
}

TEST(Xorwow, SeedingKnownAnswers) {
  // Seed 42: x..v = StochasticBits(42, 0..4) = 989B3F13 290DB4BF 2A990BE6
  // 0C4B6B24 FB16A06E, d = 6615241.
  Xorwow g = Xorwow::FromSeed(42);
  Xorwow same(0x989B3F13u, 0x290DB4BFu, 0x2A990BE6u, 0x0C4B6B24u, 0xFB16A06Eu, 6615241u);
  const std::uint32_t want[] = {0x8A253085u, 0x7832A28Au, 0x6C1EE27Eu, 0xC1513E0Eu};
  for (std::uint32_t w : want) {
    EXPECT_EQ(g.Next(), w);
    EXPECT_EQ(same.Next(), w);
  }
  std::vector<std::uint32_t> words(3);
  Xorwow f = Xorwow::FromSeed(42);
  f.Fill(words);
  EXPECT_EQ(words, (std::vector<std::uint32_t>{0x8A253085u, 0x7832A28Au, 0x6C1EE27Eu}));
}

// 32 x 1.25 into MXFP4: scale 2^-2 (OCP floor: 0 - emax 2), elements 5.0,
// halfway between 4 and 6 (frac32 = 2^31): up to 6 iff the word >= 2^31.
// Decoded: 1.5 or 1.0, following the first 32 words of FromSeed(42).
TEST(Xorwow, StochasticMxfp4KnownAnswer) {
  const std::vector<float> x(32, 1.25f);
  MxQuantizeOptions o;
  o.element.rounding = Rounding::kStochastic;
  o.stochastic_seed = 42;
  o.stochastic_source = StochasticSource::kXorwow;
  StatusOr<MxTensor> t = QuantizeMx(Fp32MatrixView{x.data(), 1, 32, 32}, MxFormat::kMxfp4, o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  std::vector<float> y(32);
  ASSERT_TRUE(DequantizeMx(t->view(), {y.data(), 1, 32, 32}).ok());
  // 1 where the word is >= 2^31 (Python, from the recurrence).
  const int up[32] = {1, 0, 0, 1, 1, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 1,
                      1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 1, 1, 0, 0, 1, 1};
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], up[i] ? 1.5f : 1.0f) << "element " << i;
}

// Element (r, c) gets word r * cols + c whatever the axis and threads: the
// tensor equals the one-block reference (QuantizeMxBlock) fed those words.
TEST(Xorwow, StochasticMxMatchesBlockReferenceOnBothAxes) {
  const std::size_t rows = 40, cols = 70;
  std::vector<float> x(rows * cols);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37 % 101) - 50) / 7.0f;
  std::vector<std::uint32_t> words(rows * cols);
  Xorwow::FromSeed(5).Fill(words);
  ThreadPoolExecutor pool(3);
  for (BlockAxis axis : {BlockAxis::kRows, BlockAxis::kCols}) {
    MxQuantizeOptions o;
    o.axis = axis;
    o.element.rounding = Rounding::kStochastic;
    o.stochastic_seed = 5;
    o.stochastic_source = StochasticSource::kXorwow;
    StatusOr<MxTensor> t =
        QuantizeMx(Fp32MatrixView{x.data(), rows, cols, cols}, MxFormat::kMxfp8E4M3, o, &pool);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    std::vector<float> got(rows * cols);
    ASSERT_TRUE(DequantizeMx(t->view(), {got.data(), rows, cols, cols}).ok());
    const bool by_rows = axis == BlockAxis::kRows;
    const std::size_t lines = by_rows ? rows : cols, len = by_rows ? cols : rows;
    for (std::size_t l = 0; l < lines; ++l) {
      for (std::size_t b0 = 0; b0 < len; b0 += 32) {
        const std::size_t n = std::min<std::size_t>(32, len - b0);
        std::vector<float> in(n);
        std::vector<std::uint32_t> rnd(n);
        for (std::size_t j = 0; j < n; ++j) {
          const std::size_t r = by_rows ? l : b0 + j, c = by_rows ? b0 + j : l;
          in[j] = x[r * cols + c];
          rnd[j] = words[r * cols + c];
        }
        const MxBlockCodes blk = QuantizeMxBlock<Fp8E4M3Traits>(in, ScaleRule::kOcpFloor, o.element,
                                                                SpecialBlock::kDefault, rnd);
        std::vector<float> want(n);
        DequantizeMxBlock<Fp8E4M3Traits>(blk, want);
        for (std::size_t j = 0; j < n; ++j) {
          const std::size_t r = by_rows ? l : b0 + j, c = by_rows ? b0 + j : l;
          ASSERT_EQ(got[r * cols + c], want[j])
              << "axis " << by_rows << " (" << r << ", " << c << ")";
        }
      }
    }
  }
}

TEST(Xorwow, BadSourceIsRefused) {
  MxQuantizeOptions o;
  o.stochastic_source = static_cast<StochasticSource>(9);
  const Status s = CheckMxQuantizeOptions(MxFormat::kMxfp4, o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("options.stochastic_source"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace trnmx
