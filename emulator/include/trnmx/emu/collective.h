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
// input (reduce-scatter), the send buffer (all-to-all, all-to-all-v), the
// buffer sent (permute, send-recv).
//
// Algorithms (trainium.md section 10.3):
//   ring   R - 1 steps (2 (R - 1) for all-reduce = reduce-scatter then
//          all-gather): in step k rank r sends one chunk of bytes / R to
//          rank r + 1 and, for a reduction, adds the chunk it received into
//          its buffer with a DMA-compute pass (read both, write one).
//   mesh   direct writes: every rank writes its chunk for each peer in one
//          step (all-reduce: reduce-scatter then all-gather, 2 steps).
//   rdh    recursive halving then doubling (all-reduce, reduce-scatter,
//          all-gather; R a power of two): log2 R steps each. Halving step j
//          pairs rank r with r ^ (R >> (j + 1)), which swap the halves of
//          their segment (bytes / 2^(j + 1) each way) and add the half they
//          keep; doubling step j pairs r with r ^ 2^j, which swap their
//          segments (bytes x 2^j / R each way). Each rank sends
//          (R - 1) / R x bytes per phase, as the ring does, in log2 R steps.
//   hierarchical  (all-reduce, all-gather, reduce-scatter over whole
//          servers, two or more; trainium.md 10.3: "AR = intra RS + inter
//          AR + intra AG", "RS = intra then inter", "AG = inter-node AG then
//          intra-node AG"): the buffer is cut into L pieces of bytes / L,
//          each into S sub-pieces. All-reduce: the L ranks of each server
//          (ranks_per_chip x chips_per_server, in rank order) run a ring
//          reduce-scatter of the buffer, leaving local rank l with the sum
//          over its server of piece (l + 1) % L; the S ranks holding the
//          same piece, one per server, run a ring all-reduce of it (over
//          whatever links, switch planes or EFA join the servers); then each
//          server runs a ring all-gather. 2 (L - 1) + 2 (S - 1) steps, each
//          rank sending (L - 1) / L x bytes per intra phase and (S - 1) /
//          (S L) x bytes per inter phase. Reduce-scatter: the first two
//          phases; rank (s, l) ends with sub-piece (s + 1) % S of piece
//          (l + 1) % L. All-gather: rank (s, l) starts with sub-piece s of
//          piece l; the inter-server ring all-gather of piece l, then the
//          intra-server one. (L - 1) + (S - 1) steps each. Like rdh's, these
//          layouts are a permutation of nccom's chunk order (timing only).
//   kangaring  (Trn2 torus; all-reduce, all-gather, reduce-scatter; S17 via
//          trainium.md 10.3) the ranks of each chip pair up (2j, 2j + 1) and
//          two cycles run at once: in cycle c the rank of each pair with
//          r % 2 == c is the primary, and the M = R / 2 primaries form a ring
//          that visits the chips along one of the two edge-disjoint
//          Hamiltonian cycles of the n x n torus (c = 0: x + 1 n - 1 times,
//          then y + 1; c = 1: x and y swapped), each chip's primaries in rank
//          order. A cycle carries its primaries' chunks. Reduce-scatter: in
//          step k a primary adds its own and its secondary's copy of chunk
//          owner(i - 1 - k) to the partial sum it received (3R1W: one DMA
//          compute of three inputs) and writes it to the next primary's
//          staging; the last step writes its own chunk's sum in place. All-
//          gather: in step k it reads chunk owner(i - k) once and writes it to
//          the next primary and to its secondary (1R2W, write duplication);
//          the last step writes the last chunk received to its secondary only.
//          M steps each (2 M for all-reduce); the secondaries' queues work
//          in the other cycle. Needs every rank of each chip in the group and
//          the ranks of exactly one n x n layer (n >= 3): all 16 chips of
//          trn2-server, the first server of trn2-ultraserver.
//   auto   mesh up to the system's mesh_max_bytes; above it an all-reduce,
//          all-gather or reduce-scatter whose ranks fill two or more whole
//          servers is hierarchical
//          (trainium.md 10.3: across nodes the runtime composes collectives
//          hierarchically, a flat ring only in edge cases; #19: hierarchical
//          across servers and racks); else rdh up to rdh_max_bytes when R
//          is a power of two and the op has an rdh schedule; above
//          rdh_max_bytes KangaRing where it fits (S17: "> 56MB", every rank of
//          each chip in the group), else the ring (the system description's
//          thresholds, trainium.md 10.3 and #19).
// Permute sends the whole buffer to rank r + 1 (ring only); send-recv pairs
// ranks 2i and 2i + 1, each sending its buffer to the other. All-to-all-v
// (mesh) sends sizes[r x R + j] bytes from rank r to each rank j != r, in
// the order r + 1, r + 2, ..; each receiver lands them in sender order.
//
//   System sys = LoadSystem("trn2-server").value();
//   CollectiveConfig c{.op = CollectiveOp::kAllReduce, .bytes = 64 << 20};
//   LoweredCollective l = LowerCollective(sys, c).value();
//   SimResult r = Simulate(l.program).value();
//   CollectiveFigures f = Figures(l.plan, r);  // time, algbw, busbw
//
//   // Into an existing program, on the output of a kernel on every chip:
//   CollectivePlan plan = PlanCollective(sys, c).value();
//   CollectiveOperands ops{.data = outputs,             // one buffer per rank
//                          .start_after = gemm_done,    // per rank and core
//                          .done_signals = reduced};    // per rank
//   LowerCollectiveInto(program, plan, ops).value();
//   // reduced[r] reaches its increment x plan.completions when rank r is done.
//
// Errors (INVALID_ARGUMENT, naming the value): bytes < 1 or not divisible
// into the ranks' chunks of whole elements, ranks outside [2, the system's
// logical cores], LNC other than 1 or 2 (or not dividing the chip's cores),
// ranks_per_chip above the chip's logical cores, send-recv with an odd rank
// count, permute or reduction ops with an algorithm that cannot run them,
// rdh over a rank count that is not a power of two, KangaRing on a switched
// fabric (it needs a torus's Hamiltonian cycles), for another op, without
// every rank of each chip, or over other than one n x n layer of chips,
// hierarchical for an op other than all-reduce, all-gather and reduce-scatter
// or over ranks that do not fill two or more whole servers (one server has
// nothing to compose).
// RESOURCE_EXHAUSTED when the program would pass its instruction budget or
// a buffer does not fit in HBM.
#ifndef TRNMX_EMU_COLLECTIVE_H_
#define TRNMX_EMU_COLLECTIVE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trnmx/emu/program.h"
#include "trnmx/emu/simulator.h"
#include "trnmx/emu/system.h"
#include "trnmx/status.h"

namespace trnmx::emu {

enum class CollectiveOp {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kAllToAllV,
  kPermute,
  kSendRecv
};
// "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "all-to-all-v",
// "permute", "send-recv".
std::string_view CollectiveOpName(CollectiveOp op);
StatusOr<CollectiveOp> ParseCollectiveOp(std::string_view name);

enum class CollectiveAlgorithm { kAuto, kRing, kMesh, kRdh, kKangaRing, kHierarchical };
// "auto", "ring", "mesh", "rdh", "kangaring", "hierarchical".
std::string_view CollectiveAlgorithmName(CollectiveAlgorithm a);
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
  // All-to-all-v: the bytes rank i sends rank j at [i x ranks + j] (ranks x
  // ranks, entries >= 0, each row summing to at most `bytes`; the diagonal
  // stays in place). ZipfAllToAllSizes makes one.
  std::vector<int64_t> sizes;
};

// All-to-all-v sizes of MoE-like routing skew: every rank splits its `bytes`
// over the receivers in proportion to 1 / (j + 1)^s for receiver j (s = 0:
// even; rank 0 is the hottest), in whole bytes (largest remainders first),
// so each row sums to `bytes`. INVALID_ARGUMENT for ranks < 1, bytes < 0,
// or s < 0 or not finite.
StatusOr<std::vector<int64_t>> ZipfAllToAllSizes(int ranks, int64_t bytes, double s);
// All-to-all-v sizes from JSON: an array of R arrays of R integers >= 0
// (row i: what rank i sends each rank), flattened row by row.
// INVALID_ARGUMENT naming the entry ("[2][5]") when it is not.
StatusOr<std::vector<int64_t>> ParseAllToAllSizes(std::string_view json_text);

struct CollectivePlan {
  CollectiveConfig config;                                     // ranks and ranks_per_chip resolved
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;  // the one lowered
  std::string why;           // how auto chose, e.g. "64 MiB > mesh_max_bytes 1 MiB: ring"
  int chips = 0;             // chips with ranks
  int steps = 0;             // communication steps of the algorithm
  int64_t chunk_bytes = 0;   // bytes one rank sends to one peer per step (hierarchical: intra)
  int ranks_per_server = 0;  // hierarchical: L, the ranks of each server's rings (else 0)
  double bus_factor = 0;     // busbw / algbw (nccom-test)
  int64_t instructions = 0;  // the lowering appends, all ranks
  // DMA rings per rank and physical core: its CC-core's queue and, mesh,
  // more (min(R - 1, DMA engines)), its sends to peer r + k on ring
  // (k - 1) mod rings, each ring in order, side by side with the others.
  int rings = 1;
  // Instructions per rank that write its result (CollectiveOperands::done_signals):
  // all-reduce 2 (R - 1) x LNC (its reductions, then the gathered chunks);
  // all-gather, reduce-scatter, all-to-all (R - 1) x LNC; permute, send-recv LNC.
  // Mesh reductions add three received chunks each: ceil((R - 1) / 3)
  // instead of R - 1 above.
  // rdh: log2 R instead of R - 1; hierarchical: its steps (all-reduce
  // 2 (L - 1) + 2 (S - 1), the others (L - 1) + (S - 1)) for L ranks per
  // server and S servers. kangaring: R - 1 for all-gather (R / 2
  // - 1 chunks as a primary, R / 2 as a secondary), 1 for reduce-scatter
  // (the sum written in place), R for all-reduce. All-to-all-v: 0 (its ranks receive
  // different numbers of transfers; done_signals are refused for it).
  int64_t completions = 0;
  // How the collective is simulated: every rank, and why no rank can stand
  // for another, e.g. "every rank: the routes from chip c to chip c + 1
  // take 2 to 3 links (chip 0 -> 1: 2, chip 71 -> 72: 3)".
  std::string simulated;
};

struct LoweredCollective {
  Program program;
  CollectivePlan plan;
};

// Validates the config and chooses the algorithm (errors above).
StatusOr<CollectivePlan> PlanCollective(const System& system, const CollectiveConfig& config);

// Where a collective lowered into an existing program works. Rank r is on
// chip r / ranks_per_chip; its physical core h (0 .. LNC - 1) is core
// (r % ranks_per_chip) x LNC + h of that chip.
struct CollectiveOperands {
  // Empty: each rank gets a buffer of its own ("<prefix>rank<r>.data").
  // Else one live HBM buffer per rank, on the rank's chip, holding the
  // rank's `bytes` from data_offset[r] (data_offset empty: 0).
  std::vector<BufferId> data;
  std::vector<int64_t> data_offset;
  // Empty, or one list per rank and physical core, [r x LNC + h]: waits on
  // that core's semaphores before the rank's first transfer there (e.g.
  // the done signal of the kernel that wrote the buffer).
  std::vector<std::vector<SemWait>> start_after;
  // Empty, or one list per rank: semaphores of the rank's chip, signalled
  // by every instruction that writes the rank's result (CollectivePlan::
  // completions of them): each reaches its increment x completions when
  // the rank's result is complete.
  std::vector<std::vector<SemSignal>> done_signals;
  std::string name_prefix;  // of its queues, semaphores and buffers
};

struct LoweredCollectiveKernel {
  CollectivePlan plan;
};

// Appends the collective of `plan` to `program` (created for the plan's
// system, or a machine when the ranks are on one chip): one CC-core queue
// and one arrival semaphore per rank and physical core, a staging buffer
// per rank where the op needs one. The queues share their cores' DMA
// engines with every other queue there, so a collective overlaps compute.
// INVALID_ARGUMENT for operands that do not fit the plan (the field named),
// RESOURCE_EXHAUSTED past the program's instruction budget.
StatusOr<LoweredCollectiveKernel> LowerCollectiveInto(Program& program, const CollectivePlan& plan,
                                                      const CollectiveOperands& operands);

// PlanCollective, a program of its own (every core of the plan's chips) and
// LowerCollectiveInto with buffers of its own.
StatusOr<LoweredCollective> LowerCollective(const System& system, const CollectiveConfig& config,
                                            const ProgramOptions& options = {});

// nccom-test's figures of a simulated collective: algbw = bytes / time,
// busbw = algbw x bus_factor (all-reduce 2 (R - 1) / R; all-gather,
// reduce-scatter, all-to-all and all-to-all-v (R - 1) / R; permute and
// send-recv 1).
struct CollectiveFigures {
  double seconds = 0;
  double algbw_bytes_per_s = 0;
  double busbw_bytes_per_s = 0;
};
CollectiveFigures Figures(const CollectivePlan& plan, const SimResult& result);

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_COLLECTIVE_H_
