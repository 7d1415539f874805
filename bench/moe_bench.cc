// MoE router, dispatch and combine throughput (issue 12's speed target:
// the router for T = 8192, E = 128, k = 4 in < 1 ms on one core).
//
// Logits: SyntheticRouterLogits, Zipf(1.2) popularity, seed printed in the
// context. One thread (executor nullptr). Counters: items/s = logits routed
// (router) or token rows moved (permute, combine).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "trnmx/moe.h"

namespace trnmx {
namespace {

constexpr std::uint64_t kSeed = 42;
constexpr std::size_t kTokens = 8192;
constexpr std::size_t kExperts = 128;

std::vector<float> Logits(std::size_t tokens, std::size_t experts) {
  std::vector<float> v(tokens * experts);
  if (!SyntheticRouterLogits({ExpertPopularity::kZipf, 1.2, kSeed}, tokens, experts, v).ok()) {
    v.clear();
  }
  return v;
}

// Router presets: 0 gpt-oss (top-4, softmax over the 4), 1 softmax then
// top-4 renormalised (Mixtral's order), 2 DeepSeek-V3 (sigmoid, groups,
// bias, top-8, shared expert).
void BM_Route(benchmark::State& state) {
  const std::vector<float> logits = Logits(kTokens, kExperts);
  const std::vector<float> bias(kExperts, 0.0f);
  RouterParams p = state.range(0) == 0   ? GptOssRouterParams()
                   : state.range(0) == 1 ? MixtralRouterParams()
                                         : DeepSeekV3RouterParams(bias);
  if (state.range(0) == 1) p.top_k = 4;
  const std::size_t slots = p.top_k + p.num_shared_experts;
  std::vector<std::int32_t> ids(kTokens * slots);
  std::vector<float> w(kTokens * slots);
  for (auto _ : state) {
    StatusOr<RouterResult> r =
        Route(Fp32MatrixView{logits.data(), kTokens, kExperts, kExperts}, p, ids, w);
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kTokens * kExperts));
  state.SetLabel(state.range(0) == 0   ? "gpt-oss"
                 : state.range(0) == 1 ? "softmax-top4"
                                       : "deepseek-v3");
  state.counters["seed"] = static_cast<double>(kSeed);
}
BENCHMARK(BM_Route)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

// Permute and combine H = 2880 (gpt-oss) rows after top-4 routing.
void BM_PermuteCombine(benchmark::State& state) {
  constexpr std::size_t kTok = 1024;
  constexpr std::size_t kH = 2880;
  const std::vector<float> logits = Logits(kTok, kExperts);
  const RouterParams p = GptOssRouterParams();
  std::vector<std::int32_t> ids(kTok * 4);
  std::vector<float> w(kTok * 4);
  if (!Route(Fp32MatrixView{logits.data(), kTok, kExperts, kExperts}, p, ids, w).ok()) {
    state.SkipWithError("route");
    return;
  }
  StatusOr<DispatchPlan> plan = PlanDispatch(ids, kTok, 4, kExperts);
  if (!plan.ok()) {
    state.SkipWithError("plan");
    return;
  }
  std::vector<float> x(kTok * kH, 1.0f), permuted(plan->rows * kH), y(kTok * kH);
  for (auto _ : state) {
    Status s = PermuteTokens(*plan, Fp32MatrixView{x.data(), kTok, kH, kH},
                             Fp32MatrixSpan{permuted.data(), plan->rows, kH, kH});
    if (s.ok()) {
      s = CombineTokens(*plan, w, Fp32MatrixView{permuted.data(), plan->rows, kH, kH},
                        Fp32MatrixSpan{y.data(), kTok, kH, kH});
    }
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * plan->rows * 2));
}
BENCHMARK(BM_PermuteCombine)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace trnmx

BENCHMARK_MAIN();
