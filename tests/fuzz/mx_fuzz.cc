// Fuzz harnesses of the MX API (mx.h): GGML MXFP4 blobs, and quantization
// driven with fuzzer-chosen formats, options, shapes, strides and values.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "trnmx/executor.h"
#include "trnmx/mx.h"

namespace trnmx::fuzz {
namespace {

bool SameTensor(const MxTensor& a, const MxTensor& b) {
  return a.codes().size() == b.codes().size() && a.scales().size() == b.scales().size() &&
         std::equal(a.codes().begin(), a.codes().end(), b.codes().begin()) &&
         std::equal(a.scales().begin(), a.scales().end(), b.scales().begin()) &&
         std::bit_cast<std::uint32_t>(a.tensor_scale()) ==
             std::bit_cast<std::uint32_t>(b.tensor_scale());
}

// Both failed with the same code, or both succeeded with the same bytes.
void CheckSameOutcome(const StatusOr<MxTensor>& a, const StatusOr<MxTensor>& b) {
  TRNMX_FUZZ_CHECK(a.ok() == b.ok());
  if (!a.ok()) {
    TRNMX_FUZZ_CHECK(a.status().code() == b.status().code());
    return;
  }
  TRNMX_FUZZ_CHECK(SameTensor(*a, *b));
}

Executor& TwoThreads() {
  static ThreadPoolExecutor pool(2);
  return pool;
}

}  // namespace

// [rows, cols choice][blob]: ImportGgmlMxfp4 of the blob; a blob that imports
// exports back to the same bytes (the documented exact inverse) and
// dequantizes. The GGML-compatible decoder takes every blob of the right size
// (scale FF too) and never gives NaN; the GGML-compatible encoder takes its
// output back; where the import succeeds, both decoders give equal values
// (they differ only in the sign of nibble 8's zero).
int FuzzGgmlMxfp4(const std::uint8_t* data, std::size_t size) {
  ByteReader in(data, size);
  const std::size_t rows = in.TakeBelow(9);
  const std::size_t cols = in.Take<std::uint8_t>() < 224 ? 32 * in.TakeBelow(5) : in.TakeBelow(100);
  const std::span<const std::uint8_t> blob = in.Rest();
  const bool whole = cols % 32 == 0 && blob.size() == GgmlMxfp4Bytes(rows, cols);
  std::vector<float> compat(rows * cols + 1, 0.0f);
  const Status decoded = DequantizeGgmlMxfp4(blob, {compat.data(), rows, cols, cols});
  TRNMX_FUZZ_CHECK(decoded.ok() == whole);
  if (whole) {
    TRNMX_FUZZ_CHECK(std::none_of(compat.begin(), compat.end(), [](float v) { return v != v; }));
    std::vector<std::uint8_t> again(blob.size());
    TRNMX_FUZZ_CHECK(QuantizeGgmlMxfp4({compat.data(), rows, cols, cols}, again).ok());
  }
  const StatusOr<MxTensor> t = ImportGgmlMxfp4(blob, rows, cols);
  if (!t.ok()) return 0;
  TRNMX_FUZZ_CHECK(blob.size() == GgmlMxfp4Bytes(rows, cols));
  std::vector<std::uint8_t> out(blob.size() + 1, 0xA5);
  TRNMX_FUZZ_CHECK(ExportGgmlMxfp4(t->view(), out).ok());
  TRNMX_FUZZ_CHECK(std::equal(blob.begin(), blob.end(), out.begin()));
  TRNMX_FUZZ_CHECK(out.back() == 0xA5);  // Nothing written past the tensor.
  std::vector<float> values(rows * cols + 1);
  TRNMX_FUZZ_CHECK(DequantizeMx(t->view(), {values.data(), rows, cols, cols}).ok());
  TRNMX_FUZZ_CHECK(std::equal(values.begin(), values.end() - 1, compat.begin()));
  return 0;
}

// [format, axis, options, rows, cols, padding, seed][values as FP32]:
// QuantizeMx with every enum drawn one past its range (so invalid options are
// exercised too). Checks that a strided copy of the source, two threads, the
// transposed problem (other axis; not for stochastic rounding, whose index is
// the source position) and, for BF16-exact values, the BF16 entry point all
// give the same bytes or the same error; and that a result dequantizes.
int FuzzMxQuantize(const std::uint8_t* data, std::size_t size) {
  ByteReader in(data, size);
  const auto format = static_cast<MxFormat>(in.TakeBelow(8));
  MxQuantizeOptions options;
  options.axis = static_cast<BlockAxis>(in.TakeBelow(3));
  options.rule = static_cast<ScaleRule>(in.TakeBelow(8));
  options.special = static_cast<SpecialBlock>(in.TakeBelow(4));
  options.element.rounding = static_cast<Rounding>(in.TakeBelow(5));
  options.element.overflow = static_cast<Overflow>(in.TakeBelow(5));
  options.element.nan = static_cast<NanPolicy>(in.TakeBelow(6));
  options.element.subnormals = static_cast<Subnormals>(in.TakeBelow(3));
  options.element.int8_range = static_cast<Int8Range>(in.TakeBelow(3));
  options.stochastic_source = static_cast<StochasticSource>(in.TakeBelow(3));
  options.stochastic_seed = in.Take<std::uint64_t>();
  if (in.TakeBelow(4) == 0) options.nvfp4_global_amax = in.Take<float>();
  const std::size_t rows = in.TakeBelow(40);
  const std::size_t cols = in.TakeBelow(80);
  const std::size_t pad = in.TakeBelow(4);
  const bool bf16_exact = in.TakeBelow(2) == 0;

  // The values: the rest of the input as FP32 words, repeated to fill.
  const std::span<const std::uint8_t> rest = in.Rest();
  std::vector<float> x(rows * cols);
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::uint32_t bits = 0;
    for (std::size_t b = 0; b < 4 && !rest.empty(); ++b) {
      bits |= std::uint32_t{rest[(4 * i + b) % rest.size()]} << (8 * b);
    }
    x[i] = std::bit_cast<float>(bf16_exact ? bits & 0xFFFF0000u : bits);
  }
  const Fp32MatrixView src{x.data(), rows, cols, cols};
  const StatusOr<MxTensor> base = QuantizeMx(src, format, options);

  std::vector<float> strided(rows * (cols + pad), -1.0f);
  for (std::size_t r = 0; r < rows; ++r) {
    std::copy_n(x.data() + r * cols, cols, strided.data() + r * (cols + pad));
  }
  CheckSameOutcome(base, QuantizeMx({strided.data(), rows, cols, cols + pad}, format, options));
  CheckSameOutcome(base, QuantizeMx(src, format, options, &TwoThreads()));

  if (options.element.rounding != Rounding::kStochastic &&
      (options.axis == BlockAxis::kRows || options.axis == BlockAxis::kCols)) {
    std::vector<float> xt(rows * cols);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < cols; ++c) xt[c * rows + r] = x[r * cols + c];
    }
    MxQuantizeOptions other = options;
    other.axis = options.axis == BlockAxis::kRows ? BlockAxis::kCols : BlockAxis::kRows;
    CheckSameOutcome(base, QuantizeMx({xt.data(), cols, rows, rows}, format, other));
  }
  if (bf16_exact) {
    std::vector<Bf16> b(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      b[i] = Bf16::FromBits(std::bit_cast<std::uint32_t>(x[i]) >> 16);
    }
    CheckSameOutcome(base, QuantizeMx(Bf16MatrixView{b.data(), rows, cols, cols}, format, options));
  }
  if (base.ok()) {
    std::vector<float> back(rows * cols + 1);
    TRNMX_FUZZ_CHECK(DequantizeMx(base->view(), {back.data(), rows, cols, cols}).ok());
  }
  return 0;
}

}  // namespace trnmx::fuzz
