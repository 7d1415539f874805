// The MoE router (moe.h): validation, the per-token routing (scores, bias,
// groups, top-k, weights), then the capacity drops, counts and losses in the
// fixed orders of the header.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
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
// outputs are its own); this one only bounds the per-task scratch.
constexpr std::size_t kTokensPerTask = 64;

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

std::uint32_t Bits(Bf16 x) { return static_cast<std::uint32_t>(x.bits) << 16; }

template <class T>
Status CheckLogits(const StridedMatrix<const T>& m) {
  if (m.rows == 0) return OkStatus();
  if (m.data == nullptr) {
    return InvalidArgumentError("router: logits are " + Str(m.rows) + " x " + Str(m.cols) +
                                " but the data pointer is null");
  }
  if (m.rows > 1 && m.row_stride < m.cols) {
    return InvalidArgumentError("router: logits row_stride " + Str(m.row_stride) +
                                " is less than the " + Str(m.cols) + " experts");
  }
  constexpr std::uint32_t kExponent = 0x7F800000u;  // All ones: Inf or NaN.
  for (std::size_t t = 0; t < m.rows; ++t) {
    const T* row = m.data + t * m.row_stride;
    // A branch-free scan of the row (it vectorises); the search for the
    // culprit runs only on a bad row.
    bool bad = false;
    if constexpr (std::is_same_v<T, float>) {
      bad = internal::AnyNonFinite(row, m.cols);
    } else {
      for (std::size_t e = 0; e < m.cols; ++e) bad |= (Bits(row[e]) & kExponent) == kExponent;
    }
    if (!bad) continue;
    for (std::size_t e = 0; e < m.cols; ++e) {
      const float x = Widen(row[e]);
      if (!IsFinite(x)) {
        return InvalidArgumentError("router: logit of token " + Str(t) + ", expert " + Str(e) +
                                    " is " + (std::isnan(x) ? "NaN" : "infinite"));
      }
    }
  }
  return OkStatus();
}

// Softmax of x[0..n) into p (step 1 of the header); returns max and sum.
struct SoftmaxSums {
  float max = 0.0f;
  float sum = 0.0f;
};
SoftmaxSums Softmax(const float* x, std::size_t n, float* p) {
  SoftmaxSums r{x[0], 0.0f};
  for (std::size_t i = 1; i < n; ++i) r.max = std::max(r.max, x[i]);
  for (std::size_t i = 0; i < n; ++i) p[i] = x[i] - r.max;
  internal::FixedExpArray(p, p, n);
  for (std::size_t i = 0; i < n; ++i) r.sum += p[i];
  for (std::size_t i = 0; i < n; ++i) p[i] /= r.sum;
  return r;
}

// The k best of values[i] for i in [0, n) with eligible[i] (all when null),
// best first (moe_internal::Better: higher value, then lower index).
// Indices are visited in increasing order, so a candidate that only ties the
// current k-th value loses to it: it enters iff it is eligible and above the
// k-th value. Once k are held, blocks of kBlock candidates are first tested
// with a branch-free scan (it vectorises) and skipped when none enters; the
// result is the same as visiting them one by one. With `index`, it visits
// values[index[0..n)] (increasing indices) instead.
void TopKScan(const float* values, std::size_t n, const std::uint8_t* eligible, std::size_t k,
              std::uint32_t* best, const std::uint32_t* index = nullptr);

// Top-k without an eligibility mask, over n >= 4 k values: the maxima of
// disjoint subsets of the values are distinct values, so the k-th best is
// at least the k-th largest of them, T. Only the values >= T can be in the top k;
// they are gathered in increasing index order (branch-free) and the scan
// below runs over them alone, which gives the same k as running it over all
// n (a value below T never stays in it).
void TopKThreshold(const float* values, std::size_t n, std::size_t k, std::uint32_t* best,
                   std::uint32_t* candidates) {
  const float t = internal::TopKLowerBound(values, n, k);
  const std::size_t count = internal::IndicesAtLeast(values, n, t, candidates);
  TopKScan(values, count, nullptr, k, best, candidates);
}

void TopKScan(const float* values, std::size_t n, const std::uint8_t* eligible, std::size_t k,
              std::uint32_t* best, const std::uint32_t* index) {
  constexpr std::size_t kBlock = 16;
  std::size_t have = 0;
  float kth = 0.0f;  // values[best[k - 1]] once have == k.
  auto consider = [&](std::size_t at) {
    const std::size_t i = index != nullptr ? index[at] : at;
    if (eligible != nullptr && eligible[i] == 0) return;
    const float v = values[i];
    if (have == k && !(v > kth)) return;
    std::size_t pos = have < k ? have++ : k - 1;
    while (pos > 0 && Better(v, i, values[best[pos - 1]], best[pos - 1])) {
      best[pos] = best[pos - 1];
      --pos;
    }
    best[pos] = static_cast<std::uint32_t>(i);
    if (have == k) kth = values[best[k - 1]];
  };
  std::size_t i = 0;
  while (i < n && have < k) consider(i++);
  if (index != nullptr) {  // a few candidates: one by one
    for (; i < n; ++i) consider(i);
    return;
  }
  for (; i + kBlock <= n; i += kBlock) {
    bool any = false;
    if (eligible == nullptr) {
      for (std::size_t j = 0; j < kBlock; ++j) any |= values[i + j] > kth;
    } else {
      for (std::size_t j = 0; j < kBlock; ++j)
        any |= (values[i + j] > kth) & (eligible[i + j] != 0);
    }
    if (!any) continue;
    for (std::size_t j = 0; j < kBlock; ++j) consider(i + j);
  }
  for (; i < n; ++i) consider(i);
}

// The k best (see TopKScan); candidates: scratch for n indices.
void TopK(const float* values, std::size_t n, const std::uint8_t* eligible, std::size_t k,
          std::uint32_t* best, std::uint32_t* candidates) {
  if (eligible == nullptr && n >= 4 * k) return TopKThreshold(values, n, k, best, candidates);
  TopKScan(values, n, eligible, k, best);
}

// Per-task scratch, sized for one token.
struct Scratch {
  explicit Scratch(const Shape& s)
      : x(s.experts),
        score(s.experts),
        choice(s.experts),
        eligible(s.experts),
        softmax(s.experts),
        group_score(s.groups),
        top_groups(s.top_groups),
        top(s.k),
        weight(s.k),
        logit(s.k),
        candidates(s.experts) {}
  std::vector<float> x, score, choice;
  std::vector<std::uint8_t> eligible;
  std::vector<float> softmax;  // The full softmax of a sigmoid router's logits (z-loss).
  std::vector<float> group_score;
  std::vector<std::uint32_t> top_groups;
  std::vector<std::uint32_t> top;
  std::vector<float> weight, logit;
  std::vector<std::uint32_t> candidates;  // TopK's
};

// Routes one token (x: its E logits): writes its `slots` ids and weights,
// and, when `aux` is not null, P_te into aux[0..E) and lse into *lse.
void RouteToken(const Shape& s, const RouterParams& p, Scratch& w, const float* x,
                std::int32_t* ids, float* weights, float* aux, double* lse) {
  const std::size_t E = s.experts;
  // 1. Scores.
  SoftmaxSums sums;
  bool have_sums = false;
  if (p.score == RouterScore::kSoftmax) {
    sums = Softmax(x, E, w.score.data());
    have_sums = true;
  } else if (p.score == RouterScore::kSigmoid) {
    internal::FixedSigmoidArray(x, w.score.data(), E);
  }
  // kSoftmaxOverTopK scores are the logits themselves.
  const float* score = p.score == RouterScore::kSoftmaxOverTopK ? x : w.score.data();
  // 2. Selection scores.
  const float* choice = score;
  if (s.has_bias) {
    for (std::size_t e = 0; e < E; ++e) w.choice[e] = score[e] + p.expert_bias[e];
    choice = w.choice.data();
  }
  // 3. Groups.
  const std::uint8_t* eligible = nullptr;
  if (s.groups > 1) {
    std::uint32_t best2[2];
    for (std::size_t g = 0; g < s.groups; ++g) {
      const float* c = choice + g * s.group_size;
      TopK(c, s.group_size, nullptr, s.sum_top2 ? 2 : 1, best2, w.candidates.data());
      w.group_score[g] = s.sum_top2 ? c[best2[0]] + c[best2[1]] : c[best2[0]];
    }
    TopK(w.group_score.data(), s.groups, nullptr, s.top_groups, w.top_groups.data(),
         w.candidates.data());
    std::fill(w.eligible.begin(), w.eligible.end(), std::uint8_t{0});
    for (std::size_t i = 0; i < s.top_groups; ++i) {
      const std::size_t g = w.top_groups[i];
      std::fill_n(w.eligible.begin() + static_cast<std::ptrdiff_t>(g * s.group_size), s.group_size,
                  std::uint8_t{1});
    }
    eligible = w.eligible.data();
  }
  // 4. Top-k.
  TopK(choice, E, eligible, s.k, w.top.data(), w.candidates.data());
  // 5. Weights.
  if (p.score == RouterScore::kSoftmaxOverTopK) {
    for (std::size_t j = 0; j < s.k; ++j) w.logit[j] = x[w.top[j]];
    Softmax(w.logit.data(), s.k, w.weight.data());
  } else {
    for (std::size_t j = 0; j < s.k; ++j) w.weight[j] = w.score[w.top[j]];
  }
  if (p.renormalize) {
    float z = 0.0f;
    for (std::size_t j = 0; j < s.k; ++j) z += w.weight[j];
    if (z > 0.0f) {
      for (std::size_t j = 0; j < s.k; ++j) w.weight[j] /= z;
    }
  }
  if (p.scaling_factor != 1.0f) {
    for (std::size_t j = 0; j < s.k; ++j) w.weight[j] *= p.scaling_factor;
  }
  for (std::size_t j = 0; j < s.k; ++j) {
    ids[j] = static_cast<std::int32_t>(w.top[j]);
    weights[j] = w.weight[j];
  }
  // 6. Shared experts.
  for (std::size_t i = 0; i < s.shared; ++i) {
    ids[s.k + i] = static_cast<std::int32_t>(E + i);
    weights[s.k + i] = 1.0f;
  }
  // Loss inputs.
  if (aux != nullptr) {
    if (p.score == RouterScore::kSigmoid) {
      float z = 0.0f;
      for (std::size_t e = 0; e < E; ++e) z += w.score[e];
      for (std::size_t e = 0; e < E; ++e) aux[e] = z > 0.0f ? w.score[e] / z : 0.0f;
    } else if (have_sums) {
      std::copy(w.score.begin(), w.score.end(), aux);
    }
    if (!have_sums) sums = Softmax(x, E, p.score == RouterScore::kSigmoid ? w.softmax.data() : aux);
    *lse = static_cast<double>(sums.max) + internal::LogDouble(static_cast<double>(sums.sum));
  }
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
  TRNMX_RETURN_IF_ERROR(CheckLogits(logits));

  // Every check has passed: from here on nothing fails.
  const std::size_t E = s.experts;
  const std::size_t T = s.tokens;
  std::vector<float> aux(p.compute_losses ? T * E : 0);
  std::vector<double> lse(p.compute_losses ? T : 0);
  const std::size_t tasks = internal::CeilDiv(T, kTokensPerTask);
  internal::ExecutorOrCallingThread(executor).ParallelFor(tasks, [&](std::size_t task) {
    Scratch scratch(s);
    const std::size_t end = std::min(T, (task + 1) * kTokensPerTask);
    for (std::size_t t = task * kTokensPerTask; t < end; ++t) {
      const Elem* row = logits.data + t * logits.row_stride;
      const float* x = nullptr;
      if constexpr (std::is_same_v<Elem, float>) {
        x = row;
      } else {
        for (std::size_t e = 0; e < E; ++e) scratch.x[e] = Widen(row[e]);
        x = scratch.x.data();
      }
      RouteToken(s, p, scratch, x, ids.data() + t * s.slots, weights.data() + t * s.slots,
                 p.compute_losses ? aux.data() + t * E : nullptr,
                 p.compute_losses ? lse.data() + t : nullptr);
    }
  });

  RouterResult r;
  r.slots = s.slots;
  r.selected_per_expert.assign(E, 0);
  std::vector<std::int32_t> selected(p.compute_losses ? T * s.k : 0);
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t j = 0; j < s.k; ++j) {
      const std::int32_t id = ids[t * s.slots + j];
      ++r.selected_per_expert[static_cast<std::size_t>(id)];
      if (p.compute_losses) selected[t * s.k + j] = id;
    }
  }
  if (p.capacity_factor > 0.0f) {
    const double c = std::ceil(static_cast<double>(p.capacity_factor) *
                               static_cast<double>(T * s.k) / static_cast<double>(E));
    r.capacity =
        std::max(p.min_capacity, c >= static_cast<double>(T) ? T : static_cast<std::size_t>(c));
    r.dropped =
        ApplyCapacity(s, p.drop_policy, r.capacity, ids.first(entries), weights.first(entries));
  }
  r.tokens_per_expert.assign(E + s.shared, 0);
  for (std::size_t i = 0; i < entries; ++i) {
    if (ids[i] != kDroppedExpert) ++r.tokens_per_expert[static_cast<std::size_t>(ids[i])];
  }

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
