// SIMD MX line kernels (mx_line.h): which parameters the vector path
// supports, policy resolution, and Highway dynamic dispatch to
// mx_line-inl.h. The scalar versions and the tensor layer live elsewhere.
#include "formats/mx_line.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "formats/mx_line-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "formats/mx_line-inl.h"

#if HWY_ONCE

#include <cstddef>
#include <cstdint>

#include "formats/element_consts.h"
#include "formats/kernel_args.h"
#include "trnmx/formats/visit.h"

namespace trnmx::internal {

HWY_EXPORT(QuantizeMxLineKernel);
HWY_EXPORT(QuantizeMxLineKernelBf16);
HWY_EXPORT(DequantizeMxLineKernel);
HWY_EXPORT(DequantizeMxLineBf16Kernel);

namespace {

// Fills the element constants for Traits; false when the vector path does
// not implement `params` (the scalar path then runs).
template <class Traits>
bool Resolve(const MxLineParams& params, MxQuantizeArgs& args) {
  if (!IsScaleRuleDefined<Traits>(params.rule)) return false;  // scalar reports it
  args.consts = MakeElementEncodeConsts<Traits>(params.element);
  EncodeOptions sat = params.element;
  sat.overflow = Overflow::kSatFinite;
  args.sat_consts = MakeElementEncodeConsts<Traits>(sat);
  return true;
}

// The kernel's arguments for `params`; false when the vector path does not
// implement them.
bool PrepareQuantizeArgs(const MxLineParams& params, std::size_t n, MxQuantizeArgs& args) {
  if (!SimdSupportsRounding(params.element.rounding)) return false;  // stochastic: scalar
  if (params.special != SpecialBlock::kDefault && params.special != SpecialBlock::kSatFiniteBlock) {
    return false;
  }
  args.format = params.format;
  args.rule = params.rule;
  args.rounding = params.element.rounding;
  args.special = params.special;
  // NVFP4 (UE4M3 scales and a tensor scale) is scalar only.
  const bool ok = VisitMxFormat(params.format, [&](auto tag) {
    using Tag = decltype(tag);
    if constexpr (Tag::kIsOcpMx) {
      return Resolve<typename Tag::Traits>(params, args);
    } else {
      return false;
    }
  });
  if (!ok) return false;
  const std::size_t blocks = (n + kMxBlockSize - 1) / kMxBlockSize;
  args.stream =
      params.stream || blocks * GetMxFormatInfo(params.format).block_bytes >= kStreamMinBytes;
  return true;
}

}  // namespace

bool QuantizeMxLineSimd(const MxLineParams& params, const float* src, std::size_t n,
                        std::uint8_t* codes, std::uint8_t* scales) {
  MxQuantizeArgs args;
  if (!PrepareQuantizeArgs(params, n, args)) return false;
  if (n != 0) HWY_DYNAMIC_DISPATCH(QuantizeMxLineKernel)(args, src, n, codes, scales);
  return true;
}

bool QuantizeMxLineSimd(const MxLineParams& params, const Bf16* src, std::size_t n,
                        std::uint8_t* codes, std::uint8_t* scales) {
  static_assert(sizeof(Bf16) == 2 && alignof(Bf16) <= 2);
  // The BF16 kernels round to nearest even only (mx_line-inl.h); the caller
  // widens other roundings' lines to FP32.
  if (params.element.rounding != Rounding::kNearestEven) return false;
  MxQuantizeArgs args;
  if (!PrepareQuantizeArgs(params, n, args)) return false;
  if (n != 0) {
    HWY_DYNAMIC_DISPATCH(QuantizeMxLineKernelBf16)
    (args, reinterpret_cast<const std::uint16_t*>(src), n, codes, scales);
  }
  return true;
}

bool DequantizeMxLineSimd(MxFormat format, const std::uint8_t* codes, const std::uint8_t* scales,
                          std::size_t n, float tensor_scale, float* dst) {
  // NVFP4, and a tensor scale other than 1 (meaningless for MX formats): scalar.
  if (!IsOcpMxFormat(format) || tensor_scale != 1.0f) return false;
  if (n != 0) HWY_DYNAMIC_DISPATCH(DequantizeMxLineKernel)(format, codes, scales, n, dst);
  return true;
}

bool DequantizeMxLineToBf16(MxFormat format, const std::uint8_t* codes, const std::uint8_t* scales,
                            std::size_t n, Bf16* dst) {
  static_assert(sizeof(Bf16) == 2 && alignof(Bf16) <= 2);
  if (!IsOcpMxFormat(format)) return false;
  return n == 0 || HWY_DYNAMIC_DISPATCH(DequantizeMxLineBf16Kernel)(
                       format, codes, scales, n, reinterpret_cast<std::uint16_t*>(dst));
}

}  // namespace trnmx::internal

#endif  // HWY_ONCE
