// The executor a trnmx entry point runs on when the caller passes nullptr:
// the calling thread (executor.h's rule, as in XNNPACK: no hidden pool).
#ifndef TRNMX_SRC_INTERNAL_CALLING_THREAD_H_
#define TRNMX_SRC_INTERNAL_CALLING_THREAD_H_

#include "trnmx/executor.h"

namespace trnmx::internal {

// `executor`, or a SerialExecutor when it is null. SerialExecutor holds no
// state, so one instance serves every thread at once.
inline Executor& ExecutorOrCallingThread(Executor* executor) {
  static SerialExecutor calling_thread;
  return executor != nullptr ? *executor : calling_thread;
}

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_INTERNAL_CALLING_THREAD_H_
