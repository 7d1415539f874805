// Collectives lowered onto a system: every rank's CC-core queues write into
// the next ranks' HBM over the system's links (program.h, "transfers between
// chips"), so the event simulator times them with the contention of shared
// links, switch ports, DMA engines and HBM stacks.
//
// Ranks are logical NeuronCores (trainium.md section 14: LNC = 2 by
// default, a logical core being 2 physical cores), numbered server by server
// and chip by chip: rank r is logical core r % ranks_per_chip of chip
// r / ranks_per_chip. Each rank drives one CC-core queue on each of its
// physical cores and splits every transfer between them (LNC = 2 uses both
// cores' DMA engines). `bytes` is the per-rank buffer as nccom-test counts
// it: the buffer reduced (all-reduce), the gathered output (all-gather), the
// input (reduce-scatter), the send buffer (all-to-all), the buffer sent
// (permute, send-recv).
//
// Algorithms (trainium.md section 10.3):
//   ring   R - 1 steps (2 (R - 1) for all-reduce = reduce-scatter then
//          all-gather): in step k rank r sends one chunk of bytes / R to
//          rank r + 1 and, for a reduction, adds the chunk it received into
//          its buffer with a DMA-compute pass (read both, write one).
//   mesh   direct writes: every rank writes its chunk for each peer in one
//          step (all-reduce: reduce-scatter then all-gather, 2 steps).
//   auto   mesh up to the system's mesh_max_bytes, ring above (the system
//          description's thresholds; trainium.md #19 on Trn3). Recursive
//          halving/doubling, KangaRing and hierarchical schedules are not
//          lowered yet: above the mesh threshold auto takes the ring.
// Permute sends the whole buffer to rank r + 1 (ring only); send-recv pairs
// ranks 2i and 2i + 1, each sending its buffer to the other.
//
//   System sys = LoadSystem("trn2-server").value();
//   CollectiveConfig c{.op = CollectiveOp::kAllReduce, .bytes = 64 << 20};
//   LoweredCollective l = LowerCollective(sys, c).value();
//   SimResult r = Simulate(l.program).value();
//   CollectiveFigures f = Figures(l.plan, r);  // time, algbw, busbw
//
// Errors (INVALID_ARGUMENT, naming the value): bytes < 1 or not divisible
// into the ranks' chunks of whole elements, ranks outside [2, the system's
// logical cores], LNC other than 1 or 2 (or not dividing the chip's cores),
// ranks_per_chip above the chip's logical cores, send-recv with an odd rank
// count, permute or reduction ops with an algorithm that cannot run them.
// RESOURCE_EXHAUSTED when the program would pass its instruction budget or
// a buffer does not fit in HBM.
#ifndef TRNMX_EMU_COLLECTIVE_H_
#define TRNMX_EMU_COLLECTIVE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "trnmx/emu/program.h"
#include "trnmx/emu/simulator.h"
#include "trnmx/emu/system.h"
#include "trnmx/status.h"

namespace trnmx::emu {

enum class CollectiveOp { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kPermute, kSendRecv };
// "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "permute", "send-recv".
std::string_view CollectiveOpName(CollectiveOp op);
StatusOr<CollectiveOp> ParseCollectiveOp(std::string_view name);

enum class CollectiveAlgorithm { kAuto, kRing, kMesh };
std::string_view CollectiveAlgorithmName(CollectiveAlgorithm a);  // "auto", "ring", "mesh"
StatusOr<CollectiveAlgorithm> ParseCollectiveAlgorithm(std::string_view name);

// "1 GiB", "64 MiB", "4 KiB" for whole binary multiples, else "466034 B":
// how plans, errors and trnmx-emu name buffer sizes.
std::string ByteSizeName(int64_t bytes);

struct CollectiveConfig {
  CollectiveOp op = CollectiveOp::kAllReduce;
  int64_t bytes = 0;  // per-rank buffer, as nccom-test counts it (header)
  int ranks = 0;      // 0: every logical core of the system
  int lnc = 2;        // physical cores per logical core: 1 or 2
  // Ranks placed on each chip; 0: all of its logical cores (cores / lnc).
  // 1 makes a collective over chips, one rank each.
  int ranks_per_chip = 0;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
};

struct CollectivePlan {
  CollectiveConfig config;                                     // ranks and ranks_per_chip resolved
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;  // the one lowered
  std::string why;          // how auto chose, e.g. "64 MiB > mesh_max_bytes 1 MiB: ring"
  int chips = 0;            // chips with ranks
  int steps = 0;            // communication steps of the algorithm
  int64_t chunk_bytes = 0;  // bytes one rank sends to one peer per step
  double bus_factor = 0;    // busbw / algbw (nccom-test)
};

struct LoweredCollective {
  Program program;
  CollectivePlan plan;
};

StatusOr<LoweredCollective> LowerCollective(const System& system, const CollectiveConfig& config,
                                            const ProgramOptions& options = {});

// nccom-test's figures of a simulated collective: algbw = bytes / time,
// busbw = algbw x bus_factor (all-reduce 2 (R - 1) / R; all-gather,
// reduce-scatter and all-to-all (R - 1) / R; permute and send-recv 1).
struct CollectiveFigures {
  double seconds = 0;
  double algbw_bytes_per_s = 0;
  double busbw_bytes_per_s = 0;
};
CollectiveFigures Figures(const CollectivePlan& plan, const SimResult& result);

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_COLLECTIVE_H_
