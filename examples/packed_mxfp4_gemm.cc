// Example: a linear layer with MXFP4 weights, packed once and reused.
//
//   build/dev/examples/packed_mxfp4_gemm
//
// The weights W (K x N, FP32) are quantized to MXFP4 with their blocks of 32
// along K (BlockAxis::kCols: each column of W is one K-long line), packed
// once with PackedWeights::Pack, and multiplied with FP32 activations X
// (M x K) by Gemm: Y = X * W. Per gemm.h, an MX operand times a dense one is
// decoded to FP32 and then every output is one FMA chain along K in order,
// so the result does not depend on the SIMD target or the thread count.
//
// Checks (exit 1 if one fails):
//   - Y equals, bit for bit, a plain loop that decodes W with DequantizeMx
//     and computes each output as std::fma along K in increasing order
//     (gemm.h's numerics contract for dense x MX);
//   - the packed call, an unpacked call on the calling thread (nullptr
//     executor) and one on DefaultExecutor() give the same bits.
// It also prints how far Y is from the FP32 product with the unquantized W.
#include <trnmx/trnmx.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace {

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

int main() {
  constexpr std::size_t kM = 8, kK = 512, kN = 384;
  // Gaussian weights (std 0.02, as an initialised layer) and activations.
  std::mt19937 rng(2026);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w(kK * kN), x(kM * kK);
  for (float& v : w) v = 0.02f * normal(rng);
  for (float& v : x) v = normal(rng);

  // 1. Quantize the weights to MXFP4, blocks along K.
  trnmx::MxQuantizeOptions along_k;
  along_k.axis = trnmx::BlockAxis::kCols;
  trnmx::StatusOr<trnmx::MxTensor> wq = trnmx::QuantizeMx(
      trnmx::Fp32MatrixView{w.data(), kK, kN, kN}, trnmx::MxFormat::kMxfp4, along_k);
  if (!wq.ok()) {
    std::fprintf(stderr, "QuantizeMx: %s\n", wq.status().ToString().c_str());
    return 1;
  }
  std::printf("weights  %zu x %zu FP32 (%zu bytes) -> MXFP4 (%zu code + %zu scale bytes)\n", kK, kN,
              w.size() * sizeof(float), wq->codes().size(), wq->scales().size());

  // 2. Pack once (a model load would do this), then run the layer.
  const trnmx::GemmOperand w_mx = trnmx::GemmOperand::Mx(wq->view());
  trnmx::StatusOr<trnmx::PackedWeights> packed = trnmx::PackedWeights::Pack(w_mx);
  if (!packed.ok()) {
    std::fprintf(stderr, "Pack: %s\n", packed.status().ToString().c_str());
    return 1;
  }
  const trnmx::GemmOperand xa = trnmx::GemmOperand::Fp32(x.data(), kM, kK, kK);
  std::vector<float> y(kM * kN), y_unpacked(kM * kN), y_pool(kM * kN);
  trnmx::Status s = trnmx::Gemm(xa, *packed, trnmx::GemmOutput::Fp32(y.data(), kM, kN, kN));
  if (s.ok()) s = trnmx::Gemm(xa, w_mx, trnmx::GemmOutput::Fp32(y_unpacked.data(), kM, kN, kN));
  if (s.ok()) {
    s = trnmx::Gemm(xa, *packed, trnmx::GemmOutput::Fp32(y_pool.data(), kM, kN, kN), {},
                    &trnmx::DefaultExecutor());
  }
  if (!s.ok()) {
    std::fprintf(stderr, "Gemm: %s\n", s.ToString().c_str());
    return 1;
  }

  // 3. The reference: decode W, then one FMA chain per output, K in order.
  std::vector<float> w_dec(kK * kN);
  s = trnmx::DequantizeMx(wq->view(), {w_dec.data(), kK, kN, kN});
  if (!s.ok()) {
    std::fprintf(stderr, "DequantizeMx: %s\n", s.ToString().c_str());
    return 1;
  }
  std::vector<float> want(kM * kN);
  double err2 = 0, norm2 = 0;
  for (std::size_t i = 0; i < kM; ++i) {
    for (std::size_t j = 0; j < kN; ++j) {
      float acc = 0.0f;
      double exact = 0;
      for (std::size_t k = 0; k < kK; ++k) {
        acc = std::fma(x[i * kK + k], w_dec[k * kN + j], acc);
        exact += static_cast<double>(x[i * kK + k]) * w[k * kN + j];
      }
      want[i * kN + j] = acc;
      err2 += (acc - exact) * (acc - exact);
      norm2 += exact * exact;
    }
  }
  std::printf("Y = X * W  %zu x %zu, K = %zu; relative error vs the FP32 weights: %.3e\n", kM, kN,
              kK, std::sqrt(err2 / norm2));

  int failures = 0;
  if (!SameBits(y, want)) {
    std::fprintf(stderr, "FAILED: packed Gemm differs from the FMA-chain reference\n");
    ++failures;
  }
  if (!SameBits(y_unpacked, y) || !SameBits(y_pool, y)) {
    std::fprintf(stderr, "FAILED: unpacked or multi-threaded Gemm gave other bits\n");
    ++failures;
  }
  if (failures != 0) return 1;
  std::printf(
      "packed_mxfp4_gemm: bit-identical to the reference, packed or not, 1 or %zu threads\n",
      trnmx::DefaultExecutor().NumThreads());
  return 0;
}
