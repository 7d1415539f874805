// Storage types: each holds only the bits of one encoded value.
//
// They have no implicit conversions and no arithmetic: a value is made with
// `FromBits` or by a named conversion (codec.h, e8m0.h, int8.h) with explicit
// policies, and read back with `bits` or a decode function. Two values compare
// equal when their bits are equal (so +0 != -0, and NaN == NaN of the same
// code), which is what code-level tests and packed buffers need.
//
//   trnmx::Fp8E4M3 c = trnmx::Fp8E4M3::FromBits(0x38);
//   float x = trnmx::Decode(c);            // 1.0f
//
// Element codes of the 6- and 4-bit formats sit in the low bits of a byte with
// the high bits zero; packed layouts (two FP4 per byte, four FP6 per three
// bytes) belong to the MX layer.
#ifndef TRNMX_FORMATS_TYPES_H_
#define TRNMX_FORMATS_TYPES_H_

#include <cstdint>
#include <type_traits>

#include "trnmx/formats/format_list.h"
#include "trnmx/formats/traits.h"

namespace trnmx {

// A code of the floating-point format described by `TraitsT`.
template <class TraitsT, class StorageT>
struct FloatCode {
  using Traits = TraitsT;
  using Storage = StorageT;
  static_assert(sizeof(StorageT) * 8 >= static_cast<unsigned>(TraitsT::kTotalBits));

  // The code; bits above Traits::kTotalBits are zero.
  StorageT bits = 0;

  // Wraps `code` (masked to the format's width).
  static constexpr FloatCode FromBits(std::uint32_t code) {
    constexpr std::uint32_t kMask =
        TraitsT::kTotalBits >= 32 ? ~0u : (1u << TraitsT::kTotalBits) - 1;
    return FloatCode{static_cast<StorageT>(code & kMask)};
  }
  friend constexpr bool operator==(FloatCode, FloatCode) = default;
};

// The storage type of a format's code: the narrowest of uint8/uint16 that
// holds it.
template <class TraitsT>
using FloatStorage = std::conditional_t<(TraitsT::kTotalBits > 8), std::uint16_t, std::uint8_t>;

// One storage type per format of TRNMX_FOREACH_FLOAT_FORMAT (format_list.h),
// named as there: Bf16, Fp16 (uint16 codes), Fp8E4M3, ..., Fp4E2M1 (uint8).
#define TRNMX_X(Name, ...) using Name = FloatCode<Name##Traits, FloatStorage<Name##Traits>>;
TRNMX_FOREACH_FLOAT_FORMAT(TRNMX_X)
#undef TRNMX_X

// E8M0: the MX block scale ("float8_e8m0fnu"). Unsigned power of two
// 2^(code - 127) for codes 00..FE; FF is NaN; no zero, no Inf.
// Conversions in e8m0.h.
struct ScaleE8M0 {
  std::uint8_t bits = 0;
  static constexpr ScaleE8M0 FromBits(std::uint32_t code) {
    return ScaleE8M0{static_cast<std::uint8_t>(code)};
  }
  friend constexpr bool operator==(ScaleE8M0, ScaleE8M0) = default;
};

// MXINT8 element: two's-complement int8 n with value n * 2^-6 (range
// -2 .. 1 + 63/64; code 80 = -2 is produced only under kAllowMinus128).
// Conversions in int8.h.
struct MxInt8 {
  std::uint8_t bits = 0;
  static constexpr MxInt8 FromBits(std::uint32_t code) {
    return MxInt8{static_cast<std::uint8_t>(code)};
  }
  friend constexpr bool operator==(MxInt8, MxInt8) = default;
};

}  // namespace trnmx

#endif  // TRNMX_FORMATS_TYPES_H_
