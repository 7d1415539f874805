// Serving layout, memory fit and the analytical prefill/decode estimate
// (trnmx/emu/serve.h; formulas in docs/models.md).
#include "trnmx/emu/serve.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "model/serve_internal.h"
#include "trnmx/emu/attention.h"
#include "trnmx/emu/collective.h"
#include "trnmx/emu/cost.h"
#include "trnmx/emu/gemm.h"
#include "trnmx/emu/moe.h"
#include "trnmx/emu/report.h"
#include "trnmx/emu/simulator.h"

namespace trnmx::emu {
namespace {

constexpr double kActBytes = 2;  // activations, KV cache and collectives in BF16

using internal::CeilDiv;

// What one rank holds of a layer, by the layout (serve.h "Layout").
struct Shard {
  int64_t heads = 0, kv_heads = 0;  // query heads; K/V heads (0 with MLA)
  int64_t inter = 0;                // dense MLP intermediate per rank
  int64_t experts = 0, expert_inter = 0;
  int64_t shared_inter = 0;  // shared experts' intermediate per rank
  int64_t vocab = 0;
  bool expert_parallel = false;  // ep > 1: whole experts, tokens split over the ranks
};

Shard ShardOf(const Model& m, const ParallelLayout& l) {
  Shard s;
  s.heads = m.heads / l.tp;
  s.kv_heads = m.mla ? 0 : (m.kv_heads >= l.tp ? m.kv_heads / l.tp : 1);
  s.inter = CeilDiv(m.intermediate, l.tp);
  s.vocab = CeilDiv(m.vocab, l.tp);
  s.expert_parallel = l.ep > 1;
  if (s.expert_parallel) {
    s.experts = m.experts / l.ep;
    s.expert_inter = m.expert_intermediate;
    s.shared_inter = m.shared_experts * m.expert_intermediate;
  } else {
    s.experts = m.experts;
    s.expert_inter = CeilDiv(m.expert_intermediate, l.tp);
    s.shared_inter = CeilDiv(m.shared_experts * m.expert_intermediate, l.tp);
  }
  return s;
}

// Attention weights of one rank per layer (elements).
double AttentionWeights(const Model& m, const Shard& s) {
  const double h = static_cast<double>(m.hidden), heads = static_cast<double>(s.heads);
  if (m.mla) {
    const MlaDims& d = *m.mla;
    const double q_lora = static_cast<double>(d.q_lora_rank);
    const double kv_lora = static_cast<double>(d.kv_lora_rank);
    const double qk = static_cast<double>(m.qk_head_dim), v = static_cast<double>(d.v_head_dim);
    double w = q_lora > 0 ? h * q_lora + q_lora + q_lora * heads * qk : h * heads * qk;
    w += h * (kv_lora + static_cast<double>(d.qk_rope_head_dim)) + kv_lora;
    w += kv_lora * heads * static_cast<double>(d.qk_nope_head_dim + d.v_head_dim);
    return w + heads * v * h;
  }
  const double dq = static_cast<double>(m.qk_head_dim), dv = static_cast<double>(m.v_head_dim);
  const double kv = static_cast<double>(s.kv_heads);
  double w = h * heads * dq + h * kv * (dq + dv) + heads * dv * h;
  if (m.attention_bias) w += heads * dq + kv * (dq + dv) + h;
  if (m.qk_norm) w += 2 * dq;
  if (m.sinks) w += heads;
  return w;
}

// Layers [first, last) of pipeline stage `stage`.
std::pair<int64_t, int64_t> StageLayers(const Model& m, int pp, int stage) {
  const int64_t per = CeilDiv(m.layers, pp);
  return {std::min(m.layers, stage * per), std::min(m.layers, (stage + 1) * per)};
}

// Tokens of a sequence whose K/V a layer keeps (a window layer keeps its window).
int64_t CachedTokens(const Model& m, int64_t layer, int64_t context) {
  const int64_t w = m.window[static_cast<size_t>(layer)];
  return w > 0 ? std::min(w, context) : context;
}

struct RankMemory {
  double weights = 0, kv_cache = 0, activations = 0, workspace = 0;
  double total() const { return weights + kv_cache + activations + workspace; }
};

RankMemory MemoryOfStage(const Model& m, const ServeConfig& c, int stage) {
  const ParallelLayout& l = c.layout;
  const Shard s = ShardOf(m, l);
  const WeightFormats& wf = c.weights;
  const double h = static_cast<double>(m.hidden);
  RankMemory r;
  const auto [first, last] = StageLayers(m, l.pp, stage);
  const double attn = AttentionWeights(m, s);
  const double kv_elems = m.mla ? static_cast<double>(m.kv_cache_elements_per_token())
                                : static_cast<double>(s.kv_heads * (m.qk_head_dim + m.v_head_dim));
  const int64_t context = c.max_context > 0 ? c.max_context : c.input + c.output;
  for (int64_t layer = first; layer < last; ++layer) {
    r.weights += attn * WeightBytes(wf.attention) + 2 * h * kActBytes;  // + the two norms
    if (m.moe_layer[static_cast<size_t>(layer)]) {
      const double expert = 3 * h * static_cast<double>(s.expert_inter) +
                            (m.expert_bias ? 2 * static_cast<double>(s.expert_inter) + h : 0);
      r.weights += static_cast<double>(s.experts) * expert * WeightBytes(wf.experts);
      r.weights += 3 * h * static_cast<double>(s.shared_inter) * WeightBytes(wf.mlp);
      r.weights += (h + (m.router_bias ? 1 : 0)) * static_cast<double>(m.experts) * kActBytes;
    } else {
      r.weights += 3 * h * static_cast<double>(s.inter) * WeightBytes(wf.mlp);
    }
    r.kv_cache +=
        static_cast<double>(c.batch * CachedTokens(m, layer, context)) * kv_elems * kActBytes;
  }
  const double table = static_cast<double>(s.vocab) * h * WeightBytes(wf.embedding);
  if (stage == 0) r.weights += table;
  if (stage == l.pp - 1 && (!m.tied_embeddings || l.pp > 1)) r.weights += table;
  if (stage == l.pp - 1) r.weights += h * kActBytes;  // final norm

  // Activations of the widest op of a prefill of batch x input tokens: the
  // residual stream and its normed copy, the op's input and output, and the
  // logits of the last positions (FP32).
  const double t = static_cast<double>(c.batch * PrefillTokens(c));
  const double attn_io = static_cast<double>(s.heads * (m.qk_head_dim + 2 * m.v_head_dim)) +
                         2 * static_cast<double>(s.kv_heads) * static_cast<double>(m.qk_head_dim);
  double widest = attn_io;
  if (m.moe_layers() < m.layers) widest = std::max(widest, 3.0 * static_cast<double>(s.inter));
  if (m.is_moe()) {
    // Per token of the batch: its top_k rows in, gate/up out (the rows a
    // rank receives are 1 / ep of them with expert parallelism).
    const double per_token =
        static_cast<double>(m.top_k) * (h + 3 * static_cast<double>(s.expert_inter));
    widest = std::max(widest, s.expert_parallel ? per_token / l.ep : per_token);
  }
  r.activations = t * (2 * h + widest) * kActBytes + static_cast<double>(c.batch * s.vocab) * 4;
  // Collective staging: one hidden-state buffer; with expert parallelism the
  // dispatch and combine receive buffers as well.
  r.workspace = t * h * kActBytes;
  if (s.expert_parallel) {
    r.workspace += 2 * std::ceil(t / l.ep) * static_cast<double>(m.top_k) * h * kActBytes;
  }
  return r;
}

// ---------------------------------------------------------------------------
// Timing: analytical rooflines, or in event mode the lowered ops simulated
// (serve.h "Event mode").

constexpr char kOverheadOp[] = "runtime overhead";

class PhaseBuilder {
 public:
  PhaseBuilder(const System& sys, const ServeConfig& c) : sys_(sys), c_(c) {
    const Machine& chip = sys.chip;
    const double lnc = c.layout.lnc;
    hbm_bw_ = HbmStackBandwidth(chip) * chip.hbm.stacks.value * lnc / chip.cores.value;
    lnc_ = lnc;
  }

  bool event() const { return c_.mode == ServeMode::kEvent; }

  // A roofline op: max(FLOPs / peak(dtype), bytes / HBM bandwidth); or, when
  // `simulated` >= 0, an op of that simulated time (the roofline's terms
  // still give its bound and its resource use, each at most that time).
  void Roofline(const std::string& name, const std::string& op_class, double flops, double bytes,
                MatmulDtype dtype, double simulated = -1) {
    const double peak = lnc_ * CorePeakFlops(sys_.chip, dtype);
    double compute = flops > 0 ? flops / peak : 0;
    double memory = bytes / hbm_bw_;
    double seconds = std::max(compute, memory);
    if (simulated >= 0) {
      seconds = simulated;
      compute = std::min(compute, seconds);
      memory = std::min(memory, seconds);
    }
    OpCost& op = Op(name, op_class);
    op.count += 1;
    op.seconds += seconds;
    op.flops += flops;
    op.hbm_bytes += bytes;
    op.fidelity = simulated >= 0 ? "event" : "analytical";
    (compute > memory ? compute_s_ : memory_s_)[name] += seconds;
    Span(name, seconds, compute, memory);
  }

  // A fixed runtime overhead (System::runtime): the same time in both modes,
  // on no engine or link. Nothing is counted at 0, so an uncalibrated
  // description gives the ops it gave before the parameters existed.
  void Overhead(double seconds) {
    if (seconds <= 0) return;
    OpCost& op = Op(kOverheadOp, "overhead");
    op.count += 1;
    op.seconds += seconds;
    Span(kOverheadOp, seconds, 0, 0);
  }

  // A GEMM [m, k] x [k, n] with weights of `w` (activations BF16).
  void Gemm(const std::string& name, double m, double k, double n, WeightDtype w) {
    const double bytes = k * n * WeightBytes(w) + (m * k + m * n) * kActBytes;
    const MatmulDtype dtype = WeightMatmulDtype(sys_.chip, w);
    Roofline(name, "gemm", 2 * m * k * n, bytes, dtype,
             event() ? SimulatedGemm(name, m, k, n, dtype) : -1);
  }

  // The attention core: `a` lowered onto the rank's cores in event mode
  // (when `lowerable`), else the roofline of `flops` and `bytes`.
  void Attention(const AttentionConfig& a, bool lowerable, double flops, double bytes) {
    double simulated = -1;
    if (event() && lowerable && status_.ok()) {
      const auto key =
          std::make_tuple(a.batch, a.heads, a.kv_heads, a.seq, a.kv_seq, a.head_dim, a.window);
      auto it = attention_cache_.find(key);
      if (it == attention_cache_.end()) {
        AttentionConfig cfg = a;
        cfg.cores = c_.layout.lnc;
        StatusOr<LoweredAttention> lowered = LowerAttention(sys_.chip, cfg);
        StatusOr<SimResult> r =
            lowered.ok() ? Simulate(lowered->program) : StatusOr<SimResult>(lowered.status());
        if (!r.ok()) {
          status_ = Status(r.status().code(), "event mode, attention: " + r.status().message());
          return;
        }
        it = attention_cache_.emplace(key, static_cast<double>(r->end_ps) * 1e-12).first;
      }
      simulated = it->second;
    }
    Roofline("attention", "attention", flops, bytes, MatmulDtype::kBf16, simulated);
  }

  // The routed experts of one rank: in event mode `reached` experts, each a
  // gate/up GEMM [n, h] x [h, 2 ie] then a down GEMM [n, ie] x [ie, h] of
  // `dtype`, in series, n = ceil(assignments / reached); else the roofline.
  void Experts(double flops, double bytes, MatmulDtype dtype, double assignments, double reached,
               double h, double ie) {
    double simulated = -1;
    if (event() && status_.ok()) {
      const int64_t experts = std::max<int64_t>(1, std::llround(reached));
      const int64_t n = static_cast<int64_t>(std::ceil(assignments / static_cast<double>(experts)));
      int64_t inter = static_cast<int64_t>(ie);
      if (dtype == MatmulDtype::kMxfp8 || dtype == MatmulDtype::kMxfp4) {
        inter = CeilDiv(inter, 32) * 32;  // whole MX blocks along the down GEMM's K
      }
      const auto key =
          std::make_tuple(experts, n, static_cast<int64_t>(h), inter, static_cast<int>(dtype));
      auto it = experts_cache_.find(key);
      if (it == experts_cache_.end()) {
        StatusOr<int64_t> ps = SimulateExpertGemms(
            sys_.chip, c_.layout.lnc, static_cast<int64_t>(h), inter, dtype,
            std::vector<std::uint64_t>(static_cast<size_t>(experts), static_cast<uint64_t>(n)));
        if (!ps.ok()) {
          status_ = Status(ps.status().code(), "event mode, experts (" + std::to_string(experts) +
                                                   " x " + std::to_string(n) +
                                                   " tokens): " + ps.status().message());
          return;
        }
        it = experts_cache_.emplace(key, static_cast<double>(*ps) * 1e-12).first;
      }
      simulated = it->second;
    }
    Roofline("experts", "gemm", flops, bytes, dtype, simulated);
  }

  // Elementwise work as HBM traffic.
  void Elementwise(const std::string& name, double bytes) {
    Roofline(name, "elementwise", 0, bytes, MatmulDtype::kBf16);
  }

  // A collective over `ranks` ranks of `bytes` per rank, simulated once per
  // distinct (op, bytes, ranks, ranks_per_chip); ranks_per_chip 0 packs the
  // ranks onto chips in order (CollectiveConfig::ranks_per_chip).
  Status Collective(const std::string& name, CollectiveOp op, double bytes, int ranks,
                    int ranks_per_chip = 0) {
    if (ranks < 2) return OkStatus();
    const int64_t b = std::max<int64_t>(static_cast<int64_t>(std::ceil(bytes)), ranks);
    const auto key = std::make_tuple(static_cast<int>(op), b, ranks, ranks_per_chip);
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      CollectiveConfig cc;
      cc.op = op;
      cc.bytes = b;
      cc.ranks = ranks;
      cc.lnc = c_.layout.lnc;
      cc.ranks_per_chip = ranks_per_chip;
      StatusOr<LoweredCollective> lowered = LowerCollective(sys_, cc);
      if (!lowered.ok()) return lowered.status();
      StatusOr<SimResult> r = Simulate(lowered->program);
      if (!r.ok()) return r.status();
      const Report rep = MakeReport(lowered->program, *r, 0, MatmulDtype::kBf16);
      const std::string bound =
          std::string(CollectiveAlgorithmName(lowered->plan.algorithm)) + ", " + rep.limiting;
      it = cache_.emplace(key, std::make_pair(static_cast<double>(r->end_ps) * 1e-12, bound)).first;
    }
    OpCost& o = Op(name, "collective");
    o.count += 1;
    o.seconds += it->second.first;
    o.fidelity = "event";
    // Ranks fill chips in order, so a group of ranks fits on one chip or spans several.
    o.crosses_chips =
        ranks > (ranks_per_chip > 0 ? ranks_per_chip : sys_.chip.core_count() / c_.layout.lnc);
    link_bound_[name] = it->second.second;
    Span(name, it->second.first, 0, 0);
    return OkStatus();
  }

  // A point-to-point send of `bytes` from the chip of rank a to that of rank
  // b: the route's latency and the DMA start latency, plus bytes over the
  // slowest link of the route (or an HBM copy on one chip).
  void Send(const std::string& name, double bytes, int chip_a, int chip_b) {
    double seconds = 0;
    std::string bound = "HBM";
    if (chip_a == chip_b) {
      seconds = 2 * bytes / hbm_bw_;
    } else {
      const std::vector<int> route = sys_.Route(chip_a, chip_b);
      double bw = 0;
      for (int id : route) {
        const double b = sys_.links[static_cast<size_t>(id)].bandwidth_bytes_per_s.value;
        bw = bw == 0 ? b : std::min(bw, b);
      }
      seconds =
          static_cast<double>(RouteLatencyPs(sys_, route) + DmaWaitLatencyPs(sys_.chip)) * 1e-12 +
          bytes / bw;
      bound = "links";
    }
    OpCost& o = Op(name, "collective");
    o.count += 1;
    o.seconds += seconds;
    o.fidelity = "analytical";
    o.crosses_chips = chip_a != chip_b;
    link_bound_[name] = bound;
    Span(name, seconds, 0, 0);
  }

  PhaseCost Finish() {
    PhaseCost p;
    std::map<std::string, ClassCost> classes;
    std::map<std::string, double> largest;
    for (OpCost& op : ops_) {
      if (op.op_class == "collective") {
        op.bound = link_bound_[op.name];
      } else if (op.op_class == "overhead") {
        op.bound = "runtime";
      } else {
        op.bound = compute_s_[op.name] > memory_s_[op.name] ? "compute" : "HBM";
      }
      p.seconds += op.seconds;
      ClassCost& cl = classes[op.op_class];
      cl.op_class = op.op_class;
      cl.seconds += op.seconds;
      if (op.seconds >= largest[op.op_class]) {
        largest[op.op_class] = op.seconds;
        cl.bound = op.bound;
      }
    }
    for (auto& [name, cl] : classes) p.classes.push_back(cl);
    std::sort(p.classes.begin(), p.classes.end(),
              [](const ClassCost& a, const ClassCost& b) { return a.seconds > b.seconds; });
    p.ops = ops_;
    // Layer kinds: the simulated ops of the first layer of each kind (every
    // layer of a kind has the same shapes, so the same simulated times).
    if (event()) {
      std::vector<double> layer_s(layer_kind_.size(), 0.0);
      for (const OpSpan& s : timeline_) {
        if (s.layer >= 0 && s.layer < static_cast<int64_t>(layer_s.size()) &&
            ops_[static_cast<size_t>(s.op)].fidelity == "event") {
          layer_s[static_cast<size_t>(s.layer)] += s.seconds;
        }
      }
      for (size_t layer = 0; layer < layer_kind_.size(); ++layer) {
        auto kind =
            std::find_if(p.layer_kinds.begin(), p.layer_kinds.end(),
                         [&](const LayerKindCost& k) { return k.kind == layer_kind_[layer]; });
        if (kind == p.layer_kinds.end()) {
          p.layer_kinds.push_back({layer_kind_[layer], 0, layer_s[layer]});
          kind = p.layer_kinds.end() - 1;
        }
        kind->count += 1;
      }
    }
    p.timeline = std::move(timeline_);
    return p;
  }

  double hbm_bw() const { return hbm_bw_; }
  // The layer the next ops belong to (OpSpan::layer), and its kind (a
  // layer of the model; the kind names PhaseCost::layer_kinds).
  void SetLayer(int64_t layer) { layer_ = layer; }
  void SetLayer(int64_t layer, std::string kind) {
    layer_ = layer;
    layer_kind_.resize(static_cast<size_t>(layer) + 1);
    layer_kind_[static_cast<size_t>(layer)] = std::move(kind);
  }
  // The first error of a lowering or simulation in event mode.
  const Status& status() const { return status_; }

 private:
  // One GEMM of the rank's shape lowered onto its cores and simulated, once
  // per distinct shape; 0 after an error (kept in status_).
  double SimulatedGemm(const std::string& name, double m, double k, double n, MatmulDtype dtype) {
    if (!status_.ok()) return 0;
    const auto key =
        std::make_tuple(static_cast<int64_t>(std::ceil(m)), static_cast<int64_t>(std::ceil(k)),
                        static_cast<int64_t>(std::ceil(n)), static_cast<int>(dtype));
    auto it = gemm_cache_.find(key);
    if (it != gemm_cache_.end()) return it->second;
    GemmConfig g;
    g.m = std::get<0>(key);
    g.k = std::get<1>(key);
    // MX operands come in whole 32-element blocks along K: a rank's share of
    // K that is not a multiple (gpt-oss-120b's 2880 / 16 = 180) is padded
    // with zeros to the next one (192), as MX-quantized weights are stored.
    if (dtype == MatmulDtype::kMxfp8 || dtype == MatmulDtype::kMxfp4) g.k = CeilDiv(g.k, 32) * 32;
    g.n = std::get<2>(key);
    g.dtype = dtype;
    g.cores = c_.layout.lnc;
    StatusOr<LoweredGemm> lowered = LowerGemm(sys_.chip, g);
    StatusOr<SimResult> r =
        lowered.ok() ? Simulate(lowered->program) : StatusOr<SimResult>(lowered.status());
    if (!r.ok()) {
      status_ =
          Status(r.status().code(), "event mode, " + name + " GEMM [" + std::to_string(g.m) + ", " +
                                        std::to_string(g.k) + "] x [" + std::to_string(g.k) + ", " +
                                        std::to_string(g.n) + "]: " + r.status().message());
      return 0;
    }
    return gemm_cache_.emplace(key, static_cast<double>(r->end_ps) * 1e-12).first->second;
  }

  OpCost& Op(const std::string& name, const std::string& op_class) {
    for (OpCost& o : ops_) {
      if (o.name == name) return o;
    }
    OpCost op;
    op.name = name;
    op.op_class = op_class;
    ops_.push_back(op);
    return ops_.back();
  }

  // Appends the op just counted to the timeline, after the previous span.
  void Span(const std::string& name, double seconds, double compute, double memory) {
    OpSpan s;
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (ops_[i].name == name) s.op = static_cast<int>(i);
    }
    s.layer = layer_;
    s.start_s = timeline_.empty() ? 0 : timeline_.back().start_s + timeline_.back().seconds;
    s.seconds = seconds;
    s.compute_s = compute;
    s.memory_s = memory;
    timeline_.push_back(s);
  }

  const System& sys_;
  const ServeConfig& c_;
  double hbm_bw_ = 0, lnc_ = 2;
  std::vector<OpCost> ops_;
  std::map<std::string, double> compute_s_, memory_s_;
  std::map<std::string, std::string> link_bound_;
  std::map<std::tuple<int, int64_t, int, int>, std::pair<double, std::string>> cache_;
  std::vector<OpSpan> timeline_;
  int64_t layer_ = -1;
  std::vector<std::string> layer_kind_;  // per layer of the model
  std::map<std::tuple<int64_t, int64_t, int64_t, int>, double> gemm_cache_;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int>, double> experts_cache_;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>, double>
      attention_cache_;
  Status status_;
};

// Query-key pairs of one head of one sequence: `queries` new tokens after
// `past` cached ones, causal, a window of w keys (0: none).
double AttendedPairs(int64_t past, int64_t queries, int64_t w) {
  double pairs = 0;
  if (w <= 0) {
    // sum over i of (past + i + 1)
    return static_cast<double>(queries) * static_cast<double>(past) +
           static_cast<double>(queries) * static_cast<double>(queries + 1) / 2;
  }
  // Keys visible to query i: min(past + i + 1, w); split where they reach w.
  const int64_t ramp = std::clamp<int64_t>(w - past, 0, queries);  // queries before the cap
  pairs += static_cast<double>(ramp) * static_cast<double>(past) +
           static_cast<double>(ramp) * static_cast<double>(ramp + 1) / 2;
  pairs += static_cast<double>(queries - ramp) * static_cast<double>(w);
  return pairs;
}

// One pass over the model for `tokens_per_seq` new tokens of each of the
// batch's sequences after `past` cached tokens: a prefill (past 0) or a
// decode step (one token). Ops are summed over all the layers. A training
// pass (train.h) ends with every position's logits and the loss instead of
// the last position's logits and sampling.
Status BuildPass(PhaseBuilder& b, const System& sys, const Model& m, const ServeConfig& c,
                 int64_t past, int64_t tokens_per_seq, bool training = false) {
  const ParallelLayout& l = c.layout;
  const Shard s = ShardOf(m, l);
  const WeightFormats& wf = c.weights;
  const double t = static_cast<double>(c.batch * tokens_per_seq);
  const double h = static_cast<double>(m.hidden);
  const double heads = static_cast<double>(s.heads), kvh = static_cast<double>(s.kv_heads);
  const double dq = static_cast<double>(m.qk_head_dim), dv = static_cast<double>(m.v_head_dim);
  const bool decode = tokens_per_seq == 1 && past > 0;
  const double kv_elems =
      m.mla ? static_cast<double>(m.kv_cache_elements_per_token()) : kvh * (dq + dv);
  // Sequence parallelism (prefill only, as Neuron applies it to context
  // encoding): the hidden state between blocks is split over the tp ranks by
  // token, each block gathers it first and reduce-scatters its output
  // instead of all-reducing it.
  const bool sp = l.sp && !decode && l.tp > 1;
  const double shard = sp ? std::ceil(t / l.tp) : t;  // hidden-state tokens per rank
  const double hidden_bytes = t * h * kActBytes;
  auto gather = [&]() -> Status {
    return sp ? b.Collective("all-gather", CollectiveOp::kAllGather, hidden_bytes, l.tp)
              : OkStatus();
  };
  auto reduce = [&]() -> Status {
    return sp ? b.Collective("reduce-scatter", CollectiveOp::kReduceScatter, hidden_bytes, l.tp)
              : b.Collective("all-reduce", CollectiveOp::kAllReduce, hidden_bytes, l.tp);
  };

  // Embedding: gather rows (vocabulary-parallel), then sum the shards.
  b.Elementwise("embedding", t * h * (WeightBytes(wf.embedding) + kActBytes));
  if (Status st = reduce(); !st.ok()) return st;
  for (int64_t layer = 0; layer < m.layers; ++layer) {
    const int64_t window = m.window[static_cast<size_t>(layer)];
    b.SetLayer(layer, (window > 0 ? "sliding window " + std::to_string(window) : "full attention") +
                          (m.moe_layer[static_cast<size_t>(layer)] ? ", MoE" : ", dense MLP"));
    b.Overhead(sys.runtime.layer_ns.value * 1e-9);
    // Two RMSNorms (read + write) and two residual adds (read two, write one).
    b.Elementwise("norms+residual",
                  2 * (2 * shard * h * kActBytes) + 2 * (3 * shard * h * kActBytes));
    if (Status st = gather(); !st.ok()) return st;
    if (m.mla) {
      const MlaDims& d = *m.mla;
      const double q_lora = static_cast<double>(d.q_lora_rank);
      const double kv_lora = static_cast<double>(d.kv_lora_rank);
      const double rope = static_cast<double>(d.qk_rope_head_dim);
      if (q_lora > 0) {
        b.Gemm("q_a", t, h, q_lora, wf.attention);
        b.Gemm("q_b", t, q_lora, heads * dq, wf.attention);
      } else {
        b.Gemm("q", t, h, heads * dq, wf.attention);
      }
      b.Gemm("kv_a", t, h, kv_lora + rope, wf.attention);
      // Prefill expands the latent to per-head K and V; decode absorbs the
      // same weights into Q and the output (the same FLOPs and bytes).
      b.Gemm("kv_b", t, kv_lora, heads * static_cast<double>(d.qk_nope_head_dim + d.v_head_dim),
             wf.attention);
    } else {
      b.Gemm("qkv", t, h, heads * dq + kvh * (dq + dv), wf.attention);
    }
    b.Elementwise("rope", 2 * t * (heads + std::max(kvh, 1.0)) * dq * kActBytes);

    // Attention core (BF16): 2 (d_qk + d_v) FLOPs per (query, key) pair and head.
    const int64_t w = m.window[static_cast<size_t>(layer)];
    const double pairs = static_cast<double>(c.batch) * AttendedPairs(past, tokens_per_seq, w);
    // Keys some query of the pass sees, each read once: all of them, or with
    // a window the last w + tokens - 1 (a decode step: its window).
    const int64_t visible =
        w > 0 ? std::min(past + tokens_per_seq, w + tokens_per_seq - 1) : past + tokens_per_seq;
    const double keys_read = static_cast<double>(c.batch) * static_cast<double>(visible);
    double flops = 0, bytes = 0;
    if (m.mla && decode) {
      // Absorbed: every head attends over the latent (kv_lora + rope wide) and
      // reads the latent cache once.
      const double kv_lora = static_cast<double>(m.mla->kv_lora_rank);
      const double rope = static_cast<double>(m.mla->qk_rope_head_dim);
      flops = pairs * heads * 2 * (kv_lora + rope + kv_lora);
      bytes = keys_read * kv_elems * kActBytes + t * heads * (kv_lora + rope + kv_lora) * kActBytes;
    } else {
      flops = pairs * heads * 2 * (dq + dv);
      // Q in, O out, K and V read once (per KV head, or per head with MLA's
      // expanded K/V), the new tokens' cache entries written.
      const double kv_read = m.mla ? t * heads * (dq + dv) : keys_read * kvh * (dq + dv);
      bytes = (t * heads * (dq + dv) + kv_read + t * kv_elems) * kActBytes;
    }
    // The lowering takes one head dim for Q, K and V and one KV head per
    // group: the rank's query heads over its KV heads (one when replicated).
    // Its window_left counts the keys before the query; the model's window
    // includes the query's own key.
    AttentionConfig a;
    a.batch = c.batch;
    a.heads = s.heads;
    a.kv_heads = std::max<int64_t>(s.kv_heads, 1);
    a.seq = tokens_per_seq;
    a.kv_seq = past + tokens_per_seq;
    a.head_dim = m.qk_head_dim;
    a.causal = true;
    a.window = w > 0 ? w - 1 : -1;
    if (decode && w > 0) {
      // A decode step's one query sees the last w keys: the same attention
      // as over those keys alone, which keeps the lowering's split of the
      // keys over an LNC pair (a split outside the window holds no key).
      a.kv_seq = std::min(a.kv_seq, w);
      a.window = -1;
    }
    b.Attention(a, !m.mla && m.qk_head_dim == m.v_head_dim && a.heads % a.kv_heads == 0, flops,
                bytes);

    b.Gemm("o_proj", t, heads * dv, h, wf.attention);
    if (Status st = reduce(); !st.ok()) return st;

    if (!m.moe_layer[static_cast<size_t>(layer)]) {
      if (Status st = gather(); !st.ok()) return st;
      const double inter = static_cast<double>(s.inter);
      b.Gemm("mlp gate_up", t, h, 2 * inter, wf.mlp);
      b.Elementwise("swiglu", 3 * t * inter * kActBytes);
      b.Gemm("mlp down", t, inter, h, wf.mlp);
      if (Status st = reduce(); !st.ok()) return st;
      continue;
    }
    // MoE block. Uniform routing: T x k assignments spread evenly; the experts
    // a rank holds are read when at least one token picks them.
    const double e = static_cast<double>(m.experts), k = static_cast<double>(m.top_k);
    const double hit_fraction = 1 - std::pow(1 - k / e, t);
    const double ie = static_cast<double>(s.expert_inter);
    // With expert parallelism each rank routes its 1 / ep of the tokens (the
    // sequence-parallel shard when sp is on); else the gathered hidden state.
    const double local_tokens = s.expert_parallel ? std::ceil(t / l.ep) : t;
    if (!s.expert_parallel) {
      if (Status st = gather(); !st.ok()) return st;
    }
    b.Gemm("router", local_tokens, h, e, WeightDtype::kBf16);
    const double assignments = s.expert_parallel ? t * k / l.ep : t * k;
    if (s.expert_parallel) {
      if (Status st = b.Collective("all-to-all", CollectiveOp::kAllToAll,
                                   local_tokens * k * h * kActBytes, l.ep);
          !st.ok()) {
        return st;
      }
    }
    const double expert_weights = static_cast<double>(s.experts) * hit_fraction *
                                  (3 * h * ie + (m.expert_bias ? 2 * ie + h : 0)) *
                                  WeightBytes(wf.experts);
    // Rows in, gate/up out, SwiGLU (read 2, write 1), down in and out.
    const double expert_acts = assignments * (h + 2 * ie + 3 * ie + ie + h) * kActBytes;
    b.Experts(2 * assignments * 3 * h * ie, expert_weights + expert_acts,
              WeightMatmulDtype(sys.chip, wf.experts), assignments,
              static_cast<double>(s.experts) * hit_fraction, h, ie);
    if (s.shared_inter > 0) {
      const double si = static_cast<double>(s.shared_inter);
      b.Gemm("shared experts gate_up", local_tokens, h, 2 * si, wf.mlp);
      b.Gemm("shared experts down", local_tokens, si, h, wf.mlp);
    }
    // Weighted sum of each token's k expert outputs.
    b.Elementwise("moe combine", local_tokens * (k + 1) * h * kActBytes);
    if (s.expert_parallel) {
      if (Status st = b.Collective("all-to-all", CollectiveOp::kAllToAll,
                                   local_tokens * k * h * kActBytes, l.ep);
          !st.ok()) {
        return st;
      }
      // The combined tokens are the rank's shard: sequence parallelism keeps
      // them so; otherwise every rank gathers the whole hidden state.
      if (!sp) {
        if (Status st = b.Collective("all-gather", CollectiveOp::kAllGather, hidden_bytes, l.tp);
            !st.ok()) {
          return st;
        }
      }
    } else if (Status st = reduce(); !st.ok()) {
      return st;
    }
  }
  b.SetLayer(m.layers);
  // A serving prefill (past 0) also pays the per-request prefill overhead.
  const double prefill_ns = past == 0 && !training ? sys.runtime.prefill_ns.value : 0;
  b.Overhead((sys.runtime.pass_ns.value + prefill_ns) * 1e-9);
  // Pipeline stages hand the hidden state on.
  const int rpc = sys.chip.core_count() / l.lnc;
  for (int stage = 0; stage + 1 < l.pp; ++stage) {
    b.Send("pipeline send", shard * h * kActBytes, stage * l.tp / rpc, (stage + 1) * l.tp / rpc);
  }
  // Logits of the last position of each sequence (gathered from their
  // sequence-parallel shards), then greedy sampling on device: each rank's
  // (value, index) of its vocabulary shard all-gathered.
  const double rows = training ? t : static_cast<double>(c.batch);
  if (sp) {
    if (Status st =
            b.Collective("all-gather", CollectiveOp::kAllGather, rows * h * kActBytes, l.tp);
        !st.ok()) {
      return st;
    }
  }
  b.Elementwise("final norm", 2 * rows * h * kActBytes);
  b.Gemm("lm_head", rows, h, static_cast<double>(s.vocab), wf.embedding);
  if (training) {
    // Cross-entropy over vocabulary-parallel logits: two passes over the
    // rank's logits (max, then the sum of exponentials), and per row the
    // max, the sum and the target's logit all-reduced (3 FP32).
    b.Elementwise("cross-entropy", 2 * rows * static_cast<double>(s.vocab) * kActBytes);
    if (Status st = b.Collective("loss all-reduce", CollectiveOp::kAllReduce, rows * 3 * 4, l.tp);
        !st.ok()) {
      return st;
    }
    return b.status();
  }
  if (Status st =
          b.Collective("sampling all-gather", CollectiveOp::kAllGather, l.tp * rows * 8, l.tp);
      !st.ok()) {
    return st;
  }
  return b.status();
}

// Energy in closed form (serve.h "Energy").
ServeEnergy EnergyOf(const System& sys, int chips, double tokens_per_s) {
  ServeEnergy en;
  if (!sys.chip.power_watts) {
    en.why_not = "not reported: chip " + sys.chip.name +
                 " has no /chip/power_watts in its description (trainium.md #18: Trn2 500 W, "
                 "Trn3 1,000 W, third-party)";
    return en;
  }
  en.reported = true;
  en.chip_watts = *sys.chip.power_watts;
  en.chips = chips;
  en.watts = chips * en.chip_watts.value;
  en.joules_per_token = en.watts / tokens_per_s;
  en.tokens_per_s_per_mw = tokens_per_s / (en.watts / 1e6);
  return en;
}

}  // namespace

std::string_view ServeModeName(ServeMode m) {
  return m == ServeMode::kEvent ? "event" : "analytical";
}

StatusOr<ServeMode> ParseServeMode(std::string_view name) {
  for (ServeMode m : {ServeMode::kAnalytical, ServeMode::kEvent}) {
    if (ServeModeName(m) == name) return m;
  }
  return InvalidArgumentError("--mode: unknown mode '" + std::string(name) +
                              "' (analytical, event)");
}

std::string_view CompareClassOf(const OpCost& op) {
  static const char* const kMoe[] = {
      "router",      "experts",   "shared experts gate_up", "shared experts down",
      "moe combine", "all-to-all"};
  for (const char* name : kMoe) {
    if (op.name == name) return "moe";
  }
  if (op.op_class == "elementwise" || op.op_class == "overhead") return "other";
  return op.op_class;  // "gemm", "attention", "collective"
}

std::vector<ClassDivergence> CompareClasses(const PhaseCost& analytical, const PhaseCost& event) {
  std::vector<ClassDivergence> out;
  for (const char* cls : {"gemm", "attention", "collective", "moe", "other"}) {
    ClassDivergence d;
    d.op_class = cls;
    for (const OpCost& o : analytical.ops) {
      if (CompareClassOf(o) == cls) d.analytical_s += o.seconds;
    }
    for (const OpCost& o : event.ops) {
      if (CompareClassOf(o) == cls) d.event_s += o.seconds;
    }
    if (d.analytical_s > 0) d.divergence_pct = 100 * (d.event_s - d.analytical_s) / d.analytical_s;
    out.push_back(d);
  }
  return out;
}

std::string_view WeightDtypeName(WeightDtype d) {
  switch (d) {
    case WeightDtype::kBf16:
      return "bf16";
    case WeightDtype::kFp8:
      return "fp8";
    case WeightDtype::kMxfp8:
      return "mxfp8";
    case WeightDtype::kMxfp4:
      return "mxfp4";
  }
  return "?";
}

StatusOr<WeightDtype> ParseWeightDtype(std::string_view name) {
  for (WeightDtype d :
       {WeightDtype::kBf16, WeightDtype::kFp8, WeightDtype::kMxfp8, WeightDtype::kMxfp4}) {
    if (WeightDtypeName(d) == name) return d;
  }
  return InvalidArgumentError("unknown weight format '" + std::string(name) +
                              "' (bf16, fp8, mxfp8, mxfp4)");
}

double WeightBytes(WeightDtype d) {
  switch (d) {
    case WeightDtype::kBf16:
      return 2;
    case WeightDtype::kFp8:
      return 1;
    case WeightDtype::kMxfp8:
      return 1 + 1.0 / 32;
    case WeightDtype::kMxfp4:
      return 0.5 + 1.0 / 32;
  }
  return 2;
}

MatmulDtype WeightMatmulDtype(const Machine& chip, WeightDtype d) {
  switch (d) {
    case WeightDtype::kBf16:
      return MatmulDtype::kBf16;
    case WeightDtype::kFp8:
      return MatmulDtype::kFp8;
    case WeightDtype::kMxfp8:
      return MacsPerPeCycle(chip, MatmulDtype::kMxfp8) > 0 ? MatmulDtype::kMxfp8
                                                           : MatmulDtype::kBf16;
    case WeightDtype::kMxfp4:
      return MacsPerPeCycle(chip, MatmulDtype::kMxfp4) > 0 ? MatmulDtype::kMxfp4
                                                           : MatmulDtype::kBf16;
  }
  return MatmulDtype::kBf16;
}

StatusOr<WeightFormats> ParseWeightFormats(std::string_view spec) {
  WeightFormats w;
  if (spec.find('=') == std::string_view::npos) {
    StatusOr<WeightDtype> d = ParseWeightDtype(spec);
    if (!d.ok()) return InvalidArgumentError("--weights: " + d.status().message());
    w.attention = w.mlp = w.experts = w.embedding = *d;
    return w;
  }
  size_t pos = 0;
  while (pos <= spec.size()) {
    const size_t comma = std::min(spec.find(',', pos), spec.size());
    const std::string_view item = spec.substr(pos, comma - pos);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgumentError("--weights: '" + std::string(item) +
                                  "' is not group=format (groups attn, mlp, experts, embed)");
    }
    const std::string_view group = item.substr(0, eq);
    StatusOr<WeightDtype> d = ParseWeightDtype(item.substr(eq + 1));
    if (!d.ok())
      return InvalidArgumentError("--weights " + std::string(group) + ": " + d.status().message());
    if (group == "attn") {
      w.attention = *d;
    } else if (group == "mlp") {
      w.mlp = *d;
    } else if (group == "experts") {
      w.experts = *d;
    } else if (group == "embed") {
      w.embedding = *d;
    } else {
      return InvalidArgumentError("--weights: unknown group '" + std::string(group) +
                                  "' (attn, mlp, experts, embed)");
    }
    pos = comma + 1;
  }
  return w;
}

std::string WeightFormatsName(const WeightFormats& w) {
  return "attn=" + std::string(WeightDtypeName(w.attention)) +
         " mlp=" + std::string(WeightDtypeName(w.mlp)) +
         " experts=" + std::string(WeightDtypeName(w.experts)) +
         " embed=" + std::string(WeightDtypeName(w.embedding));
}

Status CheckLayout(const System& sys, const Model& m, const ServeConfig& c) {
  const ParallelLayout& l = c.layout;
  for (auto [name, v] : {std::pair{"--tp", l.tp}, std::pair{"--ep", l.ep}, std::pair{"--dp", l.dp},
                         std::pair{"--pp", l.pp}}) {
    if (v < 1) return InvalidArgumentError(std::string(name) + " = " + std::to_string(v) + " < 1");
  }
  const int cores = sys.chip.core_count();
  if ((l.lnc != 1 && l.lnc != 2) || cores % l.lnc != 0) {
    return InvalidArgumentError("--lnc = " + std::to_string(l.lnc) + ": 1 or 2, dividing the " +
                                std::to_string(cores) + " cores of a chip");
  }
  const int64_t ranks = int64_t{l.tp} * l.pp * l.dp;
  const int64_t logical = int64_t{sys.chip_count()} * (cores / l.lnc);
  if (ranks > logical) {
    return InvalidArgumentError("--tp " + std::to_string(l.tp) + " x --pp " + std::to_string(l.pp) +
                                " x --dp " + std::to_string(l.dp) + " = " + std::to_string(ranks) +
                                " ranks > the " + std::to_string(logical) + " logical cores of " +
                                sys.name + " at LNC " + std::to_string(l.lnc));
  }
  if (m.heads % l.tp != 0) {
    return InvalidArgumentError("--tp " + std::to_string(l.tp) + ": num_attention_heads " +
                                std::to_string(m.heads) + " is not divisible by it");
  }
  if (!m.mla && m.kv_heads % l.tp != 0 && l.tp % m.kv_heads != 0) {
    return InvalidArgumentError("--tp " + std::to_string(l.tp) + ": num_key_value_heads " +
                                std::to_string(m.kv_heads) +
                                " neither divides it nor is divisible by it");
  }
  if (l.ep > 1) {
    if (!m.is_moe()) {
      return InvalidArgumentError("--ep " + std::to_string(l.ep) + ": " + m.name +
                                  " has no experts");
    }
    if (l.ep != l.tp) {
      return InvalidArgumentError("--ep " + std::to_string(l.ep) +
                                  ": 1 or equal to --tp (experts split inside an EP rank are "
                                  "not modelled)");
    }
    if (m.experts % l.ep != 0) {
      return InvalidArgumentError("--ep " + std::to_string(l.ep) + " does not divide the " +
                                  std::to_string(m.experts) + " experts");
    }
  }
  if (l.pp > m.layers) {
    return InvalidArgumentError("--pp " + std::to_string(l.pp) + " > the " +
                                std::to_string(m.layers) + " layers");
  }
  // Bounded so that tokens x widths stay far inside int64 and double's exact range.
  constexpr int64_t kMaxTokens = int64_t{1} << 31;
  for (auto [name, v] : {std::pair{"--batch", c.batch}, std::pair{"--input", c.input},
                         std::pair{"--output", c.output}}) {
    if (v < 1 || v > kMaxTokens) {
      return InvalidArgumentError(std::string(name) + " = " + std::to_string(v) +
                                  " outside [1, 2^31]");
    }
  }
  constexpr int64_t kMaxRequests = int64_t{1} << 20;
  if (c.concurrency < 0 || c.concurrency > kMaxRequests) {
    return InvalidArgumentError("--concurrency " + std::to_string(c.concurrency) +
                                ": 0 (a static batch) or in [1, 2^20]");
  }
  if (c.requests < 0 || c.requests > kMaxRequests) {
    return InvalidArgumentError("--requests " + std::to_string(c.requests) +
                                ": 0 (the default) or in [1, 2^20]");
  }
  if (c.requests > 0 && c.concurrency == 0) {
    return InvalidArgumentError("--requests " + std::to_string(c.requests) +
                                " needs --concurrency (continuous batching)");
  }
  // Bounds the simulation's work (a request's tokens are visited once each).
  if (c.concurrency > 0 && internal::ContinuousRequests(c) * c.output > (int64_t{1} << 26)) {
    return InvalidArgumentError(
        "--requests x --output = " + std::to_string(internal::ContinuousRequests(c) * c.output) +
        " tokens > 2^26 to simulate");
  }
  if (c.max_context != 0 && (c.max_context < c.input + c.output || c.max_context > kMaxTokens)) {
    return InvalidArgumentError(
        "--max-context " + std::to_string(c.max_context) +
        ": 0 (none) or in [input + output = " + std::to_string(c.input + c.output) + ", 2^31]");
  }
  return OkStatus();
}

int64_t PrefillTokens(const ServeConfig& c) {
  if (c.max_context <= 0) return c.input;
  int64_t bucket = 128;
  while (bucket < c.input && bucket < c.max_context) bucket *= 2;
  return std::min(bucket, c.max_context);
}

StatusOr<MemoryFit> FitMemory(const System& sys, const Model& m, const ServeConfig& c) {
  if (Status s = CheckLayout(sys, m, c); !s.ok()) return s;
  const ParallelLayout& l = c.layout;
  RankMemory worst;
  for (int stage = 0; stage < l.pp; ++stage) {
    const RankMemory r = MemoryOfStage(m, c, stage);
    if (r.total() > worst.total()) worst = r;
  }
  const int rpc = sys.chip.core_count() / l.lnc;
  const int64_t ranks = int64_t{l.tp} * l.pp * l.dp;
  MemoryFit f;
  f.ranks_per_chip = static_cast<int>(std::min<int64_t>(rpc, ranks));
  f.chips = static_cast<int>(CeilDiv(ranks, rpc));
  const double n = f.ranks_per_chip;
  f.weights = worst.weights * n;
  f.kv_cache = worst.kv_cache * n;
  f.activations = worst.activations * n;
  f.workspace = worst.workspace * n;
  f.total = f.weights + f.kv_cache + f.activations + f.workspace;
  f.capacity = sys.chip.hbm.capacity_bytes.value;
  if (f.total > f.capacity) {
    // Name the smallest part that overflows on its own: the weights, the
    // weights and KV cache, or everything.
    std::string what;
    double need = f.total;
    if (f.weights > f.capacity) {
      what = "the weights alone";
      need = f.weights;
    } else if (f.weights + f.kv_cache > f.capacity) {
      what = "the weights and KV cache";
      need = f.weights + f.kv_cache;
    } else {
      what = "weights, KV cache, activations and workspace";
    }
    return ResourceExhaustedError(
        m.name + " does not fit on " + sys.name + ": per chip, " + what + " (" +
        internal::FormatGib(need) + ") exceed the " + internal::FormatGib(f.capacity) +
        " of HBM by " + internal::FormatGib(need - f.capacity) + " (weights " +
        internal::FormatGib(f.weights) + ", KV cache " + internal::FormatGib(f.kv_cache) +
        ", activations " + internal::FormatGib(f.activations) + ", workspace " +
        internal::FormatGib(f.workspace) + "; " + std::to_string(f.ranks_per_chip) +
        " ranks per chip; raise --tp or --pp, or lower --batch, --input or --output, or the "
        "weight format)");
  }
  return f;
}

StatusOr<ServeEstimate> EstimateServing(const System& sys, const Model& m, const ServeConfig& c) {
  StatusOr<MemoryFit> fit = FitMemory(sys, m, c);
  if (!fit.ok()) return fit.status();
  ServeEstimate e;
  e.config = c;
  e.memory = *fit;
  PhaseBuilder prefill(sys, c);
  if (Status s = BuildPass(prefill, sys, m, c, 0, PrefillTokens(c)); !s.ok()) return s;
  e.prefill = prefill.Finish();
  e.decode_context = c.input + c.output / 2;
  PhaseBuilder decode(sys, c);
  if (Status s = BuildPass(decode, sys, m, c, e.decode_context - 1, 1); !s.ok()) return s;
  e.decode = decode.Finish();
  e.ttft_s = e.prefill.seconds;
  e.tpot_s = e.decode.seconds;
  e.tokens_per_s = static_cast<double>(c.layout.dp * c.batch * c.output) /
                   (e.ttft_s + static_cast<double>(c.output - 1) * e.tpot_s);
  if (c.concurrency > 0) {
    StatusOr<ContinuousBatching> cb = internal::SimulateContinuousBatching(sys, m, c);
    if (!cb.ok()) return cb.status();
    e.ttft_s = cb->ttft_p50_s;
    e.tpot_s = cb->tpot_p50_s;
    e.tokens_per_s = cb->tokens_per_s;
    e.continuous = std::move(*cb);
  }
  e.energy = EnergyOf(sys, e.memory.chips, e.tokens_per_s);
  return e;
}

namespace internal {

StatusOr<PhaseCost> CostPass(const System& sys, const Model& m, const ServeConfig& c, int64_t past,
                             int64_t tokens_per_seq, bool training) {
  PhaseBuilder b(sys, c);
  if (Status s = BuildPass(b, sys, m, c, past, tokens_per_seq, training); !s.ok()) return s;
  return b.Finish();
}

OpCost CostRoofline(const System& sys, const ServeConfig& c, const std::string& name,
                    const std::string& op_class, double flops, double bytes, MatmulDtype dtype) {
  PhaseBuilder b(sys, c);
  b.Roofline(name, op_class, flops, bytes, dtype);
  return b.Finish().ops.front();
}

StatusOr<OpCost> CostCollective(const System& sys, const ServeConfig& c, const std::string& name,
                                CollectiveOp op, double bytes, int ranks, int ranks_per_chip) {
  PhaseBuilder b(sys, c);
  if (Status s = b.Collective(name, op, bytes, ranks, ranks_per_chip); !s.ok()) return s;
  PhaseCost p = b.Finish();
  if (!p.ops.empty()) return p.ops.front();
  OpCost none;  // fewer than two ranks: nothing to move
  none.name = name;
  none.op_class = "collective";
  return none;
}

double StageWeightBytes(const Model& m, const ServeConfig& c) {
  double most = 0;
  for (int stage = 0; stage < c.layout.pp; ++stage) {
    most = std::max(most, MemoryOfStage(m, c, stage).weights);
  }
  return most;
}

ServeEnergy ChipEnergy(const System& sys, int chips, double tokens_per_s) {
  return EnergyOf(sys, chips, tokens_per_s);
}

}  // namespace internal

}  // namespace trnmx::emu
