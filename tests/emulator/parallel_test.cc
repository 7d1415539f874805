// Kernels composed over the chips of a system: a collective lowered into a
// program after a GEMM (start_after / done signals), its CC-core queues
// sharing the DMA engines with compute; the overlap of an all-reduce with
// the next GEMM; the tensor-parallel GEMM + all-reduce simulated once per
// chip (deduplicated) against the whole program, to the picosecond.
#include "trnmx/emu/parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "trnmx/emu/cost.h"
#include "trnmx/emu/report.h"

namespace trnmx::emu {
namespace {

const System& Gen2() {
  static const System s = LoadSystem("trn3-ultraserver-gen2").value();
  return s;
}

// The deduplicated run (one chip's GEMM, the all-reduce on its own, shifted
// by the GEMM's end and the DMA wait latency) ends when the whole program
// does, on a switched fabric (8 chips: two servers of trn3-ultraserver-gen2)
// and on a torus (all 16 chips of trn2-server).
TEST(TensorParallelGemm, DeduplicatedEqualsTheWholeProgram) {
  struct Case {
    System system;
    TensorParallelGemmConfig config;
  };
  TensorParallelGemmConfig gen2;
  gen2.gemm = GemmConfig{.m = 512, .n = 1024, .k = 2048, .dtype = MatmulDtype::kMxfp8, .cores = 2};
  gen2.chips = 8;
  TensorParallelGemmConfig torus;
  torus.gemm = GemmConfig{.m = 256, .n = 512, .k = 512, .dtype = MatmulDtype::kBf16, .cores = 1};
  torus.lnc = 1;
  torus.algorithm = CollectiveAlgorithm::kRing;
  const std::vector<Case> cases = {{Gen2(), gen2}, {LoadSystem("trn2-server").value(), torus}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.system.name);
    const TensorParallelTiming whole =
        SimulateTensorParallelGemm(c.system, c.config, /*deduplicate=*/false).value();
    const TensorParallelTiming once = SimulateTensorParallelGemm(c.system, c.config).value();
    EXPECT_FALSE(whole.deduplicated);
    EXPECT_TRUE(once.deduplicated);
    EXPECT_NE(once.how.find("GEMM simulated once for"), std::string::npos) << once.how;
    EXPECT_EQ(once.gemm_ps, whole.gemm_ps);
    EXPECT_EQ(once.end_ps, whole.end_ps);
    EXPECT_GT(once.end_ps, once.gemm_ps + DmaWaitLatencyPs(c.system.chip));
    EXPECT_LT(once.instructions, whole.instructions);
  }
}

TEST(TensorParallelGemm, BadChipCountsAreRefused) {
  TensorParallelGemmConfig c;
  c.gemm = GemmConfig{.m = 256, .n = 256, .k = 512, .dtype = MatmulDtype::kMxfp8, .cores = 1};
  for (int chips : {1, 145}) {
    c.chips = chips;
    const Status s = SimulateTensorParallelGemm(Gen2(), c).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << chips;
    EXPECT_NE(s.message().find("chips = " + std::to_string(chips)), std::string::npos)
        << s.message();
  }
}

// One server of trn3-ultraserver-gen2 (4 chips): on every chip GEMM 1, then
// the all-reduce of its C on the chip's cores 0 and 1 (LNC 2), and GEMM 2 on
// the same cores, which waits for GEMM 1 only (overlapped) or for the
// all-reduce too (serial).
struct Composed {
  int64_t end_ps = 0;
  std::string trace;
};

Composed RunComposed(bool overlap, bool trace) {
  const System& sys = Gen2();
  const int chips = 4, cores = 2;
  const GemmPlan plan =
      PlanGemm(
          sys.chip,
          GemmConfig{.m = 1024, .n = 1024, .k = 4096, .dtype = MatmulDtype::kMxfp8, .cores = cores})
          .value();
  CollectiveConfig cc;
  cc.bytes = plan.config.m * plan.config.n * 2;
  cc.ranks = chips;
  cc.ranks_per_chip = 1;
  const CollectivePlan ar = PlanCollective(sys, cc).value();
  Program p = Program::Create(sys, cores, chips).value();
  CollectiveOperands coll;
  std::vector<GemmOperands> second;
  std::vector<std::vector<SemId>> first_done(chips), reduced(chips);
  std::vector<int64_t> first_stores(chips);
  for (int chip = 0; chip < chips; ++chip) {
    const std::string at = "chip" + std::to_string(chip) + ".";
    GemmOperands g1 = AllocGemmOperands(p, plan.config, chip, at + "g1.").value();
    for (int h = 0; h < cores; ++h) {
      first_done[chip].push_back(p.AddSemaphore(p.CoreId(chip, h), "g1_done").value());
      reduced[chip].push_back(p.AddSemaphore(p.CoreId(chip, h), "reduced").value());
      g1.done_signals.push_back({first_done[chip][h], 1});
    }
    first_stores[chip] = LowerGemmInto(p, plan, g1).value().stores;
    coll.data.push_back(g1.c);
    std::vector<SemSignal> done;
    for (int h = 0; h < cores; ++h) {
      coll.start_after.push_back({{first_done[chip][h], first_stores[chip]}});
      done.push_back({reduced[chip][h], 1});
    }
    coll.done_signals.push_back(done);
    second.push_back(AllocGemmOperands(p, plan.config, chip, at + "g2.").value());
  }
  const LoweredCollectiveKernel k = LowerCollectiveInto(p, ar, coll).value();
  // 2 MiB over 4 ranks: recursive halving/doubling, LNC x 2 log2 4 writes
  // of each rank's result.
  EXPECT_EQ(k.plan.algorithm, CollectiveAlgorithm::kRdh);
  EXPECT_EQ(k.plan.completions, 2 * 2 * 2);
  for (int chip = 0; chip < chips; ++chip) {
    GemmOperands& g2 = second[chip];
    for (int h = 0; h < cores; ++h) {
      std::vector<SemWait> waits = {{first_done[chip][h], first_stores[chip]}};
      if (!overlap) waits.push_back({reduced[chip][h], ar.completions});
      g2.start_after.push_back(waits);
    }
    LowerGemmInto(p, plan, g2).value();
  }
  SimOptions o;
  o.record_trace = trace;
  const SimResult r = Simulate(p, o).value();
  return {r.end_ps, trace ? ChromeTraceJson(p, r) : std::string()};
}

TEST(ComposedProgram, AllReduceOverlapsTheNextGemm) {
  const System& sys = Gen2();
  // The pieces on their own.
  const int64_t gemm =
      Simulate(
          LowerGemm(
              sys.chip,
              GemmConfig{.m = 1024, .n = 1024, .k = 4096, .dtype = MatmulDtype::kMxfp8, .cores = 2})
              .value()
              .program)
          .value()
          .end_ps;
  CollectiveConfig cc;
  cc.bytes = 1024 * 1024 * 2;
  cc.ranks = 4;
  cc.ranks_per_chip = 1;
  const int64_t all_reduce = Simulate(LowerCollective(sys, cc).value().program).value().end_ps;
  const int64_t wait = DmaWaitLatencyPs(sys.chip);
  const Composed serial = RunComposed(/*overlap=*/false, /*trace=*/false);
  const Composed overlapped = RunComposed(/*overlap=*/true, /*trace=*/true);
  // Serial: GEMM 1, the all-reduce, GEMM 2, each starting from idle
  // resources one DMA wait latency after the previous one ended.
  EXPECT_EQ(serial.end_ps, gemm + wait + all_reduce + wait + gemm);
  // Overlapped: sooner than that, but no sooner than either chain.
  EXPECT_LT(overlapped.end_ps, serial.end_ps);
  EXPECT_GE(overlapped.end_ps, gemm + wait + gemm);
  EXPECT_GE(overlapped.end_ps, gemm + wait + all_reduce);
  // The trace holds the GEMMs' engine tracks, the CC-core queues and the links.
  for (const char* track : {"chip0.core0.tensor", "chip3.core1.dma.load_b", "chip0.core1.cc.",
                            "links of trn3-ultraserver-gen2", "\"cat\":\"link\""}) {
    EXPECT_NE(overlapped.trace.find(track), std::string::npos) << track;
  }
}

TEST(ComposedProgram, BadOperandsAreNamed) {
  const System& sys = Gen2();
  CollectiveConfig cc;
  cc.bytes = 1 << 20;
  cc.ranks = 4;
  cc.ranks_per_chip = 1;
  const CollectivePlan plan = PlanCollective(sys, cc).value();
  Program p = Program::Create(sys, 2, 4).value();
  const BufferId small = p.AllocHbm("small", 2 << 20, 0).value();  // fits rank 0
  CollectiveOperands ops;
  ops.data = {small};
  Status s = LowerCollectiveInto(p, plan, ops).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("operands.data has 1 entries; needs 0 or 4"), std::string::npos)
      << s.message();
  ops.data = {small, small, small, small};
  s = LowerCollectiveInto(p, plan, ops).status();
  EXPECT_NE(s.message().find("operands.data[1] 'small' must be a live HBM buffer of chip 1"),
            std::string::npos)
      << s.message();
  Program narrow = Program::Create(sys, 1, 4).value();
  s = LowerCollectiveInto(narrow, plan, {}).status();
  EXPECT_NE(s.message().find("the plan needs 4 chip(s) x 2 core(s); the program has 4 x 1"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace trnmx::emu
