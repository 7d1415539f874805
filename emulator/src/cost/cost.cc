// The public cost functions of trnmx/emu/cost.h, one evaluation each.
#include "trnmx/emu/cost.h"

#include <algorithm>
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

int HbmStackOfAddress(const Machine& m, int64_t address) {
  const int stacks = static_cast<int>(m.hbm.stacks.value);
  const int64_t per_stack = static_cast<int64_t>(m.hbm.capacity_bytes.value) / stacks;
  return static_cast<int>(std::min<int64_t>(stacks - 1, address / per_stack));
}

double HbmStackBandwidth(const Machine& m) {
  return m.hbm.bandwidth_bytes_per_s.value * m.hbm.sustained_fraction.value / m.hbm.stacks.value;
}

DmaCost DmaCostOf(const Program& p, const Instruction& in) {
  return CostModel(p.machine()).Dma(p, in);
}

int64_t DmaWaitLatencyPs(const Machine& m) {
  return static_cast<int64_t>(std::llround(m.dma.dependency_start_ns.value * internal::kPsPerNs));
}

int64_t LinkTransferPs(const SystemLink& link, int64_t bytes) {
  return internal::LinkPs(link, bytes);
}

int64_t RouteLatencyPs(const System& system, const std::vector<int>& route) {
  return internal::RouteLatencyPs(system, route);
}

KernelEstimate EstimateKernel(const Machine& m, const KernelLoad& load) {
  const CostModel cost(m);
  KernelEstimate e;
  e.tensor_ps = CyclesToPs(load.tensor_cycles, m.tensor.clock_hz.value);
  const auto engine_ps = [&](const DmaTransfers& t) {
    const int parts = std::max(1, t.partitions);
    return cost.DmaEnginePs(t.bytes, cost.DmaEngines(parts), static_cast<double>(t.bytes) / parts);
  };
  double hbm_bytes = 0;
  for (const DmaTransfers& t : load.transfers) {
    e.dma_ps += t.count * engine_ps(t);
    if (t.hbm) hbm_bytes += static_cast<double>(t.count) * static_cast<double>(t.bytes);
  }
  e.hbm_ps = cost.HbmPs(hbm_bytes * std::max(1, load.cores_per_stack));
  // Transfers on the critical path before the first or after the last
  // matmul: each list starts after a semaphore (the DMA start latency).
  const auto serial_ps = [&](const std::vector<DmaTransfers>& ts) {
    int64_t ps = ts.empty() ? 0 : DmaWaitLatencyPs(m);
    for (const DmaTransfers& t : ts) ps += t.count * engine_ps(t);
    return ps;
  };
  e.prologue_ps = serial_ps(load.prologue);
  e.epilogue_ps = serial_ps(load.epilogue);
  // The 8-norm of the three resource times (relative to the largest, so it cannot overflow).
  const int64_t tensor_chain = e.tensor_ps + e.epilogue_ps;
  const double top = static_cast<double>(std::max({tensor_chain, e.dma_ps, e.hbm_ps, int64_t{1}}));
  double sum = 0;
  for (int64_t t : {tensor_chain, e.dma_ps, e.hbm_ps})
    sum += std::pow(static_cast<double>(t) / top, 8);
  e.total_ps = e.prologue_ps + static_cast<int64_t>(std::llround(top * std::pow(sum, 1.0 / 8)));
  return e;
}

}  // namespace trnmx::emu
