// Multi-head attention forward, flash style: O = softmax(mask(score(Q K^T))) V
// per (batch, head), with the features of current LLMs (causal and sliding-
// window masks, GQA/MQA, logit soft-capping, learned attention sinks, ALiBi,
// variable-length batches, a paged KV cache, MX KV caches, a split-KV decode
// path) and an exact, target-independent numerics contract. docs/attention.md
// has the overview and worked examples.
//
// Shapes
//   Q [B, Hq, Sq, Dqk], K [B, Hkv, Skv, Dqk], V [B, Hkv, Skv, Dv], O [B, Hq,
//   Sq, Dv], LSE [B, Hq, Sq] (optional). Hq = G * Hkv (G = 1: MHA; Hkv = 1:
//   MQA); query head h reads KV head h / G. Dqk may differ from Dv (MLA,
//   DeepSeek-V3: 192 and 128). Any head dim >= 1.
//   Every tensor is an AttnOperand / AttnOutput: four extents [n, s, h, d]
//   (n = batch, or page of a paged cache; s = position; h = head; d = head
//   dim) with element strides for n, s and h; d is contiguous. BHSD and BSHD
//   are two choices of strides (AttnOperand::Bhsd / Bshd).
//   Variable-length batches (params.q_offsets / kv_offsets, B + 1 cumulative
//   offsets, the first 0): Q (and O, LSE) has n = 1 and sequence b is rows
//   [q_offsets[b], q_offsets[b + 1]) of its s extent; likewise K and V with
//   kv_offsets. params.kv_lengths (B entries) instead gives each sequence's
//   key count L_b <= Skv of a padded cache [B, Hkv, Skv, D]. Paged KV cache
//   (params.block_table): K and V have n = number of pages, s = page size P;
//   logical key j of sequence b is row j % P of page block_table[b *
//   block_table_stride + j / P]; kv_lengths is then required.
//   Sq_b, L_b: the query and key counts of sequence b.
//
// Formats
//   Q, K, V: FP32 or BF16 (widened exactly), or MX (OperandType::kMx): one
//   MxTensorView per (n, h), at mx[n * heads + h], of shape s x d, blocked
//   along the contraction of its product: Q and K along d (BlockAxis::kRows),
//   V along s (BlockAxis::kCols). Any MX format that gemm.h accepts; the KV
//   cache formats of interest are MXFP8 (E4M3, E5M2) and MXFP4. A paged MX V
//   needs a page size that is a multiple of 32. QuantizeAttnOperand makes an
//   MX operand from a dense one with a chosen scale rule (kOcpFloor default,
//   kNki as on Trainium).
//   P, the probabilities entering the PV product (params.p_type): kFp32
//   (default), kBf16 (round to nearest even), kMxfp8E4M3 / kMxfp8E5M2 (per
//   row, blocks of 32 keys aligned to multiples of 32 of the key index,
//   scale rule params.p_scale_rule, elements RNE with mx.h's default
//   options; a key outside the row's mask counts as 0 in its block). BF16 and
//   MXFP8 are what accelerators feed their matrix units; the row sum l below
//   always adds the FP32 p (as ScalarE's accumulating exp does on Trainium).
//   O: FP32 or BF16 (RNE of the FP32 result); LSE: FP32.
//
// Numerics contract (bits, not tolerances; identical on every Highway target
// and for every Executor / thread count). fl32(.) is one FP32 rounding (RNE);
// exp, log and tanh are trnmx's own fixed functions (src/internal/
// fixed_math.h: double arithmetic, one final rounding, never libm), shared by
// the kernel and the scalar reference (src/reference/attention_ref.h). For
// query row i of sequence b, head h (KV head g = h / G), with Sq = Sq_b and
// L = L_b, and the diagonal offset c = L - Sq (bottom-right alignment):
//   1. Mask: key j (0 <= j < L) is allowed iff j >= i + c - window_left
//      (when window_left >= 0) and j <= i + c + window_right (when
//      window_right >= 0); causal sets window_right = 0 (a given
//      window_right must then be 0 or -1). Windows are inclusive on both
//      sides: window (W, 0) lets a query see itself and W earlier keys. The
//      allowed keys of a row form one interval. Keys outside it are never
//      read (their K and V may hold anything, NaN included).
//   2. Score of an allowed key: r = the (Q_i, K_j) product over d by gemm.h's
//      contract for the operand pair (dense x dense: acc = +0, acc = fma(q_d,
//      k_d, acc) for d increasing; MX x MX: per 32-block exact sums, scaled,
//      added in block order; one MX operand: decoded to FP32, then dense).
//      s = fl32(r * scale), scale = params.scale or, if 0, fl32(1 /
//      sqrt(Dqk)) (sqrt and the division in double, correctly rounded by
//      IEEE; Dqk = 0 counts as 1).
//      Soft-capping (softcap > 0): s = fl32(softcap * tanh(fl32(s / softcap))).
//      ALiBi (alibi_slopes given): s = fl32(s - fl32(slope_h * |j - i - c|))
//      (|.| converted to FP32 exactly, distances < 2^24).
//   3. KV splits: keys [0, L) are cut into n_b splits of `chunk` keys (the
//      last may be shorter or empty): n_b = params.kv_splits when non-zero,
//      else 1 when Sq > 16 and min(32, ceil(L / 1024)) otherwise (decode);
//      then n_b = min(n_b, max(1, ceil(L / kv_tile))); chunk = ceil(L / n_b)
//      rounded up to a multiple of kv_tile. A function of the shape only,
//      never of the thread count.
//   4. Each split runs the online softmax over its KV tiles, the aligned key
//      ranges [t * kv_tile, (t + 1) * kv_tile), in increasing t, from the
//      state m = -Inf, l = 0, acc[0..Dv) = +0. For a tile holding at least
//      one allowed key of the row (others leave the state as it is):
//        m_t = max of its allowed scores (NaN if any is NaN);
//        m_new = max(m, m_t) (NaN-propagating); if m_new = -Inf, the tile
//          leaves the state as it is;
//        alpha = exp(fl32(m - m_new))   (0 when m = -Inf);
//        p_j = exp(fl32(s_j - m_new)) for each allowed key j, then +0
//          where below 2^-126 (subnormal p flushed, as accelerators' exp
//          units do: a subnormal operand makes x86 FMAs ~30x slower, and
//          peaked rows of long sequences have thousands; a flushed key
//          moves O by at most 2^-126 max|v| / l);
//        l = fl32(l * alpha), then l = fl32(l + p_j) for j increasing;
//        acc_d = fl32(acc_d * alpha) for every d, then acc continues with
//          the (P', V) product over the tile's allowed keys by gemm.h's
//          contract for the pair (P' = p rounded per p_type; dense x dense:
//          acc_d = fma(p'_j, v_jd, acc_d) for j increasing; MXFP8 P x MX V:
//          per aligned 32-key block, the exact sum over its allowed keys,
//          scaled, added in block order; one MX side: decoded to FP32);
//        m = m_new.
//   5. Combine, per row, over the states in this order: the sink state when
//      params.sinks is given (m = sinks[h], l = 1, acc = +0), then splits 0,
//      1, ..., n_b - 1; states with m = -Inf are skipped. M = their max
//      (NaN-propagating); L = +0, A_d = +0; per state in order: w = exp(
//      fl32(m_s - M)), L = fl32(L + fl32(l_s * w)), A_d = fl32(A_d +
//      fl32(acc_s,d * w)). Then O_d = fl32(A_d / L) and LSE = fl32(M +
//      log(L)). A sink therefore joins the softmax denominator only (gpt-oss),
//      and LSE includes it. With one split and no sink this is O_d =
//      fl32(acc_d / l), LSE = fl32(m + log(l)) (for finite m; an acc_d of
//      -0 becomes +0 in A_d).
//   6. A row with no allowed key and no sink (or whose states are all
//      skipped): O = +0 and LSE = -Inf. NaN and Inf inputs follow IEEE
//      through the operations above: a NaN or +Inf score among a row's
//      allowed keys makes the row's O and LSE NaN; a -Inf score gives p = 0.
//      A non-finite V row among the allowed keys reaches O through the fma
//      chain.
//
// Accuracy (tests/kernels/attention, against a naive reference that forms
// the full softmax in double): with FP32 P, the max-abs and the RMS error of
// O are each at most 2x those of a naive FP32 implementation, per test case,
// including long sequences and large logits. docs/attention.md lists the
// measured bounds of the BF16 and MXFP8 P options.
//
// Errors (Status; nothing written, O and LSE untouched): extents that do not
// agree (batch, heads, Dqk of Q and K, Skv and n of K and V, O's shape; K's
// n must be B unless kv_offsets or a block table is given, Q's n must be 1
// with q_offsets, where B = q_offsets.size() - 1), Hq not a multiple of
// Hkv, null or misaligned data with a non-zero extent, strides that let a
// tensor's last element overflow the address space, O's or LSE's strides
// making two outputs share memory (the strides must nest: sorted by size,
// each at least the span of the smaller dimensions, as every dense layout
// does), O or LSE overlapping an input or each other (byte bounds), MX views
// of the wrong count, shape, axis or format (per view, naming its index;
// NVFP4 is not an operand), kv_offsets given with kv_lengths or a block
// table, MXFP8 P with an MX V and a kv_offsets[b] (b < B) that is not a
// multiple of 32 (the exact block sums need V's blocks on the keys' aligned
// 32-blocks), a paged cache with page size 0 or block_table_stride 0 or a
// block table too short for the blocks a sequence uses,
// kv_tile 0 or not a multiple of 32, window_left or window_right < -1,
// causal with window_right > 0, softcap negative or not finite, scale not
// finite or negative, sinks or alibi_slopes of a length other than Hq or
// holding a non-finite value, q_offsets / kv_offsets not of length B + 1, not
// starting at 0, decreasing, or ending past the s extent (the message names
// the entry), kv_lengths of a length other than B or longer than the cache,
// a block table entry outside [0, pages) (named by sequence and block; only
// the blocks a sequence uses are read), a paged cache without kv_lengths,
// p_type MXFP8 with a scale rule it does not define, enum values outside
// their enums, a workspace shorter than AttentionWorkspaceBytes().
//
// Threads and memory: tasks over (sequence, KV head, block of 64 (query,
// head of the group) rows, split), the G query heads of a KV head together
// so that each K and V tile is read once; a sequence with several splits
// leaves each split's state in the workspace and a second pass combines
// them in the fixed order of step 5. Each row is computed by one task, so
// every thread count gives the same bits. A task with an MXFP8 V and few
// rows (every decode task) may run its PV product after all its tiles, per
// group of d, with the same operations per acc_d in the same order. A call
// allocates one workspace of AttentionWorkspaceBytes() bytes (per-thread
// tiles, including that task's P, and the split partials) unless the caller
// passes its own in params.workspace. executor == nullptr runs on the
// calling thread.
//
// Example (prefill, BF16, GQA 32/8, causal, BSHD, 2 threads):
//   trnmx::ThreadPoolExecutor pool(2);
//   auto q = trnmx::AttnOperand::Bshd(trnmx::OperandType::kBf16, qd, B, S, 32, 128);
//   auto k = trnmx::AttnOperand::Bshd(trnmx::OperandType::kBf16, kd, B, S, 8, 128);
//   auto v = trnmx::AttnOperand::Bshd(trnmx::OperandType::kBf16, vd, B, S, 8, 128);
//   auto o = trnmx::AttnOutput::Bshd(trnmx::OutputType::kBf16, od, B, S, 32, 128);
//   trnmx::AttentionParams p;
//   p.causal = true;
//   trnmx::Status s = trnmx::Attention(q, k, v, o, p, &pool);
#ifndef TRNMX_ATTENTION_H_
#define TRNMX_ATTENTION_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "trnmx/executor.h"
#include "trnmx/export.h"
#include "trnmx/mx.h"
#include "trnmx/mx_view.h"
#include "trnmx/options.h"
#include "trnmx/status.h"

namespace trnmx {

// An input tensor [n, s, h, d] (see the top): dense FP32 / BF16 with element
// strides, or MX with one view per (n, h).
struct AttnOperand {
  OperandType type = OperandType::kFp32;
  std::size_t n = 0;
  std::size_t s = 0;
  std::size_t h = 0;
  std::size_t d = 0;
  // Dense: float* or Bf16*; element (n, s, h, d) at
  // data[n * n_stride + s * s_stride + h * h_stride + d].
  const void* data = nullptr;
  std::size_t n_stride = 0;
  std::size_t s_stride = 0;
  std::size_t h_stride = 0;
  // MX: n * h views, the one of (n_i, h_j) at mx[n_i * h + h_j], each s x d.
  std::span<const MxTensorView> mx{};

  // [n, h, s, d] contiguous.
  static AttnOperand Bhsd(OperandType type, const void* data, std::size_t n, std::size_t h,
                          std::size_t s, std::size_t d) {
    return {type, n, s, h, d, data, h * s * d, d, s * d, {}};
  }
  // [n, s, h, d] contiguous (also the packed varlen layout [1, tokens, h, d]
  // and vLLM's paged cache [pages, page_size, h, d]).
  static AttnOperand Bshd(OperandType type, const void* data, std::size_t n, std::size_t s,
                          std::size_t h, std::size_t d) {
    return {type, n, s, h, d, data, s * h * d, h * d, d, {}};
  }
  static AttnOperand Mx(std::span<const MxTensorView> views, std::size_t n, std::size_t s,
                        std::size_t h, std::size_t d) {
    return {OperandType::kMx, n, s, h, d, nullptr, 0, 0, 0, views};
  }
};

// The output O [n, s, h, d], FP32 or BF16, same stride rules as AttnOperand.
struct AttnOutput {
  OutputType type = OutputType::kFp32;
  std::size_t n = 0;
  std::size_t s = 0;
  std::size_t h = 0;
  std::size_t d = 0;
  void* data = nullptr;
  std::size_t n_stride = 0;
  std::size_t s_stride = 0;
  std::size_t h_stride = 0;

  static AttnOutput Bhsd(OutputType type, void* data, std::size_t n, std::size_t h, std::size_t s,
                         std::size_t d) {
    return {type, n, s, h, d, data, h * s * d, d, s * d};
  }
  static AttnOutput Bshd(OutputType type, void* data, std::size_t n, std::size_t s, std::size_t h,
                         std::size_t d) {
    return {type, n, s, h, d, data, s * h * d, h * d, d};
  }
};

// The optional log-sum-exp output [n, h, s] (FP32), element (n, h, s) at
// data[n * n_stride + h * h_stride + s * s_stride]. data == nullptr: not
// written.
struct AttnLse {
  float* data = nullptr;
  std::size_t n_stride = 0;
  std::size_t h_stride = 0;
  std::size_t s_stride = 0;
};

// P before the PV product (see the top).
enum class AttnPType : std::uint8_t { kFp32, kBf16, kMxfp8E4M3, kMxfp8E5M2 };

struct AttentionParams {
  float scale = 0.0f;  // 0: fl32(1 / sqrt(Dqk)).
  bool causal = false;
  std::int64_t window_left = -1;          // Inclusive; -1: unbounded.
  std::int64_t window_right = -1;         // Inclusive; -1: unbounded (causal: 0).
  float softcap = 0.0f;                   // 0: off.
  std::span<const float> sinks{};         // Hq sink logits (gpt-oss), or empty.
  std::span<const float> alibi_slopes{};  // Hq slopes (AlibiSlopes()), or empty.
  // Variable-length batches: B + 1 cumulative offsets each, or empty.
  std::span<const std::int32_t> q_offsets{};
  std::span<const std::int32_t> kv_offsets{};
  // Keys per sequence (B), or empty: padded caches and the paged cache.
  std::span<const std::int32_t> kv_lengths{};
  // Paged cache: page of logical block k of sequence b at
  // block_table[b * block_table_stride + k], or empty (not paged).
  std::span<const std::int32_t> block_table{};
  std::size_t block_table_stride = 0;
  AttnPType p_type = AttnPType::kFp32;
  ScaleRule p_scale_rule = ScaleRule::kOcpFloor;  // MXFP8 P only.
  std::size_t kv_tile = 128;                      // Keys per online-softmax tile, a multiple of 32.
  std::size_t kv_splits = 0;                      // 0: the decode rule of step 3.
  // Caller-owned workspace of at least AttentionWorkspaceBytes(), or empty
  // (the call allocates it). 64-byte alignment is not required.
  std::span<std::byte> workspace{};
};

// Number of queries at or below which a sequence takes the split-KV decode
// rule of step 3.
inline constexpr std::size_t kAttnDecodeMaxQueries = 16;

// The n_b of step 3 for one sequence.
TRNMX_API std::size_t AttentionKvSplits(std::size_t queries, std::size_t keys,
                                        const AttentionParams& params);

// Bytes of workspace a call with these operands, params and executor needs
// (the same validation as Attention()).
TRNMX_API StatusOr<std::size_t> AttentionWorkspaceBytes(const AttnOperand& q, const AttnOperand& k,
                                                        const AttnOperand& v,
                                                        const AttentionParams& params,
                                                        Executor* executor = nullptr);

// O = attention(Q, K, V) and optionally LSE, by the contract at the top.
TRNMX_API Status Attention(const AttnOperand& q, const AttnOperand& k, const AttnOperand& v,
                           const AttnOutput& o, const AttentionParams& params = {},
                           Executor* executor = nullptr, const AttnLse& lse = {});

// Tile-level building blocks: steps 4 and 5 of the contract for callers
// that schedule the tiles and splits themselves (trnmx-emu attention
// --check replays a lowered Trainium program with them). They run the same
// kernel code as Attention(), so a schedule that visits, per row and split,
// the contract's tiles in order and combines the splits in order gives
// Attention()'s bits.
//
// One query row's online-softmax state: m, l and acc[Dv] of step 4. A
// default state with acc of Dv zeros is step 4's initial one.
struct AttnRowState {
  float m = -std::numeric_limits<float>::infinity();
  float l = 0.0f;
  std::vector<float> acc;  // Dv floats.
};

// Step 4 for one tile: updates states[u - row_begin] of each packed row u in
// [row_begin, row_end) of sequence b and KV head g (u = i * G + j is query i
// and query head g * G + j, G = Hq / Hkv) with the row's allowed keys in
// [key_begin, key_end), taken as one tile: a row with no allowed key there
// keeps its state. The contract's tiles are [t kv_tile, (t + 1) kv_tile)
// within a split (step 3); any range of at most params.kv_tile keys is
// accepted. Single-threaded; allocates one worker's scratch per call.
// Errors (Status; states untouched): those of Attention() without O and
// LSE, b >= B, g >= Hkv, row_end < row_begin or > G * Sq_b, key_end <
// key_begin or > L_b, more than params.kv_tile keys, states.size() !=
// row_end - row_begin, a state whose acc does not hold Dv floats.
TRNMX_API Status AttentionTile(const AttnOperand& q, const AttnOperand& k, const AttnOperand& v,
                               const AttentionParams& params, std::size_t b, std::size_t g,
                               std::size_t row_begin, std::size_t row_end, std::size_t key_begin,
                               std::size_t key_end, std::span<AttnRowState> states);

// Steps 5 and 6 for one row of query head h: combines the sink state (when
// params.sinks is given) and then `states` in order, writes O's row as FP32
// to o (Dv floats; a BF16 O is its RNE rounding) and the LSE to *lse
// (unless null). Errors (nothing written): params.sinks given and h >= its
// length or sinks[h] not finite, a state whose acc size is not o.size().
TRNMX_API Status AttentionCombine(std::span<const AttnRowState> states,
                                  const AttentionParams& params, std::size_t h, std::span<float> o,
                                  float* lse = nullptr);

// The standard ALiBi slopes for `heads` heads (Press et al.; the
// closest power of two n <= heads gets 2^(-8 (i + 1) / n), the rest the
// interleaved 2^(-4 (2 i + 1) / n)), computed with the fixed exp so the bits
// are the same everywhere. out must hold `heads` floats.
TRNMX_API Status AlibiSlopes(std::size_t heads, std::span<float> out);

// An MX operand that owns its codes and scales, made by QuantizeAttnOperand.
class TRNMX_API AttnMxTensor {
 public:
  AttnMxTensor(AttnMxTensor&&) noexcept;
  AttnMxTensor& operator=(AttnMxTensor&&) noexcept;
  ~AttnMxTensor();
  // The operand (views into this object; valid while it lives).
  AttnOperand operand() const;
  std::size_t bytes() const;  // Codes and scales held.

  struct Impl;

 private:
  friend StatusOr<AttnMxTensor> QuantizeAttnOperand(const AttnOperand&, MxFormat, BlockAxis,
                                                    const MxQuantizeOptions&);
  explicit AttnMxTensor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Quantizes a dense FP32 / BF16 operand to MX, per (n, h), blocked along
// `axis` (kRows for Q and K, kCols for V), with `options` (scale rule
// kOcpFloor by default, kNki as Trainium; options.axis is ignored).
TRNMX_API StatusOr<AttnMxTensor> QuantizeAttnOperand(const AttnOperand& dense, MxFormat format,
                                                     BlockAxis axis,
                                                     const MxQuantizeOptions& options = {});

}  // namespace trnmx

#endif  // TRNMX_ATTENTION_H_
