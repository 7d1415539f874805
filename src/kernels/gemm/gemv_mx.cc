// GEMVs with MXFP4 weights (gemv_mx.h, gemm_mx_internal.h): MX activations
// (M <= 4 rows, int8-class formats) and dense FP32/BF16 activations (one row),
// each streaming the weights once through the target's GEMV kernel (AVX-512
// VNNI or AVX2, gemm_mx_kernels.h).
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "internal/checks.h"
#include "kernels/gemm/gemm_dense.h"
#include "kernels/gemm/gemm_mx_internal.h"
#include "kernels/gemm/gemv_mx.h"

namespace trnmx::internal {
namespace {

// M up to this many rows with MXFP4 weights stream B once per row.
constexpr std::size_t kGemvMaxRows = 4;

// The kernel for `planes` activation planes (FormatTable::i8_planes; nullptr:
// none on this target).
MxGemvFn GemvKernel(std::size_t planes, const MxTileKernels& kernels) {
  if (planes == 1) return kernels.gemv_fp4;
  return planes == 0 ? nullptr : kernels.gemv_fp4_planes;
}

}  // namespace

// Rows of A one at a time against MXFP4 weights, streaming B once per row.
Status RunGemvFp4(const LineReader& ra, const LineReader& rb, std::size_t m, std::size_t n,
                  std::size_t k, const GemmOutput& c, const GemmParams& params,
                  Executor& pool) {
  const std::size_t planes = ra.table->i8_planes;
  const MxGemvFn kernel = GemvKernel(planes, CurrentMxTileKernels());
  const std::size_t blocks = CeilDiv(k, kMxK);
  const std::size_t padded = RoundUp(blocks, 4) * (kMxK / 2);
  const std::size_t plane_stride = padded + 64;
  std::vector<std::int8_t> a_even(planes * plane_stride), a_odd(planes * plane_stride);
  std::vector<std::int32_t> corr(RoundUp(blocks, 4) * 4), ea(blocks);
  SerialExecutor serial;
  Executor& executor = ExecutorFor(static_cast<double>(n) * static_cast<double>(k),
                                   static_cast<double>(kSerialMacs), pool, serial);
  const std::size_t threads = std::max<std::size_t>(1, executor.NumThreads());
  // Column ranges: multiples of 16, about 4 per thread, at most 4096 columns.
  const std::size_t per_task =
      std::clamp<std::size_t>(RoundUp(CeilDiv(n, 4 * threads), 16), 16, 4096);
  const std::size_t tasks = CeilDiv(n, per_task);
  MxGemvArgs g;
  g.a_even = a_even.data();
  g.a_odd = a_odd.data();
  g.planes = planes;
  g.plane_stride = plane_stride;
  g.corr = corr.data();
  g.ea = ea.data();
  g.blocks = blocks;
  g.codes = rb.view->codes;
  g.codes_stride = rb.view->codes_stride;
  g.scales = rb.view->scales;
  g.scales_stride = rb.view->scales_stride;
  std::uint8_t codes[kMxK];
  for (std::size_t i = 0; i < m; ++i) {
    std::fill(a_even.begin(), a_even.end(), std::int8_t{0});
    std::fill(a_odd.begin(), a_odd.end(), std::int8_t{0});
    for (std::size_t b = 0; b < blocks; ++b) {
      ra.Codes(i, b, codes);  // Codes past K read as 0: those products vanish.
      std::int32_t sum = 0;
      std::uint32_t nan = 0;
      for (std::size_t e = 0; e < kMxK; ++e) {
        const std::int32_t v = ra.table->value_i32[codes[e]];  // 0 for NaN codes.
        nan |= ra.table->nan[codes[e]];
        sum += v;
        const std::int32_t mag = v < 0 ? -v : v;
        std::int8_t* plane0 = (e % 2 == 0 ? a_even.data() : a_odd.data()) + b * (kMxK / 2) + e / 2;
        for (std::size_t p = 0; p < planes; ++p) {
          // One plane holds v itself (MXINT8's -128 has no 7-bit digit).
          const std::int32_t digit = planes == 1 ? mag : (mag >> (7 * p)) & 0x7F;
          plane0[p * plane_stride] = static_cast<std::int8_t>(v < 0 ? -digit : digit);
        }
      }
      corr[4 * b] = -12 * sum;  // Lane 4 (b % 4) of chunk b / 4; the other lanes stay 0.
      ea[b] = nan != 0 ? kMxScaleNanExponent : ra.Exponent(i, b);
    }
    executor.ParallelFor(tasks, [&](std::size_t t) {
      const std::size_t j0 = t * per_task;
      const std::size_t j1 = std::min(n, j0 + per_task);
      std::vector<float> acc(j1 - j0);
      kernel(g, j0, j1, acc.data());
      StoreOutputRow(c, params, i, j0, j1 - j0, acc.data());
    });
  }
  return OkStatus();
}

const char* GemvMxfp4KernelName() { return CurrentMxTileKernels().gemv_name; }

std::string MxGemvKernelName(MxFormat a, MxFormat b, std::size_t m) {
  const MxTileKernels& kernels = CurrentMxTileKernels();
  const FormatTable& ta = GetFormatTable(a);
  if (!UseGemv(ta, b, m, kernels)) return "";
  if (ta.i8_planes == 1) return kernels.gemv_name;
  return std::string(kernels.gemv_planes_name) + ", " + std::to_string(ta.i8_planes) + " planes";
}

bool UseGemv(const FormatTable& ta, MxFormat fb, std::size_t m, const MxTileKernels& kernels) {
  return m <= kGemvMaxRows && fb == MxFormat::kMxfp4 &&
         GemvKernel(ta.i8_planes, kernels) != nullptr;
}

bool GemvDenseMx(const GemmOperand& a, const GemmOperand& b, const GemmOutput& c,
                 const GemmParams& params, Executor& pool) {
  if (a.type == OperandType::kMx || b.type != OperandType::kMx || a.rows != 1 || params.accumulate) {
    return false;
  }
  const MxTensorView& w = b.mx;
  if (w.shape.format != MxFormat::kMxfp4 || w.shape.axis != BlockAxis::kCols) return false;
  const std::size_t k = a.cols;
  const std::size_t n = w.shape.cols;
  const DenseGemvFn kernel = CurrentMxTileKernels().gemv_dense_fp4;
  if (kernel == nullptr) return false;
  if (n == 0) return true;
  std::vector<float> x(k);
  for (std::size_t i = 0; i < k; ++i) {
    const std::size_t at = i * a.col_stride;
    if (a.type == OperandType::kFp8) {
      x[i] = Fp8Values(a.fp8_format)[static_cast<const std::uint8_t*>(a.data)[at]];
      continue;
    }
    x[i] = a.type == OperandType::kFp32
               ? static_cast<const float*>(a.data)[at]
               : std::bit_cast<float>(static_cast<std::uint32_t>(static_cast<const Bf16*>(a.data)[at].bits) << 16);
  }
  SerialExecutor serial;
  Executor& executor = ExecutorFor(static_cast<double>(n) * static_cast<double>(k),
                                   static_cast<double>(kSerialMacs), pool, serial);
  const std::size_t threads = std::max<std::size_t>(1, executor.NumThreads());
  const std::size_t per_task = std::clamp<std::size_t>(RoundUp(CeilDiv(n, 4 * threads), 64), 64, 4096);
  executor.ParallelFor(CeilDiv(n, per_task), [&](std::size_t t) {
    const std::size_t j0 = t * per_task;
    const std::size_t j1 = std::min(n, j0 + per_task);
    std::vector<float> acc(j1 - j0);
    kernel(x.data(), k, w.codes, w.codes_stride, w.scales, w.scales_stride, j0, j1, acc.data());
    StoreOutputRow(c, params, 0, j0, j1 - j0, acc.data());
  });
  return true;
}

}  // namespace trnmx::internal
