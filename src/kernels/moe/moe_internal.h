// Internal helpers shared by the MoE sources (router.cc, dispatch.cc,
// routing_stats.cc).
#ifndef TRNMX_SRC_KERNELS_MOE_MOE_INTERNAL_H_
#define TRNMX_SRC_KERNELS_MOE_MOE_INTERNAL_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>

#include "trnmx/formats/types.h"

namespace trnmx::moe_internal {

inline std::string Str(std::size_t v) { return std::to_string(v); }

// A logit or activation as FP32: BF16 widens exactly (its bits << 16).
inline float Widen(float x) { return x; }
inline float Widen(Bf16 x) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(x.bits) << 16);
}

// The router's one order (moe.h): a higher value first; equal values (+0 and
// -0 included) go to the lower index, so ties never depend on the platform.
inline bool Better(float a, std::size_t ia, float b, std::size_t ib) {
  return a > b || (a == b && ia < ib);
}

// Offers values[i] to best[0..*have), the indices of the k best offered so
// far in the order of Better, best first (*have < k until k were offered).
inline void TopKInsert(const float* values, std::size_t i, std::size_t k, std::uint32_t* best,
                       std::size_t* have) {
  const float v = values[i];
  std::size_t pos = k - 1;
  if (*have < k) {
    pos = (*have)++;
  } else if (!Better(v, i, values[best[pos]], best[pos])) {
    return;
  }
  for (; pos > 0 && Better(v, i, values[best[pos - 1]], best[pos - 1]); --pos) {
    best[pos] = best[pos - 1];
  }
  best[pos] = static_cast<std::uint32_t>(i);
}

}  // namespace trnmx::moe_internal

#endif  // TRNMX_SRC_KERNELS_MOE_MOE_INTERNAL_H_
