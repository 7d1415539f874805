// Umbrella header for trnmx's scalar number formats.
//
//   #include <trnmx/formats.h>
//   trnmx::Fp8E4M3 c = trnmx::Encode<trnmx::Fp8E4M3>(3.14159f);   // 0x45 = 3.25
//
// traits.h   one traits template for every small float (bits, bias, limits)
// types.h    bits-only storage types (Bf16, Fp16, Fp8E4M3, ..., ScaleE8M0, MxInt8)
// policy.h   rounding, overflow, NaN and subnormal policies; status flags
// codec.h    scalar FP32 <-> small-float encode/decode (the normative reference)
// e8m0.h     E8M0 scale codes
// int8.h     MXINT8 elements
// registry.h runtime format ids, names and traits table (compiled library)
#ifndef TRNMX_FORMATS_H_
#define TRNMX_FORMATS_H_

#include "trnmx/formats/bulk.h"
#include "trnmx/formats/codec.h"
#include "trnmx/formats/e8m0.h"
#include "trnmx/formats/format_list.h"
#include "trnmx/formats/int8.h"
#include "trnmx/formats/mx_block.h"
#include "trnmx/formats/mx_format.h"
#include "trnmx/formats/policy.h"
#include "trnmx/formats/registry.h"
#include "trnmx/formats/scale_rule.h"
#include "trnmx/formats/traits.h"
#include "trnmx/formats/types.h"
#include "trnmx/formats/visit.h"

#endif  // TRNMX_FORMATS_H_
