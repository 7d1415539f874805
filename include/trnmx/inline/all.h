// Umbrella header of trnmx's optional xsimd inline layer (docs/inline.md).
//
// Include it in the application's own hot-loop TU, compiled with the -march
// it targets, and link xsimd (find_package(xsimd) -> target `xsimd`); the
// architecture is xsimd::default_arch of that TU, fixed at compile time.
//
// common.h    Batch / Codes aliases, lane casts, code loads and stores
// bf16.h      FP32 <-> BF16 (RNE, NaN keeps payload, overflow -> Inf)
// codec.h     FP32 <-> FP8 E4M3 / E5M2 / FP4 E2M1 codes (RNE, overflow policy)
// fp4.h       packed FP4 arrays (element 2i in the low nibble)
// mx_block.h  one MX block of 32: scale + codes, and back
//
//   #include <trnmx/inline/all.h>
//   namespace tis = trnmx::inline_simd;
//   tis::EncodeBf16(x, bf16_out, n);
//   std::uint8_t scale = tis::QuantizeMxBlock<trnmx::Fp8E4M3Traits>(x, 32, codes);
#ifndef TRNMX_INLINE_ALL_H_
#define TRNMX_INLINE_ALL_H_

#include "trnmx/inline/bf16.h"
#include "trnmx/inline/codec.h"
#include "trnmx/inline/common.h"
#include "trnmx/inline/fp4.h"
#include "trnmx/inline/mx_block.h"

#endif  // TRNMX_INLINE_ALL_H_
