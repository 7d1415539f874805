// Example: quantize an FP32 tensor to each MX format and back, and print the
// error each format makes.
//
//   build/dev/examples/quantize_tensor
//
// A 64 x 256 row-major tensor (a smooth signal plus a few outliers, like a
// weight matrix) is quantized with QuantizeMx (blocks of 32 along each row,
// the OCP floor scale rule, round to nearest even) and decoded with
// DequantizeMx. For each format it prints the relative error
// ||x - y|| / ||x|| and the largest element error.
//
// Checks (exit 1 if one fails):
//   - a row of values on the FP4 E2M1 grid times a power of two comes back
//     exactly in every format with E8M0 block scales (each represents them;
//     formats.md 6-7; NVFP4's FP32 tensor scale 1/448 is not exact);
//   - the relative error of each format stays under 2^-m, m = the element
//     format's mantissa bits (6 for MXINT8): round to nearest costs at most
//     2^-(m+1) relative on the large elements of a block, which carry the
//     norm; elements far below their block's maximum lose more (they fall
//     into the element format's subnormals), a minority in this tensor.
#include <trnmx/trnmx.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

int main() {
  constexpr std::size_t kRows = 64, kCols = 256;
  std::vector<float> x(kRows * kCols);
  for (std::size_t r = 0; r < kRows; ++r) {
    for (std::size_t c = 0; c < kCols; ++c) {
      x[r * kCols + c] = std::sin(0.05f * static_cast<float>(c) + 0.7f * static_cast<float>(r)) *
                         std::exp2(static_cast<float>(r % 9) - 4.0f);
    }
  }
  for (std::size_t i = 37; i < x.size(); i += 997) x[i] *= 8.0f;  // outliers
  // Row 0: the FP4 E2M1 grid {0, 0.5, 1, 1.5, 2, 3, 4, 6}, signed, times 2^-3.
  const float kGrid[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (std::size_t c = 0; c < kCols; ++c) {
    x[c] = (c % 2 == 0 ? 1.0f : -1.0f) * kGrid[c % 8] * 0.125f;
  }

  int failures = 0;
  std::printf("%-12s %12s %14s %10s\n", "format", "rel. error", "max |x - y|", "bound");
  for (const trnmx::MxFormatInfo& info : trnmx::AllMxFormats()) {
    const trnmx::Fp32MatrixView src{x.data(), kRows, kCols, kCols};
    trnmx::StatusOr<trnmx::MxTensor> q = trnmx::QuantizeMx(src, info.format);
    if (!q.ok()) {
      std::fprintf(stderr, "%s: %s\n", std::string(info.name).c_str(),
                   q.status().ToString().c_str());
      return 1;
    }
    std::vector<float> y(x.size());
    const trnmx::Status s = trnmx::DequantizeMx(q->view(), {y.data(), kRows, kCols, kCols});
    if (!s.ok()) {
      std::fprintf(stderr, "%s: %s\n", std::string(info.name).c_str(), s.ToString().c_str());
      return 1;
    }

    double err2 = 0, norm2 = 0, max_err = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double e = static_cast<double>(x[i]) - static_cast<double>(y[i]);
      err2 += e * e;
      norm2 += static_cast<double>(x[i]) * x[i];
      max_err = std::max(max_err, std::fabs(e));
    }
    const double rel = std::sqrt(err2 / norm2);
    const double bound = std::exp2(-trnmx::GetFormatInfo(info.element).mantissa_bits);
    std::printf("%-12s %12.3e %14.3e %10.3e\n", std::string(info.name).c_str(), rel, max_err,
                bound);
    if (!(rel < bound)) {
      std::fprintf(stderr, "FAILED: %s relative error %.3e is not under %.3e\n",
                   std::string(info.name).c_str(), rel, bound);
      ++failures;
    }
    if (!info.has_tensor_scale && !std::equal(x.begin(), x.begin() + kCols, y.begin())) {
      std::fprintf(stderr, "FAILED: %s does not give back the E2M1 grid row exactly\n",
                   std::string(info.name).c_str());
      ++failures;
    }
  }
  if (failures != 0) return 1;
  std::printf("quantize_tensor: every format within its bound; the grid row is exact\n");
  return 0;
}
