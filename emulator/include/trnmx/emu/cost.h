// Cost rules of the emulator: how long each instruction holds the unit that
// runs it, from the machine description and trainium.md (sections 3, 5, 6,
// 7, 8; docs/emulator.md). One module serves the lowering (placement,
// tiling: EstimateKernel below), the discrete-event simulator (simulator.h)
// and the closed-form estimates, so all three agree by construction.
//
//   TensorE MultiplyMoving  max(min(mm_init, M), N) cycles (x4 for FP32) at the
//                           TensorE clock, the same for FP8 double-row (K=256)
//                           and MX (K=512); LoadStationary ceil(M / 4) cycles;
//                           Transpose max(P, min(64, F)) cycles.
//   VectorE                 max(MIN_II, per-op cycles) (copy N/r, tensor_tensor
//                           2N or N (N for 16-bit add/subtract/multiply),
//                           reduce N (N/2 for 16-bit add/max), memset N,
//                           reciprocal 8N, QuantizeMX N/4, exponential N/4 on
//                           v4), r = perf mode 4x/2x for 16-bit.
//   ScalarE                 max(MIN_II, N), BF16 copies N/2 on v4; an
//                           activation whose function is in another table set
//                           than the one loaded first loads it (~1 us, #9).
//   Vector/Scalar           + ~100 cycles for an instruction marked dependent
//                           (back to back after the one it reads; S7, #8).
//   GpSimdE                 150 + N cycles.
//   DMA                     over the engines that serve its partitions (8
//                           partitions per engine), or, HBM to HBM, over
//                           ceil(bytes / knee) engines (at most all), any
//                           adjacent ones: fixed cost + bytes per engine /
//                           (engine bandwidth x efficiency(bytes per
//                           partition; HBM to HBM: 1)); bytes read or
//                           written in HBM also hold the HBM stack of the
//                           core at its sustained bandwidth.
//   Between chips           a transfer into another chip's HBM also holds
//                           every link of the route for bytes / link
//                           bandwidth (per direction) and the stack of the
//                           destination address, all from its start (cut
//                           through), and ends the route's latency later.
//
// Times are integer picoseconds, rounded up.
//
//   Machine m = LoadPresetMachine("trn3").value();
//   int64_t cycles = TensorCycles(m, Instruction::MultiplyMoving(-1, -1,
//       MatmulDtype::kMxfp8, 512, 128, 512, false));        // 512
//   int64_t ps = CyclesToPs(cycles, m.tensor.clock_hz.value);  // 213,334
#ifndef TRNMX_EMU_COST_H_
#define TRNMX_EMU_COST_H_

#include <cstdint>
#include <vector>

#include "trnmx/emu/machine.h"
#include "trnmx/emu/program.h"
#include "trnmx/emu/system.h"

namespace trnmx::emu {

// ceil(cycles * 1e12 / clock_hz), exact for any cycles >= 0 (128-bit when needed).
int64_t CyclesToPs(int64_t cycles, double clock_hz);
// TensorE cycles of a LoadStationary, MultiplyMoving or Transpose (no throttle).
int64_t TensorCycles(const Machine& m, const Instruction& in);
// Cycles of a Vector/Scalar/GpSimd instruction in that engine's clock.
int64_t ElementwiseCycles(const Program& p, EngineKind engine, const Instruction& in);
// DMA efficiency at `bytes_per_partition` (1 at and above the knee).
double DmaEfficiency(const Machine& m, double bytes_per_partition);
// From the semaphore a DMA or collective queue waits for reaching its value
// to the transfer starting: dma.dependency_start_ns in picoseconds.
int64_t DmaWaitLatencyPs(const Machine& m);

// DmaCost::first_engine of an HBM-to-HBM transfer: any `engines` adjacent
// engines (the simulator takes those free first).
inline constexpr int kAnyEngines = -1;

struct DmaCost {
  int first_engine = 0;   // or kAnyEngines
  int engines = 0;        // DMA engines the transfer spreads over
  int64_t engine_ps = 0;  // fixed cost + data time on each engine
  int64_t hbm_bytes = 0;  // bytes read plus bytes written in the HBM of the core's chip
  int64_t hbm_ps = 0;     // time those bytes hold the core's stack
  // Bytes written into another chip's HBM (a transfer over the system's
  // links) and the time they hold the stack there that holds the address.
  int64_t remote_hbm_bytes = 0, remote_hbm_ps = 0;
};
DmaCost DmaCostOf(const Program& p, const Instruction& in);

// Time `bytes` hold a link of a system: bytes / its per-direction bandwidth.
int64_t LinkTransferPs(const SystemLink& link, int64_t bytes);
// Latency of a route (System::Route): the sum of its links' latency_ns.
int64_t RouteLatencyPs(const System& system, const std::vector<int>& route);

// Sustained bandwidth of one HBM stack: chip bandwidth x sustained fraction / stacks.
double HbmStackBandwidth(const Machine& m);
// The HBM stack a core's transfers use: consecutive cores share a stack
// (cores 2i and 2i+1 on 8 cores and 4 stacks; trainium.md section 2).
// `core` is the core's index on its chip.
int HbmStackOfCore(const Machine& m, int core);
// The stack that holds byte `address` of a chip's HBM: the address space is
// cut into one equal range per stack (a write from another chip lands there).
int HbmStackOfAddress(const Machine& m, int64_t address);

// Closed-form estimate of a kernel whose cores work in parallel, for
// comparing tilings before lowering one (the GEMM planner, gemm.h). Inferred
// (I) rules on top of the per-instruction ones above:
//   tensor    MultiplyMoving cycles of the busiest core at the TensorE clock;
//   dma       the busiest core's transfers, each holding the engines that
//             serve its partitions for fixed cost + bytes / (engines x
//             engine bandwidth x efficiency(bytes per partition)), summed;
//   hbm       the bytes read and written in HBM by the cores of the busiest
//             stack over the stack's sustained bandwidth;
//   prologue  what TensorE waits for before its first matmul: the DMA start
//             latency plus the first transfers on the engines;
//   epilogue  what follows the last matmul: the DMA start latency plus the
//             last transfers (a GEMM's last store of C), which no later
//             work hides;
//   total     prologue + ((tensor + epilogue)^8 + dma^8 + hbm^8)^(1/8): the
//             largest of the three, plus an allowance for the stalls of a
//             pipeline whose resources are all nearly busy (+4 % when two of
//             them need 90 % of the third's time, +0.3 % at 60 %). The
//             epilogue lengthens only TensorE's chain: the DMA engines'
//             time already counts those transfers.
//
//   KernelLoad load{.tensor_cycles = 2048 * 512,
//                   .transfers = {{.count = 64, .bytes = 1 << 20}},  // 64 MiB in 1 MiB loads
//                   .cores_per_stack = 2};
//   KernelEstimate e = EstimateKernel(m, load);  // e.hbm_ps = 2 x 64 MiB / 1.1025 TB/s on trn3
struct DmaTransfers {
  int64_t count = 0;     // transfers of this shape
  int64_t bytes = 0;     // bytes each
  int partitions = 128;  // SBUF/PSUM partitions each spans, from partition 0
  bool hbm = true;       // one side in HBM (the other on chip)
};
struct KernelLoad {
  int64_t tensor_cycles = 0;
  std::vector<DmaTransfers> transfers;  // every transfer of the busiest core
  std::vector<DmaTransfers> prologue;   // the first transfers its TensorE waits for
  std::vector<DmaTransfers> epilogue;   // the transfers that wait for its last matmul
  int cores_per_stack = 1;              // cores of the kernel on its busiest HBM stack
};
struct KernelEstimate {
  int64_t tensor_ps = 0, dma_ps = 0, hbm_ps = 0, prologue_ps = 0, epilogue_ps = 0;
  int64_t total_ps = 0;
};
KernelEstimate EstimateKernel(const Machine& m, const KernelLoad& load);

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_COST_H_
