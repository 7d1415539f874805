// All 2^32 FP32 inputs through trnmx's BF16/FP16 codecs against independent
// implementations on this machine (label exhaustive):
// - Eigen 3.4 Eigen::bfloat16 (RNE, NaN -> 7FC0/FFC0): NanPolicy::kCanonical.
// - The CPU's AVX512_BF16 VCVTNEPS2BF16 (RNE, DAZ, NaN quieted with payload):
//   Subnormals::kFlush (formats.md section 4).
// - The CPU's AVX-512 VCVTPS2PH with round-to-nearest-even (IEEE binary16,
//   NaN quieted with its top payload bits): the FP16 defaults.
// Hardware checks need the instructions; on a CPU without them they report
// "skipped" with the reason.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <Eigen/Core>
#include <algorithm>
#include <bit>
#include <cstdio>
#include <sstream>

#include "formats/sweep_runs.h"
#include "trnmx/formats/codec.h"

namespace trnmx {
namespace {

constexpr std::uint64_t kAllInputs = std::uint64_t{1} << 32;

// The hardware sweeps: Hardware(in, out) converts 16 FP32 patterns with the
// instruction, Ours(x) is trnmx's encoder; both sign halves of 2^32 split over
// two threads (sweep_runs.h), each run compiled for AVX-512 with the encoder
// inlined (flatten, so it vectorises). The first ten mismatches are failures.
template <class Peer>
void SweepHardware(const char* name) {
  test::SweepMismatches mismatches;
  test::ParallelOverRuns(
      {{0, test::kMaxNanBits}}, [&](std::size_t, std::uint32_t a, std::uint32_t b) {
        for (const std::uint32_t sign : {0u, 0x80000000u}) {
          const std::uint64_t bad = Peer::Mismatches(a, b, sign);
          mismatches.Add(bad);
          for (std::uint64_t u = a; bad != 0 && u <= b; u += 16) {
            alignas(64) std::uint32_t in[16];
            alignas(32) std::uint16_t out[16];
            const std::uint64_t n = std::min<std::uint64_t>(16, b - u + 1);
            for (std::uint32_t i = 0; i < 16; ++i) {
              in[i] = static_cast<std::uint32_t>(u + std::min<std::uint64_t>(i, n - 1)) | sign;
            }
            Peer::Hardware(in, out);
            for (std::uint32_t i = 0; i < n; ++i) {
              const std::uint16_t ours = Peer::Ours(std::bit_cast<float>(in[i]));
              if (out[i] == ours) continue;
              std::ostringstream what;
              what << "x=0x" << std::hex << in[i] << " " << name << " 0x" << out[i] << " trnmx 0x"
                   << ours;
              mismatches.Report(what.str());
            }
          }
        }
      });
  std::printf("%s: %llu mismatching inputs over 2^32\n", name,
              static_cast<unsigned long long>(mismatches.count()));
  EXPECT_EQ(mismatches.count(), 0u);
}

// Mismatches of Eigen::bfloat16 and trnmx's BF16 encoder on the patterns
// [first, last] | sign: compiled as sweep_runs.h's SweepLoop (the loop
// vectorises for AVX2 where the CPU has it; one input at a time it took 35 s).
struct EigenBf16Mismatches {
  static std::uint16_t Eigen(float x) {
    return Eigen::numext::bit_cast<std::uint16_t>(Eigen::bfloat16(x));
  }
  static std::uint16_t Ours(float x) {
    return Encode<Bf16>(x, {.nan = NanPolicy::kCanonical}).bits;
  }
  std::uint64_t operator()(std::uint32_t first, std::uint32_t last, std::uint32_t sign) const {
    std::uint64_t bad = 0;
    for (std::uint64_t u = first; u <= last; ++u) {
      const float x = std::bit_cast<float>(static_cast<std::uint32_t>(u) | sign);
      bad += Eigen(x) != Ours(x);
    }
    return bad;
  }
};

TEST(PeerConversions, EigenBfloat16) {
  const auto count =
      test::SweepLoop<EigenBf16Mismatches, std::uint32_t, std::uint32_t, std::uint32_t>();
  test::SweepMismatches mismatches;
  test::ParallelOverRuns(
      {{0, test::kMaxNanBits}}, [&](std::size_t, std::uint32_t a, std::uint32_t b) {
        for (const std::uint32_t sign : {0u, 0x80000000u}) {
          const std::uint64_t bad = count(a, b, sign);
          mismatches.Add(bad);
          for (std::uint64_t u = a; bad != 0 && u <= b; ++u) {  // The first ten become failures.
            const std::uint32_t bits = static_cast<std::uint32_t>(u) | sign;
            const float x = std::bit_cast<float>(bits);
            if (EigenBf16Mismatches::Eigen(x) == EigenBf16Mismatches::Ours(x)) continue;
            std::ostringstream what;
            what << "x=0x" << std::hex << bits << " eigen 0x" << EigenBf16Mismatches::Eigen(x)
                 << " trnmx 0x" << EigenBf16Mismatches::Ours(x);
            mismatches.Report(what.str());
          }
        }
      });
  std::printf("Eigen::bfloat16: %llu mismatching inputs over 2^32\n",
              static_cast<unsigned long long>(mismatches.count()));
  EXPECT_EQ(mismatches.count(), 0u);
}

// Mismatches over the patterns [first, last] | sign, 16 at a time: whole
// groups with no per-lane test (so that the comparison vectorises), then
// the last, partial group with its last pattern repeated to fill the vector.
#define TRNMX_HARDWARE_SWEEP(TARGET)                                                          \
  [[gnu::flatten, gnu::target(TARGET)]] static std::uint64_t Mismatches(                      \
      std::uint32_t first, std::uint32_t last, std::uint32_t sign) {                         \
    std::uint64_t bad = 0;                                                                   \
    alignas(64) std::uint32_t in[16];                                                        \
    alignas(32) std::uint16_t out[16];                                                       \
    std::uint64_t u = first;                                                                 \
    for (; u + 15 <= last; u += 16) {                                                        \
      for (std::uint32_t i = 0; i < 16; ++i) in[i] = static_cast<std::uint32_t>(u + i) | sign; \
      Hardware(in, out);                                                                     \
      for (std::uint32_t i = 0; i < 16; ++i) {                                               \
        bad += out[i] != Ours(std::bit_cast<float>(in[i]));                                  \
      }                                                                                      \
    }                                                                                        \
    if (u <= last) {                                                                         \
      for (std::uint32_t i = 0; i < 16; ++i) {                                               \
        in[i] = static_cast<std::uint32_t>(std::min<std::uint64_t>(u + i, last)) | sign;     \
      }                                                                                      \
      Hardware(in, out);                                                                     \
      for (std::uint32_t i = 0; u + i <= last; ++i) {                                        \
        bad += out[i] != Ours(std::bit_cast<float>(in[i]));                                  \
      }                                                                                      \
    }                                                                                        \
    return bad;                                                                              \
  }

// AVX512_BF16 VCVTNEPS2BF16 against Encode<Bf16> with Subnormals::kFlush.
struct Vcvtneps2bf16 {
  [[gnu::target("avx512f,avx512bf16")]] static void Hardware(const std::uint32_t* in,
                                                            std::uint16_t* out) {
    const __m256bh r = _mm512_cvtneps_pbh(_mm512_load_ps(reinterpret_cast<const float*>(in)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(out), reinterpret_cast<const __m256i&>(r));
  }
  static std::uint16_t Ours(float x) {
    return Encode<Bf16>(x, {.subnormals = Subnormals::kFlush}).bits;
  }
  TRNMX_HARDWARE_SWEEP(TRNMX_SWEEP_AVX512_TARGET ",avx512bf16")
};

// AVX-512F VCVTPS2PH (round to nearest even) against Encode<Fp16>.
struct Vcvtps2ph {
  [[gnu::target("avx512f")]] static void Hardware(const std::uint32_t* in, std::uint16_t* out) {
    // The masked form: GCC 12's unmasked _mm512_cvtps_ph trips -Wuninitialized.
    const __m256i r = _mm512_mask_cvtps_ph(_mm256_setzero_si256(), 0xFFFF,
                                           _mm512_load_ps(reinterpret_cast<const float*>(in)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out), r);
  }
  static std::uint16_t Ours(float x) { return Encode<Fp16>(x).bits; }
  TRNMX_HARDWARE_SWEEP(TRNMX_SWEEP_AVX512_TARGET)
};
#undef TRNMX_HARDWARE_SWEEP

TEST(PeerConversions, Avx512Bf16Instruction) {
  if (!test::CpuHasSweepAvx512() || !__builtin_cpu_supports("avx512bf16"))
    GTEST_SKIP() << "CPU has no AVX512_BF16";
  SweepHardware<Vcvtneps2bf16>("vcvtneps2bf16");
}

TEST(PeerConversions, Avx512Fp16ConvertInstruction) {
  if (!test::CpuHasSweepAvx512()) GTEST_SKIP() << "CPU has no AVX-512 (F, BW, VL, DQ)";
  SweepHardware<Vcvtps2ph>("vcvtps2ph");
}

}  // namespace
}  // namespace trnmx
