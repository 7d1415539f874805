// Scalar per-line MX quantization and dequantization (mx_line.h): the
// definition of the bits that the SIMD versions reproduce.
//
// MX formats: each block of 32 goes through QuantizeMxBlock / DequantizeMxBlock
// (mx_block.h) and is packed by mx_pack.h. NVFP4 (formats.md section 8, TE
// core_nvfp4.cuh) is written out here, block by block of 16:
//
//   S_enc = params.nvfp4_encode_scale, S_dec = 1 / S_enc          (fl32 each)
//   block_amax = max |x_i| on the FP32 bits
//   s8 = E4M3 RNE satfinite(block_amax * (S_enc * fl32(1/6)))      UE4M3 scale code
//   multiplier = min(1 / (float(s8) * S_dec), FLT_MAX)             (1/0 = Inf -> FLT_MAX)
//   code_i = E2M1(x_i * multiplier) with params.element (default RNE, saturating)
//
// A block containing a NaN gets scale code 7F (the E4M3 NaN, so the block
// decodes as NaN) and element codes 0: the MX rule of formats.md section 6.3,
// since TE leaves NaN inputs to cvt.rn.satfinite.e2m1 unspecified. +-Inf is
// not special: its block scale saturates to 448 and the element to +-6.
// Decoding: (E2M1(code) * float(s8)) * tensor_scale, two FP32 multiplies in
// that order (the first is exact).
#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <span>

#include "formats/mx_line.h"
#include "trnmx/formats/codec.h"
#include "trnmx/formats/mx_block.h"
#include "trnmx/formats/mx_pack.h"
#include "trnmx/formats/stochastic.h"
#include "trnmx/formats/visit.h"

namespace trnmx::internal {
namespace {

// Fills rnd[0..len) for the elements first, first + 1, ... of the line.
void FillRandom(const MxLineParams& p, std::size_t first, std::size_t len, std::uint32_t* rnd) {
  for (std::size_t i = 0; i < len; ++i) {
    const std::uint64_t index = p.first_index + (first + i) * p.index_step;
    rnd[i] = p.random_words != nullptr ? p.random_words[index] : StochasticBits(p.seed, index);
  }
}

template <class Traits>
std::uint8_t QuantizeMxLine(const MxLineParams& p, const float* src, std::size_t n,
                            std::uint8_t* codes, std::uint8_t* scales) {
  const MxFormatInfo& info = GetMxFormatInfo(p.format);
  const bool stochastic = p.element.rounding == Rounding::kStochastic;
  std::array<std::uint32_t, kMxBlockSize> rnd{};
  std::uint8_t flags = kFlagNone;
  for (std::size_t b = 0, first = 0; first < n; ++b, first += kMxBlockSize) {
    const std::size_t len = std::min(kMxBlockSize, n - first);
    if (stochastic) FillRandom(p, first, len, rnd.data());
    const MxBlockCodes blk = QuantizeMxBlock<Traits>(
        std::span<const float>(src + first, len), p.rule, p.element, p.special,
        stochastic ? std::span<const std::uint32_t>(rnd.data(), len)
                   : std::span<const std::uint32_t>());
    scales[b] = blk.scale.bits;
    // All 32 codes: the tail's padding is the code of +0.
    PackMxCodes(p.format, blk.codes,
                std::span<std::uint8_t>(codes + b * info.block_bytes, info.block_bytes));
    flags |= blk.flags;
  }
  return flags;
}

constexpr std::size_t kNvfp4Block = 16;

std::uint8_t QuantizeNvfp4Line(const MxLineParams& p, const float* src, std::size_t n,
                               std::uint8_t* codes, std::uint8_t* scales) {
  const float s_enc = p.nvfp4_encode_scale;
  const float s_dec = 1.0f / s_enc;
  const float scale_factor = s_enc * (1.0f / 6.0f);
  const bool stochastic = p.element.rounding == Rounding::kStochastic;
  std::array<std::uint32_t, kNvfp4Block> rnd{};
  std::uint8_t flags = kFlagNone;
  for (std::size_t b = 0, first = 0; first < n; ++b, first += kNvfp4Block) {
    const std::size_t len = std::min(kNvfp4Block, n - first);
    const float* x = src + first;
    std::uint32_t amax = 0;
    for (std::size_t i = 0; i < len; ++i) {
      amax = std::max(amax, std::bit_cast<std::uint32_t>(x[i]) & 0x7FFFFFFFu);
    }
    std::array<std::uint8_t, kNvfp4Block> block{};  // +0 codes, also the tail padding.
    if (amax > 0x7F800000u) {
      scales[b] = 0x7F;  // UE4M3 NaN: the block decodes as NaN.
      flags |= kFlagInvalid;
    } else {
      const float d = std::bit_cast<float>(amax) * scale_factor;
      const EncodeResult s8 = EncodeWithFlags<Fp8E4M3Traits>(d);  // RNE, satfinite
      scales[b] = static_cast<std::uint8_t>(s8.code);
      const float q = 1.0f / (DecodeBits<Fp8E4M3Traits>(s8.code) * s_dec);
      const float multiplier = q > FLT_MAX ? FLT_MAX : q;
      if (stochastic) FillRandom(p, first, len, rnd.data());
      for (std::size_t i = 0; i < len; ++i) {
        const EncodeResult e = EncodeWithFlags<Fp4E2M1Traits>(x[i] * multiplier, p.element, rnd[i]);
        block[i] = static_cast<std::uint8_t>(e.code);
        flags |= e.flags;
      }
    }
    PackFp4(block, std::span<std::uint8_t>(codes + b * (kNvfp4Block / 2), kNvfp4Block / 2));
  }
  return flags;
}

template <class Traits>
void DequantizeMxLine(MxFormat format, const std::uint8_t* codes, const std::uint8_t* scales,
                      std::size_t n, float* dst) {
  const MxFormatInfo& info = GetMxFormatInfo(format);
  MxBlockCodes blk;
  for (std::size_t b = 0, first = 0; first < n; ++b, first += kMxBlockSize) {
    const std::size_t len = std::min(kMxBlockSize, n - first);
    UnpackMxCodes(format,
                  std::span<const std::uint8_t>(codes + b * info.block_bytes, info.block_bytes),
                  std::span<std::uint8_t>(blk.codes.data(), len));
    blk.scale = ScaleE8M0::FromBits(scales[b]);
    DequantizeMxBlock<Traits>(blk, std::span<float>(dst + first, len));
  }
}

void DequantizeNvfp4Line(const std::uint8_t* codes, const std::uint8_t* scales, std::size_t n,
                         float tensor_scale, float* dst) {
  std::array<std::uint8_t, kNvfp4Block> block{};
  for (std::size_t b = 0, first = 0; first < n; ++b, first += kNvfp4Block) {
    const std::size_t len = std::min(kNvfp4Block, n - first);
    UnpackFp4(std::span<const std::uint8_t>(codes + b * (kNvfp4Block / 2), kNvfp4Block / 2),
              std::span<std::uint8_t>(block.data(), len));
    const float s8 = DecodeBits<Fp8E4M3Traits>(scales[b] & 0x7Fu);  // UE4M3: sign ignored
    for (std::size_t i = 0; i < len; ++i) {
      dst[first + i] = (DecodeBits<Fp4E2M1Traits>(block[i]) * s8) * tensor_scale;
    }
  }
}

}  // namespace

std::uint8_t QuantizeMxLineScalar(const MxLineParams& params, const float* src, std::size_t n,
                                  std::uint8_t* codes, std::uint8_t* scales) {
  if (params.format == MxFormat::kNvfp4) return QuantizeNvfp4Line(params, src, n, codes, scales);
  return VisitMxFormat(params.format, [&](auto tag) {
    return QuantizeMxLine<typename decltype(tag)::Traits>(params, src, n, codes, scales);
  });
}

void DequantizeMxLineScalar(MxFormat format, const std::uint8_t* codes, const std::uint8_t* scales,
                            std::size_t n, float tensor_scale, float* dst) {
  if (format == MxFormat::kNvfp4) {
    DequantizeNvfp4Line(codes, scales, n, tensor_scale, dst);
    return;
  }
  VisitMxFormat(format, [&](auto tag) {
    DequantizeMxLine<typename decltype(tag)::Traits>(format, codes, scales, n, dst);
  });
}

}  // namespace trnmx::internal
