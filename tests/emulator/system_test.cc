// System descriptions: the presets load, their totals agree with AWS's
// (trainium.md sections 1.3 and 14), routes and link counts follow the
// topologies (torus dimension order with wrap, Trn3 switch levels and twin
// links, EFA between systems), and malformed descriptions are rejected with
// the JSON pointer of the problem.
#include "trnmx/emu/system.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace trnmx::emu {
namespace {

using Json = nlohmann::json;

System Load(const std::string& name) {
  StatusOr<System> s = LoadSystem(name);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : System{};
}

Json SystemJson(const std::string& name) {
  StatusOr<std::string> text = PresetSystemJson(name);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return Json::parse(*text);
}

void ExpectRejected(const Json& j, const std::string& path, const std::string& what) {
  StatusOr<System> s = ParseSystem(j.dump(), "test");
  ASSERT_FALSE(s.ok()) << "accepted a description that should fail at " << path;
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find(path + ":"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find(what), std::string::npos) << s.status().message();
}

// Node names along a route, "chip0 chip1 chip2".
std::string Path(const System& s, int src, int dst) {
  std::string out = s.node_names[src];
  int at = src;
  for (int id : s.Route(src, dst)) {
    EXPECT_EQ(s.links[id].from, at) << "route is not connected";
    at = s.links[id].to;
    out += " " + s.node_names[at];
  }
  EXPECT_EQ(at, dst);
  return out;
}

std::vector<LinkKind> Kinds(const System& s, int src, int dst) {
  std::vector<LinkKind> kinds;
  for (int id : s.Route(src, dst)) kinds.push_back(s.links[id].kind);
  return kinds;
}

TEST(SystemPresets, AllLoad) {
  ASSERT_EQ(PresetSystemNames(),
            (std::vector<std::string>{"trn2-server", "trn2-ultraserver", "trn3-ultraserver-gen1",
                                      "trn3-ultraserver-gen2"}));
  const std::vector<int> chips = {16, 64, 64, 144}, servers = {1, 4, 4, 36};
  for (size_t i = 0; i < chips.size(); ++i) {
    const std::string name = PresetSystemNames()[i];
    System s = Load(name);
    EXPECT_EQ(s.name, name);
    EXPECT_EQ(s.chip_count(), chips[i]) << name;
    EXPECT_EQ(s.servers(), servers[i]) << name;
    EXPECT_EQ(s.chip.generation, s.generation);
    EXPECT_GT(s.numbers.size(), 15u);
    for (const auto& [path, n] : s.numbers) {
      EXPECT_FALSE(n.source.empty()) << name << path;
      EXPECT_EQ(path.rfind("/system/", 0), 0u) << path;
    }
    // Every chip reaches every chip.
    for (int dst = 0; dst < s.chip_count(); ++dst) {
      for (int id : s.Route(0, dst)) EXPECT_GE(id, 0) << name << " 0 -> " << dst;
    }
  }
}

TEST(SystemPresets, ChipIsAOneChipSystem) {
  for (const std::string& name : PresetMachineNames()) {
    System s = Load(name);
    EXPECT_EQ(s.chip_count(), 1);
    EXPECT_EQ(s.topology.kind, TopologyKind::kSingleChip);
    EXPECT_TRUE(s.links.empty());
    EXPECT_TRUE(s.Route(0, 0).empty());
    EXPECT_EQ(BisectionBytesPerSecond(s), 0);
    EXPECT_EQ(SystemPeakFlops(s, MatmulDtype::kBf16),
              8 * CorePeakFlops(s.chip, MatmulDtype::kBf16));
  }
  StatusOr<System> cluster = MakeCluster(Load("trn3"), 2);
  ASSERT_FALSE(cluster.ok());
  EXPECT_NE(cluster.status().message().find("without EFA"), std::string::npos);
}

TEST(SystemPresets, UnknownNameListsSystemsAndChips) {
  StatusOr<System> s = LoadSystem("trn9-server");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("trn3-ultraserver-gen2"), std::string::npos);
  EXPECT_NE(s.status().message().find("chips: trn2, trn3"), std::string::npos);
}

// trainium.md section 14: system totals are chips x chip, up to AWS's rounding.
TEST(SystemTotals, Trn2AgainstPublished) {
  const System server = Load("trn2-server"), us = Load("trn2-ultraserver");
  const Sourced& bf16 = us.published.dense_tflops.at(MatmulDtype::kBf16);
  EXPECT_EQ(bf16.value, 42800);
  EXPECT_EQ(bf16.tag, SourceTag::kPublished);
  // 64 x 667 = 42,688 vs 42.8 PF.
  EXPECT_NEAR(bf16.value / (64 * us.chip.published.dense_tflops.at(MatmulDtype::kBf16).value),
              1.0026, 1e-4);
  EXPECT_EQ(us.published.dense_tflops.at(MatmulDtype::kFp8).value, 83200);
  EXPECT_EQ(server.published.dense_tflops.at(MatmulDtype::kFp8).value, 20800);
  // Modelled TensorE peak: 64 x 8 x 157.3 TF FP8 = 80.5 PF; AWS's 83.2 is 1.03x.
  EXPECT_NEAR(SystemPeakFlops(us, MatmulDtype::kFp8) / 1e15, 80.53, 0.01);
  EXPECT_NEAR(83.2e15 / SystemPeakFlops(us, MatmulDtype::kFp8), 1.0331, 1e-3);
  EXPECT_EQ(us.published.hbm_capacity_bytes.value, 6144.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(us.published.hbm_bandwidth_bytes_per_s.value, 185.6e12);
  EXPECT_EQ(server.host->vcpus.value, 192);
}

TEST(SystemTotals, Trn3Gen2AgainstPublishedAndTrn2) {
  const System gen2 = Load("trn3-ultraserver-gen2"), us = Load("trn2-ultraserver");
  EXPECT_EQ(gen2.chip_count(), 144);
  // 144 x 8 x 314.6 TF = 362.39 PF modelled vs 362,448 TF published.
  EXPECT_NEAR(SystemPeakFlops(gen2, MatmulDtype::kMxfp8) / 1e15, 362.39, 0.01);
  EXPECT_EQ(gen2.published.dense_tflops.at(MatmulDtype::kMxfp8).value, 362448);
  EXPECT_EQ(gen2.published.hbm_capacity_bytes.value, 20736.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(gen2.published.hbm_bandwidth_bytes_per_s.value, 705.6e12);
  // AWS's "4.4x compute, ~3.9-4x memory bandwidth" over the Trn2 UltraServer.
  const double compute = gen2.published.dense_tflops.at(MatmulDtype::kMxfp8).value /
                         us.published.dense_tflops.at(MatmulDtype::kFp8).value;
  EXPECT_NEAR(compute, 4.356, 1e-3);
  const double hbm =
      gen2.published.hbm_bandwidth_bytes_per_s.value / us.published.hbm_bandwidth_bytes_per_s.value;
  EXPECT_NEAR(hbm, 3.802, 1e-3);
  EXPECT_EQ(gen2.host->vcpus.value, 2304);
  EXPECT_EQ(gen2.host->cpu, "Graviton");
  EXPECT_EQ(gen2.published.efa_bandwidth_bytes_per_s->value * 8, 28.8e12);
}

// Algorithm thresholds: S17 on the Trn2 torus, conflict #19 on Trn3 switches.
TEST(SystemPresets, CollectiveThresholds) {
  for (const std::string& name : PresetSystemNames()) {
    const System s = Load(name);
    ASSERT_TRUE(s.collectives.has_value()) << name;
    EXPECT_EQ(s.collectives->mesh_max_bytes.value, 1 << 20) << name;
    EXPECT_EQ(s.collectives->rdh_max_bytes.value, 56 << 20) << name;
    EXPECT_EQ(s.collectives->mesh_max_bytes.source, s.generation == "trainium2" ? "S17" : "#19");
  }
  EXPECT_FALSE(Load("trn2").collectives.has_value());
}

// --- Trn2 torus ------------------------------------------------------------

TEST(SystemTorus, Trn2ServerLinks) {
  const System s = Load("trn2-server");
  ASSERT_EQ(s.node_count(), 16);  // no switches
  EXPECT_EQ(s.links.size(), 64u);
  for (int c = 0; c < 16; ++c) {
    ASSERT_EQ(s.out_links[c].size(), 4u);
    for (int id : s.out_links[c]) {
      EXPECT_EQ(s.links[id].kind, LinkKind::kNeuronLink);
      // 256 GB/s per link read as a bidirectional sum (#2): 128 GB/s each way.
      EXPECT_EQ(s.links[id].bandwidth_bytes_per_s.value, 128e9);
      EXPECT_EQ(s.links[id].bandwidth_bytes_per_s.tag, SourceTag::kInferred);
      EXPECT_EQ(s.links[id].latency_ns.value, 1500);
    }
  }
  EXPECT_EQ(ScaleUpBytesPerSecond(s, 5), 512e9);
  // Halving the 4x4 torus cuts 8 links (trainium.md 10.1): 1.024 TB/s per direction.
  EXPECT_EQ(BisectionBytesPerSecond(s), 8 * 128e9);
}

TEST(SystemTorus, DimensionOrderShortestWayTiesPlus) {
  const System s = Load("trn2-server");  // chip = x + 4 y
  EXPECT_EQ(Path(s, 0, 1), "chip0 chip1");
  EXPECT_EQ(Path(s, 0, 3), "chip0 chip3");                      // wrap: -x
  EXPECT_EQ(Path(s, 0, 2), "chip0 chip1 chip2");                // tie: +x
  EXPECT_EQ(Path(s, 0, 10), "chip0 chip1 chip2 chip6 chip10");  // x first, then y
  EXPECT_EQ(Path(s, 5, 0), "chip5 chip4 chip0");
  EXPECT_EQ(Path(s, 15, 0), "chip15 chip12 chip0");  // both wraps
  EXPECT_EQ(s.links[s.Route(0, 3)[0]].name, "chip0->chip3 (torus -x)");
  EXPECT_EQ(s.links[s.Route(0, 12)[0]].name, "chip0->chip12 (torus -y)");
  EXPECT_TRUE(s.Route(7, 7).empty());
  EXPECT_TRUE(s.Route(0, 16).empty());  // not a chip
  // A ring of 4 averages 1 hop (0, 1, 2, 1): 2 per 4x4 pair, 16 x 2 from chip 0.
  size_t hops = 0, longest = 0;
  for (int d = 0; d < 16; ++d) {
    hops += s.Route(0, d).size();
    longest = std::max(longest, s.Route(0, d).size());
  }
  EXPECT_EQ(hops, 32u);
  EXPECT_EQ(longest, 4u);
}

TEST(SystemTorus, Trn2UltraServerZRing) {
  const System s = Load("trn2-ultraserver");  // chip = x + 4 y + 16 z, z = server
  EXPECT_EQ(s.links.size(), 64u * 6);
  for (int c = 0; c < 64; ++c) {
    EXPECT_EQ(s.out_links[c].size(), 6u);
    EXPECT_EQ(s.server_of(c), c / 16);
  }
  EXPECT_EQ(ScaleUpBytesPerSecond(s, 0), 4 * 128e9 + 2 * 64e9);
  EXPECT_EQ(Path(s, 0, 32), "chip0 chip16 chip32");  // tie on the Z ring: +z
  EXPECT_EQ(Path(s, 0, 48), "chip0 chip48");         // wrap: -z
  for (int id : s.Route(0, 32)) {
    EXPECT_EQ(s.links[id].bandwidth_bytes_per_s.value, 64e9);  // 128 GB/s Z link, #2
    EXPECT_EQ(s.links[id].link_class, "neuronlink_z");
  }
  EXPECT_EQ(Path(s, 1, 63), "chip1 chip2 chip3 chip15 chip63");  // x (tie: +), y, z
  size_t hops = 0;
  for (int d = 0; d < 64; ++d) hops += s.Route(0, d).size();
  EXPECT_EQ(hops, 64u * 3);
  // Across Z the cut is 32 Z links (trainium.md 10.1): 2.048 TB/s per direction.
  EXPECT_EQ(BisectionBytesPerSecond(s), 32 * 64e9);
}

// The direction convention is a parameter of each link class (#2, #3).
TEST(SystemTorus, DirectionConventionIsAParameter) {
  Json j = SystemJson("trn2-server");
  j["system"]["links"]["neuronlink"]["direction"] = "per_direction";
  const System per = ParseSystem(j.dump(), "test").value();
  EXPECT_EQ(per.links[0].bandwidth_bytes_per_s.value, 256e9);
  EXPECT_EQ(BisectionBytesPerSecond(per), 8 * 256e9);

  j = SystemJson("trn3-ultraserver-gen2");
  j["system"]["links"]["server_switch"]["direction"] = "bidirectional_sum";
  const System sum = ParseSystem(j.dump(), "test").value();
  const Sourced& bw = sum.links[sum.Route(0, 1)[0]].bandwidth_bytes_per_s;
  EXPECT_EQ(bw.value, 128e9);
  EXPECT_EQ(bw.tag, SourceTag::kInferred);
  EXPECT_EQ(bw.source, "S5 #3 #2");
  EXPECT_EQ(ScaleUpBytesPerSecond(sum, 0), 128e9 + 320e9 + 128e9);
}

// --- Trn3 switched fabrics --------------------------------------------------

TEST(SystemSwitched, Gen2Links) {
  const System s = Load("trn3-ultraserver-gen2");
  ASSERT_EQ(s.node_count(), 144 + 36 + 2);
  EXPECT_EQ(s.node_names[144], "l1switch0");
  EXPECT_EQ(s.node_names[180], "l2switch0");
  EXPECT_EQ(s.links.size(), 144u * 5);
  for (int c = 0; c < 144; ++c) ASSERT_EQ(s.out_links[c].size(), 3u);
  for (int sw = 144; sw < 180; ++sw) EXPECT_EQ(s.out_links[sw].size(), 4u);
  EXPECT_EQ(s.out_links[180].size(), 72u);
  // 256 in-server + 320 in-rack + 128 cross-rack = 704 GB/s (11 x Gen6 x8, #3).
  EXPECT_EQ(ScaleUpBytesPerSecond(s, 77), 704e9);
  // The racks meet only on the 72 twin links.
  EXPECT_EQ(BisectionBytesPerSecond(s), 72 * 128e9);
}

TEST(SystemSwitched, Gen2Routes) {
  const System s = Load("trn3-ultraserver-gen2");  // server = chip / 4, rack = server / 18
  // Same server: the server's first-level switch.
  EXPECT_EQ(Path(s, 0, 3), "chip0 l1switch0 chip3");
  EXPECT_EQ(Kinds(s, 0, 3), (std::vector<LinkKind>{LinkKind::kSwitchPort, LinkKind::kSwitchPort}));
  EXPECT_EQ(s.links[s.Route(0, 3)[0]].bandwidth_bytes_per_s.value, 256e9);
  EXPECT_EQ(s.links[s.Route(0, 3)[0]].name, "chip0->l1switch0");
  EXPECT_EQ(s.links[s.Route(0, 3)[0]].latency_ns.value, 750);  // half of the 1.5 us step
  // Same rack, another server: the rack's second level.
  EXPECT_EQ(Path(s, 0, 71), "chip0 l2switch0 chip71");
  EXPECT_EQ(s.links[s.Route(0, 71)[1]].bandwidth_bytes_per_s.value, 320e9);
  // Other rack: the direct link to the same position of server k + 18 first.
  EXPECT_EQ(Path(s, 5, 77), "chip5 chip77");  // server 1 -> server 19, position 1
  EXPECT_EQ(s.links[s.Route(5, 77)[0]].name, "chip5->chip77 (twin)");
  EXPECT_EQ(Path(s, 0, 75), "chip0 chip72 l1switch18 chip75");
  EXPECT_EQ(Path(s, 0, 143), "chip0 chip72 l2switch1 chip143");
  EXPECT_EQ(Kinds(s, 0, 143), (std::vector<LinkKind>{LinkKind::kDirect, LinkKind::kSwitchPort,
                                                     LinkKind::kSwitchPort}));
  EXPECT_EQ(s.links[s.Route(0, 143)[0]].bandwidth_bytes_per_s.value, 128e9);
  EXPECT_EQ(Path(s, 143, 1), "chip143 chip71 l2switch0 chip1");
}

TEST(SystemSwitched, Gen1Routes) {
  const System s = Load("trn3-ultraserver-gen1");  // servers 0-1: domain 0, 2-3: domain 1
  ASSERT_EQ(s.node_count(), 64 + 2);
  EXPECT_EQ(s.links.size(), 64u * 3);
  for (int c = 0; c < 64; ++c) ASSERT_EQ(s.out_links[c].size(), 2u);
  EXPECT_EQ(s.out_links[64].size(), 32u);
  EXPECT_EQ(Path(s, 0, 1), "chip0 switch0 chip1");    // same server, no server switch
  EXPECT_EQ(Path(s, 0, 17), "chip0 switch0 chip17");  // server 1, same domain
  EXPECT_EQ(Path(s, 0, 32), "chip0 chip32");          // chip 0 of server 2: the twin
  EXPECT_EQ(Path(s, 17, 49), "chip17 chip49");
  EXPECT_EQ(Path(s, 0, 50), "chip0 chip32 switch1 chip50");
  EXPECT_EQ(ScaleUpBytesPerSecond(s, 0), 256e9 + 128e9);
  EXPECT_EQ(BisectionBytesPerSecond(s), 32 * 128e9);
}

// --- Clusters -------------------------------------------------------------

TEST(SystemCluster, RoutesBetweenSystemsUseEfa) {
  const System one = Load("trn2-server");
  StatusOr<System> made = MakeCluster(one, 3);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  const System& c = *made;
  EXPECT_EQ(c.chip_count(), 48);
  EXPECT_EQ(c.node_names.back(), "efa");
  EXPECT_EQ(c.links.size(), 3u * 64 + 2 * 48);
  EXPECT_EQ(Path(c, 0, 16), "chip0 efa chip16");
  EXPECT_EQ(Kinds(c, 3, 40), (std::vector<LinkKind>{LinkKind::kEfa, LinkKind::kEfa}));
  const SystemLink& up = c.links[c.Route(3, 40)[0]];
  EXPECT_EQ(up.bandwidth_bytes_per_s.value, 25e9);  // 200 Gbps per chip
  EXPECT_EQ(up.latency_ns.value, 7500);             // half of the ~15 us EFA step
  // Inside a system the routes are the system's, shifted.
  EXPECT_EQ(Path(c, 16, 26), "chip16 chip17 chip18 chip22 chip26");
  EXPECT_EQ(ScaleUpBytesPerSecond(c, 20), 512e9);  // EFA is not scale-up
  EXPECT_EQ(c.published.dense_tflops.at(MatmulDtype::kFp8).value, 3 * 20800);
  EXPECT_EQ(c.host->vcpus.value, 3 * 192);
  EXPECT_EQ(SystemPeakFlops(c, MatmulDtype::kBf16), 3 * SystemPeakFlops(one, MatmulDtype::kBf16));
  // Halves of a 2-system cluster meet only over EFA: 16 chips x 25 GB/s.
  EXPECT_EQ(BisectionBytesPerSecond(MakeCluster(one, 2).value()), 16 * 25e9);

  const System gen2 = MakeCluster(Load("trn3-ultraserver-gen2"), 2).value();
  EXPECT_EQ(gen2.node_names[288 + 36], "sys0.l2switch0");
  EXPECT_EQ(Path(gen2, 144, 147), "chip144 sys1.l1switch0 chip147");
  EXPECT_EQ(Path(gen2, 0, 287), "chip0 efa chip287");
}

TEST(SystemCluster, RejectsBadCounts) {
  const System s = Load("trn3-ultraserver-gen2");
  EXPECT_FALSE(MakeCluster(s, 0).ok());
  StatusOr<System> huge = MakeCluster(s, 1000);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("[1, 455]"), std::string::npos) << huge.status().message();
  EXPECT_FALSE(MakeCluster(MakeCluster(s, 2).value(), 2).ok());
  EXPECT_EQ(MakeCluster(s, 1).value().links.size(), s.links.size());
}

// --- Malformed descriptions --------------------------------------------------

TEST(SystemLoader, RejectsUnknownChip) {
  Json j = SystemJson("trn2-server");
  j["system"]["chip"] = "trn9";
  ExpectRejected(j, "/system/chip", "unknown machine preset 'trn9'");
}

TEST(SystemLoader, RejectsGenerationOfAnotherChip) {
  Json j = SystemJson("trn2-server");
  j["system"]["chip"] = "trn3";
  ExpectRejected(j, "/generation", "trainium3");
}

TEST(SystemLoader, RejectsZeroChips) {
  Json j = SystemJson("trn3-ultraserver-gen2");
  j["system"]["chips"]["value"] = 0;
  ExpectRejected(j, "/system/chips/value", "must be an integer in [1, 65536]");
}

TEST(SystemLoader, RejectsChipsPerServerNotDividing) {
  Json j = SystemJson("trn3-ultraserver-gen2");
  j["system"]["chips_per_server"]["value"] = 5;
  ExpectRejected(j, "/system/chips_per_server/value", "must divide /system/chips (144)");
}

TEST(SystemLoader, RejectsTorusDimsNotMultiplyingToChips) {
  Json j = SystemJson("trn2-server");
  j["system"]["topology"]["dims"][1]["size"]["value"] = 3;
  ExpectRejected(j, "/system/topology/dims", "sizes multiply to 12, but /system/chips is 16");
}

TEST(SystemLoader, RejectsNegativeBandwidth) {
  Json j = SystemJson("trn2-ultraserver");
  j["system"]["links"]["neuronlink_z"]["bandwidth_bytes_per_s"]["value"] = -128e9;
  ExpectRejected(j, "/system/links/neuronlink_z/bandwidth_bytes_per_s/value", "must be > 0");
}

TEST(SystemLoader, RejectsMissingSource) {
  Json j = SystemJson("trn3-ultraserver-gen1");
  j["system"]["links"]["twin"]["latency_ns"].erase("source");
  ExpectRejected(j, "/system/links/twin/latency_ns/source", "missing");
}

TEST(SystemLoader, RejectsBadDirectionConvention) {
  Json j = SystemJson("trn2-server");
  j["system"]["links"]["neuronlink"]["direction"] = "both";
  ExpectRejected(j, "/system/links/neuronlink/direction", "bidirectional_sum");
}

TEST(SystemLoader, RejectsUnknownAndMiskindedLinkClasses) {
  Json j = SystemJson("trn3-ultraserver-gen2");
  j["system"]["topology"]["twin_link"] = "cross-rack";
  ExpectRejected(j, "/system/topology/twin_link", "unknown link class \"cross-rack\"");
  j = SystemJson("trn3-ultraserver-gen2");
  j["system"]["topology"]["twin_link"] = "rack_switch";
  ExpectRejected(j, "/system/topology/twin_link", "needs \"direct\"");
  j = SystemJson("trn2-server");
  j["system"]["scale_out_link"] = "neuronlink";
  ExpectRejected(j, "/system/scale_out_link", "needs \"efa\"");
}

TEST(SystemLoader, RejectsUnusedLinkClass) {
  Json j = SystemJson("trn2-server");
  j["system"]["links"]["spare"] = j["system"]["links"]["neuronlink"];
  ExpectRejected(j, "/system/links/spare", "defined but used neither");
}

TEST(SystemLoader, RejectsSwitchedDomainsThatDoNotPair) {
  Json j = SystemJson("trn3-ultraserver-gen2");
  j["system"]["topology"]["servers_per_domain"]["value"] = 12;  // 3 domains
  ExpectRejected(j, "/system/topology/servers_per_domain/value", "twin links join at most two");
  j["system"]["topology"]["servers_per_domain"]["value"] = 7;
  ExpectRejected(j, "/system/topology/servers_per_domain/value", "must divide the 36 servers");
  j = SystemJson("trn3-ultraserver-gen2");
  j["system"]["topology"].erase("twin_link");
  j["system"]["links"].erase("cross_rack");
  ExpectRejected(j, "/system/topology/twin_link", "missing: two domains");
}

TEST(SystemLoader, RejectsRdhThresholdBelowMesh) {
  Json j = SystemJson("trn3-ultraserver-gen1");
  j["system"]["collectives"]["rdh_max_bytes"]["value"] = 4096;
  ExpectRejected(j, "/system/collectives/rdh_max_bytes/value", "must be >= mesh_max_bytes");
}

TEST(SystemLoader, RejectsPublishedTotalsOffTheChips) {
  Json j = SystemJson("trn2-ultraserver");
  j["system"]["published"]["dense_tflops"]["bf16"]["value"] = 48000;
  ExpectRejected(j, "/system/published/dense_tflops/bf16/value", "expected within 1 %");
  j = SystemJson("trn2-server");
  j["system"]["published"]["dense_tflops"]["mxfp8"] = {{"value", 1}, {"tag", "P"}, {"source", "x"}};
  ExpectRejected(j, "/system/published/dense_tflops/mxfp8", "publishes no mxfp8");
  j = SystemJson("trn3-ultraserver-gen1");
  j["system"]["published"]["hbm_capacity_bytes"]["value"] = 9216e9;
  ExpectRejected(j, "/system/published/hbm_capacity_bytes/value", "chips x the chip's HBM");
  j = SystemJson("trn3-ultraserver-gen1");
  j["system"]["links"]["efa"]["bandwidth_bytes_per_s"]["value"] = 50e9;
  ExpectRejected(j, "/system/published/efa_bandwidth_bytes_per_s/value", "per-chip EFA");
}

TEST(SystemLoader, RejectsSchemaAndShape) {
  Json j = SystemJson("trn2-server");
  j["schema"] = "trnmx-machine/1";
  ExpectRejected(j, "/schema", "trnmx-machine/2");
  j = SystemJson("trn2-server");
  j["system"]["topology"]["kind"] = "ring";
  ExpectRejected(j, "/system/topology/kind", "\"torus\" or \"switched\"");
  j = SystemJson("trn2-server");
  j["system"]["chips_per_rack"] = j["system"]["chips"];
  ExpectRejected(j, "/system/chips_per_rack", "unknown key");
  j = SystemJson("trn2-server");
  j["system"]["topology"]["dims"] = Json::array();
  ExpectRejected(j, "/system/topology/dims", "non-empty array");
}

TEST(SystemLoader, ChipLoaderPointsSystemsToLoadSystem) {
  StatusOr<Machine> m = ParseMachine(PresetSystemJson("trn2-server").value(), "test");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("/system: this is a system description"), std::string::npos)
      << m.status().message();
}

TEST(SystemLoader, FilesOfSystemsAndChips) {
  const std::string dir = ::testing::TempDir();
  {
    std::ofstream(dir + "/trnmx_system_test.json") << PresetSystemJson("trn2-ultraserver").value();
    std::ofstream(dir + "/trnmx_system_test_chip.json") << PresetMachineJson("trn3").value();
  }
  StatusOr<System> s = LoadSystem(dir + "/trnmx_system_test.json");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->chip_count(), 64);
  StatusOr<System> chip = LoadSystem(dir + "/trnmx_system_test_chip.json");
  ASSERT_TRUE(chip.ok()) << chip.status().ToString();
  EXPECT_EQ(chip->chip_count(), 1);
  EXPECT_EQ(chip->chip.name, "trn3");
  StatusOr<System> missing = LoadSystem("/nonexistent/system.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/system.json"), std::string::npos);
}

}  // namespace
}  // namespace trnmx::emu
