// Test support: run a test once per Highway target that libtrnmx was
// compiled for and this CPU supports, with trnmx's dynamic dispatch forced to
// that target (architecture.md section 4: every test runs on every target).
//
// A per-target suite is a value-parameterized GoogleTest suite; each test is
// named after its target, so a failure names it and one target can be
// selected:
//
//   class BulkPerTarget : public trnmx::testing::HwyTargetTest {};
//   TRNMX_INSTANTIATE_PER_HWY_TARGET(BulkPerTarget);
//   TEST_P(BulkPerTarget, KnownAnswers) { ... }   // dispatch forced to GetParam()
//
//   bulk_test --gtest_filter='*/AVX2'    # BulkPerTarget.KnownAnswers/AVX2, ...
#ifndef TRNMX_TESTS_SUPPORT_HWY_TARGETS_H_
#define TRNMX_TESTS_SUPPORT_HWY_TARGETS_H_

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace trnmx::testing {

struct HwyTarget {
  std::int64_t bits;
  std::string name;  // hwy::TargetName: "AVX3_DL", "AVX2", "SSE4", "EMU128", ...
};

inline void PrintTo(const HwyTarget& target, std::ostream* os) { *os << target.name; }

// The targets to test, best first: every target compiled into this binary
// and supported here. Read once, at the first call (the suites' instantiation,
// before any forcing): read again under a forced target it would list that
// target alone.
inline std::vector<HwyTarget> CompiledHwyTargets() {
  static const std::vector<HwyTarget> targets = [] {
    std::vector<HwyTarget> out;
    for (const std::int64_t t : hwy::SupportedAndGeneratedTargets()) {
      out.push_back({t, hwy::TargetName(t)});
    }
    return out;
  }();
  return targets;
}

// True for the first (best) target of CompiledHwyTargets(): tests that run
// a target-independent part (such as the split over threads) only once use it.
inline bool IsBestHwyTarget(const HwyTarget& target) {
  return target.bits == CompiledHwyTargets().front().bits;
}

// Forces dispatch to one target while alive; restores normal dispatch after.
class ScopedHwyTarget {
 public:
  explicit ScopedHwyTarget(std::int64_t target) { hwy::SetSupportedTargetsForTest(target); }
  ~ScopedHwyTarget() { hwy::SetSupportedTargetsForTest(0); }
  ScopedHwyTarget(const ScopedHwyTarget&) = delete;
  ScopedHwyTarget& operator=(const ScopedHwyTarget&) = delete;
};

// fn(const HwyTarget&) once per target, each with dispatch forced to it; for
// the few tests that span targets (data packed on one target, used on all).
template <class Fn>
void ForEachHwyTarget(Fn&& fn) {
  for (const HwyTarget& target : CompiledHwyTargets()) {
    const ScopedHwyTarget scoped(target.bits);
    fn(target);
  }
}

// Base of a per-target suite: each test body runs with dispatch forced to
// GetParam() and normal dispatch is restored after it.
class HwyTargetTest : public ::testing::TestWithParam<HwyTarget> {
 protected:
  void SetUp() override { hwy::SetSupportedTargetsForTest(GetParam().bits); }
  void TearDown() override { hwy::SetSupportedTargetsForTest(0); }
};

// The test name suffix: the target's name.
inline std::string HwyTargetTestName(const ::testing::TestParamInfo<HwyTarget>& info) {
  return info.param.name;
}

}  // namespace trnmx::testing

// Instantiates `suite` (derived from HwyTargetTest) once per compiled target.
#define TRNMX_INSTANTIATE_PER_HWY_TARGET(suite)                                                  \
  INSTANTIATE_TEST_SUITE_P(, suite, ::testing::ValuesIn(::trnmx::testing::CompiledHwyTargets()), \
                           ::trnmx::testing::HwyTargetTestName)

#endif  // TRNMX_TESTS_SUPPORT_HWY_TARGETS_H_
