// bench/read_bandwidth.h: ReadSum per Highway target.
#include "read_bandwidth.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "read_bandwidth.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace trnmx::bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sequential streams read side by side. One thread reads memory fastest
// with a few streams in flight, as the libraries' M = 1 paths read B's rows:
// on the Zen 3 development VM, 256 MiB read as 1 / 2 / 4 / 8 / 16 equal
// parts in turn ran at 16.1 / 19.8 / 21.2 / 21.3 / 15.0 GB/s (medians of 7).
constexpr std::size_t kStreams = 4;

std::uint64_t ReadSumImpl(const std::uint8_t* p, std::size_t bytes) {
  const hn::ScalableTag<std::uint64_t> d;
  const std::size_t lanes = hn::Lanes(d);
  const std::size_t step = lanes * 8;                             // Bytes per vector.
  const auto* words = reinterpret_cast<const std::uint64_t*>(p);  // 8-byte aligned.
  const std::size_t part = bytes / kStreams / step * step;        // Bytes per stream.
  const std::size_t stride = part / 8;                            // The same, in words.
  static_assert(kStreams == 4, "one accumulator per stream");
  auto s0 = hn::Zero(d), s1 = s0, s2 = s0, s3 = s0;
  for (std::size_t at = 0; at < part; at += step) {
    const std::uint64_t* q = words + at / 8;
    s0 = hn::Add(s0, hn::LoadU(d, q));
    s1 = hn::Add(s1, hn::LoadU(d, q + stride));
    s2 = hn::Add(s2, hn::LoadU(d, q + 2 * stride));
    s3 = hn::Add(s3, hn::LoadU(d, q + 3 * stride));
  }
  const std::size_t tail = kStreams * part;  // A whole number of words.
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)))) +
         ReadSumScalar(p + tail, bytes - tail);
}

}  // namespace HWY_NAMESPACE
}  // namespace trnmx::bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace trnmx::bench {

HWY_EXPORT(ReadSumImpl);

std::uint64_t ReadSum(const std::uint8_t* p, std::size_t bytes) {
  return HWY_DYNAMIC_DISPATCH(ReadSumImpl)(p, bytes);
}
std::uint64_t ReadSumScalar(const std::uint8_t* p, std::size_t bytes) {
  std::uint64_t r = 0;
  std::size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    r += w;
  }
  for (; i < bytes; ++i) r += p[i];
  return r;
}

}  // namespace trnmx::bench
#endif  // HWY_ONCE
