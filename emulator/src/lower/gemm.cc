// GEMM lowering: tiling to 128 partitions, PSUM accumulation groups, K
// blocking, double buffering (see the header for the schedule).
#include "trnmx/emu/gemm.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cost/cost_model.h"
#include "lower/try.h"
#include "trnmx/emu/cost.h"

namespace trnmx::emu {
namespace {

// The PSUM banks a kernel plans for and uses: its share of the core's
// (GemmConfig::on_chip_share, validated by PlanGemm).
int KernelPsumBanks(const Machine& m, const GemmConfig& c) {
  return static_cast<int>(m.psum.banks.value) / c.on_chip_share;
}

constexpr int64_t kTileRows = 128;  // stationary rows per matmul (PE columns)
using internal::CeilDiv;
using internal::RoundUp;

constexpr int64_t kMaxPieces = 4;  // DMA pieces per operand tile along K
// Smallest DMA piece, in bytes per partition: 8 KiB keeps the fixed cost per
// transfer to about a tenth of its time (trainium.md section 7).
constexpr int64_t kMinPieceBytes = 8192;

// K tiles per DMA piece of an operand tile of `k_tiles` K tiles with
// `bytes_per_k_tile` bytes per partition each.
int64_t PieceTiles(int64_t k_tiles, int64_t bytes_per_k_tile) {
  const int64_t min_tiles = std::max<int64_t>(1, CeilDiv(kMinPieceBytes, bytes_per_k_tile));
  return std::max(min_tiles, CeilDiv(k_tiles, std::min(k_tiles, kMaxPieces)));
}

bool IsMx(MatmulDtype d) { return d == MatmulDtype::kMxfp8 || d == MatmulDtype::kMxfp4; }

std::string Indexed(const char* prefix, int64_t i) {
  return std::string(prefix) + "[" + std::to_string(i) + "]";
}
// "a_stat[3]": matrix letter, role, index.
std::string Name(char letter, const char* role, size_t i) {
  return std::string(1, letter) + role + "[" + std::to_string(i) + "]";
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

// An operand matrix in HBM as the lowering sees it: rows x K, K contiguous
// per row (A as [M, K]; B as [N, K]). Offsets and sizes name the bytes a
// transfer moves; the strides of the real layouts are not modelled.
struct HbmOperand {
  char letter = 'a';  // 'a' or 'b': names the SBUF buffers and the DMA queue
  BufferId data = -1;
  BufferId scales = -1;  // MX: E8M0, one byte per 32 elements of K
  double element_bytes = 0;
  int64_t k = 0;
  int64_t data_offset = 0, scales_offset = 0;  // where the matrix starts in its buffers
  // Rows [row, row + rows) x K range [k0, k0 + kc).
  int64_t Offset(int64_t row, int64_t rows, int64_t k0) const {
    return data_offset + static_cast<int64_t>(std::floor(row * k * element_bytes)) +
           static_cast<int64_t>(std::floor(rows * k0 * element_bytes));
  }
  int64_t Bytes(int64_t rows, int64_t kc) const {
    return static_cast<int64_t>(std::ceil(rows * kc * element_bytes));
  }
  int64_t ScaleOffset(int64_t row, int64_t rows, int64_t k0) const {
    return scales_offset + row * (k / 32) + rows * (k0 / 32);
  }
  static int64_t ScaleBytes(int64_t rows, int64_t kc) { return rows * (kc / 32); }
};

// SBUF bytes per partition of the buffers a core allocates, in allocation
// order, each start aligned as the allocator does.
struct SbufLayout {
  const Machine& m;
  MatmulDtype dtype;
  int64_t n_tile;
  int moving_buffers, out_buffers, store_tiles;

  int64_t Aligned(int64_t b) const {
    const int64_t align = static_cast<int64_t>(m.sbuf.alignment_bytes.value);
    return RoundUp(b, align);
  }
  // One stationary tile holding `k_tiles` K tiles, with its share of the
  // set's MX scale buffer (rounded up: an upper bound for sizing blocks).
  int64_t StationaryTile(int64_t k_tiles) const {
    return Aligned(k_tiles * TensorOperandBytesPerPartition(m, dtype, kTileRows)) +
           (IsMx(dtype) ? Aligned(k_tiles * MxScaleBytesPerPartition(kTileRows)) : 0);
  }
  // `sets` stationary sets of `tiles` tiles each, as allocated.
  int64_t StationarySets(int64_t sets, int64_t tiles, int64_t k_tiles) const {
    return sets *
           (tiles * Aligned(k_tiles * TensorOperandBytesPerPartition(m, dtype, kTileRows)) +
            (IsMx(dtype) ? Aligned(tiles * k_tiles * MxScaleBytesPerPartition(kTileRows)) : 0));
  }
  // The moving panels and output staging tiles.
  int64_t MovingAndOutput(int64_t k_tiles) const {
    return moving_buffers *
               (Aligned(k_tiles * TensorOperandBytesPerPartition(m, dtype, n_tile)) +
                (IsMx(dtype) ? Aligned(k_tiles * MxScaleBytesPerPartition(n_tile)) : 0)) +
           out_buffers * Aligned(2 * n_tile * store_tiles);
  }
  int64_t Total(int64_t sets, int64_t tiles, int64_t k_tiles) const {
    return StationarySets(sets, tiles, k_tiles) + MovingAndOutput(k_tiles);
  }
};

struct Sems {
  SemId stat_ready, stat_free, mov_ready, mov_free, mm_done, evac[2], stored;
};

class CoreLowering {
 public:
  // `tile`: rows of the stationary operand x columns of the moving one
  // (C's rows x columns, or C's columns x rows when B is stationary).
  CoreLowering(Program& p, const GemmPlan& plan, int core, const CoreGemmTile& tile,
               const HbmOperand& stationary, const HbmOperand& moving, BufferId c_hbm,
               int64_t c_offset, const std::vector<SemWait>& start_after,
               const std::vector<SemSignal>& done_signals, std::vector<GemmTileOp>* tile_ops)
      : p_(p),
        plan_(plan),
        cfg_(plan.config),
        core_(core),
        tile_(tile),
        stat_(stationary),
        mov_(moving),
        c_hbm_(c_hbm),
        c_offset_(c_offset),
        start_after_(start_after),
        done_signals_(done_signals),
        tile_ops_(tile_ops) {}

  int64_t stores() const { return stores_; }
  // The on-chip buffers, still allocated after Run(keep_on_chip = true).
  const std::vector<BufferId>& on_chip() const { return on_chip_; }

  Status Run(bool keep_on_chip) {
    const Machine& m = p_.machine();
    const MatmulDtype d = cfg_.dtype;
    const bool mx = IsMx(d);
    const int64_t kt = plan_.k_tile;
    const int64_t nk = plan_.k_tiles;
    const int64_t kb_tiles = plan_.k_block_tiles;
    const bool resident = plan_.k_blocks == 1;  // the stationary block keeps all of K
    const int stat_sets = resident ? 1 : 2;     // K blocks of the stationary are double-buffered
    const int64_t n_tile = std::min(cfg_.n_tile, tile_.cols);
    const int64_t m_tiles_total = CeilDiv(tile_.rows, kTileRows);
    const int64_t block_tiles = std::min(CeilDiv(cfg_.stationary_block, kTileRows), m_tiles_total);
    const int64_t n_tiles = CeilDiv(tile_.cols, n_tile);
    const int64_t group_n = resident ? 1 : std::min<int64_t>(plan_.group_n, n_tiles);
    const int banks = KernelPsumBanks(m, cfg_);
    const int k_parts = TensorOperandPartitions(m, d, std::min(cfg_.k, kt));

    // Buffers: stationary tiles (stat_sets x block_tiles), moving panels, output staging, PSUM
    // banks.
    const int64_t stat_tile_bytes = TensorOperandBytesPerPartition(m, d, kTileRows);  // per K tile
    const int64_t stat_bytes = kb_tiles * stat_tile_bytes;
    const int64_t mov_tile_bytes = TensorOperandBytesPerPartition(m, d, n_tile);  // per K tile
    // Stationary tiles (stat_sets x block_tiles); the MX scales of a set's
    // tiles share one buffer and arrive in one transfer.
    std::vector<BufferId> stat(stat_sets * block_tiles), stat_s(stat_sets, -1);
    std::vector<BufferId> mov(cfg_.moving_buffers), mov_s(cfg_.moving_buffers, -1);
    for (size_t i = 0; i < stat.size(); ++i) {
      TRY_ASSIGN(stat[i], p_.AllocSbuf(core_, Name(stat_.letter, "_stat", i), stat_bytes));
    }
    if (mx) {
      for (int i = 0; i < stat_sets; ++i) {
        TRY_ASSIGN(stat_s[i],
                   p_.AllocSbuf(core_, Name(stat_.letter, "_stat_scale", i),
                                block_tiles * kb_tiles * MxScaleBytesPerPartition(kTileRows)));
      }
    }
    for (int i = 0; i < cfg_.moving_buffers; ++i) {
      TRY_ASSIGN(mov[i],
                 p_.AllocSbuf(core_, Name(mov_.letter, "_panel", i), kb_tiles * mov_tile_bytes));
      if (mx) {
        TRY_ASSIGN(mov_s[i], p_.AllocSbuf(core_, Name(mov_.letter, "_panel_scale", i),
                                          kb_tiles * MxScaleBytesPerPartition(n_tile)));
      }
    }
    std::vector<BufferId> out(cfg_.out_buffers), acc(banks);
    for (int i = 0; i < cfg_.out_buffers; ++i) {
      TRY_ASSIGN(out[i], p_.AllocSbuf(core_, Indexed("c_out", i), 2 * n_tile * cfg_.store_tiles));
    }
    for (int i = 0; i < banks; ++i) {
      TRY_ASSIGN(acc[i], p_.AllocPsum(core_, Indexed("acc", i), 4 * n_tile));
    }
    // Every on-chip buffer of the kernel is freed at its end (below).
    for (const std::vector<BufferId>* v : {&stat, &stat_s, &mov, &mov_s, &out, &acc}) {
      for (BufferId id : *v) {
        if (id >= 0) on_chip_.push_back(id);
      }
    }

    Sems s{};
    TRY_ASSIGN(s.stat_ready, p_.AddSemaphore(core_, "stationary_ready"));
    TRY_ASSIGN(s.stat_free, p_.AddSemaphore(core_, "stationary_free"));
    TRY_ASSIGN(s.mov_ready, p_.AddSemaphore(core_, "moving_ready"));
    TRY_ASSIGN(s.mov_free, p_.AddSemaphore(core_, "moving_free"));
    TRY_ASSIGN(s.mm_done, p_.AddSemaphore(core_, "mm_done"));
    TRY_ASSIGN(s.evac[0], p_.AddSemaphore(core_, "evac_vector"));
    TRY_ASSIGN(s.evac[1], p_.AddSemaphore(core_, "evac_scalar"));
    TRY_ASSIGN(s.stored, p_.AddSemaphore(core_, "stored"));
    TRY_ASSIGN(q_stat_, p_.AddDmaQueue(core_, std::string("load_") + stat_.letter));
    TRY_ASSIGN(q_mov_, p_.AddDmaQueue(core_, std::string("load_") + mov_.letter));
    TRY_ASSIGN(q_out_, p_.AddDmaQueue(core_, "store"));
    pe_ = p_.EngineStream(core_, EngineKind::kTensor);
    evac_stream_[0] = p_.EngineStream(core_, EngineKind::kVector);
    evac_stream_[1] = p_.EngineStream(core_, EngineKind::kScalar);

    int64_t stat_sets_loaded = 0;  // stationary block loads so far
    int64_t stat_signals = 0;      // stat_ready increments so far
    int64_t panels_loaded = 0;     // moving panel loads so far
    int64_t mov_signals = 0;       // mov_ready increments so far
    int64_t t = 0;                 // output tiles so far (PSUM bank rotation)
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
          const int64_t kt0 = kb * kb_tiles;                   // first K tile of the block
          const int64_t kts = std::min(kb_tiles, nk - kt0);    // K tiles in the block
          const int64_t k0 = kt0 * kt;                         // first K element
          const int64_t kc = std::min(kts * kt, cfg_.k - k0);  // K elements
          // Stationary block: loaded once per row block when all of K is
          // resident, else once per (group, K block) into alternating sets.
          const bool load_stat = !resident || g == 0;
          const int set = static_cast<int>(stat_sets_loaded % stat_sets);
          const int64_t stat_signal_base = stat_signals;
          // A panel arrives in up to 4 pieces along K, each signalling, so the
          // first matmuls start before it has fully landed; a piece keeps at
          // least kMinPieceBytes per partition, where the DMA fixed cost is
          // small. Stationary tiles (128 rows) are split the same way.
          const int64_t stat_piece = PieceTiles(kts, stat_tile_bytes);
          const int64_t mov_piece = PieceTiles(kts, mov_tile_bytes);
          const int64_t stat_tile_signals = CeilDiv(kts, stat_piece);
          const int64_t panel_signals = (mx ? 1 : 0) + CeilDiv(kts, mov_piece);
          if (load_stat) {
            std::vector<SemWait> waits;
            if (stat_sets_loaded >= stat_sets) {
              waits.push_back({s.stat_free, stat_sets_loaded - stat_sets + 1});
            }
            if (mx) {
              const int64_t set_rows = row_of(tiles_here - 1) + rows_of(tiles_here - 1) - row_of(0);
              Instruction sc = Instruction::DmaCopy(stat_.scales, stat_s[set],
                                                    HbmOperand::ScaleBytes(set_rows, kc), k_parts,
                                                    stat_.ScaleOffset(row_of(0), set_rows, k0));
              sc.waits = waits;
              sc.signals = {{s.stat_ready, 1}};
              StartAfter(q_stat_, sc);
              TRY(p_.Append(q_stat_, std::move(sc)));
            }
            for (int64_t i = 0; i < tiles_here; ++i) {
              const int64_t buf = set * block_tiles + i;
              // Tile 0's matmuls need all of the first panel, the next tiles
              // come later: with all of K resident and the panel the larger
              // (K blocks prefetch a whole block ahead), they wait until it
              // has landed so that it does not share the engines with them
              // (the first panel after this load signals mov_ready
              // panel_signals times). 1024 x 8192 x 8192 MXFP8 on 8 cores:
              // 77.9 -> 72.6 us.
              std::vector<SemWait> tile_waits = waits;
              if (i == 1 && resident && n_tile > kTileRows) {
                tile_waits.push_back({s.mov_ready, mov_signals + panel_signals});
              }
              TRY(LoadPieces(q_stat_, stat_, stat[buf], -1, row_of(i), rows_of(i), k0, kc,
                             stat_piece, stat_tile_bytes, k_parts, tile_waits, s.stat_ready));
            }
            ++stat_sets_loaded;
            stat_signals += (mx ? 1 : 0) + tiles_here * stat_tile_signals;
            panels_since_stat_ = 0;
          }
          const int64_t stat_set_signals = stat_signals;  // stat_ready once this set has landed
          const int cur_set = static_cast<int>((stat_sets_loaded - 1) % stat_sets);
          // The last use of the stationary set: its last group (resident) or this K block.
          const bool set_ends_here = !resident || g == groups - 1;
          for (int64_t jj = 0; jj < panels_here; ++jj, ++panels_loaded) {
            const int64_t j = first_n + jj;
            const int64_t col = tile_.col0 + j * n_tile;
            const int64_t cols = std::min(n_tile, tile_.col0 + tile_.cols - col);
            const int slot = static_cast<int>(panels_loaded % cfg_.moving_buffers);
            std::vector<SemWait> panel_waits;
            if (panels_loaded >= cfg_.moving_buffers) {
              panel_waits.push_back({s.mov_free, panels_loaded - cfg_.moving_buffers + 1});
            }
            // The second panel after a stationary load waits for that load, so
            // that the first panel's matmuls are not starved of stationary data.
            if (panels_since_stat_ == 1) panel_waits.push_back({s.stat_ready, stat_set_signals});
            ++panels_since_stat_;
            const int64_t mov_signal_base = mov_signals;
            TRY(LoadPieces(q_mov_, mov_, mov[slot], mov_s[slot], col, cols, k0, kc, mov_piece,
                           mov_tile_bytes, k_parts, panel_waits, s.mov_ready));
            mov_signals += panel_signals;
            for (int64_t i = 0; i < tiles_here; ++i) {
              const int64_t tile_index = t_group + jj * tiles_here + i;
              const int bank = static_cast<int>(tile_index % banks);
              const int64_t mm_m = mx ? RoundUp(rows_of(i), 2) : rows_of(i);
              const int64_t buf = cur_set * block_tiles + i;
              for (int64_t kk = 0; kk < kts; ++kk) {
                const int64_t kg = kt0 + kk;  // K tile of the whole contraction
                int64_t kcm = std::min(kt, cfg_.k - kg * kt);
                if (mx) kcm = RoundUp(kcm, 128);  // MX K tiles are multiples of 128 (zero-padded)
                Instruction ls =
                    Instruction::LoadStationary(stat[buf], d, kcm, mm_m, stat_s[cur_set]);
                // A queue completes in order: scales, then piece 0, 1, ...
                if (i == 0 && kk % mov_piece == 0) {  // this piece of the panel has landed
                  ls.waits.push_back(
                      {s.mov_ready, mov_signal_base + (mx ? 1 : 0) + kk / mov_piece + 1});
                }
                if (load_stat && jj == 0 &&
                    kk % stat_piece == 0) {  // ... and of the stationary tile
                  ls.waits.push_back({s.stat_ready, stat_signal_base + (mx ? 1 : 0) +
                                                        i * stat_tile_signals + kk / stat_piece +
                                                        1});
                }
                if (kg == 0 && tile_index >= banks) {  // the bank's previous tile was evacuated
                  const int64_t u = tile_index - banks;
                  ls.waits.push_back({s.evac[u % 2], u / 2 + 1});
                }
                TRY(p_.Append(pe_, std::move(ls)));
                Instruction mm = Instruction::MultiplyMoving(mov[slot], acc[bank], d, kcm, mm_m,
                                                             cols, kg > 0, mov_s[slot]);
                if (kk == kts - 1) {
                  if (kg == nk - 1) mm.signals.push_back({s.mm_done, 1});
                  if (i == tiles_here - 1) mm.signals.push_back({s.mov_free, 1});
                  if (i == tiles_here - 1 && jj == panels_here - 1 && set_ends_here) {
                    mm.signals.push_back({s.stat_free, 1});
                  }
                }
                RecordTileOp(GemmTileOp::Kind::kMatmul, pe_, acc[bank], row_of(i), rows_of(i), col,
                             cols, kg * kt, std::min(kt, cfg_.k - kg * kt), kg > 0);
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
    // The buffers are free for the next kernel, which must start after this
    // one's stores (GemmOperands::start_after): the program cannot see reuse.
    // Kept, the caller frees them (GemmOperands::keep_on_chip).
    if (!keep_on_chip) {
      for (BufferId id : on_chip_) TRY(p_.Free(id));
    }
    return OkStatus();
  }

 private:
  // The kernel's first transfer on `queue` waits for start_after; everything
  // else of the kernel follows its loads.
  void StartAfter(StreamId queue, Instruction& in) {
    if (queue_started_[queue == q_stat_ ? 0 : 1]) return;
    queue_started_[queue == q_stat_ ? 0 : 1] = true;
    in.waits.insert(in.waits.end(), start_after_.begin(), start_after_.end());
  }

  // Appends to `queue` the loads of `rows` rows x K range [k0, k0 + kc) of
  // `src` into `data` (and MX `scales`): the scales in one transfer first,
  // then the data in pieces of `chunk_tiles` K tiles; each signals `ready`.
  Status LoadPieces(StreamId queue, const HbmOperand& src, BufferId data, BufferId scales,
                    int64_t row, int64_t rows, int64_t k0, int64_t kc, int64_t chunk_tiles,
                    int64_t bytes_per_k_tile, int k_parts, const std::vector<SemWait>& waits,
                    SemId ready) {
    if (scales >= 0) {
      Instruction sc = Instruction::DmaCopy(src.scales, scales, HbmOperand::ScaleBytes(rows, kc),
                                            k_parts, src.ScaleOffset(row, rows, k0));
      sc.waits = waits;
      sc.signals = {{ready, 1}};
      StartAfter(queue, sc);
      TRY(p_.Append(queue, std::move(sc)));
    }
    const int64_t kt = plan_.k_tile;
    for (int64_t piece = 0; piece * chunk_tiles * kt < kc; ++piece) {
      const int64_t pk0 = k0 + piece * chunk_tiles * kt;
      const int64_t pkc = std::min(chunk_tiles * kt, k0 + kc - pk0);
      Instruction ld =
          Instruction::DmaCopy(src.data, data, src.Bytes(rows, pkc), k_parts,
                               src.Offset(row, rows, pk0), piece * chunk_tiles * bytes_per_k_tile);
      ld.waits = waits;
      ld.signals = {{ready, 1}};
      StartAfter(queue, ld);
      TRY(p_.Append(queue, std::move(ld)));
    }
    return OkStatus();
  }

  // Evacuates the `tiles` output tiles of one moving panel (PSUM -> SBUF,
  // FP32 -> BF16, alternating VectorE / ScalarE) into staging strips of
  // store_tiles tiles and stores each strip to C in one DMA (rows of 128
  // partitions x several tiles: fewer, larger transfers, trainium.md section 7).
  template <typename RowOf, typename RowsOf>
  Status Evacuate(const Sems& s, int64_t& t, int64_t tiles, const RowOf& row_of,
                  const RowsOf& rows_of, int64_t col, int64_t cols,
                  const std::vector<BufferId>& acc, const std::vector<BufferId>& out,
                  int64_t (&evac_count)[2]) {
    const int64_t per_strip = cfg_.store_tiles;
    const int64_t tile_bytes = 2 * std::min(cfg_.n_tile, tile_.cols);  // per partition, in a strip
    for (int64_t i0 = 0; i0 < tiles; i0 += per_strip) {
      const int64_t n = std::min(per_strip, tiles - i0);
      const int o = static_cast<int>(strips_ % cfg_.out_buffers);
      int64_t strip_bytes = 0;
      for (int64_t i = i0; i < i0 + n; ++i, ++t) {
        const int e = static_cast<int>(t % 2);
        const int bank = static_cast<int>(t % static_cast<int64_t>(acc.size()));
        const int64_t rows = rows_of(i);
        Instruction ev =
            Instruction::Elementwise(Opcode::kTensorCopy, out[o], acc[bank], static_cast<int>(rows),
                                     cols, ElemType::kFp32, ElemType::kBf16);
        ev.dst_offset = (i - i0) * tile_bytes;
        ev.waits = {{s.mm_done, t + 1}};
        if (i == i0 && strips_ >= cfg_.out_buffers) {  // the strip's buffer was stored
          ev.waits.push_back({s.stored, strips_ - cfg_.out_buffers + 1});
        }
        ev.signals = {{s.evac[e], 1}};
        RecordTileOp(GemmTileOp::Kind::kEvacuate, evac_stream_[e], acc[bank], row_of(i), rows, col,
                     cols, 0, 0, false);
        TRY(p_.Append(evac_stream_[e], std::move(ev)));
        ++evac_count[e];
        strip_bytes += rows * cols * 2;
      }
      // The strip is C[rows.., col..], or C^T when B is stationary.
      const int64_t c_element =
          plan_.b_stationary ? col * cfg_.n + row_of(i0) : row_of(i0) * cfg_.n + col;
      Instruction st = Instruction::DmaCopy(
          out[o], c_hbm_, strip_bytes, static_cast<int>(rows_of(i0)), 0, c_offset_ + c_element * 2);
      for (int e = 0; e < 2; ++e) {
        if (evac_count[e] > 0) st.waits.push_back({s.evac[e], evac_count[e]});
      }
      st.signals = {{s.stored, 1}};
      st.signals.insert(st.signals.end(), done_signals_.begin(), done_signals_.end());
      ++stores_;
      ++strips_;
      TRY(p_.Append(q_out_, std::move(st)));
    }
    return OkStatus();
  }

  // Notes what the instruction about to be appended to `stream` computes.
  void RecordTileOp(GemmTileOp::Kind kind, StreamId stream, BufferId psum, int64_t stat0,
                    int64_t stat_rows, int64_t mov0, int64_t mov_cols, int64_t k0, int64_t k_len,
                    bool accumulate) {
    GemmTileOp op;
    op.kind = kind;
    op.stream = stream;
    op.index = static_cast<int32_t>(p_.streams()[static_cast<size_t>(stream)].instructions.size());
    op.psum = psum;
    op.stat0 = stat0;
    op.stat_rows = stat_rows;
    op.mov0 = mov0;
    op.mov_cols = mov_cols;
    op.k0 = k0;
    op.k_len = k_len;
    op.accumulate = accumulate;
    tile_ops_->push_back(op);
  }

  Program& p_;
  const GemmPlan& plan_;
  const GemmConfig& cfg_;
  int core_;
  CoreGemmTile tile_;
  HbmOperand stat_, mov_;
  BufferId c_hbm_;
  int64_t c_offset_;
  const std::vector<SemWait>& start_after_;
  const std::vector<SemSignal>& done_signals_;
  std::vector<GemmTileOp>* tile_ops_;
  std::vector<BufferId> on_chip_;
  bool queue_started_[2] = {false, false};  // stationary, moving load queue
  int64_t stores_ = 0;
  int64_t strips_ = 0;  // staging strips filled so far (stores of C)
  StreamId q_stat_ = -1, q_mov_ = -1, q_out_ = -1, pe_ = -1;
  StreamId evac_stream_[2] = {-1, -1};
  int64_t panels_since_stat_ = 0;  // moving panels loaded since the last stationary load
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

// The core grid and per-core tiles of one operand placement, in its own
// coordinates: rows of the stationary operand (M, or N when B is stationary)
// x columns of the moving one.
struct Orientation {
  int grid_rows = 1, grid_cols = 1;
  std::vector<CoreGemmTile> tiles;
  int64_t tensor_cycles = 0;  // MultiplyMoving cycles of the busiest core
};

// The core grid (grid_rows x grid_cols cores) and per-core tiles of one
// operand placement, in its own coordinates.
Orientation Orient(const Machine& machine, const GemmConfig& c, int64_t k_tiles, bool b_stationary,
                   int grid_rows) {
  const int64_t rows = b_stationary ? c.n : c.m;
  const int64_t cols = b_stationary ? c.m : c.n;
  Orientation o;
  o.grid_rows = grid_rows;
  o.grid_cols = c.cores / grid_rows;
  for (const auto& [r0, r] : Split(rows, o.grid_rows, kTileRows)) {
    for (const auto& [c0, n] : Split(cols, o.grid_cols, std::min<int64_t>(c.n_tile, kTileRows))) {
      o.tiles.push_back({r0, r, c0, n});
    }
  }
  // TensorE cycles per core: every (128-row tile, n_tile panel) pair runs
  // k_tiles matmuls; the tiles are full ones and at most one tail each way.
  auto mm_cycles = [&](int64_t m, int64_t n) {
    if (IsMx(c.dtype)) m = RoundUp(m, 2);  // MX stationary free size is even
    return TensorCycles(machine, Instruction::MultiplyMoving(-1, -1, c.dtype, 1, m, n, false));
  };
  for (const CoreGemmTile& t : o.tiles) {
    const int64_t n_tile = std::min(c.n_tile, t.cols);
    const std::pair<int64_t, int64_t> stationary_tiles[] = {{kTileRows, t.rows / kTileRows},
                                                            {t.rows % kTileRows, 1}};
    const std::pair<int64_t, int64_t> panels[] = {{n_tile, t.cols / n_tile}, {t.cols % n_tile, 1}};
    int64_t cycles = 0;
    for (const auto& [m, m_count] : stationary_tiles) {
      for (const auto& [n, n_count] : panels) {
        if (m > 0 && n > 0) cycles += m_count * n_count * k_tiles * mm_cycles(m, n);
      }
    }
    o.tensor_cycles = std::max(o.tensor_cycles, cycles);
  }
  return o;
}

// The default grid of a placement: as many cores along the stationary rows
// as there are 128-row tiles, the rest along the columns. The report's
// TensorE cycles per placement are on it, and it is the one grid the planner
// tries that may leave cores without work (a small GEMM on many cores).
int DefaultGridRows(const GemmConfig& c, bool b_stationary) {
  const int64_t row_tiles = CeilDiv(b_stationary ? c.n : c.m, kTileRows);
  for (int g = c.cores; g >= 1; --g) {
    if (c.cores % g == 0 && g <= row_tiles) return g;
  }
  return 1;
}

// How one core runs its tile: all of K resident (k_blocks = 1) or K blocks
// with a PSUM-resident group of output tiles.
struct Blocking {
  int64_t block_tiles = 1;  // stationary tiles per block (K blocks: rows of the group)
  int64_t group_n = 1;      // panels per group (K blocks)
  int64_t k_block_tiles = 1, k_blocks = 1;
  int moving_buffers = 3, store_tiles = 1;
  bool fits = false;
};

// The blockings worth estimating for a core tile of rows x cols (stationary
// x moving) with `moving_buffers` panel buffers and `store_tiles` output
// tiles per store: all of K resident (the most stationary tiles that fit,
// balanced over the blocks) and K blocks (the group of at most all PSUM
// banks that reads the least HBM, the largest K block that fits with two
// stationary sets). The config's explicit choices are kept.
std::vector<Blocking> Blockings(const Machine& machine, const GemmConfig& c, int64_t k_tiles,
                                int64_t rows, int64_t cols, int moving_buffers, int store_tiles) {
  const double eb = GemmElementBytes(c.dtype);
  const int banks = KernelPsumBanks(machine, c);
  const int64_t core_m_tiles = CeilDiv(rows, kTileRows);
  const int64_t n_tile = std::min(c.n_tile, cols);
  const int64_t core_n_tiles = CeilDiv(cols, n_tile);
  const int64_t nk = k_tiles;
  const int64_t sbuf = machine.sbuf_usable_bytes_per_partition() / c.on_chip_share;
  const SbufLayout layout{machine, c.dtype, n_tile, moving_buffers, c.out_buffers, store_tiles};
  const int64_t user_tiles = c.stationary_block / kTileRows;  // 0 = choose
  std::vector<Blocking> out;

  // (a) All of K resident.
  if (c.k_block == 0 || c.k_block / MatmulMaxK(machine, c.dtype) >= nk) {
    Blocking b;
    b.moving_buffers = moving_buffers;
    b.store_tiles = store_tiles;
    int64_t tiles = user_tiles;
    if (tiles == 0) {
      const int64_t budget = sbuf - layout.MovingAndOutput(nk);
      const int64_t fit = budget > 0 ? budget / layout.StationaryTile(nk) : 0;
      tiles = std::min(fit, core_m_tiles);
      if (tiles > 0) tiles = CeilDiv(core_m_tiles, CeilDiv(core_m_tiles, tiles));
    }
    b.block_tiles = std::max<int64_t>(1, tiles);
    b.fits = tiles > 0 && layout.Total(1, std::min(tiles, core_m_tiles), nk) <= sbuf;
    out.push_back(b);
  }
  // (b) K blocks.
  const bool k_block_forced = c.k_block > 0 && c.k_block / MatmulMaxK(machine, c.dtype) < nk;
  if (nk > 1 && (c.k_block == 0 || k_block_forced)) {
    Blocking b;
    b.moving_buffers = moving_buffers;
    b.store_tiles = store_tiles;
    if (user_tiles > 0) {
      b.block_tiles = std::min(user_tiles, core_m_tiles);
      b.group_n = std::clamp<int64_t>(banks / b.block_tiles, 1, core_n_tiles);
    } else {
      double best = -1;
      for (int64_t gm = 1; gm <= banks; gm *= 2) {
        const int64_t gm_eff = std::min(gm, core_m_tiles);
        const int64_t gn_eff = std::clamp<int64_t>(banks / gm, 1, core_n_tiles);
        const double traffic = OperandTraffic(rows, cols, c.k, eb, CeilDiv(core_n_tiles, gn_eff),
                                              CeilDiv(core_m_tiles, gm_eff));
        if (best < 0 || traffic < best) {
          best = traffic;
          b.block_tiles = gm_eff;
          b.group_n = gn_eff;
        }
      }
    }
    int64_t fit = 0;
    if (b.block_tiles * b.group_n <= banks) {
      int64_t lo = 0, hi = nk;  // largest K tiles per block that fit
      while (lo < hi) {
        const int64_t mid = (lo + hi + 1) / 2;
        if (layout.Total(2, b.block_tiles, mid) <= sbuf) {
          lo = mid;
        } else {
          hi = mid - 1;
        }
      }
      fit = lo;
    }
    const int64_t kb = c.k_block > 0 ? c.k_block / MatmulMaxK(machine, c.dtype) : fit;
    b.fits = fit > 0 && kb <= fit;
    b.k_blocks = CeilDiv(nk, std::max<int64_t>(1, kb));
    b.k_block_tiles = CeilDiv(nk, b.k_blocks);  // balanced
    out.push_back(b);
  }
  for (Blocking& b : out) {
    if (b.k_blocks == 1) b.k_block_tiles = nk;
  }
  return out;
}

// The estimate (cost.h) of running `blocking` on the cores of `o`: the
// transfers of its busiest core counted from the schedule of CoreLowering.
KernelEstimate EstimateBlocking(const Machine& machine, const GemmConfig& c, int64_t k_tile,
                                const Orientation& o, const Blocking& b) {
  int64_t rows = 0, cols = 0;
  for (const CoreGemmTile& t : o.tiles) {
    rows = std::max(rows, t.rows);
    cols = std::max(cols, t.cols);
  }
  const double eb = GemmElementBytes(c.dtype);
  const bool mx = IsMx(c.dtype);
  const int64_t n_tile = std::min(c.n_tile, cols);
  const int64_t m_tiles = CeilDiv(rows, kTileRows), n_tiles = CeilDiv(cols, n_tile);
  const int64_t kb = b.k_block_tiles, kc = kb * k_tile;
  const int k_parts = TensorOperandPartitions(machine, c.dtype, std::min(c.k, k_tile));
  const bool resident = b.k_blocks == 1;
  const int64_t block_tiles = std::min(b.block_tiles, m_tiles);
  const int64_t blocks = CeilDiv(m_tiles, block_tiles);
  const int64_t group_n = resident ? 1 : std::min(b.group_n, n_tiles);
  const int64_t groups = resident ? 1 : CeilDiv(n_tiles, group_n);
  // Loads: stationary tiles and moving panels, each in pieces along K.
  const int64_t stat_loads = m_tiles * groups * b.k_blocks;
  const int64_t panel_loads = blocks * n_tiles * b.k_blocks;
  const int64_t stat_piece =
      PieceTiles(kb, TensorOperandBytesPerPartition(machine, c.dtype, kTileRows));
  const int64_t mov_piece =
      PieceTiles(kb, TensorOperandBytesPerPartition(machine, c.dtype, n_tile));
  const auto bytes = [&](int64_t r, int64_t k) {
    return static_cast<int64_t>(std::ceil(static_cast<double>(r) * static_cast<double>(k) * eb));
  };
  const DmaTransfers stat{stat_loads * CeilDiv(kb, stat_piece),
                          bytes(kTileRows, std::min(kc, stat_piece * k_tile)), k_parts};
  const DmaTransfers mov{panel_loads * CeilDiv(kb, mov_piece),
                         bytes(n_tile, std::min(kc, mov_piece * k_tile)), k_parts};
  KernelLoad load;
  load.tensor_cycles = o.tensor_cycles;
  load.transfers = {stat, mov};
  load.prologue = {{1, stat.bytes, k_parts}, {1, mov.bytes, k_parts}};
  if (mx) {
    load.transfers.push_back(
        {stat_loads / block_tiles, block_tiles * kTileRows * (kc / 32), k_parts});
    load.transfers.push_back({panel_loads, n_tile * (kc / 32), k_parts});
  }
  // Stores: the output tiles (128 x n_tile BF16) of each moving panel of a
  // block, in strips of store_tiles (CoreLowering::Evacuate), so a strip
  // holds at most a block's tiles and a block's last strip may be shorter.
  // The last strip's store follows the last matmul: the epilogue.
  const int64_t strip = std::min<int64_t>(b.store_tiles, block_tiles);
  const int64_t tile_bytes = kTileRows * n_tile * 2;
  const auto stores = [&](int64_t count, int64_t tiles) {
    if (count > 0 && tiles > 0) {
      load.transfers.push_back({count, tiles * tile_bytes, static_cast<int>(kTileRows)});
    }
  };
  const int64_t full_blocks = m_tiles / block_tiles, tail_tiles = m_tiles % block_tiles;
  stores(n_tiles * full_blocks * (block_tiles / strip), strip);
  stores(n_tiles * full_blocks, block_tiles % strip);
  stores(n_tiles * (tail_tiles / strip), strip);
  stores(n_tiles, tail_tiles % strip);
  const int64_t last_block = tail_tiles > 0 ? tail_tiles : block_tiles;
  const int64_t last_strip = last_block % strip > 0 ? last_block % strip : strip;
  load.epilogue = {{1, last_strip * tile_bytes, static_cast<int>(kTileRows)}};
  // Cores with work on the busiest HBM stack (cores 2i, 2i + 1 share stack i).
  const int per_stack =
      std::max(1, machine.core_count() / static_cast<int>(machine.hbm.stacks.value));
  load.cores_per_stack = std::min(per_stack, static_cast<int>(o.tiles.size()));
  return EstimateKernel(machine, load);
}

}  // namespace

double GemmElementBytes(MatmulDtype dtype) {
  switch (dtype) {
    case MatmulDtype::kBf16:
      return 2;
    case MatmulDtype::kFp8:
    case MatmulDtype::kMxfp8:
      return 1;
    case MatmulDtype::kMxfp4:
      return 0.5;
    case MatmulDtype::kFp32:
      return 4;
  }
  return 1;
}

StatusOr<GemmPlan> PlanGemm(const Machine& machine, const GemmConfig& config) {
  GemmPlan plan;
  plan.config = config;
  GemmConfig& c = plan.config;
  const std::string what = "gemm " + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                           std::to_string(c.k) + " " + std::string(MatmulDtypeName(c.dtype));
  if (c.m < 1 || c.n < 1 || c.k < 1) return InvalidArgumentError(what + ": M, N, K must be >= 1");
  // Operands and C must fit HBM; checked in floating point before any size
  // is formed in 64-bit integers.
  const double eb = GemmElementBytes(c.dtype);
  const double hbm_need =
      (static_cast<double>(c.m) + static_cast<double>(c.n)) * static_cast<double>(c.k) * eb +
      2.0 * static_cast<double>(c.m) * static_cast<double>(c.n);
  if (hbm_need > machine.hbm.capacity_bytes.value) {
    return ResourceExhaustedError(what + ": A, B and C need " + std::to_string(hbm_need / 1e9) +
                                  " GB of HBM; " + machine.name + " has " +
                                  std::to_string(machine.hbm.capacity_bytes.value / 1e9) + " GB");
  }
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
  if (c.moving_buffers != 0 && c.moving_buffers < 2) {
    return InvalidArgumentError(what + ": moving_buffers must be >= 2 (0 = chosen)");
  }
  if (c.out_buffers < 1) return InvalidArgumentError(what + ": out_buffers must be >= 1");
  if (c.store_tiles < 0) return InvalidArgumentError(what + ": store_tiles must be >= 0");
  const int64_t bank_fp32 = static_cast<int64_t>(machine.psum.bank_bytes_per_partition.value) / 4;
  const int machine_banks = static_cast<int>(machine.psum.banks.value);
  if (c.on_chip_share < 1 || c.on_chip_share > machine_banks) {
    return InvalidArgumentError(what + ": on_chip_share = " + std::to_string(c.on_chip_share) +
                                " must be in [1, " + std::to_string(machine_banks) +
                                "] (the PSUM banks)");
  }
  const int banks = KernelPsumBanks(machine, c);
  if (c.n_tile == 0) c.n_tile = bank_fp32;
  if (c.n_tile < 1 || c.n_tile > bank_fp32) {
    return InvalidArgumentError(what + ": n_tile = " + std::to_string(c.n_tile) +
                                " must be in [1, " + std::to_string(bank_fp32) +
                                "] (one PSUM bank of FP32 per output tile)");
  }
  if (c.stationary_block < 0 || c.stationary_block % kTileRows != 0) {
    return InvalidArgumentError(what + ": stationary_block = " +
                                std::to_string(c.stationary_block) + " must be a multiple of 128");
  }
  plan.k_tile = MatmulMaxK(machine, c.dtype);
  plan.k_tiles = CeilDiv(c.k, plan.k_tile);
  if (c.k_block < 0 || c.k_block % plan.k_tile != 0) {
    return InvalidArgumentError(what + ": k_block = " + std::to_string(c.k_block) +
                                " must be a multiple of the matmul K tile " +
                                std::to_string(plan.k_tile));
  }
  plan.flops = 2.0 * static_cast<double>(c.m) * static_cast<double>(c.n) * static_cast<double>(c.k);

  // Placement, core grid and blocking: every placement the config allows,
  // every grid of the cores (rows x columns of the placement's output),
  // every blocking (all of K resident or K blocks, 2-4 moving buffers, 1 or
  // enough output tiles per store for 4 KiB per partition) that fits SBUF;
  // the one with the least estimated time (cost.h EstimateKernel) wins, ties
  // keep the earlier (A before B, more cores along the stationary rows).
  for (bool b : {false, true}) {
    const Orientation o = Orient(machine, c, plan.k_tiles, b, DefaultGridRows(c, b));
    (b ? plan.tensor_cycles_b_stationary : plan.tensor_cycles_a_stationary) = o.tensor_cycles;
  }
  const int64_t knee = static_cast<int64_t>(machine.dma.efficiency_knee_bytes_per_partition.value);
  struct Choice {
    bool b_stationary = false;
    Orientation orient;
    Blocking blocking;
    KernelEstimate estimate;
  };
  std::optional<Choice> best, fallback[2];  // fallback: [0] all of K resident, [1] K blocks
  for (bool b : {false, true}) {
    if (c.placement == (b ? OperandPlacement::kAStationary : OperandPlacement::kBStationary)) {
      continue;
    }
    const int64_t rows = b ? c.n : c.m, cols = b ? c.m : c.n;
    for (int g = c.cores; g >= 1; --g) {
      // Grids that leave cores without work only as the old default (a
      // small GEMM on many cores).
      if (c.cores % g != 0 ||
          (g != DefaultGridRows(c, b) &&
           (g > CeilDiv(rows, kTileRows) ||
            c.cores / g > CeilDiv(cols, std::min<int64_t>(c.n_tile, kTileRows))))) {
        continue;
      }
      const Orientation o = Orient(machine, c, plan.k_tiles, b, g);
      int64_t max_rows = 0, max_cols = 0;
      for (const CoreGemmTile& t : o.tiles) {
        max_rows = std::max(max_rows, t.rows);
        max_cols = std::max(max_cols, t.cols);
      }
      const int64_t n_tile = std::min(c.n_tile, max_cols);
      // Output tiles per store: 1, and strips of 1, 2, 4 and 8 times the DMA
      // efficiency knee (4 KiB per partition, trainium.md section 7): fewer
      // per-transfer fixed costs (ibid.), more SBUF, a longer last store.
      // A strip holds one panel's tiles of a block, so never more than the
      // core's 128-row tiles.
      std::vector<int> store_options = {c.store_tiles};
      if (c.store_tiles == 0) {
        store_options = {1};
        const int64_t knee_tiles = CeilDiv(knee, 2 * n_tile);
        const int64_t row_tiles = CeilDiv(max_rows, kTileRows);
        for (int64_t f : {1, 2, 4, 8}) {
          const int64_t tiles = std::min(knee_tiles * f, row_tiles);
          if (tiles > store_options.back()) store_options.push_back(static_cast<int>(tiles));
        }
      }
      std::vector<int> buffer_options = {c.moving_buffers};
      if (c.moving_buffers == 0) buffer_options = {4, 3, 2};
      for (int mb : buffer_options) {
        for (int st : store_options) {
          for (const Blocking& blk :
               Blockings(machine, c, plan.k_tiles, max_rows, max_cols, mb, st)) {
            Choice ch{b, o, blk, {}};
            if (!blk.fits) {
              // Nothing may fit: keep the first such plan of each kind so the
              // allocator names the buffer that is too large (3 moving
              // buffers unless fixed, one tile per store unless fixed).
              std::optional<Choice>& f = fallback[blk.k_blocks > 1 ? 1 : 0];
              if (!f && (c.moving_buffers != 0 || mb == 3) && st == store_options[0]) f = ch;
              continue;
            }
            ch.estimate = EstimateBlocking(machine, c, plan.k_tile, o, blk);
            if (!best || ch.estimate.total_ps < best->estimate.total_ps) best = ch;
          }
        }
      }
    }
  }
  // With nothing that fits, K blocks of one K tile (unless the config fixes
  // the stationary block or all of K) make the allocator name the moving
  // panel or the staging tiles.
  const std::optional<Choice>& fb =
      fallback[1] && (c.stationary_block == 0 || !fallback[0]) ? fallback[1] : fallback[0];
  if (!best && !fb) {
    return InvalidArgumentError(what + ": no core grid of " + std::to_string(c.cores) +
                                " core(s) fits the shape");
  }
  const Choice& chosen = best ? *best : *fb;
  if (!best && chosen.blocking.k_blocks > 1 && c.stationary_block > 0 &&
      chosen.blocking.block_tiles * chosen.blocking.group_n > banks) {
    return ResourceExhaustedError(
        what + ": stationary_block " + std::to_string(c.stationary_block) +
        " with K blocks keeps " + std::to_string(chosen.blocking.block_tiles) +
        " accumulation groups live in PSUM, which has " + std::to_string(banks) + " banks");
  }
  plan.b_stationary = chosen.b_stationary;
  plan.estimate = chosen.estimate;
  const Orientation& orient = chosen.orient;
  plan.grid_m = plan.b_stationary ? orient.grid_cols : orient.grid_rows;
  plan.grid_n = plan.b_stationary ? orient.grid_rows : orient.grid_cols;
  for (const CoreGemmTile& t : orient.tiles) {
    plan.cores.push_back(plan.b_stationary ? CoreGemmTile{t.col0, t.cols, t.row0, t.rows} : t);
  }
  const Blocking& blk = chosen.blocking;
  plan.k_blocks = blk.k_blocks;
  plan.k_block_tiles = blk.k_block_tiles;
  plan.group_n = static_cast<int>(blk.k_blocks > 1 ? blk.group_n : 1);
  c.stationary_block = blk.block_tiles * kTileRows;
  c.moving_buffers = blk.moving_buffers;
  // A chosen strip is at most the block's tiles (Evacuate's strips).
  c.store_tiles = config.store_tiles > 0
                      ? blk.store_tiles
                      : static_cast<int>(std::min<int64_t>(blk.store_tiles, blk.block_tiles));
  c.k_block = plan.k_block_tiles * plan.k_tile;

  // MultiplyMoving instructions: every (128-row tile, moving panel) pair of
  // every core runs one per K tile.
  for (const CoreGemmTile& t : orient.tiles) {
    plan.matmuls +=
        CeilDiv(t.rows, kTileRows) * CeilDiv(t.cols, std::min(c.n_tile, t.cols)) * plan.k_tiles;
  }
  return plan;
}

// At least as many instructions as LowerGemmInto appends for `plan`, found
// without appending any: each matmul comes with its LoadStationary, each
// output tile with an evacuation and a store, and each operand tile load is
// at most kMaxPieces transfers plus one for MX scales.
int64_t GemmInstructionBound(const GemmPlan& plan) {
  const GemmConfig& c = plan.config;
  int64_t bound = 0;
  for (const CoreGemmTile& ct : plan.cores) {
    const int64_t rows = plan.b_stationary ? ct.cols : ct.rows;  // stationary rows
    const int64_t cols = plan.b_stationary ? ct.rows : ct.cols;  // moving columns
    const int64_t m_tiles = CeilDiv(rows, kTileRows);
    const int64_t n_tiles = CeilDiv(cols, std::min(c.n_tile, cols));
    const int64_t block_tiles = std::min(CeilDiv(c.stationary_block, kTileRows), m_tiles);
    const int64_t blocks = CeilDiv(m_tiles, block_tiles);
    const bool resident = plan.k_blocks == 1;
    const int64_t groups =
        resident ? 1 : CeilDiv(n_tiles, std::min<int64_t>(plan.group_n, n_tiles));
    const int64_t stationary_loads = m_tiles * groups * plan.k_blocks;
    const int64_t panel_loads = blocks * n_tiles * plan.k_blocks;
    bound += 2 * m_tiles * n_tiles * plan.k_tiles + 2 * m_tiles * n_tiles +
             (kMaxPieces + 1) * (stationary_loads + panel_loads);
  }
  return bound;
}

StatusOr<LoweredGemmKernel> LowerGemmInto(Program& p, const GemmPlan& plan,
                                          const GemmOperands& ops) {
  const GemmConfig& c = plan.config;
  const Machine& machine = p.machine();
  const std::string what = "gemm " + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                           std::to_string(c.k) + " " + std::string(MatmulDtypeName(c.dtype));
  if (ops.chip < 0 || ops.chip >= p.chips()) {
    return InvalidArgumentError(what + ": chip " + std::to_string(ops.chip) + " outside [0, " +
                                std::to_string(p.chips()) + ")");
  }
  if (ops.first_core < 0 || ops.first_core + c.cores > p.cores_per_chip()) {
    return InvalidArgumentError(what + ": cores [" + std::to_string(ops.first_core) + ", " +
                                std::to_string(ops.first_core + c.cores) +
                                ") of a chip outside the "
                                "program's " +
                                std::to_string(p.cores_per_chip()));
  }
  if (!ops.start_after.empty() && ops.start_after.size() != static_cast<size_t>(c.cores)) {
    return InvalidArgumentError(what + ": start_after has " +
                                std::to_string(ops.start_after.size()) +
                                " entries; needs one per core (" + std::to_string(c.cores) + ")");
  }
  const int64_t bound = GemmInstructionBound(plan);
  if (bound > p.max_instructions() - p.instruction_count()) {
    return ResourceExhaustedError(
        what + " on " + std::to_string(c.cores) + " core(s) needs up to " + std::to_string(bound) +
        " instructions (" + std::to_string(plan.matmuls) + " matmuls); the program has room for " +
        std::to_string(p.max_instructions() - p.instruction_count()) +
        " (ProgramOptions::max_instructions): emulate a smaller GEMM or more cores");
  }
  const bool mx = IsMx(c.dtype);
  const double eb = GemmElementBytes(c.dtype);
  HbmOperand a{'a', ops.a, ops.a_scales, eb, c.k, ops.a_offset, ops.a_scales_offset};
  HbmOperand b{'b', ops.b, ops.b_scales, eb, c.k, ops.b_offset, ops.b_scales_offset};
  // Each operand must lie in an HBM buffer of the chip, offsets included.
  struct Need {
    const char* name;
    BufferId id;
    int64_t offset, bytes;
  };
  std::vector<Need> needs = {{"A", a.data, a.data_offset, a.Bytes(c.m, c.k)},
                             {"B", b.data, b.data_offset, b.Bytes(c.n, c.k)},
                             {"C", ops.c, ops.c_offset, c.m * c.n * 2}};
  if (mx) {
    needs.push_back({"A scales", a.scales, a.scales_offset, HbmOperand::ScaleBytes(c.m, c.k)});
    needs.push_back({"B scales", b.scales, b.scales_offset, HbmOperand::ScaleBytes(c.n, c.k)});
  }
  for (const Need& n : needs) {
    if (n.id < 0 || n.id >= static_cast<BufferId>(p.buffers().size())) {
      return InvalidArgumentError(what + ": " + n.name + " is not a buffer of the program");
    }
    const Buffer& buf = p.buffers()[n.id];
    if (buf.space != MemSpace::kHbm || buf.chip != ops.chip || !buf.live) {
      return InvalidArgumentError(what + ": " + n.name + " '" + buf.name +
                                  "' must be a live HBM buffer of chip " +
                                  std::to_string(ops.chip));
    }
    if (n.offset < 0 || n.bytes > buf.bytes - n.offset) {
      return InvalidArgumentError(what + ": " + n.name + " needs " + std::to_string(n.bytes) +
                                  " B at offset " + std::to_string(n.offset) + " of '" + buf.name +
                                  "' (" + std::to_string(buf.bytes) + " B)");
    }
  }
  LoweredGemmKernel kernel;
  kernel.plan = plan;
  for (size_t i = 0; i < plan.cores.size(); ++i) {
    const CoreGemmTile& t = plan.cores[i];
    // The core's tile in stationary rows x moving columns.
    const CoreGemmTile tile = plan.b_stationary ? CoreGemmTile{t.col0, t.cols, t.row0, t.rows} : t;
    const int core = p.CoreId(ops.chip, ops.first_core + static_cast<int>(i));
    static const std::vector<SemWait> kNone;
    CoreLowering lower(p, plan, core, tile, plan.b_stationary ? b : a, plan.b_stationary ? a : b,
                       ops.c, ops.c_offset, ops.start_after.empty() ? kNone : ops.start_after[i],
                       ops.done_signals, &kernel.tile_ops);
    if (Status s = lower.Run(ops.keep_on_chip); !s.ok()) {
      return Status(s.code(),
                    what + " on " + machine.name + " core " + std::to_string(i) + " (" +
                        (plan.b_stationary ? "B" : "A") + " stationary, stationary_block " +
                        std::to_string(c.stationary_block) + ", k_block " +
                        std::to_string(c.k_block) + ", n_tile " + std::to_string(c.n_tile) + ", " +
                        std::to_string(c.moving_buffers) + " moving buffers): " + s.message());
    }
    kernel.stores += lower.stores();
    if (ops.keep_on_chip) {
      kernel.on_chip.insert(kernel.on_chip.end(), lower.on_chip().begin(), lower.on_chip().end());
    }
  }
  return kernel;
}

StatusOr<GemmOperands> AllocGemmOperands(Program& p, const GemmConfig& c, int chip,
                                         const std::string& prefix) {
  const HbmOperand shape{'a', -1, -1, GemmElementBytes(c.dtype), c.k};
  GemmOperands ops;
  ops.chip = chip;
  TRY_ASSIGN(ops.a, p.AllocHbm(prefix + "A", shape.Bytes(c.m, c.k), chip));
  TRY_ASSIGN(ops.b, p.AllocHbm(prefix + "B", shape.Bytes(c.n, c.k), chip));
  TRY_ASSIGN(ops.c, p.AllocHbm(prefix + "C", c.m * c.n * 2, chip));
  if (IsMx(c.dtype)) {
    TRY_ASSIGN(ops.a_scales,
               p.AllocHbm(prefix + "A_scale", HbmOperand::ScaleBytes(c.m, c.k), chip));
    TRY_ASSIGN(ops.b_scales,
               p.AllocHbm(prefix + "B_scale", HbmOperand::ScaleBytes(c.n, c.k), chip));
  }
  return ops;
}

StatusOr<LoweredGemm> LowerGemm(const Machine& machine, const GemmConfig& config,
                                const ProgramOptions& options) {
  StatusOr<GemmPlan> plan = PlanGemm(machine, config);
  if (!plan.ok()) return plan.status();
  const GemmConfig& c = plan->config;
  StatusOr<Program> prog = Program::Create(machine, c.cores, options);
  if (!prog.ok()) return prog.status();
  Program& p = *prog;
  StatusOr<GemmOperands> ops = AllocGemmOperands(p, c);
  if (!ops.ok()) return ops.status();
  StatusOr<LoweredGemmKernel> kernel = LowerGemmInto(p, *plan, *ops);
  if (!kernel.ok()) return kernel.status();
  return LoweredGemm{std::move(p), std::move(kernel->plan), std::move(kernel->tile_ops)};
}

}  // namespace trnmx::emu
