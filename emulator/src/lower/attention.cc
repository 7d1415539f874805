// Flash-attention lowering: tile schedule, software pipeline over the
// engines, K/V double buffering, the LNC=2 decode split and its combine (see
// the header for the schedule).
#include "trnmx/emu/attention.h"

#include <algorithm>
#include <array>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cost/cost_model.h"
#include "lower/try.h"
#include "trnmx/attention.h"
#include "trnmx/emu/cost.h"

namespace trnmx::emu {
namespace {

constexpr int64_t kRowTile = 128;        // query rows per tile (partitions)
constexpr int kPipe = 3;                 // TensorE stages: QK^T, P^T, PV, one step apart
constexpr int64_t kTransposeKeys = 128;  // keys per TensorE transpose of P

using internal::CeilDiv;
using internal::RoundUp;

// The allowed keys [lo, hi] of query i (trnmx/attention.h step 1); empty
// when lo > hi.
struct Span {
  int64_t lo, hi;
};
Span Allowed(const AttentionConfig& c, int64_t i) {
  const int64_t diag = c.kv_seq - c.seq;  // bottom-right alignment
  Span s{0, c.kv_seq - 1};
  if (c.window >= 0) s.lo = std::max(s.lo, i + diag - c.window);
  if (c.causal) s.hi = std::min(s.hi, i + diag);
  return s;
}

// Whether any row of packed rows [r0, r0 + n) may see a key of [k0, k1),
// and whether the mask cuts the tile for one of them.
struct TileNeed {
  bool any = false, masked = false;
};
TileNeed Need(const AttentionConfig& c, int64_t g, int64_t r0, int64_t n, int64_t k0, int64_t k1) {
  TileNeed t;
  bool cut = false;
  for (int64_t i = r0 / g; i <= (r0 + n - 1) / g; ++i) {
    const Span s = Allowed(c, i);
    const int64_t lo = std::max(s.lo, k0), hi = std::min(s.hi, k1 - 1);
    if (lo <= hi) t.any = true;
    if (lo != k0 || hi != k1 - 1) cut = true;
  }
  t.masked = t.any && cut;
  return t;
}

std::string Describe(const AttentionConfig& c) {
  return "attention B=" + std::to_string(c.batch) + " Hq=" + std::to_string(c.heads) +
         " Hkv=" + std::to_string(c.kv_heads) + " Sq=" + std::to_string(c.seq) +
         " L=" + std::to_string(c.kv_seq) + " D=" + std::to_string(c.head_dim) + " " +
         std::string(MatmulDtypeName(c.dtype));
}

// A group: row tiles [tile0, tile0 + tiles) of (batch, kv head) sharing each
// K/V load, in one split, on one core.
struct Group {
  int64_t batch = 0, kv_head = 0, tile0 = 0, tiles = 0;
  int split = 0;
};

// One step as the core lowers it.
struct Work {
  AttentionStep step;
  int64_t group = 0;                                     // index among the core's groups
  int r = 0;                                             // row tile within the group
  int64_t load = 0;                                      // K/V load index on the core
  int64_t load_tile0 = 0, load_key0 = 0, load_keys = 0;  // the KV tiles and keys it holds
  int64_t masked_index = -1;
  int64_t row_step = 0;  // steps of this row tile so far (m slot parity)
  bool first_of_load = false, last_of_load = false;
  bool first_of_group = false, last_of_group = false;
  bool first_in_row = false, last_in_row = false;
};

// The (row tile, KV tile) steps of `groups`, in program order.
std::vector<Work> Schedule(const AttentionPlan& plan, const std::vector<Group>& groups, int core) {
  const AttentionConfig& c = plan.config;
  const int64_t t = c.kv_tile;
  std::vector<Work> out;
  int64_t load = 0, masked = 0;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Group& gr = groups[gi];
    const int64_t u0 = gr.split * plan.split_keys / t;
    const int64_t u1 = std::min(plan.kv_tiles, (gr.split + 1) * plan.split_keys / t);
    const size_t group_begin = out.size();
    std::vector<int64_t> row_steps(static_cast<size_t>(gr.tiles), 0);
    // A K/V load holds up to kv_load_tiles consecutive tiles: from the
    // first to the last one a row tile of the group needs.
    for (int64_t ub = u0; ub < u1; ub += plan.kv_load_tiles) {
      const size_t load_begin = out.size();
      for (int64_t u = ub; u < std::min(u1, ub + plan.kv_load_tiles); ++u) {
        const int64_t k0 = u * t, k1 = std::min(c.kv_seq, k0 + t);
        for (int64_t r = 0; r < gr.tiles; ++r) {
          const int64_t row0 = (gr.tile0 + r) * kRowTile;
          const int64_t rows = std::min(kRowTile, plan.rows - row0);
          const TileNeed need = Need(c, plan.group_heads, row0, rows, k0, k1);
          if (!need.any) continue;
          Work w;
          w.step = {core, gr.batch, gr.kv_head, row0, rows, gr.split, u, k0, k1 - k0, need.masked};
          w.group = static_cast<int64_t>(gi);
          w.r = static_cast<int>(r);
          w.load = load;
          w.masked_index = need.masked ? masked++ : -1;
          w.row_step = row_steps[static_cast<size_t>(r)]++;
          w.first_in_row = w.row_step == 0;
          out.push_back(w);
        }
      }
      if (out.size() > load_begin) {
        out[load_begin].first_of_load = true;
        out.back().last_of_load = true;
        const int64_t first = out[load_begin].step.tile, last = out.back().step.tile;
        for (size_t k = load_begin; k < out.size(); ++k) {
          out[k].load_tile0 = first;
          out[k].load_key0 = first * t;
          out[k].load_keys = std::min(c.kv_seq, (last + 1) * t) - first * t;
        }
        ++load;
      }
    }
    if (out.size() > group_begin) {
      out[group_begin].first_of_group = true;
      out.back().last_of_group = true;
      // The last step of each row tile finalizes it.
      std::vector<bool> seen(static_cast<size_t>(gr.tiles), false);
      for (size_t i = out.size(); i-- > group_begin;) {
        if (!seen[static_cast<size_t>(out[i].r)]) {
          seen[static_cast<size_t>(out[i].r)] = true;
          out[i].last_in_row = true;
        }
      }
    }
  }
  return out;
}

struct HbmOperands {
  BufferId q = -1, k = -1, v = -1, o = -1, q_scale = -1, k_scale = -1, v_scale = -1;
  BufferId partials = -1;  // decode split: (m, l, acc) of core 1 per row tile
};

class CoreAttention {
 public:
  CoreAttention(Program& p, const AttentionPlan& plan, int core, const std::vector<Group>& groups,
                const HbmOperands& hbm, SemId partials_ready)
      : p_(p),
        plan_(plan),
        c_(plan.config),
        core_(core),
        groups_(groups),
        hbm_(hbm),
        partials_ready_(partials_ready) {}

  // Allocates the core's buffers (for the exp-engine choice too).
  Status Allocate();
  // Vector and Scalar cycles of one full step with exp on VectorE or not.
  std::pair<int64_t, int64_t> StepCycles(bool vector_exp) const;
  // Core 0 of a decode split: the order in which core 1 hands over its row
  // tiles, indexed by group * tiles_per_load + row tile.
  void SetPartialRank(std::vector<int64_t> rank) { partial_rank_ = std::move(rank); }
  Status Emit(bool vector_exp, std::vector<AttentionStep>* steps, int64_t* loads);

 private:
  bool Mx() const { return c_.dtype == MatmulDtype::kMxfp8; }
  bool SplitMode() const { return c_.kv_splits > 1; }
  int64_t Mq(int64_t rows) const { return Mx() ? RoundUp(rows, 2) : rows; }
  Status Append(EngineKind e, Instruction in) { return p_.Append(p_.EngineStream(core_, e), in); }
  Instruction Vec(Opcode op, BufferId dst, BufferId src, int parts, int64_t n, ElemType in,
                  ElemType out, BufferId src1 = -1) const {
    return Instruction::Elementwise(op, dst, src, parts, n, in, out, src1);
  }
  // Instruction templates of a step (also used for the cost estimate).
  Instruction RowMax(const Work& w, bool from_sbuf) const;
  Instruction Exp(const Work& w, bool vector_exp, bool from_sbuf) const;
  Instruction Alpha(bool vector_exp) const;
  Instruction PtEvacuate(const Work& w) const;
  Instruction AccUpdate(const Work& w) const;
  Instruction Tiny(Opcode op, AluOp alu) const;
  // Vector and Scalar cycles of a full step without the P^T copy, and the
  // engine that copies P^T: the one that then finishes first.
  std::pair<int64_t, int64_t> BaseCycles(bool vector_exp) const;
  EngineKind EvacEngine(bool vector_exp) const;
  Work FullStep() const {
    Work w;
    w.step.rows = std::min(kRowTile, plan_.rows);
    w.step.keys = c_.kv_tile;
    return w;
  }

  Status Stage0(const Work& w, int64_t i, bool vector_exp);
  Status Stage1(const Work& w, int64_t i, bool vector_exp);
  Status Stage2(const Work& w, int64_t i);
  Status Finalize(const Work& w, int64_t i);

  Program& p_;
  const AttentionPlan& plan_;
  const AttentionConfig& c_;
  int core_;
  const std::vector<Group>& groups_;
  HbmOperands hbm_;
  SemId partials_ready_;
  int64_t kq_ = 1, k_tile_ = 128, pv_chunk_ = 128, eb_ = 2;
  int kparts_ = 128;
  // SBUF / PSUM.
  std::vector<BufferId> q_, q_scale_;  // [set * R + r]
  std::vector<BufferId> k_, k_scale_, v_, v_scale_;
  std::array<BufferId, 2> s_ps_{}, s_sb_{}, mask_{}, prob_{}, pt_ps_{}, pt_sb_{}, pt_scale_{},
      pv_ps_{}, out_{}, remote_{};
  std::vector<BufferId> state_;  // [set * R + r]: acc[D], m[2], l (FP32)
  BufferId tmp_ = -1;            // m_t, m_new, alpha, row sum, 1/l (FP32) per partition
  // A group's (m, l, acc) live from its first step's memset to its finalize
  // kPipe - 1 steps after its last step, and every group has a step: kPipe
  // sets rotated by group never overlap, and VectorE's in-order stream
  // orders each reuse after the previous finalize.
  int64_t state_sets_ = kPipe;
  // Semaphores and queues.
  SemId q_ready_ = -1, q_free_ = -1, k_ready_ = -1, v_ready_ = -1, k_free_ = -1, v_free_ = -1,
        s_done_ = -1, mask_ready_ = -1, mask_used_ = -1, m_ready_ = -1, p_ready_ = -1,
        pt_done_ = -1, pt_evac_ = -1, pv_done_ = -1, acc_done_ = -1, fin_done_ = -1, stored_ = -1,
        partial_stored_ = -1, remote_ready_ = -1, m_comb_ = -1, w_ready_ = -1, comb_done_ = -1;
  StreamId q_q_ = -1, q_k_ = -1, q_v_ = -1, q_store_ = -1, q_x_ = -1;
  // Counters.
  int64_t q_loads_ = 0;              // Q^T group loads issued
  int64_t q_signals_ = 0;            // q_ready increments so far
  std::vector<int64_t> q_ready_at_;  // per group: q_ready once its Q^T has landed
  int64_t stores_ = 0, partials_ = 0, combines_ = 0;
  std::vector<int64_t> state_stored_;  // per state slot: partial_stored count to wait for
  std::vector<int64_t> partial_rank_;
  EngineKind evac_engine_ = EngineKind::kVector;
};

Status CoreAttention::Allocate() {
  const Machine& m = p_.machine();
  const MatmulDtype d = c_.dtype;
  const int64_t dd = c_.head_dim, t = c_.kv_tile;
  const int64_t r_tiles = c_.tiles_per_load;
  const int64_t mq = Mq(std::min(kRowTile, plan_.rows));
  k_tile_ = MatmulMaxK(m, d);
  kq_ = CeilDiv(dd, k_tile_);
  pv_chunk_ = Mx() ? MatmulMaxK(m, d) : kTransposeKeys;
  eb_ = Mx() ? 1 : 2;
  kparts_ = TensorOperandPartitions(
      m, d, Mx() ? RoundUp(std::min(dd, k_tile_), 128) : std::min(dd, k_tile_));
  const std::string c = "core" + std::to_string(core_) + ".";
  auto sb = [&](const std::string& name, int64_t bytes) {
    return p_.AllocSbuf(core_, c + name, bytes);
  };
  auto ps = [&](const std::string& name, int64_t bytes) {
    return p_.AllocPsum(core_, c + name, bytes);
  };
  auto idx = [](const char* n, int64_t i) {
    return std::string(n) + "[" + std::to_string(i) + "]";
  };
  for (int64_t s = 0; s < 2 * r_tiles; ++s) {
    BufferId b;
    TRY_ASSIGN(b, sb(idx("q_t", s), kq_ * TensorOperandBytesPerPartition(m, d, mq)));
    q_.push_back(b);
    if (Mx()) {
      TRY_ASSIGN(b, sb(idx("q_t_scale", s), kq_ * MxScaleBytesPerPartition(mq)));
      q_scale_.push_back(b);
    }
  }
  const int64_t v_chunks = CeilDiv(t, pv_chunk_);
  const int64_t lt = plan_.kv_load_tiles;
  for (int s = 0; s < c_.kv_buffers; ++s) {
    BufferId b;
    TRY_ASSIGN(b, sb(idx("k_t", s), kq_ * TensorOperandBytesPerPartition(m, d, t * lt)));
    k_.push_back(b);
    TRY_ASSIGN(b, sb(idx("v", s), lt * v_chunks * TensorOperandBytesPerPartition(m, d, dd)));
    v_.push_back(b);
    if (Mx()) {
      TRY_ASSIGN(b, sb(idx("k_t_scale", s), kq_ * MxScaleBytesPerPartition(t * lt)));
      k_scale_.push_back(b);
      TRY_ASSIGN(b, sb(idx("v_scale", s), lt * v_chunks * MxScaleBytesPerPartition(dd)));
      v_scale_.push_back(b);
    }
  }
  const int64_t t_chunks = CeilDiv(t, kTransposeKeys);
  for (int s = 0; s < 2; ++s) {
    TRY_ASSIGN(s_sb_[s], sb(idx("s_masked", s), 4 * t));
    TRY_ASSIGN(mask_[s], sb(idx("mask", s), 4 * t));
    // P (BF16); the transposes read it 4 bytes per element (program.h).
    TRY_ASSIGN(prob_[s], sb(idx("p", s), 4 * t));
    TRY_ASSIGN(pt_sb_[s], sb(idx("p_t", s), (Mx() ? v_chunks : t_chunks) *
                                                TensorOperandBytesPerPartition(m, d, mq)));
    if (Mx()) {
      TRY_ASSIGN(pt_scale_[s], sb(idx("p_t_scale", s), v_chunks * MxScaleBytesPerPartition(mq)));
    }
    TRY_ASSIGN(out_[s], sb(idx("o_out", s), 2 * dd));
    if (SplitMode() && core_ == 0) TRY_ASSIGN(remote_[s], sb(idx("partial_in", s), 4 * dd + 12));
  }
  for (int64_t s = 0; s < state_sets_ * r_tiles; ++s) {
    BufferId b;
    TRY_ASSIGN(b, sb(idx("state", s), 4 * dd + 12));
    state_.push_back(b);
  }
  state_stored_.assign(state_.size(), 0);
  TRY_ASSIGN(tmp_, sb("softmax_tmp", 64));
  for (int s = 0; s < 2; ++s) {
    TRY_ASSIGN(s_ps_[s], ps(idx("scores", s), 4 * t));
    // Transposes write 4 bytes per element (program.h); QuantizeMX reads
    // the BF16 P^T of every 512-key chunk.
    TRY_ASSIGN(pt_ps_[s],
               ps(idx("p_t_psum", s), std::max(t_chunks * 4 * mq, Mx() ? v_chunks * 8 * mq : 0)));
    TRY_ASSIGN(pv_ps_[s], ps(idx("pv", s), 4 * dd));
  }
  return OkStatus();
}

Instruction CoreAttention::RowMax(const Work& w, bool from_sbuf) const {
  Instruction in =
      Vec(Opcode::kTensorReduce, tmp_, from_sbuf ? s_sb_[0] : s_ps_[0],
          static_cast<int>(w.step.rows), w.step.keys, ElemType::kFp32, ElemType::kFp32);
  in.alu = AluOp::kMax;
  return in;
}

Instruction CoreAttention::Exp(const Work& w, bool vector_exp, bool from_sbuf) const {
  Instruction in = Vec(vector_exp ? Opcode::kExponential : Opcode::kActivation, prob_[0],
                       from_sbuf ? s_sb_[0] : s_ps_[0], static_cast<int>(w.step.rows), w.step.keys,
                       ElemType::kFp32, ElemType::kBf16, tmp_);
  in.act = ActFunc::kExp;
  in.accumulate = true;  // the fused row sum
  in.src1_offset = 12;
  return in;
}

Instruction CoreAttention::Alpha(bool vector_exp) const {
  Instruction in = Vec(vector_exp ? Opcode::kExponential : Opcode::kActivation, tmp_, tmp_, 128, 1,
                       ElemType::kFp32, ElemType::kFp32);
  in.act = ActFunc::kExp;
  in.dependent = true;
  in.dst_offset = 8;
  return in;
}

Instruction CoreAttention::Tiny(Opcode op, AluOp alu) const {
  Instruction in = Vec(op, tmp_, tmp_, 128, 1, ElemType::kFp32, ElemType::kFp32,
                       op == Opcode::kTensorTensor ? tmp_ : -1);
  in.alu = alu;
  in.dependent = true;
  return in;
}

Instruction CoreAttention::PtEvacuate(const Work& w) const {
  const int64_t mq = Mq(w.step.rows);
  if (Mx()) {
    // P^T [keys, mq] to MXFP8 along the keys (the PV contraction).
    return Vec(Opcode::kQuantizeMx, pt_sb_[0], pt_ps_[0], 128,
               CeilDiv(w.step.keys, pv_chunk_) * 4 * mq, ElemType::kBf16, ElemType::kFp8,
               pt_scale_[0]);
  }
  return Vec(Opcode::kTensorCopy, pt_sb_[0], pt_ps_[0], 128,
             CeilDiv(w.step.keys, kTransposeKeys) * mq, ElemType::kBf16, ElemType::kBf16);
}

Instruction CoreAttention::AccUpdate(const Work& w) const {
  // acc = acc * alpha + PV (scalar_tensor_tensor; one input in PSUM).
  Instruction in = Vec(Opcode::kTensorTensor, state_[0], state_[0], static_cast<int>(w.step.rows),
                       c_.head_dim, ElemType::kFp32, ElemType::kFp32, pv_ps_[0]);
  in.alu = AluOp::kAdd;
  return in;
}

std::pair<int64_t, int64_t> CoreAttention::BaseCycles(bool vector_exp) const {
  const Work w = FullStep();
  const EngineKind v = EngineKind::kVector, s = EngineKind::kScalar;
  int64_t vec = ElementwiseCycles(p_, v, RowMax(w, false)) +
                ElementwiseCycles(p_, v, Tiny(Opcode::kTensorTensor, AluOp::kMax)) +
                ElementwiseCycles(p_, v, Tiny(Opcode::kTensorTensor, AluOp::kAdd)) +
                ElementwiseCycles(p_, v, AccUpdate(w));
  int64_t sca = 0;
  (vector_exp ? vec : sca) += ElementwiseCycles(p_, vector_exp ? v : s, Alpha(vector_exp)) +
                              ElementwiseCycles(p_, vector_exp ? v : s, Exp(w, vector_exp, false));
  return {vec, sca};
}

EngineKind CoreAttention::EvacEngine(bool vector_exp) const {
  if (Mx()) return EngineKind::kVector;  // QuantizeMX is VectorE's
  const Machine& m = p_.machine();
  const auto [vec, sca] = BaseCycles(vector_exp);
  const Instruction ev = PtEvacuate(FullStep());
  const int64_t on_v =
      CyclesToPs(vec + ElementwiseCycles(p_, EngineKind::kVector, ev), m.vector.clock_hz.value);
  const int64_t on_s =
      CyclesToPs(sca + ElementwiseCycles(p_, EngineKind::kScalar, ev), m.scalar.clock_hz.value);
  return on_v <= on_s ? EngineKind::kVector : EngineKind::kScalar;
}

std::pair<int64_t, int64_t> CoreAttention::StepCycles(bool vector_exp) const {
  auto [vec, sca] = BaseCycles(vector_exp);
  const EngineKind e = EvacEngine(vector_exp);
  (e == EngineKind::kVector ? vec : sca) += ElementwiseCycles(p_, e, PtEvacuate(FullStep()));
  return {vec, sca};
}

Status CoreAttention::Emit(bool vector_exp, std::vector<AttentionStep>* steps, int64_t* loads) {
  evac_engine_ = EvacEngine(vector_exp);
  auto sem = [&](const char* name, SemId& id) -> Status {
    StatusOr<SemId> s = p_.AddSemaphore(core_, name);
    if (!s.ok()) return s.status();
    id = *s;
    return OkStatus();
  };
  for (auto [name, id] :
       std::initializer_list<std::pair<const char*, SemId*>>{{"q_ready", &q_ready_},
                                                             {"q_free", &q_free_},
                                                             {"k_ready", &k_ready_},
                                                             {"v_ready", &v_ready_},
                                                             {"k_free", &k_free_},
                                                             {"v_free", &v_free_},
                                                             {"s_done", &s_done_},
                                                             {"mask_ready", &mask_ready_},
                                                             {"mask_used", &mask_used_},
                                                             {"m_ready", &m_ready_},
                                                             {"p_ready", &p_ready_},
                                                             {"pt_done", &pt_done_},
                                                             {"pt_evac", &pt_evac_},
                                                             {"pv_done", &pv_done_},
                                                             {"acc_done", &acc_done_},
                                                             {"fin_done", &fin_done_},
                                                             {"stored", &stored_},
                                                             {"partial_stored", &partial_stored_},
                                                             {"remote_ready", &remote_ready_},
                                                             {"m_comb", &m_comb_},
                                                             {"w_ready", &w_ready_},
                                                             {"comb_done", &comb_done_}}) {
    TRY(sem(name, *id));
  }
  TRY_ASSIGN(q_q_, p_.AddDmaQueue(core_, "load_q"));
  TRY_ASSIGN(q_k_, p_.AddDmaQueue(core_, "load_k"));
  TRY_ASSIGN(q_v_, p_.AddDmaQueue(core_, "load_v"));
  TRY_ASSIGN(q_store_, p_.AddDmaQueue(core_, "store"));
  if (SplitMode() && core_ == 0) TRY_ASSIGN(q_x_, p_.AddDmaQueue(core_, "exchange"));

  const std::vector<Work> work = Schedule(plan_, groups_, core_);
  q_ready_at_.assign(groups_.size(), 0);
  const int64_t n = static_cast<int64_t>(work.size());
  for (int64_t t = 0; t < n + kPipe - 1; ++t) {
    if (t < n) TRY(Stage0(work[static_cast<size_t>(t)], t, vector_exp));
    if (t >= 1 && t - 1 < n) TRY(Stage1(work[static_cast<size_t>(t - 1)], t - 1, vector_exp));
    if (t >= 2 && t - 2 < n) TRY(Stage2(work[static_cast<size_t>(t - 2)], t - 2));
  }
  for (const Work& w : work) steps->push_back(w.step);
  *loads += work.empty() ? 0 : work.back().load + 1;
  return OkStatus();
}

Status CoreAttention::Stage0(const Work& w, int64_t i, bool vector_exp) {
  const Machine& m = p_.machine();
  const MatmulDtype d = c_.dtype;
  const int64_t dd = c_.head_dim, G = plan_.group_heads;
  const Group& gr = groups_[static_cast<size_t>(w.group)];
  const int64_t rt = c_.tiles_per_load;
  const int set = static_cast<int>(w.group % 2);
  const int64_t mq = Mq(w.step.rows);
  const int slot = static_cast<int>(w.load % c_.kv_buffers);
  const int64_t kn = Mx() ? 2 : 1;  // transfers per operand load (data, scales)
  // Q^T of the group's row tiles, double-buffered by group.
  if (w.first_of_group) {
    std::vector<SemWait> waits;
    if (q_loads_ >= 2) waits.push_back({q_free_, q_loads_ - 1});
    for (int64_t r = 0; r < gr.tiles; ++r) {
      const int64_t row0 = (gr.tile0 + r) * kRowTile;
      const int64_t rows = std::min(kRowTile, plan_.rows - row0);
      const int64_t head = gr.kv_head * G + row0 % G, q0 = row0 / G;
      const int64_t elem = ((gr.batch * c_.heads + head) * c_.seq + q0) * dd;
      const int64_t bytes = rows * dd * eb_;
      const int64_t total = c_.batch * c_.heads * c_.seq * dd;
      // Strided rows (query-major over heads) moved as one transfer; the
      // offset is clamped into Q (strides are not modelled).
      Instruction ld = Instruction::DmaCopy(hbm_.q, q_[static_cast<size_t>(set * rt + r)], bytes,
                                            kparts_, std::min(elem * eb_, total * eb_ - bytes));
      ld.waits = waits;
      ld.signals = {{q_ready_, 1}};
      TRY(p_.Append(q_q_, ld));
      ++q_signals_;
      if (Mx()) {
        const int64_t sbytes = rows * dd / 32;
        Instruction sc =
            Instruction::DmaCopy(hbm_.q_scale, q_scale_[static_cast<size_t>(set * rt + r)], sbytes,
                                 kparts_, std::min(elem / 32, total / 32 - sbytes));
        sc.waits = waits;
        sc.signals = {{q_ready_, 1}};
        TRY(p_.Append(q_q_, sc));
        ++q_signals_;
      }
    }
    ++q_loads_;
    q_ready_at_[static_cast<size_t>(w.group)] = q_signals_;
  }
  // K^T and V of the KV tile, once per group.
  if (w.first_of_load) {
    // K is free once QK^T has read it, V once PV has: separate semaphores,
    // so that a K load never waits for a PV that TensorE runs after the
    // QK^T that needs the load.
    std::vector<SemWait> waits, v_waits;
    if (w.load >= c_.kv_buffers) {
      waits.push_back({k_free_, w.load - c_.kv_buffers + 1});
      v_waits.push_back({v_free_, w.load - c_.kv_buffers + 1});
    }
    const int64_t elem = ((gr.batch * c_.kv_heads + gr.kv_head) * c_.kv_seq + w.load_key0) * dd;
    const int64_t bytes = w.load_keys * dd * eb_;
    Instruction k =
        Instruction::DmaCopy(hbm_.k, k_[static_cast<size_t>(slot)], bytes, kparts_, elem * eb_);
    k.waits = waits;
    k.signals = {{k_ready_, 1}};
    TRY(p_.Append(q_k_, k));
    const int v_parts = TensorOperandPartitions(
        m, d,
        Mx() ? RoundUp(std::min(w.load_keys, pv_chunk_), 128) : std::min(w.load_keys, pv_chunk_));
    Instruction v =
        Instruction::DmaCopy(hbm_.v, v_[static_cast<size_t>(slot)], bytes, v_parts, elem * eb_);
    v.waits = v_waits;
    v.signals = {{v_ready_, 1}};
    TRY(p_.Append(q_v_, v));
    if (Mx()) {
      Instruction ks = Instruction::DmaCopy(hbm_.k_scale, k_scale_[static_cast<size_t>(slot)],
                                            bytes / 32, kparts_, elem / 32);
      ks.waits = waits;
      ks.signals = {{k_ready_, 1}};
      TRY(p_.Append(q_k_, ks));
      Instruction vs = Instruction::DmaCopy(hbm_.v_scale, v_scale_[static_cast<size_t>(slot)],
                                            bytes / 32, v_parts, elem / 32);
      vs.waits = v_waits;
      vs.signals = {{v_ready_, 1}};
      TRY(p_.Append(q_v_, vs));
    }
  }
  // GpSimdE: the mask of a tile it cuts (an additive -inf pattern).
  const bool masked = w.masked_index >= 0;
  if (masked) {
    Instruction mk =
        Vec(Opcode::kIota, mask_[static_cast<size_t>(w.masked_index % 2)], -1,
            static_cast<int>(w.step.rows), w.step.keys, ElemType::kFp32, ElemType::kFp32);
    if (w.masked_index >= 2) mk.waits.push_back({mask_used_, w.masked_index - 1});
    mk.signals = {{mask_ready_, 1}};
    TRY(Append(EngineKind::kGpSimd, mk));
  }
  // TensorE: S = Q K^T, D in chunks of the matmul K tile.
  const BufferId s_ps = s_ps_[static_cast<size_t>(i % 2)];
  const BufferId q_buf = q_[static_cast<size_t>(set * rt + w.r)];
  for (int64_t j = 0; j < kq_; ++j) {
    const int64_t kc = std::min(k_tile_, dd - j * k_tile_);
    const int64_t km = Mx() ? RoundUp(kc, 128) : kc;
    Instruction ls = Instruction::LoadStationary(
        q_buf, d, km, mq, Mx() ? q_scale_[static_cast<size_t>(set * rt + w.r)] : -1);
    ls.src_offset = j * TensorOperandBytesPerPartition(m, d, mq);
    if (Mx()) ls.src1_offset = j * MxScaleBytesPerPartition(mq);
    if (j == 0) {
      ls.waits.push_back({q_ready_, q_ready_at_[static_cast<size_t>(w.group)]});
      ls.waits.push_back({k_ready_, (w.load + 1) * kn});
      if (i >= 2) ls.waits.push_back({p_ready_, i - 1});  // S slot read by exp(i - 2)
    }
    TRY(Append(EngineKind::kTensor, ls));
    Instruction mm =
        Instruction::MultiplyMoving(k_[static_cast<size_t>(slot)], s_ps, d, km, mq, w.step.keys,
                                    j > 0, Mx() ? k_scale_[static_cast<size_t>(slot)] : -1);
    // K^T [chunk j][keys of the load]; this tile's keys from its place in the load.
    const int64_t in_load = w.step.tile - w.load_tile0;
    mm.src_offset = j * TensorOperandBytesPerPartition(m, d, c_.kv_tile * plan_.kv_load_tiles) +
                    in_load * TensorOperandBytesPerPartition(m, d, c_.kv_tile);
    if (Mx()) {
      mm.src1_offset = j * MxScaleBytesPerPartition(c_.kv_tile * plan_.kv_load_tiles) +
                       in_load * MxScaleBytesPerPartition(c_.kv_tile);
    }
    if (j == kq_ - 1) {
      mm.signals = {{s_done_, 1}};
      if (w.last_of_group) mm.signals.push_back({q_free_, 1});
      if (w.last_of_load) mm.signals.push_back({k_free_, 1});
    }
    TRY(Append(EngineKind::kTensor, mm));
  }
  // VectorE: new state (acc = 0, m = -inf, l = 0) for the row tile's first step.
  const size_t state = static_cast<size_t>((w.group % state_sets_) * rt + w.r);
  if (w.first_in_row) {
    Instruction ms = Vec(Opcode::kMemset, state_[state], -1, static_cast<int>(w.step.rows), dd + 3,
                         ElemType::kFp32, ElemType::kFp32);
    if (state_stored_[state] > 0) ms.waits.push_back({partial_stored_, state_stored_[state]});
    TRY(Append(EngineKind::kVector, ms));
  }
  // VectorE: masked scores S + mask into SBUF; row max; m_new.
  const BufferId s_sb = s_sb_[static_cast<size_t>(i % 2)];
  if (masked) {
    Instruction add =
        Vec(Opcode::kTensorTensor, s_sb, s_ps, static_cast<int>(w.step.rows), w.step.keys,
            ElemType::kFp32, ElemType::kFp32, mask_[static_cast<size_t>(w.masked_index % 2)]);
    add.waits = {{s_done_, i + 1}, {mask_ready_, w.masked_index + 1}};
    add.signals = {{mask_used_, 1}};
    TRY(Append(EngineKind::kVector, add));
  }
  Instruction mx = RowMax(w, masked);
  mx.src0 = masked ? s_sb : s_ps;
  if (!masked) mx.waits = {{s_done_, i + 1}};
  TRY(Append(EngineKind::kVector, mx));
  Instruction mnew = Tiny(Opcode::kTensorTensor, AluOp::kMax);
  mnew.src1 = state_[state];
  mnew.src1_offset = 4 * dd + 4 * (w.row_step % 2);
  mnew.partitions = static_cast<int>(w.step.rows);
  mnew.signals = {{m_ready_, 1}};
  TRY(Append(EngineKind::kVector, mnew));
  // exp: alpha = exp(m - m_new), P = exp(S - m_new) with the row sum.
  const EngineKind e = vector_exp ? EngineKind::kVector : EngineKind::kScalar;
  Instruction alpha = Alpha(vector_exp);
  alpha.partitions = static_cast<int>(w.step.rows);
  if (!vector_exp) alpha.waits = {{m_ready_, i + 1}};
  TRY(Append(e, alpha));
  Instruction ex = Exp(w, vector_exp, masked);
  ex.src0 = masked ? s_sb : s_ps;
  ex.dst = prob_[static_cast<size_t>(i % 2)];
  if (i >= 2) ex.waits.push_back({pt_done_, i - 1});  // P slot transposed by step i - 2
  ex.signals = {{p_ready_, 1}};
  TRY(Append(e, ex));
  return OkStatus();
}

Status CoreAttention::Stage1(const Work& w, int64_t i, bool vector_exp) {
  const int64_t mq = Mq(w.step.rows);
  const int64_t rt = c_.tiles_per_load;
  const size_t state = static_cast<size_t>((w.group % state_sets_) * rt + w.r);
  // VectorE: l = l alpha + row sum.
  Instruction l = Tiny(Opcode::kTensorTensor, AluOp::kAdd);
  l.partitions = static_cast<int>(w.step.rows);
  l.dst = state_[state];
  l.dst_offset = 4 * c_.head_dim + 8;
  if (!vector_exp) l.waits = {{p_ready_, i + 1}};
  TRY(Append(EngineKind::kVector, l));
  // TensorE: P^T, 128 keys per transpose.
  const int64_t chunks = CeilDiv(w.step.keys, kTransposeKeys);
  for (int64_t ch = 0; ch < chunks; ++ch) {
    const int64_t keys = std::min(kTransposeKeys, w.step.keys - ch * kTransposeKeys);
    Instruction tr = Instruction::Transpose(prob_[static_cast<size_t>(i % 2)],
                                            pt_ps_[static_cast<size_t>(i % 2)],
                                            static_cast<int>(w.step.rows), keys);
    tr.src_offset = 4 * ch * kTransposeKeys;
    tr.dst_offset = ch * 4 * mq;
    if (ch == 0) {
      tr.waits.push_back({p_ready_, i + 1});
      if (i >= 2) tr.waits.push_back({pt_evac_, i - 1});  // PSUM slot copied out by step i - 2
    }
    if (ch == chunks - 1) tr.signals = {{pt_done_, 1}};
    TRY(Append(EngineKind::kTensor, tr));
  }
  // P^T to SBUF (BF16 copy, or MXFP8 by QuantizeMX).
  Instruction ev = PtEvacuate(w);
  ev.src0 = pt_ps_[static_cast<size_t>(i % 2)];
  ev.dst = pt_sb_[static_cast<size_t>(i % 2)];
  if (Mx()) ev.src1 = pt_scale_[static_cast<size_t>(i % 2)];
  ev.waits = {{pt_done_, i + 1}};
  if (i >= 2) ev.waits.push_back({pv_done_, i - 1});  // SBUF slot read by PV(i - 2)
  ev.signals = {{pt_evac_, 1}};
  TRY(Append(Mx() ? EngineKind::kVector : evac_engine_, ev));
  return OkStatus();
}

Status CoreAttention::Stage2(const Work& w, int64_t i) {
  const Machine& m = p_.machine();
  const MatmulDtype d = c_.dtype;
  const int64_t mq = Mq(w.step.rows);
  const int slot = static_cast<int>(w.load % c_.kv_buffers);
  const int64_t kn = Mx() ? 2 : 1;
  // TensorE: P V, accumulated over key chunks in PSUM.
  const int64_t chunks = CeilDiv(w.step.keys, pv_chunk_);
  for (int64_t ch = 0; ch < chunks; ++ch) {
    const int64_t keys = std::min(pv_chunk_, w.step.keys - ch * pv_chunk_);
    const int64_t km = Mx() ? RoundUp(keys, 128) : keys;
    Instruction ls = Instruction::LoadStationary(pt_sb_[static_cast<size_t>(i % 2)], d, km, mq,
                                                 Mx() ? pt_scale_[static_cast<size_t>(i % 2)] : -1);
    ls.src_offset = ch * TensorOperandBytesPerPartition(m, d, mq);
    if (Mx()) ls.src1_offset = ch * MxScaleBytesPerPartition(mq);
    if (ch == 0) {
      ls.waits = {{pt_evac_, i + 1}, {v_ready_, (w.load + 1) * kn}};
      if (i >= 2) ls.waits.push_back({acc_done_, i - 1});  // PV slot read by step i - 2
    }
    TRY(Append(EngineKind::kTensor, ls));
    Instruction mm = Instruction::MultiplyMoving(
        v_[static_cast<size_t>(slot)], pv_ps_[static_cast<size_t>(i % 2)], d, km, mq, c_.head_dim,
        ch > 0, Mx() ? v_scale_[static_cast<size_t>(slot)] : -1);
    // V chunks of pv_chunk keys, in key order over the load.
    const int64_t chunk = (w.step.tile - w.load_tile0) * CeilDiv(c_.kv_tile, pv_chunk_) + ch;
    mm.src_offset = chunk * TensorOperandBytesPerPartition(m, d, c_.head_dim);
    if (Mx()) mm.src1_offset = chunk * MxScaleBytesPerPartition(c_.head_dim);
    if (ch == chunks - 1) {
      mm.signals = {{pv_done_, 1}};
      if (w.last_of_load) mm.signals.push_back({v_free_, 1});
    }
    TRY(Append(EngineKind::kTensor, mm));
  }
  // VectorE: acc = acc alpha + P V.
  const size_t state = static_cast<size_t>((w.group % state_sets_) * c_.tiles_per_load + w.r);
  Instruction acc = AccUpdate(w);
  acc.dst = acc.src0 = state_[state];
  acc.src1 = pv_ps_[static_cast<size_t>(i % 2)];
  acc.waits = {{pv_done_, i + 1}};
  acc.signals = {{acc_done_, 1}};
  TRY(Append(EngineKind::kVector, acc));
  if (w.last_in_row) TRY(Finalize(w, i));
  return OkStatus();
}

Status CoreAttention::Finalize(const Work& w, int64_t i) {
  const int64_t dd = c_.head_dim, G = plan_.group_heads;
  const Group& gr = groups_[static_cast<size_t>(w.group)];
  const size_t state = static_cast<size_t>((w.group % state_sets_) * c_.tiles_per_load + w.r);
  const int rows = static_cast<int>(w.step.rows);
  const int64_t row_index = (gr.batch * c_.kv_heads + gr.kv_head) * plan_.row_tiles +
                            w.step.row0 / kRowTile;  // partial slot in HBM
  const int64_t partial_bytes = kRowTile * (4 * dd + 12);
  if (SplitMode() && core_ != 0) {
    // Core 1: (m, l, acc) to HBM; core 0 combines.
    Instruction st = Instruction::DmaCopy(state_[state], hbm_.partials, rows * (4 * dd + 12), rows,
                                          0, row_index * partial_bytes);
    st.waits = {{acc_done_, i + 1}};
    st.signals = {{partial_stored_, 1}, {partials_ready_, 1}};
    TRY(p_.Append(q_store_, st));
    state_stored_[state] = ++partials_;
    return OkStatus();
  }
  if (SplitMode()) {
    // Core 0: load core 1's state of this row tile and combine (step 5).
    const int64_t k = combines_++;
    const size_t rs = static_cast<size_t>(k % 2);
    Instruction ld = Instruction::DmaCopy(hbm_.partials, remote_[rs], rows * (4 * dd + 12), rows,
                                          row_index * partial_bytes, 0);
    // Core 1 hands its row tiles over in its own finalize order.
    const int64_t rank = partial_rank_[static_cast<size_t>(w.group * c_.tiles_per_load + w.r)];
    ld.waits = {{partials_ready_, rank + 1}};
    if (k >= 2) ld.waits.push_back({comb_done_, k - 1});
    ld.signals = {{remote_ready_, 1}};
    TRY(p_.Append(q_x_, ld));
    Instruction mmax = Tiny(Opcode::kTensorTensor, AluOp::kMax);
    mmax.partitions = rows;
    mmax.src1 = remote_[rs];
    mmax.waits = {{remote_ready_, k + 1}, {acc_done_, i + 1}};
    mmax.signals = {{m_comb_, 1}};
    TRY(Append(EngineKind::kVector, mmax));
    for (int s = 0; s < 2; ++s) {  // w_s = exp(m_s - M)
      Instruction w_exp = Alpha(false);
      w_exp.partitions = rows;
      if (s == 0) w_exp.waits = {{m_comb_, k + 1}};
      if (s == 1) w_exp.signals = {{w_ready_, 1}};
      TRY(Append(EngineKind::kScalar, w_exp));
    }
    Instruction lsum = Tiny(Opcode::kTensorTensor, AluOp::kAdd);
    lsum.partitions = rows;
    lsum.waits = {{w_ready_, k + 1}};
    TRY(Append(EngineKind::kVector, lsum));
    Instruction a0 = Vec(Opcode::kTensorScalar, state_[state], state_[state], rows, dd,
                         ElemType::kFp32, ElemType::kFp32);
    a0.alu = AluOp::kMultiply;
    TRY(Append(EngineKind::kVector, a0));
    Instruction a1 = Vec(Opcode::kTensorTensor, state_[state], state_[state], rows, dd,
                         ElemType::kFp32, ElemType::kFp32, remote_[rs]);
    a1.alu = AluOp::kAdd;  // A += acc_1 * w_1 (scalar_tensor_tensor)
    a1.signals = {{comb_done_, 1}};
    TRY(Append(EngineKind::kVector, a1));
  }
  // O = acc / l (BF16) and its store.
  Instruction rcp =
      Vec(Opcode::kReciprocal, tmp_, state_[state], rows, 1, ElemType::kFp32, ElemType::kFp32);
  rcp.src_offset = 4 * dd + 8;
  rcp.dst_offset = 16;
  rcp.dependent = true;
  if (!SplitMode()) rcp.waits = {{acc_done_, i + 1}};
  TRY(Append(EngineKind::kVector, rcp));
  const size_t os = static_cast<size_t>(stores_ % 2);
  Instruction o = Vec(Opcode::kTensorScalar, out_[os], state_[state], rows, dd, ElemType::kFp32,
                      ElemType::kBf16);
  o.alu = AluOp::kMultiply;
  if (stores_ >= 2) o.waits = {{stored_, stores_ - 1}};
  o.signals = {{fin_done_, 1}};
  TRY(Append(EngineKind::kVector, o));
  const int64_t head = gr.kv_head * G + w.step.row0 % G, q0 = w.step.row0 / G;
  const int64_t total = c_.batch * c_.heads * c_.seq * dd * 2;
  const int64_t bytes = rows * dd * 2;
  Instruction st = Instruction::DmaCopy(
      out_[os], hbm_.o, bytes, rows, 0,
      std::min(((gr.batch * c_.heads + head) * c_.seq + q0) * dd * 2, total - bytes));
  st.waits = {{fin_done_, stores_ + 1}};
  st.signals = {{stored_, 1}};
  TRY(p_.Append(q_store_, st));
  ++stores_;
  return OkStatus();
}

// Validates `config` and resolves its choices (all but the exp engine).
StatusOr<AttentionPlan> Plan(const Machine& machine, AttentionConfig c) {
  if (c.kv_seq == 0) c.kv_seq = c.seq;
  const std::string what = Describe(c);
  auto bad = [&](const std::string& m) { return InvalidArgumentError(what + ": " + m); };
  if (c.batch < 1 || c.heads < 1 || c.kv_heads < 1 || c.seq < 1 || c.kv_seq < 1 || c.head_dim < 1) {
    return bad("batch, heads, kv_heads, seq, kv_seq and head_dim must be >= 1");
  }
  if (c.heads % c.kv_heads != 0) return bad("heads must be a multiple of kv_heads");
  if (c.head_dim > 512) return bad("head_dim must be <= 512 (P V fills one PSUM bank of FP32)");
  if (c.dtype != MatmulDtype::kBf16 && c.dtype != MatmulDtype::kMxfp8) {
    return bad("dtype must be bf16 or mxfp8");
  }
  if (MacsPerPeCycle(machine, c.dtype) <= 0) {
    return bad("machine " + machine.name + " has no " + std::string(MatmulDtypeName(c.dtype)) +
               " matmul");
  }
  if (c.dtype == MatmulDtype::kMxfp8 && c.head_dim % 32 != 0) {
    return bad("MXFP8 head_dim must be a multiple of the 32-element block");
  }
  if (c.cores < 1 || c.cores > 2 || c.cores > machine.core_count()) {
    return bad("cores must be 1 or 2 (an LNC=2 pair)");
  }
  if (c.window < -1) return bad("window must be >= 0, or -1 for none");
  const int64_t max_tile = static_cast<int64_t>(machine.tensor.max_moving_free.value);
  if (c.kv_tile == 0) c.kv_tile = std::min<int64_t>(512, RoundUp(c.kv_seq, 128));
  if (c.kv_tile % 128 != 0 || c.kv_tile < 128 || c.kv_tile > max_tile) {
    return bad("kv_tile = " + std::to_string(c.kv_tile) + " must be a multiple of 128 in [128, " +
               std::to_string(max_tile) + "] (the moving free size of " + machine.core_name + ")");
  }
  if (c.kv_buffers < 2) return bad("kv_buffers must be >= 2");
  const bool decode = c.seq <= static_cast<int64_t>(trnmx::kAttnDecodeMaxQueries);
  if (c.kv_splits == 0) c.kv_splits = decode ? c.cores : 1;
  if (c.kv_splits != 1 && c.kv_splits != c.cores) {
    return bad("kv_splits = " + std::to_string(c.kv_splits) + " must be 1 or cores (" +
               std::to_string(c.cores) + ")");
  }
  AttentionPlan plan;
  plan.group_heads = c.heads / c.kv_heads;
  plan.rows = plan.group_heads * c.seq;
  plan.row_tiles = CeilDiv(plan.rows, kRowTile);
  plan.kv_tiles = CeilDiv(c.kv_seq, c.kv_tile);
  // The contract's step 3: n_b = min(kv_splits, max(1, ceil(L / kv_tile))),
  // chunk = ceil(L / n_b) rounded up to kv_tile.
  c.kv_splits =
      static_cast<int>(std::min<int64_t>(c.kv_splits, std::max<int64_t>(1, plan.kv_tiles)));
  plan.split_keys = RoundUp(CeilDiv(c.kv_seq, c.kv_splits), c.kv_tile);
  // KV tiles per K/V load: enough for the DMA efficiency knee (4 KiB per
  // partition, trainium.md section 7) on K^T, within a split; one when an
  // MXFP8 tile is not a whole number of 512-key V chunks.
  const int64_t tile_bytes = TensorOperandBytesPerPartition(machine, c.dtype, c.kv_tile);
  const int64_t knee = static_cast<int64_t>(machine.dma.efficiency_knee_bytes_per_partition.value);
  plan.kv_load_tiles = std::clamp<int64_t>(CeilDiv(knee, tile_bytes), 1,
                                           std::max<int64_t>(1, plan.split_keys / c.kv_tile));
  if (c.kv_tile % MatmulMaxK(machine, c.dtype) != 0 && c.dtype == MatmulDtype::kMxfp8) {
    plan.kv_load_tiles = 1;
  }
  if (c.tiles_per_load < 0) return bad("tiles_per_load must be >= 0");
  if (c.tiles_per_load == 0) c.tiles_per_load = std::min(plan.group_heads, plan.row_tiles);
  c.tiles_per_load = std::min(c.tiles_per_load, plan.row_tiles);
  // FLOPs: 4 D per allowed (query, key) pair and query head.
  double pairs = 0;
  for (int64_t i = 0; i < c.seq; ++i) {
    const Span s = Allowed(c, i);
    if (s.hi >= s.lo) pairs += static_cast<double>(s.hi - s.lo + 1);
  }
  plan.flops = 4.0 * static_cast<double>(c.head_dim) * pairs * static_cast<double>(c.heads) *
               static_cast<double>(c.batch);
  plan.config = c;
  return plan;
}

}  // namespace

std::string_view ExpEngineName(ExpEngine e) {
  switch (e) {
    case ExpEngine::kAuto:
      return "auto";
    case ExpEngine::kScalar:
      return "ScalarE";
    case ExpEngine::kVector:
      return "VectorE";
  }
  return "?";
}

namespace {

StatusOr<LoweredAttention> LowerOnce(const Machine& machine, const AttentionConfig& config,
                                     const ProgramOptions& options) {
  StatusOr<AttentionPlan> planned = Plan(machine, config);
  if (!planned.ok()) return planned.status();
  AttentionPlan plan = *planned;
  AttentionConfig& c = plan.config;
  const std::string what = Describe(c);
  // Groups and their cores: the decode split puts split s on core s; else
  // groups go round robin.
  std::vector<std::vector<Group>> per_core(static_cast<size_t>(c.cores));
  int64_t group_count = 0;
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t g = 0; g < c.kv_heads; ++g) {
      for (int64_t t0 = 0; t0 < plan.row_tiles; t0 += c.tiles_per_load) {
        const int64_t tiles = std::min(c.tiles_per_load, plan.row_tiles - t0);
        for (int s = 0; s < c.kv_splits; ++s) {
          const int core = c.kv_splits > 1 ? s : static_cast<int>(group_count % c.cores);
          per_core[static_cast<size_t>(core)].push_back({b, g, t0, tiles, s});
        }
        ++group_count;
      }
    }
  }
  // Steps, skipped pairs and the instruction bound, before anything is appended.
  int64_t bound = 0;
  for (int core = 0; core < c.cores; ++core) {
    const std::vector<Work> work = Schedule(plan, per_core[static_cast<size_t>(core)], core);
    plan.steps += static_cast<int64_t>(work.size());
    for (const Work& w : work) plan.masked_steps += w.step.masked ? 1 : 0;
    bound += static_cast<int64_t>(work.size()) *
             (2 * CeilDiv(c.head_dim, 128) + 3 * c.kv_tile / 64 + 24);
  }
  plan.skipped_steps = c.batch * c.kv_heads * plan.row_tiles * plan.kv_tiles - plan.steps;
  std::vector<int64_t> partial_rank;
  if (c.kv_splits > 1) {
    // Every (row tile, split) pair must have a step: each core finalizes or
    // hands over every row tile.
    std::vector<std::vector<Work>> work(2);
    for (int core = 0; core < 2; ++core) {
      work[static_cast<size_t>(core)] = Schedule(plan, per_core[static_cast<size_t>(core)], core);
    }
    partial_rank.assign(per_core[1].size() * static_cast<size_t>(c.tiles_per_load), -1);
    int64_t rank = 0;
    for (const Work& w : work[1]) {
      if (w.last_in_row) {
        partial_rank[static_cast<size_t>(w.group * c.tiles_per_load + w.r)] = rank++;
      }
    }
    for (int core = 0; core < 2; ++core) {
      int64_t rows_done = 0;
      for (const Work& w : work[static_cast<size_t>(core)]) rows_done += w.last_in_row ? 1 : 0;
      if (rows_done != c.batch * c.kv_heads * plan.row_tiles) {
        return InvalidArgumentError(what + ": a KV split of core " + std::to_string(core) +
                                    " holds no allowed key for some query tile (the window is "
                                    "shorter than a split); lower it with kv_splits = 1");
      }
    }
  }
  if (bound > options.max_instructions) {
    return ResourceExhaustedError(
        what + " needs up to " + std::to_string(bound) + " instructions (" +
        std::to_string(plan.steps) + " steps); the program has room for " +
        std::to_string(options.max_instructions) + " (ProgramOptions::max_instructions)");
  }
  StatusOr<Program> prog = Program::Create(machine, c.cores, options);
  if (!prog.ok()) return prog.status();
  Program& p = *prog;
  // HBM operands.
  const int64_t eb = c.dtype == MatmulDtype::kMxfp8 ? 1 : 2;
  const int64_t q_elems = c.batch * c.heads * c.seq * c.head_dim;
  const int64_t kv_elems = c.batch * c.kv_heads * c.kv_seq * c.head_dim;
  HbmOperands hbm;
  TRY_ASSIGN(hbm.q, p.AllocHbm("Q", q_elems * eb));
  TRY_ASSIGN(hbm.k, p.AllocHbm("K", kv_elems * eb));
  TRY_ASSIGN(hbm.v, p.AllocHbm("V", kv_elems * eb));
  TRY_ASSIGN(hbm.o, p.AllocHbm("O", q_elems * 2));
  if (c.dtype == MatmulDtype::kMxfp8) {
    TRY_ASSIGN(hbm.q_scale, p.AllocHbm("Q_scale", q_elems / 32));
    TRY_ASSIGN(hbm.k_scale, p.AllocHbm("K_scale", kv_elems / 32));
    TRY_ASSIGN(hbm.v_scale, p.AllocHbm("V_scale", kv_elems / 32));
  }
  SemId partials_ready = -1;
  if (c.kv_splits > 1) {
    TRY_ASSIGN(hbm.partials, p.AllocHbm("partials", c.batch * c.kv_heads * plan.row_tiles *
                                                        kRowTile * (4 * c.head_dim + 12)));
    TRY_ASSIGN(partials_ready, p.AddSemaphore(0, "partials_ready"));
  }
  std::vector<CoreAttention> cores;
  cores.reserve(static_cast<size_t>(c.cores));
  for (int core = 0; core < c.cores; ++core) {
    cores.emplace_back(p, plan, core, per_core[static_cast<size_t>(core)], hbm, partials_ready);
    if (core == 0 && c.kv_splits > 1) cores.back().SetPartialRank(partial_rank);
    if (Status s = cores.back().Allocate(); !s.ok()) {
      return Status(s.code(), what + " (kv_tile " + std::to_string(c.kv_tile) + ", " +
                                  std::to_string(c.tiles_per_load) + " row tiles per K/V load, " +
                                  std::to_string(c.kv_buffers) + " K/V buffers): " + s.message());
    }
  }
  // The exp engine: VectorE's exponential when the machine has one and the
  // busier of VectorE and ScalarE finishes a step sooner with it.
  std::tie(plan.vector_cycles_scalar_exp, plan.scalar_cycles_scalar_exp) =
      cores[0].StepCycles(false);
  const bool has_vexp = machine.vector.exp_elems_per_cycle.value > 0;
  if (has_vexp) {
    std::tie(plan.vector_cycles_vector_exp, plan.scalar_cycles_vector_exp) =
        cores[0].StepCycles(true);
  }
  if (c.exp_engine == ExpEngine::kVector && !has_vexp) {
    return InvalidArgumentError(what + ": " + machine.core_name +
                                " has no VectorE exponential (exp_engine ScalarE or auto)");
  }
  if (c.exp_engine == ExpEngine::kAuto) {
    const auto busier = [&](int64_t v, int64_t s) {
      return std::max(CyclesToPs(v, machine.vector.clock_hz.value),
                      CyclesToPs(s, machine.scalar.clock_hz.value));
    };
    c.exp_engine =
        has_vexp && busier(plan.vector_cycles_vector_exp, plan.scalar_cycles_vector_exp) <
                        busier(plan.vector_cycles_scalar_exp, plan.scalar_cycles_scalar_exp)
            ? ExpEngine::kVector
            : ExpEngine::kScalar;
  }
  std::vector<AttentionStep> steps;
  int64_t loads = 0;
  for (CoreAttention& core : cores) {
    if (Status s = core.Emit(c.exp_engine == ExpEngine::kVector, &steps, &loads); !s.ok()) {
      return Status(s.code(), what + ": " + s.message());
    }
  }
  plan.kv_loads = loads;
  cores.clear();  // they refer to the program, which moves next
  return LoweredAttention{std::move(p), plan, std::move(steps)};
}

}  // namespace

StatusOr<LoweredAttention> LowerAttention(const Machine& machine, const AttentionConfig& config,
                                          const ProgramOptions& options) {
  if (config.tiles_per_load != 0) return LowerOnce(machine, config, options);
  // Chosen: as many row tiles per K/V load as there are query heads per KV
  // head (at most the row tiles), fewer while their states do not fit SBUF.
  StatusOr<AttentionPlan> plan = Plan(machine, config);
  if (!plan.ok()) return plan.status();
  AttentionConfig c = config;
  for (c.tiles_per_load = plan->config.tiles_per_load;; --c.tiles_per_load) {
    StatusOr<LoweredAttention> a = LowerOnce(machine, c, options);
    if (a.ok() || c.tiles_per_load == 1 || a.status().code() != StatusCode::kResourceExhausted ||
        a.status().message().find("SBUF buffer") == std::string::npos) {
      return a;
    }
  }
}

Status CheckAttentionSchedule(const LoweredAttention& lowered) {
  const AttentionPlan& plan = lowered.plan;
  const AttentionConfig& c = plan.config;
  const int64_t t = c.kv_tile, g = plan.group_heads;
  // Per (batch, kv head, row tile): the steps in program order of each core.
  std::vector<std::vector<const AttentionStep*>> by_tile(
      static_cast<size_t>(c.batch * c.kv_heads * plan.row_tiles));
  for (const AttentionStep& s : lowered.steps) {
    if (s.batch < 0 || s.batch >= c.batch || s.kv_head < 0 || s.kv_head >= c.kv_heads ||
        s.row0 % kRowTile != 0 || s.row0 < 0 || s.row0 >= plan.rows) {
      return InternalError("attention schedule: a step outside the problem");
    }
    by_tile[static_cast<size_t>((s.batch * c.kv_heads + s.kv_head) * plan.row_tiles +
                                s.row0 / kRowTile)]
        .push_back(&s);
  }
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t kh = 0; kh < c.kv_heads; ++kh) {
      for (int64_t rt = 0; rt < plan.row_tiles; ++rt) {
        const auto& steps =
            by_tile[static_cast<size_t>((b * c.kv_heads + kh) * plan.row_tiles + rt)];
        for (int64_t row = rt * kRowTile; row < std::min(plan.rows, (rt + 1) * kRowTile); ++row) {
          const int64_t i = row / g, h = kh * g + row % g;
          const Span span = Allowed(c, i);
          // The contract: per split, its tiles with an allowed key, increasing.
          std::vector<std::pair<int, int64_t>> want, got;
          for (int64_t u = 0; u < plan.kv_tiles; ++u) {
            const int64_t k0 = u * t, k1 = std::min(c.kv_seq, k0 + t) - 1;
            if (std::max(span.lo, k0) <= std::min(span.hi, k1)) {
              want.emplace_back(static_cast<int>(k0 / plan.split_keys), u);
            }
          }
          for (const AttentionStep* s : steps) {
            const int64_t k1 = s->key0 + s->keys - 1;
            if (std::max(span.lo, s->key0) <= std::min(span.hi, k1))
              got.emplace_back(s->split, s->tile);
          }
          // Splits run on different cores; within a split the order is program order.
          std::stable_sort(got.begin(), got.end(),
                           [](const auto& x, const auto& y) { return x.first < y.first; });
          if (got != want) {
            size_t k = 0;
            while (k < got.size() && k < want.size() && got[k] == want[k]) ++k;
            const std::string at = k < want.size()
                                       ? "expected KV tile " + std::to_string(want[k].second) +
                                             " of split " + std::to_string(want[k].first)
                                       : "expected no more tiles";
            const std::string found =
                k < got.size() ? "the lowering has KV tile " + std::to_string(got[k].second) +
                                     " of split " + std::to_string(got[k].first)
                               : "the lowering has no more tiles";
            return FailedPreconditionError(
                "attention schedule differs from the trnmx/attention.h contract (kv_tile " +
                std::to_string(t) + ", kv_splits " + std::to_string(c.kv_splits) + ") at batch " +
                std::to_string(b) + ", head " + std::to_string(h) + ", query " + std::to_string(i) +
                ", tile position " + std::to_string(k) + ": " + at + ", " + found);
          }
        }
      }
    }
  }
  return OkStatus();
}

}  // namespace trnmx::emu
