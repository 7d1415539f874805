// Test helpers for GEMM: operands in every layout (strides, transposes,
// misaligned starts), MX operands with random codes (MX operands quantized
// by the scalar reference: support/mx_test_tensor.h), and NaN-aware output
// comparison.
#ifndef TRNMX_TESTS_KERNELS_GEMM_TEST_UTIL_H_
#define TRNMX_TESTS_KERNELS_GEMM_TEST_UTIL_H_

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "support/mx_test_tensor.h"
#include "support/random.h"
#include "trnmx/formats/codec.h"
#include "trnmx/formats/mx_block.h"
#include "trnmx/formats/visit.h"
#include "trnmx/gemm.h"
#include "trnmx/mx.h"

namespace trnmx::testing {

// A random FP32 with a 24-bit significand and exponent in [-e, e]: sums of
// such products round, so a wrong summation order shows in the bits.
inline float RandomFloat(Rng& rng, int e = 12) {
  std::uniform_int_distribution<std::uint32_t> mant(0, (1u << 23) - 1);
  std::uniform_int_distribution<int> exp(-e, e);
  const std::uint32_t bits = (static_cast<std::uint32_t>(exp(rng) + 127) << 23) | mant(rng) |
                             ((rng() & 1) ? 0x80000000u : 0u);
  return std::bit_cast<float>(bits);
}

inline std::uint16_t RandomBf16Bits(Rng& rng, int e = 12) {
  return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(RandomFloat(rng, e)) >> 16);
}

// Random codes and scales in [scale_lo, scale_hi] (may include FF), tail
// padding codes 00 as the layout requires.
inline MxTestTensor RandomMx(MxFormat f, BlockAxis axis, std::size_t rows, std::size_t cols,
                             Rng& rng, unsigned scale_lo, unsigned scale_hi) {
  MxTestTensor t = AllocateMxTestTensor({f, rows, cols, axis});
  const MxFormatInfo& info = GetMxFormatInfo(f);
  const std::size_t len = t.shape.line_length();
  std::uniform_int_distribution<unsigned> sd(scale_lo, scale_hi);
  for (std::size_t l = 0; l < t.shape.num_lines(); ++l) {
    for (std::size_t b = 0; b < t.shape.blocks_per_line(); ++b) {
      std::uint8_t codes[32] = {};
      for (std::size_t i = 0; i < 32 && b * 32 + i < len; ++i) {
        codes[i] = static_cast<std::uint8_t>(rng() & ((1u << info.element_bits) - 1));
      }
      PackBlockCodes(info.element_bits, codes, t.line_codes(l) + b * info.block_bytes);
      t.line_scales(l)[b] = static_cast<std::uint8_t>(sd(rng));
    }
  }
  return t;
}

// A GEMM operand and the memory behind it.
enum class Kind { kFp32, kBf16, kMx, kFp8 };

struct TestOperand {
  std::vector<float> f32;
  std::vector<std::uint16_t> b16;
  std::vector<std::uint8_t> b8;  // Dense FP8 codes.
  MxTestTensor mx;
  GemmOperand op;
};

// Dense: value(i, j) stored row-major (or transposed: column-major) with
// `pad` extra elements per line and the data starting `offset` elements in.
// FP8 (codes of `fp8_format`): the scalar codec's saturating encoding, +-Inf
// kept as the Inf code where the format has one.
inline TestOperand MakeDense(Kind kind, std::size_t rows, std::size_t cols, bool transposed,
                             std::size_t pad, std::size_t offset,
                             const std::function<float(std::size_t, std::size_t)>& value,
                             Format fp8_format = Format::kFp8E4M3Ieee) {
  TestOperand t;
  const std::size_t ld = (transposed ? rows : cols) + pad;
  const std::size_t lines = transposed ? cols : rows;
  const std::size_t size = offset + lines * ld + 1;
  const std::size_t rs = transposed ? 1 : ld;
  const std::size_t cs = transposed ? ld : 1;
  if (kind == Kind::kFp32) {
    t.f32.assign(size, std::bit_cast<float>(0x7FA00001u));  // Signalling NaN: must not be read.
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < cols; ++j) t.f32[offset + i * rs + j * cs] = value(i, j);
    }
    t.op = {OperandType::kFp32, t.f32.data() + offset, rows, cols, rs, cs, {}};
  } else if (kind == Kind::kFp8) {
    t.b8.assign(size, 0x7F);  // A NaN code in every FP8 format: must not be read.
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < cols; ++j) {
        const float v = value(i, j);
        const EncodeOptions o{.overflow = std::isinf(v) ? Overflow::kNonSat : Overflow::kSatFinite};
        std::uint32_t code = 0;
        VisitFloatFormat(fp8_format, [&](auto c) {
          code = EncodeWithFlags<typename decltype(c)::Traits>(v, o).code;
        });
        t.b8[offset + i * rs + j * cs] = static_cast<std::uint8_t>(code);
      }
    }
    t.op = {OperandType::kFp8, t.b8.data() + offset, rows, cols, rs, cs, {}, fp8_format};
  } else {
    t.b16.assign(size, 0x7FA1);
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < cols; ++j) {
        t.b16[offset + i * rs + j * cs] =
            static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(value(i, j)) >> 16);
      }
    }
    t.op = {OperandType::kBf16, t.b16.data() + offset, rows, cols, rs, cs, {}};
  }
  return t;
}

inline TestOperand FromMx(MxTestTensor mx) {
  TestOperand t;
  t.mx = std::move(mx);
  t.op = GemmOperand::Mx(t.mx.view());
  return t;
}

// An output buffer (FP32 or BF16 bits in a uint32 vector for simplicity).
struct TestOutput {
  std::vector<float> f32;
  std::vector<std::uint16_t> b16;
  GemmOutput out;
};

inline TestOutput MakeOutput(OutputType type, std::size_t rows, std::size_t cols, bool transposed,
                             std::size_t pad, std::size_t offset, Rng& rng, bool nan_fill) {
  TestOutput t;
  const std::size_t ld = (transposed ? rows : cols) + pad;
  const std::size_t lines = transposed ? cols : rows;
  const std::size_t size = offset + lines * ld + 1;
  const std::size_t rs = transposed ? 1 : ld;
  const std::size_t cs = transposed ? ld : 1;
  if (type == OutputType::kFp32) {
    t.f32.resize(size);
    for (float& x : t.f32) x = nan_fill ? std::bit_cast<float>(0x7FC12345u) : RandomFloat(rng, 4);
    t.out = {OutputType::kFp32, t.f32.data() + offset, rows, cols, rs, cs};
  } else {
    t.b16.resize(size);
    for (auto& x : t.b16) x = nan_fill ? 0x7FC1 : RandomBf16Bits(rng, 4);
    t.out = {OutputType::kBf16, t.b16.data() + offset, rows, cols, rs, cs};
  }
  return t;
}

inline TestOutput CopyOutput(const TestOutput& o) {
  TestOutput t = o;
  if (o.out.type == OutputType::kFp32) {
    t.out.data = t.f32.data() + (static_cast<const float*>(o.out.data) - o.f32.data());
  } else {
    t.out.data = t.b16.data() + (static_cast<const std::uint16_t*>(o.out.data) - o.b16.data());
  }
  return t;
}

// Empty when equal; NaN equals NaN (payloads are not part of the contract),
// everything else (padding included) must match bit for bit.
inline std::string CompareOutputs(const TestOutput& got, const TestOutput& want) {
  if (got.out.type == OutputType::kFp32) {
    for (std::size_t i = 0; i < got.f32.size(); ++i) {
      const std::uint32_t g = std::bit_cast<std::uint32_t>(got.f32[i]);
      const std::uint32_t w = std::bit_cast<std::uint32_t>(want.f32[i]);
      if (g == w || (std::isnan(got.f32[i]) && std::isnan(want.f32[i]))) continue;
      char buf[96];
      std::snprintf(buf, sizeof(buf), "buffer index %zu: got %08x (%g), want %08x (%g)", i, g,
                    got.f32[i], w, want.f32[i]);
      return buf;
    }
  } else {
    for (std::size_t i = 0; i < got.b16.size(); ++i) {
      const std::uint16_t g = got.b16[i];
      const std::uint16_t w = want.b16[i];
      const bool gn = (g & 0x7FFF) > 0x7F80;
      const bool wn = (w & 0x7FFF) > 0x7F80;
      if (g == w || (gn && wn)) continue;
      char buf[96];
      std::snprintf(buf, sizeof(buf), "buffer index %zu: got %04x, want %04x", i, g, w);
      return buf;
    }
  }
  return {};
}

}  // namespace trnmx::testing

#endif  // TRNMX_TESTS_KERNELS_GEMM_TEST_UTIL_H_
