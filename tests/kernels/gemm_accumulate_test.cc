// GemmParams::accumulate: a GEMM split along K into consecutive calls (the
// first starting C, the next ones continuing it, like a PSUM accumulation
// group) gives the same bits as one call, on every operand combination and
// compiled Highway target; the reference agrees; misuse is rejected.
#include <gtest/gtest.h>

#include <bit>
#include <random>
#include <string>
#include <vector>

#include "reference/gemm_ref.h"
#include "support/hwy_targets.h"
#include "trnmx/executor.h"
#include "trnmx/formats/codec.h"
#include "trnmx/gemm.h"
#include "trnmx/mx.h"

namespace trnmx {
namespace {

struct Operands {
  std::vector<float> a32, b32;
  std::vector<Bf16> a16, b16;
  MxTensor amx, bmx;
  GemmOperand a, b;
};

// type: 0 FP32, 1 BF16, 2 MX of `format`. A is M x K, B is K x N.
Operands Make(int a_type, int b_type, MxFormat format, std::size_t m, std::size_t n, std::size_t k,
              std::mt19937& rng) {
  Operands o;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  o.a32.resize(m * k);
  o.b32.resize(k * n);
  for (float& x : o.a32) x = normal(rng);
  for (float& x : o.b32) x = normal(rng);
  SerialExecutor serial;
  auto make = [&](int type, std::vector<float>& v, std::vector<Bf16>& v16, MxTensor& t, std::size_t rows,
                  std::size_t cols, BlockAxis axis) {
    if (type == 0) return GemmOperand::Fp32(v.data(), rows, cols, cols);
    if (type == 1) {
      v16.resize(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) v16[i] = Encode<Bf16>(v[i]);
      return GemmOperand::Bf16(v16.data(), rows, cols, cols);
    }
    MxQuantizeOptions opt;
    opt.axis = axis;
    t = QuantizeMx(Fp32MatrixView{v.data(), rows, cols, cols}, format, opt, &serial).value();
    return GemmOperand::Mx(t.view());
  };
  o.a = make(a_type, o.a32, o.a16, o.amx, m, k, BlockAxis::kRows);
  o.b = make(b_type, o.b32, o.b16, o.bmx, k, n, BlockAxis::kCols);
  return o;
}

// Columns [k0, k0 + kl) of A and rows [k0, k0 + kl) of B (k0 a multiple of 32 for MX).
GemmOperand SliceK(const GemmOperand& x, bool is_a, std::size_t k0, std::size_t kl) {
  GemmOperand s = x;
  if (is_a) {
    s.cols = kl;
  } else {
    s.rows = kl;
  }
  if (x.type == OperandType::kMx) {
    const MxFormatInfo& info = GetMxFormatInfo(x.mx.shape.format);
    s.mx.codes += k0 / 32 * info.block_bytes;
    s.mx.scales += k0 / 32;
    (is_a ? s.mx.shape.cols : s.mx.shape.rows) = kl;
    return s;
  }
  const std::size_t elem = x.type == OperandType::kFp32 ? 4 : 2;
  const std::size_t step = is_a ? x.col_stride : x.row_stride;
  s.data = static_cast<const char*>(x.data) + k0 * step * elem;
  return s;
}

// Runs on the target the per-target suite forced: the split calls and the
// whole call, compared with each other and with ref::Gemm.
void ExpectSplitEqualsWhole(int a_type, int b_type, MxFormat format, std::size_t m, std::size_t n,
                            std::size_t k, const std::vector<std::size_t>& cuts, unsigned seed) {
  SCOPED_TRACE("types " + std::to_string(a_type) + "x" + std::to_string(b_type) + " m=" + std::to_string(m) +
               " n=" + std::to_string(n) + " k=" + std::to_string(k) + " seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  Operands o = Make(a_type, b_type, format, m, n, k, rng);
  std::vector<float> whole(m * n, -1.0f), split(m * n, -7.0f), ref(m * n, -3.0f);
  ThreadPoolExecutor pool(2);
  ASSERT_TRUE(Gemm(o.a, o.b, GemmOutput::Fp32(whole.data(), m, n, n), {}, &pool).ok());
  std::size_t k0 = 0;
  for (std::size_t part = 0; part <= cuts.size(); ++part) {
    const std::size_t k1 = part < cuts.size() ? cuts[part] : k;
    GemmParams p;
    p.accumulate = part > 0;
    const Status s = Gemm(SliceK(o.a, true, k0, k1 - k0), SliceK(o.b, false, k0, k1 - k0),
                          GemmOutput::Fp32(split.data(), m, n, n), p, &pool);
    ASSERT_TRUE(s.ok()) << s.ToString();
    k0 = k1;
  }
  for (std::size_t i = 0; i < whole.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(split[i]), std::bit_cast<std::uint32_t>(whole[i]))
        << "element " << i;
  }
  // The reference with the same split agrees too (so "whole" is the same on
  // every target: the reference does not depend on the target).
  k0 = 0;
  for (std::size_t part = 0; part <= cuts.size(); ++part) {
    const std::size_t k1 = part < cuts.size() ? cuts[part] : k;
    GemmParams p;
    p.accumulate = part > 0;
    ASSERT_TRUE(ref::Gemm(SliceK(o.a, true, k0, k1 - k0), SliceK(o.b, false, k0, k1 - k0),
                          GemmOutput::Fp32(ref.data(), m, n, n), p)
                    .ok());
    k0 = k1;
  }
  for (std::size_t i = 0; i < whole.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(ref[i]), std::bit_cast<std::uint32_t>(whole[i])) << "element " << i;
  }
}

// The tests that run once per compiled Highway target (named .../AVX2 etc.).
class GemmAccumulatePerTarget : public testing::HwyTargetTest {};
TRNMX_INSTANTIATE_PER_HWY_TARGET(GemmAccumulatePerTarget);

TEST_P(GemmAccumulatePerTarget, DenseSplitsEqualOneCall) {
  ExpectSplitEqualsWhole(0, 0, MxFormat::kMxfp4, 37, 45, 300, {1, 128, 129}, 1);
  ExpectSplitEqualsWhole(1, 1, MxFormat::kMxfp4, 16, 70, 257, {100}, 2);
  ExpectSplitEqualsWhole(0, 1, MxFormat::kMxfp4, 1, 33, 64, {7, 8}, 3);
  ExpectSplitEqualsWhole(0, 0, MxFormat::kMxfp4, 3, 5, 2, {1}, 4);
  // Continued calls of several K blocks (KC is 192): their chains start from
  // C also where the blocked driver keeps the partial sums in its scratch.
  ExpectSplitEqualsWhole(0, 0, MxFormat::kMxfp4, 37, 45, 900, {250, 500}, 9);
  // M <= 4 with C's rows 4 KiB apart: the streamed path keeps the sums in a
  // padded scratch, so the continued chains are copied in from C.
  ExpectSplitEqualsWhole(0, 0, MxFormat::kMxfp4, 3, 1024, 40, {16, 17}, 10);
}

TEST_P(GemmAccumulatePerTarget, MxSplitsAtBlockBoundariesEqualOneCall) {
  for (const MxFormat f : {MxFormat::kMxfp8E4M3, MxFormat::kMxfp8E5M2, MxFormat::kMxfp4,
                           MxFormat::kMxfp6E3M2, MxFormat::kMxint8}) {
    ExpectSplitEqualsWhole(2, 2, f, 20, 36, 200, {32, 128}, 5);
    ExpectSplitEqualsWhole(2, 2, f, 2, 40, 512, {256}, 6);  // M <= 4: the GEMV path declines
  }
  ExpectSplitEqualsWhole(1, 2, MxFormat::kMxfp4, 1, 64, 256, {128}, 7);  // dense x MX, M = 1
  ExpectSplitEqualsWhole(0, 2, MxFormat::kMxfp8E4M3, 9, 17, 96, {64}, 8);
}

TEST_P(GemmAccumulatePerTarget, StreamedChainsStartFromCNotFromScratch) {
  // M <= 4 with C's rows 4 KiB apart keeps the sums in a scratch of the
  // calling thread. An unrelated call first leaves other sums there; the
  // continued call must start from C's values.
  constexpr std::size_t m = 3, n = 1024, k = 24;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto random = [&](std::size_t count) {
    std::vector<float> v(count);
    for (float& x : v) x = u(rng);
    return v;
  };
  const std::vector<float> a = random(m * k), b = random(k * n), other = random(k * n);
  const std::vector<float> c0 = random(m * n);
  std::vector<float> scratch_filler(m * n), c = c0, ref = c0;
  ASSERT_TRUE(Gemm(GemmOperand::Fp32(a.data(), m, k, k), GemmOperand::Fp32(other.data(), k, n, n),
                   GemmOutput::Fp32(scratch_filler.data(), m, n, n))
                  .ok());
  GemmParams p;
  p.accumulate = true;
  ASSERT_TRUE(Gemm(GemmOperand::Fp32(a.data(), m, k, k), GemmOperand::Fp32(b.data(), k, n, n),
                   GemmOutput::Fp32(c.data(), m, n, n), p)
                  .ok());
  ASSERT_TRUE(ref::Gemm(GemmOperand::Fp32(a.data(), m, k, k), GemmOperand::Fp32(b.data(), k, n, n),
                        GemmOutput::Fp32(ref.data(), m, n, n), p)
                  .ok());
  for (std::size_t i = 0; i < c.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(c[i]), std::bit_cast<std::uint32_t>(ref[i]))
        << "element " << i;
  }
}

TEST(GemmAccumulate, RejectsOutputsAndEpiloguesItCannotContinue) {
  std::vector<float> a(4, 1.0f), b(4, 1.0f), c(4, 0.0f), bias(2, 0.0f);
  std::vector<Bf16> c16(4);
  const GemmOperand ga = GemmOperand::Fp32(a.data(), 2, 2, 2);
  const GemmOperand gb = GemmOperand::Fp32(b.data(), 2, 2, 2);
  GemmParams p;
  p.accumulate = true;
  Status s = Gemm(ga, gb, GemmOutput::Bf16(c16.data(), 2, 2, 2), p);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("accumulate"), std::string::npos) << s.message();
  for (int variant = 0; variant < 3; ++variant) {
    GemmParams q = p;
    if (variant == 0) q.alpha = 2.0f;
    if (variant == 1) q.beta = 1.0f;
    if (variant == 2) q.bias = bias.data();
    EXPECT_EQ(Gemm(ga, gb, GemmOutput::Fp32(c.data(), 2, 2, 2), q).code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(c, std::vector<float>(4, 0.0f));  // Nothing written on error.
  ASSERT_TRUE(Gemm(ga, gb, GemmOutput::Fp32(c.data(), 2, 2, 2), p).ok());
  EXPECT_EQ(c, std::vector<float>(4, 2.0f));  // 0 + 1*1 + 1*1.
}

}  // namespace
}  // namespace trnmx
