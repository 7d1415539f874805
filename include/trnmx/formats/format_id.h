// The format enums, generated from format_list.h: Format (the scalar
// formats, registry.h) and MxFormat (the MX block formats, mx_format.h).
// Their values are API (see format_list.h).
#ifndef TRNMX_FORMATS_FORMAT_ID_H_
#define TRNMX_FORMATS_FORMAT_ID_H_

#include <cstddef>
#include <cstdint>

#include "trnmx/formats/format_list.h"

namespace trnmx {

// The scalar formats: k<Name> = value for every entry of
// TRNMX_FOREACH_OTHER_FORMAT and TRNMX_FOREACH_FLOAT_FORMAT (kFp32 = 0,
// kBf16 = 1, ..., kMxInt8 = 9).
enum class Format : std::uint8_t {
#define TRNMX_X(Name, value, ...) k##Name = value,
  TRNMX_FOREACH_OTHER_FORMAT(TRNMX_X) TRNMX_FOREACH_FLOAT_FORMAT(TRNMX_X)
#undef TRNMX_X
};

// Number of Format values; they are 0 .. kNumFormats - 1.
inline constexpr std::size_t kNumFormats = 0
#define TRNMX_X(...) +1
    TRNMX_FOREACH_OTHER_FORMAT(TRNMX_X) TRNMX_FOREACH_FLOAT_FORMAT(TRNMX_X)
#undef TRNMX_X
    ;

// The MX formats: k<Name> = value for every entry of TRNMX_FOREACH_MX_FORMAT
// (kMxfp8E4M3 = 0, ..., kNvfp4 = 6).
enum class MxFormat : std::uint8_t {
#define TRNMX_X(Name, value, ...) k##Name = value,
  TRNMX_FOREACH_MX_FORMAT(TRNMX_X)
#undef TRNMX_X
};

}  // namespace trnmx

#endif  // TRNMX_FORMATS_FORMAT_ID_H_
