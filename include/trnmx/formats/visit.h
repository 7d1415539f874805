// From a run-time format value to compile-time types, generated from the
// lists of format_list.h (gemma.cpp's Type + TypeEnum<T>() idea): code that
// needs the traits of a format known only at run time calls a visitor with
// a generic lambda instead of writing its own switch, so a new format in the
// list reaches every such place.
//
//   // Float formats: fn gets the storage type's value (Code::Traits inside).
//   trnmx::VisitFloatFormat(trnmx::Format::kFp8E4M3, [](auto code) {
//     using Traits = typename decltype(code)::Traits;   // Fp8E4M3Traits
//   });
//   static_assert(trnmx::kFormatOf<trnmx::Fp6E2M3> == trnmx::Format::kFp6E2M3);
//
//   // MX formats: fn gets an MxFormatTag (format, element type and traits).
//   float max = trnmx::VisitMxFormat(trnmx::MxFormat::kMxfp4, [](auto tag) {
//     return static_cast<float>(decltype(tag)::Traits::kMaxNormal);  // 6
//   });
//   trnmx::ForEachMxFormat([](auto tag) { /* every MX format, in value order */ });
#ifndef TRNMX_FORMATS_VISIT_H_
#define TRNMX_FORMATS_VISIT_H_

#include <cstddef>
#include <type_traits>
#include <utility>

#include "trnmx/formats/format_list.h"
#include "trnmx/formats/mx_format.h"
#include "trnmx/formats/registry.h"
#include "trnmx/formats/traits.h"
#include "trnmx/formats/types.h"

namespace trnmx {

// ---------------------------------------------------------------------------
// Scalar float formats (TRNMX_FOREACH_FLOAT_FORMAT).
// ---------------------------------------------------------------------------

namespace detail {
template <class Code>
struct FormatOfCode;  // Defined for the FloatCode types only.
#define TRNMX_X(Name, ...)                           \
  template <>                                        \
  struct FormatOfCode<Name> {                        \
    static constexpr Format value = Format::k##Name; \
  };
TRNMX_FOREACH_FLOAT_FORMAT(TRNMX_X)
#undef TRNMX_X
}  // namespace detail

// The Format value of a FloatCode storage type.
template <class Code>
inline constexpr Format kFormatOf = detail::FormatOfCode<Code>::value;

// Whether `format` is one of the float formats (has a FloatCode type).
constexpr bool IsFloatFormat(Format format) {
  switch (format) {
#define TRNMX_X(Name, ...) case Format::k##Name:
    TRNMX_FOREACH_FLOAT_FORMAT(TRNMX_X)
#undef TRNMX_X
    return true;
    default:
      return false;
  }
}

// Calls fn(Code{}) with the storage type of `format` and returns true, or
// returns false without calling fn when `format` is not a float format.
template <class F>
constexpr bool VisitFloatFormat(Format format, F&& fn) {
  switch (format) {
#define TRNMX_X(Name, ...) \
  case Format::k##Name:    \
    fn(Name{});            \
    return true;
    TRNMX_FOREACH_FLOAT_FORMAT(TRNMX_X)
#undef TRNMX_X
    default:
      return false;
  }
}

// Calls fn(Code{}) for every float format, in list order.
template <class F>
constexpr void ForEachFloatFormat(F&& fn) {
#define TRNMX_X(Name, ...) fn(Name{});
  TRNMX_FOREACH_FLOAT_FORMAT(TRNMX_X)
#undef TRNMX_X
}

// ---------------------------------------------------------------------------
// MX block formats (TRNMX_FOREACH_MX_FORMAT).
// ---------------------------------------------------------------------------

// Compile-time description of one MX format.
template <MxFormat kF, class ElementT, class TraitsT>
struct MxFormatTag {
  static constexpr MxFormat kFormat = kF;
  using Element = ElementT;  // Storage type of one element code (Fp8E4M3, MxInt8, ...).
  using Traits = TraitsT;    // Its traits (Fp8E4M3Traits, MxInt8Traits, ...).
  static constexpr const MxFormatInfo& kInfo = kMxFormatInfos[static_cast<std::size_t>(kF)];
  static constexpr bool kIsOcpMx = IsOcpMxFormat(kF);  // Not NVFP4 (mx_format.h).
};

namespace mx_tags {
#define TRNMX_X(Name, value, cli_name, Element, ...) \
  using Mx##Name##Tag = MxFormatTag<MxFormat::k##Name, Element, Element##Traits>;
TRNMX_FOREACH_MX_FORMAT(TRNMX_X)
#undef TRNMX_X
// The first tag of the list (the result type of a visit).
template <class First, class... Rest>
struct Head {
  using type = First;
};
#define TRNMX_X(Name, ...) Mx##Name##Tag,
using FirstTag = Head<TRNMX_FOREACH_MX_FORMAT(TRNMX_X) void>::type;
#undef TRNMX_X
}  // namespace mx_tags

// Calls fn(Tag{}) with the MxFormatTag of `format` and returns its result.
// `format` must be a valid value (callers validate it first); for any other
// value fn is not called and the result is value-initialised.
template <class F>
constexpr decltype(auto) VisitMxFormat(MxFormat format, F&& fn) {
  using R = decltype(fn(mx_tags::FirstTag{}));
  switch (format) {
#define TRNMX_X(Name, ...) \
  case MxFormat::k##Name:  \
    return fn(mx_tags::Mx##Name##Tag{});
    TRNMX_FOREACH_MX_FORMAT(TRNMX_X)
#undef TRNMX_X
  }
  if constexpr (!std::is_void_v<R>) return R{};
}

// Calls fn(Tag{}) for every MX format, in value order.
template <class F>
constexpr void ForEachMxFormat(F&& fn) {
#define TRNMX_X(Name, ...) fn(mx_tags::Mx##Name##Tag{});
  TRNMX_FOREACH_MX_FORMAT(TRNMX_X)
#undef TRNMX_X
}

}  // namespace trnmx

#endif  // TRNMX_FORMATS_VISIT_H_
