// Internal: the argument checks shared by every entry point that takes
// memory from the caller (MX tensors in mx_tensor.cc, GEMM operands in
// gemm.cc), so that the same mistake gets the same Status everywhere:
//
//   kInvalidArgument  an enum value outside its enum, a null pointer with a
//                     non-empty extent, a stride too short for a line, a
//                     pointer not aligned to its element, strides whose last
//                     byte overflows the address space, memory that overlaps
//                     where it must not;
//   kOutOfRange       a shape whose byte count does not fit size_t (it could
//                     never be allocated).
//
// Messages name the object (`what`: "source", "GEMM operand A", ...) and the
// numbers involved.
#ifndef TRNMX_SRC_INTERNAL_CHECKS_H_
#define TRNMX_SRC_INTERNAL_CHECKS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "trnmx/mx.h"
#include "trnmx/status.h"

namespace trnmx::internal {

constexpr std::size_t CeilDiv(std::size_t x, std::size_t m) { return (x + m - 1) / m; }
constexpr std::size_t RoundUp(std::size_t x, std::size_t m) { return CeilDiv(x, m) * m; }

// "rows x cols".
std::string Dims(std::size_t rows, std::size_t cols);

// Byte range [lo, hi) (empty when lo == hi).
struct ByteRange {
  std::uintptr_t lo = 0;
  std::uintptr_t hi = 0;
  bool Overlaps(const ByteRange& o) const {
    return lo < hi && o.lo < o.hi && lo < o.hi && o.lo < hi;
  }
};

// `count` byte ranges [begin + i * stride, begin + i * stride + len): the
// lines of a strided buffer (rows of a row-major matrix, lines of MX codes).
struct LineRanges {
  std::uintptr_t begin = 0;
  std::size_t stride = 0;
  std::size_t len = 0;
  std::size_t count = 0;
  bool empty() const { return count == 0 || len == 0; }
  std::uintptr_t start(std::size_t i) const { return begin + i * stride; }
  std::uintptr_t end() const { return start(count - 1) + len; }
  ByteRange bounds() const { return empty() ? ByteRange{} : ByteRange{begin, end()}; }
};

// OK, or kInvalidArgument "<what>: ... overflows the address space" when the
// last byte of `r` overflows size_t or wraps around the address space.
Status CheckLineRanges(const LineRanges& r, std::string_view what);

// Whether two families of lines share a byte. Each family's own lines must be
// disjoint and ascending (stride >= len, or a single line), which the stride
// checks guarantee. O(min(count)) after a bounding-box test.
bool Overlap(const LineRanges& a, const LineRanges& b);

// A dense rows x cols array of `element_bytes` elements at
// data + (i * row_stride + j * col_stride) * element_bytes (strides in
// elements): checks the pointer (non-null and aligned to `element_bytes`
// when the array is not empty) and that the last element's end does not
// overflow the address space, and sets *range to the bytes from the first
// element to the end of the last (empty for an empty array).
Status CheckStridedArray(std::string_view what, const void* data, std::size_t rows,
                         std::size_t cols, std::size_t row_stride, std::size_t col_stride,
                         std::size_t element_bytes, ByteRange* range);

// Whether (i, j) -> i * row_stride + j * col_stride is one-to-one over a
// rows x cols array (outputs must not share memory).
bool DistinctElements(std::size_t rows, std::size_t cols, std::size_t row_stride,
                      std::size_t col_stride);

// MX layouts (mx.h). CheckMxShape: format and axis inside their enums and
// byte counts that fit size_t; it must precede any MxShape member call.
// CheckMxLayout: the shape, then the pointers, the strides (at least a line
// when there is more than one line), the address-space extents and that
// codes and scales do not overlap. CheckMxView and CheckMxSpan (mx.h) are
// CheckMxLayout plus, for a view, the tensor scale.
Status CheckMxShape(const MxShape& shape);
Status CheckMxLayout(const MxShape& shape, const void* codes, std::size_t codes_stride,
                     const void* scales, std::size_t scales_stride);
LineRanges MxCodeRanges(const MxShape& shape, const void* codes, std::size_t codes_stride);
LineRanges MxScaleRanges(const MxShape& shape, const void* scales, std::size_t scales_stride);

// `status` with "<prefix>: " in front of its message (same code); OK stays OK.
Status Prefixed(std::string_view prefix, Status status);

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_INTERNAL_CHECKS_H_
