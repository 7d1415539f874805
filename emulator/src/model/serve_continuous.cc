// Continuous batching over serve's passes (the scheduler and its rules are
// in trnmx/emu/serve.h, ContinuousBatching).
#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "model/serve_internal.h"
#include "trnmx/emu/serve.h"

namespace trnmx::emu::internal {
namespace {

// A pass's time per batch size, costed once per size.
class PassTimes {
 public:
  PassTimes(const System& sys, const Model& m, const ServeConfig& c, int64_t past, int64_t tokens)
      : sys_(sys), m_(m), c_(c), past_(past), tokens_(tokens) {}

  StatusOr<double> At(int64_t batch) {
    if (auto it = seconds_.find(batch); it != seconds_.end()) return it->second;
    ServeConfig c = c_;
    c.batch = batch;
    StatusOr<PhaseCost> p = CostPass(sys_, m_, c, past_, tokens_, /*training=*/false);
    if (!p.ok()) return p.status();
    seconds_[batch] = p->seconds;
    return p->seconds;
  }

 private:
  const System& sys_;
  const Model& m_;
  const ServeConfig& c_;
  int64_t past_, tokens_;
  std::map<int64_t, double> seconds_;
};

struct Request {
  double arrival = 0, first_token = 0;
  int64_t generated = 0;
};

double LowerMedian(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

}  // namespace

StatusOr<ContinuousBatching> SimulateContinuousBatching(const System& sys, const Model& m,
                                                        const ServeConfig& c) {
  ContinuousBatching r;
  r.concurrency = c.concurrency;
  r.requests = ContinuousRequests(c);
  PassTimes prefill(sys, m, c, 0, PrefillTokens(c));
  PassTimes decode(sys, m, c, c.input + c.output / 2 - 1, 1);

  std::deque<Request> waiting(static_cast<size_t>(std::min(c.concurrency, r.requests)));
  int64_t sent = static_cast<int64_t>(waiting.size());
  std::vector<Request> running;
  std::vector<double> ttft, tpot;
  double t = 0;
  int64_t prefilled = 0, decoded = 0;
  // A request ends: its TPOT, and its client's next request (closed loop).
  auto complete = [&](const Request& q) {
    tpot.push_back(c.output > 1 ? (t - q.first_token) / static_cast<double>(c.output - 1) : 0);
    if (sent < r.requests) {
      waiting.push_back({t, 0, 0});
      ++sent;
    }
  };
  while (static_cast<int64_t>(tpot.size()) < r.requests) {
    const int64_t free = c.batch - static_cast<int64_t>(running.size());
    if (!waiting.empty() && free > 0) {
      const int64_t k = std::min<int64_t>(free, static_cast<int64_t>(waiting.size()));
      StatusOr<double> s = prefill.At(k);
      if (!s.ok()) return s.status();
      t += *s;
      ++r.prefill_passes;
      prefilled += k;
      for (int64_t i = 0; i < k; ++i) {
        Request q = waiting.front();
        waiting.pop_front();
        q.first_token = t;
        q.generated = 1;
        ttft.push_back(t - q.arrival);
        if (q.generated == c.output) {
          complete(q);
        } else {
          running.push_back(q);
        }
      }
      continue;
    }
    const int64_t n = static_cast<int64_t>(running.size());
    StatusOr<double> s = decode.At(n);
    if (!s.ok()) return s.status();
    t += *s;
    ++r.decode_steps;
    decoded += n;
    std::vector<Request> still;
    for (Request& q : running) {
      if (++q.generated == c.output) {
        complete(q);
      } else {
        still.push_back(q);
      }
    }
    running = std::move(still);
  }
  r.ttft_p50_s = LowerMedian(ttft);
  r.ttft_mean_s = Mean(ttft);
  r.ttft_max_s = *std::max_element(ttft.begin(), ttft.end());
  r.tpot_p50_s = LowerMedian(tpot);
  r.tpot_mean_s = Mean(tpot);
  r.makespan_s = t;
  r.tokens_per_s = static_cast<double>(c.layout.dp) * static_cast<double>(r.requests) *
                   static_cast<double>(c.output) / t;
  r.mean_prefill_batch = static_cast<double>(prefilled) / static_cast<double>(r.prefill_passes);
  r.mean_decode_batch =
      r.decode_steps > 0 ? static_cast<double>(decoded) / static_cast<double>(r.decode_steps) : 0;
  return r;
}

}  // namespace trnmx::emu::internal
