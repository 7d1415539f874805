// TRNMX_API marks the declarations that form libtrnmx's binary interface.
//
// The library is compiled with hidden symbol visibility (CMake
// CXX_VISIBILITY_PRESET hidden, VISIBILITY_INLINES_HIDDEN), so a shared
// libtrnmx.so exports exactly the functions and classes declared with
// TRNMX_API in these public headers: no Highway per-target code, no internal
// helpers, no third-party symbols. tests/abi/check_exports.sh checks that
// with `nm -D` on every test build. Header-only code (templates, constexpr
// and inline functions) needs no annotation: it is compiled into the caller.
//
//   class TRNMX_API MxTensor { ... };
//   TRNMX_API Status Gemm(...);
#ifndef TRNMX_EXPORT_H_
#define TRNMX_EXPORT_H_

// The standard attribute syntax, so that it can follow other attributes
// (`class [[nodiscard]] TRNMX_API Status`).
#if defined(__GNUC__) || defined(__clang__)
#define TRNMX_API [[gnu::visibility("default")]]
#else
#define TRNMX_API
#endif

#endif  // TRNMX_EXPORT_H_
