// A mixture-of-experts layer with expert parallelism (see the header for the
// phases and what is modelled).
#include "trnmx/emu/moe.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lower/try.h"
#include "trnmx/emu/collective.h"
#include "trnmx/emu/cost.h"
#include "trnmx/emu/gemm.h"
#include "trnmx/emu/program.h"
#include "trnmx/emu/report.h"
#include "trnmx/emu/simulator.h"

namespace trnmx::emu {
namespace {

constexpr int64_t kActivationBytes = 2;  // BF16 tokens in both all-to-all-v's

Status CheckConfig(const System& system, const MoeConfig& c, int ep) {
  const std::pair<const char*, int64_t> positive[] = {{"experts", c.experts},
                                                      {"top_k", c.top_k},
                                                      {"tokens", c.tokens},
                                                      {"hidden", c.hidden},
                                                      {"intermediate", c.intermediate}};
  for (const auto& [name, v] : positive) {
    if (v < 1)
      return InvalidArgumentError(std::string("moe: ") + name + " = " + std::to_string(v) + " < 1");
  }
  if (c.top_k > c.experts) {
    return InvalidArgumentError("moe: top_k = " + std::to_string(c.top_k) +
                                " > experts = " + std::to_string(c.experts));
  }
  if (ep < 1 || ep > system.chip_count()) {
    return InvalidArgumentError("moe: ep = " + std::to_string(ep) + " outside [1, " +
                                std::to_string(system.chip_count()) + "] (the chips of " +
                                system.name + ")");
  }
  if (c.experts % ep != 0) {
    return InvalidArgumentError("moe: ep = " + std::to_string(ep) +
                                " does not divide experts = " + std::to_string(c.experts));
  }
  if (!(c.zipf_s >= 0) || !std::isfinite(c.zipf_s)) {
    return InvalidArgumentError("moe: zipf_s = " + std::to_string(c.zipf_s) + " (finite and >= 0)");
  }
  if (!c.histogram.empty() && static_cast<int64_t>(c.histogram.size()) != c.experts) {
    return InvalidArgumentError("moe: histogram has " + std::to_string(c.histogram.size()) +
                                " entries for " + std::to_string(c.experts) + " experts");
  }
  return OkStatus();
}

// n split over `parts` as evenly as possible, the first n % parts one more.
std::uint64_t EvenShare(std::uint64_t n, int parts, int i) {
  return n / parts + (static_cast<std::uint64_t>(i) < n % parts ? 1 : 0);
}

// assignments[s x E + e] from the library's router over the synthetic logits.
Status RouteSynthetic(const MoeConfig& c, const std::vector<std::uint64_t>& tokens_per_rank,
                      std::vector<std::uint64_t>& assignments) {
  const std::size_t e_count = static_cast<std::size_t>(c.experts);
  const std::size_t k = static_cast<std::size_t>(c.top_k);
  trnmx::RouterParams params = trnmx::GptOssRouterParams();
  params.top_k = k;
  trnmx::SyntheticRouting synth;
  synth.popularity =
      c.zipf_s > 0 ? trnmx::ExpertPopularity::kZipf : trnmx::ExpertPopularity::kUniform;
  synth.zipf_s = c.zipf_s;
  const std::size_t chunk_max = static_cast<std::size_t>(std::min(c.tokens, kMoeRouteChunk));
  std::vector<float> logits(chunk_max * e_count);
  std::vector<std::int32_t> ids(chunk_max * k);
  std::vector<float> weights(chunk_max * k);
  // The rank holding token t: ranks hold consecutive blocks of tokens.
  std::size_t rank = 0;
  std::uint64_t rank_end = tokens_per_rank[0];
  for (std::int64_t t0 = 0, chunk = 0; t0 < c.tokens; t0 += kMoeRouteChunk, ++chunk) {
    const std::size_t n = static_cast<std::size_t>(std::min(kMoeRouteChunk, c.tokens - t0));
    synth.seed = c.seed + static_cast<std::uint64_t>(chunk);
    if (Status s = trnmx::SyntheticRouterLogits(synth, n, e_count, logits); !s.ok()) return s;
    StatusOr<trnmx::RouterResult> r =
        trnmx::Route(trnmx::Fp32MatrixView{logits.data(), n, e_count, e_count}, params,
                     std::span(ids).first(n * k), std::span(weights).first(n * k));
    if (!r.ok()) return r.status();
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t t = static_cast<std::uint64_t>(t0) + i;
      while (t >= rank_end) rank_end += tokens_per_rank[++rank];
      for (std::size_t j = 0; j < k; ++j) {
        ++assignments[rank * e_count + static_cast<std::size_t>(ids[i * k + j])];
      }
    }
  }
  return OkStatus();
}

MatmulDtype ExpertDtype(const Machine& chip, MoeWeights w) {
  const MatmulDtype mx = w == MoeWeights::kMxfp4 ? MatmulDtype::kMxfp4 : MatmulDtype::kMxfp8;
  if (w == MoeWeights::kBf16 || MacsPerPeCycle(chip, mx) <= 0) return MatmulDtype::kBf16;
  return mx;
}

struct Simulated {
  int64_t time_ps = 0;
  std::string limiting;
};

Simulated Summarise(const Program& program, const SimResult& result) {
  const Report rep = MakeReport(program, result, 0, MatmulDtype::kBf16);
  std::string limiting = rep.limiting;
  if (limiting == "links" && !rep.busiest_link.empty()) limiting += " (" + rep.busiest_link + ")";
  return {result.end_ps, limiting};
}

// The router of one rank in one program on `cores` cores: the logits GEMM
// [T, H] x [H, E] (BF16, logits to HBM in BF16), then the top-k of each
// token. Tiles of 128 tokens (one per partition) go round robin to the
// cores; per tile, double-buffered behind semaphores:
//   DMA       the tile's logits, 128 x E x 2 bytes, HBM -> SBUF;
//   VectorE   per 8 of the k experts, max8 then find_index8 (NKI's
//             nc_find_index8): two passes over the E logits, costed by the
//             single-input rule max(64, E) as TensorReduce (trainium.md 6,
//             S11; which instruction Neuron's router kernel uses is not
//             published: tag I);
//   ScalarE   exp of the k selected logits minus their max with the fused
//             row sum (gpt-oss: softmax over the selected);
//   VectorE   the reciprocal of the sum, then the k weights scaled by it
//             (two small dependent instructions);
//   DMA       the k ids and k weights, 128 x 8k bytes, SBUF -> HBM.
StatusOr<Simulated> SimulateRouter(const Machine& chip, int cores, int64_t tokens, int64_t experts,
                                   int64_t hidden, int64_t top_k) {
  const GemmConfig logits{
      .m = tokens, .n = experts, .k = hidden, .dtype = MatmulDtype::kBf16, .cores = cores};
  StatusOr<GemmPlan> plan = PlanGemm(chip, logits);
  if (!plan.ok()) return plan.status();
  cores = plan->config.cores;
  StatusOr<Program> prog = Program::Create(chip, cores);
  if (!prog.ok()) return prog.status();
  Program& p = *prog;
  StatusOr<GemmOperands> alloc = AllocGemmOperands(p, logits, 0, "router.");
  if (!alloc.ok()) return alloc.status();
  GemmOperands& ops = *alloc;
  std::vector<SemId> gemm_done(static_cast<std::size_t>(cores));
  for (int c = 0; c < cores; ++c) {
    TRY_ASSIGN(gemm_done[static_cast<std::size_t>(c)], p.AddSemaphore(c, "router.logits_done"));
    ops.done_signals.push_back({gemm_done[static_cast<std::size_t>(c)], 1});
  }
  StatusOr<LoweredGemmKernel> gemm = LowerGemmInto(p, *plan, ops);
  if (!gemm.ok()) return gemm.status();
  const int64_t result_bytes = 8 * top_k;  // int32 id + FP32 weight per selected expert
  BufferId out;
  TRY_ASSIGN(out, p.AllocHbm("router.topk", tokens * result_bytes));
  const int64_t tiles = (tokens + 127) / 128;
  const int64_t rounds = (top_k + 7) / 8;  // max8 / find_index8 pairs
  for (int c = 0; c < cores; ++c) {
    StreamId load, store;
    TRY_ASSIGN(load, p.AddDmaQueue(c, "router.load"));
    TRY_ASSIGN(store, p.AddDmaQueue(c, "router.store"));
    const StreamId vector = p.EngineStream(c, EngineKind::kVector);
    const StreamId scalar = p.EngineStream(c, EngineKind::kScalar);
    BufferId logits_sb[2], picked[2], result[2];
    for (int s = 0; s < 2; ++s) {
      const std::string n = std::to_string(s);
      TRY_ASSIGN(logits_sb[s], p.AllocSbuf(c, "router.logits" + n, 2 * experts));
      TRY_ASSIGN(picked[s], p.AllocSbuf(c, "router.picked" + n, 8 * 8 * rounds));
      TRY_ASSIGN(result[s], p.AllocSbuf(c, "router.result" + n, result_bytes));
    }
    SemId loaded, selected, exped, weighted, stored;
    TRY_ASSIGN(loaded, p.AddSemaphore(c, "router.loaded"));
    TRY_ASSIGN(selected, p.AddSemaphore(c, "router.selected"));
    TRY_ASSIGN(exped, p.AddSemaphore(c, "router.exped"));
    TRY_ASSIGN(weighted, p.AddSemaphore(c, "router.weighted"));
    TRY_ASSIGN(stored, p.AddSemaphore(c, "router.stored"));
    int64_t i = 0;  // this core's tile count
    for (int64_t t = c; t < tiles; t += cores, ++i) {
      const int s = static_cast<int>(i % 2);
      const int rows = static_cast<int>(std::min<int64_t>(128, tokens - 128 * t));
      Instruction in = Instruction::DmaCopy(ops.c, logits_sb[s], rows * 2 * experts, rows,
                                            ops.c_offset + 128 * t * 2 * experts, 0);
      in.waits.push_back({gemm_done[static_cast<std::size_t>(c)], gemm->stores});
      if (i >= 2) in.waits.push_back({selected, i - 1});  // the slot's previous tile is read
      in.signals.push_back({loaded, 1});
      TRY(p.Append(load, std::move(in)));
      for (int64_t r = 0; r < rounds; ++r) {
        for (int pass = 0; pass < 2; ++pass) {
          in = Instruction::Elementwise(Opcode::kTensorReduce, picked[s], logits_sb[s], rows,
                                        experts, ElemType::kBf16, ElemType::kFp32);
          in.alu = AluOp::kMax;
          in.dst_offset = 32 * r + 4 * pass;
          if (r == 0 && pass == 0) {
            in.waits.push_back({loaded, i + 1});
            if (i >= 2) in.waits.push_back({exped, i - 1});  // picked[s] is free again
          }
          if (r == rounds - 1 && pass == 1) in.signals.push_back({selected, 1});
          TRY(p.Append(vector, std::move(in)));
        }
      }
      in = Instruction::Elementwise(Opcode::kActivation, result[s], picked[s], rows, top_k,
                                    ElemType::kFp32, ElemType::kFp32, picked[s]);
      in.act = ActFunc::kExp;
      in.accumulate = true;  // the softmax's sum
      in.src1_offset = 4 * top_k;
      in.waits.push_back({selected, i + 1});
      if (i >= 2) in.waits.push_back({stored, i - 1});  // result[s] is free again
      in.signals.push_back({exped, 1});
      TRY(p.Append(scalar, std::move(in)));
      in = Instruction::Elementwise(Opcode::kReciprocal, picked[s], picked[s], rows, 1,
                                    ElemType::kFp32, ElemType::kFp32);
      in.waits.push_back({exped, i + 1});
      TRY(p.Append(vector, std::move(in)));
      in = Instruction::Elementwise(Opcode::kTensorScalar, result[s], result[s], rows, top_k,
                                    ElemType::kFp32, ElemType::kFp32);
      in.alu = AluOp::kMultiply;
      in.dependent = true;
      in.signals.push_back({weighted, 1});
      TRY(p.Append(vector, std::move(in)));
      in = Instruction::DmaCopy(result[s], out, rows * result_bytes, rows, 0,
                                128 * t * result_bytes);
      in.waits.push_back({weighted, i + 1});
      in.signals.push_back({stored, 1});
      TRY(p.Append(store, std::move(in)));
    }
  }
  StatusOr<SimResult> r = Simulate(p);
  if (!r.ok()) return r.status();
  return Summarise(p, *r);
}

StatusOr<Simulated> SimulateAllToAllV(const System& system, const MoeConfig& c, int ep,
                                      std::vector<int64_t> sizes) {
  CollectiveConfig cc;
  cc.op = CollectiveOp::kAllToAllV;
  cc.ranks = ep;
  cc.ranks_per_chip = 1;
  cc.lnc = c.lnc;
  cc.algorithm = CollectiveAlgorithm::kMesh;
  int64_t row_max = 1;
  for (int s = 0; s < ep; ++s) {
    int64_t row = 0;
    for (int d = 0; d < ep; ++d) row += sizes[static_cast<std::size_t>(s * ep + d)];
    row_max = std::max(row_max, row);
  }
  cc.bytes = row_max;
  cc.sizes = std::move(sizes);
  StatusOr<LoweredCollective> l = LowerCollective(system, cc);
  if (!l.ok()) return l.status();
  StatusOr<SimResult> r = Simulate(l->program);
  if (!r.ok()) return r.status();
  return Summarise(l->program, *r);
}

// Expert GEMMs kept on chip at once when pipelined, each planned for that
// share of SBUF and PSUM (GemmConfig::on_chip_share).
constexpr std::size_t kExpertGemmsInFlight = 4;

// The expert GEMMs of `configs` (gate/up of expert 0, its down, gate/up of
// expert 1, ...) in one program on `cores` cores of the chip.
// Serial: in that order, each with all of SBUF and PSUM, each waiting for
// the previous one's stores.
// Pipelined, as a grouped expert kernel does: issued as gate/up 0, gate/up
// 1, down 0, gate/up 2, down 1, ..., so that TensorE has the next expert's
// gate/up to run while a down GEMM waits for its input (its gate/up's
// stores); kExpertGemmsInFlight GEMMs on chip at once, each waiting for the
// stores of the one issued that many places earlier, whose buffers it reuses.
StatusOr<Simulated> SimulateChain(const Machine& chip, int cores,
                                  std::span<const GemmConfig> configs, bool pipelined) {
  const std::size_t n = configs.size();
  const std::size_t depth = pipelined ? kExpertGemmsInFlight : 1;
  std::vector<std::size_t> order;  // configs' indices in issue order
  for (std::size_t g = 0; g < n; g += 2) {
    order.push_back(g);                                   // gate/up of expert g / 2
    if (pipelined && g >= 2) order.push_back(g - 1);      // down of the expert before
    if (!pipelined && g + 1 < n) order.push_back(g + 1);  // its own down
  }
  if (pipelined && n >= 2) order.push_back(n - 1);
  StatusOr<Program> prog = Program::Create(chip, cores);
  if (!prog.ok()) return prog.status();
  Program& p = *prog;
  std::vector<std::vector<SemWait>> done_waits(n);  // [gemm][core]: its stores complete
  std::vector<std::vector<BufferId>> on_chip;       // [issue position]: its buffers (pipelined)
  for (std::size_t pos = 0; pos < n; ++pos) {
    const std::size_t i = order[pos];
    GemmConfig g = configs[i];
    g.on_chip_share = static_cast<int>(depth);
    StatusOr<GemmPlan> plan = PlanGemm(chip, g);
    if (!plan.ok()) return plan.status();
    StatusOr<GemmOperands> alloc =
        AllocGemmOperands(p, plan->config, 0, "gemm" + std::to_string(i) + ".");
    if (!alloc.ok()) return alloc.status();
    GemmOperands& ops = *alloc;
    std::vector<SemId> done;
    for (int core = 0; core < cores; ++core) {
      StatusOr<SemId> s = p.AddSemaphore(p.CoreId(0, core), "gemm" + std::to_string(i) + ".done");
      if (!s.ok()) return s.status();
      done.push_back(*s);
      ops.done_signals.push_back({*s, 1});
    }
    // The GEMM issued `depth` places earlier (its buffers), and a down GEMM's gate/up (its input).
    std::vector<std::size_t> waits_on;
    if (pos >= depth) waits_on.push_back(order[pos - depth]);
    if (i % 2 == 1 && (pos < depth || order[pos - depth] != i - 1)) waits_on.push_back(i - 1);
    if (!waits_on.empty()) {
      ops.start_after.assign(static_cast<std::size_t>(cores), {});
      for (std::size_t j : waits_on) {
        for (int core = 0; core < cores; ++core) {
          ops.start_after[static_cast<std::size_t>(core)].push_back(
              done_waits[j][static_cast<std::size_t>(core)]);
        }
      }
    }
    if (pipelined && pos >= depth) {  // the buffers of the GEMM it waits for
      for (BufferId id : on_chip[pos - depth]) {
        if (Status st = p.Free(id); !st.ok()) return st;
      }
    }
    ops.keep_on_chip = pipelined;
    StatusOr<LoweredGemmKernel> k = LowerGemmInto(p, *plan, ops);
    if (!k.ok()) return k.status();
    for (SemId s : done) done_waits[i].push_back({s, k->stores});
    on_chip.push_back(std::move(k->on_chip));
  }
  StatusOr<SimResult> r = Simulate(p);
  if (!r.ok()) return r.status();
  return Summarise(p, *r);
}

// One rank's expert GEMMs (gate/up then down per expert with tokens) on
// `cores` cores, in chains of kMoeExpertsPerProgram experts (a chained GEMM
// holds 9 of a core's 256 semaphores), the chains one after another. The
// limiting resource is the longest chain's.
StatusOr<Simulated> SimulateExperts(const Machine& chip, int cores, int64_t hidden,
                                    int64_t intermediate, MatmulDtype dtype,
                                    const std::vector<std::uint64_t>& tokens) {
  std::vector<GemmConfig> configs;
  for (std::uint64_t n : tokens) {
    if (n == 0) continue;
    const int64_t m = static_cast<int64_t>(n);
    for (const auto& [nn, kk] :
         {std::pair{2 * intermediate, hidden}, std::pair{hidden, intermediate}}) {
      configs.push_back({.m = m, .n = nn, .k = kk, .dtype = dtype, .cores = cores});
    }
  }
  if (configs.empty()) return Simulated{0, "idle (no tokens)"};
  Simulated total{0, ""};
  int64_t longest = -1;
  const std::size_t per_chain = 2 * kMoeExpertsPerProgram;
  for (std::size_t first = 0; first < configs.size(); first += per_chain) {
    const std::size_t n = std::min(per_chain, configs.size() - first);
    const std::span<const GemmConfig> part = std::span(configs).subspan(first, n);
    StatusOr<Simulated> chain = SimulateChain(chip, cores, part, /*pipelined=*/true);
    // GEMMs whose buffers do not fit on chip kExpertGemmsInFlight at a time
    // run one after the other.
    if (!chain.ok() && chain.status().code() == StatusCode::kResourceExhausted) {
      chain = SimulateChain(chip, cores, part, /*pipelined=*/false);
    }
    if (!chain.ok()) return chain.status();
    total.time_ps += chain->time_ps;
    if (chain->time_ps > longest) {
      longest = chain->time_ps;
      total.limiting = chain->limiting;
    }
  }
  return total;
}

}  // namespace

StatusOr<int64_t> SimulateExpertGemms(const Machine& chip, int cores, int64_t hidden,
                                      int64_t intermediate, MatmulDtype dtype,
                                      const std::vector<std::uint64_t>& tokens_per_expert) {
  StatusOr<Simulated> s =
      SimulateExperts(chip, cores, hidden, intermediate, dtype, tokens_per_expert);
  if (!s.ok()) return s.status();
  return s->time_ps;
}

std::string_view MoeWeightsName(MoeWeights w) {
  switch (w) {
    case MoeWeights::kBf16:
      return "bf16";
    case MoeWeights::kMxfp8:
      return "mxfp8";
    case MoeWeights::kMxfp4:
      return "mxfp4";
  }
  return "unknown";
}

StatusOr<MoeWeights> ParseMoeWeights(std::string_view name) {
  for (MoeWeights w : {MoeWeights::kBf16, MoeWeights::kMxfp8, MoeWeights::kMxfp4}) {
    if (name == MoeWeightsName(w)) return w;
  }
  return InvalidArgumentError("weights '" + std::string(name) + "': bf16, mxfp8 or mxfp4");
}

StatusOr<MoeRouting> RouteMoe(const System& system, const MoeConfig& c) {
  const int ep = c.ep == 0 ? system.chip_count() : c.ep;
  if (Status s = CheckConfig(system, c, ep); !s.ok()) return s;
  const std::size_t e_count = static_cast<std::size_t>(c.experts);
  MoeRouting r;
  r.ep = ep;
  for (int s = 0; s < ep; ++s) {
    r.tokens_per_rank.push_back(EvenShare(static_cast<std::uint64_t>(c.tokens), ep, s));
  }
  r.assignments.assign(static_cast<std::size_t>(ep) * e_count, 0);
  if (c.histogram.empty()) {
    if (Status s = RouteSynthetic(c, r.tokens_per_rank, r.assignments); !s.ok()) return s;
  } else {
    for (std::size_t e = 0; e < e_count; ++e) {
      for (int s = 0; s < ep; ++s)
        r.assignments[s * e_count + e] = EvenShare(c.histogram[e], ep, s);
    }
  }
  std::vector<std::uint64_t> per_expert(e_count, 0);
  for (int s = 0; s < ep; ++s) {
    for (std::size_t e = 0; e < e_count; ++e) per_expert[e] += r.assignments[s * e_count + e];
  }
  StatusOr<trnmx::RoutingStats> stats =
      trnmx::ComputeRoutingStats(per_expert, e_count, static_cast<std::size_t>(ep));
  if (!stats.ok()) return stats.status();
  r.stats = std::move(*stats);
  const std::size_t per_rank = e_count / static_cast<std::size_t>(ep);
  r.dispatch_bytes.assign(static_cast<std::size_t>(ep) * ep, 0);
  for (int s = 0; s < ep; ++s) {
    for (std::size_t e = 0; e < e_count; ++e) {
      const std::size_t d = e / per_rank;
      r.dispatch_bytes[s * ep + d] +=
          static_cast<int64_t>(r.assignments[s * e_count + e]) * c.hidden * kActivationBytes;
    }
  }
  return r;
}

StatusOr<MoeResult> SimulateMoe(const System& system, const MoeConfig& config) {
  StatusOr<MoeRouting> routing = RouteMoe(system, config);
  if (!routing.ok()) return routing.status();
  MoeResult out;
  out.config = config;
  out.config.ep = routing->ep;
  out.routing = std::move(*routing);
  const MoeConfig& c = out.config;
  const int ep = c.ep;
  const Machine& chip = system.chip;

  // Router: the largest rank's logits GEMM and top-k.
  const int64_t rank_tokens = static_cast<int64_t>(out.routing.tokens_per_rank[0]);
  StatusOr<Simulated> rt =
      SimulateRouter(chip, chip.core_count(), rank_tokens, c.experts, c.hidden, c.top_k);
  if (!rt.ok()) return rt.status();
  out.phases.push_back({"router", rt->time_ps, rt->limiting,
                        "logits GEMM " + std::to_string(rank_tokens) + "x" +
                            std::to_string(c.experts) + "x" + std::to_string(c.hidden) +
                            " bf16 and top-" + std::to_string(c.top_k) + " per rank"});

  // Dispatch and combine: the all-to-all-v and its transpose.
  std::vector<int64_t> back(out.routing.dispatch_bytes.size());
  for (int s = 0; s < ep; ++s) {
    for (int d = 0; d < ep; ++d) back[d * ep + s] = out.routing.dispatch_bytes[s * ep + d];
  }
  const auto exchange = [&](const char* name, std::vector<int64_t> sizes) -> Status {
    if (ep == 1) {
      out.phases.push_back({name, 0, "none", "one EP rank: nothing to exchange"});
      return OkStatus();
    }
    int64_t total = 0;
    for (int s = 0; s < ep; ++s) {
      for (int d = 0; d < ep; ++d) total += s == d ? 0 : sizes[s * ep + d];
    }
    StatusOr<Simulated> a = SimulateAllToAllV(system, c, ep, std::move(sizes));
    if (!a.ok()) return a.status();
    out.phases.push_back({name, a->time_ps, a->limiting,
                          "all-to-all-v over " + std::to_string(ep) + " chips, " +
                              ByteSizeName(total) + " between chips"});
    return OkStatus();
  };
  if (Status s = exchange("dispatch", out.routing.dispatch_bytes); !s.ok()) return s;

  // Experts: per rank, deduplicated by its experts' token counts.
  out.expert_dtype = ExpertDtype(chip, c.weights);
  const std::size_t per_rank = static_cast<std::size_t>(c.experts / ep);
  std::map<std::vector<std::uint64_t>, Simulated> seen;
  Simulated slowest{-1, ""};
  int slowest_rank = 0;
  for (int r = 0; r < ep; ++r) {
    const auto first = out.routing.stats.tokens_per_expert.begin() + r * per_rank;
    std::vector<std::uint64_t> tokens(first, first + static_cast<std::ptrdiff_t>(per_rank));
    for (std::uint64_t n : tokens) {
      out.expert_flops += 2.0 * static_cast<double>(n) * 3.0 * static_cast<double>(c.intermediate) *
                          static_cast<double>(c.hidden);
    }
    auto it = seen.find(tokens);
    if (it == seen.end()) {
      StatusOr<Simulated> sim = SimulateExperts(chip, chip.core_count(), c.hidden, c.intermediate,
                                                out.expert_dtype, tokens);
      if (!sim.ok()) return sim.status();
      it = seen.emplace(tokens, std::move(*sim)).first;
    }
    if (it->second.time_ps > slowest.time_ps) {
      slowest = it->second;
      slowest_rank = r;
    }
  }
  out.phases.push_back({"experts", slowest.time_ps, slowest.limiting,
                        std::to_string(per_rank) + " expert(s) per rank in " +
                            std::string(MatmulDtypeName(out.expert_dtype)) + "; slowest rank " +
                            std::to_string(slowest_rank) + " (" +
                            std::to_string(out.routing.stats.tokens_per_device[slowest_rank]) +
                            " assignments); " + std::to_string(seen.size()) +
                            " distinct rank(s) simulated"});

  if (Status s = exchange("combine", std::move(back)); !s.ok()) return s;
  for (const MoePhase& p : out.phases) out.total_ps += p.time_ps;
  return out;
}

}  // namespace trnmx::emu
