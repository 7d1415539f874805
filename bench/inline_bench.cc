// Throughput of the header-only xsimd layer (include/trnmx/inline/) beside
// the Highway bulk codecs (bulk.h) on the same arrays, one thread, inputs in
// cache (256 KiB of FP32, 64 Ki elements): the array encoders and decoders an
// application inlines, at the widest xsimd architecture this machine runs
// (bench/CMakeLists.txt, cmake/TrnmxInlineArchs.cmake), against the library's
// runtime-dispatched ones. Same bits (tests/inline); this shows the cost of
// choosing the inline layer.
//
//   Inline/*   trnmx::inline_simd::Encode / EncodeE2M1Packed / EncodeBf16 / Decode
//   Bulk/*     trnmx::BulkEncode / BulkEncodePackedFp4 / BulkDecode, SerialExecutor
//
// Counters: items/s = elements converted; bytes/s = bytes read + written.
// Inputs: normal(0, 100), seed 42. The xsimd architecture is in the context.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "trnmx/executor.h"
#include "trnmx/formats/bulk.h"
#include "trnmx/inline/all.h"

namespace trnmx {
namespace {

namespace tis = trnmx::inline_simd;
constexpr std::size_t kElems = (std::size_t{256} << 10) / sizeof(float);

const std::vector<float>& Inputs() {
  static const std::vector<float> x = [] {
    std::vector<float> v(kElems);
    std::mt19937_64 rng(42);
    std::normal_distribution<float> normal(0.0f, 100.0f);
    for (float& f : v) f = normal(rng);
    return v;
  }();
  return x;
}

// Times convert() over the kElems inputs; code_bytes: the bytes of codes
// read or written (kElems, 2 kElems or kElems / 2).
template <class Convert>
void Time(benchmark::State& state, std::size_t code_bytes, Convert convert) {
  for (auto _ : state) {
    convert();
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kElems));
  state.SetBytesProcessed(
      static_cast<std::int64_t>(state.iterations() * (kElems * sizeof(float) + code_bytes)));
}

template <class Traits>
void BM_Inline_Encode(benchmark::State& state) {
  const std::vector<float>& x = Inputs();
  std::vector<std::uint8_t> q(kElems);
  Time(state, kElems, [&] { tis::Encode<Traits>(x.data(), q.data(), kElems); });
}

void BM_Inline_EncodeE2M1Packed(benchmark::State& state) {
  const std::vector<float>& x = Inputs();
  std::vector<std::uint8_t> q(kElems / 2);
  Time(state, kElems / 2, [&] { tis::EncodeE2M1Packed(x.data(), q.data(), kElems); });
}

void BM_Inline_EncodeBf16(benchmark::State& state) {
  const std::vector<float>& x = Inputs();
  std::vector<std::uint16_t> q(kElems);
  Time(state, 2 * kElems, [&] { tis::EncodeBf16(x.data(), q.data(), kElems); });
}

template <class Traits>
void BM_Inline_Decode(benchmark::State& state) {
  std::vector<std::uint8_t> q(kElems);
  tis::Encode<Traits>(Inputs().data(), q.data(), kElems);
  std::vector<float> y(kElems);
  Time(state, kElems, [&] { tis::Decode<Traits>(q.data(), y.data(), kElems); });
}

// The bulk codecs' Status is checked once, outside the timed loop.
template <class Code>
void BM_Bulk_Encode(benchmark::State& state) {
  const std::vector<float>& x = Inputs();
  std::vector<Code> q(kElems);
  SerialExecutor serial;
  const auto encode = [&] {
    return BulkEncode(std::span<const float>(x), std::span<Code>(q), {}, &serial);
  };
  if (!encode().ok()) return state.SkipWithError("BulkEncode failed");
  Time(state, sizeof(Code) * kElems, [&] { benchmark::DoNotOptimize(encode()); });
}

void BM_Bulk_EncodeFp4Packed(benchmark::State& state) {
  const std::vector<float>& x = Inputs();
  std::vector<std::uint8_t> q(kElems / 2);
  SerialExecutor serial;
  const auto encode = [&] {
    return BulkEncodePackedFp4(std::span<const float>(x), std::span<std::uint8_t>(q), {}, &serial);
  };
  if (!encode().ok()) return state.SkipWithError("BulkEncodePackedFp4 failed");
  Time(state, kElems / 2, [&] { benchmark::DoNotOptimize(encode()); });
}

template <class Code>
void BM_Bulk_Decode(benchmark::State& state) {
  std::vector<Code> q(kElems);
  SerialExecutor serial;
  if (!BulkEncode(std::span<const float>(Inputs()), std::span<Code>(q), {}, &serial).ok()) {
    return state.SkipWithError("BulkEncode failed");
  }
  std::vector<float> y(kElems);
  const auto decode = [&] {
    return BulkDecode(std::span<const Code>(q), std::span<float>(y), &serial);
  };
  if (!decode().ok()) return state.SkipWithError("BulkDecode failed");
  Time(state, sizeof(Code) * kElems, [&] { benchmark::DoNotOptimize(decode()); });
}

BENCHMARK(BM_Inline_Encode<Fp8E4M3Traits>)->Name("Inline/EncodeE4M3");
BENCHMARK(BM_Bulk_Encode<Fp8E4M3>)->Name("Bulk/EncodeE4M3");
BENCHMARK(BM_Inline_Encode<Fp8E5M2Traits>)->Name("Inline/EncodeE5M2");
BENCHMARK(BM_Bulk_Encode<Fp8E5M2>)->Name("Bulk/EncodeE5M2");
BENCHMARK(BM_Inline_Encode<Fp4E2M1Traits>)->Name("Inline/EncodeE2M1");
BENCHMARK(BM_Bulk_Encode<Fp4E2M1>)->Name("Bulk/EncodeE2M1");
BENCHMARK(BM_Inline_EncodeE2M1Packed)->Name("Inline/EncodeE2M1Packed");
BENCHMARK(BM_Bulk_EncodeFp4Packed)->Name("Bulk/EncodeE2M1Packed");
BENCHMARK(BM_Inline_EncodeBf16)->Name("Inline/EncodeBf16");
BENCHMARK(BM_Bulk_Encode<Bf16>)->Name("Bulk/EncodeBf16");
BENCHMARK(BM_Inline_Decode<Fp8E4M3Traits>)->Name("Inline/DecodeE4M3");
BENCHMARK(BM_Bulk_Decode<Fp8E4M3>)->Name("Bulk/DecodeE4M3");

}  // namespace
}  // namespace trnmx

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("xsimd_arch", trnmx::inline_simd::Batch<float>::arch_type::name());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
