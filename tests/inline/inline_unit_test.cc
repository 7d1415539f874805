// The xsimd inline layer (include/trnmx/inline/) against the scalar reference
// (include/trnmx/formats/), at the batch width this executable was compiled
// for (tests/inline/CMakeLists.txt builds it for AVX-512, AVX2 and SSE2).
//
// - every BF16 / FP8 / FP4 code decoded, through the batch and array forms;
// - encoding of boundary sets (every code's value, every midpoint and their
//   FP32 neighbours, specials), random FP32 patterns and every 1031st FP32
//   pattern, under every overflow policy;
// - array helpers for n = 0 .. max(33, 3 lanes + 5) with misaligned pointers
//   and guard bytes around the output;
// - MX blocks: formats.md section 12.5, random blocks (planted ties, -0, NaN,
//   Inf, subnormals, tails n = 0..32) under every scale rule and special-block
//   policy, packed FP4, dequantization. Seeds are printed.
// ctest label: unit. The full 2^32 sweeps are in inline_exhaustive_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "trnmx/formats/codec.h"
#include "trnmx/formats/e8m0.h"
#include "trnmx/formats/mx_block.h"
#include "trnmx/formats/scale_rule.h"
#include "trnmx/inline/all.h"

namespace trnmx::test {
namespace {

namespace tis = trnmx::inline_simd;
using Arch = xsimd::default_arch;
constexpr std::size_t kLanes = xsimd::batch<float, Arch>::size;
constexpr std::uint64_t kSeed = 0x1a11'4e5eedULL;

float F(std::uint32_t bits) { return std::bit_cast<float>(bits); }
std::uint32_t B(float x) { return std::bit_cast<std::uint32_t>(x); }

constexpr Overflow kPolicies[] = {Overflow::kFormatDefault, Overflow::kSatFinite, Overflow::kNonSat,
                                  Overflow::kMlDtypesSat};
constexpr ScaleRule kRules[] = {ScaleRule::kOcpFloor, ScaleRule::kCeil, ScaleRule::kEven,
                                ScaleRule::kRceil,    ScaleRule::kNki,  ScaleRule::kGgml};
constexpr SpecialBlock kSpecials[] = {SpecialBlock::kDefault, SpecialBlock::kSatFiniteBlock};

template <class Traits>
const char* NameOf() {
  if constexpr (std::is_same_v<Traits, Fp8E4M3Traits>) return "E4M3";
  if constexpr (std::is_same_v<Traits, Fp8E5M2Traits>) return "E5M2";
  if constexpr (std::is_same_v<Traits, Fp4E2M1Traits>) return "E2M1";
  return "?";
}

template <class Traits>
std::uint32_t RefCode(float x, Overflow p) {
  return EncodeWithFlags<Traits>(x, {.overflow = p}).code;
}

// Concatenates its arguments (ostringstream: GCC 12 -O3 gives a false
// -Wrestrict on chained std::string operator+, PR 105329).
template <class... Args>
std::string Label(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

// Reports the first few mismatches of one check and counts them all.
struct Mismatches {
  const char* what;
  int count = 0;
  void Add(std::uint32_t in, std::uint32_t got, std::uint32_t want) {
    if (++count <= 8) {
      ADD_FAILURE() << what << ": input 0x" << std::hex << in << " got 0x" << got << " want 0x" << want;
    }
  }
  ~Mismatches() { EXPECT_EQ(count, 0) << what; }
};

// ---------------------------------------------------------------------------
// Input sets.

// Every code's value, every midpoint between neighbouring magnitudes (the RNE
// ties), the overflow threshold, each +-1 and +-2 FP32 ulps, both signs, and
// the FP32 specials.
template <class Traits>
std::vector<std::uint32_t> BoundaryInputs() {
  std::vector<double> values;
  std::vector<double> mags;
  for (std::uint32_t c = 0; c <= Traits::kMaxMagnitudeCode; ++c) mags.push_back(DecodeBits<Traits>(c));
  const double top_ulp = mags.back() - mags[mags.size() - 2];
  mags.push_back(mags.back() + top_ulp);  // MAX + ulp: its midpoint with MAX is the overflow tie
  for (std::size_t i = 0; i < mags.size(); ++i) {
    values.push_back(mags[i]);
    if (i + 1 < mags.size()) values.push_back((mags[i] + mags[i + 1]) / 2);
  }
  values.push_back(Traits::kMinSubnormal / 4);
  values.push_back(Traits::kMaxNormal * 2);
  values.push_back(Traits::kMaxNormal * 4);
  std::vector<std::uint32_t> out = {0x00000000u, 0x00000001u, 0x007FFFFFu, 0x00800000u, 0x00400000u,
                                    0x7F7FFFFFu, 0x7F800000u, 0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu,
                                    0x7FA12345u, 0x3F800000u, 0x3F808000u, 0x3F818000u, 0x00018000u};
  for (const double v : values) {
    const std::uint32_t b = B(static_cast<float>(v));
    for (int d = -2; d <= 2; ++d) out.push_back(b + static_cast<std::uint32_t>(d));
  }
  const std::size_t positive = out.size();
  for (std::size_t i = 0; i < positive; ++i) out.push_back(out[i] ^ 0x80000000u);
  return out;
}

// BF16: every FP32 exponent field with the mantissas around BF16's rounding
// point (ties with even and odd kept LSB, just below and above), both signs.
std::vector<std::uint32_t> Bf16BoundaryInputs() {
  std::vector<std::uint32_t> out;
  const std::uint32_t mantissas[] = {0x000000, 0x000001, 0x007FFF, 0x008000, 0x008001, 0x00FFFF,
                                     0x010000, 0x017FFF, 0x018000, 0x018001, 0x400000, 0x7F7FFF,
                                     0x7F8000, 0x7F8001, 0x7FFFFF, 0x7FFFFE, 0x400001, 0x212345};
  for (std::uint32_t e = 0; e <= 0xFF; ++e) {
    for (const std::uint32_t m : mantissas) {
      out.push_back((e << 23) | m);
      out.push_back(0x80000000u | (e << 23) | m);
    }
  }
  return out;
}

std::vector<std::uint32_t> RandomInputs(std::mt19937_64& rng, std::size_t n) {
  std::vector<std::uint32_t> out(n);
  for (std::uint32_t& b : out) b = static_cast<std::uint32_t>(rng());
  return out;
}

// Random magnitudes concentrated on the format's range (exponent uniform over
// [emin - m - 3, emax + 2]), random sign and mantissa.
template <class Traits>
std::vector<std::uint32_t> InRangeInputs(std::mt19937_64& rng, std::size_t n) {
  std::uniform_int_distribution<int> exp(Traits::kEmin - Traits::kMantissaBits - 3, Traits::kEmax + 2);
  std::vector<std::uint32_t> out(n);
  for (std::uint32_t& b : out) {
    const std::uint32_t r = static_cast<std::uint32_t>(rng());
    b = (r & 0x807FFFFFu) | (static_cast<std::uint32_t>(exp(rng) + 127) << 23);
  }
  return out;
}

// Every 1031st FP32 pattern (~4.2 million, all exponents).
std::vector<std::uint32_t> StridedInputs() {
  std::vector<std::uint32_t> out;
  for (std::uint64_t b = 0; b <= 0xFFFFFFFFull; b += 1031) out.push_back(static_cast<std::uint32_t>(b));
  return out;
}

// ---------------------------------------------------------------------------
// Encoding checks: the array form (batches + tail) and the batch form.

template <class Traits, Overflow P>
void ExpectEncodeMatches(const std::vector<std::uint32_t>& bits, const char* set) {
  std::vector<float> x(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) x[i] = F(bits[i]);
  std::vector<std::uint8_t> got(bits.size());
  tis::Encode<Traits, P, Arch>(x.data(), got.data(), x.size());
  const std::string what = Label(NameOf<Traits>(), " encode (array), policy ", static_cast<int>(P), set);
  Mismatches array{what.c_str()};
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::uint32_t want = RefCode<Traits>(x[i], P);
    if (got[i] != want) array.Add(bits[i], got[i], want);
  }
  const std::string what_b = Label(NameOf<Traits>(), " encode (batch), policy ", static_cast<int>(P), set);
  Mismatches batch{what_b.c_str()};
  alignas(Arch::alignment()) std::int32_t lanes[kLanes];
  for (std::size_t i = 0; i + kLanes <= x.size(); i += kLanes) {
    tis::Encode<Traits, P>(xsimd::batch<float, Arch>::load_unaligned(x.data() + i)).store_aligned(lanes);
    for (std::size_t j = 0; j < kLanes; ++j) {
      const std::uint32_t want = RefCode<Traits>(x[i + j], P);
      if (static_cast<std::uint32_t>(lanes[j]) != want) batch.Add(bits[i + j], lanes[j], want);
    }
  }
}

template <class Traits>
void ExpectEncodeMatchesAllPolicies(const std::vector<std::uint32_t>& bits, const char* set) {
  ExpectEncodeMatches<Traits, Overflow::kFormatDefault>(bits, set);
  ExpectEncodeMatches<Traits, Overflow::kSatFinite>(bits, set);
  ExpectEncodeMatches<Traits, Overflow::kNonSat>(bits, set);
  ExpectEncodeMatches<Traits, Overflow::kMlDtypesSat>(bits, set);
}

void ExpectBf16EncodeMatches(const std::vector<std::uint32_t>& bits, const char* set) {
  std::vector<float> x(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) x[i] = F(bits[i]);
  std::vector<std::uint16_t> got(bits.size());
  tis::EncodeBf16<Arch>(x.data(), got.data(), x.size());
  const std::string what = Label("BF16 encode, ", set);
  Mismatches m{what.c_str()};
  alignas(Arch::alignment()) std::int32_t lanes[kLanes];
  for (std::size_t i = 0; i < x.size(); ++i) {
    // Encode<Bf16> is the general codec; Fp32ToBf16Rne the add-and-shift rule.
    const std::uint32_t want = Encode<Bf16>(x[i]).bits;
    ASSERT_EQ(want, Fp32ToBf16Rne(x[i]).bits);
    if (got[i] != want) m.Add(bits[i], got[i], want);
  }
  for (std::size_t i = 0; i + kLanes <= x.size(); i += kLanes) {
    tis::EncodeBf16(xsimd::batch<float, Arch>::load_unaligned(x.data() + i)).store_aligned(lanes);
    for (std::size_t j = 0; j < kLanes; ++j) {
      if (static_cast<std::uint32_t>(lanes[j]) != got[i + j]) m.Add(bits[i + j], lanes[j], got[i + j]);
    }
  }
}

TEST(InlineArch, IsTheOneThisExecutableWasBuiltFor) {
  std::printf("xsimd::default_arch = %s, %zu float lanes\n", Arch::name(), kLanes);
  EXPECT_STREQ(Arch::name(), TRNMX_INLINE_EXPECTED_ARCH);
}

// ---------------------------------------------------------------------------
// Decoding: every code.

TEST(InlineDecode, EveryBf16Code) {
  std::vector<std::uint16_t> codes(65536);
  for (std::uint32_t c = 0; c < 65536; ++c) codes[c] = static_cast<std::uint16_t>(c);
  std::vector<float> got(codes.size());
  tis::DecodeBf16<Arch>(codes.data(), got.data(), codes.size());
  Mismatches m{"BF16 decode"};
  for (std::uint32_t c = 0; c < 65536; ++c) {
    const std::uint32_t want = B(Decode(Bf16::FromBits(c)));
    if (B(got[c]) != want) m.Add(c, B(got[c]), want);
  }
}

template <class Traits>
void ExpectDecodeEveryCode() {
  // Every byte value: the array form reads the low kTotalBits, like DecodeBits.
  std::vector<std::uint8_t> bytes(256);
  for (std::uint32_t c = 0; c < 256; ++c) bytes[c] = static_cast<std::uint8_t>(c);
  std::vector<float> got(bytes.size());
  tis::Decode<Traits, Arch>(bytes.data(), got.data(), bytes.size());
  const std::string what = Label(NameOf<Traits>(), " decode");
  Mismatches m{what.c_str()};
  for (std::uint32_t c = 0; c < 256; ++c) {
    const std::uint32_t want = B(DecodeBits<Traits>(c));
    if (B(got[c]) != want) m.Add(c, B(got[c]), want);
  }
  // The batch form, on codes in range.
  constexpr std::uint32_t kCodes = 1u << Traits::kTotalBits;
  for (std::uint32_t base = 0; base < kCodes; base += kLanes) {
    alignas(Arch::alignment()) std::int32_t in[kLanes];
    alignas(Arch::alignment()) float out[kLanes];
    for (std::size_t j = 0; j < kLanes; ++j) in[j] = static_cast<std::int32_t>((base + j) % kCodes);
    tis::Decode<Traits>(tis::Codes<Arch>::load_aligned(in)).store_aligned(out);
    for (std::size_t j = 0; j < kLanes; ++j) {
      const std::uint32_t want = B(DecodeBits<Traits>(static_cast<std::uint32_t>(in[j])));
      if (B(out[j]) != want) m.Add(static_cast<std::uint32_t>(in[j]), B(out[j]), want);
    }
  }
}

TEST(InlineDecode, EveryE4M3Code) { ExpectDecodeEveryCode<Fp8E4M3Traits>(); }
TEST(InlineDecode, EveryE5M2Code) { ExpectDecodeEveryCode<Fp8E5M2Traits>(); }
TEST(InlineDecode, EveryE2M1Code) { ExpectDecodeEveryCode<Fp4E2M1Traits>(); }

// encode(decode(c)) == c for every non-NaN code, -0 included (formats.md
// section 11); kNonSat so that E5M2's +-Inf codes come back as themselves.
template <class Traits>
void ExpectRoundTrip() {
  std::vector<std::uint8_t> codes;
  for (std::uint32_t c = 0; c < (1u << Traits::kTotalBits); ++c) {
    if (!std::isnan(DecodeBits<Traits>(c))) codes.push_back(static_cast<std::uint8_t>(c));
  }
  std::vector<float> values(codes.size());
  std::vector<std::uint8_t> back(codes.size());
  tis::Decode<Traits, Arch>(codes.data(), values.data(), codes.size());
  tis::Encode<Traits, Overflow::kNonSat, Arch>(values.data(), back.data(), values.size());
  EXPECT_EQ(back, codes) << NameOf<Traits>();
}

TEST(InlineDecode, RoundTripEveryCode) {
  ExpectRoundTrip<Fp8E4M3Traits>();
  ExpectRoundTrip<Fp8E5M2Traits>();
  ExpectRoundTrip<Fp4E2M1Traits>();
}

// ---------------------------------------------------------------------------
// Encoding.

TEST(InlineEncode, KnownAnswers) {
  // formats.md sections 12.1 and 12.3.
  const std::uint32_t bf16_in[] = {0x3F800000, 0x3F808000, 0x3F818000, 0x3F807FFF, 0x7F7FFFFF, 0x00400000,
                                   0x00018000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
                                   0xFFA12345, 0x7FFFFFFF};
  const std::uint16_t bf16_want[] = {0x3F80, 0x3F80, 0x3F82, 0x3F80, 0x7F80, 0x0040, 0x0002,
                                     0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7FC0, 0xFFE1, 0x7FFF};
  std::array<float, std::size(bf16_in)> x{};
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = F(bf16_in[i]);
  std::array<std::uint16_t, std::size(bf16_in)> b{};
  tis::EncodeBf16<Arch>(x.data(), b.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(b[i], bf16_want[i]) << std::hex << bf16_in[i];

  const float e4m3_in[] = {1.0f, 448.0f, 464.0f, 1000.0f, F(0x7F800000), F(0xFF800000), F(0x7FC00000),
                           F(0xFFC00000), 17.0f, 0x1p-9f, 0x1p-10f, -0.0f};
  const std::uint8_t e4m3_sat[] = {0x38, 0x7E, 0x7E, 0x7E, 0x7E, 0xFE, 0x7F, 0xFF, 0x58, 0x01, 0x00, 0x80};
  const std::uint8_t e4m3_nonsat[] = {0x38, 0x7E, 0x7E, 0x7F, 0x7F, 0xFF, 0x7F, 0xFF, 0x58, 0x01, 0x00, 0x80};
  std::uint8_t q[std::size(e4m3_in)];
  tis::Encode<Fp8E4M3Traits, Overflow::kFormatDefault, Arch>(e4m3_in, q, std::size(e4m3_in));
  for (std::size_t i = 0; i < std::size(e4m3_in); ++i) EXPECT_EQ(q[i], e4m3_sat[i]) << e4m3_in[i];
  tis::Encode<Fp8E4M3Traits, Overflow::kNonSat, Arch>(e4m3_in, q, std::size(e4m3_in));
  for (std::size_t i = 0; i < std::size(e4m3_in); ++i) EXPECT_EQ(q[i], e4m3_nonsat[i]) << e4m3_in[i];

  const float e5m2_in[] = {57344.0f, 61440.0f, 0x1p-16f, 0x1p-17f, F(0x7FC00000), F(0xFFC00000), F(0x7F800000)};
  const std::uint8_t e5m2_sat[] = {0x7B, 0x7B, 0x01, 0x00, 0x7E, 0xFE, 0x7B};
  const std::uint8_t e5m2_nonsat[] = {0x7B, 0x7C, 0x01, 0x00, 0x7E, 0xFE, 0x7C};
  tis::Encode<Fp8E5M2Traits, Overflow::kFormatDefault, Arch>(e5m2_in, q, std::size(e5m2_in));
  for (std::size_t i = 0; i < std::size(e5m2_in); ++i) EXPECT_EQ(q[i], e5m2_sat[i]) << e5m2_in[i];
  tis::Encode<Fp8E5M2Traits, Overflow::kNonSat, Arch>(e5m2_in, q, std::size(e5m2_in));
  for (std::size_t i = 0; i < std::size(e5m2_in); ++i) EXPECT_EQ(q[i], e5m2_nonsat[i]) << e5m2_in[i];

  const float e2m1_in[] = {0.25f, 0.75f, 1.25f, 1.75f, -0.25f, F(0x3E800003), F(0x7FC00000), F(0xFFC00000),
                           F(0x7F800000), F(0xFF800000), 7.0f, 6.5f};
  const std::uint8_t e2m1_want[] = {0x0, 0x2, 0x2, 0x4, 0x8, 0x1, 0x0, 0x0, 0x7, 0xF, 0x7, 0x7};
  tis::Encode<Fp4E2M1Traits, Overflow::kFormatDefault, Arch>(e2m1_in, q, std::size(e2m1_in));
  for (std::size_t i = 0; i < std::size(e2m1_in); ++i) EXPECT_EQ(q[i], e2m1_want[i]) << e2m1_in[i];
}

TEST(InlineEncode, Bf16BoundariesRandomAndStrided) {
  std::printf("seed 0x%llx\n", static_cast<unsigned long long>(kSeed));
  std::mt19937_64 rng(kSeed);
  ExpectBf16EncodeMatches(Bf16BoundaryInputs(), "boundaries");
  ExpectBf16EncodeMatches(RandomInputs(rng, 1 << 20), "random patterns");
  ExpectBf16EncodeMatches(StridedInputs(), "every 1031st pattern");
}

template <class Traits>
void ExpectEncodeSets() {
  std::printf("%s: seed 0x%llx\n", NameOf<Traits>(), static_cast<unsigned long long>(kSeed));
  std::mt19937_64 rng(kSeed);
  ExpectEncodeMatchesAllPolicies<Traits>(BoundaryInputs<Traits>(), "boundaries");
  ExpectEncodeMatchesAllPolicies<Traits>(RandomInputs(rng, 1 << 18), "random patterns");
  ExpectEncodeMatchesAllPolicies<Traits>(InRangeInputs<Traits>(rng, 1 << 18), "in-range random");
  ExpectEncodeMatchesAllPolicies<Traits>(StridedInputs(), "every 1031st pattern");
}

TEST(InlineEncode, E4M3BoundariesRandomAndStrided) { ExpectEncodeSets<Fp8E4M3Traits>(); }
TEST(InlineEncode, E5M2BoundariesRandomAndStrided) { ExpectEncodeSets<Fp8E5M2Traits>(); }
TEST(InlineEncode, E2M1BoundariesRandomAndStrided) { ExpectEncodeSets<Fp4E2M1Traits>(); }

// ---------------------------------------------------------------------------
// Array helpers: tails and misaligned pointers; nothing outside [out, out + n)
// is written.

constexpr std::size_t MaxTail() { return std::max<std::size_t>(33, 3 * kLanes + 5); }
constexpr std::uint8_t kGuard = 0xA5;

std::vector<float> MixedValues(std::mt19937_64& rng, std::size_t n) {
  const std::vector<std::uint32_t> b = BoundaryInputs<Fp8E4M3Traits>();
  std::vector<float> out(n);
  for (float& v : out) {
    v = rng() % 2 ? F(b[rng() % b.size()]) : F(static_cast<std::uint32_t>(rng()));
  }
  return out;
}

template <class Traits>
void ExpectCodecTails(std::mt19937_64& rng) {
  for (std::size_t n = 0; n <= MaxTail(); ++n) {
    for (std::size_t in_off = 0; in_off < 4; ++in_off) {
      const std::size_t out_off = (n + in_off) % 16;
      std::vector<float> src = MixedValues(rng, n + in_off);
      std::vector<std::uint8_t> buf(n + out_off + 16, kGuard);
      tis::Encode<Traits, Overflow::kFormatDefault, Arch>(src.data() + in_off, buf.data() + out_off, n);
      for (std::size_t i = 0; i < buf.size(); ++i) {
        const bool inside = i >= out_off && i < out_off + n;
        const std::uint32_t want = inside ? RefCode<Traits>(src[in_off + i - out_off], Overflow::kFormatDefault)
                                          : kGuard;
        ASSERT_EQ(buf[i], want) << NameOf<Traits>() << " encode n=" << n << " in_off=" << in_off
                                << " out_off=" << out_off << " byte " << i;
      }
      // Decode back from the misaligned codes into misaligned floats.
      std::vector<float> dst(n + in_off + 8, F(0xDEADBEEF));
      tis::Decode<Traits, Arch>(buf.data() + out_off, dst.data() + in_off, n);
      for (std::size_t i = 0; i < dst.size(); ++i) {
        const bool inside = i >= in_off && i < in_off + n;
        const std::uint32_t want = inside ? B(DecodeBits<Traits>(buf[out_off + i - in_off])) : 0xDEADBEEF;
        ASSERT_EQ(B(dst[i]), want) << NameOf<Traits>() << " decode n=" << n << " element " << i;
      }
    }
  }
}

TEST(InlineArrays, TailsAndMisalignment) {
  std::printf("seed 0x%llx, n = 0..%zu\n", static_cast<unsigned long long>(kSeed), MaxTail());
  std::mt19937_64 rng(kSeed);
  ExpectCodecTails<Fp8E4M3Traits>(rng);
  ExpectCodecTails<Fp8E5M2Traits>(rng);
  ExpectCodecTails<Fp4E2M1Traits>(rng);

  for (std::size_t n = 0; n <= MaxTail(); ++n) {
    for (std::size_t off = 0; off < 4; ++off) {
      std::vector<float> src = MixedValues(rng, n + off);
      std::vector<std::uint16_t> buf(n + off + 8, 0xA5A5);
      tis::EncodeBf16<Arch>(src.data() + off, buf.data() + off, n);
      for (std::size_t i = 0; i < buf.size(); ++i) {
        const bool inside = i >= off && i < off + n;
        const std::uint32_t want = inside ? Fp32ToBf16Rne(src[i]).bits : 0xA5A5;
        ASSERT_EQ(buf[i], want) << "BF16 encode n=" << n << " off=" << off << " element " << i;
      }
      std::vector<float> dst(n + 2 * off + 8, F(0xDEADBEEF));
      tis::DecodeBf16<Arch>(buf.data() + off, dst.data() + 2 * off, n);
      for (std::size_t i = 0; i < dst.size(); ++i) {
        const bool inside = i >= 2 * off && i < 2 * off + n;
        const std::uint32_t want = inside ? static_cast<std::uint32_t>(buf[i - off]) << 16 : 0xDEADBEEF;
        ASSERT_EQ(B(dst[i]), want) << "BF16 decode n=" << n << " off=" << off << " element " << i;
      }
    }
  }
}

// Packed FP4: element 2i in bits 3..0, 2i+1 in bits 7..4; odd n leaves the
// last high nibble 0; exactly (n + 1) / 2 bytes written.
TEST(InlineArrays, PackedE2M1) {
  const float example[3] = {0.75f, -6.5f, 2.5f};
  std::uint8_t p[3] = {0, 0, kGuard};
  tis::EncodeE2M1Packed<Overflow::kFormatDefault, Arch>(example, p, 3);
  EXPECT_EQ(p[0], 0xF2);
  EXPECT_EQ(p[1], 0x04);
  EXPECT_EQ(p[2], kGuard);

  std::mt19937_64 rng(kSeed);
  for (std::size_t n = 0; n <= MaxTail(); ++n) {
    for (std::size_t in_off = 0; in_off < 4; ++in_off) {
      const std::size_t out_off = (n * 3 + in_off) % 16;
      const std::size_t bytes = (n + 1) / 2;
      std::vector<float> src = MixedValues(rng, n + in_off);
      for (const Overflow policy : {Overflow::kFormatDefault, Overflow::kNonSat, Overflow::kMlDtypesSat}) {
        std::vector<std::uint8_t> buf(bytes + out_off + 16, kGuard);
        switch (policy) {
          case Overflow::kNonSat:
            tis::EncodeE2M1Packed<Overflow::kNonSat, Arch>(src.data() + in_off, buf.data() + out_off, n);
            break;
          case Overflow::kMlDtypesSat:
            tis::EncodeE2M1Packed<Overflow::kMlDtypesSat, Arch>(src.data() + in_off, buf.data() + out_off, n);
            break;
          default:
            tis::EncodeE2M1Packed<Overflow::kFormatDefault, Arch>(src.data() + in_off, buf.data() + out_off, n);
        }
        for (std::size_t i = 0; i < buf.size(); ++i) {
          std::uint32_t want = kGuard;
          if (i >= out_off && i < out_off + bytes) {
            const std::size_t e = 2 * (i - out_off);
            want = RefCode<Fp4E2M1Traits>(src[in_off + e], policy);
            if (e + 1 < n) want |= RefCode<Fp4E2M1Traits>(src[in_off + e + 1], policy) << 4;
          }
          ASSERT_EQ(buf[i], want) << "E2M1 packed n=" << n << " policy " << static_cast<int>(policy) << " byte " << i;
        }
        std::vector<float> dst(n + in_off + 8, F(0xDEADBEEF));
        tis::DecodeE2M1Packed<Arch>(buf.data() + out_off, dst.data() + in_off, n);
        for (std::size_t i = 0; i < dst.size(); ++i) {
          std::uint32_t want = 0xDEADBEEF;
          if (i >= in_off && i < in_off + n) {
            const std::size_t e = i - in_off;
            const std::uint32_t byte = buf[out_off + e / 2];
            want = B(DecodeBits<Fp4E2M1Traits>(e % 2 == 0 ? byte & 0xF : byte >> 4));
          }
          ASSERT_EQ(B(dst[i]), want) << "E2M1 packed decode n=" << n << " element " << i;
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// MX blocks.

template <class Traits>
void ExpectBlock(const std::vector<float>& v, std::uint8_t want_scale, const std::vector<std::uint8_t>& want_codes,
                 const std::vector<float>& want_values, ScaleRule rule = ScaleRule::kOcpFloor) {
  std::uint8_t codes[32];
  const std::uint8_t scale = tis::QuantizeMxBlock<Traits, Arch>(v.data(), v.size(), codes, rule);
  EXPECT_EQ(scale, want_scale) << NameOf<Traits>();
  for (std::size_t i = 0; i < 32; ++i) {
    EXPECT_EQ(codes[i], i < want_codes.size() ? want_codes[i] : 0) << NameOf<Traits>() << " element " << i;
  }
  std::vector<float> back(v.size());
  tis::DequantizeMxBlock<Traits, Arch>(scale, codes, back.data(), back.size());
  for (std::size_t i = 0; i < want_values.size(); ++i) {
    EXPECT_EQ(B(back[i]), B(want_values[i])) << NameOf<Traits>() << " value " << i;
  }
}

TEST(InlineMx, KnownAnswers) {
  // formats.md section 12.5.
  ExpectBlock<Fp8E4M3Traits>({960, 957, 902.4f, 1, -0.001f, 0, -0.0f, 17}, 0x80,
                             {0x7E, 0x7E, 0x7E, 0x30, 0x80, 0x00, 0x80, 0x50},
                             {896, 896, 896, 1, -0.0f, 0, -0.0f, 16});
  ExpectBlock<Fp8E4M3Traits>({1.875f, 1, 0x1p-7f, 0x1p-8f, 0.0029296875f, -1.5f}, 0x78,
                             {0x77, 0x70, 0x38, 0x30, 0x2C, 0xF4},
                             {1.875f, 1, 0x1p-7f, 0x1p-8f, 0.0029296875f, -1.5f}, ScaleRule::kRceil);
  ExpectBlock<Fp8E5M2Traits>({127.9999f, 1, 3, -0.75f}, 0x76, {0x7B, 0x60, 0x66, 0xDE}, {112, 1, 3, -0.75f});
  const std::vector<float> e2m1 = {7, 2.5f, 0.75f, 1.25f, 1.75f, 3.5f, 5, -0.75f, -0.1f, 6.5f, 1};
  ExpectBlock<Fp4E2M1Traits>(e2m1, 0x7F, {7, 4, 2, 2, 4, 6, 6, 0xA, 8, 7, 2},
                             {6, 2, 1, 1, 2, 4, 4, -1, -0.0f, 6, 1});
  ExpectBlock<Fp4E2M1Traits>(e2m1, 0x80, {6, 2, 1, 1, 2, 4, 4, 9, 8, 5, 1},
                             {8, 2, 1, 1, 2, 4, 4, -1, -0.0f, 6, 1}, ScaleRule::kRceil);
  ExpectBlock<Fp8E4M3Traits>({1, F(0x7FC00000), 2}, 0xFF, {}, {});
  ExpectBlock<Fp8E4M3Traits>({1, F(0xFF800000), 2}, 0xFF, {}, {});
  ExpectBlock<Fp8E4M3Traits>(std::vector<float>(32, 0.0f), 0x00, {}, std::vector<float>(32, 0.0f));
}

TEST(InlineMx, InvalidArguments) {
  std::vector<float> v(40, 1.0f);
  std::uint8_t codes[32];
  std::fill(std::begin(codes), std::end(codes), kGuard);
  EXPECT_EQ((tis::QuantizeMxBlock<Fp8E4M3Traits, Arch>(v.data(), 33, codes)), 0xFF);
  for (const std::uint8_t c : codes) EXPECT_EQ(c, 0);
  std::fill(std::begin(codes), std::end(codes), kGuard);
  EXPECT_EQ((tis::QuantizeMxBlock<Fp8E4M3Traits, Arch>(v.data(), 32, codes, ScaleRule::kGgml)), 0xFF);
  for (const std::uint8_t c : codes) EXPECT_EQ(c, 0);
  std::uint8_t packed[16];
  std::fill(std::begin(packed), std::end(packed), kGuard);
  EXPECT_EQ((tis::QuantizeMxBlockE2M1Packed<Arch>(v.data(), 40, packed)), 0xFF);
  for (const std::uint8_t c : packed) EXPECT_EQ(c, 0);
}

// A random block of n values of one of several kinds.
template <class Traits>
std::vector<float> RandomBlock(std::mt19937_64& rng, std::size_t n) {
  std::vector<float> v(n);
  const int kind = static_cast<int>(rng() % 5);
  const int block_exp = static_cast<int>(rng() % 280) - 150;  // amax binade, incl. FP32 subnormals
  for (float& x : v) {
    const std::uint32_t r = static_cast<std::uint32_t>(rng());
    switch (kind) {
      case 0: {  // Random magnitudes within ~24 binades below 2^block_exp.
        const int e = std::clamp(block_exp - static_cast<int>(r % 24), -149, 127);
        x = std::ldexp(1.0f + static_cast<float>(r >> 9) * 0x1p-23f, e) * ((r & 1) ? -1.0f : 1.0f);
        break;
      }
      case 1: {  // Planted codes and ties: (code value or midpoint) * 2^k.
        const std::uint32_t c = r % (Traits::kMaxMagnitudeCode + 1);
        const double lo = DecodeBits<Traits>(c);
        const double hi = c < Traits::kMaxMagnitudeCode ? DecodeBits<Traits>(c + 1) : lo * 1.25;
        const double val = (r & 2) ? (lo + hi) / 2 : lo;
        x = static_cast<float>(std::ldexp(val, std::clamp(block_exp, -120, 100) - Traits::kEmax)) *
            ((r & 1) ? -1.0f : 1.0f);
        break;
      }
      case 2:  // Zeros of both signs, a few tiny values.
        x = (r % 5 == 0) ? F(r & 0x800000FFu) : F(r & 0x80000000u);
        break;
      case 3:  // FP32 subnormals and small normals.
        x = F(r & 0x80FFFFFFu);
        break;
      default:  // Any pattern: huge, tiny, NaN, Inf.
        x = F(r);
        break;
    }
  }
  // Sometimes plant one NaN or +-Inf among finite values.
  if (n > 0 && rng() % 4 == 0) {
    const std::uint32_t specials[] = {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFF812345u};
    v[rng() % n] = F(specials[rng() % 4]);
  }
  return v;
}

template <class Traits>
void ExpectRandomBlocks(int iterations) {
  std::printf("%s MX blocks: seed 0x%llx, %d blocks x %zu rules x %zu special policies\n", NameOf<Traits>(),
              static_cast<unsigned long long>(kSeed), iterations, std::size(kRules), std::size(kSpecials));
  std::mt19937_64 rng(kSeed);
  int failures = 0;
  for (int it = 0; it < iterations && failures < 8; ++it) {
    const std::size_t n = (it % 3 == 0) ? 32 : rng() % 33;
    const std::size_t in_off = rng() % 4;
    const std::size_t code_off = rng() % 8;
    std::vector<float> storage(in_off + n);
    const std::vector<float> v = RandomBlock<Traits>(rng, n);
    std::copy(v.begin(), v.end(), storage.begin() + static_cast<std::ptrdiff_t>(in_off));
    for (const ScaleRule rule : kRules) {
      for (const SpecialBlock special : kSpecials) {
        const MxBlockCodes want = QuantizeMxBlock<Traits>(std::span<const float>(v), rule, {}, special);
        std::uint8_t buf[32 + 8];
        std::fill(std::begin(buf), std::end(buf), kGuard);
        const std::uint8_t scale =
            tis::QuantizeMxBlock<Traits, Arch>(storage.data() + in_off, n, buf + code_off, rule, special);
        bool ok = scale == want.scale.bits &&
                  std::equal(want.codes.begin(), want.codes.end(), buf + code_off);
        if constexpr (std::is_same_v<Traits, Fp4E2M1Traits>) {
          std::uint8_t packed[16 + 8];
          std::fill(std::begin(packed), std::end(packed), kGuard);
          const std::uint8_t pscale =
              tis::QuantizeMxBlockE2M1Packed<Arch>(storage.data() + in_off, n, packed + code_off, rule, special);
          ok = ok && pscale == want.scale.bits;
          for (std::size_t j = 0; j < 16; ++j) {
            ok = ok && packed[code_off + j] == (want.codes[2 * j] | (want.codes[2 * j + 1] << 4));
          }
          ok = ok && packed[code_off + 16] == kGuard;
        }
        // Dequantize n values from the (possibly misaligned) codes.
        std::vector<float> got_values(n + in_off), want_values(n);
        DequantizeMxBlock<Traits>(want, std::span<float>(want_values));
        tis::DequantizeMxBlock<Traits, Arch>(scale, buf + code_off, got_values.data() + in_off, n);
        for (std::size_t i = 0; i < n; ++i) ok = ok && B(got_values[in_off + i]) == B(want_values[i]);
        ok = ok && buf[code_off + 32] == kGuard;
        if (!ok) {
          ++failures;
          std::ostringstream dump;
          for (const float x : v) dump << " " << std::hex << B(x);
          ADD_FAILURE() << NameOf<Traits>() << " block " << it << " n=" << n << " rule "
                        << ScaleRuleName(rule) << " special " << static_cast<int>(special) << ": scale "
                        << int{scale} << " want " << int{want.scale.bits} << "; input bits:" << dump.str();
        }
      }
    }
  }
}

TEST(InlineMx, RandomBlocksE4M3) { ExpectRandomBlocks<Fp8E4M3Traits>(20000); }
TEST(InlineMx, RandomBlocksE5M2) { ExpectRandomBlocks<Fp8E5M2Traits>(20000); }
TEST(InlineMx, RandomBlocksE2M1) { ExpectRandomBlocks<Fp4E2M1Traits>(20000); }

// Dequantization of arbitrary codes under every scale code, 00 (2^-127, an
// FP32 subnormal), FE and FF (NaN) included.
template <class Traits>
void ExpectDequantizeAnyCodes() {
  std::mt19937_64 rng(kSeed);
  for (std::uint32_t scale = 0; scale <= 0xFF; ++scale) {
    MxBlockCodes block;
    block.scale = ScaleE8M0::FromBits(scale);
    for (std::uint8_t& c : block.codes) c = static_cast<std::uint8_t>(rng() & ((1u << Traits::kTotalBits) - 1));
    float want[32], got[32];
    DequantizeMxBlock<Traits>(block, std::span<float>(want));
    tis::DequantizeMxBlock<Traits, Arch>(block.scale.bits, block.codes.data(), got, 32);
    std::uint8_t packed[16];
    for (std::size_t j = 0; j < 16; ++j) {
      packed[j] = static_cast<std::uint8_t>((block.codes[2 * j] & 0xF) | ((block.codes[2 * j + 1] & 0xF) << 4));
    }
    float got_packed[32];
    if constexpr (std::is_same_v<Traits, Fp4E2M1Traits>) {
      tis::DequantizeMxBlockE2M1Packed<Arch>(block.scale.bits, packed, got_packed, 32);
    } else {
      std::copy(std::begin(got), std::end(got), got_packed);
    }
    for (std::size_t i = 0; i < 32; ++i) {
      // NaN element times NaN scale: which NaN the multiply returns is the
      // CPU's operand-order choice, not a trnmx rule; both must be NaN.
      if (std::isnan(want[i]) && std::isnan(DecodeBits<Traits>(block.codes[i])) && scale == 0xFF) {
        EXPECT_TRUE(std::isnan(got[i]) && std::isnan(got_packed[i]));
        continue;
      }
      ASSERT_EQ(B(got[i]), B(want[i])) << NameOf<Traits>() << " scale " << scale << " code " << int{block.codes[i]};
      ASSERT_EQ(B(got_packed[i]), B(want[i])) << NameOf<Traits>() << " packed, scale " << scale;
    }
  }
}

TEST(InlineMx, DequantizeAnyCodesAndScales) {
  ExpectDequantizeAnyCodes<Fp8E4M3Traits>();
  ExpectDequantizeAnyCodes<Fp8E5M2Traits>();
  ExpectDequantizeAnyCodes<Fp4E2M1Traits>();
}

}  // namespace
}  // namespace trnmx::test
