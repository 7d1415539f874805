// XORWOW random words for stochastic rounding: Marsaglia's xorwow generator
// ("Xorshift RNGs", Journal of Statistical Software 8(14), 2003, p. 5), the
// generator trainium.md section 6 lists on Trainium3's VectorE (S9, S10).
//
// The algorithm (published): five 32-bit words x, y, z, w, v and a Weyl
// counter d; each step
//   t = x ^ (x >> 2); x = y; y = z; z = w; w = v;
//   v = (v ^ (v << 4)) ^ (t ^ (t << 1));
//   d += 362437;  output d + v          (all mod 2^32)
// Period 2^192 - 2^32. Marsaglia's example state is x = 123456789,
// y = 362436069, z = 521288629, w = 88675123, v = 5783321, d = 6615241
// (Xorwow::Marsaglia()).
//
// What the hardware does with it is not published: AWS gives only "XORWOW,
// 4 x 32-bit values per lane per cycle, 4 states per lane" (S9, S10), not how
// states are seeded, how lanes and states are assigned to elements, or how
// many bits of a word an element's rounding uses. trnmx's documented
// defaults, which an emulation can state but not claim as the engine's:
//   * seeding: Xorwow::FromSeed(seed): x, y, z, w, v = StochasticBits(seed,
//     0..4) (stochastic.h: the first five SplitMix64 words of the mixed
//     seed, high halves), d = Marsaglia's 6615241; an all-zero x..v (which
//     would stay zero) is replaced by Marsaglia's state;
//   * one generator per tensor, words taken in the tensor's logical
//     row-major element order (MxQuantizeOptions::stochastic_source =
//     StochasticSource::kXorwow): element (r, c) of a rows x cols source gets
//     word number r * cols + c (0-based), whatever the block axis, threads or
//     SIMD target;
//   * each element uses the whole 32-bit word (Rounding::kStochastic rounds
//     away from zero iff frac32 + word >= 2^32, options.h).
//
//   trnmx::Xorwow g = trnmx::Xorwow::FromSeed(42);
//   std::vector<std::uint32_t> words(n);
//   g.Fill(words);   // then EncodeBulk(..., {.rounding = Rounding::kStochastic}, words)
#ifndef TRNMX_FORMATS_XORWOW_H_
#define TRNMX_FORMATS_XORWOW_H_

#include <cstdint>
#include <span>

#include "trnmx/formats/stochastic.h"

namespace trnmx {

class Xorwow {
 public:
  // Marsaglia's example state (2003, p. 5).
  static constexpr Xorwow Marsaglia() {
    return Xorwow(123456789u, 362436069u, 521288629u, 88675123u, 5783321u, 6615241u);
  }

  // trnmx's seeding (see the top): SplitMix64 words for x..v.
  static constexpr Xorwow FromSeed(std::uint64_t seed) {
    std::uint32_t s[5] = {};
    bool any = false;
    for (int i = 0; i < 5; ++i) {
      s[i] = StochasticBits(seed, static_cast<std::uint64_t>(i));
      any |= s[i] != 0;
    }
    if (!any) return Marsaglia();
    return Xorwow(s[0], s[1], s[2], s[3], s[4], 6615241u);
  }

  constexpr Xorwow(std::uint32_t x, std::uint32_t y, std::uint32_t z, std::uint32_t w,
                   std::uint32_t v, std::uint32_t d)
      : x_(x), y_(y), z_(z), w_(w), v_(v), d_(d) {}

  // The next word.
  constexpr std::uint32_t Next() {
    const std::uint32_t t = x_ ^ (x_ >> 2);
    x_ = y_;
    y_ = z_;
    z_ = w_;
    w_ = v_;
    v_ = (v_ ^ (v_ << 4)) ^ (t ^ (t << 1));
    d_ += 362437u;
    return d_ + v_;
  }

  // The next words.size() words, in order.
  constexpr void Fill(std::span<std::uint32_t> words) {
    for (std::uint32_t& w : words) w = Next();
  }

 private:
  std::uint32_t x_, y_, z_, w_, v_, d_;
};

}  // namespace trnmx

#endif  // TRNMX_FORMATS_XORWOW_H_
