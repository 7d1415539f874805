// Per-target kernels of the bulk conversions (include/trnmx/formats/bulk.h):
// one chunk of one element stream, FP32 -> codes or codes -> FP32. The
// element math is in element_codec-inl.h; this file adds loops, tails
// (through a zero-padded stack buffer, so any length and alignment works),
// FP4 nibble packing and non-temporal stores of whole aligned vectors.
#if defined(TRNMX_SRC_FORMATS_BULK_CODEC_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TRNMX_SRC_FORMATS_BULK_CODEC_INL_H_
#undef TRNMX_SRC_FORMATS_BULK_CODEC_INL_H_
#else
#define TRNMX_SRC_FORMATS_BULK_CODEC_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "formats/element_codec-inl.h"
#include "formats/kernel_args.h"
#include "trnmx/formats/format_list.h"
#include "trnmx/formats/traits.h"
#include "trnmx/formats/types.h"

HWY_BEFORE_NAMESPACE();
namespace trnmx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Streaming (large) conversions prefetch their input this far ahead (8 KiB):
// measured to overlap the loads with the encoding where the hardware
// prefetcher alone left the loop stalled on memory.
inline constexpr std::size_t kPrefetchFloats = 2048;

// Store, or non-temporal store (kStream; `p` aligned to the vector's bytes).
template <bool kStream, class D, class V, class T>
HWY_INLINE void Put(V v, D d, T* HWY_RESTRICT p) {
  if constexpr (kStream) {
    hn::Stream(v, d, p);
  } else {
    hn::StoreU(v, d, p);
  }
}

// Elements before `p + h * sizeof(T)` is aligned to `vec_bytes` (h < vec_bytes
// / sizeof(T)), or n when that never happens or n is smaller.
template <class T>
std::size_t HeadToAlign(const T* p, std::size_t vec_bytes, std::size_t n) {
  const std::size_t mis = reinterpret_cast<std::uintptr_t>(p) % vec_bytes;
  if (mis == 0) return 0;
  if ((vec_bytes - mis) % sizeof(T) != 0) return n;
  const std::size_t h = (vec_bytes - mis) / sizeof(T);
  return h < n ? h : n;
}

#if HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
// AVX2, one byte per code: EncodeFloatCodes on 32 elements per step, packed
// by PackCodeBytes (with the signs of the inputs' signed packs, unless the
// step holds a non-finite input: then with the codes' own), 32 bytes stored
// at once, non-temporally (kStream; `out` 32-byte aligned); kNibbles: FP4's
// two codes per byte, 16 bytes a step (JoinNibbles; `out` 16-byte aligned
// for kStream). Returns the elements done: n rounded down to a multiple of
// 32.
template <class Traits, Rounding R, bool kStream, bool kNibbles = false, class DI>
HWY_INLINE std::size_t EncodeBytes32(const float* HWY_RESTRICT in, std::size_t n,
                                     std::uint8_t* HWY_RESTRICT out,
                                     const EncodeVecs<Traits, DI>& k) {
  static_assert(hn::MaxLanes(DI()) == 8);
  const DI di;
  const hn::Rebind<float, DI> df;
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    if constexpr (kStream) {
      hwy::Prefetch(in + i + kPrefetchFloats);
      hwy::Prefetch(in + i + 16 + kPrefetchFloats);
    }
    hn::Vec<DI> xv[4], a[4];
    __m256i x[4], c[4];
    auto most = hn::Zero(di);
    for (std::size_t v = 0; v < 4; ++v) {
      xv[v] = hn::BitCast(di, hn::LoadU(df, in + i + 8 * v));
      x[v] = xv[v].raw;
      a[v] = hn::And(xv[v], k.abs_mask());
      if (k.flush) a[v] = hn::IfThenZeroElse(hn::Lt(a[v], k.flush_below()), a[v]);
      most = hn::Max(most, a[v]);
    }
    __m256i bytes;
    if (HWY_LIKELY(hn::AllFalse(di, hn::Gt(most, k.below_inf())))) {
      for (std::size_t v = 0; v < 4; ++v) c[v] = MagnitudeCode<Traits, R>(di, a[v], k).raw;
      bytes = PackCodeBytes<Traits>(c, x);
    } else {
      for (std::size_t v = 0; v < 4; ++v) {
        c[v] = EncodeFloatFromAbs<Traits, R, true>(di, xv[v], a[v], k).raw;
      }
      bytes = PackCodeBytes(c);
    }
    if constexpr (kNibbles) {
      __m128i* dst = reinterpret_cast<__m128i*>(out + i / 2);
      if constexpr (kStream) {
        _mm_stream_si128(dst, JoinNibbles(bytes));
      } else {
        _mm_storeu_si128(dst, JoinNibbles(bytes));
      }
    } else if constexpr (kStream) {
      _mm256_stream_si256(reinterpret_cast<__m256i*>(out + i), bytes);
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), bytes);
    }
  }
  return i;
}
#endif

// FP32 -> one code per element (Out = uint16_t for BF16/FP16, else uint8_t).
// kStream: whole vectors of output go out with non-temporal stores once the
// output is aligned (the head before that and the tail use plain stores).
// AVX2 with byte codes: EncodeBytes32, then this loop for the tail.
template <class Traits, Rounding R, class Out, bool kStream>
HWY_NOINLINE void EncodeElements(const float* HWY_RESTRICT in, std::size_t n, Out* HWY_RESTRICT out,
                                 const internal::ElementEncodeConsts& consts) {
  using DI = hn::ScalableTag<std::int32_t>;
  const DI di;
  const hn::Rebind<float, decltype(di)> df;
  const hn::Rebind<Out, decltype(di)> dout;
  const EncodeVecs<Traits, DI> k(di, consts);
  const std::size_t N = hn::Lanes(di);
  // x86 streams 16 bytes at least: only whole 16-byte outputs may stream.
  constexpr bool kNT = kStream && hn::MaxLanes(decltype(dout)()) * sizeof(Out) % 16 == 0;
  std::size_t i = 0;
  if constexpr (kNT) {
    i = HeadToAlign(out, N * sizeof(Out), n);
    EncodeElements<Traits, R, Out, false>(in, i, out, consts);
  }
#if HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
  if constexpr (sizeof(Out) == 1) {
    static_assert(!kNT);      // 8-byte code vectors: EncodeBytes32 streams instead
    if constexpr (kStream) {  // the head before the first 32-byte aligned output
      i = HeadToAlign(out, 32, n);
      EncodeElements<Traits, R, Out, false>(in, i, out, consts);
    }
    i += EncodeBytes32<Traits, R, kStream>(in + i, n - i, out + i, k);
  }
#endif
  for (; i + 2 * N <= n; i += 2 * N) {
    if constexpr (kNT) {  // large inputs: read ahead of the hardware prefetcher
      for (std::size_t j = 0; j < 2 * N; j += 16) hwy::Prefetch(in + i + j + kPrefetchFloats);
    }
    const auto b0 = hn::BitCast(di, hn::LoadU(df, in + i));
    const auto b1 = hn::BitCast(di, hn::LoadU(df, in + i + N));
    Put<kNT>(NarrowCodes(dout, EncodeFloatCodes<Traits, R>(di, b0, k)), dout, out + i);
    Put<kNT>(NarrowCodes(dout, EncodeFloatCodes<Traits, R>(di, b1, k)), dout, out + i + N);
  }
  for (; i < n; i += N) {
    HWY_ALIGN float buf[hn::MaxLanes(di)] = {};
    HWY_ALIGN Out obuf[hn::MaxLanes(di)];
    const std::size_t len = n - i < N ? n - i : N;
    std::memcpy(buf, in + i, len * sizeof(float));
    const auto b = hn::BitCast(di, hn::Load(df, buf));
    hn::Store(NarrowCodes(dout, EncodeFloatCodes<Traits, R>(di, b, k)), dout, obuf);
    std::memcpy(out + i, obuf, len * sizeof(Out));
  }
}

// FP32 -> FP4 E2M1 codes, two per byte (element 2i in bits 3..0 of byte i).
template <Rounding R, bool kStream>
HWY_NOINLINE void EncodePackedFp4(const float* HWY_RESTRICT in, std::size_t n,
                                  std::uint8_t* HWY_RESTRICT out,
                                  const internal::ElementEncodeConsts& consts) {
  using DI = hn::ScalableTag<std::int32_t>;
  const DI di;
  const hn::Rebind<float, decltype(di)> df;
  const hn::Rebind<std::uint8_t, decltype(di)> d8;
  const EncodeVecs<Fp4E2M1Traits, DI> k(di, consts);
  const std::size_t N = hn::Lanes(di);
  const auto codes = [&](const float* p) HWY_ATTR {
    hn::Vec<decltype(df)> even, odd;
    hn::LoadInterleaved2(df, p, even, odd);
    const auto lo = EncodeFloatCodes<Fp4E2M1Traits, R>(di, hn::BitCast(di, even), k);
    const auto hi = EncodeFloatCodes<Fp4E2M1Traits, R>(di, hn::BitCast(di, odd), k);
    return NarrowCodes(d8, hn::Or(lo, hn::ShiftLeft<4>(hi)));
  };
  constexpr bool kNT = kStream && hn::MaxLanes(decltype(d8)()) % 16 == 0;
  std::size_t i = 0;
  if constexpr (kNT) {
    const std::size_t head_bytes = HeadToAlign(out, N, (n + 1) / 2);
    i = 2 * head_bytes < n ? 2 * head_bytes : n;
    EncodePackedFp4<R, false>(in, i, out, consts);
  }
#if HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
  static_assert(!kNT);      // 8-byte code vectors: EncodeBytes32 streams instead
  if constexpr (kStream) {  // the head before the first 16-byte aligned output
    const std::size_t head_bytes = HeadToAlign(out, 16, (n + 1) / 2);
    i = 2 * head_bytes < n ? 2 * head_bytes : n;
    EncodePackedFp4<R, false>(in, i, out, consts);
  }
  i += EncodeBytes32<Fp4E2M1Traits, R, kStream, /*kNibbles=*/true>(in + i, n - i, out + i / 2, k);
#endif
  for (; i + 2 * N <= n; i += 2 * N) {
    if constexpr (kNT) {
      for (std::size_t j = 0; j < 2 * N; j += 16) hwy::Prefetch(in + i + j + kPrefetchFloats);
    }
    Put<kNT>(codes(in + i), d8, out + i / 2);
  }
  if (i < n) {
    HWY_ALIGN float buf[2 * hn::MaxLanes(di)] = {};  // +0 pads: code 0 in the unused nibble
    HWY_ALIGN std::uint8_t obuf[hn::MaxLanes(di)];
    std::memcpy(buf, in + i, (n - i) * sizeof(float));
    hn::Store(codes(buf), d8, obuf);
    std::memcpy(out + i / 2, obuf, (n - i + 1) / 2);
  }
}

// One code per element -> FP32 (In = uint16_t for BF16/FP16, else uint8_t).
template <class Traits, class In, bool kStream>
HWY_NOINLINE void DecodeElements(const In* HWY_RESTRICT in, std::size_t n,
                                 float* HWY_RESTRICT out) {
  const hn::ScalableTag<std::int32_t> di;
  const hn::Rebind<float, decltype(di)> df;
  const hn::Rebind<In, decltype(di)> din;
  const std::size_t N = hn::Lanes(di);
  constexpr bool kNT = kStream && hn::MaxLanes(decltype(df)()) * sizeof(float) % 16 == 0;
  std::size_t i = 0;
  if constexpr (kNT) {
    i = HeadToAlign(out, N * sizeof(float), n);
    DecodeElements<Traits, In, false>(in, i, out);
  }
  for (; i + N <= n; i += N) {
    const auto c = hn::PromoteTo(di, hn::LoadU(din, in + i));
    Put<kNT>(DecodeFloatCodes<Traits>(di, c), df, out + i);
  }
  if (i < n) {
    HWY_ALIGN In buf[hn::MaxLanes(di)] = {};
    HWY_ALIGN float obuf[hn::MaxLanes(di)];
    std::memcpy(buf, in + i, (n - i) * sizeof(In));
    hn::Store(DecodeFloatCodes<Traits>(di, hn::PromoteTo(di, hn::Load(din, buf))), df, obuf);
    std::memcpy(out + i, obuf, (n - i) * sizeof(float));
  }
}

// Packed FP4 -> FP32: n values from (n + 1) / 2 bytes. The streaming form
// writes the interleaved pairs through a small aligned buffer.
template <bool kStream>
HWY_NOINLINE void DecodePackedFp4(const std::uint8_t* HWY_RESTRICT in, std::size_t n,
                                  float* HWY_RESTRICT out) {
  const hn::ScalableTag<std::int32_t> di;
  const hn::Rebind<float, decltype(di)> df;
  const hn::Rebind<std::uint8_t, decltype(di)> d8;
  const std::size_t N = hn::Lanes(di);
  const auto unpack = [&](const std::uint8_t* p, float* o) HWY_ATTR {
    const auto bytes = hn::PromoteTo(di, hn::LoadU(d8, p));
    const auto lo = DecodeFloatCodes<Fp4E2M1Traits>(di, hn::And(bytes, hn::Set(di, 0xF)));
    const auto hi = DecodeFloatCodes<Fp4E2M1Traits>(di, hn::ShiftRight<4>(bytes));
    hn::StoreInterleaved2(lo, hi, df, o);
  };
  std::size_t i = 0;
  if constexpr (kStream && hn::MaxLanes(decltype(df)()) * sizeof(float) % 16 == 0) {
    const std::size_t head = HeadToAlign(out, N * sizeof(float), n);
    i = head % 2 == 0 ? head : n;  // an odd head cannot start on a byte
    DecodePackedFp4<false>(in, i, out);
    HWY_ALIGN float pair[2 * hn::MaxLanes(di)];
    for (; i + 2 * N <= n; i += 2 * N) {
      unpack(in + i / 2, pair);
      hn::Stream(hn::Load(df, pair), df, out + i);
      hn::Stream(hn::Load(df, pair + N), df, out + i + N);
    }
  }
  for (; i + 2 * N <= n; i += 2 * N) unpack(in + i / 2, out + i);
  if (i < n) {
    HWY_ALIGN std::uint8_t buf[hn::MaxLanes(di)] = {};
    HWY_ALIGN float obuf[2 * hn::MaxLanes(di)];
    std::memcpy(buf, in + i / 2, (n - i + 1) / 2);
    unpack(buf, obuf);
    std::memcpy(out + i, obuf, (n - i) * sizeof(float));
  }
}

template <class Traits, class Out>
HWY_INLINE void EncodeChunkT(const internal::BulkEncodeArgs& args, const float* HWY_RESTRICT in,
                             std::size_t n, std::uint8_t* HWY_RESTRICT out_bytes) {
  Out* out = reinterpret_cast<Out*>(out_bytes);
  const auto run = [&](auto rounding_tag) {
    constexpr Rounding R = decltype(rounding_tag)::value;
    if (args.stream) {
      EncodeElements<Traits, R, Out, true>(in, n, out, args.consts);
      hwy::FlushStream();
    } else {
      EncodeElements<Traits, R, Out, false>(in, n, out, args.consts);
    }
  };
  WithRounding(args.rounding, run);
}

HWY_INLINE void EncodePackedChunk(const internal::BulkEncodeArgs& args,
                                  const float* HWY_RESTRICT in, std::size_t n,
                                  std::uint8_t* HWY_RESTRICT out) {
  const auto run = [&](auto rounding_tag) {
    constexpr Rounding R = decltype(rounding_tag)::value;
    if (args.stream) {
      EncodePackedFp4<R, true>(in, n, out, args.consts);
      hwy::FlushStream();
    } else {
      EncodePackedFp4<R, false>(in, n, out, args.consts);
    }
  };
  WithRounding(args.rounding, run);
}

// Exported: encodes in[0, n) into `out` (BulkCodeBytes(kind, n) bytes). For
// packed FP4 a chunk must start at an even element.
void BulkEncodeChunk(const internal::BulkEncodeArgs& args, const float* HWY_RESTRICT in,
                     std::size_t n, void* HWY_RESTRICT out_void) {
  auto* out = static_cast<std::uint8_t*>(out_void);
  using internal::BulkKind;
  switch (args.kind) {
#define TRNMX_X(Name, ...)  \
  case BulkKind::k##Name: \
    return EncodeChunkT<Name##Traits, Name::Storage>(args, in, n, out);
    TRNMX_FOREACH_FLOAT_FORMAT(TRNMX_X)
#undef TRNMX_X
    case BulkKind::kFp4E2M1Packed:
      return EncodePackedChunk(args, in, n, out);
  }
}

template <class Traits, class In>
HWY_INLINE void DecodeChunkT(bool stream, const std::uint8_t* HWY_RESTRICT in, std::size_t n,
                             float* HWY_RESTRICT out) {
  if (stream) {
    DecodeElements<Traits, In, true>(reinterpret_cast<const In*>(in), n, out);
    hwy::FlushStream();
  } else {
    DecodeElements<Traits, In, false>(reinterpret_cast<const In*>(in), n, out);
  }
}

// Exported: decodes n elements of `kind` from `in` into out[0, n).
void BulkDecodeChunk(internal::BulkKind kind, bool stream, const void* HWY_RESTRICT in_void,
                     std::size_t n, float* HWY_RESTRICT out) {
  const auto* in = static_cast<const std::uint8_t*>(in_void);
  using internal::BulkKind;
  switch (kind) {
#define TRNMX_X(Name, ...)  \
  case BulkKind::k##Name: \
    return DecodeChunkT<Name##Traits, Name::Storage>(stream, in, n, out);
    TRNMX_FOREACH_FLOAT_FORMAT(TRNMX_X)
#undef TRNMX_X
    case BulkKind::kFp4E2M1Packed:
      if (stream) {
        DecodePackedFp4<true>(in, n, out);
        hwy::FlushStream();
      } else {
        DecodePackedFp4<false>(in, n, out);
      }
      return;
  }
}

// Exported: non-temporal copy (bench baseline and large staged outputs).
void StreamCopyImpl(void* HWY_RESTRICT dst, const void* HWY_RESTRICT src, std::size_t bytes) {
  StreamBytes(static_cast<std::uint8_t*>(dst), static_cast<const std::uint8_t*>(src), bytes);
  hwy::FlushStream();
}

}  // namespace HWY_NAMESPACE
}  // namespace trnmx
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
