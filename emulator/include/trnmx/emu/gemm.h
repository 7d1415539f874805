// Lowering of C[M, N] (BF16) = A[M, K] x B[K, N] onto one or more NeuronCores.
//
// TensorE computes psum[M', N'] = stationary[K, M']^T x moving[K, N'] with
// M' <= 128 and N' <= one PSUM bank (trainium.md section 5). Either A^T is
// stationary and B moving (PSUM tiles of C), or B stationary and A^T moving
// (PSUM tiles of C^T): `placement`. Cores split C into a grid and share
// nothing but HBM. By default the placement, the grid and the blocking are
// the ones with the least estimated time (cost.h EstimateKernel: TensorE
// cycles, DMA engine time with fixed costs and the per-partition efficiency,
// HBM bytes over the stack bandwidth, the first loads and the last store).
// Per core:
//   * stationary tiles of 128 rows are kept in SBUF for a block of
//     `stationary_block` rows; moving panels of `n_tile` columns stream
//     through `moving_buffers` SBUF buffers (2 = double buffering); both arrive in
//     up to 4 pieces along K so the matmuls start before they have landed;
//   * K is split into blocks of `k_block` elements. When all of K fits
//     (one block), the stationary block stays resident while every moving
//     panel streams past it, and each 128 x n_tile output tile accumulates
//     over K in one PSUM bank. When it does not, the output tiles of a group
//     (`stationary_block` rows x `group_n` panels, at most all the PSUM
//     banks) stay in their PSUM accumulation groups while the K blocks of
//     both operands stream through SBUF (the stationary block double
//     buffered), so any K fits; the group is evacuated after the last block;
//   * one LoadStationary + MultiplyMoving per K tile (128 BF16/FP32, 256 FP8
//     double-row, 512 MX); PSUM banks rotate over the output tiles so
//     evacuation overlaps compute;
//   * VectorE and ScalarE take turns evacuating PSUM (FP32 -> BF16) into
//     `out_buffers` staging strips of `store_tiles` tiles, and a DMA queue
//     writes each strip to C in one transfer.
// DMA queues: load_a, load_b, store. Semaphores: stationary_ready,
// stationary_free, moving_ready, moving_free, mm_done, evac_vector,
// evac_scalar, stored.
//
// Unless fixed by the config, the block sizes, moving buffers and output
// tiles per store are chosen with the placement and grid: among the plans
// that fit SBUF, the least estimated time. A tiling that does not fit is rejected with
// RESOURCE_EXHAUSTED naming the SBUF/PSUM buffer and the sizes; so is a GEMM whose program would
// pass the program's instruction budget (checked before appending).
//
// Two ways to lower:
//
//   // A program of its own, with A, B, C (and MX scales) in HBM:
//   LoweredGemm g = LowerGemm(machine, {.m = 4096, .n = 4096, .k = 4096,
//                                       .dtype = MatmulDtype::kMxfp8, .cores = 8}).value();
//
//   // Into an existing program, against its buffers, after another kernel:
//   GemmPlan plan = PlanGemm(machine, config).value();
//   GemmOperands ops{.a = x, .b = w, .c = y, .a_scales = xs, .b_scales = ws,
//                    .start_after = {...}, .done_signals = {{next_ready, 1}}};
//   LoweredGemmKernel k = LowerGemmInto(program, plan, ops).value();
//   // next_ready reaches k.stores once all of C is in HBM.
#ifndef TRNMX_EMU_GEMM_H_
#define TRNMX_EMU_GEMM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "trnmx/emu/cost.h"
#include "trnmx/emu/machine.h"
#include "trnmx/emu/program.h"
#include "trnmx/status.h"

namespace trnmx::emu {

// Which operand TensorE holds stationary. kAuto picks the one whose best
// grid and blocking has the least estimated time (cost.h EstimateKernel).
enum class OperandPlacement { kAuto, kAStationary, kBStationary };

struct GemmConfig {
  int64_t m = 0, n = 0, k = 0;
  MatmulDtype dtype = MatmulDtype::kBf16;
  int cores = 1;
  // Rows of the stationary operand kept in SBUF per block, a multiple of
  // 128; 0 = chosen (the largest that fits when all of K is resident).
  int64_t stationary_block = 0;
  // Contraction elements per SBUF block, a multiple of the matmul K tile;
  // 0 = chosen (all of K when it fits and reads no more HBM).
  int64_t k_block = 0;
  int64_t n_tile = 0;      // moving free size per matmul; 0 = one PSUM bank (512 FP32)
  int moving_buffers = 0;  // moving panel buffers (>= 2); 0 = chosen (2 to 4)
  // Output tiles per store DMA (a strip of one moving panel's tiles of a
  // block); 0 = chosen (1, or 1, 2, 4 or 8 times what makes 4 KiB per
  // partition, the DMA efficiency knee of trainium.md section 7; at most a
  // block's tiles).
  int store_tiles = 0;
  int out_buffers = 4;  // output staging strips of store_tiles tiles each (>= 1)
  OperandPlacement placement = OperandPlacement::kAuto;
  // The kernel plans for 1 / on_chip_share of each core's usable SBUF and
  // PSUM banks, so that that many kernels fit on chip at once (pipelined
  // kernels, GemmOperands::keep_on_chip); 1 .. the PSUM banks.
  int on_chip_share = 1;
};

struct CoreGemmTile {
  int64_t row0 = 0, rows = 0;  // C rows this core computes
  int64_t col0 = 0, cols = 0;  // C columns
};

struct GemmPlan {
  GemmConfig config;  // with stationary_block, k_block and n_tile resolved
  // B stationary: TensorE computes C^T tiles (stationary B[K, 128 columns],
  // moving A^T[K, n_tile rows]); the stationary/moving roles below swap.
  bool b_stationary = false;
  // MultiplyMoving cycles of the busiest core for each placement on the
  // default grid (as many cores along the stationary rows as there are
  // 128-row tiles; no throttle).
  int64_t tensor_cycles_a_stationary = 0, tensor_cycles_b_stationary = 0;
  int64_t k_tile = 0;          // contraction per matmul
  int64_t k_tiles = 0;         // ceil(K / k_tile)
  int64_t k_block_tiles = 0;   // K tiles per SBUF block
  int64_t k_blocks = 0;        // ceil(k_tiles / k_block_tiles); 1 = all of K resident
  int group_n = 1;             // moving panels per PSUM-resident group (K blocking)
  int grid_m = 1, grid_n = 1;  // cores along M and N
  std::vector<CoreGemmTile> cores;
  int64_t matmuls = 0;      // MultiplyMoving instructions, all cores
  double flops = 0;         // 2 M N K
  KernelEstimate estimate;  // of the chosen placement, grid and blocking (cost.h)
};

// What one TensorE MultiplyMoving or one PSUM evacuation of a lowered GEMM
// computes, for the functional mode (functional.h). Ranges are in the
// orientation of the instruction: `stat` indexes the stationary operand's
// rows (rows of A, or columns of B when B is stationary), `mov` the moving
// operand's columns (columns of B, or rows of A); the PSUM tile is
// [stat_rows x mov_cols] FP32 (a tile of C, or of C^T).
struct GemmTileOp {
  enum class Kind : uint8_t { kMatmul, kEvacuate };
  Kind kind = Kind::kMatmul;
  StreamId stream = -1;  // the instruction: program.streams()[stream].instructions[index]
  int32_t index = -1;
  BufferId psum = -1;
  int64_t stat0 = 0, stat_rows = 0;
  int64_t mov0 = 0, mov_cols = 0;
  int64_t k0 = 0, k_len = 0;  // matmul: contraction range, without MX zero padding
  bool accumulate = false;    // matmul: add to the PSUM tile (false: start a new group)
};

struct LoweredGemm {
  Program program;
  GemmPlan plan;
  std::vector<GemmTileOp> tile_ops;  // every MultiplyMoving and evacuation, in append order
};

// Bytes of one element in HBM (MX: data only; scales are K/32 per row/column).
double GemmElementBytes(MatmulDtype dtype);

// Validates the config and chooses placement, core grid and blocking.
StatusOr<GemmPlan> PlanGemm(const Machine& machine, const GemmConfig& config);

// Where a GEMM lowered into an existing program reads and writes. HBM
// layouts: A [M, K] and B as [N, K] (K contiguous per row), their MX scales
// [M, K/32] and [N, K/32] E8M0, C [M, N] BF16 row-major, each from its byte
// offset in a live HBM buffer of `chip`.
struct GemmOperands {
  BufferId a = -1, b = -1, c = -1;
  BufferId a_scales = -1, b_scales = -1;  // MX only
  int64_t a_offset = 0, b_offset = 0, c_offset = 0, a_scales_offset = 0, b_scales_offset = 0;
  int chip = 0;
  // The kernel runs on cores first_core .. first_core + config.cores - 1 of
  // the chip (indices on the chip).
  int first_core = 0;
  // Empty, or one list per core of the kernel: semaphore waits (on that
  // core's semaphores) before its first loads. The kernel's SBUF and PSUM
  // buffers are freed at its end and may be reused by the next kernel on
  // the same cores, which must therefore start after this one's stores.
  std::vector<std::vector<SemWait>> start_after;
  // Signalled by every store of C (semaphores of the chip, any core): each
  // reaches its increment x LoweredGemmKernel::stores when C is complete.
  std::vector<SemSignal> done_signals;
  // True: the SBUF and PSUM buffers stay allocated (LoweredGemmKernel::
  // on_chip), so that a next kernel gets others and may start before this
  // one ends (prefetching its operands); the caller frees them once no
  // later kernel can still be running alongside this one.
  bool keep_on_chip = false;
};

struct LoweredGemmKernel {
  GemmPlan plan;
  std::vector<GemmTileOp> tile_ops;  // every MultiplyMoving and evacuation, in append order
  int64_t stores = 0;                // stores of C, each signalling done_signals
  std::vector<BufferId> on_chip;     // GemmOperands::keep_on_chip: its buffers, still allocated
};

// Appends the GEMM of `plan` to `program`: its own DMA queues and semaphores
// on each core, on-chip buffers allocated and freed again at the end (or
// kept: GemmOperands::keep_on_chip).
StatusOr<LoweredGemmKernel> LowerGemmInto(Program& program, const GemmPlan& plan,
                                          const GemmOperands& operands);

// A, B, C (and the MX scales) of `config` in the HBM of `chip`, named
// prefix + "A", "B", "C", "A_scale", "B_scale", as GemmOperands of that chip.
StatusOr<GemmOperands> AllocGemmOperands(Program& program, const GemmConfig& config, int chip = 0,
                                         const std::string& prefix = "");

// PlanGemm, a program of config.cores cores with A, B, C (and the MX scales,
// "A_scale", "B_scale") in HBM, and LowerGemmInto.
StatusOr<LoweredGemm> LowerGemm(const Machine& machine, const GemmConfig& config,
                                const ProgramOptions& options = {});

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_GEMM_H_
