// SIMD MX line kernels (src/formats/mx_line.h: QuantizeMxLineSimd,
// DequantizeMxLineSimd) against the one-block reference (mx_block.h:
// QuantizeMxBlock / DequantizeMxBlock) plus the packing rule of formats.md
// section 9, bit for bit, on every compiled Highway target: every MX format
// with 32-element blocks, every scale rule defined for it, both special-block
// policies, rounding/overflow/subnormal/int8-range options, lengths 0..300
// (tails) at misaligned offsets, seeded random blocks with NaN, Inf, zeros,
// FP32 subnormals, huge values and planted ties. ctest label: unit.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "formats/bulk_test_util.h"
#include "formats/mx_line.h"
#include "support/hwy_targets.h"
#include "trnmx/formats/mx_block.h"
#include "trnmx/formats/mx_format.h"
#include "trnmx/formats/visit.h"

namespace trnmx::test {
namespace {

using internal::DequantizeMxLineSimd;
using internal::MxLineParams;
using internal::QuantizeMxLineSimd;

// The tests that run once per compiled Highway target (named .../AVX2 etc.).
class MxLineSimdPerTarget : public testing::HwyTargetTest {};
TRNMX_INSTANTIATE_PER_HWY_TARGET(MxLineSimdPerTarget);

// Every format of the SIMD line kernels (format_list.h).
constexpr auto kFormats = kOcpMxFormats;
constexpr ScaleRule kRules[] = {ScaleRule::kOcpFloor, ScaleRule::kCeil, ScaleRule::kEven,
                                ScaleRule::kRceil,    ScaleRule::kNki,  ScaleRule::kGgml};

// Calls fn.template operator()<Traits>() for the element traits of `format`.
template <class Fn>
void WithTraits(MxFormat format, Fn&& fn) {
  ASSERT_TRUE(IsOcpMxFormat(format)) << "no SIMD kernel for this format";
  VisitMxFormat(format, [&](auto tag) {
    fn.template operator()<typename decltype(tag)::Traits>();
  });
}

bool RuleDefined(MxFormat format, ScaleRule rule) {
  bool defined = false;
  WithTraits(format, [&]<class Traits>() { defined = IsScaleRuleDefined<Traits>(rule); });
  return defined;
}

// MxLineParams without designated initializers (its `element` member has no
// default member initializer, which -Wmissing-field-initializers flags).
MxLineParams Params(MxFormat format, ScaleRule rule = ScaleRule::kOcpFloor,
                    const EncodeOptions& element = {},
                    SpecialBlock special = SpecialBlock::kDefault) {
  MxLineParams p;
  p.format = format;
  p.rule = rule;
  p.element = element;
  p.special = special;
  return p;
}

// formats.md section 9: FP8/INT8 one byte; FP4 element 2i in bits 3..0;
// FP6 four codes a b c d -> (a | b << 6), (b >> 2 | c << 4), (c >> 4 | d << 2).
void PackBlock(int bits, const std::array<std::uint8_t, 32>& c, std::uint8_t* out) {
  if (bits == 8) {
    for (int i = 0; i < 32; ++i) out[i] = c[i];
  } else if (bits == 4) {
    for (int i = 0; i < 16; ++i) out[i] = static_cast<std::uint8_t>(c[2 * i] | (c[2 * i + 1] << 4));
  } else {
    for (int g = 0; g < 8; ++g) {
      const unsigned a = c[4 * g], b = c[4 * g + 1], cc = c[4 * g + 2], d = c[4 * g + 3];
      out[3 * g] = static_cast<std::uint8_t>((a | (b << 6)) & 0xFF);
      out[3 * g + 1] = static_cast<std::uint8_t>(((b >> 2) | (cc << 4)) & 0xFF);
      out[3 * g + 2] = static_cast<std::uint8_t>((cc >> 4) | (d << 2));
    }
  }
}

std::array<std::uint8_t, 32> UnpackBlock(int bits, const std::uint8_t* in) {
  std::array<std::uint8_t, 32> c{};
  for (int i = 0; i < 32; ++i) {
    if (bits == 8) {
      c[i] = in[i];
    } else if (bits == 4) {
      c[i] = static_cast<std::uint8_t>((in[i / 2] >> (4 * (i % 2))) & 0xF);
    } else {
      const unsigned bit = 6u * static_cast<unsigned>(i);
      const unsigned word = in[bit / 8] | (bit / 8 + 1 < 24 ? in[bit / 8 + 1] << 8 : 0u);
      c[i] = static_cast<std::uint8_t>((word >> (bit % 8)) & 0x3F);
    }
  }
  return c;
}

TEST(MxLineSimdTest, PackingRuleExample) {
  std::array<std::uint8_t, 32> c{};
  c[0] = 0x01, c[1] = 0x02, c[2] = 0x03, c[3] = 0x3F;
  std::uint8_t out[24];
  PackBlock(6, c, out);
  EXPECT_EQ(out[0], 0x81);  // formats.md section 9: 01 02 03 3F -> 81 30 FC
  EXPECT_EQ(out[1], 0x30);
  EXPECT_EQ(out[2], 0xFC);
  EXPECT_EQ(UnpackBlock(6, out), c);
}

struct Line {
  std::vector<std::uint8_t> codes;
  std::vector<std::uint8_t> scales;
};

// The reference: QuantizeMxBlock per block, packed.
Line Reference(const MxLineParams& p, std::span<const float> x) {
  const MxFormatInfo& info = GetMxFormatInfo(p.format);
  const std::size_t blocks = (x.size() + 31) / 32;
  Line line{std::vector<std::uint8_t>(blocks * info.block_bytes),
            std::vector<std::uint8_t>(blocks)};
  WithTraits(p.format, [&]<class Traits>() {
    for (std::size_t b = 0; b < blocks; ++b) {
      const std::size_t len = std::min<std::size_t>(32, x.size() - 32 * b);
      const MxBlockCodes q =
          QuantizeMxBlock<Traits>(x.subspan(32 * b, len), p.rule, p.element, p.special);
      line.scales[b] = q.scale.bits;
      PackBlock(info.element_bits, q.codes, line.codes.data() + b * info.block_bytes);
    }
  });
  return line;
}

// DequantizeMxBlock on the unpacked codes.
std::vector<float> ReferenceDequant(MxFormat f, const Line& line, std::size_t n) {
  const MxFormatInfo& info = GetMxFormatInfo(f);
  std::vector<float> out(n);
  WithTraits(f, [&]<class Traits>() {
    for (std::size_t b = 0; 32 * b < n; ++b) {
      MxBlockCodes q;
      q.scale = ScaleE8M0::FromBits(line.scales[b]);
      q.codes = UnpackBlock(info.element_bits, line.codes.data() + b * info.block_bytes);
      const std::size_t len = std::min<std::size_t>(32, n - 32 * b);
      DequantizeMxBlock<Traits>(q, std::span<float>(out.data() + 32 * b, len));
    }
  });
  return out;
}

// Random MX lines: per block one of several kinds (see below).
std::vector<float> MakeMxLine(std::size_t n, double max_normal, std::mt19937_64& rng) {
  std::vector<float> x(n);
  std::normal_distribution<double> normal(0.0, 1.0);
  const std::vector<float> elems = MakeInputs<Fp8E4M3Traits>(64, rng);  // ties, specials
  for (std::size_t b = 0; b < n; b += 32) {
    const std::size_t len = std::min<std::size_t>(32, n - b);
    const int kind = static_cast<int>(rng() % 16);
    const int e = static_cast<int>(rng() % 300) - 150;  // block magnitude 2^e
    for (std::size_t i = 0; i < len; ++i) {
      double v = normal(rng);
      float f;
      switch (kind) {
        case 0:  // all zeros, random signs
          f = (rng() & 1) ? -0.0f : 0.0f;
          break;
        case 1:  // FP32 subnormals and the smallest normals
          f = std::bit_cast<float>(static_cast<std::uint32_t>(rng() % 0x01000000u) |
                                   ((rng() & 1) ? 0x80000000u : 0u));
          break;
        case 2:  // near FLT_MAX
          f = static_cast<float>(v * 1e38);
          if (!std::isfinite(f)) f = 3e38f;
          break;
        case 3:  // element-format values, codes and midpoints, times 2^k
          f = std::ldexp(elems[rng() % elems.size()], static_cast<int>(rng() % 20) - 10);
          if (!std::isfinite(f) && (rng() & 1)) f = 1.0f;
          break;
        case 4: {  // planted ties: MAX * 2^k sets the scale, the rest are midpoints
          const double unit = std::ldexp(1.0, static_cast<int>(rng() % 40) - 20);
          if (i == 0) {
            f = static_cast<float>(max_normal * unit);
          } else {
            const double q = std::floor(std::fabs(v) * 8) / 8 + 1.0 / 16;  // odd multiple of 1/16
            f = static_cast<float>((v < 0 ? -q : q) * unit);
          }
          break;
        }
        default:
          f = static_cast<float>(std::ldexp(v, e));
          break;
      }
      x[b + i] = f;
    }
    // Occasional specials anywhere (NaN, Inf, signed zeros).
    if (rng() % 6 == 0) {
      const std::uint32_t specials[] = {0x7FC00000, 0xFFC00000, 0x7F800001,
                                        0x7F800000, 0xFF800000, 0x80000000};
      x[b + rng() % len] = std::bit_cast<float>(specials[rng() % std::size(specials)]);
    }
  }
  return x;
}

double MaxNormal(MxFormat f) {
  double m = 1.0;
  WithTraits(f, [&]<class Traits>() {
    if constexpr (detail::kIsMxInt8<Traits>) {
      m = 1.984375;
    } else {
      m = Traits::kMaxNormal;
    }
  });
  return m;
}

std::string Describe(const MxLineParams& p) {
  return std::string(GetMxFormatInfo(p.format).name) + " " + std::string(ScaleRuleName(p.rule)) +
         " special=" + std::to_string(static_cast<int>(p.special)) +
         " rounding=" + std::to_string(static_cast<int>(p.element.rounding)) +
         " overflow=" + std::to_string(static_cast<int>(p.element.overflow)) +
         " subnormals=" + std::to_string(static_cast<int>(p.element.subnormals)) +
         " int8=" + std::to_string(static_cast<int>(p.element.int8_range));
}

// Quantizes x with the SIMD kernel at byte offsets `off` of the outputs,
// compares against the reference (guards untouched), then dequantizes at a
// float offset and compares against DequantizeMxBlock.
void CheckLine(const MxLineParams& p, std::span<const float> x, std::size_t off) {
  SCOPED_TRACE(Describe(p) + " n=" + std::to_string(x.size()) + " off=" + std::to_string(off));
  const Line want = Reference(p, x);
  std::vector<std::uint8_t> codes(want.codes.size() + 16, 0xA5);
  std::vector<std::uint8_t> scales(want.scales.size() + 16, 0xA5);
  ASSERT_TRUE(QuantizeMxLineSimd(p, x.data(), x.size(), codes.data() + off, scales.data() + off));
  for (std::size_t i = 0; i < codes.size(); ++i) {
    const bool inside = i >= off && i < off + want.codes.size();
    ASSERT_EQ(codes[i], inside ? want.codes[i - off] : 0xA5)
        << "code byte " << i - off << " (block "
        << (i - off) / GetMxFormatInfo(p.format).block_bytes << ")";
  }
  for (std::size_t i = 0; i < scales.size(); ++i) {
    const bool inside = i >= off && i < off + want.scales.size();
    ASSERT_EQ(scales[i], inside ? want.scales[i - off] : 0xA5) << "scale " << i - off;
  }
  const std::vector<float> back_want = ReferenceDequant(p.format, want, x.size());
  std::vector<float> back(x.size() + 16, 42.0f);
  ASSERT_TRUE(DequantizeMxLineSimd(p.format, codes.data() + off, scales.data() + off, x.size(),
                                   1.0f, back.data() + (off % 8)));
  for (std::size_t i = 0; i < back.size(); ++i) {
    const bool inside = i >= off % 8 && i < off % 8 + x.size();
    if (!inside) {
      ASSERT_EQ(Bits(back[i]), Bits(42.0f)) << "dequant guard " << i;
      continue;
    }
    const std::size_t k = i - off % 8;
    if (want.scales[k / 32] == 0xFF) {
      // Scale NaN: the kernel writes the quiet NaN; the reference's NaN sign
      // for a NaN element code times a NaN scale depends on operand order.
      ASSERT_TRUE(std::isnan(back_want[k]));
      ASSERT_EQ(Bits(back[i]), 0x7FC00000u) << "dequant " << k;
    } else {
      ASSERT_EQ(Bits(back[i]), Bits(back_want[k])) << "dequant " << k << " code block " << k / 32;
    }
  }
}

TEST_P(MxLineSimdPerTarget, KnownAnswers) {
  // formats.md section 12.5.
  const float v[] = {960, 957, 902.4f, 1, -0.001f, 0, -0.0f, 17};
  std::uint8_t codes[32], scale;
  ASSERT_TRUE(QuantizeMxLineSimd(Params(MxFormat::kMxfp8E4M3), v, 8, codes, &scale));
  EXPECT_EQ(scale, 0x80);
  const std::uint8_t want[] = {0x7E, 0x7E, 0x7E, 0x30, 0x80, 0x00, 0x80, 0x50};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(codes[i], want[i]) << i;
  for (int i = 8; i < 32; ++i) EXPECT_EQ(codes[i], 0) << "padding " << i;
  float back[8];
  ASSERT_TRUE(DequantizeMxLineSimd(MxFormat::kMxfp8E4M3, codes, &scale, 8, 1.0f, back));
  const float back_want[] = {896, 896, 896, 1, -0.0f, 0, -0.0f, 16};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(Bits(back[i]), Bits(back_want[i])) << i;

  const float e2m1[] = {7, 2.5f, 0.75f, 1.25f, 1.75f, 3.5f, 5, -0.75f, -0.1f, 6.5f, 1};
  std::uint8_t p4[16];
  ASSERT_TRUE(QuantizeMxLineSimd(Params(MxFormat::kMxfp4), e2m1, 11, p4, &scale));
  EXPECT_EQ(scale, 0x7F);
  const std::uint8_t p4_want[] = {0x47, 0x22, 0x64, 0xA6, 0x78, 0x02};  // 7 4 2 2 4 6 6 A 8 7 2
  for (int i = 0; i < 6; ++i) EXPECT_EQ(p4[i], p4_want[i]) << i;

  const float i8[] = {1.0f, 0.5f, -1.0f, 1.0f / 128, 0.01171875f, -0.01171875f, 1.99f, -1.999f};
  std::uint8_t c8[32];
  ASSERT_TRUE(QuantizeMxLineSimd(Params(MxFormat::kMxint8), i8, 8, c8, &scale));
  EXPECT_EQ(scale, 0x7F);
  const std::uint8_t c8_want[] = {0x40, 0x20, 0xC0, 0x00, 0x01, 0xFF, 0x7F, 0x81};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(c8[i], c8_want[i]) << i;
  const MxLineParams minus128 =
      Params(MxFormat::kMxint8, ScaleRule::kOcpFloor, {.int8_range = Int8Range::kAllowMinus128});
  ASSERT_TRUE(QuantizeMxLineSimd(minus128, i8, 8, c8, &scale));
  EXPECT_EQ(c8[7], 0x80);
}

// Every length 0..300 at offsets 0..7, default parameters, every format.
TEST_P(MxLineSimdPerTarget, LengthsAndOffsets) {
  std::mt19937_64 rng(TestSeed() + 10);
  for (const MxFormat f : kFormats) {
    const std::vector<float> x = MakeMxLine(300 + 8, MaxNormal(f), rng);
    for (std::size_t n = 0; n <= 300; ++n) {
      const std::size_t off = n % 8;
      CheckLine(Params(f), std::span<const float>(x.data() + (n * 3) % 8, n), off);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// Every format x defined rule x special policy x element options.
TEST_P(MxLineSimdPerTarget, EveryRuleAndOption) {
  std::mt19937_64 rng(TestSeed() + 11);
  std::vector<EncodeOptions> options = {
      {},
      {.rounding = Rounding::kTiesAway},
      {.rounding = Rounding::kTowardZero},
      {.overflow = Overflow::kNonSat},
      {.rounding = Rounding::kTowardZero, .overflow = Overflow::kNonSat},
      {.overflow = Overflow::kMlDtypesSat},
      {.subnormals = Subnormals::kFlush},
      {.int8_range = Int8Range::kAllowMinus128},
  };
  for (const MxFormat f : kFormats) {
    const std::vector<float> x = MakeMxLine(32 * 64 + 17, MaxNormal(f), rng);
    for (const ScaleRule rule : kRules) {
      if (!RuleDefined(f, rule)) continue;
      for (const SpecialBlock special : {SpecialBlock::kDefault, SpecialBlock::kSatFiniteBlock}) {
        for (const EncodeOptions& o : options) {
          CheckLine(Params(f, rule, o, special), x, 3);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

// A line of >= 8 MiB of codes takes the non-temporal path.
TEST_P(MxLineSimdPerTarget, StreamingLine) {
  std::mt19937_64 rng(TestSeed() + 12);
  const std::size_t n = (std::size_t{8} << 20) + 32 * 100 + 5;
  const std::vector<float> x = MakeMxLine(n, MaxNormal(MxFormat::kMxfp8E4M3), rng);
  const MxLineParams p = Params(MxFormat::kMxfp8E4M3);
  const Line want = Reference(p, x);
  // Offset 0: direct non-temporal stores (16-byte aligned codes, 16-lane
  // targets); offset 1: through the staging buffer.
  for (const std::size_t off : {0, 1}) {
    std::vector<std::uint8_t> codes(want.codes.size() + 64);
    std::uint8_t* base =
        codes.data() + (64 - reinterpret_cast<std::uintptr_t>(codes.data()) % 64) % 64;
    std::vector<std::uint8_t> scales(want.scales.size());
    ASSERT_TRUE(QuantizeMxLineSimd(p, x.data(), n, base + off, scales.data()));
    ASSERT_TRUE(std::equal(want.codes.begin(), want.codes.end(), base + off)) << "offset " << off;
    ASSERT_EQ(scales, want.scales);
  }
}

// BF16 input: the codes and scales of the widened FP32 values, for every
// format, rule and special policy, tails, and a streaming (>= 8 MiB of
// codes) MXFP8 line.
TEST_P(MxLineSimdPerTarget, Bf16InputEqualsItsFp32Values) {
  std::mt19937_64 rng(TestSeed() + 14);
  // codes_offset: the codes start that many bytes past a 64-byte boundary
  // (streaming lines store whole 64-byte lines at 0, 16-byte vectors at 16).
  const auto check = [](const MxLineParams& prm, std::span<const float> x,
                        std::initializer_list<std::size_t> codes_offsets = {0}) {
    std::vector<Bf16> xb(x.size());
    std::vector<float> wide(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      // Truncation keeps NaN payloads and makes many exact ties.
      xb[i].bits = static_cast<std::uint16_t>(Bits(x[i]) >> 16);
      wide[i] = std::bit_cast<float>(std::uint32_t{xb[i].bits} << 16);
    }
    const Line want = Reference(prm, wide);
    for (const std::size_t codes_offset : codes_offsets) {
      std::vector<std::uint8_t> buffer(want.codes.size() + 128, 0xA5);
      std::uint8_t* codes =
          buffer.data() + (0 - reinterpret_cast<std::uintptr_t>(buffer.data())) % 64 + codes_offset;
      std::vector<std::uint8_t> scales(want.scales.size() + 1, 0xA5);
      ASSERT_TRUE(QuantizeMxLineSimd(prm, xb.data(), xb.size(), codes, scales.data()));
      EXPECT_EQ(codes[want.codes.size()], 0xA5);
      EXPECT_EQ(scales.back(), 0xA5);
      scales.pop_back();
      ASSERT_TRUE(std::equal(want.codes.begin(), want.codes.end(), codes))
          << Describe(prm) << " n=" << x.size() << " codes at 64k + " << codes_offset;
      ASSERT_EQ(scales, want.scales) << Describe(prm) << " n=" << x.size();
    }
  };
  for (const MxFormat f : kFormats) {
    const std::vector<float> x = MakeMxLine(32 * 40 + 17, MaxNormal(f), rng);
    for (std::size_t n = 0; n <= 200; n += 13) check(Params(f), std::span(x).subspan(5, n));
    for (const ScaleRule rule : kRules) {
      if (!RuleDefined(f, rule)) continue;
      for (const SpecialBlock special : {SpecialBlock::kDefault, SpecialBlock::kSatFiniteBlock}) {
        check(Params(f, rule, {}, special), x);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
  const MxFormat f = MxFormat::kMxfp8E4M3;
  const std::vector<float> big = MakeMxLine((std::size_t{8} << 20) + 40, MaxNormal(f), rng);
  check(Params(f), big, {16});
  // A short line told to stream (a piece of a large tensor): non-temporal
  // stores of whole 64-byte lines (offset 0), of 16-byte vectors (16), or
  // staged (3).
  for (const MxFormat g : kFormats) {
    MxLineParams prm = Params(g);
    prm.stream = true;
    check(prm, MakeMxLine(32 * 300 + 17, MaxNormal(g), rng), {0, 16, 3});
  }
  // Roundings other than nearest-even are FP32-only: false, nothing written.
  for (const Rounding r : {Rounding::kTiesAway, Rounding::kTowardZero}) {
    const std::vector<Bf16> xb(64, Bf16{0x3F80});
    std::vector<std::uint8_t> codes(64, 0xA5), scales(2, 0xA5);
    EXPECT_FALSE(QuantizeMxLineSimd(Params(f, ScaleRule::kOcpFloor, {.rounding = r}), xb.data(),
                                    xb.size(), codes.data(), scales.data()));
    EXPECT_EQ(codes, std::vector<std::uint8_t>(64, 0xA5));
    EXPECT_EQ(scales, std::vector<std::uint8_t>(2, 0xA5));
  }
}

// Every BF16 magnitude under every scale code kOcpFloor gives: per amax
// exponent E = 1..254 one run of blocks whose lane (block % 32) holds an
// amax of exponent E (alternating sign) and whose other 31 lanes sweep every
// BF16 magnitude <= amax, zero and subnormals included, with signs from a
// fixed pattern. This drives the BF16-lane encoder (QuantizeGroup4Bf16 on
// AVX-512: its normal-only and variable-shift paths and its fallbacks for
// scale codes below the element bias) through every (element, scale) pair,
// and the flush option (which takes the FP32 path) on MXFP8 E4M3; bit for
// bit against the reference on the widened values. The references (4.2 M
// elements per format) are computed once and shared by the targets.
TEST_P(MxLineSimdPerTarget, Bf16EveryMagnitudeEveryScale) {
  struct Case {
    MxLineParams params;
    std::vector<Bf16> x;
    Line want;
  };
  static const std::vector<Case> cases = [] {
    std::vector<Case> out;
    std::vector<MxLineParams> params;
    for (const MxFormat f : kFormats) params.push_back(Params(f));
    params.push_back(
        Params(MxFormat::kMxfp8E4M3, ScaleRule::kOcpFloor, {.subnormals = Subnormals::kFlush}));
    for (const MxLineParams& prm : params) {
      Case c{prm, {}, {}};
      std::size_t block = 0;
      for (std::uint16_t e = 1; e <= 254; ++e) {
        const auto amax = static_cast<std::uint16_t>((e << 7) | ((e * 37u) & 0x7Fu));
        std::uint32_t next = 0;  // next magnitude to place
        while (next <= amax) {
          for (std::size_t lane = 0; lane < 32; ++lane) {
            std::uint16_t bits;
            if (lane == block % 32) {
              bits = static_cast<std::uint16_t>(amax | ((block & 1) << 15));
            } else {
              const std::uint32_t mag = next <= amax ? next++ : 0;
              bits = static_cast<std::uint16_t>(mag | (((mag * 0x9E37u) >> 7) & 1u) << 15);
            }
            c.x.push_back(Bf16::FromBits(bits));
          }
          ++block;
        }
      }
      std::vector<float> wide(c.x.size());
      for (std::size_t i = 0; i < c.x.size(); ++i) {
        wide[i] = std::bit_cast<float>(std::uint32_t{c.x[i].bits} << 16);
      }
      c.want = Reference(prm, wide);
      out.push_back(std::move(c));
    }
    return out;
  }();
  for (const Case& c : cases) {
    std::vector<std::uint8_t> codes(c.want.codes.size(), 0xA5);
    std::vector<std::uint8_t> scales(c.want.scales.size(), 0xA5);
    ASSERT_TRUE(QuantizeMxLineSimd(c.params, c.x.data(), c.x.size(), codes.data(), scales.data()));
    for (std::size_t b = 0; b < scales.size(); ++b) {
      const std::size_t bytes = codes.size() / scales.size();
      ASSERT_EQ(scales[b], c.want.scales[b]) << Describe(c.params) << " block " << b;
      ASSERT_TRUE(std::equal(codes.begin() + b * bytes, codes.begin() + (b + 1) * bytes,
                             c.want.codes.begin() + b * bytes))
          << Describe(c.params) << " block " << b << " amax bits 0x" << std::hex
          << c.x[32 * b + b % 32].bits;
    }
  }
}

// MXFP4 (direct non-temporal stores on 16-lane targets) and MXFP6 (staged)
// lines of >= 8 MiB of codes, best target.
TEST(MxLineSimdTest, StreamingLinesFp4Fp6) {
  std::mt19937_64 rng(TestSeed() + 13);
  for (const MxFormat f : {MxFormat::kMxfp4, MxFormat::kMxfp6E2M3}) {
    SCOPED_TRACE(GetMxFormatInfo(f).name);
    const std::size_t blocks = (std::size_t{8} << 20) / GetMxFormatInfo(f).block_bytes + 33;
    const std::size_t n = blocks * 32 - 7;
    const std::vector<float> x = MakeMxLine(n, MaxNormal(f), rng);
    const MxLineParams p = Params(f);
    const Line want = Reference(p, x);
    std::vector<std::uint8_t> codes(want.codes.size() + 64);
    std::uint8_t* base =
        codes.data() + (64 - reinterpret_cast<std::uintptr_t>(codes.data()) % 64) % 64;
    std::vector<std::uint8_t> scales(want.scales.size());
    ASSERT_TRUE(QuantizeMxLineSimd(p, x.data(), n, base, scales.data()));
    ASSERT_TRUE(std::equal(want.codes.begin(), want.codes.end(), base));
    ASSERT_EQ(scales, want.scales);
  }
}

// DequantizeMxLineToBf16 against the scalar FP32 decode: true exactly when
// every value is zero or a normal finite BF16 (its low 16 bits zero), and
// then the values' high halves, n of them and nothing past n. Lines from
// MakeMxLine's block kinds (quantized) and from random codes with scales
// at and near the ends of the E8M0 range (NaN included); both outcomes must
// occur for every format.
TEST_P(MxLineSimdPerTarget, DequantizeToBf16WhereExact) {
  const std::uint64_t seed = TestSeed() + 15;
  std::printf("DequantizeToBf16WhereExact seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  constexpr std::uint8_t kEdgeScales[] = {0,   1,   2,   9,   10,  11,  100,
                                          127, 200, 240, 250, 253, 254, 255};
  for (const MxFormat f : kFormats) {
    SCOPED_TRACE(std::string(GetMxFormatInfo(f).name));
    const std::size_t block_bytes = GetMxFormatInfo(f).block_bytes;
    int exact_lines = 0, inexact_lines = 0;
    for (int trial = 0; trial < 400; ++trial) {
      const std::size_t n = rng() % 300;
      const std::size_t blocks = (n + 31) / 32;
      std::vector<std::uint8_t> codes(blocks * block_bytes), scales(blocks);
      if (trial % 2 == 0) {
        const std::vector<float> x = MakeMxLine(n, MaxNormal(f), rng);
        ASSERT_TRUE(QuantizeMxLineSimd(Params(f), x.data(), n, codes.data(), scales.data()));
      } else {
        for (auto& c : codes) c = static_cast<std::uint8_t>(rng());
        for (auto& sc : scales) {
          sc = (rng() % 4 == 0) ? kEdgeScales[rng() % std::size(kEdgeScales)]
                                : static_cast<std::uint8_t>(110 + rng() % 30);
        }
      }
      std::vector<float> want(n);
      internal::DequantizeMxLineScalar(f, codes.data(), scales.data(), n, 1.0f, want.data());
      bool exact_want = true;
      for (const float v : want) {
        const std::uint32_t b = Bits(v);
        exact_want &= (b & 0xFFFFu) == 0 && (v == 0.0f || std::isnormal(v));
      }
      std::vector<Bf16> got(n + 3, Bf16::FromBits(0xA5A5));
      const std::size_t off = trial % 3;
      const bool exact =
          internal::DequantizeMxLineToBf16(f, codes.data(), scales.data(), n, got.data() + off);
      ASSERT_EQ(exact, exact_want) << "trial " << trial << " n=" << n;
      (exact ? exact_lines : inexact_lines)++;
      if (!exact) continue;
      for (std::size_t i = 0; i < got.size(); ++i) {
        const bool inside = i >= off && i < off + n;
        ASSERT_EQ(got[i].bits, inside ? Bits(want[i - off]) >> 16 : 0xA5A5u)
            << "trial " << trial << " n=" << n << " index " << i;
      }
    }
    EXPECT_GT(exact_lines, 20);
    EXPECT_GT(inexact_lines, 20);
  }
  std::vector<Bf16> out(64);
  const std::vector<std::uint8_t> codes(32, 0), scales(2, 127);
  EXPECT_FALSE(internal::DequantizeMxLineToBf16(MxFormat::kNvfp4, codes.data(), scales.data(), 64,
                                                out.data()));
}

TEST(MxLineSimdTest, UnsupportedParametersWriteNothing) {
  const std::vector<float> x(64, 1.0f);
  std::vector<std::uint8_t> codes(64, 0xA5), scales(4, 0xA5);
  MxLineParams stochastic;
  stochastic.element.rounding = Rounding::kStochastic;
  EXPECT_FALSE(QuantizeMxLineSimd(stochastic, x.data(), 64, codes.data(), scales.data()));
  EXPECT_FALSE(
      QuantizeMxLineSimd(Params(MxFormat::kNvfp4), x.data(), 64, codes.data(), scales.data()));
  EXPECT_FALSE(QuantizeMxLineSimd(Params(MxFormat::kMxfp6E2M3, ScaleRule::kNki), x.data(), 64,
                                  codes.data(), scales.data()));
  EXPECT_FALSE(QuantizeMxLineSimd(Params(MxFormat::kMxint8, ScaleRule::kRceil), x.data(), 64,
                                  codes.data(), scales.data()));
  for (const std::uint8_t b : codes) EXPECT_EQ(b, 0xA5);
  for (const std::uint8_t b : scales) EXPECT_EQ(b, 0xA5);
  std::vector<float> out(64, 42.0f);
  EXPECT_FALSE(
      DequantizeMxLineSimd(MxFormat::kNvfp4, codes.data(), scales.data(), 64, 1.0f, out.data()));
  EXPECT_FALSE(
      DequantizeMxLineSimd(MxFormat::kMxfp4, codes.data(), scales.data(), 64, 2.0f, out.data()));
  for (const float v : out) EXPECT_EQ(v, 42.0f);
}

}  // namespace
}  // namespace trnmx::test
