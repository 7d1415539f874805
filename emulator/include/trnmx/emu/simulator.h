// Discrete-event simulator of a Program on its Machine.
//
// Time is an integer number of picoseconds. Events are ordered by (time,
// sequence number), so the same program always gives the same result and
// trace. Each stream's sequencer issues its instructions in order once their
// semaphore waits are met. How long an instruction holds its unit comes from
// the cost rules (cost.h); the simulator adds what depends on the schedule:
//
//   TensorE      LoadStationary overlaps the previous MultiplyMoving (two
//                weight slots); throttle: a burst that follows a window
//                below 50 % busy starts at 50 % and ramps linearly to 100 %.
//   Units        Vector/Scalar/GpSimd run one instruction at a time.
//   Bandwidth    DMA engines, HBM stacks and the links of a system are
//                bandwidth resources held in (time, seq) order: a DMA or
//                collective queue hands its next transfer to the engines
//                when they are free (never reserving ahead) and its
//                previous transfer's last byte has left (a queue keeps
//                order; small HBM copies on several queues run side by
//                side on different engines, cost.h), and queues
//                waiting for the same engines take them in turn, transfer
//                by transfer; every core of a stack shares its bandwidth,
//                transfers whose routes share a link share it.
//   Semaphore    + semaphore latency (compute engines, in their own clock)
//   waits        or the DMA start latency (DMA and collective queues).
//
//   Program p = ...;                       // program.h, or a lowering (gemm.h)
//   SimResult r = Simulate(p, {.record_trace = true}).value();
//   double us = r.end_ps * 1e-6;
#ifndef TRNMX_EMU_SIMULATOR_H_
#define TRNMX_EMU_SIMULATOR_H_

#include <cstdint>
#include <vector>

#include "trnmx/emu/cost.h"
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

// The time one transfer held one link of the system (SimOptions::record_trace).
struct LinkTraceRecord {
  int32_t link;     // System::links index
  StreamId stream;  // the transfer: program.streams()[stream].instructions[index]
  int32_t index;
  int64_t start_ps;
  int64_t end_ps;
};

struct SimResult {
  int64_t end_ps = 0;  // when the last instruction completes
  std::vector<StreamStats> streams;
  std::vector<int64_t> dma_engine_busy_ps;  // [core * engines + engine]
  std::vector<int64_t> hbm_stack_busy_ps;   // [chip * stacks + stack]
  std::vector<int64_t> link_busy_ps;        // per link of the program's system (empty without one)
  std::vector<int64_t> link_bytes;          // bytes each link carried
  int64_t link_transfer_bytes = 0;          // bytes written into other chips' HBM
  int64_t hbm_read_bytes = 0;
  int64_t hbm_write_bytes = 0;
  int64_t dma_bytes = 0;
  int64_t tensor_throttle_extra_ps = 0;     // time the throttle added to TensorE instructions
  int64_t events = 0;                       // events taken from the queue
  std::vector<TraceRecord> trace;           // when SimOptions::record_trace
  std::vector<LinkTraceRecord> link_trace;  // when SimOptions::record_trace
};

// Runs `program` to completion. Fails (FAILED_PRECONDITION) on a deadlock,
// naming the blocked instruction and the semaphore it waits for.
StatusOr<SimResult> Simulate(const Program& program, const SimOptions& options = {});

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_SIMULATOR_H_
