// MX tensor views: the shape and the caller-owned memory of an MX tensor
// (formats.md sections 8, 9), without the quantization API of mx.h, so that
// kernels that take views (gemm.h) need only this and mx_format.h.
//
// Layout: num_lines() lines (rows for BlockAxis::kRows, columns for kCols),
// each of blocks_per_line() packed blocks of block_bytes code bytes at
// codes + line * codes_stride, and one scale byte per block at
// scales + line * scales_stride.
#ifndef TRNMX_MX_VIEW_H_
#define TRNMX_MX_VIEW_H_

#include <cstddef>
#include <cstdint>

#include "trnmx/formats/mx_format.h"
#include "trnmx/options.h"

namespace trnmx {

// Geometry shared by the const and mutable views.
struct MxShape {
  MxFormat format = MxFormat::kMxfp8E4M3;
  std::size_t rows = 0;
  std::size_t cols = 0;
  BlockAxis axis = BlockAxis::kRows;

  constexpr std::size_t num_lines() const { return axis == BlockAxis::kRows ? rows : cols; }
  constexpr std::size_t line_length() const { return axis == BlockAxis::kRows ? cols : rows; }
  constexpr std::size_t blocks_per_line() const {
    const std::size_t b = GetMxFormatInfo(format).block_size;
    return (line_length() + b - 1) / b;
  }
  // Minimum strides: a line's packed blocks and its scales, unpadded.
  constexpr std::size_t line_code_bytes() const {
    return blocks_per_line() * GetMxFormatInfo(format).block_bytes;
  }
  constexpr std::size_t line_scale_bytes() const { return blocks_per_line(); }
};

// Read-only view of an MX tensor in caller-owned memory.
struct MxTensorView {
  MxShape shape;
  const std::uint8_t* codes = nullptr;
  std::size_t codes_stride = 0;  // Bytes from one line's codes to the next's.
  const std::uint8_t* scales = nullptr;
  std::size_t scales_stride = 0;  // Bytes from one line's scales to the next's.
  float tensor_scale = 1.0f;      // NVFP4's per-tensor decode scale; 1 for MX formats.
};

// Writable view (destination of quantization).
struct MxTensorSpan {
  MxShape shape;
  std::uint8_t* codes = nullptr;
  std::size_t codes_stride = 0;
  std::uint8_t* scales = nullptr;
  std::size_t scales_stride = 0;
  float tensor_scale = 1.0f;

  constexpr MxTensorView view() const {
    return {shape, codes, codes_stride, scales, scales_stride, tensor_scale};
  }
};

}  // namespace trnmx

#endif  // TRNMX_MX_VIEW_H_
