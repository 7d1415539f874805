// Internal: decoding single elements of a packed MX tensor to FP32, for the
// dense x MX GEMM paths (the kernels' packing and ref::Gemm use the same
// functions, so both read the same values).
//
// Element codes are read from the packed block bytes (formats.md section 9):
//   FP8, MXINT8  one byte per element
//   FP6          LSB-first bit stream, element i in bits 6i..6i+5 of the block
//   FP4          element 2i in bits 3..0 of byte i, element 2i+1 in bits 7..4
// Value (gemm.h, "dense x MX"): fl32(decode(code) * 2^(scale - 127)), one FP32
// multiply of two exact values, so one rounding (exact unless it overflows or
// lands in the FP32 subnormals); scale FF gives NaN. decode() is the scalar
// codec (codec.h DecodeBits, int8.h DecodeMxInt8). NVFP4 is not handled here
// (it is not a GEMM operand).
#ifndef TRNMX_SRC_FORMATS_MX_DECODE_H_
#define TRNMX_SRC_FORMATS_MX_DECODE_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "trnmx/formats/codec.h"
#include "trnmx/formats/e8m0.h"
#include "trnmx/formats/int8.h"
#include "trnmx/formats/mx_block.h"
#include "trnmx/formats/mx_format.h"
#include "trnmx/formats/visit.h"
#include "trnmx/mx.h"

namespace trnmx::internal {

// Code of element i (0..31) of one packed block.
inline std::uint32_t MxElementCode(MxFormat format, const std::uint8_t* block, std::size_t i) {
  switch (GetMxFormatInfo(format).element_bits) {
    case 8:
      return block[i];
    case 4:
      return (block[i / 2] >> (4 * (i % 2))) & 0xFu;
    default: {  // 6: bits 6i..6i+5, spread over at most two bytes.
      const std::size_t bit = 6 * i;
      const std::uint32_t lo = block[bit / 8];
      const std::uint32_t hi = (bit % 8) > 2 ? block[bit / 8 + 1] : 0u;
      return ((lo | (hi << 8)) >> (bit % 8)) & 0x3Fu;
    }
  }
}

// Exact FP32 value of every element code of `format` (256 entries; codes of
// narrower formats use the first 2^bits).
using MxValueTable = std::array<float, 256>;

template <class Tag>
constexpr MxValueTable MakeMxValueTable() {
  MxValueTable t{};
  for (std::uint32_t c = 0; c < (1u << Tag::kInfo.element_bits); ++c) {
    t[c] = detail::DecodeMxElement<typename Tag::Traits>(c);
  }
  return t;
}

// One table per MX format, indexed by its value.
inline constexpr MxValueTable kMxValueTables[] = {
#define TRNMX_X(Name, ...) MakeMxValueTable<mx_tags::Mx##Name##Tag>(),
    TRNMX_FOREACH_MX_FORMAT(TRNMX_X)
#undef TRNMX_X
};

// The table of `format` (NVFP4: its E2M1 elements).
inline const MxValueTable* MxValues(MxFormat format) {
  return &kMxValueTables[static_cast<std::size_t>(format)];
}

// decode(code) * 2^(scale - 127) rounded once; FF -> NaN (DecodeE8M0).
inline float MxScaledValue(float element, std::uint8_t scale) {
  return element * DecodeE8M0(scale);
}

// Element `pos` (0 .. line_length-1) of line `line` of an MX tensor.
inline float MxLineElement(const MxTensorView& t, std::size_t line, std::size_t pos) {
  const MxFormatInfo& info = GetMxFormatInfo(t.shape.format);
  const std::size_t block = pos / info.block_size;
  const std::uint8_t* codes = t.codes + line * t.codes_stride + block * info.block_bytes;
  const std::uint8_t scale = t.scales[line * t.scales_stride + block];
  const std::uint32_t code = MxElementCode(t.shape.format, codes, pos % info.block_size);
  return MxScaledValue((*MxValues(t.shape.format))[code], scale);
}

// Element (row, col) of the logical matrix, whatever the block axis.
inline float MxMatrixElement(const MxTensorView& t, std::size_t row, std::size_t col) {
  return t.shape.axis == BlockAxis::kRows ? MxLineElement(t, row, col) : MxLineElement(t, col, row);
}

// Decodes elements [pos, pos + n) of line `line` into dst[0], dst[stride], ...
// Same values as MxLineElement, a block at a time.
inline void DecodeMxLineSegment(const MxTensorView& t, std::size_t line, std::size_t pos,
                                std::size_t n, float* dst, std::size_t stride) {
  const MxFormatInfo& info = GetMxFormatInfo(t.shape.format);
  const MxValueTable& values = *MxValues(t.shape.format);
  const std::uint8_t* line_codes = t.codes + line * t.codes_stride;
  const std::uint8_t* line_scales = t.scales + line * t.scales_stride;
  std::size_t done = 0;
  while (done < n) {
    const std::size_t p = pos + done;
    const std::size_t block = p / info.block_size;
    const std::size_t first = p % info.block_size;
    std::size_t count = info.block_size - first;
    if (count > n - done) count = n - done;
    const std::uint8_t* codes = line_codes + block * info.block_bytes;
    const float scale = DecodeE8M0(line_scales[block]);
    for (std::size_t i = 0; i < count; ++i) {
      dst[(done + i) * stride] =
          values[MxElementCode(t.shape.format, codes, first + i)] * scale;
    }
    done += count;
  }
}

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_FORMATS_MX_DECODE_H_
