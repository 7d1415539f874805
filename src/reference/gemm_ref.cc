// Scalar reference GEMM (gemm_ref.h): one plain loop per output, written to
// read like the contract in include/trnmx/gemm.h.
#include "reference/gemm_ref.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "formats/mx_decode.h"
#include "internal/status_macros.h"
#include "kernels/gemm/gemm_internal.h"
#include "trnmx/formats/codec.h"

namespace trnmx::ref {
namespace {

float Bf16Value(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

// An FP8 code of a dense operand's format, decoded by the scalar codec.
float Fp8Value(Format format, std::uint8_t code) {
  switch (format) {
    case Format::kFp8E4M3: return DecodeBits<Fp8E4M3Traits>(code);
    case Format::kFp8E5M2: return DecodeBits<Fp8E5M2Traits>(code);
    case Format::kFp8E4M3Ieee: return DecodeBits<Fp8E4M3IeeeTraits>(code);
    default: return std::bit_cast<float>(0x7FC00000u);  // Rejected by the validation.
  }
}

// Element (i, j) of an operand as FP32: exact for FP32, BF16 and FP8; MX
// decoded as the contract says (element times scale, one rounding).
float OperandValue(const GemmOperand& op, std::size_t i, std::size_t j) {
  switch (op.type) {
    case OperandType::kFp32:
      return static_cast<const float*>(op.data)[i * op.row_stride + j * op.col_stride];
    case OperandType::kBf16:
      return Bf16Value(static_cast<const std::uint16_t*>(op.data)[i * op.row_stride + j * op.col_stride]);
    case OperandType::kMx:
      return internal::MxMatrixElement(op.mx, i, j);
    case OperandType::kFp8:
      return Fp8Value(op.fp8_format, static_cast<const std::uint8_t*>(
                                         op.data)[i * op.row_stride + j * op.col_stride]);
  }
  return 0.0f;
}

std::uint16_t Bf16Bits(const GemmOperand& op, std::size_t i, std::size_t j) {
  return static_cast<const std::uint16_t*>(op.data)[i * op.row_stride + j * op.col_stride];
}

float ReadOutput(const GemmOutput& c, std::size_t i, std::size_t j) {
  const std::size_t idx = i * c.row_stride + j * c.col_stride;
  if (c.type == OutputType::kFp32) return static_cast<const float*>(c.data)[idx];
  return Bf16Value(static_cast<const std::uint16_t*>(c.data)[idx]);
}

void WriteOutput(const GemmOutput& c, std::size_t i, std::size_t j, float r) {
  const std::size_t idx = i * c.row_stride + j * c.col_stride;
  if (c.type == OutputType::kFp32) {
    static_cast<float*>(c.data)[idx] = r;
  } else {
    static_cast<std::uint16_t*>(c.data)[idx] = Fp32ToBf16Rne(r).bits;
  }
}

}  // namespace

Status Gemm(const GemmOperand& a, const GemmOperand& b, const GemmOutput& c,
            const GemmParams& params) {
  TRNMX_RETURN_IF_ERROR(internal::ValidateGemm(a, b, c, params, /*check_cpu=*/false));
  const std::size_t m = c.rows;
  const std::size_t n = c.cols;
  const std::size_t k_len = a.cols;
  const bool mx_pair = a.type == OperandType::kMx && b.type == OperandType::kMx;
  // MxGemmMode::kViaBf16: the values as BF16 when every one of A and B is
  // its own BF16; else the exact MX x MX contract.
  const auto all_bf16 = [&](const GemmOperand& x) {
    for (std::size_t i = 0; i < x.rows; ++i) {
      for (std::size_t j = 0; j < x.cols; ++j) {
        if (!internal::MxValueIsBf16(std::bit_cast<std::uint32_t>(OperandValue(x, i, j)))) {
          return false;
        }
      }
    }
    return true;
  };
  const bool folded =
      mx_pair && params.mx_mode == MxGemmMode::kViaBf16 && all_bf16(a) && all_bf16(b);
  const bool mx_mx = mx_pair && !folded;
  const bool native = params.bf16_mode == Bf16Mode::kNativeDot && !mx_mx;
  const bool amx = params.bf16_mode == Bf16Mode::kAmxTile && !mx_mx;
  const auto bf16_bits = [&](const GemmOperand& x, std::size_t i, std::size_t j) {
    return folded ? static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(OperandValue(x, i, j)) >> 16)
                  : Bf16Bits(x, i, j);
  };
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      float acc = params.accumulate ? ReadOutput(c, i, j) : 0.0f;
      if (mx_mx) {
        acc = MxDot(a.mx, i, b.mx, j, acc);
      } else if (native) {
        for (std::size_t k = 0; k < k_len; k += 2) {
          const std::uint16_t a0 = bf16_bits(a, i, k);
          const std::uint16_t b0 = bf16_bits(b, k, j);
          const std::uint16_t a1 = k + 1 < k_len ? bf16_bits(a, i, k + 1) : 0;
          const std::uint16_t b1 = k + 1 < k_len ? bf16_bits(b, k + 1, j) : 0;
          acc = Vdpbf16psStep(acc, a0, a1, b0, b1);
        }
      } else if (amx) {
        // One TDPBF16PS per 32 elements of K, from k = 0.
        for (std::size_t k0 = 0; k0 < k_len; k0 += 32) {
          const std::size_t count = std::min<std::size_t>(32, k_len - k0);
          std::uint16_t av[32], bv[32];
          for (std::size_t t = 0; t < count; ++t) {
            av[t] = bf16_bits(a, i, k0 + t);
            bv[t] = bf16_bits(b, k0 + t, j);
          }
          acc = Tdpbf16psLane(acc, av, bv, count);
        }
      } else {
        for (std::size_t k = 0; k < k_len; ++k) {
          acc = std::fma(OperandValue(a, i, k), OperandValue(b, k, j), acc);
        }
      }
      float r = acc;
      if (params.alpha != 1.0f) r = params.alpha * r;
      if (params.beta != 0.0f) r = r + params.beta * ReadOutput(c, i, j);
      if (params.bias != nullptr) r = r + params.bias[j];
      WriteOutput(c, i, j, r);
    }
  }
  return OkStatus();
}

namespace {

// Denormal FP32 -> zero of the same sign (DAZ on an input, FTZ on a result).
float FlushDenormal(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  if ((bits & 0x7F800000u) == 0) return std::bit_cast<float>(bits & 0x80000000u);
  return x;
}

}  // namespace

float Vdpbf16psStep(float acc, std::uint16_t a0, std::uint16_t a1, std::uint16_t b0,
                    std::uint16_t b1) {
  // Intel SDM VDPBF16PS: the odd pair first, then the even pair; each step
  // adds an exact product with one RNE rounding; DAZ inputs, FTZ results.
  float r = FlushDenormal(acc);
  r = FlushDenormal(std::fma(FlushDenormal(Bf16Value(a1)), FlushDenormal(Bf16Value(b1)), r));
  r = FlushDenormal(std::fma(FlushDenormal(Bf16Value(a0)), FlushDenormal(Bf16Value(b0)), r));
  return r;
}

float Tdpbf16psLane(float acc, const std::uint16_t* a, const std::uint16_t* b,
                    std::size_t count) {
  // Measured on the instruction (Sapphire Rapids-class CPU; gemm.h): two
  // FP32 accumulators from +0 for the even and the odd pair members, each
  // step an exact product plus one RNE rounding; then their sum, rounded,
  // added to acc, rounded; DAZ inputs, FTZ results throughout.
  float even = 0.0f;
  float odd = 0.0f;
  for (std::size_t i = 0; i < count; ++i) {
    float& chain = i % 2 == 0 ? even : odd;
    chain = FlushDenormal(
        std::fma(FlushDenormal(Bf16Value(a[i])), FlushDenormal(Bf16Value(b[i])), chain));
  }
  return FlushDenormal(FlushDenormal(acc) + FlushDenormal(even + odd));
}

}  // namespace trnmx::ref
