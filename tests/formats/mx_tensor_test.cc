// MX tensors (mx.h): quantize / dequantize against the one-block reference
// assembled by hand, every format x axis x shape (tails included), strided
// and offset sources, BF16 sources, thread-count bit identity, stochastic
// rounding, NVFP4 and GGML MXFP4 known answers, and every error path.
//
// Random inputs come from std::mt19937_64; the seed is printed and can be
// set with TRNMX_TEST_SEED.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "formats/mx_line.h"
#include "formats/mx_tensor_test_support.h"
#include "trnmx/executor.h"
#include "trnmx/mx.h"

namespace trnmx {
namespace {

using testing_mx::AllOptionVariants;
using testing_mx::Bits;
using testing_mx::CheckAgainstReference;
using testing_mx::MakeInput;
using testing_mx::Seed;

constexpr std::size_t kShapes[] = {0, 1, 2, 3, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 70};

TEST(MxTensor, EveryFormatAxisShapeMatchesBlockReference) {
  std::mt19937_64 rng(Seed());
  SerialExecutor serial;
  for (const MxFormatInfo& info : AllMxFormats()) {
    for (const BlockAxis axis : {BlockAxis::kRows, BlockAxis::kCols}) {
      for (const std::size_t rows : kShapes) {
        for (const std::size_t cols : kShapes) {
          MxQuantizeOptions o;
          o.axis = axis;
          CheckAgainstReference(info.format, rows, cols, cols, o, rng, &serial, false);
        }
      }
    }
  }
}

TEST(MxTensor, EveryRuleAndOptionMatchesBlockReference) {
  std::mt19937_64 rng(Seed() + 1);
  SerialExecutor serial;  // Thread counts: ThreadCountsGiveIdenticalBits.
  for (const MxFormatInfo& info : AllMxFormats()) {
    for (const MxQuantizeOptions& o : AllOptionVariants(info.format)) {
      for (const auto& [rows, cols] : {std::pair<std::size_t, std::size_t>{5, 70}, {33, 17}, {64, 64}}) {
        CheckAgainstReference(info.format, rows, cols, cols + 3, o, rng, &serial, true);
      }
    }
  }
}

TEST(MxTensor, StridedAndOffsetSourcesAndBf16) {
  std::mt19937_64 rng(Seed() + 2);
  for (const MxFormatInfo& info : AllMxFormats()) {
    for (const BlockAxis axis : {BlockAxis::kRows, BlockAxis::kCols}) {
      for (std::size_t offset = 0; offset < 4; ++offset) {
        MxQuantizeOptions o;
        o.axis = axis;
        // row_stride > cols, source and destination starting `offset` elements
        // (bytes for codes) past an aligned address.
        testing_mx::CheckStridedOffset(info.format, 37, 45, 45 + 5 + offset, offset, o, rng);
      }
    }
  }
}

// Large enough for many work items (groups of lines and segments of lines).
TEST(MxTensor, ThreadCountsGiveIdenticalBits) {
  std::mt19937_64 rng(Seed() + 3);
  SerialExecutor serial;
  ThreadPoolExecutor p1(1), p2(2), p3(3);
  Executor* executors[] = {&p1, &p2, &p3, &DefaultExecutor(), nullptr};
  struct Case {
    std::size_t rows, cols;
  };
  for (const MxFormat f : {MxFormat::kMxfp8E4M3, MxFormat::kMxfp6E3M2, MxFormat::kMxfp4,
                           MxFormat::kMxint8, MxFormat::kNvfp4}) {
    for (const BlockAxis axis : {BlockAxis::kRows, BlockAxis::kCols}) {
      for (const Case c : {Case{130, 257}, Case{2, 17000}, Case{17000, 2}}) {
        MxQuantizeOptions o;
        o.axis = axis;
        o.element.rounding = Rounding::kStochastic;
        o.stochastic_seed = 99;
        const std::vector<float> x = MakeInput(c.rows * c.cols, rng, false);
        const Fp32MatrixView src{x.data(), c.rows, c.cols, c.cols};
        StatusOr<MxTensor> want = QuantizeMx(src, f, o, &serial);
        ASSERT_TRUE(want.ok()) << want.status().ToString();
        std::vector<float> want_y(x.size());
        ASSERT_TRUE(DequantizeMx(want->view(), {want_y.data(), c.rows, c.cols, c.cols}, &serial).ok());
        for (Executor* ex : executors) {
          StatusOr<MxTensor> got = QuantizeMx(src, f, o, ex);
          ASSERT_TRUE(got.ok());
          EXPECT_TRUE(std::equal(got->codes().begin(), got->codes().end(), want->codes().begin()));
          EXPECT_TRUE(std::equal(got->scales().begin(), got->scales().end(), want->scales().begin()));
          EXPECT_EQ(Bits(got->tensor_scale()), Bits(want->tensor_scale()));
          std::vector<float> y(x.size());
          ASSERT_TRUE(DequantizeMx(got->view(), {y.data(), c.rows, c.cols, c.cols}, ex).ok());
          for (std::size_t i = 0; i < y.size(); ++i) {
            ASSERT_EQ(Bits(y[i]), Bits(want_y[i])) << "element " << i;
          }
        }
      }
    }
  }
}

// Row tensors of at least 8 MiB of codes are quantized in long segments
// with non-temporal stores (mx_tensor.cc, kStreamSegment): the bits of the
// scalar line reference per row, from FP32 and BF16 sources, on the calling
// thread and on 2 threads, into an MxTensor and into padded lines that start
// 16 bytes past the buffer's start.
TEST(MxTensor, LargeRowTensorsStream) {
  std::mt19937_64 rng(Seed() + 7);
  constexpr std::size_t kRows = 3;
  constexpr std::size_t kCols = (std::size_t{3} << 20) + 45;  // 9.4 MiB of MXFP8 codes
  const MxFormat f = MxFormat::kMxfp8E4M3;
  const std::vector<float> x = MakeInput(kRows * kCols, rng, false);
  std::vector<Bf16> xb(x.size());
  std::vector<float> wide(x.size());  // the BF16 values, exactly
  for (std::size_t i = 0; i < x.size(); ++i) {
    xb[i] = Bf16::FromBits(static_cast<std::uint16_t>(Bits(x[i]) >> 16));
    wide[i] = std::bit_cast<float>(std::uint32_t{xb[i].bits} << 16);
  }
  const MxShape shape{f, kRows, kCols, BlockAxis::kRows};
  std::vector<std::uint8_t> want_codes(kRows * shape.line_code_bytes());
  std::vector<std::uint8_t> want_scales(kRows * shape.line_scale_bytes());
  internal::MxLineParams p;
  p.format = f;
  for (std::size_t r = 0; r < kRows; ++r) {
    internal::QuantizeMxLineScalar(p, wide.data() + r * kCols, kCols,
                                   want_codes.data() + r * shape.line_code_bytes(),
                                   want_scales.data() + r * shape.line_scale_bytes());
  }
  SerialExecutor serial;
  ThreadPoolExecutor pool(2);
  for (Executor* ex : std::initializer_list<Executor*>{&serial, &pool}) {
    for (const bool bf16 : {false, true}) {
      SCOPED_TRACE(std::string(bf16 ? "BF16" : "FP32") + (ex == &pool ? ", 2 threads" : ""));
      testing::MxTestTensor dst = testing::AllocateMxTestTensor(
          shape, {.code_pad = 16, .scale_pad = 1, .offset = 16, .code_fill = 0xA5});
      MxTensorSpan span = dst.span();
      const Status s =
          bf16 ? QuantizeMxInto(Bf16MatrixView{xb.data(), kRows, kCols, kCols}, span, {}, ex)
               : QuantizeMxInto(Fp32MatrixView{wide.data(), kRows, kCols, kCols}, span, {}, ex);
      ASSERT_TRUE(s.ok()) << s.ToString();
      for (std::size_t r = 0; r < kRows; ++r) {
        const std::uint8_t* got = dst.line_codes(r);
        const std::uint8_t* want = want_codes.data() + r * shape.line_code_bytes();
        ASSERT_TRUE(std::equal(want, want + shape.line_code_bytes(), got)) << "row " << r;
        ASSERT_EQ(got[shape.line_code_bytes()], 0xA5) << "padding written, row " << r;
        const std::uint8_t* got_s = dst.line_scales(r);
        ASSERT_TRUE(std::equal(want_scales.begin() + r * shape.line_scale_bytes(),
                               want_scales.begin() + (r + 1) * shape.line_scale_bytes(), got_s))
            << "row " << r;
      }
    }
  }
}

TEST(MxTensor, StochasticDependsOnlyOnSeedAndPosition) {
  // Both axes match the reference with StochasticBits(seed, r * cols + c)
  // (EveryRuleAndOption...); here: same seed, same bits; another seed differs.
  std::mt19937_64 rng(Seed() + 4);
  const std::vector<float> x = MakeInput(64 * 64, rng, false);
  const Fp32MatrixView src{x.data(), 64, 64, 64};
  MxQuantizeOptions a;
  a.element.rounding = Rounding::kStochastic;
  a.stochastic_seed = 1;
  MxQuantizeOptions b = a;
  b.stochastic_seed = 2;
  const StatusOr<MxTensor> ta = QuantizeMx(src, MxFormat::kMxfp4, a);
  const StatusOr<MxTensor> tb = QuantizeMx(src, MxFormat::kMxfp4, b);
  const StatusOr<MxTensor> ta2 = QuantizeMx(src, MxFormat::kMxfp4, a);
  ASSERT_TRUE(ta.ok() && tb.ok() && ta2.ok());
  EXPECT_FALSE(std::equal(ta->codes().begin(), ta->codes().end(), tb->codes().begin()));
  EXPECT_TRUE(std::equal(ta->codes().begin(), ta->codes().end(), ta2->codes().begin()));
  // The documented formula.
  EXPECT_EQ(StochasticBits(0, 0), static_cast<std::uint32_t>(
                                      SplitMix64Mix(SplitMix64Mix(0) + 0x9E3779B97F4A7C15ull) >> 32));
}

// ---- NVFP4 known answers (formats.md section 8; values from a float32 numpy
// transcription of TE's order of operations). ----

TEST(MxTensorNvfp4, KnownAnswers) {
  // Global amax 3: S_enc = 896, S_dec = fl32(1/896) = 3A924925.
  std::vector<float> x(48, 0.0f);
  x[0] = 3.0f, x[1] = -1.5f, x[2] = 0.75f;      // block amax 3   -> UE4M3 7E (448)
  x[16] = 1.5f, x[17] = -0.75f, x[18] = 0.375f;  // block amax 1.5 -> 76 (224)
  x[32] = 0.9f, x[33] = -0.45f, x[34] = 0.225f;  // block amax 0.9 -> 70 (128)
  StatusOr<MxTensor> t = QuantizeMx(Fp32MatrixView{x.data(), 1, 48, 48}, MxFormat::kNvfp4);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(Bits(t->tensor_scale()), 0x3A924925u);
  EXPECT_EQ(Bits(Nvfp4EncodeScale(3.0f)), Bits(896.0f));
  ASSERT_EQ(t->scales().size(), 3u);
  EXPECT_EQ(t->scales()[0], 0x7E);
  EXPECT_EQ(t->scales()[1], 0x76);
  EXPECT_EQ(t->scales()[2], 0x70);
  ASSERT_EQ(t->codes().size(), 24u);
  for (int b = 0; b < 3; ++b) {  // codes 7 (6), D (-3), 3 (1.5): bytes D7 03 00 ...
    EXPECT_EQ(t->codes()[b * 8 + 0], 0xD7) << b;
    EXPECT_EQ(t->codes()[b * 8 + 1], 0x03) << b;
    for (int i = 2; i < 8; ++i) EXPECT_EQ(t->codes()[b * 8 + i], 0x00);
  }
  std::vector<float> y(48);
  ASSERT_TRUE(DequantizeMx(t->view(), {y.data(), 1, 48, 48}).ok());
  const std::uint32_t want[9] = {0x40400001, 0xBFC00001, 0x3F400001,   // 3.0000002 ...
                                 0x3FC00001, 0xBF400001, 0x3EC00001,
                                 0x3F5B6DB8, 0xBEDB6DB8, 0x3E5B6DB8};
  for (int b = 0; b < 3; ++b) {
    for (int i = 0; i < 3; ++i) EXPECT_EQ(Bits(y[b * 16 + i]), want[b * 3 + i]) << b << " " << i;
    for (int i = 3; i < 16; ++i) EXPECT_EQ(Bits(y[b * 16 + i]), 0u);
  }
}

TEST(MxTensorNvfp4, UnitTensorScaleAndSpecials) {
  // Global amax 2688 -> S_enc = S_dec = 1; amax 806.4 block: scale 70 (128),
  // 806.4 -> 6 * 128 = 768.
  std::vector<float> x(32, 0.0f);
  x[0] = 2688.0f;
  x[16] = 806.4f;
  x[17] = -403.2f;
  StatusOr<MxTensor> t = QuantizeMx(Fp32MatrixView{x.data(), 1, 32, 32}, MxFormat::kNvfp4);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->tensor_scale(), 1.0f);
  EXPECT_EQ(t->scales()[0], 0x7E);
  EXPECT_EQ(t->scales()[1], 0x70);
  std::vector<float> y(32);
  ASSERT_TRUE(DequantizeMx(t->view(), {y.data(), 1, 32, 32}).ok());
  EXPECT_EQ(y[0], 2688.0f);
  EXPECT_EQ(y[16], 768.0f);
  EXPECT_EQ(y[17], -384.0f);

  EXPECT_EQ(Nvfp4EncodeScale(0.0f), 1.0f);
  EXPECT_EQ(Nvfp4EncodeScale(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_EQ(Nvfp4EncodeScale(1e-38f), std::numeric_limits<float>::max());  // 2688 / 1e-38 = Inf
  // All zero: scale 00, decodes to 0. NaN block: scale 7F, decodes to NaN;
  // the NaN does not enter the global amax.
  std::vector<float> z(48, 0.0f);
  z[16] = std::numeric_limits<float>::quiet_NaN();
  z[32] = 5.0f;
  StatusOr<MxTensor> tz = QuantizeMx(Fp32MatrixView{z.data(), 1, 48, 48}, MxFormat::kNvfp4);
  ASSERT_TRUE(tz.ok());
  EXPECT_EQ(Bits(tz->tensor_scale()), Bits(1.0f / Nvfp4EncodeScale(5.0f)));
  EXPECT_EQ(tz->scales()[0], 0x00);
  EXPECT_EQ(tz->scales()[1], 0x7F);
  EXPECT_EQ(tz->scales()[2], 0x7E);
  std::vector<float> yz(48);
  ASSERT_TRUE(DequantizeMx(tz->view(), {yz.data(), 1, 48, 48}).ok());
  EXPECT_EQ(yz[0], 0.0f);
  EXPECT_TRUE(std::isnan(yz[16]) && std::isnan(yz[31]));
  EXPECT_NEAR(yz[32], 5.0f, 1e-5f);
  // A caller-supplied global amax overrides the source's.
  MxQuantizeOptions o;
  o.nvfp4_global_amax = 1.0f;
  StatusOr<MxTensor> tc = QuantizeMx(Fp32MatrixView{z.data(), 1, 48, 48}, MxFormat::kNvfp4, o);
  ASSERT_TRUE(tc.ok());
  EXPECT_EQ(Bits(tc->tensor_scale()), Bits(1.0f / 2688.0f));
  EXPECT_EQ(tc->scales()[2], 0x7E);  // 5 * 2688 / 6 saturates to 448
}

// ---- GGML MXFP4 ----

// formats.md section 12.5, GGML MXFP4 row.
const std::uint8_t kGgmlBlock[17] = {0x7F, 0xe6, 0x54, 0x01, 0x02, 0x03, 0x05, 0x06, 0x09,
                                     0x00, 0x00, 0x00, 0x07, 0x07, 0x00, 0x00, 0x02};

TEST(MxTensorGgml, KnownAnswerImportExport) {
  StatusOr<MxTensor> t = ImportGgmlMxfp4(kGgmlBlock, 1, 32);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  std::vector<float> y(32);
  ASSERT_TRUE(DequantizeMx(t->view(), {y.data(), 1, 32, 32}).ok());
  const float want[18] = {4, 2, 0.5f, 1, 1.5f, 3, 4, -0.5f, 0, 0, 0, 6, 6, 0, 0, 1, -4, 3};
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], i < 18 ? want[i] : 0.0f) << i;
  std::vector<std::uint8_t> out(17);
  ASSERT_TRUE(ExportGgmlMxfp4(t->view(), out).ok());
  EXPECT_TRUE(std::equal(out.begin(), out.end(), kGgmlBlock));
}

TEST(MxTensorGgml, OcpQuantizationExportsKnownBytes) {
  // The section 12.5 GGML input with the NaN replaced by 0: with kOcpFloor and
  // RNE the scale is 7F and the codes differ from GGML's at 0.75, 1.75, 3.5,
  // -0.75, -0.1 and -0.
  float x[32] = {4, 2.5f, 0.75f, 1.25f, 1.75f, 3.5f, 5, -0.75f, -0.1f, 0.25f, 0, 6.5f, 7, -0.0f, 0, 1,
                 -4, 3};
  StatusOr<MxTensor> t = QuantizeMx(Fp32MatrixView{x, 1, 32, 32}, MxFormat::kMxfp4);
  ASSERT_TRUE(t.ok());
  std::uint8_t out[17];
  ASSERT_TRUE(ExportGgmlMxfp4(t->view(), out).ok());
  const std::uint8_t want[17] = {0x7F, 0xE6, 0x54, 0x02, 0x02, 0x04, 0x06, 0x06, 0x0A,
                                 0x08, 0x00, 0x00, 0x07, 0x07, 0x08, 0x00, 0x02};
  for (int i = 0; i < 17; ++i) EXPECT_EQ(out[i], want[i]) << i;
  // With the NaN the block is FF and the export refuses it.
  x[10] = std::numeric_limits<float>::quiet_NaN();
  StatusOr<MxTensor> tn = QuantizeMx(Fp32MatrixView{x, 1, 32, 32}, MxFormat::kMxfp4);
  ASSERT_TRUE(tn.ok());
  const Status st = ExportGgmlMxfp4(tn->view(), out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("row 0 block 0 has scale FF"), std::string::npos) << st.message();
}

TEST(MxTensorGgml, RandomRoundTrip) {
  std::mt19937_64 rng(Seed() + 5);
  for (const auto& [rows, cols] : {std::pair<std::size_t, std::size_t>{1, 32}, {3, 96}, {17, 64}, {0, 64}, {4, 0}}) {
    std::vector<std::uint8_t> blob(GgmlMxfp4Bytes(rows, cols));
    for (std::size_t k = 0; k < blob.size(); ++k) {
      blob[k] = static_cast<std::uint8_t>(rng());
      if (k % 17 == 0 && blob[k] == 0xFF) blob[k] = 0xFE;
    }
    StatusOr<MxTensor> t = ImportGgmlMxfp4(blob, rows, cols);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    // Element j of block b of row r decodes to E2M1(nibble) * 2^(e - 127).
    std::vector<float> y(rows * cols);
    ASSERT_TRUE(DequantizeMx(t->view(), {y.data(), rows, cols, cols}).ok());
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < cols; ++c) {
        const std::uint8_t* blk = blob.data() + (r * (cols / 32) + c / 32) * 17;
        const std::size_t j = c % 32;
        const unsigned nib = j < 16 ? blk[1 + j] & 0xF : blk[1 + j - 16] >> 4;
        const float want = DecodeBits<Fp4E2M1Traits>(nib) * DecodeE8M0(blk[0]);
        ASSERT_EQ(Bits(y[r * cols + c]), Bits(want)) << r << " " << c;
      }
    }
    std::vector<std::uint8_t> back(blob.size());
    ASSERT_TRUE(ExportGgmlMxfp4(t->view(), back).ok());
    EXPECT_EQ(back, blob);
  }
}

// ---- GGML-compatible codec: answers derived by hand from ggml's C code
// (quantize_row_mxfp4_ref, dequantize_row_mxfp4) and checked against it
// built with GCC 12 on x86-64 / glibc 2.36; the cases where gguf-py relies on
// undefined behaviour (NaN, Inf, tiny amax) are here, not in the golden test.

// One 32-value block through QuantizeGgmlMxfp4 (unlisted values 0).
std::vector<std::uint8_t> GgmlCompatBlock(std::initializer_list<float> prefix) {
  std::vector<float> x(32, 0.0f);
  std::copy(prefix.begin(), prefix.end(), x.begin());
  std::vector<std::uint8_t> out(17);
  EXPECT_TRUE(QuantizeGgmlMxfp4(Fp32MatrixView{x.data(), 1, 32, 32}, out).ok());
  return out;
}
unsigned Nibble(const std::vector<std::uint8_t>& blk, std::size_t i) {
  return i < 16 ? blk[1 + i] & 0xFu : blk[1 + i - 16] >> 4;
}

TEST(MxTensorGgmlCompat, KnownAnswerTiesNoMinusZeroNanIgnored) {
  // formats.md section 12.5: ties to the smaller magnitude (0.75 -> 0.5,
  // 1.75 -> 1.5, 3.5 -> 3, -0.75 -> -0.5), no -0 (-0.1, -0 -> nibble 0), the
  // NaN left out of amax (scale 7F from 7) and given nibble 0.
  std::vector<float> x = {4, 2.5f, 0.75f, 1.25f, 1.75f, 3.5f, 5, -0.75f, -0.1f, 0.25f,
                          std::numeric_limits<float>::quiet_NaN(), 6.5f, 7, -0.0f, 0, 1, -4, 3};
  x.resize(32, 0.0f);
  std::vector<std::uint8_t> out(17);
  ASSERT_TRUE(QuantizeGgmlMxfp4(Fp32MatrixView{x.data(), 1, 32, 32}, out).ok());
  EXPECT_TRUE(std::equal(out.begin(), out.end(), kGgmlBlock));
  std::vector<float> y(32);
  ASSERT_TRUE(DequantizeGgmlMxfp4(out, {y.data(), 1, 32, 32}).ok());
  const float want[18] = {4, 2, 0.5f, 1, 1.5f, 3, 4, -0.5f, 0, 0, 0, 6, 6, 0, 0, 1, -4, 3};
  for (int i = 0; i < 32; ++i) EXPECT_EQ(Bits(y[i]), Bits(i < 18 ? want[i] : 0.0f)) << i;
}

TEST(MxTensorGgmlCompat, DecodeNibble8PlusZeroAndScaleFfFinite) {
  // y = K[n] * 2^(e - 128), K = 2 * E2M1 with K[8] = +0.
  std::uint8_t blk[17] = {0xFF};
  for (int j = 0; j < 16; ++j) blk[1 + j] = static_cast<std::uint8_t>(j | (8 << 4));
  float y[32];
  ASSERT_TRUE(DequantizeGgmlMxfp4(blk, {y, 1, 32, 32}).ok());
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Bits(y[0]), 0u);
  EXPECT_EQ(y[1], 0x1p127f);  // E2M1 0.5 * 2^128
  for (int n : {2, 3, 4, 5, 6, 7}) EXPECT_EQ(y[n], inf) << n;
  EXPECT_EQ(Bits(y[8]), 0u);  // nibble 8: +0 (OCP -0)
  EXPECT_EQ(y[9], -0x1p127f);
  for (int n : {10, 11, 12, 13, 14, 15}) EXPECT_EQ(y[n], -inf) << n;
  for (int i = 16; i < 32; ++i) EXPECT_EQ(Bits(y[i]), 0u) << i;
  blk[0] = 0x00;  // 2^-128: subnormal products, exact
  ASSERT_TRUE(DequantizeGgmlMxfp4(blk, {y, 1, 32, 32}).ok());
  EXPECT_EQ(y[1], 0x1p-128f);
  EXPECT_EQ(y[7], 0x1.8p-125f);
  EXPECT_EQ(y[15], -0x1.8p-125f);
}

TEST(MxTensorGgmlCompat, AmaxNearTwoTo128) {
  // log2f rounds up to 128 for the top 44 finite values (7F7FFFD4 and up):
  // scale FD, d = 2^125, 8 * d overflows, so the nearest finite candidate is
  // K = 6 (nibble 5, 1.5 * 2^127). The default writes 4.0 (nibble 6), +Inf.
  for (std::uint32_t a : {0x7F7FFFFFu, 0x7F7FFFD4u}) {
    const std::vector<std::uint8_t> b = GgmlCompatBlock({std::bit_cast<float>(a), -std::bit_cast<float>(a)});
    EXPECT_EQ(b[0], 0xFD) << std::hex << a;
    EXPECT_EQ(Nibble(b, 0), 5u);
    EXPECT_EQ(Nibble(b, 1), 13u);
  }
  const std::vector<std::uint8_t> below = GgmlCompatBlock({std::bit_cast<float>(0x7F7FFFD3u)});
  EXPECT_EQ(below[0], 0xFC);
  EXPECT_EQ(Nibble(below, 0), 7u);  // 12 * 2^124
  float x[32] = {std::numeric_limits<float>::max()};
  StatusOr<MxTensor> t = QuantizeMx(Fp32MatrixView{x, 1, 32, 32}, MxFormat::kMxfp4, {.rule = ScaleRule::kGgml});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->scales()[0], 0xFD);
  EXPECT_EQ(t->codes()[0] & 0xF, 6);  // the default: RNE 3.99.. -> 4.0
}

TEST(MxTensorGgmlCompat, TinyAmaxScaleWrapsAndFlushes) {
  // (floor(log2 amax) + 125) mod 256, then every candidate but 0 is far off.
  // Just below 2^-125 log2f rounds up to -125 (as near every power of two):
  // 0x1.fffffep-126 gets 00, not FF.
  const std::pair<float, std::uint8_t> cases[] = {
      {0x1.8p-126f, 0xFF}, {0x1p-126f, 0xFF}, {0x1.fffp-126f, 0xFF},    {0x1.fffffep-126f, 0x00},
      {0x1p-127f, 0xFE},   {0x1p-149f, 0xE8}, {0x1p-125f, 0x00},        {0x1p-124f, 0x01}};
  for (const auto& [a, e] : cases) {
    const std::vector<std::uint8_t> b = GgmlCompatBlock({a, -a / 2});
    EXPECT_EQ(b[0], e) << a;
    if (e >= 0xE8) {
      for (int i = 0; i < 32; ++i) EXPECT_EQ(Nibble(b, i), 0u) << a << " " << i;
    }
  }
  // 2^-125 with d = 2^-128 is K = 8 (nibble 6); 2^-124 with d = 2^-127 too.
  EXPECT_EQ(Nibble(GgmlCompatBlock({0x1p-125f}), 0), 6u);
  EXPECT_EQ(Nibble(GgmlCompatBlock({0x1p-124f}), 0), 6u);
}

TEST(MxTensorGgmlCompat, InfBlockScaleZero) {
  // +-Inf: scale 00 (x86-64 converts +Inf to 0x80000000, low byte 0), d =
  // 2^-128; errors of large elements all round to |x| (nibble 0), tiny ones
  // keep their nearest K * 2^-128.
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::uint8_t> b =
      GgmlCompatBlock({inf, 0x1p-126f, -1.0f, std::numeric_limits<float>::quiet_NaN(), 0x1p-100f,
                       -0x1p-100f, 0x1.000002p-100f, -inf, 3e38f});
  EXPECT_EQ(b[0], 0x00);
  const unsigned want[9] = {0, 4, 0, 0, 7, 15, 0, 0, 0};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(Nibble(b, i), want[i]) << i;
}

TEST(MxTensorGgmlCompat, RowsAndErrors) {
  // Two rows with a stride: block (r, b) lands at byte 17 * (r * 2 + b).
  std::vector<float> x(2 * 70, 0.0f);
  x[0] = 1.0f;
  x[70 + 33] = -6.0f;
  std::vector<std::uint8_t> out(68, 0xAB);
  ASSERT_TRUE(QuantizeGgmlMxfp4(Fp32MatrixView{x.data(), 2, 64, 70}, out).ok());
  EXPECT_EQ(out[0], 0x7D);  // amax 1: floor(log2 1) - 2 + 127
  EXPECT_EQ(out[1], 0x06);  // d = 2^-3: 1 = K[6] * d (E2M1 4.0)
  EXPECT_EQ(out[17], 0x00);
  EXPECT_EQ(out[3 * 17], 0x7F);      // row 1 block 1, amax 6: 2 - 2 + 127
  EXPECT_EQ(out[3 * 17 + 2], 0x0F);  // element 1, d = 2^-1: -6 = K[15] * d (E2M1 -6)
  std::vector<float> y(2 * 64);
  ASSERT_TRUE(DequantizeGgmlMxfp4(out, {y.data(), 2, 64, 64}).ok());
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[64 + 33], -6.0f);

  Status st = QuantizeGgmlMxfp4(Fp32MatrixView{x.data(), 1, 48, 48}, out);
  EXPECT_NE(st.message().find("multiple of 32; cols is 48"), std::string::npos) << st.message();
  std::vector<std::uint8_t> small(33, 0xCD);
  st = QuantizeGgmlMxfp4(Fp32MatrixView{x.data(), 1, 64, 64}, small);
  EXPECT_NE(st.message().find("output has 33 bytes; 34 needed"), std::string::npos) << st.message();
  EXPECT_TRUE(std::all_of(small.begin(), small.end(), [](std::uint8_t b) { return b == 0xCD; }));
  st = QuantizeGgmlMxfp4(Fp32MatrixView{x.data(), 2, 64, 32}, out);
  EXPECT_NE(st.message().find("row_stride 32 is less than cols 64"), std::string::npos) << st.message();
  st = QuantizeGgmlMxfp4(Fp32MatrixView{x.data(), 1, 32, 32},
                         std::span(reinterpret_cast<std::uint8_t*>(x.data()) + 8, 17));
  EXPECT_NE(st.message().find("overlaps the source"), std::string::npos) << st.message();
  st = DequantizeGgmlMxfp4(std::span<const std::uint8_t>(out.data(), 67), {y.data(), 2, 64, 64});
  EXPECT_NE(st.message().find("input has 67 bytes; a 2 x 64 tensor has 68"), std::string::npos)
      << st.message();
  st = DequantizeGgmlMxfp4(std::span<const std::uint8_t>(reinterpret_cast<std::uint8_t*>(y.data()), 17),
                           {y.data(), 1, 32, 32});
  EXPECT_NE(st.message().find("destination overlaps"), std::string::npos) << st.message();
  EXPECT_TRUE(QuantizeGgmlMxfp4(Fp32MatrixView{nullptr, 0, 64, 64}, {}).ok());
}

TEST(MxTensorGgml, Errors) {
  std::vector<std::uint8_t> blob(17 * 2, 0);
  blob[17] = 0xFF;
  Status st = ImportGgmlMxfp4(blob, 1, 64).status();
  EXPECT_NE(st.message().find("import refused: row 0 block 1 has scale FF"), std::string::npos)
      << st.message();
  st = ImportGgmlMxfp4(blob, 1, 48).status();
  EXPECT_NE(st.message().find("multiple of 32; cols is 48"), std::string::npos) << st.message();
  st = ImportGgmlMxfp4(std::span<const std::uint8_t>(blob.data(), 33), 1, 64).status();
  EXPECT_NE(st.message().find("input has 33 bytes"), std::string::npos) << st.message();

  std::vector<float> x(2 * 64, 1.0f);
  StatusOr<MxTensor> cols_axis =
      QuantizeMx(Fp32MatrixView{x.data(), 64, 2, 2}, MxFormat::kMxfp4, {.axis = BlockAxis::kCols});
  ASSERT_TRUE(cols_axis.ok());
  std::vector<std::uint8_t> out(1000);
  st = ExportGgmlMxfp4(cols_axis->view(), out);
  EXPECT_NE(st.message().find("BlockAxis::kRows"), std::string::npos) << st.message();
  StatusOr<MxTensor> e4m3 = QuantizeMx(Fp32MatrixView{x.data(), 2, 64, 64}, MxFormat::kMxfp8E4M3);
  st = ExportGgmlMxfp4(e4m3->view(), out);
  EXPECT_NE(st.message().find("not mxfp8-e4m3"), std::string::npos) << st.message();
  StatusOr<MxTensor> odd = QuantizeMx(Fp32MatrixView{x.data(), 2, 40, 40}, MxFormat::kMxfp4);
  st = ExportGgmlMxfp4(odd->view(), out);
  EXPECT_NE(st.message().find("cols is 40"), std::string::npos) << st.message();
  StatusOr<MxTensor> ok = QuantizeMx(Fp32MatrixView{x.data(), 2, 64, 64}, MxFormat::kMxfp4);
  std::vector<std::uint8_t> small(67, 0xAB);
  st = ExportGgmlMxfp4(ok->view(), small);
  EXPECT_NE(st.message().find("output has 67 bytes; 68 needed"), std::string::npos) << st.message();
  EXPECT_TRUE(std::all_of(small.begin(), small.end(), [](std::uint8_t b) { return b == 0xAB; }));
}

// ---- Bad input ----

// Runs `call`, expects code and a message containing `needle`, and that dst
// was not written.
TEST(MxTensorErrors, QuantizeValidation) {
  std::vector<float> x(8 * 64, 1.0f);
  const Fp32MatrixView src{x.data(), 8, 64, 64};
  StatusOr<MxTensor> t = MxTensor::Create({MxFormat::kMxfp8E4M3, 8, 64, BlockAxis::kRows});
  ASSERT_TRUE(t.ok());
  MxTensor& tensor = t.value();
  std::fill(tensor.codes().begin(), tensor.codes().end(), 0xAB);
  std::fill(tensor.scales().begin(), tensor.scales().end(), 0xCD);
  tensor.set_tensor_scale(1.0f);
  const auto expect_error = [&](Status st, const std::string& needle) {
    EXPECT_FALSE(st.ok()) << needle;
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
    EXPECT_TRUE(std::all_of(tensor.codes().begin(), tensor.codes().end(),
                            [](std::uint8_t b) { return b == 0xAB; }))
        << needle;
    EXPECT_TRUE(std::all_of(tensor.scales().begin(), tensor.scales().end(),
                            [](std::uint8_t b) { return b == 0xCD; }))
        << needle;
  };
  MxTensorSpan span = tensor.span();
  expect_error(QuantizeMxInto(Fp32MatrixView{nullptr, 8, 64, 64}, span), "source is 8 x 64 but its data pointer is null");
  expect_error(QuantizeMxInto(Fp32MatrixView{x.data(), 8, 64, 63}, span),
               "source row_stride 63 is less than cols 64");
  expect_error(QuantizeMxInto(Fp32MatrixView{x.data(), 7, 64, 64}, span),
               "source is 7 x 64 but the destination is 8 x 64");
  expect_error(QuantizeMxInto(Fp32MatrixView{reinterpret_cast<const float*>(
                                                 reinterpret_cast<const char*>(x.data()) + 1),
                                             8, 64, 64},
                              span),
               "not aligned to 4 bytes");
  expect_error(QuantizeMxInto(src, span, {.axis = BlockAxis::kCols}),
               "options.axis differs from the destination's shape.axis");
  expect_error(QuantizeMxInto(src, span, {.rule = ScaleRule::kGgml}),
               "scale rule ggml is not defined for mxfp8-e4m3");
  expect_error(QuantizeMxInto(src, span, {.special = SpecialBlock::kInfPassThrough}),
               "kInfPassThrough is not defined for mxfp8-e4m3");
  expect_error(QuantizeMxInto(src, span, {.rule = static_cast<ScaleRule>(42)}),
               "options.rule has the invalid value 42");
  MxQuantizeOptions bad_round;
  bad_round.element.rounding = static_cast<Rounding>(9);
  expect_error(QuantizeMxInto(src, span, bad_round), "options.element.rounding has the invalid value 9");
  MxQuantizeOptions amax_opt;
  amax_opt.nvfp4_global_amax = 1.0f;
  expect_error(QuantizeMxInto(src, span, amax_opt), "nvfp4_global_amax is set but the format is mxfp8-e4m3");

  MxTensorSpan s2 = span;
  s2.codes = nullptr;
  expect_error(QuantizeMxInto(src, s2), "codes pointer is null");
  s2 = span;
  s2.scales = nullptr;
  expect_error(QuantizeMxInto(src, s2), "scales pointer is null");
  s2 = span;
  s2.codes_stride = 63;
  expect_error(QuantizeMxInto(src, s2), "codes_stride 63 is less than a line's 64 code bytes");
  s2 = span;
  s2.scales_stride = 1;
  expect_error(QuantizeMxInto(src, s2), "scales_stride 1 is less than a line's 2 scales");
  s2 = span;
  s2.scales = span.codes + 100;  // inside line 1's codes
  expect_error(QuantizeMxInto(src, s2), "MX codes and scales overlap");
  s2 = span;
  s2.shape.format = static_cast<MxFormat>(77);
  expect_error(QuantizeMxInto(src, s2), "MX format value 77 is not an MxFormat");
  s2 = span;
  s2.shape.axis = static_cast<BlockAxis>(5);
  expect_error(QuantizeMxInto(src, s2), "block axis value 5 is not a BlockAxis");
  s2 = span;
  s2.codes_stride = std::numeric_limits<std::size_t>::max() / 2;
  expect_error(QuantizeMxInto(src, s2), "overflows the address space");

  // Source overlapping the destination: quantize a buffer into itself.
  std::vector<float> buf(8 * 64, 1.0f);
  MxTensorSpan in_place = span;
  in_place.codes = reinterpret_cast<std::uint8_t*>(buf.data()) + 4;
  expect_error(QuantizeMxInto(Fp32MatrixView{buf.data(), 8, 64, 64}, in_place),
               "source overlaps the destination codes");
  in_place = span;
  in_place.scales = reinterpret_cast<std::uint8_t*>(buf.data() + 7 * 64 + 3);
  expect_error(QuantizeMxInto(Fp32MatrixView{buf.data(), 8, 64, 64}, in_place),
               "source overlaps the destination scales");
  // Interleaved but disjoint: source rows with gaps that hold the scales.
  std::vector<float> gappy(8 * 80, 1.0f);
  MxTensorSpan gap = span;
  gap.scales = reinterpret_cast<std::uint8_t*>(gappy.data() + 64);  // in row 0's gap
  gap.scales_stride = 80 * sizeof(float);
  EXPECT_TRUE(QuantizeMxInto(Fp32MatrixView{gappy.data(), 8, 64, 80}, gap).ok());

  // NVFP4-specific options.
  StatusOr<MxTensor> nv = MxTensor::Create({MxFormat::kNvfp4, 8, 64, BlockAxis::kRows});
  MxTensorSpan nspan = nv.value().span();
  Status st = QuantizeMxInto(src, nspan, {.rule = ScaleRule::kRceil});
  EXPECT_NE(st.message().find("does not apply to nvfp4"), std::string::npos) << st.message();
  st = QuantizeMxInto(src, nspan, {.special = SpecialBlock::kSatFiniteBlock});
  EXPECT_NE(st.message().find("kSatFiniteBlock is not defined for nvfp4"), std::string::npos) << st.message();
  MxQuantizeOptions neg;
  neg.nvfp4_global_amax = -1.0f;
  st = QuantizeMxInto(src, nspan, neg);
  EXPECT_NE(st.message().find("is not a finite value >= 0"), std::string::npos) << st.message();
  neg.nvfp4_global_amax = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(QuantizeMxInto(src, nspan, neg).ok());
  // BF16 path validates the same way.
  std::vector<Bf16> xb(8 * 64);
  st = QuantizeMxInto(Bf16MatrixView{xb.data(), 8, 64, 10}, span);
  EXPECT_NE(st.message().find("source row_stride 10 is less than cols 64"), std::string::npos);
  // Allocation-side errors.
  st = MxTensor::Create({MxFormat::kMxfp4, std::size_t{1} << 62, std::size_t{1} << 62,
                         BlockAxis::kRows})
           .status();
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange) << st.ToString();
  EXPECT_NE(st.message().find("overflows size_t"), std::string::npos) << st.message();
}

TEST(MxTensorErrors, DequantizeAndViewValidation) {
  std::vector<float> x(4 * 40, 2.0f);
  StatusOr<MxTensor> t = QuantizeMx(Fp32MatrixView{x.data(), 4, 40, 40}, MxFormat::kMxfp6E2M3);
  ASSERT_TRUE(t.ok());
  std::vector<float> y(4 * 40, -7.0f);
  const auto expect_error = [&](Status st, const std::string& needle) {
    EXPECT_FALSE(st.ok()) << needle;
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
    EXPECT_TRUE(std::all_of(y.begin(), y.end(), [](float v) { return v == -7.0f; })) << needle;
  };
  const MxTensorView v = t->view();
  expect_error(DequantizeMx(v, {y.data(), 4, 41, 41}), "destination is 4 x 41 but the MX tensor is 4 x 40");
  expect_error(DequantizeMx(v, {nullptr, 4, 40, 40}), "destination is 4 x 40 but its data pointer is null");
  expect_error(DequantizeMx(v, {y.data(), 4, 40, 39}), "destination row_stride 39 is less than cols 40");
  MxTensorView bad = v;
  bad.tensor_scale = 2.0f;
  expect_error(DequantizeMx(bad, {y.data(), 4, 40, 40}), "mxfp6-e2m3 has no tensor scale (must be 1)");
  bad = v;
  bad.codes_stride = 10;
  expect_error(DequantizeMx(bad, {y.data(), 4, 40, 40}), "codes_stride 10 is less than a line's 48 code bytes");
  // Destination over the codes.
  MxTensor copy = *t;
  MxTensorView over = copy.view();
  std::vector<float> big(1000);
  over.codes = reinterpret_cast<const std::uint8_t*>(big.data() + 10);
  over.scales = copy.scales().data();
  Status st = DequantizeMx(over, {big.data(), 4, 40, 40});
  EXPECT_NE(st.message().find("destination overlaps the MX codes"), std::string::npos) << st.message();
  // NVFP4 tensor scale must be finite and > 0.
  StatusOr<MxTensor> nv = QuantizeMx(Fp32MatrixView{x.data(), 4, 40, 40}, MxFormat::kNvfp4);
  ASSERT_TRUE(nv.ok());
  MxTensorView nvv = nv->view();
  for (const float s : {0.0f, -1.0f, std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN()}) {
    nvv.tensor_scale = s;
    expect_error(DequantizeMx(nvv, {y.data(), 4, 40, 40}), "nvfp4 tensor_scale");
  }
  EXPECT_TRUE(CheckMxView(nv->view()).ok());
  EXPECT_TRUE(CheckMxView(MxTensorView{}).ok());  // empty 0 x 0
}

TEST(MxTensor, EmptyAndDegenerateShapes) {
  for (const MxFormatInfo& info : AllMxFormats()) {
    for (const auto& [rows, cols] : {std::pair<std::size_t, std::size_t>{0, 0}, {0, 5}, {5, 0}}) {
      StatusOr<MxTensor> t = QuantizeMx(Fp32MatrixView{nullptr, rows, cols, 0}, info.format);
      ASSERT_TRUE(t.ok()) << t.status().ToString();
      EXPECT_TRUE(DequantizeMx(t->view(), {nullptr, rows, cols, 0}).ok());
    }
  }
}

TEST(MxTensor, LineFunctionsAreTheReference) {
  // The line contract of src/formats/mx_line.h, directly: a 70-element line in
  // one call equals three calls at block boundaries.
  std::mt19937_64 rng(Seed() + 6);
  const std::vector<float> x = MakeInput(70, rng, false);
  for (const MxFormatInfo& info : AllMxFormats()) {
    internal::MxLineParams p;
    p.format = info.format;
    p.nvfp4_encode_scale = 3.0f;
    const std::size_t nb = (70 + info.block_size - 1) / info.block_size;
    std::vector<std::uint8_t> c1(nb * info.block_bytes, 0xEE), s1(nb, 0xEE);
    internal::QuantizeMxLineScalar(p, x.data(), 70, c1.data(), s1.data());
    std::vector<std::uint8_t> c2(nb * info.block_bytes, 0xEE), s2(nb, 0xEE);
    const std::size_t bs = info.block_size;
    internal::QuantizeMxLineScalar(p, x.data(), bs, c2.data(), s2.data());
    internal::QuantizeMxLineScalar(p, x.data() + bs, 70 - bs, c2.data() + info.block_bytes,
                                   s2.data() + 1);
    EXPECT_EQ(c1, c2) << info.name;
    EXPECT_EQ(s1, s2) << info.name;
    std::vector<float> y(71, 123.0f);
    internal::DequantizeMxLineScalar(info.format, c1.data(), s1.data(), 70, 1.0f / 3.0f, y.data());
    EXPECT_EQ(y[70], 123.0f) << "wrote past n";
  }
}

}  // namespace
}  // namespace trnmx
