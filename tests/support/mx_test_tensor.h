// Test support: an MX tensor that owns its codes and scales in caller-style
// memory (padded line strides, an offset before the first line, padding
// bytes filled with a marker that the code under test must neither read as
// data nor write), built with the scalar one-block reference (mx_block.h)
// and the packing rule of formats.md section 9, independent of the
// library's bulk quantizer.
//
//   MxTestTensor t = QuantizeMxScalar(MxFormat::kMxfp4, BlockAxis::kCols, k, n,
//                                     [&](std::size_t line, std::size_t pos) { ... },
//                                     /*pad_bytes=*/4);
//   GemmOperand b = GemmOperand::Mx(t.view());
#ifndef TRNMX_TESTS_SUPPORT_MX_TEST_TENSOR_H_
#define TRNMX_TESTS_SUPPORT_MX_TEST_TENSOR_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "trnmx/formats/mx_block.h"
#include "trnmx/formats/visit.h"
#include "trnmx/mx.h"

namespace trnmx::testing {

// Where an MxTestTensor's lines sit in its buffers: `offset` bytes before
// the first line, `code_pad` / `scale_pad` bytes after each line's codes /
// scales, all (and one spare byte at the end) holding the fill markers.
struct MxTestLayout {
  std::size_t code_pad = 0;
  std::size_t scale_pad = 0;
  std::size_t offset = 0;
  std::uint8_t code_fill = 0xA5;
  std::uint8_t scale_fill = 0xA5;
};

struct MxTestTensor {
  MxShape shape;
  std::vector<std::uint8_t> codes;   // The whole buffer, offset included.
  std::vector<std::uint8_t> scales;  // Likewise.
  std::size_t offset = 0;
  std::size_t codes_stride = 0;
  std::size_t scales_stride = 0;

  std::uint8_t* line_codes(std::size_t line) { return codes.data() + offset + line * codes_stride; }
  std::uint8_t* line_scales(std::size_t line) {
    return scales.data() + offset + line * scales_stride;
  }
  MxTensorView view() const {
    return {shape, codes.data() + offset, codes_stride, scales.data() + offset, scales_stride,
            1.0f};
  }
  MxTensorSpan span() {
    return {shape, codes.data() + offset, codes_stride, scales.data() + offset, scales_stride,
            0.0f};
  }
};

// A tensor of `shape` whose every byte holds the layout's fill markers.
inline MxTestTensor AllocateMxTestTensor(const MxShape& shape, const MxTestLayout& layout = {}) {
  MxTestTensor t;
  t.shape = shape;
  t.offset = layout.offset;
  t.codes_stride = shape.line_code_bytes() + layout.code_pad;
  t.scales_stride = shape.line_scale_bytes() + layout.scale_pad;
  t.codes.assign(layout.offset + shape.num_lines() * t.codes_stride + 1, layout.code_fill);
  t.scales.assign(layout.offset + shape.num_lines() * t.scales_stride + 1, layout.scale_fill);
  return t;
}

// Packs 32 element codes (one per byte) into a block of `bits`-bit elements
// (formats.md section 9): 8 bits one per byte; 4 bits element 2i in bits 3..0
// of byte i; 6 bits an LSB-first bit stream.
inline void PackBlockCodes(int bits, const std::uint8_t* codes, std::uint8_t* out) {
  if (bits == 8) {
    for (int i = 0; i < 32; ++i) out[i] = codes[i];
  } else if (bits == 4) {
    for (int i = 0; i < 16; ++i) {
      out[i] = static_cast<std::uint8_t>((codes[2 * i] & 0xF) | (codes[2 * i + 1] << 4));
    }
  } else {
    for (int i = 0; i < 24; ++i) out[i] = 0;
    for (int i = 0; i < 32; ++i) {
      const std::uint32_t bit = 6 * i;
      const std::uint32_t v = static_cast<std::uint32_t>(codes[i] & 0x3F) << (bit % 8);
      out[bit / 8] |= static_cast<std::uint8_t>(v & 0xFF);
      if (v >> 8) out[bit / 8 + 1] |= static_cast<std::uint8_t>(v >> 8);
    }
  }
}

// One block quantized by the scalar reference with the default options
// (OCP floor scale, RNE). Formats with 32-element blocks only (not NVFP4).
inline MxBlockCodes QuantizeBlock(MxFormat f, std::span<const float> v) {
  return VisitMxFormat(
      f, [&](auto tag) { return QuantizeMxBlock<typename decltype(tag)::Traits>(v); });
}

// Quantizes value(line, pos) block by block with QuantizeBlock into a tensor
// whose line strides are padded by pad_bytes (codes and scales alike).
inline MxTestTensor QuantizeMxScalar(MxFormat f, BlockAxis axis, std::size_t rows, std::size_t cols,
                                     const std::function<float(std::size_t, std::size_t)>& value,
                                     std::size_t pad_bytes = 0) {
  MxTestTensor t =
      AllocateMxTestTensor({f, rows, cols, axis}, {.code_pad = pad_bytes, .scale_pad = pad_bytes});
  const MxFormatInfo& info = GetMxFormatInfo(f);
  const std::size_t len = t.shape.line_length();
  for (std::size_t line = 0; line < t.shape.num_lines(); ++line) {
    for (std::size_t blk = 0; blk < t.shape.blocks_per_line(); ++blk) {
      float v[32];
      const std::size_t n = std::min<std::size_t>(32, len - blk * 32);
      for (std::size_t i = 0; i < n; ++i) v[i] = value(line, blk * 32 + i);
      const MxBlockCodes q = QuantizeBlock(f, std::span<const float>(v, n));
      PackBlockCodes(info.element_bits, q.codes.data(),
                     t.line_codes(line) + blk * info.block_bytes);
      t.line_scales(line)[blk] = q.scale.bits;
    }
  }
  return t;
}

}  // namespace trnmx::testing

#endif  // TRNMX_TESTS_SUPPORT_MX_TEST_TENSOR_H_
