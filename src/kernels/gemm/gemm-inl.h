// Per-target dense GEMM (Highway dynamic dispatch; included once per target
// by gemm.cc through hwy/foreach_target.h).
//
// Numerics (gemm.h): every output is one FP32 FMA chain over k = 0..K-1 in
// increasing order, starting from +0. The kernels vectorise across N (32
// columns = one B panel) and unroll across M (MR rows); K is never split
// between vectors or threads, and a K block that is not the first reloads the
// partial sums stored by the previous one, so the chain is the same for every
// blocking, target and thread count. Targets without a fused multiply-add
// instruction (HWY_NATIVE_FMA == 0: SSSE3, SSE4, EMU128) run a scalar kernel
// with std::fma: slower, same bits.
//
// Loop nest (one fork-join per call):
//   parallel for each task = a region of outputs (a grid of tm x tn regions,
//   tm * tn <= threads; N split first):
//     for jc in the region's columns by NC:        B block columns
//       for pc in K by KC:                         K blocks, in order
//         pack B[pc.., jc..] into 32-column panels (the task's own buffer)
//         for ic in the region's rows by MC:
//           pack A[ic.., pc..] into MR-row micro-panels
//           for each MR rows ir, for each panel jr: micro-kernel
//           on the last K block: epilogue of (ic, jc)
// Partial sums live in C itself when C is FP32 with unit column stride and
// beta == 0 (C_old is then never read), else in the task's FP32 scratch.
#if defined(TRNMX_SRC_KERNELS_GEMM_GEMM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TRNMX_SRC_KERNELS_GEMM_GEMM_INL_H_
#undef TRNMX_SRC_KERNELS_GEMM_GEMM_INL_H_
#else
#define TRNMX_SRC_KERNELS_GEMM_GEMM_INL_H_
#endif

#include <hwy/aligned_allocator.h>
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "formats/mx_decode.h"
#include "internal/checks.h"
#include "kernels/gemm/gemm_bf16_amx.h"
#include "kernels/gemm/gemm_bf16_native.h"
#include "kernels/gemm/gemm_dense.h"
#include "trnmx/formats/codec.h"

HWY_BEFORE_NAMESPACE();
namespace trnmx {
namespace HWY_NAMESPACE {
namespace gemm {

namespace hn = hwy::HWY_NAMESPACE;
using internal::DenseGemmArgs;
using internal::DenseSource;
using internal::DenseSourceKind;
using internal::kGemmPanelCols;

// ---------------------------------------------------------------------------
// Register tile: MR rows x NR = 32 columns (NV vectors of LANES floats).
// ---------------------------------------------------------------------------
#undef TRNMX_GEMM_VECTOR_KERNEL
#if HWY_NATIVE_FMA && !HWY_HAVE_SCALABLE && HWY_MAX_BYTES >= 16
#define TRNMX_GEMM_VECTOR_KERNEL 1
#else
#define TRNMX_GEMM_VECTOR_KERNEL 0
#endif

// kPasses: the kernel covers the panel's NR columns in this many passes over
// K, each with its own accumulators (kNvPass vectors per row).
template <std::size_t kRows, std::size_t kLanes, std::size_t kRegisters, std::size_t kPasses = 1>
struct TileShape {
  static constexpr std::size_t kMr = kRows;
  static constexpr std::size_t kNr = kGemmPanelCols;
  static constexpr std::size_t kNv = kNr / kLanes;
  static constexpr std::size_t kNvPass = kNv / kPasses;
  static_assert(kNr % kLanes == 0, "a panel is a whole number of vectors");
  static_assert(kNv % kPasses == 0, "a pass is a whole number of vectors");
  // Accumulators + the B vectors of one k + one broadcast A value, or + the
  // A values of one k (B then read by each FMA).
  static_assert(kMr * kNvPass + kNvPass + 1 <= kRegisters ||
                    kMr * kNvPass + kMr + 1 <= kRegisters,
                "the tile must fit the vector registers");
  // Two FMA pipes of latency 4 need >= 8 independent chains.
  static_assert(kMr * kNvPass >= 8, "too few independent accumulators to hide FMA latency");
};

#if TRNMX_GEMM_VECTOR_KERNEL
constexpr std::size_t kLanes = HWY_LANES(float);
#if HWY_ARCH_X86 && HWY_MAX_BYTES == 32
// AVX2: 6 rows x 16 columns (12 accumulators, 2 B vectors and a broadcast:
// 15 of 16 ymm), two passes per 32-column panel. 3 x 32 needed 17 registers,
// so the compiler re-read one B vector from L1 for every row.
using Tile = TileShape<6, kLanes, 16, 2>;
#elif HWY_MAX_BYTES >= 64
using Tile = TileShape<14, kLanes, 32>;  // AVX-512: 28 accumulators, 32 zmm.
#else
using Tile = TileShape<3, kLanes, 32>;  // 128-bit with 32 registers (NEON).
#endif
#else
using Tile = TileShape<4, 1, 1024>;  // Scalar std::fma kernel.
#endif

constexpr std::size_t kMr = Tile::kMr;
// The kernel prefetches B this many k rows ahead (B comes from L2, or from
// memory with a large stride when B is read in place).
constexpr std::size_t kPrefetchRows = 8;
constexpr std::size_t kNr = Tile::kNr;

// C[0..kRows) x [0..32) (row stride ldc) = (load ? C : 0) + A panel * B panel
// over kc values of k: acc = fma(a[k*kMr + r], b[k*ldb + j], acc).
template <std::size_t kRows>
HWY_NOINLINE void KernelFp32(std::size_t kc, const float* HWY_RESTRICT ap,
                             const float* HWY_RESTRICT bp, std::size_t ldb,
                             float* HWY_RESTRICT c, std::size_t ldc, bool load) {
#if TRNMX_GEMM_VECTOR_KERNEL
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  constexpr std::size_t kNv = Tile::kNvPass;
  constexpr std::size_t kPassCols = kNv * kLanes;
  for (std::size_t col = 0; col < kNr; col += kPassCols) {
    V acc[kRows][kNv];
    if (load) {
      for (std::size_t r = 0; r < kRows; ++r) {
        for (std::size_t v = 0; v < kNv; ++v) {
          acc[r][v] = hn::LoadU(d, c + r * ldc + col + v * kLanes);
        }
      }
    } else {
      for (std::size_t r = 0; r < kRows; ++r) {
        for (std::size_t v = 0; v < kNv; ++v) acc[r][v] = hn::Zero(d);
      }
    }
    const float* HWY_RESTRICT a = ap;
    const float* HWY_RESTRICT b = bp + col;
    for (std::size_t k = 0; k < kc; ++k) {
      // The B row kPrefetchRows ahead, both of its cache lines, in the first
      // pass (past the end of the panel this touches unrelated memory: a
      // prefetch never faults).
      if (col == 0) {
        hwy::Prefetch(b + kPrefetchRows * ldb);
        hwy::Prefetch(b + kPrefetchRows * ldb + 16);
      }
      V bv[kNv];
      for (std::size_t v = 0; v < kNv; ++v) bv[v] = hn::LoadU(d, b + v * kLanes);
      for (std::size_t r = 0; r < kRows; ++r) {
        const V av = hn::Set(d, a[r]);
        for (std::size_t v = 0; v < kNv; ++v) acc[r][v] = hn::MulAdd(av, bv[v], acc[r][v]);
      }
      a += kMr;
      b += ldb;
    }
    for (std::size_t r = 0; r < kRows; ++r) {
      for (std::size_t v = 0; v < kNv; ++v) {
        hn::StoreU(acc[r][v], d, c + r * ldc + col + v * kLanes);
      }
    }
  }
#else
  for (std::size_t r = 0; r < kRows; ++r) {
    for (std::size_t j = 0; j < kNr; ++j) {
      float acc = load ? c[r * ldc + j] : 0.0f;
      for (std::size_t k = 0; k < kc; ++k) acc = std::fma(ap[k * kMr + r], bp[k * ldb + j], acc);
      c[r * ldc + j] = acc;
    }
  }
#endif
}

using KernelFn = void (*)(std::size_t, const float*, const float*, std::size_t, float*,
                          std::size_t, bool);

template <std::size_t... kIs>
constexpr std::array<KernelFn, sizeof...(kIs)> MakeKernelTable(std::index_sequence<kIs...>) {
  return {&KernelFp32<kIs + 1>...};
}
// kKernels[rows - 1]: the kernel for a tile of `rows` (1..kMr) rows.
inline constexpr std::array<KernelFn, kMr> kKernels =
    MakeKernelTable(std::make_index_sequence<kMr>());

// ---------------------------------------------------------------------------
// Element access and packing (exact: copies, BF16 widening, MX decoding).
// ---------------------------------------------------------------------------
inline float Bf16BitsToFloat(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

// Element (i, j) of a dense operand.
inline float DenseAt(const GemmOperand& op, std::size_t i, std::size_t j) {
  const std::size_t idx = i * op.row_stride + j * op.col_stride;
  if (op.type == OperandType::kFp32) return static_cast<const float*>(op.data)[idx];
  if (op.type == OperandType::kFp8) {
    return internal::Fp8Values(op.fp8_format)[static_cast<const std::uint8_t*>(op.data)[idx]];
  }
  return Bf16BitsToFloat(static_cast<const std::uint16_t*>(op.data)[idx]);
}

// A rows [i0, i0 + rows) x columns [k0, k0 + kc) into dst[k * kMr + r].
inline void PackA(const GemmOperand& a, std::size_t i0, std::size_t rows, std::size_t k0,
                  std::size_t kc, float* HWY_RESTRICT dst) {
  if (a.type == OperandType::kMx) {
    for (std::size_t r = 0; r < rows; ++r) {
      internal::DecodeMxLineSegment(a.mx, i0 + r, k0, kc, dst + r, kMr);
    }
    return;
  }
  if (a.type == OperandType::kFp32 && a.col_stride == 1) {
    // k outer: contiguous writes, `rows` sequential read streams.
    const float* rowp[kMr];
    for (std::size_t r = 0; r < rows; ++r) {
      rowp[r] = static_cast<const float*>(a.data) + (i0 + r) * a.row_stride + k0;
    }
    for (std::size_t k = 0; k < kc; ++k) {
      for (std::size_t r = 0; r < rows; ++r) dst[k * kMr + r] = rowp[r][k];
    }
    return;
  }
  if (a.type == OperandType::kFp32 && a.row_stride == 1) {  // Column-major (A^T row-major).
    const float* src = static_cast<const float*>(a.data) + i0 + k0 * a.col_stride;
    for (std::size_t k = 0; k < kc; ++k) {
      const float* col = src + k * a.col_stride;
      for (std::size_t r = 0; r < rows; ++r) dst[k * kMr + r] = col[r];
    }
    return;
  }
  if (a.type == OperandType::kBf16 && a.col_stride == 1) {
    const std::uint16_t* rowp[kMr];
    for (std::size_t r = 0; r < rows; ++r) {
      rowp[r] = static_cast<const std::uint16_t*>(a.data) + (i0 + r) * a.row_stride + k0;
    }
    for (std::size_t k = 0; k < kc; ++k) {
      for (std::size_t r = 0; r < rows; ++r) dst[k * kMr + r] = Bf16BitsToFloat(rowp[r][k]);
    }
    return;
  }
  for (std::size_t k = 0; k < kc; ++k) {
    for (std::size_t r = 0; r < rows; ++r) dst[k * kMr + r] = DenseAt(a, i0 + r, k0 + k);
  }
}

// One 32-column panel of B: rows [k0, k0 + kc), columns [j0, j0 + cols)
// into dst[k * 32 + c]; columns cols..31 get +0.
inline void PackBPanel(const DenseSource& b, std::size_t k_total, std::size_t k0,
                       std::size_t kc, std::size_t j0, std::size_t cols, float* HWY_RESTRICT dst) {
  if (cols < kNr) {
    for (std::size_t k = 0; k < kc; ++k) {
      for (std::size_t c = cols; c < kNr; ++c) dst[k * kNr + c] = 0.0f;
    }
  }
  if (b.kind == DenseSourceKind::kPanelsFp32) {
    const float* src = static_cast<const float*>(b.panels) +
                       (j0 / kNr) * internal::PanelStrideFp32(k_total) + k0 * kNr;
    std::memcpy(dst, src, kc * kNr * sizeof(float));
    return;
  }
  if (b.kind == DenseSourceKind::kPairsBf16) {
    const std::uint16_t* src = static_cast<const std::uint16_t*>(b.panels) +
                               (j0 / kNr) * internal::PanelStrideBf16(k_total);
    for (std::size_t k = 0; k < kc; ++k) {
      const std::size_t kk = k0 + k;
      const std::uint16_t* row = src + (kk / 2) * 2 * kNr + (kk % 2);
      for (std::size_t c = 0; c < cols; ++c) dst[k * kNr + c] = Bf16BitsToFloat(row[2 * c]);
    }
    return;
  }
  const GemmOperand& op = b.op;
  if (op.type == OperandType::kMx) {
    for (std::size_t c = 0; c < cols; ++c) {
      internal::DecodeMxLineSegment(op.mx, j0 + c, k0, kc, dst + c, kNr);
    }
    return;
  }
  if (op.type == OperandType::kFp32 && op.col_stride == 1) {
    const float* src = static_cast<const float*>(op.data) + k0 * op.row_stride + j0;
    for (std::size_t k = 0; k < kc; ++k) {
      std::memcpy(dst + k * kNr, src + k * op.row_stride, cols * sizeof(float));
    }
    return;
  }
  if (op.type == OperandType::kFp32 && op.row_stride == 1) {  // K-contiguous columns.
    const float* src = static_cast<const float*>(op.data) + k0 + j0 * op.col_stride;
    for (std::size_t c = 0; c < cols; ++c) {
      const float* col = src + c * op.col_stride;
      for (std::size_t k = 0; k < kc; ++k) dst[k * kNr + c] = col[k];
    }
    return;
  }
  if (op.type == OperandType::kBf16 && op.col_stride == 1) {
    const std::uint16_t* src =
        static_cast<const std::uint16_t*>(op.data) + k0 * op.row_stride + j0;
    for (std::size_t k = 0; k < kc; ++k) {
      const std::uint16_t* row = src + k * op.row_stride;
      for (std::size_t c = 0; c < cols; ++c) dst[k * kNr + c] = Bf16BitsToFloat(row[c]);
    }
    return;
  }
  for (std::size_t c = 0; c < cols; ++c) {
    for (std::size_t k = 0; k < kc; ++k) dst[k * kNr + c] = DenseAt(op, k0 + k, j0 + c);
  }
}

// Panels [jp0, jp1) of the B block at columns jc.., rows [k0, k0 + kc), panel
// jp at dst + jp * kc * 32. Row-major FP32 and BF16 go row by row across the
// panels (sequential reads of B); other sources panel by panel.
inline void PackBPanels(const DenseSource& b, std::size_t k_total, std::size_t k0, std::size_t kc,
                        std::size_t jc, std::size_t n, std::size_t jp0, std::size_t jp1,
                        float* HWY_RESTRICT dst) {
  const GemmOperand& op = b.op;
  const bool rows_fp32 = b.kind == DenseSourceKind::kOperand && op.type == OperandType::kFp32 &&
                         op.col_stride == 1;
  const bool rows_bf16 = b.kind == DenseSourceKind::kOperand && op.type == OperandType::kBf16 &&
                         op.col_stride == 1;
  if (!rows_fp32 && !rows_bf16) {
    for (std::size_t jp = jp0; jp < jp1; ++jp) {
      const std::size_t j0 = jc + jp * kNr;
      PackBPanel(b, k_total, k0, kc, j0, std::min(kNr, n - j0), dst + jp * kc * kNr);
    }
    return;
  }
  for (std::size_t k = 0; k < kc; ++k) {
    for (std::size_t jp = jp0; jp < jp1; ++jp) {
      const std::size_t j0 = jc + jp * kNr;
      const std::size_t cols = std::min(kNr, n - j0);
      float* d = dst + jp * kc * kNr + k * kNr;
      if (rows_fp32) {
        const float* src = static_cast<const float*>(op.data) + (k0 + k) * op.row_stride + j0;
        if (cols == kNr) {
          std::memcpy(d, src, kNr * sizeof(float));
        } else {
          for (std::size_t c = 0; c < kNr; ++c) d[c] = c < cols ? src[c] : 0.0f;
        }
      } else {
        const std::uint16_t* src =
            static_cast<const std::uint16_t*>(op.data) + (k0 + k) * op.row_stride + j0;
        for (std::size_t c = 0; c < kNr; ++c) d[c] = c < cols ? Bf16BitsToFloat(src[c]) : 0.0f;
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Epilogue: r = acc; alpha; beta * C_old; bias; store FP32 or BF16 (RNE).
// ---------------------------------------------------------------------------
inline float EpilogueScalar(float acc, float alpha, float beta, float c_old, const float* bias,
                            std::size_t j) {
  float r = acc;
  if (alpha != 1.0f) r = alpha * r;
  if (beta != 0.0f) r = r + beta * c_old;
  if (bias != nullptr) r = r + bias[j];
  return r;
}

inline float ReadC(const GemmOutput& c, std::size_t i, std::size_t j) {
  const std::size_t idx = i * c.row_stride + j * c.col_stride;
  if (c.type == OutputType::kFp32) return static_cast<const float*>(c.data)[idx];
  return Bf16BitsToFloat(static_cast<const std::uint16_t*>(c.data)[idx]);
}

inline void WriteC(const GemmOutput& c, std::size_t i, std::size_t j, float r) {
  const std::size_t idx = i * c.row_stride + j * c.col_stride;
  if (c.type == OutputType::kFp32) {
    static_cast<float*>(c.data)[idx] = r;
  } else {
    static_cast<std::uint16_t*>(c.data)[idx] = Fp32ToBf16Rne(r).bits;
  }
}

// Outputs [i0, i1) x [j0, j1); acc(i, j) at acc[(i - i0) * ldacc + (j - j0)]
// (nullptr: every acc is +0, K == 0).
inline void Epilogue(const GemmOutput& c, const GemmParams& p, std::size_t i0, std::size_t i1,
                     std::size_t j0, std::size_t j1, const float* acc, std::size_t ldacc) {
  const hn::ScalableTag<float> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  const hn::Rebind<std::uint16_t, decltype(d)> du16;
  const hn::Rebind<std::int32_t, decltype(d)> di;
  const std::size_t lanes = hn::Lanes(d);
  const auto alpha = hn::Set(d, p.alpha);
  const auto beta = hn::Set(d, p.beta);
  for (std::size_t i = i0; i < i1; ++i) {
    // arow[j - j0]: acc of output (i, j).
    const float* arow = acc != nullptr ? acc + (i - i0) * ldacc : nullptr;
    std::size_t j = j0;
    if (c.col_stride == 1 && acc != nullptr) {
      for (; j + lanes <= j1; j += lanes) {
        auto r = hn::LoadU(d, arow + (j - j0));
        if (p.alpha != 1.0f) r = hn::Mul(alpha, r);
        if (c.type == OutputType::kFp32) {
          float* crow = static_cast<float*>(c.data) + i * c.row_stride;
          if (p.beta != 0.0f) r = hn::Add(r, hn::Mul(beta, hn::LoadU(d, crow + j)));
          if (p.bias != nullptr) r = hn::Add(r, hn::LoadU(d, p.bias + j));
          hn::StoreU(r, d, crow + j);
        } else {
          std::uint16_t* crow = static_cast<std::uint16_t*>(c.data) + i * c.row_stride;
          if (p.beta != 0.0f) {
            const auto old = hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(du16, crow + j)));
            r = hn::Add(r, hn::Mul(beta, hn::BitCast(d, old)));
          }
          if (p.bias != nullptr) r = hn::Add(r, hn::LoadU(d, p.bias + j));
          // RNE to BF16 in integer ops (formats.md section 4; codec.h
          // Fp32ToBf16Rne): NaN keeps its top bits and is made quiet.
          const auto bits = hn::BitCast(du, r);
          const auto rounded = hn::ShiftRight<16>(hn::Add(
              bits, hn::Add(hn::Set(du, 0x7FFFu), hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u)))));
          const auto nan = hn::Or(hn::ShiftRight<16>(bits), hn::Set(du, 0x40u));
          const auto is_nan = hn::Gt(hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7FFFFFFFu))),
                                     hn::Set(di, 0x7F800000));
          const auto out = hn::IfThenElse(hn::RebindMask(du, is_nan), nan, rounded);
          hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di, out)), du16, crow + j);
        }
      }
    }
    for (; j < j1; ++j) {
      const float a = arow != nullptr ? arow[j - j0] : 0.0f;
      const float old = p.beta != 0.0f ? ReadC(c, i, j) : 0.0f;
      WriteC(c, i, j, EpilogueScalar(a, p.alpha, p.beta, old, p.bias, j));
    }
  }
}

// ---------------------------------------------------------------------------
// Driver.
// ---------------------------------------------------------------------------
struct AlignedBuffer {
  hwy::AlignedFreeUniquePtr<float[]> data;
  std::size_t size = 0;
  float* Get(std::size_t n) {
    if (n > size) {
      data = hwy::AllocateAligned<float>(n);
      size = n;
    }
    return data.get();
  }
};

using ::trnmx::internal::CeilDiv;
using ::trnmx::internal::RoundUp;
// K pairs of kc values (the native path pads an odd K block with +0).
inline std::size_t DivCeilK(std::size_t kc) { return (kc + 1) / 2; }

// Native BF16 path (Bf16Mode::kNativeDot): A rows [i0, i0 + rows) x K
// pairs from k0 (even) as 32-bit words (a_2t | a_2t+1 << 16), dst[t * 14 + r];
// an odd K is padded with +0.
inline void PackAPairs(const GemmOperand& a, std::size_t i0, std::size_t rows, std::size_t k0,
                       std::size_t kc, std::uint32_t* HWY_RESTRICT dst) {
  constexpr std::size_t kNmr = internal::kNativeBf16Mr;
  const auto* src = static_cast<const std::uint16_t*>(a.data);
  const std::size_t pairs = DivCeilK(kc);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::uint16_t* row = src + (i0 + r) * a.row_stride + k0 * a.col_stride;
    for (std::size_t t = 0; t < pairs; ++t) {
      const std::uint32_t lo = row[(2 * t) * a.col_stride];
      const std::uint32_t hi = 2 * t + 1 < kc ? row[(2 * t + 1) * a.col_stride] : 0u;
      dst[t * kNmr + r] = lo | (hi << 16);
    }
  }
}

// AMX path (Bf16Mode::kAmxTile): A rows [i0, i0 + rows) x K pairs from k0
// as 32-bit words, row-major (row r at dst + r * ceil(kc/2)); rows up to
// kAmxBf16Mr past `rows` are +0; an odd K is padded with +0.
inline void PackAPairRows(const GemmOperand& a, std::size_t i0, std::size_t rows, std::size_t k0,
                          std::size_t kc, std::uint32_t* HWY_RESTRICT dst) {
  const auto* src = static_cast<const std::uint16_t*>(a.data);
  const std::size_t pairs = DivCeilK(kc);
  for (std::size_t r = 0; r < internal::kAmxBf16Mr; ++r) {
    std::uint32_t* out = dst + r * pairs;
    if (r >= rows) {
      std::fill(out, out + pairs, 0u);
      continue;
    }
    const std::uint16_t* row = src + (i0 + r) * a.row_stride + k0 * a.col_stride;
    if (a.col_stride == 1) {
      // Little-endian pairs of a contiguous row are the row's bytes.
      std::memcpy(out, row, kc * sizeof(std::uint16_t));
      if (kc % 2 != 0) std::memset(reinterpret_cast<char*>(out) + kc * sizeof(std::uint16_t), 0, 2);
      continue;
    }
    for (std::size_t t = 0; t < pairs; ++t) {
      const std::uint32_t lo = row[(2 * t) * a.col_stride];
      const std::uint32_t hi = 2 * t + 1 < kc ? row[(2 * t + 1) * a.col_stride] : 0u;
      out[t] = lo | (hi << 16);
    }
  }
}

// BF16 paths: panels [jp0, jp1) of the B block in the pair layout
// (gemm_dense.h), panel jp at dst + jp * ceil(kc/2) * 64.
inline void PackBPairsPanels(const DenseSource& b, std::size_t k_total, std::size_t k0,
                             std::size_t kc, std::size_t jc, std::size_t n, std::size_t jp0,
                             std::size_t jp1, std::uint16_t* HWY_RESTRICT dst) {
  const std::size_t pairs = DivCeilK(kc);
  for (std::size_t jp = jp0; jp < jp1; ++jp) {
    const std::size_t j0 = jc + jp * kNr;
    const std::size_t cols = std::min(kNr, n - j0);
    std::uint16_t* d = dst + jp * pairs * 2 * kNr;
    if (b.kind == DenseSourceKind::kPairsBf16) {
      const auto* src = static_cast<const std::uint16_t*>(b.panels) +
                        (j0 / kNr) * internal::PanelStrideBf16(k_total) + (k0 / 2) * 2 * kNr;
      std::memcpy(d, src, pairs * 2 * kNr * sizeof(std::uint16_t));
      continue;
    }
    const GemmOperand& op = b.op;
    const auto* src = static_cast<const std::uint16_t*>(op.data);
    const hn::CappedTag<std::uint16_t, kNr> d16;
    if (op.col_stride == 1 && cols == kNr && kNr % hn::Lanes(d16) == 0) {
      // Row-major B, a whole panel: each pair row interleaves two K rows.
      for (std::size_t t = 0; t < pairs; ++t) {
        const std::uint16_t* s0 = src + (k0 + 2 * t) * op.row_stride + j0;
        const bool has_odd = 2 * t + 1 < kc;
        for (std::size_t c = 0; c < kNr; c += hn::Lanes(d16)) {
          const auto odd = has_odd ? hn::LoadU(d16, s0 + op.row_stride + c) : hn::Zero(d16);
          hn::StoreInterleaved2(hn::LoadU(d16, s0 + c), odd, d16, d + t * 2 * kNr + 2 * c);
        }
      }
      continue;
    }
    for (std::size_t t = 0; t < pairs; ++t) {
      std::uint16_t* row = d + t * 2 * kNr;
      for (std::size_t h = 0; h < 2; ++h) {
        const std::size_t kk = 2 * t + h;
        if (kk >= kc) {
          for (std::size_t c = 0; c < kNr; ++c) row[2 * c + h] = 0;
          continue;
        }
        const std::uint16_t* s = src + (k0 + kk) * op.row_stride + j0 * op.col_stride;
        for (std::size_t c = 0; c < kNr; ++c) row[2 * c + h] = c < cols ? s[c * op.col_stride] : 0;
      }
    }
  }
}

// B rows per pass, read side by side: several streams raise the read
// bandwidth of one core (Zen 3: one stream 22-27 GB/s, 4 streams 37-39, 8
// streams 39-40; M = 1, N = 4096 or 14336 ran 15-25 % faster with 8 rows
// than with 4), and the largest M this path takes.
constexpr std::size_t kStreamedRows = 8;
constexpr std::size_t kMaxStreamedM = 4;

#if TRNMX_GEMM_VECTOR_KERNEL
// A's m rows as FP32 (PackA widens every dense type): row r at the result +
// r * k, in a buffer of the calling thread kept between calls.
inline const float* WidenRows(const GemmOperand& a, std::size_t m, std::size_t k) {
  thread_local AlignedBuffer a_buf;
  thread_local AlignedBuffer pack_buf;
  float* ak = a_buf.Get(m * k);
  float* packed = pack_buf.Get(k * kMr);
  for (std::size_t r = 0; r < m; ++r) {
    PackA(a, r, 1, 0, k, packed);
    for (std::size_t kk = 0; kk < k; ++kk) ak[r * k + kk] = packed[kk * kMr];
  }
  return ak;
}

// A's values of the kRows rows of a streamed pass from k0, x[r][u] = A(r, k0
// + u), in a local array: read through `ak` (which may alias the
// accumulators for the compiler) they would be reloaded after every store.
template <std::size_t kRows>
HWY_INLINE void PassValues(const float* HWY_RESTRICT ak, std::size_t k, std::size_t m,
                           std::size_t k0, float (&x)[kMaxStreamedM][kRows]) {
  for (std::size_t r = 0; r < m; ++r) {
    for (std::size_t u = 0; u < kRows; ++u) x[r][u] = ak[r * k + k0 + u];
  }
}

// One streamed pass over kRows rows of B: acc[r * ldacc + j] = fma(x[r][u],
// b[u * ldb + j], acc[r * ldacc + j]) for u = 0 .. kRows - 1 in order, for r
// < m and j < cols (vectors, then the columns past the last one).
template <std::size_t kRows>
HWY_INLINE void StreamPass(const float (&x)[kMaxStreamedM][kRows], std::size_t m,
                           const float* HWY_RESTRICT b, std::size_t ldb, std::size_t cols,
                           float* HWY_RESTRICT acc, std::size_t ldacc) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  const std::size_t vec_cols = cols / lanes * lanes;
  for (std::size_t j = 0; j < vec_cols; j += lanes) {
    for (std::size_t r = 0; r < m; ++r) {
      auto v = hn::LoadU(d, acc + r * ldacc + j);
      for (std::size_t u = 0; u < kRows; ++u) {
        v = hn::MulAdd(hn::Set(d, x[r][u]), hn::LoadU(d, b + u * ldb + j), v);
      }
      hn::StoreU(v, d, acc + r * ldacc + j);
    }
  }
  for (std::size_t j = vec_cols; j < cols; ++j) {
    for (std::size_t r = 0; r < m; ++r) {
      float v = acc[r * ldacc + j];
      for (std::size_t u = 0; u < kRows; ++u) v = std::fma(x[r][u], b[u * ldb + j], v);
      acc[r * ldacc + j] = v;
    }
  }
}

// Decode shapes with B unpacked: FP32 B with unit column stride and M <= 4
// rows of A. B's rows are read once, in K order, as long contiguous runs
// (kStreamedRows at a time) into accumulators of a column range kept in L2, each
// update one FMA per output in increasing k, so every output is the same
// FMA chain as in the blocked driver (same bits). Threads own column ranges.
// The blocked loop nest reads an unpacked B in 128-byte pieces of KC rows per
// panel, which the hardware prefetchers follow poorly (docs/gemm.md).
inline void StreamedRowsGemm(const DenseGemmArgs& args, Executor& ex) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  const std::size_t m = args.m;
  const std::size_t n = args.n;
  const std::size_t k = args.k;
  const GemmOutput& c = args.c;
  const GemmParams& p = args.params;
  const GemmOperand& bo = args.b.op;
  const float* b = static_cast<const float*>(bo.data);
  const float* ak = WidenRows(args.a.op, m, k);
  // C holds the sums when it can (FP32, unit column stride, no beta) and its
  // rows do not lie a multiple of 4 KiB apart: such rows (as an unpadded
  // scratch's would) make the core take each row's loads for dependent on
  // the other rows' stores (4K aliasing; M = 4, K = N = 4096 ran at 8
  // GFLOP/s against 17 for M = 2), so they get the padded scratch.
  const bool c_is_acc = c.type == OutputType::kFp32 && c.col_stride == 1 && p.beta == 0.0f &&
                        (m == 1 || (c.row_stride * sizeof(float)) % 4096 != 0);
  const bool need_epilogue = !c_is_acc || p.alpha != 1.0f || p.bias != nullptr;
  // Columns per task: one contiguous range per thread, so that each pass
  // reads B's rows in runs as long as possible (runs of one 4 KiB page, the
  // old 1024 columns, left the hardware prefetchers cold: M = 1 on a Zen 3
  // read 0.6 of the read bandwidth, whole 16 KiB rows 0.9-1.0), at most
  // 256 KiB of accumulators per task (m x chunk FP32, in L2).
  const std::size_t max_chunk = std::max(lanes, (std::size_t{64} << 10) / m / lanes * lanes);
  const std::size_t chunk = std::min(max_chunk, RoundUp(CeilDiv(n, ex.NumThreads()), lanes));
  ex.ParallelFor(CeilDiv(n, chunk), [&](std::size_t task) {
    const std::size_t j0 = task * chunk;
    const std::size_t cols = std::min(chunk, n - j0);
    thread_local AlignedBuffer scratch_buf;
    float* acc;
    std::size_t ld;
    if (c_is_acc) {
      acc = static_cast<float*>(c.data) + j0;
      ld = c.row_stride;
    } else {
      ld = chunk + 16;  // 64 bytes past 4 KiB multiples (see c_is_acc).
      acc = scratch_buf.Get(m * ld);
    }
    if (!p.accumulate) {
      for (std::size_t r = 0; r < m; ++r) std::fill(acc + r * ld, acc + r * ld + cols, 0.0f);
    } else if (!c_is_acc) {  // The chains continue from C (FP32: validated).
      const float* crow = static_cast<const float*>(c.data) + j0;
      for (std::size_t r = 0; r < m; ++r) {
        std::copy(crow + r * c.row_stride, crow + r * c.row_stride + cols, acc + r * ld);
      }
    }
    const float* brow = b + j0;
    std::size_t k0 = 0;
    for (; k0 + kStreamedRows <= k; k0 += kStreamedRows) {
      float x[kMaxStreamedM][kStreamedRows];
      PassValues(ak, k, m, k0, x);
      StreamPass(x, m, brow + k0 * bo.row_stride, bo.row_stride, cols, acc, ld);
    }
    for (; k0 < k; ++k0) {  // The last K % kStreamedRows rows.
      float x[kMaxStreamedM][1];
      PassValues(ak, k, m, k0, x);
      StreamPass(x, m, brow + k0 * bo.row_stride, bo.row_stride, cols, acc, ld);
    }
    if (need_epilogue) Epilogue(c, p, 0, m, j0, j0 + cols, acc, ld);
  });
}

// Decode shapes with prepacked FP32 panels (PackedWeights) and M <= 4: groups
// of kStreamedPanels panels read side by side, kStreamedPanelRows rows of each
// per pass (each panel one contiguous run of K x 32 floats, so as many read
// streams as panels), into the group's accumulators (M x 128 FP32, in L1);
// one FMA per output per k in increasing k: the blocked driver's chains and
// bits. Threads own ranges of groups. The blocked driver read one panel at a
// time, one stream: on Zen 3, M = 1, K, N in {4096, 14336}, 4 panels ran
// 15-30 % faster than that, 2 panels no faster, 8 panels 10 % slower.
constexpr std::size_t kStreamedPanels = 4;
// K rows per pass over the group's panels. Passes of 4 rows beat passes of 8
// (the row streaming path's kStreamedRows) on a Zen 3, (K, N) = (4096, 4096),
// (14336, 4096), (4096, 14336) (docs/performance.md): M = 1 +10-19 %, M = 2
// +22 %, M = 4 +33-50 %; 2 rows were as fast for M = 1 and slower for M = 4,
// 16 rows half as fast.
constexpr std::size_t kStreamedPanelRows = 4;

inline void StreamedPanelsGemm(const DenseGemmArgs& args, Executor& ex) {
  const std::size_t m = args.m;
  const std::size_t n = args.n;
  const std::size_t k = args.k;
  const GemmOutput& c = args.c;
  const GemmParams& p = args.params;
  const float* panels = static_cast<const float*>(args.b.panels);
  const std::size_t stride = internal::PanelStrideFp32(k);
  const float* ak = WidenRows(args.a.op, m, k);
  constexpr std::size_t kGroupCols = kStreamedPanels * kNr;
  const std::size_t groups = CeilDiv(n, kGroupCols);
  const std::size_t per_task = CeilDiv(groups, std::max<std::size_t>(1, ex.NumThreads()));
  ex.ParallelFor(CeilDiv(groups, per_task), [&](std::size_t task) {
    HWY_ALIGN float acc[kMaxStreamedM * kGroupCols];
    const std::size_t g1 = std::min(groups, (task + 1) * per_task);
    for (std::size_t g = task * per_task; g < g1; ++g) {
      const std::size_t j0 = g * kGroupCols;
      const std::size_t j1 = std::min(n, j0 + kGroupCols);
      const std::size_t np = CeilDiv(j1 - j0, kNr);  // Panels in this group.
      const float* group = panels + (j0 / kNr) * stride;
      for (std::size_t r = 0; r < m; ++r) {
        float* row = acc + r * kGroupCols;
        std::fill(row, row + kGroupCols, 0.0f);
        if (p.accumulate) {  // The chains continue from C (FP32, col_stride 1: validated).
          std::copy_n(static_cast<const float*>(c.data) + r * c.row_stride + j0, j1 - j0, row);
        }
      }
      // Passes over the group's panels side by side (each panel's rows are
      // kNr floats apart).
      const auto passes = [&]<std::size_t kRows>(std::size_t k0) HWY_ATTR {
        float x[kMaxStreamedM][kRows];
        PassValues(ak, k, m, k0, x);
        for (std::size_t pp = 0; pp < np; ++pp) {
          StreamPass(x, m, group + pp * stride + k0 * kNr, kNr, kNr, acc + pp * kNr, kGroupCols);
        }
      };
      std::size_t k0 = 0;
      for (; k0 + kStreamedPanelRows <= k; k0 += kStreamedPanelRows) {
        passes.template operator()<kStreamedPanelRows>(k0);
      }
      for (; k0 < k; ++k0) passes.template operator()<1>(k0);  // The last K % kStreamedPanelRows.
      Epilogue(c, p, 0, m, j0, j1, acc, kGroupCols);
    }
  });
}
#endif

// The blocked driver. kNativeDot / kAmxTile: BF16 x BF16 through the
// VDPBF16PS or TDPBF16PS kernels (K blocks of whole pairs or AMX steps,
// pair-packed A and B); kFp32: the FP32 FMA kernels of this target.
template <internal::DensePath kPath>
void BlockedGemm(const DenseGemmArgs& args) {
  constexpr bool kNative = kPath != internal::DensePath::kFp32;
  constexpr bool kAmx = kPath == internal::DensePath::kAmxTile;
  constexpr std::size_t kPathMr = kAmx      ? internal::kAmxBf16Mr
                                  : kNative ? internal::kNativeBf16Mr
                                            : kMr;
  using AElem = std::conditional_t<kNative, std::uint32_t, float>;
  using BElem = std::conditional_t<kNative, std::uint16_t, float>;
  // BElem per K row of a panel (the native layout holds a K pair per 64).
  constexpr std::size_t kBRow = kNr;
  const std::size_t m = args.m;
  const std::size_t n = args.n;
  const std::size_t k = args.k;
  const GemmOutput& c = args.c;
  const GemmParams& p = args.params;
  // Below ~1 MFLOP a fork-join costs more than it saves: run on the caller.
  // (The split never changes the bits, only who computes which outputs.)
  SerialExecutor serial;
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  Executor& ex = flops < 1e6 && !args.blocking.force_parallel ? static_cast<Executor&>(serial)
                                                               : *args.executor;
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (p.accumulate) return;  // Nothing to add: C keeps its chains.
    ex.ParallelFor(m, [&](std::size_t i) { Epilogue(c, p, i, i + 1, 0, n, nullptr, 0); });
    return;
  }

  const std::size_t threads = ex.NumThreads();
  // Prepacked panels are read in place for few rows of A; for more rows the
  // block is still copied to the buffer (a streaming copy is cheaper than the
  // kernel stalling on memory in its first pass).
  const bool prepacked = args.b.kind == (kNative ? DenseSourceKind::kPairsBf16
                                                 : DenseSourceKind::kPanelsFp32) &&
                         m <= 2 * kPathMr;
  // Read in place by a single register tile of rows (M <= 4 on the vector
  // targets takes StreamedPanelsGemm below instead), prepacked FP32 panels
  // take one K block: each panel then streams as one run of K x 32 floats
  // instead of KC-row pieces a panel apart. Measured on a Zen 3, M = 1 and
  // K, N in {4096, 14336}: 5-25 % faster. With two tiles (M = 4, 6) each tile
  // would stream B from memory again: 15-25 % slower, so they keep KC.
  internal::GemmBlocking requested = args.blocking;
  if (!kNative && prepacked && m <= kPathMr && requested.kc == 0) requested.kc = k;
  const internal::GemmBlocking blocks =
      internal::ChooseDenseBlocking(m, n, k, kPathMr, kNr, sizeof(BElem),
                                    internal::DenseKMultiple(kPath), requested);
  const std::size_t kc = blocks.kc;
  const std::size_t mc = blocks.mc;
  std::size_t nc = blocks.nc;

  // Where the partial sums live between K blocks.
  const bool c_is_acc = c.type == OutputType::kFp32 && c.col_stride == 1 && p.beta == 0.0f;
  const bool need_epilogue = !c_is_acc || p.alpha != 1.0f || p.bias != nullptr;
  // The calling thread's buffers are kept between calls (fresh pages cost
  // page faults on every call).

  // B straight from memory (no packing) for M <= 4: the packing would cost
  // as much as the multiplication (measured: M = 1 faster in place, M = 8
  // faster packed).
  const bool direct_b = !kNative && args.b.kind == DenseSourceKind::kOperand &&
                        args.b.op.type == OperandType::kFp32 && args.b.op.col_stride == 1 &&
                        m <= kMaxStreamedM;
#if TRNMX_GEMM_VECTOR_KERNEL
  if (direct_b) {
    StreamedRowsGemm(args, ex);
    return;
  }
  if (!kNative && args.b.kind == DenseSourceKind::kPanelsFp32 && m <= kMaxStreamedM &&
      args.blocking.kc == 0) {
    StreamedPanelsGemm(args, ex);
    return;
  }
#endif
  const bool pack_b = !direct_b && !prepacked;
  const auto* native_kernels = internal::NativeBf16Kernels();

  // One fork-join per call: the outputs are cut into a grid of tm x tn
  // regions, one task each (tasks = threads). A task runs the whole blocked
  // loop nest for its region with its own packing buffers, so the K blocks
  // need no barrier. N is split first (each task packs only its own B
  // panels; A is packed once per N range), M when there are too few panels.
  const std::size_t total_panels = CeilDiv(n, kNr);
  const std::size_t m_tiles = CeilDiv(m, kPathMr);
  std::size_t tn = std::min(threads, total_panels);
  std::size_t tm = std::min(CeilDiv(threads, tn), m_tiles);
  const std::size_t panels_per_task = CeilDiv(total_panels, tn);
  tn = CeilDiv(total_panels, panels_per_task);
  const std::size_t tiles_per_task = CeilDiv(m_tiles, tm);
  tm = CeilDiv(m_tiles, tiles_per_task);
  // Where the partial sums live between K blocks: C itself, or a task
  // scratch of its rows x NC in tile order (each MR x 32 tile contiguous).
  // C's rows lie a row stride apart, so a tile's rows share an L1 set and
  // evict the B panel the kernel rereads; the scratch's tiles do not. The
  // FP32 path takes the scratch wherever there is more than one K block and
  // it fits 16 MiB without narrowing NC (docs/gemm.md), every path when C
  // cannot hold FP32 partial sums (then NC is narrowed to fit).
  const std::size_t region_rows = std::min(m, tiles_per_task * kPathMr);
  const std::size_t region_cols = std::min(nc, panels_per_task * kNr);
  constexpr std::size_t kScratchFloats = std::size_t{4} << 20;
  const bool scratch_fits = RoundUp(region_rows, kPathMr) * region_cols <= kScratchFloats;
  const bool use_scratch = !c_is_acc || (!kNative && k > kc && scratch_fits);
  if (!c_is_acc) {
    nc = std::min(nc, std::max<std::size_t>(kNr, kScratchFloats / RoundUp(region_rows, kPathMr) /
                                                     kNr * kNr));
  }

  ex.ParallelFor(tm * tn, [&](std::size_t task) {
    const std::size_t region_i0 = (task / tn) * tiles_per_task * kPathMr;
    const std::size_t region_i1 = std::min(m, region_i0 + tiles_per_task * kPathMr);
    const std::size_t region_j0 = (task % tn) * panels_per_task * kNr;
    const std::size_t region_j1 = std::min(n, region_j0 + panels_per_task * kNr);
    thread_local AlignedBuffer a_buf;
    thread_local AlignedBuffer b_task_buf;
    thread_local AlignedBuffer b_edge;
    thread_local AlignedBuffer scratch_buf;
    const std::size_t region_tiles = CeilDiv(region_i1 - region_i0, kPathMr);
    const std::size_t scratch_cols = RoundUp(std::min(nc, region_j1 - region_j0), kNr);
    float* const scratch =
        use_scratch ? scratch_buf.Get(region_tiles * kPathMr * scratch_cols) : nullptr;
    // (An odd final K block of the native path packs kc + 1 rows.)
    BElem* bbuf = pack_b ? reinterpret_cast<BElem*>(
                               b_task_buf.Get((kc + 1) * nc * sizeof(BElem) / 4 + 16))
                         : nullptr;
    for (std::size_t jc = region_j0; jc < region_j1; jc += nc) {
      const std::size_t ncur = std::min(nc, region_j1 - jc);
      const std::size_t panels = CeilDiv(ncur, kNr);
      for (std::size_t pc = 0; pc < k; pc += kc) {
        const std::size_t kcur = std::min(kc, k - pc);
        // K rows of a packed panel: kcur, or the K pairs' rows (native).
        const std::size_t krows = kNative ? 2 * DivCeilK(kcur) : kcur;
        const bool first = pc == 0 && !p.accumulate;
        const bool last = pc + kcur == k;
        if (pack_b) {
          if constexpr (kNative) {
            PackBPairsPanels(args.b, k, pc, kcur, jc, n, 0, panels, bbuf);
          } else {
            PackBPanels(args.b, k, pc, kcur, jc, n, 0, panels, bbuf);
          }
        }
        // B panel jp (of this jc block) of this K block: (pointer, row
        // stride in BElem per k row (FP32) or per k pair (native)).
        float* edge_panel = nullptr;
        auto panel = [&](std::size_t jp, std::size_t* ldb) -> const BElem* {
          const std::size_t j0 = jc + jp * kNr;
          *ldb = kNative ? 2 * kNr : kNr;
          if (prepacked) {
            if constexpr (kNative) {
              return static_cast<const BElem*>(args.b.panels) +
                     (j0 / kNr) * internal::PanelStrideBf16(k) + pc * kNr;
            } else {
              return static_cast<const BElem*>(args.b.panels) +
                     (j0 / kNr) * internal::PanelStrideFp32(k) + pc * kNr;
            }
          }
          if (bbuf != nullptr) return bbuf + jp * krows * kBRow;
          if constexpr (!kNative) {
            if (n - j0 >= kNr) {
              const GemmOperand& bo = args.b.op;
              *ldb = bo.row_stride;
              return static_cast<const float*>(bo.data) + pc * bo.row_stride + j0;
            }
            if (edge_panel == nullptr) {  // Direct B: the last, partial panel is packed.
              edge_panel = b_edge.Get(kcur * kNr);
              PackBPanel(args.b, k, pc, kcur, j0, n - j0, edge_panel);
            }
            return edge_panel;
          }
          return nullptr;  // Unreachable: the native path always packs or prepacks.
        };
        for (std::size_t i0 = region_i0; i0 < region_i1; i0 += mc) {
          const std::size_t mcur = std::min(mc, region_i1 - i0);
          // One A micro-panel: kPathMr x krows elements (native: krows/2 words).
          const std::size_t a_panel = kNative ? kPathMr * krows / 2 : kPathMr * kcur;
          AElem* ap = reinterpret_cast<AElem*>(a_buf.Get(CeilDiv(mcur, kPathMr) * a_panel));
          for (std::size_t ir = 0; ir < mcur; ir += kPathMr) {
            const std::size_t rows = std::min(kPathMr, mcur - ir);
            if constexpr (kAmx) {
              PackAPairRows(args.a.op, i0 + ir, rows, pc, kcur, ap + ir / kPathMr * a_panel);
            } else if constexpr (kNative) {
              PackAPairs(args.a.op, i0 + ir, rows, pc, kcur, ap + ir / kPathMr * a_panel);
            } else {
              PackA(args.a.op, i0 + ir, rows, pc, kcur, ap + ir / kPathMr * a_panel);
            }
          }
          auto tile = [&](std::size_t jp, std::size_t ir, const BElem* bp, std::size_t ldb) {
            const std::size_t j0 = jc + jp * kNr;
            const std::size_t cols = std::min(kNr, n - j0);
            const std::size_t rows = std::min(kPathMr, mcur - ir);
            const std::size_t i = i0 + ir;
            const AElem* a_tile = ap + ir / kPathMr * a_panel;
            auto run = [&](float* out, std::size_t ldo) {
              if constexpr (kAmx) {
                internal::AmxBf16Kernel(krows / 2, a_tile, krows / 2, bp, ldb, out, ldo, rows,
                                        !first);
              } else if constexpr (kNative) {
                native_kernels[rows - 1](krows / 2, a_tile, bp, ldb, out, ldo, !first);
              } else {
                kKernels[rows - 1](kcur, a_tile, bp, ldb, out, ldo, !first);
              }
            };
            float* const crow = c_is_acc ? static_cast<float*>(c.data) + i * c.row_stride + j0
                                         : nullptr;
            // The tile's outputs between C (FP32) and a 32-column tile t.
            const auto c_to_tile = [&](float* t) {
              for (std::size_t r = 0; r < rows; ++r) {
                std::memcpy(t + r * kNr, crow + r * c.row_stride, cols * sizeof(float));
              }
            };
            if (scratch != nullptr) {
              // Tile (jp of the NC block, row tile of the region), all 32
              // columns (past N the packed B columns are +0).
              float* const t = scratch + ((j0 - jc) / kNr * region_tiles +
                                          (i - region_i0) / kPathMr) * (kPathMr * kNr);
              if (p.accumulate && pc == 0) c_to_tile(t);  // The chains continue from C.
              run(t, kNr);
              if (last) Epilogue(c, p, i, i + rows, j0, j0 + cols, t, kNr);
            } else if (cols == kNr) {
              run(crow, c.row_stride);
            } else {
              HWY_ALIGN float t[kPathMr * kNr];
              if (!first) c_to_tile(t);
              run(t, kNr);
              for (std::size_t r = 0; r < rows; ++r) {
                std::memcpy(crow + r * c.row_stride, t + r * kNr, cols * sizeof(float));
              }
            }
          };
          if constexpr (kNative) {
            // MR rows of packed A stay in L1 while the B panels stream from
            // L2 (the order these kernels were tuned in).
            for (std::size_t ir = 0; ir < mcur; ir += kPathMr) {
              for (std::size_t jp = 0; jp < panels; ++jp) {
                std::size_t ldb;
                const BElem* bp = panel(jp, &ldb);
                tile(jp, ir, bp, ldb);
              }
            }
          } else {
            // Each B panel (KC x 32 floats, 24 KiB) stays in L1 while the
            // A block's micro-panels stream from L2 through it (BLIS's
            // order; faster on a Zen 3 than streaming B per A panel, see
            // docs/gemm.md).
            for (std::size_t jp = 0; jp < panels; ++jp) {
              std::size_t ldb;
              const BElem* bp = panel(jp, &ldb);
              for (std::size_t ir = 0; ir < mcur; ir += kPathMr) tile(jp, ir, bp, ldb);
            }
          }
          if (last && need_epilogue && scratch == nullptr) {  // C holds the partial sums.
            Epilogue(c, p, i0, i0 + mcur, jc, jc + ncur,
                     static_cast<const float*>(c.data) + i0 * c.row_stride + jc, c.row_stride);
          }
        }
      }
    }
    if constexpr (kAmx) internal::AmxBf16Release();  // Pool threads keep no tile state.
  });
}

}  // namespace gemm

// Entry points exported to gemm.cc. The caller has checked
// CpuHasAvx512Bf16() for kNativeDot and AmxBf16Usable() for kAmxTile.
inline void DenseGemm(const internal::DenseGemmArgs& args, internal::DensePath path) {
  switch (path) {
    case internal::DensePath::kFp32:
      gemm::BlockedGemm<internal::DensePath::kFp32>(args);
      break;
    case internal::DensePath::kNativeDot:
      gemm::BlockedGemm<internal::DensePath::kNativeDot>(args);
      break;
    case internal::DensePath::kAmxTile:
      gemm::BlockedGemm<internal::DensePath::kAmxTile>(args);
      break;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace trnmx
HWY_AFTER_NAMESPACE();

#endif  // include guard
