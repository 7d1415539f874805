// Flash-attention lowering: budgets, exact engine times of small programs
// from the cost rules (cost.h, trainium.md sections 5-6), causal skipping,
// the LNC=2 decode split and the exp-engine choice.
#include "trnmx/emu/attention.h"

#include <gtest/gtest.h>

#include <string>

#include "trnmx/emu/cost.h"
#include "trnmx/emu/simulator.h"

namespace trnmx::emu {
namespace {

Machine Trn(const char* name) { return LoadPresetMachine(name).value(); }

SimResult SimulateNoThrottle(const LoweredAttention& a) {
  SimOptions o;
  o.throttle = false;
  return Simulate(a.program, o).value();
}

void ExpectError(const Status& s, StatusCode code, const std::string& text) {
  EXPECT_EQ(s.code(), code) << s.ToString();
  EXPECT_NE(s.message().find(text), std::string::npos) << s.message();
}

int64_t BusyPs(const LoweredAttention& a, const SimResult& r, int core, EngineKind e) {
  return r.streams[static_cast<size_t>(a.program.EngineStream(core, e))].busy_ps;
}

// One query tile, one 512-key tile, no mask, BF16, trn3: every instruction's
// cycles by hand (the vector and scalar clocks are 1.2 GHz, TensorE 2.4 GHz).
TEST(AttentionLowering, OneStepEngineTimesAreTheCostRules) {
  const Machine m = Trn("trn3");
  LoweredAttention a =
      LowerAttention(m, {.heads = 1, .seq = 128, .kv_seq = 512, .head_dim = 128}).value();
  EXPECT_EQ(a.plan.steps, 1);
  EXPECT_EQ(a.plan.config.kv_tile, 512);
  EXPECT_EQ(a.plan.config.kv_splits, 1);
  // VectorE per step: row max of 512 FP32 in PSUM 512, m_new 64 + 100
  // (dependent), l update 164, acc += P V (PSUM + SBUF) 128 = 968; ScalarE:
  // alpha 164 + exp 512 = 676. The P^T copy (512 BF16 from PSUM: 256 on
  // either engine) goes to ScalarE: 932 < 968 + 256.
  EXPECT_EQ(a.plan.vector_cycles_scalar_exp, 968);
  EXPECT_EQ(a.plan.scalar_cycles_scalar_exp, 932);
  // With VectorE's exponential (4 per cycle): + 164 + 128 on VectorE.
  EXPECT_EQ(a.plan.vector_cycles_vector_exp, 968 + 164 + 128);
  EXPECT_EQ(a.plan.scalar_cycles_vector_exp, 256);
  EXPECT_EQ(a.plan.config.exp_engine, ExpEngine::kScalar);  // 968 < 1260
  const SimResult r = SimulateNoThrottle(a);
  auto v = [](int64_t c) { return CyclesToPs(c, 1.2e9); };
  auto t = [](int64_t c) { return CyclesToPs(c, 2.4e9); };
  // VectorE: memset of the state (131 FP32), the step, 1/l (8 x 1 -> 64,
  // + 100 dependent), O = acc / l to BF16 (128).
  EXPECT_EQ(BusyPs(a, r, 0, EngineKind::kVector),
            v(131) + v(512) + v(164) + v(164) + v(128) + v(164) + v(128));
  // ScalarE: the first exp loads the exp table set (1,000 ns = 1,200 cycles).
  EXPECT_EQ(BusyPs(a, r, 0, EngineKind::kScalar), v(164 + 1200) + v(512) + v(256));
  // TensorE: QK^T max(64, 512); 4 transposes max(128, 64); 4 PV max(64, 128).
  EXPECT_EQ(BusyPs(a, r, 0, EngineKind::kTensor), t(512) + 4 * t(128) + 4 * t(128));
  EXPECT_TRUE(CheckAttentionSchedule(a).ok());
}

TEST(AttentionLowering, CausalSkipsTheTilesAboveTheDiagonal) {
  const Machine m = Trn("trn3");
  AttentionConfig c{.heads = 1, .seq = 2048, .head_dim = 64, .kv_tile = 128};
  LoweredAttention full = LowerAttention(m, c).value();
  c.causal = true;
  LoweredAttention causal = LowerAttention(m, c).value();
  // 16 x 16 tiles: all of them, or the 136 on and below the diagonal, of
  // which the 16 on it are masked on GpSimdE.
  EXPECT_EQ(full.plan.steps, 256);
  EXPECT_EQ(full.plan.masked_steps, 0);
  EXPECT_EQ(causal.plan.steps, 136);
  EXPECT_EQ(causal.plan.skipped_steps, 120);
  EXPECT_EQ(causal.plan.masked_steps, 16);
  EXPECT_DOUBLE_EQ(causal.plan.flops, 4.0 * 64 * 2048 * 2049 / 2);
  EXPECT_DOUBLE_EQ(full.plan.flops, 4.0 * 64 * 2048 * 2048);
  const SimResult rf = SimulateNoThrottle(full), rc = SimulateNoThrottle(causal);
  // TensorE does 136/256 of the work; the whole kernel takes at most 60 %.
  EXPECT_EQ(BusyPs(causal, rc, 0, EngineKind::kTensor) * 256,
            BusyPs(full, rf, 0, EngineKind::kTensor) * 136);
  EXPECT_LT(rc.end_ps, rf.end_ps * 6 / 10);
  EXPECT_TRUE(CheckAttentionSchedule(causal).ok());
  // A window keeps a band: each row tile sees the tiles of its last 200 keys.
  c.window = 200;
  LoweredAttention band = LowerAttention(m, c).value();
  EXPECT_LT(band.plan.steps, causal.plan.steps);
  EXPECT_TRUE(CheckAttentionSchedule(band).ok());
}

TEST(AttentionLowering, DecodeSplitsTheKeysOverTwoCores) {
  const Machine m = Trn("trn3");
  AttentionConfig c{.heads = 8, .kv_heads = 1, .seq = 1, .kv_seq = 32768, .head_dim = 128};
  LoweredAttention one = LowerAttention(m, c).value();
  c.cores = 2;
  LoweredAttention two = LowerAttention(m, c).value();
  EXPECT_EQ(one.plan.config.kv_splits, 1);
  EXPECT_EQ(two.plan.config.kv_splits, 2);
  EXPECT_EQ(two.plan.split_keys, 16384);
  EXPECT_EQ(two.plan.steps, 64);
  // 4 tiles of 512 BF16 keys per K/V load: 4 KiB per partition of K^T.
  EXPECT_EQ(two.plan.kv_load_tiles, 4);
  EXPECT_EQ(two.plan.kv_loads, 16);
  for (const AttentionStep& s : two.steps) {
    EXPECT_EQ(s.core, s.split);
    EXPECT_EQ(s.key0 / 16384, s.split);
    EXPECT_EQ(s.rows, 8);  // the 8 query heads of the KV head share the tile
  }
  // Core 0 loads core 1's (m, l, acc) once, behind a cross-core semaphore.
  int exchanges = 0;
  for (const Stream& s : two.program.streams()) {
    if (s.name == "core0.dma.exchange") exchanges += static_cast<int>(s.instructions.size());
  }
  EXPECT_EQ(exchanges, 1);
  // Each core streams half the keys; the hand-over through HBM costs three
  // dependent DMA starts (~1.3 us each) at the end.
  const SimResult r1 = SimulateNoThrottle(one), r2 = SimulateNoThrottle(two);
  EXPECT_LT(r2.end_ps, r1.end_ps * 65 / 100);
  EXPECT_TRUE(CheckAttentionSchedule(two).ok());
}

TEST(AttentionLowering, ExpEngineFollowsTheCostModel) {
  AttentionConfig c{
      .heads = 4, .kv_heads = 1, .seq = 64, .head_dim = 128, .dtype = MatmulDtype::kBf16};
  // Trainium2 has no VectorE exponential: ScalarE, and a forced VectorE is
  // rejected.
  LoweredAttention t2 = LowerAttention(Trn("trn2"), c).value();
  EXPECT_EQ(t2.plan.config.exp_engine, ExpEngine::kScalar);
  EXPECT_EQ(t2.plan.vector_cycles_vector_exp, 0);
  c.exp_engine = ExpEngine::kVector;
  ExpectError(LowerAttention(Trn("trn2"), c).status(), StatusCode::kInvalidArgument,
              "NeuronCore-v3 has no VectorE exponential");
  // Trainium3: auto takes the engine whose busier side finishes a step first.
  LoweredAttention forced = LowerAttention(Trn("trn3"), c).value();
  EXPECT_EQ(forced.plan.config.exp_engine, ExpEngine::kVector);
  c.exp_engine = ExpEngine::kAuto;
  LoweredAttention t3 = LowerAttention(Trn("trn3"), c).value();
  const AttentionPlan& p = t3.plan;
  const bool vector_faster = std::max(p.vector_cycles_vector_exp, p.scalar_cycles_vector_exp) <
                             std::max(p.vector_cycles_scalar_exp, p.scalar_cycles_scalar_exp);
  EXPECT_EQ(p.config.exp_engine, vector_faster ? ExpEngine::kVector : ExpEngine::kScalar);
  // VectorE already reduces the row max, so moving exp there loads it more.
  EXPECT_FALSE(vector_faster);
}

TEST(AttentionLowering, MxProgramsRunAndHalveTheKvBytes) {
  const Machine m = Trn("trn3");
  AttentionConfig c{.heads = 2, .kv_heads = 1, .seq = 256, .head_dim = 128, .causal = true};
  LoweredAttention bf = LowerAttention(m, c).value();
  c.dtype = MatmulDtype::kMxfp8;
  LoweredAttention mx = LowerAttention(m, c).value();
  const SimResult rb = SimulateNoThrottle(bf), rm = SimulateNoThrottle(mx);
  EXPECT_LT(rm.hbm_read_bytes, rb.hbm_read_bytes * 6 / 10);  // 1 B codes + 1/32 B scales
  EXPECT_TRUE(CheckAttentionSchedule(mx).ok());
  ExpectError(LowerAttention(Trn("trn2"), c).status(), StatusCode::kInvalidArgument,
              "has no mxfp8 matmul");
}

TEST(AttentionLowering, BudgetsAndShapesAreRejectedByName) {
  const Machine m = Trn("trn3");
  // Two score tiles of 2,048 FP32 keys fill PSUM's 16 KiB with the P^T
  // tile: no room for the P V tile.
  ExpectError(
      LowerAttention(m, {.heads = 1, .seq = 128, .kv_seq = 2048, .head_dim = 128, .kv_tile = 2048})
          .status(),
      StatusCode::kResourceExhausted, "PSUM buffer 'core0.pv[0]' needs 512 B per partition; 0 B");
  // 40 row tiles per K/V load, each with 3 states of 4 x 512 + 12 B and two
  // Q^T tiles: too much SBUF when asked for; chosen, fewer tiles share a load.
  AttentionConfig wide{.heads = 40, .kv_heads = 1, .seq = 128, .head_dim = 512};
  wide.tiles_per_load = 40;
  ExpectError(LowerAttention(m, wide).status(), StatusCode::kResourceExhausted,
              "SBUF buffer 'core0.state[");
  wide.tiles_per_load = 0;
  StatusOr<LoweredAttention> fitted = LowerAttention(m, wide);
  ASSERT_TRUE(fitted.ok()) << fitted.status().ToString();
  EXPECT_LT(fitted->plan.config.tiles_per_load, 40);
  EXPECT_GE(fitted->plan.config.tiles_per_load, 1);
  ExpectError(LowerAttention(m, {.heads = 1, .seq = 128, .head_dim = 128, .kv_tile = 96}).status(),
              StatusCode::kInvalidArgument, "kv_tile = 96 must be a multiple of 128");
  ExpectError(LowerAttention(m, {.heads = 6, .kv_heads = 4, .seq = 8, .head_dim = 64}).status(),
              StatusCode::kInvalidArgument, "heads must be a multiple of kv_heads");
  ExpectError(LowerAttention(m, {.heads = 1, .seq = 8, .head_dim = 64, .cores = 2, .kv_splits = 3})
                  .status(),
              StatusCode::kInvalidArgument, "kv_splits = 3 must be 1 or cores (2)");
  ProgramOptions tiny;
  tiny.max_instructions = 100;
  ExpectError(LowerAttention(m, {.heads = 1, .seq = 1024, .head_dim = 64}, tiny).status(),
              StatusCode::kResourceExhausted, "ProgramOptions::max_instructions");
}

TEST(AttentionSchedule, ACheckFindsAMissingTile) {
  LoweredAttention a =
      LowerAttention(Trn("trn3"), {.heads = 1, .seq = 512, .head_dim = 64, .kv_tile = 128}).value();
  ASSERT_TRUE(CheckAttentionSchedule(a).ok());
  a.steps.erase(a.steps.begin() + 1);  // row tile 0, KV tile 1
  ExpectError(CheckAttentionSchedule(a), StatusCode::kFailedPrecondition,
              "at batch 0, head 0, query 0, tile position 1: expected KV tile 1 of split 0");
}

}  // namespace
}  // namespace trnmx::emu
