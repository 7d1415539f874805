// Internal: trnmx's own exp, sigmoid, tanh and log, written with IEEE-754 double
// +, -, *, / only (no libm call, no FMA: the library builds with
// -ffp-contract=off), so that their bits are the same on every compiler,
// libm, CPU and SIMD target. libm's expf/logf differ between glibc, musl,
// MSVC and Apple (they promise < 1 ulp, not bits), which would make a
// router's ties and weights platform-dependent. The MoE router (moe.h) and
// attention (attention.h: softmax, soft-capping, log-sum-exp) use them.
//
// Method (double internally, one final rounding to FP32):
//   ExpDouble(x): N = nearest integer to x * 64 / ln 2 (ties: round half
//     even, by the 1.5 * 2^52 addition), N = 64 m + j with j in [0, 64);
//     r = (x - N * Ln2Hi/64) - N * Ln2Lo/64 with Ln2Hi of 32 significant
//     bits (fdlibm's split), so |r| <= ln2/128 and N * Ln2Hi/64 is exact;
//     exp(x) = 2^m * (T[j] * P(r)) with T[j] = 2^(j/64) (a table of nearest
//     doubles) and P the Taylor polynomial of degree 5 (truncation < 4e-17
//     relative), the product with 2^m exact. Relative error a few 2^-53.
//   LogDouble(x), x > 0 finite: x = m * 2^e with m in [sqrt(1/2), sqrt(2))
//     (exact, by frexp), f = (m - 1) / (m + 1), log(m) = 2 atanh(f) = 2f (1 +
//     f^2/3 + ... + f^22/23) (truncation < 1e-18), log(x) = e * Ln2Hi + (e *
//     Ln2Lo + log(m)).
//   FixedExp(x) = (float)ExpDouble(x); FixedLog(x) = (float)LogDouble(x);
//   FixedSigmoid(x) = (float)(1 / (1 + ExpDouble(-x))) for x >= 0 and
//     (float)(ExpDouble(x) / (1 + ExpDouble(x))) for x < 0 (no cancellation
//     on either side).
//   FixedTanh(x) = sign(x) * (float)T(|x|): for |x| < 1/16 the odd Taylor
//     polynomial x (1 - x^2/3 + ... + 21844/6081075 x^12) (truncation < 2^-64
//     relative; no cancellation near 0), else T = (e - 1) / (e + 1) with e =
//     ExpDouble(2|x|) (e - 1 is exact for e < 2 by Sterbenz; the relative
//     error stays below 2^-48 where the result is smallest, 0.0624).
//
// Accuracy, measured by tests/kernels/moe/fixed_math_test.cc against long
// double expl/logl on every 509th FP32 bit pattern of the domain (4.4 M
// inputs for exp, 4.4 M for sigmoid, 4.2 M for log, plus the domain ends):
// every FP32 result is within 0.5 + 2^-20 ulp of the exact value, i.e.
// correctly rounded except where the exact value lies within 2^-20 ulp of a
// rounding midpoint. The test asserts this bound and prints the largest
// error and the count of results not correctly rounded: 0.4999997 /
// 0.49999998 / 0.4999999986 ulp and 0 for exp / sigmoid / log, and for
// tanh (4.3 M inputs in (-10, 10)) 0.4999991 ulp and 0 (a denser run
// over every 61st pattern, 36.7 M exp inputs, also found 0; its largest
// sigmoid error was 0.500000000045 ulp, inside the bound). Special values:
// NaN -> NaN; FixedExp(x) = +Inf for x > 100 (exp overflows FP32 above
// 88.7228), +0 for x < -110 (below half the smallest subnormal); exp(-Inf) =
// +0, exp(+Inf) = +Inf; FixedSigmoid(x) = 1 for x > 40, +0 for x < -110;
// FixedLog(+-0) = -Inf, FixedLog(x < 0) = NaN, FixedLog(+Inf) = +Inf;
// FixedTanh(x) = +-1 for |x| > 10 (it rounds to +-1 from |x| = 9.02 on),
// FixedTanh(+-0) = +-0.
#ifndef TRNMX_SRC_INTERNAL_FIXED_MATH_H_
#define TRNMX_SRC_INTERNAL_FIXED_MATH_H_

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace trnmx::internal {

// fdlibm's split of ln 2: Ln2Hi has 32 significant bits (its low 21 are
// zero), so n * Ln2Hi and n * Ln2Hi / 64 are exact for |n| < 2^21.
inline constexpr double kLn2Hi = 6.93147180369123816490e-01;  // 0x3FE62E42FEE00000
inline constexpr double kLn2Lo = 1.90821492927058770002e-10;  // 0x3DEA39EF35793C76

// 2^k as a double for k in [-1022, 1023] (exact, from the bits).
inline double Pow2Double(int k) {
  return std::bit_cast<double>(static_cast<std::uint64_t>(k + 1023) << 52);
}

// 2^(j/64) for j = 0..63, each the double nearest the exact value
// (generated with Python's decimal module at 60 digits).
inline constexpr double kExp2Table[64] = {
    0x1.0000000000000p+0, 0x1.02c9a3e778061p+0, 0x1.059b0d3158574p+0, 0x1.0874518759bc8p+0,
    0x1.0b5586cf9890fp+0, 0x1.0e3ec32d3d1a2p+0, 0x1.11301d0125b51p+0, 0x1.1429aaea92de0p+0,
    0x1.172b83c7d517bp+0, 0x1.1a35beb6fcb75p+0, 0x1.1d4873168b9aap+0, 0x1.2063b88628cd6p+0,
    0x1.2387a6e756238p+0, 0x1.26b4565e27cddp+0, 0x1.29e9df51fdee1p+0, 0x1.2d285a6e4030bp+0,
    0x1.306fe0a31b715p+0, 0x1.33c08b26416ffp+0, 0x1.371a7373aa9cbp+0, 0x1.3a7db34e59ff7p+0,
    0x1.3dea64c123422p+0, 0x1.4160a21f72e2ap+0, 0x1.44e086061892dp+0, 0x1.486a2b5c13cd0p+0,
    0x1.4bfdad5362a27p+0, 0x1.4f9b2769d2ca7p+0, 0x1.5342b569d4f82p+0, 0x1.56f4736b527dap+0,
    0x1.5ab07dd485429p+0, 0x1.5e76f15ad2148p+0, 0x1.6247eb03a5585p+0, 0x1.6623882552225p+0,
    0x1.6a09e667f3bcdp+0, 0x1.6dfb23c651a2fp+0, 0x1.71f75e8ec5f74p+0, 0x1.75feb564267c9p+0,
    0x1.7a11473eb0187p+0, 0x1.7e2f336cf4e62p+0, 0x1.82589994cce13p+0, 0x1.868d99b4492edp+0,
    0x1.8ace5422aa0dbp+0, 0x1.8f1ae99157736p+0, 0x1.93737b0cdc5e5p+0, 0x1.97d829fde4e50p+0,
    0x1.9c49182a3f090p+0, 0x1.a0c667b5de565p+0, 0x1.a5503b23e255dp+0, 0x1.a9e6b5579fdbfp+0,
    0x1.ae89f995ad3adp+0, 0x1.b33a2b84f15fbp+0, 0x1.b7f76f2fb5e47p+0, 0x1.bcc1e904bc1d2p+0,
    0x1.c199bdd85529cp+0, 0x1.c67f12e57d14bp+0, 0x1.cb720dcef9069p+0, 0x1.d072d4a07897cp+0,
    0x1.d5818dcfba487p+0, 0x1.da9e603db3285p+0, 0x1.dfc97337b9b5fp+0, 0x1.e502ee78b3ff6p+0,
    0x1.ea4afa2a490dap+0, 0x1.efa1bee615a27p+0, 0x1.f50765b6e4540p+0, 0x1.fa7c1819e90d8p+0,
};

// exp(x) in double for x in [-700, 709] (callers clamp; see the top), where
// 2^m and the result are normal doubles.
inline double ExpDouble(double x) {
  // N = x * 64 / ln 2 rounded to the nearest integer: adding 1.5 * 2^52
  // leaves no fraction bits (round to nearest even, the IEEE default mode).
  constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52
  constexpr double k64OverLn2 = 92.332482616893656;
  const double n = (x * k64OverLn2 + kRound) - kRound;
  // r = x - N ln2 / 64, |r| <= ln2 / 128: N * (kLn2Hi / 64) is exact.
  const double r = (x - n * (kLn2Hi / 64.0)) - n * (kLn2Lo / 64.0);
  // exp(r): Taylor to degree 5 (truncation < 4e-17 relative), Horner.
  double p = 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // exp(x) = 2^m * 2^(j/64) * exp(r) with N = 64 m + j.
  const int big_n = static_cast<int>(n);
  const int j = big_n & 63;
  return (kExp2Table[j] * p) * Pow2Double((big_n - j) / 64);
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

// FixedExp(x), then +0 where below 2^-126 (attention's probabilities, whose
// subnormals are flushed; NaN stays).
inline float FixedExpFlushed(float x) {
  const float e = FixedExp(x);
  return e < std::numeric_limits<float>::min() ? 0.0f : e;
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

inline float FixedTanh(float x) {
  if (std::isnan(x)) return x;
  const double a = std::fabs(static_cast<double>(x));
  double t = 1.0;
  if (a < 0.0625) {
    // tanh a = a (1 + c1 a^2 + ... + c6 a^12), Horner in a^2.
    const double s = a * a;
    double p = 21844.0 / 6081075.0;
    p = p * s - 1382.0 / 155925.0;
    p = p * s + 62.0 / 2835.0;
    p = p * s - 17.0 / 315.0;
    p = p * s + 2.0 / 15.0;
    p = p * s - 1.0 / 3.0;
    t = a + a * (p * s);
  } else if (a <= 10.0) {
    const double e = ExpDouble(2.0 * a);
    t = (e - 1.0) / (e + 1.0);
  }
  const float f = static_cast<float>(t);
  return std::signbit(x) ? -f : f;
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
