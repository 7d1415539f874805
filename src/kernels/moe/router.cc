// The MoE router (moe.h): validation, the per-token routing (scores, bias,
// groups, top-k, weights), then the capacity drops, counts and losses in the
// fixed orders of the header.
#include <hwy/cache_control.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "internal/calling_thread.h"
#include "internal/checks.h"
#include "internal/fixed_math.h"
#include "internal/fixed_math_array.h"
#include "internal/status_macros.h"
#include "kernels/moe/moe_internal.h"
#include "kernels/moe/router_scan.h"
#include "trnmx/moe.h"

namespace trnmx {
namespace {

using moe_internal::Better;
using moe_internal::Str;
using moe_internal::Widen;

// Tokens per executor task: any split gives the same bits (each token's
// outputs are its own); a multiple of kBlockTokens (below).
constexpr std::size_t kTokensPerTask = 256;

// The validated shape of one Route call.
struct Shape {
  std::size_t tokens = 0;
  std::size_t experts = 0;
  std::size_t k = 0;
  std::size_t shared = 0;
  std::size_t slots = 0;
  std::size_t groups = 1;      // 1: no group limit.
  std::size_t group_size = 0;  // experts / groups.
  std::size_t top_groups = 1;
  bool sum_top2 = false;  // Group score: kSumTop2 (resolved from kAuto).
  bool has_bias = false;
};

bool IsFinite(float x) { return std::isfinite(x); }

Status CheckParams(const RouterParams& p, std::size_t tokens, std::size_t experts, Shape* shape) {
  if (static_cast<unsigned>(p.score) > static_cast<unsigned>(RouterScore::kSoftmaxOverTopK)) {
    return InvalidArgumentError("router: score value " + Str(static_cast<unsigned>(p.score)) +
                                " is not a RouterScore");
  }
  if (static_cast<unsigned>(p.group_score) > static_cast<unsigned>(GroupScore::kSumTop2)) {
    return InvalidArgumentError("router: group_score value " +
                                Str(static_cast<unsigned>(p.group_score)) + " is not a GroupScore");
  }
  if (static_cast<unsigned>(p.drop_policy) > static_cast<unsigned>(DropPolicy::kPosition)) {
    return InvalidArgumentError("router: drop_policy value " +
                                Str(static_cast<unsigned>(p.drop_policy)) + " is not a DropPolicy");
  }
  if (experts == 0) return InvalidArgumentError("router: the logits have 0 experts (columns)");
  if (p.top_k == 0) return InvalidArgumentError("router: top_k is 0 (at least 1 expert per token)");
  if (p.top_k > experts) {
    return InvalidArgumentError("router: top_k " + Str(p.top_k) + " is more than the " +
                                Str(experts) + " experts");
  }
  if (p.num_groups == 0) return InvalidArgumentError("router: num_groups is 0 (1 = no groups)");
  Shape s;
  s.tokens = tokens;
  s.experts = experts;
  s.k = p.top_k;
  s.shared = p.num_shared_experts;
  s.has_bias = !p.expert_bias.empty();
  if (p.num_groups > 1) {
    if (experts % p.num_groups != 0) {
      return InvalidArgumentError("router: num_groups " + Str(p.num_groups) +
                                  " does not divide the " + Str(experts) + " experts");
    }
    s.groups = p.num_groups;
    s.group_size = experts / p.num_groups;
    if (p.top_k_groups == 0 || p.top_k_groups > p.num_groups) {
      return InvalidArgumentError("router: top_k_groups " + Str(p.top_k_groups) +
                                  " is outside [1, num_groups = " + Str(p.num_groups) + "]");
    }
    s.top_groups = p.top_k_groups;
    if (p.top_k > s.top_groups * s.group_size) {
      return InvalidArgumentError("router: top_k " + Str(p.top_k) + " is more than the " +
                                  Str(s.top_groups * s.group_size) + " experts of the top " +
                                  Str(s.top_groups) + " groups");
    }
    s.sum_top2 =
        p.group_score == GroupScore::kSumTop2 || (p.group_score == GroupScore::kAuto && s.has_bias);
    if (s.sum_top2 && s.group_size < 2) {
      return InvalidArgumentError(
          "router: the sum-of-top-2 group score needs 2 experts per "
          "group, the groups have 1");
    }
  } else {
    s.group_size = experts;
  }
  if (s.has_bias) {
    if (p.expert_bias.size() != experts) {
      return InvalidArgumentError("router: expert_bias has " + Str(p.expert_bias.size()) +
                                  " values for " + Str(experts) + " experts");
    }
    for (std::size_t e = 0; e < experts; ++e) {
      if (!IsFinite(p.expert_bias[e])) {
        return InvalidArgumentError("router: expert_bias[" + Str(e) + "] is not finite");
      }
    }
  }
  if (!IsFinite(p.capacity_factor) || p.capacity_factor < 0.0f) {
    return InvalidArgumentError("router: capacity_factor must be finite and >= 0 (0 = dropless)");
  }
  if (!IsFinite(p.scaling_factor)) {
    return InvalidArgumentError("router: scaling_factor is not finite");
  }
  if (!p.sequence_offsets.empty()) {
    const auto& o = p.sequence_offsets;
    if (o.front() != 0 || o.back() != tokens) {
      return InvalidArgumentError("router: sequence_offsets must run from 0 to the " + Str(tokens) +
                                  " tokens (got " + Str(o.front()) + " .. " + Str(o.back()) + ")");
    }
    for (std::size_t q = 1; q < o.size(); ++q) {
      if (o[q] < o[q - 1]) {
        return InvalidArgumentError("router: sequence_offsets[" + Str(q) + "] = " + Str(o[q]) +
                                    " is less than the offset before it (" + Str(o[q - 1]) + ")");
      }
    }
  }
  if (__builtin_add_overflow(s.k, s.shared, &s.slots) || s.slots > INT32_MAX ||
      experts + s.shared > static_cast<std::size_t>(INT32_MAX)) {
    return OutOfRangeError("router: top_k + num_shared_experts or the expert count is too large");
  }
  *shape = s;
  return OkStatus();
}

// The checks of the logits' shape (the values are checked as they are
// routed: RouteImpl).
template <class T>
Status CheckLogitsShape(const StridedMatrix<const T>& m) {
  if (m.rows == 0) return OkStatus();
  if (m.data == nullptr) {
    return InvalidArgumentError("router: logits are " + Str(m.rows) + " x " + Str(m.cols) +
                                " but the data pointer is null");
  }
  if (m.rows > 1 && m.row_stride < m.cols) {
    return InvalidArgumentError("router: logits row_stride " + Str(m.row_stride) +
                                " is less than the " + Str(m.cols) + " experts");
  }
  return OkStatus();
}

// The error for token t, whose row holds a NaN or +-Inf: names its first.
template <class T>
Status NonFiniteLogitError(const StridedMatrix<const T>& m, std::size_t t) {
  const T* row = m.data + t * m.row_stride;
  std::size_t e = 0;
  while (e + 1 < m.cols && IsFinite(Widen(row[e]))) ++e;
  const float x = Widen(row[e]);
  return InvalidArgumentError("router: logit of token " + Str(t) + ", expert " + Str(e) + " is " +
                              (std::isnan(x) ? "NaN" : "infinite"));
}

// Step 1's softmax of each of `rows` rows of x (n values, row stride
// `stride`) into p (rows x n, packed); sums[r] = row r's max and sum. The
// exps of all rows go in one FixedExpArray call, and the rows' sums (each in
// increasing index order, as the header says) run as kChains independent
// chains side by side: one chain alone waits on every addition's latency.
// The row maxima run in kChains partial maxima: the maximum of finite values
// does not depend on the order but for the sign of a zero maximum, which
// neither x - max nor max + log(sum) sees.
struct SoftmaxSums {
  float max = 0.0f;
  float sum = 0.0f;
};
void SoftmaxRows(const float* x, std::size_t stride, std::size_t rows, std::size_t n, float* p,
                 SoftmaxSums* sums) {
  constexpr std::size_t kChains = 8;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * stride;
    float m[kChains];
    std::fill_n(m, kChains, xr[0]);
    std::size_t i = 0;
    for (; i + kChains <= n; i += kChains) {
      for (std::size_t j = 0; j < kChains; ++j) m[j] = std::max(m[j], xr[i + j]);
    }
    for (; i < n; ++i) m[0] = std::max(m[0], xr[i]);
    for (std::size_t j = 1; j < kChains; ++j) m[0] = std::max(m[0], m[j]);
    float* pr = p + r * n;
    for (i = 0; i < n; ++i) pr[i] = xr[i] - m[0];
    sums[r].max = m[0];
  }
  internal::FixedExpArray(p, p, rows * n);
  for (std::size_t r0 = 0; r0 < rows; r0 += kChains) {
    // Rows past the end repeat the last one (their sums are dropped), so
    // the chains stay a fixed number of registers.
    const float* pr[kChains];
    for (std::size_t j = 0; j < kChains; ++j) pr[j] = p + std::min(r0 + j, rows - 1) * n;
    float z[kChains] = {};
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < kChains; ++j) z[j] += pr[j][i];
    }
    for (std::size_t j = 0; j < kChains && r0 + j < rows; ++j) sums[r0 + j].sum = z[j];
  }
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t i = 0; i < n; ++i) p[r * n + i] /= sums[r].sum;
  }
}

// Tokens per block: a block's scores and weights are computed together (one
// FixedExpArray call, side-by-side sums) and its scratch stays in L1/L2.
constexpr std::size_t kBlockTokens = 16;
constexpr std::size_t kCacheLine = 64;  // Bytes (x86, Arm): the prefetch step.

// Per-task scratch, sized for one block of tokens; the arrays a rule does
// not use stay empty.
struct Scratch {
  Scratch(const Shape& s, const RouterParams& p, bool widen) {
    const std::size_t block = kBlockTokens * s.experts;
    if (widen) x.resize(block);
    if (p.score != RouterScore::kSoftmaxOverTopK) score.resize(block);
    if (s.has_bias) choice.resize(block);
    if (s.groups > 1) {
      kept.resize(kBlockTokens * s.top_groups * s.group_size);
      group_score.resize(s.groups);
      group_second.resize(s.groups);
      top_groups.resize(kBlockTokens * s.top_groups);
    }
    if (p.compute_losses && p.score == RouterScore::kSigmoid) softmax.resize(s.experts);
    top.resize(kBlockTokens * s.k);
    weight.resize(kBlockTokens * s.k);
    logit.resize(kBlockTokens * s.k);
  }
  std::vector<float> x;       // BF16 logits widened.
  std::vector<float> score;   // Step 1 (not kSoftmaxOverTopK).
  std::vector<float> choice;  // Step 2 with a bias.
  std::vector<float> kept;    // Step 3: the kept groups' selection scores.
  std::vector<float> group_score, group_second;
  std::vector<std::uint32_t> top_groups;
  std::vector<float> softmax;  // The full softmax of a sigmoid router's logits (z-loss).
  std::vector<std::uint32_t> top;
  std::vector<float> weight, logit;
  SoftmaxSums sums[kBlockTokens];       // Step 1's softmax (kSoftmax) or a loss's.
  SoftmaxSums sums_topk[kBlockTokens];  // kSoftmaxOverTopK's over the k.
};

// Step 3 for one token: the kept groups' selection scores, in increasing
// group order, to kept (top_groups x group_size), and those groups to
// groups. A group's score needs only its largest one or two values (with
// their multiplicity: two equal maxima are the top 2); the groups (a
// handful) are ranked by insertion. Step 4 then runs over the kept values
// (TopKRows), whose order is that of the expert ids.
void KeepTopGroups(const Shape& s, Scratch& w, const float* choice, float* kept,
                   std::uint32_t* groups) {
  internal::GroupTopTwo(choice, s.groups, s.group_size, w.group_score.data(),
                        w.group_second.data());
  if (s.sum_top2) {
    for (std::size_t g = 0; g < s.groups; ++g) w.group_score[g] += w.group_second[g];
  }
  std::size_t have = 0;
  for (std::size_t g = 0; g < s.groups; ++g) {
    moe_internal::TopKInsert(w.group_score.data(), g, s.top_groups, groups, &have);
  }
  std::sort(groups, groups + s.top_groups);
  for (std::size_t i = 0; i < s.top_groups; ++i) {
    std::copy_n(choice + groups[i] * s.group_size, s.group_size, kept + i * s.group_size);
  }
}

// Routes the `rows` tokens of x (E logits each, row stride `stride`): writes
// their `slots` ids and weights each, and, when `aux` is not null, P_te into
// aux (rows x E) and lse into lse[0..rows). Returns the first row holding a
// NaN or +-Inf (before anything of it is written), or rows.
std::size_t RouteBlock(const Shape& s, const RouterParams& p, Scratch& w, const float* x,
                       std::size_t stride, std::size_t rows, std::int32_t* ids, float* weights,
                       float* aux, double* lse) {
  const std::size_t E = s.experts;
  const std::size_t k = s.k;
  // The logits' finiteness: checked by the top-k's own pass over them when
  // that is the first (kSoftmaxOverTopK, no bias, no groups), else first.
  const bool topk_checks = p.score == RouterScore::kSoftmaxOverTopK && !s.has_bias && s.groups == 1;
  if (!topk_checks) {
    const std::size_t bad = internal::FirstNonFiniteRow(x, stride, rows, E);
    if (bad < rows) return bad;
  }
  // 1. Scores (kSoftmaxOverTopK: the logits themselves).
  const float* score = x;
  std::size_t score_stride = stride;
  if (p.score == RouterScore::kSoftmax) {
    SoftmaxRows(x, stride, rows, E, w.score.data(), w.sums);
  } else if (p.score == RouterScore::kSigmoid) {
    if (stride == E) {
      internal::FixedSigmoidArray(x, w.score.data(), rows * E);
    } else {
      for (std::size_t r = 0; r < rows; ++r) {
        internal::FixedSigmoidArray(x + r * stride, w.score.data() + r * E, E);
      }
    }
  }
  if (p.score != RouterScore::kSoftmaxOverTopK) {
    score = w.score.data();
    score_stride = E;
  }
  // 2. Selection scores.
  const float* choice = score;
  std::size_t choice_stride = score_stride;
  if (s.has_bias) {
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t e = 0; e < E; ++e) {
        w.choice[r * E + e] = score[r * score_stride + e] + p.expert_bias[e];
      }
    }
    choice = w.choice.data();
    choice_stride = E;
  }
  // 3, 4. Groups and top-k.
  if (s.groups > 1) {
    const std::size_t n = s.top_groups * s.group_size;
    for (std::size_t r = 0; r < rows; ++r) {
      KeepTopGroups(s, w, choice + r * choice_stride, w.kept.data() + r * n,
                    w.top_groups.data() + r * s.top_groups);
    }
    internal::TopKRows(w.kept.data(), n, rows, n, k, w.top.data(), false);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t j = 0; j < k; ++j) {
        std::uint32_t& e = w.top[r * k + j];
        e = w.top_groups[r * s.top_groups + e / s.group_size] *
                static_cast<std::uint32_t>(s.group_size) +
            e % s.group_size;
      }
    }
  } else {
    const std::size_t bad =
        internal::TopKRows(choice, choice_stride, rows, E, k, w.top.data(), topk_checks);
    if (bad < rows) return bad;
  }
  // 5. Weights.
  if (p.score == RouterScore::kSoftmaxOverTopK && !s.has_bias) {
    // Step 1's softmax over the k selected logits. Without a bias they were
    // selected by their own values, so slot 0 holds their maximum: its
    // difference is +0 and its exp exactly 1 (FixedExp(0) = 1). Only slots
    // 1..k-1 go to FixedExpArray, and the sum starts at 1.
    const std::size_t k1 = k - 1;
    for (std::size_t r = 0; r < rows; ++r) {
      const float m = x[r * stride + w.top[r * k]];
      for (std::size_t j = 1; j < k; ++j) {
        w.logit[r * k1 + j - 1] = x[r * stride + w.top[r * k + j]] - m;
      }
    }
    internal::FixedExpArray(w.logit.data(), w.logit.data(), rows * k1);
    for (std::size_t r = 0; r < rows; ++r) {
      const float* u = w.logit.data() + r * k1;
      float z = 1.0f;
      for (std::size_t j = 0; j < k1; ++j) z += u[j];
      w.weight[r * k] = 1.0f / z;
      for (std::size_t j = 0; j < k1; ++j) w.weight[r * k + 1 + j] = u[j] / z;
    }
  } else if (p.score == RouterScore::kSoftmaxOverTopK) {
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t j = 0; j < k; ++j) w.logit[r * k + j] = x[r * stride + w.top[r * k + j]];
    }
    SoftmaxRows(w.logit.data(), k, rows, k, w.weight.data(), w.sums_topk);
  } else {
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t j = 0; j < k; ++j) {
        w.weight[r * k + j] = score[r * score_stride + w.top[r * k + j]];
      }
    }
  }
  for (std::size_t r = 0; r < rows; ++r) {
    float* wr = w.weight.data() + r * k;
    if (p.renormalize) {
      float z = 0.0f;
      for (std::size_t j = 0; j < k; ++j) z += wr[j];
      if (z > 0.0f) {
        for (std::size_t j = 0; j < k; ++j) wr[j] /= z;
      }
    }
    if (p.scaling_factor != 1.0f) {
      for (std::size_t j = 0; j < k; ++j) wr[j] *= p.scaling_factor;
    }
    std::int32_t* ids_r = ids + r * s.slots;
    float* weights_r = weights + r * s.slots;
    for (std::size_t j = 0; j < k; ++j) {
      ids_r[j] = static_cast<std::int32_t>(w.top[r * k + j]);
      weights_r[j] = wr[j];
    }
    // 6. Shared experts.
    for (std::size_t i = 0; i < s.shared; ++i) {
      ids_r[k + i] = static_cast<std::int32_t>(E + i);
      weights_r[k + i] = 1.0f;
    }
  }
  // Loss inputs.
  if (aux != nullptr) {
    for (std::size_t r = 0; r < rows; ++r) {
      float* aux_r = aux + r * E;
      const float* xr = x + r * stride;
      SoftmaxSums sums = w.sums[r];
      if (p.score == RouterScore::kSigmoid) {
        const float* sr = w.score.data() + r * E;
        float z = 0.0f;
        for (std::size_t e = 0; e < E; ++e) z += sr[e];
        for (std::size_t e = 0; e < E; ++e) aux_r[e] = z > 0.0f ? sr[e] / z : 0.0f;
        SoftmaxRows(xr, stride, 1, E, w.softmax.data(), &sums);
      } else if (p.score == RouterScore::kSoftmax) {
        std::copy_n(w.score.data() + r * E, E, aux_r);
      } else {
        SoftmaxRows(xr, stride, 1, E, aux_r, &sums);
      }
      lse[r] = static_cast<double>(sums.max) + internal::LogDouble(static_cast<double>(sums.sum));
    }
  }
  return rows;
}

// Step 7: drops assignments beyond `capacity` per routed expert, in place.
std::uint64_t ApplyCapacity(const Shape& s, DropPolicy policy, std::size_t capacity,
                            std::span<std::int32_t> ids, std::span<float> weights) {
  // Each routed expert's slot indices in increasing (token, slot) order.
  std::vector<std::vector<std::size_t>> assigned(s.experts);
  for (std::size_t i = 0; i < s.tokens * s.slots; ++i) {
    if (i % s.slots < s.k) assigned[static_cast<std::size_t>(ids[i])].push_back(i);
  }
  std::uint64_t dropped = 0;
  for (auto& list : assigned) {
    if (list.size() <= capacity) continue;
    if (policy == DropPolicy::kProbability) {
      // A token holds an expert at most once, so slot index order is token order.
      std::stable_sort(list.begin(), list.end(),
                       [&](std::size_t a, std::size_t b) { return weights[a] > weights[b]; });
    }
    for (std::size_t j = capacity; j < list.size(); ++j) {
      ids[list[j]] = kDroppedExpert;
      weights[list[j]] = 0.0f;
      ++dropped;
    }
  }
  return dropped;
}

// Megatron's switch loss over tokens [begin, end): (sum_e n_e Psum_e) * E / (k T^2).
double BalanceLoss(const Shape& s, std::span<const std::int32_t> selected_ids,
                   const std::vector<float>& aux, std::size_t begin, std::size_t end) {
  const std::size_t E = s.experts;
  std::vector<double> psum(E, 0.0);
  std::vector<std::uint64_t> n(E, 0);
  for (std::size_t t = begin; t < end; ++t) {
    for (std::size_t e = 0; e < E; ++e) psum[e] += static_cast<double>(aux[t * E + e]);
    for (std::size_t j = 0; j < s.k; ++j) ++n[static_cast<std::size_t>(selected_ids[t * s.k + j])];
  }
  double acc = 0.0;
  for (std::size_t e = 0; e < E; ++e) acc += static_cast<double>(n[e]) * psum[e];
  const double tokens = static_cast<double>(end - begin);
  return acc * (static_cast<double>(E) / (static_cast<double>(s.k) * tokens * tokens));
}

template <class Elem>
StatusOr<RouterResult> RouteImpl(const StridedMatrix<const Elem>& logits, const RouterParams& p,
                                 std::span<std::int32_t> ids, std::span<float> weights,
                                 Executor* executor) {
  Shape s;
  TRNMX_RETURN_IF_ERROR(CheckParams(p, logits.rows, logits.cols, &s));
  std::size_t entries = 0;
  if (__builtin_mul_overflow(s.tokens, s.slots, &entries)) {
    return OutOfRangeError("router: " + Str(s.tokens) + " tokens x " + Str(s.slots) +
                           " slots overflows size_t");
  }
  if (ids.size() < entries) {
    return ResourceExhaustedError("router: expert_ids holds " + Str(ids.size()) + " entries, " +
                                  Str(entries) + " needed (" + Str(s.tokens) + " tokens x " +
                                  Str(s.slots) + " slots)");
  }
  if (weights.size() < entries) {
    return ResourceExhaustedError("router: weights holds " + Str(weights.size()) + " entries, " +
                                  Str(entries) + " needed (" + Str(s.tokens) + " tokens x " +
                                  Str(s.slots) + " slots)");
  }
  TRNMX_RETURN_IF_ERROR(CheckLogitsShape(logits));

  // The logit values are checked as they are routed, and the results go to
  // these buffers: the caller's outputs are written only once every logit
  // is known finite (nothing written on an error).
  const std::size_t E = s.experts;
  const std::size_t T = s.tokens;
  // Default-initialised (not zeroed): every entry is written before it is read.
  const std::unique_ptr<std::int32_t[]> out_ids(new std::int32_t[entries]);
  const std::unique_ptr<float[]> out_weights(new float[entries]);
  std::vector<float> aux(p.compute_losses ? T * E : 0);
  std::vector<double> lse(p.compute_losses ? T : 0);
  std::atomic<std::size_t> first_bad{T};  // The first token with a NaN or +-Inf logit.
  const std::size_t tasks = internal::CeilDiv(T, kTokensPerTask);
  internal::ExecutorOrCallingThread(executor).ParallelFor(tasks, [&](std::size_t task) {
    Scratch scratch(s, p, !std::is_same_v<Elem, float>);
    const std::size_t end = std::min(T, (task + 1) * kTokensPerTask);
    for (std::size_t t = task * kTokensPerTask; t < end; t += kBlockTokens) {
      const std::size_t rows = std::min(kBlockTokens, end - t);
      // The next block's logits on their way while this one is routed.
      for (std::size_t r = t + rows; r < std::min(end, t + rows + kBlockTokens); ++r) {
        const Elem* row = logits.data + r * logits.row_stride;
        for (std::size_t e = 0; e < E; e += kCacheLine / sizeof(Elem)) hwy::Prefetch(row + e);
      }
      const float* x = nullptr;
      std::size_t stride = E;
      if constexpr (std::is_same_v<Elem, float>) {
        x = logits.data + t * logits.row_stride;
        stride = logits.row_stride;
      } else {
        for (std::size_t r = 0; r < rows; ++r) {
          const Elem* row = logits.data + (t + r) * logits.row_stride;
          for (std::size_t e = 0; e < E; ++e) scratch.x[r * E + e] = Widen(row[e]);
        }
        x = scratch.x.data();
      }
      const std::size_t bad = RouteBlock(
          s, p, scratch, x, stride, rows, out_ids.get() + t * s.slots,
          out_weights.get() + t * s.slots, p.compute_losses ? aux.data() + t * E : nullptr,
          p.compute_losses ? lse.data() + t : nullptr);
      if (bad < rows) {
        // Tasks cover disjoint tokens in order, so the least of their first
        // bad tokens is the first of all.
        std::size_t seen = first_bad.load(std::memory_order_relaxed);
        while (t + bad < seen && !first_bad.compare_exchange_weak(seen, t + bad)) {
        }
        return;
      }
    }
  });
  if (first_bad.load() < T) return NonFiniteLogitError(logits, first_bad.load());

  // Every logit is finite: from here on nothing fails.
  const std::span<std::int32_t> rids(out_ids.get(), entries);
  const std::span<float> rweights(out_weights.get(), entries);
  RouterResult r;
  r.slots = s.slots;
  // n_e in kHistograms histograms by token (popular experts recur in
  // consecutive tokens: one histogram would chain their increments).
  constexpr std::size_t kHistograms = 4;
  std::vector<std::uint64_t> counts(kHistograms * E, 0);
  std::vector<std::int32_t> selected(p.compute_losses ? T * s.k : 0);
  for (std::size_t t = 0; t < T; ++t) {
    std::uint64_t* h = counts.data() + (t % kHistograms) * E;
    for (std::size_t j = 0; j < s.k; ++j) {
      const std::int32_t id = rids[t * s.slots + j];
      ++h[static_cast<std::size_t>(id)];
      if (p.compute_losses) selected[t * s.k + j] = id;
    }
  }
  r.selected_per_expert.assign(E, 0);
  for (std::size_t e = 0; e < E; ++e) {
    for (std::size_t q = 0; q < kHistograms; ++q) r.selected_per_expert[e] += counts[q * E + e];
  }
  if (p.capacity_factor > 0.0f) {
    const double c = std::ceil(static_cast<double>(p.capacity_factor) *
                               static_cast<double>(T * s.k) / static_cast<double>(E));
    r.capacity =
        std::max(p.min_capacity, c >= static_cast<double>(T) ? T : static_cast<std::size_t>(c));
    r.dropped = ApplyCapacity(s, p.drop_policy, r.capacity, rids, rweights);
  }
  if (p.capacity_factor > 0.0f) {
    r.tokens_per_expert.assign(E + s.shared, 0);
    for (std::size_t i = 0; i < entries; ++i) {
      if (rids[i] != kDroppedExpert) ++r.tokens_per_expert[static_cast<std::size_t>(rids[i])];
    }
  } else {  // Dropless: the selections, and every token on each shared expert.
    r.tokens_per_expert = r.selected_per_expert;
    r.tokens_per_expert.resize(E + s.shared, T);
  }
  std::copy(rids.begin(), rids.end(), ids.begin());
  std::copy(rweights.begin(), rweights.end(), weights.begin());

  if (p.compute_losses && T > 0) {
    double z = 0.0;
    for (std::size_t t = 0; t < T; ++t) z += lse[t] * lse[t];
    r.z_loss = z / static_cast<double>(T);
    r.load_balancing_loss = BalanceLoss(s, selected, aux, 0, T);
    if (p.sequence_offsets.empty()) {
      r.sequence_balance_loss = r.load_balancing_loss;
    } else {
      double sum = 0.0;
      std::size_t count = 0;
      for (std::size_t q = 0; q + 1 < p.sequence_offsets.size(); ++q) {
        const std::size_t b = p.sequence_offsets[q];
        const std::size_t e = p.sequence_offsets[q + 1];
        if (b == e) continue;
        sum += BalanceLoss(s, selected, aux, b, e);
        ++count;
      }
      r.sequence_balance_loss = count > 0 ? sum / static_cast<double>(count) : 0.0;
    }
  }
  return r;
}

}  // namespace

StatusOr<RouterResult> Route(const Fp32MatrixView& logits, const RouterParams& params,
                             std::span<std::int32_t> expert_ids, std::span<float> weights,
                             Executor* executor) {
  return RouteImpl(logits, params, expert_ids, weights, executor);
}

StatusOr<RouterResult> Route(const Bf16MatrixView& logits, const RouterParams& params,
                             std::span<std::int32_t> expert_ids, std::span<float> weights,
                             Executor* executor) {
  return RouteImpl(logits, params, expert_ids, weights, executor);
}

RouterParams GptOssRouterParams() {
  RouterParams p;
  p.top_k = 4;  // config.json experts_per_token.
  p.score = RouterScore::kSoftmaxOverTopK;
  return p;
}

RouterParams MixtralRouterParams() {
  RouterParams p;
  p.top_k = 2;  // config.json num_experts_per_tok.
  p.score = RouterScore::kSoftmax;
  p.renormalize = true;
  return p;
}

RouterParams DeepSeekV3RouterParams(std::span<const float> expert_bias) {
  RouterParams p;
  // config.json: num_experts_per_tok 8, n_group 8, topk_group 4,
  // routed_scaling_factor 2.5, norm_topk_prob true, scoring_func sigmoid,
  // topk_method noaux_tc, n_shared_experts 1.
  p.top_k = 8;
  p.score = RouterScore::kSigmoid;
  p.renormalize = true;
  p.scaling_factor = 2.5f;
  p.num_groups = 8;
  p.top_k_groups = 4;
  p.group_score = GroupScore::kSumTop2;
  p.expert_bias = expert_bias;
  p.num_shared_experts = 1;
  return p;
}

Status UpdateExpertBias(std::span<const std::uint64_t> load, float gamma, std::span<float> bias) {
  if (load.size() != bias.size()) {
    return InvalidArgumentError("expert bias update: " + Str(load.size()) + " loads for " +
                                Str(bias.size()) + " biases");
  }
  if (!IsFinite(gamma)) return InvalidArgumentError("expert bias update: gamma is not finite");
  if (load.empty()) return OkStatus();
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < load.size(); ++i) {
    if (__builtin_add_overflow(total, load[i], &total)) {
      return OutOfRangeError("expert bias update: the total load overflows uint64");
    }
  }
  // mean = q + r / E exactly; load_i < mean iff load_i < q, or load_i == q and r > 0.
  const std::uint64_t q = total / load.size();
  const std::uint64_t rem = total % load.size();
  for (std::size_t i = 0; i < load.size(); ++i) {
    if (load[i] < q || (load[i] == q && rem > 0)) {
      bias[i] += gamma;
    } else if (load[i] > q) {
      bias[i] -= gamma;
    }
  }
  return OkStatus();
}

}  // namespace trnmx
