// Attention throughput next to its yardsticks in the same binary (issue 11's
// speed targets), one thread each:
//   prefill  BF16, B = 1, Hq = 32, Hkv = 8, D = 128, S = 4096, causal;
//            FLOP/s counts 4 Hq D S (S + 1) / 2 (the allowed QK^T and PV
//            multiply-adds, 2 FLOPs each); beside trnmx's BF16 GEMM (default
//            exact-FMA mode) at M = N = 4096, K = 128 (FLOP/s = 2 M N K).
//   decode   Sq = 1, Skv = 32768, Hq = 32, Hkv = 8, D = 128, batch 8, an
//            MXFP8 E4M3 KV cache (random codes and scales), default splits;
//            bytes/s counts the KV codes and scales read; beside the
//            project's single-thread read bandwidth (BM_ReadBandwidth,
//            bench/read_bandwidth.h, as in gemm_mx_bench) over a buffer of
//            the same size.
// Report medians of --benchmark_repetitions; the machine is shared.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "read_bandwidth.h"
#include "trnmx/attention.h"
#include "trnmx/formats/codec.h"
#include "trnmx/gemm.h"

namespace trnmx {
namespace {

constexpr std::size_t kHq = 32;
constexpr std::size_t kHkv = 8;
constexpr std::size_t kD = 128;

std::vector<Bf16> RandomBf16(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<Bf16> v(n);
  for (Bf16& x : v) x = Fp32ToBf16Rne(u(rng));
  return v;
}

void BM_AttentionPrefillBf16(benchmark::State& state) {
  const std::size_t s = 4096;
  const std::vector<Bf16> q = RandomBf16(s * kHq * kD, 1);
  const std::vector<Bf16> k = RandomBf16(s * kHkv * kD, 2);
  const std::vector<Bf16> v = RandomBf16(s * kHkv * kD, 3);
  std::vector<Bf16> o(s * kHq * kD);
  const auto qo = AttnOperand::Bshd(OperandType::kBf16, q.data(), 1, s, kHq, kD);
  const auto ko = AttnOperand::Bshd(OperandType::kBf16, k.data(), 1, s, kHkv, kD);
  const auto vo = AttnOperand::Bshd(OperandType::kBf16, v.data(), 1, s, kHkv, kD);
  const auto oo = AttnOutput::Bshd(OutputType::kBf16, o.data(), 1, s, kHq, kD);
  AttentionParams p;
  p.causal = true;
  for (auto _ : state) {
    const Status st = Attention(qo, ko, vo, oo, p);
    if (!st.ok()) state.SkipWithError(st.message().c_str());
    benchmark::DoNotOptimize(o.data());
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(4.0 * kHq * kD * static_cast<double>(s) * (s + 1) / 2,
                         benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_AttentionPrefillBf16)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

void BM_GemmBf16_4096x4096x128(benchmark::State& state) {
  const std::size_t m = 4096, n = 4096, k = 128;
  const std::vector<Bf16> a = RandomBf16(m * k, 4), b = RandomBf16(k * n, 5);
  std::vector<float> c(m * n);
  const auto A = GemmOperand::Bf16(a.data(), m, k, k);
  const auto B = GemmOperand::Bf16(b.data(), k, n, n);
  const auto C = GemmOutput::Fp32(c.data(), m, n, n);
  for (auto _ : state) benchmark::DoNotOptimize(Gemm(A, B, C).ok());
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_GemmBf16_4096x4096x128)->Unit(benchmark::kMillisecond)->UseRealTime();

// The decode KV cache: per (sequence, KV head) an MXFP8 E4M3 view of
// Skv x D, K blocked along d, V along s; finite random codes, scales near 1.
struct McCache {
  std::vector<std::uint8_t> codes, scales;
  std::vector<MxTensorView> k, v;
  std::size_t bytes = 0;
};

constexpr std::size_t kBatch = 8;
constexpr std::size_t kSkv = 32768;

const McCache& Cache() {
  static const McCache c = [] {
    McCache m;
    const std::size_t views = kBatch * kHkv;
    const std::size_t codes_per = kSkv * kD;
    const std::size_t scales_per = kSkv * kD / 32;
    m.codes.resize(2 * views * codes_per);
    m.scales.resize(2 * views * scales_per);
    std::mt19937_64 rng(6);
    for (std::uint8_t& x : m.codes) x = static_cast<std::uint8_t>(rng() % 0x7E);  // No NaN.
    for (std::uint8_t& x : m.scales) x = static_cast<std::uint8_t>(120 + rng() % 8);
    for (std::size_t i = 0; i < 2 * views; ++i) {
      const bool is_k = i < views;
      const std::uint8_t* codes = m.codes.data() + i * codes_per;
      const std::uint8_t* scales = m.scales.data() + i * scales_per;
      const MxShape shape{MxFormat::kMxfp8E4M3, kSkv, kD,
                          is_k ? BlockAxis::kRows : BlockAxis::kCols};
      const MxTensorView view = is_k ? MxTensorView{shape, codes, kD, scales, kD / 32}
                                     : MxTensorView{shape, codes, kSkv, scales, kSkv / 32};
      (is_k ? m.k : m.v).push_back(view);
    }
    m.bytes = m.codes.size() + m.scales.size();
    return m;
  }();
  return c;
}

void BM_AttentionDecodeMxfp8(benchmark::State& state) {
  const McCache& c = Cache();
  const std::vector<Bf16> q = RandomBf16(kBatch * kHq * kD, 7);
  std::vector<float> o(kBatch * kHq * kD);
  const auto qo = AttnOperand::Bshd(OperandType::kBf16, q.data(), kBatch, 1, kHq, kD);
  const auto ko = AttnOperand::Mx(c.k, kBatch, kSkv, kHkv, kD);
  const auto vo = AttnOperand::Mx(c.v, kBatch, kSkv, kHkv, kD);
  const auto oo = AttnOutput::Bshd(OutputType::kFp32, o.data(), kBatch, 1, kHq, kD);
  const AttentionParams p;
  for (auto _ : state) {
    const Status st = Attention(qo, ko, vo, oo, p);
    if (!st.ok()) state.SkipWithError(st.message().c_str());
    benchmark::DoNotOptimize(o.data());
  }
  state.counters["bytes/s"] = benchmark::Counter(static_cast<double>(c.bytes),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_AttentionDecodeMxfp8)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ReadBandwidth(benchmark::State& state) {
  const std::size_t bytes = Cache().bytes;
  std::vector<std::uint8_t> buf(bytes);
  for (std::size_t i = 0; i < bytes; ++i) buf[i] = static_cast<std::uint8_t>(i * 131);
  if (bench::ReadSum(buf.data(), bytes) != bench::ReadSumScalar(buf.data(), bytes)) {
    state.SkipWithError("ReadSum disagrees with ReadSumScalar");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(bench::ReadSum(buf.data(), bytes));
  state.counters["bytes/s"] =
      benchmark::Counter(static_cast<double>(bytes), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_ReadBandwidth)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace trnmx

BENCHMARK_MAIN();
