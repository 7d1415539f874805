// A tensor-parallel GEMM on every chip followed by the all-reduce of its
// output (see the header for the composition and the deduplication).
#include "trnmx/emu/parallel.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "trnmx/emu/cost.h"

namespace trnmx::emu {
namespace {

struct Plans {
  GemmPlan gemm;
  CollectivePlan all_reduce;
};

StatusOr<Plans> PlanBoth(const System& system, const TensorParallelGemmConfig& config) {
  const int chips = config.chips == 0 ? system.chip_count() : config.chips;
  if (chips < 2 || chips > system.chip_count()) {
    return InvalidArgumentError("tensor-parallel GEMM on " + system.name +
                                ": chips = " + std::to_string(chips) + " outside [2, " +
                                std::to_string(system.chip_count()) + "]");
  }
  StatusOr<GemmPlan> gemm = PlanGemm(system.chip, config.gemm);
  if (!gemm.ok()) return gemm.status();
  CollectiveConfig c;
  c.op = CollectiveOp::kAllReduce;
  c.bytes = gemm->config.m * gemm->config.n * 2;  // C in BF16
  c.ranks = chips;
  c.ranks_per_chip = 1;
  c.lnc = config.lnc;
  c.algorithm = config.algorithm;
  StatusOr<CollectivePlan> all_reduce = PlanCollective(system, c);
  if (!all_reduce.ok()) return all_reduce.status();
  return Plans{std::move(*gemm), std::move(*all_reduce)};
}

// The program's HBM per chip: every chip's GEMM operands, allocated in the
// same order (so at the same addresses) whether or not the GEMMs are lowered.
StatusOr<std::vector<GemmOperands>> AllocOperands(Program& p, const GemmPlan& gemm, int chips) {
  std::vector<GemmOperands> ops;
  for (int chip = 0; chip < chips; ++chip) {
    const std::string prefix = chips > 1 ? "chip" + std::to_string(chip) + "." : "";
    StatusOr<GemmOperands> o = AllocGemmOperands(p, gemm.config, chip, prefix);
    if (!o.ok()) return o.status();
    ops.push_back(std::move(*o));
  }
  return ops;
}

// The all-reduce of every chip's C; start_after empty when nothing precedes it.
Status AppendAllReduce(Program& p, const CollectivePlan& plan, const std::vector<GemmOperands>& ops,
                       std::vector<std::vector<SemWait>> start_after) {
  CollectiveOperands coll;
  for (const GemmOperands& o : ops) coll.data.push_back(o.c);
  coll.data_offset.assign(ops.size(), 0);
  coll.start_after = std::move(start_after);
  coll.name_prefix = "all_reduce.";
  return LowerCollectiveInto(p, plan, coll).status();
}

}  // namespace

StatusOr<TensorParallelGemm> LowerTensorParallelGemm(const System& system,
                                                     const TensorParallelGemmConfig& config,
                                                     const ProgramOptions& options) {
  StatusOr<Plans> plans = PlanBoth(system, config);
  if (!plans.ok()) return plans.status();
  const int chips = plans->all_reduce.chips, lnc = plans->all_reduce.config.lnc;
  StatusOr<Program> prog =
      Program::Create(system, std::max(plans->gemm.config.cores, lnc), chips, options);
  if (!prog.ok()) return prog.status();
  Program& p = *prog;
  StatusOr<std::vector<GemmOperands>> ops = AllocOperands(p, plans->gemm, chips);
  if (!ops.ok()) return ops.status();
  // Each rank's queue on core h waits for its chip's last store of C, which
  // every store counts on a semaphore of core h.
  std::vector<std::vector<SemWait>> start_after;
  for (int chip = 0; chip < chips; ++chip) {
    GemmOperands& o = (*ops)[chip];
    std::vector<SemId> done;
    for (int h = 0; h < lnc; ++h) {
      StatusOr<SemId> s = p.AddSemaphore(p.CoreId(chip, h), "gemm_done");
      if (!s.ok()) return s.status();
      done.push_back(*s);
      o.done_signals.push_back({*s, 1});
    }
    StatusOr<LoweredGemmKernel> k = LowerGemmInto(p, plans->gemm, o);
    if (!k.ok()) return k.status();
    for (SemId s : done) start_after.push_back({{s, k->stores}});
  }
  if (Status s = AppendAllReduce(p, plans->all_reduce, *ops, std::move(start_after)); !s.ok()) {
    return s;
  }
  return TensorParallelGemm{std::move(p), std::move(plans->gemm), std::move(plans->all_reduce)};
}

StatusOr<TensorParallelTiming> SimulateTensorParallelGemm(const System& system,
                                                          const TensorParallelGemmConfig& config,
                                                          bool deduplicate,
                                                          const ProgramOptions& options) {
  TensorParallelTiming t;
  if (!deduplicate) {
    StatusOr<TensorParallelGemm> whole = LowerTensorParallelGemm(system, config, options);
    if (!whole.ok()) return whole.status();
    SimOptions so;
    so.record_trace = true;  // for when the GEMMs end
    StatusOr<SimResult> r = Simulate(whole->program, so);
    if (!r.ok()) return r.status();
    for (const TraceRecord& rec : r->trace) {
      if (whole->program.streams()[rec.stream].engine != EngineKind::kCollective) {
        t.gemm_ps = std::max(t.gemm_ps, rec.end_ps);
      }
    }
    t.end_ps = r->end_ps;
    t.instructions = whole->program.instruction_count();
    t.events = r->events;
    t.how = "whole program: " + std::to_string(whole->all_reduce.chips) +
            " GEMMs and the all-reduce (not deduplicated: asked for)";
    t.gemm = std::move(whole->gemm);
    t.all_reduce = std::move(whole->all_reduce);
    return t;
  }
  StatusOr<Plans> plans = PlanBoth(system, config);
  if (!plans.ok()) return plans.status();
  const int chips = plans->all_reduce.chips;
  // One chip's GEMM, on the chip's own program.
  StatusOr<Program> one = Program::Create(system.chip, plans->gemm.config.cores, options);
  if (!one.ok()) return one.status();
  StatusOr<std::vector<GemmOperands>> one_ops = AllocOperands(*one, plans->gemm, 1);
  if (!one_ops.ok()) return one_ops.status();
  if (Status s = LowerGemmInto(*one, plans->gemm, (*one_ops)[0]).status(); !s.ok()) return s;
  StatusOr<SimResult> gemm = Simulate(*one);
  if (!gemm.ok()) return gemm.status();
  // The all-reduce on its own, against the same HBM layout as the whole
  // program's (the stack a write lands in depends on its address).
  StatusOr<Program> coll = Program::Create(
      system, std::max(plans->gemm.config.cores, plans->all_reduce.config.lnc), chips, options);
  if (!coll.ok()) return coll.status();
  StatusOr<std::vector<GemmOperands>> ops = AllocOperands(*coll, plans->gemm, chips);
  if (!ops.ok()) return ops.status();
  if (Status s = AppendAllReduce(*coll, plans->all_reduce, *ops, {}); !s.ok()) return s;
  StatusOr<SimResult> all_reduce = Simulate(*coll);
  if (!all_reduce.ok()) return all_reduce.status();
  t.gemm_ps = gemm->end_ps;
  t.end_ps = t.gemm_ps + DmaWaitLatencyPs(system.chip) + all_reduce->end_ps;
  t.deduplicated = true;
  t.instructions = one->instruction_count() + coll->instruction_count();
  t.events = gemm->events + all_reduce->events;
  t.how = "GEMM simulated once for " + std::to_string(chips) + " identical chips (" +
          std::to_string(one->instruction_count()) + " instructions), all-reduce over all " +
          std::to_string(chips) + " ranks (" + std::to_string(coll->instruction_count()) +
          " instructions, not deduplicated)";
  t.gemm = std::move(plans->gemm);
  t.all_reduce = std::move(plans->all_reduce);
  return t;
}

}  // namespace trnmx::emu
