// Counter-based random words for stochastic rounding (Rounding::kStochastic).
//
// StochasticBits(seed, index) is a pure function of its two arguments, so a
// tensor quantized with stochastic rounding gets the same bits for any thread
// count, SIMD target or split into lines. It is the (index + 1)-th output of
// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014; the generator of java.util.SplittableRandom)
// started from the state Mix64(seed), truncated to its high 32 bits:
//
//   Mix64(z):  z = (z ^ (z >> 30)) * BF58476D1CE4E5B9
//              z = (z ^ (z >> 27)) * 94D049BB133111EB
//              z ^ (z >> 31)
//   StochasticBits(seed, index) =
//       Mix64(Mix64(seed) + (index + 1) * 9E3779B97F4A7C15) >> 32   (mod 2^64)
//
// Mixing the seed first keeps streams of nearby seeds (0, 1, 2, ...)
// unrelated. It is not a cryptographic generator.
//
// The MX tensor layer (mx.h) gives element (r, c) of a rows x cols source the
// index r * cols + c: the logical row-major position, whatever the block axis
// and strides.
//
//   std::uint32_t w = trnmx::StochasticBits(42, 0);   // element (0, 0), seed 42
#ifndef TRNMX_FORMATS_STOCHASTIC_H_
#define TRNMX_FORMATS_STOCHASTIC_H_

#include <cstdint>

namespace trnmx {

constexpr std::uint64_t SplitMix64Mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

constexpr std::uint32_t StochasticBits(std::uint64_t seed, std::uint64_t index) {
  return static_cast<std::uint32_t>(
      SplitMix64Mix(SplitMix64Mix(seed) + (index + 1) * 0x9E3779B97F4A7C15ull) >> 32);
}

// SplitMix64 from state 0: first output E220A8397B1DCDAF (the published
// reference sequence).
static_assert(SplitMix64Mix(0x9E3779B97F4A7C15ull) == 0xE220A8397B1DCDAFull);

}  // namespace trnmx

#endif  // TRNMX_FORMATS_STOCHASTIC_H_
