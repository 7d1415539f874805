// Runtime view of the scalar formats: ids, names, traits and batch
// conversions chosen by a value known only at run time (command lines,
// files). Compiled into the trnmx library; the templates in codec.h are the
// zero-overhead path for code that knows its format at compile time.
//
//   auto f = trnmx::ParseFormatName("e2m1");                  // Format::kFp4E2M1
//   const trnmx::FormatInfo& info = trnmx::GetFormatInfo(*f); // info.max_normal == 6
//   std::vector<std::uint32_t> codes(xs.size());
//   trnmx::Status s = trnmx::EncodeScalars(*f, xs, codes, {});
#ifndef TRNMX_FORMATS_REGISTRY_H_
#define TRNMX_FORMATS_REGISTRY_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "trnmx/export.h"
#include "trnmx/formats/format_id.h"
#include "trnmx/formats/policy.h"
#include "trnmx/options.h"
#include "trnmx/status.h"

namespace trnmx {

struct FormatInfo {
  Format format;
  std::string_view name;         // Command-line token: "e4m3", "bf16", ...
  std::string_view description;  // "FP8 E4M3 (OCP, float8_e4m3fn)"
  int total_bits;
  int exponent_bits;             // 0 for MXINT8.
  int mantissa_bits;             // Fraction bits; 6 for MXINT8 (n * 2^-6).
  int bias;                      // 0 for MXINT8.
  double max_normal;             // Largest finite value.
  double min_normal;             // Smallest positive normal (0 if none).
  double min_subnormal;          // Smallest positive value.
  bool has_inf;
  bool has_nan;
  std::string_view special_codes;  // Inf/NaN codes in words.
};

// Every format, in the order of the Format enum.
TRNMX_API std::span<const FormatInfo> AllFormats();
TRNMX_API const FormatInfo& GetFormatInfo(Format format);
// Parses a command-line name (case-sensitive); the error lists the valid names.
TRNMX_API StatusOr<Format> ParseFormatName(std::string_view name);

// Options of a runtime-chosen conversion. E8M0 has no default rounding
// (formats.md D10): encoding to kScaleE8M0 without `e8m0_rounding` fails.
struct ConvertOptions {
  EncodeOptions element;
  std::optional<E8M0Rounding> e8m0_rounding;
  E8M0Saturation e8m0_saturation = E8M0Saturation::kSaturate;
};

// Encodes in[i] to codes[i] (the code in the low bits). `random_bits` is
// needed (same length as `in`) only under Rounding::kStochastic. `flags`, if
// not empty, receives each conversion's EncodeFlags. Errors (nothing is
// written): length mismatch, missing random bits or E8M0 rounding.
// kFp32 is the identity (with Subnormals::kFlush honoured).
TRNMX_API Status EncodeScalars(Format format, std::span<const float> in,
                               std::span<std::uint32_t> codes, const ConvertOptions& options,
                               std::span<const std::uint32_t> random_bits = {},
                               std::span<std::uint8_t> flags = {});

// Decodes codes[i] to out[i]. A code with bits above the format's width is
// kOutOfRange, naming its index; nothing is written then.
TRNMX_API Status DecodeScalars(Format format, std::span<const std::uint32_t> codes,
                               std::span<float> out);

}  // namespace trnmx

#endif  // TRNMX_FORMATS_REGISTRY_H_
