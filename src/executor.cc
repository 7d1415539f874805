// ThreadPoolExecutor on pthreadpool (Debian's libpthreadpool-dev).
#include "trnmx/executor.h"

#include <pthreadpool.h>

#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace trnmx {
namespace {

// What one ParallelFor call hands to pthreadpool's C callback. Exceptions must
// not cross pthreadpool's C frames: the first one is kept and rethrown later.
struct CallState {
  TaskRef body;
  std::mutex mutex;
  std::exception_ptr error;
};

void RunTask(void* context, std::size_t i) {
  auto* state = static_cast<CallState*>(context);
  try {
    state->body(i);
  } catch (...) {
    const std::lock_guard<std::mutex> lock(state->mutex);
    if (!state->error) state->error = std::current_exception();
  }
}

std::size_t HardwareThreads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

}  // namespace

struct ThreadPoolExecutor::Impl {
  pthreadpool_t pool = nullptr;
  std::size_t num_threads = 1;
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
  if (impl_->pool == nullptr || num_tasks <= 1) {
    for (std::size_t i = 0; i < num_tasks; ++i) body(i);
    return;
  }
  CallState state{body, {}, {}};
  // pthreadpool serialises concurrent calls on one pool (its execution mutex).
  pthreadpool_parallelize_1d(impl_->pool, &RunTask, &state, num_tasks, /*flags=*/0);
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
