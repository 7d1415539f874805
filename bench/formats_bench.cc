// Throughput of the scalar codecs (the baseline for the SIMD codecs).
//
// Each benchmark converts an in-cache array of 64 Ki values, one at a time,
// through the header-only scalar functions (compile-time format) or the
// runtime registry (EncodeScalars). Inputs: normal(0, 1) scaled so that the
// format's range is exercised (about 1% of values saturate), seed printed in
// the context. Counters: items/s (elements converted) and bytes/s (input +
// output bytes).
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "trnmx/formats.h"

namespace trnmx {
namespace {

constexpr std::size_t kN = 1 << 16;
constexpr std::uint64_t kSeed = 42;

std::vector<float> Inputs(double max_normal) {
  std::mt19937_64 rng(kSeed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(kN);
  // 2.6 sigma lands at MAX: about 1% of samples overflow.
  const float scale = static_cast<float>(max_normal / 2.6);
  for (float& v : x) v = normal(rng) * scale;
  return x;
}

void SetCounters(benchmark::State& state, std::size_t in_bytes, std::size_t out_bytes) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kN));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kN * (in_bytes + out_bytes)));
}

template <class Code>
void BM_Encode(benchmark::State& state) {
  const std::vector<float> x = Inputs(Code::Traits::kMaxNormal);
  std::vector<Code> out(kN);
  for (auto _ : state) {
    for (std::size_t i = 0; i < kN; ++i) out[i] = Encode<Code>(x[i]);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  SetCounters(state, sizeof(float), sizeof(Code));
}

template <class Code>
void BM_EncodeStochastic(benchmark::State& state) {
  const std::vector<float> x = Inputs(Code::Traits::kMaxNormal);
  std::vector<std::uint32_t> r(kN);
  std::mt19937 rng(kSeed);
  for (auto& v : r) v = rng();
  std::vector<Code> out(kN);
  const EncodeOptions o{.rounding = Rounding::kStochastic};
  for (auto _ : state) {
    for (std::size_t i = 0; i < kN; ++i) out[i] = Encode<Code>(x[i], o, r[i]);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  SetCounters(state, sizeof(float) + sizeof(std::uint32_t), sizeof(Code));
}

template <class Code>
void BM_Decode(benchmark::State& state) {
  std::vector<Code> codes(kN);
  std::mt19937 rng(kSeed);
  for (auto& c : codes) c = Code::FromBits(rng());
  std::vector<float> out(kN);
  for (auto _ : state) {
    for (std::size_t i = 0; i < kN; ++i) out[i] = Decode(codes[i]);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  SetCounters(state, sizeof(Code), sizeof(float));
}

void BM_EncodeBf16FastFormula(benchmark::State& state) {
  const std::vector<float> x = Inputs(1e30);
  std::vector<Bf16> out(kN);
  for (auto _ : state) {
    for (std::size_t i = 0; i < kN; ++i) out[i] = Fp32ToBf16Rne(x[i]);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  SetCounters(state, sizeof(float), sizeof(Bf16));
}

void BM_EncodeMxInt8(benchmark::State& state) {
  const std::vector<float> x = Inputs(2.0);
  std::vector<MxInt8> out(kN);
  for (auto _ : state) {
    for (std::size_t i = 0; i < kN; ++i) out[i] = EncodeMxInt8(x[i]);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  SetCounters(state, sizeof(float), 1);
}

void BM_EncodeE8M0(benchmark::State& state) {
  std::vector<float> x = Inputs(1e30);
  for (float& v : x) v = std::fabs(v);
  std::vector<std::uint8_t> out(kN);
  for (auto _ : state) {
    for (std::size_t i = 0; i < kN; ++i) {
      out[i] = static_cast<std::uint8_t>(
          ToE8M0(x[i], E8M0Rounding::kNearestTiesUp, E8M0Saturation::kSaturate).code);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  SetCounters(state, sizeof(float), 1);
}

// The runtime-dispatched batch path used by the CLI.
void BM_EncodeScalarsRuntime(benchmark::State& state) {
  const auto format = static_cast<Format>(state.range(0));
  const std::vector<float> x = Inputs(GetFormatInfo(format).max_normal);
  std::vector<std::uint32_t> out(kN);
  ConvertOptions o;
  o.e8m0_rounding = E8M0Rounding::kDown;
  for (auto _ : state) {
    Status s = EncodeScalars(format, x, out, o);
    benchmark::DoNotOptimize(s);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(std::string(GetFormatInfo(format).name));
  SetCounters(state, sizeof(float), sizeof(std::uint32_t));
}

// Every float format of format_list.h, encode and decode.
#define TRNMX_X(Name, ...) \
  BENCHMARK(BM_Encode<Name>);   \
  BENCHMARK(BM_Decode<Name>);
TRNMX_FOREACH_FLOAT_FORMAT(TRNMX_X)
#undef TRNMX_X
BENCHMARK(BM_EncodeBf16FastFormula);
BENCHMARK(BM_EncodeMxInt8);
BENCHMARK(BM_EncodeE8M0);
BENCHMARK(BM_EncodeStochastic<Fp8E4M3>);
BENCHMARK(BM_EncodeStochastic<Fp4E2M1>);
BENCHMARK(BM_EncodeScalarsRuntime)
    ->Arg(static_cast<int>(Format::kFp8E4M3))
    ->Arg(static_cast<int>(Format::kFp4E2M1))
    ->Arg(static_cast<int>(Format::kBf16));

}  // namespace
}  // namespace trnmx

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("trnmx_input_seed", std::to_string(trnmx::kSeed));
  benchmark::AddCustomContext("trnmx_elements_per_iteration", std::to_string(trnmx::kN));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
