#include "trnmx/executor.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "internal/tsan.h"
#include "trnmx/formats/bulk.h"
#include "trnmx/gemm.h"
#include "trnmx/mx.h"

namespace trnmx {
namespace {

void ExpectEachTaskOnce(Executor& executor, std::size_t num_tasks) {
  std::vector<std::atomic<int>> calls(num_tasks);
  executor.ParallelFor(num_tasks, [&](std::size_t i) { calls[i].fetch_add(1); });
  for (std::size_t i = 0; i < num_tasks; ++i) EXPECT_EQ(calls[i].load(), 1) << "task " << i;
}

TEST(SerialExecutor, RunsTasksInOrderOnCallingThread) {
  SerialExecutor serial;
  EXPECT_EQ(serial.NumThreads(), 1u);
  std::vector<std::size_t> order;
  const auto caller = std::this_thread::get_id();
  serial.ParallelFor(5, [&](std::size_t i) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    order.push_back(i);
  });
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2, 3, 4}));
}

TEST(ThreadPoolExecutor, EveryTaskRunsExactlyOnce) {
  for (const std::size_t threads : {1u, 2u, 3u, 8u}) {
    ThreadPoolExecutor pool(threads);
    EXPECT_EQ(pool.NumThreads(), threads);
    for (const std::size_t n : {0u, 1u, 2u, 7u, 1000u}) ExpectEachTaskOnce(pool, n);
  }
}

TEST(ThreadPoolExecutor, ZeroMeansHardwareThreads) {
  ThreadPoolExecutor pool(0);
  const unsigned hw = std::thread::hardware_concurrency();
  EXPECT_EQ(pool.NumThreads(), hw == 0 ? 1u : hw);
}

TEST(ThreadPoolExecutor, UsesMoreThanOneThread) {
  // Each task waits until two distinct threads have arrived, so the call can
  // only finish if the pool really runs tasks concurrently.
  ThreadPoolExecutor pool(2);
  std::mutex mutex;
  std::set<std::thread::id> seen;
  std::atomic<int> arrived{0};
  pool.ParallelFor(2, [&](std::size_t) {
    {
      const std::lock_guard<std::mutex> lock(mutex);
      seen.insert(std::this_thread::get_id());
    }
    arrived.fetch_add(1);
    while (arrived.load() < 2) std::this_thread::yield();
  });
  EXPECT_EQ(seen.size(), 2u);
}

TEST(ThreadPoolExecutor, RethrowsTheFirstExceptionAfterAllTasks) {
  ThreadPoolExecutor pool(2);
  std::atomic<int> done{0};
  EXPECT_THROW(pool.ParallelFor(100,
                                [&](std::size_t i) {
                                  done.fetch_add(1);
                                  if (i % 10 == 3) throw std::runtime_error("task failed");
                                }),
               std::runtime_error);
  EXPECT_EQ(done.load(), 100);
  ExpectEachTaskOnce(pool, 50);  // The pool is still usable.
}

TEST(DefaultExecutor, IsOneSharedPool) {
  Executor& a = DefaultExecutor();
  Executor& b = DefaultExecutor();
  EXPECT_EQ(&a, &b);
  EXPECT_GE(a.NumThreads(), 1u);
  ExpectEachTaskOnce(a, 333);
}

// A ParallelFor inside a task, on the same pool or (through another pool)
// back on the first, runs every task once. Before executor.h's nesting rule
// the inner call waited for the pool its own caller held: a deadlock. In a
// child process with an alarm, so that a regression fails in 20 s (SIGALRM)
// instead of hanging the suite.
TEST(ThreadPoolExecutor, NestedCallsRunEveryTaskInsteadOfWaiting) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        alarm(20);
        ThreadPoolExecutor a(2);
        ThreadPoolExecutor b(3);
        std::vector<std::atomic<int>> same(4 * 8);
        a.ParallelFor(4, [&](std::size_t i) {
          a.ParallelFor(8, [&](std::size_t j) { same[i * 8 + j].fetch_add(1); });
        });
        std::vector<std::atomic<int>> across(4 * 4 * 4);
        a.ParallelFor(4, [&](std::size_t i) {
          b.ParallelFor(4, [&](std::size_t j) {
            a.ParallelFor(4, [&](std::size_t k) { across[(i * 4 + j) * 4 + k].fetch_add(1); });
          });
        });
        for (const auto* calls : {&same, &across}) {
          for (const std::atomic<int>& c : *calls) {
            if (c.load() != 1) std::_Exit(2);
          }
        }
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "^$");
}

// Under ThreadSanitizer (tools/run.sh tsan), executor.cc's annotations of
// pthreadpool's own synchronisation must leave races between tasks visible:
// two tasks meet on two threads, then both write one int, which TSan must
// report (in a child process; TSan's default exit code after a report is 66).
// TSan's detection is not certain for one racy pair: it keeps four accesses
// per 8 bytes and evicts one when full, and two writes at the same instant
// can each check the shadow before the other stores it (one CI run saw no
// report for a single pair; with the 20 ms stagger alone, 1 of 300 runs under
// load here). So each int has a cache line of its own, task 1 writes 20 ms
// after task 0 (a sleep orders nothing), and the meeting is repeated on 8
// ints: a miss in all of them is what fails (0 of 300 runs under load).
#ifdef TRNMX_TSAN
[[noreturn]] void RaceBetweenTasksThenExit() {
  struct alignas(64) Line {
    int value = 0;
  };
  std::array<Line, 8> shared;
  {
    ThreadPoolExecutor pool(2);
    for (Line& line : shared) {
      alignas(64) std::atomic<int> arrived{0};
      pool.ParallelFor(2, [&](std::size_t i) {
        arrived.fetch_add(1);
        while (arrived.load() < 2) std::this_thread::yield();
        if (i == 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        line.value = static_cast<int>(i);  // Both tasks, unordered: the race.
      });
    }
  }
  // exit, not _Exit: without halt_on_error TSan sets the exit code at exit.
  std::exit(shared[0].value < 2 ? 0 : 1);
}
#endif

TEST(ThreadPoolExecutor, TsanSeesRacesBetweenTasks) {
#ifndef TRNMX_TSAN
  GTEST_SKIP() << "needs a ThreadSanitizer build (tools/run.sh tsan)";
#else
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(RaceBetweenTasksThenExit(), ::testing::ExitedWithCode(66),
              "ThreadSanitizer: data race");
#endif
}

// Threads of this process (Linux: one entry per thread in /proc/self/task);
// 0 when that cannot be read.
std::size_t ProcessThreads() {
  std::error_code error;
  std::size_t n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/task", error), end; !error && it != end;
       it.increment(error)) {
    ++n;
  }
  return error ? 0 : n;
}

std::vector<std::uint32_t> Bits(const std::vector<float>& v) {
  std::vector<std::uint32_t> out(v.size());
  if (!v.empty()) std::memcpy(out.data(), v.data(), v.size() * sizeof(float));
  return out;
}

// Sizes for RunEveryEntryPoint that split into many tasks: n bulk elements
// (32768 per chunk), dim x dim MX tensors and GEMMs (above the 1 MFLOP below
// which a GEMM runs on the calling thread: 2 * 96^3 = 1.8 MFLOP).
struct EntryPointSizes {
  std::size_t n;
  std::size_t dim;
};
constexpr EntryPointSizes kManyTasks{5 * 32768 + 7, 192};
constexpr EntryPointSizes kSomeTasks{2 * 32768 + 7, 96};

// Every entry point that takes an Executor*, once with `executor`. Returns
// the outputs.
std::vector<std::vector<std::uint32_t>> RunEveryEntryPoint(Executor* executor,
                                                           EntryPointSizes sizes = kManyTasks) {
  const std::size_t n = sizes.n;
  const std::size_t dim = sizes.dim;
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = std::sin(0.001f * static_cast<float>(i)) * 300.0f;
  std::vector<std::vector<std::uint32_t>> out;

  std::vector<Fp8E4M3> fp8(n);
  if (!BulkEncode(x, fp8, {}, executor).ok()) return {};
  std::vector<float> back(n);
  if (!BulkDecode(std::span<const Fp8E4M3>(fp8), back, executor).ok()) return {};
  out.push_back(Bits(back));

  const Fp32MatrixView src{x.data(), dim, dim, dim};
  StatusOr<MxTensor> a = QuantizeMx(src, MxFormat::kMxfp4, {}, executor);
  if (!a.ok()) return {};
  std::vector<float> a_back(dim * dim);
  if (!DequantizeMx(a->view(), {a_back.data(), dim, dim, dim}, executor).ok()) return {};
  out.push_back(Bits(a_back));

  MxQuantizeOptions cols;
  cols.axis = BlockAxis::kCols;
  StatusOr<MxTensor> b = QuantizeMx(src, MxFormat::kMxfp4, cols, executor);
  if (!b.ok()) return {};
  StatusOr<PackedWeights> w = PackedWeights::Pack(GemmOperand::Mx(b->view()), executor);
  if (!w.ok()) return {};
  std::vector<float> c(dim * dim), c_packed(dim * dim);
  const GemmOperand fa = GemmOperand::Fp32(x.data(), dim, dim, dim);
  if (!Gemm(fa, GemmOperand::Mx(b->view()), GemmOutput::Fp32(c.data(), dim, dim, dim), {}, executor)
           .ok()) {
    return {};
  }
  if (!Gemm(fa, *w, GemmOutput::Fp32(c_packed.data(), dim, dim, dim), {}, executor).ok()) return {};
  out.push_back(Bits(c));
  out.push_back(Bits(c_packed));
  if (!Gemm(GemmOperand::Mx(a->view()), GemmOperand::Mx(b->view()),
            GemmOutput::Fp32(c.data(), dim, dim, dim), {}, executor)
           .ok()) {
    return {};
  }
  out.push_back(Bits(c));
  return out;
}

// executor.h: nullptr runs on the calling thread and trnmx starts no thread.
// Checked in a fresh process (a "threadsafe" death test re-executes this
// binary), which has exactly one thread until something creates a pool: after
// every entry point ran with nullptr it must still have one. Then a 3-thread
// pool must show as 3 threads (the count works) and the same calls through it
// must give the same bits.
TEST(NullExecutor, RunsOnTheCallingThreadAndStartsNoThread) {
  if (ProcessThreads() == 0) GTEST_SKIP() << "/proc/self/task is not readable here";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const std::size_t before = ProcessThreads();
        const std::vector<std::vector<std::uint32_t>> inline_bits = RunEveryEntryPoint(nullptr);
        const std::size_t after = ProcessThreads();
        if (inline_bits.empty()) {
          std::fprintf(stderr, "an entry point failed with a nullptr executor\n");
          std::_Exit(2);
        }
        if (before != 1 || after != 1) {
          std::fprintf(stderr, "threads before %zu, after %zu (want 1 and 1)\n", before, after);
          std::_Exit(3);
        }
        ThreadPoolExecutor pool(3);
        if (ProcessThreads() < 3) {  // The count must see a pool's threads.
          std::fprintf(stderr, "a 3-thread pool shows as %zu threads\n", ProcessThreads());
          std::_Exit(5);
        }
        if (RunEveryEntryPoint(&pool) != inline_bits) {
          std::fprintf(stderr, "a 3-thread pool gave other bits than nullptr\n");
          std::_Exit(4);
        }
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "^$");
}

// Runs RunEveryEntryPoint (kSomeTasks) on one application thread per entry
// of `executors`, all at once; returns each thread's outputs.
std::vector<std::vector<std::vector<std::uint32_t>>> RunOnAppThreads(
    const std::vector<Executor*>& executors) {
  std::vector<std::vector<std::vector<std::uint32_t>>> bits(executors.size());
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < executors.size(); ++t) {
    threads.emplace_back([&, t] { bits[t] = RunEveryEntryPoint(executors[t], kSomeTasks); });
  }
  for (std::thread& thread : threads) thread.join();
  return bits;
}

// executor.h: several application threads may call trnmx at once and get
// the bits of a single-threaded call. Four threads share one pool (their
// calls take turns on its threads)...
TEST(ConcurrentCallers, SharedPoolGivesSingleThreadedBits) {
  const std::vector<std::vector<std::uint32_t>> want = RunEveryEntryPoint(nullptr, kSomeTasks);
  ASSERT_FALSE(want.empty());
  ThreadPoolExecutor pool(2);
  const auto got = RunOnAppThreads({&pool, &pool, &pool, &pool});
  for (std::size_t t = 0; t < got.size(); ++t) EXPECT_EQ(got[t], want) << "thread " << t;
}

// ... or each has its own executor or none.
TEST(ConcurrentCallers, OwnPoolsOrNoneGiveSingleThreadedBits) {
  const std::vector<std::vector<std::uint32_t>> want = RunEveryEntryPoint(nullptr, kSomeTasks);
  ASSERT_FALSE(want.empty());
  ThreadPoolExecutor two(2);
  ThreadPoolExecutor three(3);
  SerialExecutor serial;
  const auto got = RunOnAppThreads({&two, &three, &serial, nullptr});
  for (std::size_t t = 0; t < got.size(); ++t) EXPECT_EQ(got[t], want) << "thread " << t;
}

}  // namespace
}  // namespace trnmx
