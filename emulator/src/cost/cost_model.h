// The cost rules of trnmx/emu/cost.h with the machine's numbers converted
// once: the simulator evaluates them for every instruction, the lowering for
// every candidate plan, the public functions of cost.h for one.
#ifndef TRNMX_EMU_SRC_COST_COST_MODEL_H_
#define TRNMX_EMU_SRC_COST_COST_MODEL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "trnmx/emu/cost.h"
#include "trnmx/emu/machine.h"
#include "trnmx/emu/program.h"
#include "trnmx/emu/system.h"

namespace trnmx::emu::internal {

__extension__ typedef unsigned __int128 Uint128;

inline constexpr int64_t kPsPerNs = 1000;
inline constexpr uint64_t kPsPerS = 1000000000000ULL;
inline constexpr int64_t kPpm = 1000000;

// Every duration saturates at kMaxDurationPs (2^60 ps, 13 days): a machine
// description may make one instruction take that long (a DMA engine of
// 1 B/s), and the simulator, which stops at 2^62 ps, must be able to add a
// few durations to a time without overflowing int64.
inline constexpr int64_t kMaxDurationPs = int64_t{1} << 60;

inline int64_t CeilPs(double seconds) {
  const double ps = std::ceil(seconds * 1e12);
  return ps >= static_cast<double>(kMaxDurationPs) ? kMaxDurationPs : static_cast<int64_t>(ps);
}
inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t RoundUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline bool Is16Bit(ElemType t) { return t == ElemType::kBf16 || t == ElemType::kFp16; }
inline int64_t AsInt(const Sourced& s) { return static_cast<int64_t>(s.value); }

// ceil(cycles * 1e12 / hz). 64-bit arithmetic when it cannot overflow
// (cycles < 2^24 and hz < 2^40 keep cycles * 1e12 + hz below 2^64), else 128-bit.
inline int64_t PsOfCycles(int64_t cycles, uint64_t hz) {
  if (cycles >= 0 && cycles < (int64_t{1} << 24) && hz < (uint64_t{1} << 40)) {
    return static_cast<int64_t>((static_cast<uint64_t>(cycles) * kPsPerS + hz - 1) / hz);
  }
  const Uint128 ps = (static_cast<Uint128>(cycles) * kPsPerS + hz - 1) / hz;
  return ps >= static_cast<Uint128>(kMaxDurationPs) ? kMaxDurationPs : static_cast<int64_t>(ps);
}

// PsOfCycles with the last conversion remembered: an engine mostly repeats
// the same instruction shape, and the division is a large part of its cost.
struct CycleMemo {
  int64_t cycles = -1;
  int64_t ps = 0;
  int64_t Ps(int64_t c, uint64_t hz) {
    if (c != cycles) {
      cycles = c;
      ps = PsOfCycles(c, hz);
    }
    return ps;
  }
};

inline uint64_t ClockHz(const Sourced& clock) {
  return static_cast<uint64_t>(std::llround(clock.value));
}

class CostModel {
 public:
  explicit CostModel(const Machine& m)
      : ls_speedup_(AsInt(m.tensor.load_stationary_speedup)),
        mm_init_(AsInt(m.tensor.mm_init_cycles)),
        fp32_multiplier_(AsInt(m.tensor.fp32_cycle_multiplier)),
        vector_min_ii_(AsInt(m.vector.min_ii_cycles)),
        vector_perf_(AsInt(m.vector.perf_mode_max)),
        quantize_rate_(AsInt(m.vector.quantize_mx_elems_per_cycle)),
        scalar_min_ii_(AsInt(m.scalar.min_ii_cycles)),
        scalar_copy_speedup_(AsInt(m.scalar.bf16_copy_speedup)),
        vector_exp_rate_(AsInt(m.vector.exp_elems_per_cycle)),
        vector_dependent_(AsInt(m.vector.dependent_overhead_cycles)),
        scalar_dependent_(AsInt(m.scalar.dependent_overhead_cycles)),
        table_load_cycles_(static_cast<int64_t>(
            std::ceil(m.scalar.activation_table_load_ns.value * m.scalar.clock_hz.value / 1e9))),
        gpsimd_start_(AsInt(m.gpsimd.start_cycles)),
        dma_engines_(static_cast<int>(m.dma.engines.value)),
        dma_partitions_per_engine_(static_cast<int>(m.dma.partitions_per_engine.value)),
        dma_fixed_ps_(static_cast<int64_t>(std::llround(m.dma.fixed_cost_ns.value * kPsPerNs))),
        dma_engine_bandwidth_(m.dma.engine_bandwidth_bytes_per_s.value),
        dma_knee_(m.dma.efficiency_knee_bytes_per_partition.value),
        dma_row_overhead_(m.dma.row_overhead_bytes.value),
        hbm_stack_bandwidth_(HbmStackBandwidth(m)) {}

  int64_t TensorCycles(const Instruction& in) const {
    switch (in.op) {
      case Opcode::kLoadStationary:
        return std::max<int64_t>(1, CeilDiv(in.m, ls_speedup_));
      case Opcode::kMultiplyMoving:
        return std::max(std::min(mm_init_, in.m), in.n) *
               (in.dtype == MatmulDtype::kFp32 ? fp32_multiplier_ : 1);
      case Opcode::kTranspose:
        return std::max<int64_t>(in.partitions, std::min<int64_t>(64, in.n));
      default:
        return 0;
    }
  }

  int64_t ElementwiseCycles(const Program& p, EngineKind engine, const Instruction& in) const {
    const auto space = [&](BufferId id) {
      return id < 0 ? MemSpace::kSbuf : p.buffers()[id].space;
    };
    const int64_t n = in.n;
    const bool in16 = Is16Bit(in.in_type), out16 = Is16Bit(in.out_type);
    if (engine == EngineKind::kGpSimd) return gpsimd_start_ + n;
    if (engine == EngineKind::kScalar) {
      const bool copy = in.op == Opcode::kTensorCopy || in.op == Opcode::kTensorScalar;
      return std::max(scalar_min_ii_,
                      CeilDiv(n, copy && in16 && out16 ? scalar_copy_speedup_ : 1)) +
             (in.dependent ? scalar_dependent_ : 0);
    }
    const bool any_psum = space(in.src0) == MemSpace::kPsum || space(in.dst) == MemSpace::kPsum ||
                          space(in.src1) == MemSpace::kPsum;
    int64_t cycles = n;
    switch (in.op) {
      case Opcode::kTensorCopy:
      case Opcode::kTensorScalar: {
        int64_t r = 1;
        if (in16 && out16) r = any_psum ? std::min<int64_t>(2, vector_perf_) : vector_perf_;
        cycles = CeilDiv(n, r);
        break;
      }
      case Opcode::kTensorTensor: {
        const bool mixed = space(in.src0) != space(in.src1);
        const bool fast_alu =
            in.alu == AluOp::kAdd || in.alu == AluOp::kSubtract || in.alu == AluOp::kMultiply;
        cycles = (mixed || (in16 && out16 && !any_psum && fast_alu)) ? n : 2 * n;
        break;
      }
      case Opcode::kTensorReduce:
        cycles = in16 && (in.alu == AluOp::kAdd || in.alu == AluOp::kMax) ? CeilDiv(n, 2) : n;
        break;
      case Opcode::kMemset:
        cycles = in16 ? CeilDiv(n, 2) : n;
        break;
      case Opcode::kExponential:
        cycles = CeilDiv(n, std::max<int64_t>(1, vector_exp_rate_));
        break;
      case Opcode::kReciprocal:
        cycles = 8 * n;
        break;
      case Opcode::kQuantizeMx:
        cycles = CeilDiv(n, quantize_rate_);
        break;
      default:
        break;
    }
    return std::max(vector_min_ii_, cycles) + (in.dependent ? vector_dependent_ : 0);
  }

  // ScalarE cycles to load the activation-table set of `in` before it runs,
  // given the set `loaded` (updated): 0 unless `in` is an activation whose
  // function is in another set than the one loaded.
  int64_t ActivationTableCycles(const Instruction& in, ActTableSet& loaded) const {
    if (in.op != Opcode::kActivation) return 0;
    const ActTableSet need = ActTableSetOf(in.act);
    if (need == ActTableSet::kNone || need == loaded) return 0;
    loaded = need;
    return table_load_cycles_;
  }

  double DmaEfficiency(double bytes_per_partition) const {
    if (bytes_per_partition >= dma_knee_) return 1.0;
    const double overhead = dma_row_overhead_ * (1.0 - bytes_per_partition / dma_knee_);
    return bytes_per_partition / (bytes_per_partition + overhead);
  }

  DmaCost Dma(const Program& p, const Instruction& in) const {
    const Buffer& src = p.buffers()[in.src0];
    const Buffer& dst = p.buffers()[in.dst];
    DmaCost c;
    // The on-chip side decides which engines serve the transfer (engine e
    // serves partitions [8e, 8e + 8)).
    const Buffer* chip = src.space != MemSpace::kHbm   ? &src
                         : dst.space != MemSpace::kHbm ? &dst
                                                       : nullptr;
    double bytes_per_partition = dma_knee_;
    if (chip != nullptr) {
      const int first = chip->partition_start;
      const int last = first + in.partitions;  // exclusive
      c.first_engine = first / dma_partitions_per_engine_;
      c.engines =
          (last + dma_partitions_per_engine_ - 1) / dma_partitions_per_engine_ - c.first_engine;
      bytes_per_partition = static_cast<double>(in.bytes) / in.partitions;
    } else {
      // HBM to HBM: one engine per knee's worth of bytes (each share stays
      // at full efficiency), at most all of them; which ones is the
      // simulator's choice (kAnyEngines), so that small transfers, a mesh
      // collective's, run side by side on different engines.
      c.first_engine = kAnyEngines;
      c.engines = static_cast<int>(std::clamp<int64_t>(
          (in.bytes + static_cast<int64_t>(dma_knee_) - 1) / static_cast<int64_t>(dma_knee_), 1,
          dma_engines_));
    }
    c.engine_ps = DmaEnginePs(in.bytes, c.engines, bytes_per_partition);
    // A write into another chip's HBM holds a stack of that chip instead.
    const bool remote = dst.space == MemSpace::kHbm && dst.chip != src.chip;
    // DMA compute (accumulate: dst += src) also reads the destination; more
    // inputs are read, and a duplicated write written, in the HBM of the
    // core's chip (Instruction::src1, src2, dst2; all HBM then).
    const int64_t dst_touches = in.accumulate ? 2 : 1;
    const int64_t extra = (in.src1 >= 0) + (in.src2 >= 0) + (in.dst2 >= 0);
    c.hbm_bytes = (src.space == MemSpace::kHbm ? in.bytes : 0) +
                  (dst.space == MemSpace::kHbm && !remote ? dst_touches * in.bytes : 0) +
                  extra * in.bytes;
    c.hbm_ps = HbmPs(static_cast<double>(c.hbm_bytes));
    c.remote_hbm_bytes = remote ? in.bytes : 0;
    c.remote_hbm_ps = HbmPs(static_cast<double>(c.remote_hbm_bytes));
    return c;
  }

  // Time each of `engines` DMA engines is held by a transfer of `bytes`:
  // the fixed cost plus its share of the bytes at the efficiency of
  // `bytes_per_partition`.
  int64_t DmaEnginePs(int64_t bytes, int engines, double bytes_per_partition) const {
    const double bytes_per_engine = std::ceil(static_cast<double>(bytes) / engines);
    const double rate = dma_engine_bandwidth_ * DmaEfficiency(bytes_per_partition);
    return dma_fixed_ps_ + CeilPs(bytes_per_engine / rate);
  }
  // Engines serving `partitions` partitions from partition 0.
  int DmaEngines(int partitions) const {
    return std::clamp((partitions + dma_partitions_per_engine_ - 1) / dma_partitions_per_engine_, 1,
                      dma_engines_);
  }
  // Time `bytes` read or written in HBM hold one stack.
  int64_t HbmPs(double bytes) const { return bytes > 0 ? CeilPs(bytes / hbm_stack_bandwidth_) : 0; }

 private:
  int64_t ls_speedup_, mm_init_, fp32_multiplier_;
  int64_t vector_min_ii_, vector_perf_, quantize_rate_;
  int64_t scalar_min_ii_, scalar_copy_speedup_;
  int64_t vector_exp_rate_, vector_dependent_, scalar_dependent_, table_load_cycles_;
  int64_t gpsimd_start_;
  int dma_engines_, dma_partitions_per_engine_;
  int64_t dma_fixed_ps_;
  double dma_engine_bandwidth_, dma_knee_, dma_row_overhead_, hbm_stack_bandwidth_;
};

// Time `bytes` hold a link at its per-direction bandwidth.
inline int64_t LinkPs(const SystemLink& link, int64_t bytes) {
  return CeilPs(static_cast<double>(bytes) / link.bandwidth_bytes_per_s.value);
}

// The latency of a route: the sum of its links' shares of a step.
inline int64_t RouteLatencyPs(const System& s, const std::vector<int>& route) {
  int64_t ps = 0;
  for (int id : route) ps += std::llround(s.links[id].latency_ns.value * kPsPerNs);
  return ps;
}

}  // namespace trnmx::emu::internal

#endif  // TRNMX_EMU_SRC_COST_COST_MODEL_H_
