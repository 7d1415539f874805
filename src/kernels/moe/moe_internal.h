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

}  // namespace trnmx::moe_internal

#endif  // TRNMX_SRC_KERNELS_MOE_MOE_INTERNAL_H_
