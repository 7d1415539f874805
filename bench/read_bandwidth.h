// The benchmarks' single-thread read-bandwidth yardstick (issues 11 and
// 14's speed targets count bytes read against it): ReadSum reads a buffer
// once with the widest vector loads the machine has (Highway dynamic
// dispatch, so the same code runs on AVX-512, AVX2, SSE and NEON machines)
// as four equal parts side by side -- one thread's memory reads run
// fastest with a few sequential streams in flight (read_bandwidth.cc has
// the measurements; one stream gave 0.75 of it on a Zen 3) -- adding them
// up as 64-bit lanes, one accumulator per stream, so that only the loads
// bound it. Used by gemm_mx_bench and attention_bench (BM_ReadBandwidth),
// which first check it against ReadSumScalar.
//
// Example:
//   std::vector<std::uint8_t> buf(bytes);
//   for (auto _ : state) benchmark::DoNotOptimize(trnmx::bench::ReadSum(buf.data(), bytes));
#ifndef TRNMX_BENCH_READ_BANDWIDTH_H_
#define TRNMX_BENCH_READ_BANDWIDTH_H_

#include <cstddef>
#include <cstdint>

namespace trnmx::bench {

// The sum of p[0 .. bytes) read as 64-bit words (wrapping; a tail of fewer
// than 8 bytes added byte by byte): a value the compiler must compute. p is
// 8-byte aligned (as operator new and std::vector give).
std::uint64_t ReadSum(const std::uint8_t* p, std::size_t bytes);
// The same sum, one word at a time in order (the check of ReadSum).
std::uint64_t ReadSumScalar(const std::uint8_t* p, std::size_t bytes);

}  // namespace trnmx::bench

#endif  // TRNMX_BENCH_READ_BANDWIDTH_H_
