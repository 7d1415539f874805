// Every FP32 input whose magnitude lies in [min_subnormal / 4, 4 MAX] --
// every binade where an element format's rounding is decided -- against
// MPFR (formats.md section 13): precision m + 1, emin = 2 - bias - m, then
// mpfr_subnormalize. Overflow is decided on the MPFR result (> MAX) and the
// code built from the double value by frexp arithmetic, so nothing here
// shares code with trnmx's codec or the table oracle. Inputs outside the
// window round to zero/min-subnormal or overflow; the table-oracle sweep
// covers them. RNE on both signs, RZ on positive inputs. Label: exhaustive.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "formats/oracle.h"
#include "trnmx/formats/codec.h"

namespace trnmx::test {
namespace {

// Code of a representable finite value v of `spec`, by exponent arithmetic.
std::uint32_t CodeOfValue(const FormatSpec& spec, double v) {
  const std::uint32_t sign = std::signbit(v) ? spec.sign_mask() : 0;
  const double a = std::fabs(v);
  if (a == 0) return sign;
  const int m = spec.mantissa_bits;
  const int emin = 1 - spec.bias;
  const int e = std::ilogb(a);
  if (e < emin) return sign | static_cast<std::uint32_t>(std::ldexp(a, m - emin));
  const auto significand = static_cast<std::uint32_t>(std::ldexp(a, m - e));  // in [2^m, 2^(m+1))
  return sign | (static_cast<std::uint32_t>(e + spec.bias) << m) | (significand - (1u << m));
}

class MpfrRounder {
 public:
  explicit MpfrRounder(const FormatSpec& spec) : saved_emin_(mpfr_get_emin()) {
    mpfr_init2(value_, spec.mantissa_bits + 1);
    mpfr_set_emin(2 - spec.bias - spec.mantissa_bits);
  }
  ~MpfrRounder() {
    mpfr_clear(value_);
    mpfr_set_emin(saved_emin_);
  }
  double Round(float x, mpfr_rnd_t rnd) {
    int t = mpfr_set_flt(value_, x, rnd);
    t = mpfr_check_range(value_, t, rnd);
    mpfr_subnormalize(value_, t, rnd);
    return mpfr_get_d(value_, MPFR_RNDN);  // exact: few significant bits
  }

 private:
  mpfr_exp_t saved_emin_;
  mpfr_t value_;
};

template <class Traits>
void SweepWindow(const FormatSpec& spec) {
  const auto start = std::chrono::steady_clock::now();
  MpfrRounder mpfr(spec);
  const double max = Traits::kMaxNormal;
  const std::uint32_t max_code = Traits::kMaxMagnitudeCode;
  const std::uint32_t lo_bits = std::bit_cast<std::uint32_t>(static_cast<float>(Traits::kMinSubnormal / 4));
  const std::uint32_t hi_bits = std::bit_cast<std::uint32_t>(static_cast<float>(4 * max));
  std::uint64_t checks = 0, mismatches = 0;
  const auto expect = [&](std::uint32_t bits, const EncodeOptions& o, std::uint32_t want) {
    const std::uint32_t got = EncodeWithFlags<Traits>(std::bit_cast<float>(bits), o).code;
    ++checks;
    if (got != want && ++mismatches <= 10) {
      ADD_FAILURE() << spec.name << " x=0x" << std::hex << bits << " rounding "
                    << static_cast<int>(o.rounding) << ": got 0x" << got << " MPFR 0x" << want;
    }
  };
  for (std::uint32_t abs_bits = lo_bits; abs_bits <= hi_bits; ++abs_bits) {
    for (std::uint32_t sign : {0u, 0x80000000u}) {
      const std::uint32_t bits = abs_bits | sign;
      const std::uint32_t sign_code = sign ? Traits::kSignMask : 0;
      const float x = std::bit_cast<float>(bits);
      const double rne = mpfr.Round(x, MPFR_RNDN);
      if (std::fabs(rne) > max) {
        expect(bits, {.overflow = Overflow::kSatFinite}, sign_code | max_code);
      } else {
        expect(bits, {.overflow = Overflow::kSatFinite}, CodeOfValue(spec, rne));
      }
      if (sign == 0) {
        const double rz = mpfr.Round(x, MPFR_RNDZ);
        // Round toward zero never passes MAX's binade carry beyond MAX + ulp;
        // anything above MAX clamps to MAX (IEEE round-toward-zero overflow).
        expect(bits, {.rounding = Rounding::kTowardZero},
               std::fabs(rz) > max ? max_code : CodeOfValue(spec, rz));
      }
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: MPFR %s, %llu checks on |x| in [0x%08x, 0x%08x], %llu mismatches, %.1f s\n",
              spec.name, mpfr_get_version(), static_cast<unsigned long long>(checks), lo_bits,
              hi_bits, static_cast<unsigned long long>(mismatches), seconds);
  EXPECT_EQ(mismatches, 0u);
}

TEST(MpfrSweep, Fp8E4M3) { SweepWindow<Fp8E4M3Traits>(kSpecE4M3); }
TEST(MpfrSweep, Fp8E5M2) { SweepWindow<Fp8E5M2Traits>(kSpecE5M2); }
TEST(MpfrSweep, Fp6E2M3) { SweepWindow<Fp6E2M3Traits>(kSpecE2M3); }
TEST(MpfrSweep, Fp6E3M2) { SweepWindow<Fp6E3M2Traits>(kSpecE3M2); }
TEST(MpfrSweep, Fp4E2M1) { SweepWindow<Fp4E2M1Traits>(kSpecE2M1); }
TEST(MpfrSweep, Fp16) { SweepWindow<Fp16Traits>(kSpecFp16); }

}  // namespace
}  // namespace trnmx::test
