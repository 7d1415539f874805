// The MoE layer with expert parallelism (moe.h): the per-rank token counts
// equal the library router's, the dispatch sizes follow from them, the
// phases compose, and bad configurations are refused with the field named.
#include "trnmx/emu/moe.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "trnmx/emu/gemm.h"
#include "trnmx/emu/simulator.h"
#include "trnmx/moe.h"

namespace trnmx::emu {
namespace {

const System& Trn2Server() {
  static const System s = LoadSystem("trn2-server").value();
  return s;
}
const System& Gen2() {
  static const System s = LoadSystem("trn3-ultraserver-gen2").value();
  return s;
}

MoeConfig Small() {
  return {.experts = 16,
          .top_k = 2,
          .tokens = 1000,
          .hidden = 256,
          .intermediate = 256,
          .weights = MoeWeights::kMxfp4,
          .ep = 4,
          .zipf_s = 1.2,
          .seed = 7,
          .histogram = {},
          .lnc = 2};
}

// The library's own routing of the same synthetic logits (one chunk), counted
// per expert and per rank of 4 contiguous expert blocks.
TEST(MoeRouting, PerRankCountsAreTheRoutersOwn) {
  const MoeConfig c = Small();
  std::printf("seed %llu, zipf %.1f\n", static_cast<unsigned long long>(c.seed), c.zipf_s);
  StatusOr<MoeRouting> r = RouteMoe(Trn2Server(), c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();

  std::vector<float> logits(1000 * 16);
  ASSERT_TRUE(trnmx::SyntheticRouterLogits(
                  {.popularity = trnmx::ExpertPopularity::kZipf, .zipf_s = 1.2, .seed = 7}, 1000,
                  16, logits)
                  .ok());
  trnmx::RouterParams p = trnmx::GptOssRouterParams();
  p.top_k = 2;
  std::vector<std::int32_t> ids(2000);
  std::vector<float> w(2000);
  ASSERT_TRUE(trnmx::Route(trnmx::Fp32MatrixView{logits.data(), 1000, 16, 16}, p, ids, w).ok());
  StatusOr<std::vector<std::uint64_t>> per_expert = trnmx::CountTokensPerExpert(ids, 16);
  ASSERT_TRUE(per_expert.ok());
  StatusOr<trnmx::RoutingStats> want = trnmx::ComputeRoutingStats(*per_expert, 16, 4);
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(r->stats.tokens_per_expert, want->tokens_per_expert);
  EXPECT_EQ(r->stats.tokens_per_device, want->tokens_per_device);
  EXPECT_DOUBLE_EQ(r->stats.device_imbalance, want->device_imbalance);
  EXPECT_GT(r->stats.expert_imbalance, 1.5);  // Zipf(1.2) over 16 experts is skewed

  // Ranks hold 250 tokens each, and every token sends k = 2 assignments.
  EXPECT_EQ(r->tokens_per_rank, (std::vector<std::uint64_t>{250, 250, 250, 250}));
  for (int s = 0; s < 4; ++s) {
    std::uint64_t sent = 0;
    for (int e = 0; e < 16; ++e) sent += r->assignments[s * 16 + e];
    EXPECT_EQ(sent, 500u) << "rank " << s;
    // Rank s's row of the dispatch sizes: its assignments to each rank's
    // experts x hidden x 2 bytes (BF16).
    for (int d = 0; d < 4; ++d) {
      std::uint64_t to_d = 0;
      for (int e = 4 * d; e < 4 * d + 4; ++e) to_d += r->assignments[s * 16 + e];
      EXPECT_EQ(r->dispatch_bytes[s * 4 + d], static_cast<std::int64_t>(to_d * 256 * 2));
    }
  }
}

// A recorded histogram bypasses the router: each expert's tokens come from
// the ranks evenly, the first n % ep ranks one more.
TEST(MoeRouting, HistogramIsSpreadOverTheSendingRanks) {
  MoeConfig c = Small();
  c.histogram = {5, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3};
  StatusOr<MoeRouting> r = RouteMoe(Trn2Server(), c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->stats.tokens_per_device, (std::vector<std::uint64_t>{5, 4, 0, 3}));
  // Expert 0 (rank 0): 2, 1, 1, 1 from ranks 0..3; expert 4 (rank 1): 1 each;
  // expert 15 (rank 3): 1, 1, 1, 0.
  EXPECT_EQ(r->dispatch_bytes, (std::vector<std::int64_t>{2 * 512, 1 * 512, 0, 1 * 512,  //
                                                          1 * 512, 1 * 512, 0, 1 * 512,  //
                                                          1 * 512, 1 * 512, 0, 1 * 512,  //
                                                          1 * 512, 1 * 512, 0, 0}));
}

TEST(MoeSimulation, PhasesAddUpAndTrn2RunsMxWeightsInBf16) {
  StatusOr<MoeResult> r = SimulateMoe(Trn2Server(), Small());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->phases.size(), 4u);
  const char* names[] = {"router", "dispatch", "experts", "combine"};
  std::int64_t sum = 0;
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(r->phases[i].name, names[i]);
    EXPECT_GT(r->phases[i].time_ps, 0) << names[i];
    EXPECT_FALSE(r->phases[i].limiting.empty()) << names[i];
    sum += r->phases[i].time_ps;
  }
  EXPECT_EQ(r->total_ps, sum);
  EXPECT_EQ(r->expert_dtype, MatmulDtype::kBf16);  // Trn2 has no MX matmul
  // 2 x assignments x (2 I H + I H) FLOPs.
  EXPECT_DOUBLE_EQ(r->expert_flops, 2.0 * 2000 * 3 * 256 * 256);
}

TEST(MoeSimulation, Trn3RunsMxfp4ExpertsAndOneRankExchangesNothing) {
  MoeConfig c = Small();
  c.ep = 1;
  StatusOr<MoeResult> r = SimulateMoe(Gen2(), c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->expert_dtype, MatmulDtype::kMxfp4);
  EXPECT_EQ(r->phases[1].time_ps, 0);
  EXPECT_EQ(r->phases[3].time_ps, 0);
  EXPECT_GT(r->phases[2].time_ps, 0);
}

// A hotter expert block makes the expert phase slower: the phase is the
// slowest rank's.
TEST(MoeSimulation, SkewSlowsTheExpertPhase) {
  MoeConfig even = Small();
  even.histogram.assign(16, 125);  // 2000 assignments, 500 per rank
  MoeConfig skewed = even;
  skewed.histogram = {500, 500, 125, 125, 100, 100, 100, 75, 75, 75, 75, 75, 25, 25, 0, 25};
  StatusOr<MoeResult> a = SimulateMoe(Trn2Server(), even);
  StatusOr<MoeResult> b = SimulateMoe(Trn2Server(), skewed);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_GT(b->phases[2].time_ps, a->phases[2].time_ps);
  EXPECT_EQ(b->routing.stats.busiest_device, 0u);
}

// The router phase is the logits GEMM followed by the top-k: longer than the
// GEMM alone, by at least one tile's two DMA transfers (logits in, ids and
// weights out, each above the machine's fixed DMA cost); two max8 rounds (k
// = 12) take longer than one (k = 2), and so do more experts.
TEST(MoeSimulation, RouterIsTheLogitsGemmThenTheTopK) {
  const MoeConfig c = Small();  // 1000 tokens over 4 ranks: 250 per rank, 2 tiles
  StatusOr<MoeResult> r = SimulateMoe(Gen2(), c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Machine& chip = Gen2().chip;
  LoweredGemm g = LowerGemm(chip, {.m = 250,
                                   .n = c.experts,
                                   .k = c.hidden,
                                   .dtype = MatmulDtype::kBf16,
                                   .cores = chip.core_count()})
                      .value();
  const int64_t gemm_ps = Simulate(g.program).value().end_ps;
  EXPECT_GT(r->phases[0].time_ps, gemm_ps + 2 * 1'000'000) << gemm_ps;
  EXPECT_NE(r->phases[0].detail.find("and top-2 per rank"), std::string::npos)
      << r->phases[0].detail;
  MoeConfig wide = c;
  wide.top_k = 12;
  StatusOr<MoeResult> w = SimulateMoe(Gen2(), wide);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_GT(w->phases[0].time_ps, r->phases[0].time_ps);
  MoeConfig more = c;
  more.experts = 256;
  StatusOr<MoeResult> m = SimulateMoe(Gen2(), more);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_GT(m->phases[0].time_ps, r->phases[0].time_ps);
}

// The experts of a decode step (gpt-oss-120b at TP 16 on trn3: H 2880, I
// 180 rounded up to 192 for the MX blocks, 3 tokens per expert, MXFP4, the
// two cores of a logical core). Pipelined as a grouped kernel, each further
// expert costs less than one expert alone (its loads overlap the GEMMs
// before it), but no less than its weights' DMA time at the full engine
// rate: gate/up 2880 x 384 and down 192 x 2880 MXFP4 codes and E8M0 scales,
// 881,280 B, half per core over 16 engines x 38.4 GB/s = 0.717 us.
TEST(MoeExperts, PipelinedExpertsOverlapButStreamEveryWeight) {
  const Machine& trn3 = Gen2().chip;
  const auto time = [&](std::size_t experts) {
    return SimulateExpertGemms(trn3, 2, 2880, 192, MatmulDtype::kMxfp4,
                               std::vector<std::uint64_t>(experts, 3))
        .value();
  };
  const int64_t one = time(1), eight = time(8), sixteen = time(16);
  std::printf("experts 1 / 8 / 16: %.3f / %.3f / %.3f us\n", one * 1e-6, eight * 1e-6,
              sixteen * 1e-6);
  const int64_t per_expert = (sixteen - eight) / 8;  // the second program of 8 experts
  const double weight_bytes =
      2880.0 * 384 * 0.5 + 2880.0 / 32 * 384 + 192.0 * 2880 * 0.5 + 192.0 / 32 * 2880;
  EXPECT_EQ(weight_bytes, 881280);
  const double floor_ps = weight_bytes / 2 / (16 * 38.4e9) * 1e12;
  EXPECT_LT(per_expert, one);
  EXPECT_GT(static_cast<double>(per_expert), floor_ps);
  EXPECT_LT(eight, 8 * one * 3 / 4);  // at least a quarter overlapped
  EXPECT_EQ(sixteen, 2 * eight);      // programs of 8 experts, one after another
}

TEST(MoeConfigErrors, AreNamed) {
  const auto error = [](MoeConfig c) {
    StatusOr<MoeRouting> r = RouteMoe(Trn2Server(), c);
    return r.ok() ? std::string("ok") : r.status().message();
  };
  MoeConfig c = Small();
  c.ep = 3;
  EXPECT_NE(error(c).find("ep = 3 does not divide experts = 16"), std::string::npos) << error(c);
  c = Small();
  c.ep = 17;
  EXPECT_NE(error(c).find("ep = 17 outside [1, 16]"), std::string::npos) << error(c);
  c = Small();
  c.top_k = 17;
  EXPECT_NE(error(c).find("top_k = 17 > experts = 16"), std::string::npos) << error(c);
  c = Small();
  c.tokens = 0;
  EXPECT_NE(error(c).find("tokens = 0 < 1"), std::string::npos) << error(c);
  c = Small();
  c.histogram = {1, 2, 3};
  EXPECT_NE(error(c).find("histogram has 3 entries for 16 experts"), std::string::npos) << error(c);
  c = Small();
  c.zipf_s = -1;
  EXPECT_NE(error(c).find("zipf_s"), std::string::npos) << error(c);
  EXPECT_FALSE(ParseMoeWeights("fp4").ok());
}

}  // namespace
}  // namespace trnmx::emu
