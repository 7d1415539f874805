// ThreadPoolExecutor on pthreadpool (Debian's libpthreadpool-dev).
#include "trnmx/executor.h"

#include <pthreadpool.h>

#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "internal/tsan.h"

namespace trnmx {
namespace {

// pthreadpool_parallelize_1d starts its tasks after the call begins and
// returns after they all end, through futexes and atomics inside
// libpthreadpool, which ThreadSanitizer does not instrument: HandOver and
// TakeOver (internal/tsan.h) describe exactly those two edges to it; without
// them TSan reports every hand-over of inputs to a task and of outputs back
// as a race. Races between tasks, and with other threads, stay visible
// (ThreadPoolExecutor.TsanSeesRacesBetweenTasks): the tasks take over only
// the start edge and hand over only the end edge, so these never order one
// task after another.
using internal::HandOver;
using internal::TakeOver;

// True while this thread runs a task of a ThreadPoolExecutor (a pool worker,
// or a caller taking part in its own call). Such a thread never waits for a
// busy pool: the pool may be busy with the very call this task belongs to.
thread_local bool in_pool_task = false;

// What one ParallelFor call hands to pthreadpool's C callback. Exceptions must
// not cross pthreadpool's C frames: the first one is kept and rethrown later.
struct CallState {
  explicit CallState(TaskRef task) : body(task) {}
  TaskRef body;
  std::mutex mutex;
  std::exception_ptr error;
  // Their addresses name the call's two edges for HandOver and TakeOver.
  char start_edge = 0;
  char end_edge = 0;
};

void RunTask(void* context, std::size_t i) {
  auto* state = static_cast<CallState*>(context);
  TakeOver(&state->start_edge);
  const bool outer = in_pool_task;
  in_pool_task = true;
  try {
    state->body(i);
  } catch (...) {
    const std::lock_guard<std::mutex> lock(state->mutex);
    if (!state->error) state->error = std::current_exception();
  }
  in_pool_task = outer;
  HandOver(&state->end_edge);
}

void RunOnCallingThread(std::size_t num_tasks, TaskRef body) {
  for (std::size_t i = 0; i < num_tasks; ++i) body(i);
}

std::size_t HardwareThreads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

}  // namespace

struct ThreadPoolExecutor::Impl {
  pthreadpool_t pool = nullptr;
  std::size_t num_threads = 1;
  // One call at a time owns the pool's threads (`busy`); others wait on
  // `idle` (callers outside any pool task) or run on their own thread.
  std::mutex mutex;
  std::condition_variable idle;
  bool busy = false;

  // Takes the pool: waits until it is free if `wait`, else only if free now.
  bool Acquire(bool wait) {
    std::unique_lock<std::mutex> lock(mutex);
    if (wait) {
      idle.wait(lock, [this] { return !busy; });
    } else if (busy) {
      return false;
    }
    busy = true;
    return true;
  }
  void Release() {
    {
      const std::lock_guard<std::mutex> lock(mutex);
      busy = false;
    }
    idle.notify_one();
  }
};

ThreadPoolExecutor::ThreadPoolExecutor(std::size_t num_threads) : impl_(std::make_unique<Impl>()) {
  impl_->num_threads = num_threads == 0 ? HardwareThreads() : num_threads;
  if (impl_->num_threads > 1) {
    impl_->pool = pthreadpool_create(impl_->num_threads);
    if (impl_->pool == nullptr) {
      throw std::runtime_error("ThreadPoolExecutor: cannot create a pool of " +
                               std::to_string(impl_->num_threads) + " threads");
    }
  }
}

ThreadPoolExecutor::~ThreadPoolExecutor() {
  if (impl_->pool != nullptr) pthreadpool_destroy(impl_->pool);
}

std::size_t ThreadPoolExecutor::NumThreads() const noexcept { return impl_->num_threads; }

void ThreadPoolExecutor::ParallelFor(std::size_t num_tasks, TaskRef body) {
  if (impl_->pool == nullptr || num_tasks <= 1) return RunOnCallingThread(num_tasks, body);
  // A call from inside a task (nested parallelism) does not wait for a busy
  // pool: it may be this call's own pool, or a pool whose caller waits for
  // this task. Every waiting caller is outside all tasks, so holds no pool,
  // and no cycle of waits can form.
  if (!impl_->Acquire(/*wait=*/!in_pool_task)) return RunOnCallingThread(num_tasks, body);
  CallState state(body);
  HandOver(&state.start_edge);
  pthreadpool_parallelize_1d(impl_->pool, &RunTask, &state, num_tasks, /*flags=*/0);
  TakeOver(&state.end_edge);
  impl_->Release();
  if (state.error) std::rethrow_exception(state.error);
}

Executor& DefaultExecutor() {
  static ThreadPoolExecutor pool([] {
    const char* env = std::getenv("TRNMX_NUM_THREADS");
    if (env != nullptr) {
      char* end = nullptr;
      const unsigned long n = std::strtoul(env, &end, 10);
      if (end != env && *end == '\0' && n > 0 && n <= 1024) return static_cast<std::size_t>(n);
    }
    return HardwareThreads();
  }());
  return pool;
}

}  // namespace trnmx
