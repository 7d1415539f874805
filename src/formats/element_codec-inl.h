// Per-target vector FP32 <-> element codecs, shared by bulk_codec-inl.h and
// mx_line-inl.h. Integer ops only on the encode side, identical bits to
// codec.h (EncodeWithFlags / DecodeBits) and int8.h on every target.
//
// Encoding, lane by lane, for |x| bits a (sign handled apart):
//
//   E' = max(a >> 23, 1)           exponent field; FP32 subnormals act as E = 1
//   sig = a - ((E' - 1) << 23)     24-bit significand (no implicit bit if E = 0)
//   sh = clamp(emin + 127 + 23 - m - E', 23 - m, 31)
//                                   bits to drop: 23 - m in the target's normal
//                                   range, more below it (target subnormals);
//                                   31 is enough to round anything below half
//                                   the smallest subnormal to 0
//   n = round(sig >> sh)           RNE: (sig + 2^(sh-1) - 1 + odd) >> sh
//   code = ((max(E', emin + 127) - 128 + b) << m) + n
//                                   = codec.h's ((q + b - 1) << m) + n; a carry
//                                   of n into the next binade stays correct
//
// then code > MAX -> the overflow code, +-Inf and NaN -> their policy codes
// (element_consts.h), sign OR-ed on top. Non-finite inputs are handled in a
// branch taken only for vectors that contain one, so the common case is a
// fixed, branch-free sequence of about 20 integer ops per vector.
#if defined(TRNMX_SRC_FORMATS_ELEMENT_CODEC_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TRNMX_SRC_FORMATS_ELEMENT_CODEC_INL_H_
#undef TRNMX_SRC_FORMATS_ELEMENT_CODEC_INL_H_
#else
#define TRNMX_SRC_FORMATS_ELEMENT_CODEC_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "formats/element_consts.h"
#include "trnmx/formats/policy.h"
#include "trnmx/formats/traits.h"

HWY_BEFORE_NAMESPACE();
namespace trnmx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The per-call constants of element_consts.h, broadcast once.
template <class DI>
struct EncodeVecs {
  using V = hn::Vec<DI>;
  V flush_below, overflow_finite, overflow_inf, nan_keep, nan_xor, nan_mag, nan_payload,
      int8_negative_limit;
  EncodeVecs(DI di, const internal::ElementEncodeConsts& k)
      : flush_below(hn::Set(di, static_cast<std::int32_t>(k.flush_below))),
        overflow_finite(hn::Set(di, static_cast<std::int32_t>(k.overflow_finite_mag))),
        overflow_inf(hn::Set(di, static_cast<std::int32_t>(k.overflow_inf_mag))),
        nan_keep(hn::Set(di, static_cast<std::int32_t>(k.nan_sign_keep))),
        nan_xor(hn::Set(di, static_cast<std::int32_t>(k.nan_sign_xor))),
        nan_mag(hn::Set(di, static_cast<std::int32_t>(k.nan_mag))),
        nan_payload(hn::Set(di, static_cast<std::int32_t>(k.nan_payload_mask))),
        int8_negative_limit(hn::Set(di, static_cast<std::int32_t>(k.int8_negative_limit))) {}
};

// Logical right shift by per-lane counts (1..31) of non-negative int32 lanes;
// u32 srlv is native from AVX2 on, unlike Highway 1.0.3's signed variant.
template <class DI, class V = hn::Vec<DI>>
HWY_INLINE V ShrVar(DI di, V v, V count) {
  const hn::RebindToUnsigned<DI> du;
  return hn::BitCast(di, hn::BitCast(du, v) >> hn::BitCast(du, count));
}

// round(sig / 2^sh) by rounding mode R; sig < 2^24, 1 <= sh <= 31 per lane.
template <Rounding R, class DI, class V = hn::Vec<DI>>
HWY_INLINE V RoundShiftVar(DI di, V sig, V sh) {
  if constexpr (R == Rounding::kTowardZero) {
    return ShrVar(di, sig, sh);
  } else {
    const V one = hn::Set(di, 1);
    // 2^(sh-1) - 1 without a shift by 32.
    const V half_m1 = ShrVar(di, hn::Set(di, 0x7FFFFFFF), hn::Sub(hn::Set(di, 32), sh));
    if constexpr (R == Rounding::kTiesAway) {
      return ShrVar(di, hn::Add(sig, hn::Add(half_m1, one)), sh);
    } else {
      const V odd = hn::And(ShrVar(di, sig, sh), one);
      return ShrVar(di, hn::Add(hn::Add(sig, half_m1), odd), sh);
    }
  }
}

// round(v / 2^kShift) for 0 <= v < 2^31 - 2^kShift.
template <Rounding R, int kShift, class DI, class V = hn::Vec<DI>>
HWY_INLINE V RoundShiftConst(DI di, V v) {
  if constexpr (R == Rounding::kTowardZero) {
    return hn::ShiftRight<kShift>(v);
  } else if constexpr (R == Rounding::kTiesAway) {
    return hn::ShiftRight<kShift>(hn::Add(v, hn::Set(di, 1 << (kShift - 1))));
  } else {
    const V odd = hn::And(hn::ShiftRight<kShift>(v), hn::Set(di, 1));
    return hn::ShiftRight<kShift>(hn::Add(hn::Add(v, hn::Set(di, (1 << (kShift - 1)) - 1)), odd));
  }
}

// FP32 bits -> codes of the float format Traits (low bits of each int32 lane).
template <class Traits, Rounding R, class DI, class V = hn::Vec<DI>>
HWY_INLINE V EncodeFloatCodes(DI di, V bits, const EncodeVecs<DI>& k) {
  constexpr int m = Traits::kMantissaBits;
  constexpr int b = Traits::kBias;
  constexpr int emin = Traits::kEmin;
  constexpr int total = Traits::kTotalBits;
  static_assert(emin >= -126 && m <= 10);
  V a = hn::And(bits, hn::Set(di, 0x7FFFFFFF));
  a = hn::IfThenZeroElse(hn::Lt(a, k.flush_below), a);
  V mag;
  if constexpr (b == 127) {
    // BF16: FP32's exponent range, so the rounding of a itself carries into
    // the exponent and FP32 subnormals map to BF16 subnormals (section 4).
    mag = RoundShiftConst<R, 23 - m>(di, a);
  } else {
    const V one = hn::Set(di, 1);
    const V e1 = hn::Max(hn::ShiftRight<23>(a), one);
    const V sig = hn::Sub(a, hn::ShiftLeft<23>(hn::Sub(e1, one)));
    const V sh = hn::Min(hn::Max(hn::Sub(hn::Set(di, emin + 127 + 23 - m), e1), hn::Set(di, 23 - m)),
                         hn::Set(di, 31));
    const V n = RoundShiftVar<R>(di, sig, sh);
    const V base = hn::Sub(hn::Max(e1, hn::Set(di, emin + 127)), hn::Set(di, 128 - b));
    mag = hn::Add(hn::ShiftLeft<m>(base), n);
  }
  mag = hn::IfThenElse(hn::Gt(mag, hn::Set(di, static_cast<std::int32_t>(Traits::kMaxMagnitudeCode))),
                       k.overflow_finite, mag);
  // Arithmetic shift then mask: the sign bit lands on the format's sign bit.
  const V sign_code =
      hn::And(hn::ShiftRight<32 - total>(bits), hn::Set(di, static_cast<std::int32_t>(Traits::kSignMask)));
  V code = hn::Or(sign_code, mag);
  const V inf = hn::Set(di, 0x7F800000);
  if (HWY_UNLIKELY(!hn::AllFalse(di, hn::Gt(a, hn::Set(di, 0x7F7FFFFF))))) {
    code = hn::IfThenElse(hn::Eq(a, inf), hn::Or(sign_code, k.overflow_inf), code);
    const V payload = hn::And(hn::ShiftRight<23 - m>(a), k.nan_payload);
    const V nan_code =
        hn::Or(hn::Xor(hn::And(sign_code, k.nan_keep), k.nan_xor), hn::Or(k.nan_mag, payload));
    code = hn::IfThenElse(hn::Gt(a, inf), nan_code, code);
  }
  return code;
}

// FP32 bits -> MXINT8 codes (int8 n = round(x * 64), clamped; int8.h).
template <Rounding R, class DI, class V = hn::Vec<DI>>
HWY_INLINE V EncodeInt8Codes(DI di, V bits, const EncodeVecs<DI>& k) {
  V a = hn::And(bits, hn::Set(di, 0x7FFFFFFF));
  a = hn::IfThenZeroElse(hn::Lt(a, k.flush_below), a);
  const V one = hn::Set(di, 1);
  const V e1 = hn::Max(hn::ShiftRight<23>(a), one);
  const V sig = hn::Sub(a, hn::ShiftLeft<23>(hn::Sub(e1, one)));
  // |x| * 64 = sig * 2^(E - 144): drop 144 - E bits. E >= 144 (and Inf)
  // rounds far above 128 with 1 bit dropped, and clamps like int8.h does.
  const V sh = hn::Min(hn::Max(hn::Sub(hn::Set(di, 144), e1), one), hn::Set(di, 31));
  V n = RoundShiftVar<R>(di, sig, sh);
  const auto negative = hn::Lt(bits, hn::Zero(di));
  n = hn::Min(n, hn::IfThenElse(negative, k.int8_negative_limit, hn::Set(di, 127)));
  V code = hn::And(hn::IfThenElse(negative, hn::Sub(hn::Zero(di), n), n), hn::Set(di, 0xFF));
  code = hn::IfThenZeroElse(hn::Gt(a, hn::Set(di, 0x7F800000)), code);  // NaN -> 0
  return code;
}

// Codes of the float format Traits (low bits of int32 lanes; higher bits are
// ignored as in DecodeBits) -> FP32, exactly.
template <class Traits, class DI, class V = hn::Vec<DI>>
HWY_INLINE hn::Vec<hn::Rebind<float, DI>> DecodeFloatCodes(DI di, V code) {
  const hn::Rebind<float, DI> df;
  constexpr int m = Traits::kMantissaBits;
  constexpr int b = Traits::kBias;
  constexpr int total = Traits::kTotalBits;
  if constexpr (b == 127 && m == 7) {
    return hn::BitCast(df, hn::ShiftLeft<16>(code));  // BF16: bits << 16.
  } else {
    constexpr std::int32_t kSign = static_cast<std::int32_t>(Traits::kSignMask);
    const V sign32 = hn::ShiftLeft<32 - total>(hn::And(code, hn::Set(di, kSign)));
    const V mag = hn::And(code, hn::Set(di, kSign - 1));
    const V normal = hn::Add(hn::ShiftLeft<23 - m>(mag), hn::Set(di, (127 - b) << 23));
    // Subnormals: M * 2^(1 - b - m), exact (M < 2^10, the product is normal).
    const V sub = hn::BitCast(
        di, hn::Mul(hn::ConvertTo(df, mag), hn::Set(df, static_cast<float>(detail::Pow2(1 - b - m)))));
    V r = hn::IfThenElse(hn::Lt(mag, hn::Set(di, 1 << m)), sub, normal);
    if constexpr (Traits::kNonFinite == NonFinite::kIeee) {
      const V mant = hn::And(mag, hn::Set(di, static_cast<std::int32_t>(Traits::kMantissaMask)));
      V special;
      if constexpr (m >= 7) {  // FP16: the payload fits; keep it (DecodeBits).
        special = hn::Or(hn::Set(di, 0x7F800000), hn::ShiftLeft<23 - m>(mant));
      } else {  // E5M2: Inf, or the quiet NaN 7FC00000.
        special = hn::IfThenElse(hn::Eq(mant, hn::Zero(di)), hn::Set(di, 0x7F800000),
                                 hn::Set(di, 0x7FC00000));
      }
      // Highway 1.0.3 has no integer >=: E == all ones <=> mag > (ones << m) - 1.
      const V below = hn::Set(di, static_cast<std::int32_t>((Traits::kExponentAllOnes << m) - 1));
      r = hn::IfThenElse(hn::Gt(mag, below), special, r);
    } else if constexpr (Traits::kNonFinite == NonFinite::kNanAllOnes) {
      const V nan = hn::Set(di, static_cast<std::int32_t>(Traits::kMaxMagnitudeCode + 1));
      r = hn::IfThenElse(hn::Eq(mag, nan), hn::Set(di, 0x7FC00000), r);
    }
    return hn::BitCast(df, hn::Or(r, sign32));
  }
}

// MXINT8 codes (low byte of int32 lanes) -> n * 2^-6, as DecodeMxInt8.
template <class DI, class V = hn::Vec<DI>>
HWY_INLINE hn::Vec<hn::Rebind<float, DI>> DecodeInt8Codes(DI /*di*/, V code) {
  const hn::Rebind<float, DI> df;
  const V n = hn::ShiftRight<24>(hn::ShiftLeft<24>(code));  // sign-extend the low byte
  return hn::Mul(hn::ConvertTo(df, n), hn::Set(df, 0x1p-6f));
}

// Copies `bytes` bytes; every whole 64-byte line of dst is written with
// non-temporal stores, the unaligned head and tail with memcpy. The caller
// issues hwy::FlushStream() before other threads read dst.
HWY_INLINE void StreamBytes(std::uint8_t* HWY_RESTRICT dst, const std::uint8_t* HWY_RESTRICT src,
                            std::size_t bytes) {
  const hn::ScalableTag<std::uint8_t> d8;
  const std::size_t N = hn::Lanes(d8);
  std::size_t head = (0 - reinterpret_cast<std::uintptr_t>(dst)) & 63;
  if (head > bytes) head = bytes;
  std::memcpy(dst, src, head);
  std::size_t i = head;
  if (N <= 64) {
    for (; i + 64 <= bytes; i += 64) {
      for (std::size_t j = 0; j < 64; j += N) hn::Stream(hn::LoadU(d8, src + i + j), d8, dst + i + j);
    }
  }
  std::memcpy(dst + i, src + i, bytes - i);
}

}  // namespace HWY_NAMESPACE
}  // namespace trnmx
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
