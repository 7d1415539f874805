// Simulator: exact integer times of tiny hand-written programs, derived by
// hand from the cost rules (docs/emulator.md, trainium.md sections 3-8).
#include "trnmx/emu/simulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "trnmx/emu/report.h"

namespace trnmx::emu {
namespace {

Program MakeProgram(const char* machine = "trn3", int cores = 1) {
  return Program::Create(LoadPresetMachine(machine).value(), cores).value();
}

SimOptions NoThrottle() {
  SimOptions o;
  o.throttle = false;
  o.record_trace = true;
  return o;
}

// One BF16 matmul [K=128, M=128] x [128, N] on core 0; returns the program.
struct MatmulSetup {
  BufferId st, mv, acc;
};
MatmulSetup AddMatmulBuffers(Program& p, int core = 0) {
  return {p.AllocSbuf(core, "st", 512).value(), p.AllocSbuf(core, "mv", 8192).value(),
          p.AllocPsum(core, "acc", 8192).value()};
}

TEST(SimCost, ClockConversionRoundsUp) {
  EXPECT_EQ(CyclesToPs(512, 2.4e9), 213334);  // 213,333.3 ps
  EXPECT_EQ(CyclesToPs(12, 2.4e9), 5000);     // exact
  EXPECT_EQ(CyclesToPs(64, 1.2e9), 53334);
  EXPECT_EQ(CyclesToPs(25, 0.96e9), 26042);                                 // 26,041.7 ps
  EXPECT_EQ(CyclesToPs(int64_t{1} << 40, 1e9), (int64_t{1} << 40) * 1000);  // no overflow
}

TEST(SimCost, TensorRule) {
  const Machine m = LoadPresetMachine("trn3").value();
  auto mm = [&](MatmulDtype d, int64_t k, int64_t mm_m, int64_t n) {
    return TensorCycles(m, Instruction::MultiplyMoving(0, 0, d, k, mm_m, n, false));
  };
  EXPECT_EQ(mm(MatmulDtype::kBf16, 128, 128, 512), 512);   // max(min(64, 128), 512)
  EXPECT_EQ(mm(MatmulDtype::kFp8, 256, 128, 512), 512);    // double-row: same cycles, K = 256
  EXPECT_EQ(mm(MatmulDtype::kMxfp8, 512, 128, 512), 512);  // MX quad: same cycles, K = 512
  EXPECT_EQ(mm(MatmulDtype::kFp32, 128, 128, 512), 2048);  // FP32: 4x
  EXPECT_EQ(mm(MatmulDtype::kBf16, 128, 128, 16), 64);     // min(64, M) floor
  EXPECT_EQ(mm(MatmulDtype::kBf16, 128, 32, 16), 32);      // small stationary: max(32, 16)
  EXPECT_EQ(mm(MatmulDtype::kBf16, 128, 1, 1), 1);
  EXPECT_EQ(TensorCycles(m, Instruction::LoadStationary(0, MatmulDtype::kBf16, 128, 128)), 32);
  EXPECT_EQ(TensorCycles(m, Instruction::LoadStationary(0, MatmulDtype::kBf16, 128, 2)), 1);
  EXPECT_EQ(TensorCycles(m, Instruction::Transpose(0, 0, 128, 32)), 128);  // max(P, min(64, F))
  EXPECT_EQ(TensorCycles(m, Instruction::Transpose(0, 0, 16, 128)), 64);
}

TEST(SimCost, ElementwiseRules) {
  Program p = MakeProgram();
  BufferId sb = p.AllocSbuf(0, "sb", 8192).value();
  BufferId sb2 = p.AllocSbuf(0, "sb2", 8192).value();
  BufferId ps = p.AllocPsum(0, "ps", 2048).value();
  using E = ElemType;
  auto op = [&](Opcode o, BufferId dst, BufferId src, E in, E out, int64_t n, BufferId src1 = -1) {
    return Instruction::Elementwise(o, dst, src, 128, n, in, out, src1);
  };
  const EngineKind V = EngineKind::kVector, S = EngineKind::kScalar, G = EngineKind::kGpSimd;
  // PSUM evacuation FP32 -> BF16: no perf mode (FP32 input): N cycles.
  EXPECT_EQ(ElementwiseCycles(p, V, op(Opcode::kTensorCopy, sb, ps, E::kFp32, E::kBf16, 512)), 512);
  // BF16 SBUF -> SBUF copy: 4x perf mode; one side PSUM: 2x.
  EXPECT_EQ(ElementwiseCycles(p, V, op(Opcode::kTensorCopy, sb, sb2, E::kBf16, E::kBf16, 512)),
            128);
  EXPECT_EQ(ElementwiseCycles(p, V, op(Opcode::kTensorCopy, ps, sb, E::kBf16, E::kBf16, 512)), 256);
  // MIN_II floor of 64.
  EXPECT_EQ(ElementwiseCycles(p, V, op(Opcode::kTensorCopy, sb, sb2, E::kBf16, E::kBf16, 100)), 64);
  // tensor_tensor: 2N; N with one PSUM and one SBUF input; N for all-BF16 SBUF.
  EXPECT_EQ(
      ElementwiseCycles(p, V, op(Opcode::kTensorTensor, sb, sb2, E::kFp32, E::kFp32, 512, sb)),
      1024);
  EXPECT_EQ(ElementwiseCycles(p, V, op(Opcode::kTensorTensor, sb, ps, E::kFp32, E::kFp32, 512, sb)),
            512);
  EXPECT_EQ(
      ElementwiseCycles(p, V, op(Opcode::kTensorTensor, sb, sb2, E::kBf16, E::kBf16, 512, sb)),
      512);
  EXPECT_EQ(ElementwiseCycles(p, V, op(Opcode::kTensorReduce, sb, sb2, E::kBf16, E::kFp32, 512)),
            256);
  EXPECT_EQ(ElementwiseCycles(p, V, op(Opcode::kReciprocal, sb, sb2, E::kFp32, E::kFp32, 512)),
            4096);
  EXPECT_EQ(ElementwiseCycles(p, V, op(Opcode::kQuantizeMx, sb, sb2, E::kBf16, E::kFp8, 2048, sb)),
            512);
  // ScalarE: activation N; v4 BF16 copy 2x.
  EXPECT_EQ(ElementwiseCycles(p, S, op(Opcode::kActivation, sb, sb2, E::kBf16, E::kBf16, 512)),
            512);
  EXPECT_EQ(ElementwiseCycles(p, S, op(Opcode::kTensorCopy, sb, sb2, E::kBf16, E::kBf16, 512)),
            256);
  // GpSimd: 150 + N.
  EXPECT_EQ(ElementwiseCycles(p, G, op(Opcode::kIota, sb, -1, E::kFp32, E::kFp32, 512)), 662);
  // Trn2 ScalarE has no BF16 copy mode.
  Program q = MakeProgram("trn2");
  BufferId a = q.AllocSbuf(0, "a", 2048).value(), b = q.AllocSbuf(0, "b", 2048).value();
  EXPECT_EQ(ElementwiseCycles(q, S, op(Opcode::kTensorCopy, a, b, E::kBf16, E::kBf16, 512)), 512);
}

TEST(SimCost, AttentionRules) {
  Program p = MakeProgram();
  BufferId sb = p.AllocSbuf(0, "sb", 8192).value();
  BufferId sb2 = p.AllocSbuf(0, "sb2", 8192).value();
  BufferId sum = p.AllocSbuf(0, "sum", 64).value();
  using E = ElemType;
  const EngineKind V = EngineKind::kVector, S = EngineKind::kScalar;
  // v4 VectorE exponential: 4 elements per cycle, so exp over a 512-key
  // tile takes 128 cycles against ScalarE's 512.
  Instruction vexp =
      Instruction::Elementwise(Opcode::kExponential, sb, sb2, 128, 512, E::kFp32, E::kBf16, sum);
  vexp.accumulate = true;
  EXPECT_EQ(ElementwiseCycles(p, V, vexp), 128);
  Instruction sexp =
      Instruction::Elementwise(Opcode::kActivation, sb, sb2, 128, 512, E::kFp32, E::kBf16, sum);
  sexp.act = ActFunc::kExp;
  sexp.accumulate = true;
  EXPECT_EQ(ElementwiseCycles(p, S, sexp), 512);
  // A dependent 1-element step: MIN_II 64 + 100 (S7).
  Instruction tiny =
      Instruction::Elementwise(Opcode::kTensorTensor, sb, sb2, 128, 1, E::kFp32, E::kFp32, sb);
  tiny.alu = AluOp::kMax;
  EXPECT_EQ(ElementwiseCycles(p, V, tiny), 64);
  tiny.dependent = true;
  EXPECT_EQ(ElementwiseCycles(p, V, tiny), 164);
  sexp.dependent = true;
  EXPECT_EQ(ElementwiseCycles(p, S, sexp), 612);
  // All-BF16 SBUF tensor_tensor runs at N only for add/subtract/multiply.
  Instruction bf =
      Instruction::Elementwise(Opcode::kTensorTensor, sb, sb2, 128, 512, E::kBf16, E::kBf16, sb);
  bf.alu = AluOp::kMax;
  EXPECT_EQ(ElementwiseCycles(p, V, bf), 1024);
  // BF16 reduce at N/2 only for add and max.
  Instruction red =
      Instruction::Elementwise(Opcode::kTensorReduce, sum, sb, 128, 512, E::kBf16, E::kFp32);
  red.alu = AluOp::kMax;
  EXPECT_EQ(ElementwiseCycles(p, V, red), 256);
  red.alu = AluOp::kMultiply;
  EXPECT_EQ(ElementwiseCycles(p, V, red), 512);
  // Trainium2 has no VectorE exponential.
  Program q = MakeProgram("trn2");
  BufferId a = q.AllocSbuf(0, "a", 2048).value(), b = q.AllocSbuf(0, "b", 2048).value();
  Status s = q.Append(q.EngineStream(0, V), Instruction::Elementwise(Opcode::kExponential, a, b,
                                                                     128, 64, E::kFp32, E::kBf16));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Exponential cannot run on the"), std::string::npos) << s.message();
}

// ScalarE loads the exp table set before its first exp (~1 us, #9) and not
// again; identity is in every set.
TEST(SimTiming, ActivationTableLoadedOnce) {
  Program p = MakeProgram();
  BufferId a = p.AllocSbuf(0, "a", 2048).value(), b = p.AllocSbuf(0, "b", 2048).value();
  const StreamId s = p.EngineStream(0, EngineKind::kScalar);
  for (ActFunc f : {ActFunc::kIdentity, ActFunc::kExp, ActFunc::kExp, ActFunc::kIdentity}) {
    Instruction in = Instruction::Elementwise(Opcode::kActivation, a, b, 128, 512, ElemType::kFp32,
                                              ElemType::kFp32);
    in.act = f;
    ASSERT_TRUE(p.Append(s, in).ok());
  }
  SimResult r = Simulate(p, NoThrottle()).value();
  // 512 cycles each, the first exp 1,000 ns x 1.2 GHz = 1,200 cycles more.
  EXPECT_EQ(r.end_ps, 3 * CyclesToPs(512, 1.2e9) + CyclesToPs(512 + 1200, 1.2e9));
}

TEST(SimCost, DmaEfficiencyRule) {
  const Machine m = LoadPresetMachine("trn3").value();
  EXPECT_NEAR(DmaEfficiency(m, 256), 256.0 / 496.0, 1e-12);     // badly overhead-bound
  EXPECT_NEAR(DmaEfficiency(m, 2048), 2048.0 / 2176.0, 1e-12);  // near peak (94 %)
  EXPECT_EQ(DmaEfficiency(m, 4096), 1.0);                       // saturated
  EXPECT_EQ(DmaEfficiency(m, 65536), 1.0);
}

TEST(SimExact, OneMatmul) {
  Program p = MakeProgram();
  MatmulSetup b = AddMatmulBuffers(p);
  const StreamId pe = p.EngineStream(0, EngineKind::kTensor);
  ASSERT_TRUE(p.Append(pe, Instruction::LoadStationary(b.st, MatmulDtype::kBf16, 128, 128)).ok());
  ASSERT_TRUE(p.Append(pe, Instruction::MultiplyMoving(b.mv, b.acc, MatmulDtype::kBf16, 128, 128,
                                                       512, false))
                  .ok());
  SimResult r = Simulate(p, NoThrottle()).value();
  // LS: 32 cycles = 13,334 ps; MM waits for it: 512 cycles = 213,334 ps.
  ASSERT_EQ(r.trace.size(), 2u);
  EXPECT_EQ(r.trace[0].start_ps, 0);
  EXPECT_EQ(r.trace[0].end_ps, 13334);
  EXPECT_EQ(r.trace[1].start_ps, 13334);
  EXPECT_EQ(r.end_ps, 13334 + 213334);
  EXPECT_EQ(r.tensor_throttle_extra_ps, 0);
  // With the throttle the first matmul of a burst runs at 50 %: 426,668 ps.
  SimResult t = Simulate(p).value();
  EXPECT_EQ(t.end_ps, 13334 + 426668);
  EXPECT_EQ(t.tensor_throttle_extra_ps, 426668 - 213334);
}

TEST(SimExact, LoadStationaryHidesBehindMultiplyMoving) {
  Program p = MakeProgram();
  MatmulSetup b = AddMatmulBuffers(p);
  const StreamId pe = p.EngineStream(0, EngineKind::kTensor);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        p.Append(pe, Instruction::LoadStationary(b.st, MatmulDtype::kMxfp8, 512, 128, b.st)).ok());
    ASSERT_TRUE(p.Append(pe, Instruction::MultiplyMoving(b.mv, b.acc, MatmulDtype::kMxfp8, 512, 128,
                                                         512, i > 0, b.mv))
                    .ok());
  }
  SimResult r = Simulate(p, NoThrottle()).value();
  // Only the first LoadStationary is exposed: 13,334 + 3 x 213,334.
  EXPECT_EQ(r.end_ps, 13334 + 3 * 213334);
  // LS 1 overlaps MM 0; LS 2 waits until MM 0 released its weight slot.
  EXPECT_EQ(r.trace[2].start_ps, 13334);
  EXPECT_EQ(r.trace[4].start_ps, 13334 + 213334);
}

TEST(SimExact, ThrottleRampsOverThreeMicroseconds) {
  Program p = MakeProgram();
  MatmulSetup b = AddMatmulBuffers(p);
  const StreamId pe = p.EngineStream(0, EngineKind::kTensor);
  ASSERT_TRUE(p.Append(pe, Instruction::LoadStationary(b.st, MatmulDtype::kBf16, 128, 128)).ok());
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(p.Append(pe, Instruction::MultiplyMoving(b.mv, b.acc, MatmulDtype::kBf16, 128, 128,
                                                         512, i > 0))
                    .ok());
  }
  SimOptions o;
  o.record_trace = true;
  SimResult r = Simulate(p, o).value();
  // MM 0 at 50 %: 426,668 ps. MM 1 starts 426,668 ps into the burst: cap =
  // 500,000 + 500,000 * 426,668 / 3,000,000 = 571,111 ppm -> ceil(213,334e6 / 571,111) = 373,543
  // ps.
  EXPECT_EQ(r.trace[1].end_ps - r.trace[1].start_ps, 426668);
  EXPECT_EQ(r.trace[2].end_ps - r.trace[2].start_ps, 373543);
  // After 3 us the engine runs at full rate.
  const TraceRecord& last = r.trace.back();
  EXPECT_GT(last.start_ps - r.trace[1].start_ps, 3000000);
  EXPECT_EQ(last.end_ps - last.start_ps, 213334);
  EXPECT_GT(r.tensor_throttle_extra_ps, 0);
  EXPECT_EQ(r.end_ps, r.trace.back().end_ps);
}

TEST(SimExact, DmaMatchesPublishedTrn2Example) {
  // trainium.md 12.2: one Trn2 DMA engine moved 32 KiB HBM -> SBUF in 1,416 ns.
  Program p = MakeProgram("trn2");
  BufferId src = p.AllocHbm("src", 32768).value();
  BufferId dst = p.AllocSbuf(0, "dst", 4096, 8, 0).value();  // 8 partitions = one engine
  const StreamId q = p.AddDmaQueue(0, "load").value();
  ASSERT_TRUE(p.Append(q, Instruction::DmaCopy(src, dst, 32768, 8)).ok());
  SimResult r = Simulate(p).value();
  // 211 ns fixed + 32,768 B / 27.2 GB/s = 1,204,706 ps.
  EXPECT_EQ(r.end_ps, 211000 + 1204706);
  EXPECT_NEAR(r.end_ps / 1000.0, 1416, 1);
  EXPECT_EQ(r.hbm_read_bytes, 32768);
  EXPECT_EQ(r.dma_engine_busy_ps[0], r.end_ps);
  EXPECT_EQ(r.dma_engine_busy_ps[1], 0);
}

// An HBM -> HBM copy takes one engine per 4 KiB (the efficiency knee):
// 40,001 bytes take ceil(40,001 / 4,096) = 10 engines, which do not divide
// them evenly, so each carries ceil(40,001 / 10) = 4,001 bytes: 211 ns
// fixed + 4,001 B / 27.2 GB/s = 358,096 ps on trn2 (4,000 bytes, a floor,
// would give 358,059). Engines 0-9 serve it, 10-15 stay idle.
TEST(SimExact, DmaBytesPerEngineRoundUp) {
  Program p = MakeProgram("trn2");
  BufferId src = p.AllocHbm("src", 40001).value();
  BufferId dst = p.AllocHbm("dst", 40001).value();
  const StreamId q = p.AddDmaQueue(0, "copy").value();
  ASSERT_TRUE(p.Append(q, Instruction::DmaCopy(src, dst, 40001, 128)).ok());
  SimResult r = Simulate(p).value();
  EXPECT_EQ(r.end_ps, 358096);
  EXPECT_EQ(r.dma_engine_busy_ps[0], r.end_ps);
  EXPECT_EQ(r.dma_engine_busy_ps[9], r.end_ps);
  EXPECT_EQ(r.dma_engine_busy_ps[10], 0);
}

// Small HBM -> HBM copies take one engine each, any engine: three of 1,000
// bytes on three queues run side by side on engines 0, 1 and 2, each 211
// ns + 1,000 B / 27.2 GB/s = 247,765 ps. On one queue they run in order
// (a queue keeps order) though engines are free. A copy of 64 KiB needs
// all 16 engines and starts when the three are done.
TEST(SimExact, SmallHbmCopiesRunSideBySideOnlyOnSeveralQueues) {
  constexpr int64_t kSmall = 247765, kWhole = 211000 + 150589;  // 4 KiB per engine
  for (const bool one_queue : {false, true}) {
    SCOPED_TRACE(one_queue ? "one queue" : "three queues");
    Program p = MakeProgram("trn2");
    BufferId src = p.AllocHbm("src", 64 << 10).value();
    BufferId dst = p.AllocHbm("dst", 64 << 10).value();
    std::vector<StreamId> q;
    for (int i = 0; i < (one_queue ? 1 : 3); ++i) {
      q.push_back(p.AddDmaQueue(0, "copy" + std::to_string(i)).value());
    }
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(p.Append(q[one_queue ? 0 : i],
                           Instruction::DmaCopy(src, dst, 1000, 128, 1000 * i, 1000 * i))
                      .ok());
    }
    SimResult r = Simulate(p).value();
    EXPECT_EQ(r.end_ps, one_queue ? 3 * kSmall : kSmall);
    int64_t busy = 0;
    for (int64_t b : r.dma_engine_busy_ps) busy += b;
    EXPECT_EQ(busy, 3 * kSmall);
    if (!one_queue) {
      for (int e = 0; e < 3; ++e) EXPECT_EQ(r.dma_engine_busy_ps[e], kSmall) << e;
    }
    ASSERT_TRUE(p.Append(q[0], Instruction::DmaCopy(src, dst, 64 << 10, 128)).ok());
    r = Simulate(p).value();
    EXPECT_EQ(r.end_ps, (one_queue ? 3 * kSmall : kSmall) + kWhole);
    EXPECT_EQ(r.dma_engine_busy_ps[15], kWhole);
  }
}

TEST(SimExact, DependencyChainAcrossEngines) {
  // DMA load -> TensorE matmul -> VectorE PSUM evacuation -> DMA store (trn3).
  Program p = MakeProgram();
  BufferId a = p.AllocHbm("A", 1 << 20).value();
  BufferId c = p.AllocHbm("C", 1 << 17).value();
  BufferId tile = p.AllocSbuf(0, "tile", 8192).value();
  BufferId out = p.AllocSbuf(0, "out", 1024).value();
  BufferId acc = p.AllocPsum(0, "acc", 2048).value();
  SemId loaded = p.AddSemaphore(0, "loaded").value();
  SemId mm_done = p.AddSemaphore(0, "mm_done").value();
  SemId evacuated = p.AddSemaphore(0, "evacuated").value();
  const StreamId load = p.AddDmaQueue(0, "load").value();
  const StreamId store = p.AddDmaQueue(0, "store").value();

  Instruction in = Instruction::DmaCopy(a, tile, 1 << 20, 128);
  in.signals = {{loaded, 1}};
  ASSERT_TRUE(p.Append(load, in).ok());
  Instruction ls = Instruction::LoadStationary(tile, MatmulDtype::kBf16, 128, 128);
  ls.waits = {{loaded, 1}};
  ASSERT_TRUE(p.Append(p.EngineStream(0, EngineKind::kTensor), ls).ok());
  Instruction mm = Instruction::MultiplyMoving(tile, acc, MatmulDtype::kBf16, 128, 128, 512, false);
  mm.signals = {{mm_done, 1}};
  ASSERT_TRUE(p.Append(p.EngineStream(0, EngineKind::kTensor), mm).ok());
  Instruction evac = Instruction::Elementwise(Opcode::kTensorCopy, out, acc, 128, 512,
                                              ElemType::kFp32, ElemType::kBf16);
  evac.waits = {{mm_done, 1}};
  evac.signals = {{evacuated, 1}};
  ASSERT_TRUE(p.Append(p.EngineStream(0, EngineKind::kVector), evac).ok());
  Instruction st = Instruction::DmaCopy(out, c, 1 << 17, 128);
  st.waits = {{evacuated, 1}};
  ASSERT_TRUE(p.Append(store, st).ok());

  SimResult r = Simulate(p, NoThrottle()).value();
  ASSERT_EQ(r.trace.size(), 5u);
  // Load: 16 engines x 64 KiB: 211,000 + 1,706,667 = 1,917,667 ps.
  EXPECT_EQ(r.trace[0].end_ps, 1917667);
  // LS waits + 64 TensorE cycles of semaphore latency (26,667 ps), takes 13,334.
  EXPECT_EQ(r.trace[1].start_ps, 1917667 + 26667);
  EXPECT_EQ(r.trace[1].end_ps, 1944334 + 13334);
  EXPECT_EQ(r.trace[2].end_ps, 1957668 + 213334);
  // Evacuation: + 64 VectorE cycles (53,334 ps); 512 cycles at 1.2 GHz = 426,667 ps.
  EXPECT_EQ(r.trace[3].start_ps, 2171002 + 53334);
  EXPECT_EQ(r.trace[3].end_ps, 2224336 + 426667);
  // Store: + 1,300 ns DMA start latency; 1 KiB per partition: efficiency
  // 1024 / (1024 + 256 * 3/4); 8 KiB per engine: 211,000 + 253,334 ps.
  EXPECT_EQ(r.trace[4].start_ps, 2651003 + 1300000);
  EXPECT_EQ(r.trace[4].end_ps, 3951003 + 464334);
  EXPECT_EQ(r.end_ps, 4415337);
  EXPECT_EQ(r.hbm_read_bytes, 1 << 20);
  EXPECT_EQ(r.hbm_write_bytes, 1 << 17);
}

TEST(SimCost, CorePairsShareAnHbmStack) {
  const Machine m = LoadPresetMachine("trn3").value();
  for (int core = 0; core < 8; ++core) EXPECT_EQ(HbmStackOfCore(m, core), core / 2);
}

TEST(SimExact, HbmStackIsSharedByTheCorePair) {
  // Cores 0 and 1 share HBM stack 0; core 2 uses stack 1. Each moves 4 MiB.
  Program p = MakeProgram("trn3", 3);
  BufferId src = p.AllocHbm("src", 4 << 20).value();
  std::vector<StreamId> queues;
  for (int c = 0; c < 3; ++c) {
    BufferId dst = p.AllocSbuf(c, "dst", 32768).value();
    queues.push_back(p.AddDmaQueue(c, "load").value());
    ASSERT_TRUE(p.Append(queues.back(), Instruction::DmaCopy(src, dst, 4 << 20, 128)).ok());
  }
  SimResult r = Simulate(p, NoThrottle()).value();
  // Engine time: 211,000 + 262,144 B / 38.4 GB/s = 7,037,667 ps. Stack time per
  // transfer: 4 MiB / (4.9 TB/s x 0.85 / 4) = 4,028,144 ps.
  EXPECT_EQ(r.trace[0].end_ps, 7037667);      // core 0: engine-bound
  EXPECT_EQ(r.trace[1].end_ps, 2 * 4028144);  // core 1: queued behind core 0 on stack 0
  EXPECT_EQ(r.trace[2].end_ps, 7037667);      // core 2: its own stack
  EXPECT_EQ(r.hbm_stack_busy_ps[0], 2 * 4028144);
  EXPECT_EQ(r.hbm_stack_busy_ps[1], 4028144);
}

TEST(SimCost, KernelEstimateUsesTheSimulatorsRules) {
  // The planner's estimate (cost.h EstimateKernel) of the transfer above: its
  // DMA engine time is the simulator's, its HBM time that of both cores of
  // the stack (8 MiB over 4.9 TB/s x 0.85 / 4, one rounding instead of two).
  const Machine m = LoadPresetMachine("trn3").value();
  KernelLoad load;
  load.transfers = {{1, 4 << 20, 128, true}};
  load.cores_per_stack = 2;
  KernelEstimate e = EstimateKernel(m, load);
  EXPECT_EQ(e.tensor_ps, 0);
  EXPECT_EQ(e.dma_ps, 7037667);
  EXPECT_NEAR(static_cast<double>(e.hbm_ps), 2 * 4028144, 1);
  EXPECT_EQ(e.prologue_ps, 0);
  // Two resources within 13 % of each other: the 8-norm adds 3.7 % to the larger.
  const double ratio = 7037667.0 / static_cast<double>(e.hbm_ps);
  EXPECT_NEAR(static_cast<double>(e.total_ps),
              static_cast<double>(e.hbm_ps) * std::pow(1 + std::pow(ratio, 8), 1.0 / 8), 1);
  EXPECT_GT(e.total_ps, e.hbm_ps * 103 / 100);
  // TensorE alone: 2048 matmuls x 512 cycles at 2.4 GHz, nothing added.
  KernelLoad tensor;
  tensor.tensor_cycles = 2048 * 512;
  e = EstimateKernel(m, tensor);
  EXPECT_EQ(e.tensor_ps, CyclesToPs(2048 * 512, 2.4e9));
  EXPECT_EQ(e.total_ps, e.tensor_ps);
  // A prologue: the 1,300 ns DMA start latency plus its transfers' engine time.
  tensor.prologue = {{1, 4 << 20, 128, true}};
  e = EstimateKernel(m, tensor);
  EXPECT_EQ(e.prologue_ps, 1300000 + 7037667);
  EXPECT_EQ(e.total_ps, e.tensor_ps + e.prologue_ps);
  // An epilogue (a last store after the last matmul) lengthens TensorE's
  // chain by the same rule; the DMA engines' time does not count it twice.
  tensor.epilogue = {{1, 4 << 20, 128, true}};
  e = EstimateKernel(m, tensor);
  EXPECT_EQ(e.epilogue_ps, 1300000 + 7037667);
  EXPECT_EQ(e.dma_ps, 0);
  EXPECT_EQ(e.total_ps, e.tensor_ps + e.prologue_ps + e.epilogue_ps);
}

TEST(SimExact, QueuesSharingEnginesInterleave) {
  Program p = MakeProgram();
  BufferId src = p.AllocHbm("src", 1 << 20).value();
  BufferId dst = p.AllocSbuf(0, "dst", 8192).value();
  const StreamId qa = p.AddDmaQueue(0, "a").value();
  const StreamId qb = p.AddDmaQueue(0, "b").value();
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(p.Append(qa, Instruction::DmaCopy(src, dst, 1 << 20, 128)).ok());
  ASSERT_TRUE(p.Append(qb, Instruction::DmaCopy(src, dst, 1 << 20, 128)).ok());
  SimResult r = Simulate(p, NoThrottle()).value();
  const int64_t t = 1917667;  // one 1 MiB transfer over 16 engines
  // The queues take the engines in turn, transfer by transfer: queue b's
  // transfer, waiting since 0, goes right after a's first; then a's second
  // and third back to back.
  ASSERT_EQ(r.trace.size(), 4u);
  EXPECT_EQ(r.trace[0].stream, qa);
  EXPECT_EQ(r.trace[0].end_ps, t);
  EXPECT_EQ(r.trace[1].stream, qb);
  EXPECT_EQ(r.trace[1].start_ps, t);
  EXPECT_EQ(r.trace[1].end_ps, 2 * t);
  EXPECT_EQ(r.trace[2].stream, qa);
  EXPECT_EQ(r.trace[2].end_ps, 3 * t);
  EXPECT_EQ(r.trace[3].end_ps, 4 * t);
  EXPECT_EQ(r.dma_bytes, 4 << 20);
  EXPECT_EQ(r.streams[qa].bytes, 3 << 20);
}

TEST(SimExact, DisjointPartitionsUseDisjointEngines) {
  Program p = MakeProgram();
  BufferId src = p.AllocHbm("src", 1 << 20).value();
  BufferId lo = p.AllocSbuf(0, "lo", 8192, 64, 0).value();
  BufferId hi = p.AllocSbuf(0, "hi", 8192, 64, 64).value();
  const StreamId qa = p.AddDmaQueue(0, "a").value();
  const StreamId qb = p.AddDmaQueue(0, "b").value();
  ASSERT_TRUE(p.Append(qa, Instruction::DmaCopy(src, lo, 1 << 19, 64)).ok());
  ASSERT_TRUE(p.Append(qb, Instruction::DmaCopy(src, hi, 1 << 19, 64)).ok());
  SimResult r = Simulate(p, NoThrottle()).value();
  // Each: 8 engines x 64 KiB, in parallel.
  EXPECT_EQ(r.trace[0].end_ps, 1917667);
  EXPECT_EQ(r.trace[1].start_ps, 0);
  EXPECT_EQ(r.trace[1].end_ps, 1917667);
}

TEST(Sim, DeadlockIsReported) {
  Program p = MakeProgram();
  BufferId acc = p.AllocPsum(0, "acc", 2048).value();
  BufferId out = p.AllocSbuf(0, "out", 1024).value();
  SemId never = p.AddSemaphore(0, "never_signalled").value();
  Instruction evac = Instruction::Elementwise(Opcode::kTensorCopy, out, acc, 128, 512,
                                              ElemType::kFp32, ElemType::kBf16);
  evac.waits = {{never, 1}};
  ASSERT_TRUE(p.Append(p.EngineStream(0, EngineKind::kVector), evac).ok());
  StatusOr<SimResult> r = Simulate(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("deadlock: core0.vector[0]"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("waits for never_signalled >= 1 (reached 0)"),
            std::string::npos);
}

TEST(Sim, SameProgramSameTrace) {
  Program p = MakeProgram("trn3", 2);
  BufferId src = p.AllocHbm("src", 1 << 20).value();
  for (int c = 0; c < 2; ++c) {
    BufferId dst = p.AllocSbuf(c, "dst", 8192).value();
    MatmulSetup b = AddMatmulBuffers(p, c);
    SemId s = p.AddSemaphore(c, "ready").value();
    const StreamId q = p.AddDmaQueue(c, "load").value();
    for (int i = 0; i < 4; ++i) {
      Instruction d = Instruction::DmaCopy(src, dst, 1 << 20, 128);
      d.signals = {{s, 1}};
      ASSERT_TRUE(p.Append(q, d).ok());
      Instruction ls = Instruction::LoadStationary(b.st, MatmulDtype::kBf16, 128, 128);
      ls.waits = {{s, i + 1}};
      ASSERT_TRUE(p.Append(p.EngineStream(c, EngineKind::kTensor), ls).ok());
      ASSERT_TRUE(p.Append(p.EngineStream(c, EngineKind::kTensor),
                           Instruction::MultiplyMoving(b.mv, b.acc, MatmulDtype::kBf16, 128, 128,
                                                       512, false))
                      .ok());
    }
  }
  SimOptions o;
  o.record_trace = true;
  SimResult a = Simulate(p, o).value();
  SimResult b = Simulate(p, o).value();
  ASSERT_EQ(a.trace.size(), b.trace.size());
  for (size_t i = 0; i < a.trace.size(); ++i) {
    EXPECT_EQ(a.trace[i].stream, b.trace[i].stream);
    EXPECT_EQ(a.trace[i].start_ps, b.trace[i].start_ps);
    EXPECT_EQ(a.trace[i].end_ps, b.trace[i].end_ps);
  }
  EXPECT_EQ(a.end_ps, b.end_ps);
  EXPECT_EQ(a.events, b.events);
  EXPECT_GT(a.end_ps, 0);
}

TEST(SimExact, CollectiveQueueSharesTheCoreDmaEngines) {
  // A CC-core drives the same 16 engines as the core's DMA queues (trainium.md
  // section 7: compute data movement and collectives contend).
  Program p = MakeProgram();
  BufferId src = p.AllocHbm("src", 1 << 20).value();
  BufferId dst = p.AllocSbuf(0, "dst", 8192).value();
  const StreamId dma = p.AddDmaQueue(0, "load").value();
  const StreamId cc = p.AddCollectiveQueue(0, "ring").value();
  ASSERT_TRUE(p.Append(dma, Instruction::DmaCopy(src, dst, 1 << 20, 128)).ok());
  ASSERT_TRUE(p.Append(cc, Instruction::DmaCopy(src, dst, 1 << 20, 128)).ok());
  SimResult r = Simulate(p, NoThrottle()).value();
  const int64_t t = 1917667;  // one 1 MiB transfer over 16 engines
  ASSERT_EQ(r.trace.size(), 2u);
  EXPECT_EQ(r.trace[0].end_ps, t);
  EXPECT_EQ(r.trace[1].stream, cc);
  EXPECT_EQ(r.trace[1].start_ps, t);
  EXPECT_EQ(r.trace[1].end_ps, 2 * t);
  EXPECT_EQ(r.streams[cc].bytes, 1 << 20);
}

TEST(SimExact, SemaphoreAcrossCores) {
  // Core 0's VectorE signals a semaphore of core 1, whose VectorE waits on it.
  Program p = MakeProgram("trn3", 2);
  BufferId x0 = p.AllocSbuf(0, "x0", 2048).value();
  BufferId x1 = p.AllocSbuf(1, "x1", 2048).value();
  const SemId ready = p.AddSemaphore(1, "ready").value();
  Instruction set0 =
      Instruction::Elementwise(Opcode::kMemset, x0, -1, 128, 512, ElemType::kFp32, ElemType::kFp32);
  set0.signals = {{ready, 1}};
  ASSERT_TRUE(p.Append(p.EngineStream(0, EngineKind::kVector), set0).ok());
  Instruction set1 =
      Instruction::Elementwise(Opcode::kMemset, x1, -1, 128, 512, ElemType::kFp32, ElemType::kFp32);
  set1.waits = {{ready, 1}};
  ASSERT_TRUE(p.Append(p.EngineStream(1, EngineKind::kVector), set1).ok());
  SimResult r = Simulate(p, NoThrottle()).value();
  // Memset of 512 FP32 per partition: 512 VectorE cycles = 426,667 ps; the
  // waiter adds 64 cycles of semaphore latency (53,334 ps).
  ASSERT_EQ(r.trace.size(), 2u);
  EXPECT_EQ(r.trace[0].end_ps, 426667);
  EXPECT_EQ(r.trace[1].start_ps, 426667 + 53334);
  EXPECT_EQ(r.end_ps, 426667 + 53334 + 426667);
}

TEST(SimExact, EachChipHasItsOwnHbmStacks) {
  // Core 0 of two chips each reads 4 MiB from its chip's HBM: no sharing.
  Program p = Program::Create(LoadPresetMachine("trn3").value(), 1, 2).value();
  for (int chip = 0; chip < 2; ++chip) {
    BufferId src = p.AllocHbm("src", 4 << 20, chip).value();
    BufferId dst = p.AllocSbuf(chip, "dst", 32768).value();
    const StreamId q = p.AddDmaQueue(chip, "load").value();
    ASSERT_TRUE(p.Append(q, Instruction::DmaCopy(src, dst, 4 << 20, 128)).ok());
  }
  SimResult r = Simulate(p, NoThrottle()).value();
  ASSERT_EQ(r.trace.size(), 2u);
  EXPECT_EQ(r.trace[0].end_ps, r.trace[1].end_ps);
  ASSERT_EQ(r.hbm_stack_busy_ps.size(), 8u);  // 4 stacks per chip
  EXPECT_GT(r.hbm_stack_busy_ps[0], 0);
  EXPECT_EQ(r.hbm_stack_busy_ps[0], r.hbm_stack_busy_ps[4]);
  EXPECT_EQ(r.dma_engine_busy_ps.size(), 2u * 16);
}

TEST(Sim, TimeBeyondTheClockIsAnError) {
  // A description may make one transfer take years (a 1 B/s DMA engine):
  // durations saturate and the run stops with an error at 2^62 ps.
  Machine m = LoadPresetMachine("trn3").value();
  m.dma.engine_bandwidth_bytes_per_s.value = 1;
  Program p = Program::Create(m, 1).value();
  BufferId src = p.AllocHbm("src", 1 << 24).value();
  BufferId dst = p.AllocSbuf(0, "dst", 131072).value();
  const StreamId q = p.AddDmaQueue(0, "load").value();
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(p.Append(q, Instruction::DmaCopy(src, dst, 1 << 24, 128)).ok());
  StatusOr<SimResult> r = Simulate(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(r.status().message().find("passed 2^62 ps"), std::string::npos) << r.status().message();
}

// Transfers between chips of trn2-server (4x4 torus, 128 GB/s per link and
// direction, 1.5 us per hop): a remote write holds every link of its route
// for bytes / 128 GB/s and completes the route's latency later.
TEST(SimLinks, OneTransferToANeighbourIsLinkBound) {
  const System sys = LoadSystem("trn2-server").value();
  Program p = Program::Create(sys, 1, 2).value();
  BufferId src = p.AllocSbuf(0, "src", 8192).value();
  BufferId dst = p.AllocHbm("dst", 1 << 20, 1).value();
  BufferId x = p.AllocSbuf(1, "x", 2048).value();
  const SemId arrived = p.AddSemaphore(1, "arrived").value();
  const StreamId q = p.AddCollectiveQueue(0, "send").value();
  Instruction send = Instruction::DmaCopy(src, dst, 1 << 20, 128);
  send.signals = {{arrived, 1}};
  ASSERT_TRUE(p.Append(q, send).ok());
  Instruction use =
      Instruction::Elementwise(Opcode::kMemset, x, -1, 128, 512, ElemType::kFp32, ElemType::kFp32);
  use.waits = {{arrived, 1}};
  ASSERT_TRUE(p.Append(p.EngineStream(1, EngineKind::kVector), use).ok());
  SimResult r = Simulate(p, NoThrottle()).value();
  // Engines: 211,000 + 64 KiB / 27.2 GB/s = 2,620,412 ps; remote stack: 1 MiB
  // / (2.9 TB/s x 0.85 / 4) = 1,701,544 ps; link 0->1: 1 MiB / 128 GB/s =
  // 8,192,001 ps (the ceiling of a double): link-bound, + 1,500,000 ps latency.
  ASSERT_EQ(r.trace.size(), 2u);
  EXPECT_EQ(r.trace[0].end_ps, 8192001 + 1500000);
  const int link = sys.LinkBetween(0, 1);
  ASSERT_GE(link, 0);
  EXPECT_EQ(r.link_busy_ps[link], 8192001);
  EXPECT_EQ(r.link_bytes[link], 1 << 20);
  EXPECT_EQ(r.link_transfer_bytes, 1 << 20);
  EXPECT_EQ(r.hbm_write_bytes, 1 << 20);
  EXPECT_EQ(r.hbm_stack_busy_ps[4 * 1 + 0], 1701544);  // chip 1, stack 0 holds address 0
  // The waiter on chip 1 starts one semaphore latency after the data landed.
  EXPECT_EQ(r.trace[1].start_ps,
            8192001 + 1500000 + CyclesToPs(64, sys.chip.vector.clock_hz.value));
}

TEST(SimLinks, RoutesShareTheirLinks) {
  // Chip 0 -> chip 2 goes 0 -> 1 -> 2 (two hops); chip 1 -> chip 2 also
  // needs link 1 -> 2 and waits for it.
  const System sys = LoadSystem("trn2-server").value();
  Program p = Program::Create(sys, 1, 3).value();
  BufferId dst = p.AllocHbm("dst", 2 << 20, 2).value();
  std::vector<StreamId> q;
  for (int chip = 0; chip < 2; ++chip) {
    BufferId src = p.AllocSbuf(chip, "src", 8192).value();
    q.push_back(p.AddCollectiveQueue(chip, "send").value());
    ASSERT_TRUE(
        p.Append(q.back(), Instruction::DmaCopy(src, dst, 1 << 20, 128, 0, chip << 20)).ok());
  }
  ASSERT_EQ(sys.Route(0, 2).size(), 2u);
  SimResult r = Simulate(p, NoThrottle()).value();
  ASSERT_EQ(r.trace.size(), 2u);
  EXPECT_EQ(r.trace[0].end_ps, 8192001 + 2 * 1500000);  // two hops of latency
  EXPECT_EQ(r.trace[1].end_ps, 2 * 8192001 + 1500000);  // after the first on link 1 -> 2
  EXPECT_EQ(r.link_busy_ps[sys.LinkBetween(1, 2)], 2 * 8192001);
  EXPECT_EQ(r.link_bytes[sys.LinkBetween(0, 1)], 1 << 20);
  EXPECT_EQ(r.link_bytes[sys.LinkBetween(1, 2)], 2 << 20);
}

TEST(SimLinks, QueuesOfOneChipShareTheLink) {
  // Two CC-cores of core 0 on disjoint partitions (disjoint DMA engines)
  // send 512 KiB each to chip 1: the link carries one after the other.
  const System sys = LoadSystem("trn2-server").value();
  Program p = Program::Create(sys, 1, 2).value();
  BufferId lo = p.AllocSbuf(0, "lo", 8192, 64, 0).value();
  BufferId hi = p.AllocSbuf(0, "hi", 8192, 64, 64).value();
  BufferId dst = p.AllocHbm("dst", 1 << 20, 1).value();
  const StreamId a = p.AddCollectiveQueue(0, "a").value();
  const StreamId b = p.AddCollectiveQueue(0, "b").value();
  ASSERT_TRUE(p.Append(a, Instruction::DmaCopy(lo, dst, 1 << 19, 64)).ok());
  ASSERT_TRUE(p.Append(b, Instruction::DmaCopy(hi, dst, 1 << 19, 64, 0, 1 << 19)).ok());
  SimOptions o = NoThrottle();
  SimResult r = Simulate(p, o).value();
  const int64_t half = 4096001;  // 512 KiB / 128 GB/s, rounded up
  EXPECT_EQ(r.trace[0].end_ps, half + 1500000);
  EXPECT_EQ(r.trace[1].start_ps, 0);  // its engines were free
  EXPECT_EQ(r.trace[1].end_ps, 2 * half + 1500000);
  ASSERT_EQ(r.link_trace.size(), 2u);
  EXPECT_EQ(r.link_trace[1].start_ps, half);
  EXPECT_EQ(r.link_trace[1].stream, b);
  // The report names the link; the trace has its track.
  const Report rep = MakeReport(p, r, 0, MatmulDtype::kBf16);
  EXPECT_EQ(rep.busiest_link, sys.links[sys.LinkBetween(0, 1)].name);
  EXPECT_EQ(rep.limiting, "links");
  EXPECT_EQ(rep.link_transfer_bytes, 1 << 20);
  const std::string trace = ChromeTraceJson(p, r);
  EXPECT_NE(trace.find("links of trn2-server"), std::string::npos);
  EXPECT_NE(trace.find("\"name\":\"" + sys.links[sys.LinkBetween(0, 1)].name + "\""),
            std::string::npos);
}

}  // namespace
}  // namespace trnmx::emu
