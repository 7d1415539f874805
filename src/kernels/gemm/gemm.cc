// GEMM entry points: validation, then dispatch to the MX x MX kernels
// (gemm_mx.cc) or the blocked dense driver (gemm-inl.h, Highway dynamic
// dispatch), which runs the per-target FP32 kernels or, for the opt-in
// Bf16Mode::kNativeDot and kAmxTile, the VDPBF16PS kernels of
// gemm_bf16_native.cc and the TDPBF16PS kernel of gemm_bf16_amx.cc.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/gemm/gemm.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/gemm/gemm-inl.h"

HWY_BEFORE_NAMESPACE();
namespace trnmx {
namespace HWY_NAMESPACE {

// Packs the whole of B into FP32 panels (gemm_dense.h), one task per panel.
inline void PackPanelsFp32(const GemmOperand& b, float* dst, Executor* executor) {
  const std::size_t panels = gemm::CeilDiv(b.cols, gemm::kNr);
  internal::DenseSource src;
  src.op = b;
  executor->ParallelFor(panels, [&](std::size_t jp) {
    const std::size_t j0 = jp * gemm::kNr;
    gemm::PackBPanel(src, b.rows, 0, b.rows, j0, std::min(gemm::kNr, b.cols - j0),
                     dst + jp * internal::PanelStrideFp32(b.rows));
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace trnmx
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "internal/calling_thread.h"
#include "internal/checks.h"
#include "internal/status_macros.h"
#include "kernels/gemm/gemm_dense.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemv_mx.h"

namespace trnmx {

HWY_EXPORT(DenseGemm);
HWY_EXPORT(PackPanelsFp32);

namespace internal {
namespace {

Status CheckDense(const GemmOperand& op, const char* name, ByteRange* range) {
  if (op.type == OperandType::kFp8 && Fp8Values(op.fp8_format) == nullptr) {
    return InvalidArgumentError(std::string("FP8 GEMM operand ") + name + " has fp8_format " +
                                std::to_string(static_cast<int>(op.fp8_format)) +
                                ", not an FP8 format (kFp8E4M3, kFp8E5M2 or kFp8E4M3Ieee)");
  }
  const std::size_t esize = DenseElementBytes(op.type);
  return CheckStridedArray(std::string("GEMM operand ") + name, op.data, op.rows, op.cols,
                           op.row_stride, op.col_stride, esize, range);
}

// An MX operand: a valid MX view (CheckMxView, the same checks as every MX
// tensor) that is also a GEMM operand: not NVFP4, blocked along K, with the
// operand's rows/cols.
Status CheckMx(const GemmOperand& op, const char* name, BlockAxis want, ByteRange* codes_range,
               ByteRange* scales_range) {
  const MxTensorView& t = op.mx;
  const std::string who = std::string("MX GEMM operand ") + name;
  TRNMX_RETURN_IF_ERROR(Prefixed(who, CheckMxShape(t.shape)));
  if (!IsOcpMxFormat(t.shape.format)) {
    return InvalidArgumentError(who + " is " + std::string(GetMxFormatInfo(t.shape.format).name) +
                                ", which is not a GEMM operand (use an MX format, not NVFP4)");
  }
  if (t.shape.axis != want) {
    return InvalidArgumentError(
        who + " must be blocked along K: " +
        (want == BlockAxis::kRows ? "A needs BlockAxis::kRows" : "B needs BlockAxis::kCols"));
  }
  if (op.rows != t.shape.rows || op.cols != t.shape.cols) {
    return InvalidArgumentError(who + ": rows/cols " + Dims(op.rows, op.cols) +
                                " differ from the MX view's shape " +
                                Dims(t.shape.rows, t.shape.cols));
  }
  TRNMX_RETURN_IF_ERROR(Prefixed(who, CheckMxView(t)));
  if (t.shape.num_lines() == 0 || t.shape.blocks_per_line() == 0) return OkStatus();
  *codes_range = MxCodeRanges(t.shape, t.codes, t.codes_stride).bounds();
  *scales_range = MxScaleRanges(t.shape, t.scales, t.scales_stride).bounds();
  return OkStatus();
}

Status CheckOperand(const GemmOperand& op, const char* name, BlockAxis mx_axis,
                    std::vector<ByteRange>* ranges) {
  ByteRange r1;
  ByteRange r2;
  switch (op.type) {
    case OperandType::kFp32:
    case OperandType::kBf16:
    case OperandType::kFp8:
      TRNMX_RETURN_IF_ERROR(CheckDense(op, name, &r1));
      break;
    case OperandType::kMx:
      TRNMX_RETURN_IF_ERROR(CheckMx(op, name, mx_axis, &r1, &r2));
      break;
    default:
      return InvalidArgumentError(std::string("GEMM operand ") + name +
                                  " has an invalid OperandType value " +
                                  std::to_string(static_cast<int>(op.type)));
  }
  ranges->push_back(r1);
  ranges->push_back(r2);
  return OkStatus();
}

Status CheckOutput(const GemmOutput& c, ByteRange* range) {
  if (c.type != OutputType::kFp32 && c.type != OutputType::kBf16) {
    return InvalidArgumentError("GEMM output C has an invalid OutputType value " +
                                std::to_string(static_cast<int>(c.type)));
  }
  if (c.rows == 0 || c.cols == 0) return OkStatus();
  if (c.data == nullptr) {
    return InvalidArgumentError("GEMM output C is " + Dims(c.rows, c.cols) +
                                " but its data pointer is null");
  }
  // Distinct outputs must be distinct memory (else the result would depend
  // on the order of the writes).
  if (!DistinctElements(c.rows, c.cols, c.row_stride, c.col_stride)) {
    return InvalidArgumentError("GEMM output C (" + Dims(c.rows, c.cols) + ", strides " +
                                std::to_string(c.row_stride) + ", " +
                                std::to_string(c.col_stride) +
                                ") has overlapping elements: its strides must separate rows and "
                                "columns (e.g. row stride >= cols with column stride 1)");
  }
  const std::size_t esize = c.type == OutputType::kFp32 ? 4 : 2;
  return CheckStridedArray("GEMM output C", c.data, c.rows, c.cols, c.row_stride, c.col_stride,
                           esize, range);
}

// Every check of gemm.h. b_op: B as an operand (nullptr for PackedWeights,
// already checked when packed; then only its type and shape are used).
Status ValidateCommon(const GemmOperand& a, const GemmOperand* b_op, OperandType b_type,
                      std::size_t b_rows, std::size_t b_cols, const GemmOutput& c,
                      const GemmParams& params, bool check_cpu) {
  std::vector<ByteRange> ranges;
  TRNMX_RETURN_IF_ERROR(CheckOperand(a, "A", BlockAxis::kRows, &ranges));
  if (b_op != nullptr) TRNMX_RETURN_IF_ERROR(CheckOperand(*b_op, "B", BlockAxis::kCols, &ranges));
  if (a.cols != b_rows) {
    return InvalidArgumentError("GEMM inner dimensions differ: A is " + Dims(a.rows, a.cols) +
                                " and B is " + Dims(b_rows, b_cols) +
                                " (A's columns must equal B's rows)");
  }
  ByteRange c_range;
  TRNMX_RETURN_IF_ERROR(CheckOutput(c, &c_range));
  if (c.rows != a.rows || c.cols != b_cols) {
    return InvalidArgumentError("GEMM output C is " + Dims(c.rows, c.cols) + " but A * B is " +
                                Dims(a.rows, b_cols));
  }
  if (params.accumulate &&
      (c.type != OutputType::kFp32 || c.col_stride != 1 || params.alpha != 1.0f ||
       params.beta != 0.0f || params.bias != nullptr || params.bf16_mode != Bf16Mode::kExactFma ||
       params.mx_mode != MxGemmMode::kExact)) {
    return InvalidArgumentError(
        "GemmParams::accumulate needs an FP32 output with col_stride 1, alpha 1, beta 0, no bias, "
        "Bf16Mode::kExactFma and MxGemmMode::kExact");
  }
  const bool mx_pair = a.type == OperandType::kMx && b_type == OperandType::kMx;
  switch (params.mx_mode) {
    case MxGemmMode::kExact:
      break;
    case MxGemmMode::kViaBf16:
      if (!mx_pair) {
        return InvalidArgumentError(
            "MxGemmMode::kViaBf16 needs MX x MX operands (A and B both OperandType::kMx)");
      }
      break;
    default:
      return InvalidArgumentError("invalid MxGemmMode value " +
                                  std::to_string(static_cast<int>(params.mx_mode)));
  }
  // The BF16 x BF16 products of a Bf16Mode: BF16 operands, or MX ones as BF16.
  const bool bf16_pair = (a.type == OperandType::kBf16 && b_type == OperandType::kBf16) ||
                         (mx_pair && params.mx_mode == MxGemmMode::kViaBf16);
  switch (params.bf16_mode) {
    case Bf16Mode::kExactFma:
      break;
    case Bf16Mode::kNativeDot:
      if (!bf16_pair) {
        return InvalidArgumentError(
            "Bf16Mode::kNativeDot needs BF16 x BF16 operands (A and B both OperandType::kBf16, or "
            "both MX with MxGemmMode::kViaBf16)");
      }
      if (check_cpu && !CpuHasAvx512Bf16()) {
        return FailedPreconditionError(
            "Bf16Mode::kNativeDot needs the AVX512_BF16 instruction VDPBF16PS, which this CPU "
            "does not have (use Bf16Mode::kExactFma)");
      }
      break;
    case Bf16Mode::kAmxTile:
      if (!bf16_pair) {
        return InvalidArgumentError(
            "Bf16Mode::kAmxTile needs BF16 x BF16 operands (A and B both OperandType::kBf16, or "
            "both MX with MxGemmMode::kViaBf16)");
      }
      if (check_cpu && !AmxBf16Usable()) {
        return FailedPreconditionError(
            "Bf16Mode::kAmxTile needs the AMX-BF16 instruction TDPBF16PS and the operating "
            "system's leave to use the tile registers, which this machine does not give (use "
            "Bf16Mode::kExactFma)");
      }
      break;
    default:
      return InvalidArgumentError("invalid Bf16Mode value " +
                                  std::to_string(static_cast<int>(params.bf16_mode)));
  }
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    if (c_range.Overlaps(ranges[i])) {
      return InvalidArgumentError(std::string("GEMM output C overlaps the memory of operand ") +
                                  (i < 2 ? "A" : "B") + " (C must not alias its inputs)");
    }
  }
  ByteRange bias_range;
  if (params.bias != nullptr && c.cols > 0) {
    bias_range.lo = reinterpret_cast<std::uintptr_t>(params.bias);
    bias_range.hi = bias_range.lo + c.cols * sizeof(float);
  }
  if (c_range.Overlaps(bias_range)) {
    return InvalidArgumentError("GEMM output C overlaps the bias (C must not alias its inputs)");
  }
  return OkStatus();
}

}  // namespace

GemmBlocking ChooseDenseBlocking(std::size_t m, std::size_t n, std::size_t k, std::size_t mr,
                                 std::size_t nr, std::size_t b_element_bytes,
                                 std::size_t k_multiple, const GemmBlocking& requested) {
  // KC = 192: an MR x KC A micro-panel (10.5 KiB for AVX-512's 14 rows)
  // stays in L1; MC = 24 micro-panels, balanced so that the M blocks have
  // equal sizes. The BF16 paths halve the bytes per element and double KC
  // (K blocks of whole pairs or AMX steps).
  //
  // NC: 4096 columns for the FP32 kernels, whose B block (3 MiB) streams
  // from L2 or L3 as BLIS's Haswell blocking does (NC 4080). On a Zen 3
  // (512 KiB L2) an L2-sized block (NC = 512) ran 4-10 % slower at
  // 2048^3, 4096^3 and M = 128: each NC block repacks A and restarts the
  // streams (docs/gemm.md). The BF16 pair paths (tuned on a 2 MiB-L2 Intel
  // CPU) keep 3/4 of L2.
  GemmBlocking b = requested;
  std::size_t kc = requested.kc != 0 ? requested.kc : (k_multiple > 1 ? 384 : 192);
  kc = std::max(k_multiple, kc / k_multiple * k_multiple);
  b.kc = std::min(kc, k);
  std::size_t mc_max = requested.mc != 0 ? requested.mc : mr * 24;
  mc_max = std::max(mr, mc_max / mr * mr);
  b.mc = RoundUp(CeilDiv(m, CeilDiv(m, mc_max)), mr);
  std::size_t nc = requested.nc;
  if (nc == 0 && b_element_bytes == sizeof(float)) nc = 4096;
  if (nc == 0) {
    static const std::size_t l2_bytes = [] {
      const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
      return l2 > 0 ? static_cast<std::size_t>(l2) : std::size_t{1} << 20;
    }();
    nc = std::clamp<std::size_t>(l2_bytes * 3 / 4 / (b.kc * b_element_bytes), 256, 4096);
  }
  b.nc = RoundUp(std::min(nc, n), nr);
  return b;
}

bool CpuHasAvx512Bf16() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
  return has;
#else
  return false;
#endif
}

Status ValidateGemm(const GemmOperand& a, const GemmOperand& b, const GemmOutput& c,
                    const GemmParams& params, bool check_cpu) {
  return ValidateCommon(a, &b, b.type, b.rows, b.cols, c, params, check_cpu);
}

}  // namespace internal

// ---------------------------------------------------------------------------
// PackedWeights
// ---------------------------------------------------------------------------
struct PackedWeights::Impl {
  OperandType type = OperandType::kFp32;
  std::size_t k = 0;
  std::size_t n = 0;
  hwy::AlignedFreeUniquePtr<float[]> panels_fp32;          // kFp32, kFp8.
  hwy::AlignedFreeUniquePtr<std::uint16_t[]> pairs_bf16;   // kBf16.
  std::vector<std::uint8_t> mx_codes;                      // kMx: compact copy.
  std::vector<std::uint8_t> mx_scales;
  GemmOperand mx_operand;                                  // kMx: views the copy.
  std::size_t bytes = 0;
};

PackedWeights::PackedWeights(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PackedWeights::PackedWeights(PackedWeights&&) noexcept = default;
PackedWeights& PackedWeights::operator=(PackedWeights&&) noexcept = default;
PackedWeights::~PackedWeights() = default;
std::size_t PackedWeights::k() const { return impl_->k; }
std::size_t PackedWeights::n() const { return impl_->n; }
OperandType PackedWeights::type() const { return impl_->type; }
std::size_t PackedWeights::bytes() const { return impl_->bytes; }

namespace internal {

void PackPanelBf16Pairs(const GemmOperand& b, std::size_t j0, std::uint16_t* dst) {
  const std::size_t k_total = b.rows;
  const std::size_t kp = (k_total + 1) / 2 * 2;
  const std::size_t cols = std::min(kGemmPanelCols, b.cols - j0);
  const auto* src = static_cast<const std::uint16_t*>(b.data);
  std::memset(dst, 0, kp * kGemmPanelCols * sizeof(std::uint16_t));
  for (std::size_t k = 0; k < k_total; ++k) {
    std::uint16_t* row = dst + (k / 2) * 2 * kGemmPanelCols + (k % 2);
    const std::uint16_t* s = src + k * b.row_stride + j0 * b.col_stride;
    for (std::size_t c = 0; c < cols; ++c) row[2 * c] = s[c * b.col_stride];
  }
}

namespace {

Status CheckPackable(const GemmOperand& b) {
  std::vector<ByteRange> ranges;
  return CheckOperand(b, "B", BlockAxis::kCols, &ranges);
}

Status RunGemm(const GemmOperand& a, const DenseSource& b, const GemmOperand& b_for_mx,
               const GemmOutput& c, const GemmParams& params, Executor* executor,
               const GemmBlocking& blocking) {
  Executor& ex = internal::ExecutorOrCallingThread(executor);
  if (a.type == OperandType::kMx && b_for_mx.type == OperandType::kMx) {
    if (c.rows == 0 || c.cols == 0) return OkStatus();
    if (params.mx_mode == MxGemmMode::kViaBf16) {
      MxAsBf16 folded;
      TRNMX_RETURN_IF_ERROR(FoldMxPairToBf16(a, b_for_mx, ex, &folded));
      if (folded.exact) {
        GemmParams dense = params;
        dense.mx_mode = MxGemmMode::kExact;
        DenseSource src;
        src.kind = DenseSourceKind::kPairsBf16;
        src.panels = folded.b_panels.get();
        return RunGemm(folded.a, src, GemmOperand{}, c, dense, &ex, blocking);
      }
    }
    return GemmMxMx(a, b_for_mx, c, params, ex);
  }
  // Dense activations x MXFP4 weights with M = 1: stream the weights once
  // (gemv_mx.h; it declines, writing nothing, when it does not apply).
  if (a.type != OperandType::kMx && b_for_mx.type == OperandType::kMx && c.rows == 1 &&
      !params.accumulate && GemvDenseMx(a, b_for_mx, c, params, ex)) {
    return OkStatus();
  }
  DenseGemmArgs args;
  args.m = c.rows;
  args.n = c.cols;
  args.k = a.cols;
  args.a.op = a;
  args.b = b;
  args.c = c;
  args.params = params;
  args.executor = &ex;
  args.blocking = blocking;
  const DensePath path = params.bf16_mode == Bf16Mode::kNativeDot ? DensePath::kNativeDot
                         : params.bf16_mode == Bf16Mode::kAmxTile ? DensePath::kAmxTile
                                                                  : DensePath::kFp32;
  HWY_DYNAMIC_DISPATCH(DenseGemm)(args, path);
  return OkStatus();
}

Status GemmPacked(const GemmOperand& a, const PackedWeights& b, const GemmOutput& c,
                  const GemmParams& params, Executor* executor, const GemmBlocking& blocking) {
  const PackedWeights::Impl& w = b.impl();
  TRNMX_RETURN_IF_ERROR(ValidateCommon(a, nullptr, w.type, w.k, w.n, c, params, /*check_cpu=*/true));
  DenseSource src;
  GemmOperand mx_b;
  switch (w.type) {
    case OperandType::kFp32:
    case OperandType::kFp8:  // Decoded to FP32 panels when packed.
      src.kind = DenseSourceKind::kPanelsFp32;
      src.panels = w.panels_fp32.get();
      break;
    case OperandType::kBf16:
      src.kind = DenseSourceKind::kPairsBf16;
      src.panels = w.pairs_bf16.get();
      break;
    case OperandType::kMx:
      src.op = w.mx_operand;
      mx_b = w.mx_operand;
      break;
  }
  return RunGemm(a, src, mx_b, c, params, executor, blocking);
}

}  // namespace

Status GemmWithBlocking(const GemmOperand& a, const GemmOperand& b, const GemmOutput& c,
                        const GemmParams& params, Executor* executor,
                        const GemmBlocking& blocking) {
  TRNMX_RETURN_IF_ERROR(ValidateGemm(a, b, c, params, /*check_cpu=*/true));
  DenseSource src;
  src.op = b;
  return RunGemm(a, src, b, c, params, executor, blocking);
}

Status GemmWithBlocking(const GemmOperand& a, const PackedWeights& b, const GemmOutput& c,
                        const GemmParams& params, Executor* executor,
                        const GemmBlocking& blocking) {
  return GemmPacked(a, b, c, params, executor, blocking);
}

}  // namespace internal

Status Gemm(const GemmOperand& a, const GemmOperand& b, const GemmOutput& c,
            const GemmParams& params, Executor* executor) {
  return internal::GemmWithBlocking(a, b, c, params, executor, {});
}

Status Gemm(const GemmOperand& a, const PackedWeights& b, const GemmOutput& c,
            const GemmParams& params, Executor* executor) {
  return internal::GemmWithBlocking(a, b, c, params, executor, {});
}

StatusOr<PackedWeights> PackedWeights::Pack(const GemmOperand& b, Executor* executor) {
  TRNMX_RETURN_IF_ERROR(internal::CheckPackable(b));
  Executor& ex = internal::ExecutorOrCallingThread(executor);
  auto impl = std::make_unique<Impl>();
  impl->type = b.type;
  impl->k = b.rows;
  impl->n = b.cols;
  const std::size_t panels = (b.cols + internal::kGemmPanelCols - 1) / internal::kGemmPanelCols;
  switch (b.type) {
    case OperandType::kFp32:
    case OperandType::kFp8: {  // FP8: decoded exactly into the FP32 panels.
      const std::size_t count = std::max<std::size_t>(1, panels * internal::PanelStrideFp32(b.rows));
      impl->panels_fp32 = hwy::AllocateAligned<float>(count);
      impl->bytes = count * sizeof(float);
      if (b.rows > 0 && b.cols > 0) {
        HWY_DYNAMIC_DISPATCH(PackPanelsFp32)(b, impl->panels_fp32.get(), &ex);
      }
      break;
    }
    case OperandType::kBf16: {
      const std::size_t count = std::max<std::size_t>(1, panels * internal::PanelStrideBf16(b.rows));
      impl->pairs_bf16 = hwy::AllocateAligned<std::uint16_t>(count);
      impl->bytes = count * sizeof(std::uint16_t);
      if (b.rows > 0 && b.cols > 0) {
        std::uint16_t* dst = impl->pairs_bf16.get();
        ex.ParallelFor(panels, [&](std::size_t jp) {
          internal::PackPanelBf16Pairs(b, jp * internal::kGemmPanelCols,
                                       dst + jp * internal::PanelStrideBf16(b.rows));
        });
      }
      break;
    }
    case OperandType::kMx: {
      // The codes and scales are kept (compact line strides); dense x MX
      // decodes them while packing each call, MX x MX reads them directly.
      const MxTensorView& t = b.mx;
      const std::size_t lines = t.shape.num_lines();
      const std::size_t code_bytes = t.shape.line_code_bytes();
      const std::size_t scale_bytes = t.shape.line_scale_bytes();
      impl->mx_codes.resize(lines * code_bytes);
      impl->mx_scales.resize(lines * scale_bytes);
      for (std::size_t l = 0; l < lines && code_bytes > 0; ++l) {
        std::memcpy(impl->mx_codes.data() + l * code_bytes, t.codes + l * t.codes_stride, code_bytes);
        std::memcpy(impl->mx_scales.data() + l * scale_bytes, t.scales + l * t.scales_stride,
                    scale_bytes);
      }
      MxTensorView copy = t;
      copy.codes = impl->mx_codes.data();
      copy.codes_stride = code_bytes;
      copy.scales = impl->mx_scales.data();
      copy.scales_stride = scale_bytes;
      impl->mx_operand = GemmOperand::Mx(copy);
      impl->bytes = impl->mx_codes.size() + impl->mx_scales.size();
      break;
    }
  }
  return PackedWeights(std::move(impl));
}

}  // namespace trnmx

#endif  // HWY_ONCE
