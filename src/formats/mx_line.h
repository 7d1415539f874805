// Internal: quantize / dequantize one contiguous line of an MX tensor (see
// include/trnmx/mx.h for lines, blocks, packing and tail padding). The tensor
// layer (src/formats/mx_tensor.cc) cuts tensors into lines, gathers column
// lines into contiguous buffers and runs lines in parallel; these functions
// do the per-line numerics. Two implementations with identical output:
//   *Scalar: built on QuantizeMxBlock / DequantizeMxBlock (mx_block.h), every
//            option supported; it defines the bits.
//   *Simd:   Highway dynamic dispatch (mx_line.cc / mx_line-inl.h); returns
//            false without writing anything when it does not support `params`
//            (the caller then runs the scalar version).
#ifndef TRNMX_SRC_FORMATS_MX_LINE_H_
#define TRNMX_SRC_FORMATS_MX_LINE_H_

#include <cstddef>
#include <cstdint>

#include "trnmx/formats/mx_block.h"
#include "trnmx/formats/mx_format.h"
#include "trnmx/formats/policy.h"
#include "trnmx/formats/scale_rule.h"
#include "trnmx/formats/stochastic.h"
#include "trnmx/formats/types.h"

namespace trnmx::internal {

struct MxLineParams {
  MxFormat format = MxFormat::kMxfp8E4M3;
  ScaleRule rule = ScaleRule::kOcpFloor;
  EncodeOptions element;  // Element rounding, overflow, NaN, subnormals.
  SpecialBlock special = SpecialBlock::kDefault;
  // NVFP4 only: the per-tensor encode scale S_enc (formats.md section 8).
  float nvfp4_encode_scale = 1.0f;
  // Rounding::kStochastic only: element j of the line gets the random word
  // StochasticBits(seed, first_index + j * index_step) (trnmx/formats/stochastic.h),
  // so the bits do not depend on how the tensor is cut into lines or threads.
  // The tensor layer passes first_index = r * cols + c of the line's first
  // element and index_step = 1 (row lines) or cols (column lines).
  std::uint64_t seed = 0;
  std::uint64_t first_index = 0;
  std::uint64_t index_step = 1;
  // When set, the random words by element index instead of StochasticBits
  // (StochasticSource::kXorwow: the tensor's words, generated up front).
  const std::uint32_t* random_words = nullptr;
  // The line is one piece of a destination of at least kStreamMinBytes
  // (kernel_args.h): the SIMD path writes its codes with non-temporal stores
  // as it does for a line that long by itself.
  bool stream = false;
};

// src: n values. codes: ceil(n / block_size) * block_bytes bytes.
// scales: ceil(n / block_size) bytes. Returns the OR of the element flags.
std::uint8_t QuantizeMxLineScalar(const MxLineParams& params, const float* src, std::size_t n,
                                  std::uint8_t* codes, std::uint8_t* scales);
bool QuantizeMxLineSimd(const MxLineParams& params, const float* src, std::size_t n,
                        std::uint8_t* codes, std::uint8_t* scales);
// The same from BF16 values (each widened exactly to FP32): the codes and
// scales of their FP32 values, without an FP32 copy. Round to nearest even
// only: false for the other roundings (the caller widens to FP32).
bool QuantizeMxLineSimd(const MxLineParams& params, const Bf16* src, std::size_t n,
                        std::uint8_t* codes, std::uint8_t* scales);

// Writes n values; tensor_scale is NVFP4's decode scale (1 otherwise).
void DequantizeMxLineScalar(MxFormat format, const std::uint8_t* codes, const std::uint8_t* scales,
                            std::size_t n, float tensor_scale, float* dst);
bool DequantizeMxLineSimd(MxFormat format, const std::uint8_t* codes, const std::uint8_t* scales,
                          std::size_t n, float tensor_scale, float* dst);
// The line's n values as BF16 (the high half of each DequantizeMxLine*
// value) when every one is exactly its BF16, i.e. zero or a normal finite
// BF16 (MX elements have at most 8 significant bits): then true. False when
// any is not (a subnormal, Inf or NaN, from the element or the scale) or for
// NVFP4; dst's contents are then unspecified.
bool DequantizeMxLineToBf16(MxFormat format, const std::uint8_t* codes, const std::uint8_t* scales,
                            std::size_t n, Bf16* dst);

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_FORMATS_MX_LINE_H_
