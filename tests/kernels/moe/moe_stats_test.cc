// Routing statistics and synthetic router logits (moe.h): hand-computed
// loads and imbalance, placements, histogram errors, and the popularity of
// the synthetic logits (uniform and Zipf) through the router.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "support/random.h"
#include "trnmx/moe.h"

namespace trnmx {
namespace {

std::uint64_t StatsSeed() { return testing::TestSeed(20261203); }

TEST(MoeStats, HandComputedLoads) {
  // 8 experts on 4 devices (2 each): devices get 10, 10, 20, 0 of 40 tokens.
  const std::vector<std::uint64_t> h = {10, 0, 5, 5, 20, 0, 0, 0};
  StatusOr<RoutingStats> s = ComputeRoutingStats(h, 8, 4, {}, 3);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->tokens_per_device, (std::vector<std::uint64_t>{10, 10, 20, 0}));
  EXPECT_EQ(s->total, 40u);
  EXPECT_EQ(s->dropped, 3u);
  EXPECT_EQ(s->expert_imbalance, 4.0);  // 20 / (40 / 8).
  EXPECT_EQ(s->device_imbalance, 2.0);  // 20 / (40 / 4).
  EXPECT_EQ(s->busiest_expert, 4u);
  EXPECT_EQ(s->busiest_device, 2u);
  // A given placement: experts round-robin over 2 devices: 10+5+20+0 = 35, 0+5+0+0 = 5.
  const std::vector<std::uint32_t> map = {0, 1, 0, 1, 0, 1, 0, 1};
  s = ComputeRoutingStats(h, 8, 2, map);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->tokens_per_device, (std::vector<std::uint64_t>{35, 5}));
  EXPECT_EQ(s->device_imbalance, 35.0 / 20.0);
  // A map may place experts unevenly (3 devices, 8 experts).
  const std::vector<std::uint32_t> uneven = {0, 0, 0, 1, 1, 1, 2, 2};
  EXPECT_TRUE(ComputeRoutingStats(h, 8, 3, uneven).ok());
  // Nothing routed: balanced by definition.
  s = ComputeRoutingStats(std::vector<std::uint64_t>(8, 0), 8, 4);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->expert_imbalance, 1.0);
  EXPECT_EQ(s->device_imbalance, 1.0);
}

TEST(MoeStats, CountTokensPerExpert) {
  const std::vector<std::int32_t> ids = {0, 3, kDroppedExpert, 3, 1, kDroppedExpert};
  std::uint64_t dropped = 0;
  StatusOr<std::vector<std::uint64_t>> c = CountTokensPerExpert(ids, 4, &dropped);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, (std::vector<std::uint64_t>{1, 1, 0, 2}));
  EXPECT_EQ(dropped, 2u);
  const std::vector<std::int32_t> bad = {0, 4};
  c = CountTokensPerExpert(bad, 4);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(c.status().message().find("expert id 4 at index 1"), std::string::npos)
      << c.status().ToString();
}

TEST(MoeStats, Errors) {
  const std::vector<std::uint64_t> ten(10, 1);
  StatusOr<RoutingStats> s = ComputeRoutingStats(ten, 8, 4);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(s.status().message().find("expert ids 8..9 are out of range"), std::string::npos)
      << s.status().ToString();
  s = ComputeRoutingStats(ten, 12, 4);
  EXPECT_NE(s.status().message().find("experts 10..11 are missing"), std::string::npos)
      << s.status().ToString();
  const std::vector<std::uint64_t> eight(8, 1);
  s = ComputeRoutingStats(eight, 8, 3);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("EP degree 3 does not divide the 8 experts"),
            std::string::npos)
      << s.status().ToString();
  EXPECT_EQ(ComputeRoutingStats(eight, 8, 0).status().code(), StatusCode::kInvalidArgument);
  const std::vector<std::uint32_t> far = {0, 0, 0, 0, 0, 0, 0, 4};
  s = ComputeRoutingStats(eight, 8, 4, far);
  EXPECT_NE(s.status().message().find("device_of_expert[7] = 4"), std::string::npos)
      << s.status().ToString();
  const std::vector<std::uint32_t> short_map = {0, 1};
  EXPECT_EQ(ComputeRoutingStats(eight, 8, 4, short_map).status().code(),
            StatusCode::kInvalidArgument);
  const std::vector<std::uint64_t> huge = {~0ull, 1};
  EXPECT_EQ(ComputeRoutingStats(huge, 2, 1).status().code(), StatusCode::kOutOfRange);
}

// Routes synthetic logits with top-1 softmax and returns tokens per expert.
std::vector<std::uint64_t> Top1Histogram(const SyntheticRouting& cfg, std::size_t T,
                                         std::size_t E) {
  std::vector<float> logits(T * E);
  EXPECT_TRUE(SyntheticRouterLogits(cfg, T, E, logits).ok());
  RouterParams p;
  p.top_k = 1;
  std::vector<std::int32_t> ids(T);
  std::vector<float> w(T);
  StatusOr<RouterResult> r = Route(Fp32MatrixView{logits.data(), T, E, E}, p, ids, w);
  EXPECT_TRUE(r.ok());
  return r.ok() ? r->tokens_per_expert : std::vector<std::uint64_t>{};
}

TEST(MoeStats, SyntheticPopularityUniformAndZipf) {
  const std::size_t T = 40000, E = 16;
  const std::uint64_t seed = StatsSeed();
  std::printf("synthetic routing seed %llu\n", static_cast<unsigned long long>(seed));
  // Each count is Binomial(T, p): within 5 standard deviations of T p.
  auto check = [&](const std::vector<std::uint64_t>& h, const std::vector<double>& p,
                   const char* what) {
    ASSERT_EQ(h.size(), p.size());
    for (std::size_t e = 0; e < p.size(); ++e) {
      const double mean = static_cast<double>(T) * p[e];
      const double sd = std::sqrt(mean * (1 - p[e]));
      EXPECT_NEAR(static_cast<double>(h[e]), mean, 5 * sd + 1) << what << " expert " << e;
    }
  };
  check(Top1Histogram({ExpertPopularity::kUniform, 0.0, seed}, T, E),
        std::vector<double>(E, 1.0 / E), "uniform");
  const double s = 1.2;
  std::vector<double> zipf(E);
  double sum = 0;
  for (std::size_t e = 0; e < E; ++e) sum += zipf[e] = std::pow(e + 1.0, -s);
  for (double& v : zipf) v /= sum;
  const std::vector<std::uint64_t> h = Top1Histogram({ExpertPopularity::kZipf, s, seed}, T, E);
  check(h, zipf, "zipf 1.2");
  // The imbalance the emulator will see: expert 0 holds p_0 = 0.3 of the tokens.
  StatusOr<RoutingStats> st = ComputeRoutingStats(h, E, 4);
  ASSERT_TRUE(st.ok());
  EXPECT_NEAR(st->expert_imbalance, zipf[0] * E, 0.2);
}

TEST(MoeStats, SyntheticLogitsAreDeterministic) {
  const std::size_t T = 64, E = 8;
  const SyntheticRouting cfg{ExpertPopularity::kZipf, 1.0, StatsSeed()};
  std::vector<float> a(T * E), b(T * E), c(T * E);
  ASSERT_TRUE(SyntheticRouterLogits(cfg, T, E, a).ok());
  ASSERT_TRUE(SyntheticRouterLogits(cfg, T, E, b).ok());
  EXPECT_EQ(a, b);
  SyntheticRouting other = cfg;
  other.seed += 1;
  ASSERT_TRUE(SyntheticRouterLogits(other, T, E, c).ok());
  EXPECT_NE(a, c);
  // Known bits for seed 0 (counter-based SplitMix64 + fixed logs: the same on
  // every platform), token 0 expert 0: -log(-log(u)).
  std::vector<float> z(1);
  ASSERT_TRUE(SyntheticRouterLogits({ExpertPopularity::kUniform, 0.0, 0}, 1, 1, z).ok());
  // SplitMix64(seed 0) first output 0xE220A8397B1DCDAF; u = (top 53 bits + .5) / 2^53.
  const double u = (static_cast<double>(0xE220A8397B1DCDAFull >> 11) + 0.5) * 0x1p-53;
  EXPECT_NEAR(z[0], -std::log(-std::log(u)), 1e-6);
  // Errors: nothing written.
  std::vector<float> small(T * E - 1, 3.0f);
  EXPECT_EQ(SyntheticRouterLogits(cfg, T, E, small).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(small, std::vector<float>(T * E - 1, 3.0f));
  EXPECT_EQ(SyntheticRouterLogits({ExpertPopularity::kZipf, -1.0, 0}, T, E, a).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(SyntheticRouterLogits(cfg, T, 0, a).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace trnmx
