// MX x MX GEMM (internal::GemmMxMx): formats.md section 10, bit for bit.
//
// Paths, chosen per pairing of element formats (values v * 2^q, q the
// format's quantum: E2M1 -1, E2M3 -3, E3M2 -4, MXINT8 -6, E4M3 -9, E5M2 -16):
//
//   pairing                               block sum S (exact)        kernel
//   M <= 4, MXFP4 weights, activations    int32, VNNI vpdpbusd or    MxGemvFp4Vnni / MxGemvFp4Avx2
//     E2M1 / E2M3 / MXINT8                vpmaddubsw, weights          (AVX-512 VNNI / AVX2;
//                                         streamed once                RunGemvFp4)
//     E3M2 / E4M3                         the same in 2 / 3 int8       MxGemvFp4PlanesAvx2
//                                         planes of the activations    (x86 targets)
//   E2M1 / E2M3 / MXINT8 x same class     int32, VNNI vpdpbusd       MxTileQuadI8Vnni (AVX-512 VNNI)
//     (portable targets, or with E3M2)    FP32 FMA (|S| < 2^23)      MxTileFlat<float>
//   E4M3 x E4M3 or a small format         int16 VNNI vpdpwssd,       MxTilePair16Vnni (AVX-512 VNNI)
//                                         two planes, FP64 combine
//     (portable targets), and             FP64 FMA (|S| < 2^53)      MxTileFlat<double>
//     E5M2 x E2M1/E2M3/E3M2/MXINT8
//   E5M2 x E4M3, E5M2 x E5M2              int64 / __int128, scalar  RunWide (slow path)
// The VNNI kernels (gemm_mx_avx512vnni.cc) are used only when the dispatcher
// chose an AVX-512 target (tests force every target) and the CPU has
// AVX512-VNNI. GemvDenseMx (gemv_mx.h, gemv_mx.cc) is the dense-activation x
// MXFP4 GEMV for gemm.cc. Packing is in gemm_mx_pack.cc, the wide path in
// gemm_mx_wide.cc (gemm_mx_internal.h lists the files).
//
// Driver (BLIS-like, one output = one FP32 chain in K order):
//   for each panel of nc columns of B:
//     acc[M x nc] = +0
//     for each chunk of kc K-blocks, in increasing K:
//       pack: decode A[all rows, chunk] and B[chunk, panel] into the kernel's
//             layout (parallel over row and column groups)
//       compute: tasks = (row group x column sub-panel) of the output; each
//             runs register tiles over the chunk's blocks, updating acc
//     epilogue: alpha, beta * C, bias, FP32 or BF16 (RNE) store
// Threads split outputs only (row groups x column sub-panels), never K, so the
// bits do not depend on the executor. Packing buffers are re-used across
// chunks; the layout depends on the target only inside one call.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "internal/checks.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_mx_internal.h"
#include "kernels/gemm/gemm_mx_kernels.h"
#include "trnmx/formats/codec.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/gemm/gemm_mx-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/gemm/gemm_mx-inl.h"

#if HWY_ONCE

namespace trnmx {
HWY_EXPORT(GetMxTileKernels);

namespace internal {

MxTileKernels CurrentMxTileKernels() { return HWY_DYNAMIC_DISPATCH(GetMxTileKernels)(); }

// ---------------------------------------------------------------------------
// Output epilogue (gemm.h): alpha, beta * C_old, bias, FP32 or BF16 (RNE).
// ---------------------------------------------------------------------------

void StoreOutput(const GemmOutput& c, const GemmParams& p, std::size_t i, std::size_t j,
                 float acc) {
  float r = acc;
  if (p.alpha != 1.0f) r = p.alpha * r;
  const std::size_t at = i * c.row_stride + j * c.col_stride;
  if (p.beta != 0.0f) {
    float old = 0.0f;
    if (c.type == OutputType::kFp32) {
      old = static_cast<const float*>(c.data)[at];
    } else {
      const std::uint32_t bits = static_cast<const Bf16*>(c.data)[at].bits;
      old = std::bit_cast<float>(bits << 16);
    }
    const float scaled = p.beta * old;
    r = r + scaled;
  }
  if (p.bias != nullptr) r = r + p.bias[j];
  if (c.type == OutputType::kFp32) {
    static_cast<float*>(c.data)[at] = r;
  } else {
    static_cast<Bf16*>(c.data)[at] = Fp32ToBf16Rne(r);
  }
}

void StoreOutputRow(const GemmOutput& c, const GemmParams& p, std::size_t i, std::size_t j0,
                    std::size_t count, const float* acc) {
  if (c.type == OutputType::kFp32 && c.col_stride == 1 && p.alpha == 1.0f && p.beta == 0.0f &&
      p.bias == nullptr) {
    std::memcpy(static_cast<float*>(c.data) + i * c.row_stride + j0, acc, count * sizeof(float));
    return;
  }
  for (std::size_t j = 0; j < count; ++j) StoreOutput(c, p, i, j0 + j, acc[j]);
}

namespace {

// ---------------------------------------------------------------------------
// Tiled driver for the kFlat (float / double), kQuad (int8) and kPair16
// layouts.
// ---------------------------------------------------------------------------

enum class Layout : std::uint8_t { kFlatF32, kFlatF64, kQuadI8, kPair16 };

struct TiledPlan {
  Layout layout;
  MxTileKernel kernel;
  std::size_t chunk_blocks;  // K blocks per packed chunk.
  std::size_t panel_cols;    // Columns of B per panel (multiple of kernel.cols).
};

Status RunTiled(const TiledPlan& plan, const LineReader& ra, const LineReader& rb,
                std::size_t m, std::size_t n, std::size_t k, const GemmOutput& c,
                const GemmParams& params, Executor& pool) {
  SerialExecutor serial;
  Executor& executor =
      ExecutorFor(static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k),
                  static_cast<double>(kSerialMacs), pool, serial);
  const std::size_t tr = plan.kernel.rows;
  const std::size_t tc = plan.kernel.cols;
  const std::size_t total_blocks = CeilDiv(k, kMxK);
  const std::size_t kcb = plan.chunk_blocks;
  const std::size_t kc = kcb * kMxK;
  const std::size_t mpad = RoundUp(m, tr);
  const std::size_t ncap = std::min(RoundUp(n, tc), RoundUp(plan.panel_cols, tc));
  const std::size_t threads = std::max<std::size_t>(1, executor.NumThreads());

  // Bytes per packed element of A and B (kPair16: A keeps 3, B 2 int16 per element).
  const std::size_t elem = plan.layout == Layout::kFlatF64   ? sizeof(double)
                           : plan.layout == Layout::kFlatF32 ? sizeof(float)
                                                             : 1;
  const std::size_t a_elem = plan.layout == Layout::kPair16 ? 3 * sizeof(std::int16_t) : elem;
  const std::size_t b_elem = plan.layout == Layout::kPair16 ? 2 * sizeof(std::int16_t) : elem;
  // 64-byte alignment of the packed panels and accumulators.
  auto aligned = [](std::vector<std::uint8_t>& buf, std::size_t bytes) {
    buf.assign(bytes + 64, 0);
    const auto p = reinterpret_cast<std::uintptr_t>(buf.data());
    return buf.data() + ((64 - p % 64) % 64);
  };
  std::vector<std::uint8_t> a_buf, b_buf, acc_buf;
  std::uint8_t* a_pack = aligned(a_buf, mpad * kc * a_elem);
  std::uint8_t* b_pack = aligned(b_buf, kc * ncap * b_elem);
  float* acc = reinterpret_cast<float*>(aligned(acc_buf, mpad * ncap * sizeof(float)));
  std::vector<double> fa(mpad * kcb), fb(kcb * ncap);
  std::vector<std::int32_t> ea(mpad * kcb), eb(kcb * ncap), colsum(kcb * ncap);
  std::vector<std::uint8_t> aflag(mpad * kcb);

  // B is packed tile by tile: the kc x tc tile of columns [t tc, (t + 1) tc)
  // is contiguous at b_pack + t kc tc b_elem with row stride tc (in the
  // layout's units). With one row stride for the whole panel (ncap columns:
  // 8 or 16 KiB) a tile's rows fell into a few L1 sets and its loads missed
  // L1 (Zen 3: the flat kernels 15-25 % slower).
  constexpr std::size_t kPackRows = 64;
  const std::size_t pack_cols = RoundUp(64, tc);  // Whole tiles per B task.
  const std::size_t tile_bytes = kc * tc * b_elem;

  for (std::size_t jc = 0; jc < n; jc += ncap) {
    const std::size_t nc = std::min(ncap, RoundUp(n - jc, tc));
    std::fill(acc, acc + mpad * ncap, 0.0f);
    if (params.accumulate) {  // Chains continue from C (FP32, col_stride 1: validated).
      const auto* cd = static_cast<const float*>(c.data);
      const std::size_t cols = std::min(nc, n - jc);
      for (std::size_t i = 0; i < m; ++i) {
        std::memcpy(acc + i * ncap, cd + i * c.row_stride + jc, cols * sizeof(float));
      }
    }

    // Output tasks: row groups x column sub-panels, enough for the threads.
    const std::size_t group_rows = tr * 8;
    const std::size_t row_groups = CeilDiv(mpad, group_rows);
    const std::size_t want = 4 * threads;
    const std::size_t col_tiles = nc / tc;
    // Column sub-panels: enough tasks, and at most ~256 KB of packed B each
    // (re-read from L2 by every row tile).
    const std::size_t cap_tiles = std::max<std::size_t>(1, (256 << 10) / (kc * b_elem * tc));
    const std::size_t subs = std::min(
        col_tiles, std::max({std::size_t{1}, CeilDiv(want, row_groups), CeilDiv(col_tiles, cap_tiles)}));
    const std::size_t sub_cols = CeilDiv(col_tiles, subs) * tc;
    const std::size_t num_subs = CeilDiv(nc, sub_cols);

    for (std::size_t kb = 0; kb < total_blocks; kb += kcb) {
      const std::size_t nb = std::min(kcb, total_blocks - kb);
      const std::size_t a_tasks = CeilDiv(mpad, kPackRows);
      const std::size_t b_tasks = CeilDiv(nc, pack_cols);
      executor.ParallelFor(a_tasks + b_tasks, [&](std::size_t task) {
        if (task < a_tasks) {
          const std::size_t r0 = task * kPackRows;
          const std::size_t r1 = std::min(mpad, r0 + kPackRows);
          switch (plan.layout) {
            case Layout::kFlatF32:
              PackFlatA(ra, r0, r1, m, kb, nb, reinterpret_cast<float*>(a_pack), kc, fa.data(),
                        ea.data(), kcb);
              break;
            case Layout::kFlatF64:
              PackFlatA(ra, r0, r1, m, kb, nb, reinterpret_cast<double*>(a_pack), kc, fa.data(),
                        ea.data(), kcb);
              break;
            case Layout::kQuadI8:
              PackQuadA(ra, r0, r1, m, kb, nb, a_pack, kc, fa.data(), ea.data(), kcb);
              break;
            case Layout::kPair16:
              PackPair16A(ra, r0, r1, m, kb, nb, reinterpret_cast<std::int16_t*>(a_pack), 3 * kc,
                          fa.data(), ea.data(), aflag.data(), kcb);
              break;
          }
        } else {
          const std::size_t c_first = (task - a_tasks) * pack_cols;
          const std::size_t c_last = std::min(nc, c_first + pack_cols);
          for (std::size_t c0 = c_first; c0 < c_last; c0 += tc) {
            const std::size_t c1 = std::min(c_last, c0 + tc);
            std::uint8_t* tile = b_pack + (c0 / tc) * tile_bytes;
            switch (plan.layout) {
              case Layout::kFlatF32:
                PackFlatB(rb, jc, c0, c1, n, kb, nb, reinterpret_cast<float*>(tile), tc, fb.data(),
                          eb.data(), ncap);
                break;
              case Layout::kFlatF64:
                PackFlatB(rb, jc, c0, c1, n, kb, nb, reinterpret_cast<double*>(tile), tc, fb.data(),
                          eb.data(), ncap);
                break;
              case Layout::kQuadI8:
                PackQuadB(rb, jc, c0, c1, n, kb, nb, reinterpret_cast<std::int8_t*>(tile), 4 * tc,
                          fb.data(), eb.data(), colsum.data(), ncap);
                break;
              case Layout::kPair16:
                PackPair16B(rb, jc, c0, c1, n, kb, nb, reinterpret_cast<std::int16_t*>(tile),
                            2 * tc, fb.data(), eb.data(), ncap);
                break;
            }
          }
        }
      });

      // Consecutive tasks share a column sub-panel (its packed B stays in L2
      // while row groups of A pass through it).
      executor.ParallelFor(row_groups * num_subs, [&](std::size_t task) {
        const std::size_t g = task % row_groups;
        const std::size_t s = task / row_groups;
        const std::size_t r_begin = g * group_rows;
        const std::size_t r_end = std::min(mpad, r_begin + group_rows);
        const std::size_t c_begin = s * sub_cols;
        const std::size_t c_end = std::min(nc, c_begin + sub_cols);
        MxTileArgs args;
        args.nblocks = nb;
        args.ldfa = kcb;
        args.ldfb = ncap;
        args.ldacc = ncap;
        for (std::size_t r = r_begin; r < r_end; r += tr) {
          for (std::size_t col = c_begin; col < c_end; col += tc) {
            args.a = a_pack + r * kc * a_elem;
            args.lda = plan.layout == Layout::kPair16 ? 3 * kc : kc;
            args.b = b_pack + (col / tc) * tile_bytes;
            switch (plan.layout) {
              case Layout::kFlatF32:
              case Layout::kFlatF64:
                args.ldb = tc;
                break;
              case Layout::kQuadI8:
                args.ldb = 4 * tc;
                args.colsum = colsum.data() + col;
                break;
              case Layout::kPair16:
                args.ldb = 2 * tc;
                args.aflag = aflag.data() + r * kcb;
                break;
            }
            args.fa = fa.data() + r * kcb;
            args.ea = ea.data() + r * kcb;
            args.fb = fb.data() + col;
            args.eb = eb.data() + col;
            args.acc = acc + r * ncap + col;
            plan.kernel.fn(args);
          }
        }
      });
    }

    // Epilogue for this panel's columns.
    const std::size_t cols_here = std::min(n - jc, nc);
    const std::size_t out_groups = CeilDiv(m, 16);
    executor.ParallelFor(out_groups, [&](std::size_t g) {
      const std::size_t i1 = std::min(m, (g + 1) * 16);
      for (std::size_t i = g * 16; i < i1; ++i) {
        StoreOutputRow(c, params, i, jc, cols_here, acc + i * ncap);
      }
    });
  }
  return OkStatus();
}

// The tiled plan for a pairing on the current target; false: the wide path.
bool ChoosePlan(const FormatTable& ta, const FormatTable& tb, TiledPlan* plan) {
  if ((ta.wide && !tb.small) || (tb.wide && !ta.small)) return false;
  const MxTileKernels kernels = CurrentMxTileKernels();
  const bool e4m3_pair = !ta.wide && !tb.wide && !(ta.small && tb.small);
  if (ta.int8 && tb.int8 && kernels.quad_i8.fn != nullptr) {
    *plan = {Layout::kQuadI8, kernels.quad_i8, 16, 2048};
  } else if (e4m3_pair && kernels.pair_i16.fn != nullptr) {
    *plan = {Layout::kPair16, kernels.pair_i16, 8, 2048};
  } else if (ta.small && tb.small) {
    *plan = {Layout::kFlatF32, kernels.flat_f32, 8, 2048};
  } else {
    *plan = {Layout::kFlatF64, kernels.flat_f64, 4, 2048};
  }
  return true;
}

}  // namespace

const char* GemmMxMxPathName(MxFormat a, MxFormat b) {
  if (a == MxFormat::kNvfp4 || b == MxFormat::kNvfp4) return "unsupported";
  TiledPlan plan;
  if (!ChoosePlan(GetFormatTable(a), GetFormatTable(b), &plan)) return "wide";
  switch (plan.layout) {
    case Layout::kQuadI8: return "vnni-i8";
    case Layout::kFlatF32: return "flat-f32";
    case Layout::kFlatF64: return "flat-f64";
    case Layout::kPair16: return "vnni-i16";
  }
  return "";
}

Status GemmMxMx(const GemmOperand& a, const GemmOperand& b, const GemmOutput& c,
                const GemmParams& params, Executor& executor) {
  const MxTensorView& av = a.mx;
  const MxTensorView& bv = b.mx;
  const std::size_t m = av.shape.rows;
  const std::size_t k = av.shape.cols;
  const std::size_t n = bv.shape.cols;
  if (av.shape.format == MxFormat::kNvfp4 || bv.shape.format == MxFormat::kNvfp4 ||
      av.shape.axis != BlockAxis::kRows || bv.shape.axis != BlockAxis::kCols ||
      bv.shape.rows != k || c.rows != m || c.cols != n) {
    // Gemm() rejects these before calling; never read such operands.
    return InvalidArgumentError("GemmMxMx: operands not validated (NVFP4, axis or shape)");
  }
  if (m == 0 || n == 0) return OkStatus();
  const FormatTable& ta = GetFormatTable(av.shape.format);
  const FormatTable& tb = GetFormatTable(bv.shape.format);
  const LineReader ra{&av, &ta, k};
  const LineReader rb{&bv, &tb, k};

  if (UseGemv(ta, bv.shape.format, m, CurrentMxTileKernels()) && !params.accumulate) return RunGemvFp4(ra, rb, m, n, k, c, params, executor);
  TiledPlan plan;
  if (!ChoosePlan(ta, tb, &plan)) return RunWide(ra, rb, m, n, k, c, params, executor);
  return RunTiled(plan, ra, rb, m, n, k, c, params, executor);
}

}  // namespace internal
}  // namespace trnmx
#endif  // HWY_ONCE
