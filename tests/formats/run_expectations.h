// The scalar codec's codes of one (format, encode options), held once per
// decision run (sweep_runs.h) instead of asked per input. The exhaustive
// scalar sweep (exhaustive_sweep_test.cc) shows the scalar codec equal to the
// table oracle on every input, so it is constant on each run of the oracle's
// breakpoints; here it is asked at each run's first input and must agree at
// its last (both signs). An exhaustive test of another encoder (the Highway
// bulk codec, the xsimd inline layer) then compares every code it produced
// with the run's one expected code. NaN codes carry the payload and depend
// on the NaN policy: NaN inputs are asked per input.
#ifndef TRNMX_TESTS_FORMATS_RUN_EXPECTATIONS_H_
#define TRNMX_TESTS_FORMATS_RUN_EXPECTATIONS_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "formats/oracle.h"
#include "formats/sweep_runs.h"
#include "trnmx/formats/codec.h"

namespace trnmx::test {

template <class Traits>
class RunExpectations {
 public:
  RunExpectations(const char* name, const FormatSpec& spec, EncodeOptions options)
      : name_(name),
        options_(options),
        runs_(SplitAtBreakpoints(DecisionBreakpoints(TableOracle(spec)))) {
    for (std::size_t i = 0; i + 1 < runs_.size(); ++i) {  // The last run is NaN.
      for (int s = 0; s < 2; ++s) {
        const std::uint32_t sign = s == 0 ? 0u : 0x80000000u;
        want_[s].push_back(Scalar(runs_[i].first | sign));
        EXPECT_EQ(want_[s].back(), Scalar(runs_[i].last | sign))
            << name << ": scalar codec not constant on 0x" << std::hex << runs_[i].first << "..0x"
            << runs_[i].last;
      }
    }
  }

  const char* name() const { return name_; }

  // The scalar codec's code of one input.
  std::uint32_t Scalar(std::uint32_t bits) const {
    return EncodeWithFlags<Traits>(std::bit_cast<float>(bits), options_).code;
  }

  // Checks the codes of the n consecutive inputs first, first + 1, ... (all
  // of one sign): code_of(i) is the code under test of input first + i.
  // Calls report(bits, got, want) for each mismatch.
  template <class CodeOf, class Report>
  void Check(std::uint32_t first, std::size_t n, const CodeOf& code_of,
             const Report& report) const {
    const auto count = [&](std::size_t begin, std::size_t end, std::uint32_t want) {
      std::size_t bad = 0;
      for (std::size_t k = begin; k < end; ++k) bad += code_of(k) != want;
      return bad;
    };
    CheckWith(first, n, count, code_of, report);
  }

  // Check for codes in memory: codes[i] (an integer code, or a code struct
  // with member `bits`) is the code of input first + i. The comparisons run
  // as a SweepLoop (compiled for this CPU's widest vectors), which made the
  // bulk codec's sweeps a third faster than Check's baseline loop.
  template <class Code, class Report>
  void CheckCodes(std::uint32_t first, std::size_t n, const Code* codes,
                  const Report& report) const {
    static const auto count_loop =
        SweepLoop<CountCodesNot<Code>, const Code*, std::size_t, std::uint32_t>();
    const auto count = [&](std::size_t begin, std::size_t end, std::uint32_t want) {
      return count_loop(codes + begin, end - begin, want);
    };
    const auto code_of = [&](std::size_t k) { return CodeBits(codes[k]); };
    CheckWith(first, n, count, code_of, report);
  }

 private:
  template <class Code>
  static std::uint32_t CodeBits(const Code& c) {
    if constexpr (std::is_integral_v<Code>) {
      return c;
    } else {
      return c.bits;
    }
  }

  // Codes of codes[0, n) unequal to want (a SweepLoop).
  template <class Code>
  struct CountCodesNot {
    std::uint64_t operator()(const Code* codes, std::size_t n, std::uint32_t want) const {
      std::uint64_t bad = 0;
      for (std::size_t k = 0; k < n; ++k) bad += CodeBits(codes[k]) != want;
      return bad;
    }
  };

  // count(begin, end, want): the inputs in [begin, end) whose code is not want.
  template <class Count, class CodeOf, class Report>
  void CheckWith(std::uint32_t first, std::size_t n, const Count& count, const CodeOf& code_of,
                 const Report& report) const {
    const int s = static_cast<int>(first >> 31);
    auto run = std::lower_bound(runs_.begin(), runs_.end(), first & 0x7FFFFFFFu,
                                [](const BitRun& r, std::uint32_t v) { return r.last < v; });
    for (std::size_t i = 0; i < n; ++run) {
      const std::uint32_t abs_bits = (first + static_cast<std::uint32_t>(i)) & 0x7FFFFFFFu;
      const std::size_t end = std::min<std::size_t>(n, i + std::size_t{run->last - abs_bits} + 1);
      const bool nan = run + 1 == runs_.end();
      const std::uint32_t want = nan ? 0 : want_[s][static_cast<std::size_t>(run - runs_.begin())];
      if (nan || count(i, end, want) != 0) {  // Per input, with the scalar codec's own answer.
        for (std::size_t k = i; k < end; ++k) {
          const std::uint32_t bits = first + static_cast<std::uint32_t>(k);
          const std::uint32_t w = nan ? Scalar(bits) : want;
          const std::uint32_t got = code_of(k);
          if (got != w) report(bits, got, w);
        }
      }
      i = end;
    }
  }

  const char* name_;
  EncodeOptions options_;
  std::vector<BitRun> runs_;
  std::vector<std::uint32_t> want_[2];  // [sign][run]
};

}  // namespace trnmx::test

#endif  // TRNMX_TESTS_FORMATS_RUN_EXPECTATIONS_H_
