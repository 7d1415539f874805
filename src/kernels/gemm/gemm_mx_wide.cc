// MX x MX GEMM, wide path (gemm_mx_internal.h): pairings whose block sums
// exceed what FP64 holds exactly (E5M2 x E4M3, E5M2 x E5M2: up to 2^69
// units), summed in __int128 and rounded once per block, as ref::MxDot.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "internal/checks.h"
#include "kernels/gemm/gemm_mx_internal.h"

namespace trnmx::internal {
namespace {

void DecodeWideLine(const LineReader& r, std::size_t line, WideElement* out) {
  const std::size_t blocks = CeilDiv(r.k, kMxK);
  std::uint8_t codes[kMxK];
  for (std::size_t b = 0; b < blocks; ++b) {
    r.Codes(line, b, codes);
    DecodeWideBlock(*r.table, codes, out + b * kMxK);
  }
}

// 128-bit integers (GCC/Clang extension; __extension__ keeps -Wpedantic quiet).
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

// fl32(s * 2^e), one rounding: s rounded to 53 bits with round-to-odd (exact
// below 2^53), which a later round-to-nearest to <= 24 bits cannot tell from
// s itself; then an exact FP64 scaling and one FP64 -> FP32 conversion.
float RoundWide(Int128 s, int e) {
  if (s == 0) return 0.0f;
  const bool negative = s < 0;
  UInt128 u = negative ? UInt128(0) - static_cast<UInt128>(s) : static_cast<UInt128>(s);
  int shift = 0;
  while ((u >> 53) != 0) {
    const bool sticky = (u & 1u) != 0;
    u >>= 1;
    u |= sticky ? 1u : 0u;
    ++shift;
  }
  const double d = std::ldexp(static_cast<double>(static_cast<std::uint64_t>(u)), shift + e);
  const float f = static_cast<float>(d);
  return negative ? -f : f;
}

}  // namespace

void DecodeWideBlock(const FormatTable& table, const std::uint8_t* codes, WideElement* out) {
  for (std::size_t i = 0; i < kMxK; ++i) {
    const double v = table.value[codes[i]];
    WideElement& e = out[i];
    if (std::isnan(v)) {
      e = {0, WideSpecial::kNan};
    } else if (std::isinf(v)) {
      e = {0, v > 0 ? WideSpecial::kPosInf : WideSpecial::kNegInf};
    } else {
      e = {static_cast<std::int64_t>(v), WideSpecial::kFinite};
    }
  }
}

float WideBlock(const WideElement* x, const WideElement* w, std::int32_t ea, std::int32_t eb) {
  bool nan = ea == kMxScaleNanExponent || eb == kMxScaleNanExponent;
  bool pos_inf = false;
  bool neg_inf = false;
  Int128 s = 0;
  for (std::size_t i = 0; i < kMxK; ++i) {
    const WideElement a = x[i];
    const WideElement b = w[i];
    if (a.kind == WideSpecial::kFinite && b.kind == WideSpecial::kFinite) {
      s += static_cast<Int128>(a.v) * b.v;
      continue;
    }
    if (a.kind == WideSpecial::kNan || b.kind == WideSpecial::kNan) {
      nan = true;
      continue;
    }
    if ((a.kind == WideSpecial::kFinite && a.v == 0) ||
        (b.kind == WideSpecial::kFinite && b.v == 0)) {
      nan = true;  // Inf * 0.
      continue;
    }
    const bool an = a.kind == WideSpecial::kFinite ? a.v < 0 : a.kind == WideSpecial::kNegInf;
    const bool bn = b.kind == WideSpecial::kFinite ? b.v < 0 : b.kind == WideSpecial::kNegInf;
    (an != bn ? neg_inf : pos_inf) = true;
  }
  if (nan || (pos_inf && neg_inf)) return std::numeric_limits<float>::quiet_NaN();
  if (pos_inf) return std::numeric_limits<float>::infinity();
  if (neg_inf) return -std::numeric_limits<float>::infinity();
  return RoundWide(s, ea + eb);
}

Status RunWide(const LineReader& ra, const LineReader& rb, std::size_t m, std::size_t n,
               std::size_t k, const GemmOutput& c, const GemmParams& params, Executor& pool) {
  SerialExecutor serial;  // The scalar path is ~16x slower per multiply-add.
  Executor& executor =
      ExecutorFor(static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k),
                  static_cast<double>(kSerialMacs) / 16, pool, serial);
  constexpr std::size_t kTile = 32;
  const std::size_t blocks = CeilDiv(k, kMxK);
  const std::size_t kp = blocks * kMxK;
  const std::size_t row_tiles = CeilDiv(m, kTile);
  const std::size_t col_tiles = CeilDiv(n, kTile);
  executor.ParallelFor(row_tiles * col_tiles, [&](std::size_t task) {
    const std::size_t i0 = (task / col_tiles) * kTile;
    const std::size_t j0 = (task % col_tiles) * kTile;
    const std::size_t i1 = std::min(m, i0 + kTile);
    const std::size_t j1 = std::min(n, j0 + kTile);
    std::vector<WideElement> av((i1 - i0) * kp), bv((j1 - j0) * kp);
    std::vector<std::int32_t> eav((i1 - i0) * blocks), ebv((j1 - j0) * blocks);
    for (std::size_t i = i0; i < i1; ++i) {
      DecodeWideLine(ra, i, av.data() + (i - i0) * kp);
      for (std::size_t b = 0; b < blocks; ++b) eav[(i - i0) * blocks + b] = ra.Exponent(i, b);
    }
    for (std::size_t j = j0; j < j1; ++j) {
      DecodeWideLine(rb, j, bv.data() + (j - j0) * kp);
      for (std::size_t b = 0; b < blocks; ++b) ebv[(j - j0) * blocks + b] = rb.Exponent(j, b);
    }
    for (std::size_t i = i0; i < i1; ++i) {
      for (std::size_t j = j0; j < j1; ++j) {
        float acc =
            params.accumulate ? static_cast<const float*>(c.data)[i * c.row_stride + j] : 0.0f;
        for (std::size_t b = 0; b < blocks; ++b) {
          const float y =
              WideBlock(av.data() + (i - i0) * kp + b * kMxK, bv.data() + (j - j0) * kp + b * kMxK,
                        eav[(i - i0) * blocks + b], ebv[(j - j0) * blocks + b]);
          acc = acc + y;
        }
        StoreOutput(c, params, i, j, acc);
      }
    }
  });
  return OkStatus();
}

}  // namespace trnmx::internal
