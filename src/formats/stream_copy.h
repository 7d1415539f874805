// Internal: the non-temporal copy used by the bulk codecs' streaming mode,
// exposed for benchmarks (the "fastest plain copy" baseline of
// shared/reference/machine.md).
#ifndef TRNMX_SRC_FORMATS_STREAM_COPY_H_
#define TRNMX_SRC_FORMATS_STREAM_COPY_H_

#include <cstddef>

namespace trnmx::internal {

// Copies `bytes` bytes from src to dst (not overlapping). Every whole 64-byte
// line of dst is written with non-temporal stores (best Highway target of
// this CPU), the unaligned head and tail with memcpy; ends with a store fence.
//
//   std::vector<float> a(1 << 24), b(1 << 24);
//   trnmx::internal::StreamCopy(b.data(), a.data(), a.size() * sizeof(float));
void StreamCopy(void* dst, const void* src, std::size_t bytes);

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_FORMATS_STREAM_COPY_H_
