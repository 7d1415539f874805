// Independent references for the scalar codecs, written differently from
// include/trnmx/formats/codec.h on purpose:
//
// - TableOracle: every finite non-negative value of a format, computed in
//   double with std::ldexp from the S.E.M formula, sorted; an FP32 input is
//   placed between its two neighbours by binary search and rounded by exact
//   double comparisons with the midpoint (values and midpoints of these
//   formats are exact in double). Overflow is decided against MAX and the
//   midpoint of MAX and the next value an unbounded exponent would give.
// - MpfrRound: MPFR with precision m+1 and emin = 2 - bias - m, then
//   mpfr_subnormalize (formats.md section 13).
//
// Policies (formats.md section 3.2) are applied here from plain tables, not
// by calling trnmx.
#ifndef TRNMX_TESTS_FORMATS_ORACLE_H_
#define TRNMX_TESTS_FORMATS_ORACLE_H_

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "trnmx/formats/policy.h"

namespace trnmx::test {

// Shape of a format, given by hand (not taken from trnmx's traits).
struct FormatSpec {
  const char* name;
  int exponent_bits;
  int mantissa_bits;
  int bias;
  enum Kind { kIeee, kNanAllOnes, kNoNonFinite } kind;
  // Policy defaults of formats.md section 1.
  Overflow default_overflow;
  NanPolicy default_nan;

  int total_bits() const { return 1 + exponent_bits + mantissa_bits; }
  std::uint32_t sign_mask() const { return 1u << (exponent_bits + mantissa_bits); }
};

inline const FormatSpec kSpecBf16{"bf16", 8, 7, 127, FormatSpec::kIeee, Overflow::kNonSat, NanPolicy::kQuietPayload};
inline const FormatSpec kSpecFp16{"fp16", 5, 10, 15, FormatSpec::kIeee, Overflow::kNonSat, NanPolicy::kQuietPayload};
inline const FormatSpec kSpecE4M3{"e4m3", 4, 3, 7, FormatSpec::kNanAllOnes, Overflow::kSatFinite, NanPolicy::kCanonical};
// Trainium's NeuronCore-v2/v3 FP8 (ml_dtypes float8_e4m3): IEEE-style specials, max 240.
inline const FormatSpec kSpecE4M3Ieee{"e4m3-ieee", 4, 3, 7, FormatSpec::kIeee, Overflow::kSatFinite, NanPolicy::kCanonical};
inline const FormatSpec kSpecE5M2{"e5m2", 5, 2, 15, FormatSpec::kIeee, Overflow::kSatFinite, NanPolicy::kCanonical};
inline const FormatSpec kSpecE2M3{"e2m3", 2, 3, 1, FormatSpec::kNoNonFinite, Overflow::kSatFinite, NanPolicy::kZero};
inline const FormatSpec kSpecE3M2{"e3m2", 3, 2, 3, FormatSpec::kNoNonFinite, Overflow::kSatFinite, NanPolicy::kZero};
inline const FormatSpec kSpecE2M1{"e2m1", 2, 1, 1, FormatSpec::kNoNonFinite, Overflow::kSatFinite, NanPolicy::kZero};

// The value of a code by the S.E.M formula in double; NaN/Inf codes -> NaN/Inf.
inline double SpecDecode(const FormatSpec& f, std::uint32_t code) {
  const int m = f.mantissa_bits;
  const bool negative = (code & f.sign_mask()) != 0;
  const std::uint32_t magnitude = code & (f.sign_mask() - 1);
  const int e = static_cast<int>(magnitude >> m);
  const int frac = static_cast<int>(magnitude & ((1u << m) - 1));
  const int e_all_ones = (1 << f.exponent_bits) - 1;
  double v;
  if (f.kind == FormatSpec::kIeee && e == e_all_ones) {
    v = frac == 0 ? INFINITY : NAN;
  } else if (f.kind == FormatSpec::kNanAllOnes && e == e_all_ones && frac == (1 << m) - 1) {
    v = NAN;
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(frac), 1 - f.bias - m);
  } else {
    v = std::ldexp(static_cast<double>((1 << m) + frac), e - f.bias - m);
  }
  return negative ? -v : v;
}

// Where |x| falls relative to its two neighbouring values.
struct Bracket {
  std::uint32_t lo_code;   // Largest value <= |x| (magnitude code).
  std::uint32_t hi_code;   // Next value up; kOverflowCode if past MAX.
  int position;            // 0 exact; -1 below midpoint; 1 above; 2 at the tie.
  bool hi_is_even;         // Tie target: is hi's code even?
};

class TableOracle {
 public:
  static constexpr std::uint32_t kOverflowCode = 0xFFFFFFFFu;

  explicit TableOracle(const FormatSpec& f) : spec_(f) {
    for (std::uint32_t c = 0; c < f.sign_mask(); ++c) {
      const double v = SpecDecode(f, c);
      if (std::isfinite(v)) {
        values_.push_back(v);
        codes_.push_back(c);
      }
    }
    // Magnitude codes increase with value, so the table is already sorted.
    const int m = f.mantissa_bits;
    const double max = values_.back();
    const int emax = std::ilogb(max);
    beyond_max_ = max + std::ldexp(1.0, emax - m);  // Unbounded-exponent successor.
    max_code_ = codes_.back();
  }

  double max() const { return values_.back(); }
  // Every finite non-negative value, increasing; and MAX's successor under
  // an unbounded exponent (where rounding past MAX is decided).
  const std::vector<double>& values() const { return values_; }
  double beyond_max() const { return beyond_max_; }
  std::uint32_t max_code() const { return max_code_; }
  const FormatSpec& spec() const { return spec_; }

  // Brackets a = |x| for finite x. With `hint` (an index into the table that
  // the caller keeps between calls with non-decreasing a), the search walks
  // forward from it instead of bisecting: O(1) per input in a sweep.
  Bracket Locate(double a, std::size_t* hint = nullptr) const {
    std::size_t lo;
    if (hint != nullptr) {
      lo = *hint;
      while (lo + 1 < values_.size() && values_[lo + 1] <= a) ++lo;
      *hint = lo;
    } else {
      const auto it = std::upper_bound(values_.begin(), values_.end(), a);
      lo = static_cast<std::size_t>(it - values_.begin()) - 1;
    }
    const double lo_v = values_[lo];
    if (lo_v == a) return {codes_[lo], codes_[lo], 0, false};
    const bool past_max = lo + 1 == values_.size();
    const double hi_v = past_max ? beyond_max_ : values_[lo + 1];
    const std::uint32_t hi_code = past_max ? kOverflowCode : codes_[lo + 1];
    // The successor of MAX has the next even mantissa iff MAX's is odd.
    const bool hi_even = past_max ? (codes_[lo] & 1u) != 0 : (hi_code & 1u) == 0;
    const double mid = (lo_v + hi_v) / 2;  // Exact: few significant bits.
    const int pos = a < mid ? -1 : a > mid ? 1 : 2;
    return {codes_[lo], hi_code, pos, hi_even};
  }

  // Expected magnitude code for finite x under a rounding (not stochastic);
  // kOverflowCode when the rounded value exceeds MAX.
  std::uint32_t RoundMagnitude(double a, Rounding r) const {
    return Round(Locate(a), r);
  }
  static std::uint32_t Round(const Bracket& b, Rounding r) {
    if (b.position == 0) return b.lo_code;
    bool up = false;
    switch (r) {
      case Rounding::kNearestEven: up = b.position == 1 || (b.position == 2 && b.hi_is_even); break;
      case Rounding::kTiesAway: up = b.position >= 1; break;
      case Rounding::kTowardZero: up = false; break;
      case Rounding::kStochastic: up = false; break;
    }
    return up ? b.hi_code : b.lo_code;
  }

 private:
  FormatSpec spec_;
  std::vector<double> values_;
  std::vector<std::uint32_t> codes_;
  double beyond_max_ = 0;
  std::uint32_t max_code_ = 0;
};

// The magnitudes where the oracle's answer for some rounding or overflow
// policy can change: every value, every midpoint of neighbouring values,
// MAX's midpoint with its unbounded successor, that successor, and 4 MAX
// (the end of the window where the overflow policies are checked on every
// input). Between two of them the bracket of Locate is the same.
inline std::vector<double> DecisionBreakpoints(const TableOracle& oracle) {
  std::vector<double> points = oracle.values();
  const std::size_t n = points.size();
  for (std::size_t i = 0; i + 1 < n; ++i) points.push_back((points[i] + points[i + 1]) / 2);
  points.push_back((oracle.max() + oracle.beyond_max()) / 2);
  points.push_back(oracle.beyond_max());
  points.push_back(4 * oracle.max());
  return points;
}

// The full expected code of FP32 bits under the given options, from the
// oracle's rounding and the policy tables of formats.md section 3.2.
// `bracket`, if given, is oracle.Locate(|x|) already computed by a sweep.
inline std::uint32_t ExpectedCode(const TableOracle& oracle, std::uint32_t bits,
                                  const EncodeOptions& o, const Bracket* bracket = nullptr) {
  const FormatSpec& f = oracle.spec();
  const int m = f.mantissa_bits;
  const std::uint32_t sign = (bits >> 31) ? f.sign_mask() : 0;
  const std::uint32_t e_all_ones = (1u << f.exponent_bits) - 1;
  const std::uint32_t max_code = oracle.max_code();
  const Overflow ov = o.overflow == Overflow::kFormatDefault ? f.default_overflow : o.overflow;
  const NanPolicy np = o.nan == NanPolicy::kFormatDefault ? f.default_nan : o.nan;
  // Non-saturated overflow code per format kind.
  const std::uint32_t nonsat_code =
      f.kind == FormatSpec::kIeee ? (e_all_ones << m)
      : f.kind == FormatSpec::kNanAllOnes ? (e_all_ones << m) | ((1u << m) - 1)
                                           : max_code;
  const std::uint32_t abs_bits = bits & 0x7FFFFFFFu;
  if (abs_bits > 0x7F800000u) {  // NaN
    if (f.kind == FormatSpec::kNoNonFinite) {
      return np == NanPolicy::kMlDtypesNaN ? (sign ^ f.sign_mask()) : 0;
    }
    if (f.kind == FormatSpec::kNanAllOnes) return sign | (e_all_ones << m) | ((1u << m) - 1);
    const std::uint32_t quiet = 1u << (m - 1);
    const std::uint32_t payload = np == NanPolicy::kQuietPayload ? (abs_bits & 0x7FFFFF) >> (23 - m) : 0;
    return sign | (e_all_ones << m) | quiet | payload;
  }
  if (abs_bits == 0x7F800000u) {
    return sign | (ov == Overflow::kSatFinite ? max_code : nonsat_code);
  }
  float x = std::bit_cast<float>(bits);
  if (o.subnormals == Subnormals::kFlush && abs_bits < 0x00800000u) {
    x = 0.0f;
    bracket = nullptr;
  }
  const std::uint32_t mag = bracket != nullptr
                                ? TableOracle::Round(*bracket, o.rounding)
                                : oracle.RoundMagnitude(std::fabs(static_cast<double>(x)), o.rounding);
  if (mag == TableOracle::kOverflowCode) {
    const bool nonsat = ov == Overflow::kNonSat && o.rounding != Rounding::kTowardZero;
    return sign | (nonsat ? nonsat_code : max_code);
  }
  return sign | mag;
}

}  // namespace trnmx::test

#endif  // TRNMX_TESTS_FORMATS_ORACLE_H_
