#include "trnmx/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

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

}  // namespace
}  // namespace trnmx
