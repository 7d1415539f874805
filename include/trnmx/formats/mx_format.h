// The MX block formats as run-time values (formats.md sections 6, 8, 9):
// which element format, how many elements share a scale, how a block's
// elements are packed, and the command-line names.
//
//   MXFP8 E4M3 / E5M2   32 x FP8, one byte each           32 bytes + E8M0 scale
//   MXFP6 E2M3 / E3M2   32 x FP6, LSB-first bit stream     24 bytes + E8M0 scale
//   MXFP4               32 x FP4 E2M1, element 2i in bits 3..0 of byte i
//                                                          16 bytes + E8M0 scale
//   MXINT8              32 x INT8 (n * 2^-6)               32 bytes + E8M0 scale
//   NVFP4               16 x FP4 E2M1, packed as MXFP4     8 bytes + UE4M3 scale,
//                       plus one FP32 scale per tensor
//
//   const MxFormatInfo& info = GetMxFormatInfo(MxFormat::kMxfp4);
//   // info.block_size == 32, info.block_bytes == 16, info.name == "mxfp4"
//   StatusOr<MxFormat> f = ParseMxFormatName("mxfp6-e2m3");
#ifndef TRNMX_FORMATS_MX_FORMAT_H_
#define TRNMX_FORMATS_MX_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "trnmx/formats/registry.h"
#include "trnmx/formats/scale_rule.h"
#include "trnmx/status.h"

namespace trnmx {

enum class MxFormat : std::uint8_t {
  kMxfp8E4M3,
  kMxfp8E5M2,
  kMxfp6E2M3,
  kMxfp6E3M2,
  kMxfp4,
  kMxint8,
  kNvfp4,
};

// Type of the per-block scale.
enum class MxScaleKind : std::uint8_t {
  kE8M0,   // Power of two 2^(code - 127), FF = NaN (OCP MX).
  kUe4m3,  // Unsigned E4M3 (NVFP4), times the per-tensor FP32 scale.
};

struct MxFormatInfo {
  MxFormat format;
  std::string_view name;     // Command-line token: "mxfp8-e4m3", "mxfp4", "nvfp4", ...
  Format element;            // Element format (registry.h).
  int element_bits;          // 8, 6 or 4.
  std::size_t block_size;    // Elements sharing one scale: 32 (MX), 16 (NVFP4).
  std::size_t block_bytes;   // Packed element bytes per block: block_size * element_bits / 8.
  MxScaleKind scale_kind;
  bool has_tensor_scale;     // NVFP4: one FP32 scale per tensor.
};

inline constexpr MxFormatInfo kMxFormatInfos[] = {
    {MxFormat::kMxfp8E4M3, "mxfp8-e4m3", Format::kFp8E4M3, 8, 32, 32, MxScaleKind::kE8M0, false},
    {MxFormat::kMxfp8E5M2, "mxfp8-e5m2", Format::kFp8E5M2, 8, 32, 32, MxScaleKind::kE8M0, false},
    {MxFormat::kMxfp6E2M3, "mxfp6-e2m3", Format::kFp6E2M3, 6, 32, 24, MxScaleKind::kE8M0, false},
    {MxFormat::kMxfp6E3M2, "mxfp6-e3m2", Format::kFp6E3M2, 6, 32, 24, MxScaleKind::kE8M0, false},
    {MxFormat::kMxfp4, "mxfp4", Format::kFp4E2M1, 4, 32, 16, MxScaleKind::kE8M0, false},
    {MxFormat::kMxint8, "mxint8", Format::kMxInt8, 8, 32, 32, MxScaleKind::kE8M0, false},
    {MxFormat::kNvfp4, "nvfp4", Format::kFp4E2M1, 4, 16, 8, MxScaleKind::kUe4m3, true},
};

constexpr std::span<const MxFormatInfo> AllMxFormats() { return kMxFormatInfos; }

constexpr const MxFormatInfo& GetMxFormatInfo(MxFormat format) {
  return kMxFormatInfos[static_cast<std::size_t>(format)];
}

// Parses a command-line name ("mxfp8-e4m3", ..., "nvfp4"); an unknown name
// gets InvalidArgument listing the valid ones.
inline StatusOr<MxFormat> ParseMxFormatName(std::string_view name) {
  std::string valid;
  for (const MxFormatInfo& info : kMxFormatInfos) {
    if (info.name == name) return info.format;
    valid += valid.empty() ? "" : ", ";
    valid += info.name;
  }
  return InvalidArgumentError("unknown MX format '" + std::string(name) + "' (valid: " + valid + ")");
}

}  // namespace trnmx

#endif  // TRNMX_FORMATS_MX_FORMAT_H_
