// GEMM lowering: tiling to 128 partitions, PSUM accumulation groups, K
// blocking, double buffering (see the header for the schedule).
#include "trnmx/emu/gemm.h"

#include <algorithm>
#include <cmath>
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
#define TRY_ASSIGN(lhs, expr)         \
  do {                                \
    auto r_ = (expr);                 \
    if (!r_.ok()) return r_.status(); \
    lhs = *r_;                        \
  } while (0)

constexpr int64_t kTileRows = 128;  // stationary rows per matmul (PE columns)

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t RoundUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }

bool IsMx(MatmulDtype d) { return d == MatmulDtype::kMxfp8 || d == MatmulDtype::kMxfp4; }

std::string Indexed(const char* prefix, int64_t i) {
  return std::string(prefix) + "[" + std::to_string(i) + "]";
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

// An operand matrix in HBM as the lowering sees it: `rows` x K, K contiguous
// per row (A as stored; B as B^T). Offsets and sizes name the bytes a
// transfer moves; the strides of the real layouts are not modelled.
struct HbmOperand {
  BufferId data = -1;
  BufferId scales = -1;  // MX: E8M0, one byte per 32 elements of K
  double element_bytes = 0;
  int64_t k = 0;
  // Rows [row, row + rows) x K range [k0, k0 + kc).
  int64_t Offset(int64_t row, int64_t rows, int64_t k0) const {
    return static_cast<int64_t>(std::floor(row * k * element_bytes)) +
           static_cast<int64_t>(std::floor(rows * k0 * element_bytes));
  }
  int64_t Bytes(int64_t rows, int64_t kc) const {
    return static_cast<int64_t>(std::ceil(rows * kc * element_bytes));
  }
  int64_t ScaleOffset(int64_t row, int64_t rows, int64_t k0) const {
    return row * (k / 32) + rows * (k0 / 32);
  }
  static int64_t ScaleBytes(int64_t rows, int64_t kc) { return rows * (kc / 32); }
};

// SBUF bytes per partition of the buffers a core allocates, in allocation
// order, each start aligned as the allocator does.
struct SbufLayout {
  const Machine& m;
  MatmulDtype dtype;
  int64_t n_tile;
  int b_buffers, out_buffers;

  int64_t Aligned(int64_t b) const {
    const int64_t align = static_cast<int64_t>(m.sbuf.alignment_bytes.value);
    return RoundUp(b, align);
  }
  // One stationary tile holding `k_tiles` K tiles (+ its MX scales).
  int64_t StationaryTile(int64_t k_tiles) const {
    return Aligned(k_tiles * TensorOperandBytesPerPartition(m, dtype, kTileRows)) +
           (IsMx(dtype) ? Aligned(k_tiles * MxScaleBytesPerPartition(kTileRows)) : 0);
  }
  // The moving panels and output staging tiles.
  int64_t MovingAndOutput(int64_t k_tiles) const {
    return b_buffers * (Aligned(k_tiles * TensorOperandBytesPerPartition(m, dtype, n_tile)) +
                        (IsMx(dtype) ? Aligned(k_tiles * MxScaleBytesPerPartition(n_tile)) : 0)) +
           out_buffers * Aligned(2 * n_tile);
  }
  int64_t Total(int64_t stationary_tiles, int64_t k_tiles) const {
    return stationary_tiles * StationaryTile(k_tiles) + MovingAndOutput(k_tiles);
  }
};

struct Sems {
  SemId a_ready, a_free, b_ready, b_free, mm_done, evac[2], stored;
};

class CoreLowering {
 public:
  CoreLowering(Program& p, const GemmPlan& plan, int core, const CoreGemmTile& tile,
               const HbmOperand& a, const HbmOperand& b, BufferId c_hbm)
      : p_(p), plan_(plan), cfg_(plan.config), core_(core), tile_(tile), a_(a), b_(b),
        c_hbm_(c_hbm) {}

  Status Run() {
    const Machine& m = p_.machine();
    const MatmulDtype d = cfg_.dtype;
    const bool mx = IsMx(d);
    const int64_t kt = plan_.k_tile;
    const int64_t nk = plan_.k_tiles;
    const int64_t kb_tiles = plan_.k_block_tiles;
    const bool resident = plan_.k_blocks == 1;  // the stationary block keeps all of K
    const int a_sets = resident ? 1 : 2;        // K blocks of the stationary are double-buffered
    const int64_t n_tile = std::min(cfg_.n_tile, tile_.cols);
    const int64_t m_tiles_total = CeilDiv(tile_.rows, kTileRows);
    const int64_t block_tiles = std::min(CeilDiv(cfg_.stationary_block, kTileRows), m_tiles_total);
    const int64_t n_tiles = CeilDiv(tile_.cols, n_tile);
    const int64_t group_n = resident ? 1 : std::min<int64_t>(plan_.group_n, n_tiles);
    const int banks = static_cast<int>(m.psum.banks.value);
    const int k_parts = TensorOperandPartitions(m, d, std::min(cfg_.k, kt));
    const int64_t per_load = mx ? 2 : 1;  // data + scales each signal once

    // Buffers: stationary tiles (a_sets x block_tiles), moving panels, output staging, PSUM banks.
    const int64_t a_bytes = kb_tiles * TensorOperandBytesPerPartition(m, d, kTileRows);
    const int64_t b_tile_bytes = TensorOperandBytesPerPartition(m, d, n_tile);
    std::vector<BufferId> a(a_sets * block_tiles), a_s(a.size(), -1);
    std::vector<BufferId> b(cfg_.b_buffers), b_s(cfg_.b_buffers, -1);
    for (size_t i = 0; i < a.size(); ++i) {
      TRY_ASSIGN(a[i], p_.AllocSbuf(core_, Indexed("a_t", static_cast<int64_t>(i)), a_bytes));
      if (mx) {
        TRY_ASSIGN(a_s[i], p_.AllocSbuf(core_, Indexed("a_scale", static_cast<int64_t>(i)),
                                        kb_tiles * MxScaleBytesPerPartition(kTileRows)));
      }
    }
    for (int i = 0; i < cfg_.b_buffers; ++i) {
      TRY_ASSIGN(b[i], p_.AllocSbuf(core_, Indexed("b_panel", i), kb_tiles * b_tile_bytes));
      if (mx) {
        TRY_ASSIGN(b_s[i], p_.AllocSbuf(core_, Indexed("b_scale", i),
                                        kb_tiles * MxScaleBytesPerPartition(n_tile)));
      }
    }
    std::vector<BufferId> out(cfg_.out_buffers), acc(banks);
    for (int i = 0; i < cfg_.out_buffers; ++i) {
      TRY_ASSIGN(out[i], p_.AllocSbuf(core_, Indexed("c_out", i), 2 * n_tile));
    }
    for (int i = 0; i < banks; ++i) {
      TRY_ASSIGN(acc[i], p_.AllocPsum(core_, Indexed("acc", i), 4 * n_tile));
    }

    Sems s{};
    TRY_ASSIGN(s.a_ready, p_.AddSemaphore(core_, "a_ready"));
    TRY_ASSIGN(s.a_free, p_.AddSemaphore(core_, "a_free"));
    TRY_ASSIGN(s.b_ready, p_.AddSemaphore(core_, "b_ready"));
    TRY_ASSIGN(s.b_free, p_.AddSemaphore(core_, "b_free"));
    TRY_ASSIGN(s.mm_done, p_.AddSemaphore(core_, "mm_done"));
    TRY_ASSIGN(s.evac[0], p_.AddSemaphore(core_, "evac_vector"));
    TRY_ASSIGN(s.evac[1], p_.AddSemaphore(core_, "evac_scalar"));
    TRY_ASSIGN(s.stored, p_.AddSemaphore(core_, "stored"));
    TRY_ASSIGN(q_a_, p_.AddDmaQueue(core_, "load_a"));
    TRY_ASSIGN(q_b_, p_.AddDmaQueue(core_, "load_b"));
    TRY_ASSIGN(q_c_, p_.AddDmaQueue(core_, "store"));
    pe_ = p_.EngineStream(core_, EngineKind::kTensor);
    evac_stream_[0] = p_.EngineStream(core_, EngineKind::kVector);
    evac_stream_[1] = p_.EngineStream(core_, EngineKind::kScalar);

    int64_t a_sets_loaded = 0;   // stationary block loads so far
    int64_t a_signals = 0;       // a_ready increments so far
    int64_t b_panels = 0;        // moving panel loads so far
    int64_t b_signals = 0;       // b_ready increments so far
    int64_t t = 0;               // output tiles so far (PSUM bank rotation)
    int64_t evac_count[2] = {0, 0};
    const int64_t blocks = CeilDiv(m_tiles_total, block_tiles);
    const int64_t groups = CeilDiv(n_tiles, group_n);
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t first_tile = blk * block_tiles;
      const int64_t tiles_here = std::min(block_tiles, m_tiles_total - first_tile);
      auto row_of = [&](int64_t i) { return tile_.row0 + (first_tile + i) * kTileRows; };
      auto rows_of = [&](int64_t i) {
        return std::min(kTileRows, tile_.row0 + tile_.rows - row_of(i));
      };
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t first_n = g * group_n;
        const int64_t panels_here = std::min(group_n, n_tiles - first_n);
        const int64_t t_group = t;  // first output tile of the group
        for (int64_t kb = 0; kb < plan_.k_blocks; ++kb) {
          const int64_t kt0 = kb * kb_tiles;                       // first K tile of the block
          const int64_t kts = std::min(kb_tiles, nk - kt0);        // K tiles in the block
          const int64_t k0 = kt0 * kt;                             // first K element
          const int64_t kc = std::min(kts * kt, cfg_.k - k0);      // K elements
          // Stationary block: loaded once per row block when all of K is
          // resident, else once per (group, K block) into alternating sets.
          const bool load_a = !resident || g == 0;
          const int set = static_cast<int>(a_sets_loaded % a_sets);
          const int64_t a_signal_base = a_signals;
          if (load_a) {
            for (int64_t i = 0; i < tiles_here; ++i) {
              const int64_t buf = set * block_tiles + i;
              Instruction ld = Instruction::DmaCopy(a_.data, a[buf], a_.Bytes(rows_of(i), kc),
                                                    k_parts, a_.Offset(row_of(i), rows_of(i), k0));
              if (a_sets_loaded >= a_sets) ld.waits = {{s.a_free, a_sets_loaded - a_sets + 1}};
              ld.signals = {{s.a_ready, 1}};
              TRY(p_.Append(q_a_, std::move(ld)));
              if (mx) {
                Instruction sc = Instruction::DmaCopy(
                    a_.scales, a_s[buf], HbmOperand::ScaleBytes(rows_of(i), kc), k_parts,
                    a_.ScaleOffset(row_of(i), rows_of(i), k0));
                if (a_sets_loaded >= a_sets) sc.waits = {{s.a_free, a_sets_loaded - a_sets + 1}};
                sc.signals = {{s.a_ready, 1}};
                TRY(p_.Append(q_a_, std::move(sc)));
              }
            }
            ++a_sets_loaded;
            a_signals += tiles_here * per_load;
            panels_since_a_ = 0;
          }
          const int64_t a_set_signals = a_signals;  // a_ready once this set has landed
          const int cur_set = static_cast<int>((a_sets_loaded - 1) % a_sets);
          // The last use of the stationary set: its last group (resident) or this K block.
          const bool set_ends_here = !resident || g == groups - 1;
          for (int64_t jj = 0; jj < panels_here; ++jj, ++b_panels) {
            const int64_t j = first_n + jj;
            const int64_t col = tile_.col0 + j * n_tile;
            const int64_t cols = std::min(n_tile, tile_.col0 + tile_.cols - col);
            const int slot = static_cast<int>(b_panels % cfg_.b_buffers);
            // The panel arrives in up to 4 pieces along K, each signalling
            // b_ready, so the first matmuls start before it has fully landed.
            const int64_t chunk_tiles = CeilDiv(kts, std::min<int64_t>(kts, 4));
            const int64_t chunks = CeilDiv(kts, chunk_tiles);
            std::vector<SemWait> panel_waits;
            if (b_panels >= cfg_.b_buffers) {
              panel_waits.push_back({s.b_free, b_panels - cfg_.b_buffers + 1});
            }
            // The second panel after a stationary load waits for that load, so
            // that the first panel's matmuls are not starved of stationary data.
            if (panels_since_a_ == 1) panel_waits.push_back({s.a_ready, a_set_signals});
            ++panels_since_a_;
            const int64_t b_signal_base = b_signals;
            if (mx) {  // the panel's scales first, in one transfer
              Instruction sc = Instruction::DmaCopy(b_.scales, b_s[slot],
                                                    HbmOperand::ScaleBytes(cols, kc), k_parts,
                                                    b_.ScaleOffset(col, cols, k0));
              sc.waits = panel_waits;
              sc.signals = {{s.b_ready, 1}};
              TRY(p_.Append(q_b_, std::move(sc)));
              ++b_signals;
            }
            for (int64_t ch = 0; ch < chunks; ++ch) {
              const int64_t ck0 = k0 + ch * chunk_tiles * kt;
              const int64_t ckc = std::min(chunk_tiles * kt, k0 + kc - ck0);
              Instruction ld = Instruction::DmaCopy(b_.data, b[slot], b_.Bytes(cols, ckc), k_parts,
                                                    b_.Offset(col, cols, ck0),
                                                    ch * chunk_tiles * b_tile_bytes);
              ld.waits = panel_waits;
              ld.signals = {{s.b_ready, 1}};
              TRY(p_.Append(q_b_, std::move(ld)));
              ++b_signals;
            }
            for (int64_t i = 0; i < tiles_here; ++i) {
              const int64_t tile_index = t_group + jj * tiles_here + i;
              const int bank = static_cast<int>(tile_index % banks);
              const int64_t mm_m = mx ? RoundUp(rows_of(i), 2) : rows_of(i);
              const int64_t buf = cur_set * block_tiles + i;
              for (int64_t kk = 0; kk < kts; ++kk) {
                const int64_t kg = kt0 + kk;  // K tile of the whole contraction
                int64_t kcm = std::min(kt, cfg_.k - kg * kt);
                if (mx) kcm = RoundUp(kcm, 128);  // MX K tiles are multiples of 128 (zero-padded)
                Instruction ls = Instruction::LoadStationary(a[buf], d, kcm, mm_m, a_s[buf]);
                if (i == 0 && kk % chunk_tiles == 0) {  // this piece of the panel has landed
                  // load_b completes in order: scales, then piece 0, 1, ...
                  ls.waits.push_back(
                      {s.b_ready, b_signal_base + (mx ? 1 : 0) + kk / chunk_tiles + 1});
                }
                if (kk == 0 && load_a && jj == 0) {
                  ls.waits.push_back({s.a_ready, a_signal_base + (i + 1) * per_load});
                }
                if (kg == 0 && tile_index >= banks) {  // the bank's previous tile was evacuated
                  const int64_t u = tile_index - banks;
                  ls.waits.push_back({s.evac[u % 2], u / 2 + 1});
                }
                TRY(p_.Append(pe_, std::move(ls)));
                Instruction mm = Instruction::MultiplyMoving(b[slot], acc[bank], d, kcm, mm_m, cols,
                                                             kg > 0, b_s[slot]);
                if (kk == kts - 1) {
                  if (kg == nk - 1) mm.signals.push_back({s.mm_done, 1});
                  if (i == tiles_here - 1) mm.signals.push_back({s.b_free, 1});
                  if (i == tiles_here - 1 && jj == panels_here - 1 && set_ends_here) {
                    mm.signals.push_back({s.a_free, 1});
                  }
                }
                TRY(p_.Append(pe_, std::move(mm)));
              }
            }
            if (resident) {
              TRY(Evacuate(s, t, tiles_here, row_of, rows_of, col, cols, acc, out, evac_count));
            }
          }
        }
        if (!resident) {
          for (int64_t jj = 0; jj < panels_here; ++jj) {
            const int64_t col = tile_.col0 + (first_n + jj) * n_tile;
            const int64_t cols = std::min(n_tile, tile_.col0 + tile_.cols - col);
            TRY(Evacuate(s, t, tiles_here, row_of, rows_of, col, cols, acc, out, evac_count));
          }
        }
      }
    }
    return OkStatus();
  }

 private:
  // Evacuates the `tiles` output tiles of one moving panel (PSUM -> SBUF,
  // FP32 -> BF16, alternating VectorE / ScalarE) and stores them to C.
  template <typename RowOf, typename RowsOf>
  Status Evacuate(const Sems& s, int64_t& t, int64_t tiles, const RowOf& row_of,
                  const RowsOf& rows_of, int64_t col, int64_t cols, const std::vector<BufferId>& acc,
                  const std::vector<BufferId>& out, int64_t (&evac_count)[2]) {
    for (int64_t i = 0; i < tiles; ++i, ++t) {
      const int e = static_cast<int>(t % 2);
      const int o = static_cast<int>(t % cfg_.out_buffers);
      const int bank = static_cast<int>(t % static_cast<int64_t>(acc.size()));
      const int64_t rows = rows_of(i);
      Instruction ev = Instruction::Elementwise(Opcode::kTensorCopy, out[o], acc[bank],
                                                static_cast<int>(rows), cols, ElemType::kFp32,
                                                ElemType::kBf16);
      ev.waits = {{s.mm_done, t + 1}};
      if (t >= cfg_.out_buffers) ev.waits.push_back({s.stored, t - cfg_.out_buffers + 1});
      ev.signals = {{s.evac[e], 1}};
      TRY(p_.Append(evac_stream_[e], std::move(ev)));
      ++evac_count[e];
      Instruction st = Instruction::DmaCopy(out[o], c_hbm_, rows * cols * 2,
                                            static_cast<int>(rows), 0,
                                            (row_of(i) * cfg_.n + col) * 2);
      st.waits = {{s.evac[e], evac_count[e]}};
      st.signals = {{s.stored, 1}};
      TRY(p_.Append(q_c_, std::move(st)));
    }
    return OkStatus();
  }

  Program& p_;
  const GemmPlan& plan_;
  const GemmConfig& cfg_;
  int core_;
  CoreGemmTile tile_;
  HbmOperand a_, b_;
  BufferId c_hbm_;
  StreamId q_a_ = -1, q_b_ = -1, q_c_ = -1, pe_ = -1;
  StreamId evac_stream_[2] = {-1, -1};
  int64_t panels_since_a_ = 0;  // moving panels loaded since the last stationary load
};

// HBM bytes one core reads for its operands (without MX scales) under a
// blocking: each stationary row is read once per pass over the moving
// columns, each moving column once per stationary block.
double OperandTraffic(int64_t rows, int64_t cols, int64_t k, double element_bytes,
                      int64_t stationary_reads, int64_t moving_reads) {
  return (static_cast<double>(rows) * static_cast<double>(stationary_reads) +
          static_cast<double>(cols) * static_cast<double>(moving_reads)) *
         static_cast<double>(k) * element_bytes;
}

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
  const bool mx = IsMx(c.dtype);
  if (mx && c.k % 32 != 0) {
    return InvalidArgumentError(what + ": MX K must be a multiple of the 32-element block");
  }
  if (c.b_buffers < 2) return InvalidArgumentError(what + ": b_buffers must be >= 2");
  if (c.out_buffers < 1) return InvalidArgumentError(what + ": out_buffers must be >= 1");
  const int64_t bank_fp32 = static_cast<int64_t>(machine.psum.bank_bytes_per_partition.value) / 4;
  const int banks = static_cast<int>(machine.psum.banks.value);
  if (c.n_tile == 0) c.n_tile = bank_fp32;
  if (c.n_tile < 1 || c.n_tile > bank_fp32) {
    return InvalidArgumentError(what + ": n_tile = " + std::to_string(c.n_tile) +
                                " must be in [1, " + std::to_string(bank_fp32) +
                                "] (one PSUM bank of FP32 per output tile)");
  }
  if (c.stationary_block < 0 || c.stationary_block % kTileRows != 0) {
    return InvalidArgumentError(what + ": stationary_block = " + std::to_string(c.stationary_block) +
                                " must be a multiple of 128");
  }
  plan.k_tile = MatmulMaxK(machine, c.dtype);
  plan.k_tiles = CeilDiv(c.k, plan.k_tile);
  if (c.k_block < 0 || c.k_block % plan.k_tile != 0) {
    return InvalidArgumentError(what + ": k_block = " + std::to_string(c.k_block) +
                                " must be a multiple of the matmul K tile " +
                                std::to_string(plan.k_tile));
  }
  plan.flops = 2.0 * static_cast<double>(c.m) * static_cast<double>(c.n) * static_cast<double>(c.k);

  // Core grid: as many cores along M as there are 128-row tiles, the rest along N.
  const int64_t m_tiles = CeilDiv(c.m, kTileRows);
  for (int g = c.cores; g >= 1; --g) {
    if (c.cores % g == 0 && g <= m_tiles) {
      plan.grid_m = g;
      break;
    }
  }
  plan.grid_n = c.cores / plan.grid_m;
  const auto row_split = Split(c.m, plan.grid_m, kTileRows);
  const auto col_split = Split(c.n, plan.grid_n, std::min<int64_t>(c.n_tile, kTileRows));
  for (const auto& [r0, rows] : row_split) {
    for (const auto& [c0, cols] : col_split) plan.cores.push_back({r0, rows, c0, cols});
  }

  // Blocking, from the largest core tile (all cores use the same plan).
  const double eb = GemmElementBytes(c.dtype);
  int64_t max_rows = 0, max_cols = 0;
  for (const CoreGemmTile& t : plan.cores) {
    max_rows = std::max(max_rows, t.rows);
    max_cols = std::max(max_cols, t.cols);
  }
  const int64_t core_m_tiles = CeilDiv(max_rows, kTileRows);
  const int64_t core_n_tiles = CeilDiv(max_cols, std::min(c.n_tile, max_cols));
  const int64_t nk = plan.k_tiles;
  const int64_t sbuf = machine.sbuf_usable_bytes_per_partition();
  const SbufLayout layout{machine, c.dtype, c.n_tile, c.b_buffers, c.out_buffers};
  const int64_t user_tiles = c.stationary_block / kTileRows;  // 0 = choose

  // (a) All of K resident: the most stationary tiles that fit, balanced over the blocks.
  int64_t resident_tiles = user_tiles;
  if (resident_tiles == 0) {
    const int64_t budget = sbuf - layout.MovingAndOutput(nk);
    const int64_t fit = budget > 0 ? budget / layout.StationaryTile(nk) : 0;
    resident_tiles = std::min(fit, core_m_tiles);
    if (resident_tiles > 0) {
      resident_tiles = CeilDiv(core_m_tiles, CeilDiv(core_m_tiles, resident_tiles));
    }
  }
  const bool resident_fits =
      resident_tiles > 0 && layout.Total(std::min(resident_tiles, core_m_tiles), nk) <= sbuf;
  const double resident_traffic =
      OperandTraffic(max_rows, max_cols, c.k, eb, 1,
                     CeilDiv(core_m_tiles, std::max<int64_t>(1, resident_tiles)));

  // (b) K blocks: a group of output tiles (at most half the PSUM banks, so that
  // evacuating one group overlaps the next) stays in PSUM while the K blocks
  // stream. The group shape reads the least HBM; the K block is the largest
  // that fits with two stationary sets.
  int64_t kb_tiles_fit = 0, kb_group_m = 1, kb_group_n = 1;
  double kb_traffic = 0;
  {
    const int64_t live = std::max(1, banks / 2);
    if (user_tiles > 0) {
      kb_group_m = std::min(user_tiles, core_m_tiles);
      kb_group_n = std::clamp<int64_t>(live / kb_group_m, 1, core_n_tiles);
    } else {
      double best = -1;
      for (int64_t gm = 1; gm <= live; gm *= 2) {
        const int64_t gm_eff = std::min(gm, core_m_tiles);
        const int64_t gn_eff = std::clamp<int64_t>(live / gm, 1, core_n_tiles);
        const double traffic = OperandTraffic(max_rows, max_cols, c.k, eb,
                                              CeilDiv(core_n_tiles, gn_eff),
                                              CeilDiv(core_m_tiles, gm_eff));
        if (best < 0 || traffic < best) {
          best = traffic;
          kb_group_m = gm_eff;
          kb_group_n = gn_eff;
        }
      }
    }
    kb_traffic = OperandTraffic(max_rows, max_cols, c.k, eb, CeilDiv(core_n_tiles, kb_group_n),
                                CeilDiv(core_m_tiles, kb_group_m));
    if (kb_group_m * kb_group_n <= banks) {
      int64_t lo = 0, hi = nk;  // largest K tiles per block that fit
      while (lo < hi) {
        const int64_t mid = (lo + hi + 1) / 2;
        if (layout.Total(2 * kb_group_m, mid) <= sbuf) {
          lo = mid;
        } else {
          hi = mid - 1;
        }
      }
      kb_tiles_fit = lo;
    }
  }

  bool k_blocked = false;
  if (c.k_block > 0) {
    k_blocked = c.k_block < c.k;
  } else if (nk > 1 && kb_tiles_fit > 0) {
    k_blocked = !resident_fits || kb_traffic < resident_traffic;
  } else if (nk > 1 && !resident_fits && user_tiles == 0) {
    // Nothing fits: the smallest K blocks make the allocator name the buffer
    // that is too large (the moving panels or the staging tiles).
    k_blocked = true;
  }
  if (k_blocked && user_tiles > 0 && kb_group_m > banks) {
    return ResourceExhaustedError(
        what + ": stationary_block " + std::to_string(c.stationary_block) + " with K blocks keeps " +
        std::to_string(kb_group_m) + " accumulation groups live in PSUM, which has " +
        std::to_string(banks) + " banks");
  }
  if (k_blocked) {
    int64_t kb = c.k_block > 0 ? c.k_block / plan.k_tile : std::max<int64_t>(1, kb_tiles_fit);
    plan.k_blocks = CeilDiv(nk, kb);
    plan.k_block_tiles = CeilDiv(nk, plan.k_blocks);  // balanced
    plan.group_n = static_cast<int>(kb_group_n);
    c.stationary_block = kb_group_m * kTileRows;
  } else {
    plan.k_blocks = 1;
    plan.k_block_tiles = nk;
    plan.group_n = 1;
    // If not even one stationary tile fits, use one: the allocator then names the buffer.
    c.stationary_block = std::max<int64_t>(1, resident_tiles) * kTileRows;
  }
  c.k_block = plan.k_block_tiles * plan.k_tile;

  StatusOr<Program> prog = Program::Create(machine, c.cores);
  if (!prog.ok()) return prog.status();
  Program& p = *prog;
  HbmOperand a{-1, -1, eb, c.k}, b{-1, -1, eb, c.k};
  TRY_ASSIGN(a.data, p.AllocHbm("A", a.Bytes(c.m, c.k)));
  TRY_ASSIGN(b.data, p.AllocHbm("B", b.Bytes(c.n, c.k)));
  BufferId cc = -1;
  TRY_ASSIGN(cc, p.AllocHbm("C", c.m * c.n * 2));
  if (mx) {
    TRY_ASSIGN(a.scales, p.AllocHbm("A_scale", HbmOperand::ScaleBytes(c.m, c.k)));
    TRY_ASSIGN(b.scales, p.AllocHbm("B_scale", HbmOperand::ScaleBytes(c.n, c.k)));
  }
  for (size_t i = 0; i < plan.cores.size(); ++i) {
    CoreLowering lower(p, plan, static_cast<int>(i), plan.cores[i], a, b, cc);
    if (Status s = lower.Run(); !s.ok()) {
      return Status(s.code(), what + " on " + machine.name + " core " + std::to_string(i) +
                                  " (stationary_block " + std::to_string(c.stationary_block) +
                                  ", k_block " + std::to_string(c.k_block) + ", n_tile " +
                                  std::to_string(c.n_tile) + ", " + std::to_string(c.b_buffers) +
                                  " moving buffers): " + s.message());
    }
  }
  for (const Stream& s : p.streams()) {
    for (const Instruction& in : s.instructions) plan.matmuls += in.op == Opcode::kMultiplyMoving;
  }
  return LoweredGemm{std::move(p), std::move(plan)};
}

}  // namespace trnmx::emu
