// Topology builders of one system (system.cc assembles systems and clusters
// from them): the switches and links of a torus or a switched fabric in local
// node ids (chips 0 .. chips - 1, then the switches), and the node path of the
// minimal route between two of its chips.
#ifndef TRNMX_EMU_SRC_MACHINE_TOPOLOGY_H_
#define TRNMX_EMU_SRC_MACHINE_TOPOLOGY_H_

#include <string>
#include <vector>

#include "trnmx/emu/system.h"

namespace trnmx::emu::internal {

struct LocalLink {
  int from = -1, to = -1;  // local node ids
  std::string link_class;  // key of System::link_classes
  std::string label;       // appended to the link name, e.g. " (torus +x)"
};

struct LocalTopology {
  std::vector<std::string> switch_names;  // local ids chips, chips + 1, ...
  std::vector<LocalLink> links;
};

// Requires a validated s.topology, s.chips and s.chips_per_server.
LocalTopology BuildLocalTopology(const System& s);

// Local node ids from chip src to chip dst, both included ({src} when equal),
// along the route System::Route documents.
std::vector<int> LocalNodePath(const System& s, int src, int dst);

}  // namespace trnmx::emu::internal

#endif  // TRNMX_EMU_SRC_MACHINE_TOPOLOGY_H_
