// Bulk conversions (bulk.h) against the scalar codec (codec.h), bit for bit,
// on every compiled Highway target: every length 0..300 at input and output
// offsets 0..7, every policy combination on seeded random inputs with
// specials, every code decoded, 1/2/3 threads and streaming stores, and the
// error paths. ctest label: unit.
#include "trnmx/formats/bulk.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "formats/bulk_test_util.h"
#include "support/hwy_targets.h"
#include "trnmx/executor.h"
#include "trnmx/formats/codec.h"
#include "trnmx/formats/registry.h"
#include "trnmx/formats/visit.h"

namespace trnmx::test {
namespace {

using testing::HwyTarget;

// The tests that run once per compiled Highway target (named .../AVX2 etc.).
class BulkPerTarget : public testing::HwyTargetTest {};
TRNMX_INSTANTIATE_PER_HWY_TARGET(BulkPerTarget);

std::string Describe(const EncodeOptions& o) {
  return "rounding=" + std::to_string(static_cast<int>(o.rounding)) +
         " overflow=" + std::to_string(static_cast<int>(o.overflow)) +
         " nan=" + std::to_string(static_cast<int>(o.nan)) +
         " subnormals=" + std::to_string(static_cast<int>(o.subnormals));
}

// Calls fn.template operator()<Code>() for each one-code-per-element type
// (every float format of format_list.h).
template <class Fn>
void ForEachCodeType(Fn&& fn) {
  ForEachFloatFormat([&](auto code) { fn.template operator()<decltype(code)>(); });
}

template <class Code>
const char* Name() {
  return GetFormatInfo(kFormatOf<Code>).name.data();  // Literals: NUL-terminated.
}

template <class Code>
std::uint32_t Want(float x, const EncodeOptions& o, std::uint32_t random = 0) {
  return EncodeWithFlags<typename Code::Traits>(x, o, random).code;
}

// Packed reference: the scalar codes, element 2i in bits 3..0 of byte i.
std::vector<std::uint8_t> WantPacked(std::span<const float> x, const EncodeOptions& o,
                                     std::span<const std::uint32_t> random = {}) {
  std::vector<std::uint8_t> p((x.size() + 1) / 2, 0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::uint32_t r = random.empty() ? 0 : random[i];
    p[i / 2] |= static_cast<std::uint8_t>(Want<Fp4E2M1>(x[i], o, r) << (4 * (i % 2)));
  }
  return p;
}

TEST(BulkTest, PrintsSeedAndTargets) {
  (void)TestSeed();  // prints it
  std::printf("targets:");
  for (const HwyTarget& t : testing::CompiledHwyTargets()) std::printf(" %s", t.name.c_str());
  std::printf("\n");
  EXPECT_FALSE(testing::CompiledHwyTargets().empty());
}

// formats.md section 12.1 (BF16) and 12.3 (elements), on every target.
TEST_P(BulkPerTarget, KnownAnswers) {
  const std::uint32_t in[] = {0x3F800000, 0x3F808000, 0x3F818000, 0x3F807FFF, 0x7F7FFFFF,
                              0x00400000, 0x00018000, 0x7F800000, 0xFF800000, 0x7FC00000,
                              0xFFC00000, 0x7F800001, 0xFFA12345, 0x7FFFFFFF};
  const std::uint16_t def[] = {0x3F80, 0x3F80, 0x3F82, 0x3F80, 0x7F80, 0x0040, 0x0002,
                               0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7FC0, 0xFFE1, 0x7FFF};
  const std::uint16_t intel[] = {0x3F80, 0x3F80, 0x3F82, 0x3F80, 0x7F80, 0x0000, 0x0000,
                                 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7FC0, 0xFFE1, 0x7FFF};
  const std::uint16_t eigen[] = {0x3F80, 0x3F80, 0x3F82, 0x3F80, 0x7F80, 0x0040, 0x0002,
                                 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7FC0, 0xFFC0, 0x7FC0};
  std::vector<float> x;
  for (std::uint32_t b : in) x.push_back(std::bit_cast<float>(b));
  std::vector<Bf16> out(x.size());
  const auto check = [&](const EncodeOptions& o, const std::uint16_t* want, const char* what) {
    ASSERT_TRUE(BulkEncode(x, out, o).ok());
    for (std::size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(out[i].bits, want[i]) << what << " x=0x" << std::hex << in[i];
    }
  };
  check({}, def, "default");
  check({.subnormals = Subnormals::kFlush}, intel, "kDazFtz");
  check({.nan = NanPolicy::kCanonical}, eigen, "kCanonicalNaN");

  const float e4m3_in[] = {1.0f, 448.0f, 464.0f, 1000.0f, 17.0f, 0x1p-9f, 0x1p-10f, -0.0f};
  const std::uint8_t e4m3_sat[] = {0x38, 0x7E, 0x7E, 0x7E, 0x58, 0x01, 0x00, 0x80};
  std::vector<Fp8E4M3> q(std::size(e4m3_in));
  ASSERT_TRUE(BulkEncode(e4m3_in, q).ok());
  for (std::size_t i = 0; i < q.size(); ++i) EXPECT_EQ(q[i].bits, e4m3_sat[i]) << i;
  ASSERT_TRUE(BulkEncode(e4m3_in, q, {.overflow = Overflow::kNonSat}).ok());
  EXPECT_EQ(q[3].bits, 0x7F);  // 1000 -> NaN when not saturating

  // E4M3 IEEE-style (Trainium NC-v2/v3): 240 = 77 is MAX, 248 ties to 256,
  // past MAX: 77 saturated (default), 78 = Inf under kNonSat; NaN 7C/FC.
  const float ieee_in[] = {1.0f, 240.0f, 244.0f, 248.0f, INFINITY, -NAN, 0x1p-9f, -0.0f};
  const std::uint8_t ieee_sat[] = {0x38, 0x77, 0x77, 0x77, 0x77, 0xFC, 0x01, 0x80};
  const std::uint8_t ieee_nonsat[] = {0x38, 0x77, 0x77, 0x78, 0x78, 0xFC, 0x01, 0x80};
  std::vector<Fp8E4M3Ieee> t(std::size(ieee_in));
  ASSERT_TRUE(BulkEncode(ieee_in, t).ok());
  for (std::size_t i = 0; i < t.size(); ++i) EXPECT_EQ(t[i].bits, ieee_sat[i]) << i;
  ASSERT_TRUE(BulkEncode(ieee_in, t, {.overflow = Overflow::kNonSat}).ok());
  for (std::size_t i = 0; i < t.size(); ++i) EXPECT_EQ(t[i].bits, ieee_nonsat[i]) << i;
  std::vector<float> back(t.size());
  ASSERT_TRUE(BulkDecode(std::span<const Fp8E4M3Ieee>(t), back).ok());
  EXPECT_EQ(back[1], 240.0f);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(back[3]), 0x7F800000u);  // 78 = +Inf

  const float e2m1_in[] = {0.25f, 0.75f, 1.25f, 1.75f, -0.25f, 7.0f, 1e30f};
  const std::uint8_t e2m1_want[] = {0x0, 0x2, 0x2, 0x4, 0x8, 0x7, 0x7};
  std::vector<Fp4E2M1> f4(std::size(e2m1_in));
  ASSERT_TRUE(BulkEncode(e2m1_in, f4).ok());
  for (std::size_t i = 0; i < f4.size(); ++i) EXPECT_EQ(f4[i].bits, e2m1_want[i]) << i;
  std::vector<std::uint8_t> packed(4);
  ASSERT_TRUE(BulkEncodePackedFp4(e2m1_in, packed).ok());
  EXPECT_EQ(packed, (std::vector<std::uint8_t>{0x20, 0x42, 0x78, 0x07}));
}

// The examples of bulk.h's comments, as written there.
TEST(BulkTest, HeaderExamples) {
  std::vector<float> x = {1.0f, 3.0f, 1000.0f, -0.25f};
  std::vector<Fp8E4M3> q(x.size());
  ASSERT_TRUE(BulkEncode(x, q).ok());
  EXPECT_EQ(q, (std::vector<Fp8E4M3>{Fp8E4M3::FromBits(0x38), Fp8E4M3::FromBits(0x44),
                                     Fp8E4M3::FromBits(0x7E), Fp8E4M3::FromBits(0xA8)}));
  std::vector<float> back(x.size());
  ASSERT_TRUE(BulkDecode(q, back).ok());
  EXPECT_EQ(back, (std::vector<float>{1.0f, 3.0f, 448.0f, -0.25f}));
  std::vector<Bf16> h(x.size());
  ASSERT_TRUE(BulkEncode(x, h).ok());
  EXPECT_EQ(h, (std::vector<Bf16>{Bf16::FromBits(0x3F80), Bf16::FromBits(0x4040),
                                  Bf16::FromBits(0x447A), Bf16::FromBits(0xBE80)}));
  std::vector<std::uint8_t> packed((x.size() + 1) / 2);
  ASSERT_TRUE(BulkEncodePackedFp4(x, packed).ok());
  EXPECT_EQ(packed, (std::vector<std::uint8_t>{0x52, 0x87}));

  const float y[] = {0.5f, 6.0f, -1.0f};
  std::uint8_t p[2];
  ASSERT_TRUE(BulkEncodePackedFp4(y, p).ok());
  EXPECT_EQ(p[0], 0x71);
  EXPECT_EQ(p[1], 0x0A);
  float z[3];
  ASSERT_TRUE(BulkDecodePackedFp4(p, z).ok());
  EXPECT_EQ(z[0], 0.5f);
  EXPECT_EQ(z[1], 6.0f);
  EXPECT_EQ(z[2], -1.0f);
}

// Every length 0..300 at input offsets 0..7 floats and output offsets 0..7
// codes, default options; guard codes around the output stay untouched.
TEST_P(BulkPerTarget, LengthsAndMisalignment) {
  std::mt19937_64 rng(TestSeed());
  ForEachCodeType([&]<class Code>() {
    SCOPED_TRACE(Name<Code>());
    const std::vector<float> pool = MakeInputs<typename Code::Traits>(300 + 8, rng);
    for (std::size_t n = 0; n <= 300; ++n) {
      const std::size_t in_off = n % 8;
      const std::size_t out_off = (n * 5 + 3) % 8;
      const std::span<const float> in(pool.data() + in_off, n);
      std::vector<Code> buf(n + 16, Code::FromBits(0x5A));
      ASSERT_TRUE(BulkEncode(in, std::span<Code>(buf.data() + out_off, n)).ok());
      for (std::size_t i = 0; i < buf.size(); ++i) {
        const bool inside = i >= out_off && i < out_off + n;
        const std::uint32_t want =
            inside ? Want<Code>(in[i - out_off], {}) : Code::FromBits(0x5A).bits;
        ASSERT_EQ(buf[i].bits, want) << "n=" << n << " index " << i << " x=0x" << std::hex
                                     << (inside ? Bits(in[i - out_off]) : 0u);
      }
      // Decode the codes back from a misaligned copy.
      std::vector<float> back(n + 16, 42.0f);
      ASSERT_TRUE(BulkDecode(std::span<const Code>(buf.data() + out_off, n),
                             std::span<float>(back.data() + in_off, n))
                      .ok());
      for (std::size_t i = 0; i < back.size(); ++i) {
        const bool inside = i >= in_off && i < in_off + n;
        const std::uint32_t want =
            inside ? Bits(DecodeBits<typename Code::Traits>(buf[i - in_off + out_off].bits))
                   : Bits(42.0f);
        ASSERT_EQ(Bits(back[i]), want) << "decode n=" << n << " index " << i;
      }
    }
  });
  // Packed FP4: odd and even lengths, misaligned bytes.
  const std::vector<float> pool = MakeInputs<Fp4E2M1Traits>(300 + 8, rng);
  for (std::size_t n = 0; n <= 300; ++n) {
    const std::size_t in_off = (n * 3) % 8;
    const std::size_t out_off = n % 8;
    const std::span<const float> in(pool.data() + in_off, n);
    const std::size_t bytes = (n + 1) / 2;
    std::vector<std::uint8_t> buf(bytes + 16, 0xA5);
    ASSERT_TRUE(BulkEncodePackedFp4(in, std::span<std::uint8_t>(buf.data() + out_off, bytes)).ok());
    const std::vector<std::uint8_t> want = WantPacked(in, {});
    for (std::size_t i = 0; i < buf.size(); ++i) {
      const bool inside = i >= out_off && i < out_off + bytes;
      ASSERT_EQ(buf[i], inside ? want[i - out_off] : 0xA5) << "packed n=" << n << " byte " << i;
    }
    std::vector<float> back(n + 16, 42.0f);
    ASSERT_TRUE(BulkDecodePackedFp4(std::span<const std::uint8_t>(buf.data() + out_off, bytes),
                                    std::span<float>(back.data() + in_off, n))
                    .ok());
    for (std::size_t i = 0; i < back.size(); ++i) {
      const bool inside = i >= in_off && i < in_off + n;
      std::uint32_t w = Bits(42.0f);
      if (inside) {
        const std::size_t k = i - in_off;
        w = Bits(DecodeBits<Fp4E2M1Traits>(want[k / 2] >> (4 * (k % 2))));
      }
      ASSERT_EQ(Bits(back[i]), w) << "packed decode n=" << n << " index " << i;
    }
  }
}

// Every rounding x overflow x NaN x subnormal policy, on every target.
TEST_P(BulkPerTarget, EveryPolicyCombination) {
  std::mt19937_64 rng(TestSeed() + 1);
  constexpr std::size_t kN = 2000;
  ForEachCodeType([&]<class Code>() {
    SCOPED_TRACE(Name<Code>());
    const std::vector<float> x = MakeInputs<typename Code::Traits>(kN, rng);
    std::vector<Code> out(kN);
    std::vector<std::uint8_t> packed((kN + 1) / 2);
    for (Rounding r : kRoundings) {
      for (Overflow ov : kOverflows) {
        for (NanPolicy nan : kNans) {
          for (Subnormals sub : kSubnormals) {
            const EncodeOptions o{.rounding = r, .overflow = ov, .nan = nan, .subnormals = sub};
            ASSERT_TRUE(BulkEncode(x, out, o).ok());
            for (std::size_t i = 0; i < kN; ++i) {
              ASSERT_EQ(out[i].bits, Want<Code>(x[i], o))
                  << Describe(o) << " x=0x" << std::hex << Bits(x[i]);
            }
            if constexpr (std::is_same_v<Code, Fp4E2M1>) {
              ASSERT_TRUE(BulkEncodePackedFp4(x, packed, o).ok());
              ASSERT_EQ(packed, WantPacked(x, o)) << Describe(o);
            }
          }
        }
      }
    }
  });
}

// Every code (and, for the sub-byte formats, every byte: high bits ignored).
TEST_P(BulkPerTarget, DecodesEveryCode) {
  ForEachCodeType([&]<class Code>() {
    SCOPED_TRACE(Name<Code>());
    const std::size_t count = sizeof(typename Code::Storage) == 2 ? 65536 : 256;
    std::vector<Code> codes(count);
    for (std::size_t c = 0; c < count; ++c) {
      codes[c].bits = static_cast<typename Code::Storage>(c);  // raw, high bits kept
    }
    std::vector<float> out(count);
    ASSERT_TRUE(BulkDecode(std::span<const Code>(codes), out).ok());
    for (std::size_t c = 0; c < count; ++c) {
      ASSERT_EQ(Bits(out[c]),
                Bits(DecodeBits<typename Code::Traits>(static_cast<std::uint32_t>(c))))
          << "code 0x" << std::hex << c;
    }
  });
  std::vector<std::uint8_t> bytes(256);
  for (std::size_t b = 0; b < 256; ++b) bytes[b] = static_cast<std::uint8_t>(b);
  std::vector<float> out(512);
  ASSERT_TRUE(BulkDecodePackedFp4(bytes, out).ok());
  for (std::size_t i = 0; i < 512; ++i) {
    ASSERT_EQ(Bits(out[i]), Bits(DecodeBits<Fp4E2M1Traits>(bytes[i / 2] >> (4 * (i % 2))))) << i;
  }
}

// Several chunks: identical bits for the serial executor, pools of 1, 2 and 3
// threads and the default executor, equal to the scalar codec. One pool
// lives at a time (idle pthreadpool workers spin, and this machine may have
// only two cores).
TEST_P(BulkPerTarget, ThreadCountsGiveIdenticalBits) {
  std::mt19937_64 rng(TestSeed() + 2);
  const std::size_t n = 3 * 32768 + 12345;  // 4 chunks, the last partial
  // One slot per float format of format_list.h, then packed FP4.
  constexpr std::size_t kPacked = [] {
    std::size_t count = 0;
    ForEachFloatFormat([&](auto) { ++count; });
    return count;
  }();
  std::vector<float> inputs[kPacked + 1];
  std::vector<std::uint32_t> want[kPacked + 1];  // codes (packed FP4 bytes in the last slot)
  int slot = 0;
  ForEachCodeType([&]<class Code>() {
    inputs[slot] = MakeInputs<typename Code::Traits>(n, rng);
    for (float x : inputs[slot]) want[slot].push_back(Want<Code>(x, {}));
    ++slot;
  });
  inputs[kPacked] = MakeInputs<Fp4E2M1Traits>(n, rng);
  for (std::uint8_t b : WantPacked(inputs[kPacked], {})) want[kPacked].push_back(b);

  // -2: nullptr (the calling thread), -1: SerialExecutor, 0: DefaultExecutor().
  for (const int threads : {-2, -1, 1, 2, 3, 0}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    SerialExecutor serial;
    std::unique_ptr<ThreadPoolExecutor> pool;
    if (threads > 0) pool = std::make_unique<ThreadPoolExecutor>(threads);
    Executor* ex = threads == -2   ? nullptr
                   : threads == -1 ? static_cast<Executor*>(&serial)
                   : threads == 0  ? &DefaultExecutor()
                                   : pool.get();
    int k = 0;
    ForEachCodeType([&]<class Code>() {
      SCOPED_TRACE(Name<Code>());
      std::vector<Code> out(n);
      ASSERT_TRUE(BulkEncode(inputs[k], out, {}, ex).ok());
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i].bits, want[k][i]) << i;
      std::vector<float> back(n);
      ASSERT_TRUE(BulkDecode(std::span<const Code>(out), back, ex).ok());
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(Bits(back[i]), Bits(DecodeBits<typename Code::Traits>(want[k][i]))) << i;
      }
      ++k;
    });
    std::vector<std::uint8_t> packed((n + 1) / 2);
    ASSERT_TRUE(BulkEncodePackedFp4(inputs[kPacked], packed, {}, ex).ok());
    for (std::size_t i = 0; i < packed.size(); ++i) ASSERT_EQ(packed[i], want[kPacked][i]) << i;
  }
}

// Outputs of >= 8 MiB take the non-temporal path: same bits, also misaligned.
TEST_P(BulkPerTarget, StreamingStoresGiveIdenticalBits) {
  std::mt19937_64 rng(TestSeed() + 3);
  const std::size_t n = (std::size_t{9} << 20) / 2 + 77;  // BF16 output just over 9 MiB
  const std::vector<float> x = MakeInputs<Bf16Traits>(n + 1, rng);
  const std::span<const float> in(x.data() + 1, n);  // misaligned input
  ThreadPoolExecutor pool2(2);
  std::vector<Bf16> out(n + 1);
  ASSERT_TRUE(BulkEncode(in, std::span<Bf16>(out.data() + 1, n), {}, &pool2).ok());
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i + 1].bits, Want<Bf16>(in[i], {})) << i;
  std::vector<float> back(n + 1);
  ASSERT_TRUE(BulkDecode(std::span<const Bf16>(out.data() + 1, n),
                         std::span<float>(back.data() + 1, n), &pool2)
                  .ok());
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(Bits(back[i + 1]), static_cast<std::uint32_t>(out[i + 1].bits) << 16) << i;
  }
}

// FP8 and packed FP4 outputs over 8 MiB, best target only (the same code path
// per target as BulkPerTarget.StreamingStoresGiveIdenticalBits). The random
// stream continues where that test's BF16 inputs end, as when both were one test.
TEST(BulkTest, StreamingStoresOtherFormatsBestTarget) {
  std::mt19937_64 rng(TestSeed() + 3);
  (void)MakeInputs<Bf16Traits>((std::size_t{9} << 20) / 2 + 77 + 1, rng);
  ThreadPoolExecutor pool2(2);
  const std::size_t n8 = (std::size_t{8} << 20) + 4096 + 3;
  const std::vector<float> y = MakeInputs<Fp8E4M3Traits>(n8, rng);
  std::vector<Fp8E4M3> q(n8);
  ASSERT_TRUE(BulkEncode(y, q, {}, &pool2).ok());
  for (std::size_t i = 0; i < n8; ++i) ASSERT_EQ(q[i].bits, Want<Fp8E4M3>(y[i], {})) << i;
  const std::size_t n4 = (std::size_t{16} << 20) + 1001;
  const std::vector<float> z = MakeInputs<Fp4E2M1Traits>(n4, rng);
  std::vector<std::uint8_t> packed((n4 + 1) / 2);
  ASSERT_TRUE(BulkEncodePackedFp4(z, packed, {}, &pool2).ok());
  ASSERT_EQ(packed, WantPacked(z, {}));
  // Again one byte further on: the streaming encoder's plain head before the
  // first 16-byte aligned output byte.
  std::vector<std::uint8_t> shifted(packed.size() + 1);
  ASSERT_TRUE(
      BulkEncodePackedFp4(z, std::span<std::uint8_t>(shifted.data() + 1, packed.size()), {}, &pool2)
          .ok());
  ASSERT_TRUE(std::equal(packed.begin(), packed.end(), shifted.begin() + 1));
  // Decoders over 8 MiB of FP32 output (the streaming threshold): the first
  // m8 FP8 codes and m4 packed FP4 codes (odd: half a last byte), at an
  // aligned and an odd float offset. Packed FP4's streaming form goes
  // through an aligned pair buffer.
  const std::size_t m8 = (std::size_t{2} << 20) + 4096 + 3;
  const std::size_t m4 = (std::size_t{2} << 20) + 1001;
  const std::span<const Fp8E4M3> q8 = std::span<const Fp8E4M3>(q).first(m8);
  const std::span<const std::uint8_t> p4 = std::span<const std::uint8_t>(packed).first((m4 + 1) / 2);
  for (const std::size_t off : {0, 1}) {
    std::vector<float> back8(m8 + 1);
    ASSERT_TRUE(BulkDecode(q8, std::span<float>(back8.data() + off, m8), &pool2).ok());
    for (std::size_t i = 0; i < m8; ++i) {
      ASSERT_EQ(Bits(back8[i + off]), Bits(DecodeBits<Fp8E4M3Traits>(q8[i].bits))) << i;
    }
    std::vector<float> back4(m4 + 1);
    ASSERT_TRUE(BulkDecodePackedFp4(p4, std::span<float>(back4.data() + off, m4), &pool2).ok());
    for (std::size_t i = 0; i < m4; ++i) {
      ASSERT_EQ(Bits(back4[i + off]), Bits(DecodeBits<Fp4E2M1Traits>(p4[i / 2] >> (4 * (i % 2)))))
          << i;
    }
  }
}

TEST(BulkTest, StochasticRoundingMatchesScalar) {
  std::mt19937_64 rng(TestSeed() + 4);
  const std::size_t n = 70001;
  ThreadPoolExecutor pool2(2);
  const EncodeOptions o{.rounding = Rounding::kStochastic};
  ForEachCodeType([&]<class Code>() {
    SCOPED_TRACE(Name<Code>());
    const std::vector<float> x = MakeInputs<typename Code::Traits>(n, rng);
    std::vector<std::uint32_t> random(n);
    for (auto& r : random) r = static_cast<std::uint32_t>(rng());
    std::vector<Code> out(n);
    ASSERT_TRUE(BulkEncode(x, out, o, &pool2, random).ok());
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i].bits, Want<Code>(x[i], o, random[i])) << i;
  });
  const std::vector<float> x = MakeInputs<Fp4E2M1Traits>(n, rng);
  std::vector<std::uint32_t> random(n);
  for (auto& r : random) r = static_cast<std::uint32_t>(rng());
  std::vector<std::uint8_t> packed((n + 1) / 2);
  ASSERT_TRUE(BulkEncodePackedFp4(x, packed, o, &pool2, random).ok());
  ASSERT_EQ(packed, WantPacked(x, o, random));
}

TEST(BulkTest, BadSizesAreErrorsAndWriteNothing) {
  const std::vector<float> x(10, 1.0f);
  std::vector<Fp8E4M3> q(9, Fp8E4M3::FromBits(0x11));
  Status s = BulkEncode(x, q);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("10"), std::string::npos) << s.message();
  for (const Fp8E4M3 c : q) EXPECT_EQ(c.bits, 0x11);

  std::vector<std::uint8_t> packed(6, 0x11);  // needs 5
  EXPECT_EQ(BulkEncodePackedFp4(x, packed).code(), StatusCode::kInvalidArgument);
  for (const std::uint8_t b : packed) EXPECT_EQ(b, 0x11);

  std::vector<float> out(13, 3.0f);  // packed input would need 7 bytes
  EXPECT_EQ(BulkDecode(std::span<const Fp8E4M3>(q), out).code(), StatusCode::kInvalidArgument);
  for (const float v : out) EXPECT_EQ(v, 3.0f);
  EXPECT_EQ(BulkDecodePackedFp4(packed, out).code(), StatusCode::kInvalidArgument);
  for (const float v : out) EXPECT_EQ(v, 3.0f);

  std::vector<Bf16> h(10, Bf16::FromBits(0x1234));
  const std::vector<std::uint32_t> short_random(9);
  EXPECT_EQ(BulkEncode(x, h, {.rounding = Rounding::kStochastic}, nullptr, short_random).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(BulkEncode(x, h, {.rounding = Rounding::kStochastic}).code(),
            StatusCode::kInvalidArgument);
  for (const Bf16 c : h) EXPECT_EQ(c.bits, 0x1234);

  // Empty spans are fine.
  EXPECT_TRUE(BulkEncode(std::span<const float>(), std::span<Bf16>()).ok());
  EXPECT_TRUE(BulkDecodePackedFp4(std::span<const std::uint8_t>(), std::span<float>()).ok());
}

}  // namespace
}  // namespace trnmx::test
