// Grouped expert GEMM (moe.h): every expert's Gemm over its rows of the
// permuted tokens, run as (expert, row block, column block) work items that
// each call trnmx::Gemm on the calling thread, then the SwiGLU activations.
// K is never split and every output belongs to one item, so the split never
// changes bits (gemm.h: each output's chain depends only on its row and
// column).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "internal/calling_thread.h"
#include "internal/checks.h"
#include "internal/fixed_math.h"
#include "internal/status_macros.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/moe/moe_internal.h"
#include "trnmx/formats/codec.h"
#include "trnmx/moe.h"

namespace trnmx {
namespace {

using moe_internal::Str;

// Work item extents. Rows: large, so that an expert's weights are decoded
// (dense x MX) once per 512 rows. Columns: whole unless the row blocks give
// fewer than kItemsPerThread items per thread, then split into blocks of a
// multiple of 32 columns (Gemm's panels), at least kMinColBlock: every
// column block re-packs (widens or decodes) its rows of x, so splitting
// only costs.
constexpr std::size_t kRowBlock = 512;
constexpr std::size_t kMinColBlock = 256;
constexpr std::size_t kItemsPerThread = 4;

std::size_t ColumnBlock(std::size_t out_cols, std::size_t row_blocks, std::size_t threads) {
  const std::size_t want = threads <= 1 ? 1 : kItemsPerThread * threads;
  const std::size_t max_splits = internal::CeilDiv(out_cols, kMinColBlock);
  const std::size_t splits =
      std::clamp<std::size_t>(internal::CeilDiv(want, std::max<std::size_t>(row_blocks, 1)), 1,
                              std::max<std::size_t>(max_splits, 1));
  return std::max<std::size_t>(internal::RoundUp(internal::CeilDiv(out_cols, splits), 32), 1);
}

std::size_t ElementBytes(OperandType t) {
  return t == OperandType::kBf16 ? sizeof(Bf16) : t == OperandType::kFp8 ? 1 : sizeof(float);
}

// Rows [r0, r0 + rows) of an activation operand (dense, or MX blocked along
// rows: one line per row).
GemmOperand RowSlice(const GemmOperand& a, std::size_t r0, std::size_t rows) {
  GemmOperand s = a;
  s.rows = rows;
  if (a.type == OperandType::kMx) {
    s.mx.shape.rows = rows;
    s.mx.codes = a.mx.codes + r0 * a.mx.codes_stride;
    s.mx.scales = a.mx.scales + r0 * a.mx.scales_stride;
  } else {
    s.data = static_cast<const char*>(a.data) + r0 * a.row_stride * ElementBytes(a.type);
  }
  return s;
}

// Columns j0, j0 + step, ... (cols of them) of a weight operand (dense, or
// MX blocked along columns: one line per column).
GemmOperand ColSlice(const GemmOperand& b, std::size_t j0, std::size_t cols, std::size_t step) {
  GemmOperand s = b;
  s.cols = cols;
  if (b.type == OperandType::kMx) {
    s.mx.shape.cols = cols;
    s.mx.codes = b.mx.codes + j0 * b.mx.codes_stride;
    s.mx.scales = b.mx.scales + j0 * b.mx.scales_stride;
    s.mx.codes_stride *= step;
    s.mx.scales_stride *= step;
  } else {
    s.data = static_cast<const char*>(b.data) + j0 * b.col_stride * ElementBytes(b.type);
    s.col_stride *= step;
  }
  return s;
}

GemmOutput OutSlice(const GemmOutput& c, std::size_t r0, std::size_t rows, std::size_t j0,
                    std::size_t cols) {
  GemmOutput s = c;
  s.rows = rows;
  s.cols = cols;
  const std::size_t bytes = c.type == OutputType::kBf16 ? sizeof(Bf16) : sizeof(float);
  s.data = static_cast<char*>(c.data) + (r0 * c.row_stride + j0 * c.col_stride) * bytes;
  return s;
}

bool SameKind(const GemmOperand& a, const GemmOperand& b) {
  if (a.type != b.type) return false;
  if (a.type == OperandType::kFp8) return a.fp8_format == b.fp8_format;
  return a.type != OperandType::kMx || a.mx.shape.format == b.mx.shape.format;
}

// The activation of one output (moe.h's formulas).
float Activate(const GroupedGemmParams& p, float g, float l) {
  if (p.activation == ExpertActivation::kSwiGlu) {
    return (g * internal::FixedSigmoid(g)) * l;
  }
  const float lim = p.swiglu_limit;
  const float gc = std::min(g, lim);  // NaN g stays NaN (first argument).
  const float lc = std::max(std::min(l, lim), -lim);
  const float glu = gc * internal::FixedSigmoid(p.swiglu_alpha * gc);
  return glu * (lc + 1.0f);
}

Status Validate(const GemmOperand& x, std::span<const std::size_t> offsets,
                std::span<const GemmOperand> weights, const GemmOutput& y,
                const GroupedGemmParams& p) {
  const std::size_t e_count = weights.size();
  if (e_count == 0) return InvalidArgumentError("GroupedExpertGemm: no experts (weights is empty)");
  if (offsets.size() != e_count + 1) {
    return InvalidArgumentError("GroupedExpertGemm: offsets has " + Str(offsets.size()) +
                                " entries, " + Str(e_count) + " experts need " + Str(e_count + 1));
  }
  if (offsets[0] != 0) {
    return InvalidArgumentError("GroupedExpertGemm: offsets[0] is " + Str(offsets[0]) + ", not 0");
  }
  for (std::size_t e = 0; e < e_count; ++e) {
    if (offsets[e + 1] < offsets[e]) {
      return InvalidArgumentError("GroupedExpertGemm: offsets decrease at expert " + Str(e) + " (" +
                                  Str(offsets[e]) + " > " + Str(offsets[e + 1]) + ")");
    }
  }
  if (offsets[e_count] != x.rows || offsets[e_count] != y.rows) {
    return InvalidArgumentError("GroupedExpertGemm: offsets end at " + Str(offsets[e_count]) +
                                ", x has " + Str(x.rows) + " rows and y " + Str(y.rows));
  }
  if (p.activation > ExpertActivation::kGptOssSwiGlu) {
    return InvalidArgumentError("GroupedExpertGemm: activation " +
                                Str(static_cast<std::size_t>(p.activation)) +
                                " is not an ExpertActivation");
  }
  if (p.glu_layout > GluLayout::kConcatenated) {
    return InvalidArgumentError("GroupedExpertGemm: glu_layout " +
                                Str(static_cast<std::size_t>(p.glu_layout)) +
                                " is not a GluLayout");
  }
  if (!std::isfinite(p.swiglu_alpha) || !std::isfinite(p.swiglu_limit)) {
    return InvalidArgumentError("GroupedExpertGemm: swiglu_alpha and swiglu_limit must be finite");
  }
  if (x.type == OperandType::kMx && x.mx.shape.axis != BlockAxis::kRows) {
    return InvalidArgumentError("GroupedExpertGemm: MX x must be blocked along rows (K)");
  }
  const GemmOperand& w0 = weights[0];
  const std::size_t k = w0.rows;
  const std::size_t n = w0.cols;
  for (std::size_t e = 1; e < e_count; ++e) {
    if (weights[e].rows != k || weights[e].cols != n) {
      return InvalidArgumentError("GroupedExpertGemm: weights[" + Str(e) + "] is " +
                                  internal::Dims(weights[e].rows, weights[e].cols) +
                                  ", weights[0] is " + internal::Dims(k, n));
    }
    if (!SameKind(weights[e], w0)) {
      return InvalidArgumentError("GroupedExpertGemm: weights[" + Str(e) +
                                  "] has another type or MX format than weights[0]");
    }
  }
  if (x.cols != k) {
    return InvalidArgumentError("GroupedExpertGemm: x has " + Str(x.cols) +
                                " columns, the weights have K = " + Str(k));
  }
  const bool gated = p.activation != ExpertActivation::kNone;
  if (gated && n % 2 != 0) {
    return InvalidArgumentError(
        "GroupedExpertGemm: a gated activation needs an even N, "
        "the weights have N = " +
        Str(n));
  }
  const std::size_t out_cols = gated ? n / 2 : n;
  if (y.cols != out_cols) {
    return InvalidArgumentError("GroupedExpertGemm: y has " + Str(y.cols) + " columns, needs " +
                                Str(out_cols) + (gated ? " (N / 2, gated)" : " (N)"));
  }
  if (!p.bias.empty() && p.bias.size() != e_count * n) {
    return InvalidArgumentError("GroupedExpertGemm: bias has " + Str(p.bias.size()) +
                                " values, needs E * N = " + Str(e_count * n));
  }
  // Each expert as Gemm sees it (gated: each half against y, which also
  // checks y against x and the weights). A gated call's y is never Gemm's C,
  // so its overlap with the bias is checked here.
  if (gated && !p.bias.empty() && y.rows > 0 && y.cols > 0) {
    internal::ByteRange yr;
    TRNMX_RETURN_IF_ERROR(internal::CheckStridedArray(
        "GroupedExpertGemm: y", y.data, y.rows, y.cols, y.row_stride, y.col_stride,
        y.type == OutputType::kBf16 ? sizeof(Bf16) : sizeof(float), &yr));
    const auto lo = reinterpret_cast<std::uintptr_t>(p.bias.data());
    if (yr.Overlaps({lo, lo + p.bias.size_bytes()})) {
      return InvalidArgumentError("GroupedExpertGemm: y overlaps the bias");
    }
  }
  for (std::size_t e = 0; e < e_count; ++e) {
    const std::size_t rows = offsets[e + 1] - offsets[e];
    const GemmOperand xe = RowSlice(x, offsets[e], rows);
    const GemmOutput ye = OutSlice(y, offsets[e], rows, 0, out_cols);
    const std::string where = "GroupedExpertGemm: expert " + Str(e);
    if (!gated) {
      GemmParams gp;
      if (!p.bias.empty()) gp.bias = p.bias.data() + e * n;
      TRNMX_RETURN_IF_ERROR(
          internal::Prefixed(where, internal::ValidateGemm(xe, weights[e], ye, gp, true)));
      continue;
    }
    // The whole weight too (the items read contiguous column blocks of it);
    // zero rows, so no output is involved.
    TRNMX_RETURN_IF_ERROR(internal::Prefixed(
        where, internal::ValidateGemm(RowSlice(x, 0, 0), weights[e],
                                      GemmOutput::Fp32(nullptr, 0, n, n), {}, true)));
    const bool inter = p.glu_layout == GluLayout::kInterleaved;
    const GemmOperand gate = ColSlice(weights[e], 0, out_cols, inter ? 2 : 1);
    const GemmOperand lin = ColSlice(weights[e], inter ? 1 : out_cols, out_cols, inter ? 2 : 1);
    TRNMX_RETURN_IF_ERROR(
        internal::Prefixed(where + " (gate)", internal::ValidateGemm(xe, gate, ye, {}, true)));
    TRNMX_RETURN_IF_ERROR(
        internal::Prefixed(where + " (linear)", internal::ValidateGemm(xe, lin, ye, {}, true)));
  }
  return OkStatus();
}

struct WorkItem {
  std::size_t expert;
  std::size_t r0;
  std::size_t rows;
  std::size_t j0;  // Output columns [j0, j0 + cols).
  std::size_t cols;
};

// One item of a gated call: h (FP32, rows x 2 cols: gate then linear halves
// per row) from Gemm, then the activation into y.
Status RunGated(const GemmOperand& xe, const GemmOperand& w, const float* bias, const GemmOutput& y,
                const WorkItem& it, std::size_t half, const GroupedGemmParams& p) {
  const std::size_t cols = it.cols;
  std::vector<float> h(it.rows * 2 * cols);
  GemmParams gp;
  // h[r][c] with c < cols the gate and c >= cols the linear value of output
  // column it.j0 + c; interleaved weights give them as pairs instead.
  if (p.glu_layout == GluLayout::kInterleaved) {
    if (bias != nullptr) gp.bias = bias + 2 * it.j0;
    TRNMX_RETURN_IF_ERROR(Gemm(xe, ColSlice(w, 2 * it.j0, 2 * cols, 1),
                               GemmOutput::Fp32(h.data(), it.rows, 2 * cols, 2 * cols), gp));
  } else {
    if (bias != nullptr) gp.bias = bias + it.j0;
    TRNMX_RETURN_IF_ERROR(Gemm(xe, ColSlice(w, it.j0, cols, 1),
                               GemmOutput::Fp32(h.data(), it.rows, cols, 2 * cols), gp));
    if (bias != nullptr) gp.bias = bias + half + it.j0;
    TRNMX_RETURN_IF_ERROR(Gemm(xe, ColSlice(w, half + it.j0, cols, 1),
                               GemmOutput::Fp32(h.data() + cols, it.rows, cols, 2 * cols), gp));
  }
  const bool inter = p.glu_layout == GluLayout::kInterleaved;
  for (std::size_t r = 0; r < it.rows; ++r) {
    const float* hr = h.data() + r * 2 * cols;
    const std::size_t row = it.r0 + r;
    for (std::size_t c = 0; c < cols; ++c) {
      const float g = inter ? hr[2 * c] : hr[c];
      const float l = inter ? hr[2 * c + 1] : hr[cols + c];
      const float v = Activate(p, g, l);
      const std::size_t idx = row * y.row_stride + (it.j0 + c) * y.col_stride;
      if (y.type == OutputType::kBf16) {
        static_cast<Bf16*>(y.data)[idx] = Fp32ToBf16Rne(v);
      } else {
        static_cast<float*>(y.data)[idx] = v;
      }
    }
  }
  return OkStatus();
}

}  // namespace

Status GroupedExpertGemm(const GemmOperand& x, std::span<const std::size_t> offsets,
                         std::span<const GemmOperand> weights, const GemmOutput& y,
                         const GroupedGemmParams& params, Executor* executor) {
  TRNMX_RETURN_IF_ERROR(Validate(x, offsets, weights, y, params));
  const bool gated = params.activation != ExpertActivation::kNone;
  const std::size_t n = weights[0].cols;
  const std::size_t out_cols = y.cols;
  Executor& ex = internal::ExecutorOrCallingThread(executor);
  std::size_t row_blocks = 0;
  for (std::size_t e = 0; e < weights.size(); ++e) {
    row_blocks += internal::CeilDiv(offsets[e + 1] - offsets[e], kRowBlock);
  }
  const std::size_t col_block = ColumnBlock(out_cols, row_blocks, ex.NumThreads());
  std::vector<WorkItem> items;
  for (std::size_t e = 0; e < weights.size(); ++e) {
    for (std::size_t r = offsets[e]; r < offsets[e + 1]; r += kRowBlock) {
      const std::size_t rows = std::min(kRowBlock, offsets[e + 1] - r);
      for (std::size_t j = 0; j < out_cols; j += col_block) {
        items.push_back({e, r, rows, j, std::min(col_block, out_cols - j)});
      }
    }
  }
  if (items.empty()) return OkStatus();
  std::vector<Status> status(items.size());
  ex.ParallelFor(items.size(), [&](std::size_t i) {
    const WorkItem& it = items[i];
    const GemmOperand xe = RowSlice(x, it.r0, it.rows);
    const float* bias = params.bias.empty() ? nullptr : params.bias.data() + it.expert * n;
    if (gated) {
      status[i] = RunGated(xe, weights[it.expert], bias, y, it, n / 2, params);
      return;
    }
    GemmParams gp;
    if (bias != nullptr) gp.bias = bias + it.j0;
    status[i] = Gemm(xe, ColSlice(weights[it.expert], it.j0, it.cols, 1),
                     OutSlice(y, it.r0, it.rows, it.j0, it.cols), gp);
  });
  // Validation covered every Gemm call above; a failure here is a bug.
  for (const Status& s : status) TRNMX_RETURN_IF_ERROR(s);
  return OkStatus();
}

}  // namespace trnmx
