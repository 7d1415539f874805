// Every FP32 bit pattern (2^32) through the SIMD bulk encoders (bulk.h) on
// the best Highway target of this CPU, against the scalar codec
// (EncodeWithFlags), bit for bit: BF16, FP16, E2M3, E3M2 and E2M1 with their
// default policies, E4M3, E4M3 IEEE-style and E5M2 under each overflow policy
// (kSatFinite default, kNonSat, kMlDtypesSat), and every format under the ml_dtypes
// options of ml_dtypes_options.h (MlDtypes* tests). Each test makes one pass
// over the inputs and checks all of its formats on every chunk; two threads.
// The per-target unit tests (bulk_test.cc) cover the other targets and
// policies on sampled inputs. ctest label: exhaustive.
//
// The MlDtypes* tests are one link of the chain that proves trnmx equal to
// ml_dtypes over all 2^32 inputs: golden_digest_test (golden_test.cc) hashes
// the bulk codec's codes under these options and compares with ml_dtypes'
// digests, and these tests show the bulk codes equal to the scalar codec's
// under exactly the same options on every input (E4M3 IEEE-style: in
// Fp8E4M3IeeeEveryOverflowPolicyAndMlDtypes).
//
// The scalar codec is asked once per run of inputs between the breakpoints of
// the format's table oracle (run_expectations.h).
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <vector>

#include "formats/ml_dtypes_options.h"
#include "formats/run_expectations.h"
#include "trnmx/executor.h"
#include "trnmx/formats/bulk.h"
#include "trnmx/formats/codec.h"

namespace trnmx::test {
namespace {

constexpr std::size_t kChunk = std::size_t{1} << 16;
constexpr std::size_t kTasks = (std::uint64_t{1} << 32) / kChunk;

struct Mismatches {
  std::atomic<std::uint64_t> count{0};
  std::mutex mutex;
  void Add(const char* what, std::uint32_t bits, std::uint32_t got, std::uint32_t want) {
    if (count.fetch_add(1) < 10) {
      const std::lock_guard<std::mutex> lock(mutex);
      ADD_FAILURE() << what << ": x=0x" << std::hex << bits << " simd 0x" << got << " scalar 0x"
                    << want;
    }
  }
};

// One (format, options) check of a chunk of inputs (all of one sign).
template <class Code, EncodeOptions kOptions>
class Check {
 public:
  Check(const char* name, const FormatSpec& spec) : expect_(name, spec, kOptions) {}

  void operator()(std::span<const float> x, Mismatches& m) const {
    // Per thread, allocated once (zero-filling a fresh one per chunk was 7 %
    // of the sweep).
    thread_local std::vector<Code> out;
    out.resize(x.size());
    SerialExecutor serial;
    ASSERT_TRUE(BulkEncode(x, out, kOptions, &serial).ok());
    const std::uint32_t first = std::bit_cast<std::uint32_t>(x[0]);
    ASSERT_EQ(std::bit_cast<std::uint32_t>(x.back()), first + (x.size() - 1));
    expect_.CheckCodes(first, x.size(), out.data(),
                       [&](std::uint32_t bits, std::uint32_t got, std::uint32_t want) {
                         m.Add(expect_.name(), bits, got, want);
                       });
  }

 private:
  RunExpectations<typename Code::Traits> expect_;
};

// Runs every check on every chunk of the 2^32 inputs, on two threads.
template <class... Checks>
void SweepAllInputs(const Checks&... checks) {
  const SweepTimer timer;
  std::printf("best Highway target: %s\n",
              hwy::TargetName(hwy::SupportedTargets() & ~(hwy::SupportedTargets() - 1)));
  Mismatches mismatches;
  ThreadPoolExecutor pool(2);
  pool.ParallelFor(kTasks, [&](std::size_t task) {
    std::vector<float> x(kChunk);
    const std::uint32_t base = static_cast<std::uint32_t>(task * kChunk);
    for (std::size_t i = 0; i < kChunk; ++i) {
      x[i] = std::bit_cast<float>(base + static_cast<std::uint32_t>(i));
    }
    (checks(x, mismatches), ...);
  });
  std::printf("%zu checks x 2^32 inputs in %.1f s (2 threads, %.1f s CPU)\n", sizeof...(Checks),
              timer.wall_seconds(), timer.cpu_seconds());
  EXPECT_EQ(mismatches.count.load(), 0u);
}

constexpr EncodeOptions kDefault{};
constexpr EncodeOptions kSat{.overflow = Overflow::kSatFinite};
constexpr EncodeOptions kNonSat{.overflow = Overflow::kNonSat};
constexpr EncodeOptions kMlSat{.overflow = Overflow::kMlDtypesSat};

TEST(BulkExhaustive, Bf16AndFp16Defaults) {
  SweepAllInputs(Check<Bf16, kDefault>("bf16", kSpecBf16),
                 Check<Fp16, kDefault>("fp16", kSpecFp16));
}

TEST(BulkExhaustive, Fp8E4M3EveryOverflowPolicy) {
  SweepAllInputs(Check<Fp8E4M3, kSat>("e4m3 sat", kSpecE4M3),
                 Check<Fp8E4M3, kNonSat>("e4m3 nonsat", kSpecE4M3),
                 Check<Fp8E4M3, kMlSat>("e4m3 mldtypes-sat", kSpecE4M3));
}

TEST(BulkExhaustive, Fp8E5M2EveryOverflowPolicy) {
  SweepAllInputs(Check<Fp8E5M2, kSat>("e5m2 sat", kSpecE5M2),
                 Check<Fp8E5M2, kNonSat>("e5m2 nonsat", kSpecE5M2),
                 Check<Fp8E5M2, kMlSat>("e5m2 mldtypes-sat", kSpecE5M2));
}

// E4M3 IEEE-style (Trainium NC-v2/v3). A format with a NaN treats
// kMlDtypesNaN as kCanonical, its default, so the ml_dtypes options of the
// golden digests are two of its overflow policies: clip_astype = kSatFinite
// (the default), astype = kNonSat. One pass covers both and kMlDtypesSat.
TEST(BulkExhaustive, Fp8E4M3IeeeEveryOverflowPolicyAndMlDtypes) {
  static_assert(Fp8E4M3IeeeTraits::kDefaultNan == NanPolicy::kCanonical &&
                Fp8E4M3IeeeTraits::kDefaultOverflow == Overflow::kSatFinite);
  SweepAllInputs(Check<Fp8E4M3Ieee, kClipAstype>("e4m3-ieee sat = clip_astype", kSpecE4M3Ieee),
                 Check<Fp8E4M3Ieee, kAstype>("e4m3-ieee nonsat = astype", kSpecE4M3Ieee),
                 Check<Fp8E4M3Ieee, kMlSat>("e4m3-ieee mldtypes-sat", kSpecE4M3Ieee));
}

TEST(BulkExhaustive, Fp6AndFp4Defaults) {
  SweepAllInputs(Check<Fp6E2M3, kDefault>("e2m3", kSpecE2M3),
                 Check<Fp6E3M2, kDefault>("e3m2", kSpecE3M2),
                 Check<Fp4E2M1, kDefault>("e2m1", kSpecE2M1));
}

// The ml_dtypes options of the golden digests (golden_test.cc), FP8 and 16-bit.
TEST(BulkExhaustive, MlDtypesFp8Bf16Fp16) {
  SweepAllInputs(Check<Fp8E4M3, kAstype>("e4m3 astype", kSpecE4M3),
                 Check<Fp8E4M3, kClipAstype>("e4m3 clip_astype", kSpecE4M3),
                 Check<Fp8E5M2, kAstype>("e5m2 astype", kSpecE5M2),
                 Check<Fp8E5M2, kClipAstype>("e5m2 clip_astype", kSpecE5M2),
                 Check<Bf16, kBf16Astype>("bf16 astype", kSpecBf16),
                 Check<Fp16, kFp16Astype>("fp16 astype", kSpecFp16));
}

// The ml_dtypes options of the golden digests (golden_test.cc), FP6 and FP4.
TEST(BulkExhaustive, MlDtypesFp6Fp4) {
  SweepAllInputs(Check<Fp6E2M3, kAstype>("e2m3 astype", kSpecE2M3),
                 Check<Fp6E2M3, kClipAstype>("e2m3 clip_astype", kSpecE2M3),
                 Check<Fp6E3M2, kAstype>("e3m2 astype", kSpecE3M2),
                 Check<Fp6E3M2, kClipAstype>("e3m2 clip_astype", kSpecE3M2),
                 Check<Fp4E2M1, kAstype>("e2m1 astype", kSpecE2M1),
                 Check<Fp4E2M1, kClipAstype>("e2m1 clip_astype", kSpecE2M1));
}

}  // namespace
}  // namespace trnmx::test
