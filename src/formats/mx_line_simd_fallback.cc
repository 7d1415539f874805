// TEMPORARY (delete on merge): stand-ins for the Highway line kernels of
// src/formats/mx_line.cc, which another branch provides. Returning false
// makes every caller use the scalar versions (mx_line_scalar.cc), which
// define the same bits.
#include <cstddef>
#include <cstdint>

#include "formats/mx_line.h"

namespace trnmx::internal {

bool QuantizeMxLineSimd(const MxLineParams& /*params*/, const float* /*src*/, std::size_t /*n*/,
                        std::uint8_t* /*codes*/, std::uint8_t* /*scales*/) {
  return false;
}

bool DequantizeMxLineSimd(MxFormat /*format*/, const std::uint8_t* /*codes*/,
                          const std::uint8_t* /*scales*/, std::size_t /*n*/,
                          float /*tensor_scale*/, float* /*dst*/) {
  return false;
}

}  // namespace trnmx::internal
