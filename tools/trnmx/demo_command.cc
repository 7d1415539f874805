// `trnmx demo`: the main job of the README (tools/run.sh demo), in two parts
// on built-in synthetic data:
//
//   1. MX quantization: the tensor quantized to every MX format (OCP floor
//      scale rule, RNE elements), with RMSE, max error and SQNR per format.
//   2. A GEMM with MXFP4 weights (BF16 activations x MXFP4 W, FP32 C), checked
//      two ways: (a) every output against a plain FP64 loop over the same
//      operands (W dequantized by DequantizeMx), within the error
//      bound of the kernel's contract (gemm.h: the MX operand decoded exactly
//      to FP32, then one FP32 FMA chain over K, so |C - C_exact| <=
//      gamma_K * sum_k |a_ik w_kj| with gamma_K = K u / (1 - K u), u = 2^-24);
//      (b) bit identity of the same product on 1 thread, on 2 threads and
//      with prepacked weights (the contract promises the same bits).
//   --elements: also every element format under several rounding/overflow
//      policies, unscaled and with one per-tensor power-of-two scale.
//
// The Trainium3 emulator part of the demo is `trnmx-emu gemm` (run.sh demo
// runs it next): the `trnmx` program stays a client of the core library only.
//
// The tensor: N samples of a standard normal plus a fraction of outliers
// (normal * outlier_scale), from std::mt19937_64 with a printed seed. The
// element table's scaled rows apply one per-tensor power-of-two scale, chosen
// like the OCP MX floor rule on the whole tensor (2^(floor(log2 amax) -
// emax)), so that the outliers land in the format's top binade; rows without
// it show what the bare format does to unscaled data.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "commands.h"
#include "trnmx/executor.h"
#include "trnmx/formats/registry.h"
#include "trnmx/gemm.h"
#include "trnmx/mx.h"

namespace trnmx::cli {
namespace {

struct DemoArgs {
  std::size_t size = 1 << 16;
  double outlier_fraction = 0.001;
  double outlier_scale = 50.0;
  std::uint64_t seed = 20261130;
  std::size_t gemm_m = 64, gemm_n = 256, gemm_k = 512;
  bool elements = false;
};

struct Policy {
  const char* name;
  Rounding rounding;
  Overflow overflow;
  bool scaled;
};

struct Stats {
  double rmse = 0, max_rel = 0, sqnr_db = 0;
  std::size_t saturated = 0, nan_out = 0, flushed = 0;
};

// floor(log2 x) of a positive normal float, from its exponent field.
int FloorLog2(float x) { return static_cast<int>(std::bit_cast<std::uint32_t>(x) >> 23) - 127; }

Stats Measure(const std::vector<float>& x, const std::vector<float>& q) {
  Stats s;
  double signal = 0, noise = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double xi = x[i], qi = q[i];
    if (std::isnan(qi)) {
      ++s.nan_out;
      continue;
    }
    const double err = qi - xi;
    signal += xi * xi;
    noise += err * err;
    if (xi != 0) s.max_rel = std::max(s.max_rel, std::fabs(err) / std::fabs(xi));
    if (qi == 0 && xi != 0) ++s.flushed;
  }
  const std::size_t finite = x.size() - s.nan_out;
  s.rmse = finite ? std::sqrt(noise / static_cast<double>(finite)) : NAN;
  s.sqnr_db = noise > 0 ? 10 * std::log10(signal / noise) : INFINITY;
  return s;
}

// The synthetic tensor: N(0,1) with outliers; also returns its amax.
std::vector<float> MakeTensor(const DemoArgs& args, std::mt19937_64& rng, float& amax) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<float> x(args.size);
  amax = 0;
  for (float& v : x) {
    v = normal(rng);
    if (uniform(rng) < args.outlier_fraction) v *= static_cast<float>(args.outlier_scale);
    amax = std::max(amax, std::fabs(v));
  }
  return x;
}

void PrintStatusError(const char* what, const Status& s) {
  std::fprintf(stderr, "trnmx demo: %s: %s\n", what, s.ToString().c_str());
}

// Part 1: the tensor as one line of blocks, quantized to each MX format and
// dequantized back.
int RunMxTable(const std::vector<float>& x) {
  std::printf(
      "1. MX quantization (OCP floor scale rule, round to nearest even; blocks of 32, "
      "NVFP4 16)\n");
  std::printf("%-11s %9s %10s %11s %11s %8s\n", "format", "bits/elem", "bytes", "RMSE", "max error",
              "SQNR dB");
  const Fp32MatrixView src{x.data(), 1, x.size(), x.size()};
  std::vector<float> q(x.size());
  for (const MxFormatInfo& f : AllMxFormats()) {
    StatusOr<MxTensor> t = QuantizeMx(src, f.format);
    Status s = t.ok() ? DequantizeMx(t->view(), Fp32MatrixSpan{q.data(), 1, q.size(), q.size()})
                      : t.status();
    if (!s.ok()) {
      PrintStatusError(std::string(f.name).c_str(), s);
      return 1;
    }
    double signal = 0, noise = 0, max_err = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double err = static_cast<double>(q[i]) - x[i];
      signal += static_cast<double>(x[i]) * x[i];
      noise += err * err;
      max_err = std::max(max_err, std::fabs(err));
    }
    // Codes, one scale byte per block, and NVFP4's FP32 tensor scale.
    const double bytes = static_cast<double>(t->codes().size() + t->scales().size() +
                                             (f.has_tensor_scale ? sizeof(float) : 0));
    std::printf("%-11.*s %9.3f %10.0f %11.4g %11.4g %8.2f\n", static_cast<int>(f.name.size()),
                f.name.data(), 8 * bytes / static_cast<double>(x.size()), bytes,
                std::sqrt(noise / static_cast<double>(x.size())), max_err,
                noise > 0 ? 10 * std::log10(signal / noise) : INFINITY);
  }
  return 0;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Part 2: C = A x W with A BF16 activations (M x K) and W MXFP4 weights
// (K x N, blocks of 32 along K), checked as described at the top.
int RunGemmCheck(const DemoArgs& args, std::mt19937_64& rng) {
  const std::size_t m = args.gemm_m, n = args.gemm_n, k = args.gemm_k;
  std::printf(
      "\n2. GEMM with MXFP4 weights: C (%zu x %zu, FP32) = A (%zu x %zu, BF16) x "
      "W (%zu x %zu, MXFP4)\n",
      m, n, m, k, k, n);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<Bf16> a(m * k);
  for (Bf16& v : a) v = Encode<Bf16>(normal(rng));
  std::vector<float> w(k * n);
  for (float& v : w) v = normal(rng) / std::sqrt(static_cast<float>(k));
  MxQuantizeOptions qopt;
  qopt.axis = BlockAxis::kCols;  // Blocks along K, as the GEMM wants for B.
  StatusOr<MxTensor> wq = QuantizeMx(Fp32MatrixView{w.data(), k, n, n}, MxFormat::kMxfp4, qopt);
  if (!wq.ok()) {
    PrintStatusError("QuantizeMx(W, mxfp4)", wq.status());
    return 1;
  }
  const GemmOperand a_op = GemmOperand::Bf16(a.data(), m, k, k);
  const GemmOperand w_op = GemmOperand::Mx(wq->view());

  // The same product three ways: 1 thread, 2 threads, prepacked weights on 3.
  std::vector<float> c1(m * n), c2(m * n), c3(m * n);
  SerialExecutor serial;
  ThreadPoolExecutor pool2(2), pool3(3);
  Status s = Gemm(a_op, w_op, GemmOutput::Fp32(c1.data(), m, n, n), {}, &serial);
  if (s.ok()) s = Gemm(a_op, w_op, GemmOutput::Fp32(c2.data(), m, n, n), {}, &pool2);
  StatusOr<PackedWeights> packed = PackedWeights::Pack(w_op, &pool3);
  if (s.ok()) s = packed.status();
  if (s.ok()) s = Gemm(a_op, *packed, GemmOutput::Fp32(c3.data(), m, n, n), {}, &pool3);
  if (!s.ok()) {
    PrintStatusError("Gemm", s);
    return 1;
  }

  // (a) FP64 product of the dequantized operands. Each product of a BF16
  // (8-bit significand) and an MXFP4 value (2-bit significand times a power
  // of two) is exact in FP64; the FP64 sum adds at most gamma_K(2^-53) of
  // sum |a w|, which the bound includes.
  std::vector<float> wd(k * n);
  s = DequantizeMx(wq->view(), Fp32MatrixSpan{wd.data(), k, n, n}, &serial);
  if (!s.ok()) {
    PrintStatusError("DequantizeMx(W)", s);
    return 1;
  }
  const double kd = static_cast<double>(k);
  const double u32 = std::ldexp(1.0, -24), u64 = std::ldexp(1.0, -53);
  const double gamma = kd * u32 / (1 - kd * u32) + kd * u64 / (1 - kd * u64);
  double worst = 0, err_sum2 = 0, ref_sum2 = 0;
  std::size_t violations = 0, worst_i = 0, worst_j = 0;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double exact = 0, magnitude = 0;
      for (std::size_t p = 0; p < k; ++p) {
        const double prod = static_cast<double>(Decode(a[i * k + p])) * wd[p * n + j];
        exact += prod;
        magnitude += std::fabs(prod);
      }
      const double err = std::fabs(c1[i * n + j] - exact);
      const double bound = gamma * magnitude;
      if (!(err <= bound)) ++violations;
      const double ratio = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0);
      if (ratio > worst) {
        worst = ratio;
        worst_i = i;
        worst_j = j;
      }
      err_sum2 += err * err;
      ref_sum2 += exact * exact;
    }
  }
  std::printf(
      "check vs FP64    max |C - C_fp64| / bound = %.4f at C[%zu][%zu]; bound = gamma_K * "
      "sum|a w|, gamma_K = %.3g (K = %zu FP32 FMAs); rel. Frobenius error %.3g: %s\n",
      worst, worst_i, worst_j, gamma, k, std::sqrt(err_sum2 / ref_sum2),
      violations == 0 ? "OK" : "FAILED");

  // (b) Same bits for every thread count and for prepacked weights.
  const bool same = SameBits(c1, c2) && SameBits(c1, c3);
  std::printf(
      "check bits       1 thread, 2 threads and prepacked weights on 3 threads give "
      "identical bits: %s\n",
      same ? "OK" : "FAILED");

  // What MXFP4 costs against FP32 weights (information, not a check).
  std::vector<float> c_fp32w(m * n);
  s = Gemm(a_op, GemmOperand::Fp32(w.data(), k, n, n), GemmOutput::Fp32(c_fp32w.data(), m, n, n),
           {}, &pool2);
  if (!s.ok()) {
    PrintStatusError("Gemm (FP32 weights)", s);
    return 1;
  }
  double diff2 = 0, base2 = 0;
  for (std::size_t i = 0; i < c1.size(); ++i) {
    const double d = static_cast<double>(c1[i]) - c_fp32w[i];
    diff2 += d * d;
    base2 += static_cast<double>(c_fp32w[i]) * c_fp32w[i];
  }
  std::printf(
      "MXFP4 weights    C differs from C with the FP32 weights by %.3g (rel. Frobenius); "
      "W in %zu bytes instead of %zu\n",
      std::sqrt(diff2 / base2), wq->codes().size() + wq->scales().size(), w.size() * sizeof(float));
  if (violations != 0 || !same) {
    std::fprintf(stderr, "trnmx demo: GEMM check FAILED (%zu outputs outside the bound%s)\n",
                 violations, same ? "" : "; bits differ between thread counts or packing");
    return 1;
  }
  return 0;
}

// Part 3 (--elements): every element format and policy on the same tensor.
int RunElementTable(const std::vector<float>& x, float amax, std::mt19937_64& rng) {
  std::printf("\nElement formats alone (no blocks), amax %.6g\n", amax);
  const Policy policies[] = {
      {"rne/sat, no scale", Rounding::kNearestEven, Overflow::kSatFinite, false},
      {"rne/sat", Rounding::kNearestEven, Overflow::kSatFinite, true},
      {"rne/nonsat", Rounding::kNearestEven, Overflow::kNonSat, true},
      {"rz/sat", Rounding::kTowardZero, Overflow::kSatFinite, true},
      {"ra/sat", Rounding::kTiesAway, Overflow::kSatFinite, true},
      {"stochastic/sat", Rounding::kStochastic, Overflow::kSatFinite, true},
  };
  std::printf("%-6s %-18s %9s %4s %10s %11s %11s %8s %7s %6s %7s\n", "format", "policy", "scale",
              "bits", "bytes", "RMSE", "max rel", "SQNR dB", "clamped", "NaN", "to zero");
  std::vector<std::uint32_t> random_bits(x.size());
  for (std::uint32_t& r : random_bits) r = static_cast<std::uint32_t>(rng());
  std::vector<float> scaled(x.size()), q(x.size());
  std::vector<std::uint32_t> codes(x.size());
  std::vector<std::uint8_t> flags(x.size());
  for (const FormatInfo& f : AllFormats()) {
    if (f.format == Format::kFp32 || f.format == Format::kScaleE8M0) continue;
    const bool wide = f.format == Format::kBf16 || f.format == Format::kFp16;
    for (const Policy& p : policies) {
      if (wide && p.scaled) continue;  // BF16/FP16 have the range; one row each.
      // emax: the exponent of the largest normal (0 for MXINT8: 1.xx * 2^0).
      const int emax = FloorLog2(static_cast<float>(f.max_normal));
      const int scale_exp = p.scaled ? FloorLog2(amax) - emax : 0;
      const float scale = std::ldexp(1.0f, scale_exp);
      for (std::size_t i = 0; i < x.size(); ++i) scaled[i] = std::ldexp(x[i], -scale_exp);
      ConvertOptions options;
      options.element.rounding = p.rounding;
      options.element.overflow = p.overflow;
      Status s = EncodeScalars(f.format, scaled, codes, options, random_bits, flags);
      if (s.ok()) s = DecodeScalars(f.format, codes, q);
      if (!s.ok()) {
        PrintStatusError(std::string(f.name).c_str(), s);
        return 1;
      }
      for (float& v : q) v *= scale;
      Stats st = Measure(x, q);
      for (std::uint8_t fl : flags) st.saturated += (fl & kFlagOverflow) ? 1 : 0;
      const double bytes = static_cast<double>(x.size()) * f.total_bits / 8.0;
      char scale_text[16];
      std::snprintf(scale_text, sizeof scale_text, p.scaled ? "2^%d" : "-", scale_exp);
      std::printf("%-6.*s %-18s %9s %4d %10.0f %11.4g %11.4g %8.2f %7zu %6zu %7zu\n",
                  static_cast<int>(f.name.size()), f.name.data(), p.name, scale_text, f.total_bits,
                  bytes, st.rmse, st.max_rel, st.sqnr_db, st.saturated, st.nan_out, st.flushed);
    }
  }
  std::printf(
      "\nRMSE and SQNR exclude NaN outputs; max rel over non-zero inputs; "
      "clamped = overflowed (saturated or made non-finite).\n");
  return 0;
}

int RunDemo(const DemoArgs& args) {
  std::printf("trnmx demo: %zu samples of N(0,1) with %.3g%% outliers x%.3g, seed %llu\n\n",
              args.size, args.outlier_fraction * 100, args.outlier_scale,
              static_cast<unsigned long long>(args.seed));
  std::mt19937_64 rng(args.seed);
  float amax = 0;
  const std::vector<float> x = MakeTensor(args, rng, amax);
  if (int rc = RunMxTable(x); rc != 0) return rc;
  if (int rc = RunGemmCheck(args, rng); rc != 0) return rc;
  if (args.elements) return RunElementTable(x, amax, rng);
  std::printf(
      "\n(--elements adds every element format under each rounding and overflow policy; "
      "tools/run.sh demo runs the Trainium3 emulator next)\n");
  return 0;
}

}  // namespace

void AddDemoCommand(CLI::App& app) {
  auto args = std::make_shared<DemoArgs>();
  CLI::App* cmd = app.add_subcommand(
      "demo",
      "Quantize a built-in tensor to every MX format (error table) and run a checked GEMM with "
      "MXFP4 weights");
  cmd->add_option("--size", args->size, "Number of samples")->check(CLI::Range(1, 1 << 26));
  cmd->add_option("--seed", args->seed, "Seed of the synthetic tensor");
  cmd->add_option("--outlier-fraction", args->outlier_fraction, "Fraction of outliers")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--outlier-scale", args->outlier_scale, "Outlier multiplier")
      ->check(CLI::Range(1.0, 1e6));
  cmd->add_option("--gemm-m", args->gemm_m, "Rows of A and C in the GEMM")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--gemm-n", args->gemm_n, "Columns of W and C in the GEMM")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--gemm-k", args->gemm_k, "Contraction size of the GEMM")
      ->check(CLI::Range(1, 16384))
      ->capture_default_str();
  cmd->add_flag("--elements", args->elements,
                "Also print every element format under each rounding and overflow policy");
  cmd->callback([args] { ExitCode() = RunDemo(*args); });
}

}  // namespace trnmx::cli
