// Every FP32 bit pattern (2^32) through the xsimd inline layer's encoders, at
// the widest architecture this machine runs (tests/inline/CMakeLists.txt),
// against the scalar reference of trnmx/formats/codec.h:
//   BF16                    EncodeBf16 vs Encode<Bf16> (project default, D11)
//   E4M3, E5M2, E2M1        Encode<Traits, P> for P = kSatFinite (default),
//                           kNonSat, kMlDtypesSat vs EncodeWithFlags<Traits>
//   E2M1 packed             EncodeE2M1Packed: each nibble vs the same reference
// The scalar reference is asked once per decision run of the format's table
// oracle, where the exhaustive scalar sweep shows it constant, and checked at
// both ends of the run (tests/formats/run_expectations.h); NaN inputs are
// asked one by one. Two threads (std::thread), each on half of the patterns,
// in chunks that the array functions process as whole batches. ctest label:
// exhaustive.
#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "formats/run_expectations.h"
#include "trnmx/formats/codec.h"
#include "trnmx/inline/all.h"

namespace trnmx::test {
namespace {

namespace tis = trnmx::inline_simd;
using Arch = xsimd::default_arch;
constexpr unsigned kThreads = 2;
constexpr std::uint64_t kChunk = 1 << 16;  // a multiple of every batch width

// First mismatches (from any thread) and the total count of one sweep.
class Log {
 public:
  explicit Log(std::string what) : what_(std::move(what)) {}
  void Add(const char* policy, std::uint32_t in, std::uint32_t got, std::uint32_t want) {
    if (count_.fetch_add(1) < 10) {
      std::lock_guard<std::mutex> lock(mu_);
      char line[128];
      std::snprintf(line, sizeof line, "  %s %s: x=0x%08X got 0x%X want 0x%X\n", what_.c_str(),
                    policy, in, got, want);
      lines_ += line;
    }
  }
  void Expect() const { EXPECT_EQ(count_.load(), 0u) << what_ << " mismatches:\n" << lines_; }

 private:
  std::string what_;
  std::atomic<std::uint64_t> count_{0};
  std::mutex mu_;
  std::string lines_;
};

// Runs body(first_bits, x, n) over all 2^32 patterns in kThreads threads;
// prints the time.
template <class Body>
void Sweep(const char* what, Body body) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  constexpr std::uint64_t kEnd = 1ull << 32;
  for (unsigned t = 0; t < kThreads; ++t) {
    pool.emplace_back([&body, t] {
      std::vector<float> x(kChunk);
      for (std::uint64_t lo = kEnd / kThreads * t; lo < kEnd / kThreads * (t + 1); lo += kChunk) {
        for (std::uint64_t i = 0; i < kChunk; ++i)
          x[i] = std::bit_cast<float>(static_cast<std::uint32_t>(lo + i));
        body(x.data(), kChunk);
      }
    });
  }
  for (std::thread& th : pool) th.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: 2^32 inputs on %s (%zu lanes), %u threads: %.1f s\n", what, Arch::name(),
              xsimd::batch<float, Arch>::size, kThreads, s);
}

// Checks codes[i], the code of input x[i] (consecutive patterns), against `expect`.
template <class Traits, class Code>
void CheckChunk(const RunExpectations<Traits>& expect, const char* policy, const float* x,
                std::uint64_t n, const Code* codes, Log& log) {
  expect.CheckCodes(std::bit_cast<std::uint32_t>(x[0]), n, codes,
                    [&](std::uint32_t bits, std::uint32_t got, std::uint32_t want) {
                      log.Add(policy, bits, got, want);
                    });
}

TEST(InlineExhaustive, Bf16) {
  Log log("BF16");
  const RunExpectations<Bf16Traits> expect("bf16", kSpecBf16, {});
  Sweep("BF16", [&](const float* x, std::uint64_t n) {
    thread_local std::vector<std::uint16_t> got;
    got.resize(n);
    tis::EncodeBf16<Arch>(x, got.data(), n);
    CheckChunk(expect, "default", x, n, got.data(), log);
  });
  log.Expect();
}

template <class Traits>
void SweepSmallFloat(const char* name, const FormatSpec& spec) {
  Log log(name);
  const RunExpectations<Traits> sat(name, spec, {});
  const RunExpectations<Traits> nonsat(name, spec, {.overflow = Overflow::kNonSat});
  const RunExpectations<Traits> mlsat(name, spec, {.overflow = Overflow::kMlDtypesSat});
  Sweep(name, [&](const float* x, std::uint64_t n) {
    // Per thread, allocated once: a fresh allocation per chunk was a tenth of
    // the sweep's time (zero-filling and page faults).
    thread_local std::vector<std::uint8_t> got_sat, got_nonsat, got_mlsat, packed;
    got_sat.resize(n);
    got_nonsat.resize(n);
    got_mlsat.resize(n);
    packed.resize((n + 1) / 2);
    tis::Encode<Traits, Overflow::kFormatDefault, Arch>(x, got_sat.data(), n);
    tis::Encode<Traits, Overflow::kNonSat, Arch>(x, got_nonsat.data(), n);
    tis::Encode<Traits, Overflow::kMlDtypesSat, Arch>(x, got_mlsat.data(), n);
    CheckChunk(sat, "kSatFinite", x, n, got_sat.data(), log);
    CheckChunk(nonsat, "kNonSat", x, n, got_nonsat.data(), log);
    CheckChunk(mlsat, "kMlDtypesSat", x, n, got_mlsat.data(), log);
    if constexpr (std::is_same_v<Traits, Fp4E2M1Traits>) {
      tis::EncodeE2M1Packed<Overflow::kFormatDefault, Arch>(x, packed.data(), n);
      // got_sat is checked against the reference above, so the packed bytes
      // must hold its nibbles (a loop that vectorises; the nibble-wise check
      // below doubled the sweep's time). On a difference, the nibbles are
      // checked against the reference itself, which reports them.
      std::uint64_t bad = 0;
      for (std::uint64_t j = 0; j < n / 2; ++j) {
        bad += packed[j] != static_cast<std::uint8_t>(got_sat[2 * j] | got_sat[2 * j + 1] << 4);
      }
      if (bad != 0) {
        sat.Check(
            std::bit_cast<std::uint32_t>(x[0]), n,
            [&](std::size_t i) -> std::uint32_t {
              return i % 2 == 0 ? packed[i / 2] & 0xF : packed[i / 2] >> 4;
            },
            [&](std::uint32_t bits, std::uint32_t got, std::uint32_t want) {
              log.Add("packed", bits, got, want);
            });
      }
    }
  });
  log.Expect();
}

TEST(InlineExhaustive, E4M3) { SweepSmallFloat<Fp8E4M3Traits>("E4M3", kSpecE4M3); }
TEST(InlineExhaustive, E5M2) { SweepSmallFloat<Fp8E5M2Traits>("E5M2", kSpecE5M2); }
TEST(InlineExhaustive, E2M1) { SweepSmallFloat<Fp4E2M1Traits>("E2M1", kSpecE2M1); }

TEST(InlineExhaustive, ArchIsTheWidestBuilt) {
  EXPECT_STREQ(Arch::name(), TRNMX_INLINE_EXPECTED_ARCH);
}

}  // namespace
}  // namespace trnmx::test
