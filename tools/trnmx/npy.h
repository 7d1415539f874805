// NumPy .npy files (format versions 1.0, 2.0 and 3.0) for the `trnmx`
// program: read and write 1-D and 2-D little-endian arrays of
//   '<f4'  FP32
//   '<u2'  BF16 bit patterns (NumPy has no bfloat16; ml_dtypes arrays are
//          saved as .view(np.uint16))
//   '<f2'  FP16
// A 1-D array of n elements reads as 1 x n. Fortran-order arrays are
// transposed into row-major order on read; files are written C-order,
// version 1.0 (2.0 when the header needs it).
//
// Every malformed file (bad magic, unknown version, unparsable header, an
// unsupported dtype, big-endian data, more than 2 dimensions, a data section
// shorter or longer than the shape says) is an error naming the problem and
// the file; nothing is read past the buffer.
#ifndef TRNMX_TOOLS_TRNMX_NPY_H_
#define TRNMX_TOOLS_TRNMX_NPY_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trnmx/status.h"

namespace trnmx::cli {

enum class NpyDtype : std::uint8_t { kFloat32, kBf16AsUint16, kFloat16 };

std::string_view NpyDescr(NpyDtype dtype);      // "<f4", "<u2", "<f2"
std::size_t NpyElementBytes(NpyDtype dtype);    // 4, 2, 2

struct NpyArray {
  NpyDtype dtype = NpyDtype::kFloat32;
  std::vector<std::size_t> shape;    // 1 or 2 entries, as in the file.
  std::vector<std::uint8_t> data;    // Row-major, little-endian elements.

  std::size_t rows() const { return shape.size() == 2 ? shape[0] : 1; }
  std::size_t cols() const { return shape.empty() ? 0 : shape.back(); }
};

// `name` is used in error messages (usually the path).
StatusOr<NpyArray> ParseNpy(std::span<const std::uint8_t> bytes, std::string_view name);
std::vector<std::uint8_t> SerializeNpy(const NpyArray& array);

// Whole-file helpers. WriteFileAtomically writes PATH.tmp, then renames it,
// so a failed write never leaves a truncated PATH behind.
StatusOr<std::vector<std::uint8_t>> ReadFileBytes(const std::string& path);
Status WriteFileAtomically(const std::string& path, std::span<const std::uint8_t> bytes);

}  // namespace trnmx::cli

#endif  // TRNMX_TOOLS_TRNMX_NPY_H_
