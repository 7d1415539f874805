// MoE router, dispatch and combine throughput (issue 12's speed target:
// the router for T = 8192, E = 128, k = 4 in < 1 ms on one core), and the
// grouped expert GEMM at gpt-oss-120b's shape next to trnmx's dense GEMM of
// the same FLOPs and formats (target: within 10 % of the dense rate).
//
// Logits: SyntheticRouterLogits, Zipf(1.2) popularity, seed printed in the
// context. One thread (executor nullptr). Counters: items/s = logits routed
// (router) or token rows moved (permute, combine).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "trnmx/formats/codec.h"
#include "trnmx/gemm.h"
#include "trnmx/moe.h"
#include "trnmx/mx.h"

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

// Grouped expert GEMM vs one dense GEMM of the same FLOPs and formats:
// MXFP4 weights (K = H x N = I, blocked along K), BF16 activations, BF16
// output, one thread. Uniform routing with exactly T * k / E rows per expert
// (the balanced ideal, so the ratio measures the grouping, not the load).
// Weights are random FP4 codes with scales 2^-3..2^0 (no quantization at
// setup: 128 experts of 2880 x 2880 are 0.53 GB of codes). Args: T, E, k,
// H, I; counters: FLOP/s (2 x T k x H x I per call).
struct ExpertShape {
  std::size_t tokens, experts, top_k, hidden, inter;
  std::size_t rows() const { return tokens * top_k; }
  double flops() const { return 2.0 * double(rows()) * double(hidden) * double(inter); }
};

ExpertShape ShapeOf(const benchmark::State& state) {
  return {static_cast<std::size_t>(state.range(0)), static_cast<std::size_t>(state.range(1)),
          static_cast<std::size_t>(state.range(2)), static_cast<std::size_t>(state.range(3)),
          static_cast<std::size_t>(state.range(4))};
}

MxTensor RandomMxfp4Weight(std::size_t k, std::size_t n, std::mt19937_64& rng) {
  StatusOr<MxTensor> t = MxTensor::Create({MxFormat::kMxfp4, k, n, BlockAxis::kCols});
  if (!t.ok()) return {};
  MxTensor m = std::move(*t);
  for (std::uint8_t& c : m.codes()) c = static_cast<std::uint8_t>(rng());
  for (std::uint8_t& s : m.scales()) s = static_cast<std::uint8_t>(124 + rng() % 4);
  return m;
}

std::vector<Bf16> RandomBf16(std::size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<Bf16> v(n);
  for (Bf16& x : v) x = Fp32ToBf16Rne(d(rng));
  return v;
}

void BM_GroupedExpertGemm(benchmark::State& state) {
  const ExpertShape sh = ShapeOf(state);
  std::mt19937_64 rng(kSeed);
  std::vector<MxTensor> w;
  std::vector<GemmOperand> ops;
  for (std::size_t e = 0; e < sh.experts; ++e) {
    w.push_back(RandomMxfp4Weight(sh.hidden, sh.inter, rng));
    ops.push_back(GemmOperand::Mx(w.back().view()));
  }
  std::vector<std::size_t> offsets(sh.experts + 1);
  for (std::size_t e = 0; e <= sh.experts; ++e) offsets[e] = e * sh.rows() / sh.experts;
  const std::vector<Bf16> x = RandomBf16(sh.rows() * sh.hidden, rng);
  std::vector<Bf16> y(sh.rows() * sh.inter);
  for (auto _ : state) {
    const Status s =
        GroupedExpertGemm(GemmOperand::Bf16(x.data(), sh.rows(), sh.hidden, sh.hidden), offsets,
                          ops, GemmOutput::Bf16(y.data(), sh.rows(), sh.inter, sh.inter));
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(sh.flops() * double(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["seed"] = static_cast<double>(kSeed);
}

// The same FLOPs as one GEMM: (T k) x H times one MXFP4 H x I weight.
void BM_DenseGemmSameFlops(benchmark::State& state) {
  const ExpertShape sh = ShapeOf(state);
  std::mt19937_64 rng(kSeed);
  const MxTensor w = RandomMxfp4Weight(sh.hidden, sh.inter, rng);
  const std::vector<Bf16> x = RandomBf16(sh.rows() * sh.hidden, rng);
  std::vector<Bf16> y(sh.rows() * sh.inter);
  for (auto _ : state) {
    const Status s =
        Gemm(GemmOperand::Bf16(x.data(), sh.rows(), sh.hidden, sh.hidden),
             GemmOperand::Mx(w.view()), GemmOutput::Bf16(y.data(), sh.rows(), sh.inter, sh.inter));
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(sh.flops() * double(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["seed"] = static_cast<double>(kSeed);
}

// gpt-oss-120b: T = 8192, E = 128, k = 4, H = I = 2880 (543 GFLOP per
// call); and a 1/8 shape (T = 1024, 32 rows per expert) for quick runs.
#define TRNMX_EXPERT_SHAPES(b)           \
  b->Args({8192, 128, 4, 2880, 2880})    \
      ->Args({1024, 128, 4, 2880, 2880}) \
      ->Unit(benchmark::kMillisecond)
TRNMX_EXPERT_SHAPES(BENCHMARK(BM_GroupedExpertGemm));
TRNMX_EXPERT_SHAPES(BENCHMARK(BM_DenseGemmSameFlops));

}  // namespace
}  // namespace trnmx

BENCHMARK_MAIN();
