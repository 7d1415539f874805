// Internal: what gemm.cc hands to the per-target dense GEMM code
// (gemm-inl.h), and the target-independent layouts shared with
// PackedWeights.
//
// B panel layout (NR = kGemmPanelCols = 32 columns, whatever the SIMD target,
// so a PackedWeights made on one target gives the same bits on another):
//
//   FP32 panels   panel p = columns 32p .. 32p+31; K rows of 32 floats,
//                 row k at panel + k * 32; columns >= N hold +0.
//                 Prepacked: panel p at data + p * PanelStrideFp32(K); the
//                 extra cache line keeps the panels' rows at one k from all
//                 mapping to the same cache sets (K * 128 bytes is often a
//                 multiple of the L2 way size).
//   BF16 pairs    panel p; ceil(K/2) rows of 32 column pairs (64 BF16):
//                 element (k, 32p + c) at panel + (k/2) * 64 + 2c + (k%2);
//                 the row k = K of an odd K and columns >= N hold +0. This is
//                 the operand layout of VDPBF16PS (two K-consecutive values
//                 per 32-bit lane). Prepacked: panel p at data + p *
//                 PanelStrideBf16(K) (Kp * 32 + one cache line), Kp = K
//                 rounded up to even.
#ifndef TRNMX_SRC_KERNELS_GEMM_GEMM_DENSE_H_
#define TRNMX_SRC_KERNELS_GEMM_GEMM_DENSE_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "kernels/gemm/gemm_internal.h"
#include "trnmx/executor.h"
#include "trnmx/formats/codec.h"
#include "trnmx/gemm.h"
#include "trnmx/mx.h"

namespace trnmx::internal {

inline constexpr std::size_t kGemmPanelCols = 32;

// Elements from one prepacked panel to the next.
constexpr std::size_t PanelStrideFp32(std::size_t k) { return k * kGemmPanelCols + 16; }
constexpr std::size_t PanelStrideBf16(std::size_t k) {
  return (k + 1) / 2 * 2 * kGemmPanelCols + 32;
}

enum class DenseSourceKind : std::uint8_t {
  kOperand,        // A GemmOperand (FP32, BF16, FP8 or MX), read through its strides.
  kPanelsFp32,     // Prepacked FP32 panels (B only).
  kPairsBf16,      // Prepacked BF16 pair panels (B only).
};

struct DenseSource {
  DenseSourceKind kind = DenseSourceKind::kOperand;
  GemmOperand op;               // kOperand.
  const void* panels = nullptr; // kPanelsFp32: const float*; kPairsBf16: const std::uint16_t*.
};

struct DenseGemmArgs {
  std::size_t m = 0;
  std::size_t n = 0;
  std::size_t k = 0;
  DenseSource a;  // Always kOperand.
  DenseSource b;
  GemmOutput c;
  GemmParams params;
  Executor* executor = nullptr;  // Never null here.
  GemmBlocking blocking;
};

// The paths of the dense driver (gemm-inl.h): FP32 FMA kernels, or BF16 x
// BF16 through VDPBF16PS (Bf16Mode::kNativeDot) or TDPBF16PS
// (Bf16Mode::kAmxTile).
enum class DensePath : std::uint8_t { kFp32, kNativeDot, kAmxTile };

// K blocks of the path are multiples of this: a VDPBF16PS K pair, a
// TDPBF16PS step of 16 pairs (gemm.h: AMX steps start at multiples of 32).
constexpr std::size_t DenseKMultiple(DensePath path) {
  return path == DensePath::kFp32 ? 1 : path == DensePath::kNativeDot ? 2 : 32;
}

// The cache blocks of the dense driver for an m x n x k product with a
// register tile of mr rows and nr-column panels, B elements of
// `b_element_bytes`, K blocks a multiple of k_multiple (DenseKMultiple).
// Non-zero fields of `requested` override the defaults (then rounded as the
// kernels need). Plain C++, so the choice is the same whatever target runs it.
GemmBlocking ChooseDenseBlocking(std::size_t m, std::size_t n, std::size_t k, std::size_t mr,
                                 std::size_t nr, std::size_t b_element_bytes,
                                 std::size_t k_multiple, const GemmBlocking& requested);

// The FP32 values of the 256 codes of an FP8 format (DecodeBits: exact),
// the widening of a dense FP8 GEMM operand.
template <class Traits>
inline constexpr std::array<float, 256> kFp8Values = [] {
  std::array<float, 256> v{};
  for (std::uint32_t c = 0; c < 256; ++c) v[c] = DecodeBits<Traits>(c);
  return v;
}();

// The table of a dense FP8 operand's format; nullptr if `format` is not one
// of the FP8 formats a GEMM operand takes (gemm.h).
inline const float* Fp8Values(Format format) {
  switch (format) {
    case Format::kFp8E4M3: return kFp8Values<Fp8E4M3Traits>.data();
    case Format::kFp8E5M2: return kFp8Values<Fp8E5M2Traits>.data();
    case Format::kFp8E4M3Ieee: return kFp8Values<Fp8E4M3IeeeTraits>.data();
    default: return nullptr;
  }
}

// Bytes of one element of a dense operand (FP32, BF16 or FP8).
constexpr std::size_t DenseElementBytes(OperandType type) {
  return type == OperandType::kFp32 ? 4 : type == OperandType::kBf16 ? 2 : 1;
}

// Packs columns [j0, j0 + 32) of a K x N dense or MX operand into the FP32
// or BF16-pair panel layouts above (the whole K). Used by PackedWeights.
void PackPanelFp32(const GemmOperand& b, std::size_t j0, float* dst);
void PackPanelBf16Pairs(const GemmOperand& b, std::size_t j0, std::uint16_t* dst);

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_KERNELS_GEMM_GEMM_DENSE_H_
