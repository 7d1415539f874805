// Test support: the seed of every random test input, printed so that a
// failure can be replayed (architecture.md section 8).
//
//   testing::Rng rng(testing::TestSeed(kMySuiteDefaultSeed) + 3);
//
// TRNMX_TEST_SEED=N (decimal, or hex with 0x) replaces the default seed of
// every suite in the process; ctest prints each test's output on failure,
// and the seed line is in it.
#ifndef TRNMX_TESTS_SUPPORT_RANDOM_H_
#define TRNMX_TESTS_SUPPORT_RANDOM_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <set>

namespace trnmx::testing {

using Rng = std::mt19937_64;

// TRNMX_TEST_SEED if set and not empty, else `default_seed` (each suite keeps
// its own default, so its cases stay the same). Each distinct seed is printed
// once per process: "[ seed     ] TRNMX_TEST_SEED=0x... (set it to repeat)".
inline std::uint64_t TestSeed(std::uint64_t default_seed) {
  const char* env = std::getenv("TRNMX_TEST_SEED");
  const std::uint64_t seed =
      env != nullptr && *env != '\0' ? std::strtoull(env, nullptr, 0) : default_seed;
  static std::mutex mutex;
  static std::set<std::uint64_t> printed;
  const std::lock_guard<std::mutex> lock(mutex);
  if (printed.insert(seed).second) {
    std::printf("[ seed     ] TRNMX_TEST_SEED=0x%llx (set it to repeat)\n",
                static_cast<unsigned long long>(seed));
    std::fflush(stdout);
  }
  return seed;
}

}  // namespace trnmx::testing

#endif  // TRNMX_TESTS_SUPPORT_RANDOM_H_
