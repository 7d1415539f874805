// Per-target kernels of the bulk conversions (include/trnmx/formats/bulk.h):
// one chunk of one element stream, FP32 -> codes or codes -> FP32. The
// element math is in element_codec-inl.h; this file adds loops, tails
// (through a zero-padded stack buffer, so any length and alignment works),
// FP4 nibble packing and non-temporal output through an L1 staging buffer.
#if defined(TRNMX_SRC_FORMATS_BULK_CODEC_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TRNMX_SRC_FORMATS_BULK_CODEC_INL_H_
#undef TRNMX_SRC_FORMATS_BULK_CODEC_INL_H_
#else
#define TRNMX_SRC_FORMATS_BULK_CODEC_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "formats/element_codec-inl.h"
#include "formats/kernel_args.h"
#include "trnmx/formats/traits.h"

HWY_BEFORE_NAMESPACE();
namespace trnmx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Elements per staging round in streaming mode (at most 16 KiB of staged
// output, which stays in L1/L2 between the encode and the copy).
inline constexpr std::size_t kBulkStageElems = 4096;

// FP32 -> one code per element (Out = uint16_t for BF16/FP16, else uint8_t).
template <class Traits, Rounding R, class Out>
HWY_NOINLINE void EncodeElements(const float* HWY_RESTRICT in, std::size_t n, Out* HWY_RESTRICT out,
                                 const internal::ElementEncodeConsts& consts) {
  using DI = hn::ScalableTag<std::int32_t>;
  const DI di;
  const hn::Rebind<float, decltype(di)> df;
  const hn::Rebind<Out, decltype(di)> dout;
  const EncodeVecs<Traits, DI> k(di, consts);
  const std::size_t N = hn::Lanes(di);
  std::size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    const auto b0 = hn::BitCast(di, hn::LoadU(df, in + i));
    const auto b1 = hn::BitCast(di, hn::LoadU(df, in + i + N));
    hn::StoreU(NarrowCodes(dout, EncodeFloatCodes<Traits, R>(di, b0, k)), dout, out + i);
    hn::StoreU(NarrowCodes(dout, EncodeFloatCodes<Traits, R>(di, b1, k)), dout, out + i + N);
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
template <Rounding R>
HWY_NOINLINE void EncodePackedFp4(const float* HWY_RESTRICT in, std::size_t n,
                                  std::uint8_t* HWY_RESTRICT out,
                                  const internal::ElementEncodeConsts& consts) {
  using DI = hn::ScalableTag<std::int32_t>;
  const DI di;
  const hn::Rebind<float, decltype(di)> df;
  const hn::Rebind<std::uint8_t, decltype(di)> d8;
  const EncodeVecs<Fp4E2M1Traits, DI> k(di, consts);
  const std::size_t N = hn::Lanes(di);
  const auto pack = [&](const float* p, std::uint8_t* o) HWY_ATTR {
    hn::Vec<decltype(df)> even, odd;
    hn::LoadInterleaved2(df, p, even, odd);
    const auto lo = EncodeFloatCodes<Fp4E2M1Traits, R>(di, hn::BitCast(di, even), k);
    const auto hi = EncodeFloatCodes<Fp4E2M1Traits, R>(di, hn::BitCast(di, odd), k);
    hn::StoreU(NarrowCodes(d8, hn::Or(lo, hn::ShiftLeft<4>(hi))), d8, o);
  };
  std::size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) pack(in + i, out + i / 2);
  if (i < n) {
    HWY_ALIGN float buf[2 * hn::MaxLanes(di)] = {};  // +0 pads: code 0 in the unused nibble
    HWY_ALIGN std::uint8_t obuf[hn::MaxLanes(di)];
    std::memcpy(buf, in + i, (n - i) * sizeof(float));
    pack(buf, obuf);
    std::memcpy(out + i / 2, obuf, (n - i + 1) / 2);
  }
}

// One code per element -> FP32 (In = uint16_t for BF16/FP16, else uint8_t).
template <class Traits, class In>
HWY_NOINLINE void DecodeElements(const In* HWY_RESTRICT in, std::size_t n, float* HWY_RESTRICT out) {
  using DI = hn::ScalableTag<std::int32_t>;
  const DI di;
  const hn::Rebind<float, decltype(di)> df;
  const hn::Rebind<In, decltype(di)> din;
  const std::size_t N = hn::Lanes(di);
  std::size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto c = hn::PromoteTo(di, hn::LoadU(din, in + i));
    hn::StoreU(DecodeFloatCodes<Traits>(di, c), df, out + i);
  }
  if (i < n) {
    HWY_ALIGN In buf[hn::MaxLanes(di)] = {};
    HWY_ALIGN float obuf[hn::MaxLanes(di)];
    std::memcpy(buf, in + i, (n - i) * sizeof(In));
    hn::Store(DecodeFloatCodes<Traits>(di, hn::PromoteTo(di, hn::Load(din, buf))), df, obuf);
    std::memcpy(out + i, obuf, (n - i) * sizeof(float));
  }
}

// Packed FP4 -> FP32: n values from (n + 1) / 2 bytes.
HWY_NOINLINE void DecodePackedFp4(const std::uint8_t* HWY_RESTRICT in, std::size_t n,
                                  float* HWY_RESTRICT out) {
  using DI = hn::ScalableTag<std::int32_t>;
  const DI di;
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
  for (; i + 2 * N <= n; i += 2 * N) unpack(in + i / 2, out + i);
  if (i < n) {
    HWY_ALIGN std::uint8_t buf[hn::MaxLanes(di)] = {};
    HWY_ALIGN float obuf[2 * hn::MaxLanes(di)];
    std::memcpy(buf, in + i / 2, (n - i + 1) / 2);
    unpack(buf, obuf);
    std::memcpy(out + i, obuf, (n - i) * sizeof(float));
  }
}

// Runs `convert(first, count, out_bytes_ptr)` either straight into `out` or,
// when streaming, into an L1 staging buffer copied out with non-temporal
// stores. out_bytes(count) gives the bytes of `count` elements' output
// (count is a multiple of kBulkStageElems except at the end, so packed FP4
// stays byte-aligned).
template <class Convert, class OutBytes>
HWY_INLINE void RunMaybeStreamed(bool stream, std::size_t n, std::uint8_t* HWY_RESTRICT out,
                                 const Convert& convert, const OutBytes& out_bytes) {
  if (!stream) {
    convert(std::size_t{0}, n, out);
    return;
  }
  HWY_ALIGN std::uint8_t stage[kBulkStageElems * sizeof(float)];
  for (std::size_t first = 0; first < n; first += kBulkStageElems) {
    const std::size_t count = n - first < kBulkStageElems ? n - first : kBulkStageElems;
    convert(first, count, stage);
    StreamBytes(out + out_bytes(first), stage, out_bytes(count));
  }
  hwy::FlushStream();
}

template <class Traits, class Out>
HWY_INLINE void EncodeChunkT(const internal::BulkEncodeArgs& args, const float* HWY_RESTRICT in,
                             std::size_t n, std::uint8_t* HWY_RESTRICT out) {
  const auto bytes = [](std::size_t count) { return count * sizeof(Out); };
  const auto run = [&](auto rounding_tag) {
    constexpr Rounding R = decltype(rounding_tag)::value;
    RunMaybeStreamed(
        args.stream, n, out,
        [&](std::size_t first, std::size_t count, std::uint8_t* dst) {
          EncodeElements<Traits, R, Out>(in + first, count, reinterpret_cast<Out*>(dst), args.consts);
        },
        bytes);
  };
  switch (args.rounding) {
    case Rounding::kTiesAway: return run(std::integral_constant<Rounding, Rounding::kTiesAway>());
    case Rounding::kTowardZero: return run(std::integral_constant<Rounding, Rounding::kTowardZero>());
    default: return run(std::integral_constant<Rounding, Rounding::kNearestEven>());
  }
}

HWY_INLINE void EncodePackedChunk(const internal::BulkEncodeArgs& args, const float* HWY_RESTRICT in,
                                  std::size_t n, std::uint8_t* HWY_RESTRICT out) {
  const auto bytes = [](std::size_t count) { return (count + 1) / 2; };
  const auto run = [&](auto rounding_tag) {
    constexpr Rounding R = decltype(rounding_tag)::value;
    RunMaybeStreamed(
        args.stream, n, out,
        [&](std::size_t first, std::size_t count, std::uint8_t* dst) {
          EncodePackedFp4<R>(in + first, count, dst, args.consts);
        },
        bytes);
  };
  switch (args.rounding) {
    case Rounding::kTiesAway: return run(std::integral_constant<Rounding, Rounding::kTiesAway>());
    case Rounding::kTowardZero: return run(std::integral_constant<Rounding, Rounding::kTowardZero>());
    default: return run(std::integral_constant<Rounding, Rounding::kNearestEven>());
  }
}

// Exported: encodes in[0, n) into `out` (BulkCodeBytes(kind, n) bytes). For
// packed FP4 a chunk must start at an even element.
void BulkEncodeChunk(const internal::BulkEncodeArgs& args, const float* HWY_RESTRICT in,
                     std::size_t n, void* HWY_RESTRICT out_void) {
  auto* out = static_cast<std::uint8_t*>(out_void);
  using internal::BulkKind;
  switch (args.kind) {
    case BulkKind::kBf16: return EncodeChunkT<Bf16Traits, std::uint16_t>(args, in, n, out);
    case BulkKind::kFp16: return EncodeChunkT<Fp16Traits, std::uint16_t>(args, in, n, out);
    case BulkKind::kFp8E4M3: return EncodeChunkT<Fp8E4M3Traits, std::uint8_t>(args, in, n, out);
    case BulkKind::kFp8E5M2: return EncodeChunkT<Fp8E5M2Traits, std::uint8_t>(args, in, n, out);
    case BulkKind::kFp6E2M3: return EncodeChunkT<Fp6E2M3Traits, std::uint8_t>(args, in, n, out);
    case BulkKind::kFp6E3M2: return EncodeChunkT<Fp6E3M2Traits, std::uint8_t>(args, in, n, out);
    case BulkKind::kFp4E2M1: return EncodeChunkT<Fp4E2M1Traits, std::uint8_t>(args, in, n, out);
    case BulkKind::kFp4E2M1Packed: return EncodePackedChunk(args, in, n, out);
  }
}

template <class Traits, class In>
HWY_INLINE void DecodeChunkT(bool stream, const std::uint8_t* HWY_RESTRICT in, std::size_t n,
                             float* HWY_RESTRICT out) {
  RunMaybeStreamed(
      stream, n, reinterpret_cast<std::uint8_t*>(out),
      [&](std::size_t first, std::size_t count, std::uint8_t* dst) {
        DecodeElements<Traits, In>(reinterpret_cast<const In*>(in) + first, count,
                                   reinterpret_cast<float*>(dst));
      },
      [](std::size_t count) { return count * sizeof(float); });
}

// Exported: decodes n elements of `kind` from `in` into out[0, n).
void BulkDecodeChunk(internal::BulkKind kind, bool stream, const void* HWY_RESTRICT in_void,
                     std::size_t n, float* HWY_RESTRICT out) {
  const auto* in = static_cast<const std::uint8_t*>(in_void);
  using internal::BulkKind;
  switch (kind) {
    case BulkKind::kBf16: return DecodeChunkT<Bf16Traits, std::uint16_t>(stream, in, n, out);
    case BulkKind::kFp16: return DecodeChunkT<Fp16Traits, std::uint16_t>(stream, in, n, out);
    case BulkKind::kFp8E4M3: return DecodeChunkT<Fp8E4M3Traits, std::uint8_t>(stream, in, n, out);
    case BulkKind::kFp8E5M2: return DecodeChunkT<Fp8E5M2Traits, std::uint8_t>(stream, in, n, out);
    case BulkKind::kFp6E2M3: return DecodeChunkT<Fp6E2M3Traits, std::uint8_t>(stream, in, n, out);
    case BulkKind::kFp6E3M2: return DecodeChunkT<Fp6E3M2Traits, std::uint8_t>(stream, in, n, out);
    case BulkKind::kFp4E2M1: return DecodeChunkT<Fp4E2M1Traits, std::uint8_t>(stream, in, n, out);
    case BulkKind::kFp4E2M1Packed:
      RunMaybeStreamed(
          stream, n, reinterpret_cast<std::uint8_t*>(out),
          [&](std::size_t first, std::size_t count, std::uint8_t* dst) {
            DecodePackedFp4(in + first / 2, count, reinterpret_cast<float*>(dst));
          },
          [](std::size_t count) { return count * sizeof(float); });
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
