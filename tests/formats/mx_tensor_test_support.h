// Test support for MX tensors: seeded inputs with planted specials, the
// option variants per format, and the reference check "every block of the
// tensor equals the one-block reference (mx_block.h) applied to the
// elements of that block, assembled by hand" plus an independent NVFP4
// transcription of formats.md section 8.
#ifndef TRNMX_TESTS_FORMATS_MX_TENSOR_TEST_SUPPORT_H_
#define TRNMX_TESTS_FORMATS_MX_TENSOR_TEST_SUPPORT_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/mx_test_tensor.h"
#include "support/random.h"
#include "trnmx/formats/codec.h"
#include "trnmx/formats/visit.h"
#include "trnmx/mx.h"

namespace trnmx::testing_mx {

inline std::uint32_t Bits(float x) { return std::bit_cast<std::uint32_t>(x); }

// The seed of the MX tensor tests (printed; TRNMX_TEST_SEED overrides it,
// support/random.h).
inline std::uint64_t Seed() { return testing::TestSeed(0x5EEDull); }

// n values: per group of 16 a random binade (mostly [-30, 30], sometimes
// extreme: FP32 subnormal or near FLT_MAX), with zeros, -0, ties of small
// grids and, when `specials`, NaN and +-Inf.
inline std::vector<float> MakeInput(std::size_t n, std::mt19937_64& rng, bool specials) {
  std::vector<float> x(n);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  int e = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 16 == 0) {
      const unsigned pick = rng() % 20;
      e = pick == 0 ? -140 + static_cast<int>(rng() % 20)
          : pick == 1 ? 110 + static_cast<int>(rng() % 17)
                      : static_cast<int>(rng() % 61) - 30;
    }
    const unsigned kind = rng() % 100;
    float v;
    if (kind < 70) {
      v = std::ldexp(u(rng), e);
    } else if (kind < 80) {
      v = std::ldexp(static_cast<float>(static_cast<int>(rng() % 33) - 16), e - 3);
    } else if (kind < 85) {
      v = std::ldexp(static_cast<float>(static_cast<int>(rng() % 16)) + 0.5f, e - 4);
    } else if (kind < 90) {
      v = 0.0f;
    } else if (kind < 94) {
      v = -0.0f;
    } else if (specials && kind < 96) {
      v = std::numeric_limits<float>::quiet_NaN();
    } else if (specials && kind < 98) {
      v = (rng() & 1) ? std::numeric_limits<float>::infinity()
                      : -std::numeric_limits<float>::infinity();
    } else {
      v = std::ldexp(u(rng), e);
    }
    x[i] = v;
  }
  return x;
}

inline std::string Describe(MxFormat f, const MxQuantizeOptions& o) {
  return std::string(GetMxFormatInfo(f).name) + " rule " + std::string(ScaleRuleCliName(o.rule)) +
         " special " + std::string(SpecialBlockName(o.special)) + " axis " +
         (o.axis == BlockAxis::kRows ? "rows" : "cols") + " rounding " +
         std::to_string(static_cast<int>(o.element.rounding)) + " overflow " +
         std::to_string(static_cast<int>(o.element.overflow)) + " nan " +
         std::to_string(static_cast<int>(o.element.nan)) + " subnormals " +
         std::to_string(static_cast<int>(o.element.subnormals)) + " int8 " +
         std::to_string(static_cast<int>(o.element.int8_range));
}

// Every accepted rule, each element option and special policy, both axes.
inline std::vector<MxQuantizeOptions> AllOptionVariants(MxFormat f) {
  std::vector<MxQuantizeOptions> out;
  for (const BlockAxis axis : {BlockAxis::kRows, BlockAxis::kCols}) {
    for (const ScaleRule rule : kAllScaleRules) {
      if (!IsScaleRuleDefinedFor(f, rule)) continue;
      MxQuantizeOptions o;
      o.axis = axis;
      o.rule = rule;
      out.push_back(o);
    }
    MxQuantizeOptions base;
    base.axis = axis;
    for (const Rounding r : {Rounding::kTiesAway, Rounding::kTowardZero, Rounding::kStochastic}) {
      MxQuantizeOptions o = base;
      o.element.rounding = r;
      o.stochastic_seed = 12345;
      out.push_back(o);
    }
    MxQuantizeOptions o = base;
    o.element.overflow = Overflow::kNonSat;
    out.push_back(o);
    o = base;
    o.element.nan = NanPolicy::kMlDtypesNaN;
    out.push_back(o);
    o = base;
    o.element.subnormals = Subnormals::kFlush;
    out.push_back(o);
    if (f == MxFormat::kMxint8) {
      o = base;
      o.element.int8_range = Int8Range::kAllowMinus128;
      out.push_back(o);
    }
    for (const SpecialBlock s : {SpecialBlock::kSatFiniteBlock, SpecialBlock::kInfPassThrough}) {
      if (!IsSpecialBlockDefinedFor(f, s)) continue;
      o = base;
      o.special = s;
      out.push_back(o);
    }
  }
  return out;
}

// Independent NVFP4 block (formats.md section 8), as the spec text reads.
struct RefNvfp4Block {
  std::uint8_t scale;
  std::uint8_t codes[16];
};
inline RefNvfp4Block RefNvfp4(const float* v, std::size_t n, float s_enc,
                              const EncodeOptions& element, const std::uint32_t* rnd) {
  RefNvfp4Block out{};
  float amax = 0.0f;
  bool nan = false;
  for (std::size_t i = 0; i < n; ++i) {
    nan = nan || std::isnan(v[i]);
    amax = std::max(amax, std::fabs(v[i]));
  }
  if (nan) {
    out.scale = 0x7F;
    return out;
  }
  const float s_dec = 1.0f / s_enc;
  const float d = amax * (s_enc * (1.0f / 6.0f));
  out.scale = static_cast<std::uint8_t>(EncodeWithFlags<Fp8E4M3Traits>(d).code);
  const float m = std::fmin(1.0f / (DecodeBits<Fp8E4M3Traits>(out.scale) * s_dec), FLT_MAX);
  for (std::size_t i = 0; i < n; ++i) {
    out.codes[i] = static_cast<std::uint8_t>(
        EncodeWithFlags<Fp4E2M1Traits>(v[i] * m, element, rnd[i]).code);
  }
  return out;
}

// Quantizes x (rows x cols, row_stride) with the API and compares every block
// with the reference, and the dequantized tensor with the reference blocks'
// values. `bf16`: also checks the BF16 source path against the FP32 path on
// the BF16-rounded values.
inline void CheckAgainstReference(MxFormat f, std::size_t rows, std::size_t cols,
                                  std::size_t row_stride, const MxQuantizeOptions& o,
                                  std::mt19937_64& rng, Executor* ex, bool specials) {
  SCOPED_TRACE(Describe(f, o) + " shape " + std::to_string(rows) + " x " + std::to_string(cols));
  std::vector<float> x = MakeInput(rows * row_stride, rng, specials);
  // Gaps between rows are NaN: reading them would turn blocks into NaN blocks.
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = cols; c < row_stride; ++c) {
      x[r * row_stride + c] = std::numeric_limits<float>::quiet_NaN();
    }
  }
  const Fp32MatrixView src{x.data(), rows, cols, row_stride};
  StatusOr<MxTensor> t = QuantizeMx(src, f, o, ex);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const MxShape& shape = t->shape();
  ASSERT_EQ(shape.rows, rows);
  ASSERT_EQ(shape.cols, cols);
  ASSERT_EQ(shape.axis, o.axis);
  const MxFormatInfo& info = GetMxFormatInfo(f);
  const std::size_t bs = info.block_size;
  const std::size_t nb = shape.blocks_per_line();
  ASSERT_EQ(t->codes().size(), shape.num_lines() * nb * info.block_bytes);
  ASSERT_EQ(t->scales().size(), shape.num_lines() * nb);

  std::vector<float> y(rows * cols, -123.0f);
  ASSERT_TRUE(DequantizeMx(t->view(), {y.data(), rows, cols, cols}, ex).ok());

  // NVFP4 tensor scale from the largest non-NaN |x|.
  float s_enc = 1.0f;
  if (info.has_tensor_scale) {
    float gamax = 0.0f;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < cols; ++c) {
        const float v = x[r * row_stride + c];
        if (!std::isnan(v)) gamax = std::max(gamax, std::fabs(v));
      }
    }
    s_enc = std::fmin(2688.0f / gamax, FLT_MAX);
    if (gamax == 0.0f || s_enc == 0.0f) s_enc = 1.0f;
    ASSERT_EQ(Bits(t->tensor_scale()), Bits(1.0f / s_enc));
  } else {
    ASSERT_EQ(t->tensor_scale(), 1.0f);
  }

  const bool stochastic = o.element.rounding == Rounding::kStochastic;
  std::uint64_t bad = 0;
  for (std::size_t l = 0; l < shape.num_lines(); ++l) {
    for (std::size_t b = 0; b < nb; ++b) {
      const std::size_t len = std::min(bs, shape.line_length() - b * bs);
      float v[32];
      std::uint32_t rnd[32] = {};
      std::size_t rr[32], cc[32];
      for (std::size_t i = 0; i < len; ++i) {
        rr[i] = o.axis == BlockAxis::kRows ? l : b * bs + i;
        cc[i] = o.axis == BlockAxis::kRows ? b * bs + i : l;
        v[i] = x[rr[i] * row_stride + cc[i]];
        if (stochastic) rnd[i] = StochasticBits(o.stochastic_seed, rr[i] * cols + cc[i]);
      }
      const std::uint8_t* packed = t->codes().data() + (l * nb + b) * info.block_bytes;
      std::uint8_t got_codes[32] = {};
      UnpackMxCodes(f, std::span<const std::uint8_t>(packed, info.block_bytes),
                    std::span<std::uint8_t>(got_codes, bs));
      const std::uint8_t got_scale = t->scales()[l * nb + b];
      std::uint8_t want_codes[32] = {};
      std::uint8_t want_scale = 0;
      float want_v[32];
      if (f == MxFormat::kNvfp4) {
        const RefNvfp4Block rb = RefNvfp4(v, len, s_enc, o.element, rnd);
        want_scale = rb.scale;
        std::copy(rb.codes, rb.codes + 16, want_codes);
        const float s8 = DecodeBits<Fp8E4M3Traits>(rb.scale);
        for (std::size_t i = 0; i < len; ++i) {
          want_v[i] = (DecodeBits<Fp4E2M1Traits>(rb.codes[i]) * s8) * (1.0f / s_enc);
        }
      } else {
        VisitMxFormat(f, [&](auto tag) {
          using Traits = typename decltype(tag)::Traits;
          const MxBlockCodes blk = QuantizeMxBlock<Traits>(
              std::span<const float>(v, len), o.rule, o.element, o.special,
              std::span<const std::uint32_t>(rnd, len));
          want_scale = blk.scale.bits;
          std::copy(blk.codes.begin(), blk.codes.end(), want_codes);
          DequantizeMxBlock<Traits>(blk, std::span<float>(want_v, len));
        });
      }
      bool ok = got_scale == want_scale;
      for (std::size_t i = 0; i < bs; ++i) ok = ok && got_codes[i] == want_codes[i];
      for (std::size_t i = 0; i < len; ++i) ok = ok && Bits(y[rr[i] * cols + cc[i]]) == Bits(want_v[i]);
      if (!ok && ++bad <= 3) {
        ADD_FAILURE() << "line " << l << " block " << b << ": scale " << std::hex
                      << unsigned{got_scale} << " want " << unsigned{want_scale};
      }
    }
  }
  EXPECT_EQ(bad, 0u);

  {  // BF16 source == FP32 source holding the same values.
    std::vector<Bf16> xb(x.size());
    std::vector<float> xf(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      xb[i] = Fp32ToBf16Rne(x[i]);
      xf[i] = std::bit_cast<float>(static_cast<std::uint32_t>(xb[i].bits) << 16);
    }
    StatusOr<MxTensor> tb = QuantizeMx(Bf16MatrixView{xb.data(), rows, cols, row_stride}, f, o, ex);
    StatusOr<MxTensor> tf = QuantizeMx(Fp32MatrixView{xf.data(), rows, cols, row_stride}, f, o, ex);
    ASSERT_TRUE(tb.ok() && tf.ok());
    EXPECT_TRUE(std::equal(tb->codes().begin(), tb->codes().end(), tf->codes().begin()));
    EXPECT_TRUE(std::equal(tb->scales().begin(), tb->scales().end(), tf->scales().begin()));
    EXPECT_EQ(Bits(tb->tensor_scale()), Bits(tf->tensor_scale()));
  }
}

// Quantizes into caller memory with padded strides and offset pointers (an
// MxTestTensor with codes padding 0xA5 and scales padding 0x5A), and
// dequantizes into a padded, offset destination; compares with QuantizeMx on
// a contiguous copy and checks that no padding byte was written.
inline void CheckStridedOffset(MxFormat f, std::size_t rows, std::size_t cols,
                               std::size_t row_stride, std::size_t offset,
                               const MxQuantizeOptions& o, std::mt19937_64& rng) {
  SCOPED_TRACE(Describe(f, o) + " offset " + std::to_string(offset));
  std::vector<float> buf(offset + rows * row_stride, 0.0f);
  const std::vector<float> vals = MakeInput(rows * cols, rng, false);
  for (std::size_t r = 0; r < rows; ++r) {
    std::copy(vals.begin() + r * cols, vals.begin() + (r + 1) * cols, buf.begin() + offset + r * row_stride);
  }
  StatusOr<MxTensor> want = QuantizeMx(Fp32MatrixView{vals.data(), rows, cols, cols}, f, o);
  ASSERT_TRUE(want.ok());
  const MxShape shape{f, rows, cols, o.axis};
  testing::MxTestTensor dst = testing::AllocateMxTestTensor(shape, {.code_pad = 3 + offset,
                                                                    .scale_pad = 1,
                                                                    .offset = offset,
                                                                    .code_fill = 0xA5,
                                                                    .scale_fill = 0x5A});
  const std::size_t cstride = dst.codes_stride;
  const std::size_t sstride = dst.scales_stride;
  const std::vector<std::uint8_t>& codes = dst.codes;
  const std::vector<std::uint8_t>& scales = dst.scales;
  MxTensorSpan span = dst.span();
  ASSERT_TRUE(QuantizeMxInto(Fp32MatrixView{buf.data() + offset, rows, cols, row_stride}, span, o).ok());
  EXPECT_EQ(Bits(span.tensor_scale), Bits(want->tensor_scale()));
  for (std::size_t l = 0; l < shape.num_lines(); ++l) {
    for (std::size_t k = 0; k < cstride; ++k) {
      const std::uint8_t got = codes[offset + l * cstride + k];
      if (k < shape.line_code_bytes()) {
        ASSERT_EQ(got, want->codes()[l * shape.line_code_bytes() + k]) << l << " " << k;
      } else {
        ASSERT_EQ(got, 0xA5) << "padding written";
      }
    }
    for (std::size_t k = 0; k < sstride; ++k) {
      const std::uint8_t got = scales[offset + l * sstride + k];
      ASSERT_EQ(got, k < shape.line_scale_bytes() ? want->scales()[l * shape.line_scale_bytes() + k]
                                                  : 0x5A);
    }
  }
  for (std::size_t k = 0; k < offset; ++k) ASSERT_EQ(codes[k], 0xA5);
  // Dequantize into a padded, offset destination.
  std::vector<float> want_y(rows * cols);
  ASSERT_TRUE(DequantizeMx(want->view(), {want_y.data(), rows, cols, cols}).ok());
  std::vector<float> out(offset + rows * row_stride, -5.0f);
  ASSERT_TRUE(DequantizeMx(span.view(), {out.data() + offset, rows, cols, row_stride}).ok());
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < row_stride; ++c) {
      const float got = out[offset + r * row_stride + c];
      if (c < cols) {
        ASSERT_EQ(Bits(got), Bits(want_y[r * cols + c]));
      } else {
        ASSERT_EQ(got, -5.0f) << "padding written";
      }
    }
  }
}

}  // namespace trnmx::testing_mx

#endif  // TRNMX_TESTS_FORMATS_MX_TENSOR_TEST_SUPPORT_H_
