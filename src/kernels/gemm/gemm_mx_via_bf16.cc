// MxGemmMode::kViaBf16 (gemm.h): the MX x MX operands' values as BF16
// copies, decoded line by line (a row of A, a column of B: each a K-long MX
// line) through the MX line decoder and checked for exactness on the way:
// A row-major, B straight into the BF16 pair panels of the dense kernels
// (packing a column-major copy would read it with a stride of K).
#include <hwy/aligned_allocator.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "formats/mx_line.h"
#include "kernels/gemm/gemm_dense.h"
#include "kernels/gemm/gemm_internal.h"

namespace trnmx::internal {
namespace {

// Decodes line l of `view` (k values) into `line` and returns whether every
// value is its own BF16: the branch-free form of MxValueIsBf16, so that the
// loop vectorises.
bool DecodeLine(const MxTensorView& view, std::size_t l, std::size_t k, float* line) {
  const std::uint8_t* codes = view.codes + l * view.codes_stride;
  const std::uint8_t* scales = view.scales + l * view.scales_stride;
  if (!DequantizeMxLineSimd(view.shape.format, codes, scales, k, 1.0f, line)) {
    DequantizeMxLineScalar(view.shape.format, codes, scales, k, 1.0f, line);
  }
  std::uint32_t low = 0;    // OR of the low 16 bits.
  std::uint32_t range = 0;  // Non-zero: a subnormal, Inf or NaN.
  for (std::size_t i = 0; i < k; ++i) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(line[i]);
    const std::uint32_t mag = bits & 0x7FFFFFFFu;
    low |= bits & 0xFFFFu;
    range |= static_cast<std::uint32_t>(mag - 0x00800000u >= 0x7F000000u) &
             static_cast<std::uint32_t>(mag != 0);
  }
  return (low | range) == 0;
}

std::uint16_t High(float x) { return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(x) >> 16); }

// Runs body(task) for `tasks` tasks; false once any returned false.
template <class F>
bool RunAll(Executor& ex, std::size_t tasks, F&& body) {
  std::atomic<bool> exact{true};
  const auto run = [&](std::size_t t) {
    if (exact.load(std::memory_order_relaxed) && !body(t)) {
      exact.store(false, std::memory_order_relaxed);
    }
  };
  if (tasks == 1) {
    run(0);
  } else if (tasks > 1) {
    ex.ParallelFor(tasks, run);
  }
  return exact.load();
}

}  // namespace

Status FoldMxPairToBf16(const GemmOperand& a, const GemmOperand& b, Executor& executor,
                        MxAsBf16* out) {
  const std::size_t m = a.rows, k = a.cols, n = b.cols;
  const std::size_t panels = (n + kGemmPanelCols - 1) / kGemmPanelCols;
  const std::size_t panel_stride = PanelStrideBf16(k);
  bool allocated = true;
  try {
    out->a_values.resize(m * k);
  } catch (const std::bad_alloc&) {
    allocated = false;
  }
  out->b_panels = hwy::AllocateAligned<std::uint16_t>(std::max<std::size_t>(1, panels * panel_stride));
  if (!allocated || out->b_panels == nullptr) {
    return ResourceExhaustedError("MxGemmMode::kViaBf16: cannot allocate the BF16 copies of A (" +
                                  std::to_string(m) + " x " + std::to_string(k) + ") and B (" +
                                  std::to_string(k) + " x " + std::to_string(n) + ")");
  }
  // A: rows of 16 lines per task, row-major.
  constexpr std::size_t kRowsPerTask = 16;
  const bool a_exact = RunAll(executor, (m + kRowsPerTask - 1) / kRowsPerTask, [&](std::size_t t) {
    std::vector<float> line(k);
    for (std::size_t i = t * kRowsPerTask; i < std::min(m, (t + 1) * kRowsPerTask); ++i) {
      if (!DecodeLine(a.mx, i, k, line.data())) return false;
      Bf16* row = out->a_values.data() + i * k;
      for (std::size_t x = 0; x < k; ++x) row[x].bits = High(line[x]);
    }
    return true;
  });
  // B: one 32-column panel of K pairs per task (gemm_dense.h's layout, as
  // PackedWeights holds BF16). A pair (its even member in the low half) is
  // one u32, so the panel is the transpose of the columns' pair arrays:
  // each column's pairs first (contiguous), then 8 x 32 blocks transposed.
  out->exact =
      a_exact && RunAll(executor, panels, [&](std::size_t jp) {
        const std::size_t pairs = (k + 1) / 2;
        const std::size_t cols = std::min(kGemmPanelCols, n - jp * kGemmPanelCols);
        std::vector<float> line(k + 1);
        // [column][pair], written below; the columns past n stay +0.
        auto col_pairs = std::make_unique_for_overwrite<std::uint32_t[]>(kGemmPanelCols * pairs);
        std::fill(col_pairs.get() + cols * pairs, col_pairs.get() + kGemmPanelCols * pairs, 0u);
        for (std::size_t c = 0; c < cols; ++c) {
          if (!DecodeLine(b.mx, jp * kGemmPanelCols + c, k, line.data())) return false;
          line[k] = 0.0f;  // An odd K's last pair: odd member +0.
          std::uint32_t* dst = col_pairs.get() + c * pairs;
          for (std::size_t t = 0; t < pairs; ++t) {
            const std::uint32_t even = std::bit_cast<std::uint32_t>(line[2 * t]);
            const std::uint32_t odd = std::bit_cast<std::uint32_t>(line[2 * t + 1]);
            dst[t] = (even >> 16) | (odd & 0xFFFF0000u);
          }
        }
        std::uint16_t* panel = out->b_panels.get() + jp * panel_stride;  // [pair][column][2]
        constexpr std::size_t kBlock = 8;
        for (std::size_t t0 = 0; t0 < pairs; t0 += kBlock) {
          const std::size_t t1 = std::min(pairs, t0 + kBlock);
          for (std::size_t c = 0; c < kGemmPanelCols; ++c) {
            const std::uint32_t* src = col_pairs.get() + c * pairs;
            for (std::size_t t = t0; t < t1; ++t) {
              std::memcpy(panel + 2 * (t * kGemmPanelCols + c), src + t, sizeof(std::uint32_t));
            }
          }
        }
        std::memset(panel + pairs * 2 * kGemmPanelCols, 0,
                    (panel_stride - pairs * 2 * kGemmPanelCols) * sizeof(std::uint16_t));
        return true;
      });
  out->a = GemmOperand::Bf16(out->a_values.data(), m, k, k);
  return OkStatus();
}

}  // namespace trnmx::internal
