// trnmx-emu systems / peak --system.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "commands.h"
#include "trnmx/emu/system.h"

namespace trnmx::emu::cli {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string Tagged(const Sourced& s) { return std::string(SourceTagName(s.tag)) + " " + s.source; }

// Chips first, each followed by the systems built from it (section 14's order).
StatusOr<std::vector<System>> ListedSystems() {
  std::vector<System> systems;
  for (const std::string& chip : PresetMachineNames()) {
    StatusOr<System> one = LoadSystem(chip);
    if (!one.ok()) return one.status();
    systems.push_back(std::move(one).value());
    for (const std::string& name : PresetSystemNames()) {
      StatusOr<System> s = LoadSystem(name);
      if (!s.ok()) return s.status();
      if (s->chip.name == chip) systems.push_back(std::move(s).value());
    }
  }
  return systems;
}

// "server_switch 256 + rack_switch 320 + cross_rack 128 GB/s" for one chip, in
// the order the links were built (by link id).
std::string ScaleUpBreakdown(const System& s, int chip) {
  std::vector<int> ids = s.out_links[chip];
  std::sort(ids.begin(), ids.end());
  std::map<std::string, double> by_class;
  std::vector<std::string> order;
  for (int id : ids) {
    const SystemLink& l = s.links[id];
    if (l.kind == LinkKind::kEfa) continue;
    if (!by_class.count(l.link_class)) order.push_back(l.link_class);
    by_class[l.link_class] += l.bandwidth_bytes_per_s.value;
  }
  std::string out;
  for (const std::string& c : order) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s%s %.0f", out.empty() ? "" : " + ", c.c_str(),
                  by_class[c] / 1e9);
    out += buf;
  }
  return out + " GB/s";
}

}  // namespace

void AddSystemsCommand(CLI::App& app, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "systems", "List the system presets (and the chip presets, one-chip systems)");
  cmd->callback([&exit_code]() {
    std::printf("%-22s %5s %7s %-56s %13s  %s\n", "name", "chips", "servers", "fabric",
                "scale-up GB/s", "description");
    StatusOr<std::vector<System>> systems = ListedSystems();
    if (!systems.ok()) {
      std::cerr << systems.status().ToString() << "\n";
      exit_code = 1;
      return;
    }
    for (const System& s : *systems) {
      const std::string scale_up =
          s.chip_count() > 1 ? std::to_string(std::lround(ScaleUpBytesPerSecond(s, 0) / 1e9)) : "-";
      std::printf("%-22s %5d %7d %-56s %13s  %s\n", s.name.c_str(), s.chip_count(), s.servers(),
                  DescribeTopology(s).c_str(), scale_up.c_str(), s.description.c_str());
    }
    std::printf(
        "scale-up: per chip and direction over NeuronLink / NeuronSwitch links (not EFA)\n");
  });
}

int RunSystemPeak(const std::string& name, int systems) {
  StatusOr<System> loaded = LoadSystem(name);
  if (!loaded.ok()) {
    std::cerr << loaded.status().ToString() << "\n";
    return 1;
  }
  StatusOr<System> cluster = MakeCluster(*loaded, systems);
  if (!cluster.ok()) {
    std::cerr << cluster.status().ToString() << "\n";
    return 1;
  }
  const System& s = *cluster;
  const Machine& chip = s.chip;
  const int chips = s.chip_count();
  std::printf("%s: %d x %s (%s x %d), %d server(s) of %d chip(s); %s\n", s.name.c_str(), chips,
              chip.name.c_str(), chip.core_name.c_str(), chip.core_count(), s.servers(),
              static_cast<int>(s.chips_per_server.value), DescribeTopology(s).c_str());
  std::printf("%-6s %11s %13s %16s %10s  %s\n", "dtype", "chip TF/s", "system PF/s",
              "published PF/s", "pub/model", "source");
  for (MatmulDtype d : kAllMatmulDtypes) {
    const std::string dtype(MatmulDtypeName(d));
    const double system_pf = SystemPeakFlops(s, d) / 1e15;
    if (system_pf == 0) {
      std::printf("%-6s %11s %13s %16s %10s\n", dtype.c_str(), "unsupported", "-", "-", "-");
      continue;
    }
    const double chip_tf = chip.core_count() * CorePeakFlops(chip, d) / 1e12;
    auto it = s.published.dense_tflops.find(d);
    if (it == s.published.dense_tflops.end()) {
      std::printf("%-6s %11.1f %13.2f %16s %10s  %s\n", dtype.c_str(), chip_tf, system_pf, "-", "-",
                  "not published");
    } else {
      const double pub_pf = it->second.value / 1e3;
      std::printf("%-6s %11.1f %13.2f %16.2f %10.3f  %s\n", dtype.c_str(), chip_tf, system_pf,
                  pub_pf, pub_pf / system_pf, Tagged(it->second).c_str());
    }
  }
  const PublishedSystemSpec& pub = s.published;
  std::printf("HBM capacity   %.0f GiB = %d x %.0f GiB (published %.0f GiB, %s)\n",
              chips * chip.hbm.capacity_bytes.value / kGiB, chips,
              chip.hbm.capacity_bytes.value / kGiB, pub.hbm_capacity_bytes.value / kGiB,
              Tagged(pub.hbm_capacity_bytes).c_str());
  std::printf("HBM bandwidth  %.1f TB/s = %d x %.2f TB/s (published %.1f TB/s, %s)\n",
              chips * chip.hbm.bandwidth_bytes_per_s.value / 1e12, chips,
              chip.hbm.bandwidth_bytes_per_s.value / 1e12,
              pub.hbm_bandwidth_bytes_per_s.value / 1e12,
              Tagged(pub.hbm_bandwidth_bytes_per_s).c_str());
  if (chips > 1) {
    std::printf(
        "scale-up       %.0f GB/s per chip per direction (%s); bisection %.0f GB/s per "
        "direction (chips 0-%d to the rest)\n",
        ScaleUpBytesPerSecond(s, 0) / 1e9, ScaleUpBreakdown(s, 0).c_str(),
        BisectionBytesPerSecond(s) / 1e9, chips / 2 - 1);
  } else {
    std::printf("scale-up       none (one chip)\n");
  }
  if (!s.scale_out_link.empty() && pub.efa_bandwidth_bytes_per_s) {
    const LinkClass& efa = s.link_classes.at(s.scale_out_link);
    const Sourced& total = *pub.efa_bandwidth_bytes_per_s;
    std::printf(
        "EFA            %.0f Gbps per chip, %.1f Tbps in all (published %.1f Tbps, %s); "
        "step %.1f us\n",
        efa.per_direction_bytes_per_s() * 8 / 1e9,
        chips * efa.per_direction_bytes_per_s() * 8 / 1e12, total.value * 8 / 1e12,
        Tagged(total).c_str(), efa.latency_ns.value / 1e3);
  }
  if (s.collectives) {
    const CollectiveThresholds& c = *s.collectives;
    // collective.h's auto rule: above the mesh threshold an all-reduce over
    // two or more whole servers is hierarchical.
    std::printf(
        "collectives    mesh up to %g MiB, RDH up to %g MiB, ring above%s (%s; %s)\n",
        c.mesh_max_bytes.value / (1024 * 1024), c.rdh_max_bytes.value / (1024 * 1024),
        s.servers() > 1 ? "; all-reduce over 2+ whole servers: hierarchical above mesh" : "",
        Tagged(c.mesh_max_bytes).c_str(), Tagged(c.rdh_max_bytes).c_str());
  }
  if (s.host) {
    std::printf("host           %s%s%.0f vCPU, %.0f GiB\n", s.host->cpu.c_str(),
                s.host->cpu.empty() ? "" : ", ", s.host->vcpus.value,
                s.host->memory_bytes.value / kGiB);
  }
  int inferred = 0, third = 0;
  for (const auto& [path, n] : s.numbers) {
    inferred += n.tag == SourceTag::kInferred;
    third += n.tag == SourceTag::kThirdParty;
  }
  std::printf(
      "description: %zu system numbers, %d inferred (I), %d third-party (P3); chip %s: "
      "%zu numbers\n",
      s.numbers.size(), inferred, third, chip.name.c_str(), chip.numbers.size());
  return 0;
}

}  // namespace trnmx::emu::cli
