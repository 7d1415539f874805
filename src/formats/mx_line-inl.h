// Per-target MX line kernels (mx_line.h): quantize / dequantize one line of
// 32-element blocks with the packing of formats.md section 9, bit for bit
// equal to QuantizeMxBlock / DequantizeMxBlock (mx_block.h) plus packing.
//
// Quantizing a block:
//   1. load its 32 values in the packer's order (FP8/INT8 natural; FP4 even /
//      odd elements; FP6 the four elements of each 3-byte group), so that
//      every element lands in the lane its code needs;
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

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "formats/element_codec-inl.h"
#include "formats/kernel_args.h"
#include "trnmx/formats/e8m0.h"
#include "trnmx/formats/scale_rule.h"
#include "trnmx/formats/traits.h"

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

template <class Traits, Rounding R, class DI, class V = hn::Vec<DI>>
HWY_INLINE V EncodeMxCodes(DI di, V bits, const EncodeVecs<DI>& k) {
  if constexpr (detail::kIsMxInt8<Traits>) {
    return EncodeInt8Codes<R>(di, bits, k);
  } else {
    return EncodeFloatCodes<Traits, R>(di, bits, k);
  }
}

template <class Traits, class DI, class V = hn::Vec<DI>>
HWY_INLINE hn::Vec<hn::Rebind<float, DI>> DecodeMxCodes(DI di, V codes) {
  if constexpr (detail::kIsMxInt8<Traits>) {
    return DecodeInt8Codes(di, codes);
  } else {
    return DecodeFloatCodes<Traits>(di, codes);
  }
}

// Quantizes the 32 values at `in` into kBits * 4 bytes at `out` and one
// scale byte.
template <class Traits, Rounding R, int kBits, class DI>
HWY_INLINE void QuantizeBlock(DI di, const float* HWY_RESTRICT in, std::uint8_t* HWY_RESTRICT out,
                              std::uint8_t* HWY_RESTRICT scale, const internal::MxQuantizeArgs& args,
                              const EncodeVecs<DI>& k, const EncodeVecs<DI>& k_sat) {
  using V = hn::Vec<DI>;
  const hn::Rebind<float, DI> df;
  const hn::Rebind<std::uint8_t, DI> d8;
  constexpr std::size_t N = hn::MaxLanes(DI());
  constexpr std::size_t kV = kMxBlock / N;
  static_assert(kV * N == kMxBlock);

  // 1. Load in packing order.
  V x[kV];
  if constexpr (kBits == 8) {
    for (std::size_t v = 0; v < kV; ++v) x[v] = hn::BitCast(di, hn::LoadU(df, in + v * N));
  } else if constexpr (kBits == 4) {
    for (std::size_t p = 0; p < kV / 2; ++p) {
      hn::Vec<hn::Rebind<float, DI>> even, odd;
      hn::LoadInterleaved2(df, in + p * 2 * N, even, odd);
      x[2 * p] = hn::BitCast(di, even);
      x[2 * p + 1] = hn::BitCast(di, odd);
    }
  } else {
    static_assert(kBits == 6);
    for (std::size_t q = 0; q < kV / 4; ++q) {
      hn::Vec<hn::Rebind<float, DI>> a, b, c, d;
      hn::LoadInterleaved4(df, in + q * 4 * N, a, b, c, d);
      x[4 * q] = hn::BitCast(di, a);
      x[4 * q + 1] = hn::BitCast(di, b);
      x[4 * q + 2] = hn::BitCast(di, c);
      x[4 * q + 3] = hn::BitCast(di, d);
    }
  }

  // 2. amax of the FP32 bits.
  const V abs_mask = hn::Set(di, 0x7FFFFFFF);
  V amax_v = hn::And(x[0], abs_mask);
  for (std::size_t v = 1; v < kV; ++v) amax_v = hn::Max(amax_v, hn::And(x[v], abs_mask));
  const auto amax = static_cast<std::uint32_t>(hn::GetLane(hn::MaxOfLanes(di, amax_v)));

  // 3. Scale.
  const EncodeVecs<DI>* kk = &k;
  std::uint32_t code;
  if (HWY_UNLIKELY(amax >= 0x7F800000u)) {
    if (amax > 0x7F800000u || args.special == SpecialBlock::kDefault) {
      *scale = kE8M0Nan;
      std::memset(out, 0, kBits * 4);
      return;
    }
    code = 0xFE;  // kSatFiniteBlock with +-Inf: saturating elements.
    kk = &k_sat;
  } else {
    code = ScaleCodeFromAmax<Traits>(amax, args.rule).bits;
  }
  *scale = static_cast<std::uint8_t>(code);
  const auto r = hn::Set(df, ReciprocalE8M0(code));

  // 4. Encode and pack.
  V c[kV];
  for (std::size_t v = 0; v < kV; ++v) {
    const V y = hn::BitCast(di, hn::Mul(hn::BitCast(df, x[v]), r));
    c[v] = EncodeMxCodes<Traits, R>(di, y, *kk);
  }
  if constexpr (kBits == 8) {
    for (std::size_t v = 0; v < kV; ++v) hn::StoreU(hn::DemoteTo(d8, c[v]), d8, out + v * N);
  } else if constexpr (kBits == 4) {
    for (std::size_t p = 0; p < kV / 2; ++p) {
      hn::StoreU(hn::DemoteTo(d8, hn::Or(c[2 * p], hn::ShiftLeft<4>(c[2 * p + 1]))), d8, out + p * N);
    }
  } else {
    // Group a, b, c, d -> 24 bits a | b << 6 | c << 12 | d << 18, stored
    // little-endian in 3 bytes (section 9).
    const V kByte = hn::Set(di, 0xFF);
    for (std::size_t q = 0; q < kV / 4; ++q) {
      const V w = hn::Or(hn::Or(c[4 * q], hn::ShiftLeft<6>(c[4 * q + 1])),
                         hn::Or(hn::ShiftLeft<12>(c[4 * q + 2]), hn::ShiftLeft<18>(c[4 * q + 3])));
      const auto b0 = hn::DemoteTo(d8, hn::And(w, kByte));
      const auto b1 = hn::DemoteTo(d8, hn::And(hn::ShiftRight<8>(w), kByte));
      const auto b2 = hn::DemoteTo(d8, hn::ShiftRight<16>(w));
      hn::StoreInterleaved3(b0, b1, b2, d8, out + q * 3 * N);
    }
  }
}

// Elements per streaming round: 64 blocks (at most 2 KiB of codes in L1).
inline constexpr std::size_t kMxStageBlocks = 64;

template <class Traits, Rounding R, int kBits>
HWY_NOINLINE void QuantizeLine(const internal::MxQuantizeArgs& args, const float* HWY_RESTRICT src,
                               std::size_t n, std::uint8_t* HWY_RESTRICT codes,
                               std::uint8_t* HWY_RESTRICT scales) {
  using DI = MxTag<kBits>;
  const DI di;
  const EncodeVecs<DI> k(di, args.consts);
  const EncodeVecs<DI> k_sat(di, args.sat_consts);
  constexpr std::size_t kBlockBytes = kBits * 4;
  const std::size_t full = n / kMxBlock;
  const auto run = [&](std::size_t first, std::size_t count, std::uint8_t* dst) HWY_ATTR {
    for (std::size_t b = 0; b < count; ++b) {
      QuantizeBlock<Traits, R, kBits>(di, src + (first + b) * kMxBlock, dst + b * kBlockBytes,
                                      scales + first + b, args, k, k_sat);
    }
  };
  if (!args.stream) {
    run(0, full, codes);
  } else {
    HWY_ALIGN std::uint8_t stage[kMxStageBlocks * kBlockBytes];
    for (std::size_t first = 0; first < full; first += kMxStageBlocks) {
      const std::size_t count = full - first < kMxStageBlocks ? full - first : kMxStageBlocks;
      run(first, count, stage);
      StreamBytes(codes + first * kBlockBytes, stage, count * kBlockBytes);
    }
    hwy::FlushStream();
  }
  if (const std::size_t rem = n - full * kMxBlock; rem != 0) {
    HWY_ALIGN float buf[kMxBlock] = {};
    std::memcpy(buf, src + full * kMxBlock, rem * sizeof(float));
    QuantizeBlock<Traits, R, kBits>(di, buf, codes + full * kBlockBytes, scales + full, args, k, k_sat);
  }
}

template <class Traits, int kBits>
HWY_INLINE void QuantizeByRounding(const internal::MxQuantizeArgs& args, const float* src,
                                   std::size_t n, std::uint8_t* codes, std::uint8_t* scales) {
  switch (args.rounding) {
    case Rounding::kTiesAway:
      return QuantizeLine<Traits, Rounding::kTiesAway, kBits>(args, src, n, codes, scales);
    case Rounding::kTowardZero:
      return QuantizeLine<Traits, Rounding::kTowardZero, kBits>(args, src, n, codes, scales);
    default:
      return QuantizeLine<Traits, Rounding::kNearestEven, kBits>(args, src, n, codes, scales);
  }
}

// Exported. args.format is an MX format with 32-element blocks (not NVFP4).
void QuantizeMxLineKernel(const internal::MxQuantizeArgs& args, const float* HWY_RESTRICT src,
                          std::size_t n, std::uint8_t* HWY_RESTRICT codes,
                          std::uint8_t* HWY_RESTRICT scales) {
  switch (args.format) {
    case MxFormat::kMxfp8E4M3: return QuantizeByRounding<Fp8E4M3Traits, 8>(args, src, n, codes, scales);
    case MxFormat::kMxfp8E5M2: return QuantizeByRounding<Fp8E5M2Traits, 8>(args, src, n, codes, scales);
    case MxFormat::kMxfp6E2M3: return QuantizeByRounding<Fp6E2M3Traits, 6>(args, src, n, codes, scales);
    case MxFormat::kMxfp6E3M2: return QuantizeByRounding<Fp6E3M2Traits, 6>(args, src, n, codes, scales);
    case MxFormat::kMxfp4: return QuantizeByRounding<Fp4E2M1Traits, 4>(args, src, n, codes, scales);
    case MxFormat::kMxint8: return QuantizeByRounding<MxInt8Traits, 8>(args, src, n, codes, scales);
    case MxFormat::kNvfp4: return;
  }
}

// Writes the 32 values of one block to `out`.
template <class Traits, int kBits, class DI>
HWY_INLINE void DequantizeBlock(DI di, const std::uint8_t* HWY_RESTRICT in, std::uint8_t scale,
                                float* HWY_RESTRICT out) {
  const hn::Rebind<float, DI> df;
  const hn::Rebind<std::uint8_t, DI> d8;
  constexpr std::size_t N = hn::MaxLanes(DI());
  constexpr std::size_t kV = kMxBlock / N;
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
      const auto w = hn::Or(hn::PromoteTo(di, b0),
                            hn::Or(hn::ShiftLeft<8>(hn::PromoteTo(di, b1)),
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

// Exported. `format` is an MX format with 32-element blocks (not NVFP4).
void DequantizeMxLineKernel(MxFormat format, const std::uint8_t* HWY_RESTRICT codes,
                            const std::uint8_t* HWY_RESTRICT scales, std::size_t n,
                            float* HWY_RESTRICT dst) {
  switch (format) {
    case MxFormat::kMxfp8E4M3: return DequantizeLine<Fp8E4M3Traits, 8>(codes, scales, n, dst);
    case MxFormat::kMxfp8E5M2: return DequantizeLine<Fp8E5M2Traits, 8>(codes, scales, n, dst);
    case MxFormat::kMxfp6E2M3: return DequantizeLine<Fp6E2M3Traits, 6>(codes, scales, n, dst);
    case MxFormat::kMxfp6E3M2: return DequantizeLine<Fp6E3M2Traits, 6>(codes, scales, n, dst);
    case MxFormat::kMxfp4: return DequantizeLine<Fp4E2M1Traits, 4>(codes, scales, n, dst);
    case MxFormat::kMxint8: return DequantizeLine<MxInt8Traits, 8>(codes, scales, n, dst);
    case MxFormat::kNvfp4: return;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace trnmx
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
