// Kernels composed over the chips of a system: a tensor-parallel GEMM on
// every chip followed by the all-reduce of its output, in one program
// (gemm.h LowerGemmInto, collective.h LowerCollectiveInto).
//
// Chip c computes a partial C[M, N] = A[M, Kc] x B[Kc, N] over its share Kc
// of the contraction (`gemm` is the per-chip GEMM, `gemm.cores` cores of
// each chip), then the chips all-reduce their C (BF16, 2 M N bytes): one
// rank per chip, on its cores 0 .. lnc - 1, each waiting for its chip's
// last store of C. The all-reduce's CC-core queues share those cores' DMA
// engines with the GEMM's queues.
//
//   System sys = LoadSystem("trn3-ultraserver-gen2").value();
//   TensorParallelGemmConfig c;
//   c.gemm = {.m = 8192, .n = 8192, .k = 8192, .dtype = MatmulDtype::kMxfp8, .cores = 8};
//   TensorParallelTiming t = SimulateTensorParallelGemm(sys, c).value();
//   // t.deduplicated: one chip's GEMM simulated for all 144; t.end_ps.
//
// Deduplication: the chips run the same GEMM on their own cores, HBM and
// DMA engines, with nothing between them until the all-reduce, which starts
// on every chip once that chip's GEMM has stored C. So every chip stores
// its last tile at the same time T, the all-reduce starts from idle
// resources at T + the DMA wait latency (cost.h DmaWaitLatencyPs) on every
// rank, and the whole run ends at T + that latency + the all-reduce's time
// on its own. SimulateTensorParallelGemm simulates one chip's GEMM and the
// all-reduce over every rank (the ranks of a ring over a switched or torus
// fabric are not symmetric: their routes differ) instead of the whole
// program, which gives the same end time to the picosecond (a test runs
// both); `deduplicate = false` simulates the whole program.
//
// Errors: those of PlanGemm and PlanCollective (the field named), chips
// outside [2, the system's chips], and RESOURCE_EXHAUSTED past the
// instruction budget (the whole program, or one chip's GEMM when
// deduplicated).
#ifndef TRNMX_EMU_PARALLEL_H_
#define TRNMX_EMU_PARALLEL_H_

#include <cstdint>
#include <string>

#include "trnmx/emu/collective.h"
#include "trnmx/emu/gemm.h"
#include "trnmx/emu/program.h"
#include "trnmx/emu/simulator.h"
#include "trnmx/emu/system.h"
#include "trnmx/status.h"

namespace trnmx::emu {

struct TensorParallelGemmConfig {
  GemmConfig gemm;  // one chip's GEMM: its K is the chip's share of the contraction
  int chips = 0;    // chips 0 .. chips - 1 of the system; 0 = all of them
  int lnc = 2;      // the all-reduce's physical cores per rank (one rank per chip)
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
};

struct TensorParallelGemm {
  Program program;
  GemmPlan gemm;  // every chip's
  CollectivePlan all_reduce;
};

// The whole program: every chip's GEMM, then the all-reduce of the C's.
StatusOr<TensorParallelGemm> LowerTensorParallelGemm(const System& system,
                                                     const TensorParallelGemmConfig& config,
                                                     const ProgramOptions& options = {});

struct TensorParallelTiming {
  GemmPlan gemm;
  CollectivePlan all_reduce;
  int64_t gemm_ps = 0;  // when every chip has stored C
  int64_t end_ps = 0;   // when the all-reduce is complete on every rank
  bool deduplicated = false;
  // How it was simulated, e.g. "GEMM simulated once for 144 identical chips
  // (34308 instructions), all-reduce over all 144 ranks (123552
  // instructions)"; or why the whole program was.
  std::string how;
  int64_t instructions = 0, events = 0;  // simulated
};

StatusOr<TensorParallelTiming> SimulateTensorParallelGemm(const System& system,
                                                          const TensorParallelGemmConfig& config,
                                                          bool deduplicate = true,
                                                          const ProgramOptions& options = {});

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_PARALLEL_H_
