// Bulk FP32 <-> small-format conversions of whole arrays, vectorised with
// Highway dynamic dispatch and multi-threaded through an Executor.
//
// Contract (every function below):
//   - Bits: element i of the output is exactly what the scalar codec of
//     codec.h gives for element i of the input with the same options
//     (EncodeWithFlags<Traits>(in[i], options, random_bits[i]).code, or
//     DecodeBits<Traits>(in[i])), on every SIMD target, for every thread
//     count and executor (shared/reference/formats.md sections 3, 4; D1-D5,
//     D11). Exception flags are not reported (EncodeScalars in registry.h
//     returns them per element).
//   - Sizes: spans in, spans out. Encoders and decoders need
//     out.size() == in.size(); the packed FP4 functions need
//     packed.size() == (values.size() + 1) / 2. A mismatch returns
//     kInvalidArgument and writes nothing. Input and output must not overlap.
//   - Options: EncodeOptions as in policy.h, each format's defaults when
//     default-constructed (RNE; BF16/FP16 overflow to Inf and keep NaN
//     payloads; FP8/FP6/FP4 saturate). Rounding::kStochastic needs
//     random_bits.size() == in.size() (else kInvalidArgument, nothing
//     written) and runs the scalar codec; random_bits is ignored otherwise.
//     For BF16: Subnormals::kFlush gives the Intel AVX512_BF16 bits
//     (formats.md kDazFtz), NanPolicy::kCanonical the Eigen/ml_dtypes NaNs
//     7FC0/FFC0 (kCanonicalNaN).
//   - Threads: inputs of more than one chunk (32768 elements) are split into
//     chunks of whole elements that executor->ParallelFor runs; nullptr runs
//     them all on the calling thread (executor.h). Each chunk writes only its
//     own outputs, so the bits never depend on the thread count.
//   - Floating-point environment: the round-to-nearest-even encoders round
//     values below the target's smallest normal with one FP32 add, so their
//     bits need the default rounding mode (round to nearest, as every thread
//     starts with); FTZ and DAZ do not change them. The other roundings and
//     the decoders are integer arithmetic, independent of the environment.
//   - Caches: outputs of 8 MiB or more are written with non-temporal
//     (streaming) stores, which do not fill the caches with the result.
//   - Decoders are exact. Code bits above the format's width (bits 7..6 of an
//     FP6 byte, 7..4 of an FP4 byte) are ignored, as in DecodeBits. NaN codes
//     give FP32 quiet NaNs with the code's sign (FP8: 7FC00000/FFC00000;
//     BF16 and FP16 keep their payload).
//
// Packed FP4 (formats.md section 9, D12): element 2i in bits 3..0 of byte i,
// element 2i+1 in bits 7..4; for an odd count the last byte's bits 7..4 are 0
// when encoding and ignored when decoding.
//
//   std::vector<float> x = {1.0f, 3.0f, 1000.0f, -0.25f};
//   std::vector<trnmx::Fp8E4M3> q(x.size());
//   trnmx::Status s = trnmx::BulkEncode(x, q);            // 38 44 7E A8
//   std::vector<float> back(x.size());
//   s = trnmx::BulkDecode(q, back);                       // 1, 3, 448, -0.25
//
//   std::vector<trnmx::Bf16> h(x.size());
//   s = trnmx::BulkEncode(x, h);                          // 3F80 4040 447A BE80
//
//   std::vector<std::uint8_t> packed((x.size() + 1) / 2);
//   s = trnmx::BulkEncodePackedFp4(x, packed);            // 0x52 0x87 (E2M1 codes 2 5 7 8)
#ifndef TRNMX_FORMATS_BULK_H_
#define TRNMX_FORMATS_BULK_H_

#include <cstdint>
#include <span>

#include "trnmx/executor.h"
#include "trnmx/export.h"
#include "trnmx/formats/format_list.h"
#include "trnmx/formats/policy.h"
#include "trnmx/formats/types.h"
#include "trnmx/status.h"

namespace trnmx {

// For each storage type Code of format_list.h's float formats (Bf16, Fp16,
// Fp8E4M3, ..., Fp4E2M1), the pair
//
//   // FP32 -> codes, one code per element (FP6/FP4 codes in the low bits of
//   // a byte).
//   Status BulkEncode(std::span<const float> in, std::span<Code> out,
//                     const EncodeOptions& options = {}, Executor* executor = nullptr,
//                     std::span<const std::uint32_t> random_bits = {});
//   // Codes -> FP32, exactly.
//   Status BulkDecode(std::span<const Code> in, std::span<float> out,
//                     Executor* executor = nullptr);
//
// See the file comment for the contract.
#define TRNMX_X(Code, ...)                                                                     \
  TRNMX_API Status BulkEncode(std::span<const float> in, std::span<Code> out,                  \
                              const EncodeOptions& options = {}, Executor* executor = nullptr, \
                              std::span<const std::uint32_t> random_bits = {});                \
  TRNMX_API Status BulkDecode(std::span<const Code> in, std::span<float> out,                  \
                              Executor* executor = nullptr);
TRNMX_FOREACH_FLOAT_FORMAT(TRNMX_X)
#undef TRNMX_X

// FP32 -> FP4 E2M1 codes packed two per byte; packed.size() == (in.size() + 1) / 2.
//
//   const float x[] = {0.5f, 6.0f, -1.0f};
//   std::uint8_t p[2];
//   trnmx::BulkEncodePackedFp4(x, p);   // p = {0x71, 0x0A}
TRNMX_API Status BulkEncodePackedFp4(std::span<const float> in, std::span<std::uint8_t> packed,
                                     const EncodeOptions& options = {},
                                     Executor* executor = nullptr,
                                     std::span<const std::uint32_t> random_bits = {});

// Packed FP4 E2M1 -> FP32: out.size() values from packed.size() ==
// (out.size() + 1) / 2 bytes.
//
//   const std::uint8_t p[] = {0x71, 0x0A};
//   float y[3];
//   trnmx::BulkDecodePackedFp4(p, y);   // y = {0.5, 6, -1}
TRNMX_API Status BulkDecodePackedFp4(std::span<const std::uint8_t> packed, std::span<float> out,
                                     Executor* executor = nullptr);

}  // namespace trnmx

#endif  // TRNMX_FORMATS_BULK_H_
