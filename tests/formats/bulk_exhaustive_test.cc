// Every FP32 bit pattern (2^32) through the SIMD bulk encoders (bulk.h) on
// the best Highway target of this CPU, against the scalar codec
// (EncodeWithFlags), bit for bit: BF16, FP16, E2M3, E3M2 and E2M1 with their
// default policies, E4M3 and E5M2 under each overflow policy (kSatFinite
// default, kNonSat, kMlDtypesSat). Each test makes one pass over the inputs
// and checks all of its formats on every chunk; two threads. The per-target
// unit tests (bulk_test.cc) cover the other targets and policies on sampled
// inputs. ctest label: exhaustive.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <vector>

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

// One (format, options) check of a chunk of inputs.
template <class Code, EncodeOptions kOptions>
struct Check {
  const char* name;
  void operator()(std::span<const float> x, Mismatches& m) const {
    std::vector<Code> out(x.size());
    SerialExecutor serial;
    ASSERT_TRUE(BulkEncode(x, out, kOptions, &serial).ok());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::uint32_t want = EncodeWithFlags<typename Code::Traits>(x[i], kOptions).code;
      if (out[i].bits != want) m.Add(name, std::bit_cast<std::uint32_t>(x[i]), out[i].bits, want);
    }
  }
};

// Runs every check on every chunk of the 2^32 inputs, on two threads.
template <class... Checks>
void SweepAllInputs(const Checks&... checks) {
  const auto start = std::chrono::steady_clock::now();
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
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%zu checks x 2^32 inputs in %.1f s (2 threads)\n", sizeof...(Checks), s);
  EXPECT_EQ(mismatches.count.load(), 0u);
}

constexpr EncodeOptions kDefault{};
constexpr EncodeOptions kSat{.overflow = Overflow::kSatFinite};
constexpr EncodeOptions kNonSat{.overflow = Overflow::kNonSat};
constexpr EncodeOptions kMlSat{.overflow = Overflow::kMlDtypesSat};

TEST(BulkExhaustive, Bf16AndFp16Defaults) {
  SweepAllInputs(Check<Bf16, kDefault>{"bf16"}, Check<Fp16, kDefault>{"fp16"});
}

TEST(BulkExhaustive, Fp8E4M3EveryOverflowPolicy) {
  SweepAllInputs(Check<Fp8E4M3, kSat>{"e4m3 sat"}, Check<Fp8E4M3, kNonSat>{"e4m3 nonsat"},
                 Check<Fp8E4M3, kMlSat>{"e4m3 mldtypes-sat"});
}

TEST(BulkExhaustive, Fp8E5M2EveryOverflowPolicy) {
  SweepAllInputs(Check<Fp8E5M2, kSat>{"e5m2 sat"}, Check<Fp8E5M2, kNonSat>{"e5m2 nonsat"},
                 Check<Fp8E5M2, kMlSat>{"e5m2 mldtypes-sat"});
}

TEST(BulkExhaustive, Fp6AndFp4Defaults) {
  SweepAllInputs(Check<Fp6E2M3, kDefault>{"e2m3"}, Check<Fp6E3M2, kDefault>{"e3m2"},
                 Check<Fp4E2M1, kDefault>{"e2m1"});
}

}  // namespace
}  // namespace trnmx::test
