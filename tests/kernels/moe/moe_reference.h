// Test support: an independent scalar MoE router and dispatch, written from
// the contract in moe.h, not from src/kernels/moe (it sorts where the library
// selects incrementally, recomputes every count from the outputs, and keeps
// the losses as separate passes). It shares only the fixed exp/sigmoid/log
// primitives, which moe.h names as part of the contract and which
// fixed_math_test.cc checks against long double on their own.
#ifndef TRNMX_TESTS_KERNELS_MOE_MOE_REFERENCE_H_
#define TRNMX_TESTS_KERNELS_MOE_MOE_REFERENCE_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

#include "internal/fixed_math.h"
#include "trnmx/moe.h"

namespace trnmx::testing {

struct RefRoute {
  std::vector<std::int32_t> ids;
  std::vector<float> weights;
  std::size_t slots = 0;
  std::size_t capacity = 0;
  std::uint64_t dropped = 0;
  std::vector<std::uint64_t> kept;      // E + S.
  std::vector<std::uint64_t> selected;  // E.
  double z_loss = 0, lb_loss = 0, seq_loss = 0;
};

// Softmax by the contract: max, exp of fl32 differences, FP32 sum in order, division.
inline std::vector<float> RefSoftmax(const std::vector<float>& x, float* max_out = nullptr,
                                     float* sum_out = nullptr) {
  float m = x[0];
  for (float v : x) m = v > m ? v : m;
  std::vector<float> u(x.size());
  float z = 0.0f;
  for (std::size_t i = 0; i < x.size(); ++i) {
    u[i] = internal::FixedExp(x[i] - m);
    z = z + u[i];
  }
  for (float& v : u) v = v / z;
  if (max_out != nullptr) *max_out = m;
  if (sum_out != nullptr) *sum_out = z;
  return u;
}

// Indices of `v` restricted to `allowed`, sorted best first (value desc, index asc).
inline std::vector<std::size_t> RefOrder(const std::vector<float>& v,
                                         const std::vector<bool>& allowed) {
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (allowed[i]) idx.push_back(i);
  }
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    if (v[a] != v[b]) return v[a] > v[b];
    return a < b;
  });
  return idx;
}

inline double RefBalance(const std::vector<std::vector<float>>& prob,
                         const std::vector<std::vector<std::size_t>>& chosen, std::size_t begin,
                         std::size_t end, std::size_t experts, std::size_t k) {
  double acc = 0.0;
  for (std::size_t e = 0; e < experts; ++e) {
    double psum = 0.0;
    std::uint64_t n = 0;
    for (std::size_t t = begin; t < end; ++t) {
      psum += static_cast<double>(prob[t][e]);
      n += static_cast<std::uint64_t>(std::count(chosen[t].begin(), chosen[t].end(), e));
    }
    acc += static_cast<double>(n) * psum;
  }
  const double tk = static_cast<double>(end - begin);
  return acc * (static_cast<double>(experts) / (static_cast<double>(k) * tk * tk));
}

// logits: T x E row-major.
inline RefRoute RefRouter(const std::vector<float>& logits, std::size_t T, std::size_t E,
                          const RouterParams& p) {
  const std::size_t k = p.top_k;
  const std::size_t S = p.num_shared_experts;
  RefRoute r;
  r.slots = k + S;
  r.ids.assign(T * r.slots, 0);
  r.weights.assign(T * r.slots, 0.0f);
  std::vector<std::vector<float>> prob(T);
  std::vector<std::vector<std::size_t>> chosen(T);
  std::vector<double> lse(T);
  const bool bias = !p.expert_bias.empty();
  for (std::size_t t = 0; t < T; ++t) {
    std::vector<float> x(logits.begin() + static_cast<std::ptrdiff_t>(t * E),
                         logits.begin() + static_cast<std::ptrdiff_t>((t + 1) * E));
    float m = 0, z = 0;
    const std::vector<float> soft = RefSoftmax(x, &m, &z);
    lse[t] = static_cast<double>(m) + internal::LogDouble(static_cast<double>(z));
    std::vector<float> s(E);
    for (std::size_t e = 0; e < E; ++e) {
      s[e] = p.score == RouterScore::kSoftmax   ? soft[e]
             : p.score == RouterScore::kSigmoid ? internal::FixedSigmoid(x[e])
                                                : x[e];
    }
    if (p.score == RouterScore::kSigmoid) {
      float sum = 0.0f;
      for (float v : s) sum = sum + v;
      prob[t].resize(E);
      for (std::size_t e = 0; e < E; ++e) prob[t][e] = sum > 0.0f ? s[e] / sum : 0.0f;
    } else {
      prob[t] = soft;
    }
    std::vector<float> c = s;
    if (bias) {
      for (std::size_t e = 0; e < E; ++e) c[e] = s[e] + p.expert_bias[e];
    }
    std::vector<bool> allowed(E, true);
    if (p.num_groups > 1) {
      const std::size_t G = p.num_groups;
      const std::size_t gs = E / G;
      const bool top2 =
          p.group_score == GroupScore::kSumTop2 || (p.group_score == GroupScore::kAuto && bias);
      std::vector<float> gscore(G);
      for (std::size_t g = 0; g < G; ++g) {
        std::vector<float> in(c.begin() + static_cast<std::ptrdiff_t>(g * gs),
                              c.begin() + static_cast<std::ptrdiff_t>((g + 1) * gs));
        const std::vector<std::size_t> o = RefOrder(in, std::vector<bool>(gs, true));
        gscore[g] = top2 ? in[o[0]] + in[o[1]] : in[o[0]];
      }
      const std::vector<std::size_t> go = RefOrder(gscore, std::vector<bool>(G, true));
      std::fill(allowed.begin(), allowed.end(), false);
      for (std::size_t i = 0; i < p.top_k_groups; ++i) {
        for (std::size_t e = go[i] * gs; e < (go[i] + 1) * gs; ++e) allowed[e] = true;
      }
    }
    const std::vector<std::size_t> order = RefOrder(c, allowed);
    chosen[t].assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k));
    std::vector<float> w(k);
    if (p.score == RouterScore::kSoftmaxOverTopK) {
      std::vector<float> sel(k);
      for (std::size_t j = 0; j < k; ++j) sel[j] = x[chosen[t][j]];
      w = RefSoftmax(sel);
    } else {
      for (std::size_t j = 0; j < k; ++j) w[j] = s[chosen[t][j]];
    }
    if (p.renormalize) {
      float sum = 0.0f;
      for (float v : w) sum = sum + v;
      if (sum > 0.0f) {
        for (float& v : w) v = v / sum;
      }
    }
    if (p.scaling_factor != 1.0f) {
      for (float& v : w) v = v * p.scaling_factor;
    }
    for (std::size_t j = 0; j < k; ++j) {
      r.ids[t * r.slots + j] = static_cast<std::int32_t>(chosen[t][j]);
      r.weights[t * r.slots + j] = w[j];
    }
    for (std::size_t i = 0; i < S; ++i) {
      r.ids[t * r.slots + k + i] = static_cast<std::int32_t>(E + i);
      r.weights[t * r.slots + k + i] = 1.0f;
    }
  }
  r.selected.assign(E, 0);
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t e : chosen[t]) ++r.selected[e];
  }
  if (p.capacity_factor > 0.0f) {
    const double c = std::ceil(static_cast<double>(p.capacity_factor) * static_cast<double>(T * k) /
                               static_cast<double>(E));
    r.capacity = std::max<std::size_t>(p.min_capacity, std::min<double>(c, static_cast<double>(T)));
    for (std::size_t e = 0; e < E; ++e) {
      struct A {
        std::size_t t, slot;
        float w;
      };
      std::vector<A> list;
      for (std::size_t t = 0; t < T; ++t) {
        for (std::size_t j = 0; j < k; ++j) {
          if (r.ids[t * r.slots + j] == static_cast<std::int32_t>(e)) {
            list.push_back({t, j, r.weights[t * r.slots + j]});
          }
        }
      }
      if (p.drop_policy == DropPolicy::kProbability) {
        std::sort(list.begin(), list.end(),
                  [](const A& a, const A& b) { return a.w != b.w ? a.w > b.w : a.t < b.t; });
      }
      for (std::size_t i = r.capacity; i < list.size(); ++i) {
        r.ids[list[i].t * r.slots + list[i].slot] = kDroppedExpert;
        r.weights[list[i].t * r.slots + list[i].slot] = 0.0f;
        ++r.dropped;
      }
    }
  }
  r.kept.assign(E + S, 0);
  for (std::int32_t id : r.ids) {
    if (id >= 0) ++r.kept[static_cast<std::size_t>(id)];
  }
  if (p.compute_losses && T > 0) {
    double z = 0.0;
    for (double v : lse) z += v * v;
    r.z_loss = z / static_cast<double>(T);
    r.lb_loss = RefBalance(prob, chosen, 0, T, E, k);
    if (p.sequence_offsets.empty()) {
      r.seq_loss = r.lb_loss;
    } else {
      double sum = 0.0;
      std::size_t n = 0;
      for (std::size_t q = 0; q + 1 < p.sequence_offsets.size(); ++q) {
        if (p.sequence_offsets[q] == p.sequence_offsets[q + 1]) continue;
        sum += RefBalance(prob, chosen, p.sequence_offsets[q], p.sequence_offsets[q + 1], E, k);
        ++n;
      }
      r.seq_loss = n > 0 ? sum / static_cast<double>(n) : 0.0;
    }
  }
  return r;
}

// The permuted order by the contract: for each expert, its (token, slot)
// pairs in increasing order; returns, per permuted row, the source token.
inline std::vector<std::size_t> RefPermutedTokens(const std::vector<std::int32_t>& ids,
                                                  std::size_t slots, std::size_t experts,
                                                  std::size_t segment_rows) {
  std::vector<std::size_t> rows;
  for (std::size_t e = 0; e < experts; ++e) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] == static_cast<std::int32_t>(e)) {
        rows.push_back(i / slots);
        ++n;
      }
    }
    for (; segment_rows > 0 && n < segment_rows; ++n) rows.push_back(DispatchPlan::kPaddingRow);
  }
  return rows;
}

}  // namespace trnmx::testing

#endif  // TRNMX_TESTS_KERNELS_MOE_MOE_REFERENCE_H_
