// Lowering of flash attention (forward) onto the engines of one chip, as the
// NKI flash-attention kernels do it (trainium.md section 11; docs/emulator.md
// "Attention lowering").
//
// Q [B, Hq, Sq, D], K and V [B, Hkv, L, D] and O [B, Hq, Sq, D] (BF16, or
// MXFP8 codes + E8M0 scales for Q, K and V) live in HBM. The query rows of
// one (batch, KV head) are packed query-major, row = i * G + h (G = Hq / Hkv
// query heads per KV head), and cut into row tiles of 128: a decode step's G
// heads share one tile and one K/V load (GQA/MQA). Keys are cut into KV tiles
// of `kv_tile` keys aligned at 0, the tiles of the numerics contract of
// trnmx/attention.h (step 4). Per (row tile, KV tile) step:
//   TensorE   S = Q K^T into PSUM (FP32; D in chunks of the matmul K tile);
//   GpSimdE   the causal/window mask of a tile the mask cuts (iota into
//             SBUF), added to S by VectorE; a tile no row of the row tile may
//             see is skipped, with its load when no row tile needs it;
//   VectorE   m_t = row max of S; m_new = max(m, m_t);
//   ScalarE   alpha = exp(m - m_new); P = exp(S - m_new) (BF16) with the
//             fused row sum, after loading the exp table set once; or, on
//             NeuronCore-v4, VectorE's `exponential` when the cost model
//             says the busier of the two engines finishes sooner;
//   VectorE   l = l alpha + rowsum;
//   TensorE   P^T by transposes of 128 keys into PSUM; VectorE or ScalarE
//             (the less loaded) copies it to SBUF, or VectorE quantizes it
//             to MXFP8 (QuantizeMX) for an MXFP8 PV product;
//   TensorE   P V into PSUM (128 keys per matmul in BF16, 512 in MXFP8);
//   VectorE   acc = acc alpha + P V;
// and after a row tile's last KV tile O = acc / l (BF16) is stored. The
// three TensorE stages run software-pipelined two steps apart, with PSUM and
// SBUF slots double-buffered behind semaphores; K/V arrive through
// `kv_buffers` slots on their own DMA queues, each load holding enough KV
// tiles for the 4 KiB-per-partition DMA knee; Q^T tiles are loaded per group.
//
// Cores: with several cores (an LNC=2 pair), a prefill shares the groups
// (batch, KV head, row tiles) out round robin; a decode (Sq <= 16) splits the
// keys: core s runs split s of every group (the contract's step 3 with
// kv_splits = cores), core 1 stores its (m, l, acc) to HBM and signals core
// 0 (a cross-core semaphore), and core 0 combines the two in split order
// (step 5) before it stores O.
//
// Budgets: every SBUF and PSUM buffer is allocated through the program's
// allocator; one that does not fit is RESOURCE_EXHAUSTED naming the buffer
// and the bytes per partition; so is a program past its instruction budget.
//
//   Machine m = LoadPresetMachine("trn3").value();
//   LoweredAttention a = LowerAttention(m, {.batch = 1, .heads = 32, .kv_heads = 8,
//                                           .seq = 4096, .head_dim = 128,
//                                           .causal = true}).value();
//   SimResult r = Simulate(a.program).value();
//   // a.plan.config.kv_tile and a.plan.config.kv_splits reproduce the tile
//   // schedule in trnmx::AttentionParams (kv_tile, kv_splits).
#ifndef TRNMX_EMU_ATTENTION_H_
#define TRNMX_EMU_ATTENTION_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "trnmx/emu/machine.h"
#include "trnmx/emu/program.h"
#include "trnmx/status.h"

namespace trnmx::emu {

// Which engine computes exp. kAuto: VectorE's `exponential` where the
// machine has it and the per-step load of the busier of VectorE and ScalarE
// is smaller with it (cost.h rules); ScalarE otherwise.
enum class ExpEngine : uint8_t { kAuto, kScalar, kVector };
std::string_view ExpEngineName(ExpEngine e);

struct AttentionConfig {
  int64_t batch = 1;
  int64_t heads = 1;                       // Hq
  int64_t kv_heads = 1;                    // Hkv, divides Hq
  int64_t seq = 0;                         // Sq, queries per sequence
  int64_t kv_seq = 0;                      // L, keys per sequence; 0: Sq
  int64_t head_dim = 0;                    // D of Q, K and V, 1..512
  bool causal = false;                     // bottom-right aligned, as trnmx/attention.h
  int64_t window = -1;                     // window_left (inclusive) of trnmx/attention.h; -1: none
  MatmulDtype dtype = MatmulDtype::kBf16;  // kBf16, or kMxfp8 (Q, K, V and P)
  int cores = 1;                           // 1 or 2 (an LNC=2 pair)
  // Keys per KV tile, a multiple of 128 up to the machine's moving free
  // size; 0: min(512, L rounded up to 128).
  int64_t kv_tile = 0;
  // Splits of the keys (trnmx/attention.h step 3): 0 chooses `cores` for a
  // decode (Sq <= 16) and 1 otherwise; else 1 or `cores`.
  int kv_splits = 0;
  ExpEngine exp_engine = ExpEngine::kAuto;
  int kv_buffers = 2;  // K/V tile slots (>= 2: double buffering)
  // Row tiles sharing one K/V load; 0: min(G, row tiles), fewer when their
  // buffers do not fit SBUF.
  int64_t tiles_per_load = 0;
};

struct AttentionPlan {
  AttentionConfig config;     // kv_seq, kv_tile, kv_splits, exp_engine, tiles_per_load resolved
  int64_t group_heads = 1;    // G
  int64_t rows = 0;           // packed query rows per (batch, KV head): G * Sq
  int64_t row_tiles = 0;      // ceil(rows / 128)
  int64_t kv_tiles = 0;       // ceil(L / kv_tile)
  int64_t split_keys = 0;     // keys per split (the contract's chunk)
  int64_t kv_load_tiles = 1;  // KV tiles per K/V load (4 KiB per partition of K^T)
  int64_t steps = 0;          // (row tile, KV tile) steps lowered, all cores
  int64_t masked_steps = 0;   // of which the mask cuts
  int64_t skipped_steps = 0;  // (row tile, KV tile) pairs no row may see
  int64_t kv_loads = 0;       // K/V tile loads, all cores
  // Vector/Scalar cycles of a full unmasked step with exp on each engine
  // (the kAuto choice compares max(vector, scalar) of the two).
  int64_t vector_cycles_scalar_exp = 0, scalar_cycles_scalar_exp = 0;
  int64_t vector_cycles_vector_exp = 0, scalar_cycles_vector_exp = 0;
  double flops = 0;  // 4 D per allowed (query, key) pair and query head
};

// One (row tile, KV tile) step in program order, for checking the schedule
// against the numerics contract (CheckAttentionSchedule).
struct AttentionStep {
  int core = 0;
  int64_t batch = 0, kv_head = 0;
  int64_t row0 = 0, rows = 0;  // packed rows (row = i * G + h)
  int split = 0;
  int64_t tile = 0;  // KV tile index: keys [tile * kv_tile, ...)
  int64_t key0 = 0, keys = 0;
  bool masked = false;
};

struct LoweredAttention {
  Program program;
  AttentionPlan plan;
  std::vector<AttentionStep> steps;  // per core in program order, cores in turn
};

StatusOr<LoweredAttention> LowerAttention(const Machine& machine, const AttentionConfig& config,
                                          const ProgramOptions& options = {});

// Checks that the lowered steps visit, for every query row of every head, the
// KV tiles that hold at least one of its allowed keys, each in the split the
// contract of trnmx/attention.h assigns it (steps 1, 3, 4 with the plan's
// kv_tile and kv_splits), in increasing order within each split, and no
// other; the error names the first row and tile that differ.
Status CheckAttentionSchedule(const LoweredAttention& lowered);

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_ATTENTION_H_
