// The MoE router (moe.h): every option against the independent reference
// (moe_reference.h) bit for bit; the published routers (gpt-oss, Mixtral,
// DeepSeek-V3) on hand-computed cases; ties, capacity, empty experts, T = 0,
// losses in closed form, the bias update; thread counts; errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "kernels/moe/moe_reference.h"
#include "support/hwy_targets.h"
#include "support/random.h"
#include "trnmx/formats/codec.h"
#include "trnmx/moe.h"

namespace trnmx {
namespace {

using testing::RefRoute;
using testing::RefRouter;
using testing::Rng;

std::uint64_t RouterSeed() { return testing::TestSeed(20261201); }

struct Routed {
  RouterResult result;
  std::vector<std::int32_t> ids;
  std::vector<float> weights;
};

// Routes row-major FP32 logits; fails the test on an error status.
Routed RouteOk(const std::vector<float>& logits, std::size_t T, std::size_t E,
               const RouterParams& p, Executor* ex = nullptr) {
  const std::size_t slots = p.top_k + p.num_shared_experts;
  Routed r;
  r.ids.assign(T * slots, 12345);
  r.weights.assign(T * slots, -7.0f);
  StatusOr<RouterResult> s = Route(Fp32MatrixView{logits.data(), T, E, E}, p, r.ids, r.weights, ex);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (s.ok()) r.result = *s;
  return r;
}

std::vector<float> RandomLogits(Rng& rng, std::size_t n, float scale) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

void ExpectSameAsReference(const Routed& got, const RefRoute& want, const std::string& what) {
  ASSERT_EQ(got.ids.size(), want.ids.size()) << what;
  for (std::size_t i = 0; i < want.ids.size(); ++i) {
    ASSERT_EQ(got.ids[i], want.ids[i]) << what << " entry " << i;
    ASSERT_EQ(std::bit_cast<std::uint32_t>(got.weights[i]),
              std::bit_cast<std::uint32_t>(want.weights[i]))
        << what << " entry " << i << ": " << got.weights[i] << " vs " << want.weights[i];
  }
  EXPECT_EQ(got.result.slots, want.slots) << what;
  EXPECT_EQ(got.result.capacity, want.capacity) << what;
  EXPECT_EQ(got.result.dropped, want.dropped) << what;
  EXPECT_EQ(got.result.tokens_per_expert, want.kept) << what;
  EXPECT_EQ(got.result.selected_per_expert, want.selected) << what;
  EXPECT_EQ(got.result.z_loss, want.z_loss) << what;
  EXPECT_EQ(got.result.load_balancing_loss, want.lb_loss) << what;
  EXPECT_EQ(got.result.sequence_balance_loss, want.seq_loss) << what;
}

// ---------------------------------------------------------------------------
// Every option against the reference.
// ---------------------------------------------------------------------------

struct OptionCase {
  std::string name;
  std::size_t experts;
  RouterParams params;
  bool bias = false;
};

std::vector<OptionCase> OptionCases() {
  std::vector<OptionCase> cases;
  for (RouterScore score :
       {RouterScore::kSoftmax, RouterScore::kSigmoid, RouterScore::kSoftmaxOverTopK}) {
    const std::string sname = score == RouterScore::kSoftmax   ? "softmax"
                              : score == RouterScore::kSigmoid ? "sigmoid"
                                                               : "softmax_over_topk";
    for (bool renorm : {false, true}) {
      for (float scale : {1.0f, 2.5f}) {
        OptionCase c{sname + (renorm ? "_renorm" : "") + (scale != 1.0f ? "_scaled" : ""), 16, {}};
        c.params.top_k = 3;
        c.params.score = score;
        c.params.renormalize = renorm;
        c.params.scaling_factor = scale;
        c.params.compute_losses = true;
        cases.push_back(c);
      }
    }
    for (GroupScore gs : {GroupScore::kAuto, GroupScore::kMax, GroupScore::kSumTop2}) {
      for (bool bias : {false, true}) {
        OptionCase c{
            sname + "_groups" + std::to_string(static_cast<int>(gs)) + (bias ? "_bias" : ""),
            32,
            {},
            bias};
        c.params.top_k = 4;
        c.params.score = score;
        c.params.num_groups = 8;
        c.params.top_k_groups = 3;
        c.params.group_score = gs;
        c.params.renormalize = true;
        c.params.compute_losses = true;
        cases.push_back(c);
      }
    }
    for (DropPolicy policy : {DropPolicy::kProbability, DropPolicy::kPosition}) {
      for (float factor : {0.5f, 1.0f, 1.25f}) {
        OptionCase c{sname + (policy == DropPolicy::kPosition ? "_position_" : "_prob_") +
                         std::to_string(factor),
                     8,
                     {},
                     true};
        c.params.top_k = 2;
        c.params.score = score;
        c.params.capacity_factor = factor;
        c.params.drop_policy = policy;
        c.params.num_shared_experts = 2;
        c.params.compute_losses = true;
        cases.push_back(c);
      }
    }
  }
  return cases;
}

TEST(MoeRouter, EveryOptionMatchesReference) {
  Rng rng(RouterSeed());
  for (const OptionCase& c : OptionCases()) {
    for (std::size_t T : {0u, 1u, 7u, 200u}) {
      const std::size_t E = c.experts;
      // Coarse logits (multiples of 1/4) also make ties common.
      std::vector<float> logits = RandomLogits(rng, T * E, 2.0f);
      if (T == 7) {
        for (float& x : logits) x = std::round(x * 4.0f) / 4.0f;
      }
      std::vector<float> bias;
      RouterParams p = c.params;
      if (c.bias) {
        bias = RandomLogits(rng, E, 0.1f);
        p.expert_bias = bias;
      }
      std::vector<std::size_t> offsets;
      if (T == 200) {
        offsets = {0, 50, 50, 120, 200};
        p.sequence_offsets = offsets;
      }
      ExpectSameAsReference(RouteOk(logits, T, E, p), RefRouter(logits, T, E, p),
                            c.name + " T=" + std::to_string(T));
    }
  }
}

TEST(MoeRouter, Bf16LogitsEqualTheirFp32Values) {
  Rng rng(RouterSeed() + 1);
  const std::size_t T = 50, E = 16;
  const std::vector<float> f = RandomLogits(rng, T * E, 3.0f);
  std::vector<Bf16> b(T * E);
  std::vector<float> widened(T * E);
  for (std::size_t i = 0; i < f.size(); ++i) {
    b[i] = Fp32ToBf16Rne(f[i]);
    widened[i] = std::bit_cast<float>(static_cast<std::uint32_t>(b[i].bits) << 16);
  }
  RouterParams p = DeepSeekV3RouterParams({});
  p.top_k = 4;
  p.compute_losses = true;
  std::vector<std::int32_t> ids(T * 5);
  std::vector<float> w(T * 5);
  StatusOr<RouterResult> r = Route(Bf16MatrixView{b.data(), T, E, E}, p, ids, w);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Routed want = RouteOk(widened, T, E, p);
  EXPECT_EQ(ids, want.ids);
  EXPECT_EQ(w, want.weights);
  EXPECT_EQ(r->z_loss, want.result.z_loss);
}

TEST(MoeRouter, StridedLogits) {
  Rng rng(RouterSeed() + 2);
  const std::size_t T = 9, E = 12, ld = 20;
  const std::vector<float> wide = RandomLogits(rng, T * ld, 1.0f);
  std::vector<float> packed(T * E);
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t e = 0; e < E; ++e) packed[t * E + e] = wide[t * ld + e];
  }
  RouterParams p = MixtralRouterParams();
  std::vector<std::int32_t> ids(T * 2);
  std::vector<float> w(T * 2);
  ASSERT_TRUE(Route(Fp32MatrixView{wide.data(), T, E, ld}, p, ids, w).ok());
  const Routed want = RouteOk(packed, T, E, p);
  EXPECT_EQ(ids, want.ids);
  EXPECT_EQ(w, want.weights);
}

TEST(MoeRouter, IdenticalBitsForEveryThreadCount) {
  Rng rng(RouterSeed() + 3);
  const std::size_t T = 1000, E = 64;
  const std::vector<float> logits = RandomLogits(rng, T * E, 2.0f);
  const std::vector<float> bias = RandomLogits(rng, E, 0.05f);
  std::vector<RouterParams> configs = {GptOssRouterParams(), MixtralRouterParams(),
                                       DeepSeekV3RouterParams(bias)};
  configs[1].capacity_factor = 1.0f;
  for (RouterParams& p : configs) {
    p.compute_losses = true;
    const Routed one = RouteOk(logits, T, E, p);
    for (std::size_t threads : {1u, 2u, 3u}) {
      ThreadPoolExecutor pool(threads);
      const Routed many = RouteOk(logits, T, E, p, &pool);
      EXPECT_EQ(many.ids, one.ids) << threads;
      EXPECT_EQ(0, std::memcmp(many.weights.data(), one.weights.data(),
                               one.weights.size() * sizeof(float)))
          << threads;
      EXPECT_EQ(many.result.z_loss, one.result.z_loss);
      EXPECT_EQ(many.result.load_balancing_loss, one.result.load_balancing_loss);
      EXPECT_EQ(many.result.tokens_per_expert, one.result.tokens_per_expert);
    }
  }
}

// ---------------------------------------------------------------------------
// The published routers, by hand.
// ---------------------------------------------------------------------------

TEST(MoeRouter, MixtralSoftmaxTop2Renormalised) {
  // Logits [1, 2, 3, 0]: top-2 = experts 2 and 1; renormalised weights
  // e^3 / (e^3 + e^2) = 1 / (1 + e^-1) = 0.7310586 and 0.2689414.
  const std::vector<float> logits = {1, 2, 3, 0};
  const Routed r = RouteOk(logits, 1, 4, MixtralRouterParams());
  EXPECT_EQ(r.ids, (std::vector<std::int32_t>{2, 1}));
  EXPECT_NEAR(r.weights[0], 0.7310585786, 1e-7);
  EXPECT_NEAR(r.weights[1], 0.2689414214, 1e-7);
}

TEST(MoeRouter, GptOssTop4ThenSoftmaxOverTheFour) {
  // Top-4 of the logits: experts 5 (3), 2 (2), 7 (1.5), 3 (1); the weights
  // are the softmax of [3, 2, 1.5, 1] alone: e^(x - 3) / (1 + e^-1 + e^-1.5
  // + e^-2) = 0.5793, 0.2131, 0.1293, 0.0784 (they sum to 1, unlike the
  // full softmax's values for the same experts: 0.5310, 0.1953, ...).
  const std::vector<float> logits = {0.5f, -1.0f, 2.0f, 1.0f, 0.0f, 3.0f, -2.0f, 1.5f};
  const Routed r = RouteOk(logits, 1, 8, GptOssRouterParams());
  EXPECT_EQ(r.ids, (std::vector<std::int32_t>{5, 2, 7, 3}));
  const double z = 1.0 + std::exp(-1.0) + std::exp(-1.5) + std::exp(-2.0);
  const double want[] = {1.0 / z, std::exp(-1.0) / z, std::exp(-1.5) / z, std::exp(-2.0) / z};
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(r.weights[j], want[j], 1e-7) << j;
  EXPECT_NEAR(r.weights[0], 0.579259, 1e-6);
}

TEST(MoeRouter, DeepSeekV3GroupsBiasRenormScale) {
  // 16 experts in 8 groups of 2, top-4 groups, top-4 experts (the preset's
  // top-8 would take every eligible expert here), sigmoid scores s:
  //   group: 0          1          2           3          4           5          6           7
  //   s:     .9  .1     .8  .7     .6  .55     .2  .2     .5  .45     .3  .3     .1  .02     .95
  //   .05 bias: +.05 on e0, +.8 on e12, -.5 on e14 c:     .95 .1     .8  .7     .6  .55     .2  .2
  //   .5  .45     .3  .3     .9  .02     .45 .05 group score (sum of top 2 of c): 1.05, 1.5, 1.15,
  //   .4, .95, .6, .92, .5
  // Top-4 groups: 1, 2, 0, 4 (group 6 at .92 and group 7, which would be
  // 1.0 without the bias, are out). Top-4 of c over groups {0, 1, 2, 4}:
  // e0 (.95), e2 (.8), e3 (.7), e4 (.6). Weights from the unbiased s:
  // [.9 .8 .7 .6] / 3.0 * 2.5 = .75, .666667, .583333, .5; the shared expert
  // (id 16) has weight 1.
  const double s[16] = {.9, .1, .8, .7, .6, .55, .2, .2, .5, .45, .3, .3, .1, .02, .95, .05};
  std::vector<float> logits(16);
  for (int e = 0; e < 16; ++e) logits[e] = static_cast<float>(std::log(s[e] / (1 - s[e])));
  std::vector<float> bias(16, 0.0f);
  bias[0] = 0.05f;
  bias[12] = 0.8f;
  bias[14] = -0.5f;
  RouterParams p = DeepSeekV3RouterParams(bias);
  p.top_k = 4;
  const Routed r = RouteOk(logits, 1, 16, p);
  EXPECT_EQ(r.ids, (std::vector<std::int32_t>{0, 2, 3, 4, 16}));
  const double want[] = {0.75, 2.5 * 0.8 / 3.0, 2.5 * 0.7 / 3.0, 0.5, 1.0};
  for (int j = 0; j < 5; ++j) EXPECT_NEAR(r.weights[j], want[j], 2e-6) << j;
  // Without the bias, group 7 (1.0) replaces group 4 and e14 (.95) leads.
  p.expert_bias = {};
  p.group_score = GroupScore::kSumTop2;
  const Routed nobias = RouteOk(logits, 1, 16, p);
  EXPECT_EQ(nobias.ids, (std::vector<std::int32_t>{14, 0, 2, 3, 16}));
}

// The example at the top of moe.h, as written there.
Status HeaderExample(const float* logits, std::size_t T, std::vector<float>& bias,
                     std::vector<std::int32_t>& ids_out) {
  trnmx::RouterParams p = trnmx::DeepSeekV3RouterParams(bias);  // bias: 256 floats
  std::vector<std::int32_t> ids(T * 9);
  std::vector<float> w(T * 9);
  trnmx::StatusOr<trnmx::RouterResult> r =
      trnmx::Route(trnmx::Fp32MatrixView{logits, T, 256, 256}, p, ids, w);
  if (!r.ok()) return r.status();
  trnmx::StatusOr<trnmx::DispatchPlan> plan = trnmx::PlanDispatch(ids, T, 9, 257);
  if (!plan.ok()) return plan.status();
  trnmx::Status s =
      trnmx::UpdateExpertBias(r->selected_per_expert, 1e-3f, std::span(bias).first(256));
  ids_out = ids;
  return s;
}

TEST(MoeRouter, HeaderExampleRuns) {
  Rng rng(RouterSeed() + 4);
  const std::size_t T = 40;
  const std::vector<float> logits = RandomLogits(rng, T * 256, 1.0f);
  std::vector<float> bias(256, 0.0f);
  std::vector<std::int32_t> ids;
  ASSERT_TRUE(HeaderExample(logits.data(), T, bias, ids).ok());
  ASSERT_EQ(ids.size(), T * 9);
  for (std::size_t t = 0; t < T; ++t) {
    EXPECT_EQ(ids[t * 9 + 8], 256);  // The shared expert.
    // The 8 routed experts lie in at most 4 groups of 32.
    std::vector<bool> group(8, false);
    for (std::size_t j = 0; j < 8; ++j) group[static_cast<std::size_t>(ids[t * 9 + j]) / 32] = true;
    EXPECT_LE(std::count(group.begin(), group.end(), true), 4);
  }
  // 40 tokens x 8 = 320 selections over 256 experts: mean 1.25; experts above
  // it moved down by 1e-3, those below up.
  EXPECT_NE(std::count(bias.begin(), bias.end(), 1e-3f), 0);
  EXPECT_NE(std::count(bias.begin(), bias.end(), -1e-3f), 0);
}

// ---------------------------------------------------------------------------
// Ties, capacity, empty experts, T = 0.
// ---------------------------------------------------------------------------

TEST(MoeRouter, TiesGoToTheLowerIndex) {
  RouterParams p;
  p.top_k = 3;
  const Routed flat = RouteOk(std::vector<float>(8, 0.25f), 1, 8, p);
  EXPECT_EQ(flat.ids, (std::vector<std::int32_t>{0, 1, 2}));
  EXPECT_EQ(flat.weights, (std::vector<float>{0.125f, 0.125f, 0.125f}));
  // -0 and +0 are equal: the lower index wins either way round.
  p.top_k = 1;
  p.score = RouterScore::kSoftmaxOverTopK;
  EXPECT_EQ(RouteOk({0.0f, -0.0f}, 1, 2, p).ids, (std::vector<std::int32_t>{0}));
  EXPECT_EQ(RouteOk({-0.0f, 0.0f}, 1, 2, p).ids, (std::vector<std::int32_t>{0}));
  // Tied groups: the lower group index.
  // Group maxima 1, 2, 1, 2: groups 1 and 3 tie, group 1 is kept.
  p.top_k = 2;
  p.num_groups = 4;
  p.top_k_groups = 1;
  EXPECT_EQ(RouteOk({1, 1, 2, 0, 1, 1, 2, 0}, 1, 8, p).ids, (std::vector<std::int32_t>{2, 3}));
}

// The wide top-k path (router.cc TopKThreshold: a lower bound from the
// maxima of disjoint subsets, then the scan over the values at or above it)
// on every Highway target: widths with tails, k below and above the vector
// width (the lane-maxima and the slice bounds), and logits from 3 values so
// that most candidates tie and the lower index must win.
class MoeRouterTopK : public trnmx::testing::HwyTargetTest {};

TEST_P(MoeRouterTopK, WideRowsWithManyTiesMatchReference) {
  Rng rng(RouterSeed());
  for (std::size_t E : {64u, 100u, 128u, 257u}) {
    for (std::size_t k : {1u, 4u, 8u, 16u}) {
      for (bool coarse : {false, true}) {
        const std::size_t T = 24;
        std::vector<float> logits = RandomLogits(rng, T * E, 3.0f);
        if (coarse) {
          for (float& x : logits) x = std::round(std::clamp(x, -1.0f, 1.0f));
        }
        RouterParams p = GptOssRouterParams();
        p.top_k = k;
        ExpectSameAsReference(RouteOk(logits, T, E, p), RefRouter(logits, T, E, p),
                              GetParam().name + " E=" + std::to_string(E) +
                                  " k=" + std::to_string(k) + (coarse ? " coarse" : ""));
      }
    }
  }
}

// Group-limited routing on every target: the group top-2 butterfly
// (router_scan-inl.h GroupTopTwo: groups of whole vectors, and of other
// sizes) and the top-k over the kept groups' compacted scores, with coarse
// logits so that group scores and experts tie and the lower index must win.
TEST_P(MoeRouterTopK, GroupsWithManyTiesMatchReference) {
  Rng rng(RouterSeed() + 10);
  for (std::size_t E : {64u, 128u, 96u}) {
    for (bool bias : {false, true}) {
      for (bool coarse : {false, true}) {
        const std::size_t T = 24;
        std::vector<float> logits = RandomLogits(rng, T * E, 3.0f);
        if (coarse) {
          for (float& x : logits) x = std::round(std::clamp(x, -1.0f, 1.0f));
        }
        const std::vector<float> b = RandomLogits(rng, E, coarse ? 0.0f : 0.1f);
        RouterParams p =
            DeepSeekV3RouterParams(bias ? std::span<const float>(b) : std::span<const float>());
        p.group_score = bias ? GroupScore::kSumTop2 : GroupScore::kMax;
        p.score = coarse ? RouterScore::kSoftmaxOverTopK : RouterScore::kSigmoid;
        ExpectSameAsReference(RouteOk(logits, T, E, p), RefRouter(logits, T, E, p),
                              GetParam().name + " E=" + std::to_string(E) + (bias ? " bias" : "") +
                                  (coarse ? " coarse" : ""));
      }
    }
  }
}

// The vector scan for non-finite logits finds one in a row's tail (past
// the last whole vector) and in its body, on every target.
TEST_P(MoeRouterTopK, NonFiniteLogitAnywhereInAWideRowIsNamed) {
  for (std::size_t E : {100u, 128u}) {
    for (std::size_t e : {std::size_t{3}, E - 1}) {
      std::vector<float> logits(8 * E, 0.5f);
      logits[5 * E + e] =
          e == 3 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
      std::vector<std::int32_t> ids(8 * 4, 77);
      std::vector<float> w(8 * 4, 7.0f);
      StatusOr<RouterResult> r =
          Route(Fp32MatrixView{logits.data(), 8, E, E}, GptOssRouterParams(), ids, w);
      ASSERT_FALSE(r.ok());
      EXPECT_NE(r.status().message().find("token 5, expert " + std::to_string(e) + " is " +
                                          (e == 3 ? "infinite" : "NaN")),
                std::string::npos)
          << r.status().message();
      EXPECT_EQ(ids, std::vector<std::int32_t>(8 * 4, 77));
    }
  }
}

// The logits are checked as they are routed (router.cc RouteBlock): a NaN
// or Inf in the last token, after every other token was routed into the
// router's own buffers, still leaves the outputs untouched, for each rule's
// path (the fused check of gpt-oss's top-k, the softmax, DeepSeek-V3's
// groups), FP32 and BF16, on one thread and two; with two bad tokens in
// different tasks, the first is named.
TEST_P(MoeRouterTopK, NonFiniteLogitInTheLastTokenWritesNothing) {
  const std::size_t T = 300, E = 128;  // two tasks of (up to) 256 tokens
  Rng rng(RouterSeed() + 9);
  const std::vector<float> bias = RandomLogits(rng, E, 0.1f);
  RouterParams softmax = MixtralRouterParams();
  softmax.top_k = 4;
  softmax.compute_losses = true;
  ThreadPoolExecutor pool(2);
  for (const RouterParams& p : {GptOssRouterParams(), softmax, DeepSeekV3RouterParams(bias)}) {
    // One thread, and two tasks side by side that both find a bad token.
    for (Executor* ex : {static_cast<Executor*>(nullptr), static_cast<Executor*>(&pool)}) {
      const std::vector<std::size_t> bad =
          ex == nullptr ? std::vector<std::size_t>{T - 1} : std::vector<std::size_t>{100, T - 1};
      {
        std::vector<float> logits = RandomLogits(rng, T * E, 2.0f);
        for (std::size_t t : bad) {
          logits[t * E + E - 1 - t % 7] = t == T - 1 ? std::numeric_limits<float>::quiet_NaN()
                                                     : -std::numeric_limits<float>::infinity();
        }
        const std::size_t slots = p.top_k + p.num_shared_experts;
        const std::string want = "token " + std::to_string(bad[0]) + ", expert " +
                                 std::to_string(E - 1 - bad[0] % 7) + " is " +
                                 (bad[0] == T - 1 ? "NaN" : "infinite");
        std::vector<std::int32_t> ids(T * slots, 77);
        std::vector<float> w(T * slots, 7.0f);
        StatusOr<RouterResult> r = Route(Fp32MatrixView{logits.data(), T, E, E}, p, ids, w, ex);
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
        EXPECT_EQ(ids, std::vector<std::int32_t>(T * slots, 77));
        EXPECT_EQ(w, std::vector<float>(T * slots, 7.0f));
        std::vector<Bf16> b(T * E);
        for (std::size_t i = 0; i < b.size(); ++i) b[i] = Fp32ToBf16Rne(logits[i]);
        r = Route(Bf16MatrixView{b.data(), T, E, E}, p, ids, w, ex);
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
        EXPECT_EQ(ids, std::vector<std::int32_t>(T * slots, 77));
        EXPECT_EQ(w, std::vector<float>(T * slots, 7.0f));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, MoeRouterTopK,
                         ::testing::ValuesIn(trnmx::testing::CompiledHwyTargets()),
                         trnmx::testing::HwyTargetTestName);

TEST(MoeRouter, CapacityDropsByProbabilityOrPosition) {
  // 4 tokens, 2 experts, top-1, factor 1: capacity ceil(1 * 4 * 1 / 2) = 2.
  // Every token prefers expert 0, with weights sigmoid(x) of x = 1, 3, 2, .5.
  const std::vector<float> logits = {1, 0, 3, 0, 2, 0, 0.5f, 0};
  RouterParams p;
  p.top_k = 1;
  p.capacity_factor = 1.0f;
  const Routed prob = RouteOk(logits, 4, 2, p);
  EXPECT_EQ(prob.result.capacity, 2u);
  EXPECT_EQ(prob.ids, (std::vector<std::int32_t>{-1, 0, 0, -1}));
  EXPECT_EQ(prob.weights[0], 0.0f);
  EXPECT_EQ(prob.weights[3], 0.0f);
  EXPECT_NEAR(prob.weights[1], 1.0 / (1.0 + std::exp(-3.0)), 1e-7);
  EXPECT_EQ(prob.result.dropped, 2u);
  EXPECT_EQ(prob.result.tokens_per_expert, (std::vector<std::uint64_t>{2, 0}));
  EXPECT_EQ(prob.result.selected_per_expert, (std::vector<std::uint64_t>{4, 0}));
  p.drop_policy = DropPolicy::kPosition;
  const Routed pos = RouteOk(logits, 4, 2, p);
  EXPECT_EQ(pos.ids, (std::vector<std::int32_t>{0, 0, -1, -1}));
  // Capacity = ceil(1.25 * 10 * 2 / 4) = ceil(6.25) = 7, raised by min_capacity.
  p.top_k = 2;
  p.capacity_factor = 1.25f;
  EXPECT_EQ(RouteOk(std::vector<float>(40, 0.0f), 10, 4, p).result.capacity, 7u);
  p.min_capacity = 9;
  EXPECT_EQ(RouteOk(std::vector<float>(40, 0.0f), 10, 4, p).result.capacity, 9u);
}

TEST(MoeRouter, EmptyExpertsAndNoTokens) {
  // Every token picks experts 0 and 1; 2..7 get nothing.
  std::vector<float> logits(5 * 8, -1.0f);
  for (std::size_t t = 0; t < 5; ++t) logits[t * 8] = logits[t * 8 + 1] = 2.0f;
  RouterParams p = MixtralRouterParams();
  p.compute_losses = true;
  const Routed r = RouteOk(logits, 5, 8, p);
  EXPECT_EQ(r.result.tokens_per_expert, (std::vector<std::uint64_t>{5, 5, 0, 0, 0, 0, 0, 0}));
  const Routed none = RouteOk({}, 0, 8, p);
  EXPECT_TRUE(none.ids.empty());
  EXPECT_EQ(none.result.tokens_per_expert, std::vector<std::uint64_t>(8, 0));
  EXPECT_EQ(none.result.z_loss, 0.0);
  EXPECT_EQ(none.result.load_balancing_loss, 0.0);
  // T = 0 with a null pointer and empty outputs.
  EXPECT_TRUE(Route(Fp32MatrixView{nullptr, 0, 8, 8}, p, {}, {}).ok());
}

// ---------------------------------------------------------------------------
// Losses in closed form.
// ---------------------------------------------------------------------------

TEST(MoeRouter, LossesClosedForm) {
  RouterParams p;
  p.top_k = 1;
  p.compute_losses = true;
  // Equal logits: P = 1/4 for every expert; ties send every token to expert 0:
  // loss = E / (k T^2) * (T * T/4) = 1; z-loss = log(4)^2.
  const std::size_t T = 8, E = 4;
  const Routed flat = RouteOk(std::vector<float>(T * E, 0.0f), T, E, p);
  EXPECT_DOUBLE_EQ(flat.result.load_balancing_loss, 1.0);
  EXPECT_NEAR(flat.result.z_loss, std::log(4.0) * std::log(4.0), 1e-6);
  // Balanced: token t prefers expert t % 4 by a huge margin: n_e = 2,
  // P ~ one-hot: loss = 4 / 64 * sum_e 2 * 2 = 1.
  std::vector<float> onehot(T * E, -50.0f);
  for (std::size_t t = 0; t < T; ++t) onehot[t * E + t % E] = 50.0f;
  const Routed bal = RouteOk(onehot, T, E, p);
  EXPECT_NEAR(bal.result.load_balancing_loss, 1.0, 1e-12);
  EXPECT_NEAR(bal.result.z_loss, 2500.0, 1e-3);  // lse = 50.
  // Collapsed: every token on expert 0 with P_0 ~ 1: loss = E / k = 4.
  std::vector<float> collapsed(T * E, -50.0f);
  for (std::size_t t = 0; t < T; ++t) collapsed[t * E] = 50.0f;
  EXPECT_NEAR(RouteOk(collapsed, T, E, p).result.load_balancing_loss, 4.0, 1e-12);
  // Sequence-wise: sequences [0, 4) balanced and [4, 8) collapsed: per
  // sequence 1 and 4, mean 2.5 (the batch-wise loss of the same tokens is
  // not the mean: it sees the combination).
  std::vector<float> mixed(T * E, -50.0f);
  for (std::size_t t = 0; t < T; ++t) mixed[t * E + (t < 4 ? t : 0)] = 50.0f;
  const std::vector<std::size_t> offsets = {0, 4, 8};
  p.sequence_offsets = offsets;
  const Routed seq = RouteOk(mixed, T, E, p);
  EXPECT_NEAR(seq.result.sequence_balance_loss, 2.5, 1e-12);
  // Batch: n = [5, 1, 1, 1], P sums = same: 4 / 64 * (25 + 1 + 1 + 1) = 1.75.
  EXPECT_NEAR(seq.result.load_balancing_loss, 1.75, 1e-12);
}

TEST(MoeRouter, BiasUpdateStep) {
  // Loads [3, 1, 2, 2, 7]: mean 3; signs of mean - load: 0, +, +, +, -.
  std::vector<float> bias = {0.5f, 0.0f, -1.0f, 0.25f, 0.0f};
  const std::vector<std::uint64_t> load = {3, 1, 2, 2, 7};
  ASSERT_TRUE(UpdateExpertBias(load, 0.125f, bias).ok());
  EXPECT_EQ(bias, (std::vector<float>{0.5f, 0.125f, -0.875f, 0.375f, -0.125f}));
  // A mean that is not an integer (7 / 2 = 3.5): 3 is below, 4 above.
  std::vector<float> b2 = {0, 0};
  ASSERT_TRUE(UpdateExpertBias(std::vector<std::uint64_t>{3, 4}, 1.0f, b2).ok());
  EXPECT_EQ(b2, (std::vector<float>{1.0f, -1.0f}));
  EXPECT_EQ(UpdateExpertBias(load, 0.1f, b2).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(UpdateExpertBias(load, NAN, bias).code(), StatusCode::kInvalidArgument);
  // Errors write nothing.
  EXPECT_EQ(b2, (std::vector<float>{1.0f, -1.0f}));
  EXPECT_EQ(bias, (std::vector<float>{0.5f, 0.125f, -0.875f, 0.375f, -0.125f}));
}

// ---------------------------------------------------------------------------
// Errors: a clear status and nothing written.
// ---------------------------------------------------------------------------

struct ErrorCase {
  std::string name;
  std::vector<float> logits;
  std::size_t tokens, experts;
  RouterParams params;
  StatusCode code;
  std::string message;  // A fragment the message must contain.
  std::size_t out_entries = 1000;
};

TEST(MoeRouter, ErrorsWriteNothing) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> ok(4 * 8, 0.5f);
  std::vector<float> with_nan = ok;
  with_nan[1 * 8 + 2] = nan;
  std::vector<float> with_inf = ok;
  with_inf[3 * 8 + 7] = -inf;
  const std::vector<float> short_bias(7, 0.0f);
  const std::vector<float> inf_bias = {0, 0, 0, inf, 0, 0, 0, 0};
  const std::vector<std::size_t> bad_offsets = {0, 3, 2, 4};
  const std::vector<std::size_t> short_offsets = {0, 3};
  auto with = [](auto f) {
    RouterParams p;
    p.top_k = 2;
    f(p);
    return p;
  };
  const std::vector<ErrorCase> cases = {
      {"nan", with_nan, 4, 8, with([](RouterParams&) {}), StatusCode::kInvalidArgument,
       "token 1, expert 2 is NaN"},
      {"inf", with_inf, 4, 8, with([](RouterParams&) {}), StatusCode::kInvalidArgument,
       "token 3, expert 7 is infinite"},
      {"k>E", ok, 4, 8, with([](RouterParams& p) { p.top_k = 9; }), StatusCode::kInvalidArgument,
       "top_k 9 is more than the 8 experts"},
      {"k=0", ok, 4, 8, with([](RouterParams& p) { p.top_k = 0; }), StatusCode::kInvalidArgument,
       "top_k is 0"},
      {"groups", ok, 4, 8, with([](RouterParams& p) { p.num_groups = 3; }),
       StatusCode::kInvalidArgument, "num_groups 3 does not divide the 8 experts"},
      {"top groups", ok, 4, 8, with([](RouterParams& p) {
         p.num_groups = 4;
         p.top_k_groups = 5;
       }),
       StatusCode::kInvalidArgument, "top_k_groups 5 is outside [1, num_groups = 4]"},
      {"k>group experts", ok, 4, 8, with([](RouterParams& p) {
         p.num_groups = 4;
         p.top_k_groups = 1;
         p.top_k = 3;
       }),
       StatusCode::kInvalidArgument, "top_k 3 is more than the 2 experts of the top 1 groups"},
      {"sum top2 of 1", ok, 4, 8, with([](RouterParams& p) {
         p.num_groups = 8;
         p.top_k_groups = 2;
         p.group_score = GroupScore::kSumTop2;
       }),
       StatusCode::kInvalidArgument, "needs 2 experts per group"},
      {"bias length", ok, 4, 8, with([&](RouterParams& p) { p.expert_bias = short_bias; }),
       StatusCode::kInvalidArgument, "expert_bias has 7 values for 8 experts"},
      {"bias inf", ok, 4, 8, with([&](RouterParams& p) { p.expert_bias = inf_bias; }),
       StatusCode::kInvalidArgument, "expert_bias[3] is not finite"},
      {"capacity", ok, 4, 8, with([](RouterParams& p) { p.capacity_factor = -1.0f; }),
       StatusCode::kInvalidArgument, "capacity_factor"},
      {"scale", ok, 4, 8, with([&](RouterParams& p) { p.scaling_factor = nan; }),
       StatusCode::kInvalidArgument, "scaling_factor"},
      {"offsets order", ok, 4, 8, with([&](RouterParams& p) { p.sequence_offsets = bad_offsets; }),
       StatusCode::kInvalidArgument, "sequence_offsets[2] = 2 is less than"},
      {"offsets end", ok, 4, 8, with([&](RouterParams& p) { p.sequence_offsets = short_offsets; }),
       StatusCode::kInvalidArgument, "from 0 to the 4 tokens"},
      {"score enum", ok, 4, 8, with([](RouterParams& p) { p.score = static_cast<RouterScore>(7); }),
       StatusCode::kInvalidArgument, "is not a RouterScore"},
      {"no experts",
       {},
       4,
       0,
       with([](RouterParams&) {}),
       StatusCode::kInvalidArgument,
       "0 experts"},
      {"short output", ok, 4, 8, with([](RouterParams& p) { p.num_shared_experts = 1; }),
       StatusCode::kResourceExhausted, "expert_ids holds 11 entries, 12 needed", 11},
  };
  for (const ErrorCase& c : cases) {
    std::vector<std::int32_t> ids(c.out_entries, 77);
    std::vector<float> w(c.out_entries, 77.0f);
    const float* data = c.logits.empty() ? ok.data() : c.logits.data();
    StatusOr<RouterResult> r =
        Route(Fp32MatrixView{data, c.tokens, c.experts, c.experts}, c.params, ids, w);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), c.code) << c.name << ": " << r.status().ToString();
    EXPECT_NE(r.status().message().find(c.message), std::string::npos)
        << c.name << ": " << r.status().ToString();
    EXPECT_EQ(ids, std::vector<std::int32_t>(c.out_entries, 77)) << c.name;
    EXPECT_EQ(w, std::vector<float>(c.out_entries, 77.0f)) << c.name;
  }
  // Short weights, null data, short row stride.
  std::vector<std::int32_t> ids(8);
  std::vector<float> w(7);
  RouterParams p;
  p.top_k = 2;
  EXPECT_EQ(Route(Fp32MatrixView{ok.data(), 4, 8, 8}, p, ids, w).status().code(),
            StatusCode::kResourceExhausted);
  w.resize(8);
  EXPECT_EQ(Route(Fp32MatrixView{nullptr, 4, 8, 8}, p, ids, w).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Route(Fp32MatrixView{ok.data(), 4, 8, 7}, p, ids, w).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace trnmx
