// Throughput of the SIMD bulk codecs (bulk.h) and MX line kernels
// (src/formats/mx_line.h) against the fastest plain copy of the same bytes.
//
//   (a) Copy/*        64 MiB: non-temporal streaming copy (the bandwidth
//                     ceiling, shared/reference/machine.md) and glibc memcpy.
//   (b) Dram/*        64 MiB of FP32 in, one thread: FP32 -> BF16 (BulkEncode
//                     with a SerialExecutor) and FP32 -> MXFP8 E4M3 / MXFP6
//                     E2M3 / MXFP4 through QuantizeMxLineSimd over the whole
//                     buffer as one
//                     line. Outputs >= 8 MiB use non-temporal stores.
//                     Dram/Bf16In_*: 64 MiB of BF16 in, through the public
//                     QuantizeMxInto on the calling thread.
//   (c) InCache/*     256 KiB of FP32 in (64 Ki elements), one thread.
//   Dram/InCache E4M3, Fp4Packed: element casts without MX scaling
//                     (BulkEncode), the casts numpy_ml_dtypes_bench.py times.
//   (d) InCache2T/*   two threads: one 256 KiB (or 512 KiB) line split in two
//                     halves through a ThreadPoolExecutor(2), and the same
//                     kernel on two independent 256 KiB buffers (->Threads(2)).
//
// Counters: bytes/s = bytes read + bytes written (copy: 2 x size), items/s =
// FP32 elements converted. Inputs: normal(0, 1) * 100, seed in the context.
// The load average is recorded in the context before the run and printed
// after it. bench/bulk_bench_ratios.py turns a JSON run into the ratios
// against the streaming copy.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include "formats/mx_line.h"
#include "formats/stream_copy.h"
#include "trnmx/executor.h"
#include "trnmx/formats/bulk.h"
#include "trnmx/formats/codec.h"
#include "trnmx/mx.h"

namespace trnmx {
namespace {

constexpr std::uint64_t kSeed = 42;
constexpr std::size_t kDramElems = (std::size_t{64} << 20) / sizeof(float);    // 64 MiB
constexpr std::size_t kCacheElems = (std::size_t{256} << 10) / sizeof(float);  // 256 KiB

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// 64-byte aligned, zero-filled (so every page is mapped before timing).
template <class T>
std::unique_ptr<T[], FreeDeleter> Alloc(std::size_t n) {
  const std::size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, bytes);
  if (p == nullptr) std::abort();
  std::memset(p, 0, bytes);
  return std::unique_ptr<T[], FreeDeleter>(static_cast<T*>(p));
}

std::unique_ptr<float[], FreeDeleter> Inputs(std::size_t n) {
  auto x = Alloc<float>(n);
  std::mt19937_64 rng(kSeed);
  std::normal_distribution<float> normal(0.0f, 100.0f);
  for (std::size_t i = 0; i < n; ++i) x[i] = normal(rng);
  return x;
}

void SetCounters(benchmark::State& state, std::size_t elems, std::size_t bytes_read,
                 std::size_t bytes_written) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * elems));
  state.SetBytesProcessed(
      static_cast<std::int64_t>(state.iterations() * (bytes_read + bytes_written)));
}

internal::MxLineParams Params(MxFormat format) {
  internal::MxLineParams p;
  p.format = format;
  return p;
}

// ---- (a) copies ----------------------------------------------------------

void BM_Copy_Stream(benchmark::State& state) {
  const std::size_t bytes = kDramElems * sizeof(float);
  auto src = Inputs(kDramElems);
  auto dst = Alloc<float>(kDramElems);
  for (auto _ : state) {
    internal::StreamCopy(dst.get(), src.get(), bytes);
    benchmark::ClobberMemory();
  }
  SetCounters(state, kDramElems, bytes, bytes);
}

void BM_Copy_Memcpy(benchmark::State& state) {
  const std::size_t bytes = kDramElems * sizeof(float);
  auto src = Inputs(kDramElems);
  auto dst = Alloc<float>(kDramElems);
  for (auto _ : state) {
    std::memcpy(dst.get(), src.get(), bytes);
    benchmark::ClobberMemory();
  }
  SetCounters(state, kDramElems, bytes, bytes);
}

// ---- (b) 64 MiB, one thread, (c) 256 KiB, one thread ----------------------

void EncodeBf16(benchmark::State& state, std::size_t n) {
  auto x = Inputs(n);
  auto out = Alloc<trnmx::Bf16>(n);
  SerialExecutor serial;
  for (auto _ : state) {
    Status s = BulkEncode(std::span<const float>(x.get(), n), std::span<trnmx::Bf16>(out.get(), n),
                          {}, &serial);
    benchmark::DoNotOptimize(s);
    benchmark::ClobberMemory();
  }
  SetCounters(state, n, n * sizeof(float), n * sizeof(trnmx::Bf16));
}

// Element streams without MX scaling: the same casts as numpy/ml_dtypes'
// astype (bench/numpy_ml_dtypes_bench.py), with trnmx's default policies.
void EncodeE4M3(benchmark::State& state, std::size_t n) {
  auto x = Inputs(n);
  auto out = Alloc<Fp8E4M3>(n);
  SerialExecutor serial;
  for (auto _ : state) {
    Status s = BulkEncode(std::span<const float>(x.get(), n), std::span<Fp8E4M3>(out.get(), n), {},
                          &serial);
    benchmark::DoNotOptimize(s);
    benchmark::ClobberMemory();
  }
  SetCounters(state, n, n * sizeof(float), n);
}

void EncodeFp4Packed(benchmark::State& state, std::size_t n) {
  auto x = Inputs(n);
  auto out = Alloc<std::uint8_t>((n + 1) / 2);
  SerialExecutor serial;
  for (auto _ : state) {
    Status s = BulkEncodePackedFp4(std::span<const float>(x.get(), n),
                                   std::span<std::uint8_t>(out.get(), (n + 1) / 2), {}, &serial);
    benchmark::DoNotOptimize(s);
    benchmark::ClobberMemory();
  }
  SetCounters(state, n, n * sizeof(float), (n + 1) / 2);
}

void MxLine(benchmark::State& state, MxFormat format, std::size_t n) {
  const MxFormatInfo& info = GetMxFormatInfo(format);
  const std::size_t blocks = (n + 31) / 32;
  auto x = Inputs(n);
  auto codes = Alloc<std::uint8_t>(blocks * info.block_bytes);
  auto scales = Alloc<std::uint8_t>(blocks);
  const internal::MxLineParams p = Params(format);
  for (auto _ : state) {
    const bool ok = internal::QuantizeMxLineSimd(p, x.get(), n, codes.get(), scales.get());
    benchmark::DoNotOptimize(ok);
    benchmark::ClobberMemory();
  }
  SetCounters(state, n, n * sizeof(float), blocks * (info.block_bytes + 1));
}

// BF16 input through the public QuantizeMxInto on the calling thread, one
// line of n elements (Dram: 64 MiB of BF16, twice the elements of the FP32
// rows; InCache: the FP32 rows' elements, 128 KiB).
void MxBf16In(benchmark::State& state, MxFormat format, std::size_t n) {
  auto x = Alloc<Bf16>(n);
  {
    auto f = Inputs(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = Fp32ToBf16Rne(f[i]);
  }
  StatusOr<MxTensor> t = MxTensor::Create({format, 1, n, BlockAxis::kRows});
  if (!t.ok()) {
    state.SkipWithError(t.status().message().c_str());
    return;
  }
  MxTensor& tensor = *t;
  MxTensorSpan dst = tensor.span();
  const Bf16MatrixView src{x.get(), 1, n, n};
  for (auto _ : state) {
    const Status s = QuantizeMxInto(src, dst);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
    benchmark::ClobberMemory();
  }
  SetCounters(state, n, n * sizeof(Bf16), tensor.codes().size() + tensor.scales().size());
}

void BM_Dram_Bf16(benchmark::State& state) { EncodeBf16(state, kDramElems); }
void BM_Dram_Bf16In_Mxfp8E4M3(benchmark::State& state) {
  MxBf16In(state, MxFormat::kMxfp8E4M3, kDramElems * 2);
}
void BM_Dram_Bf16In_Mxfp4(benchmark::State& state) {
  MxBf16In(state, MxFormat::kMxfp4, kDramElems * 2);
}
void BM_Dram_Bf16In_Mxfp6E2M3(benchmark::State& state) {
  MxBf16In(state, MxFormat::kMxfp6E2M3, kDramElems * 2);
}
void BM_InCache_Bf16In_Mxfp8E4M3(benchmark::State& state) {
  MxBf16In(state, MxFormat::kMxfp8E4M3, kCacheElems);
}
void BM_InCache_Bf16In_Mxfp4(benchmark::State& state) {
  MxBf16In(state, MxFormat::kMxfp4, kCacheElems);
}
void BM_Dram_Mxfp8E4M3(benchmark::State& state) { MxLine(state, MxFormat::kMxfp8E4M3, kDramElems); }
void BM_Dram_Mxfp6E2M3(benchmark::State& state) { MxLine(state, MxFormat::kMxfp6E2M3, kDramElems); }
void BM_Dram_Mxfp4(benchmark::State& state) { MxLine(state, MxFormat::kMxfp4, kDramElems); }
void BM_InCache_Bf16(benchmark::State& state) { EncodeBf16(state, kCacheElems); }
void BM_Dram_E4M3(benchmark::State& state) { EncodeE4M3(state, kDramElems); }
void BM_Dram_Fp4Packed(benchmark::State& state) { EncodeFp4Packed(state, kDramElems); }
void BM_InCache_E4M3(benchmark::State& state) { EncodeE4M3(state, kCacheElems); }
void BM_InCache_Fp4Packed(benchmark::State& state) { EncodeFp4Packed(state, kCacheElems); }
void BM_InCache_Mxfp8E4M3(benchmark::State& state) {
  MxLine(state, MxFormat::kMxfp8E4M3, kCacheElems);
}
void BM_InCache_Mxfp4(benchmark::State& state) { MxLine(state, MxFormat::kMxfp4, kCacheElems); }

// ---- (d) two threads in cache ---------------------------------------------

// One line of state.range(0) KiB of FP32 split in two halves on a pool of 2.
void BM_InCache2T_Mxfp8E4M3_Split(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0)) * 1024 / sizeof(float);
  const std::size_t half = n / 2;  // a multiple of 32
  auto x = Inputs(n);
  auto codes = Alloc<std::uint8_t>(n);
  auto scales = Alloc<std::uint8_t>(n / 32);
  const internal::MxLineParams p = Params(MxFormat::kMxfp8E4M3);
  ThreadPoolExecutor pool(2);
  for (auto _ : state) {
    pool.ParallelFor(2, [&](std::size_t t) {
      internal::QuantizeMxLineSimd(p, x.get() + t * half, half, codes.get() + t * half,
                                   scales.get() + t * half / 32);
    });
    benchmark::ClobberMemory();
  }
  SetCounters(state, n, n * sizeof(float), n + n / 32);
}

// Each benchmark thread quantizes its own 256 KiB line.
void BM_InCache2T_Mxfp8E4M3_Independent(benchmark::State& state) {
  MxLine(state, MxFormat::kMxfp8E4M3, kCacheElems);
}

BENCHMARK(BM_Copy_Stream)->UseRealTime();
BENCHMARK(BM_Copy_Memcpy)->UseRealTime();
BENCHMARK(BM_Dram_Bf16)->UseRealTime();
BENCHMARK(BM_Dram_Mxfp8E4M3)->UseRealTime();
BENCHMARK(BM_Dram_Mxfp6E2M3)->UseRealTime();
BENCHMARK(BM_Dram_Mxfp4)->UseRealTime();
BENCHMARK(BM_Dram_Bf16In_Mxfp8E4M3)->UseRealTime();
BENCHMARK(BM_Dram_Bf16In_Mxfp6E2M3)->UseRealTime();
BENCHMARK(BM_Dram_Bf16In_Mxfp4)->UseRealTime();
BENCHMARK(BM_InCache_Bf16)->UseRealTime();
BENCHMARK(BM_InCache_Mxfp8E4M3)->UseRealTime();
BENCHMARK(BM_InCache_Mxfp4)->UseRealTime();
BENCHMARK(BM_InCache_Bf16In_Mxfp8E4M3)->UseRealTime();
BENCHMARK(BM_InCache_Bf16In_Mxfp4)->UseRealTime();
BENCHMARK(BM_Dram_E4M3)->UseRealTime();
BENCHMARK(BM_Dram_Fp4Packed)->UseRealTime();
BENCHMARK(BM_InCache_E4M3)->UseRealTime();
BENCHMARK(BM_InCache_Fp4Packed)->UseRealTime();
BENCHMARK(BM_InCache2T_Mxfp8E4M3_Split)->Arg(256)->Arg(512)->UseRealTime();
BENCHMARK(BM_InCache2T_Mxfp8E4M3_Independent)->Threads(1)->Threads(2)->UseRealTime();

std::string LoadAverage() {
  std::ifstream f("/proc/loadavg");
  std::string line;
  std::getline(f, line);
  return line;
}

}  // namespace
}  // namespace trnmx

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("trnmx_input_seed", std::to_string(trnmx::kSeed));
  benchmark::AddCustomContext("loadavg_before", trnmx::LoadAverage());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::fprintf(stderr, "loadavg_after: %s\n", trnmx::LoadAverage().c_str());
  return 0;
}
