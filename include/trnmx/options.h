// Every option enum of the public API in one small header with no
// dependencies, so that a declaration that takes an option does not pull in
// the code behind it (the constexpr codecs, the MX reference). The meaning
// of each value is documented here; the functions that use them are in
// formats/ (codec.h, e8m0.h, scale_rule.h, mx_block.h), mx.h and gemm.h.
#ifndef TRNMX_OPTIONS_H_
#define TRNMX_OPTIONS_H_

#include <cstdint>

namespace trnmx {

// ---------------------------------------------------------------------------
// Element conversions (formats/policy.h EncodeOptions, formats.md section 3).
// ---------------------------------------------------------------------------

enum class Rounding : std::uint8_t {
  // Round to nearest, ties to even, with an exact sticky bit over all 24
  // significand bits of the FP32 input (default).
  kNearestEven,
  // Round to nearest, ties away from zero (microxcaling "nearest").
  kTiesAway,
  // Truncate the magnitude. Finite overflow then gives +-MAX under every
  // overflow policy (IEEE 754 section 4.3.2 for round-toward-zero).
  kTowardZero,
  // Stochastic: with `frac32` the discarded fraction of the magnitude (in
  // units of the target's quantum) truncated to 32 bits, the magnitude rounds
  // away from zero iff frac32 + random_bits >= 2^32. With uniform random bits
  // the probability of rounding up is frac32 / 2^32. Exact values never move.
  kStochastic,
};

// Where the random words of Rounding::kStochastic come from in MX
// quantization (mx.h MxQuantizeOptions::stochastic_source).
enum class StochasticSource : std::uint8_t {
  kCounter,  // StochasticBits(seed, r * cols + c): counter-based (stochastic.h).
  kXorwow,   // Word r * cols + c of Xorwow::FromSeed(seed) (xorwow.h).
};

// What FP32 subnormal inputs (exponent field 0) are (formats.md D5).
enum class Subnormals : std::uint8_t {
  kKeep,   // Converted exactly (default).
  kFlush,  // Replaced by a zero of the same sign first (DAZ; `kDaz`).
};

// The range of MXINT8 elements (formats.md D9).
enum class Int8Range : std::uint8_t {
  kSymmetric,      // Clamp to [-127, 127] (default).
  kAllowMinus128,  // Clamp to [-128, 127].
};

// What an input NaN becomes (formats.md D3, D4, D11).
enum class NanPolicy : std::uint8_t {
  // The format's own default, `Traits::kDefaultNan`.
  kFormatDefault,
  // Sign kept, quiet bit set, top payload bits kept (BF16 and FP16 default:
  // (x >> 16) | 0x0040 for BF16). Formats without payload room behave as
  // kCanonical.
  kQuietPayload,
  // Sign kept, canonical quiet NaN: E4M3 7F/FF, E4M3 IEEE-style 7C/FC, E5M2
  // 7E/FE, BF16 7FC0/FFC0 (Eigen, ml_dtypes), FP16 7E00/FE00. Formats without
  // NaN give +0.
  kCanonical,
  // Formats without NaN: +0 (code 0); the status reports kInvalid
  // (FP6/FP4 default, formats.md D4). Formats with NaN behave as kCanonical.
  kZero,
  // ml_dtypes' astype: formats without NaN map +NaN to the negative-zero code
  // (FP6 20, FP4 8) and -NaN to 0; formats with NaN behave as kCanonical.
  kMlDtypesNaN,
};

// What a finite value that rounds above the maximum normal, or an infinite
// input, becomes (formats.md D2, section 3.2).
enum class Overflow : std::uint8_t {
  // The format's own default, `Traits::kDefaultOverflow`.
  kFormatDefault,
  // Saturate finite overflow and +-Inf to +-MAX (FP8/FP6/FP4 default; E4M3
  // IEEE-style: +-240, as Trainium's NeuronCore-v2/v3 do).
  kSatFinite,
  // Non-saturating: overflow and +-Inf give Inf where the format has Inf
  // (E5M2, E4M3 IEEE-style, FP16, BF16: the IEEE behaviour and the BF16/FP16
  // default), NaN where it only has NaN (E4M3), +-MAX where it has neither
  // (FP6, FP4).
  kNonSat,
  // ml_dtypes' C++ ConvertFrom<kSaturate=true>: finite overflow saturates to
  // +-MAX, +-Inf inputs behave as kNonSat.
  kMlDtypesSat,
};
// The OFP8 name of kNonSat (formats.md uses both spellings).
inline constexpr Overflow kOfp8NonSat = Overflow::kNonSat;

// ---------------------------------------------------------------------------
// E8M0 scale conversions (formats/e8m0.h).
// ---------------------------------------------------------------------------

// Rounding of a float to a power of two.
enum class E8M0Rounding : std::uint8_t {
  kDown,           // floor(log2 x): the exponent field.
  kUp,             // ceil(log2 x) (PTX cvt.rp.satfinite.ue8m0x2.f32).
  kNearestTiesUp,  // mantissa >= 1.5 rounds up (PyTorch, ml_dtypes).
};

enum class E8M0Saturation : std::uint8_t {
  kSaturate,  // A result above 2^127 (or +Inf) gives FE.
  kNaN,       // A result above 2^127 (or +Inf) gives FF.
};

// ---------------------------------------------------------------------------
// MX blocks and tensors (formats/scale_rule.h, formats/mx_block.h, mx.h).
// ---------------------------------------------------------------------------

// MX block scale rule (formats.md section 7; scale_rule.h defines each).
enum class ScaleRule : std::uint8_t {
  kOcpFloor,  // Default (D7).
  kCeil,
  kEven,
  kRceil,
  kNki,
  kGgml,
  kTosa,
};

// Treatment of blocks containing NaN or +-Inf (formats.md section 6.3, D8).
enum class SpecialBlock : std::uint8_t {
  kDefault,         // NaN or +-Inf -> scale FF, elements 00.
  kSatFiniteBlock,  // NaN -> FF/00; +-Inf without NaN -> scale FE, saturated elements.
  kInfPassThrough,  // E5M2 only. NaN -> FF/00; +-Inf kept as 7C/FC, amax over finite values.
};

// Which way an MX tensor's blocks run (mx.h).
enum class BlockAxis : std::uint8_t {
  kRows,  // Blocks run along rows; row-major storage of lines.
  kCols,  // Blocks run down columns; column-major storage of lines.
};

// ---------------------------------------------------------------------------
// GEMM (gemm.h).
// ---------------------------------------------------------------------------

// GEMM operand and output element types and the BF16 mode (gemm.h). kFp8:
// dense FP8 codes without block scales (GemmOperand::fp8_format says which
// FP8 encoding); a GEMM operand only (attention and MoE routing take kFp32,
// kBf16 and kMx).
enum class OperandType : std::uint8_t { kFp32, kBf16, kMx, kFp8 };
enum class OutputType : std::uint8_t { kFp32, kBf16 };

enum class Bf16Mode : std::uint8_t {
  kExactFma,   // Default: FP32 FMA chain in K order (bit-identical everywhere).
  kNativeDot,  // Opt-in: AVX512_BF16 VDPBF16PS semantics (see above).
  kAmxTile,    // Opt-in: AMX-BF16 TDPBF16PS semantics (gemm.h).
};

// MX x MX GEMM contract (gemm.h).
enum class MxGemmMode : std::uint8_t {
  kExact,    // Default: exact 32-block sums, scaled, added in block order.
  kViaBf16,  // Opt-in: both operands' values as BF16, then the Bf16Mode contract.
};

}  // namespace trnmx

#endif  // TRNMX_OPTIONS_H_
