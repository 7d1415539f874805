// Figures derived from a system's network: modelled peaks, per-chip scale-up
// bandwidth, bisection bandwidth (maximum flow) and a one-line description.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <queue>
#include <string>
#include <vector>

#include "trnmx/emu/system.h"

namespace trnmx::emu {
namespace {

// Dinic's maximum flow on integer capacities (bytes/s are whole numbers in
// every description, so the flow is exact).
class MaxFlow {
 public:
  explicit MaxFlow(int nodes) : adj_(nodes), level_(nodes), next_(nodes) {}

  void AddEdge(int from, int to, int64_t capacity) {
    adj_[from].push_back(static_cast<int>(edges_.size()));
    edges_.push_back({to, capacity});
    adj_[to].push_back(static_cast<int>(edges_.size()));
    edges_.push_back({from, 0});
  }

  int64_t Run(int source, int sink) {
    int64_t flow = 0;
    while (Levels(source, sink)) {
      std::fill(next_.begin(), next_.end(), 0);
      while (int64_t pushed = Push(source, sink, std::numeric_limits<int64_t>::max())) {
        flow += pushed;
      }
    }
    return flow;
  }

 private:
  struct Edge {
    int to;
    int64_t capacity;  // residual
  };

  bool Levels(int source, int sink) {
    std::fill(level_.begin(), level_.end(), -1);
    std::queue<int> q;
    level_[source] = 0;
    q.push(source);
    while (!q.empty()) {
      const int u = q.front();
      q.pop();
      for (int e : adj_[u]) {
        if (edges_[e].capacity > 0 && level_[edges_[e].to] < 0) {
          level_[edges_[e].to] = level_[u] + 1;
          q.push(edges_[e].to);
        }
      }
    }
    return level_[sink] >= 0;
  }

  // Paths are a few links long (chip, switches, chip), so recursion is shallow.
  int64_t Push(int u, int sink, int64_t limit) {
    if (u == sink) return limit;
    for (size_t& i = next_[u]; i < adj_[u].size(); ++i) {
      Edge& e = edges_[adj_[u][i]];
      if (e.capacity <= 0 || level_[e.to] != level_[u] + 1) continue;
      if (int64_t pushed = Push(e.to, sink, std::min(limit, e.capacity))) {
        e.capacity -= pushed;
        edges_[adj_[u][i] ^ 1].capacity += pushed;
        return pushed;
      }
    }
    return 0;
  }

  std::vector<Edge> edges_;
  std::vector<std::vector<int>> adj_;
  std::vector<int> level_;
  std::vector<size_t> next_;
};

}  // namespace

double SystemPeakFlops(const System& s, MatmulDtype dtype) {
  return s.chip_count() * s.chip.cores.value * CorePeakFlops(s.chip, dtype);
}

double ScaleUpBytesPerSecond(const System& s, int chip) {
  if (!s.is_chip(chip)) return 0;
  double total = 0;
  for (int id : s.out_links[chip]) {
    if (s.links[id].kind != LinkKind::kEfa) total += s.links[id].bandwidth_bytes_per_s.value;
  }
  return total;
}

double BisectionBytesPerSecond(const System& s) {
  const int chips = s.chip_count(), source = s.node_count(), sink = source + 1;
  MaxFlow flow(s.node_count() + 2);
  for (const SystemLink& l : s.links) {
    flow.AddEdge(l.from, l.to, std::llround(l.bandwidth_bytes_per_s.value));
  }
  const int64_t unlimited = std::numeric_limits<int64_t>::max() / 4;
  for (int c = 0; c < chips; ++c) {
    if (c < chips / 2) {
      flow.AddEdge(source, c, unlimited);
    } else {
      flow.AddEdge(c, sink, unlimited);
    }
  }
  return static_cast<double>(flow.Run(source, sink));
}

std::string DescribeTopology(const System& s) {
  std::string out;
  const SystemTopology& t = s.topology;
  switch (t.kind) {
    case TopologyKind::kSingleChip:
      out = "single chip";
      break;
    case TopologyKind::kTorus:
      for (const TorusDim& d : t.dims) {
        if (!out.empty()) out += 'x';
        out += std::to_string(static_cast<int>(d.size.value));
      }
      out += " torus";
      break;
    case TopologyKind::kSwitched: {
      const int servers = s.chips_per_system() / static_cast<int>(s.chips_per_server.value);
      const int per_domain = static_cast<int>(t.servers_per_domain.value);
      const int chips_per_domain = per_domain * static_cast<int>(s.chips_per_server.value);
      if (!t.server_switch_link.empty()) out = std::to_string(servers) + " server switches, ";
      out += std::to_string(servers / per_domain) + " domain switch" +
             (servers / per_domain > 1 ? "es" : "") + " x " + std::to_string(chips_per_domain) +
             " chips";
      if (!t.twin_link.empty()) out += ", twin links";
      break;
    }
  }
  if (s.systems > 1) out += "; EFA between " + std::to_string(s.systems) + " systems";
  return out;
}

}  // namespace trnmx::emu
