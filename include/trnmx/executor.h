// Parallel-for interface used by every multi-threaded trnmx entry point
// (bulk conversions, MX quantization, GEMM), and its two implementations.
//
// Contract of Executor::ParallelFor(num_tasks, body):
//   - calls body(i) exactly once for every i in [0, num_tasks), possibly
//     concurrently on up to NumThreads() threads and in any order;
//   - returns only after every call has returned;
//   - if calls throw, the first exception caught is rethrown to the caller
//     after all tasks have finished (the others are dropped).
// trnmx splits work so that each task writes its own outputs and never
// changes a summation order: results are bit-identical for every executor
// and thread count.
//
// The rule for every trnmx function that takes an `Executor* executor`
// (XNNPACK's rule for its threadpool argument): nullptr runs all the work on
// the calling thread, in the caller's order, and trnmx starts no thread of
// its own. Threads are always the caller's explicit choice:
//   - an application with its own thread pool implements Executor (two
//     virtual functions) and passes it to trnmx;
//   - SerialExecutor: runs the tasks in order on the calling thread (what
//     nullptr does);
//   - ThreadPoolExecutor: a pool of worker threads (pthreadpool, the pool
//     XNNPACK uses), owned by the object; the calling thread takes part;
//   - DefaultExecutor(): an opt-in ThreadPoolExecutor shared by the process,
//     created on first use with TRNMX_NUM_THREADS threads if that
//     environment variable is a positive integer, else one per hardware
//     thread. trnmx never uses it unless the caller passes it.
//
// Several application threads may call trnmx at once, each with its own
// executor, with none, or all with one shared executor: trnmx shares no
// mutable state between threads (its scratch buffers are per thread), and
// each thread gets the bits a call alone would give (calls must not write
// to each other's outputs). A shared
// ThreadPoolExecutor (DefaultExecutor() too) runs one ParallelFor at a time
// on its threads: a call from another thread waits until the pool is free.
// A call made inside a task of any ThreadPoolExecutor (nested parallelism,
// e.g. a task that calls Gemm with the same pool) never waits: while the
// pool is busy it runs its tasks on the calling thread. So sharing and
// nesting never deadlock. An application's own Executor that it passes from
// several threads at once must likewise accept concurrent ParallelFor calls.
//
//   trnmx::ThreadPoolExecutor pool(2);
//   std::vector<float> y(n);
//   pool.ParallelFor(n / 1024, [&](std::size_t t) { Work(t * 1024, &y); });
//   trnmx::Status s = trnmx::Gemm(a, b, c, {}, &trnmx::DefaultExecutor());
#ifndef TRNMX_EXECUTOR_H_
#define TRNMX_EXECUTOR_H_

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include "trnmx/export.h"

namespace trnmx {

// Non-owning reference to a callable `void(std::size_t)`; cheap to copy.
// The referenced callable must outlive the TaskRef (pass it a lambda in
// the ParallelFor call expression).
class TaskRef {
 public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, TaskRef> &&
             std::is_invocable_v<F&, std::size_t>)
  TaskRef(F&& f) noexcept  // NOLINT(google-explicit-constructor): used like std::function.
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, std::size_t i) {
          (*static_cast<std::remove_reference_t<F>*>(object))(i);
        }) {}

  void operator()(std::size_t i) const { call_(object_, i); }

 private:
  void* object_;
  void (*call_)(void*, std::size_t);
};

class TRNMX_API Executor {
 public:
  virtual ~Executor() = default;
  // Threads that may run tasks at once (>= 1), the calling thread included.
  virtual std::size_t NumThreads() const noexcept = 0;
  virtual void ParallelFor(std::size_t num_tasks, TaskRef body) = 0;
};

class TRNMX_API SerialExecutor final : public Executor {
 public:
  std::size_t NumThreads() const noexcept override { return 1; }
  void ParallelFor(std::size_t num_tasks, TaskRef body) override {
    for (std::size_t i = 0; i < num_tasks; ++i) body(i);
  }
};

class TRNMX_API ThreadPoolExecutor final : public Executor {
 public:
  // num_threads = 0: one per hardware thread (std::thread::hardware_concurrency).
  // Throws std::runtime_error if the threads cannot be created.
  explicit ThreadPoolExecutor(std::size_t num_threads = 0);
  ~ThreadPoolExecutor() override;
  ThreadPoolExecutor(const ThreadPoolExecutor&) = delete;
  ThreadPoolExecutor& operator=(const ThreadPoolExecutor&) = delete;

  std::size_t NumThreads() const noexcept override;
  // Thread-safe; calls from several threads take turns on the pool, and a
  // call from inside a task runs on its own thread while the pool is busy
  // (see the top of this file).
  void ParallelFor(std::size_t num_tasks, TaskRef body) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The opt-in process-wide pool described above; created on the first call,
// never by trnmx itself. Thread-safe to obtain and to use from several
// threads at once, like every ThreadPoolExecutor.
TRNMX_API Executor& DefaultExecutor();

}  // namespace trnmx

#endif  // TRNMX_EXECUTOR_H_
