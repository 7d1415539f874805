// Exhaustive sweeps whose oracle is a decision table: the FP32 magnitude bit
// patterns [0, 0x7FFFFFFF] are cut into runs at the breakpoints where an
// oracle's answer can change (a format's values and rounding midpoints, the
// powers of two of a scale rule, ...), the oracle is asked once per run, and
// the code under test is called on every input of the run and compared with
// that one answer. Positive FP32 patterns increase with their value, so a run
// of values between two breakpoints is a run of consecutive patterns. The
// sweep is cut into chunks of patterns that two threads take in turn.
//
// Nothing here knows a format: the breakpoints come from the oracles.
#ifndef TRNMX_TESTS_FORMATS_SWEEP_RUNS_H_
#define TRNMX_TESTS_FORMATS_SWEEP_RUNS_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace trnmx::test {

inline constexpr std::uint32_t kPosInfBits = 0x7F800000u;
inline constexpr std::uint32_t kMaxFiniteBits = 0x7F7FFFFFu;
inline constexpr std::uint32_t kMaxNanBits = 0x7FFFFFFFu;

// FP32 magnitude patterns [first, last] over which an oracle's answer is constant.
struct BitRun {
  std::uint32_t first;
  std::uint32_t last;
};

// The smallest FP32 magnitude pattern whose value is >= p (p >= 0);
// kPosInfBits if p is above every finite FP32.
inline std::uint32_t FirstBitsAtOrAbove(double p) {
  float f = static_cast<float>(p);  // Nearest; may be below p.
  if (static_cast<double>(f) < p) f = std::nextafter(f, INFINITY);
  return std::bit_cast<std::uint32_t>(f);
}

// Cuts [0, 0x7FFFFFFF] into runs at the breakpoints (values >= 0; zero is
// always one): a breakpoint that is an FP32 value is a run of its own, the
// FP32 values strictly between two consecutive breakpoints are one run, +Inf
// is a run of its own and the NaN patterns are the last run.
inline std::vector<BitRun> SplitAtBreakpoints(std::vector<double> points) {
  points.push_back(0.0);
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  std::vector<BitRun> runs;
  std::uint64_t next = 0;  // First pattern not in a run yet.
  for (const double p : points) {
    EXPECT_GE(p, 0.0) << "breakpoints are magnitudes";
    const std::uint32_t at = FirstBitsAtOrAbove(p);
    if (at > kMaxFiniteBits) break;
    if (at > next) runs.push_back({static_cast<std::uint32_t>(next), at - 1});
    const bool exact = static_cast<double>(std::bit_cast<float>(at)) == p;
    if (exact) runs.push_back({at, at});
    next = exact ? std::uint64_t{at} + 1 : at;
  }
  if (next <= kMaxFiniteBits) runs.push_back({static_cast<std::uint32_t>(next), kMaxFiniteBits});
  runs.push_back({kPosInfBits, kPosInfBits});
  runs.push_back({kPosInfBits + 1, kMaxNanBits});
  return runs;
}

// Calls fn(run_index, first, last) on every piece of every run, where the
// pieces are the runs cut at chunk boundaries; two threads take the chunks
// in turn (fn must be thread-safe). Every pattern in [0, 0x7FFFFFFF] is in
// exactly one piece.
template <class Fn>
void ParallelOverRuns(const std::vector<BitRun>& runs, Fn&& fn) {
  constexpr std::uint64_t kChunk = std::uint64_t{1} << 22;
  constexpr std::uint64_t kEnd = std::uint64_t{1} << 31;
  std::atomic<std::uint64_t> next_chunk{0};
  const auto worker = [&] {
    for (;;) {
      const std::uint64_t lo = next_chunk.fetch_add(1) * kChunk;
      if (lo >= kEnd) return;
      const std::uint64_t hi = lo + kChunk - 1;
      auto it = std::lower_bound(runs.begin(), runs.end(), lo,
                                 [](const BitRun& r, std::uint64_t v) { return r.last < v; });
      for (; it != runs.end() && it->first <= hi; ++it) {
        fn(static_cast<std::size_t>(it - runs.begin()),
           static_cast<std::uint32_t>(std::max<std::uint64_t>(it->first, lo)),
           static_cast<std::uint32_t>(std::min<std::uint64_t>(it->last, hi)));
      }
    }
  };
  std::thread second(worker);
  worker();
  second.join();
}

// A sweep's inner loop calls the code under test once per input: it is the
// sweep's whole cost. The scalar codecs are written without branches on the
// data, so a compiler vectorises such a loop where the ISA has per-lane
// variable shifts: AVX2, not the x86-64 baseline the tests are built for.
// SweepLoop<Loop, Args...>() returns the loop Loop{}(args...) compiled with
// the code under test inlined into it (flatten), for AVX-512 or else AVX2
// when this CPU has them (about 10x and 4x faster), else for the baseline.
// Same C++, same answers.
template <class Loop, class... Args>
[[gnu::flatten]] std::uint64_t RunSweepLoop(Args... args) {
  return Loop{}(args...);
}
#if defined(__x86_64__) && defined(__GNUC__)
template <class Loop, class... Args>
[[gnu::flatten, gnu::target("avx2")]] std::uint64_t RunSweepLoopAvx2(Args... args) {
  return Loop{}(args...);
}
// AVX-512 (F, BW, VL, DQ: Skylake-SP and later) with 512-bit vectors, which
// GCC does not prefer by default: about 2.5x the AVX2 loop's rate. Clang has
// no prefer-vector-width in target attributes (it would drop the attribute).
#if defined(__clang__)
#define TRNMX_SWEEP_AVX512_TARGET "avx512f,avx512bw,avx512vl,avx512dq"
#else
#define TRNMX_SWEEP_AVX512_TARGET "avx512f,avx512bw,avx512vl,avx512dq,prefer-vector-width=512"
#endif
inline bool CpuHasSweepAvx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}
template <class Loop, class... Args>
[[gnu::flatten, gnu::target(TRNMX_SWEEP_AVX512_TARGET)]] std::uint64_t RunSweepLoopAvx512(
    Args... args) {
  return Loop{}(args...);
}
#endif

template <class Loop, class... Args>
auto SweepLoop() -> std::uint64_t (*)(Args...) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (CpuHasSweepAvx512()) return &RunSweepLoopAvx512<Loop, Args...>;
  if (__builtin_cpu_supports("avx2")) return &RunSweepLoopAvx2<Loop, Args...>;
#endif
  return &RunSweepLoop<Loop, Args...>;
}

// Mismatches found by any thread; the first ten become test failures.
class SweepMismatches {
 public:
  void Add(std::uint64_t n) { count_ += n; }
  // Reports one mismatch (count it with Add too).
  void Report(const std::string& what) {
    if (reported_.fetch_add(1) < 10) {
      const std::lock_guard<std::mutex> lock(mutex_);
      ADD_FAILURE() << what;
    }
  }
  std::uint64_t count() const { return count_.load(); }

 private:
  std::atomic<std::uint64_t> count_{0};
  std::atomic<int> reported_{0};
  std::mutex mutex_;
};

// Wall and process CPU time (all threads) since construction.
class SweepTimer {
 public:
  double wall_seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_).count();
  }
  double cpu_seconds() const { return static_cast<double>(std::clock() - cpu_) / CLOCKS_PER_SEC; }

 private:
  std::chrono::steady_clock::time_point wall_ = std::chrono::steady_clock::now();
  std::clock_t cpu_ = std::clock();
};

}  // namespace trnmx::test

#endif  // TRNMX_TESTS_FORMATS_SWEEP_RUNS_H_
