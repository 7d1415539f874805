// The `.mx` container of the trnmx program: one MX tensor (mx.h) in a file.
//
// Layout (all integers little-endian), format version 1:
//
//   offset size  field
//        0    8  magic "TRNMX\x00MX" (54 52 4E 4D 58 00 4D 58)
//        8    2  version = 1
//       10    1  MX format (MxFormat: 0 mxfp8-e4m3, 1 mxfp8-e5m2, 2 mxfp6-e2m3,
//                3 mxfp6-e3m2, 4 mxfp4, 5 mxint8, 6 nvfp4)
//       11    1  block axis (0 rows, 1 cols)
//       12    1  scale rule used (ScaleRule; informational)
//       13    3  zero
//       16    8  rows
//       24    8  cols
//       32    4  tensor scale, FP32 bits (NVFP4 decode scale; 1.0 otherwise)
//       36    4  zero
//       40    8  code bytes  = lines * blocks_per_line * block_bytes
//       48    8  scale bytes = lines * blocks_per_line
//       56    4  CRC-32 (zlib) of the code and scale bytes
//       60    4  CRC-32 (zlib) of bytes 0..59
//       64       code bytes (lines in order, blocks packed as in mx.h, no padding
//                between lines), then scale bytes
//
// ParseMxContainer checks every field (magic, version, enum ranges, zero
// fields, sizes against the shape, exact file length, both CRCs): a
// truncated or corrupt file is a DataLoss error naming the file and the
// field, never a crash.
#ifndef TRNMX_TOOLS_TRNMX_MX_CONTAINER_H_
#define TRNMX_TOOLS_TRNMX_MX_CONTAINER_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "trnmx/formats/scale_rule.h"
#include "trnmx/mx.h"
#include "trnmx/status.h"

namespace trnmx::cli {

inline constexpr std::size_t kMxContainerHeaderBytes = 64;
inline constexpr std::uint16_t kMxContainerVersion = 1;

// A tensor read from a container: the view's codes and scales point into
// `codes` and `scales` (minimal strides).
struct MxContainer {
  MxShape shape;
  ScaleRule rule = ScaleRule::kOcpFloor;
  float tensor_scale = 1.0f;
  std::vector<std::uint8_t> codes;
  std::vector<std::uint8_t> scales;

  MxTensorView view() const {
    return {shape, codes.data(), shape.line_code_bytes(), scales.data(), shape.line_scale_bytes(),
            tensor_scale};
  }
};

// Serialises a view (any strides) into the container bytes.
std::vector<std::uint8_t> SerializeMxContainer(const MxTensorView& view, ScaleRule rule);
StatusOr<MxContainer> ParseMxContainer(std::span<const std::uint8_t> bytes, std::string_view name);

}  // namespace trnmx::cli

#endif  // TRNMX_TOOLS_TRNMX_MX_CONTAINER_H_
