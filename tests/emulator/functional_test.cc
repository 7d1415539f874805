// Functional mode: the lowered GEMM program, replayed on real data with the
// trnmx kernels in the simulator's completion order, gives C equal to one
// trnmx::Gemm call bit for bit, for every dtype, placement, core count, K
// blocking and odd shape.
#include "trnmx/emu/functional.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trnmx/emu/gemm.h"
#include "trnmx/emu/simulator.h"
#include "trnmx/formats/codec.h"

namespace trnmx::emu {
namespace {

struct Case {
  int64_t m, n, k;
  MatmulDtype dtype;
  int cores;
  OperandPlacement placement = OperandPlacement::kAuto;
  int64_t k_block = 0;
  int64_t n_tile = 0;
  const char* machine = "trn3";
};

std::string Describe(const Case& c) {
  return std::string(c.machine) + " " + std::string(MatmulDtypeName(c.dtype)) + " " +
         std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
         " cores=" + std::to_string(c.cores) +
         " placement=" + std::to_string(static_cast<int>(c.placement)) +
         " k_block=" + std::to_string(c.k_block);
}

void ExpectFunctionalEqualsGemm(const Case& c, uint64_t seed) {
  SCOPED_TRACE(Describe(c) + " seed " + std::to_string(seed));
  const Machine machine = LoadPresetMachine(c.machine).value();
  GemmConfig config;
  config.m = c.m;
  config.n = c.n;
  config.k = c.k;
  config.dtype = c.dtype;
  config.cores = c.cores;
  config.placement = c.placement;
  config.k_block = c.k_block;
  config.n_tile = c.n_tile;
  StatusOr<LoweredGemm> lowered = LowerGemm(machine, config);
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  SimOptions options;
  options.record_trace = true;
  StatusOr<SimResult> sim = Simulate(lowered->program, options);
  ASSERT_TRUE(sim.ok()) << sim.status().ToString();
  StatusOr<GemmData> data = MakeGemmData(machine, lowered->plan.config, seed);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  StatusOr<std::vector<Bf16>> got = ExecuteGemm(*lowered, *sim, data->a, data->b);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  StatusOr<std::vector<Bf16>> want = ReferenceGemm(lowered->plan.config, data->a, data->b);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  ASSERT_EQ(got->size(), want->size());
  size_t mismatches = 0;
  for (size_t i = 0; i < got->size(); ++i) mismatches += (*got)[i].bits != (*want)[i].bits;
  EXPECT_EQ(mismatches, 0u);
  // Not a vacuous comparison: C has non-zero entries.
  size_t nonzero = 0;
  for (const Bf16 v : *got) nonzero += (v.bits & 0x7FFF) != 0;
  EXPECT_GT(nonzero, got->size() / 2);
}

TEST(Functional, EveryDtypeOnOneCore) {
  for (const MatmulDtype d : {MatmulDtype::kBf16, MatmulDtype::kFp32, MatmulDtype::kFp8,
                              MatmulDtype::kMxfp8, MatmulDtype::kMxfp4}) {
    ExpectFunctionalEqualsGemm({200, 300, 704, d, 1}, 11);  // MX K: a multiple of 32
  }
}

// trainium.md section 5: Trainium2 (NeuronCore-v3) computes FP8 in its own
// E4M3 (IEEE-style, max 240), Trainium3 adds OCP E4M3FN and MX.
TEST(Functional, Fp8EncodingFollowsTheChip) {
  const Machine trn2 = LoadPresetMachine("trn2").value();
  const Machine trn3 = LoadPresetMachine("trn3").value();
  EXPECT_EQ(Fp8MatmulFormat(trn2), Format::kFp8E4M3Ieee);
  EXPECT_EQ(Fp8MatmulFormat(trn3), Format::kFp8E4M3);
  GemmConfig config;
  config.m = 4;
  config.n = 4;
  config.k = 64;
  config.dtype = MatmulDtype::kFp8;
  const GemmData d2 = MakeGemmData(trn2, config, 3).value();
  EXPECT_EQ(d2.a.type, OperandType::kFp8);
  EXPECT_EQ(d2.a.fp8_format, Format::kFp8E4M3Ieee);
  EXPECT_EQ(d2.b.fp8_format, Format::kFp8E4M3Ieee);
  // The codes are the draws rounded to the legacy format (RNE, saturating).
  for (size_t i = 0; i < d2.a_fp8.size(); ++i) {
    EXPECT_EQ(d2.a_fp8[i], Encode<Fp8E4M3Ieee>(d2.a_fp32[i])) << i;
  }
  const GemmData d3 = MakeGemmData(trn3, config, 3).value();
  EXPECT_EQ(d3.a.type, OperandType::kMx);
  EXPECT_EQ(d3.a.mx.shape.format, MxFormat::kMxfp8E4M3);
  for (const uint8_t s : d3.a_mx.scales()) EXPECT_EQ(s, 0x7F);
}

// Trainium2's fp8 (dense legacy E4M3, double-row K = 256) replayed tile by
// tile equals one trnmx::Gemm over the whole problem.
TEST(Functional, Trn2Fp8InItsOwnE4M3) {
  ExpectFunctionalEqualsGemm(
      {200, 300, 704, MatmulDtype::kFp8, 1, OperandPlacement::kAuto, 0, 0, "trn2"}, 21);
  ExpectFunctionalEqualsGemm(
      {257, 190, 1120, MatmulDtype::kFp8, 2, OperandPlacement::kBStationary, 0, 0, "trn2"}, 22);
}

TEST(Functional, BothPlacementsAndEightCores) {
  for (const MatmulDtype d : {MatmulDtype::kBf16, MatmulDtype::kMxfp8}) {
    for (const OperandPlacement p : {OperandPlacement::kAStationary, OperandPlacement::kBStationary}) {
      ExpectFunctionalEqualsGemm({257, 190, 1120, d, 1, p}, 12);
      ExpectFunctionalEqualsGemm({257, 190, 1120, d, 8, p}, 13);
    }
  }
}

TEST(Functional, KBlockingAccumulatesAcrossBlocksInPsum) {
  // K split into SBUF blocks: each PSUM group takes several K blocks, so the
  // accumulation continues across separate matmul runs.
  ExpectFunctionalEqualsGemm({256, 512, 2048, MatmulDtype::kBf16, 1, OperandPlacement::kAuto, 512}, 14);
  ExpectFunctionalEqualsGemm({256, 512, 4096, MatmulDtype::kMxfp4, 2, OperandPlacement::kAuto, 1024}, 15);
}

TEST(Functional, OddShapesAndMatrixVector) {
  ExpectFunctionalEqualsGemm({1, 1000, 333, MatmulDtype::kBf16, 1}, 16);
  ExpectFunctionalEqualsGemm({3, 5, 7, MatmulDtype::kBf16, 1}, 17);
  ExpectFunctionalEqualsGemm({3, 5, 32, MatmulDtype::kMxfp8, 1}, 17);
  ExpectFunctionalEqualsGemm({130, 129, 96, MatmulDtype::kMxfp4, 4, OperandPlacement::kAuto, 0, 128}, 18);
}

TEST(Functional, RejectsMismatchedOperandsAndMissingTrace) {
  const Machine machine = LoadPresetMachine("trn3").value();
  GemmConfig config;
  config.m = 64;
  config.n = 64;
  config.k = 128;
  config.dtype = MatmulDtype::kBf16;
  StatusOr<LoweredGemm> lowered = LowerGemm(machine, config);
  ASSERT_TRUE(lowered.ok());
  StatusOr<SimResult> no_trace = Simulate(lowered->program);
  ASSERT_TRUE(no_trace.ok());
  StatusOr<GemmData> data = MakeGemmData(machine, lowered->plan.config, 1);
  ASSERT_TRUE(data.ok());
  StatusOr<std::vector<Bf16>> r = ExecuteGemm(*lowered, *no_trace, data->a, data->b);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("record_trace"), std::string::npos) << r.status().message();

  SimOptions options;
  options.record_trace = true;
  StatusOr<SimResult> sim = Simulate(lowered->program, options);
  ASSERT_TRUE(sim.ok());
  GemmConfig other = lowered->plan.config;
  other.k = 64;
  StatusOr<GemmData> small = MakeGemmData(machine, other, 1);
  ASSERT_TRUE(small.ok());
  r = ExecuteGemm(*lowered, *sim, small->a, small->b);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("M=64 N=64 K=128"), std::string::npos) << r.status().message();
  other = lowered->plan.config;
  other.dtype = MatmulDtype::kFp32;
  StatusOr<GemmData> fp32 = MakeGemmData(machine, other, 1);
  ASSERT_TRUE(fp32.ok());
  r = ExecuteGemm(*lowered, *sim, fp32->a, fp32->b);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("do not match dtype bf16"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace trnmx::emu
