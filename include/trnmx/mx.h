// MX tensors: matrices of MX blocks (formats.md sections 6, 8, 9; D12).
//
// Layout. A logical rows x cols matrix is cut into *lines* along the block
// axis, and each line into blocks of GetMxFormatInfo(f).block_size elements:
//
//   BlockAxis::kRows   a line is a row (r, 0..cols-1); lines stored row after row
//   BlockAxis::kCols   a line is a column (0..rows-1, c); lines stored column
//                      after column (so a K x N GEMM operand B with blocks
//                      along K is stored K-contiguous, like A's rows)
//
// Each line holds blocks_per_line = ceil(line_length / block_size) blocks.
// Element codes are packed per block (block_bytes bytes, mx_format.h) and the
// blocks of a line are contiguous; line i starts at codes + i * codes_stride.
// Scales are one byte per block (E8M0, or UE4M3 for NVFP4) in a separate
// array; line i's scales start at scales + i * scales_stride.
//
// Tail blocks: when line_length is not a multiple of block_size, the last
// block of each line holds the remaining elements followed by padding that
// reads as +0 (code 00). The padding does not take part in the scale
// (amax is over the real elements only) and dequantization never writes it.
//
//   line 0: | block 0 (block_bytes) | block 1 | ... | tail block + 00 pad |
//   scales: | s0 | s1 | ... | s_last |
//
// Example: a 3 x 70 MXFP4 tensor with BlockAxis::kRows has 3 lines of
// ceil(70 / 32) = 3 blocks; each line is 3 * 16 = 48 code bytes and 3 scale
// bytes; elements 64..69 of a row sit in its third block, followed by 26 +0
// codes. With BlockAxis::kCols it has 70 lines (columns) of 1 block each.
//
// This header also has the bulk API: an owning MxTensor, quantization from
// FP32 / BF16 matrices (QuantizeMx, QuantizeMxInto), DequantizeMx, the
// checks of views (CheckMxView), the GGML block_mxfp4 interchange
// (ExportGgmlMxfp4, ImportGgmlMxfp4) and the GGML-compatible codec
// (QuantizeGgmlMxfp4, DequantizeGgmlMxfp4: ggml's own bytes). Each function's contract is at its
// declaration. The bits of every element and scale are those of the scalar
// reference (mx_block.h, formats.md sections 6-8) for every thread count and
// SIMD target, in the default floating-point environment (round to nearest,
// FTZ and DAZ off), which the scaling multiply needs as the reference does
// (formats.md section 11).
//
//   std::vector<float> x(rows * cols);                       // row-major
//   trnmx::Fp32MatrixView src{x.data(), rows, cols, cols};
//   trnmx::StatusOr<trnmx::MxTensor> t =
//       trnmx::QuantizeMx(src, trnmx::MxFormat::kMxfp8E4M3, {.rule = trnmx::ScaleRule::kRceil});
//   if (!t.ok()) return t.status();
//   std::vector<float> y(rows * cols);
//   trnmx::Status st = trnmx::DequantizeMx(t->view(), {y.data(), rows, cols, cols});
#ifndef TRNMX_MX_H_
#define TRNMX_MX_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "trnmx/executor.h"
#include "trnmx/export.h"
#include "trnmx/formats/mx_block.h"
#include "trnmx/formats/mx_format.h"
#include "trnmx/formats/mx_pack.h"
#include "trnmx/formats/policy.h"
#include "trnmx/formats/scale_rule.h"
#include "trnmx/formats/stochastic.h"
#include "trnmx/formats/types.h"
#include "trnmx/mx_view.h"
#include "trnmx/options.h"
#include "trnmx/status.h"

namespace trnmx {

// ---------------------------------------------------------------------------
// Dense source and destination matrices.
// ---------------------------------------------------------------------------

// A rows x cols matrix in row-major order with `row_stride` elements from one
// row's start to the next (row_stride >= cols; it is not read when rows <= 1
// or cols == 0, and `data` may be null when rows * cols == 0).
template <class T>
struct StridedMatrix {
  T* data = nullptr;
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t row_stride = 0;
};
using Fp32MatrixView = StridedMatrix<const float>;
using Bf16MatrixView = StridedMatrix<const Bf16>;  // BF16 bits; value = bits << 16 as FP32.
using Fp32MatrixSpan = StridedMatrix<float>;

// ---------------------------------------------------------------------------
// Options and checks.
// ---------------------------------------------------------------------------

struct MxQuantizeOptions {
  // E8M0 scale rule (formats.md section 7). Must be defined for the element
  // format (IsScaleRuleDefinedFor). NVFP4 computes its own UE4M3 scales
  // (section 8) and accepts only the default kOcpFloor here.
  ScaleRule rule = ScaleRule::kOcpFloor;
  // Element conversion: rounding (RNE default; kStochastic gives source
  // element (r, c) the random word of index r * cols + c from
  // stochastic_source, seeded with stochastic_seed), overflow, NaN, FP32
  // subnormals, MXINT8 range (policy.h).
  EncodeOptions element{};
  // Blocks with NaN / Inf (formats.md section 6.3); kInfPassThrough is for
  // MXFP8 E5M2 only, NVFP4 accepts only kDefault (see QuantizeMxInto).
  SpecialBlock special = SpecialBlock::kDefault;
  // Direction of the blocks (see the top of this file).
  BlockAxis axis = BlockAxis::kRows;
  std::uint64_t stochastic_seed = 0;
  // kCounter: StochasticBits(stochastic_seed, index) (stochastic.h), any
  // element computed alone. kXorwow: the index-th word of
  // Xorwow::FromSeed(stochastic_seed) (xorwow.h, Trainium3's generator with
  // trnmx's documented seeding); the call generates rows x cols words up
  // front (4 bytes each) and reads them by index, so the bits still do not
  // depend on threads, axis or target.
  StochasticSource stochastic_source = StochasticSource::kCounter;
  // NVFP4 only: the tensor amax behind the per-tensor scale. Unset: the
  // largest |x| of the source, NaN ignored (+-Inf counts). Set: must be finite
  // and >= 0 (for example a calibrated amax; larger source values saturate).
  std::optional<float> nvfp4_global_amax{};
};

// Whether `rule` is accepted for `format`: the element format's rules
// (scale_rule.h IsScaleRuleDefined; MXINT8: kOcpFloor only; kNki not for
// FP6; kGgml E2M1 only), and for NVFP4 only kOcpFloor (ignored there).
TRNMX_API bool IsScaleRuleDefinedFor(MxFormat format, ScaleRule rule);
// Whether `special` is accepted for `format` (kInfPassThrough: MXFP8 E5M2 only;
// NVFP4: kDefault only).
TRNMX_API bool IsSpecialBlockDefinedFor(MxFormat format, SpecialBlock special);

// OK, or kInvalidArgument naming the bad field: a value outside its enum
// (format, rule, special, axis, rounding, overflow, NaN, subnormals, int8
// range), a rule or special-block policy not defined for `format`, or an
// nvfp4_global_amax that is negative, NaN or infinite.
//   CheckMxQuantizeOptions(MxFormat::kMxfp6E2M3, {.rule = ScaleRule::kNki})
//     -> INVALID_ARGUMENT: scale rule nki is not defined for mxfp6-e2m3 ...
TRNMX_API Status CheckMxQuantizeOptions(MxFormat format, const MxQuantizeOptions& options);

// NVFP4 per-tensor scales (formats.md section 8, TE core_nvfp4.cuh):
//   S_enc = fl32(448 * 6 / global_amax), then min(S_enc, FLT_MAX); 1.0 when
//   global_amax == 0 or S_enc == 0 (global_amax = +Inf), or global_amax is NaN.
//   decode scale S_dec = fl32(1 / S_enc)  (stored as MxTensorView::tensor_scale)
//   Nvfp4EncodeScale(2688.0f) == 1.0f; Nvfp4EncodeScale(0.0f) == 1.0f
TRNMX_API float Nvfp4EncodeScale(float global_amax);
TRNMX_API float Nvfp4DecodeScale(float encode_scale);

// Checks a view before anything reads it; OK or an error naming the problem:
//   - format or axis outside its enum; line_length so large that the block
//     count or the byte counts overflow size_t (kOutOfRange);
//   - codes or scales null while the tensor has blocks;
//   - codes_stride < shape.line_code_bytes() or scales_stride <
//     shape.line_scale_bytes() when there is more than one line (kInvalidArgument);
//   - the codes bytes [codes, codes + (lines - 1) * codes_stride +
//     line_code_bytes) or the scale bytes wrap around the address space, or
//     a line's codes overlap another line's scales;
//   - tensor_scale: NVFP4 needs a finite value > 0; MX formats need exactly 1.
// The buffers' sizes are not known to a view: the caller guarantees that the
// ranges above are allocated.
TRNMX_API Status CheckMxView(const MxTensorView& view);
// Same checks for a destination, except tensor_scale (an output there).
TRNMX_API Status CheckMxSpan(const MxTensorSpan& span);

// ---------------------------------------------------------------------------
// Owning tensor.
// ---------------------------------------------------------------------------

// An MX tensor in its own memory with the minimal strides
// (codes_stride = shape.line_code_bytes(), scales_stride = line_scale_bytes()).
// Copyable and movable; a moved-from tensor is empty (0 x 0).
class TRNMX_API MxTensor {
 public:
  MxTensor() = default;

  // Zero codes (+0), zero scales (E8M0 00 = 2^-127; UE4M3 00 = 0), tensor
  // scale 1. Errors: an invalid shape (as CheckMxView), kResourceExhausted
  // when the memory cannot be allocated.
  //   StatusOr<MxTensor> t = MxTensor::Create({MxFormat::kMxfp4, 4, 64, BlockAxis::kRows});
  static StatusOr<MxTensor> Create(const MxShape& shape);

  const MxShape& shape() const { return shape_; }
  MxFormat format() const { return shape_.format; }
  std::size_t rows() const { return shape_.rows; }
  std::size_t cols() const { return shape_.cols; }
  BlockAxis axis() const { return shape_.axis; }

  // num_lines * line_code_bytes packed code bytes, line after line.
  std::span<const std::uint8_t> codes() const { return codes_; }
  std::span<std::uint8_t> codes() { return codes_; }
  // num_lines * blocks_per_line scale codes, line after line.
  std::span<const std::uint8_t> scales() const { return scales_; }
  std::span<std::uint8_t> scales() { return scales_; }

  // NVFP4's decode scale S_dec (1 for MX formats). QuantizeMx sets it.
  float tensor_scale() const { return tensor_scale_; }
  void set_tensor_scale(float s) { tensor_scale_ = s; }

  MxTensorView view() const;
  MxTensorSpan span();

 private:
  MxShape shape_;
  std::vector<std::uint8_t> codes_;
  std::vector<std::uint8_t> scales_;
  float tensor_scale_ = 1.0f;
};

// ---------------------------------------------------------------------------
// Quantization and dequantization.
// ---------------------------------------------------------------------------

// Quantizes a FP32 (or BF16) matrix into `dst`, whose shape gives the format,
// the size (must equal src.rows x src.cols) and the block axis (must equal
// options.axis). Each line of dst (mx.h top) is cut into blocks; block
// values are the source elements in line order, and each block is quantized
// by the scalar reference: the scale rule on the block's amax, then every
// element converted with options.element (mx_block.h, formats.md 6-7); a tail
// block is padded with +0 codes. NVFP4: formats.md section 8, blocks of 16,
// UE4M3 scales from S_enc = Nvfp4EncodeScale(global amax); dst.tensor_scale
// is set to S_dec (MX formats: 1). BF16 sources convert exactly to FP32 first.
//
// Work is split over groups of lines and over segments of long lines, run
// through `executor` (nullptr: all on the calling thread, executor.h). The
// result is bit-identical for every executor, thread count and SIMD target.
//
// Errors (nothing is written, not even dst.tensor_scale): options invalid
// (CheckMxQuantizeOptions), axis or size mismatch, dst invalid (CheckMxSpan),
// src.data null or not aligned for its type while src has elements,
// src.row_stride < src.cols, a source extent that overflows, or any overlap
// between the source bytes, the codes bytes and the scale bytes.
//
//   MxTensorSpan d = t.span();              // t: MxTensor of the right shape
//   Status st = QuantizeMxInto(src, d);     // d.tensor_scale now set
//   t.set_tensor_scale(d.tensor_scale);
TRNMX_API Status QuantizeMxInto(Fp32MatrixView src, MxTensorSpan& dst,
                                const MxQuantizeOptions& options = {},
                                Executor* executor = nullptr);
TRNMX_API Status QuantizeMxInto(Bf16MatrixView src, MxTensorSpan& dst,
                                const MxQuantizeOptions& options = {},
                                Executor* executor = nullptr);

// Allocates an MxTensor of shape {format, src.rows, src.cols, options.axis}
// and quantizes into it (QuantizeMxInto, same errors).
TRNMX_API StatusOr<MxTensor> QuantizeMx(Fp32MatrixView src, MxFormat format,
                                        const MxQuantizeOptions& options = {},
                                        Executor* executor = nullptr);
TRNMX_API StatusOr<MxTensor> QuantizeMx(Bf16MatrixView src, MxFormat format,
                                        const MxQuantizeOptions& options = {},
                                        Executor* executor = nullptr);

// dst(r, c) = the value of element (r, c): decode(code) * 2^(scale - 127) as
// one FP32 multiply for MX formats (exact unless it overflows to +-Inf; scale
// FF gives NaN; MXINT8 n / 64), (E2M1 * UE4M3) * tensor_scale for NVFP4
// (UE4M3 7F/FF gives NaN). Tail padding is never written out. Runs through
// `executor` (nullptr: the calling thread, executor.h); bit-identical for
// every executor and thread count.
// Errors (nothing is written): CheckMxView(src), dst size differs from
// src.shape, dst.data null or misaligned while it has elements, dst.row_stride
// < dst.cols, or dst overlapping the codes or scales.
TRNMX_API Status DequantizeMx(const MxTensorView& src, Fp32MatrixSpan dst,
                              Executor* executor = nullptr);

// ---------------------------------------------------------------------------
// GGML MXFP4 interchange (llama.cpp block_mxfp4, formats.md section 9).
// ---------------------------------------------------------------------------
//
// A GGML MXFP4 row of cols values is cols / 32 blocks of 17 bytes:
//
//   byte 0        E8M0 scale code e (value 2^(e - 127) as in OCP)
//   byte 1 + j    qs[j] (j = 0..15): bits 3..0 = element j, bits 7..4 = element j + 16
//
// with E2M1 nibbles; rows follow each other without padding. GGML decodes
// e = FF as the finite 2^128 while trnmx reads it as NaN, so both directions
// refuse a block with scale FF.
inline constexpr std::size_t kGgmlMxfp4BlockBytes = 17;

// Bytes of a rows x cols GGML MXFP4 tensor (cols a multiple of 32); 0 when it
// would overflow size_t.
TRNMX_API std::size_t GgmlMxfp4Bytes(std::size_t rows, std::size_t cols);

// Writes the row-axis MXFP4 tensor `src` as GgmlMxfp4Bytes(rows, cols) bytes
// at the start of `out`. Errors (nothing written): CheckMxView(src), format not
// MXFP4, BlockAxis::kCols, cols not a multiple of 32, out too small, or a scale
// FF (the error names its row and block).
TRNMX_API Status ExportGgmlMxfp4(const MxTensorView& src, std::span<std::uint8_t> out);

// Reads rows x cols values of GGML MXFP4 (in.size() must be exactly
// GgmlMxfp4Bytes(rows, cols)) into a row-axis MXFP4 tensor; the exact inverse
// of ExportGgmlMxfp4. Errors: cols not a multiple of 32, size mismatch, a
// scale FF (naming its row and block).
//   std::vector<std::uint8_t> blob = ...;    // 17 bytes per 32 values
//   StatusOr<MxTensor> t = ImportGgmlMxfp4(blob, rows, cols);
TRNMX_API StatusOr<MxTensor> ImportGgmlMxfp4(std::span<const std::uint8_t> in, std::size_t rows,
                                             std::size_t cols);

// ---------------------------------------------------------------------------
// GGML-compatible MXFP4 codec (formats.md section 9, "GGML-compatible mode").
// ---------------------------------------------------------------------------
//
// QuantizeMx with ScaleRule::kGgml and ExportGgmlMxfp4 give OCP MX bits (RNE
// elements, NaN/Inf blocks as scale FF) in GGML's layout, which differ from
// the bytes ggml itself writes in the cases below. The two functions here
// instead give exactly what ggml's C reference gives, as built on x86-64
// with glibc (baseline ISA, as llama.cpp builds ggml-base; a build that fuses
// K * d - x into an FMA, such as GCC -march=haswell, differs in FD blocks):
// QuantizeGgmlMxfp4 the bytes of quantize_row_mxfp4_ref,
// DequantizeGgmlMxfp4 the floats of dequantize_row_mxfp4, row by row (both
// checked against llama.cpp's gguf-py 0.19.0, tools/golden/check_ggml_gguf.py).
//
// Per block of 32 values x[0..31] (K[n] = 2 * E2M1(n) for nibble n, with
// K[8] = +0: {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}):
//   amax  = max |x_i| over the non-NaN x_i (0 when there are none)
//   e     = 00 if amax == 0 or amax == +Inf, else
//           (floor(log2f(amax)) - 2 + 127) mod 256 (log2 rounded to FP32)
//   d     = 2^(e - 128) as FP32 (e = FF: 2^127)
//   n_i   = the lowest n minimizing |fl(K[n] * d) - x_i|, every operation in
//           FP32 round-to-nearest-even (a product may overflow to Inf; an
//           element whose errors are all NaN or Inf gets nibble 0)
//   decode: y = fl(K[n] * d)
// Differences from the default (OCP, trnmx) bits, every one of them:
//   1. Ties go to the smaller magnitude (RNE goes to the even code): 0.75 X
//      -> 0.5 X, 1.75 X -> 1.5 X, 3.5 X -> 3 X (and negated); RNE gives 1, 2, 4.
//   2. No -0: a negative value that rounds to zero gets nibble 0 (+0), not 8.
//   3. Nibble 8 decodes as +0 (OCP: -0).
//   4. Scale FF decodes as the finite 2^128 (OCP: NaN): K[n] * 2^127, so
//      nibble 1 gives 2^127 and larger magnitudes +-Inf.
//   5. amax in (0, 2^-125): the scale wraps around instead of clamping to 00
//      (C's float-to-uint8 conversion on x86-64): [2^-126, 2^-125) -> FF,
//      [2^-127, 2^-126) -> FE, ..., 2^-149 -> E8; every nibble is then 0, so
//      the block decodes to zeros (the OCP floor rule gives scale 00 and keeps
//      the elements).
//   6. amax just below 2^128, where log2f rounds to 128 (the top 44 finite
//      FP32 values; formats.md section 9): scale FD, and candidates whose
//      product overflows are never chosen, so values near 2^128 get K = 6
//      (E2M1 3.0, 1.5 * 2^127) where RNE writes 4.0, which decodes to Inf.
//   7. A block with +-Inf: scale 00 (d = 2^-128), not FF; +-Inf elements and
//      every element of magnitude above 2^-100 get nibble 0 (each error
//      rounds to |x|), smaller ones the nearest K * 2^-128 (2^-126 -> nibble
//      4, 2^-100 -> 7).
//   8. NaN elements are left out of amax and get nibble 0; the other elements
//      are quantized normally (OCP: the block is NaN, scale FF).
// Values above 6 X (amax / X can reach 8) saturate to 6 X as in the default.
//
// QuantizeGgmlMxfp4 writes GgmlMxfp4Bytes(src.rows, src.cols) bytes at the
// start of `out`. Errors (nothing written): src.cols not a multiple of 32,
// src.data null or misaligned while src has elements, src.row_stride <
// src.cols, a size that overflows, out too small, or out overlapping src.
// DequantizeGgmlMxfp4 reads in.size() == GgmlMxfp4Bytes(dst.rows, dst.cols)
// bytes; it accepts every byte value. Errors (nothing written): dst.cols not a
// multiple of 32, size mismatch, dst.data null or misaligned while dst has
// elements, dst.row_stride < dst.cols, or dst overlapping `in`.
//
//   std::vector<float> x(rows * cols);                   // cols % 32 == 0
//   std::vector<std::uint8_t> blob(GgmlMxfp4Bytes(rows, cols));
//   Status st = QuantizeGgmlMxfp4({x.data(), rows, cols, cols}, blob);
//   // blob == the bytes of ggml's quantize_row_mxfp4_ref on each row
//   std::vector<float> y(rows * cols);
//   st = DequantizeGgmlMxfp4(blob, {y.data(), rows, cols, cols});
TRNMX_API Status QuantizeGgmlMxfp4(Fp32MatrixView src, std::span<std::uint8_t> out);
TRNMX_API Status DequantizeGgmlMxfp4(std::span<const std::uint8_t> in, Fp32MatrixSpan dst);

}  // namespace trnmx

#endif  // TRNMX_MX_H_
