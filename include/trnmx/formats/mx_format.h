// The MX block formats as run-time values (formats.md sections 6, 8, 9):
// which element format, how many elements share a scale, how a block's
// elements are packed, and the command-line names.
//
//   MXFP8 E4M3 / E5M2   32 x FP8, one byte each           32 bytes + E8M0 scale
//   MXFP6 (both FP6)    32 x FP6, LSB-first bit stream     24 bytes + E8M0 scale
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

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <string>
#include <string_view>

#include "trnmx/formats/format_id.h"
#include "trnmx/formats/format_list.h"
#include "trnmx/formats/traits.h"
#include "trnmx/status.h"

namespace trnmx {

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

// In the order of the list, which is the order of the values (checked below).
inline constexpr MxFormatInfo kMxFormatInfos[] = {
#define TRNMX_X(Name, value, cli_name, Element, block_size, scale_kind, has_tensor_scale)  \
  {MxFormat::k##Name,                                                                      \
   cli_name,                                                                               \
   Format::k##Element,                                                                     \
   Element##Traits::kTotalBits,                                                            \
   block_size,                                                                             \
   block_size * Element##Traits::kTotalBits / 8,                                           \
   MxScaleKind::scale_kind,                                                                \
   has_tensor_scale},
    TRNMX_FOREACH_MX_FORMAT(TRNMX_X)
#undef TRNMX_X
};
static_assert([] {
  for (std::size_t i = 0; i < std::size(kMxFormatInfos); ++i) {
    if (static_cast<std::size_t>(kMxFormatInfos[i].format) != i) return false;
  }
  return true;
}(), "TRNMX_FOREACH_MX_FORMAT must list the formats in the order of their values 0, 1, ...");

constexpr std::span<const MxFormatInfo> AllMxFormats() { return kMxFormatInfos; }

constexpr const MxFormatInfo& GetMxFormatInfo(MxFormat format) {
  return kMxFormatInfos[static_cast<std::size_t>(format)];
}

// OCP MX proper: 32-element blocks with an E8M0 scale and no tensor scale
// (every MX format but NVFP4). These are the GEMM operand formats and the
// ones the SIMD line kernels handle.
constexpr bool IsOcpMxFormat(MxFormat format) {
  const MxFormatInfo& info = GetMxFormatInfo(format);
  return info.block_size == 32 && info.scale_kind == MxScaleKind::kE8M0 && !info.has_tensor_scale;
}

// The OCP MX formats, in value order.
inline constexpr auto kOcpMxFormats = [] {
  constexpr std::size_t n = [] {
    std::size_t count = 0;
    for (const MxFormatInfo& info : kMxFormatInfos) count += IsOcpMxFormat(info.format) ? 1 : 0;
    return count;
  }();
  std::array<MxFormat, n> formats{};
  std::size_t i = 0;
  for (const MxFormatInfo& info : kMxFormatInfos) {
    if (IsOcpMxFormat(info.format)) formats[i++] = info.format;
  }
  return formats;
}();

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
