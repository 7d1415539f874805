// Scalar reference of the MX x MX dot product (formats.md section 10) and of
// single MX element values: ref::MxDot, ref::MxElement (gemm_ref.h).
//
// Obviously-correct arithmetic, no floating point until the one rounding:
//   element value  = v * 2^q with v an integer (int64) and q the format's
//                    quantum exponent (the exponent of its smallest subnormal):
//                      E4M3 -9, E5M2 -16, E2M3 -3, E3M2 -4, E2M1 -1, MXINT8 -6
//   block sum      S = sum_i vA_i * vB_i, exact in __int128 (|S| < 2^69 for
//                    E5M2 x E5M2, the widest pairing), in units 2^(qA + qB)
//   y_j            = S * 2^(qA + qB + sa + sb - 254) rounded once to FP32
//                    (RNE, gradual underflow, overflow to +-Inf) by integer
//                    rounding of S to a 24-bit significand (RoundScaled)
//   result         acc = +0.0f; acc = fl32(acc + y_j) for j = 0, 1, ...
// Scale FF gives y_j = NaN. Element NaN/Inf codes (E4M3 7F/FF; E5M2 Inf and
// NaN; only from foreign data) follow IEEE: a NaN operand, Inf * 0 or Infs of
// both signs give NaN, otherwise the Infs' sign.
// Elements past the line length (the +0 padding of the tail block) are not
// read: they count as +0 whatever the buffer holds.
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "reference/gemm_ref.h"
#include "trnmx/formats/codec.h"
#include "trnmx/formats/e8m0.h"
#include "trnmx/formats/int8.h"
#include "trnmx/formats/mx_block.h"
#include "trnmx/formats/mx_format.h"
#include "trnmx/formats/visit.h"
#include "trnmx/mx.h"

namespace trnmx::ref {
namespace {

// 128-bit integers (GCC/Clang extension; __extension__ keeps -Wpedantic quiet).
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

// Code of element i (0..31) of a packed block (formats.md section 9).
std::uint32_t BlockCode(int element_bits, const std::uint8_t* block, std::size_t i) {
  if (element_bits == 8) return block[i];
  if (element_bits == 4) return (block[i / 2] >> (4 * (i % 2))) & 0xFu;
  // FP6: LSB-first bit stream, element i in bits 6i..6i+5.
  std::uint32_t bits = 0;
  for (int b = 0; b < 6; ++b) {
    const std::size_t pos = 6 * i + static_cast<std::size_t>(b);
    bits |= static_cast<std::uint32_t>((block[pos / 8] >> (pos % 8)) & 1u) << b;
  }
  return bits;
}

enum class Kind : std::uint8_t { kFinite, kNan, kPosInf, kNegInf };

struct Element {
  Kind kind = Kind::kFinite;
  std::int64_t v = 0;  // Value in units of 2^q (kFinite only).
};

// S.E.M decode to v * 2^q, q = 1 - bias - m, from the traits' fields.
template <class Traits>
Element DecodeFloatElement(std::uint32_t code) {
  constexpr int m = Traits::kMantissaBits;
  const bool negative = (code & Traits::kSignMask) != 0;
  const std::uint32_t magnitude = code & (Traits::kSignMask - 1);
  const std::uint32_t e = magnitude >> m;
  const std::uint32_t f = magnitude & Traits::kMantissaMask;
  if constexpr (Traits::kNonFinite == NonFinite::kIeee) {
    if (e == Traits::kExponentAllOnes) {
      if (f != 0) return {Kind::kNan, 0};
      return {negative ? Kind::kNegInf : Kind::kPosInf, 0};
    }
  } else if constexpr (Traits::kNonFinite == NonFinite::kNanAllOnes) {
    if (magnitude == Traits::kMaxMagnitudeCode + 1) return {Kind::kNan, 0};
  }
  // E >= 1: (2^m + f) * 2^(e - bias - m) = ((2^m + f) << (e - 1)) * 2^q.
  // E == 0: f * 2^(1 - bias - m) = f * 2^q.
  const std::int64_t v =
      e == 0 ? static_cast<std::int64_t>(f) : static_cast<std::int64_t>((1u << m) + f) << (e - 1);
  return {Kind::kFinite, negative ? -v : v};
}

// Quantum exponent q of the elements of an MX GEMM operand (0 for NVFP4,
// which is not one).
int FormatQuantum(MxFormat f) {
  return VisitMxFormat(f, [](auto tag) {
    using Tag = decltype(tag);
    if constexpr (!Tag::kIsOcpMx) {
      return 0;
    } else {
      return Tag::Traits::kQuantumExponent;
    }
  });
}

Element DecodeElement(MxFormat f, std::uint32_t code) {
  return VisitMxFormat(f, [code](auto tag) -> Element {
    using Tag = decltype(tag);
    if constexpr (!Tag::kIsOcpMx) {
      return {Kind::kNan, 0};
    } else if constexpr (detail::kIsMxInt8<typename Tag::Traits>) {
      return {Kind::kFinite, static_cast<std::int64_t>(static_cast<std::int8_t>(code & 0xFFu))};
    } else {
      return DecodeFloatElement<typename Tag::Traits>(code);
    }
  });
}

// fl32(s * 2^e): one round-to-nearest-even of the exact value, with FP32
// subnormals and overflow to +-Inf. Zero gives +0 (the sign of a zero y_j
// cannot reach the result: acc starts at +0).
float RoundScaled(Int128 s, int e) {
  if (s == 0) return 0.0f;
  const bool negative = s < 0;
  const UInt128 u = negative ? UInt128(0) - static_cast<UInt128>(s) : static_cast<UInt128>(s);
  const std::uint64_t hi = static_cast<std::uint64_t>(u >> 64);
  const std::uint64_t lo = static_cast<std::uint64_t>(u);
  const int length = hi != 0 ? 128 - std::countl_zero(hi) : 64 - std::countl_zero(lo);
  // |value| in [2^top, 2^(top + 1)); the result's quantum is 2^(q) with 24
  // significant bits for normals, 2^-149 below 2^-126.
  const int top = length - 1 + e;
  const int q = (top > -126 ? top : -126) - 23;
  const int shift = q - e;  // Bits of u below the result's quantum.
  std::uint64_t n = 0;      // Rounded significand, <= 2^24.
  if (shift <= 0) {
    n = static_cast<std::uint64_t>(u << -shift);
  } else if (shift < 128) {
    const UInt128 kept = u >> shift;
    const UInt128 rem = u - (kept << shift);
    const UInt128 half = UInt128(1) << (shift - 1);
    n = static_cast<std::uint64_t>(kept);
    if (rem > half || (rem == half && (n & 1u) != 0)) ++n;
  }  // else: u < 2^127 <= half, rounds to 0.
  // n * 2^q is an FP32 value (exact double) or >= 2^128, which the
  // conversion turns into Inf.
  const float f = static_cast<float>(std::ldexp(static_cast<double>(n), q));
  return negative ? -f : f;
}

// DecodeElement of every code of every MX format, built once: the reference
// decodes each element of both lines for every dot product, and the
// per-element format dispatch was half its time.
using DecodeTable = std::array<Element, 256>;
const DecodeTable& DecodeTableOf(MxFormat f) {
  static const auto tables = [] {
    std::array<DecodeTable, std::size(kMxFormatInfos)> t{};
    for (const MxFormatInfo& info : AllMxFormats()) {
      const std::uint32_t codes = 1u << info.element_bits;
      for (std::uint32_t c = 0; c < codes; ++c) {
        t[static_cast<std::size_t>(info.format)][c] = DecodeElement(info.format, c);
      }
    }
    return t;
  }();
  return tables[static_cast<std::size_t>(f)];
}

// The packed codes of block `block` of line `line` of `t`.
const std::uint8_t* LineBlock(const MxTensorView& t, std::size_t line, std::size_t block) {
  return t.codes + line * t.codes_stride + block * GetMxFormatInfo(t.shape.format).block_bytes;
}

// The element of `t` at position `index` of line `line` (index < line length).
std::uint32_t LineCode(const MxTensorView& t, std::size_t line, std::size_t index) {
  return BlockCode(GetMxFormatInfo(t.shape.format).element_bits,
                   LineBlock(t, line, index / kMxBlockSize), index % kMxBlockSize);
}

std::uint8_t LineScale(const MxTensorView& t, std::size_t line, std::size_t block) {
  return t.scales[line * t.scales_stride + block];
}

}  // namespace

float MxDot(const MxTensorView& a, std::size_t a_line, const MxTensorView& b, std::size_t b_line,
            float acc_in) {
  const std::size_t k = a.shape.line_length();
  const std::size_t blocks = (k + kMxBlockSize - 1) / kMxBlockSize;
  const int qa = FormatQuantum(a.shape.format);
  const int qb = FormatQuantum(b.shape.format);
  const DecodeTable& decode_a = DecodeTableOf(a.shape.format);
  const DecodeTable& decode_b = DecodeTableOf(b.shape.format);
  const int bits_a = GetMxFormatInfo(a.shape.format).element_bits;
  const int bits_b = GetMxFormatInfo(b.shape.format).element_bits;
  float acc = acc_in;
  for (std::size_t j = 0; j < blocks; ++j) {
    const std::uint8_t* block_a = LineBlock(a, a_line, j);
    const std::uint8_t* block_b = LineBlock(b, b_line, j);
    const std::uint32_t sa = LineScale(a, a_line, j);
    const std::uint32_t sb = LineScale(b, b_line, j);
    Int128 s = 0;
    bool nan = false;
    bool pos_inf = false;
    bool neg_inf = false;
    const std::size_t end = (j + 1) * kMxBlockSize < k ? (j + 1) * kMxBlockSize : k;
    for (std::size_t i = j * kMxBlockSize; i < end; ++i) {
      const Element x = decode_a[BlockCode(bits_a, block_a, i % kMxBlockSize)];
      const Element w = decode_b[BlockCode(bits_b, block_b, i % kMxBlockSize)];
      if (x.kind == Kind::kNan || w.kind == Kind::kNan) {
        nan = true;
        continue;
      }
      const bool x_inf = x.kind != Kind::kFinite;
      const bool w_inf = w.kind != Kind::kFinite;
      if (x_inf || w_inf) {
        // Inf times zero is NaN; otherwise an Inf with the product's sign.
        if ((!x_inf && x.v == 0) || (!w_inf && w.v == 0)) {
          nan = true;
          continue;
        }
        const bool x_neg = x_inf ? x.kind == Kind::kNegInf : x.v < 0;
        const bool w_neg = w_inf ? w.kind == Kind::kNegInf : w.v < 0;
        (x_neg != w_neg ? neg_inf : pos_inf) = true;
        continue;
      }
      s += static_cast<Int128>(x.v) * static_cast<Int128>(w.v);
    }
    float y = 0.0f;
    if (sa == kE8M0Nan || sb == kE8M0Nan || nan || (pos_inf && neg_inf)) {
      y = std::numeric_limits<float>::quiet_NaN();
    } else if (pos_inf || neg_inf) {
      y = pos_inf ? std::numeric_limits<float>::infinity()
                  : -std::numeric_limits<float>::infinity();
    } else {
      y = RoundScaled(s, qa + qb + static_cast<int>(sa) + static_cast<int>(sb) - 254);
    }
    acc = acc + y;  // fl32: -ffp-contract=off, FP32 addition.
  }
  return acc;
}

float MxElement(const MxTensorView& t, std::size_t row, std::size_t col) {
  const bool by_rows = t.shape.axis == BlockAxis::kRows;
  const std::size_t line = by_rows ? row : col;
  const std::size_t index = by_rows ? col : row;
  const std::uint32_t code = LineCode(t, line, index);
  const std::uint8_t scale = LineScale(t, line, index / kMxBlockSize);
  if (!IsOcpMxFormat(t.shape.format)) {
    return std::numeric_limits<float>::quiet_NaN();  // NVFP4: not a GEMM operand.
  }
  const float value = VisitMxFormat(t.shape.format, [code](auto tag) {
    return detail::DecodeMxElement<typename decltype(tag)::Traits>(code);
  });
  // Both factors exact in FP32 (scale 00 is the subnormal 2^-127): one rounding.
  return value * DecodeE8M0(scale);
}

}  // namespace trnmx::ref
