// Grouped expert GEMM (moe.h): every expert's rows equal a per-expert
// trnmx::Gemm bit for bit for every weight / activation / output format,
// the SwiGLU variants against a scalar reference written here from the
// contract, empty and single experts, thread counts, and every error path
// (nothing written).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "internal/fixed_math.h"
#include "support/random.h"
#include "trnmx/executor.h"
#include "trnmx/formats/codec.h"
#include "trnmx/gemm.h"
#include "trnmx/moe.h"
#include "trnmx/mx.h"

namespace trnmx {
namespace {

using testing::Rng;

std::uint64_t GroupedGemmSeed() { return testing::TestSeed(20261212); }

// kFp8: dense Fp8E4M3Ieee (Trainium2's FP8), no block scales.
enum class WKind { kMxfp4, kMxfp8, kBf16, kFp32, kFp8 };
enum class XKind { kBf16, kMxfp8, kFp32, kFp8 };

const char* Name(WKind w) {
  switch (w) {
    case WKind::kMxfp4:
      return "MXFP4";
    case WKind::kMxfp8:
      return "MXFP8";
    case WKind::kBf16:
      return "BF16";
    case WKind::kFp32:
      return "FP32";
    case WKind::kFp8:
      return "FP8 e4m3-ieee";
  }
  return "?";
}
const char* Name(XKind x) {
  switch (x) {
    case XKind::kBf16:
      return "BF16";
    case XKind::kMxfp8:
      return "MXFP8";
    case XKind::kFp32:
      return "FP32";
    case XKind::kFp8:
      return "FP8 e4m3-ieee";
  }
  return "?";
}

std::vector<float> RandomFloats(Rng& rng, std::size_t n, float scale) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<Bf16> ToBf16(const std::vector<float>& v) {
  std::vector<Bf16> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = Fp32ToBf16Rne(v[i]);
  return out;
}

float Widen(Bf16 b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b.bits) << 16); }

// A matrix in one of the operand formats, owning its memory.
struct Operand {
  std::vector<float> f32;
  std::vector<Bf16> bf16;
  std::vector<Fp8E4M3Ieee> fp8;
  MxTensor mx;
  GemmOperand op;
};

// rows x cols from row-major FP32 values; MX is blocked along K (rows of an
// activation, columns of a weight).
Operand MakeOperand(const std::vector<float>& v, std::size_t rows, std::size_t cols, bool is_mx,
                    MxFormat format, bool dense_bf16, bool weight, bool dense_fp8 = false) {
  Operand o;
  if (dense_fp8) {
    for (const float x : v) o.fp8.push_back(Encode<Fp8E4M3Ieee>(x));
    o.op = GemmOperand::Fp8(o.fp8.data(), rows, cols, cols);
  } else if (is_mx) {
    MxQuantizeOptions opt;
    opt.axis = weight ? BlockAxis::kCols : BlockAxis::kRows;
    StatusOr<MxTensor> t = QuantizeMx(Fp32MatrixView{v.data(), rows, cols, cols}, format, opt);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    o.mx = std::move(*t);
    o.op = GemmOperand::Mx(o.mx.view());
  } else if (dense_bf16) {
    o.bf16 = ToBf16(v);
    o.op = GemmOperand::Bf16(o.bf16.data(), rows, cols, cols);
  } else {
    o.f32 = v;
    o.op = GemmOperand::Fp32(o.f32.data(), rows, cols, cols);
  }
  return o;
}

Operand MakeWeight(Rng& rng, WKind kind, std::size_t k, std::size_t n) {
  const std::vector<float> v = RandomFloats(rng, k * n, 0.5f);
  return MakeOperand(v, k, n, kind == WKind::kMxfp4 || kind == WKind::kMxfp8,
                     kind == WKind::kMxfp4 ? MxFormat::kMxfp4 : MxFormat::kMxfp8E4M3,
                     kind == WKind::kBf16, true, kind == WKind::kFp8);
}

Operand MakeActivation(Rng& rng, XKind kind, std::size_t rows, std::size_t k) {
  const std::vector<float> v = RandomFloats(rng, rows * k, 1.0f);
  return MakeOperand(v, rows, k, kind == XKind::kMxfp8, MxFormat::kMxfp8E4M3, kind == XKind::kBf16,
                     false, kind == XKind::kFp8);
}

std::vector<std::size_t> Offsets(const std::vector<std::size_t>& counts) {
  std::vector<std::size_t> off(counts.size() + 1, 0);
  for (std::size_t e = 0; e < counts.size(); ++e) off[e + 1] = off[e] + counts[e];
  return off;
}

// An expert's rows of an activation operand, sliced by hand for the
// per-expert reference calls.
GemmOperand Rows(const Operand& x, std::size_t r0, std::size_t rows) {
  GemmOperand s = x.op;
  s.rows = rows;
  if (s.type == OperandType::kMx) {
    s.mx.shape.rows = rows;
    s.mx.codes += r0 * s.mx.codes_stride;
    s.mx.scales += r0 * s.mx.scales_stride;
  } else if (s.type == OperandType::kBf16) {
    s.data = x.bf16.data() + r0 * x.op.row_stride;
  } else if (s.type == OperandType::kFp8) {
    s.data = x.fp8.data() + r0 * x.op.row_stride;
  } else {
    s.data = x.f32.data() + r0 * x.op.row_stride;
  }
  return s;
}

struct Problem {
  std::vector<std::size_t> offsets;
  Operand x;
  std::vector<Operand> w;
  std::vector<GemmOperand> ops;
  std::vector<float> bias;
};

Problem MakeProblem(Rng& rng, const std::vector<std::size_t>& counts, std::size_t k, std::size_t n,
                    WKind wk, XKind xk) {
  Problem p;
  p.offsets = Offsets(counts);
  p.x = MakeActivation(rng, xk, p.offsets.back(), k);
  for (std::size_t e = 0; e < counts.size(); ++e) p.w.push_back(MakeWeight(rng, wk, k, n));
  for (const Operand& o : p.w) p.ops.push_back(o.op);
  p.bias = RandomFloats(rng, counts.size() * n, 0.25f);
  return p;
}

// Uneven experts: an empty one, one over a 512-row block, single rows; N =
// 300 spans two 256-column blocks and is not a multiple of 32.
const std::vector<std::size_t> kCounts = {3, 0, 530, 1, 40, 0};
constexpr std::size_t kK = 64;
constexpr std::size_t kN = 300;

TEST(MoeGroupedGemm, EachExpertEqualsGemmForEveryFormat) {
  Rng rng(GroupedGemmSeed());
  // Every pairing of the MX, BF16 and FP32 kinds; dense FP8 (Trainium2's
  // E4M3) as weights, as activations and as both.
  std::vector<std::pair<WKind, XKind>> pairs;
  for (WKind wk : {WKind::kMxfp4, WKind::kMxfp8, WKind::kBf16, WKind::kFp32}) {
    for (XKind xk : {XKind::kBf16, XKind::kMxfp8, XKind::kFp32}) pairs.emplace_back(wk, xk);
  }
  pairs.insert(
      pairs.end(),
      {{WKind::kFp8, XKind::kBf16}, {WKind::kMxfp4, XKind::kFp8}, {WKind::kFp8, XKind::kFp8}});
  for (const auto& [wk, xk] : pairs) {
    for (bool bf16_out : {false, true}) {
      SCOPED_TRACE(std::string("weights ") + Name(wk) + ", x " + Name(xk) +
                   (bf16_out ? ", BF16 y" : ", FP32 y"));
      Problem p = MakeProblem(rng, kCounts, kK, kN, wk, xk);
      const std::size_t rows = p.offsets.back();
      std::vector<float> yf(rows * kN, -7.0f);
      std::vector<Bf16> yb(rows * kN, Bf16::FromBits(0xFFFF));
      const GemmOutput y = bf16_out ? GemmOutput::Bf16(yb.data(), rows, kN, kN)
                                    : GemmOutput::Fp32(yf.data(), rows, kN, kN);
      GroupedGemmParams gp;
      gp.bias = p.bias;
      ThreadPoolExecutor pool(2);
      ASSERT_TRUE(GroupedExpertGemm(p.x.op, p.offsets, p.ops, y, gp, &pool).ok());
      for (std::size_t e = 0; e < kCounts.size(); ++e) {
        const std::size_t r0 = p.offsets[e];
        const std::size_t m = kCounts[e];
        std::vector<float> rf(m * kN);
        std::vector<Bf16> rb(m * kN);
        GemmParams params;
        params.bias = p.bias.data() + e * kN;
        const GemmOutput ref = bf16_out ? GemmOutput::Bf16(rb.data(), m, kN, kN)
                                        : GemmOutput::Fp32(rf.data(), m, kN, kN);
        ASSERT_TRUE(Gemm(Rows(p.x, r0, m), p.ops[e], ref, params).ok());
        const void* got = bf16_out ? static_cast<const void*>(yb.data() + r0 * kN)
                                   : static_cast<const void*>(yf.data() + r0 * kN);
        const void* want =
            bf16_out ? static_cast<const void*>(rb.data()) : static_cast<const void*>(rf.data());
        if (m == 0) continue;  // An empty expert: nothing to compare (and null data()).
        EXPECT_EQ(std::memcmp(got, want, m * kN * (bf16_out ? 2 : 4)), 0) << "expert " << e;
      }
    }
  }
}

TEST(MoeGroupedGemm, SingleExpertIsOneGemm) {
  Rng rng(GroupedGemmSeed() + 1);
  Problem p = MakeProblem(rng, {77}, kK, kN, WKind::kMxfp4, XKind::kBf16);
  std::vector<float> y(77 * kN), ref(77 * kN);
  ASSERT_TRUE(
      GroupedExpertGemm(p.x.op, p.offsets, p.ops, GemmOutput::Fp32(y.data(), 77, kN, kN)).ok());
  ASSERT_TRUE(Gemm(p.x.op, p.ops[0], GemmOutput::Fp32(ref.data(), 77, kN, kN)).ok());
  EXPECT_EQ(std::memcmp(y.data(), ref.data(), y.size() * 4), 0);
}

TEST(MoeGroupedGemm, AllExpertsEmpty) {
  Rng rng(GroupedGemmSeed() + 2);
  Problem p = MakeProblem(rng, {0, 0, 0}, kK, kN, WKind::kMxfp4, XKind::kBf16);
  EXPECT_TRUE(
      GroupedExpertGemm(p.x.op, p.offsets, p.ops, GemmOutput::Fp32(nullptr, 0, kN, kN)).ok());
}

TEST(MoeGroupedGemm, ThreadCountsGiveIdenticalBits) {
  Rng rng(GroupedGemmSeed() + 3);
  for (ExpertActivation act : {ExpertActivation::kNone, ExpertActivation::kGptOssSwiGlu}) {
    Problem p = MakeProblem(rng, kCounts, kK, kN, WKind::kMxfp4, XKind::kBf16);
    const std::size_t rows = p.offsets.back();
    const std::size_t cols = act == ExpertActivation::kNone ? kN : kN / 2;
    GroupedGemmParams gp;
    gp.activation = act;
    gp.bias = p.bias;
    std::vector<float> base(rows * cols);
    ASSERT_TRUE(GroupedExpertGemm(p.x.op, p.offsets, p.ops,
                                  GemmOutput::Fp32(base.data(), rows, cols, cols), gp)
                    .ok());
    for (std::size_t threads : {1, 2, 3}) {
      ThreadPoolExecutor pool(threads);
      std::vector<float> y(rows * cols, 5.0f);
      ASSERT_TRUE(GroupedExpertGemm(p.x.op, p.offsets, p.ops,
                                    GemmOutput::Fp32(y.data(), rows, cols, cols), gp, &pool)
                      .ok());
      EXPECT_EQ(std::memcmp(y.data(), base.data(), y.size() * 4), 0) << threads << " threads";
    }
  }
}

// The reference of the gated variants, from moe.h's formulas: h by a scalar
// FMA chain over K (BF16 x BF16 operands, gemm.h's dense contract) plus the
// bias, then the activation.
float RefActivation(ExpertActivation act, float alpha, float limit, float g, float l) {
  if (act == ExpertActivation::kSwiGlu) {
    const float silu = g * internal::FixedSigmoid(g);
    return silu * l;
  }
  const float gc = std::isnan(g) ? g : (g > limit ? limit : g);
  float lc = l;
  if (!std::isnan(l)) lc = l > limit ? limit : (l < -limit ? -limit : l);
  const float glu = gc * internal::FixedSigmoid(alpha * gc);
  return glu * (lc + 1.0f);
}

TEST(MoeGroupedGemm, SwiGluVariantsMatchScalarReference) {
  Rng rng(GroupedGemmSeed() + 4);
  const std::vector<std::size_t> counts = {5, 0, 33, 1};
  const std::size_t k = 40;
  const std::size_t n = 2 * 150;  // I = 150 output columns.
  const std::size_t half = n / 2;
  const std::size_t rows = 39;
  const std::vector<std::size_t> offsets = Offsets(counts);
  // Large values, so that many h fall outside [-7, 7] and the clamps act.
  const std::vector<Bf16> x = ToBf16(RandomFloats(rng, rows * k, 1.0f));
  std::vector<std::vector<Bf16>> w;
  std::vector<GemmOperand> ops;
  for (std::size_t e = 0; e < counts.size(); ++e) {
    w.push_back(ToBf16(RandomFloats(rng, k * n, 1.0f)));
    ops.push_back(GemmOperand::Bf16(w.back().data(), k, n, n));
  }
  const std::vector<float> bias = RandomFloats(rng, counts.size() * n, 1.0f);
  for (ExpertActivation act : {ExpertActivation::kSwiGlu, ExpertActivation::kGptOssSwiGlu}) {
    for (GluLayout layout : {GluLayout::kInterleaved, GluLayout::kConcatenated}) {
      SCOPED_TRACE(std::to_string(static_cast<int>(act)) + "/" +
                   std::to_string(static_cast<int>(layout)));
      GroupedGemmParams gp;
      gp.activation = act;
      gp.glu_layout = layout;
      gp.bias = bias;
      std::vector<float> yf(rows * half);
      std::vector<Bf16> yb(rows * half);
      ThreadPoolExecutor pool(3);
      ASSERT_TRUE(GroupedExpertGemm(GemmOperand::Bf16(x.data(), rows, k, k), offsets, ops,
                                    GemmOutput::Fp32(yf.data(), rows, half, half), gp, &pool)
                      .ok());
      ASSERT_TRUE(GroupedExpertGemm(GemmOperand::Bf16(x.data(), rows, k, k), offsets, ops,
                                    GemmOutput::Bf16(yb.data(), rows, half, half), gp)
                      .ok());
      std::size_t clamped = 0;
      for (std::size_t e = 0; e < counts.size(); ++e) {
        for (std::size_t r = offsets[e]; r < offsets[e + 1]; ++r) {
          std::vector<float> h(n);
          for (std::size_t j = 0; j < n; ++j) {
            float acc = 0.0f;
            for (std::size_t kk = 0; kk < k; ++kk) {
              acc = std::fma(Widen(x[r * k + kk]), Widen(w[e][kk * n + j]), acc);
            }
            h[j] = acc + bias[e * n + j];
          }
          for (std::size_t c = 0; c < half; ++c) {
            const bool inter = layout == GluLayout::kInterleaved;
            const float g = inter ? h[2 * c] : h[c];
            const float l = inter ? h[2 * c + 1] : h[half + c];
            clamped += (g > 7.0f || std::fabs(l) > 7.0f) ? 1 : 0;
            const float want = RefActivation(act, 1.702f, 7.0f, g, l);
            ASSERT_EQ(std::bit_cast<std::uint32_t>(yf[r * half + c]),
                      std::bit_cast<std::uint32_t>(want))
                << "row " << r << " col " << c << " g " << g << " l " << l;
            ASSERT_EQ(yb[r * half + c].bits, Fp32ToBf16Rne(want).bits);
          }
        }
      }
      EXPECT_GT(clamped, 100u);  // The limit was exercised.
    }
  }
}

// gpt-oss's clamped SwiGLU on hand-picked h (one expert, K = 1, x = 1, so h
// = the weight row): closed forms and NaN propagation.
TEST(MoeGroupedGemm, GptOssSwiGluHandValues) {
  // Interleaved (g, l) pairs.
  const std::vector<float> wv = {0.0f,
                                 3.0f,  // g = 0 -> 0.
                                 10.0f,
                                 10.0f,  // g -> 7, l -> 7: 7 s(11.914) 8.
                                 -2.0f,
                                 -20.0f,  // l -> -7: (-2 s(-3.404)) (-6).
                                 std::numeric_limits<float>::quiet_NaN(),
                                 1.0f};
  const float one = 1.0f;
  GroupedGemmParams gp;
  gp.activation = ExpertActivation::kGptOssSwiGlu;
  const std::vector<std::size_t> offsets = {0, 1};
  const std::vector<GemmOperand> ops = {GemmOperand::Fp32(wv.data(), 1, 8, 8)};
  std::vector<float> y(4, 123.0f);
  ASSERT_TRUE(GroupedExpertGemm(GemmOperand::Fp32(&one, 1, 1, 1), offsets, ops,
                                GemmOutput::Fp32(y.data(), 1, 4, 4), gp)
                  .ok());
  EXPECT_EQ(y[0], 0.0f);
  const double s1 = 1.0 / (1.0 + std::exp(-1.702 * 7.0));
  EXPECT_NEAR(y[1], 7.0 * s1 * 8.0, 1e-5);
  const double s2 = 1.0 / (1.0 + std::exp(1.702 * 2.0));
  EXPECT_NEAR(y[2], (-2.0 * s2) * (-6.0), 1e-6);
  EXPECT_TRUE(std::isnan(y[3]));
}

// gpt-oss's MLP end to end (the example of moe.h and docs/moe.md): route,
// dispatch, the clamped-SwiGLU MXFP4 up-projection into BF16, the MXFP4
// down-projection, combine; each expert's hidden and output rows checked
// against per-expert Gemm calls and the scalar activation.
TEST(MoeGroupedGemm, GptOssMlpPipeline) {
  Rng rng(GroupedGemmSeed() + 6);
  constexpr std::size_t kT = 48, kE = 8, kTopK = 4, kH = 64, kI = 32;
  std::vector<float> logits(kT * kE);
  ASSERT_TRUE(SyntheticRouterLogits({ExpertPopularity::kZipf, 1.0, 7}, kT, kE, logits).ok());
  std::vector<std::int32_t> ids(kT * kTopK);
  std::vector<float> rw(kT * kTopK);
  ASSERT_TRUE(Route(Fp32MatrixView{logits.data(), kT, kE, kE}, GptOssRouterParams(), ids, rw).ok());
  StatusOr<DispatchPlan> plan = PlanDispatch(ids, kT, kTopK, kE);
  ASSERT_TRUE(plan.ok());
  const std::size_t rows = plan->rows;
  const std::vector<Bf16> x = ToBf16(RandomFloats(rng, kT * kH, 1.0f));
  std::vector<Bf16> xp(rows * kH);
  ASSERT_TRUE(PermuteTokens(*plan, Bf16MatrixView{x.data(), kT, kH, kH},
                            StridedMatrix<Bf16>{xp.data(), rows, kH, kH})
                  .ok());
  std::vector<Operand> w1, w2;
  std::vector<GemmOperand> op1, op2;
  for (std::size_t e = 0; e < kE; ++e) {
    w1.push_back(MakeWeight(rng, WKind::kMxfp4, kH, 2 * kI));
    w2.push_back(MakeWeight(rng, WKind::kMxfp4, kI, kH));
  }
  for (std::size_t e = 0; e < kE; ++e) {
    op1.push_back(w1[e].op);
    op2.push_back(w2[e].op);
  }
  const std::vector<float> b1 = RandomFloats(rng, kE * 2 * kI, 1.0f);
  const std::vector<float> b2 = RandomFloats(rng, kE * kH, 1.0f);
  GroupedGemmParams p1;
  p1.activation = ExpertActivation::kGptOssSwiGlu;
  p1.bias = b1;
  std::vector<Bf16> hid(rows * kI);
  ThreadPoolExecutor pool(2);
  ASSERT_TRUE(GroupedExpertGemm(GemmOperand::Bf16(xp.data(), rows, kH, kH), plan->offsets, op1,
                                GemmOutput::Bf16(hid.data(), rows, kI, kI), p1, &pool)
                  .ok());
  GroupedGemmParams p2;
  p2.bias = b2;
  std::vector<float> out(rows * kH);
  ASSERT_TRUE(GroupedExpertGemm(GemmOperand::Bf16(hid.data(), rows, kI, kI), plan->offsets, op2,
                                GemmOutput::Fp32(out.data(), rows, kH, kH), p2, &pool)
                  .ok());
  for (std::size_t e = 0; e < kE; ++e) {
    const std::size_t r0 = plan->offsets[e];
    const std::size_t m = plan->counts[e];
    std::vector<float> h(m * 2 * kI), o(m * kH);
    GemmParams g1;
    g1.bias = b1.data() + e * 2 * kI;
    ASSERT_TRUE(Gemm(GemmOperand::Bf16(xp.data() + r0 * kH, m, kH, kH), op1[e],
                     GemmOutput::Fp32(h.data(), m, 2 * kI, 2 * kI), g1)
                    .ok());
    for (std::size_t r = 0; r < m; ++r) {
      for (std::size_t c = 0; c < kI; ++c) {
        const float want = RefActivation(ExpertActivation::kGptOssSwiGlu, 1.702f, 7.0f,
                                         h[r * 2 * kI + 2 * c], h[r * 2 * kI + 2 * c + 1]);
        ASSERT_EQ(hid[(r0 + r) * kI + c].bits, Fp32ToBf16Rne(want).bits);
      }
    }
    GemmParams g2;
    g2.bias = b2.data() + e * kH;
    ASSERT_TRUE(Gemm(GemmOperand::Bf16(hid.data() + r0 * kI, m, kI, kI), op2[e],
                     GemmOutput::Fp32(o.data(), m, kH, kH), g2)
                    .ok());
    EXPECT_EQ(std::memcmp(o.data(), out.data() + r0 * kH, m * kH * 4), 0) << "expert " << e;
  }
  std::vector<float> y(kT * kH);
  ASSERT_TRUE(CombineTokens(*plan, rw, Fp32MatrixView{out.data(), rows, kH, kH},
                            Fp32MatrixSpan{y.data(), kT, kH, kH})
                  .ok());
  EXPECT_TRUE(std::all_of(y.begin(), y.end(), [](float v) { return std::isfinite(v); }));
}

// Every error path: the status code and message, and y untouched.
TEST(MoeGroupedGemm, ErrorsWriteNothing) {
  Rng rng(GroupedGemmSeed() + 5);
  const std::vector<std::size_t> counts = {4, 0, 6};
  Problem p = MakeProblem(rng, counts, 64, 64, WKind::kMxfp4, XKind::kBf16);
  const std::size_t rows = 10;
  std::vector<float> y(rows * 64, 42.0f);
  const GemmOutput out = GemmOutput::Fp32(y.data(), rows, 64, 64);
  auto expect_error = [&](const GemmOperand& x, std::span<const std::size_t> offsets,
                          std::span<const GemmOperand> ops, const GemmOutput& o,
                          const GroupedGemmParams& gp, const std::string& needle) {
    const Status s = GroupedExpertGemm(x, offsets, ops, o, gp);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.ToString();
    EXPECT_TRUE(std::all_of(y.begin(), y.end(), [](float v) { return v == 42.0f; })) << needle;
  };
  const GroupedGemmParams none;
  expect_error(p.x.op, p.offsets, {}, out, none, "no experts");
  const std::vector<std::size_t> short_off = {0, 4, 4};
  expect_error(p.x.op, short_off, p.ops, out, none, "offsets has 3 entries");
  const std::vector<std::size_t> not_zero = {1, 4, 4, 10};
  expect_error(p.x.op, not_zero, p.ops, out, none, "offsets[0] is 1");
  const std::vector<std::size_t> decreasing = {0, 5, 4, 10};
  expect_error(p.x.op, decreasing, p.ops, out, none, "decrease at expert 1");
  const std::vector<std::size_t> wrong_end = {0, 4, 4, 9};
  expect_error(p.x.op, wrong_end, p.ops, out, none, "offsets end at 9");
  // Weight shapes and formats.
  Operand narrow = MakeWeight(rng, WKind::kMxfp4, 64, 32);
  std::vector<GemmOperand> bad = p.ops;
  bad[2] = narrow.op;
  expect_error(p.x.op, p.offsets, bad, out, none, "weights[2] is 64 x 32");
  Operand mxfp8 = MakeWeight(rng, WKind::kMxfp8, 64, 64);
  bad = p.ops;
  bad[1] = mxfp8.op;
  expect_error(p.x.op, p.offsets, bad, out, none, "weights[1] has another type");
  // Weights blocked along N (not K), which Gemm rejects: named per expert.
  std::vector<float> wv(64 * 64, 0.5f);
  MxQuantizeOptions rows_opt;
  rows_opt.axis = BlockAxis::kRows;
  StatusOr<MxTensor> wrong_axis =
      QuantizeMx(Fp32MatrixView{wv.data(), 64, 64, 64}, MxFormat::kMxfp4, rows_opt);
  ASSERT_TRUE(wrong_axis.ok());
  std::vector<GemmOperand> all_wrong(3, GemmOperand::Mx(wrong_axis->view()));
  expect_error(p.x.op, p.offsets, all_wrong, out, none, "expert 0");
  // A gated call: its weights' overlapping MX lines (a codes stride of half
  // a line) would pass as the doubled strides of the gate and linear halves.
  std::vector<GemmOperand> half_stride = p.ops;
  half_stride[1].mx.codes_stride /= 2;
  GroupedGemmParams gated_half;
  gated_half.activation = ExpertActivation::kGptOssSwiGlu;
  expect_error(p.x.op, p.offsets, half_stride, GemmOutput::Fp32(y.data(), rows, 32, 32), gated_half,
               "expert 1");
  // K and output columns.
  Operand x32 = MakeActivation(rng, XKind::kBf16, rows, 32);
  expect_error(x32.op, p.offsets, p.ops, out, none, "K = 64");
  expect_error(p.x.op, p.offsets, p.ops, GemmOutput::Fp32(y.data(), rows, 63, 64), none,
               "needs 64 (N)");
  GroupedGemmParams gated;
  gated.activation = ExpertActivation::kSwiGlu;
  expect_error(p.x.op, p.offsets, p.ops, out, gated, "needs 32 (N / 2, gated)");
  Operand odd = MakeWeight(rng, WKind::kBf16, 64, 63);
  std::vector<GemmOperand> odd_ops(3, odd.op);
  expect_error(p.x.op, p.offsets, odd_ops, GemmOutput::Fp32(y.data(), rows, 31, 64), gated,
               "even N");
  // Bias length (a short buffer) and bias overlapping a gated y.
  GroupedGemmParams short_bias;
  short_bias.bias = std::span<const float>(p.bias).first(64 * 3 - 1);
  expect_error(p.x.op, p.offsets, p.ops, out, short_bias, "bias has 191 values");
  GroupedGemmParams overlapping = gated;
  overlapping.bias = std::span<const float>(y.data(), 64 * 3);
  expect_error(p.x.op, p.offsets, p.ops, GemmOutput::Fp32(y.data() + 100, rows, 32, 32),
               overlapping, "y overlaps the bias");
  // Enums and SwiGLU constants.
  GroupedGemmParams bad_act;
  bad_act.activation = static_cast<ExpertActivation>(9);
  expect_error(p.x.op, p.offsets, p.ops, out, bad_act, "not an ExpertActivation");
  GroupedGemmParams bad_layout;
  bad_layout.glu_layout = static_cast<GluLayout>(9);
  expect_error(p.x.op, p.offsets, p.ops, out, bad_layout, "not a GluLayout");
  GroupedGemmParams bad_alpha;
  bad_alpha.swiglu_alpha = std::numeric_limits<float>::infinity();
  expect_error(p.x.op, p.offsets, p.ops, out, bad_alpha, "must be finite");
  // MX activations blocked along columns.
  MxQuantizeOptions cols_opt;
  cols_opt.axis = BlockAxis::kCols;
  std::vector<float> xv(rows * 64, 1.0f);
  StatusOr<MxTensor> x_cols =
      QuantizeMx(Fp32MatrixView{xv.data(), rows, 64, 64}, MxFormat::kMxfp8E4M3, cols_opt);
  ASSERT_TRUE(x_cols.ok());
  expect_error(GemmOperand::Mx(x_cols->view()), p.offsets, p.ops, out, none, "blocked along rows");
  // y overlapping x (Gemm's check, per expert).
  std::vector<float> xy(rows * 64, 1.0f);
  const GemmOperand xa = GemmOperand::Fp32(xy.data(), rows, 64, 64);
  const Status s =
      GroupedExpertGemm(xa, p.offsets, p.ops, GemmOutput::Fp32(xy.data(), rows, 64, 64));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("expert"), std::string::npos) << s.ToString();
  EXPECT_TRUE(std::all_of(xy.begin(), xy.end(), [](float v) { return v == 1.0f; }));
}

}  // namespace
}  // namespace trnmx
