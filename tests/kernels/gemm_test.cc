// GEMM: exact small-integer products; bitwise agreement with ref::Gemm for
// every dense and dense x MX combination, layouts, epilogues, targets, thread
// counts and cache blockings; errors; PackedWeights. (MX x MX tests come with
// the MX x MX kernel.)
#include "trnmx/gemm.h"

#include <gtest/gtest.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "formats/mx_decode.h"
#include "kernels/gemm/gemm_bf16_amx.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm_test_util.h"
#include "reference/gemm_ref.h"
#include "support/hwy_targets.h"
#include "support/random.h"

namespace trnmx {
namespace {

using testing::CompareOutputs;
using testing::CopyOutput;
using testing::FromMx;
using testing::Kind;
using testing::MakeDense;
using testing::MakeOutput;
using testing::QuantizeMxScalar;
using testing::RandomFloat;
using testing::RandomMx;
using testing::Rng;
using testing::TestOperand;
using testing::TestOutput;

// The seed of these tests (printed; TRNMX_TEST_SEED overrides it,
// support/random.h).
std::uint64_t Seed() { return testing::TestSeed(20261130); }

// Pools shared by the tests: 1, 2 and 3 threads.
Executor& Pool(std::size_t threads) {
  static ThreadPoolExecutor p1(1);
  static ThreadPoolExecutor p2(2);
  static ThreadPoolExecutor p3(3);
  return threads == 1 ? static_cast<Executor&>(p1) : threads == 2 ? p2 : p3;
}

// The tests that run once per compiled Highway target (named .../AVX2 etc.).
class GemmPerTarget : public testing::HwyTargetTest {};
TRNMX_INSTANTIATE_PER_HWY_TARGET(GemmPerTarget);
class PackedWeightsPerTarget : public testing::HwyTargetTest {};
TRNMX_INSTANTIATE_PER_HWY_TARGET(PackedWeightsPerTarget);

TEST(Gemm, RunsOnSeveralTargets) {
  std::string names;
  for (const auto& t : testing::CompiledHwyTargets()) names += t.name + " ";
  std::cout << "[ targets  ] " << names << "\n";
  EXPECT_FALSE(testing::CompiledHwyTargets().empty());
}

// ---------------------------------------------------------------------------
// MX decoder vs the scalar block reference.
// ---------------------------------------------------------------------------
template <class Traits>
void CheckDecoderAgainstDequantize(MxFormat f, Rng& rng) {
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> v(32);
    for (float& x : v) x = RandomFloat(rng, 6);
    if (trial % 7 == 0) v[trial % 32] = std::numeric_limits<float>::infinity();
    const MxBlockCodes q = QuantizeMxBlock<Traits>(v);
    std::vector<float> want(32);
    DequantizeMxBlock<Traits>(q, want);
    std::uint8_t packed[32];
    testing::PackBlockCodes(GetMxFormatInfo(f).element_bits, q.codes.data(), packed);
    const std::uint8_t scale = q.scale.bits;
    const MxTensorView view{{f, 1, 32, BlockAxis::kRows}, packed, 32, &scale, 1, 1.0f};
    for (std::size_t i = 0; i < 32; ++i) {
      const float got = internal::MxLineElement(view, 0, i);
      ASSERT_EQ(internal::MxElementCode(f, packed, i), q.codes[i]) << "element " << i;
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got));
      } else {
        EXPECT_EQ(std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(want[i]))
            << GetMxFormatInfo(f).name << " element " << i;
      }
    }
  }
}

TEST(MxDecode, MatchesDequantizeMxBlock) {
  Rng rng(Seed());
  CheckDecoderAgainstDequantize<Fp8E4M3Traits>(MxFormat::kMxfp8E4M3, rng);
  CheckDecoderAgainstDequantize<Fp8E5M2Traits>(MxFormat::kMxfp8E5M2, rng);
  CheckDecoderAgainstDequantize<Fp6E2M3Traits>(MxFormat::kMxfp6E2M3, rng);
  CheckDecoderAgainstDequantize<Fp6E3M2Traits>(MxFormat::kMxfp6E3M2, rng);
  CheckDecoderAgainstDequantize<Fp4E2M1Traits>(MxFormat::kMxfp4, rng);
  CheckDecoderAgainstDequantize<MxInt8Traits>(MxFormat::kMxint8, rng);
}

TEST(MxDecode, PackedLayoutsOfFormatsMd) {
  // formats.md section 9: FP6 codes 01 02 03 3F pack to 81 30 FC.
  const std::uint8_t fp6[24] = {0x81, 0x30, 0xFC};
  EXPECT_EQ(internal::MxElementCode(MxFormat::kMxfp6E2M3, fp6, 0), 0x01u);
  EXPECT_EQ(internal::MxElementCode(MxFormat::kMxfp6E2M3, fp6, 1), 0x02u);
  EXPECT_EQ(internal::MxElementCode(MxFormat::kMxfp6E2M3, fp6, 2), 0x03u);
  EXPECT_EQ(internal::MxElementCode(MxFormat::kMxfp6E2M3, fp6, 3), 0x3Fu);
  const std::uint8_t fp4[16] = {0x72};  // Element 0 = 2 (1.0), element 1 = 7 (6.0).
  const std::uint8_t scales[1] = {128};  // x2.
  const MxTensorView v{{MxFormat::kMxfp4, 1, 2, BlockAxis::kRows}, fp4, 16, scales, 1, 1.0f};
  EXPECT_EQ(internal::MxLineElement(v, 0, 0), 2.0f);
  EXPECT_EQ(internal::MxLineElement(v, 0, 1), 12.0f);
  const std::uint8_t nan_scale[1] = {0xFF};
  const MxTensorView n{{MxFormat::kMxfp4, 1, 2, BlockAxis::kRows}, fp4, 16, nan_scale, 1, 1.0f};
  EXPECT_TRUE(std::isnan(internal::MxLineElement(n, 0, 0)));
}

// ---------------------------------------------------------------------------
// Exact small-integer GEMMs (every product and sum exact in FP32).
// ---------------------------------------------------------------------------
TEST(Gemm, ExactSmallIntegers) {
  for (const Kind ka : {Kind::kFp32, Kind::kBf16}) {
    for (const Kind kb : {Kind::kFp32, Kind::kBf16}) {
      for (const std::size_t m : {1u, 5u, 14u, 15u, 33u}) {
        for (const std::size_t n : {1u, 31u, 32u, 33u, 70u}) {
          const std::size_t k = 37;
          auto av = [](std::size_t i, std::size_t j) {
            return static_cast<float>(static_cast<int>((i * 7 + j * 3) % 17) - 8);
          };
          auto bv = [](std::size_t i, std::size_t j) {
            return static_cast<float>(static_cast<int>((i * 5 + j * 11) % 13) - 6);
          };
          TestOperand a = MakeDense(ka, m, k, false, 0, 0, av);
          TestOperand b = MakeDense(kb, k, n, false, 0, 0, bv);
          std::vector<float> c(m * n, -1.0f);
          ASSERT_TRUE(Gemm(a.op, b.op, GemmOutput::Fp32(c.data(), m, n, n)).ok());
          for (std::size_t i = 0; i < m; ++i) {
            for (std::size_t j = 0; j < n; ++j) {
              long want = 0;
              for (std::size_t p = 0; p < k; ++p) {
                want += static_cast<long>(av(i, p)) * static_cast<long>(bv(p, j));
              }
              ASSERT_EQ(c[i * n + j], static_cast<float>(want)) << i << "," << j;
            }
          }
        }
      }
    }
  }
}

TEST(Gemm, EpilogueOrderOnIntegers) {
  // C = 2 * A*B + 3 * C + bias on 2 x 2 x 1, exact.
  const float a[2] = {1, 2};
  const float b[2] = {3, 4};
  float c[4] = {1, 1, 1, 1};
  const float bias[2] = {10, 20};
  GemmParams p;
  p.alpha = 2;
  p.beta = 3;
  p.bias = bias;
  ASSERT_TRUE(Gemm(GemmOperand::Fp32(a, 2, 1, 1), GemmOperand::Fp32(b, 1, 2, 2),
                   GemmOutput::Fp32(c, 2, 2, 2), p)
                  .ok());
  EXPECT_EQ(c[0], 2 * 3 + 3 + 10);
  EXPECT_EQ(c[1], 2 * 4 + 3 + 20);
  EXPECT_EQ(c[2], 2 * 6 + 3 + 10);
  EXPECT_EQ(c[3], 2 * 8 + 3 + 20);
}

// ---------------------------------------------------------------------------
// Random cases vs ref::Gemm.
// ---------------------------------------------------------------------------
struct OperandSpec {
  Kind kind = Kind::kFp32;
  MxFormat format = MxFormat::kMxfp8E4M3;
  Format fp8_format = Format::kFp8E4M3Ieee;  // Kind::kFp8.
  bool transposed = false;
  std::size_t pad = 0;
  std::size_t offset = 0;
  bool quantized = true;  // MX: quantize random floats (else random codes).
};

struct Case {
  std::size_t m = 1, n = 1, k = 1;
  OperandSpec a, b;
  OutputType out = OutputType::kFp32;
  bool c_transposed = false;
  std::size_t c_pad = 0, c_offset = 0;
  GemmParams params;
  bool use_bias = false;
  int special = 0;  // 1: NaN/Inf sprinkled in A and B; 2: NaN in C with beta 0.
};

std::string Describe(const Case& c) {
  auto kind = [](const OperandSpec& s) -> std::string {
    switch (s.kind) {
      case Kind::kFp32: return s.transposed ? "fp32^T" : "fp32";
      case Kind::kBf16: return s.transposed ? "bf16^T" : "bf16";
      case Kind::kMx: return std::string(GetMxFormatInfo(s.format).name) + (s.quantized ? "" : "(raw)");
      case Kind::kFp8:
        return std::string(GetFormatInfo(s.fp8_format).name) + (s.transposed ? "^T" : "");
    }
    return "?";
  };
  return "M=" + std::to_string(c.m) + " N=" + std::to_string(c.n) + " K=" + std::to_string(c.k) +
         " A=" + kind(c.a) + " pad " + std::to_string(c.a.pad) + " off " +
         std::to_string(c.a.offset) + " B=" + kind(c.b) + " pad " + std::to_string(c.b.pad) +
         " off " + std::to_string(c.b.offset) + " C=" +
         (c.out == OutputType::kFp32 ? "fp32" : "bf16") + (c.c_transposed ? "^T" : "") +
         " alpha=" + std::to_string(c.params.alpha) + " beta=" + std::to_string(c.params.beta) +
         (c.use_bias ? " bias" : "") + " special=" + std::to_string(c.special);
}

float SpecialValue(Rng& rng, float usual) {
  switch (rng() % 16) {
    case 0: return std::numeric_limits<float>::quiet_NaN();
    case 1: return std::numeric_limits<float>::infinity();
    case 2: return -std::numeric_limits<float>::infinity();
    case 3: return 0x1p-130f;  // FP32 subnormal.
    case 4: return -0.0f;
    default: return usual;
  }
}

TestOperand BuildOperand(const OperandSpec& s, std::size_t rows, std::size_t cols, bool is_b,
                         int special, Rng& rng) {
  std::vector<float> values(rows * cols);
  for (float& v : values) {
    v = RandomFloat(rng, 10);
    if (special == 1) v = SpecialValue(rng, v);
  }
  auto value = [&](std::size_t i, std::size_t j) { return values[i * cols + j]; };
  if (s.kind != Kind::kMx) {
    return MakeDense(s.kind, rows, cols, s.transposed, s.pad, s.offset, value, s.fp8_format);
  }
  const BlockAxis axis = is_b ? BlockAxis::kCols : BlockAxis::kRows;
  if (!s.quantized) return FromMx(RandomMx(s.format, axis, rows, cols, rng, 100, 150));
  // Lines run along K: (line, pos) = (row, col) for A, (col, row) for B.
  return FromMx(QuantizeMxScalar(
      s.format, axis, rows, cols,
      [&](std::size_t line, std::size_t pos) { return is_b ? value(pos, line) : value(line, pos); },
      s.pad));
}

struct Built {
  TestOperand a, b;
  std::vector<float> bias;
  TestOutput c0;
  GemmParams params;
};

Built Build(const Case& cs, Rng& rng) {
  Built bt;
  bt.a = BuildOperand(cs.a, cs.m, cs.k, false, cs.special, rng);
  bt.b = BuildOperand(cs.b, cs.k, cs.n, true, cs.special, rng);
  bt.params = cs.params;
  if (cs.use_bias) {
    bt.bias.resize(cs.n);
    for (float& x : bt.bias) x = RandomFloat(rng, 6);
    bt.params.bias = bt.bias.data();
  }
  bt.c0 = MakeOutput(cs.out, cs.m, cs.n, cs.c_transposed, cs.c_pad, cs.c_offset, rng,
                     cs.special == 2);
  return bt;
}

Case RandomCase(Rng& rng, std::size_t max_dim) {
  Case c;
  std::uniform_int_distribution<std::size_t> dim(1, max_dim);
  c.m = dim(rng);
  c.n = dim(rng);
  c.k = dim(rng);
  auto spec = [&](bool mx_allowed) {
    OperandSpec s;
    const unsigned r = rng() % (mx_allowed ? 5 : 2);
    s.kind = r == 0 ? Kind::kFp32 : r == 1 ? Kind::kBf16 : r == 2 ? Kind::kFp32 : Kind::kMx;
    if (r == 4) s.kind = Kind::kBf16;
    if (rng() % 3 == 0 && s.kind != Kind::kMx) s.kind = Kind::kMx;
    if (!mx_allowed && s.kind == Kind::kMx) s.kind = Kind::kFp32;
    s.format = static_cast<MxFormat>(rng() % 6);
    s.transposed = rng() % 3 == 0;
    s.pad = rng() % 3 == 0 ? rng() % 5 : 0;
    s.offset = rng() % 4 == 0 ? 1 + rng() % 3 : 0;
    s.quantized = rng() % 4 != 0;
    return s;
  };
  c.a = spec(true);
  // No MX x MX here (that is the MX x MX kernel's suite).
  c.b = spec(c.a.kind != Kind::kMx);
  c.out = rng() % 3 == 0 ? OutputType::kBf16 : OutputType::kFp32;
  c.c_transposed = rng() % 5 == 0;
  c.c_pad = rng() % 3 == 0 ? rng() % 4 : 0;
  c.c_offset = rng() % 4 == 0 ? 1 : 0;
  switch (rng() % 4) {
    case 0: break;
    case 1: c.params.alpha = RandomFloat(rng, 2); break;
    case 2: c.params.beta = RandomFloat(rng, 2); break;
    case 3:
      c.params.alpha = RandomFloat(rng, 2);
      c.params.beta = RandomFloat(rng, 2);
      break;
  }
  c.use_bias = rng() % 3 == 0;
  const unsigned sp = rng() % 10;
  c.special = sp == 0 ? 1 : sp == 1 && c.params.beta == 0.0f ? 2 : 0;
  return c;
}

// Runs one case on `target` (dispatch already forced to it by the per-target
// suite) with one thread and the given blockings (and, with_threads, also
// with 2 and 3 threads on the best target: the split over threads is the same
// code on every target, and a fork-join is slow on the shared 2-core test
// machine), comparing each result with ref::Gemm.
void CheckCase(const Case& cs, Rng& rng, const std::vector<internal::GemmBlocking>& blockings,
               const testing::HwyTarget& target, bool with_threads = false) {
  SCOPED_TRACE(Describe(cs));
  Built bt = Build(cs, rng);
  TestOutput want = CopyOutput(bt.c0);
  ASSERT_TRUE(ref::Gemm(bt.a.op, bt.b.op, want.out, bt.params).ok());
  const bool best_target = testing::IsBestHwyTarget(target);
  for (const internal::GemmBlocking& blk : blockings) {
    for (const std::size_t threads : {1u, 2u, 3u}) {
      if (threads > 1 && !(with_threads && best_target)) continue;
      TestOutput got = CopyOutput(bt.c0);
      const Status s =
          internal::GemmWithBlocking(bt.a.op, bt.b.op, got.out, bt.params, &Pool(threads), blk);
      ASSERT_TRUE(s.ok()) << s.ToString();
      const std::string diff = CompareOutputs(got, want);
      ASSERT_TRUE(diff.empty()) << target.name << ", " << threads << " threads, blocking mc "
                                << blk.mc << " kc " << blk.kc << " nc " << blk.nc << ": " << diff;
    }
  }
}

// Default blocking, and small blocks (K blocks of 5 and 7: partial sums
// reloaded) on the executor even for tiny products.
const std::vector<internal::GemmBlocking> kSmallBlockings = {
    {}, {1, 5, 32, true}, {15, 7, 64, true}};

TEST_P(GemmPerTarget, RandomSmallShapesMatchReference) {
  Rng rng(Seed());
  for (int i = 0; i < 300; ++i) {
    const Case cs = RandomCase(rng, 17);
    CheckCase(cs, rng, kSmallBlockings, GetParam(), /*with_threads=*/i % 10 == 0);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST_P(GemmPerTarget, TileEdgesMatchReference) {
  // Sizes at the register tile (MR = 14 on AVX-512, 3 on AVX2 and NEON, 4
  // scalar; NR = 32) and block edges, +-1.
  Rng rng(Seed() + 1);
  for (const std::size_t m : {2u, 3u, 4u, 5u, 6u, 7u, 11u, 12u, 13u, 14u, 15u, 28u, 29u}) {
    for (const std::size_t n : {31u, 32u, 33u, 64u, 65u}) {
      Case cs = RandomCase(rng, 4);
      cs.m = m;
      cs.n = n;
      cs.k = 1 + rng() % 40;
      CheckCase(cs, rng, kSmallBlockings, GetParam());
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST_P(GemmPerTarget, LargerShapesDefaultBlocking) {
  // K past one default K block (256) so the partial sums are reloaded.
  Rng rng(Seed() + 2);
  for (int i = 0; i < 4; ++i) {
    Case cs = RandomCase(rng, 4);
    cs.m = 20 + rng() % 60;
    cs.n = 40 + rng() % 90;
    cs.k = 250 + rng() % 300;
    cs.special = 0;
    CheckCase(cs, rng, {{}}, GetParam(), /*with_threads=*/true);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// A random case with M = m, N = n, a plain FP32 B and K in {5, 16, 19}
// (below, at and past a multiple of the streamed paths' 8 K rows per pass),
// chosen by `shape`.
Case StreamedCase(Rng& rng, std::size_t m, std::size_t n, std::size_t shape) {
  Case cs = RandomCase(rng, 4);
  cs.m = m;
  cs.n = n;
  cs.k = std::array<std::size_t, 3>{5, 16, 19}[shape % 3];
  cs.b = OperandSpec{};
  cs.b.kind = Kind::kFp32;
  return cs;
}

TEST_P(GemmPerTarget, StreamedRowsMatchReference) {
  // M <= 4 with a row-major FP32 B: B streamed 8 rows per pass into column
  // ranges of one per thread, at most 64 Ki / M columns each (m = 4, n =
  // 16390: two ranges even on one thread), ranges ending inside a vector;
  // K below, at and past a multiple of the 8 rows. n = 2048: C's rows 8 KiB
  // apart, so M > 1 accumulates in the padded scratch.
  Rng rng(Seed() + 5);
  std::size_t shape = 0;
  for (const std::size_t m : {1u, 2u, 4u}) {
    for (const std::size_t n : {7u, 1031u, 2048u, 16390u}) {
      Case cs = StreamedCase(rng, m, n, shape++);
      cs.b.pad = rng() % 2 == 0 ? 3 : 0;
      if (n == 2048) {  // An FP32 C the sums could live in, rows 8 KiB apart.
        cs.out = OutputType::kFp32;
        cs.c_transposed = false;
        cs.c_pad = 0;
        cs.params.beta = 0.0f;
      }
      CheckCase(cs, rng, {{}}, GetParam(), /*with_threads=*/true);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST_P(GemmPerTarget, NanAndInfMatchReference) {
  Rng rng(Seed() + 3);
  for (int i = 0; i < 60; ++i) {
    Case cs = RandomCase(rng, 17);
    cs.special = i % 2 == 0 ? 1 : 2;
    if (cs.special == 2) cs.params.beta = 0.0f;
    CheckCase(cs, rng, kSmallBlockings, GetParam());
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Dense FP8 operands (no block scales) in each FP8 encoding, against the
// FP32, BF16, FP8 and MX operands of the random cases: each FP8 element is
// widened exactly, then the dense FMA chain (gemm.h).
TEST_P(GemmPerTarget, DenseFp8MatchesReference) {
  Rng rng(Seed() + 7);
  constexpr Format kFp8[] = {Format::kFp8E4M3Ieee, Format::kFp8E4M3, Format::kFp8E5M2};
  for (int i = 0; i < 60; ++i) {
    Case cs = RandomCase(rng, 17);
    cs.a.kind = Kind::kFp8;
    cs.a.fp8_format = kFp8[i % 3];
    if (i % 2 == 0) {
      cs.b.kind = Kind::kFp8;
      cs.b.fp8_format = kFp8[(i / 2) % 3];
    }
    if (i % 3 == 0) std::swap(cs.a, cs.b);  // FP8 as B (and MX as A)
    CheckCase(cs, rng, kSmallBlockings, GetParam(), /*with_threads=*/i % 10 == 0);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Trainium2's FP8 (E4M3 IEEE-style) from its definition: 77 = 240, 01 =
// 2^-9, B8 = -1, 78 = +Inf; the same byte 78 is 256 in OCP E4M3FN.
TEST(Gemm, DenseFp8KnownAnswers) {
  const Fp8E4M3Ieee a[3] = {Fp8E4M3Ieee::FromBits(0x77), Fp8E4M3Ieee::FromBits(0x01),
                            Fp8E4M3Ieee::FromBits(0xB8)};
  const Fp8E4M3Ieee b[3] = {Fp8E4M3Ieee::FromBits(0x38), Fp8E4M3Ieee::FromBits(0x38),
                            Fp8E4M3Ieee::FromBits(0x40)};  // 1, 1, 2
  float c = -1.0f;
  ASSERT_TRUE(Gemm(GemmOperand::Fp8(a, 1, 3, 3), GemmOperand::Fp8(b, 3, 1, 1),
                   GemmOutput::Fp32(&c, 1, 1, 1))
                  .ok());
  EXPECT_EQ(c, 240.0f + 0x1p-9f - 2.0f);  // 238.001953125, exact
  // The byte 78: +Inf in Trainium's E4M3, 256 in OCP E4M3FN (the two cannot
  // be mixed on the TensorE; here each operand says its encoding).
  const Fp8E4M3Ieee inf = Fp8E4M3Ieee::FromBits(0x78);
  const Fp8E4M3 ocp256 = Fp8E4M3::FromBits(0x78);
  const Fp8E4M3Ieee one = Fp8E4M3Ieee::FromBits(0x38);
  ASSERT_TRUE(Gemm(GemmOperand::Fp8(&inf, 1, 1, 1), GemmOperand::Fp8(&one, 1, 1, 1),
                   GemmOutput::Fp32(&c, 1, 1, 1))
                  .ok());
  EXPECT_EQ(c, INFINITY);
  ASSERT_TRUE(Gemm(GemmOperand::Fp8(&ocp256, 1, 1, 1), GemmOperand::Fp8(&one, 1, 1, 1),
                   GemmOutput::Fp32(&c, 1, 1, 1))
                  .ok());
  EXPECT_EQ(c, 256.0f);
  // Packed FP8 weights decode into FP32 panels: same bits as unpacked.
  StatusOr<PackedWeights> packed = PackedWeights::Pack(GemmOperand::Fp8(b, 3, 1, 1));
  ASSERT_TRUE(packed.ok()) << packed.status().ToString();
  EXPECT_EQ(packed->type(), OperandType::kFp8);
  ASSERT_TRUE(Gemm(GemmOperand::Fp8(a, 1, 3, 3), *packed, GemmOutput::Fp32(&c, 1, 1, 1)).ok());
  EXPECT_EQ(c, 240.0f + 0x1p-9f - 2.0f);
}

TEST(Gemm, DenseFp8RejectsNonFp8Formats) {
  const std::uint8_t codes[4] = {0x38, 0x38, 0x38, 0x38};
  float c[4];
  GemmOperand a = GemmOperand::Fp8(reinterpret_cast<const Fp8E4M3Ieee*>(codes), 2, 2, 2);
  const GemmOperand b = a;
  a.fp8_format = Format::kFp4E2M1;  // one code per byte, but not FP8
  const Status s = Gemm(a, b, GemmOutput::Fp32(c, 2, 2, 2));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("FP8 GEMM operand A"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("kFp8E4M3Ieee"), std::string::npos) << s.message();
  a.fp8_format = Format::kBf16;
  EXPECT_EQ(PackedWeights::Pack(a).status().code(), StatusCode::kInvalidArgument);
}

TEST(Gemm, BetaZeroIgnoresNanInC) {
  const float a[1] = {2};
  const float b[1] = {3};
  float c[1] = {std::numeric_limits<float>::quiet_NaN()};
  ASSERT_TRUE(Gemm(GemmOperand::Fp32(a, 1, 1, 1), GemmOperand::Fp32(b, 1, 1, 1),
                   GemmOutput::Fp32(c, 1, 1, 1))
                  .ok());
  EXPECT_EQ(c[0], 6.0f);
}

TEST(Gemm, ZeroKGivesEpilogueOfZero) {
  float c[6] = {1, 2, 3, 4, 5, 6};
  const float bias[3] = {1, 2, 3};
  GemmParams p;
  p.beta = 2;
  p.bias = bias;
  const float dummy = 0;
  ASSERT_TRUE(Gemm(GemmOperand::Fp32(&dummy, 2, 0, 0), GemmOperand::Fp32(&dummy, 0, 3, 3),
                   GemmOutput::Fp32(c, 2, 3, 3), p)
                  .ok());
  EXPECT_EQ(c[0], 3.0f);
  EXPECT_EQ(c[5], 15.0f);
  // acc = +0 and r = alpha * acc: -0 only from a negative alpha.
  float z[1] = {7};
  p = {};
  p.alpha = -1;
  ASSERT_TRUE(Gemm(GemmOperand::Fp32(&dummy, 1, 0, 0), GemmOperand::Fp32(&dummy, 0, 1, 1),
                   GemmOutput::Fp32(z, 1, 1, 1), p)
                  .ok());
  EXPECT_EQ(std::bit_cast<std::uint32_t>(z[0]), 0x80000000u);
}

TEST(Gemm, Bf16OutputRoundsToNearestEven) {
  // 1 + 2^-8 (tie) -> 1.0 (even), 1 + 3*2^-8 (tie) -> 1 + 2^-6 ... as BF16.
  const float a[3] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-20f};
  const float b[1] = {1.0f};
  std::uint16_t c[3] = {};
  ASSERT_TRUE(Gemm(GemmOperand::Fp32(a, 3, 1, 1), GemmOperand::Fp32(b, 1, 1, 1),
                   GemmOutput::Bf16(reinterpret_cast<Bf16*>(c), 3, 1, 1))
                  .ok());
  EXPECT_EQ(c[0], 0x3F80);
  EXPECT_EQ(c[1], 0x3F82);
  EXPECT_EQ(c[2], 0x3F81);
}

// ---------------------------------------------------------------------------
// Errors.
// ---------------------------------------------------------------------------
void ExpectError(const Status& s, StatusCode code, const std::string& fragment) {
  EXPECT_EQ(s.code(), code) << s.ToString();
  EXPECT_NE(s.message().find(fragment), std::string::npos) << s.message();
}

TEST(Gemm, RejectsBadArguments) {
  std::vector<float> a(64, 1), b(64, 1), c(64, 7);
  const auto A = GemmOperand::Fp32(a.data(), 4, 4, 4);
  const auto B = GemmOperand::Fp32(b.data(), 4, 4, 4);
  const auto C = GemmOutput::Fp32(c.data(), 4, 4, 4);
  ExpectError(Gemm(A, GemmOperand::Fp32(b.data(), 3, 4, 4), C), StatusCode::kInvalidArgument,
              "inner dimensions");
  ExpectError(Gemm(A, B, GemmOutput::Fp32(c.data(), 4, 3, 4)), StatusCode::kInvalidArgument,
              "but A * B is 4 x 4");
  ExpectError(Gemm(GemmOperand::Fp32(nullptr, 4, 4, 4), B, C), StatusCode::kInvalidArgument,
              "A is 4 x 4 but its data pointer is null");
  ExpectError(Gemm(A, GemmOperand::Fp32(nullptr, 4, 4, 4), C), StatusCode::kInvalidArgument,
              "B is 4 x 4 but its data pointer is null");
  ExpectError(Gemm(A, B, GemmOutput::Fp32(nullptr, 4, 4, 4)), StatusCode::kInvalidArgument,
              "C is 4 x 4 but its data pointer is null");
  ExpectError(Gemm(A, B, GemmOutput::Fp32(c.data(), 4, 4, 3)), StatusCode::kInvalidArgument,
              "overlapping elements");
  GemmOutput c0 = C;
  c0.col_stride = 0;
  ExpectError(Gemm(A, B, c0), StatusCode::kInvalidArgument, "overlapping elements");
  GemmOperand huge = A;
  huge.row_stride = std::numeric_limits<std::size_t>::max() / 2;
  ExpectError(Gemm(huge, B, C), StatusCode::kInvalidArgument, "overflows the address space");
  ExpectError(Gemm(A, B, GemmOutput::Fp32(a.data() + 2, 4, 4, 4)), StatusCode::kInvalidArgument,
              "overlaps the memory of operand A");
  ExpectError(Gemm(A, B, GemmOutput::Fp32(b.data(), 4, 4, 4)), StatusCode::kInvalidArgument,
              "overlaps the memory of operand B");
  GemmParams bias_alias;
  bias_alias.bias = c.data() + 1;
  ExpectError(Gemm(A, B, C, bias_alias), StatusCode::kInvalidArgument, "overlaps the bias");
  GemmOperand bad_type = A;
  bad_type.type = static_cast<OperandType>(9);
  ExpectError(Gemm(bad_type, B, C), StatusCode::kInvalidArgument, "invalid OperandType");
  GemmOutput bad_out = C;
  bad_out.type = static_cast<OutputType>(9);
  ExpectError(Gemm(A, B, bad_out), StatusCode::kInvalidArgument, "invalid OutputType");
  GemmParams bad_mode;
  bad_mode.bf16_mode = static_cast<Bf16Mode>(9);
  ExpectError(Gemm(A, B, C, bad_mode), StatusCode::kInvalidArgument, "invalid Bf16Mode");
  GemmParams native;
  native.bf16_mode = Bf16Mode::kNativeDot;
  ExpectError(Gemm(A, B, C, native), StatusCode::kInvalidArgument, "needs BF16 x BF16");
  // Nothing was written by any failed call.
  for (const float x : c) ASSERT_EQ(x, 7.0f);
}

TEST(Gemm, RejectsBadMxOperands) {
  Rng rng(Seed());
  std::vector<float> dense(64 * 64, 1), c(64 * 64, 0);
  const auto A = GemmOperand::Fp32(dense.data(), 4, 40, 40);
  const auto C = GemmOutput::Fp32(c.data(), 4, 8, 8);
  testing::MxTestTensor b = RandomMx(MxFormat::kMxfp4, BlockAxis::kCols, 40, 8, rng, 120, 130);
  ASSERT_TRUE(Gemm(A, GemmOperand::Mx(b.view()), C).ok());
  testing::MxTestTensor wrong_axis =
      RandomMx(MxFormat::kMxfp4, BlockAxis::kRows, 40, 8, rng, 120, 130);
  ExpectError(Gemm(A, GemmOperand::Mx(wrong_axis.view()), C), StatusCode::kInvalidArgument,
              "B needs BlockAxis::kCols");
  testing::MxTestTensor a_wrong = RandomMx(MxFormat::kMxfp4, BlockAxis::kCols, 4, 40, rng, 120, 130);
  ExpectError(Gemm(GemmOperand::Mx(a_wrong.view()), GemmOperand::Fp32(dense.data(), 40, 8, 8), C),
              StatusCode::kInvalidArgument, "A needs BlockAxis::kRows");
  MxTensorView nv = b.view();
  nv.shape.format = MxFormat::kNvfp4;
  ExpectError(Gemm(A, GemmOperand::Mx(nv), C), StatusCode::kInvalidArgument, "NVFP4");
  MxTensorView short_stride = b.view();
  short_stride.codes_stride = 1;
  ExpectError(Gemm(A, GemmOperand::Mx(short_stride), C), StatusCode::kInvalidArgument,
              "codes_stride 1");
  MxTensorView short_scales = b.view();
  short_scales.scales_stride = 1;
  ExpectError(Gemm(A, GemmOperand::Mx(short_scales), C), StatusCode::kInvalidArgument,
              "scales_stride 1");
  MxTensorView null_codes = b.view();
  null_codes.codes = nullptr;
  ExpectError(Gemm(A, GemmOperand::Mx(null_codes), C), StatusCode::kInvalidArgument,
              "codes pointer is null");
  GemmOperand mismatch = GemmOperand::Mx(b.view());
  mismatch.rows = 39;
  ExpectError(Gemm(GemmOperand::Fp32(dense.data(), 4, 39, 39), mismatch, C),
              StatusCode::kInvalidArgument, "differ from the MX view's shape");
  MxTensorView bad_format = b.view();
  bad_format.shape.format = static_cast<MxFormat>(42);
  ExpectError(Gemm(A, GemmOperand::Mx(bad_format), C), StatusCode::kInvalidArgument,
              "is not an MxFormat");
}

TEST(Gemm, EmptyShapesAreFine) {
  float c[4] = {5, 5, 5, 5};
  ASSERT_TRUE(Gemm(GemmOperand::Fp32(nullptr, 0, 3, 3), GemmOperand::Fp32(nullptr, 3, 0, 0),
                   GemmOutput::Fp32(nullptr, 0, 0, 0))
                  .ok());
  ASSERT_TRUE(Gemm(GemmOperand::Fp32(nullptr, 0, 3, 3), GemmOperand::Fp32(c, 3, 1, 1),
                   GemmOutput::Fp32(nullptr, 0, 1, 1))
                  .ok());
  EXPECT_EQ(c[0], 5.0f);
}

// ---------------------------------------------------------------------------
// PackedWeights: same bits as the unpacked call.
// ---------------------------------------------------------------------------
TEST_P(PackedWeightsPerTarget, MatchUnpackedGemm) {
  Rng rng(Seed() + 4);
  for (int i = 0; i < 40; ++i) {
    Case cs = RandomCase(rng, 40);
    if (cs.a.kind == Kind::kMx && cs.b.kind == Kind::kMx) cs.b.kind = Kind::kBf16;
    SCOPED_TRACE(Describe(cs));
    Built bt = Build(cs, rng);
    StatusOr<PackedWeights> packed = PackedWeights::Pack(bt.b.op, &Pool(2));
    ASSERT_TRUE(packed.ok()) << packed.status().ToString();
    EXPECT_EQ(packed->k(), cs.k);
    EXPECT_EQ(packed->n(), cs.n);
    EXPECT_EQ(packed->type(), bt.b.op.type);
    EXPECT_GT(packed->bytes(), 0u);
    TestOutput want = CopyOutput(bt.c0);
    ASSERT_TRUE(ref::Gemm(bt.a.op, bt.b.op, want.out, bt.params).ok());
    for (const internal::GemmBlocking& blk : kSmallBlockings) {
      TestOutput got = CopyOutput(bt.c0);
      const Status s =
          internal::GemmWithBlocking(bt.a.op, *packed, got.out, bt.params, &Pool(1), blk);
      ASSERT_TRUE(s.ok()) << s.ToString();
      const std::string diff = CompareOutputs(got, want);
      ASSERT_TRUE(diff.empty()) << GetParam().name << " kc " << blk.kc << ": " << diff;
    }
  }
}

TEST_P(PackedWeightsPerTarget, FewRowsDefaultBlockingMatchReference) {
  // Prepacked FP32 panels read in place: one register tile of rows takes a
  // single K block of all of K, more rows keep KC; K past one default KC.
  Rng rng(Seed() + 6);
  for (const std::size_t m : {1u, 3u, 4u, 7u}) {
    Case cs = RandomCase(rng, 4);
    cs.m = m;
    cs.n = 33 + rng() % 40;
    cs.k = 450 + rng() % 250;
    cs.special = 0;
    cs.b = OperandSpec{};
    cs.b.kind = Kind::kFp32;
    SCOPED_TRACE(Describe(cs));
    Built bt = Build(cs, rng);
    StatusOr<PackedWeights> packed = PackedWeights::Pack(bt.b.op);
    ASSERT_TRUE(packed.ok()) << packed.status().ToString();
    TestOutput want = CopyOutput(bt.c0);
    ASSERT_TRUE(ref::Gemm(bt.a.op, bt.b.op, want.out, bt.params).ok());
    TestOutput got = CopyOutput(bt.c0);
    const Status s = internal::GemmWithBlocking(bt.a.op, *packed, got.out, bt.params, &Pool(1), {});
    ASSERT_TRUE(s.ok()) << s.ToString();
    const std::string diff = CompareOutputs(got, want);
    ASSERT_TRUE(diff.empty()) << GetParam().name << ": " << diff;
  }
}

TEST_P(PackedWeightsPerTarget, StreamedPanelsMatchReference) {
  // M <= 4 with prepacked FP32 panels: groups of 4 panels read side by side,
  // 4 K rows per pass, groups split over threads; N within one panel, past
  // several groups with a partial last panel; K at (16) and past (5, 19) a
  // multiple of 4; the epilogues of the random cases, NaN/Inf, and chains
  // continued from C (accumulate).
  Rng rng(Seed() + 8);
  std::size_t shape = 0;
  for (const std::size_t m : {1u, 2u, 4u}) {
    for (const std::size_t n : {7u, 600u}) {
      for (const bool accumulate : {false, true}) {
        Case cs = StreamedCase(rng, m, n, shape++);
        if (accumulate) {  // FP32 C with unit column stride, plain product.
          cs.params = {};
          cs.params.accumulate = true;
          cs.use_bias = false;
          cs.out = OutputType::kFp32;
          cs.c_transposed = false;
          cs.special = cs.special == 2 ? 0 : cs.special;
        }
        SCOPED_TRACE(Describe(cs) + (accumulate ? " accumulate" : ""));
        Built bt = Build(cs, rng);
        StatusOr<PackedWeights> packed = PackedWeights::Pack(bt.b.op);
        ASSERT_TRUE(packed.ok()) << packed.status().ToString();
        TestOutput want = CopyOutput(bt.c0);
        ASSERT_TRUE(ref::Gemm(bt.a.op, bt.b.op, want.out, bt.params).ok());
        for (const std::size_t threads : {1u, 2u}) {
          TestOutput got = CopyOutput(bt.c0);
          const Status s = Gemm(bt.a.op, *packed, got.out, bt.params, &Pool(threads));
          ASSERT_TRUE(s.ok()) << s.ToString();
          const std::string diff = CompareOutputs(got, want);
          ASSERT_TRUE(diff.empty()) << GetParam().name << " threads " << threads << ": " << diff;
        }
      }
    }
  }
}

TEST(PackedWeights, PackedOnOneTargetUsedOnAll) {
  Rng rng(Seed() + 5);
  const std::size_t m = 9, k = 70, n = 45;
  std::vector<float> a(m * k), b(k * n), want(m * n), got(m * n);
  for (float& x : a) x = RandomFloat(rng);
  for (float& x : b) x = RandomFloat(rng);
  std::vector<std::pair<std::string, PackedWeights>> packs;
  testing::ForEachHwyTarget([&](const testing::HwyTarget& target) {
    StatusOr<PackedWeights> p = PackedWeights::Pack(GemmOperand::Fp32(b.data(), k, n, n));
    ASSERT_TRUE(p.ok());
    packs.emplace_back(target.name, std::move(*p));
  });
  ASSERT_TRUE(ref::Gemm(GemmOperand::Fp32(a.data(), m, k, k), GemmOperand::Fp32(b.data(), k, n, n),
                        GemmOutput::Fp32(want.data(), m, n, n))
                  .ok());
  testing::ForEachHwyTarget([&](const testing::HwyTarget& target) {
    for (const auto& [packed_on, w] : packs) {
      ASSERT_TRUE(Gemm(GemmOperand::Fp32(a.data(), m, k, k), w,
                       GemmOutput::Fp32(got.data(), m, n, n))
                      .ok());
      ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0)
          << "packed on " << packed_on << ", run on " << target.name;
    }
  });
}

TEST(PackedWeights, RejectsBadOperandsAndShapes) {
  std::vector<float> b(16, 1), a(16, 1), c(16, 0);
  ExpectError(PackedWeights::Pack(GemmOperand::Fp32(nullptr, 4, 4, 4)).status(),
              StatusCode::kInvalidArgument, "null");
  StatusOr<PackedWeights> w = PackedWeights::Pack(GemmOperand::Fp32(b.data(), 4, 4, 4));
  ASSERT_TRUE(w.ok());
  ExpectError(Gemm(GemmOperand::Fp32(a.data(), 4, 3, 3), *w, GemmOutput::Fp32(c.data(), 4, 4, 4)),
              StatusCode::kInvalidArgument, "inner dimensions");
  ExpectError(Gemm(GemmOperand::Fp32(a.data(), 4, 4, 4), *w, GemmOutput::Fp32(c.data(), 4, 2, 4)),
              StatusCode::kInvalidArgument, "but A * B is 4 x 4");
}

}  // namespace
}  // namespace trnmx

namespace trnmx {
namespace {

// ---------------------------------------------------------------------------
// Bf16Mode::kNativeDot: the scalar model of gemm.h against the instruction,
// then whole GEMMs against ref::Gemm (which uses the model).
// ---------------------------------------------------------------------------
#if defined(__x86_64__)
__attribute__((target("avx512f,avx512bf16"))) float HardwareStep(float acc, std::uint16_t a0,
                                                                  std::uint16_t a1,
                                                                  std::uint16_t b0,
                                                                  std::uint16_t b1) {
  const __m512 c = _mm512_set1_ps(acc);
  const __m512i a = _mm512_set1_epi32(static_cast<int>(a0 | (std::uint32_t{a1} << 16)));
  const __m512i b = _mm512_set1_epi32(static_cast<int>(b0 | (std::uint32_t{b1} << 16)));
  float out[16];
  _mm512_storeu_ps(out, _mm512_dpbf16_ps(c, (__m512bh)a, (__m512bh)b));
  return out[0];
}
#endif

std::uint16_t Bf(float x) { return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(x) >> 16); }

// Elsewhere than x86-64 there is no instruction to compare with (and the
// tests that call this skip: no AVX512_BF16).
void ExpectModelMatches([[maybe_unused]] float acc, [[maybe_unused]] std::uint16_t a0,
                        [[maybe_unused]] std::uint16_t a1, [[maybe_unused]] std::uint16_t b0,
                        [[maybe_unused]] std::uint16_t b1) {
#if defined(__x86_64__)
  const float hw = HardwareStep(acc, a0, a1, b0, b1);
  const float model = ref::Vdpbf16psStep(acc, a0, a1, b0, b1);
  if (std::isnan(hw) && std::isnan(model)) return;
  ASSERT_EQ(std::bit_cast<std::uint32_t>(hw), std::bit_cast<std::uint32_t>(model))
      << std::hexfloat << "acc " << acc << " a " << std::hex << a0 << " " << a1 << " b " << b0
      << " " << b1 << std::hexfloat << ": instruction " << hw << ", model " << model;
#endif
}

class NativeBf16PerTarget : public testing::HwyTargetTest {};
TRNMX_INSTANTIATE_PER_HWY_TARGET(NativeBf16PerTarget);

TEST(NativeBf16, ModelMatchesInstructionOnCraftedCases) {
  if (!internal::CpuHasAvx512Bf16()) GTEST_SKIP() << "no AVX512_BF16 on this CPU";
  // Two roundings, not one: 1 + 2^-24 + 2^-24 -> 1 (a single rounding gives 1 + 2^-23).
  ExpectModelMatches(1.0f, Bf(0x1p-12f), Bf(0x1p-12f), Bf(0x1p-12f), Bf(0x1p-12f));
  EXPECT_EQ(ref::Vdpbf16psStep(1.0f, Bf(0x1p-12f), Bf(0x1p-12f), Bf(0x1p-12f), Bf(0x1p-12f)), 1.0f);
  // Odd pair first: (1 + -1) + 2^-24 = 2^-24 (even first would give 0).
  ExpectModelMatches(1.0f, Bf(0x1p-12f), Bf(-1.0f), Bf(0x1p-12f), Bf(1.0f));
  EXPECT_EQ(ref::Vdpbf16psStep(1.0f, Bf(0x1p-12f), Bf(-1.0f), Bf(0x1p-12f), Bf(1.0f)), 0x1p-24f);
  // DAZ on BF16 inputs: a denormal times 2^100 contributes 0.
  ExpectModelMatches(0.0f, 0x0001, 0, Bf(0x1p100f), 0);
  // Products are exact even when FP32-denormal: 2^-126 + 2^-127.
  ExpectModelMatches(0x1p-126f, Bf(0x1p-63f), 0, Bf(0x1p-64f), 0);
  // FTZ of a result (also between the two steps) and DAZ on the accumulator.
  ExpectModelMatches(0.0f, Bf(0x1p-70f), 0, Bf(0x1p-60f), 0);
  ExpectModelMatches(0x1p-126f, Bf(0x1p-63f), Bf(-0x1p-64f), Bf(0x1p-63f), Bf(0x1p-63f));
  ExpectModelMatches(std::bit_cast<float>(0x00400000u), Bf(0x1p-63f), 0, Bf(0x1p-63f), 0);
  // Signed zeros, Inf * 0, overflow.
  ExpectModelMatches(-0.0f, 0, 0, 0, 0);
  ExpectModelMatches(-0.0f, Bf(-0.0f), 0, Bf(1.0f), 0);
  ExpectModelMatches(0.0f, Bf(INFINITY), 0, 0, 0);
  ExpectModelMatches(0x1.fffffep127f, Bf(0x1p127f), 0, Bf(2.0f), 0);
}

TEST(NativeBf16, ModelMatchesInstructionOnRandomInputs) {
  if (!internal::CpuHasAvx512Bf16()) GTEST_SKIP() << "no AVX512_BF16 on this CPU";
  Rng rng(Seed());
  // Exponents concentrated near the denormal range, near 1 and anywhere.
  auto bf16 = [&]() {
    const unsigned mode = rng() % 4;
    const std::uint32_t e = mode == 0   ? rng() % 256
                            : mode == 1 ? rng() % 8
                            : mode == 2 ? 60 + rng() % 10
                                        : 120 + rng() % 16;
    return static_cast<std::uint16_t>(((rng() & 1) << 15) | (e << 7) | (rng() & 0x7F));
  };
  for (int i = 0; i < 200000; ++i) {
    const std::uint32_t ae = rng() % 4 == 0 ? rng() % 8 : rng() % 8 == 0 ? 255 : 100 + rng() % 60;
    const float acc = std::bit_cast<float>(static_cast<std::uint32_t>(
        ((rng() & 1) << 31) | (ae << 23) | (rng() & 0x7FFFFF)));
    ExpectModelMatches(acc, bf16(), bf16(), bf16(), bf16());
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Whole GEMMs of an opt-in BF16 mode against ref::Gemm (which runs the
// mode's model): random shapes with specials, small blockings, several
// default K blocks, threads.
void CheckModeGemms(Bf16Mode mode, const testing::HwyTarget& target) {
  Rng rng(Seed() + 6);
  for (int i = 0; i < 120; ++i) {
    Case cs = RandomCase(rng, i < 100 ? 33 : 80);
    cs.a.kind = Kind::kBf16;
    cs.b.kind = Kind::kBf16;
    cs.params.bf16_mode = mode;
    if (i % 5 == 0) cs.special = 1;
    if (i >= 100) cs.k = 300 + rng() % 200;  // Several default K blocks (384).
    if (i < 100) {
      CheckCase(cs, rng, {{}, {1, 5, 32, true}, {15, 8, 64, true}}, target,
                /*with_threads=*/i % 10 == 0);
    } else {
      CheckCase(cs, rng, {{}}, target, /*with_threads=*/true);
    }
    if (::testing::Test::HasFatalFailure()) return;
  }
}

void CheckModePackedWeights(Bf16Mode mode) {
  Rng rng(Seed() + 7);
  for (int i = 0; i < 30; ++i) {
    Case cs = RandomCase(rng, 45);
    cs.a.kind = Kind::kBf16;
    cs.b.kind = Kind::kBf16;
    cs.params.bf16_mode = mode;
    SCOPED_TRACE(Describe(cs));
    Built bt = Build(cs, rng);
    StatusOr<PackedWeights> packed = PackedWeights::Pack(bt.b.op, &Pool(1));
    ASSERT_TRUE(packed.ok());
    TestOutput want = CopyOutput(bt.c0);
    ASSERT_TRUE(ref::Gemm(bt.a.op, bt.b.op, want.out, bt.params).ok());
    for (const internal::GemmBlocking& blk : kSmallBlockings) {
      TestOutput got = CopyOutput(bt.c0);
      ASSERT_TRUE(internal::GemmWithBlocking(bt.a.op, *packed, got.out, bt.params, &Pool(1), blk).ok());
      const std::string diff = CompareOutputs(got, want);
      ASSERT_TRUE(diff.empty()) << "kc " << blk.kc << ": " << diff;
    }
  }
}

// A supported mode computes; an unsupported one is FailedPrecondition naming
// `needs`; non-BF16 operands are InvalidArgument either way.
void CheckModeErrors(Bf16Mode mode, bool supported, const char* needs) {
  std::vector<std::uint16_t> a(16, 0x3F80), b(16, 0x3F80);
  std::vector<float> c(16);
  GemmParams p;
  p.bf16_mode = mode;
  const auto A = GemmOperand::Bf16(reinterpret_cast<const Bf16*>(a.data()), 4, 4, 4);
  const auto B = GemmOperand::Bf16(reinterpret_cast<const Bf16*>(b.data()), 4, 4, 4);
  const Status s = Gemm(A, B, GemmOutput::Fp32(c.data(), 4, 4, 4), p);
  if (supported) {
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(c[0], 4.0f);
  } else {
    ExpectError(s, StatusCode::kFailedPrecondition, needs);
  }
  std::vector<float> af(16, 1.0f);
  ExpectError(Gemm(GemmOperand::Fp32(af.data(), 4, 4, 4), B, GemmOutput::Fp32(c.data(), 4, 4, 4), p),
              StatusCode::kInvalidArgument, "needs BF16 x BF16");
}

TEST_P(NativeBf16PerTarget, GemmMatchesReferenceModel) {
  if (!internal::CpuHasAvx512Bf16()) GTEST_SKIP() << "no AVX512_BF16 on this CPU";
  CheckModeGemms(Bf16Mode::kNativeDot, GetParam());
}

TEST(NativeBf16, PackedWeightsMatchUnpacked) {
  if (!internal::CpuHasAvx512Bf16()) GTEST_SKIP() << "no AVX512_BF16 on this CPU";
  CheckModePackedWeights(Bf16Mode::kNativeDot);
}

TEST(NativeBf16, UnsupportedCpuOrOperandsAreErrors) {
  CheckModeErrors(Bf16Mode::kNativeDot, internal::CpuHasAvx512Bf16(), "AVX512_BF16");
}

// ---------------------------------------------------------------------------
// Bf16Mode::kAmxTile: the scalar model of gemm.h against TDPBF16PS, then
// whole GEMMs against ref::Gemm.
// ---------------------------------------------------------------------------
#if defined(__x86_64__)
// One TDPBF16PS on a 1 x 1 output: acc plus count <= 32 elements (an odd
// count padded with a +0 pair member). Needs AmxBf16Usable().
__attribute__((target("amx-tile,amx-bf16"))) float HardwareTdpbf16ps(float acc,
                                                                      const std::uint16_t* a,
                                                                      const std::uint16_t* b,
                                                                      std::size_t count) {
  struct alignas(64) {
    std::uint8_t palette = 1;
    std::uint8_t start_row = 0;
    std::uint8_t reserved[14] = {};
    std::uint16_t colsb[16] = {};
    std::uint8_t rows[16] = {};
  } cfg;
  const std::size_t pairs = (count + 1) / 2;
  cfg.colsb[0] = 4;  // C: 1 x 1 FP32.
  cfg.rows[0] = 1;
  cfg.colsb[1] = static_cast<std::uint16_t>(4 * pairs);  // A: one row of the pairs.
  cfg.rows[1] = 1;
  cfg.colsb[2] = 4;  // B: a pair per row, one column.
  cfg.rows[2] = static_cast<std::uint8_t>(pairs);
  alignas(64) float cbuf[16] = {acc};
  alignas(64) std::uint16_t abuf[32] = {};
  alignas(64) std::uint16_t bbuf[32] = {};
  std::memcpy(abuf, a, count * sizeof(std::uint16_t));
  std::memcpy(bbuf, b, count * sizeof(std::uint16_t));
  _tile_loadconfig(&cfg);
  _tile_loadd(0, cbuf, 4);
  _tile_loadd(1, abuf, 64);
  _tile_loadd(2, bbuf, 4);
  _tile_dpbf16ps(0, 1, 2);
  _tile_stored(0, cbuf, 4);
  _tile_release();
  return cbuf[0];
}
#endif

void ExpectAmxModelMatches([[maybe_unused]] float acc,
                           [[maybe_unused]] const std::vector<std::uint16_t>& a,
                           [[maybe_unused]] const std::vector<std::uint16_t>& b) {
#if defined(__x86_64__)
  const float hw = HardwareTdpbf16ps(acc, a.data(), b.data(), a.size());
  const float model = ref::Tdpbf16psLane(acc, a.data(), b.data(), a.size());
  if (std::isnan(hw) && std::isnan(model)) return;
  ASSERT_EQ(std::bit_cast<std::uint32_t>(hw), std::bit_cast<std::uint32_t>(model))
      << std::hexfloat << "acc " << acc << " count " << a.size() << ": instruction " << hw
      << ", model " << model;
#endif
}

class AmxBf16PerTarget : public testing::HwyTargetTest {};
TRNMX_INSTANTIATE_PER_HWY_TARGET(AmxBf16PerTarget);

TEST(AmxBf16, ModelMatchesInstructionOnCraftedCases) {
  if (!internal::AmxBf16Usable()) GTEST_SKIP() << "no usable AMX-BF16 on this machine";
  const std::uint16_t one = Bf(1.0f);
  const std::uint16_t u = Bf(0x1p-24f);
  // Even and odd members in two chains whose sum is rounded once: 1 + (0.75u
  // + 0.75u) = 1 + 2^-23 (one chain in pair order gives 1, twice rounded down).
  ExpectAmxModelMatches(1.0f, {Bf(0x1.8p-25f), Bf(0x1.8p-25f)}, {one, one});
  EXPECT_EQ(ref::Tdpbf16psLane(1.0f, std::vector<std::uint16_t>{Bf(0x1.8p-25f), Bf(0x1.8p-25f)}.data(),
                               std::vector<std::uint16_t>{one, one}.data(), 2),
            0x1.000002p0f);
  // The pair's sum is rounded before acc sees it: 2^6 chain sums with a tiny
  // odd member, then a cancelling acc.
  ExpectAmxModelMatches(-0x1.24335ep+6f, {Bf(0x1.287cp+6f), Bf(-0x1.316ap-13f)}, {one, one});
  // The even chain sees only even elements: (1 + u) + u over pairs, against
  // an odd chain of -1.
  ExpectAmxModelMatches(0.0f, {one, Bf(-1.0f), u, 0, u, 0}, {one, one, one, 0, one, 0});
  // A full step of 16 pairs and an odd count.
  std::vector<std::uint16_t> a32(32), b32(32);
  for (std::size_t i = 0; i < 32; ++i) {
    a32[i] = Bf(std::ldexp(1.0f + static_cast<float>(i) / 64.0f, static_cast<int>(i % 7) * 3 - 9));
    b32[i] = Bf(i % 3 == 0 ? -1.5f : 1.25f);
  }
  ExpectAmxModelMatches(0.75f, a32, b32);
  ExpectAmxModelMatches(0.75f, std::vector<std::uint16_t>(a32.begin(), a32.begin() + 17),
                        std::vector<std::uint16_t>(b32.begin(), b32.begin() + 17));
  // DAZ on inputs and acc, FTZ on the chains and the result.
  ExpectAmxModelMatches(0.0f, {0x0001, 0}, {Bf(0x1p100f), 0});
  ExpectAmxModelMatches(0x1p-126f, {Bf(0x1p-63f), 0}, {Bf(0x1p-64f), 0});
  ExpectAmxModelMatches(0.0f, {Bf(0x1p-70f), Bf(0x1p-70f)}, {Bf(0x1p-60f), Bf(0x1p-60f)});
  ExpectAmxModelMatches(std::bit_cast<float>(0x00400000u), {Bf(0x1p-63f), 0}, {Bf(0x1p-63f), 0});
  // Signed zeros, Inf * 0, Inf - Inf, overflow.
  ExpectAmxModelMatches(-0.0f, {0, 0}, {0, 0});
  ExpectAmxModelMatches(-0.0f, {Bf(-0.0f), Bf(-0.0f)}, {one, one});
  ExpectAmxModelMatches(0.0f, {Bf(INFINITY), 0}, {0, 0});
  ExpectAmxModelMatches(0.0f, {Bf(INFINITY), Bf(INFINITY)}, {one, Bf(-1.0f)});
  ExpectAmxModelMatches(0x1.fffffep127f, {Bf(0x1p127f), 0}, {Bf(2.0f), 0});
}

TEST(AmxBf16, ModelMatchesInstructionOnRandomInputs) {
  if (!internal::AmxBf16Usable()) GTEST_SKIP() << "no usable AMX-BF16 on this machine";
  Rng rng(Seed() + 8);
  // Exponents concentrated near the denormal range, near 1 and anywhere;
  // per lane a common scale so that the chains cancel and round often.
  for (int i = 0; i < 100000; ++i) {
    const std::size_t count = 1 + rng() % 32;
    const std::uint32_t base = 100 + rng() % 50;
    const std::uint32_t spread = 1 + rng() % 24;
    auto bf16 = [&](std::uint32_t center) {
      const unsigned mode = rng() % 16;
      const std::uint32_t e = mode == 0 ? rng() % 256 : mode == 1 ? rng() % 8
                                                                  : center + rng() % spread - spread / 2;
      return static_cast<std::uint16_t>(((rng() & 1) << 15) | ((e & 0xFF) << 7) | (rng() & 0x7F));
    };
    std::vector<std::uint16_t> a(count), b(count);
    for (std::size_t t = 0; t < count; ++t) {
      a[t] = bf16(base);
      b[t] = bf16(127);
    }
    const std::uint32_t ae = rng() % 8 == 0 ? rng() % 8 : base + rng() % spread - spread / 2;
    const float acc = std::bit_cast<float>(static_cast<std::uint32_t>(
        ((rng() & 1) << 31) | ((ae & 0xFF) << 23) | (rng() & 0x7FFFFF)));
    ExpectAmxModelMatches(acc, a, b);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST_P(AmxBf16PerTarget, GemmMatchesReferenceModel) {
  if (!internal::AmxBf16Usable()) GTEST_SKIP() << "no usable AMX-BF16 on this machine";
  CheckModeGemms(Bf16Mode::kAmxTile, GetParam());
}

TEST(AmxBf16, PackedWeightsMatchUnpacked) {
  if (!internal::AmxBf16Usable()) GTEST_SKIP() << "no usable AMX-BF16 on this machine";
  CheckModePackedWeights(Bf16Mode::kAmxTile);
}

TEST(AmxBf16, UnsupportedCpuOrOperandsAreErrors) {
  CheckModeErrors(Bf16Mode::kAmxTile, internal::AmxBf16Usable(), "AMX-BF16");
}

}  // namespace
}  // namespace trnmx
