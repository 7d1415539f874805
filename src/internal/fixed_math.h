// Internal: trnmx's own exp, sigmoid and log, written with IEEE-754 double
// +, -, *, / only (no libm call, no FMA: the library builds with
// -ffp-contract=off), so that their bits are the same on every compiler,
// libm, CPU and SIMD target. libm's expf/logf differ between glibc, musl,
// MSVC and Apple (they promise < 1 ulp, not bits), which would make a
// router's ties and weights platform-dependent. The MoE router uses them
// (moe.h) and attention's softmax is meant to reuse them.
//
// Method (double internally, one final rounding to FP32):
//   ExpDouble(x): n = nearest integer to x * log2(e) (ties: round half even,
//     by the 1.5 * 2^52 addition), r = (x - n * Ln2Hi) - n * Ln2Lo with
//     Ln2Hi exact in 32 bits (fdlibm's split), so |r| <= 0.3466 and n * Ln2Hi
//     is exact; exp(r) = the Taylor polynomial of degree 13 in Horner form
//     (truncation < 4e-18 relative); the result times 2^n, applied as two
//     exact power-of-two factors. Relative error about 2^-52.
//   LogDouble(x), x > 0 finite: x = m * 2^e with m in [sqrt(1/2), sqrt(2))
//     (exact, by frexp), f = (m - 1) / (m + 1), log(m) = 2 atanh(f) = 2f (1 +
//     f^2/3 + ... + f^22/23) (truncation < 1e-18), log(x) = e * Ln2Hi + (e *
//     Ln2Lo + log(m)).
//   FixedExp(x) = (float)ExpDouble(x); FixedLog(x) = (float)LogDouble(x);
//   FixedSigmoid(x) = (float)(1 / (1 + ExpDouble(-x))) for x >= 0 and
//     (float)(ExpDouble(x) / (1 + ExpDouble(x))) for x < 0 (no cancellation
//     on either side).
//
// Accuracy, measured by tests/kernels/moe/fixed_math_test.cc against long
// double expl/logl on every 509th FP32 bit pattern of the domain (4.4 M
// inputs for exp, 4.4 M for sigmoid, 4.2 M for log, plus the domain ends):
// every FP32 result is within 0.5 + 2^-20 ulp of the exact value, i.e.
// correctly rounded except where the exact value lies within 2^-20 ulp of a
// rounding midpoint. The test asserts this bound and prints the largest
// error and the count of results not correctly rounded: 0.4999997 /
// 0.49999998 / 0.4999999986 ulp and 0 for exp / sigmoid / log (a denser run
// over every 61st pattern, 36.7 M exp inputs, also found 0; its largest
// sigmoid error was 0.500000000045 ulp, inside the bound). Special values:
// NaN -> NaN; FixedExp(x) = +Inf for x > 100 (exp overflows FP32 above
// 88.7228), +0 for x < -110 (below half the smallest subnormal); exp(-Inf) =
// +0, exp(+Inf) = +Inf; FixedSigmoid(x) = 1 for x > 40, +0 for x < -110;
// FixedLog(+-0) = -Inf, FixedLog(x < 0) = NaN, FixedLog(+Inf) = +Inf.
#ifndef TRNMX_SRC_INTERNAL_FIXED_MATH_H_
#define TRNMX_SRC_INTERNAL_FIXED_MATH_H_

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace trnmx::internal {

// fdlibm's split of ln 2: Ln2Hi has its low 32 bits zero, so n * Ln2Hi is
// exact for |n| < 2^20.
inline constexpr double kLn2Hi = 6.93147180369123816490e-01;  // 0x3FE62E42FEE00000
inline constexpr double kLn2Lo = 1.90821492927058770002e-10;  // 0x3DEA39EF35793C76
inline constexpr double kLog2E = 1.44269504088896338700e+00;

// 2^k as a double for k in [-1022, 1023] (exact, from the bits).
inline double Pow2Double(int k) {
  return std::bit_cast<double>(static_cast<std::uint64_t>(k + 1023) << 52);
}

// exp(x) in double for x in [-745, 710] (callers clamp; see the top).
inline double ExpDouble(double x) {
  // Round x * log2(e) to the nearest integer: adding 1.5 * 2^52 leaves no
  // fraction bits (round to nearest even, the IEEE default mode).
  constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52
  const double n = (x * kLog2E + kRound) - kRound;
  const double r = (x - n * kLn2Hi) - n * kLn2Lo;
  // Taylor coefficients 1/j!, j = 13 down to 2 (exactly rounded doubles).
  double p = 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // 2^n in two exact factors, so that n in [-1075, 1024] never leaves the
  // normal exponent range of either factor.
  const int k = static_cast<int>(n);
  const int k1 = k / 2;
  return p * Pow2Double(k1) * Pow2Double(k - k1);
}

// log(x) in double for x > 0 finite.
inline double LogDouble(double x) {
  int e = 0;
  double m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1): exact.
  constexpr double kSqrtHalf = 0.70710678118654752440;
  if (m < kSqrtHalf) {
    m *= 2.0;
    --e;
  }
  const double f = (m - 1.0) / (m + 1.0);
  const double s = f * f;
  // 1 + s/3 + s^2/5 + ... + s^11/23, Horner.
  double p = 1.0 / 23.0;
  for (int j = 21; j >= 1; j -= 2) p = p * s + 1.0 / j;
  const double log_m = 2.0 * f * p;
  const double de = static_cast<double>(e);
  return de * kLn2Hi + (de * kLn2Lo + log_m);
}

inline float FixedExp(float x) {
  if (std::isnan(x)) return x;
  if (x > 100.0f) return std::numeric_limits<float>::infinity();
  if (x < -110.0f) return 0.0f;
  return static_cast<float>(ExpDouble(static_cast<double>(x)));
}

inline float FixedSigmoid(float x) {
  if (std::isnan(x)) return x;
  if (x > 40.0f) return 1.0f;
  if (x < -110.0f) return 0.0f;
  const double d = static_cast<double>(x);
  if (x >= 0.0f) return static_cast<float>(1.0 / (1.0 + ExpDouble(-d)));
  const double e = ExpDouble(d);
  return static_cast<float>(e / (1.0 + e));
}

inline float FixedLog(float x) {
  if (std::isnan(x)) return x;
  if (x == 0.0f) return -std::numeric_limits<float>::infinity();
  if (x < 0.0f) return std::numeric_limits<float>::quiet_NaN();
  if (std::isinf(x)) return x;
  return static_cast<float>(LogDouble(static_cast<double>(x)));
}

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_INTERNAL_FIXED_MATH_H_
