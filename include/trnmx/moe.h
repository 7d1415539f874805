// Mixture of experts: the router (logits -> top-k experts and weights per
// token, with the options of Megatron-Core, vLLM and the published model
// families), the aux-loss-free bias update, dispatch (tokens permuted into
// expert-contiguous order) and the weighted combine, routing statistics and
// synthetic router logits, and the grouped expert GEMM with the SwiGLU
// activations. docs/moe.md has the overview and the presets of
// gpt-oss, DeepSeek-V3 and Mixtral.
//
// Numerics contract (bits, not tolerances; identical on every target and for
// every Executor / thread count). exp, sigmoid and log are trnmx's own
// functions (src/internal/fixed_math.h: double arithmetic, one rounding to
// FP32, measured within 0.5 + 2^-20 ulp; the vector forms run the same
// operations lane by lane), never libm's. fl32(.) is one FP32 rounding;
// BF16 logits are widened exactly. For each token t, with x_e its
// E logits (e = 0..E-1):
//   1. Scores s_e:
//      kSoftmax: m = max_e x_e; u_e = exp(fl32(x_e - m)); z = u_0 + u_1 +
//        ... + u_{E-1} in FP32, in increasing e; s_e = fl32(u_e / z).
//      kSigmoid: s_e = sigmoid(x_e).
//      kSoftmaxOverTopK: s_e = x_e (the softmax comes after the selection).
//   2. Selection scores c_e = fl32(s_e + bias_e) with an expert bias, else s_e.
//      The bias steers the selection only; it never enters a weight.
//   3. Group-limited routing (num_groups G > 1): the E experts form G groups
//      of E/G consecutive ids. Group score = the largest c_e of the group
//      (GroupScore::kMax) or fl32(first + second largest) (kSumTop2);
//      kAuto is kSumTop2 with an expert bias and kMax without (vLLM's
//      grouped_topk rule: DeepSeek-V3 vs DeepSeek-V2). The top_k_groups
//      groups with the highest scores are kept; experts outside them are not
//      eligible.
//   4. Top-k: the k eligible experts with the highest c_e, ordered by c_e
//      descending. Ties: the lower expert (or group) index wins, always.
//   5. Weights w_j of the selected experts e_j, j = 0..k-1 (slot order):
//      kSoftmax, kSigmoid: w_j = s_{e_j}.
//      kSoftmaxOverTopK: softmax over the k selected logits x_{e_j} as in 1
//        (max, exp of the differences, FP32 sum in slot order, division).
//      renormalize: z = w_0 + ... + w_{k-1} in FP32 in slot order, and if
//        z > 0, w_j = fl32(w_j / z) (a zero sum leaves the weights at 0).
//      scaling_factor != 1: w_j = fl32(w_j * scaling_factor).
//   6. Shared experts (num_shared_experts S): slots k..k+S-1 of every token
//      hold experts E..E+S-1 with weight 1.0, never dropped.
//   7. Capacity (capacity_factor f > 0): capacity C = ceil(f * T * k / E),
//      computed in double as ceil(double(f) * double(T * k) / double(E)),
//      at most T (a token holds an expert once), then raised to
//      min_capacity. Each routed expert keeps at most C of its assignments:
//      DropPolicy::kProbability keeps the C highest weights (final w_j;
//      ties: lower token index), kPosition the C lowest token indices. A
//      dropped slot keeps its place with id kDroppedExpert (-1) and weight
//      +0.0.
// Output layout: slot j of token t at index t * slots + j, slots = k + S.
//
// Losses (RouterParams::compute_losses; values without coefficients, summed
// in double in the order given). P_te, the token's probability over all E
// experts: the full softmax of step 1 (kSoftmax and kSoftmaxOverTopK) or
// fl32(sigmoid_e / z) with z the FP32 sum of the E sigmoids in increasing e
// (kSigmoid; Megatron's normalised scores; 0 if z = 0). n_e: tokens whose
// top-k holds expert e, before capacity drops.
//   z_loss = (sum_t lse_t^2) / T, lse_t = m + log(z) (step 1's m and z; for
//     kSigmoid the softmax sums of the logits), sums in token order (ST-MoE).
//   load_balancing_loss (Switch / GShard, Megatron's switch_load_balancing):
//     (sum_e n_e * Psum_e) * (E / (k * T * T)), with Psum_e = sum_t P_te in
//     token order and the sum over e in increasing e; 1 for a uniform router.
//   sequence_balance_loss (DeepSeek-V3's sequence-wise loss, alpha = 1): the
//     same formula per sequence [offset_q, offset_{q+1}) of
//     RouterParams::sequence_offsets (empty: one sequence of T tokens), then
//     the mean over the non-empty sequences, summed in sequence order.
//   All three are 0 when T = 0.
//
// Errors (Status, nothing written, not even partly): logits that are NaN or
// +-Inf (the message names token and expert); E = 0, k = 0 or k > E; G not
// dividing E, top_k_groups outside [1, G], k > top_k_groups * E / G,
// kSumTop2 with one expert per group; a bias of a length other than E or
// with a non-finite value; capacity_factor negative or not finite, or
// scaling_factor not finite; sequence offsets not starting at 0, decreasing
// or not ending at T; enum values outside their enums; output spans shorter
// than T * slots (kResourceExhausted); a null logits pointer with T > 0 or a
// row_stride below E (kInvalidArgument).
//
// Threads: each task routes its own block of tokens; capacity, counts and
// losses are reduced afterwards in the fixed orders above, so every thread
// count gives the same bits. executor == nullptr runs on the calling thread.
//
// Example (DeepSeek-V3: 256 experts, 8 groups, top-4 groups, top-8, sigmoid,
// bias for selection, renormalised, scaled by 2.5, one shared expert: 9
// slots per token over 257 experts; tests/kernels/moe runs this code):
//   trnmx::RouterParams p = trnmx::DeepSeekV3RouterParams(bias);  // bias: 256 floats
//   std::vector<std::int32_t> ids(T * 9);
//   std::vector<float> w(T * 9);
//   trnmx::StatusOr<trnmx::RouterResult> r =
//       trnmx::Route(trnmx::Fp32MatrixView{logits, T, 256, 256}, p, ids, w);
//   if (!r.ok()) return r.status();
//   trnmx::StatusOr<trnmx::DispatchPlan> plan = trnmx::PlanDispatch(ids, T, 9, 257);
//   if (!plan.ok()) return plan.status();
//   // Expert e's tokens: rows [plan->offsets[e], plan->offsets[e + 1]) after
//   // PermuteTokens; CombineTokens(*plan, w, ...) sums their outputs back.
//   trnmx::Status s = trnmx::UpdateExpertBias(r->selected_per_expert, 1e-3f,
//                                             std::span(bias).first(256));
#ifndef TRNMX_MOE_H_
#define TRNMX_MOE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "trnmx/executor.h"
#include "trnmx/export.h"
#include "trnmx/formats/types.h"
#include "trnmx/gemm.h"
#include "trnmx/mx.h"
#include "trnmx/status.h"

namespace trnmx {

// ---------------------------------------------------------------------------
// Router.
// ---------------------------------------------------------------------------

enum class RouterScore : std::uint8_t {
  kSoftmax,          // Softmax over all E, then top-k (Mixtral, Qwen3-MoE, DeepSeek-V2).
  kSigmoid,          // Sigmoid per expert, then top-k (DeepSeek-V3).
  kSoftmaxOverTopK,  // Top-k of the logits, then softmax over the k (gpt-oss).
};

enum class GroupScore : std::uint8_t {
  kAuto,     // kSumTop2 with an expert bias, else kMax (vLLM grouped_topk).
  kMax,      // The largest selection score of the group (DeepSeek-V2).
  kSumTop2,  // The sum of the group's two largest selection scores (DeepSeek-V3).
};

enum class DropPolicy : std::uint8_t {
  kProbability,  // Keep each expert's highest-weight assignments (Megatron "probs").
  kPosition,     // Keep each expert's earliest tokens (Megatron "position").
};

// The expert id of a slot dropped by capacity.
inline constexpr std::int32_t kDroppedExpert = -1;

struct RouterParams {
  std::size_t top_k = 1;  // k routed experts per token.
  RouterScore score = RouterScore::kSoftmax;
  bool renormalize = false;     // Divide the k weights by their sum (step 5).
  float scaling_factor = 1.0f;  // Multiplies the routed weights (step 5).
  // Group-limited routing (step 3); num_groups = 1 turns it off.
  std::size_t num_groups = 1;
  std::size_t top_k_groups = 1;
  GroupScore group_score = GroupScore::kAuto;
  // E values added to the scores for selection only (aux-loss-free
  // balancing, DeepSeek-V3); empty: no bias. Update with UpdateExpertBias.
  // A view: the values must outlive the Route calls that use them.
  std::span<const float> expert_bias{};
  // Capacity (step 7); 0 = dropless.
  float capacity_factor = 0.0f;
  std::size_t min_capacity = 0;
  DropPolicy drop_policy = DropPolicy::kProbability;
  std::size_t num_shared_experts = 0;  // Step 6.
  bool compute_losses = false;
  // Sequence boundaries for sequence_balance_loss: S + 1 non-decreasing token
  // offsets from 0 to T; empty: the whole batch is one sequence.
  std::span<const std::size_t> sequence_offsets{};
};

struct RouterResult {
  std::size_t slots = 0;     // k + num_shared_experts: entries per token.
  std::size_t capacity = 0;  // Per routed expert; 0 when dropless.
  // E + S entries: assignments kept per expert (routed, then shared).
  std::vector<std::uint64_t> tokens_per_expert;
  // E entries: n_e, assignments selected per routed expert before drops.
  std::vector<std::uint64_t> selected_per_expert;
  std::uint64_t dropped = 0;  // Routed assignments dropped by capacity.
  double z_loss = 0.0;
  double load_balancing_loss = 0.0;
  double sequence_balance_loss = 0.0;
};

// Routes T tokens over E experts (logits.rows = T, logits.cols = E): writes
// expert_ids and weights (T * slots entries each, layout above) and returns
// the counts, capacity and losses.
TRNMX_API StatusOr<RouterResult> Route(const Fp32MatrixView& logits, const RouterParams& params,
                                       std::span<std::int32_t> expert_ids, std::span<float> weights,
                                       Executor* executor = nullptr);
TRNMX_API StatusOr<RouterResult> Route(const Bf16MatrixView& logits, const RouterParams& params,
                                       std::span<std::int32_t> expert_ids, std::span<float> weights,
                                       Executor* executor = nullptr);

// Presets of the published routers (values from each model's config.json
// and modelling code; docs/moe.md): gpt-oss (top-4 then softmax over the 4),
// Mixtral (softmax, top-2, renormalised), DeepSeek-V3 (sigmoid, 8 groups,
// top-4 groups, top-8, bias for selection, renormalised, scaled by 2.5, one
// shared expert).
TRNMX_API RouterParams GptOssRouterParams();
TRNMX_API RouterParams MixtralRouterParams();
TRNMX_API RouterParams DeepSeekV3RouterParams(std::span<const float> expert_bias);

// The aux-loss-free bias update of DeepSeek-V3: with mean = (sum_i load_i) /
// E (exact, compared in integers), b_i = fl32(b_i + gamma * sign(mean -
// load_i)), sign(0) = 0. Errors (nothing written): load and bias of
// different lengths, gamma not finite.
TRNMX_API Status UpdateExpertBias(std::span<const std::uint64_t> tokens_per_expert, float gamma,
                                  std::span<float> expert_bias);

// ---------------------------------------------------------------------------
// Dispatch and combine.
// ---------------------------------------------------------------------------

// Where every (token, slot) goes in the expert-contiguous ("permuted")
// matrix. Expert e's rows are [offsets[e], offsets[e + 1]); the first
// counts[e] of them hold its assignments in increasing (token, slot) order
// (a stable permutation), the rest (only with segment_rows) are padding.
struct DispatchPlan {
  std::size_t tokens = 0;
  std::size_t slots = 0;
  std::size_t num_experts = 0;       // E + S.
  std::size_t rows = 0;              // Rows of the permuted matrix: offsets[num_experts].
  std::vector<std::size_t> counts;   // num_experts.
  std::vector<std::size_t> offsets;  // num_experts + 1.
  // rows entries: the source token of each permuted row, kPaddingRow for padding.
  std::vector<std::size_t> row_token;
  // tokens * slots entries: the permuted row of each slot, kPaddingRow when dropped.
  std::vector<std::size_t> slot_row;
  static constexpr std::size_t kPaddingRow = static_cast<std::size_t>(-1);
};

// Plans the dispatch of expert_ids (tokens * slots, as Route writes them;
// kDroppedExpert slots go nowhere). segment_rows = 0: segments are exactly
// the counts; > 0: every expert's segment is padded to segment_rows rows
// (Megatron's pad-to-capacity: pass RouterResult::capacity).
// Errors: expert_ids shorter than tokens * slots (kResourceExhausted), an id
// outside [0, num_experts) other than kDroppedExpert (kOutOfRange, naming
// token and slot), an expert with more than segment_rows assignments
// (kFailedPrecondition), num_experts = 0.
TRNMX_API StatusOr<DispatchPlan> PlanDispatch(std::span<const std::int32_t> expert_ids,
                                              std::size_t tokens, std::size_t slots,
                                              std::size_t num_experts,
                                              std::size_t segment_rows = 0);

// permuted row r = x row plan.row_token[r] (a copy of the bits), padding rows
// = +0. x: tokens x H; permuted: plan.rows x H, same element type.
// Errors: shapes that disagree with the plan, null data with a non-zero
// extent, row strides below H, permuted overlapping x.
TRNMX_API Status PermuteTokens(const DispatchPlan& plan, const Fp32MatrixView& x,
                               const Fp32MatrixSpan& permuted, Executor* executor = nullptr);
TRNMX_API Status PermuteTokens(const DispatchPlan& plan, const Bf16MatrixView& x,
                               const StridedMatrix<Bf16>& permuted, Executor* executor = nullptr);

// y[t][h] = sum over the token's slots j = 0..slots-1 in increasing order,
// skipping dropped slots: acc = +0.0f; acc = fl32(acc + fl32(w_tj *
// expert_out[slot_row][h])) (BF16 expert outputs widened exactly). A token
// whose slots were all dropped gets +0. weights: tokens * slots (Route's
// weights). expert_out: plan.rows x H (padding rows are never read); y:
// tokens x H. Errors: as PermuteTokens, weights shorter than tokens * slots,
// y overlapping expert_out or the weights.
TRNMX_API Status CombineTokens(const DispatchPlan& plan, std::span<const float> weights,
                               const Fp32MatrixView& expert_out, const Fp32MatrixSpan& y,
                               Executor* executor = nullptr);
TRNMX_API Status CombineTokens(const DispatchPlan& plan, std::span<const float> weights,
                               const Bf16MatrixView& expert_out, const Fp32MatrixSpan& y,
                               Executor* executor = nullptr);

// ---------------------------------------------------------------------------
// Routing statistics.
// ---------------------------------------------------------------------------

struct RoutingStats {
  std::vector<std::uint64_t> tokens_per_expert;  // E.
  std::vector<std::uint64_t> tokens_per_device;  // ep_degree.
  std::uint64_t total = 0;                       // Sum of tokens_per_expert.
  std::uint64_t dropped = 0;                     // As given.
  // max / mean of each list (mean = total / length, in double); 1.0 when
  // total = 0 (an empty load is balanced).
  double expert_imbalance = 1.0;
  double device_imbalance = 1.0;
  std::size_t busiest_expert = 0;  // Lowest index among the maxima.
  std::size_t busiest_device = 0;
};

// Tokens per expert of expert_ids (any length; kDroppedExpert entries are
// counted in *dropped when it is not null). Errors: an id outside
// [0, num_experts) other than kDroppedExpert (kOutOfRange, naming its index).
TRNMX_API StatusOr<std::vector<std::uint64_t>> CountTokensPerExpert(
    std::span<const std::int32_t> expert_ids, std::size_t num_experts,
    std::uint64_t* dropped = nullptr);

// Statistics of a histogram (tokens per expert: from CountTokensPerExpert,
// RouterResult::tokens_per_expert or a recorded JSON list, index = expert
// id) over ep_degree devices. device_of_expert empty: contiguous blocks,
// expert e on device e / (E / ep_degree); else device_of_expert[e].
// Errors: histogram length != num_experts (kOutOfRange: the ids past E, or
// the missing ones), ep_degree = 0, ep_degree not dividing E with the
// contiguous placement, a map of a length other than E or naming a device
// >= ep_degree (kInvalidArgument), a total that overflows uint64
// (kOutOfRange).
TRNMX_API StatusOr<RoutingStats> ComputeRoutingStats(
    std::span<const std::uint64_t> tokens_per_expert, std::size_t num_experts,
    std::size_t ep_degree, std::span<const std::uint32_t> device_of_expert = {},
    std::uint64_t dropped = 0);

enum class ExpertPopularity : std::uint8_t {
  kUniform,  // Every expert equally likely.
  kZipf,     // Expert e with weight (e + 1)^-s: expert 0 the most popular.
};

struct SyntheticRouting {
  ExpertPopularity popularity = ExpertPopularity::kUniform;
  double zipf_s = 1.0;     // kZipf exponent, finite and >= 0.
  std::uint64_t seed = 0;  // Print it with the results.
};

// Synthetic router logits (tokens x experts, row-major into `logits`):
// logit_te = fl32(log(pop_e) + g_te), g_te = -log(-log(u_te)) a Gumbel
// sample, u_te = (bits + 0.5) * 2^-53 with bits the top 53 bits of
// SplitMix64 output number t * E + e + 1 for `seed` (counter-based: the same
// logits on every platform and thread count; logs are LogDouble of
// fixed_math.h). By the Gumbel-max trick every token's top-1 under any
// increasing score (softmax, sigmoid) is expert e with probability pop_e /
// sum(pop), and its top-k is a draw without replacement by popularity.
// Errors: logits shorter than tokens * experts (kResourceExhausted),
// experts = 0, zipf_s negative or not finite, an enum value outside it.
TRNMX_API Status SyntheticRouterLogits(const SyntheticRouting& config, std::size_t tokens,
                                       std::size_t experts, std::span<float> logits);

// ---------------------------------------------------------------------------
// Grouped expert GEMM.
// ---------------------------------------------------------------------------

// The activation applied to each expert's GEMM result h (FP32, bias added).
enum class ExpertActivation : std::uint8_t {
  kNone,    // y = h: the plain GEMM (N output columns).
  kSwiGlu,  // y = silu(g) * l (Mixtral, Qwen3-MoE, DeepSeek): N / 2 columns.
  // gpt-oss: g = min(g, limit), l = clamp(l, -limit, limit),
  // y = g * sigmoid(alpha * g) * (l + 1): N / 2 columns.
  kGptOssSwiGlu,
};

// Where the gate g and linear l columns of a gated weight (K x N, N = 2 I)
// are: output column c takes g from weight column 2c and l from 2c + 1
// (kInterleaved: gpt-oss's mlp1, `x[..., ::2], x[..., 1::2]`), or g from c
// and l from I + c (kConcatenated: Megatron's fused [gate | up]).
enum class GluLayout : std::uint8_t { kInterleaved, kConcatenated };

struct GroupedGemmParams {
  ExpertActivation activation = ExpertActivation::kNone;
  GluLayout glu_layout = GluLayout::kInterleaved;
  float swiglu_alpha = 1.702f;  // kGptOssSwiGlu only (gpt-oss's values).
  float swiglu_limit = 7.0f;
  // E * N values, expert e's bias at [e * N, (e + 1) * N) (gpt-oss's
  // mlp1_bias / mlp2_bias), or empty for none.
  std::span<const float> bias{};
};

// Every expert's GEMM over its rows in one call: for e = 0..E-1 (E =
// weights.size()), rows [offsets[e], offsets[e + 1]) of x (the permuted
// tokens of PermuteTokens, offsets = DispatchPlan::offsets, padding rows
// included) times weights[e] (K x N) give the same rows of y.
//
// Contract (bits): with kNone, expert e's rows of y equal
//   trnmx::Gemm(x rows of e, weights[e], y rows of e, {.bias = bias + e * N})
// bit for bit (gemm.h's contract for the operand pairing: MXFP4 / MXFP8 /
// MXFP6 / MXINT8 / BF16 / FP32 weights x BF16 / FP32 / MX activations).
// Gated activations: h = that Gemm with an FP32 output (K never split), then
// per output column, with fl32 one FP32 rounding and sigmoid trnmx's own
// FixedSigmoid (src/internal/fixed_math.h, identical on every target):
//   kSwiGlu:       y = fl32(fl32(g * sigmoid(g)) * l)
//   kGptOssSwiGlu: g' = min(g, limit); l' = min(max(l, -limit), limit);
//                  y = fl32(fl32(g' * sigmoid(fl32(alpha * g'))) * fl32(l' + 1))
//   (a NaN g or l gives NaN, as torch.clamp does); a BF16 y stores RNE(y).
// Identical bits for every Executor / thread count; executor == nullptr
// runs on the calling thread.
//
// Threads: work items are (expert, block of up to 512 rows, block of
// columns), so that small experts run side by side; each item runs Gemm on
// the thread of its task. Columns are split (into blocks of >= 256) only when
// the row blocks give fewer than 4 items per thread.
//
// Errors (Status, nothing written): E = 0; offsets of a length other than
// E + 1, not starting at 0, decreasing, or not ending at x.rows = y.rows;
// weights that differ in K, N, type or MX format from weights[0], or that
// Gemm rejects (MX not blocked along K, NVFP4); x.cols != K; y.cols != N
// (kNone) or N / 2 (gated; N odd is an error); a bias of a length other
// than E * N; an activation or layout outside its enum; alpha or limit not
// finite; anything Gemm rejects for an expert (null data, strides, y
// overlapping x, a weight or the bias). The expert count is weights.size();
// with expert parallelism pass the local experts' weights and offsets.
//
// Example (gpt-oss MLP: T tokens routed top-4 over 128 experts with MXFP4
// weights and BF16 activations; MoeGroupedGemm.GptOssMlpPipeline runs it):
//   plan = trnmx::PlanDispatch(ids, T, 4, 128);           // moe.h above
//   trnmx::PermuteTokens(*plan, x, xp);                    // xp: plan->rows x H BF16
//   std::vector<trnmx::GemmOperand> w1(128);              // H x 2I, MXFP4 kCols
//   trnmx::GroupedGemmParams p1;
//   p1.activation = trnmx::ExpertActivation::kGptOssSwiGlu;
//   p1.bias = mlp1_bias;                                   // 128 * 2I floats
//   trnmx::Status s = trnmx::GroupedExpertGemm(
//       trnmx::GemmOperand::Bf16(xp.data, plan->rows, H, H), plan->offsets, w1,
//       trnmx::GemmOutput::Bf16(hid, plan->rows, I, I), p1, &pool);
//   // then w2 (I x H) with kNone, and CombineTokens with the router weights.
TRNMX_API Status GroupedExpertGemm(const GemmOperand& x, std::span<const std::size_t> offsets,
                                   std::span<const GemmOperand> weights, const GemmOutput& y,
                                   const GroupedGemmParams& params = {},
                                   Executor* executor = nullptr);

}  // namespace trnmx

#endif  // TRNMX_MOE_H_
