// Routing statistics and synthetic router logits (moe.h).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "internal/fixed_math.h"
#include "kernels/moe/moe_internal.h"
#include "trnmx/moe.h"

namespace trnmx {
namespace {

using moe_internal::Str;

// SplitMix64 (Steele, Lea, Flood 2014): output number i (i >= 1) of the
// generator started at `seed`, computed directly (counter-based).
std::uint64_t SplitMix64(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed + i * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// max / mean of `v` with mean = total / size (1.0 for an empty load) and the
// lowest index of the maximum.
void Imbalance(const std::vector<std::uint64_t>& v, std::uint64_t total, double* ratio,
               std::size_t* argmax) {
  const auto it = std::max_element(v.begin(), v.end());
  *argmax = static_cast<std::size_t>(it - v.begin());
  if (total == 0) {
    *ratio = 1.0;
    return;
  }
  const double mean = static_cast<double>(total) / static_cast<double>(v.size());
  *ratio = static_cast<double>(*it) / mean;
}

}  // namespace

StatusOr<std::vector<std::uint64_t>> CountTokensPerExpert(std::span<const std::int32_t> expert_ids,
                                                          std::size_t num_experts,
                                                          std::uint64_t* dropped) {
  std::vector<std::uint64_t> counts(num_experts, 0);
  std::uint64_t none = 0;
  for (std::size_t i = 0; i < expert_ids.size(); ++i) {
    const std::int32_t id = expert_ids[i];
    if (id == kDroppedExpert) {
      ++none;
    } else if (id < 0 || static_cast<std::size_t>(id) >= num_experts) {
      return OutOfRangeError("expert id " + std::to_string(id) + " at index " + Str(i) +
                             " is outside [0, " + Str(num_experts) + ")");
    } else {
      ++counts[static_cast<std::size_t>(id)];
    }
  }
  if (dropped != nullptr) *dropped = none;
  return counts;
}

StatusOr<RoutingStats> ComputeRoutingStats(std::span<const std::uint64_t> tokens_per_expert,
                                           std::size_t num_experts, std::size_t ep_degree,
                                           std::span<const std::uint32_t> device_of_expert,
                                           std::uint64_t dropped) {
  const std::size_t n = tokens_per_expert.size();
  if (n > num_experts) {
    return OutOfRangeError("routing histogram has " + Str(n) + " entries for " + Str(num_experts) +
                           " experts: expert ids " + Str(num_experts) +
                           (n - num_experts > 1 ? ".." + Str(n - 1) : std::string()) +
                           " are out of range");
  }
  if (n < num_experts) {
    return OutOfRangeError("routing histogram has " + Str(n) + " entries for " + Str(num_experts) +
                           " experts: experts " + Str(n) +
                           (num_experts - n > 1 ? ".." + Str(num_experts - 1) : std::string()) +
                           " are missing");
  }
  if (num_experts == 0) return InvalidArgumentError("routing statistics: num_experts is 0");
  if (ep_degree == 0) return InvalidArgumentError("routing statistics: ep_degree is 0");
  if (device_of_expert.empty()) {
    if (num_experts % ep_degree != 0) {
      return InvalidArgumentError("routing statistics: EP degree " + Str(ep_degree) +
                                  " does not divide the " + Str(num_experts) +
                                  " experts (give a device_of_expert map)");
    }
  } else {
    if (device_of_expert.size() != num_experts) {
      return InvalidArgumentError("routing statistics: device_of_expert has " +
                                  Str(device_of_expert.size()) + " entries for " +
                                  Str(num_experts) + " experts");
    }
    for (std::size_t e = 0; e < num_experts; ++e) {
      if (device_of_expert[e] >= ep_degree) {
        return InvalidArgumentError("routing statistics: device_of_expert[" + Str(e) +
                                    "] = " + Str(device_of_expert[e]) +
                                    " is not below the EP degree " + Str(ep_degree));
      }
    }
  }
  RoutingStats s;
  s.tokens_per_expert.assign(tokens_per_expert.begin(), tokens_per_expert.end());
  s.tokens_per_device.assign(ep_degree, 0);
  s.dropped = dropped;
  const std::size_t per_device = num_experts / ep_degree;
  for (std::size_t e = 0; e < num_experts; ++e) {
    const std::size_t d = device_of_expert.empty() ? e / per_device : device_of_expert[e];
    if (__builtin_add_overflow(s.total, tokens_per_expert[e], &s.total)) {
      return OutOfRangeError("routing statistics: the total token count overflows uint64");
    }
    s.tokens_per_device[d] += tokens_per_expert[e];  // <= total: cannot overflow.
  }
  Imbalance(s.tokens_per_expert, s.total, &s.expert_imbalance, &s.busiest_expert);
  Imbalance(s.tokens_per_device, s.total, &s.device_imbalance, &s.busiest_device);
  return s;
}

Status SyntheticRouterLogits(const SyntheticRouting& config, std::size_t tokens,
                             std::size_t experts, std::span<float> logits) {
  if (static_cast<unsigned>(config.popularity) > static_cast<unsigned>(ExpertPopularity::kZipf)) {
    return InvalidArgumentError("synthetic routing: popularity value " +
                                Str(static_cast<unsigned>(config.popularity)) +
                                " is not an ExpertPopularity");
  }
  if (experts == 0) return InvalidArgumentError("synthetic routing: experts is 0");
  if (config.popularity == ExpertPopularity::kZipf &&
      (!std::isfinite(config.zipf_s) || config.zipf_s < 0.0)) {
    return InvalidArgumentError("synthetic routing: zipf_s must be finite and >= 0");
  }
  std::size_t entries = 0;
  if (__builtin_mul_overflow(tokens, experts, &entries)) {
    return OutOfRangeError("synthetic routing: tokens x experts overflows size_t");
  }
  if (logits.size() < entries) {
    return ResourceExhaustedError("synthetic routing: logits holds " + Str(logits.size()) +
                                  " values, " + Str(entries) + " needed (" + Str(tokens) + " x " +
                                  Str(experts) + ")");
  }
  std::vector<double> log_pop(experts, 0.0);
  if (config.popularity == ExpertPopularity::kZipf) {
    for (std::size_t e = 0; e < experts; ++e) {
      log_pop[e] = -config.zipf_s * internal::LogDouble(static_cast<double>(e + 1));
    }
  }
  for (std::size_t i = 0; i < entries; ++i) {
    const std::uint64_t bits = SplitMix64(config.seed, i + 1) >> 11;
    const double u = (static_cast<double>(bits) + 0.5) * 0x1p-53;  // (0, 1), exact.
    const double gumbel = -internal::LogDouble(-internal::LogDouble(u));
    logits[i] = static_cast<float>(log_pop[i % experts] + gumbel);
  }
  return OkStatus();
}

}  // namespace trnmx
