// MxGemmMode::kViaBf16 (gemm.h): the MX x MX operands' values as BF16
// copies, each K-long MX line (a row of A, a column of B) decoded straight
// to BF16 and checked for exactness by the MX line decoder (mx_line.h):
// A row-major, B's columns into the BF16 pair panels of the dense kernels
// through a per-task column buffer (packing a column-major copy would read
// it with a stride of K).
#include <hwy/aligned_allocator.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "formats/mx_line.h"
#include "kernels/gemm/gemm_dense.h"
#include "kernels/gemm/gemm_internal.h"

namespace trnmx::internal {
namespace {

// Line l of `view` (k values) as BF16 into dst; false unless every value is
// exactly its BF16.
bool DecodeLine(const MxTensorView& view, std::size_t l, std::size_t k, Bf16* dst) {
  return DequantizeMxLineToBf16(view.shape.format, view.codes + l * view.codes_stride,
                                view.scales + l * view.scales_stride, k, dst);
}

// `count` T for a large buffer written once per call. On Linux it asks for
// transparent huge pages (honoured when the system's policy is "madvise" or
// "always"): one page fault per 2 MiB instead of per 4 KiB.
template <class T>
hwy::AlignedFreeUniquePtr<T[]> AllocateLarge(std::size_t count) {
  auto p = hwy::AllocateAligned<T>(count);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kPage = 4096;
  const auto begin = (reinterpret_cast<std::uintptr_t>(p.get()) + kPage - 1) & ~(kPage - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(p.get() + count)) & ~(kPage - 1);
  // Advice only: failure (an old kernel, THP off) leaves ordinary pages.
  if (p != nullptr && end > begin)
    madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#endif
  return p;
}

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
  const std::size_t pairs = (k + 1) / 2;
  try {
    out->a_values = std::make_unique_for_overwrite<Bf16[]>(m * k);
  } catch (const std::bad_alloc&) {
    out->a_values.reset();
  }
  out->b_panels = AllocateLarge<std::uint16_t>(std::max<std::size_t>(1, panels * panel_stride));
  if (out->a_values == nullptr || out->b_panels == nullptr) {
    return ResourceExhaustedError("MxGemmMode::kViaBf16: cannot allocate the BF16 copies of A (" +
                                  std::to_string(m) + " x " + std::to_string(k) + ") and B (" +
                                  std::to_string(k) + " x " + std::to_string(n) + ")");
  }
  // A: rows of 16 lines per task, row-major.
  constexpr std::size_t kRowsPerTask = 16;
  const bool a_exact = RunAll(executor, (m + kRowsPerTask - 1) / kRowsPerTask, [&](std::size_t t) {
    for (std::size_t i = t * kRowsPerTask; i < std::min(m, (t + 1) * kRowsPerTask); ++i) {
      if (!DecodeLine(a.mx, i, k, out->a_values.get() + i * k)) return false;
    }
    return true;
  });
  // B: 32-column panels of K pairs (gemm_dense.h's layout, as PackedWeights
  // holds BF16), a few per task so that each task's column buffer is reused.
  // A pair (its even member in the low half) is one u32, so a panel is the
  // transpose of its columns' BF16 lines read as pair arrays: the columns
  // are decoded contiguously, then 8 x 32 blocks of pairs transposed.
  const std::size_t tasks = std::min(panels, 4 * executor.NumThreads());
  out->exact =
      a_exact && RunAll(executor, tasks, [&](std::size_t task) {
        // [column][2 * pair]; an odd K's last pair has a +0 odd member,
        // and the columns past n stay +0.
        auto col_lines = std::make_unique<Bf16[]>(kGemmPanelCols * 2 * pairs);
        for (std::size_t jp = task * panels / tasks; jp < (task + 1) * panels / tasks; ++jp) {
          const std::size_t cols = std::min(kGemmPanelCols, n - jp * kGemmPanelCols);
          for (std::size_t c = 0; c < cols; ++c) {
            if (!DecodeLine(b.mx, jp * kGemmPanelCols + c, k, col_lines.get() + c * 2 * pairs)) {
              return false;
            }
          }
          if (cols < kGemmPanelCols) {
            std::fill(col_lines.get() + cols * 2 * pairs,
                      col_lines.get() + kGemmPanelCols * 2 * pairs, Bf16{});
          }
          std::uint16_t* panel = out->b_panels.get() + jp * panel_stride;  // [pair][column][2]
          constexpr std::size_t kBlock = 8;
          for (std::size_t t0 = 0; t0 < pairs; t0 += kBlock) {
            const std::size_t t1 = std::min(pairs, t0 + kBlock);
            for (std::size_t c = 0; c < kGemmPanelCols; ++c) {
              const Bf16* src = col_lines.get() + c * 2 * pairs;
              for (std::size_t t = t0; t < t1; ++t) {
                std::memcpy(panel + 2 * (t * kGemmPanelCols + c), src + 2 * t, 2 * sizeof(Bf16));
              }
            }
          }
          std::memset(panel + pairs * 2 * kGemmPanelCols, 0,
                      (panel_stride - pairs * 2 * kGemmPanelCols) * sizeof(std::uint16_t));
        }
        return true;
      });
  out->a = GemmOperand::Bf16(out->a_values.get(), m, k, k);
  return OkStatus();
}

}  // namespace trnmx::internal
