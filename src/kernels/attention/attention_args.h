// Internal: the argument checks of attention.h and the shape facts derived
// from them, shared by the kernel (attention.cc) and the scalar reference
// (src/reference/attention_ref.cc), so that both reject the same calls with
// the same Status and read the same key for the same logical position.
#ifndef TRNMX_SRC_KERNELS_ATTENTION_ATTENTION_ARGS_H_
#define TRNMX_SRC_KERNELS_ATTENTION_ATTENTION_ARGS_H_

#include <cstddef>
#include <cstdint>
#include <limits>

#include "trnmx/attention.h"
#include "trnmx/status.h"

namespace trnmx::internal {

// Rows of one task: (query position, head of the KV group) pairs, query
// position major (attention.cc; the workspace size depends on it).
inline constexpr std::size_t kAttnTaskRows = 256;
// Keys an MX K decoder call (attention-inl.h MxKScoreRowsT) decodes into the
// worker's stage at a time: [d][16] floats, in L1 for head dims up to 256.
inline constexpr std::size_t kAttnMxKeyChunk = 16;

// Step 4's probabilities: p = exp(fl32(s - m_new)), then a p below the
// smallest normal FP32 (2^-126) becomes +0, as accelerators' exp units
// flush. The kernel and the reference apply this to every p before P' and
// l use it. Why: x86 FMAs with a subnormal operand take a microcode assist
// (~30x slower on Intel), and peaked rows of long sequences make most p
// subnormal. A flushed p is below 2^-126 of the row's largest p (1), so O
// moves by at most n * 2^-126 * max|v| / l.
inline void FlushSubnormalProbs(float* p, std::size_t n) {
  constexpr float kMinNormal = std::numeric_limits<float>::min();
  for (std::size_t j = 0; j < n; ++j) p[j] = p[j] < kMinNormal ? 0.0f : p[j];  // NaN stays.
}

// The validated call: shapes, resolved parameters and where each sequence's
// queries and keys live.
struct AttnShape {
  const AttnOperand* q = nullptr;
  const AttnOperand* k = nullptr;
  const AttnOperand* v = nullptr;
  const AttentionParams* params = nullptr;
  std::size_t batch = 0;
  std::size_t hq = 0;
  std::size_t hkv = 0;
  std::size_t group = 0;  // hq / hkv.
  std::size_t dqk = 0;
  std::size_t dv = 0;
  float scale = 0.0f;  // Resolved (step 2).
  std::int64_t window_left = -1;
  std::int64_t window_right = -1;  // Causal: 0.
  bool paged = false;
  std::size_t page = 0;  // Page size (paged only).

  // Queries of sequence b and the row of its first one in Q's (n, s).
  std::size_t Queries(std::size_t b) const;
  std::size_t QueryN(std::size_t b) const;
  std::size_t QueryRow0(std::size_t b) const;
  // Keys of sequence b (L_b).
  std::size_t Keys(std::size_t b) const;
  // (n, s) of logical key j of sequence b in K and V.
  void KeyAt(std::size_t b, std::size_t j, std::size_t* n, std::size_t* s) const;
  // n_b (step 3) and the chunk of keys per split.
  std::size_t Splits(std::size_t b) const;
  std::size_t Chunk(std::size_t b) const;
  // The allowed keys of query row i of sequence b: [*lo, *hi) (step 1);
  // empty when *lo >= *hi.
  void AllowedKeys(std::size_t b, std::size_t i, std::size_t* lo, std::size_t* hi) const;
};

// Every check of attention.h's Errors paragraph except the workspace's
// (o and lse may be null: AttentionWorkspaceBytes has no outputs).
Status ValidateAttention(const AttnOperand& q, const AttnOperand& k, const AttnOperand& v,
                         const AttnOutput* o, const AttentionParams& params, const AttnLse* lse,
                         AttnShape* shape);

// Per-sequence bookkeeping kept at the start of the workspace.
struct AttnSeqPlan {
  std::size_t tasks_begin = 0;   // First task of the sequence.
  std::size_t chunks = 0;        // Row chunks (kAttnTaskRows rows each).
  std::size_t splits = 0;        // n_b.
  std::size_t states_begin = 0;  // First split state (floats), n_b > 1 only.
};

// Workspace layout for `workers` workers (attention.cc fills it).
struct AttnWorkspaceLayout {
  std::size_t plan_bytes = 0;    // batch AttnSeqPlan.
  std::size_t state_floats = 0;  // Split states: (Dv + 2) floats per state.
  std::size_t worker_bytes = 0;  // Scratch of one worker.
  std::size_t workers = 0;
  std::size_t total = 0;
};
AttnWorkspaceLayout AttentionLayout(const AttnShape& shape, std::size_t workers);

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_KERNELS_ATTENTION_ATTENTION_ARGS_H_
