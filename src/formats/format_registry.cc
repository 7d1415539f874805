#include "trnmx/formats/registry.h"

#include <array>
#include <bit>
#include <cstdio>
#include <string>

#include "trnmx/formats/codec.h"
#include "trnmx/formats/e8m0.h"
#include "trnmx/formats/int8.h"
#include "trnmx/formats/visit.h"

namespace trnmx {
namespace {

template <class Traits>
constexpr FormatInfo FloatInfo(Format format, std::string_view name, std::string_view description,
                               std::string_view special_codes) {
  return FormatInfo{format,
                    name,
                    description,
                    Traits::kTotalBits,
                    Traits::kExponentBits,
                    Traits::kMantissaBits,
                    Traits::kBias,
                    Traits::kMaxNormal,
                    Traits::kMinNormal,
                    Traits::kMinSubnormal,
                    Traits::kHasInf,
                    Traits::kHasNan,
                    special_codes};
}

// The formats of TRNMX_FOREACH_OTHER_FORMAT, which have no FloatTraits.
constexpr FormatInfo kFp32Info = {Format::kFp32, "fp32", "FP32 (IEEE 754 binary32)", 32, 8, 23,
                                  127, 3.4028234663852886e38, detail::Pow2(-126),
                                  detail::Pow2(-149), true, true,
                                  "Inf 7F800000/FF800000; NaN E=FF, M!=0"};
constexpr FormatInfo kScaleE8M0Info = {
    Format::kScaleE8M0, "e8m0", "E8M0 scale (OCP MX, float8_e8m0fnu; unsigned)", 8, 8, 0, 127,
    detail::Pow2(127), detail::Pow2(-127), detail::Pow2(-127), false, true,
    "no Inf, no zero; NaN FF"};
constexpr FormatInfo kMxInt8Info = {Format::kMxInt8, "int8",
                                    "MXINT8 element (int8 n, value n * 2^-6)", 8, 0, 6, 0,
                                    127.0 / 64.0, 0.0, 1.0 / 64.0, false, false,
                                    "none; code 80 = -2"};

// Every format at the index of its value.
constexpr std::array<FormatInfo, kNumFormats> kFormats = [] {
  std::array<FormatInfo, kNumFormats> t{};
#define TRNMX_X(Name, value, cli_name, description, special_codes) \
  t[value] = FloatInfo<Name##Traits>(Format::k##Name, cli_name, description, special_codes);
  TRNMX_FOREACH_FLOAT_FORMAT(TRNMX_X)
#undef TRNMX_X
#define TRNMX_X(Name, value, cli_name) t[value] = k##Name##Info;
  TRNMX_FOREACH_OTHER_FORMAT(TRNMX_X)
#undef TRNMX_X
  return t;
}();

static_assert([] {
  for (std::size_t i = 0; i < kFormats.size(); ++i) {
    if (static_cast<std::size_t>(kFormats[i].format) != i || kFormats[i].name.empty()) return false;
  }
#define TRNMX_X(Name, value, cli_name) \
  if (k##Name##Info.name != cli_name || kFormats[value].format != Format::k##Name) return false;
  TRNMX_FOREACH_OTHER_FORMAT(TRNMX_X)
#undef TRNMX_X
  return true;
}(), "format_list.h: every value 0 .. kNumFormats - 1 exactly once");

// Encodes one value; `options.e8m0_rounding` is known to be set for E8M0.
// Encodes one value; `options.e8m0_rounding` is known to be set for E8M0.
EncodeResult EncodeOne(Format format, float x, const ConvertOptions& options,
                       std::uint32_t random_bits) {
  const EncodeOptions& e = options.element;
  EncodeResult r{0, kFlagInvalid};
  if (VisitFloatFormat(format, [&](auto code) {
        r = EncodeWithFlags<typename decltype(code)::Traits>(x, e, random_bits);
      })) {
    return r;
  }
  switch (format) {
    case Format::kFp32: {
      std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
      if (e.subnormals == Subnormals::kFlush && (bits & 0x7F800000u) == 0 && (bits & 0x7FFFFFu) != 0) {
        return {bits & 0x80000000u, kFlagInexact};
      }
      return {bits, kFlagNone};
    }
    case Format::kScaleE8M0: {
      std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
      if (e.subnormals == Subnormals::kFlush && (bits & 0x7F800000u) == 0) x = 0.0f;
      return ToE8M0(x, *options.e8m0_rounding, options.e8m0_saturation);
    }
    case Format::kMxInt8: return EncodeMxInt8WithFlags(x, e, random_bits);
    default: return r;
  }
}

float DecodeOne(Format format, std::uint32_t code) {
  float value = std::bit_cast<float>(0x7FC00000u);
  if (VisitFloatFormat(format, [&](auto c) {
        value = DecodeBits<typename decltype(c)::Traits>(code);
      })) {
    return value;
  }
  switch (format) {
    case Format::kFp32: return std::bit_cast<float>(code);
    case Format::kScaleE8M0: return DecodeE8M0(code);
    case Format::kMxInt8: return DecodeMxInt8(code);
    default: return value;
  }
}

}  // namespace

std::span<const FormatInfo> AllFormats() { return kFormats; }

const FormatInfo& GetFormatInfo(Format format) {
  return kFormats[static_cast<std::size_t>(format)];
}

StatusOr<Format> ParseFormatName(std::string_view name) {
  std::string valid;
  for (const FormatInfo& info : kFormats) {
    if (info.name == name) return info.format;
    if (!valid.empty()) valid += ", ";
    valid += info.name;
  }
  return InvalidArgumentError("unknown format '" + std::string(name) + "' (valid: " + valid + ")");
}

Status EncodeScalars(Format format, std::span<const float> in, std::span<std::uint32_t> codes,
                     const ConvertOptions& options, std::span<const std::uint32_t> random_bits,
                     std::span<std::uint8_t> flags) {
  if (codes.size() != in.size()) {
    return InvalidArgumentError("EncodeScalars: " + std::to_string(in.size()) + " inputs but " +
                                std::to_string(codes.size()) + " output codes");
  }
  if (!flags.empty() && flags.size() != in.size()) {
    return InvalidArgumentError("EncodeScalars: flags has " + std::to_string(flags.size()) +
                                " entries for " + std::to_string(in.size()) + " inputs");
  }
  const bool stochastic = options.element.rounding == Rounding::kStochastic &&
                          format != Format::kScaleE8M0 && format != Format::kFp32;
  if (stochastic && random_bits.size() != in.size()) {
    return InvalidArgumentError("EncodeScalars: stochastic rounding needs one random word per input (" +
                                std::to_string(random_bits.size()) + " given for " +
                                std::to_string(in.size()) + ")");
  }
  if (format == Format::kScaleE8M0 && !options.e8m0_rounding.has_value()) {
    return InvalidArgumentError(
        "EncodeScalars: E8M0 has no default rounding; set ConvertOptions::e8m0_rounding "
        "(kDown, kUp or kNearestTiesUp)");
  }
  for (std::size_t i = 0; i < in.size(); ++i) {
    const EncodeResult r = EncodeOne(format, in[i], options, stochastic ? random_bits[i] : 0);
    codes[i] = r.code;
    if (!flags.empty()) flags[i] = r.flags;
  }
  return OkStatus();
}

Status DecodeScalars(Format format, std::span<const std::uint32_t> codes, std::span<float> out) {
  if (codes.size() != out.size()) {
    return InvalidArgumentError("DecodeScalars: " + std::to_string(codes.size()) + " codes but " +
                                std::to_string(out.size()) + " outputs");
  }
  const int width = GetFormatInfo(format).total_bits;
  if (width < 32) {
    const std::uint32_t limit = 1u << width;
    for (std::size_t i = 0; i < codes.size(); ++i) {
      if (codes[i] >= limit) {
        char hex[16];
        std::snprintf(hex, sizeof hex, "0x%X", codes[i]);
        return OutOfRangeError("code " + std::string(hex) + " at index " + std::to_string(i) +
                               " does not fit the " + std::to_string(width) + "-bit format " +
                               std::string(GetFormatInfo(format).name));
      }
    }
  }
  for (std::size_t i = 0; i < codes.size(); ++i) out[i] = DecodeOne(format, codes[i]);
  return OkStatus();
}

}  // namespace trnmx
