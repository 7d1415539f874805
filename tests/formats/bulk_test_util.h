// Test support for the bulk and MX line SIMD tests: seeded FP32 inputs that
// exercise every branch of a format's encoder (ties, carries, overflow,
// subnormals on both sides, Inf, NaNs with payloads, signed zeros).
#ifndef TRNMX_TESTS_FORMATS_BULK_TEST_UTIL_H_
#define TRNMX_TESTS_FORMATS_BULK_TEST_UTIL_H_

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "support/random.h"
#include "trnmx/formats/codec.h"
#include "trnmx/formats/policy.h"
#include "trnmx/options.h"

namespace trnmx::test {

// The seed of every random input of the bulk codec tests (printed;
// TRNMX_TEST_SEED overrides it, support/random.h).
inline std::uint64_t TestSeed() { return testing::TestSeed(0x5eed'b01cULL); }

// Every value of each EncodeOptions field but Rounding::kStochastic (which
// needs random bits) and the MXINT8 range.
inline constexpr Rounding kRoundings[] = {Rounding::kNearestEven, Rounding::kTiesAway,
                                          Rounding::kTowardZero};
inline constexpr Overflow kOverflows[] = {Overflow::kFormatDefault, Overflow::kSatFinite,
                                          Overflow::kNonSat, Overflow::kMlDtypesSat};
inline constexpr NanPolicy kNans[] = {NanPolicy::kFormatDefault, NanPolicy::kQuietPayload,
                                      NanPolicy::kCanonical, NanPolicy::kZero,
                                      NanPolicy::kMlDtypesNaN};
inline constexpr Subnormals kSubnormals[] = {Subnormals::kKeep, Subnormals::kFlush};

inline constexpr std::uint32_t kSpecialBits[] = {
    0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
    0xFFA12345, 0x7FFFFFFF, 0xFFFFFFFF, 0x00000001, 0x80000001, 0x00400000, 0x807FFFFF,
    0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0x3F808000, 0x3F818000, 0x00018000,
};

// FP32 bit patterns for a format with `Traits`: random patterns, values
// spread over the format's binades +-3, exact codes, exact midpoints between
// neighbouring codes and their FP32 neighbours, specials, FP32 subnormals.
template <class Traits>
std::vector<float> MakeInputs(std::size_t n, std::mt19937_64& rng) {
  constexpr int m = Traits::kMantissaBits;
  constexpr std::uint32_t kMaxMag = Traits::kMaxMagnitudeCode;
  std::vector<float> out(n);
  for (float& x : out) {
    const std::uint64_t r = rng();
    const std::uint32_t sign = (r & 1) ? 0x80000000u : 0u;
    const std::uint32_t r32 = static_cast<std::uint32_t>(r >> 32);
    std::uint32_t bits = 0;
    switch ((r >> 1) % 10) {
      case 0:
      case 1:
        bits = r32;
        break;
      case 2:
      case 3:
      case 4: {  // A binade of the format's range, +-3, any mantissa.
        const int lo = Traits::kEmin - m - 3 + 127;
        const int hi = Traits::kEmax + 3 + 127;
        const int e = lo + static_cast<int>((r >> 8) % static_cast<std::uint64_t>(hi - lo + 1));
        const int ec = e < 1 ? 1 : e > 254 ? 254 : e;
        bits = sign | (static_cast<std::uint32_t>(ec) << 23) | (r32 & 0x7FFFFF);
        break;
      }
      case 5:
      case 6: {  // A code's value, or the midpoint of two neighbours, +-1 ulp.
        const std::uint32_t c = static_cast<std::uint32_t>((r >> 8) % (kMaxMag + 1));
        const double lo = static_cast<double>(DecodeBits<Traits>(c));
        const double hi = c < kMaxMag ? static_cast<double>(DecodeBits<Traits>(c + 1))
                                      : lo + detail::Pow2(Traits::kEmax - m);  // MAX + 1 ulp
        const double v = ((r >> 40) & 1) ? lo : (lo + hi) / 2;
        bits = std::bit_cast<std::uint32_t>(static_cast<float>(v)) | sign;
        const int nudge = static_cast<int>((r >> 44) % 3) - 1;
        if ((bits & 0x7FFFFFFF) != 0)
          bits = static_cast<std::uint32_t>(static_cast<int>(bits) + nudge);
        break;
      }
      case 7:
      case 8:
        bits = kSpecialBits[(r >> 8) % std::size(kSpecialBits)];
        break;
      default:
        bits = sign | (r32 & 0x7FFFFF);  // FP32 subnormal
        break;
    }
    x = std::bit_cast<float>(bits);
  }
  return out;
}

inline std::uint32_t Bits(float x) { return std::bit_cast<std::uint32_t>(x); }

}  // namespace trnmx::test

#endif  // TRNMX_TESTS_FORMATS_BULK_TEST_UTIL_H_
