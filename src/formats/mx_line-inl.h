// Per-target MX line kernels (mx_line.h): quantize / dequantize one line of
// 32-element blocks with the packing of formats.md section 9, bit for bit
// equal to QuantizeMxBlock / DequantizeMxBlock (mx_block.h) plus packing.
//
// Quantizing a block:
//   1. load its 32 values in the packer's order (FP8/INT8 natural; FP4 even /
//      odd elements; FP6 the four elements of each 3-byte group; FP4 and FP6
//      natural on AVX2, whose PackBlockBytes packs bytes), so that every
//      element lands in the lane its code needs;
//   2. amax = max over lanes of (bits & 7FFFFFFF), an integer max: any lane
//      order gives the same value (section 6.2 step 2);
//   3. amax > 7F800000 (NaN) or == 7F800000 under SpecialBlock::kDefault ->
//      scale FF and zero codes; == 7F800000 under kSatFiniteBlock -> scale FE
//      and saturating elements; else scale = ScaleCodeFromAmax (the scalar
//      rule, once per block) and r = ReciprocalE8M0(scale);
//   4. codes = encode(V_i * r) with one FP32 multiply per element, exactly
//      as the reference; pack and store.
// A tail block is run from a zero-padded copy: +0 padding leaves amax alone
// and encodes as code 00, the layout's padding.
#if defined(TRNMX_SRC_FORMATS_MX_LINE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TRNMX_SRC_FORMATS_MX_LINE_INL_H_
#undef TRNMX_SRC_FORMATS_MX_LINE_INL_H_
#else
#define TRNMX_SRC_FORMATS_MX_LINE_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "formats/element_codec-inl.h"
#include "formats/kernel_args.h"
#include "internal/vec_array-inl.h"
#include "trnmx/formats/e8m0.h"
#include "trnmx/formats/scale_rule.h"
#include "trnmx/formats/traits.h"
#include "trnmx/formats/visit.h"

HWY_BEFORE_NAMESPACE();
namespace trnmx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

inline constexpr std::size_t kMxBlock = 32;

// Vectors of int32 lanes used for a format: FP6 packs four codes into three
// bytes per lane group and uses at most 8 lanes (one block per
// LoadInterleaved4); the others up to 16.
template <int kBits>
using MxTag = hn::CappedTag<std::int32_t, kBits == 6 ? 8 : 16>;

// The 32 values (or codes) of a block as int32 vectors of tag DI: 32 /
// Lanes(di) of them, fixed at compile time except on SVE, whose Lanes is
// known at run time only (and at most 32 / kMinLanes).
template <class DI>
using BlockVecs = VecArray<DI, kMxBlock / kMinLanes<DI>>;

template <class Traits, class DI, class V = hn::Vec<DI>>
HWY_INLINE hn::Vec<hn::Rebind<float, DI>> DecodeMxCodes(DI di, V codes) {
  if constexpr (detail::kIsMxInt8<Traits>) {
    return DecodeInt8Codes(di, codes);
  } else {
    return DecodeFloatCodes<Traits>(di, codes);
  }
}

// Store, or non-temporal store of a whole 16-byte vector (kNT).
template <bool kNT, class D, class V>
HWY_INLINE void PutCodes(V v, D d, std::uint8_t* HWY_RESTRICT p) {
  if constexpr (kNT) {
    static_assert(hn::MaxLanes(D()) == 16);
    hn::Stream(v, d, p);
  } else {
    hn::StoreU(v, d, p);
  }
}

// AVX2 (8 int32 lanes) packs FP8, FP6 and FP4 codes four vectors at a time
// (PackBlockBytes), from blocks loaded in memory order, and quantizes groups
// of eight blocks under kOcpFloor (QuantizeGroup8, QuantizeGroup8Bf16).
#if HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
#define TRNMX_MX_AVX2 1
#else
#define TRNMX_MX_AVX2 0
#endif

// Whether PackBlockBytes packs the kBits-bit codes of Traits.
template <class Traits, int kBits>
inline constexpr bool kBytePack =
    TRNMX_MX_AVX2 && !detail::kIsMxInt8<Traits> && (kBits == 8 || kBits == 6 || kBits == 4);

// The element order a block of kBits-bit codes is loaded in: LoadBlock's
// kBits argument.
template <class Traits, int kBits>
inline constexpr int kLoadOrder = kBytePack<Traits, kBits> ? 8 : kBits;

#if TRNMX_MX_AVX2
// Stores the 32 codes of a block, given one per byte in element order: FP8
// as they are; FP6 as four codes a, b, c, d per 3 bytes, a | b << 6 | c <<
// 12 | d << 18 (vpmaddubsw by 1 and 64, vpmaddwd by 1 and 4096, then the low
// 3 bytes of each dword gathered by vpshufb and vpermd); FP4 with adjacent
// bytes joined (JoinNibbles). kNT (FP8, FP4): non-temporal stores of 16-byte
// vectors (`out` 16-byte aligned).
template <int kBits, bool kNT>
HWY_INLINE void StoreCodeBytes(__m256i bytes, std::uint8_t* HWY_RESTRICT out) {
  __m128i* dst = reinterpret_cast<__m128i*>(out);
  if constexpr (kBits == 8) {
    if constexpr (kNT) {
      _mm_stream_si128(dst, _mm256_castsi256_si128(bytes));
      _mm_stream_si128(dst + 1, _mm256_extracti128_si256(bytes, 1));
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), bytes);
    }
  } else if constexpr (kBits == 6) {
    static_assert(!kNT);  // 24 bytes a block: streamed lines are staged
    const __m256i pairs = _mm256_maddubs_epi16(bytes, _mm256_set1_epi16(0x4001));  // a + 64 b
    const __m256i quads =
        _mm256_madd_epi16(pairs, _mm256_set1_epi32(0x10000001));  // + 4096 (c + 64 d)
    const __m256i low3 = _mm256_shuffle_epi8(
        quads, _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1, 0, 1, 2, 4,
                                5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1));
    const __m256i joined =
        _mm256_permutevar8x32_epi32(low3, _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7));
    _mm_storeu_si128(dst, _mm256_castsi256_si128(joined));
    _mm_storel_epi64(dst + 1, _mm256_extracti128_si256(joined, 1));
  } else {
    static_assert(kBits == 4);
    const __m128i packed = JoinNibbles(bytes);
    if constexpr (kNT) {
      _mm_stream_si128(dst, packed);
    } else {
      _mm_storeu_si128(dst, packed);
    }
  }
}

// AVX2, FP8, FP6 and FP4: the codes of a block loaded in memory order (x) from
// its |x * r| bits a, packed by PackCodeBytes (element_codec-inl.h) with the
// signs of x, or, where a non-finite lane may occur, with the codes'
// own signs from EncodeFloatFromAbs; stored at `out`.
template <class Traits, Rounding R, int kBits, bool kMaybeSpecial, bool kNT, class DI>
HWY_INLINE void PackBlockBytes(DI di, const BlockVecs<DI>& x, const BlockVecs<DI>& a,
                               const EncodeVecs<Traits, DI>& k, std::uint8_t* HWY_RESTRICT out) {
  static_assert(hn::MaxLanes(DI()) == 8 && kBytePack<Traits, kBits>);
  __m256i c[4];
  __m256i xs[4];
  for (std::size_t v = 0; v < 4; ++v) {
    xs[v] = x.Get(v).raw;
    if constexpr (kMaybeSpecial) {
      c[v] = EncodeFloatFromAbs<Traits, R, true>(di, x.Get(v), a.Get(v), k).raw;
    } else {
      c[v] = MagnitudeCode<Traits, R>(di, a.Get(v), k).raw;
    }
  }
  StoreCodeBytes<kBits, kNT>(kMaybeSpecial ? PackCodeBytes(c) : PackCodeBytes<Traits>(c, xs), out);
}
#endif  // TRNMX_MX_AVX2

// Packs the codes c of a block (low bits of int32 lanes, in LoadBlock's
// order) into kBits * 4 bytes at `out`.
template <class Traits, int kBits, bool kNT, class DI>
HWY_INLINE void PackCodes(DI di, const BlockVecs<DI>& c, const EncodeVecs<Traits, DI>& k,
                          std::uint8_t* HWY_RESTRICT out) {
  using V = hn::Vec<DI>;
  const hn::Rebind<std::uint8_t, DI> d8;
  TRNMX_LANES_CONSTEXPR std::size_t N = LanesOf(di);
  TRNMX_LANES_CONSTEXPR std::size_t kV = kMxBlock / N;
  if constexpr (kBits == 8) {
#if HWY_ARCH_X86 && HWY_TARGET == HWY_AVX3_DL
    if constexpr (hn::MaxLanes(DI()) == 16) {
      // VBMI: the low bytes of both vectors in one vpermt2b (vpmovdb is two
      // uops per vector on current Intel cores).
      alignas(64) static constexpr std::uint8_t kLowBytes[64] = {
          0,  4,  8,  12, 16, 20, 24, 28, 32, 36,  40,  44,  48,  52,  56,  60,
          64, 68, 72, 76, 80, 84, 88, 92, 96, 100, 104, 108, 112, 116, 120, 124};
      const __m512i bytes =
          _mm512_permutex2var_epi8(c.Get(0).raw, _mm512_load_si512(kLowBytes), c.Get(1).raw);
      if constexpr (kNT) {
        _mm_stream_si128(reinterpret_cast<__m128i*>(out), _mm512_castsi512_si128(bytes));
        _mm_stream_si128(reinterpret_cast<__m128i*>(out + 16), _mm512_extracti32x4_epi32(bytes, 1));
      } else {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_castsi512_si256(bytes));
      }
      return;
    }
#endif
    for (std::size_t v = 0; v < kV; ++v) PutCodes<kNT>(NarrowCodes(d8, c.Get(v)), d8, out + v * N);
  } else if constexpr (kBits == 4) {
    for (std::size_t p = 0; p < kV / 2; ++p) {
      PutCodes<kNT>(NarrowCodes(d8, hn::Or(c.Get(2 * p), hn::ShiftLeft<4>(c.Get(2 * p + 1)))), d8,
                    out + p * N);
    }
  } else {
    // Group a, b, c, d -> 24 bits a | b << 6 | c << 12 | d << 18, stored
    // little-endian in 3 bytes (section 9).
    for (std::size_t q = 0; q < kV / 4; ++q) {
      const V w =
          hn::Or(hn::Or(c.Get(4 * q), hn::ShiftLeft<6>(c.Get(4 * q + 1))),
                 hn::Or(hn::ShiftLeft<12>(c.Get(4 * q + 2)), hn::ShiftLeft<18>(c.Get(4 * q + 3))));
      const auto b0 = NarrowCodes(d8, hn::And(w, k.byte_mask()));
      const auto b1 = NarrowCodes(d8, hn::And(hn::ShiftRight<8>(w), k.byte_mask()));
      const auto b2 = NarrowCodes(d8, hn::ShiftRight<16>(w));
      hn::StoreInterleaved3(b0, b1, b2, d8, out + q * 3 * N);
    }
  }
}

// Step 4: codes = encode(x * r), packed into kBits * 4 bytes at `out`.
template <class Traits, Rounding R, int kBits, bool kMaybeSpecial, bool kNT = false, class DI>
HWY_INLINE void EncodeAndPack(DI di, const BlockVecs<DI>& x, hn::Vec<hn::Rebind<float, DI>> r,
                              const EncodeVecs<Traits, DI>& k, std::uint8_t* HWY_RESTRICT out) {
  using V = hn::Vec<DI>;
  const hn::Rebind<float, DI> df;
  TRNMX_LANES_CONSTEXPR std::size_t kV = kMxBlock / LanesOf(di);
  BlockVecs<DI> c;
  if constexpr (detail::kIsMxInt8<Traits>) {
    for (std::size_t v = 0; v < kV; ++v) {
      const V y = hn::BitCast(di, hn::Mul(hn::BitCast(df, x.Get(v)), r));
      c.Set(v, EncodeInt8Codes<R, kMaybeSpecial>(di, y, k));
    }
  } else {
    // |x * r| as |x| * r (r > 0: the same bits), reusing the |x| of the amax
    // step, x's sign for the code's, and the flush option tested once a block.
    BlockVecs<DI> a;
    for (std::size_t v = 0; v < kV; ++v) {
      a.Set(v, hn::BitCast(di, hn::Mul(hn::BitCast(df, hn::And(x.Get(v), k.abs_mask())), r)));
    }
    if (k.flush) {
      for (std::size_t v = 0; v < kV; ++v) {
        a.Set(v, hn::IfThenZeroElse(hn::Lt(a.Get(v), k.flush_below()), a.Get(v)));
      }
    }
#if TRNMX_MX_AVX2
    if constexpr (kBytePack<Traits, kBits>) {
      PackBlockBytes<Traits, R, kBits, kMaybeSpecial, kNT>(di, x, a, k, out);
      return;
    }
#endif
    for (std::size_t v = 0; v < kV; ++v) {
      c.Set(v, EncodeFloatFromAbs<Traits, R, kMaybeSpecial>(di, x.Get(v), a.Get(v), k));
    }
  }
  if constexpr (!kBytePack<Traits, kBits>) PackCodes<Traits, kBits, kNT>(di, c, k, out);
}

// Loads the 32 values of a block in packing order: FP8/INT8 natural, FP4
// even / odd elements, FP6 the four elements of each 3-byte group.
template <int kBits, class DI>
HWY_INLINE void LoadBlock(DI di, const float* HWY_RESTRICT in, BlockVecs<DI>& x) {
  const hn::Rebind<float, DI> df;
  TRNMX_LANES_CONSTEXPR std::size_t N = LanesOf(di);
  TRNMX_LANES_CONSTEXPR std::size_t kV = kMxBlock / N;
  if constexpr (kBits == 8) {
    for (std::size_t v = 0; v < kV; ++v) x.Set(v, hn::BitCast(di, hn::LoadU(df, in + v * N)));
  } else if constexpr (kBits == 4) {
    for (std::size_t p = 0; p < kV / 2; ++p) {
      hn::Vec<hn::Rebind<float, DI>> even, odd;
      hn::LoadInterleaved2(df, in + p * 2 * N, even, odd);
      x.Set(2 * p, hn::BitCast(di, even));
      x.Set(2 * p + 1, hn::BitCast(di, odd));
    }
  } else {
    static_assert(kBits == 6);
    for (std::size_t q = 0; q < kV / 4; ++q) {
      hn::Vec<hn::Rebind<float, DI>> a, b, c, d;
      hn::LoadInterleaved4(df, in + q * 4 * N, a, b, c, d);
      x.Set(4 * q, hn::BitCast(di, a));
      x.Set(4 * q + 1, hn::BitCast(di, b));
      x.Set(4 * q + 2, hn::BitCast(di, c));
      x.Set(4 * q + 3, hn::BitCast(di, d));
    }
  }
}

// The same for BF16 input (bit patterns): each widened exactly to FP32 bits
// (<< 16) in the lane the float version would fill.
template <int kBits, class DI>
HWY_INLINE void LoadBlock(DI di, const std::uint16_t* HWY_RESTRICT in, BlockVecs<DI>& x) {
  const hn::Rebind<std::uint16_t, DI> d16;
  const hn::RebindToUnsigned<DI> du;
  const auto widen = [&](hn::Vec<decltype(d16)> h) HWY_ATTR {
    return hn::ShiftLeft<16>(hn::BitCast(di, hn::PromoteTo(du, h)));
  };
  TRNMX_LANES_CONSTEXPR std::size_t N = LanesOf(di);
  TRNMX_LANES_CONSTEXPR std::size_t kV = kMxBlock / N;
  if constexpr (kBits == 8) {
    for (std::size_t v = 0; v < kV; ++v) x.Set(v, widen(hn::LoadU(d16, in + v * N)));
  } else if constexpr (kBits == 4) {
    for (std::size_t p = 0; p < kV / 2; ++p) {
      hn::Vec<decltype(d16)> even, odd;
      hn::LoadInterleaved2(d16, in + p * 2 * N, even, odd);
      x.Set(2 * p, widen(even));
      x.Set(2 * p + 1, widen(odd));
    }
  } else {
    static_assert(kBits == 6);
    for (std::size_t q = 0; q < kV / 4; ++q) {
      hn::Vec<decltype(d16)> a, b, c, d;
      hn::LoadInterleaved4(d16, in + q * 4 * N, a, b, c, d);
      x.Set(4 * q, widen(a));
      x.Set(4 * q + 1, widen(b));
      x.Set(4 * q + 2, widen(c));
      x.Set(4 * q + 3, widen(d));
    }
  }
}

// The |x| bits of a loaded block folded into one vector by Max (the amax
// is the largest lane; it does not depend on the lane order).
template <class Traits, class DI>
HWY_INLINE hn::Vec<DI> AbsMaxLanes(DI di, const BlockVecs<DI>& x, const EncodeVecs<Traits, DI>& k) {
  TRNMX_LANES_CONSTEXPR std::size_t kV = kMxBlock / LanesOf(di);
  hn::Vec<DI> m = hn::And(x.Get(0), k.abs_mask());
  for (std::size_t v = 1; v < kV; ++v) m = hn::Max(m, hn::And(x.Get(v), k.abs_mask()));
  return m;
}

// kOcpFloor from amax bits (lanes with finite values): the scale code
// max(E - emax, 0) (ScaleCodeFromAmax; E <= 254 needs no upper clamp) in
// *code and the reciprocal's FP32 bits (254 - code) << 23, in the vector
// domain (MXINT8 reaches code FE: 2^-127).
template <class Traits, class DI, class V = hn::Vec<DI>>
HWY_INLINE V OcpFloorReciprocalBits(DI di, V amax, const EncodeVecs<Traits, DI>& k, V* code) {
  *code = hn::Max(hn::Sub(hn::ShiftRight<23>(amax), k.emax()), hn::Zero(di));
  V r_bits = hn::ShiftLeft<23>(hn::Sub(k.k254(), *code));
  if constexpr (Traits::kEmax == 0) {
    r_bits = hn::IfThenElse(hn::Eq(*code, k.k254()), hn::Set(di, 0x00400000), r_bits);
  }
  return r_bits;
}

// Quantizes the 32 values at `in` into kBits * 4 bytes at `out` and one
// scale byte.
template <class Traits, Rounding R, int kBits, bool kNT = false, class DI, class TIn>
HWY_INLINE void QuantizeBlock(DI di, const TIn* HWY_RESTRICT in, std::uint8_t* HWY_RESTRICT out,
                              std::uint8_t* HWY_RESTRICT scale,
                              const internal::MxQuantizeArgs& args, const EncodeVecs<Traits, DI>& k,
                              const EncodeVecs<Traits, DI>& k_sat) {
  using V = hn::Vec<DI>;
  const hn::Rebind<float, DI> df;
  // Lanes(di) divides 32: a power of two (Highway rounds SVE's down to one)
  // of at most MaxLanes(DI()) lanes.
  static_assert(kMxBlock % hn::MaxLanes(DI()) == 0);

  // 1. Load in packing order.
  BlockVecs<DI> x;
  LoadBlock<kLoadOrder<Traits, kBits>>(di, in, x);

  // 2. amax of the FP32 bits, broadcast to every lane.
  const V amax_v = hn::MaxOfLanes(di, AbsMaxLanes(di, x, k));

  // 3. Scale.
  if (HWY_UNLIKELY(!hn::AllFalse(di, hn::Gt(amax_v, k.below_inf())))) {
    if (static_cast<std::uint32_t>(hn::GetLane(amax_v)) > 0x7F800000u ||
        args.special == SpecialBlock::kDefault) {
      *scale = kE8M0Nan;
      std::memset(out, 0, kBits * 4);
      return;
    }
    // kSatFiniteBlock with +-Inf: scale FE, saturating elements.
    *scale = 0xFE;
    EncodeAndPack<Traits, R, kBits, true, kNT>(di, x, hn::Set(df, ReciprocalE8M0(0xFE)), k_sat,
                                               out);
    return;
  }
  hn::Vec<hn::Rebind<float, DI>> r;
  if (args.rule == ScaleRule::kOcpFloor) {
    V code;
    r = hn::BitCast(df, OcpFloorReciprocalBits(di, amax_v, k, &code));
    *scale = static_cast<std::uint8_t>(hn::GetLane(code));
  } else {
    const std::uint32_t code =
        ScaleCodeFromAmax<Traits>(static_cast<std::uint32_t>(hn::GetLane(amax_v)), args.rule).bits;
    *scale = static_cast<std::uint8_t>(code);
    r = hn::Set(df, ReciprocalE8M0(code));
  }
  EncodeAndPack<Traits, R, kBits, false, kNT>(di, x, r, k, out);
}

// QuantizeBlock on `count` consecutive blocks: the group paths' fallback
// for blocks holding a NaN or Inf.
template <class Traits, Rounding R, int kBits, bool kNT, class DI, class TIn>
HWY_INLINE void QuantizeBlocks(DI di, const TIn* HWY_RESTRICT in, std::size_t count,
                               std::uint8_t* HWY_RESTRICT out, std::uint8_t* HWY_RESTRICT scales,
                               const internal::MxQuantizeArgs& args,
                               const EncodeVecs<Traits, DI>& k,
                               const EncodeVecs<Traits, DI>& k_sat) {
  for (std::size_t j = 0; j < count; ++j) {
    QuantizeBlock<Traits, R, kBits, kNT>(di, in + j * kMxBlock, out + j * kBits * 4, scales + j,
                                         args, k, k_sat);
  }
}

// 16-lane int32 vectors exist only on the AVX3 targets.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
#define TRNMX_MX_GROUPS 1
#else
#define TRNMX_MX_GROUPS 0
#endif

#if TRNMX_MX_GROUPS
template <class DI>
using IndicesFor = decltype(hn::SetTableIndices(DI(), static_cast<const std::int32_t*>(nullptr)));

// The maxima of four blocks' vectors m[0..3] (512 bits each, non-negative
// int32 or int16 lanes): every lane of 128-bit block 0 of the result holds
// block A's, of 1 C's, of 2 B's, of 3 D's. a01 = [A A B B], a23 = [C C D D]
// (each the max of its block's halves), u = [A C B D], then the max within
// each 128 bits (64-bit halves, 32-bit lanes, 16-bit halves).
template <class D, class V = hn::Vec<D>>
HWY_INLINE V MaxOfFourBlocks(D d, const V* m) {
  const hn::Repartition<std::int32_t, D> d32;
  V a01 = hn::Max(hn::ConcatLowerLower(d, m[1], m[0]), hn::ConcatUpperUpper(d, m[1], m[0]));
  V a23 = hn::Max(hn::ConcatLowerLower(d, m[3], m[2]), hn::ConcatUpperUpper(d, m[3], m[2]));
  a01 = hn::Max(a01, hn::SwapAdjacentBlocks(a01));
  a23 = hn::Max(a23, hn::SwapAdjacentBlocks(a23));
  V u = hn::OddEvenBlocks(a23, a01);
  u = hn::Max(u, hn::BitCast(d, hn::Shuffle1032(hn::BitCast(d32, u))));
  u = hn::Max(u, hn::BitCast(d, hn::Shuffle0321(hn::BitCast(d32, u))));
  if constexpr (sizeof(hn::TFromD<D>) == 2) {
    const hn::Repartition<std::uint32_t, D> du32;
    u = hn::Max(u, hn::BitCast(d, hn::RotateRight<16>(hn::BitCast(du32, u))));
  }
  return u;
}

// Four blocks at once, 16-lane vectors and kOcpFloor only: one shared
// reduction tree gives the four amax (about 7 ops per block instead of 14)
// and one vector computes the four scales. Falls back to QuantizeBlock when a
// block holds a NaN or Inf.
template <class Traits, Rounding R, int kBits, bool kNT, class DI, class TIn>
HWY_INLINE void QuantizeGroup4(DI di, const TIn* HWY_RESTRICT in, std::uint8_t* HWY_RESTRICT out,
                               std::uint8_t* HWY_RESTRICT scales,
                               const internal::MxQuantizeArgs& args,
                               const EncodeVecs<Traits, DI>& k, const EncodeVecs<Traits, DI>& k_sat,
                               const IndicesFor<DI>* lane_of_block) {
  using V = hn::Vec<DI>;
  const hn::Rebind<float, DI> df;
  const hn::Rebind<std::uint8_t, DI> d8;
  constexpr std::size_t kBlockBytes = kBits * 4;
  BlockVecs<DI> x[4];
  V m[4];
  for (std::size_t j = 0; j < 4; ++j) {
    LoadBlock<kBits>(di, in + j * kMxBlock, x[j]);
    m[j] = AbsMaxLanes(di, x[j], k);
  }
  const V u = MaxOfFourBlocks(di, m);
  if (HWY_UNLIKELY(!hn::AllFalse(di, hn::Gt(u, k.below_inf())))) {
    QuantizeBlocks<Traits, R, kBits, kNT>(di, in, 4, out, scales, args, k, k_sat);
    return;
  }
  V code;
  const V r_bits = OcpFloorReciprocalBits(di, u, k, &code);
  HWY_ALIGN std::uint8_t code_bytes[16];
  hn::Store(NarrowCodes(d8, code), d8, code_bytes);
  scales[0] = code_bytes[0];   // A
  scales[1] = code_bytes[8];   // B
  scales[2] = code_bytes[4];   // C
  scales[3] = code_bytes[12];  // D
  for (std::size_t j = 0; j < 4; ++j) {
    const auto r = hn::BitCast(df, hn::TableLookupLanes(r_bits, lane_of_block[j]));
    EncodeAndPack<Traits, R, kBits, false, kNT>(di, x[j], r, k, out + j * kBlockBytes);
  }
}

#endif  // TRNMX_MX_GROUPS

#if TRNMX_MX_GROUPS || TRNMX_MX_AVX2
// BF16 input, float elements of 8 or 4 bits, kOcpFloor, round to nearest
// even, no flush: four blocks at once on the BF16 bits themselves, one block
// per vector of 32 int16 lanes (twice the elements per op of the FP32
// encoder; AVX2's QuantizeGroup8Bf16: eight blocks, two vectors of 16 lanes
// each, FP6 too, whose values below 2^emin round in FP32: see there). With
// c a block's scale code and b, m, emin the element's bias,
// mantissa bits and smallest normal exponent, |x| 2^(127 - c) has the BF16
// bits y = a - ((c - 127) << 7) (a: |x|'s bits), exactly while it is a
// normal number. Then, as the FP32 path encodes the same value:
//   y >= 2^emin:  code = (y - ((127 - b) << 7) + 2^(6 - m) - 1 + odd) >> (7 - m)
//                 (the exponent rebased, the usual carry);
//   below:        E2M1: 0, 1 or 2 by the thresholds 0.25 and 0.75 (ties to
//                 even); E4M3 / E5M2: 0 when every such lane rounds to 0
//                 (y <= 2^(emin - m - 1), nearly every block), else the block
//                 takes the variable shift of RoundToCode on a itself:
//                   v = a - min((E' - 1) << 7, (c - b) << 7),
//                   sh = max(8 - m + c - b - E', 7 - m)  (E' = max(E, 1)),
//                   code = (v + 2^(sh-1) - 1 + odd) >> sh  (counts >= 16 give 0).
// Where |x| 2^(127 - c) < 2^-126 (y < 128 or negative) both paths give 0 and
// so does the FP32 path. QuantizeGroup4Bf16 returns false, writing nothing,
// when a block holds Inf / NaN or has c < 1 + b + m (amax below 2^(emax + 1 +
// b + m - 127), Bf16LaneVecs::kMinE): the caller runs those blocks through
// QuantizeBlock.
template <class Traits, class D16>
struct Bf16LaneVecs {
  using V = hn::Vec<D16>;
  // c >= 1 + b + m: a BF16 zero or subnormal x (for which y above is wrong)
  // then has y < 2^(1 - c) <= 2^(-b - m), half the target's subnormal
  // spacing, and code 0, as x 2^(127 - c) has.
  static constexpr int kMinE = Traits::kEmax + 1 + Traits::kBias + Traits::kMantissaBits;
  explicit Bf16LaneVecs(D16 d, std::int16_t overflow_code)
      : abs_mask(hn::Set(d, 0x7FFF)),
        fast_lo(hn::Set(d, static_cast<std::int16_t>(kMinE << 7))),
        fast_span(hn::Set(d, static_cast<std::int16_t>(0x7F7F - (kMinE << 7)))),
        emax(hn::Set(d, Traits::kEmax)),
        bias(hn::Set(d, Traits::kBias)),
        sh_base(hn::Set(d, 8 - Traits::kMantissaBits - Traits::kBias)),
        one(hn::Set(d, 1)),
        k128(hn::Set(d, 128)),
        sh_min(hn::Set(d, 7 - Traits::kMantissaBits)),
        k16(hn::Set(d, 16)),
        overflow(hn::Set(d, overflow_code)),
        sign(hn::Set(d, static_cast<std::int16_t>(Traits::kSignMask))),
        k127(hn::Set(d, 127)),
        two(hn::Set(d, 2)),
        min_normal(hn::Set(d, static_cast<std::int16_t>((128 - Traits::kBias) << 7))),
        rne_rebias(hn::Set(d, static_cast<std::int16_t>((1 << (6 - Traits::kMantissaBits)) - 1 -
                                                        ((127 - Traits::kBias) << 7)))),
        rounds_to_zero(hn::Set(
            d, static_cast<std::int16_t>((127 - Traits::kBias - Traits::kMantissaBits) << 7))),
        sub_t1(hn::Set(d, 0x3E80)),
        sub_t2(hn::Set(d, 0x3F3F)) {}
  V abs_mask, fast_lo, fast_span, emax, bias, sh_base, one, k128, sh_min, k16, overflow, sign;
  V k127, two;
  V min_normal;      // 2^emin: y below it is a target subnormal
  V rne_rebias;      // 2^(6 - m) - 1 - ((127 - b) << 7)
  V rounds_to_zero;  // y <= 2^(emin - m - 1): code 0 (ties to even)
  V sub_t1, sub_t2;  // E2M1: 0.25 and 0.75 - 1 ulp
};
#endif

#if TRNMX_MX_GROUPS

template <class Traits, int kBits, bool kNT, class DI, class D16>
HWY_INLINE bool QuantizeGroup4Bf16(DI di, const std::uint16_t* HWY_RESTRICT in,
                                   std::uint8_t* HWY_RESTRICT out,
                                   std::uint8_t* HWY_RESTRICT scales,
                                   const IndicesFor<DI>* lane_of_block,
                                   const Bf16LaneVecs<Traits, D16>& k) {
  static_assert(kBits == 8 || kBits == 4);
  const D16 d16;
  const hn::RebindToUnsigned<D16> du16;
  using V16 = hn::Vec<D16>;
  static_assert(hn::MaxLanes(D16()) == kMxBlock);
  V16 x[4], a[4];
  for (std::size_t j = 0; j < 4; ++j) {
    x[j] = hn::BitCast(d16, hn::LoadU(du16, in + j * kMxBlock));
    a[j] = hn::And(x[j], k.abs_mask);
  }
  const V16 u = MaxOfFourBlocks(d16, a);
  // Inf / NaN (u > 7F7F) or c < 1 + b + m (u < kMinE << 7) in one unsigned test.
  const auto off = hn::BitCast(du16, hn::Sub(u, k.fast_lo));
  if (HWY_UNLIKELY(!hn::AllFalse(du16, hn::Gt(off, hn::BitCast(du16, k.fast_span))))) return false;
  // c = max(E - emax, 0) = E - emax here (the FP32 path's rule on the same
  // exponent field); the four scale bytes from lanes 0 (A), 16, 8, 24.
  const V16 c = hn::Sub(hn::ShiftRight<7>(u), k.emax);
  const __m512i abcd =
      _mm512_permutexvar_epi16(_mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 24, 8, 16, 0),
                               c.raw);
  const std::int32_t scale_bytes =
      _mm_cvtsi128_si32(_mm256_castsi256_si128(_mm512_cvtepi16_epi8(abcd)));
  std::memcpy(scales, &scale_bytes, 4);
  // y = |x| 2^(127 - c) as BF16 bits: a - ((c - 127) << 7), exact while y is
  // a normal BF16; below 128 (or negative) when y < 2^-126, whose code is 0.
  const V16 shift_all = hn::ShiftLeft<7>(hn::Sub(c, k.k127));
  const auto block = [&](const V16& all, std::size_t j) HWY_ATTR {
    return hn::BitCast(d16, hn::TableLookupLanes(hn::BitCast(di, all), lane_of_block[j]));
  };
  constexpr int kSh = 7 - Traits::kMantissaBits;
  V16 code[4];
  for (std::size_t j = 0; j < 4; ++j) {
    const V16 y = hn::Sub(a[j], block(shift_all, j));
    const auto below = hn::Lt(y, k.min_normal);  // y < 2^emin
    // The target's normal range: the constant shift 7 - m with the usual
    // carry (RoundToCodeNearestEven's normal part), exponent rebased.
    const V16 odd = hn::And(hn::ShiftRight<kSh>(y), k.one);
    const V16 normal = hn::ShiftRight<kSh>(hn::Add(hn::Add(y, k.rne_rebias), odd));
    V16 mag;
    if constexpr (Traits::kMantissaBits == 1) {
      // E2M1 below 2^emin = 1: 0, 0.5 (code 1) or 1 (code 2), ties to even:
      // code 1 for y > 0.25, code 2 for y >= 0.75.
      static_assert(Traits::kBias == 1 && Traits::kEmin == 0, "thresholds are E2M1's");
      const V16 sub = hn::IfThenElse(hn::Gt(y, k.sub_t2), k.two,
                                     hn::IfThenElseZero(hn::Gt(y, k.sub_t1), k.one));
      mag = hn::IfThenElse(below, sub, normal);
    } else if (hn::AllFalse(d16, hn::And(below, hn::Gt(y, k.rounds_to_zero)))) {
      // Every lane below the normal range rounds to 0 (E4M3, E5M2: nearly
      // every block).
      mag = hn::IfThenZeroElse(below, normal);
    } else {
      const V16 rebias = block(hn::ShiftLeft<7>(hn::Sub(c, k.bias)), j);  // (c - b) << 7
      const V16 e1 = hn::Max(hn::ShiftRight<7>(a[j]), k.one);
      const V16 v = hn::Sub(a[j], hn::Min(hn::Sub(hn::ShiftLeft<7>(e1), k.k128), rebias));
      const auto sh =
          hn::BitCast(du16, hn::Max(hn::Sub(hn::Add(block(c, j), k.sh_base), e1), k.sh_min));
      const auto vu = hn::BitCast(du16, v);
      const auto half_m1 =
          hn::Shr(hn::BitCast(du16, k.abs_mask), hn::Sub(hn::BitCast(du16, k.k16), sh));
      const auto odd_v = hn::And(hn::Shr(vu, sh), hn::BitCast(du16, k.one));
      mag = hn::BitCast(d16, hn::Shr(hn::Add(hn::Add(vu, half_m1), odd_v), sh));
    }
    mag = hn::Min(mag, k.overflow);
    code[j] = hn::IfThenElse(hn::Lt(x[j], hn::Zero(d16)), hn::Or(mag, k.sign), mag);
  }
  // Pack: FP8 the low byte of each lane, FP4 element 2i | element 2i+1 << 4.
  __m512i bytes[2];
  if constexpr (kBits == 8) {
    for (std::size_t p = 0; p < 2; ++p) {
#if HWY_TARGET == HWY_AVX3_DL
      alignas(64) static constexpr std::uint8_t kEven[64] = {
          0,  2,  4,   6,   8,   10,  12,  14,  16,  18,  20,  22,  24,  26,  28,  30,
          32, 34, 36,  38,  40,  42,  44,  46,  48,  50,  52,  54,  56,  58,  60,  62,
          64, 66, 68,  70,  72,  74,  76,  78,  80,  82,  84,  86,  88,  90,  92,  94,
          96, 98, 100, 102, 104, 106, 108, 110, 112, 114, 116, 118, 120, 122, 124, 126};
      bytes[p] =
          _mm512_permutex2var_epi8(code[2 * p].raw, _mm512_load_si512(kEven), code[2 * p + 1].raw);
#else
      bytes[p] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi16_epi8(code[2 * p].raw)),
                                    _mm512_cvtepi16_epi8(code[2 * p + 1].raw), 1);
#endif
    }
  } else {
    __m256i half[2];
    for (std::size_t p = 0; p < 2; ++p) {
      // Per int32 lane: element 2i in bits 0-3, element 2i+1 in bits 16-19.
      __m512i lo = code[2 * p].raw, hi = code[2 * p + 1].raw;
      lo = _mm512_or_si512(lo, _mm512_srli_epi32(lo, 12));
      hi = _mm512_or_si512(hi, _mm512_srli_epi32(hi, 12));
      half[p] = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm512_cvtepi32_epi8(lo)),
                                        _mm512_cvtepi32_epi8(hi), 1);
    }
    bytes[0] = _mm512_inserti64x4(_mm512_castsi256_si512(half[0]), half[1], 1);
  }
  constexpr std::size_t kVecs = kBits == 8 ? 2 : 1;
  for (std::size_t p = 0; p < kVecs; ++p) {
    std::uint8_t* dst = out + 64 * p;
    if constexpr (kNT) {
      if (reinterpret_cast<std::uintptr_t>(dst) % 64 == 0) {
        _mm512_stream_si512(reinterpret_cast<__m512i*>(dst), bytes[p]);
      } else {
        __m128i* d = reinterpret_cast<__m128i*>(dst);  // 16-byte aligned (kDirectNT)
        _mm_stream_si128(d, _mm512_castsi512_si128(bytes[p]));
        _mm_stream_si128(d + 1, _mm512_extracti32x4_epi32(bytes[p], 1));
        _mm_stream_si128(d + 2, _mm512_extracti32x4_epi32(bytes[p], 2));
        _mm_stream_si128(d + 3, _mm512_extracti32x4_epi32(bytes[p], 3));
      }
    } else {
      _mm512_storeu_si512(dst, bytes[p]);
    }
  }
  return true;
}
#endif  // TRNMX_MX_GROUPS

#if TRNMX_MX_AVX2
// AbsMaxLanes of the block at `in` loaded in memory order (LoadBlock<8>:
// plain loads, no de-interleaving; the group reloads it to encode).
template <class DI, class Traits, class TIn>
HWY_INLINE hn::Vec<DI> BlockAbsMaxLanes(DI di, const TIn* HWY_RESTRICT in,
                                        const EncodeVecs<Traits, DI>& k) {
  BlockVecs<DI> x;
  LoadBlock<8>(di, in, x);
  return AbsMaxLanes(di, x, k);
}

// Lane j of the result: the largest lane of m[j] (eight vectors of
// non-negative int32): interleaving 32-bit, then 64-bit lanes within each
// 128-bit half, then the halves (21 ops for eight blocks, against 6 per block
// for MaxOfLanes).
template <class DI, class V = hn::Vec<DI>>
HWY_INLINE V MaxOfEightBlocks(DI di, const V* m) {
  const hn::Repartition<std::int64_t, DI> d64;
  V t[4];
  for (std::size_t i = 0; i < 4; ++i) {
    t[i] = hn::Max(hn::InterleaveLower(di, m[2 * i], m[2 * i + 1]),
                   hn::InterleaveUpper(di, m[2 * i], m[2 * i + 1]));
  }
  V w[2];
  for (std::size_t i = 0; i < 2; ++i) {
    const auto a = hn::BitCast(d64, t[2 * i]);
    const auto b = hn::BitCast(d64, t[2 * i + 1]);
    w[i] = hn::Max(hn::BitCast(di, hn::InterleaveLower(d64, a, b)),
                   hn::BitCast(di, hn::InterleaveUpper(d64, a, b)));
  }
  return hn::Max(hn::ConcatLowerLower(di, w[1], w[0]), hn::ConcatUpperUpper(di, w[1], w[0]));
}

// The eight blocks' amax bits at `in`, lane j for block j (kOcpFloor's
// groups of eight, 8-lane vectors).
template <class Traits, class DI, class TIn>
HWY_INLINE hn::Vec<DI> Group8Amax(DI di, const TIn* HWY_RESTRICT in,
                                  const EncodeVecs<Traits, DI>& k) {
  static_assert(hn::MaxLanes(DI()) == 8);
  hn::Vec<DI> m[8];
  for (std::size_t j = 0; j < 8; ++j) m[j] = BlockAbsMaxLanes(di, in + j * kMxBlock, k);
  return MaxOfEightBlocks(di, m);
}

// Eight blocks at once, 8-lane vectors and kOcpFloor only, given their amax
// u (Group8Amax): one vector gives the eight scales, as QuantizeGroup4 does
// with 16 lanes. Falls back to QuantizeBlock when a block holds a NaN or Inf.
template <class Traits, Rounding R, int kBits, bool kNT, class DI, class TIn>
HWY_INLINE void QuantizeGroup8(DI di, const TIn* HWY_RESTRICT in, std::uint8_t* HWY_RESTRICT out,
                               std::uint8_t* HWY_RESTRICT scales,
                               const internal::MxQuantizeArgs& args,
                               const EncodeVecs<Traits, DI>& k, const EncodeVecs<Traits, DI>& k_sat,
                               hn::Vec<DI> u) {
  using V = hn::Vec<DI>;
  const hn::Rebind<float, DI> df;
  const hn::Rebind<std::uint8_t, DI> d8;
  constexpr std::size_t kBlockBytes = kBits * 4;
  if (HWY_UNLIKELY(!hn::AllFalse(di, hn::Gt(u, k.below_inf())))) {
    QuantizeBlocks<Traits, R, kBits, kNT>(di, in, 8, out, scales, args, k, k_sat);
    return;
  }
  V code;
  const V r_bits = OcpFloorReciprocalBits(di, u, k, &code);
  hn::StoreU(hn::DemoteTo(d8, code), d8, scales);
  for (std::size_t j = 0; j < 8; ++j) {
    const auto r = hn::BitCast(
        df, hn::TableLookupLanes(
                r_bits, hn::IndicesFromVec(di, hn::Set(di, static_cast<std::int32_t>(j)))));
    BlockVecs<DI> x;
    LoadBlock<kLoadOrder<Traits, kBits>>(di, in + j * kMxBlock, x);
    EncodeAndPack<Traits, R, kBits, false, kNT>(di, x, r, k, out + j * kBlockBytes);
  }
}

// Lane j (and j + 8) of the result: the largest lane of m[j] (eight vectors
// of 16 non-negative int16 lanes): interleaving 16-, 32- and 64-bit lanes
// within each 128-bit half, then the larger half (23 ops for eight blocks).
HWY_INLINE __m256i MaxOfEightBlocks16(const __m256i* m) {
  __m256i t[4], w[2];
  for (std::size_t i = 0; i < 4; ++i) {
    t[i] = _mm256_max_epi16(_mm256_unpacklo_epi16(m[2 * i], m[2 * i + 1]),
                            _mm256_unpackhi_epi16(m[2 * i], m[2 * i + 1]));
  }
  for (std::size_t i = 0; i < 2; ++i) {
    w[i] = _mm256_max_epi16(_mm256_unpacklo_epi32(t[2 * i], t[2 * i + 1]),
                            _mm256_unpackhi_epi32(t[2 * i], t[2 * i + 1]));
  }
  const __m256i z =
      _mm256_max_epi16(_mm256_unpacklo_epi64(w[0], w[1]), _mm256_unpackhi_epi64(w[0], w[1]));
  return _mm256_max_epi16(z, _mm256_permute2x128_si256(z, z, 0x01));
}

// BF16 input, FP8, FP6 or FP4, kOcpFloor, round to nearest even, no flush, AVX2:
// eight blocks at once on the BF16 bits (one block per two vectors of 16
// int16 lanes), with QuantizeGroup4Bf16's arithmetic (Bf16LaneVecs). Returns
// false, writing nothing, when a block holds Inf / NaN or has c < kMinE:
// the caller runs the group through QuantizeGroup8. A block of E4M3 / E5M2
// with a lane below the normal range that does not round to 0 (rare: its
// |x| is at least 2^-14 times smaller than the amax) is encoded by
// QuantizeBlock instead, which needs the FP32 constants k and k_sat.
template <class Traits, int kBits, bool kNT, class DI, class D16>
HWY_INLINE bool QuantizeGroup8Bf16(DI di, const std::uint16_t* HWY_RESTRICT in,
                                   std::uint8_t* HWY_RESTRICT out,
                                   std::uint8_t* HWY_RESTRICT scales,
                                   const internal::MxQuantizeArgs& args,
                                   const EncodeVecs<Traits, DI>& k,
                                   const EncodeVecs<Traits, DI>& k_sat,
                                   const Bf16LaneVecs<Traits, D16>& k16) {
  static_assert(kBytePack<Traits, kBits> && hn::MaxLanes(D16()) == 16);
  constexpr std::size_t kBlockBytes = kBits * 4;
  const auto load = [in](std::size_t v) HWY_ATTR {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 16 * v));
  };
  const __m256i abs_mask = k16.abs_mask.raw;
  __m256i m[8];
  for (std::size_t j = 0; j < 8; ++j) {
    m[j] = _mm256_max_epi16(_mm256_and_si256(load(2 * j), abs_mask),
                            _mm256_and_si256(load(2 * j + 1), abs_mask));
  }
  const __m256i u = MaxOfEightBlocks16(m);
  // Inf / NaN (u > 7F7F) or c < kMinE (u < kMinE << 7): u - fast_lo above
  // fast_span as unsigned, i.e. max_epu16 differing from fast_span.
  const __m256i span = k16.fast_span.raw;
  const __m256i off = _mm256_sub_epi16(u, k16.fast_lo.raw);
  if (HWY_UNLIKELY(_mm256_movemask_epi8(_mm256_cmpeq_epi16(_mm256_max_epu16(off, span), span)) !=
                   -1)) {
    return false;
  }
  // c = E - emax (QuantizeGroup4Bf16); lanes 0-7 to the eight scale bytes.
  const __m256i c = _mm256_sub_epi16(_mm256_srli_epi16(u, 7), k16.emax.raw);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(scales),
                   _mm256_castsi256_si128(_mm256_packus_epi16(c, c)));
  const __m256i shift_all = _mm256_slli_epi16(_mm256_sub_epi16(c, k16.k127.raw), 7);
  constexpr int kSh = 7 - Traits::kMantissaBits;
  for (std::size_t j = 0; j < 8; ++j) {
    // Block j's (c - 127) << 7 in every lane: its two bytes from each half.
    const int pair = static_cast<int>(((2 * j + 1) << 8) | (2 * j));
    const __m256i shift =
        _mm256_shuffle_epi8(shift_all, _mm256_set1_epi16(static_cast<short>(pair)));
    __m256i x[2], mag[2];
    __m256i pending = _mm256_setzero_si256();
    for (std::size_t h = 0; h < 2; ++h) {
      x[h] = load(2 * j + h);
      const __m256i y = _mm256_sub_epi16(_mm256_and_si256(x[h], abs_mask), shift);
      const __m256i below = _mm256_cmpgt_epi16(k16.min_normal.raw, y);  // y < 2^emin
      const __m256i odd = _mm256_and_si256(_mm256_srli_epi16(y, kSh), k16.one.raw);
      const __m256i normal =
          _mm256_srli_epi16(_mm256_add_epi16(_mm256_add_epi16(y, k16.rne_rebias.raw), odd), kSh);
      __m256i v;
      if constexpr (Traits::kMantissaBits == 1) {
        // E2M1 below 1: code 1 above 0.25, 2 from 0.75 on (ties to even).
        static_assert(Traits::kBias == 1 && Traits::kEmin == 0, "thresholds are E2M1's");
        const __m256i sub =
            _mm256_add_epi16(_mm256_and_si256(_mm256_cmpgt_epi16(y, k16.sub_t1.raw), k16.one.raw),
                             _mm256_and_si256(_mm256_cmpgt_epi16(y, k16.sub_t2.raw), k16.one.raw));
        v = _mm256_blendv_epi8(normal, sub, below);
      } else if constexpr (kBits == 6) {
        // FP6 below 2^emin (E2M3: under 1/4 - 1/8 of the block's amax, frequent;
        // E3M2: under 1/64 - 1/128): the FP32 encoder's rounding
        // (RoundToCodeNearestEven, its constant k.sub_magic() = 2^(emin - m +
        // 23)) on y widened to FP32. y < 0 (a value below 2^-126) is clamped
        // to +0, code 0 as the FP32 path gives.
        const __m256i magic_bits = k.sub_magic().raw;
        const __m256 magic = _mm256_castsi256_ps(magic_bits);
        const __m256i yc = _mm256_max_epi16(y, _mm256_setzero_si256());
        const auto code_of = [&](__m256i wide) HWY_ATTR {
          return _mm256_sub_epi32(
              _mm256_castps_si256(_mm256_add_ps(_mm256_castsi256_ps(wide), magic)), magic_bits);
        };
        // The unpacks put y above 16 zero bits (its FP32 pattern); packus
        // undoes their lane order.
        const __m256i sub =
            _mm256_packus_epi32(code_of(_mm256_unpacklo_epi16(_mm256_setzero_si256(), yc)),
                                code_of(_mm256_unpackhi_epi16(_mm256_setzero_si256(), yc)));
        v = _mm256_blendv_epi8(normal, sub, below);
      } else {
        v = _mm256_andnot_si256(below, normal);
        pending = _mm256_or_si256(
            pending, _mm256_and_si256(below, _mm256_cmpgt_epi16(y, k16.rounds_to_zero.raw)));
      }
      mag[h] = _mm256_min_epi16(v, k16.overflow.raw);
    }
    if (HWY_UNLIKELY(!_mm256_testz_si256(pending, pending))) {
      QuantizeBlock<Traits, Rounding::kNearestEven, kBits, kNT>(
          di, in + j * kMxBlock, out + j * kBlockBytes, scales + j, args, k, k_sat);
      continue;
    }
    // Both packs leave [v0 0-7, v1 0-7 | v0 8-15, v1 8-15]; vpermq restores.
    const __m256i bytes =
        OrSignBytes<Traits>(_mm256_packus_epi16(mag[0], mag[1]), _mm256_packs_epi16(x[0], x[1]));
    StoreCodeBytes<kBits, kNT>(_mm256_permute4x64_epi64(bytes, 0xD8), out + j * kBlockBytes);
  }
  return true;
}
#endif  // TRNMX_MX_AVX2

// Streaming (large) lines prefetch their input 8 KiB ahead (this many blocks
// of TIn): without it the in-cache rate halved on a 64 MiB line (the loads
// did not overlap the encoding); BF16 lines ran 10-20 % faster 8 KiB ahead
// than 4 KiB.
template <class TIn>
inline constexpr std::size_t kPrefetchBlocks = 8192 / (kMxBlock * sizeof(TIn));

// Elements per streaming round: 64 blocks (at most 2 KiB of codes in L1).
inline constexpr std::size_t kMxStageBlocks = 64;

template <class Traits, Rounding R, int kBits, class TIn>
HWY_NOINLINE void QuantizeLine(const internal::MxQuantizeArgs& args, const TIn* HWY_RESTRICT src,
                               std::size_t n, std::uint8_t* HWY_RESTRICT codes,
                               std::uint8_t* HWY_RESTRICT scales) {
  using DI = MxTag<kBits>;
  const DI di;
  const EncodeVecs<Traits, DI> k(di, args.consts);
  const EncodeVecs<Traits, DI> k_sat(di, args.sat_consts);
  constexpr std::size_t kBlockBytes = kBits * 4;
  const std::size_t full = n / kMxBlock;
#if TRNMX_MX_GROUPS || TRNMX_MX_AVX2
  constexpr std::size_t N = hn::MaxLanes(DI());
  // 16-lane vectors: groups of four blocks under kOcpFloor.
  constexpr bool kGroups = N == 16 && kBits != 6;
  // BF16 input of a float format without the flush option:
  // QuantizeGroup4Bf16 (FP8, FP4), or QuantizeGroup8Bf16 on AVX2 (FP8, FP6, FP4).
  constexpr bool kBf16Lanes = (kGroups || kBytePack<Traits, kBits>) &&
                              sizeof(TIn) == 2 && !detail::kIsMxInt8<Traits> &&
                              R == Rounding::kNearestEven;
  [[maybe_unused]] const bool bf16_lanes = kBf16Lanes && !k.flush;
  using D16 = hn::Repartition<std::int16_t, DI>;
  struct NoLaneVecs {
    NoLaneVecs(D16, std::int16_t) {}
  };
  const std::conditional_t<kBf16Lanes, Bf16LaneVecs<Traits, D16>, NoLaneVecs> k16(
      D16(), static_cast<std::int16_t>(args.consts.overflow_finite_mag));
#endif
#if TRNMX_MX_GROUPS
  const bool groups = kGroups && args.rule == ScaleRule::kOcpFloor;
  // Lane of u (QuantizeGroup4) holding block j's amax: A C B D order.
  HWY_ALIGN std::int32_t lanes[4][N];
  for (std::size_t j = 0; j < 4; ++j) {
    for (std::size_t i = 0; i < N; ++i)
      lanes[j][i] = static_cast<std::int32_t>(j == 0 ? 0 : j == 1 ? 8 : j == 2 ? 4 : 12);
  }
#endif
  // kNT: codes go out with non-temporal stores of whole 16-byte vectors.
  const auto run = [&]<bool kNT>(std::size_t first, std::size_t count, std::uint8_t* dst) HWY_ATTR {
    // Non-temporal runs (large lines) prefetch the input of `blocks` blocks
    // kPrefetchBlocks ahead of block b, a cache line at a time.
    const auto prefetch = [&]([[maybe_unused]] std::size_t b,
                               [[maybe_unused]] std::size_t blocks) HWY_ATTR {
      if constexpr (kNT) {
        const TIn* ahead = src + (first + b + kPrefetchBlocks<TIn>)*kMxBlock;
        for (std::size_t line = 0; line < blocks * kMxBlock; line += 64 / sizeof(TIn)) {
          hwy::Prefetch(ahead + line);
        }
      }
    };
    std::size_t b = 0;
#if TRNMX_MX_GROUPS
    if constexpr (kGroups) {
      if (groups) {
        const IndicesFor<DI> lane_of_block[4] = {
            hn::SetTableIndices(di, lanes[0]), hn::SetTableIndices(di, lanes[1]),
            hn::SetTableIndices(di, lanes[2]), hn::SetTableIndices(di, lanes[3])};
        for (; b + 4 <= count; b += 4) {
          prefetch(b, 4);
          if constexpr (kBf16Lanes) {
            if (bf16_lanes && QuantizeGroup4Bf16<Traits, kBits, kNT>(
                                  di, src + (first + b) * kMxBlock, dst + b * kBlockBytes,
                                  scales + first + b, lane_of_block, k16)) {
              continue;
            }
          }
          QuantizeGroup4<Traits, R, kBits, kNT>(di, src + (first + b) * kMxBlock,
                                                dst + b * kBlockBytes, scales + first + b, args, k,
                                                k_sat, lane_of_block);
        }
      }
    }
#endif
#if TRNMX_MX_AVX2
    const auto group8 = [&](std::size_t g, hn::Vec<DI> u) HWY_ATTR {
      QuantizeGroup8<Traits, R, kBits, kNT>(di, src + (first + g) * kMxBlock,
                                            dst + g * kBlockBytes, scales + first + g, args, k,
                                            k_sat, u);
    };
    if (args.rule == ScaleRule::kOcpFloor && bf16_lanes) {
      if constexpr (kBf16Lanes) {
        for (; b + 8 <= count; b += 8) {
          prefetch(b, 8);
          if (!QuantizeGroup8Bf16<Traits, kBits, kNT>(di, src + (first + b) * kMxBlock,
                                                      dst + b * kBlockBytes, scales + first + b,
                                                      args, k, k_sat, k16)) {
            group8(b, Group8Amax(di, src + (first + b) * kMxBlock, k));
          }
        }
      }
    } else if (args.rule == ScaleRule::kOcpFloor && b + 8 <= count) {
      // Software-pipelined: the next group's amax is reduced before this
      // group is encoded, so its loads and its reduction tree overlap the
      // encode instead of holding up the start of every group (FP32 ->
      // MXFP8 on a Zen 3: +3 - 5 % in L2 and from memory).
      auto u = Group8Amax(di, src + (first + b) * kMxBlock, k);
      for (; b + 8 <= count; b += 8) {
        prefetch(b, 8);
        const auto u_this = u;
        if (b + 16 <= count) u = Group8Amax(di, src + (first + b + 8) * kMxBlock, k);
        group8(b, u_this);
      }
    }
#endif
    for (; b < count; ++b) {
      prefetch(b, 1);
      QuantizeBlock<Traits, R, kBits, kNT>(di, src + (first + b) * kMxBlock, dst + b * kBlockBytes,
                                           scales + first + b, args, k, k_sat);
    }
  };
  // Direct non-temporal stores need 16-byte code vectors (FP8/INT8/FP4 on
  // 16-lane targets) and 16-byte aligned codes; else stage and copy.
  constexpr bool kDirectNT =
      kBits != 6 && ((hn::MaxLanes(DI()) == 16 && !HWY_HAVE_SCALABLE) || kBytePack<Traits, kBits>);
  if (!args.stream) {
    run.template operator()<false>(0, full, codes);
  } else if (kDirectNT && reinterpret_cast<std::uintptr_t>(codes) % 16 == 0) {
    if constexpr (kDirectNT) run.template operator()<true>(0, full, codes);
    hwy::FlushStream();
  } else {
    HWY_ALIGN std::uint8_t stage[kMxStageBlocks * kBlockBytes];
    for (std::size_t first = 0; first < full; first += kMxStageBlocks) {
      const std::size_t count = full - first < kMxStageBlocks ? full - first : kMxStageBlocks;
      run.template operator()<false>(first, count, stage);
      StreamBytes(codes + first * kBlockBytes, stage, count * kBlockBytes);
    }
    hwy::FlushStream();
  }
  if (const std::size_t rem = n - full * kMxBlock; rem != 0) {
    HWY_ALIGN TIn buf[kMxBlock] = {};
    std::memcpy(buf, src + full * kMxBlock, rem * sizeof(TIn));
    QuantizeBlock<Traits, R, kBits>(di, buf, codes + full * kBlockBytes, scales + full, args, k,
                                    k_sat);
  }
}

template <class Traits, int kBits, class TIn>
HWY_INLINE void QuantizeByRounding(const internal::MxQuantizeArgs& args, const TIn* src,
                                   std::size_t n, std::uint8_t* codes, std::uint8_t* scales) {
  WithRounding(args.rounding, [&](auto rounding_tag) {
    QuantizeLine<Traits, decltype(rounding_tag)::value, kBits, TIn>(args, src, n, codes, scales);
  });
}

// Exported. args.format is an MX format with 32-element blocks (not NVFP4);
// src holds FP32 values (any rounding but stochastic) or BF16 bit patterns
// (round to nearest even only: mx_line.cc widens other roundings' BF16 to
// FP32 first, which kept this file's compile time from doubling).
template <class TIn>
HWY_INLINE void QuantizeMxLine(const internal::MxQuantizeArgs& args, const TIn* HWY_RESTRICT src,
                               std::size_t n, std::uint8_t* HWY_RESTRICT codes,
                               std::uint8_t* HWY_RESTRICT scales) {
  VisitMxFormat(args.format, [&](auto tag) HWY_ATTR {
    using Tag = decltype(tag);
    constexpr int kBits = Tag::kInfo.element_bits;
    if constexpr (!Tag::kIsOcpMx) {
      return;
    } else if constexpr (sizeof(TIn) == 2) {
      QuantizeLine<typename Tag::Traits, Rounding::kNearestEven, kBits, TIn>(args, src, n, codes,
                                                                             scales);
    } else {
      QuantizeByRounding<typename Tag::Traits, kBits>(args, src, n, codes, scales);
    }
  });
}
void QuantizeMxLineKernel(const internal::MxQuantizeArgs& args, const float* HWY_RESTRICT src,
                          std::size_t n, std::uint8_t* HWY_RESTRICT codes,
                          std::uint8_t* HWY_RESTRICT scales) {
  QuantizeMxLine(args, src, n, codes, scales);
}
void QuantizeMxLineKernelBf16(const internal::MxQuantizeArgs& args,
                              const std::uint16_t* HWY_RESTRICT src, std::size_t n,
                              std::uint8_t* HWY_RESTRICT codes, std::uint8_t* HWY_RESTRICT scales) {
  QuantizeMxLine(args, src, n, codes, scales);
}

// Writes the 32 values of one block to `out`.
template <class Traits, int kBits, class DI>
HWY_INLINE void DequantizeBlock(DI di, const std::uint8_t* HWY_RESTRICT in, std::uint8_t scale,
                                float* HWY_RESTRICT out) {
  const hn::Rebind<float, DI> df;
  const hn::Rebind<std::uint8_t, DI> d8;
  TRNMX_LANES_CONSTEXPR std::size_t N = LanesOf(di);
  TRNMX_LANES_CONSTEXPR std::size_t kV = kMxBlock / N;
  if (HWY_UNLIKELY(scale == kE8M0Nan)) {
    // Scale NaN: every element NaN (formats.md section 2), always the quiet
    // NaN 7FC00000 rather than whichever NaN a multiply would propagate.
    const auto nan = hn::BitCast(df, hn::Set(di, 0x7FC00000));
    for (std::size_t v = 0; v < kV; ++v) hn::StoreU(nan, df, out + v * N);
    return;
  }
  const auto xs = hn::Set(df, DecodeE8M0(scale));
  if constexpr (kBits == 8) {
    for (std::size_t v = 0; v < kV; ++v) {
      const auto c = hn::PromoteTo(di, hn::LoadU(d8, in + v * N));
      hn::StoreU(hn::Mul(DecodeMxCodes<Traits>(di, c), xs), df, out + v * N);
    }
  } else if constexpr (kBits == 4) {
    for (std::size_t p = 0; p < kV / 2; ++p) {
      const auto bytes = hn::PromoteTo(di, hn::LoadU(d8, in + p * N));
      const auto lo = DecodeMxCodes<Traits>(di, hn::And(bytes, hn::Set(di, 0xF)));
      const auto hi = DecodeMxCodes<Traits>(di, hn::ShiftRight<4>(bytes));
      hn::StoreInterleaved2(hn::Mul(lo, xs), hn::Mul(hi, xs), df, out + p * 2 * N);
    }
  } else {
    const auto k6 = hn::Set(di, 0x3F);
    for (std::size_t q = 0; q < kV / 4; ++q) {
      hn::Vec<hn::Rebind<std::uint8_t, DI>> b0, b1, b2;
      hn::LoadInterleaved3(d8, in + q * 3 * N, b0, b1, b2);
      const auto w =
          hn::Or(hn::PromoteTo(di, b0), hn::Or(hn::ShiftLeft<8>(hn::PromoteTo(di, b1)),
                                               hn::ShiftLeft<16>(hn::PromoteTo(di, b2))));
      const auto f0 = DecodeMxCodes<Traits>(di, hn::And(w, k6));
      const auto f1 = DecodeMxCodes<Traits>(di, hn::And(hn::ShiftRight<6>(w), k6));
      const auto f2 = DecodeMxCodes<Traits>(di, hn::And(hn::ShiftRight<12>(w), k6));
      const auto f3 = DecodeMxCodes<Traits>(di, hn::ShiftRight<18>(w));
      hn::StoreInterleaved4(hn::Mul(f0, xs), hn::Mul(f1, xs), hn::Mul(f2, xs), hn::Mul(f3, xs), df,
                            out + q * 4 * N);
    }
  }
}

template <class Traits, int kBits>
HWY_NOINLINE void DequantizeLine(const std::uint8_t* HWY_RESTRICT codes,
                                 const std::uint8_t* HWY_RESTRICT scales, std::size_t n,
                                 float* HWY_RESTRICT dst) {
  using DI = MxTag<kBits>;
  const DI di;
  constexpr std::size_t kBlockBytes = kBits * 4;
  const std::size_t full = n / kMxBlock;
  for (std::size_t b = 0; b < full; ++b) {
    DequantizeBlock<Traits, kBits>(di, codes + b * kBlockBytes, scales[b], dst + b * kMxBlock);
  }
  if (const std::size_t rem = n - full * kMxBlock; rem != 0) {
    HWY_ALIGN float buf[kMxBlock];
    DequantizeBlock<Traits, kBits>(di, codes + full * kBlockBytes, scales[full], buf);
    std::memcpy(dst + full * kMxBlock, buf, rem * sizeof(float));
  }
}

// The BF16 form of DequantizeLine (mx_line.h, DequantizeMxLineToBf16): each
// block decoded to FP32 in L1, then checked and cut to its high halves.
template <class Traits, int kBits>
HWY_NOINLINE bool DequantizeLineBf16(const std::uint8_t* HWY_RESTRICT codes,
                                     const std::uint8_t* HWY_RESTRICT scales, std::size_t n,
                                     std::uint16_t* HWY_RESTRICT dst) {
  using DI = MxTag<kBits>;
  const DI di;
  const hn::Rebind<std::uint16_t, DI> d16;
  const hn::Rebind<std::uint32_t, DI> du;
  TRNMX_LANES_CONSTEXPR std::size_t N = LanesOf(di);
  constexpr std::size_t kBlockBytes = kBits * 4;
  const auto sign_off = hn::Set(di, 0x7FFFFFFF);
  const auto min_normal = hn::Set(di, 0x00800000);
  const auto max_finite = hn::Set(di, 0x7F7FFFFF);
  auto low = hn::Zero(di);  // OR of the low 16 bits: non-zero, not a BF16
  auto bad = hn::Zero(di);  // non-zero: a subnormal, Inf or NaN
  HWY_ALIGN float buf[kMxBlock];
  HWY_ALIGN std::uint16_t tail[kMxBlock];
  for (std::size_t b = 0, i = 0; i < n; ++b, i += kMxBlock) {
    DequantizeBlock<Traits, kBits>(di, codes + b * kBlockBytes, scales[b], buf);
    const std::size_t count = HWY_MIN(kMxBlock, n - i);
    // Past n: padding codes, which must not decide exactness.
    for (std::size_t x = count; x < kMxBlock; ++x) buf[x] = 0.0f;
    std::uint16_t* out = count == kMxBlock ? dst + i : tail;
    for (std::size_t v = 0; v < kMxBlock; v += N) {
      const auto bits = hn::BitCast(di, hn::Load(hn::Rebind<float, DI>(), buf + v));
      const auto mag = hn::And(bits, sign_off);
      low = hn::Or(low, hn::And(bits, hn::Set(di, 0xFFFF)));
      const auto out_of_range = hn::Or(hn::Lt(mag, min_normal), hn::Gt(mag, max_finite));
      bad = hn::Or(bad, hn::VecFromMask(di, hn::AndNot(hn::Eq(mag, hn::Zero(di)), out_of_range)));
      // The high half, 0..FFFF, so the saturating demotion is exact
      // (Highway 1.0.3's TruncateTo u32 -> u16 is wrong on AVX3_DL).
      hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, hn::ShiftRight<16>(hn::BitCast(du, bits)))), d16,
                 out + v);
    }
    if (count != kMxBlock) std::memcpy(dst + i, tail, count * sizeof(std::uint16_t));
  }
  return hn::AllTrue(di, hn::Eq(hn::Or(low, bad), hn::Zero(di)));
}

// Exported. `format` is an MX format with 32-element blocks (not NVFP4).
void DequantizeMxLineKernel(MxFormat format, const std::uint8_t* HWY_RESTRICT codes,
                            const std::uint8_t* HWY_RESTRICT scales, std::size_t n,
                            float* HWY_RESTRICT dst) {
  VisitMxFormat(format, [&](auto tag) HWY_ATTR {
    using Tag = decltype(tag);
    if constexpr (Tag::kIsOcpMx) {
      DequantizeLine<typename Tag::Traits, Tag::kInfo.element_bits>(codes, scales, n, dst);
    }
  });
}

bool DequantizeMxLineBf16Kernel(MxFormat format, const std::uint8_t* HWY_RESTRICT codes,
                                const std::uint8_t* HWY_RESTRICT scales, std::size_t n,
                                std::uint16_t* HWY_RESTRICT dst) {
  bool exact = false;
  VisitMxFormat(format, [&](auto tag) HWY_ATTR {
    using Tag = decltype(tag);
    if constexpr (Tag::kIsOcpMx) {
      exact =
          DequantizeLineBf16<typename Tag::Traits, Tag::kInfo.element_bits>(codes, scales, n, dst);
    }
  });
  return exact;
}

}  // namespace HWY_NAMESPACE
}  // namespace trnmx
HWY_AFTER_NAMESPACE();

#undef TRNMX_MX_GROUPS
#undef TRNMX_MX_AVX2

#endif  // include guard toggle
