// The public cost functions of trnmx/emu/cost.h, one evaluation each.
#include "trnmx/emu/cost.h"

#include <cmath>

#include "cost/cost_model.h"

namespace trnmx::emu {

using internal::CostModel;

int64_t CyclesToPs(int64_t cycles, double clock_hz) {
  return internal::PsOfCycles(cycles, static_cast<uint64_t>(std::llround(clock_hz)));
}

int64_t TensorCycles(const Machine& m, const Instruction& in) {
  return CostModel(m).TensorCycles(in);
}

int64_t ElementwiseCycles(const Program& p, EngineKind engine, const Instruction& in) {
  return CostModel(p.machine()).ElementwiseCycles(p, engine, in);
}

double DmaEfficiency(const Machine& m, double bytes_per_partition) {
  return CostModel(m).DmaEfficiency(bytes_per_partition);
}

int HbmStackOfCore(const Machine& m, int core) {
  return core / (m.core_count() / static_cast<int>(m.hbm.stacks.value));
}

double HbmStackBandwidth(const Machine& m) {
  return m.hbm.bandwidth_bytes_per_s.value * m.hbm.sustained_fraction.value / m.hbm.stacks.value;
}

DmaCost DmaCostOf(const Program& p, const Instruction& in) {
  return CostModel(p.machine()).Dma(p, in);
}

}  // namespace trnmx::emu
