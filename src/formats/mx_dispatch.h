// Internal: from a run-time MxFormat to the compile-time element traits of
// the scalar reference (scale_rule.h, mx_block.h).
#ifndef TRNMX_SRC_FORMATS_MX_DISPATCH_H_
#define TRNMX_SRC_FORMATS_MX_DISPATCH_H_

#include "trnmx/formats/mx_format.h"
#include "trnmx/formats/scale_rule.h"
#include "trnmx/formats/traits.h"

namespace trnmx::internal {

// Calls fn(Traits{}) with the element traits of `format` (NVFP4: E2M1).
// An out-of-range enum value calls fn with Fp8E4M3Traits; callers validate
// the format first.
template <class F>
decltype(auto) WithMxElementTraits(MxFormat format, F&& fn) {
  switch (format) {
    case MxFormat::kMxfp8E5M2: return fn(Fp8E5M2Traits{});
    case MxFormat::kMxfp6E2M3: return fn(Fp6E2M3Traits{});
    case MxFormat::kMxfp6E3M2: return fn(Fp6E3M2Traits{});
    case MxFormat::kMxfp4:
    case MxFormat::kNvfp4: return fn(Fp4E2M1Traits{});
    case MxFormat::kMxint8: return fn(MxInt8Traits{});
    case MxFormat::kMxfp8E4M3: break;
  }
  return fn(Fp8E4M3Traits{});
}

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_FORMATS_MX_DISPATCH_H_
