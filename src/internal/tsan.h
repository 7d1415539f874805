// Internal: ThreadSanitizer annotations for synchronisation that TSan cannot
// see, because it happens in a library TSan did not instrument (pthreadpool's
// futexes and atomics; src/executor.cc). TRNMX_TSAN is defined in a
// -fsanitize=thread build (GCC's __SANITIZE_THREAD__, Clang's
// __has_feature(thread_sanitizer)); elsewhere the annotations are no-ops.
//
//   HandOver(&edge);   // thread A: everything A did so far ...
//   TakeOver(&edge);   // thread B: ... happens before what B does next
#ifndef TRNMX_SRC_INTERNAL_TSAN_H_
#define TRNMX_SRC_INTERNAL_TSAN_H_

#if defined(__SANITIZE_THREAD__)
#define TRNMX_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TRNMX_TSAN 1
#endif
#endif

#ifdef TRNMX_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace trnmx::internal {

// Release: the calling thread's accesses so far happen before those of any
// thread after its TakeOver of the same address.
inline void HandOver([[maybe_unused]] const void* edge) {
#ifdef TRNMX_TSAN
  __tsan_release(const_cast<void*>(edge));
#endif
}

// Acquire: what every earlier HandOver of `edge` saw happens before the
// calling thread's accesses from here on.
inline void TakeOver([[maybe_unused]] const void* edge) {
#ifdef TRNMX_TSAN
  __tsan_acquire(const_cast<void*>(edge));
#endif
}

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_INTERNAL_TSAN_H_
