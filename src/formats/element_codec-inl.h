// Per-target vector FP32 <-> element codecs, shared by bulk_codec-inl.h and
// mx_line-inl.h. Identical bits to codec.h (EncodeWithFlags / DecodeBits)
// and int8.h on every target.
//
// Encoding, lane by lane, for |x| bits a (sign handled apart), m mantissa
// bits, bias b, emin = 1 - b:
//
//   E' = max(a >> 23, 1)           exponent field; FP32 subnormals act as E = 1
//   v = a - min((E' - 1) << 23, (127 - b) << 23)
//                                   in the target's normal range: a with its
//                                   exponent rebased to the target's bias;
//                                   below it: the 24-bit significand sig
//   sh = max(emin + 127 + 23 - m - E', 23 - m)
//                                   bits to drop: 23 - m in the normal range,
//                                   more for target subnormals; from 25 on
//                                   every rounding gives 0 (sig < 2^24)
//   code = round(v >> sh)          RNE: (v + 2^(sh-1) - 1 + odd) >> sh; a
//                                   carry into the exponent (or from the top
//                                   subnormal into the smallest normal) is
//                                   the correct next code
//
// which equals codec.h's ((q + b - 1) << m) + n; then code > MAX -> the
// overflow code, +-Inf and NaN -> their policy codes (element_consts.h), the
// sign OR-ed on top. Non-finite inputs are handled in a branch taken only for
// vectors that contain one, so the common case is a fixed, branch-free
// sequence of about 20 integer ops per vector. Round to nearest even, the
// default, takes about 12 instead (RoundToCodeNearestEven: the constant shift
// in the normal range, one FP32 add below it). MXINT8 is the same rounding of
// sig with sh = 144 - E' (a fixed-point conversion), then a clamp.
#if defined(TRNMX_SRC_FORMATS_ELEMENT_CODEC_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TRNMX_SRC_FORMATS_ELEMENT_CODEC_INL_H_
#undef TRNMX_SRC_FORMATS_ELEMENT_CODEC_INL_H_
#else
#define TRNMX_SRC_FORMATS_ELEMENT_CODEC_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "formats/element_consts.h"
#include "internal/vec_array-inl.h"
#include "trnmx/formats/policy.h"
#include "trnmx/formats/scale_rule.h"
#include "trnmx/formats/traits.h"

HWY_BEFORE_NAMESPACE();
namespace trnmx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Calls f(std::integral_constant<Rounding, R>{}) for the run-time `rounding`
// (ties-away, toward-zero, else nearest-even): the one place that turns the
// option into the compile-time parameter of the encoders.
template <class F>
HWY_INLINE decltype(auto) WithRounding(Rounding rounding, F&& f) {
  switch (rounding) {
    case Rounding::kTiesAway:
      return f(std::integral_constant<Rounding, Rounding::kTiesAway>());
    case Rounding::kTowardZero:
      return f(std::integral_constant<Rounding, Rounding::kTowardZero>());
    default:
      return f(std::integral_constant<Rounding, Rounding::kNearestEven>());
  }
}

// Element format constants of the encoders.
template <class Traits>
struct EncodeShape {
  static constexpr int kM = Traits::kMantissaBits;
  // sh = clamp(kShBase - E', kShMin, 31): bits dropped (file comment).
  static constexpr int kShBase = Traits::kEmin + 127 + 23 - kM;
  static constexpr int kShMin = 23 - kM;
  static constexpr std::uint32_t kMaxCode = Traits::kMaxMagnitudeCode;
  static constexpr std::uint32_t kSignMask = Traits::kSignMask;
  static constexpr std::uint32_t kRebias = static_cast<std::uint32_t>(127 - Traits::kBias) << 23;
  // Round to nearest even (RoundToCodeNearestEven): 2^(kShMin - 1) - 1 -
  // kRebias (mod 2^32), FP32 bits of the target's smallest normal 2^emin,
  // and of 2^(emin - m + 23), whose ulp is the target's subnormal spacing.
  static constexpr std::uint32_t kRneAdd = (1u << (kShMin - 1)) - 1u - kRebias;
  static constexpr std::uint32_t kMinNormal = static_cast<std::uint32_t>(127 + Traits::kEmin) << 23;
  static constexpr std::uint32_t kSubMagic =
      static_cast<std::uint32_t>(127 + Traits::kEmin - kM + 23) << 23;
};
// MXINT8: n = round(|x| * 64) drops 144 - E' bits, at least 1; limit 127.
template <>
struct EncodeShape<MxInt8Traits> {
  static constexpr int kShBase = 144;
  static constexpr int kShMin = 1;
  static constexpr std::uint32_t kMaxCode = 127;
  static constexpr std::uint32_t kSignMask = 0;
  // No normal range: v = a - min((E' - 1) << 23, kRebias) must always be sig.
  static constexpr std::uint32_t kRebias = 0x7FFFFFFF;
  // Unused: MXINT8 rounds through RoundToCode.
  static constexpr std::uint32_t kRneAdd = 0, kMinNormal = 0, kSubMagic = 0;
};

// Every vector constant of one encoder, broadcast once per call (kept in
// registers or read as memory operands instead of being rematerialised per
// vector), and the per-call policy constants of element_consts.h. Read
// through accessors: SVE's vectors are sizeless and cannot be members
// (vec_array-inl.h), so there the struct keeps the lane values and each
// accessor broadcasts its own (one DUP; the compiler hoists it from loops).
template <class Traits, class DI>
struct EncodeVecs {
  using V = hn::Vec<DI>;
  using Shape = EncodeShape<Traits>;
  static constexpr std::int32_t I(std::uint32_t v) { return static_cast<std::int32_t>(v); }
  EncodeVecs(DI di, const internal::ElementEncodeConsts& k)
      : flush(k.flush_below != 0),
        flush_below_(Make(di, I(k.flush_below))),
        overflow_finite_(Make(di, I(k.overflow_finite_mag))),
        overflow_inf_(Make(di, I(k.overflow_inf_mag))),
        nan_keep_(Make(di, I(k.nan_sign_keep))),
        nan_xor_(Make(di, I(k.nan_sign_xor))),
        nan_mag_(Make(di, I(k.nan_mag))),
        nan_payload_(Make(di, I(k.nan_payload_mask))),
        int8_negative_limit_(Make(di, I(k.int8_negative_limit))),
        one_(Make(di, 1)),
        abs_mask_(Make(di, 0x7FFFFFFF)),
        below_inf_(Make(di, 0x7F7FFFFF)),
        inf_(Make(di, 0x7F800000)),
        sh_base_(Make(di, Shape::kShBase)),
        sh_min_(Make(di, Shape::kShMin)),
        sh_max_(Make(di, 31)),
        k32_(Make(di, 32)),
        low31_(Make(di, 0x7FFFFFFF)),
        max_code_(Make(di, I(Shape::kMaxCode))),
        sign_mask_(Make(di, I(Shape::kSignMask))),
        byte_mask_(Make(di, 0xFF)),
        emax_(Make(di, Traits::kEmax)),
        k254_(Make(di, 254)),
        exp_one_(Make(di, 0x00800000)),
        rebias_(Make(di, I(Shape::kRebias))),
        rne_add_(Make(di, I(Shape::kRneAdd))),
        min_normal_(Make(di, I(Shape::kMinNormal))),
        sub_magic_(Make(di, I(Shape::kSubMagic))) {}

  bool flush;
  HWY_INLINE V flush_below() const { return Use(flush_below_); }
  HWY_INLINE V overflow_finite() const { return Use(overflow_finite_); }
  HWY_INLINE V overflow_inf() const { return Use(overflow_inf_); }
  HWY_INLINE V nan_keep() const { return Use(nan_keep_); }
  HWY_INLINE V nan_xor() const { return Use(nan_xor_); }
  HWY_INLINE V nan_mag() const { return Use(nan_mag_); }
  HWY_INLINE V nan_payload() const { return Use(nan_payload_); }
  HWY_INLINE V int8_negative_limit() const { return Use(int8_negative_limit_); }
  HWY_INLINE V one() const { return Use(one_); }
  HWY_INLINE V abs_mask() const { return Use(abs_mask_); }
  HWY_INLINE V below_inf() const { return Use(below_inf_); }
  HWY_INLINE V inf() const { return Use(inf_); }
  HWY_INLINE V sh_base() const { return Use(sh_base_); }
  HWY_INLINE V sh_min() const { return Use(sh_min_); }
  HWY_INLINE V sh_max() const { return Use(sh_max_); }
  HWY_INLINE V k32() const { return Use(k32_); }
  HWY_INLINE V low31() const { return Use(low31_); }
  HWY_INLINE V max_code() const { return Use(max_code_); }
  HWY_INLINE V sign_mask() const { return Use(sign_mask_); }
  HWY_INLINE V byte_mask() const { return Use(byte_mask_); }
  HWY_INLINE V emax() const { return Use(emax_); }
  HWY_INLINE V k254() const { return Use(k254_); }
  HWY_INLINE V exp_one() const { return Use(exp_one_); }
  HWY_INLINE V rebias() const { return Use(rebias_); }
  HWY_INLINE V rne_add() const { return Use(rne_add_); }
  HWY_INLINE V min_normal() const { return Use(min_normal_); }
  HWY_INLINE V sub_magic() const { return Use(sub_magic_); }

 private:
#if TRNMX_SIZELESS_VECTORS
  using Stored = std::int32_t;
  static HWY_INLINE Stored Make(DI /*di*/, std::int32_t v) { return v; }
  static HWY_INLINE V Use(Stored v) { return hn::Set(DI(), v); }
#else
  using Stored = V;
  static HWY_INLINE V Make(DI di, std::int32_t v) { return hn::Set(di, v); }
  static HWY_INLINE V Use(V v) { return v; }
#endif
  Stored flush_below_, overflow_finite_, overflow_inf_, nan_keep_, nan_xor_, nan_mag_, nan_payload_,
      int8_negative_limit_;
  Stored one_, abs_mask_, below_inf_, inf_, sh_base_, sh_min_, sh_max_, k32_, low31_, max_code_,
      sign_mask_, byte_mask_, emax_, k254_, exp_one_, rebias_, rne_add_, min_normal_, sub_magic_;
};

// Logical right shift by per-lane counts of non-negative int32 lanes; u32
// srlv is native from AVX2 on, unlike Highway 1.0.3's signed variant.
template <class DI, class V = hn::Vec<DI>>
HWY_INLINE V ShrVar(DI di, V v, V count) {
  const hn::RebindToUnsigned<DI> du;
  return hn::BitCast(di, hn::Shr(hn::BitCast(du, v), hn::BitCast(du, count)));
}

// Whether a per-lane shift by 32 or more gives 0 (x86 vpsrlvd from AVX2 on);
// elsewhere (Highway's SSSE3/SSE4 emulation, SCALAR's C++ shift) counts are
// clamped to 31, which rounds the same (sig < 2^24: anything from 25 on is 0).
#if HWY_TARGET <= HWY_AVX2 && HWY_ARCH_X86
inline constexpr bool kWideShiftsGiveZero = true;
#else
inline constexpr bool kWideShiftsGiveZero = false;
#endif

// round(sig / 2^sh) by rounding mode R; sig < 2^24, sh >= 1 per lane (and
// <= 31 unless kWideShiftsGiveZero).
template <Rounding R, class Traits, class DI, class V = hn::Vec<DI>>
HWY_INLINE V RoundShiftVar(DI di, V sig, V sh, const EncodeVecs<Traits, DI>& k) {
  if constexpr (R == Rounding::kTowardZero) {
    return ShrVar(di, sig, sh);
  } else {
    // 2^(sh-1) - 1 without a shift by 32 (0 when sh > 32).
    const V half_m1 = ShrVar(di, k.low31(), hn::Sub(k.k32(), sh));
    if constexpr (R == Rounding::kTiesAway) {
      return ShrVar(di, hn::Add(sig, hn::Add(half_m1, k.one())), sh);
    } else {
      const V odd = hn::And(ShrVar(di, sig, sh), k.one());
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

// |x| bits a (after the optional flush) -> the magnitude code with carry,
// before the overflow check. With E' = max(E, 1) and rebias = (127 - b) << 23:
//   v = a - min((E' - 1) << 23, rebias)
// is a - rebias in the target's normal range (its exponent field already
// rebased, so rounding v >> (23 - m) carries into it) and the significand
// sig = a - ((E' - 1) << 23) below it, where the code is n itself; then
//   code = round(v >> sh), sh = max(kShBase - E', kShMin).
// Only three variable shifts and one immediate shift per vector: on CPUs
// that run 512-bit shifts on one port they are the bottleneck.
template <Rounding R, class Traits, class DI, class V = hn::Vec<DI>>
HWY_INLINE V RoundToCode(DI di, V a, const EncodeVecs<Traits, DI>& k) {
  const V exp = hn::And(a, k.inf());  // E << 23
  // For E = 0 this takes a + 2^23 instead of sig = a, and sh below is
  // kShBase instead of kShBase - 1: both >= 25 for every format here, where
  // any v < 2^24 rounds to 0 either way (kShBase >= 141 > 25 + 1).
  static_assert(EncodeShape<Traits>::kShBase - 1 >= 25);
  const V v = hn::Sub(a, hn::Min(hn::Sub(exp, k.exp_one()), k.rebias()));
  V sh = hn::Max(hn::Sub(k.sh_base(), hn::ShiftRight<23>(exp)), k.sh_min());
  if constexpr (!kWideShiftsGiveZero) sh = hn::Min(sh, k.sh_max());
  return RoundShiftVar<R>(di, v, sh, k);
}

// RoundToCode for round to nearest even in two parts, with about half the
// ops and one shift fewer. In the target's normal range (a >= 2^emin) the
// exponent is rebased and the mantissa shifted with the usual carry:
//   code = (a - rebias + 2^(sh-1) - 1 + odd) >> sh,  sh = 23 - m
// (bit sh of a - rebias is bit sh of a: rebias is a multiple of 2^23). Below
// it the FPU rounds: a + 2^(emin - m + 23) is exact up to one rounding to
// nearest even at the ulp 2^(emin - m), the subnormal spacing, so the sum's
// bits minus the constant's are the code (0 .. 2^m, the last being the
// smallest normal). FP32 subnormal inputs give 0 with or without DAZ.
template <class Traits, class DI, class V = hn::Vec<DI>>
HWY_INLINE V RoundToCodeNearestEven(DI di, V a, const EncodeVecs<Traits, DI>& k) {
  const hn::Rebind<float, DI> df;
  constexpr int kSh = EncodeShape<Traits>::kShMin;
  const V odd = hn::And(hn::ShiftRight<kSh>(a), k.one());
  const V normal = hn::ShiftRight<kSh>(hn::Add(hn::Add(a, k.rne_add()), odd));
  const V sum = hn::BitCast(di, hn::Add(hn::BitCast(df, a), hn::BitCast(df, k.sub_magic())));
  return hn::IfThenElse(hn::Lt(a, k.min_normal()), hn::Sub(sum, k.sub_magic()), normal);
}

// The magnitude code of finite |x| bits a (already flushed where the options
// flush): rounded by R with the carry into the exponent, and a code above MAX
// replaced by the overflow code. EncodeFloatFromAbs without the sign and the
// non-finite cases.
template <class Traits, Rounding R, class DI, class V = hn::Vec<DI>>
HWY_INLINE V MagnitudeCode(DI di, V a, const EncodeVecs<Traits, DI>& k) {
  constexpr int m = Traits::kMantissaBits;
  static_assert(Traits::kEmin >= -126 && m <= 10);
  V mag;
  if constexpr (Traits::kBias == 127) {
    // BF16: FP32's exponent range, so the rounding of a itself carries into
    // the exponent and FP32 subnormals map to BF16 subnormals (section 4).
    mag = RoundShiftConst<R, 23 - m>(di, a);
  } else if constexpr (R == Rounding::kNearestEven) {
    mag = RoundToCodeNearestEven(di, a, k);
  } else {
    mag = RoundToCode<R>(di, a, k);
  }
  // code > MAX -> overflow_finite in one op: overflow_finite is MAX or the
  // code right above it (Inf or NaN, NonSatOverflowCode), so no code lies
  // strictly between the two (static_asserts in element_consts.h).
  return hn::Min(mag, k.overflow_finite());
}

// EncodeFloatCodes after its first step: `a` is |x|'s bits, already flushed
// where the options flush, and `bits` gives the sign (only its top bit is
// read, so any value of x's sign will do).
template <class Traits, Rounding R, bool kMaybeSpecial = true, class DI, class V = hn::Vec<DI>>
HWY_INLINE V EncodeFloatFromAbs(DI di, V bits, V a, const EncodeVecs<Traits, DI>& k) {
  constexpr int m = Traits::kMantissaBits;
  const V mag = MagnitudeCode<Traits, R>(di, a, k);
  // The sign by a compare and a masked OR (no shift).
  const auto negative = hn::Lt(bits, hn::Zero(di));
  V code = hn::IfThenElse(negative, hn::Or(mag, k.sign_mask()), mag);
  if constexpr (kMaybeSpecial) {
    if (HWY_UNLIKELY(!hn::AllFalse(di, hn::Gt(a, k.below_inf())))) {
      const V sign_code = hn::IfThenElseZero(negative, k.sign_mask());
      code = hn::IfThenElse(hn::Eq(a, k.inf()), hn::Or(sign_code, k.overflow_inf()), code);
      const V payload = hn::And(hn::ShiftRight<23 - m>(a), k.nan_payload());
      const V nan_code = hn::Or(hn::Xor(hn::And(sign_code, k.nan_keep()), k.nan_xor()),
                                hn::Or(k.nan_mag(), payload));
      code = hn::IfThenElse(hn::Gt(a, k.inf()), nan_code, code);
    }
  }
  return code;
}

// FP32 bits -> codes of the float format Traits (low bits of each int32
// lane). kMaybeSpecial = false promises finite inputs (MX blocks whose amax
// is finite) and drops the non-finite check.
template <class Traits, Rounding R, bool kMaybeSpecial = true, class DI, class V = hn::Vec<DI>>
HWY_INLINE V EncodeFloatCodes(DI di, V bits, const EncodeVecs<Traits, DI>& k) {
  V a = hn::And(bits, k.abs_mask());
  if (k.flush) a = hn::IfThenZeroElse(hn::Lt(a, k.flush_below()), a);
  return EncodeFloatFromAbs<Traits, R, kMaybeSpecial>(di, bits, a, k);
}

// FP32 bits -> MXINT8 codes (int8 n = round(x * 64), clamped; int8.h).
// |x| * 64 = sig * 2^(E - 144): drop 144 - E bits; E >= 144 (and Inf) keeps
// more than 2^22 after dropping 1 bit and clamps as int8.h does.
template <Rounding R, bool kMaybeSpecial = true, class DI, class V = hn::Vec<DI>>
HWY_INLINE V EncodeInt8Codes(DI di, V bits, const EncodeVecs<MxInt8Traits, DI>& k) {
  V a = hn::And(bits, k.abs_mask());
  if (k.flush) a = hn::IfThenZeroElse(hn::Lt(a, k.flush_below()), a);
  V n = RoundToCode<R>(di, a, k);  // rebias 0: v = sig, a fixed-point rounding
  const auto negative = hn::Lt(bits, hn::Zero(di));
  n = hn::Min(n, hn::IfThenElse(negative, k.int8_negative_limit(), k.max_code()));
  V code = hn::And(hn::IfThenElse(negative, hn::Sub(hn::Zero(di), n), n), k.byte_mask());
  if constexpr (kMaybeSpecial) code = hn::IfThenZeroElse(hn::Gt(a, k.inf()), code);  // NaN -> 0
  return code;
}

// int32 lanes holding values 0..255 (or 0..65535) -> one narrow lane each,
// in order. vpmovdb/vpmovdw for 512-bit vectors (Highway 1.0.3's DemoteTo
// takes four ops there); DemoteTo (exact for these values) elsewhere.
template <class DN, class V>
HWY_INLINE hn::Vec<DN> NarrowCodes(DN dn, V v) {
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
  if constexpr (sizeof(v.raw) == 64) {
    using T = hn::TFromD<DN>;
    if constexpr (sizeof(T) == 1) {
      return hn::Vec<DN>{_mm512_cvtepi32_epi8(v.raw)};
    } else {
      return hn::Vec<DN>{_mm512_cvtepi32_epi16(v.raw)};
    }
  } else {
    return hn::DemoteTo(dn, v);
  }
#else
  return hn::DemoteTo(dn, v);
#endif
}

#if HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
// AVX2 byte codes of the float format Traits: ORs its sign bit into each
// byte of `bytes` whose byte in `negative` has its top bit set (signed packs
// of the inputs' FP32 or BF16 bits: a negative input, -0 included, keeps its
// top bit); the bits shifted in from the next byte are masked off.
template <class Traits>
HWY_INLINE __m256i OrSignBytes(__m256i bytes, __m256i negative) {
  constexpr int kSignMask = static_cast<int>(Traits::kSignMask);
  constexpr int kSignBit = kSignMask == 0x80 ? 7 : kSignMask == 0x20 ? 5 : 3;
  static_assert(kSignMask == 1 << kSignBit, "a sign bit of an 8-bit or narrower code");
  if constexpr (kSignBit != 7) negative = _mm256_srli_epi16(negative, 7 - kSignBit);
  return _mm256_or_si256(
      bytes, _mm256_and_si256(negative, _mm256_set1_epi8(static_cast<char>(kSignMask))));
}

// Four vectors of 8 int32 codes c[0..3] (each 0..255) -> their 32 bytes,
// still in the packs' order: two packusdw and one packuswb work within
// 128-bit halves, leaving [c0 0-3, c1 0-3, c2 0-3, c3 0-3 | c0 4-7, ...].
HWY_INLINE __m256i PackWithinHalves(const __m256i* c) {
  return _mm256_packus_epi16(_mm256_packus_epi32(c[0], c[1]), _mm256_packus_epi32(c[2], c[3]));
}

// PackWithinHalves' bytes in element order: one vpermd.
HWY_INLINE __m256i ElementOrder(__m256i packed) {
  return _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Four vectors of 8 int32 codes c[0..3] (each 0..255) -> their 32 bytes in
// order: about one op per vector against four for DemoteTo's.
HWY_INLINE __m256i PackCodeBytes(const __m256i* c) { return ElementOrder(PackWithinHalves(c)); }

// 32 bytes b[0..31] (codes below 16) -> the 16 bytes b[2i] | b[2i + 1] << 4
// (FP4's packing): (w | w >> 4) & 0xFF per 16-bit lane, packed.
HWY_INLINE __m128i JoinNibbles(__m256i bytes) {
  const __m256i w = _mm256_and_si256(_mm256_or_si256(bytes, _mm256_srli_epi16(bytes, 4)),
                                     _mm256_set1_epi16(0xFF));
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi16(w, w), 0x08));
}

// The same for magnitude codes, with the sign bit of Traits set where the
// FP32 bits x[i] of the input are negative (the signed packs of x, in the
// same order): about two ops per vector against eight for DemoteTo and a
// sign blend per vector.
template <class Traits>
HWY_INLINE __m256i PackCodeBytes(const __m256i* c, const __m256i* x) {
  const __m256i negative =
      _mm256_packs_epi16(_mm256_packs_epi32(x[0], x[1]), _mm256_packs_epi32(x[2], x[3]));
  return ElementOrder(OrSignBytes<Traits>(PackWithinHalves(c), negative));
}
#endif

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
        di,
        hn::Mul(hn::ConvertTo(df, mag), hn::Set(df, static_cast<float>(detail::Pow2(1 - b - m)))));
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
      hwy::Prefetch(src + i + 8192);  // as the streaming conversions do
      for (std::size_t j = 0; j < 64; j += N)
        hn::Stream(hn::LoadU(d8, src + i + j), d8, dst + i + j);
    }
  }
  std::memcpy(dst + i, src + i, bytes - i);
}

}  // namespace HWY_NAMESPACE
}  // namespace trnmx
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
