// MX x MX GEMM: ref::MxDot against an independent MPFR evaluation of
// formats.md section 10, and internal::GemmMxMx against ref::MxDot plus the
// gemm.h epilogue, bit for bit, on every compiled Highway target and with 1,
// 2 and 3 threads. Seeds are printed; set TRNMX_TEST_SEED to repeat a run.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "formats/mx_decode.h"
#include "kernels/gemm/gemm_bf16_amx.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_mx_kernels.h"
#include "kernels/gemm/gemv_mx.h"
#include "reference/gemm_ref.h"
#include "support/hwy_targets.h"
#include "support/mx_test_tensor.h"
#include "support/random.h"
#include "trnmx/executor.h"
#include "trnmx/formats/codec.h"
#include "trnmx/formats/e8m0.h"
#include "trnmx/formats/int8.h"
#include "trnmx/formats/mx_block.h"
#include "trnmx/formats/visit.h"
#include "trnmx/gemm.h"
#include "trnmx/mx.h"

namespace trnmx {
namespace {

// Every GEMM operand format (format_list.h).
constexpr auto kMxFormats = kOcpMxFormats;

// The seed of these tests (printed; TRNMX_TEST_SEED overrides it,
// support/random.h).
std::uint64_t TestSeed() { return testing::TestSeed(0x5EED6E33ULL); }

// ---------------------------------------------------------------------------
// MX operands: quantized by the scalar reference (support/mx_test_tensor.h)
// or made of random codes.
// ---------------------------------------------------------------------------

using testing::AllocateMxTestTensor;
using testing::MxTestTensor;
using testing::PackBlockCodes;
using testing::QuantizeMxScalar;

// Random codes (every code, NaN/Inf codes included) and random scales with
// extremes: 00, FE, FF and pairs far from 127, so that y_j under- and
// overflows. Tail padding is +0 unless garbage_tail (then it is random and
// must be ignored).
MxTestTensor MakeRandomCodes(MxFormat f, BlockAxis axis, std::size_t rows, std::size_t cols,
                             std::size_t pad, std::mt19937_64& rng, bool allow_special,
                             bool garbage_tail) {
  MxTestTensor m = AllocateMxTestTensor({f, rows, cols, axis}, {.code_pad = pad, .scale_pad = pad});
  const MxFormatInfo& info = GetMxFormatInfo(f);
  const unsigned mask = (1u << info.element_bits) - 1;
  const std::size_t len = m.shape.line_length();
  std::uniform_int_distribution<unsigned> byte(0, 255);
  for (std::size_t line = 0; line < m.shape.num_lines(); ++line) {
    for (std::size_t blk = 0; blk < m.shape.blocks_per_line(); ++blk) {
      std::uint8_t codes[32];
      for (std::size_t i = 0; i < 32; ++i) {
        unsigned c = byte(rng) & mask;
        if (!allow_special) {
          // Replace NaN/Inf codes by zero.
          if (f == MxFormat::kMxfp8E4M3 && (c & 0x7F) == 0x7F) c = 0;
          if (f == MxFormat::kMxfp8E5M2 && (c & 0x7C) == 0x7C) c = 0;
        }
        const bool tail = blk * 32 + i >= len;
        codes[i] = static_cast<std::uint8_t>(tail && !garbage_tail ? 0 : c);
      }
      PackBlockCodes(info.element_bits, codes,
                     m.codes.data() + line * m.codes_stride + blk * info.block_bytes);
      const unsigned pick = byte(rng);
      unsigned s;
      if (!allow_special) {
        s = 127 - 12 + byte(rng) % 25;
      } else if (pick < 150) {
        s = 127 - 20 + byte(rng) % 41;
      } else if (pick < 170) {
        s = 0x00;
      } else if (pick < 190) {
        s = 0xFE;
      } else if (pick < 200) {
        s = 0xFF;
      } else {
        s = byte(rng) % 255;
      }
      m.scales[line * m.scales_stride + blk] = static_cast<std::uint8_t>(s);
    }
  }
  return m;
}

bool SameBits(float x, float y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
}

std::string Hex(float x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%08x (%g)", std::bit_cast<std::uint32_t>(x),
                static_cast<double>(x));
  return buf;
}

// ---------------------------------------------------------------------------
// Independent evaluation of section 10 with MPFR: elements decoded by the
// scalar codecs to FP32, exact products and sums at 256 bits (IEEE NaN/Inf
// rules are MPFR's), one rounding to FP32 with MPFR's subnormal emulation.
// ---------------------------------------------------------------------------

float DecodeForCheck(MxFormat f, std::uint32_t code) {
  return VisitMxFormat(
      f, [&](auto tag) { return detail::DecodeMxElement<typename decltype(tag)::Traits>(code); });
}

std::uint32_t CodeAt(const MxTensorView& t, std::size_t line, std::size_t idx) {
  const MxFormatInfo& info = GetMxFormatInfo(t.shape.format);
  const std::uint8_t* blk = t.codes + line * t.codes_stride + (idx / 32) * info.block_bytes;
  const std::size_t i = idx % 32;
  if (info.element_bits == 8) return blk[i];
  if (info.element_bits == 4) return (blk[i / 2] >> (4 * (i % 2))) & 0xF;
  const std::size_t bit = 6 * i;
  const unsigned two = blk[bit / 8] | (bit / 8 + 1 < 24 ? blk[bit / 8 + 1] << 8 : 0);
  return (two >> (bit % 8)) & 0x3F;
}

float MpfrMxDot(const MxTensorView& a, std::size_t ia, const MxTensorView& b, std::size_t jb) {
  const std::size_t k = a.shape.line_length();
  mpfr_t s, p, x, y, r;
  mpfr_inits2(256, s, p, x, y, static_cast<mpfr_ptr>(nullptr));
  mpfr_init2(r, 24);
  float acc = 0.0f;
  for (std::size_t blk = 0; blk * 32 < k; ++blk) {
    mpfr_set_zero(s, 1);
    for (std::size_t i = blk * 32; i < std::min(k, blk * 32 + 32); ++i) {
      mpfr_set_flt(x, DecodeForCheck(a.shape.format, CodeAt(a, ia, i)), MPFR_RNDN);
      mpfr_set_flt(y, DecodeForCheck(b.shape.format, CodeAt(b, jb, i)), MPFR_RNDN);
      mpfr_mul(p, x, y, MPFR_RNDN);  // Exact: 48 bits.
      mpfr_add(s, s, p, MPFR_RNDN);  // Exact: the span is < 100 bits.
    }
    const unsigned sa = a.scales[ia * a.scales_stride + blk];
    const unsigned sb = b.scales[jb * b.scales_stride + blk];
    float yj;
    if (sa == 0xFF || sb == 0xFF) {
      yj = std::numeric_limits<float>::quiet_NaN();
    } else {
      mpfr_mul_2si(s, s, static_cast<long>(sa) + static_cast<long>(sb) - 254, MPFR_RNDN);
      const mpfr_exp_t emin = mpfr_get_emin();
      const mpfr_exp_t emax = mpfr_get_emax();
      mpfr_set_emin(-148);  // 2^-149 = 0.5 * 2^-148: FP32's smallest subnormal.
      mpfr_set_emax(128);   // Values >= 2^128 overflow.
      int t = mpfr_set(r, s, MPFR_RNDN);
      t = mpfr_check_range(r, t, MPFR_RNDN);
      mpfr_subnormalize(r, t, MPFR_RNDN);
      yj = mpfr_get_flt(r, MPFR_RNDN);
      mpfr_set_emin(emin);
      mpfr_set_emax(emax);
    }
    acc = acc + yj;
  }
  mpfr_clears(s, p, x, y, r, static_cast<mpfr_ptr>(nullptr));
  return acc;
}

// ---------------------------------------------------------------------------
// ref::MxDot
// ---------------------------------------------------------------------------

// A 1 x k (kRows) or k x 1 (kCols) operand from explicit codes and scales.
MxTestTensor Line(MxFormat f, BlockAxis axis, const std::vector<std::uint8_t>& codes,
                  const std::vector<std::uint8_t>& scales) {
  const std::size_t k = codes.size();
  MxTestTensor m = AllocateMxTestTensor(
      {f, axis == BlockAxis::kRows ? 1 : k, axis == BlockAxis::kRows ? k : 1, axis});
  const MxFormatInfo& info = GetMxFormatInfo(f);
  for (std::size_t blk = 0; blk * 32 < k; ++blk) {
    std::uint8_t c[32] = {};
    for (std::size_t i = 0; i < 32 && blk * 32 + i < k; ++i) c[i] = codes[blk * 32 + i];
    PackBlockCodes(info.element_bits, c, m.codes.data() + blk * info.block_bytes);
    m.scales[blk] = scales[blk];
  }
  return m;
}

float Dot(MxFormat fa, const std::vector<std::uint8_t>& ca, const std::vector<std::uint8_t>& sa,
          MxFormat fb, const std::vector<std::uint8_t>& cb, const std::vector<std::uint8_t>& sb) {
  const MxTestTensor a = Line(fa, BlockAxis::kRows, ca, sa);
  const MxTestTensor b = Line(fb, BlockAxis::kCols, cb, sb);
  const float r = ref::MxDot(a.view(), 0, b.view(), 0);
  const float check = MpfrMxDot(a.view(), 0, b.view(), 0);
  EXPECT_TRUE(SameBits(r, check)) << Hex(r) << " vs MPFR " << Hex(check);
  return r;
}

TEST(MxDotRef, KnownAnswers) {
  using V = std::vector<std::uint8_t>;
  constexpr auto E4 = MxFormat::kMxfp8E4M3;
  constexpr auto E5 = MxFormat::kMxfp8E5M2;
  constexpr auto F4 = MxFormat::kMxfp4;
  // 32 x (1 * 1) = 32.
  EXPECT_EQ(Dot(E4, V(32, 0x38), {127}, E4, V(32, 0x38), {127}), 32.0f);
  // 6 * 6 * 2^10.
  EXPECT_EQ(Dot(F4, {7}, {137}, F4, {7}, {127}), 36864.0f);
  // 1.5 * 2^-149 ties to 2^-148 (even): one rounding of the exact value.
  EXPECT_EQ(std::bit_cast<std::uint32_t>(Dot(F4, {3}, {0}, F4, {2}, {105})), 0x00000002u);
  // 2^-140: an exact FP32 subnormal.
  EXPECT_EQ(Dot(E4, {0x38}, {57}, E4, {0x38}, {57}), 0x1p-140f);
  // 2^-254 rounds to +0.
  EXPECT_EQ(std::bit_cast<std::uint32_t>(Dot(E4, {0x38}, {0}, E4, {0x38}, {0})), 0u);
  // 32 * 448^2 * 2^254 overflows to +Inf; negated -Inf.
  EXPECT_EQ(Dot(E4, V(32, 0x7E), {0xFE}, E4, V(32, 0x7E), {0xFE}),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(Dot(E4, V(32, 0xFE), {0xFE}, E4, V(32, 0x7E), {0xFE}),
            -std::numeric_limits<float>::infinity());
  // Scale FF: NaN even for zero elements.
  EXPECT_TRUE(std::isnan(Dot(E4, V(32, 0), {0xFF}, E4, V(32, 0), {127})));
  // E5M2 Inf * 0 -> NaN; Inf * 1 -> Inf; +Inf and -Inf in one block -> NaN.
  EXPECT_TRUE(std::isnan(Dot(E5, {0x7C}, {127}, E5, {0x00}, {127})));
  EXPECT_EQ(Dot(E5, {0x7C, 0x3C}, {127}, E5, {0x3C, 0x3C}, {127}),
            std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(Dot(E5, {0x7C, 0xFC}, {127}, E5, {0x3C, 0x3C}, {127})));
  // E4M3 NaN code.
  EXPECT_TRUE(std::isnan(Dot(E4, {0x7F}, {127}, E4, {0x38}, {127})));
  // Exact block sums: 57344^2 - 57344^2 + 2^-32 (E5M2 x E5M2, units 2^-32).
  EXPECT_EQ(Dot(E5, {0x7B, 0x01, 0xFB}, {127}, E5, {0x7B, 0x01, 0x7B}, {127}), 0x1p-32f);
  // FP32 accumulation over blocks in K order: 2^24 + 1 + 1 = 2^24 (ties to
  // even twice), not 2^24 + 2 as a tree would give.
  std::vector<std::uint8_t> ones(96, 0);
  ones[0] = ones[32] = ones[64] = 0x38;
  EXPECT_EQ(Dot(E4, ones, {127 + 24, 127, 127}, E4, ones, {127, 127, 127}), 0x1p24f);
  // Tail elements past K are ignored even if the buffer is not zero.
  {
    MxTestTensor a = Line(E4, BlockAxis::kRows, {0x38, 0x38}, {127});
    MxTestTensor b = Line(E4, BlockAxis::kCols, {0x38, 0x38}, {127});
    a.codes[5] = 0x38;
    b.codes[5] = 0x38;
    EXPECT_EQ(ref::MxDot(a.view(), 0, b.view(), 0), 2.0f);
  }
}

TEST(MxDotRef, MatchesMpfrOnRandomBlocks) {
  std::mt19937_64 rng(TestSeed() ^ 0x1001);
  for (MxFormat fa : kMxFormats) {
    for (MxFormat fb : kMxFormats) {
      for (int rep = 0; rep < 40; ++rep) {
        const std::size_t k = 1 + rng() % 130;
        const MxTestTensor a = MakeRandomCodes(fa, BlockAxis::kRows, 1, k, 0, rng, true, false);
        const MxTestTensor b = MakeRandomCodes(fb, BlockAxis::kCols, k, 1, 0, rng, true, false);
        const float r = ref::MxDot(a.view(), 0, b.view(), 0);
        const float check = MpfrMxDot(a.view(), 0, b.view(), 0);
        ASSERT_TRUE(SameBits(r, check))
            << GetMxFormatInfo(fa).name << " x " << GetMxFormatInfo(fb).name << " k=" << k << ": "
            << Hex(r) << " vs MPFR " << Hex(check);
      }
    }
  }
}

TEST(MxDotRef, MatchesMpfrOnQuantizedData) {
  std::mt19937_64 rng(TestSeed() ^ 0x1002);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (MxFormat fa : kMxFormats) {
    for (MxFormat fb : kMxFormats) {
      const std::size_t k = 200;
      std::vector<float> va(k), vb(k);
      for (auto& v : va) v = normal(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);
      for (auto& v : vb) v = normal(rng);
      const MxTestTensor a = QuantizeMxScalar(fa, BlockAxis::kRows, 1, k,
                                              [&](std::size_t, std::size_t i) { return va[i]; });
      const MxTestTensor b = QuantizeMxScalar(fb, BlockAxis::kCols, k, 1,
                                              [&](std::size_t, std::size_t i) { return vb[i]; });
      const float r = ref::MxDot(a.view(), 0, b.view(), 0);
      const float check = MpfrMxDot(a.view(), 0, b.view(), 0);
      ASSERT_TRUE(SameBits(r, check)) << Hex(r) << " vs " << Hex(check);
    }
  }
}

TEST(MxElementRef, ValueTimesScale) {
  const MxTestTensor a = Line(MxFormat::kMxfp4, BlockAxis::kRows, {7, 0xB}, {130});
  EXPECT_EQ(ref::MxElement(a.view(), 0, 0), 48.0f);   // 6 * 2^3
  EXPECT_EQ(ref::MxElement(a.view(), 0, 1), -12.0f);  // -1.5 * 2^3
  const MxTestTensor b = Line(MxFormat::kMxfp8E4M3, BlockAxis::kCols, {0x7E, 0x01}, {0xFE});
  EXPECT_EQ(ref::MxElement(b.view(), 0, 0), std::numeric_limits<float>::infinity());  // 448 * 2^127
  EXPECT_EQ(ref::MxElement(b.view(), 1, 0), 0x1p118f);  // 2^-9 * 2^127
  const MxTestTensor c = Line(MxFormat::kMxint8, BlockAxis::kRows, {0x80}, {0x00});
  EXPECT_EQ(ref::MxElement(c.view(), 0, 0), -0x1p-126f);  // -2 * 2^-127
  const MxTestTensor d = Line(MxFormat::kMxfp6E3M2, BlockAxis::kRows, {0x01}, {0xFF});
  EXPECT_TRUE(std::isnan(ref::MxElement(d.view(), 0, 0)));
}

// ---------------------------------------------------------------------------
// internal::GemmMxMx against ref::MxDot + the gemm.h epilogue.
// ---------------------------------------------------------------------------

struct Case {
  std::size_t m, n, k;
  GemmParams params;
  bool bf16_out = false;
};

std::vector<float> ExpectedC(const MxTestTensor& a, const MxTestTensor& b, const Case& cs,
                             const std::vector<float>& c_old, const std::vector<float>& bias) {
  std::vector<float> out(cs.m * cs.n);
  for (std::size_t i = 0; i < cs.m; ++i) {
    for (std::size_t j = 0; j < cs.n; ++j) {
      float r = ref::MxDot(a.view(), i, b.view(), j);
      if (cs.params.alpha != 1.0f) r = cs.params.alpha * r;
      if (cs.params.beta != 0.0f) {
        const float t = cs.params.beta * c_old[i * cs.n + j];
        r = r + t;
      }
      if (cs.params.bias != nullptr) r = r + bias[j];
      if (cs.bf16_out)
        r = std::bit_cast<float>(static_cast<std::uint32_t>(Fp32ToBf16Rne(r).bits) << 16);
      out[i * cs.n + j] = r;
    }
  }
  return out;
}

// Runs GemmMxMx into a C with row stride n + 3 and returns the M x N values.
std::vector<float> RunKernel(const MxTestTensor& a, const MxTestTensor& b, const Case& cs,
                             const std::vector<float>& c_old, Executor& ex) {
  const std::size_t ld = cs.n + 3;
  std::vector<float> out(cs.m * cs.n);
  const GemmOperand ga = GemmOperand::Mx(a.view());
  const GemmOperand gb = GemmOperand::Mx(b.view());
  if (cs.bf16_out) {
    std::vector<Bf16> c(cs.m * ld + 1);
    for (std::size_t i = 0; i < cs.m; ++i)
      for (std::size_t j = 0; j < cs.n; ++j) c[i * ld + j] = Fp32ToBf16Rne(c_old[i * cs.n + j]);
    const Status s =
        internal::GemmMxMx(ga, gb, GemmOutput::Bf16(c.data(), cs.m, cs.n, ld), cs.params, ex);
    EXPECT_TRUE(s.ok()) << s.message();
    for (std::size_t i = 0; i < cs.m; ++i)
      for (std::size_t j = 0; j < cs.n; ++j)
        out[i * cs.n + j] =
            std::bit_cast<float>(static_cast<std::uint32_t>(c[i * ld + j].bits) << 16);
  } else {
    std::vector<float> c(cs.m * ld + 1, 0.0f);
    for (std::size_t i = 0; i < cs.m; ++i)
      for (std::size_t j = 0; j < cs.n; ++j) c[i * ld + j] = c_old[i * cs.n + j];
    const Status s =
        internal::GemmMxMx(ga, gb, GemmOutput::Fp32(c.data(), cs.m, cs.n, ld), cs.params, ex);
    EXPECT_TRUE(s.ok()) << s.message();
    for (std::size_t i = 0; i < cs.m; ++i)
      for (std::size_t j = 0; j < cs.n; ++j) out[i * cs.n + j] = c[i * ld + j];
  }
  return out;
}

// Compares on `target` (dispatch already forced to it by the per-target
// suite) and every thread count; returns false on the first mismatch
// (reported).
bool CheckOnTarget(const MxTestTensor& a, const MxTestTensor& b, const Case& cs,
                   const std::vector<float>& c_old, const std::vector<float>& expected,
                   const std::string& what, const testing::HwyTarget& target) {
  static SerialExecutor serial;
  static ThreadPoolExecutor two(2);
  static ThreadPoolExecutor three(3);
  Executor* executors[] = {&serial, &two, &three};
  for (Executor* ex : executors) {
    const std::vector<float> got = RunKernel(a, b, cs, c_old, *ex);
    for (std::size_t idx = 0; idx < got.size(); ++idx) {
      if (!SameBits(got[idx], expected[idx])) {
        ADD_FAILURE() << what << " target " << target.name << " threads " << ex->NumThreads()
                      << " M=" << cs.m << " N=" << cs.n << " K=" << cs.k << " at (" << idx / cs.n
                      << ", " << idx % cs.n << "): got " << Hex(got[idx]) << " want "
                      << Hex(expected[idx]);
        return false;
      }
    }
  }
  return true;
}

// The tests that run once per compiled Highway target (named .../AVX2 etc.).
class GemmMxMxPerTarget : public testing::HwyTargetTest {};
TRNMX_INSTANTIATE_PER_HWY_TARGET(GemmMxMxPerTarget);
class GemvDenseMxPerTarget : public testing::HwyTargetTest {};
TRNMX_INSTANTIATE_PER_HWY_TARGET(GemvDenseMxPerTarget);

std::string PairName(MxFormat fa, MxFormat fb) {
  return std::string(GetMxFormatInfo(fa).name) + " x " + std::string(GetMxFormatInfo(fb).name);
}

// Small shapes (every M, N, K class in 1..17 across the pairings) and random
// codes with NaN/Inf and extreme scales.
TEST_P(GemmMxMxPerTarget, SmallShapesRandomCodesAllPairings) {
  std::mt19937_64 rng(TestSeed() ^ 0x2001);
  const std::size_t dims[] = {1, 2, 3, 5, 7, 8, 13, 16, 17};
  const std::size_t ks[] = {1, 2, 5, 17, 31, 32, 33, 63, 64, 65, 97};
  for (MxFormat fa : kMxFormats) {
    for (MxFormat fb : kMxFormats) {
      for (int rep = 0; rep < 6; ++rep) {
        Case cs;
        cs.m = dims[rng() % std::size(dims)];
        cs.n = dims[rng() % std::size(dims)];
        cs.k = ks[rng() % std::size(ks)];
        const bool special = rep % 2 == 0;
        const MxTestTensor a =
            MakeRandomCodes(fa, BlockAxis::kRows, cs.m, cs.k, rep % 3, rng, special, rep == 3);
        const MxTestTensor b =
            MakeRandomCodes(fb, BlockAxis::kCols, cs.k, cs.n, rep % 2, rng, special, rep == 3);
        const std::vector<float> c_old(cs.m * cs.n, 0.0f);
        const std::vector<float> expected = ExpectedC(a, b, cs, c_old, {});
        if (!CheckOnTarget(a, b, cs, c_old, expected, PairName(fa, fb), GetParam())) return;
      }
    }
  }
}

// Quantized Gaussian data with block-varying magnitudes, all pairings, a
// shape that crosses the packing chunks and panels.
TEST_P(GemmMxMxPerTarget, QuantizedDataAllPairings) {
  std::mt19937_64 rng(TestSeed() ^ 0x2002);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (MxFormat fa : kMxFormats) {
    for (MxFormat fb : kMxFormats) {
      Case cs{19, 37, 300, {}, false};
      std::vector<float> va(cs.m * cs.k), vb(cs.k * cs.n);
      for (auto& v : va) v = normal(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 16) - 8);
      for (auto& v : vb) v = normal(rng);
      const MxTestTensor a = QuantizeMxScalar(
          fa, BlockAxis::kRows, cs.m, cs.k,
          [&](std::size_t i, std::size_t k) { return va[i * cs.k + k]; }, 0);
      const MxTestTensor b = QuantizeMxScalar(
          fb, BlockAxis::kCols, cs.k, cs.n,
          [&](std::size_t j, std::size_t k) { return vb[k * cs.n + j]; }, 4);
      const std::vector<float> c_old(cs.m * cs.n, 0.0f);
      if (!CheckOnTarget(a, b, cs, c_old, ExpectedC(a, b, cs, c_old, {}), PairName(fa, fb),
                         GetParam()))
        return;
    }
  }
}

// Larger shapes for the main formats: panel (N > 2048) and chunk (K > 512)
// boundaries, every register-tile edge.
TEST_P(GemmMxMxPerTarget, LargeShapes) {
  std::mt19937_64 rng(TestSeed() ^ 0x2003);
  struct Shape {
    MxFormat fa, fb;
    std::size_t m, n, k;
  };
  const Shape shapes[] = {
      {MxFormat::kMxfp4, MxFormat::kMxfp4, 67, 2100, 600},
      {MxFormat::kMxfp8E4M3, MxFormat::kMxfp8E4M3, 130, 530, 300},
      {MxFormat::kMxfp8E4M3, MxFormat::kMxfp8E4M3, 13, 2100, 300},
      {MxFormat::kMxfp4, MxFormat::kMxfp8E4M3, 41, 200, 333},
      {MxFormat::kMxint8, MxFormat::kMxint8, 25, 300, 700},
      {MxFormat::kMxfp6E2M3, MxFormat::kMxfp6E3M2, 33, 150, 290},
  };
  for (const Shape& s : shapes) {
    Case cs{s.m, s.n, s.k, {}, false};
    const MxTestTensor a = MakeRandomCodes(s.fa, BlockAxis::kRows, s.m, s.k, 0, rng, false, false);
    const MxTestTensor b = MakeRandomCodes(s.fb, BlockAxis::kCols, s.k, s.n, 0, rng, false, false);
    const std::vector<float> c_old(cs.m * cs.n, 0.0f);
    if (!CheckOnTarget(a, b, cs, c_old, ExpectedC(a, b, cs, c_old, {}), PairName(s.fa, s.fb),
                       GetParam()))
      return;
  }
}

// 8-bit B of the int16-plane kernel (E4M3 x E4M3, E2M1 x E4M3): B's whole
// blocks of 16-column groups are packed in vectors (PackPair16BVnni), the
// rest (a K tail, the last N < 16 columns) by the scalar loop; NaN codes,
// NaN scales and a garbage tail included.
TEST_P(GemmMxMxPerTarget, Pair16PackedBShapes) {
  std::mt19937_64 rng(TestSeed() ^ 0x2006);
  struct Shape {
    MxFormat fa;
    std::size_t m, n, k;
  };
  const Shape shapes[] = {
      {MxFormat::kMxfp8E4M3, 7, 16, 32},  {MxFormat::kMxfp8E4M3, 13, 47, 320},
      {MxFormat::kMxfp8E4M3, 6, 64, 300}, {MxFormat::kMxfp8E4M3, 9, 130, 1100},
      {MxFormat::kMxfp4, 5, 33, 96},
  };
  for (const Shape& sh : shapes) {
    for (const bool special : {false, true}) {
      Case cs{sh.m, sh.n, sh.k, {}, false};
      const MxTestTensor a =
          MakeRandomCodes(sh.fa, BlockAxis::kRows, sh.m, sh.k, 0, rng, special, special);
      const MxTestTensor b = MakeRandomCodes(MxFormat::kMxfp8E4M3, BlockAxis::kCols, sh.k, sh.n, 1,
                                             rng, special, special);
      const std::vector<float> c_old(cs.m * cs.n, 0.0f);
      if (!CheckOnTarget(a, b, cs, c_old, ExpectedC(a, b, cs, c_old, {}),
                         "pair16 " + PairName(sh.fa, MxFormat::kMxfp8E4M3), GetParam()))
        return;
    }
  }
}

// E4M3 x E4M3 from quantized data (A's blocks fit the 15-bit window, so the
// kernel combines in FP32) with NaN codes planted in B: the blocks holding
// one must give NaN through the FP64 combine.
TEST_P(GemmMxMxPerTarget, Pair16NanCodesInWindowRows) {
  std::mt19937_64 rng(TestSeed() ^ 0x2007);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Case cs{13, 64, 320, {}, false};
  std::vector<float> va(cs.m * cs.k), vb(cs.k * cs.n);
  for (auto& v : va) v = normal(rng);
  for (auto& v : vb) v = normal(rng);
  const MxTestTensor a = QuantizeMxScalar(
      MxFormat::kMxfp8E4M3, BlockAxis::kRows, cs.m, cs.k,
      [&](std::size_t i, std::size_t k) { return va[i * cs.k + k]; }, 0);
  MxTestTensor b = QuantizeMxScalar(
      MxFormat::kMxfp8E4M3, BlockAxis::kCols, cs.k, cs.n,
      [&](std::size_t j, std::size_t k) { return vb[k * cs.n + j]; }, 0);
  for (int i = 0; i < 6; ++i) {
    b.line_codes(rng() % cs.n)[rng() % cs.k] = (rng() & 1) != 0 ? 0x7F : 0xFF;
  }
  const std::vector<float> c_old(cs.m * cs.n, 0.0f);
  CheckOnTarget(a, b, cs, c_old, ExpectedC(a, b, cs, c_old, {}), "pair16 NaN codes", GetParam());
}

// M <= 4 with MXFP4 weights: the streaming GEMV path (AVX2 and AVX-512 targets;
// E3M2 and E4M3 activations in 2 and 3 int8 planes), with K tails inside a
// 4-block chunk, N tails inside a 16-column group, extreme scales, NaN codes
// in the activations, and enough work for the threads to split N.
TEST_P(GemmMxMxPerTarget, GemvShapes) {
  std::mt19937_64 rng(TestSeed() ^ 0x2005);
  struct Shape {
    MxFormat fa;
    std::size_t m, n, k;
    bool special;
  };
  const Shape shapes[] = {
      {MxFormat::kMxfp4, 1, 3001, 800, false}, {MxFormat::kMxfp4, 1, 333, 1000, true},
      {MxFormat::kMxfp6E2M3, 1, 47, 97, true}, {MxFormat::kMxint8, 2, 129, 160, true},
      {MxFormat::kMxfp4, 4, 300, 64, true},    {MxFormat::kMxint8, 1, 1600, 1400, false},
      {MxFormat::kMxfp8E4M3, 1, 333, 1000, true}, {MxFormat::kMxfp8E4M3, 3, 1030, 600, false},
      {MxFormat::kMxfp6E3M2, 1, 47, 97, true},    {MxFormat::kMxfp6E3M2, 2, 130, 300, false},
  };
  for (const Shape& sh : shapes) {
    Case cs{sh.m, sh.n, sh.k, {}, false};
    const MxTestTensor a =
        MakeRandomCodes(sh.fa, BlockAxis::kRows, sh.m, sh.k, 0, rng, sh.special, sh.special);
    const MxTestTensor b = MakeRandomCodes(MxFormat::kMxfp4, BlockAxis::kCols, sh.k, sh.n, 3, rng,
                                           sh.special, sh.special);
    const std::vector<float> c_old(cs.m * cs.n, 0.0f);
    if (!CheckOnTarget(a, b, cs, c_old, ExpectedC(a, b, cs, c_old, {}),
                       "gemv " + PairName(sh.fa, MxFormat::kMxfp4), GetParam()))
      return;
  }
}

// E4M3 activations of the top binades (|a| in [256, 448], one sign) against
// positive weights: block sums of 2^24 to 2^28, which float(S) rounds in the
// 3-plane GEMV; the bits must still be one rounding of S * 2^e. Then the same
// with a NaN code (and no special scale) in one block: every output NaN.
TEST_P(GemmMxMxPerTarget, GemvE4M3LargeBlockSumsAndNanCodes) {
  std::mt19937_64 rng(TestSeed() ^ 0x2006);
  Case cs{1, 77, 640, {}, false};
  MxTestTensor a = MakeRandomCodes(MxFormat::kMxfp8E4M3, BlockAxis::kRows, cs.m, cs.k, 0, rng,
                                   false, false);
  MxTestTensor b =
      MakeRandomCodes(MxFormat::kMxfp4, BlockAxis::kCols, cs.k, cs.n, 0, rng, false, false);
  std::uniform_int_distribution<unsigned> pick(0, 14);
  for (std::size_t i = 0; i < cs.k; ++i) {  // 0x70 .. 0x7E: 256 .. 448, no NaN.
    a.line_codes(0)[i] = static_cast<std::uint8_t>(0x70 + pick(rng));
  }
  for (std::size_t j = 0; j < cs.n; ++j) {  // E2M1 codes 1 .. 7: 0.5 .. 6.
    for (std::size_t i = 0; i < cs.k / 2; ++i) {
      b.line_codes(j)[i] = static_cast<std::uint8_t>((1 + pick(rng) % 7) | (1 + pick(rng) % 7) << 4);
    }
  }
  const std::vector<float> c_old(cs.m * cs.n, 0.0f);
  if (!CheckOnTarget(a, b, cs, c_old, ExpectedC(a, b, cs, c_old, {}), "gemv E4M3 large sums",
                     GetParam())) {
    return;
  }
  a.line_codes(0)[5 * 32 + 7] = 0xFF;
  const std::vector<float> expected = ExpectedC(a, b, cs, c_old, {});
  EXPECT_TRUE(std::isnan(expected[0]));
  CheckOnTarget(a, b, cs, c_old, expected, "gemv E4M3 NaN code", GetParam());
}

// alpha, beta (with NaN in C ignored when beta == 0), bias, BF16 output.
TEST_P(GemmMxMxPerTarget, Epilogue) {
  std::mt19937_64 rng(TestSeed() ^ 0x2004);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (MxFormat f : {MxFormat::kMxfp4, MxFormat::kMxfp8E4M3, MxFormat::kMxfp8E5M2}) {
    for (int variant = 0; variant < 4; ++variant) {
      Case cs{9, 35, 70, {}, variant >= 2};
      std::vector<float> bias(cs.n), c_old(cs.m * cs.n);
      for (auto& v : bias) v = normal(rng);
      for (auto& v : c_old) v = normal(rng);
      if (variant == 0) {
        c_old[3] = std::numeric_limits<float>::quiet_NaN();  // beta == 0: not read.
      } else {
        cs.params.alpha = 0.75f;
        cs.params.beta = variant == 1 ? -1.5f : 0.3f;
        cs.params.bias = variant == 3 ? nullptr : bias.data();
      }
      if (cs.bf16_out) {
        for (auto& v : c_old)
          v = std::bit_cast<float>(static_cast<std::uint32_t>(Fp32ToBf16Rne(v).bits) << 16);
      }
      const MxTestTensor a = MakeRandomCodes(f, BlockAxis::kRows, cs.m, cs.k, 0, rng, false, false);
      const MxTestTensor b = MakeRandomCodes(f, BlockAxis::kCols, cs.k, cs.n, 0, rng, false, false);
      if (!CheckOnTarget(a, b, cs, c_old, ExpectedC(a, b, cs, c_old, bias), "epilogue", GetParam()))
        return;
    }
  }
}

// The kernel each pairing takes on each target (for the log: the VNNI kernel
// runs only on the AVX-512 targets of a CPU with VNNI).
TEST_P(GemmMxMxPerTarget, KernelPaths) {
  std::string line = GetParam().name;
  line.append(":");
  for (MxFormat fa : kMxFormats) {
    for (MxFormat fb : kMxFormats) {
      const char* path = internal::GemmMxMxPathName(fa, fb);
      EXPECT_NE(std::string(path), "");
      if (fa == fb) {
        line.append(" ");
        line.append(GetMxFormatInfo(fa).name);
        line.append("=");
        line.append(path);
      }
    }
  }
  std::printf("%s\n", line.c_str());
}

// internal::GemvDenseMx (dense FP32/BF16 row x MXFP4 weights) against the
// gemm.h dense x MX contract: w = ref::MxElement, acc = std::fma chain in K
// order, then the epilogue. Where the function declines (targets without
// AVX2), it must leave C alone.
TEST_P(GemvDenseMxPerTarget, MatchesDenseContract) {
  std::mt19937_64 rng(TestSeed() ^ 0x3001);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  struct Shape {
    std::size_t n, k;
    bool bf16, special;
    int scale = -1;  // >= 0: every block of B gets this scale (whole chains of subnormal,
                     // overflowing or NaN weights).
    std::size_t low_every = 0;  // > 0: block low_every - 1 and every low_every-th after it
                                // get scale 3 in all columns (the AVX2 kernel's exact
                                // chunks between its fast ones).
  };
  const Shape shapes[] = {{1, 1, false, false},       {70, 33, false, true},
                          {200, 300, true, false},    {1000, 2100, false, false},
                          {129, 95, true, true},      {3000, 1024, false, false},
                          {40, 100, false, false, 0}, {40, 100, false, false, 1},
                          {41, 77, true, false, 0xFE}, {9, 70, false, false, 0xFF},
                          // Special codes and an Inf in x under a normal scale: the
                          // AVX2 kernel's folded-scale path meets -0 * Inf.
                          {64, 200, false, true, 0x7F},
                          {40, 2000, true, false, -1, 11}};
  static SerialExecutor serial;
  static ThreadPoolExecutor two(2);
  static ThreadPoolExecutor three(3);
  Executor* executors[] = {&serial, &two, &three};
  for (const Shape& sh : shapes) {
    MxTestTensor b = MakeRandomCodes(MxFormat::kMxfp4, BlockAxis::kCols, sh.k, sh.n, 1, rng,
                                     sh.special, sh.special);
    if (sh.scale >= 0) {
      for (std::size_t j = 0; j < sh.n; ++j) {
        std::fill_n(b.line_scales(j), b.shape.blocks_per_line(), static_cast<std::uint8_t>(sh.scale));
      }
    }
    if (sh.low_every > 0) {
      const std::size_t blocks = b.shape.blocks_per_line();
      for (std::size_t j = 0; j < sh.n; ++j) {
        for (std::size_t blk = sh.low_every - 1; blk < blocks; blk += sh.low_every) {
          b.line_scales(j)[blk] = 3;
        }
      }
    }
    std::vector<float> x(sh.k);
    for (auto& v : x) v = normal(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 20) - 10);
    if (sh.special) x[sh.k / 2] = std::numeric_limits<float>::infinity();
    std::vector<Bf16> xb(sh.k);
    for (std::size_t i = 0; i < sh.k; ++i) {
      xb[i] = Fp32ToBf16Rne(x[i]);
      if (sh.bf16) x[i] = std::bit_cast<float>(static_cast<std::uint32_t>(xb[i].bits) << 16);
    }
    GemmParams params;
    std::vector<float> bias(sh.n);
    for (auto& v : bias) v = normal(rng);
    if (sh.special) {
      params.alpha = -2.0f;
      params.bias = bias.data();
    }
    std::vector<float> want(sh.n);
    for (std::size_t j = 0; j < sh.n; ++j) {
      float acc = 0.0f;
      for (std::size_t i = 0; i < sh.k; ++i)
        acc = std::fma(x[i], ref::MxElement(b.view(), i, j), acc);
      if (params.alpha != 1.0f) acc = params.alpha * acc;
      if (params.bias != nullptr) acc = acc + bias[j];
      want[j] = acc;
    }
    const GemmOperand ga = sh.bf16 ? GemmOperand::Bf16(xb.data(), 1, sh.k, sh.k)
                                   : GemmOperand::Fp32(x.data(), 1, sh.k, sh.k);
    const GemmOperand gb = GemmOperand::Mx(b.view());
    bool ran = false;
    for (Executor* ex : executors) {
      std::vector<float> got(sh.n, 12345.0f);
      const bool handled =
          internal::GemvDenseMx(ga, gb, GemmOutput::Fp32(got.data(), 1, sh.n, sh.n), params, *ex);
      if (!handled) {
        for (float v : got) ASSERT_EQ(v, 12345.0f);
        continue;
      }
      ran = true;
      for (std::size_t j = 0; j < sh.n; ++j) {
        ASSERT_TRUE(SameBits(got[j], want[j]))
            << "target " << GetParam().name << " threads " << ex->NumThreads() << " N=" << sh.n
            << " K=" << sh.k << " j=" << j << ": got " << Hex(got[j]) << " want " << Hex(want[j]);
      }
    }
    // The x86 targets with AVX2 take the GEMV (AVX-512 VNNI or AVX2 kernel);
    // the others decline.
    const std::string& name = GetParam().name;
    EXPECT_EQ(ran, name == "AVX2" || name == "AVX3" || name == "AVX3_DL") << name;
  }
}

TEST(GemmMxMx, EmptyK) {
  const MxTestTensor a = AllocateMxTestTensor({MxFormat::kMxfp4, 3, 0, BlockAxis::kRows});
  const MxTestTensor b = AllocateMxTestTensor({MxFormat::kMxfp4, 0, 4, BlockAxis::kCols});
  Case cs{3, 4, 0, {}, false};
  cs.params.beta = 1.0f;
  const std::vector<float> c_old(12, 2.5f);
  SerialExecutor ex;
  const std::vector<float> got = RunKernel(a, b, cs, c_old, ex);
  for (float v : got) EXPECT_EQ(v, 2.5f);
}

// The wide path (E5M2 x E5M2) cuts an exact block sum to 53 bits before
// scaling: the bits cut off must stay as a sticky bit. A = B = [2^14, 2^2,
// 2^-16, 0, ...]: S = 2^28 + 2^4 + 2^-32, halfway between two FP32 values at
// 2^28 (ulp 32) but for the 2^-32, so RNE must give 268435488, not the even
// 268435456 that a dropped sticky bit would round to (mutation testing).
TEST(GemmMxMx, WidePathKeepsTheStickyBitOfTheExactSum) {
  std::vector<float> x(32, 0.0f);
  x[0] = 16384.0f;
  x[1] = 4.0f;
  x[2] = std::ldexp(1.0f, -16);
  StatusOr<MxTensor> a = QuantizeMx(Fp32MatrixView{x.data(), 1, 32, 32}, MxFormat::kMxfp8E5M2,
                                    {.axis = BlockAxis::kRows});
  StatusOr<MxTensor> b = QuantizeMx(Fp32MatrixView{x.data(), 32, 1, 1}, MxFormat::kMxfp8E5M2,
                                    {.axis = BlockAxis::kCols});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_STREQ(internal::GemmMxMxPathName(MxFormat::kMxfp8E5M2, MxFormat::kMxfp8E5M2), "wide");
  for (const testing::HwyTarget& target : testing::CompiledHwyTargets()) {
    const testing::ScopedHwyTarget scoped(target.bits);
    float c = -1.0f;
    ASSERT_TRUE(
        Gemm(GemmOperand::Mx(a->view()), GemmOperand::Mx(b->view()), GemmOutput::Fp32(&c, 1, 1, 1))
            .ok());
    EXPECT_EQ(c, 268435488.0f) << target.name;
  }
}


// ---------------------------------------------------------------------------
// MxGemmMode::kViaBf16.
// ---------------------------------------------------------------------------

// Runs Gemm() (or with B packed) into a fresh FP32 C.
std::vector<float> RunPublic(const GemmOperand& a, const GemmOperand& b, std::size_t m,
                             std::size_t n, const GemmParams& p, bool packed = false) {
  std::vector<float> c(m * n, -1.0f);
  Status s;
  if (packed) {
    StatusOr<PackedWeights> w = PackedWeights::Pack(b);
    EXPECT_TRUE(w.ok());
    s = Gemm(a, *w, GemmOutput::Fp32(c.data(), m, n, n), p);
  } else {
    s = Gemm(a, b, GemmOutput::Fp32(c.data(), m, n, n), p);
  }
  EXPECT_TRUE(s.ok()) << s.message();
  return c;
}

bool SameVectorBits(const std::vector<float>& x, const std::vector<float>& y) {
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!SameBits(x[i], y[i])) {
      ADD_FAILURE() << "element " << i << ": " << Hex(x[i]) << " vs " << Hex(y[i]);
      return false;
    }
  }
  return true;
}

// The Bf16Modes this machine runs.
std::vector<Bf16Mode> RunnableBf16Modes() {
  std::vector<Bf16Mode> modes = {Bf16Mode::kExactFma};
  if (internal::CpuHasAvx512Bf16()) modes.push_back(Bf16Mode::kNativeDot);
  if (internal::AmxBf16Usable()) modes.push_back(Bf16Mode::kAmxTile);
  return modes;
}

// Quantized Gaussian A (19 x 300) and B (300 x 37) of the given formats.
std::pair<MxTestTensor, MxTestTensor> QuantizedPair(MxFormat fa, MxFormat fb, std::mt19937_64& rng,
                                                    std::size_t m, std::size_t n, std::size_t k) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> va(m * k), vb(k * n);
  for (auto& v : va) v = normal(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 16) - 8);
  for (auto& v : vb) v = normal(rng);
  return {QuantizeMxScalar(fa, BlockAxis::kRows, m, k,
                           [&](std::size_t i, std::size_t kk) { return va[i * k + kk]; }, 0),
          QuantizeMxScalar(fb, BlockAxis::kCols, k, n,
                           [&](std::size_t j, std::size_t kk) { return vb[kk * n + j]; }, 4)};
}

// Folded: the same bits as the reference, as Gemm() on the BF16 values
// (formed here from ref::MxElement), and with B packed, in each Bf16Mode.
TEST(GemmMxViaBf16, EqualsTheBf16ContractOnTheValues) {
  std::mt19937_64 rng(TestSeed() ^ 0x2101);
  const std::pair<MxFormat, MxFormat> pairs[] = {{MxFormat::kMxfp8E4M3, MxFormat::kMxfp8E4M3},
                                                 {MxFormat::kMxfp8E5M2, MxFormat::kMxfp4},
                                                 {MxFormat::kMxfp6E2M3, MxFormat::kMxint8},
                                                 {MxFormat::kMxfp4, MxFormat::kMxfp6E3M2}};
  const std::size_t m = 19, n = 37;
  // K = 301: an odd K's last pair in the B panels holds +0 as its odd member.
  for (const std::size_t k : {std::size_t{300}, std::size_t{301}})
    for (const auto& [fa, fb] : pairs) {
      SCOPED_TRACE(PairName(fa, fb) + " K " + std::to_string(k));
      const auto [ta, tb] = QuantizedPair(fa, fb, rng, m, n, k);
      const GemmOperand a = GemmOperand::Mx(ta.view());
      const GemmOperand b = GemmOperand::Mx(tb.view());
      std::vector<Bf16> a16(m * k), b16(k * n);
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t kk = 0; kk < k; ++kk)
          a16[i * k + kk] = Fp32ToBf16Rne(internal::MxMatrixElement(ta.view(), i, kk));
      for (std::size_t kk = 0; kk < k; ++kk)
        for (std::size_t j = 0; j < n; ++j)
          b16[kk * n + j] = Fp32ToBf16Rne(internal::MxMatrixElement(tb.view(), kk, j));
      const GemmOperand a_dense = GemmOperand::Bf16(a16.data(), m, k, k);
      const GemmOperand b_dense = GemmOperand::Bf16(b16.data(), k, n, n);
      GemmParams exact;
      const std::vector<float> exact_c = RunPublic(a, b, m, n, exact);
      for (const Bf16Mode mode : RunnableBf16Modes()) {
        SCOPED_TRACE(static_cast<int>(mode));
        GemmParams p;
        p.mx_mode = MxGemmMode::kViaBf16;
        p.bf16_mode = mode;
        const std::vector<float> got = RunPublic(a, b, m, n, p);
        GemmParams dense_p;
        dense_p.bf16_mode = mode;
        ASSERT_TRUE(SameVectorBits(got, RunPublic(a_dense, b_dense, m, n, dense_p)));
        ASSERT_TRUE(SameVectorBits(got, RunPublic(a, b, m, n, p, /*packed=*/true)));
        std::vector<float> want(m * n);
        ASSERT_TRUE(ref::Gemm(a, b, GemmOutput::Fp32(want.data(), m, n, n), p).ok());
        ASSERT_TRUE(SameVectorBits(got, want));
        // The 8-bit FP8 products round in the FP32 chains: not the exact
        // contract's bits, so the fold took effect (the FP6 / FP4 / INT8
        // pairs' few-bit products may sum exactly either way).
        if (GetMxFormatInfo(fa).element_bits == 8 && fb != MxFormat::kMxint8) {
          std::size_t differ = 0;
          for (std::size_t i = 0; i < got.size(); ++i)
            differ += SameBits(got[i], exact_c[i]) ? 0 : 1;
          EXPECT_GT(differ, 0u);
        }
      }
    }
}

// A value that is not its own BF16 (subnormal, NaN scale, Inf element):
// the whole call computes the exact contract.
TEST(GemmMxViaBf16, AValueNotABf16GivesTheExactContract) {
  std::mt19937_64 rng(TestSeed() ^ 0x2102);
  const std::size_t m = 5, n = 9, k = 96;
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant);
    auto [ta, tb] = QuantizedPair(MxFormat::kMxfp8E5M2, MxFormat::kMxfp8E4M3, rng, m, n, k);
    if (variant == 0) ta.line_scales(3)[1] = 0x02;  // 2^-125 x elements: subnormal values.
    if (variant == 1) tb.line_scales(7)[2] = 0xFF;  // NaN scale.
    if (variant == 2) ta.line_codes(1)[5] = 0x7C;   // E5M2 +Inf.
    const GemmOperand a = GemmOperand::Mx(ta.view());
    const GemmOperand b = GemmOperand::Mx(tb.view());
    const std::vector<float> exact_c = RunPublic(a, b, m, n, {});
    for (const Bf16Mode mode : RunnableBf16Modes()) {
      GemmParams p;
      p.mx_mode = MxGemmMode::kViaBf16;
      p.bf16_mode = mode;
      const std::vector<float> got = RunPublic(a, b, m, n, p);
      ASSERT_TRUE(SameVectorBits(got, exact_c));
      std::vector<float> want(m * n);
      ASSERT_TRUE(ref::Gemm(a, b, GemmOutput::Fp32(want.data(), m, n, n), p).ok());
      ASSERT_TRUE(SameVectorBits(got, want));
    }
  }
}

TEST(GemmMxViaBf16, ErrorsNameTheProblem) {
  std::mt19937_64 rng(TestSeed() ^ 0x2103);
  const auto [ta, tb] = QuantizedPair(MxFormat::kMxfp8E4M3, MxFormat::kMxfp8E4M3, rng, 4, 4, 64);
  const GemmOperand a = GemmOperand::Mx(ta.view());
  const GemmOperand b = GemmOperand::Mx(tb.view());
  std::vector<float> dense(64 * 4, 1.0f), c(16, 7.0f);
  const GemmOutput out = GemmOutput::Fp32(c.data(), 4, 4, 4);
  const auto expect_error = [&](const GemmOperand& x, const GemmOperand& y, const GemmParams& p,
                                const std::string& what) {
    const Status s = Gemm(x, y, out, p);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << what;
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
    EXPECT_EQ(c, std::vector<float>(16, 7.0f));
  };
  GemmParams via;
  via.mx_mode = MxGemmMode::kViaBf16;
  expect_error(GemmOperand::Fp32(dense.data(), 4, 64, 64), b, via,
               "MxGemmMode::kViaBf16 needs MX x MX operands");
  GemmParams bad;
  bad.mx_mode = static_cast<MxGemmMode>(9);
  expect_error(a, b, bad, "invalid MxGemmMode value 9");
  GemmParams acc = via;
  acc.accumulate = true;
  expect_error(a, b, acc, "MxGemmMode::kExact");
  GemmParams native;  // kNativeDot on MX x MX needs kViaBf16.
  native.bf16_mode = Bf16Mode::kNativeDot;
  expect_error(a, b, native, "Bf16Mode::kNativeDot needs BF16 x BF16 operands");
}

}  // namespace
}  // namespace trnmx
