// Bulk FP32 <-> small-format conversions (include/trnmx/formats/bulk.h):
// argument checks, policy resolution, chunking over the executor, and
// Highway dynamic dispatch to the per-target kernels of bulk_codec-inl.h.
#include "trnmx/formats/bulk.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "formats/bulk_codec-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "formats/bulk_codec-inl.h"

#if HWY_ONCE

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "formats/element_consts.h"
#include "formats/kernel_args.h"
#include "formats/stream_copy.h"
#include "internal/calling_thread.h"
#include "trnmx/formats/codec.h"

namespace trnmx {

HWY_EXPORT(BulkEncodeChunk);
HWY_EXPORT(BulkDecodeChunk);
HWY_EXPORT(StreamCopyImpl);

namespace internal {
void StreamCopy(void* dst, const void* src, std::size_t bytes) {
  HWY_DYNAMIC_DISPATCH(StreamCopyImpl)(dst, src, bytes);
}
}  // namespace internal

namespace {

using internal::BulkKind;

// Elements per task: 128 KiB of FP32 input, an L2-friendly unit. A multiple
// of 64, so that packed FP4 chunks start on a byte.
constexpr std::size_t kChunkElems = std::size_t{1} << 15;

// Runs body(first, count) over [0, n) in chunks of kChunkElems, in parallel
// when there is more than one chunk.
template <class Body>
void ForEachChunk(std::size_t n, Executor* executor, const Body& body) {
  const std::size_t chunks = (n + kChunkElems - 1) / kChunkElems;
  if (chunks <= 1) {
    if (n != 0) body(std::size_t{0}, n);
    return;
  }
  Executor& ex = internal::ExecutorOrCallingThread(executor);
  ex.ParallelFor(chunks, [&](std::size_t c) {
    const std::size_t first = c * kChunkElems;
    const std::size_t count = n - first < kChunkElems ? n - first : kChunkElems;
    body(first, count);
  });
}

Status SizeError(const char* what, std::size_t in, std::size_t out, std::size_t want) {
  return InvalidArgumentError(std::string(what) + ": input has " + std::to_string(in) +
                              " elements, output has " + std::to_string(out) + " (needs " +
                              std::to_string(want) + ")");
}

template <class Traits>
Status Encode(BulkKind kind, std::span<const float> in, void* out, std::size_t out_size,
              const EncodeOptions& options, Executor* executor,
              std::span<const std::uint32_t> random_bits) {
  const bool packed = kind == BulkKind::kFp4E2M1Packed;
  const std::size_t n = in.size();
  const std::size_t want = packed ? (n + 1) / 2 : n;
  if (out_size != want) return SizeError("BulkEncode", n, out_size, want);
  if (!internal::SimdSupportsRounding(options.rounding)) {
    if (options.rounding != Rounding::kStochastic) {
      return InvalidArgumentError("BulkEncode: unknown rounding mode");
    }
    if (random_bits.size() != n) {
      return InvalidArgumentError(
          "BulkEncode: stochastic rounding needs one random word per element (" +
          std::to_string(n) + "), got " + std::to_string(random_bits.size()));
    }
    // Stochastic rounding: the scalar codec, chunk by chunk.
    auto* bytes = static_cast<std::uint8_t*>(out);
    ForEachChunk(n, executor, [&](std::size_t first, std::size_t count) {
      for (std::size_t i = first; i < first + count; ++i) {
        const std::uint32_t code = EncodeWithFlags<Traits>(in[i], options, random_bits[i]).code;
        if (packed) {
          std::uint8_t& byte = bytes[i / 2];
          byte = (i % 2 == 0) ? static_cast<std::uint8_t>(code)
                              : static_cast<std::uint8_t>((byte & 0x0F) | (code << 4));
        } else if constexpr (Traits::kTotalBits > 8) {
          const auto c16 = static_cast<std::uint16_t>(code);
          std::memcpy(bytes + 2 * i, &c16, 2);
        } else {
          bytes[i] = static_cast<std::uint8_t>(code);
        }
      }
    });
    return OkStatus();
  }
  internal::BulkEncodeArgs args;
  args.kind = kind;
  args.rounding = options.rounding;
  args.consts = internal::MakeElementEncodeConsts<Traits>(options);
  args.stream = internal::BulkCodeBytes(kind, n) >= internal::kStreamMinBytes;
  auto* bytes = static_cast<std::uint8_t*>(out);
  ForEachChunk(n, executor, [&](std::size_t first, std::size_t count) {
    HWY_DYNAMIC_DISPATCH(BulkEncodeChunk)
    (args, in.data() + first, count, bytes + internal::BulkCodeBytes(kind, first));
  });
  return OkStatus();
}

Status Decode(BulkKind kind, const void* in, std::size_t in_size, std::span<float> out,
              Executor* executor) {
  const std::size_t n = out.size();
  const std::size_t want = kind == BulkKind::kFp4E2M1Packed ? (n + 1) / 2 : n;
  if (in_size != want) {
    return InvalidArgumentError("BulkDecode: output has " + std::to_string(n) +
                                " elements, input has " + std::to_string(in_size) + " (needs " +
                                std::to_string(want) + ")");
  }
  const bool stream = n * sizeof(float) >= internal::kStreamMinBytes;
  const auto* bytes = static_cast<const std::uint8_t*>(in);
  ForEachChunk(n, executor, [&](std::size_t first, std::size_t count) {
    HWY_DYNAMIC_DISPATCH(BulkDecodeChunk)
    (kind, stream, bytes + internal::BulkCodeBytes(kind, first), count, out.data() + first);
  });
  return OkStatus();
}

template <class Code>
void* Bytes(std::span<Code> s) {
  static_assert(sizeof(Code) == sizeof(typename Code::Storage));
  return static_cast<void*>(s.data());
}
template <class Code>
const void* Bytes(std::span<const Code> s) {
  static_assert(sizeof(Code) == sizeof(typename Code::Storage));
  return static_cast<const void*>(s.data());
}

}  // namespace

#define TRNMX_X(Name, ...)                                                                   \
  Status BulkEncode(std::span<const float> in, std::span<Name> out, const EncodeOptions& options, \
                    Executor* executor, std::span<const std::uint32_t> random_bits) {           \
    return Encode<Name##Traits>(BulkKind::k##Name, in, Bytes(out), out.size(), options,       \
                                executor, random_bits);                                       \
  }                                                                                           \
  Status BulkDecode(std::span<const Name> in, std::span<float> out, Executor* executor) {     \
    return Decode(BulkKind::k##Name, Bytes(in), in.size(), out, executor);                    \
  }
TRNMX_FOREACH_FLOAT_FORMAT(TRNMX_X)
#undef TRNMX_X

Status BulkEncodePackedFp4(std::span<const float> in, std::span<std::uint8_t> packed,
                           const EncodeOptions& options, Executor* executor,
                           std::span<const std::uint32_t> random_bits) {
  return Encode<Fp4E2M1Traits>(BulkKind::kFp4E2M1Packed, in, packed.data(), packed.size(), options,
                               executor, random_bits);
}

Status BulkDecodePackedFp4(std::span<const std::uint8_t> packed, std::span<float> out,
                           Executor* executor) {
  return Decode(BulkKind::kFp4E2M1Packed, packed.data(), packed.size(), out, executor);
}

}  // namespace trnmx

#endif  // HWY_ONCE
