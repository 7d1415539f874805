// MoE dispatch and combine (moe.h): the stable expert-contiguous permutation,
// the row gather and the weighted combine in slot order.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "internal/calling_thread.h"
#include "internal/checks.h"
#include "internal/status_macros.h"
#include "kernels/moe/moe_internal.h"
#include "trnmx/moe.h"

namespace trnmx {
namespace {

using moe_internal::Str;
using moe_internal::Widen;

// Rows per executor task of the gather and the combine; every row is written
// by one task only, so the split never changes bits.
constexpr std::size_t kRowsPerTask = 32;

// Checks a dense rows x cols matrix and returns its byte range.
template <class T>
Status CheckMatrix(std::string_view what, const StridedMatrix<T>& m, std::size_t rows,
                   std::size_t cols, internal::ByteRange* range) {
  if (m.rows != rows || m.cols != cols) {
    return InvalidArgumentError(std::string(what) + " is " + internal::Dims(m.rows, m.cols) +
                                ", the plan needs " + internal::Dims(rows, cols));
  }
  if (rows > 1 && m.row_stride < cols) {
    return InvalidArgumentError(std::string(what) + " row_stride " + Str(m.row_stride) +
                                " is less than its " + Str(cols) + " columns");
  }
  return internal::CheckStridedArray(what, m.data, rows, cols, m.row_stride, 1, sizeof(T), range);
}

Status CheckPlan(const DispatchPlan& plan) {
  if (plan.offsets.size() != plan.num_experts + 1 || plan.counts.size() != plan.num_experts ||
      plan.row_token.size() != plan.rows || plan.slot_row.size() != plan.tokens * plan.slots ||
      plan.offsets.back() != plan.rows) {
    return InvalidArgumentError("MoE dispatch plan is inconsistent (not made by PlanDispatch?)");
  }
  return OkStatus();
}

template <class T>
Status PermuteImpl(const DispatchPlan& plan, const StridedMatrix<const T>& x,
                   const StridedMatrix<T>& out, Executor* executor) {
  TRNMX_RETURN_IF_ERROR(CheckPlan(plan));
  internal::ByteRange xr;
  internal::ByteRange outr;
  TRNMX_RETURN_IF_ERROR(CheckMatrix("MoE permute source x", x, plan.tokens, x.cols, &xr));
  TRNMX_RETURN_IF_ERROR(CheckMatrix("MoE permuted output", out, plan.rows, x.cols, &outr));
  if (xr.Overlaps(outr)) {
    return InvalidArgumentError("MoE permuted output overlaps the source x");
  }
  const std::size_t h = x.cols;
  if (h == 0) return OkStatus();
  internal::ExecutorOrCallingThread(executor).ParallelFor(
      internal::CeilDiv(plan.rows, kRowsPerTask), [&](std::size_t task) {
        const std::size_t end = std::min(plan.rows, (task + 1) * kRowsPerTask);
        for (std::size_t r = task * kRowsPerTask; r < end; ++r) {
          T* dst = out.data + r * out.row_stride;
          const std::size_t t = plan.row_token[r];
          if (t == DispatchPlan::kPaddingRow) {
            std::fill_n(dst, h, T{});
          } else {
            std::memcpy(dst, x.data + t * x.row_stride, h * sizeof(T));
          }
        }
      });
  return OkStatus();
}

template <class T>
Status CombineImpl(const DispatchPlan& plan, std::span<const float> weights,
                   const StridedMatrix<const T>& expert_out, const Fp32MatrixSpan& y,
                   Executor* executor) {
  TRNMX_RETURN_IF_ERROR(CheckPlan(plan));
  const std::size_t entries = plan.tokens * plan.slots;
  if (weights.size() < entries) {
    return ResourceExhaustedError("MoE combine: weights holds " + Str(weights.size()) +
                                  " entries, " + Str(entries) + " needed");
  }
  internal::ByteRange er;
  internal::ByteRange yr;
  TRNMX_RETURN_IF_ERROR(
      CheckMatrix("MoE combine expert_out", expert_out, plan.rows, expert_out.cols, &er));
  TRNMX_RETURN_IF_ERROR(CheckMatrix("MoE combine output y", y, plan.tokens, expert_out.cols, &yr));
  const auto wbase = reinterpret_cast<std::uintptr_t>(weights.data());
  const internal::ByteRange wr{wbase, wbase + entries * sizeof(float)};
  if (yr.Overlaps(er)) return InvalidArgumentError("MoE combine output y overlaps expert_out");
  if (yr.Overlaps(wr)) return InvalidArgumentError("MoE combine output y overlaps the weights");
  const std::size_t h = expert_out.cols;
  if (h == 0) return OkStatus();
  internal::ExecutorOrCallingThread(executor).ParallelFor(
      internal::CeilDiv(plan.tokens, kRowsPerTask), [&](std::size_t task) {
        const std::size_t end = std::min(plan.tokens, (task + 1) * kRowsPerTask);
        for (std::size_t t = task * kRowsPerTask; t < end; ++t) {
          float* dst = y.data + t * y.row_stride;
          std::fill_n(dst, h, 0.0f);
          for (std::size_t j = 0; j < plan.slots; ++j) {
            const std::size_t r = plan.slot_row[t * plan.slots + j];
            if (r == DispatchPlan::kPaddingRow) continue;
            const float w = weights[t * plan.slots + j];
            const T* src = expert_out.data + r * expert_out.row_stride;
            for (std::size_t c = 0; c < h; ++c) dst[c] += w * Widen(src[c]);
          }
        }
      });
  return OkStatus();
}

}  // namespace

StatusOr<DispatchPlan> PlanDispatch(std::span<const std::int32_t> expert_ids, std::size_t tokens,
                                    std::size_t slots, std::size_t num_experts,
                                    std::size_t segment_rows) {
  if (num_experts == 0) return InvalidArgumentError("MoE dispatch: num_experts is 0");
  std::size_t entries = 0;
  if (__builtin_mul_overflow(tokens, slots, &entries)) {
    return OutOfRangeError("MoE dispatch: " + Str(tokens) + " tokens x " + Str(slots) +
                           " slots overflows size_t");
  }
  if (expert_ids.size() < entries) {
    return ResourceExhaustedError("MoE dispatch: expert_ids holds " + Str(expert_ids.size()) +
                                  " entries, " + Str(entries) + " needed (" + Str(tokens) +
                                  " tokens x " + Str(slots) + " slots)");
  }
  DispatchPlan plan;
  plan.tokens = tokens;
  plan.slots = slots;
  plan.num_experts = num_experts;
  plan.counts.assign(num_experts, 0);
  for (std::size_t i = 0; i < entries; ++i) {
    const std::int32_t id = expert_ids[i];
    if (id == kDroppedExpert) continue;
    if (id < 0 || static_cast<std::size_t>(id) >= num_experts) {
      return OutOfRangeError("MoE dispatch: expert id " + std::to_string(id) + " of token " +
                             Str(i / slots) + ", slot " + Str(i % slots) + " is outside [0, " +
                             Str(num_experts) + ")");
    }
    ++plan.counts[static_cast<std::size_t>(id)];
  }
  plan.offsets.assign(num_experts + 1, 0);
  for (std::size_t e = 0; e < num_experts; ++e) {
    std::size_t seg = plan.counts[e];
    if (segment_rows > 0) {
      if (seg > segment_rows) {
        return FailedPreconditionError("MoE dispatch: expert " + Str(e) + " has " + Str(seg) +
                                       " assignments, more than the " + Str(segment_rows) +
                                       " rows of its padded segment");
      }
      seg = segment_rows;
    }
    if (__builtin_add_overflow(plan.offsets[e], seg, &plan.offsets[e + 1])) {
      return OutOfRangeError("MoE dispatch: the permuted row count overflows size_t");
    }
  }
  plan.rows = plan.offsets[num_experts];
  plan.row_token.assign(plan.rows, DispatchPlan::kPaddingRow);
  plan.slot_row.assign(entries, DispatchPlan::kPaddingRow);
  // Stable: (token, slot) pairs visited in increasing order fill each segment.
  std::vector<std::size_t> next(plan.offsets.begin(), plan.offsets.end() - 1);
  for (std::size_t i = 0; i < entries; ++i) {
    const std::int32_t id = expert_ids[i];
    if (id == kDroppedExpert) continue;
    const std::size_t r = next[static_cast<std::size_t>(id)]++;
    plan.row_token[r] = i / slots;
    plan.slot_row[i] = r;
  }
  return plan;
}

Status PermuteTokens(const DispatchPlan& plan, const Fp32MatrixView& x,
                     const Fp32MatrixSpan& permuted, Executor* executor) {
  return PermuteImpl(plan, x, permuted, executor);
}

Status PermuteTokens(const DispatchPlan& plan, const Bf16MatrixView& x,
                     const StridedMatrix<Bf16>& permuted, Executor* executor) {
  return PermuteImpl(plan, x, permuted, executor);
}

Status CombineTokens(const DispatchPlan& plan, std::span<const float> weights,
                     const Fp32MatrixView& expert_out, const Fp32MatrixSpan& y,
                     Executor* executor) {
  return CombineImpl(plan, weights, expert_out, y, executor);
}

Status CombineTokens(const DispatchPlan& plan, std::span<const float> weights,
                     const Bf16MatrixView& expert_out, const Fp32MatrixSpan& y,
                     Executor* executor) {
  return CombineImpl(plan, weights, expert_out, y, executor);
}

}  // namespace trnmx
