// Multi-chip systems for the trnmx emulator: servers and UltraServers of
// Trainium chips, their scale-up fabric as a network of directed bandwidth
// links, and clusters of systems joined by EFA.
//
// A system description is a JSON document of schema "trnmx-machine/2" with a
// "system" section (docs/emulator.md, emulator/machines/trn*-*.json). It names
// its chip preset and adds only topology, link, host and published-total
// fields; every number is {"value", "unit", "tag", "source", "note"} as in
// the chip descriptions (trnmx/emu/machine.h). A chip (preset or file) is a
// one-chip system, so every command that takes a system also takes a chip.
//
//   trnmx::StatusOr<trnmx::emu::System> s = trnmx::emu::LoadSystem("trn3-ultraserver-gen2");
//   // chip 0 -> chip 77: the direct twin link to chip 72 (server 18, the other
//   // rack), then chip72 -> l2switch1 -> chip77 through that rack's switch.
//   for (int id : s->Route(0, 77)) {
//     const trnmx::emu::SystemLink& l = s->links[id];
//     std::printf("%s %s %.0f GB/s\n", l.name.c_str(),
//                 std::string(trnmx::emu::LinkKindName(l.kind)).c_str(),
//                 l.bandwidth_bytes_per_s.value / 1e9);
//   }
//
// Nodes are numbered chips first (0 .. chip_count() - 1; in a cluster, system
// k holds chips k x chips_per_system() ..), then the switches of each system,
// then the EFA network of a cluster. Links are directed: one physical link or
// port is two SystemLinks, one per direction, each with the per-direction
// bandwidth after the description's direction convention (trainium.md
// conflict #2) is applied. Switches are non-blocking: only their port links are
// resources (conflict #3).
//
// The loader rejects malformed or inconsistent descriptions with the JSON
// pointer of the offending field first, e.g.
// "/system/topology/dims: sizes multiply to 12, but /system/chips is 16".
#ifndef TRNMX_EMU_SYSTEM_H_
#define TRNMX_EMU_SYSTEM_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trnmx/emu/machine.h"
#include "trnmx/status.h"

namespace trnmx::emu {

// What a link is made of.
enum class LinkKind {
  kNeuronLink,  // chip-to-chip NeuronLink of a torus (Trn2)
  kSwitchPort,  // a chip's port group to a NeuronSwitch, one direction
  kDirect,      // direct chip-to-chip link between switch domains (Trn3 twin)
  kEfa,         // a chip's EFA NIC to the scale-out network
};
std::string_view LinkKindName(LinkKind kind);  // "neuronlink", "switch_port", "direct", "efa"
StatusOr<LinkKind> ParseLinkKind(std::string_view name);

// How a description quotes a link bandwidth. The headline NeuronLink figures
// do not say (trainium.md conflict #2); the documented default for them is a
// sum over both directions, so each direction gets half.
enum class LinkFigure { kBidirectionalSum, kPerDirection };
std::string_view LinkFigureName(LinkFigure figure);  // "bidirectional_sum", "per_direction"

// A class of links as described in /system/links/<name>.
struct LinkClass {
  std::string name;
  LinkKind kind = LinkKind::kNeuronLink;
  LinkFigure figure = LinkFigure::kPerDirection;
  Sourced bandwidth_bytes_per_s;  // as quoted; per chip for switch ports and EFA
  // One step over the link; for a switch or the EFA network, one step from
  // chip to chip through it (trainium.md #5: ~1-2 us NeuronLink/NeuronSwitch;
  // ~15 us EFA), which the two port links on the way share half and half.
  Sourced latency_ns;

  // The bandwidth of one direction under `figure`.
  double per_direction_bytes_per_s() const {
    return bandwidth_bytes_per_s.value / (figure == LinkFigure::kBidirectionalSum ? 2 : 1);
  }
};

// One DIRECTED link.
struct SystemLink {
  int from = -1, to = -1;         // node ids
  Sourced bandwidth_bytes_per_s;  // per direction, after the direction convention
  Sourced latency_ns;             // this link's share of a step
  LinkKind kind = LinkKind::kNeuronLink;
  std::string link_class;  // key of System::link_classes
  std::string name;        // e.g. "chip3->chip7 (torus +x)", "chip5->l1switch1"
};

enum class TopologyKind {
  kSingleChip,  // one chip, no links
  kTorus,       // wrap-around torus, chip id = x + X (y + Y z)
  kSwitched,    // switch domains (servers under one switch) joined by twin links
};
std::string_view TopologyKindName(TopologyKind kind);  // "single_chip", "torus", "switched"

struct TorusDim {
  Sourced size;
  std::string link;  // link class (kind neuronlink)
};

struct SystemTopology {
  TopologyKind kind = TopologyKind::kSingleChip;
  // kTorus: x first; the sizes multiply to the chip count. A ring of 2 has one
  // link each way between its chips, a ring of 1 none.
  std::vector<TorusDim> dims;
  // kSwitched: servers_per_domain consecutive servers share one domain switch
  // (a Trn3 Gen1 32-chip NeuronSwitch domain, a Gen2 rack); with
  // server_switch_link each server also has its own switch (Gen2's first
  // level). With two domains, chip i of server s is wired directly to chip i
  // of server s +- servers_per_domain (twin_link).
  Sourced servers_per_domain;
  std::string server_switch_link;  // empty: no per-server switch
  std::string domain_switch_link;
  std::string twin_link;  // empty with one domain
};

struct HostSpec {
  std::string cpu;              // e.g. "x86", "Graviton"; empty when not described
  Sourced vcpus, memory_bytes;  // totals over the system's servers
};

// Message-size thresholds of the collective algorithm choice (trainium.md
// 10.3): mesh up to mesh_max_bytes, recursive halving/doubling up to
// rdh_max_bytes, a ring above (Trn2's runtime takes KangaRing there, which
// the emulator does not model; collective.h has the full auto rule).
// S17's thresholds on the Trn2 torus; conflict #19's defaults on the Trn3
// switches. Sizes are per-rank buffers as nccom-test counts them.
struct CollectiveThresholds {
  Sourced mesh_max_bytes, rdh_max_bytes;
};

// Runtime overheads of running a model's forward pass (serve.h, train.h),
// the overhead parameters `trnmx-emu calibrate` fits against trainium.md
// 12.1 (validate.h; tag I, the source names the rows). Description path
// /system/runtime; absent (or a field absent) = 0 ns, the uncalibrated rules.
struct RuntimeOverheads {
  Sourced layer_ns;  // per model layer of a pass: kernel launches and cross-engine semaphores
  Sourced pass_ns;   // per pass: the graph launch and the host's sync of the sampled tokens
  // Per serving prefill pass, besides pass_ns: the host's work for a new
  // request before its first token (scheduling and copying in the prompt,
  // sending the first token back). Not in training steps or decode steps.
  Sourced prefill_ns;
};

// AWS's totals for the whole system (a consistency check, never an input).
struct PublishedSystemSpec {
  std::map<MatmulDtype, Sourced> dense_tflops;
  Sourced hbm_capacity_bytes, hbm_bandwidth_bytes_per_s;
  std::optional<Sourced> efa_bandwidth_bytes_per_s;  // absent for a chip
};

struct System {
  std::string name, description, generation;
  Machine chip;                     // every chip of the system
  Sourced chips, chips_per_server;  // per system
  int systems = 1;                  // > 1 for a cluster (MakeCluster)
  SystemTopology topology;
  std::map<std::string, LinkClass> link_classes;
  std::string scale_out_link;  // link class of each chip's EFA; empty for a chip
  std::optional<HostSpec> host;
  std::optional<CollectiveThresholds> collectives;  // absent for a chip
  PublishedSystemSpec published;                    // for all `systems` together
  RuntimeOverheads runtime;                         // 0 when the description has none

  std::vector<std::string> node_names;  // chips, then switches, then "efa"
  std::vector<SystemLink> links;
  std::vector<std::vector<int>> out_links;  // per node: ids of links leaving it, by destination

  // Every number of the system description with its JSON pointer, in
  // document order (the chip's are in chip.numbers).
  std::vector<std::pair<std::string, Sourced>> numbers;

  int chips_per_system() const { return static_cast<int>(chips.value); }
  int chip_count() const { return chips_per_system() * systems; }
  int servers() const { return chip_count() / static_cast<int>(chips_per_server.value); }
  int server_of(int chip_id) const { return chip_id / static_cast<int>(chips_per_server.value); }
  int system_of(int chip_id) const { return chip_id / chips_per_system(); }
  int node_count() const { return static_cast<int>(node_names.size()); }
  bool is_chip(int node) const { return node >= 0 && node < chip_count(); }

  // The id of the link from node `from` to node `to`, or -1.
  int LinkBetween(int from, int to) const;

  // Directed link ids from chip src to chip dst along the deterministic
  // minimal route (empty when src == dst); both must be chips of the system.
  // Torus: dimension order (x, y, z), the shorter way round each ring, ties
  // toward +. Switched: chip -> server switch -> chip inside a server that has
  // one, else chip -> domain switch -> chip; to the other domain first the
  // direct twin link, then the far domain's switches. Between systems of a
  // cluster: chip -> EFA network -> chip.
  std::vector<int> Route(int src_chip, int dst_chip) const;
};

// Parses and validates a system description; `origin` prefixes error messages.
StatusOr<System> ParseSystem(std::string_view json_text, std::string_view origin = "system");
// A system preset name, a chip preset name, or a path to a system or chip JSON
// file; a chip gives a one-chip system.
StatusOr<System> LoadSystem(const std::string& name_or_path);
StatusOr<System> SystemOfChip(const Machine& chip);
// `systems` copies of `system` joined by EFA: each chip's NIC (the system's
// scale_out link class) goes to one non-blocking network node "efa".
// Published totals and host figures scale with `systems`.
StatusOr<System> MakeCluster(const System& system, int systems);

// System presets shipped inside the library (emulator/machines/*.json other
// than the chips): trn2-server, trn2-ultraserver, trn3-ultraserver-gen1,
// trn3-ultraserver-gen2.
std::vector<std::string> PresetSystemNames();
StatusOr<std::string> PresetSystemJson(std::string_view name);

// Modelled dense TensorE peak of the whole system: chips x cores x
// CorePeakFlops (trainium.md section 14).
double SystemPeakFlops(const System& s, MatmulDtype dtype);
// Scale-up bandwidth of one chip per direction: the sum over the links leaving
// it other than EFA.
double ScaleUpBytesPerSecond(const System& s, int chip);
// Bandwidth per direction from the first half of the chips (by id) to the
// rest: the maximum flow over the links (0 for one chip). For these
// presets the halves are the natural bisection: half of each torus ring
// along its last dimension, one Trn3 domain, or half of a cluster's systems.
double BisectionBytesPerSecond(const System& s);
// One line on the fabric, e.g. "4x4x4 torus", "2 domains x 72 chips, 36
// server switches, twin links", with " + EFA x 4 systems" for a cluster.
std::string DescribeTopology(const System& s);

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_SYSTEM_H_
