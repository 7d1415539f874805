// GEMM lowering: tiling to 128 partitions, PSUM accumulation groups, double
// buffering (see the header for the schedule).
#include "trnmx/emu/gemm.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace trnmx::emu {
namespace {

// Early-return helpers for Status / StatusOr inside this file.
#define TRY(expr)                     \
  do {                                \
    if (Status s_ = (expr); !s_.ok()) \
      return s_;                      \
  } while (0)
#define TRY_ASSIGN(lhs, expr)            \
  do {                                   \
    auto r_ = (expr);                    \
    if (!r_.ok()) return r_.status();    \
    lhs = *r_;                           \
  } while (0)

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t RoundUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }

bool IsMx(MatmulDtype d) { return d == MatmulDtype::kMxfp8 || d == MatmulDtype::kMxfp4; }

std::string Indexed(const char* prefix, int64_t i) {
  std::ostringstream os;
  os << prefix << "[" << i << "]";
  return os.str();
}

// Splits `total` into `parts` chunks that are multiples of `grain` (except the
// last), as even as possible; returns (start, size) pairs, empty chunks dropped.
std::vector<std::pair<int64_t, int64_t>> Split(int64_t total, int parts, int64_t grain) {
  const int64_t units = CeilDiv(total, grain);
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t start_unit = 0;
  for (int i = 0; i < parts; ++i) {
    const int64_t n_units = units / parts + (i < units % parts ? 1 : 0);
    const int64_t start = start_unit * grain;
    const int64_t end = std::min(total, (start_unit + n_units) * grain);
    if (end > start) out.emplace_back(start, end - start);
    start_unit += n_units;
  }
  return out;
}

struct Sems {
  SemId a_ready, a_free, b_ready, b_free, mm_done, evac[2], stored;
};

class CoreLowering {
 public:
  CoreLowering(Program& p, const GemmPlan& plan, int core, const CoreGemmTile& tile,
               BufferId a_hbm, BufferId a_scale_hbm, BufferId b_hbm, BufferId b_scale_hbm,
               BufferId c_hbm)
      : p_(p), plan_(plan), cfg_(plan.config), core_(core), tile_(tile), a_hbm_(a_hbm),
        a_scale_hbm_(a_scale_hbm), b_hbm_(b_hbm), b_scale_hbm_(b_scale_hbm), c_hbm_(c_hbm) {}

  Status Run() {
    const Machine& m = p_.machine();
    const MatmulDtype d = cfg_.dtype;
    const bool mx = IsMx(d);
    const int64_t kt = plan_.k_tile;
    const int64_t nk = plan_.k_tiles;
    const int64_t n_tile = std::min(cfg_.n_tile, tile_.cols);
    const int64_t m_tiles_total = CeilDiv(tile_.rows, 128);
    const int64_t block_tiles = std::min(CeilDiv(cfg_.block_m, 128), m_tiles_total);
    const int64_t n_tiles = CeilDiv(tile_.cols, n_tile);
    const int banks = static_cast<int>(m.psum.banks.value);
    const double eb = GemmElementBytes(d);
    const int k_parts = TensorOperandPartitions(m, d, std::min(plan_.config.k, kt));

    // Buffers. A: one per resident m-tile (all K tiles side by side).
    const int64_t a_bytes = nk * TensorOperandBytesPerPartition(m, d, 128);
    const int64_t b_bytes = nk * TensorOperandBytesPerPartition(m, d, n_tile);
    std::vector<BufferId> a(block_tiles), a_s(block_tiles), b(cfg_.b_buffers), b_s(cfg_.b_buffers);
    for (int64_t i = 0; i < block_tiles; ++i) {
      TRY_ASSIGN(a[i], p_.AllocSbuf(core_, Indexed("a_t", i), a_bytes));
      if (mx) TRY_ASSIGN(a_s[i], p_.AllocSbuf(core_, Indexed("a_scale", i), nk * MxScaleBytesPerPartition(128)));
    }
    for (int i = 0; i < cfg_.b_buffers; ++i) {
      TRY_ASSIGN(b[i], p_.AllocSbuf(core_, Indexed("b_panel", i), b_bytes));
      if (mx) TRY_ASSIGN(b_s[i], p_.AllocSbuf(core_, Indexed("b_scale", i), nk * MxScaleBytesPerPartition(n_tile)));
    }
    std::vector<BufferId> out(cfg_.out_buffers), acc(banks);
    for (int i = 0; i < cfg_.out_buffers; ++i) {
      TRY_ASSIGN(out[i], p_.AllocSbuf(core_, Indexed("c_out", i), 2 * n_tile));
    }
    for (int i = 0; i < banks; ++i) TRY_ASSIGN(acc[i], p_.AllocPsum(core_, Indexed("acc", i), 4 * n_tile));

    Sems s{};
    TRY_ASSIGN(s.a_ready, p_.AddSemaphore(core_, "a_ready"));
    TRY_ASSIGN(s.a_free, p_.AddSemaphore(core_, "a_free"));
    TRY_ASSIGN(s.b_ready, p_.AddSemaphore(core_, "b_ready"));
    TRY_ASSIGN(s.b_free, p_.AddSemaphore(core_, "b_free"));
    TRY_ASSIGN(s.mm_done, p_.AddSemaphore(core_, "mm_done"));
    TRY_ASSIGN(s.evac[0], p_.AddSemaphore(core_, "evac_vector"));
    TRY_ASSIGN(s.evac[1], p_.AddSemaphore(core_, "evac_scalar"));
    TRY_ASSIGN(s.stored, p_.AddSemaphore(core_, "stored"));
    StreamId q_a, q_b, q_c;
    TRY_ASSIGN(q_a, p_.AddDmaQueue(core_, "load_a"));
    TRY_ASSIGN(q_b, p_.AddDmaQueue(core_, "load_b"));
    TRY_ASSIGN(q_c, p_.AddDmaQueue(core_, "store"));
    const StreamId pe = p_.EngineStream(core_, EngineKind::kTensor);
    const StreamId evac_stream[2] = {p_.EngineStream(core_, EngineKind::kVector),
                                     p_.EngineStream(core_, EngineKind::kScalar)};
    const int64_t per_load = mx ? 2 : 1;  // data + scales each signal once
    const int64_t kdim = cfg_.k;
    // B panels are loaded in up to 4 chunks of whole K tiles.
    const int64_t chunk_tiles = CeilDiv(nk, std::min<int64_t>(nk, 4));
    const int64_t chunks = CeilDiv(nk, chunk_tiles);
    const int64_t chunk_k = chunk_tiles * kt;

    int64_t a_loaded = 0;  // m-tiles loaded so far (all blocks)
    int64_t panel = 0;     // B panels so far
    int64_t t = 0;         // output tiles so far
    int64_t evac_count[2] = {0, 0};
    const int64_t blocks = CeilDiv(m_tiles_total, block_tiles);
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t first_tile = blk * block_tiles;
      const int64_t tiles_here = std::min(block_tiles, m_tiles_total - first_tile);
      // Load the block's A^T tiles once the previous block is done with the slots.
      for (int64_t i = 0; i < tiles_here; ++i) {
        const int64_t row = tile_.row0 + (first_tile + i) * 128;
        const int64_t rows = std::min<int64_t>(128, tile_.row0 + tile_.rows - row);
        Instruction ld = Instruction::DmaCopy(
            a_hbm_, a[i], static_cast<int64_t>(std::ceil(rows * kdim * eb)), k_parts,
            static_cast<int64_t>(std::floor(row * kdim * eb)));
        if (blk > 0) ld.waits = {{s.a_free, blk}};
        ld.signals = {{s.a_ready, 1}};
        TRY(p_.Append(q_a, ld));
        if (mx) {
          Instruction sc = Instruction::DmaCopy(a_scale_hbm_, a_s[i], rows * CeilDiv(kdim, 32),
                                                k_parts, row * CeilDiv(kdim, 32));
          if (blk > 0) sc.waits = {{s.a_free, blk}};
          sc.signals = {{s.a_ready, 1}};
          TRY(p_.Append(q_a, sc));
        }
      }
      for (int64_t j = 0; j < n_tiles; ++j, ++panel) {
        const int64_t col = tile_.col0 + j * n_tile;
        const int64_t cols = std::min(n_tile, tile_.col0 + tile_.cols - col);
        const int slot = static_cast<int>(panel % cfg_.b_buffers);
        // The panel arrives in `chunks` pieces along K, each signalling b_ready,
        // so the first matmuls start before the whole panel has landed.
        std::vector<SemWait> panel_waits;
        if (panel >= cfg_.b_buffers) panel_waits.push_back({s.b_free, panel - cfg_.b_buffers + 1});
        // Prefetch of the block's second panel waits for the block's A tiles, so
        // that the first panel's m-tiles are not starved of A at start-up.
        if (j == 1) panel_waits.push_back({s.a_ready, (a_loaded + tiles_here) * per_load});
        if (mx) {  // the panel's scales first, in one transfer
          Instruction sc = Instruction::DmaCopy(b_scale_hbm_, b_s[slot], cols * (kdim / 32),
                                                k_parts, col * (kdim / 32));
          sc.waits = panel_waits;
          sc.signals = {{s.b_ready, 1}};
          TRY(p_.Append(q_b, sc));
        }
        for (int64_t ch = 0; ch < chunks; ++ch) {
          const int64_t k0 = ch * chunk_k;
          const int64_t kc = std::min(chunk_k, kdim - k0);
          const int64_t base = static_cast<int64_t>(std::floor(col * kdim * eb));
          Instruction ld = Instruction::DmaCopy(
              b_hbm_, b[slot], static_cast<int64_t>(std::ceil(cols * kc * eb)), k_parts,
              base + static_cast<int64_t>(std::floor(cols * k0 * eb)),
              ch * (b_bytes / chunks));
          ld.waits = panel_waits;
          ld.signals = {{s.b_ready, 1}};
          TRY(p_.Append(q_b, ld));
        }
        for (int64_t i = 0; i < tiles_here; ++i, ++t) {
          const int64_t row = tile_.row0 + (first_tile + i) * 128;
          const int64_t rows = std::min<int64_t>(128, tile_.row0 + tile_.rows - row);
          const int64_t mm_m = mx ? RoundUp(rows, 2) : rows;
          const int bank = static_cast<int>(t % banks);
          for (int64_t kk = 0; kk < nk; ++kk) {
            int64_t kc = std::min(kt, kdim - kk * kt);
            if (mx) kc = RoundUp(kc, 128);  // MX K tiles are multiples of 128 (zero-padded)
            Instruction ls = Instruction::LoadStationary(a[i], d, kc, mm_m, mx ? a_s[i] : -1);
            if (i == 0 && kk % chunk_tiles == 0) {  // this K chunk of the panel has landed
              // The load_b queue completes in order: scales, then chunk 0, 1, ...
              const int64_t per_panel = chunks + (mx ? 1 : 0);
              ls.waits.push_back({s.b_ready, panel * per_panel + (mx ? 1 : 0) + kk / chunk_tiles + 1});
            }
            if (kk == 0) {
              if (j == 0) ls.waits.push_back({s.a_ready, (a_loaded + i + 1) * per_load});
              if (t >= banks) {  // the bank's previous tile must be evacuated
                const int64_t u = t - banks;
                ls.waits.push_back({s.evac[u % 2], u / 2 + 1});
              }
            }
            TRY(p_.Append(pe, ls));
            Instruction mm = Instruction::MultiplyMoving(b[slot], acc[bank], d, kc, mm_m, cols,
                                                         kk > 0, mx ? b_s[slot] : -1);
            if (kk == nk - 1) {
              mm.signals.push_back({s.mm_done, 1});
              if (i == tiles_here - 1) mm.signals.push_back({s.b_free, 1});
              if (i == tiles_here - 1 && j == n_tiles - 1) mm.signals.push_back({s.a_free, 1});
            }
            TRY(p_.Append(pe, mm));
          }
          // Evacuate PSUM -> SBUF (FP32 -> BF16), alternating VectorE / ScalarE.
          const int e = static_cast<int>(t % 2);
          const int o = static_cast<int>(t % cfg_.out_buffers);
          Instruction ev = Instruction::Elementwise(Opcode::kTensorCopy, out[o], acc[bank],
                                                    static_cast<int>(rows), cols, ElemType::kFp32,
                                                    ElemType::kBf16);
          ev.waits = {{s.mm_done, t + 1}};
          if (t >= cfg_.out_buffers) ev.waits.push_back({s.stored, t - cfg_.out_buffers + 1});
          ev.signals = {{s.evac[e], 1}};
          TRY(p_.Append(evac_stream[e], ev));
          ++evac_count[e];
          Instruction st = Instruction::DmaCopy(out[o], c_hbm_, rows * cols * 2,
                                                static_cast<int>(rows), 0,
                                                (row * cfg_.n + col) * 2);
          st.waits = {{s.evac[e], evac_count[e]}};
          st.signals = {{s.stored, 1}};
          TRY(p_.Append(q_c, st));
        }
      }
      a_loaded += tiles_here;
    }
    return OkStatus();
  }

 private:
  Program& p_;
  const GemmPlan& plan_;
  const GemmConfig& cfg_;
  int core_;
  CoreGemmTile tile_;
  BufferId a_hbm_, a_scale_hbm_, b_hbm_, b_scale_hbm_, c_hbm_;
};

}  // namespace

double GemmElementBytes(MatmulDtype dtype) {
  switch (dtype) {
    case MatmulDtype::kBf16: return 2;
    case MatmulDtype::kFp8:
    case MatmulDtype::kMxfp8: return 1;
    case MatmulDtype::kMxfp4: return 0.5;
    case MatmulDtype::kFp32: return 4;
  }
  return 1;
}

StatusOr<LoweredGemm> LowerGemm(const Machine& machine, const GemmConfig& config) {
  GemmPlan plan;
  plan.config = config;
  GemmConfig& c = plan.config;
  const std::string what = "gemm " + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                           std::to_string(c.k) + " " + std::string(MatmulDtypeName(c.dtype));
  if (c.m < 1 || c.n < 1 || c.k < 1) return InvalidArgumentError(what + ": M, N, K must be >= 1");
  if (c.cores < 1 || c.cores > machine.core_count()) {
    return InvalidArgumentError(what + ": cores = " + std::to_string(c.cores) + ", machine " +
                                machine.name + " has " + std::to_string(machine.core_count()));
  }
  if (MacsPerPeCycle(machine, c.dtype) <= 0) {
    return InvalidArgumentError(what + ": machine " + machine.name + " (" + machine.core_name +
                                ") has no " + std::string(MatmulDtypeName(c.dtype)) + " matmul");
  }
  if (IsMx(c.dtype) && c.k % 32 != 0) {
    return InvalidArgumentError(what + ": MX K must be a multiple of the 32-element block");
  }
  if (c.b_buffers < 2) return InvalidArgumentError(what + ": b_buffers must be >= 2");
  if (c.out_buffers < 1) return InvalidArgumentError(what + ": out_buffers must be >= 1");
  const int64_t bank_fp32 = static_cast<int64_t>(machine.psum.bank_bytes_per_partition.value) / 4;
  if (c.n_tile == 0) c.n_tile = bank_fp32;
  if (c.n_tile < 1 || c.n_tile > bank_fp32) {
    return InvalidArgumentError(what + ": n_tile = " + std::to_string(c.n_tile) +
                                " must be in [1, " + std::to_string(bank_fp32) +
                                "] (one PSUM bank of FP32 per output tile)");
  }
  if (c.block_m < 0 || c.block_m % 128 != 0) {
    return InvalidArgumentError(what + ": block_m must be a multiple of 128");
  }
  plan.k_tile = MatmulMaxK(machine, c.dtype);
  plan.k_tiles = CeilDiv(c.k, plan.k_tile);
  plan.flops = 2.0 * static_cast<double>(c.m) * static_cast<double>(c.n) * static_cast<double>(c.k);

  // Core grid: as many cores along M as there are 128-row tiles, the rest along N.
  const int64_t m_tiles = CeilDiv(c.m, 128);
  for (int g = c.cores; g >= 1; --g) {
    if (c.cores % g == 0 && g <= m_tiles) {
      plan.grid_m = g;
      break;
    }
  }
  plan.grid_n = c.cores / plan.grid_m;
  const auto row_split = Split(c.m, plan.grid_m, 128);
  const auto col_split = Split(c.n, plan.grid_n, std::min<int64_t>(c.n_tile, 128));
  for (const auto& [r0, rows] : row_split) {
    for (const auto& [c0, cols] : col_split) plan.cores.push_back({r0, rows, c0, cols});
  }

  // Resident A block: the largest number of m-tiles that fits beside the B
  // panels and output staging, balanced over the blocks.
  const double eb = GemmElementBytes(c.dtype);
  const bool mx = IsMx(c.dtype);
  int64_t max_rows = 0;
  for (const CoreGemmTile& t : plan.cores) max_rows = std::max(max_rows, t.rows);
  const int64_t max_m_tiles = CeilDiv(max_rows, 128);
  if (c.block_m == 0) {
    const int64_t n_tile = c.n_tile;
    const int64_t nk = plan.k_tiles;
    const int64_t align = static_cast<int64_t>(machine.sbuf.alignment_bytes.value);
    auto aligned = [&](int64_t b) { return RoundUp(b, align); };
    const int64_t per_a = aligned(nk * TensorOperandBytesPerPartition(machine, c.dtype, 128)) +
                          (mx ? aligned(nk * MxScaleBytesPerPartition(128)) : 0);
    const int64_t fixed =
        c.b_buffers * (aligned(nk * TensorOperandBytesPerPartition(machine, c.dtype, n_tile)) +
                       (mx ? aligned(nk * MxScaleBytesPerPartition(n_tile)) : 0)) +
        c.out_buffers * aligned(2 * n_tile);
    const int64_t budget = machine.sbuf_usable_bytes_per_partition() - fixed;
    const int64_t fit = budget > 0 ? budget / per_a : 0;
    // If not even one m-tile fits, use one: the allocator then names the buffer.
    const int64_t tiles = std::max<int64_t>(1, std::min(fit, max_m_tiles));
    const int64_t blocks = CeilDiv(max_m_tiles, tiles);
    c.block_m = CeilDiv(max_m_tiles, blocks) * 128;
  }

  StatusOr<Program> prog = Program::Create(machine, c.cores);
  if (!prog.ok()) return prog.status();
  Program& p = *prog;
  StatusOr<BufferId> a = p.AllocHbm("A", static_cast<int64_t>(std::ceil(c.m * c.k * eb)));
  StatusOr<BufferId> b = p.AllocHbm("B", static_cast<int64_t>(std::ceil(c.k * c.n * eb)));
  StatusOr<BufferId> cc = p.AllocHbm("C", c.m * c.n * 2);
  if (!a.ok()) return a.status();
  if (!b.ok()) return b.status();
  if (!cc.ok()) return cc.status();
  BufferId a_scale = -1, b_scale = -1;
  if (mx) {
    StatusOr<BufferId> as = p.AllocHbm("A_scale", c.m * (c.k / 32));
    StatusOr<BufferId> bs = p.AllocHbm("B_scale", c.n * (c.k / 32));
    if (!as.ok()) return as.status();
    if (!bs.ok()) return bs.status();
    a_scale = *as;
    b_scale = *bs;
  }
  for (size_t i = 0; i < plan.cores.size(); ++i) {
    CoreLowering lower(p, plan, static_cast<int>(i), plan.cores[i], *a, a_scale, *b, b_scale, *cc);
    if (Status s = lower.Run(); !s.ok()) {
      return Status(s.code(), what + " on " + machine.name + " core " + std::to_string(i) +
                                  " (block_m " + std::to_string(c.block_m) + ", n_tile " +
                                  std::to_string(c.n_tile) + ", " + std::to_string(c.b_buffers) +
                                  " B buffers): " + s.message());
    }
  }
  for (const Stream& s : p.streams()) {
    for (const Instruction& in : s.instructions) plan.matmuls += in.op == Opcode::kMultiplyMoving;
  }
  return LoweredGemm{std::move(p), std::move(plan)};
}

}  // namespace trnmx::emu
