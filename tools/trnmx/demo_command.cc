// `trnmx demo`: quantize a built-in synthetic tensor to every element format
// under several policies and print the error each choice costs.
//
// The tensor: N samples of a standard normal plus a fraction of outliers
// (normal * outlier_scale), from std::mt19937_64 with a printed seed. Each row
// optionally applies one per-tensor power-of-two scale, chosen like the OCP
// MX floor rule on the whole tensor (2^(floor(log2 amax) - emax)), so that
// the outliers land in the format's top binade; rows without it show what the
// bare format does to unscaled data.
#include <bit>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "commands.h"
#include "trnmx/formats/registry.h"

namespace trnmx::cli {
namespace {

struct DemoArgs {
  std::size_t size = 1 << 16;
  double outlier_fraction = 0.001;
  double outlier_scale = 50.0;
  std::uint64_t seed = 20261130;
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

int RunDemo(const DemoArgs& args) {
  std::printf("trnmx demo: %zu samples of N(0,1) with %.3g%% outliers x%.3g, seed %llu\n",
              args.size, args.outlier_fraction * 100, args.outlier_scale,
              static_cast<unsigned long long>(args.seed));
  std::mt19937_64 rng(args.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<float> x(args.size);
  float amax = 0;
  for (float& v : x) {
    v = normal(rng);
    if (uniform(rng) < args.outlier_fraction) v *= static_cast<float>(args.outlier_scale);
    amax = std::max(amax, std::fabs(v));
  }
  std::printf("amax %.6g; element formats only (MX block formats: `trnmx quantize`, later)\n\n", amax);

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
        std::fprintf(stderr, "trnmx demo: %s\n", s.ToString().c_str());
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
  std::printf("\nRMSE and SQNR exclude NaN outputs; max rel over non-zero inputs; "
              "clamped = overflowed (saturated or made non-finite).\n");
  return 0;
}

}  // namespace

void AddDemoCommand(CLI::App& app) {
  auto args = std::make_shared<DemoArgs>();
  CLI::App* cmd = app.add_subcommand(
      "demo", "Quantize a built-in synthetic tensor to every format and policy; print the errors");
  cmd->add_option("--size", args->size, "Number of samples")->check(CLI::Range(1, 1 << 26));
  cmd->add_option("--seed", args->seed, "Seed of the synthetic tensor");
  cmd->add_option("--outlier-fraction", args->outlier_fraction, "Fraction of outliers")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--outlier-scale", args->outlier_scale, "Outlier multiplier")
      ->check(CLI::Range(1.0, 1e6));
  cmd->callback([args] { ExitCode() = RunDemo(*args); });
}

}  // namespace trnmx::cli
