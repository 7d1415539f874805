// Test support: run a check once per Highway target that libtrnmx was
// compiled for and this CPU supports, with trnmx's dynamic dispatch forced to
// that target (architecture.md section 4: every test runs on every target).
#ifndef TRNMX_TESTS_SUPPORT_HWY_TARGETS_H_
#define TRNMX_TESTS_SUPPORT_HWY_TARGETS_H_

#include <hwy/targets.h>

#include <cstdint>
#include <string>
#include <vector>

namespace trnmx::testing {

struct HwyTarget {
  std::int64_t bits;
  std::string name;
};

// The targets to test, best first. Read before any forcing, so it lists every
// target compiled into this binary and supported here.
inline std::vector<HwyTarget> CompiledHwyTargets() {
  std::vector<HwyTarget> out;
  for (const std::int64_t t : hwy::SupportedAndGeneratedTargets()) {
    out.push_back({t, hwy::TargetName(t)});
  }
  return out;
}

// Forces dispatch to one target while alive; restores normal dispatch after.
class ScopedHwyTarget {
 public:
  explicit ScopedHwyTarget(std::int64_t target) { hwy::SetSupportedTargetsForTest(target); }
  ~ScopedHwyTarget() { hwy::SetSupportedTargetsForTest(0); }
  ScopedHwyTarget(const ScopedHwyTarget&) = delete;
  ScopedHwyTarget& operator=(const ScopedHwyTarget&) = delete;
};

// fn(const HwyTarget&) once per target, each with dispatch forced to it.
template <class Fn>
void ForEachHwyTarget(Fn&& fn) {
  for (const HwyTarget& target : CompiledHwyTargets()) {
    const ScopedHwyTarget scoped(target.bits);
    fn(target);
  }
}

}  // namespace trnmx::testing

#endif  // TRNMX_TESTS_SUPPORT_HWY_TARGETS_H_
