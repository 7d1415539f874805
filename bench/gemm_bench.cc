// GEMM throughput (Google Benchmark; counter FLOP/s = 2*M*N*K per second).
// Square FP32 and BF16 (exact and native modes) and LLM-like shapes, one
// thread unless the name says otherwise. The peer comparison (OpenBLAS,
// oneDNN) is the separate gemm_compare binary.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "trnmx/executor.h"
#include "trnmx/formats/codec.h"
#include "trnmx/gemm.h"

namespace trnmx {
namespace {

void SetFlops(benchmark::State& state, std::size_t m, std::size_t n, std::size_t k) {
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(m * n * k),
                                                benchmark::Counter::kIsIterationInvariantRate);
}

std::vector<float> Random(std::size_t n) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

std::vector<Bf16> ToBf16(const std::vector<float>& v) {
  std::vector<Bf16> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = Fp32ToBf16Rne(v[i]);
  return out;
}

// Args: M, N, K, threads, packed B (0/1).
void BM_GemmFp32(benchmark::State& state) {
  const auto m = static_cast<std::size_t>(state.range(0));
  const auto n = static_cast<std::size_t>(state.range(1));
  const auto k = static_cast<std::size_t>(state.range(2));
  ThreadPoolExecutor pool(static_cast<std::size_t>(state.range(3)));
  const std::vector<float> a = Random(m * k), b = Random(k * n);
  std::vector<float> c(m * n);
  const auto A = GemmOperand::Fp32(a.data(), m, k, k);
  const auto B = GemmOperand::Fp32(b.data(), k, n, n);
  const auto C = GemmOutput::Fp32(c.data(), m, n, n);
  if (state.range(4) != 0) {
    StatusOr<PackedWeights> w = PackedWeights::Pack(B, &pool);
    for (auto _ : state) benchmark::DoNotOptimize(Gemm(A, *w, C, {}, &pool).ok());
  } else {
    for (auto _ : state) benchmark::DoNotOptimize(Gemm(A, B, C, {}, &pool).ok());
  }
  SetFlops(state, m, n, k);
}

// Args: M, N, K, threads, mode (0 exact, 1 native with packed B).
void BM_GemmBf16(benchmark::State& state) {
  const auto m = static_cast<std::size_t>(state.range(0));
  const auto n = static_cast<std::size_t>(state.range(1));
  const auto k = static_cast<std::size_t>(state.range(2));
  ThreadPoolExecutor pool(static_cast<std::size_t>(state.range(3)));
  const std::vector<Bf16> a = ToBf16(Random(m * k)), b = ToBf16(Random(k * n));
  std::vector<float> c(m * n);
  const auto A = GemmOperand::Bf16(a.data(), m, k, k);
  const auto B = GemmOperand::Bf16(b.data(), k, n, n);
  const auto C = GemmOutput::Fp32(c.data(), m, n, n);
  GemmParams p;
  if (state.range(4) != 0) {
    p.bf16_mode = Bf16Mode::kNativeDot;
    StatusOr<PackedWeights> w = PackedWeights::Pack(B, &pool);
    if (!Gemm(A, *w, C, p, &pool).ok()) {
      state.SkipWithError("Bf16Mode::kNativeDot unavailable on this CPU");
      return;
    }
    for (auto _ : state) benchmark::DoNotOptimize(Gemm(A, *w, C, p, &pool).ok());
  } else {
    for (auto _ : state) benchmark::DoNotOptimize(Gemm(A, B, C, p, &pool).ok());
  }
  SetFlops(state, m, n, k);
}

BENCHMARK(BM_GemmFp32)
    ->ArgNames({"M", "N", "K", "threads", "packed"})
    ->Args({256, 256, 256, 1, 0})
    ->Args({512, 512, 512, 1, 0})
    ->Args({1024, 1024, 1024, 1, 0})
    ->Args({1024, 1024, 1024, 2, 0})
    ->Args({1, 4096, 4096, 1, 1})
    ->Args({8, 4096, 4096, 1, 1})
    ->Args({128, 4096, 4096, 1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_GemmBf16)
    ->ArgNames({"M", "N", "K", "threads", "native"})
    ->Args({512, 512, 512, 1, 0})
    ->Args({512, 512, 512, 1, 1})
    ->Args({1024, 1024, 1024, 1, 0})
    ->Args({1024, 1024, 1024, 1, 1})
    ->Args({8, 4096, 4096, 1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace trnmx

BENCHMARK_MAIN();
