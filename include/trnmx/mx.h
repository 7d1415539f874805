// MX tensors: matrices of MX blocks (formats.md sections 6, 8, 9; D12).
//
// Layout. A logical rows x cols matrix is cut into *lines* along the block
// axis, and each line into blocks of GetMxFormatInfo(f).block_size elements:
//
//   BlockAxis::kRows   a line is a row (r, 0..cols-1); lines stored row after row
//   BlockAxis::kCols   a line is a column (0..rows-1, c); lines stored column
//                      after column (so a K x N GEMM operand B with blocks
//                      along K is stored K-contiguous, like A's rows)
//
// Each line holds blocks_per_line = ceil(line_length / block_size) blocks.
// Element codes are packed per block (block_bytes bytes, mx_format.h) and the
// blocks of a line are contiguous; line i starts at codes + i * codes_stride.
// Scales are one byte per block (E8M0, or UE4M3 for NVFP4) in a separate
// array; line i's scales start at scales + i * scales_stride.
//
// Tail blocks: when line_length is not a multiple of block_size, the last
// block of each line holds the remaining elements followed by padding that
// reads as +0 (code 00). The padding does not take part in the scale
// (amax is over the real elements only) and dequantization never writes it.
//
//   line 0: | block 0 (block_bytes) | block 1 | ... | tail block + 00 pad |
//   scales: | s0 | s1 | ... | s_last |
#ifndef TRNMX_MX_H_
#define TRNMX_MX_H_

#include <cstddef>
#include <cstdint>

#include "trnmx/formats/mx_format.h"

namespace trnmx {

enum class BlockAxis : std::uint8_t {
  kRows,  // Blocks run along rows; row-major storage of lines.
  kCols,  // Blocks run down columns; column-major storage of lines.
};

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
  std::size_t codes_stride = 0;   // Bytes from one line's codes to the next's.
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

#endif  // TRNMX_MX_H_
