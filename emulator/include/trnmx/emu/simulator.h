// Discrete-event simulator of a Program on its Machine.
//
// Time is an integer number of picoseconds. Events are ordered by (time,
// sequence number), so the same program always gives the same result and
// trace. Each stream's sequencer issues its instructions in order once their
// semaphore waits are met; costs come from the rules of
// ../shared/reference/trainium.md (sections 3, 5, 6, 7, 8; docs/emulator.md):
//
//   TensorE MultiplyMoving  max(min(mm_init, M), N) cycles (x4 for FP32) at the
//                           TensorE clock, the same for FP8 double-row (K=256)
//                           and MX (K=512); LoadStationary ceil(M / 4) cycles,
//                           overlapped with the previous MM (two weight slots);
//                           throttle: a burst that follows a window below 50 %
//                           busy starts at 50 % and ramps linearly to 100 %.
//   Transpose               max(P, min(64, F)) cycles.
//   VectorE                 max(MIN_II, per-op cycles) (copy N/r, tensor_tensor
//                           2N or N, reduce N, memset N, reciprocal 8N,
//                           QuantizeMX N/4), r = perf mode 4x/2x for 16-bit.
//   ScalarE                 max(MIN_II, N), BF16 copies N/2 on v4.
//   GpSimdE                 150 + N cycles.
//   DMA                     over the engines that serve its partitions (8
//                           partitions per engine): fixed cost + bytes per
//                           engine / (engine bandwidth x efficiency(bytes per
//                           partition)); transfers that touch HBM also reserve
//                           their bytes on the core's HBM stack at the stack's
//                           sustained bandwidth, shared by every core of it.
//   Semaphore waits         + semaphore latency (compute engines, in their own
//                           clock) or the DMA start latency (DMA queues).
#ifndef TRNMX_EMU_SIMULATOR_H_
#define TRNMX_EMU_SIMULATOR_H_

#include <cstdint>
#include <vector>

#include "trnmx/emu/machine.h"
#include "trnmx/emu/program.h"
#include "trnmx/status.h"

namespace trnmx::emu {

struct SimOptions {
  bool record_trace = false;
  bool throttle = true;  // TensorE dI/dt throttle (trainium.md #17)
};

struct TraceRecord {
  StreamId stream;
  int32_t index;  // instruction index in the stream
  int64_t start_ps;
  int64_t end_ps;
};

struct StreamStats {
  int64_t busy_ps = 0;        // sum of instruction durations (TensorE: MM and transposes)
  int64_t background_ps = 0;  // TensorE LoadStationary time (overlaps the MM unit)
  int64_t instructions = 0;
  int64_t bytes = 0;  // DMA queues
};

struct SimResult {
  int64_t end_ps = 0;  // when the last instruction completes
  std::vector<StreamStats> streams;
  std::vector<int64_t> dma_engine_busy_ps;  // [core * engines + engine]
  std::vector<int64_t> hbm_stack_busy_ps;   // per stack
  int64_t hbm_read_bytes = 0;
  int64_t hbm_write_bytes = 0;
  int64_t dma_bytes = 0;
  int64_t tensor_throttle_extra_ps = 0;  // time the throttle added to TensorE instructions
  int64_t events = 0;                    // events taken from the queue
  std::vector<TraceRecord> trace;        // when SimOptions::record_trace
};

// Runs `program` to completion. Fails (FAILED_PRECONDITION) on a deadlock,
// naming the blocked instruction and the semaphore it waits for.
StatusOr<SimResult> Simulate(const Program& program, const SimOptions& options = {});

// Cost rules, exposed for tests and documentation.
// ceil(cycles * 1e12 / clock_hz).
int64_t CyclesToPs(int64_t cycles, double clock_hz);
// TensorE cycles of a LoadStationary, MultiplyMoving or Transpose (no throttle).
int64_t TensorCycles(const Machine& m, const Instruction& in);
// Cycles of a Vector/Scalar/GpSimd instruction in that engine's clock.
int64_t ElementwiseCycles(const Program& p, EngineKind engine, const Instruction& in);
// DMA efficiency at `bytes_per_partition` (1 at and above the knee).
double DmaEfficiency(const Machine& m, double bytes_per_partition);

struct DmaCost {
  int first_engine = 0;
  int engines = 0;           // DMA engines the transfer spreads over
  int64_t engine_ps = 0;     // fixed cost + data time on each engine
  int64_t hbm_bytes = 0;     // bytes read plus bytes written in HBM
  int64_t hbm_ps = 0;        // time those bytes hold the stack
};
DmaCost DmaCostOf(const Program& p, const Instruction& in);

// Sustained bandwidth of one HBM stack: chip bandwidth x sustained fraction / stacks.
double HbmStackBandwidth(const Machine& m);
// The HBM stack a core's transfers use: consecutive cores share a stack
// (cores 2i and 2i+1 on 8 cores and 4 stacks; trainium.md section 2).
int HbmStackOfCore(const Machine& m, int core);

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_SIMULATOR_H_
