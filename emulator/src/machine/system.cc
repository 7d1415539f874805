// System-description loader, network assembly (systems and EFA clusters) and
// routing. Topology builders: topology.cc; derived figures: system_metrics.cc.
#include "trnmx/emu/system.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "machine/json_reader.h"
#include "machine/presets.h"
#include "machine/topology.h"

namespace trnmx::emu {
namespace {

using internal::FormatNumber;
using internal::Int;
using internal::Json;
using internal::LoadError;
using internal::NonNeg;
using internal::ObjectReader;
using internal::Pos;

// Bounds that keep every id an int and the link list in memory: a cluster of
// the largest preset (144 chips) may have 455 systems.
constexpr int kMaxChips = 1 << 16;
constexpr int kMaxTorusDims = 4;

std::string Known(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string WithNote(std::string note, const std::string& more) {
  return note.empty() ? more : more + "; " + note;
}

// Per-direction bandwidth of one link of class `c` (conflict #2 convention).
Sourced PerDirection(const LinkClass& c) {
  Sourced b = c.bandwidth_bytes_per_s;
  if (c.figure == LinkFigure::kBidirectionalSum) {
    b.value = c.per_direction_bytes_per_s();
    b.tag = SourceTag::kInferred;
    b.source += " #2";
    b.note = WithNote(b.note, "per direction: half of the quoted bidirectional sum");
  }
  return b;
}

// A step through a switch or the EFA network uses two port links, which share
// its latency; a NeuronLink or twin link is the whole step.
Sourced LatencyShare(const LinkClass& c) {
  Sourced l = c.latency_ns;
  if (c.kind == LinkKind::kSwitchPort || c.kind == LinkKind::kEfa) {
    l.value /= 2;
    l.note = WithNote(l.note, "half of the chip-to-chip step through the switch or network");
  }
  return l;
}

int SwitchesPerSystem(const System& s) {
  return (s.node_count() - s.chip_count() - (s.systems > 1 ? 1 : 0)) / s.systems;
}

// Fills node_names, links and out_links from the topology, the link classes
// and `systems`.
void Assemble(System& s) {
  const internal::LocalTopology local = internal::BuildLocalTopology(s);
  const int per = s.chips_per_system(), chips = s.chip_count();
  const int switches = static_cast<int>(local.switch_names.size());
  s.node_names.clear();
  s.links.clear();
  for (int c = 0; c < chips; ++c) s.node_names.push_back("chip" + std::to_string(c));
  for (int k = 0; k < s.systems; ++k) {
    const std::string prefix = s.systems > 1 ? "sys" + std::to_string(k) + "." : "";
    for (const std::string& name : local.switch_names) s.node_names.push_back(prefix + name);
  }
  if (s.systems > 1) s.node_names.push_back("efa");
  auto add = [&s](int from, int to, const LinkClass& c, const std::string& label) {
    SystemLink l;
    l.from = from;
    l.to = to;
    l.bandwidth_bytes_per_s = PerDirection(c);
    l.latency_ns = LatencyShare(c);
    l.kind = c.kind;
    l.link_class = c.name;
    l.name = s.node_names[from] + "->" + s.node_names[to] + label;
    s.links.push_back(std::move(l));
  };
  for (int k = 0; k < s.systems; ++k) {
    auto global = [&](int id) { return id < per ? k * per + id : chips + k * switches + id - per; };
    for (const internal::LocalLink& l : local.links) {
      add(global(l.from), global(l.to), s.link_classes.at(l.link_class), l.label);
    }
  }
  if (s.systems > 1) {
    const int efa = s.node_count() - 1;
    const LinkClass& c = s.link_classes.at(s.scale_out_link);
    for (int chip = 0; chip < chips; ++chip) {
      add(chip, efa, c, "");
      add(efa, chip, c, "");
    }
  }
  s.out_links.assign(s.node_names.size(), {});
  for (int id = 0; id < static_cast<int>(s.links.size()); ++id) {
    s.out_links[s.links[id].from].push_back(id);
  }
  for (std::vector<int>& out : s.out_links) {
    std::stable_sort(out.begin(), out.end(),
                     [&s](int a, int b) { return s.links[a].to < s.links[b].to; });
  }
}

// --- Parsing ----------------------------------------------------------------

class SystemParser {
 public:
  explicit SystemParser(System& s) : s_(s) {}

  void Parse(const Json& j) {
    ObjectReader root(j, "", &s_.numbers);
    const std::string schema = root.String("schema");
    if (schema != kMachineSchema) {
      throw LoadError{"/schema", "must be \"" + std::string(kMachineSchema) +
                                     "\" for a system description (got \"" + schema + "\")"};
    }
    s_.name = root.String("name");
    s_.description = root.String("description");
    s_.generation = root.String("generation");
    ObjectReader sys = root.Object("system");
    ReadChip(sys);
    if (s_.generation != s_.chip.generation) {
      throw LoadError{"/generation", "must be the chip's generation \"" + s_.chip.generation +
                                         "\" (got \"" + s_.generation + "\")"};
    }
    s_.chips = Int(sys, "chips", 1, kMaxChips);
    s_.chips_per_server = Int(sys, "chips_per_server", 1, kMaxChips);
    if (static_cast<int>(s_.chips.value) % static_cast<int>(s_.chips_per_server.value) != 0) {
      throw LoadError{"/system/chips_per_server/value",
                      "must divide /system/chips (" + FormatNumber(s_.chips.value) + ")"};
    }
    ReadLinks(sys.Object("links"));
    ReadTopology(sys.Object("topology"));
    s_.scale_out_link = sys.String("scale_out_link");
    Use("/system/scale_out_link", s_.scale_out_link, LinkKind::kEfa);
    ReadHost(sys.Object("host"));
    ReadCollectives(sys.Object("collectives"));
    if (sys.Optional("runtime") != nullptr) ReadRuntime(sys.Object("runtime"));
    ReadPublished(sys.Object("published"));
    sys.Finish();
    root.Finish();
    for (const auto& [name, c] : s_.link_classes) {
      if (!used_.count(name)) {
        throw LoadError{"/system/links/" + name,
                        "defined but used neither by /system/topology nor by "
                        "/system/scale_out_link"};
      }
    }
    CheckPublished();
  }

 private:
  void ReadChip(ObjectReader& sys) {
    const std::string chip = sys.String("chip");
    StatusOr<Machine> m = LoadMachine(chip);
    if (!m.ok()) throw LoadError{"/system/chip", m.status().message()};
    s_.chip = std::move(*m);
  }

  void ReadLinks(ObjectReader links) {
    for (auto it = links.json().begin(); it != links.json().end(); ++it) {
      const std::string path = links.Child(it.key());
      ObjectReader r(it.value(), path, &s_.numbers);
      LinkClass c;
      c.name = it.key();
      StatusOr<LinkKind> kind = ParseLinkKind(r.String("kind"));
      if (!kind.ok()) throw LoadError{path + "/kind", kind.status().message()};
      c.kind = *kind;
      const std::string figure = r.String("direction");
      if (figure == LinkFigureName(LinkFigure::kBidirectionalSum)) {
        c.figure = LinkFigure::kBidirectionalSum;
      } else if (figure == LinkFigureName(LinkFigure::kPerDirection)) {
        c.figure = LinkFigure::kPerDirection;
      } else {
        throw LoadError{
            path + "/direction",
            "must be \"bidirectional_sum\" or \"per_direction\" (got \"" + figure + "\")"};
      }
      c.bandwidth_bytes_per_s = Pos(r, "bandwidth_bytes_per_s");
      c.latency_ns = NonNeg(r, "latency_ns");
      r.Finish();
      links.Optional(it.key().c_str());  // mark as seen
      s_.link_classes[c.name] = c;
    }
    links.Finish();
  }

  // A reference to a link class at `path`, which must have kind `kind`.
  void Use(const std::string& path, const std::string& name, LinkKind kind) {
    auto it = s_.link_classes.find(name);
    if (it == s_.link_classes.end()) {
      std::vector<std::string> defined;
      for (const auto& [n, c] : s_.link_classes) defined.push_back(n);
      throw LoadError{path, "unknown link class \"" + name +
                                "\" (defined in /system/links: " + Known(defined) + ")"};
    }
    if (it->second.kind != kind) {
      throw LoadError{path, "link class \"" + name + "\" has kind \"" +
                                std::string(LinkKindName(it->second.kind)) +
                                "\"; this use needs \"" + std::string(LinkKindName(kind)) + "\""};
    }
    used_.insert(name);
  }

  // An optional link-class name; empty when absent.
  std::string OptionalLink(ObjectReader& r, const char* key, LinkKind kind) {
    const Json* v = r.Optional(key);
    if (v == nullptr) return "";
    if (!v->is_string() || v->get<std::string>().empty()) {
      throw LoadError{r.Child(key), "must be a non-empty string"};
    }
    Use(r.Child(key), v->get<std::string>(), kind);
    return v->get<std::string>();
  }

  void ReadTopology(ObjectReader t) {
    SystemTopology& topo = s_.topology;
    const std::string kind = t.String("kind");
    const int chips = static_cast<int>(s_.chips.value);
    if (kind == "torus") {
      topo.kind = TopologyKind::kTorus;
      const Json& dims = t.Array("dims");
      if (dims.size() > kMaxTorusDims) {
        throw LoadError{t.Child("dims"), "at most " + std::to_string(kMaxTorusDims) +
                                             " dimensions (got " + std::to_string(dims.size()) +
                                             ")"};
      }
      double product = 1;
      for (size_t i = 0; i < dims.size(); ++i) {
        ObjectReader d(dims[i], t.Child("dims") + "/" + std::to_string(i), &s_.numbers);
        TorusDim dim;
        dim.size = Int(d, "size", 1, kMaxChips);
        dim.link = d.String("link");
        Use(d.Child("link"), dim.link, LinkKind::kNeuronLink);
        d.Finish();
        product *= dim.size.value;
        topo.dims.push_back(std::move(dim));
      }
      if (product != chips) {
        throw LoadError{t.Child("dims"), "sizes multiply to " + FormatNumber(product) +
                                             ", but /system/chips is " + std::to_string(chips)};
      }
    } else if (kind == "switched") {
      topo.kind = TopologyKind::kSwitched;
      const int servers = chips / static_cast<int>(s_.chips_per_server.value);
      topo.servers_per_domain = Int(t, "servers_per_domain", 1, kMaxChips);
      const int per_domain = static_cast<int>(topo.servers_per_domain.value);
      if (servers % per_domain != 0) {
        throw LoadError{t.Child("servers_per_domain") + "/value",
                        "must divide the " + std::to_string(servers) + " servers"};
      }
      const int domains = servers / per_domain;
      if (domains > 2) {
        throw LoadError{
            t.Child("servers_per_domain") + "/value",
            "gives " + std::to_string(domains) + " domains; twin links join at most two"};
      }
      topo.server_switch_link = OptionalLink(t, "server_switch_link", LinkKind::kSwitchPort);
      topo.domain_switch_link = t.String("domain_switch_link");
      Use(t.Child("domain_switch_link"), topo.domain_switch_link, LinkKind::kSwitchPort);
      topo.twin_link = OptionalLink(t, "twin_link", LinkKind::kDirect);
      if (domains == 2 && topo.twin_link.empty()) {
        throw LoadError{t.Child("twin_link"), "missing: two domains are joined by twin links"};
      }
      if (domains == 1 && !topo.twin_link.empty()) {
        throw LoadError{t.Child("twin_link"), "one domain has no twin to link to"};
      }
    } else {
      throw LoadError{t.Child("kind"), "must be \"torus\" or \"switched\" (got \"" + kind +
                                           "\"; a one-chip system is a chip description)"};
    }
    t.Finish();
  }

  void ReadHost(ObjectReader h) {
    HostSpec host;
    if (const Json* cpu = h.Optional("cpu")) {
      if (!cpu->is_string() || cpu->get<std::string>().empty()) {
        throw LoadError{h.Child("cpu"), "must be a non-empty string"};
      }
      host.cpu = cpu->get<std::string>();
    }
    host.vcpus = Int(h, "vcpus", 1, 1e9);
    host.memory_bytes = Int(h, "memory_bytes", 1, internal::kBigInteger);
    h.Finish();
    s_.host = std::move(host);
  }

  void ReadCollectives(ObjectReader c) {
    CollectiveThresholds t;
    t.mesh_max_bytes = Int(c, "mesh_max_bytes", 0, internal::kBigInteger);
    t.rdh_max_bytes = Int(c, "rdh_max_bytes", 0, internal::kBigInteger);
    if (t.rdh_max_bytes.value < t.mesh_max_bytes.value) {
      throw LoadError{c.Child("rdh_max_bytes") + "/value",
                      "must be >= mesh_max_bytes (" + FormatNumber(t.mesh_max_bytes.value) + ")"};
    }
    c.Finish();
    s_.collectives = std::move(t);
  }

  void ReadRuntime(ObjectReader r) {
    if (r.Optional("layer_overhead_ns") != nullptr) {
      s_.runtime.layer_ns = NonNeg(r, "layer_overhead_ns");
    }
    if (r.Optional("pass_overhead_ns") != nullptr) {
      s_.runtime.pass_ns = NonNeg(r, "pass_overhead_ns");
    }
    if (r.Optional("prefill_overhead_ns") != nullptr) {
      s_.runtime.prefill_ns = NonNeg(r, "prefill_overhead_ns");
    }
    r.Finish();
  }

  void ReadPublished(ObjectReader p) {
    PublishedSystemSpec& pub = s_.published;
    ObjectReader t = p.Object("dense_tflops");
    for (auto it = t.json().begin(); it != t.json().end(); ++it) {
      const std::string path = t.Child(it.key());
      StatusOr<MatmulDtype> dt = ParseMatmulDtype(it.key());
      if (!dt.ok()) throw LoadError{path, "unknown dtype (bf16, fp8, mxfp8, mxfp4, fp32)"};
      Sourced s = t.ParseSourced(it.value(), path);
      internal::RequirePositive(path, s);
      pub.dense_tflops[*dt] = s;
      t.Optional(it.key().c_str());  // mark as seen
    }
    t.Finish();
    pub.hbm_capacity_bytes = Int(p, "hbm_capacity_bytes", 1, internal::kBigInteger);
    pub.hbm_bandwidth_bytes_per_s = Pos(p, "hbm_bandwidth_bytes_per_s");
    pub.efa_bandwidth_bytes_per_s = Pos(p, "efa_bandwidth_bytes_per_s");
    p.Finish();
  }

  // System totals = chips x chip figures, up to the rounding of AWS's tables
  // (trainium.md section 14: 64 x 667 = 42.7 vs 42.8 PF BF16 is 0.26 %).
  void CheckPublished() const {
    const double chips = s_.chips.value;
    auto within = [](const std::string& path, double published, double expected,
                     const std::string& what) {
      const double ratio = published / expected;
      if (ratio < 0.99 || ratio > 1.01) {
        throw LoadError{path + "/value", "is " + FormatNumber(ratio) + "x of " + what + " (" +
                                             FormatNumber(expected) + "); expected within 1 %"};
      }
    };
    for (const auto& [dtype, s] : s_.published.dense_tflops) {
      const std::string name(MatmulDtypeName(dtype));
      const std::string path = "/system/published/dense_tflops/" + name;
      auto chip = s_.chip.published.dense_tflops.find(dtype);
      if (chip == s_.chip.published.dense_tflops.end()) {
        throw LoadError{path, "the chip \"" + s_.chip.name + "\" publishes no " + name +
                                  " figure to check it against"};
      }
      within(path, s.value, chips * chip->second.value, "chips x the chip's published " + name);
    }
    const double capacity = chips * s_.chip.hbm.capacity_bytes.value;
    if (s_.published.hbm_capacity_bytes.value != capacity) {
      throw LoadError{"/system/published/hbm_capacity_bytes/value",
                      "must equal chips x the chip's HBM capacity = " + FormatNumber(capacity)};
    }
    within("/system/published/hbm_bandwidth_bytes_per_s",
           s_.published.hbm_bandwidth_bytes_per_s.value,
           chips * s_.chip.hbm.bandwidth_bytes_per_s.value, "chips x the chip's HBM bandwidth");
    within("/system/published/efa_bandwidth_bytes_per_s",
           s_.published.efa_bandwidth_bytes_per_s->value,
           chips * s_.link_classes.at(s_.scale_out_link).per_direction_bytes_per_s(),
           "chips x the per-chip EFA bandwidth");
  }

  System& s_;
  std::set<std::string> used_;
};

Sourced Scaled(Sourced s, int systems) {
  s.value *= systems;
  s.note = WithNote(s.note, "x " + std::to_string(systems) + " systems");
  return s;
}

}  // namespace

std::string_view LinkKindName(LinkKind kind) {
  switch (kind) {
    case LinkKind::kNeuronLink:
      return "neuronlink";
    case LinkKind::kSwitchPort:
      return "switch_port";
    case LinkKind::kDirect:
      return "direct";
    case LinkKind::kEfa:
      return "efa";
  }
  return "?";
}

StatusOr<LinkKind> ParseLinkKind(std::string_view name) {
  for (LinkKind k :
       {LinkKind::kNeuronLink, LinkKind::kSwitchPort, LinkKind::kDirect, LinkKind::kEfa}) {
    if (LinkKindName(k) == name) return k;
  }
  return InvalidArgumentError("unknown link kind \"" + std::string(name) +
                              "\" (neuronlink, switch_port, direct, efa)");
}

std::string_view LinkFigureName(LinkFigure figure) {
  switch (figure) {
    case LinkFigure::kBidirectionalSum:
      return "bidirectional_sum";
    case LinkFigure::kPerDirection:
      return "per_direction";
  }
  return "?";
}

std::string_view TopologyKindName(TopologyKind kind) {
  switch (kind) {
    case TopologyKind::kSingleChip:
      return "single_chip";
    case TopologyKind::kTorus:
      return "torus";
    case TopologyKind::kSwitched:
      return "switched";
  }
  return "?";
}

int System::LinkBetween(int from, int to) const {
  if (from < 0 || from >= node_count()) return -1;
  const std::vector<int>& out = out_links[from];
  auto it = std::lower_bound(out.begin(), out.end(), to,
                             [this](int id, int node) { return links[id].to < node; });
  return it != out.end() && links[*it].to == to ? *it : -1;
}

std::vector<int> System::Route(int src_chip, int dst_chip) const {
  if (!is_chip(src_chip) || !is_chip(dst_chip) || src_chip == dst_chip) return {};
  std::vector<int> nodes;
  const int k = system_of(src_chip);
  if (system_of(dst_chip) != k) {
    nodes = {src_chip, node_count() - 1, dst_chip};  // through the EFA network
  } else {
    const int per = chips_per_system(), switches = SwitchesPerSystem(*this);
    nodes = internal::LocalNodePath(*this, src_chip - k * per, dst_chip - k * per);
    for (int& id : nodes) id = id < per ? k * per + id : chip_count() + k * switches + id - per;
  }
  std::vector<int> route;
  route.reserve(nodes.size() - 1);
  for (size_t i = 1; i < nodes.size(); ++i) route.push_back(LinkBetween(nodes[i - 1], nodes[i]));
  return route;
}

StatusOr<System> ParseSystem(std::string_view json_text, std::string_view origin) {
  const std::string prefix = "system description (" + std::string(origin) + "): ";
  StatusOr<Json> parsed = internal::ParseJsonText(json_text, prefix);
  if (!parsed.ok()) return parsed.status();
  const Json& j = *parsed;
  System s;
  try {
    SystemParser(s).Parse(j);
  } catch (const LoadError& e) {
    return InvalidArgumentError(prefix + e.path + ": " + e.message);
  }
  Assemble(s);
  return s;
}

StatusOr<System> SystemOfChip(const Machine& chip) {
  System s;
  s.name = chip.name;
  s.description = chip.description;
  s.generation = chip.generation;
  s.chip = chip;
  s.chips = {1, "", SourceTag::kInferred, "trainium.md 14", "a chip is a one-chip system"};
  s.chips_per_server = s.chips;
  s.published.dense_tflops = chip.published.dense_tflops;
  s.published.hbm_capacity_bytes = chip.hbm.capacity_bytes;
  s.published.hbm_bandwidth_bytes_per_s = chip.hbm.bandwidth_bytes_per_s;
  Assemble(s);
  return s;
}

StatusOr<System> MakeCluster(const System& system, int systems) {
  if (system.systems != 1) {
    return InvalidArgumentError("'" + system.name + "' is already a cluster of " +
                                std::to_string(system.systems) + " systems");
  }
  const int max_systems = kMaxChips / system.chips_per_system();
  if (systems < 1 || systems > max_systems) {
    return InvalidArgumentError("systems must be in [1, " + std::to_string(max_systems) + "] for " +
                                system.name + " (at most " + std::to_string(kMaxChips) +
                                " chips; got " + std::to_string(systems) + ")");
  }
  if (systems == 1) return system;
  if (system.scale_out_link.empty()) {
    return InvalidArgumentError("'" + system.name +
                                "' is a chip description without EFA figures; a cluster is made "
                                "of systems (" +
                                Known(PresetSystemNames()) + ")");
  }
  System c = system;
  c.name = system.name + " x" + std::to_string(systems);
  c.systems = systems;
  for (auto& [dtype, s] : c.published.dense_tflops) s = Scaled(s, systems);
  c.published.hbm_capacity_bytes = Scaled(c.published.hbm_capacity_bytes, systems);
  c.published.hbm_bandwidth_bytes_per_s = Scaled(c.published.hbm_bandwidth_bytes_per_s, systems);
  if (c.published.efa_bandwidth_bytes_per_s) {
    c.published.efa_bandwidth_bytes_per_s = Scaled(*c.published.efa_bandwidth_bytes_per_s, systems);
  }
  if (c.host) {
    c.host->vcpus = Scaled(c.host->vcpus, systems);
    c.host->memory_bytes = Scaled(c.host->memory_bytes, systems);
  }
  Assemble(c);
  return c;
}

std::vector<std::string> PresetSystemNames() {
  std::vector<std::string> names;
  for (const auto& p : internal::SystemPresets()) names.emplace_back(p.name);
  return names;
}

StatusOr<std::string> PresetSystemJson(std::string_view name) {
  for (const auto& p : internal::SystemPresets()) {
    if (p.name == name) return std::string(p.json);
  }
  return InvalidArgumentError("unknown system preset '" + std::string(name) +
                              "' (known: " + Known(PresetSystemNames()) + ")");
}

StatusOr<System> LoadSystem(const std::string& name_or_path) {
  if (StatusOr<std::string> json = PresetSystemJson(name_or_path); json.ok()) {
    return ParseSystem(*json, "preset " + name_or_path);
  }
  if (PresetMachineJson(name_or_path).ok()) {
    StatusOr<Machine> chip = LoadPresetMachine(name_or_path);
    if (!chip.ok()) return chip.status();
    return SystemOfChip(*chip);
  }
  if (name_or_path.find('/') == std::string::npos &&
      name_or_path.find(".json") == std::string::npos) {
    return InvalidArgumentError("unknown system '" + name_or_path +
                                "' (systems: " + Known(PresetSystemNames()) +
                                "; chips: " + Known(PresetMachineNames()) + "; or a JSON file)");
  }
  std::ifstream in(name_or_path, std::ios::binary);
  if (!in) return InvalidArgumentError("cannot open system description '" + name_or_path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  // A document with a "system" section is a system; anything else (a chip, or
  // text that does not parse, which ParseMachine reports) is read as a chip.
  const Json j = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("system")) return ParseSystem(text.str(), name_or_path);
  StatusOr<Machine> chip = ParseMachine(text.str(), name_or_path);
  if (!chip.ok()) return chip.status();
  return SystemOfChip(*chip);
}

}  // namespace trnmx::emu
