// MX tensors (include/trnmx/mx.h): validation, the owning MxTensor, the
// parallel tensor <-> line driver and the GGML MXFP4 interchange.
//
// Tiling. A tensor is num_lines lines of line_length elements. Work items are
// (group of lines) x (segment of a line): segments are kSegment elements (kStreamSegment when a
// large destination streams), a multiple of every block size, so each block lies in one work item
// and every line function call starts at a block boundary. Row-axis lines are passed to the line
// function in place (BF16 ones to its BF16 overload when the SIMD kernel implements the options);
// column-axis lines (and the other BF16 rows) are gathered kChunk elements at a time into a
// contiguous scratch tile (a transpose of kChunk rows x up to kMaxColGroup columns), so the line
// function always sees stride 1. The line functions are pure per element
// position, and stochastic rounding is indexed by (r * cols + c), so the
// output does not depend on the tiling or the thread count.
#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "formats/kernel_args.h"
#include "formats/mx_line.h"
#include "internal/calling_thread.h"
#include "internal/checks.h"
#include "internal/status_macros.h"
#include "trnmx/formats/visit.h"
#include "trnmx/formats/xorwow.h"
#include "trnmx/mx.h"

namespace trnmx {
namespace {

using internal::ByteRange;
using internal::CheckMxLayout;
using internal::CheckMxShape;
using internal::CheckStridedArray;
using internal::LineRanges;
using internal::MxCodeRanges;
using internal::MxScaleRanges;
using internal::Overlap;

constexpr std::size_t kChunk = 256;             // Scratch tile length along a line.
constexpr std::size_t kSegment = 8192;          // Elements of one line per work item.
// Segments of row lines written with non-temporal stores: each work item ends
// with a store fence, which cost about 15 % of a BF16 -> MXFP8 quantize of 64
// MiB with 8192-element segments.
constexpr std::size_t kStreamSegment = std::size_t{1} << 18;
constexpr std::size_t kTargetElements = 16384;  // Elements per work item (about).
constexpr std::size_t kMaxColGroup = 32;        // Column lines gathered at once.
static_assert(kChunk % 32 == 0 && kSegment % kChunk == 0 && kStreamSegment % kChunk == 0);

std::string Str(std::size_t v) { return std::to_string(v); }

bool ValidFormat(MxFormat f) { return static_cast<std::size_t>(f) < std::size(kMxFormatInfos); }
bool ValidAxis(BlockAxis a) { return a == BlockAxis::kRows || a == BlockAxis::kCols; }

template <class T>
LineRanges MatrixRanges(const StridedMatrix<T>& m) {
  if (m.rows == 0 || m.cols == 0) return {};
  // A single row needs no stride; the families must be ascending and disjoint.
  const std::size_t stride = m.rows > 1 ? m.row_stride * sizeof(T) : 0;
  return {reinterpret_cast<std::uintptr_t>(m.data), stride, m.cols * sizeof(T), m.rows};
}

// Checks a dense matrix; `what` is "source" or "destination". Its rows must
// not overlap (row_stride >= cols), so that the overlap tests against the MX
// buffers see disjoint ascending lines.
template <class T>
Status CheckMatrix(const StridedMatrix<T>& m, const char* what) {
  ByteRange range;
  TRNMX_RETURN_IF_ERROR(
      CheckStridedArray(what, m.data, m.rows, m.cols, m.row_stride, 1, sizeof(T), &range));
  if (m.rows > 1 && m.row_stride < m.cols) {
    return InvalidArgumentError(std::string(what) + " row_stride " + Str(m.row_stride) +
                                " is less than cols " + Str(m.cols));
  }
  return OkStatus();
}

// The dense side of a quantization or dequantization: the MX tensor's shape,
// a valid matrix (CheckMatrix), and no byte shared with the MX codes or
// scales. Messages name the MX side `mx` ("the destination") and its
// buffers `mx_buffers` + " codes" ("the destination codes").
template <class T>
Status CheckMatrixWithMx(const StridedMatrix<T>& m, const char* what, const MxShape& shape,
                         const void* codes, std::size_t codes_stride, const void* scales,
                         std::size_t scales_stride, const char* mx, const char* mx_buffers) {
  if (m.rows != shape.rows || m.cols != shape.cols) {
    return InvalidArgumentError(std::string(what) + " is " + internal::Dims(m.rows, m.cols) +
                                " but " + mx + " is " + internal::Dims(shape.rows, shape.cols));
  }
  TRNMX_RETURN_IF_ERROR(CheckMatrix(m, what));
  const LineRanges lines = MatrixRanges(m);
  if (Overlap(lines, MxCodeRanges(shape, codes, codes_stride))) {
    return InvalidArgumentError(std::string(what) + " overlaps " + mx_buffers + " codes");
  }
  if (Overlap(lines, MxScaleRanges(shape, scales, scales_stride))) {
    return InvalidArgumentError(std::string(what) + " overlaps " + mx_buffers + " scales");
  }
  return OkStatus();
}

float Load(const float* p) { return *p; }
float Load(const Bf16* p) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(p->bits) << 16);
}

// Work items over lines and segments.
struct Tiling {
  std::size_t lines_per_group;
  std::size_t groups;
  std::size_t segments;
  std::size_t segment;  // Elements per segment.
  std::size_t tasks() const { return groups * segments; }
};

Tiling MakeTiling(std::size_t num_lines, std::size_t line_length, bool gather,
                  std::size_t segment = kSegment) {
  const std::size_t seg = std::min(line_length, segment);
  std::size_t g = std::max<std::size_t>(1, kTargetElements / std::max<std::size_t>(seg, 1));
  if (gather) g = std::min(g, kMaxColGroup);
  g = std::min(g, std::max<std::size_t>(num_lines, 1));
  return {g, (num_lines + g - 1) / g, (line_length + segment - 1) / segment, segment};
}

// Runs body(0..n) through the executor; a single item runs on the calling
// thread (small tensors should not pay for waking a pool).
template <class F>
void RunTasks(Executor& ex, std::size_t n, F&& body) {
  if (n == 1) {
    body(std::size_t{0});
  } else if (n > 1) {
    ex.ParallelFor(n, body);
  }
}

void QuantizeLine(const internal::MxLineParams& p, const float* src, std::size_t n,
                  std::uint8_t* codes, std::uint8_t* scales) {
  if (!internal::QuantizeMxLineSimd(p, src, n, codes, scales)) {
    internal::QuantizeMxLineScalar(p, src, n, codes, scales);
  }
}

void DequantizeLine(MxFormat f, const std::uint8_t* codes, const std::uint8_t* scales,
                    std::size_t n, float tensor_scale, float* dst) {
  if (!internal::DequantizeMxLineSimd(f, codes, scales, n, tensor_scale, dst)) {
    internal::DequantizeMxLineScalar(f, codes, scales, n, tensor_scale, dst);
  }
}

// Largest |x| over the source by FP32 bits, NaN ignored; +Inf counts.
template <class T>
float SourceAmax(const StridedMatrix<const T>& src, Executor& ex) {
  const Tiling t = MakeTiling(src.rows, src.cols, false);
  std::vector<std::uint32_t> part(t.tasks(), 0);
  RunTasks(ex, t.tasks(), [&](std::size_t task) {
    const std::size_t g = task / t.segments;
    const std::size_t s0 = (task % t.segments) * t.segment;
    const std::size_t s1 = std::min(src.cols, s0 + t.segment);
    const std::size_t r1 = std::min(src.rows, (g + 1) * t.lines_per_group);
    std::uint32_t m = 0;
    for (std::size_t r = g * t.lines_per_group; r < r1; ++r) {
      const T* row = src.data + r * src.row_stride;
      for (std::size_t c = s0; c < s1; ++c) {
        const std::uint32_t a = std::bit_cast<std::uint32_t>(Load(row + c)) & 0x7FFFFFFFu;
        if (a <= 0x7F800000u && a > m) m = a;
      }
    }
    part[task] = m;
  });
  std::uint32_t m = 0;
  for (std::uint32_t v : part) m = std::max(m, v);
  return std::bit_cast<float>(m);
}

template <class T>
Status QuantizeIntoImpl(const StridedMatrix<const T>& src, MxTensorSpan& dst,
                        const MxQuantizeOptions& options, Executor* executor) {
  TRNMX_RETURN_IF_ERROR(CheckMxSpan(dst));
  const MxShape& shape = dst.shape;
  TRNMX_RETURN_IF_ERROR(CheckMxQuantizeOptions(shape.format, options));
  if (options.axis != shape.axis) {
    return InvalidArgumentError("options.axis differs from the destination's shape.axis");
  }
  TRNMX_RETURN_IF_ERROR(CheckMatrixWithMx(src, "source", shape, dst.codes, dst.codes_stride,
                                          dst.scales, dst.scales_stride, "the destination",
                                          "the destination"));

  Executor& ex = internal::ExecutorOrCallingThread(executor);
  const MxFormatInfo& info = GetMxFormatInfo(shape.format);
  internal::MxLineParams base;
  base.format = shape.format;
  base.rule = options.rule;
  base.element = options.element;
  base.special = options.special;
  base.seed = options.stochastic_seed;
  std::vector<std::uint32_t> xorwow_words;
  if (options.element.rounding == Rounding::kStochastic &&
      options.stochastic_source == StochasticSource::kXorwow) {
    xorwow_words.resize(shape.rows * shape.cols);
    Xorwow::FromSeed(options.stochastic_seed).Fill(xorwow_words);
    base.random_words = xorwow_words.data();
  }
  float tensor_scale = 1.0f;
  if (info.has_tensor_scale) {
    const float amax = options.nvfp4_global_amax.has_value()
                           ? *options.nvfp4_global_amax
                           : (shape.rows == 0 || shape.cols == 0 ? 0.0f : SourceAmax(src, ex));
    base.nvfp4_encode_scale = Nvfp4EncodeScale(amax);
    tensor_scale = Nvfp4DecodeScale(base.nvfp4_encode_scale);
  }

  const bool cols_axis = shape.axis == BlockAxis::kCols;
  const std::size_t num_lines = shape.num_lines();
  const std::size_t len = shape.line_length();
  const std::size_t bs = info.block_size;
  // Row lines are written in place, segment by segment: a large destination
  // streams (non-temporal stores) however short each segment is.
  base.stream = !cols_axis &&
                num_lines * ((len + bs - 1) / bs) * info.block_bytes >= internal::kStreamMinBytes;
  const Tiling t = MakeTiling(num_lines, len, cols_axis, base.stream ? kStreamSegment : kSegment);
  if (num_lines != 0 && len != 0) {
    RunTasks(ex, t.tasks(), [&](std::size_t task) {
      const std::size_t l0 = (task / t.segments) * t.lines_per_group;
      const std::size_t l1 = std::min(num_lines, l0 + t.lines_per_group);
      const std::size_t s0 = (task % t.segments) * t.segment;
      const std::size_t s1 = std::min(len, s0 + t.segment);
      internal::MxLineParams p = base;
      const auto out_codes = [&](std::size_t line, std::size_t pos) {
        return dst.codes + line * dst.codes_stride + (pos / bs) * info.block_bytes;
      };
      const auto out_scales = [&](std::size_t line, std::size_t pos) {
        return dst.scales + line * dst.scales_stride + pos / bs;
      };
      if constexpr (std::is_same_v<T, float>) {
        if (!cols_axis) {  // FP32 rows: in place.
          for (std::size_t r = l0; r < l1; ++r) {
            p.first_index = r * shape.cols + s0;
            p.index_step = 1;
            QuantizeLine(p, src.data + r * src.row_stride + s0, s1 - s0, out_codes(r, s0),
                         out_scales(r, s0));
          }
          return;
        }
      } else {
        // BF16 rows: in place by the SIMD line kernel when it implements
        // the options (the same for every row), else widened below.
        if (!cols_axis && internal::QuantizeMxLineSimd(p, src.data + l0 * src.row_stride + s0,
                                                       s1 - s0, out_codes(l0, s0),
                                                       out_scales(l0, s0))) {
          for (std::size_t r = l0 + 1; r < l1; ++r) {
            internal::QuantizeMxLineSimd(p, src.data + r * src.row_stride + s0, s1 - s0,
                                         out_codes(r, s0), out_scales(r, s0));
          }
          return;
        }
      }
      const std::size_t cs = std::min(kChunk, s1 - s0);  // Tile stride.
      std::vector<float> tile((l1 - l0) * cs);
      for (std::size_t c0 = s0; c0 < s1; c0 += cs) {
        const std::size_t n = std::min(cs, s1 - c0);
        if (cols_axis) {  // Lines are columns l0..l1; positions c0.. are rows.
          for (std::size_t i = 0; i < n; ++i) {
            const T* row = src.data + (c0 + i) * src.row_stride;
            for (std::size_t l = l0; l < l1; ++l) tile[(l - l0) * cs + i] = Load(row + l);
          }
        } else {  // BF16 rows.
          for (std::size_t l = l0; l < l1; ++l) {
            const T* row = src.data + l * src.row_stride + c0;
            for (std::size_t i = 0; i < n; ++i) tile[(l - l0) * cs + i] = Load(row + i);
          }
        }
        for (std::size_t l = l0; l < l1; ++l) {
          p.first_index = cols_axis ? c0 * shape.cols + l : l * shape.cols + c0;
          p.index_step = cols_axis ? shape.cols : 1;
          QuantizeLine(p, tile.data() + (l - l0) * cs, n, out_codes(l, c0), out_scales(l, c0));
        }
      }
    });
  }
  dst.tensor_scale = tensor_scale;
  return OkStatus();
}

template <class T>
StatusOr<MxTensor> QuantizeImpl(const StridedMatrix<const T>& src, MxFormat format,
                                const MxQuantizeOptions& options, Executor* executor) {
  TRNMX_RETURN_IF_ERROR(CheckMxQuantizeOptions(format, options));
  TRNMX_ASSIGN_OR_RETURN(MxTensor tensor,
                         MxTensor::Create({format, src.rows, src.cols, options.axis}));
  MxTensorSpan span = tensor.span();
  TRNMX_RETURN_IF_ERROR(QuantizeIntoImpl(src, span, options, executor));
  tensor.set_tensor_scale(span.tensor_scale);
  return tensor;
}

std::string FormatName(MxFormat f) { return std::string(GetMxFormatInfo(f).name); }

}  // namespace

// ---- Options -----------------------------------------------------------------

bool IsScaleRuleDefinedFor(MxFormat format, ScaleRule rule) {
  if (!ValidFormat(format)) return false;
  if (format == MxFormat::kNvfp4) return rule == ScaleRule::kOcpFloor;
  return VisitMxFormat(format, [rule](auto tag) {
    return IsScaleRuleDefined<typename decltype(tag)::Traits>(rule);
  });
}

bool IsSpecialBlockDefinedFor(MxFormat format, SpecialBlock special) {
  if (!ValidFormat(format)) return false;
  if (format == MxFormat::kNvfp4) return special == SpecialBlock::kDefault;
  return VisitMxFormat(format, [special](auto tag) {
    return IsSpecialBlockDefined<typename decltype(tag)::Traits>(special);
  });
}

Status CheckMxQuantizeOptions(MxFormat format, const MxQuantizeOptions& o) {
  const auto bad_enum = [](const char* field, auto v) {
    return InvalidArgumentError(std::string(field) + " has the invalid value " +
                                Str(static_cast<std::size_t>(v)));
  };
  if (!ValidFormat(format)) return bad_enum("format", format);
  if (static_cast<std::size_t>(o.rule) >= std::size(kAllScaleRules))
    return bad_enum("options.rule", o.rule);
  if (static_cast<std::size_t>(o.special) >
      static_cast<std::size_t>(SpecialBlock::kInfPassThrough)) {
    return bad_enum("options.special", o.special);
  }
  if (!ValidAxis(o.axis)) return bad_enum("options.axis", o.axis);
  if (static_cast<std::size_t>(o.element.rounding) >
      static_cast<std::size_t>(Rounding::kStochastic)) {
    return bad_enum("options.element.rounding", o.element.rounding);
  }
  if (static_cast<std::size_t>(o.stochastic_source) >
      static_cast<std::size_t>(StochasticSource::kXorwow)) {
    return bad_enum("options.stochastic_source", o.stochastic_source);
  }
  if (static_cast<std::size_t>(o.element.overflow) >
      static_cast<std::size_t>(Overflow::kMlDtypesSat)) {
    return bad_enum("options.element.overflow", o.element.overflow);
  }
  if (static_cast<std::size_t>(o.element.nan) > static_cast<std::size_t>(NanPolicy::kMlDtypesNaN)) {
    return bad_enum("options.element.nan", o.element.nan);
  }
  if (static_cast<std::size_t>(o.element.subnormals) >
      static_cast<std::size_t>(Subnormals::kFlush)) {
    return bad_enum("options.element.subnormals", o.element.subnormals);
  }
  if (static_cast<std::size_t>(o.element.int8_range) >
      static_cast<std::size_t>(Int8Range::kAllowMinus128)) {
    return bad_enum("options.element.int8_range", o.element.int8_range);
  }
  if (!IsScaleRuleDefinedFor(format, o.rule)) {
    if (format == MxFormat::kNvfp4) {
      return InvalidArgumentError("scale rule " + std::string(ScaleRuleCliName(o.rule)) +
                                  " does not apply to nvfp4: its UE4M3 block scales follow "
                                  "formats.md section 8 (leave options.rule at ocp-floor)");
    }
    return InvalidArgumentError("scale rule " + std::string(ScaleRuleCliName(o.rule)) +
                                " is not defined for " + FormatName(format) +
                                " (formats.md section 7)");
  }
  if (!IsSpecialBlockDefinedFor(format, o.special)) {
    return InvalidArgumentError("special-block policy " + std::string(SpecialBlockName(o.special)) +
                                " is not defined for " + FormatName(format) +
                                (o.special == SpecialBlock::kInfPassThrough
                                     ? " (MXFP8 E5M2 only, formats.md section 6.3)"
                                     : " (nvfp4 takes kDefault only)"));
  }
  if (o.nvfp4_global_amax.has_value()) {
    const float a = *o.nvfp4_global_amax;
    if (format != MxFormat::kNvfp4) {
      return InvalidArgumentError("options.nvfp4_global_amax is set but the format is " +
                                  FormatName(format));
    }
    if (!(a >= 0.0f) || std::isinf(a)) {
      return InvalidArgumentError("options.nvfp4_global_amax " + std::to_string(a) +
                                  " is not a finite value >= 0");
    }
  }
  return OkStatus();
}

float Nvfp4EncodeScale(float global_amax) {
  if (!(global_amax == global_amax)) return 1.0f;  // NaN
  float s = (448.0f * 6.0f) / global_amax;
  s = s > FLT_MAX ? FLT_MAX : s;
  if (global_amax == 0.0f || s == 0.0f) return 1.0f;
  return s;
}

float Nvfp4DecodeScale(float encode_scale) { return 1.0f / encode_scale; }

// ---- Views ---------------------------------------------------------------------

Status CheckMxSpan(const MxTensorSpan& span) {
  return CheckMxLayout(span.shape, span.codes, span.codes_stride, span.scales, span.scales_stride);
}

Status CheckMxView(const MxTensorView& view) {
  TRNMX_RETURN_IF_ERROR(
      CheckMxLayout(view.shape, view.codes, view.codes_stride, view.scales, view.scales_stride));
  const float ts = view.tensor_scale;
  if (GetMxFormatInfo(view.shape.format).has_tensor_scale) {
    if (!std::isfinite(ts) || !(ts > 0.0f)) {
      return InvalidArgumentError("nvfp4 tensor_scale " + std::to_string(ts) +
                                  " is not a finite value > 0");
    }
  } else if (ts != 1.0f) {
    return InvalidArgumentError("tensor_scale is " + std::to_string(ts) + " but " +
                                FormatName(view.shape.format) + " has no tensor scale (must be 1)");
  }
  return OkStatus();
}

// ---- MxTensor ------------------------------------------------------------------

StatusOr<MxTensor> MxTensor::Create(const MxShape& shape) {
  TRNMX_RETURN_IF_ERROR(CheckMxShape(shape));
  MxTensor t;
  t.shape_ = shape;
  try {
    t.codes_.assign(shape.num_lines() * shape.line_code_bytes(), 0);
    t.scales_.assign(shape.num_lines() * shape.line_scale_bytes(), 0);
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError("cannot allocate an MX tensor of " + Str(shape.rows) + " x " +
                                  Str(shape.cols));
  } catch (const std::length_error&) {
    return ResourceExhaustedError("cannot allocate an MX tensor of " + Str(shape.rows) + " x " +
                                  Str(shape.cols));
  }
  return t;
}

MxTensorView MxTensor::view() const {
  return {shape_,
          codes_.data(),
          shape_.line_code_bytes(),
          scales_.data(),
          shape_.line_scale_bytes(),
          tensor_scale_};
}

MxTensorSpan MxTensor::span() {
  return {shape_,
          codes_.data(),
          shape_.line_code_bytes(),
          scales_.data(),
          shape_.line_scale_bytes(),
          tensor_scale_};
}

// ---- Quantize / dequantize -----------------------------------------------------

Status QuantizeMxInto(Fp32MatrixView src, MxTensorSpan& dst, const MxQuantizeOptions& options,
                      Executor* executor) {
  return QuantizeIntoImpl(src, dst, options, executor);
}
Status QuantizeMxInto(Bf16MatrixView src, MxTensorSpan& dst, const MxQuantizeOptions& options,
                      Executor* executor) {
  return QuantizeIntoImpl(src, dst, options, executor);
}
StatusOr<MxTensor> QuantizeMx(Fp32MatrixView src, MxFormat format, const MxQuantizeOptions& options,
                              Executor* executor) {
  return QuantizeImpl(src, format, options, executor);
}
StatusOr<MxTensor> QuantizeMx(Bf16MatrixView src, MxFormat format, const MxQuantizeOptions& options,
                              Executor* executor) {
  return QuantizeImpl(src, format, options, executor);
}

Status DequantizeMx(const MxTensorView& src, Fp32MatrixSpan dst, Executor* executor) {
  TRNMX_RETURN_IF_ERROR(CheckMxView(src));
  const MxShape& shape = src.shape;
  TRNMX_RETURN_IF_ERROR(CheckMatrixWithMx(dst, "destination", shape, src.codes, src.codes_stride,
                                          src.scales, src.scales_stride, "the MX tensor",
                                          "the MX"));
  const std::size_t num_lines = shape.num_lines();
  const std::size_t len = shape.line_length();
  if (num_lines == 0 || len == 0) return OkStatus();

  Executor& ex = internal::ExecutorOrCallingThread(executor);
  const MxFormatInfo& info = GetMxFormatInfo(shape.format);
  const std::size_t bs = info.block_size;
  const bool cols_axis = shape.axis == BlockAxis::kCols;
  const Tiling t = MakeTiling(num_lines, len, cols_axis);
  RunTasks(ex, t.tasks(), [&](std::size_t task) {
    const std::size_t l0 = (task / t.segments) * t.lines_per_group;
    const std::size_t l1 = std::min(num_lines, l0 + t.lines_per_group);
    const std::size_t s0 = (task % t.segments) * t.segment;
    const std::size_t s1 = std::min(len, s0 + t.segment);
    const auto in_codes = [&](std::size_t line, std::size_t pos) {
      return src.codes + line * src.codes_stride + (pos / bs) * info.block_bytes;
    };
    const auto in_scales = [&](std::size_t line, std::size_t pos) {
      return src.scales + line * src.scales_stride + pos / bs;
    };
    if (!cols_axis) {
      for (std::size_t r = l0; r < l1; ++r) {
        DequantizeLine(shape.format, in_codes(r, s0), in_scales(r, s0), s1 - s0, src.tensor_scale,
                       dst.data + r * dst.row_stride + s0);
      }
      return;
    }
    const std::size_t cs = std::min(kChunk, s1 - s0);  // Tile stride.
    std::vector<float> tile((l1 - l0) * cs);
    for (std::size_t r0 = s0; r0 < s1; r0 += cs) {
      const std::size_t n = std::min(cs, s1 - r0);
      for (std::size_t l = l0; l < l1; ++l) {
        DequantizeLine(shape.format, in_codes(l, r0), in_scales(l, r0), n, src.tensor_scale,
                       tile.data() + (l - l0) * cs);
      }
      for (std::size_t i = 0; i < n; ++i) {
        float* row = dst.data + (r0 + i) * dst.row_stride;
        for (std::size_t l = l0; l < l1; ++l) row[l] = tile[(l - l0) * cs + i];
      }
    }
  });
  return OkStatus();
}

// ---- GGML MXFP4 ----------------------------------------------------------------

std::size_t GgmlMxfp4Bytes(std::size_t rows, std::size_t cols) {
  std::size_t blocks = 0;
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(rows, cols / 32, &blocks) ||
      __builtin_mul_overflow(blocks, kGgmlMxfp4BlockBytes, &bytes)) {
    return 0;
  }
  return bytes;
}

namespace {

Status CheckGgmlShape(std::size_t rows, std::size_t cols) {
  if (cols % 32 != 0) {
    return InvalidArgumentError("GGML MXFP4 needs cols to be a multiple of 32; cols is " +
                                Str(cols));
  }
  if (GgmlMxfp4Bytes(rows, cols) == 0 && rows != 0 && cols != 0) {
    return OutOfRangeError("GGML MXFP4 tensor " + Str(rows) + " x " + Str(cols) + " is too large");
  }
  return OkStatus();
}

Status ScaleFfError(std::size_t row, std::size_t block, const char* direction) {
  return InvalidArgumentError(std::string(direction) + " refused: row " + Str(row) + " block " +
                              Str(block) +
                              " has scale FF (NaN in trnmx, the finite 2^128 in GGML; "
                              "formats.md section 9)");
}

}  // namespace

Status ExportGgmlMxfp4(const MxTensorView& src, std::span<std::uint8_t> out) {
  TRNMX_RETURN_IF_ERROR(CheckMxView(src));
  const MxShape& s = src.shape;
  if (s.format != MxFormat::kMxfp4) {
    return InvalidArgumentError("GGML MXFP4 export needs an mxfp4 tensor, not " +
                                FormatName(s.format));
  }
  if (s.axis != BlockAxis::kRows) {
    return InvalidArgumentError("GGML MXFP4 export needs blocks along rows (BlockAxis::kRows)");
  }
  TRNMX_RETURN_IF_ERROR(CheckGgmlShape(s.rows, s.cols));
  const std::size_t need = GgmlMxfp4Bytes(s.rows, s.cols);
  if (out.size() < need) {
    return InvalidArgumentError("GGML MXFP4 output has " + Str(out.size()) + " bytes; " +
                                Str(need) + " needed");
  }
  const std::size_t nb = s.cols / 32;
  for (std::size_t r = 0; r < s.rows; ++r) {
    for (std::size_t b = 0; b < nb; ++b) {
      if (src.scales[r * src.scales_stride + b] == kE8M0Nan) return ScaleFfError(r, b, "export");
    }
  }
  std::uint8_t e[32];
  for (std::size_t r = 0; r < s.rows; ++r) {
    for (std::size_t b = 0; b < nb; ++b) {
      std::uint8_t* o = out.data() + (r * nb + b) * kGgmlMxfp4BlockBytes;
      UnpackFp4(std::span<const std::uint8_t>(src.codes + r * src.codes_stride + b * 16, 16), e);
      o[0] = src.scales[r * src.scales_stride + b];
      for (std::size_t j = 0; j < 16; ++j) {
        o[1 + j] = static_cast<std::uint8_t>(e[j] | e[j + 16] << 4);
      }
    }
  }
  return OkStatus();
}

StatusOr<MxTensor> ImportGgmlMxfp4(std::span<const std::uint8_t> in, std::size_t rows,
                                   std::size_t cols) {
  TRNMX_RETURN_IF_ERROR(CheckGgmlShape(rows, cols));
  const std::size_t need = GgmlMxfp4Bytes(rows, cols);
  if (in.size() != need) {
    return InvalidArgumentError("GGML MXFP4 input has " + Str(in.size()) + " bytes; a " +
                                Str(rows) + " x " + Str(cols) + " tensor has " + Str(need));
  }
  const std::size_t nb = cols / 32;
  for (std::size_t k = 0; k < rows * nb; ++k) {
    if (in[k * kGgmlMxfp4BlockBytes] == kE8M0Nan) return ScaleFfError(k / nb, k % nb, "import");
  }
  TRNMX_ASSIGN_OR_RETURN(MxTensor tensor,
                         MxTensor::Create({MxFormat::kMxfp4, rows, cols, BlockAxis::kRows}));
  std::uint8_t e[32];
  for (std::size_t k = 0; k < rows * nb; ++k) {
    const std::uint8_t* blk = in.data() + k * kGgmlMxfp4BlockBytes;
    for (std::size_t j = 0; j < 16; ++j) {
      e[j] = blk[1 + j] & 0xFu;
      e[j + 16] = static_cast<std::uint8_t>(blk[1 + j] >> 4);
    }
    tensor.scales()[k] = blk[0];  // Minimal strides: block k is row k / nb, block k % nb.
    PackFp4(e, tensor.codes().subspan(k * 16, 16));
  }
  return tensor;
}

// ---- GGML-compatible MXFP4 codec (mx.h) -------------------------------------

namespace {

// K[n] = 2 * E2M1(n), with the -0 of nibble 8 made +0 (-0 + +0 is +0 under
// RNE): the values GGML multiplies by its halved scale 2^(e - 128).
constexpr std::array<float, 16> GgmlElementValues() {
  std::array<float, 16> k{};
  for (std::uint32_t n = 0; n < 16; ++n) k[n] = 2.0f * DecodeBits<Fp4E2M1Traits>(n) + 0.0f;
  return k;
}
constexpr std::array<float, 16> kGgmlK = GgmlElementValues();
// (bit_cast, not std::signbit: Clang does not evaluate signbit in a constant.)
static_assert(kGgmlK[7] == 12.0f && kGgmlK[15] == -12.0f &&
              std::bit_cast<std::uint32_t>(kGgmlK[8]) == 0u);

// 2^(e - 128) as FP32 for every byte e: subnormal for e = 0 and 1, and 2^127
// (finite) for e = FF.
float GgmlHalfScale(std::uint8_t e) {
  return std::bit_cast<float>(e >= 2 ? static_cast<std::uint32_t>(e - 1) << 23
                                     : std::uint32_t{0x00200000} << e);
}

// The scale byte of a block with amax bits `a` (NaN left out, so a <= Inf):
// 00 for 0 and +Inf (x86-64's float-to-integer conversion of +Inf gives
// 0x80000000, whose low byte is 0), else the kGgml value modulo 256.
std::uint8_t GgmlCompatScale(std::uint32_t a) {
  if (a == 0 || a >= 0x7F800000u) return 0;
  return static_cast<std::uint8_t>((detail::GgmlFloorLog2(a) - 2 + 127) & 0xFF);
}

// The lowest nibble with the smallest FP32 error |fl(K[n] * d) - x|; a NaN
// error never wins, so NaN elements get nibble 0. The library is built with
// -ffp-contract=off: the product rounds (and may overflow) before the
// subtraction, as in GGML's build.
std::uint8_t GgmlNibble(float x, float d) {
  std::uint8_t best = 0;
  float best_err = std::fabs(kGgmlK[0] * d - x);
  for (std::uint8_t n = 1; n < 16; ++n) {
    const float err = std::fabs(kGgmlK[n] * d - x);
    if (err < best_err) {
      best = n;
      best_err = err;
    }
  }
  return best;
}

// The one blob of GGML bytes as a single line, for the overlap checks.
LineRanges BlobRange(const void* p, std::size_t bytes) {
  return {reinterpret_cast<std::uintptr_t>(p), 0, bytes, bytes != 0 ? std::size_t{1} : 0};
}

}  // namespace

Status QuantizeGgmlMxfp4(Fp32MatrixView src, std::span<std::uint8_t> out) {
  TRNMX_RETURN_IF_ERROR(CheckGgmlShape(src.rows, src.cols));
  TRNMX_RETURN_IF_ERROR(CheckMatrix(src, "source"));
  const std::size_t need = GgmlMxfp4Bytes(src.rows, src.cols);
  if (out.size() < need) {
    return InvalidArgumentError("GGML MXFP4 output has " + Str(out.size()) + " bytes; " +
                                Str(need) + " needed");
  }
  if (Overlap(MatrixRanges(src), BlobRange(out.data(), need))) {
    return InvalidArgumentError("GGML MXFP4 output overlaps the source");
  }
  const std::size_t nb = src.cols / 32;
  for (std::size_t r = 0; r < src.rows; ++r) {
    for (std::size_t b = 0; b < nb; ++b) {
      const float* x = src.data + r * src.row_stride + b * 32;
      std::uint32_t amax = 0;  // Bits; NaN (above 7F800000) is left out.
      for (std::size_t i = 0; i < 32; ++i) {
        const std::uint32_t a = std::bit_cast<std::uint32_t>(x[i]) & 0x7FFFFFFFu;
        if (a <= 0x7F800000u) amax = std::max(amax, a);
      }
      const std::uint8_t e = GgmlCompatScale(amax);
      const float d = GgmlHalfScale(e);
      std::uint8_t* o = out.data() + (r * nb + b) * kGgmlMxfp4BlockBytes;
      o[0] = e;
      for (std::size_t j = 0; j < 16; ++j) {
        o[1 + j] = static_cast<std::uint8_t>(GgmlNibble(x[j], d) | GgmlNibble(x[j + 16], d) << 4);
      }
    }
  }
  return OkStatus();
}

Status DequantizeGgmlMxfp4(std::span<const std::uint8_t> in, Fp32MatrixSpan dst) {
  TRNMX_RETURN_IF_ERROR(CheckGgmlShape(dst.rows, dst.cols));
  const std::size_t need = GgmlMxfp4Bytes(dst.rows, dst.cols);
  if (in.size() != need) {
    return InvalidArgumentError("GGML MXFP4 input has " + Str(in.size()) + " bytes; a " +
                                Str(dst.rows) + " x " + Str(dst.cols) + " tensor has " + Str(need));
  }
  TRNMX_RETURN_IF_ERROR(CheckMatrix(dst, "destination"));
  if (Overlap(MatrixRanges(dst), BlobRange(in.data(), need))) {
    return InvalidArgumentError("destination overlaps the GGML MXFP4 input");
  }
  const std::size_t nb = dst.cols / 32;
  for (std::size_t r = 0; r < dst.rows; ++r) {
    for (std::size_t b = 0; b < nb; ++b) {
      const std::uint8_t* blk = in.data() + (r * nb + b) * kGgmlMxfp4BlockBytes;
      const float d = GgmlHalfScale(blk[0]);
      float* y = dst.data + r * dst.row_stride + b * 32;
      for (std::size_t j = 0; j < 16; ++j) {
        y[j] = kGgmlK[blk[1 + j] & 0xFu] * d;
        y[j + 16] = kGgmlK[blk[1 + j] >> 4] * d;
      }
    }
  }
  return OkStatus();
}

}  // namespace trnmx
