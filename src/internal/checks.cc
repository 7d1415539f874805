#include "internal/checks.h"

#include <iterator>
#include <string>
#include <utility>

#include "internal/status_macros.h"

namespace trnmx::internal {
namespace {

std::string Str(std::size_t v) { return std::to_string(v); }

bool MulOverflows(std::size_t a, std::size_t b, std::size_t* out) {
  return __builtin_mul_overflow(a, b, out);
}
bool AddOverflows(std::size_t a, std::size_t b, std::size_t* out) {
  return __builtin_add_overflow(a, b, out);
}

}  // namespace

std::string Dims(std::size_t rows, std::size_t cols) { return Str(rows) + " x " + Str(cols); }

Status CheckLineRanges(const LineRanges& r, std::string_view what) {
  if (r.empty()) return OkStatus();
  std::size_t span = 0;
  if (MulOverflows(r.count - 1, r.stride, &span) || AddOverflows(span, r.len, &span) ||
      r.begin + span < r.begin) {
    return InvalidArgumentError(std::string(what) + " (" + Str(r.count) + " lines, stride " +
                                Str(r.stride) + ", " + Str(r.len) +
                                " bytes each) overflows the address space");
  }
  return OkStatus();
}

bool Overlap(const LineRanges& a0, const LineRanges& b0) {
  if (a0.empty() || b0.empty()) return false;
  if (a0.end() <= b0.begin || b0.end() <= a0.begin) return false;
  const bool swap = a0.count > b0.count;
  const LineRanges& a = swap ? b0 : a0;
  const LineRanges& b = swap ? a0 : b0;
  for (std::size_t i = 0; i < a.count; ++i) {
    const std::uintptr_t lo = a.start(i);
    const std::uintptr_t hi = lo + a.len;
    // First line of b that ends after lo.
    std::size_t j = 0;
    if (lo >= b.begin + b.len) {
      if (b.count == 1 || b.stride == 0) continue;
      j = (lo - b.begin - b.len) / b.stride + 1;
    }
    if (j < b.count && b.start(j) < hi) return true;
  }
  return false;
}

Status CheckStridedArray(std::string_view what, const void* data, std::size_t rows,
                         std::size_t cols, std::size_t row_stride, std::size_t col_stride,
                         std::size_t element_bytes, ByteRange* range) {
  *range = {};
  if (rows == 0 || cols == 0) return OkStatus();
  if (data == nullptr) {
    return InvalidArgumentError(std::string(what) + " is " + Dims(rows, cols) +
                                " but its data pointer is null");
  }
  const auto base = reinterpret_cast<std::uintptr_t>(data);
  if (base % element_bytes != 0) {
    return InvalidArgumentError(std::string(what) + " data pointer is not aligned to " +
                                Str(element_bytes) + " bytes");
  }
  // Bytes to the end of the last element: ((rows-1)*rs + (cols-1)*cs + 1) * size.
  std::size_t r = 0;
  std::size_t c = 0;
  std::size_t last = 0;
  std::size_t end = 0;
  if (MulOverflows(rows - 1, row_stride, &r) || MulOverflows(cols - 1, col_stride, &c) ||
      AddOverflows(r, c, &last) || AddOverflows(last, std::size_t{1}, &last) ||
      MulOverflows(last, element_bytes, &end) || base + end < base) {
    return InvalidArgumentError(std::string(what) + " (" + Dims(rows, cols) + ", strides " +
                                Str(row_stride) + ", " + Str(col_stride) +
                                ") overflows the address space");
  }
  *range = {base, base + end};
  return OkStatus();
}

bool DistinctElements(std::size_t rows, std::size_t cols, std::size_t row_stride,
                      std::size_t col_stride) {
  // With the strides sorted s1 <= s2 over extents n1, n2 (> 1): need s1 >= 1
  // and s2 >= n1 * s1.
  std::size_t s1 = col_stride;
  std::size_t n1 = cols;
  std::size_t s2 = row_stride;
  std::size_t n2 = rows;
  if (n1 == 1 || (n2 > 1 && s2 < s1)) {
    std::swap(s1, s2);
    std::swap(n1, n2);
  }
  if (n1 > 1 && s1 == 0) return false;
  if (n1 > 1 && n2 > 1 && s2 / n1 < s1) return false;
  return true;
}

Status CheckMxShape(const MxShape& s) {
  if (static_cast<std::size_t>(s.format) >= std::size(kMxFormatInfos)) {
    return InvalidArgumentError("MX format value " + Str(static_cast<std::size_t>(s.format)) +
                                " is not an MxFormat");
  }
  if (s.axis != BlockAxis::kRows && s.axis != BlockAxis::kCols) {
    return InvalidArgumentError("block axis value " + Str(static_cast<std::size_t>(s.axis)) +
                                " is not a BlockAxis");
  }
  const MxFormatInfo& info = GetMxFormatInfo(s.format);
  std::size_t tmp = 0;
  if (AddOverflows(s.line_length(), info.block_size, &tmp) ||
      MulOverflows(s.blocks_per_line(), info.block_bytes, &tmp) ||
      MulOverflows(s.num_lines(), s.line_code_bytes(), &tmp)) {
    return OutOfRangeError("MX tensor " + Dims(s.rows, s.cols) +
                           " is too large: its byte count overflows size_t");
  }
  return OkStatus();
}

LineRanges MxCodeRanges(const MxShape& s, const void* codes, std::size_t codes_stride) {
  return {reinterpret_cast<std::uintptr_t>(codes), codes_stride, s.line_code_bytes(),
          s.num_lines()};
}

LineRanges MxScaleRanges(const MxShape& s, const void* scales, std::size_t scales_stride) {
  return {reinterpret_cast<std::uintptr_t>(scales), scales_stride, s.line_scale_bytes(),
          s.num_lines()};
}

Status CheckMxLayout(const MxShape& s, const void* codes, std::size_t codes_stride,
                     const void* scales, std::size_t scales_stride) {
  TRNMX_RETURN_IF_ERROR(CheckMxShape(s));
  if (s.num_lines() == 0 || s.blocks_per_line() == 0) return OkStatus();
  if (codes == nullptr) return InvalidArgumentError("MX tensor codes pointer is null");
  if (scales == nullptr) return InvalidArgumentError("MX tensor scales pointer is null");
  if (s.num_lines() > 1 && codes_stride < s.line_code_bytes()) {
    return InvalidArgumentError("codes_stride " + Str(codes_stride) + " is less than a line's " +
                                Str(s.line_code_bytes()) + " code bytes");
  }
  if (s.num_lines() > 1 && scales_stride < s.line_scale_bytes()) {
    return InvalidArgumentError("scales_stride " + Str(scales_stride) + " is less than a line's " +
                                Str(s.line_scale_bytes()) + " scales");
  }
  const LineRanges c = MxCodeRanges(s, codes, codes_stride);
  const LineRanges sc = MxScaleRanges(s, scales, scales_stride);
  TRNMX_RETURN_IF_ERROR(CheckLineRanges(c, "MX codes"));
  TRNMX_RETURN_IF_ERROR(CheckLineRanges(sc, "MX scales"));
  if (Overlap(c, sc)) return InvalidArgumentError("MX codes and scales overlap");
  return OkStatus();
}

Status Prefixed(std::string_view prefix, Status status) {
  if (status.ok()) return status;
  return Status(status.code(), std::string(prefix) + ": " + status.message());
}

}  // namespace trnmx::internal
