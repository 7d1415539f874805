#include "machine/topology.h"

#include <string>
#include <vector>

namespace trnmx::emu::internal {
namespace {

constexpr const char* kAxes[] = {"x", "y", "z", "w"};

// --- Torus: chip id = x + X (y + Y (z + Z w)) --------------------------------

std::vector<int> TorusSizes(const System& s) {
  std::vector<int> sizes;
  for (const TorusDim& d : s.topology.dims) sizes.push_back(static_cast<int>(d.size.value));
  return sizes;
}

std::vector<int> TorusCoords(const std::vector<int>& sizes, int chip) {
  std::vector<int> c(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    c[d] = chip % sizes[d];
    chip /= sizes[d];
  }
  return c;
}

int TorusId(const std::vector<int>& sizes, const std::vector<int>& c) {
  int id = 0;
  for (size_t d = sizes.size(); d-- > 0;) id = id * sizes[d] + c[d];
  return id;
}

int TorusNeighbour(const std::vector<int>& sizes, int chip, size_t dim, int step) {
  std::vector<int> c = TorusCoords(sizes, chip);
  c[dim] = (c[dim] + step + sizes[dim]) % sizes[dim];
  return TorusId(sizes, c);
}

LocalTopology BuildTorus(const System& s) {
  const std::vector<int> sizes = TorusSizes(s);
  LocalTopology t;
  for (int chip = 0; chip < s.chips_per_system(); ++chip) {
    for (size_t d = 0; d < sizes.size(); ++d) {
      const std::string& cls = s.topology.dims[d].link;
      const std::string axis = kAxes[d];
      if (sizes[d] == 2) {  // + and - reach the same chip: one link each way
        t.links.push_back({chip, TorusNeighbour(sizes, chip, d, 1), cls, " (torus " + axis + ")"});
      } else if (sizes[d] > 2) {
        t.links.push_back({chip, TorusNeighbour(sizes, chip, d, 1), cls, " (torus +" + axis + ")"});
        t.links.push_back(
            {chip, TorusNeighbour(sizes, chip, d, -1), cls, " (torus -" + axis + ")"});
      }
    }
  }
  return t;
}

// Dimension order, the shorter way round each ring, ties toward +.
std::vector<int> TorusPath(const System& s, int src, int dst) {
  const std::vector<int> sizes = TorusSizes(s);
  std::vector<int> cur = TorusCoords(sizes, src);
  const std::vector<int> want = TorusCoords(sizes, dst);
  std::vector<int> path = {src};
  for (size_t d = 0; d < sizes.size(); ++d) {
    const int n = sizes[d];
    const int forward = (want[d] - cur[d] + n) % n;
    if (forward == 0) continue;
    const bool plus = forward <= n - forward;
    for (int hop = 0, hops = plus ? forward : n - forward; hop < hops; ++hop) {
      cur[d] = (cur[d] + (plus ? 1 : n - 1)) % n;
      path.push_back(TorusId(sizes, cur));
    }
  }
  return path;
}

// --- Switched: servers under domain switches, optional server switches ------

struct SwitchedLayout {
  int chips, chips_per_server, servers, servers_per_domain, domains;
  bool server_switches, twins;

  explicit SwitchedLayout(const System& s)
      : chips(s.chips_per_system()),
        chips_per_server(static_cast<int>(s.chips_per_server.value)),
        servers(chips / chips_per_server),
        servers_per_domain(static_cast<int>(s.topology.servers_per_domain.value)),
        domains(servers / servers_per_domain),
        server_switches(!s.topology.server_switch_link.empty()),
        twins(!s.topology.twin_link.empty()) {}

  int server(int chip) const { return chip / chips_per_server; }
  int domain(int chip) const { return server(chip) / servers_per_domain; }
  int server_switch(int server) const { return chips + server; }
  int domain_switch(int domain) const { return chips + (server_switches ? servers : 0) + domain; }
  // The chip at the same position of the same server slot in the other domain.
  int twin(int chip) const {
    const int slot = server(chip) % servers_per_domain;
    const int other = (1 - domain(chip)) * servers_per_domain + slot;
    return other * chips_per_server + chip % chips_per_server;
  }
};

LocalTopology BuildSwitched(const System& s) {
  const SwitchedLayout l(s);
  const SystemTopology& topo = s.topology;
  LocalTopology t;
  if (l.server_switches) {
    for (int sv = 0; sv < l.servers; ++sv)
      t.switch_names.push_back("l1switch" + std::to_string(sv));
  }
  for (int d = 0; d < l.domains; ++d) {
    t.switch_names.push_back((l.server_switches ? "l2switch" : "switch") + std::to_string(d));
  }
  for (int chip = 0; chip < l.chips; ++chip) {
    if (l.server_switches) {
      const int sw = l.server_switch(l.server(chip));
      t.links.push_back({chip, sw, topo.server_switch_link, ""});
      t.links.push_back({sw, chip, topo.server_switch_link, ""});
    }
    const int sw = l.domain_switch(l.domain(chip));
    t.links.push_back({chip, sw, topo.domain_switch_link, ""});
    t.links.push_back({sw, chip, topo.domain_switch_link, ""});
    if (l.twins) t.links.push_back({chip, l.twin(chip), topo.twin_link, " (twin)"});
  }
  return t;
}

std::vector<int> SwitchedPath(const System& s, int src, int dst) {
  const SwitchedLayout l(s);
  std::vector<int> path = {src};
  int cur = src;
  if (l.domain(cur) != l.domain(dst)) {
    cur = l.twin(cur);
    path.push_back(cur);
  }
  if (cur != dst) {
    if (l.server_switches && l.server(cur) == l.server(dst)) {
      path.push_back(l.server_switch(l.server(cur)));
    } else {
      path.push_back(l.domain_switch(l.domain(cur)));
    }
    path.push_back(dst);
  }
  return path;
}

}  // namespace

LocalTopology BuildLocalTopology(const System& s) {
  switch (s.topology.kind) {
    case TopologyKind::kSingleChip:
      return {};
    case TopologyKind::kTorus:
      return BuildTorus(s);
    case TopologyKind::kSwitched:
      return BuildSwitched(s);
  }
  return {};
}

std::vector<int> LocalNodePath(const System& s, int src, int dst) {
  if (src == dst) return {src};
  switch (s.topology.kind) {
    case TopologyKind::kSingleChip:
      return {src};
    case TopologyKind::kTorus:
      return TorusPath(s, src, dst);
    case TopologyKind::kSwitched:
      return SwitchedPath(s, src, dst);
  }
  return {src};
}

}  // namespace trnmx::emu::internal
