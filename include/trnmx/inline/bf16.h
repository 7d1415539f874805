// FP32 <-> BF16 batch codecs (optional xsimd inline layer, see common.h).
//
// Bits: identical to trnmx::Encode<trnmx::Bf16> / trnmx::Fp32ToBf16Rne and
// trnmx::Decode (trnmx/formats/codec.h) for every input, the project default
// of shared/reference/formats.md D11 and section 4:
//   - round to nearest, ties to even, from the FP32 bits (exact);
//   - FP32 subnormals round to BF16 subnormals (no DAZ, unlike
//     VCVTNEPS2BF16); overflow gives +-Inf (7F7FFFFF -> 7F80), never MAX;
//   - NaN -> (x >> 16) | 0x0040: sign and top payload kept, quiet bit set;
//   - decode is bits << 16 (NaN payloads kept).
// Integer ops only, so the result does not depend on MXCSR (rounding mode,
// FTZ, DAZ). Highway 1.0.3's BF16 demotion truncates; this does not.
//
//   EncodeBf16(Batch<float, Arch>) -> Codes<Arch>     one BF16 code per lane
//   DecodeBf16(Codes<Arch>)        -> Batch<float, Arch>
//   EncodeBf16(const float* in, std::uint16_t* out, std::size_t n)
//   DecodeBf16(const std::uint16_t* in, float* out, std::size_t n)
// The array forms accept any alignment and any n: full batches, then a scalar
// tail through the scalar reference. `in` and `out` must not overlap.
//
//   #include <trnmx/inline/bf16.h>
//   namespace tis = trnmx::inline_simd;
//   float x[100] = {...};
//   std::uint16_t b[100];
//   tis::EncodeBf16(x, b, 100);              // b[i] == Fp32ToBf16Rne(x[i]).bits
//   tis::DecodeBf16(b, x, 100);
//   // One batch inside an application loop:
//   auto codes = tis::EncodeBf16(xsimd::batch<float>::load_unaligned(x));
#ifndef TRNMX_INLINE_BF16_H_
#define TRNMX_INLINE_BF16_H_

#include <bit>
#include <cstddef>
#include <cstdint>

#include "trnmx/formats/codec.h"
#include "trnmx/inline/common.h"

namespace trnmx::inline_simd {

template <class Arch>
inline Codes<Arch> EncodeBf16(const Batch<float, Arch>& x) noexcept {
  using I = Codes<Arch>;
  const I bits = BitCast<std::int32_t>(x);
  const I a = bits & I(0x7FFFFFFF);              // |x|; < 2^31, so >> is logical
  const I sign = (bits >> 16) & I(0x8000);
  // RNE on the magnitude (formats.md section 4): add 0x7FFF plus the kept LSB,
  // drop 16 bits. A carry into the exponent is the correct result (-> Inf at
  // the top). NaNs must not take this path: 7F800001 would become Inf.
  const I rounded = (a + I(0x7FFF) + ((a >> 16) & I(1))) >> 16;
  const I nan = (a >> 16) | I(0x0040);
  return sign | xsimd::select(a > I(0x7F800000), nan, rounded);
}

template <class Arch>
inline Batch<float, Arch> DecodeBf16(const Codes<Arch>& codes) noexcept {
  return BitCast<float>(codes << 16);
}

template <class Arch = xsimd::default_arch>
inline void EncodeBf16(const float* in, std::uint16_t* out, std::size_t n) noexcept {
  constexpr std::size_t kLanes = Batch<float, Arch>::size;
  const std::size_t full = n - n % kLanes;  // whole batches, then a scalar tail
  for (std::size_t i = 0; i < full; i += kLanes) {
    StoreCodes<Arch>(EncodeBf16(Batch<float, Arch>::load_unaligned(in + i)), out + i);
  }
  for (std::size_t i = full; i < n; ++i) out[i] = Fp32ToBf16Rne(in[i]).bits;
}

template <class Arch = xsimd::default_arch>
inline void DecodeBf16(const std::uint16_t* in, float* out, std::size_t n) noexcept {
  constexpr std::size_t kLanes = Batch<float, Arch>::size;
  const std::size_t full = n - n % kLanes;  // whole batches, then a scalar tail
  for (std::size_t i = 0; i < full; i += kLanes) {
    DecodeBf16(LoadCodes<Arch>(in + i)).store_unaligned(out + i);
  }
  for (std::size_t i = full; i < n; ++i) out[i] = trnmx::Decode(Bf16::FromBits(in[i]));
}

}  // namespace trnmx::inline_simd

#endif  // TRNMX_INLINE_BF16_H_
