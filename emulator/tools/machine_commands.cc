// trnmx-emu machines / peak (--system: system_commands.cc).
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "trnmx/emu/machine.h"

namespace trnmx::emu::cli {

void AddMachinesCommand(CLI::App& app, int& exit_code) {
  CLI::App* cmd = app.add_subcommand("machines", "List the machine presets shipped with trnmx-emu");
  cmd->callback([&exit_code]() {
    std::printf("%-6s %-11s %-14s %5s %9s %10s %9s  %s\n", "name", "generation", "core", "cores",
                "HBM GiB", "HBM TB/s", "SBUF MiB", "description");
    for (const std::string& name : PresetMachineNames()) {
      StatusOr<Machine> m = LoadPresetMachine(name);
      if (!m.ok()) {
        std::cerr << m.status().ToString() << "\n";
        exit_code = 1;
        return;
      }
      std::printf("%-6s %-11s %-14s %5d %9.0f %10.2f %9.0f  %s\n", name.c_str(),
                  m->generation.c_str(), m->core_name.c_str(), m->core_count(),
                  m->hbm.capacity_bytes.value / (1024.0 * 1024 * 1024),
                  m->hbm.bandwidth_bytes_per_s.value / 1e12,
                  m->published.sbuf_bytes.value / (1024.0 * 1024), m->description.c_str());
    }
  });
}

void AddPeakCommand(CLI::App& app, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "peak", "Modelled TensorE peaks per core and chip beside AWS's published chip totals");
  struct PeakArgs {
    std::string machine = "trn3";
    std::string system;
    int systems = 1;
  };
  auto args = std::make_shared<PeakArgs>();
  CLI::Option* machine =
      cmd->add_option("--machine", args->machine, "chip preset name or JSON file")
          ->capture_default_str();
  CLI::Option* system =
      cmd->add_option("--system", args->system,
                      "system totals instead: system or chip preset name, or JSON file");
  cmd->add_option("--systems", args->systems, "with --system: N systems joined by EFA")
      ->needs(system)
      ->capture_default_str();
  system->excludes(machine);
  cmd->callback([args, &exit_code]() {
    if (!args->system.empty()) {
      exit_code = RunSystemPeak(args->system, args->systems);
      return;
    }
    StatusOr<Machine> m = LoadMachine(args->machine);
    if (!m.ok()) {
      std::cerr << m.status().ToString() << "\n";
      exit_code = 1;
      return;
    }
    const int cores = m->core_count();
    std::printf("%s (%s x %d): TensorE %gx%g PEs x 2 FLOP x %.2f GHz x MACs/PE/cycle\n",
                m->name.c_str(), m->core_name.c_str(), cores, m->tensor.pe_rows.value,
                m->tensor.pe_cols.value, m->tensor.clock_hz.value / 1e9);
    std::printf("%-6s %9s %11s %11s %15s %10s  %s\n", "dtype", "MAC/PE/c", "core TF/s",
                "chip TF/s", "published TF/s", "pub/model", "source");
    for (MatmulDtype d : kAllMatmulDtypes) {
      const double per_core = CorePeakFlops(*m, d) / 1e12;
      const double chip = per_core * cores;
      auto it = m->published.dense_tflops.find(d);
      const std::string name(MatmulDtypeName(d));
      if (per_core == 0) {
        std::printf("%-6s %9s %11s %11s %15s %10s  %s\n", name.c_str(), "-", "unsupported", "-",
                    "-", "-", "");
        continue;
      }
      if (it == m->published.dense_tflops.end()) {
        std::printf("%-6s %9.3g %11.1f %11.1f %15s %10s  %s\n", name.c_str(),
                    MacsPerPeCycle(*m, d), per_core, chip, "-", "-", "not published");
      } else {
        const Sourced& pub = it->second;
        std::printf("%-6s %9.3g %11.1f %11.1f %15.0f %10.3f  %s %s\n", name.c_str(),
                    MacsPerPeCycle(*m, d), per_core, chip, pub.value, pub.value / chip,
                    std::string(SourceTagName(pub.tag)).c_str(), pub.source.c_str());
      }
    }
    std::printf("HBM %.2f TB/s (%s %s); DMA %d x %d engines x %.1f GB/s = %.2f TB/s (published "
                "%.2f TB/s)\n",
                m->hbm.bandwidth_bytes_per_s.value / 1e12,
                std::string(SourceTagName(m->hbm.bandwidth_bytes_per_s.tag)).c_str(),
                m->hbm.bandwidth_bytes_per_s.source.c_str(), cores,
                static_cast<int>(m->dma.engines.value),
                m->dma.engine_bandwidth_bytes_per_s.value / 1e9,
                cores * m->dma.engines.value * m->dma.engine_bandwidth_bytes_per_s.value / 1e12,
                m->published.dma_bandwidth_bytes_per_s.value / 1e12);
    int inferred = 0, third = 0;
    for (const auto& [path, s] : m->numbers) {
      inferred += s.tag == SourceTag::kInferred;
      third += s.tag == SourceTag::kThirdParty;
    }
    std::printf("description: %zu numbers, %d inferred (I), %d third-party (P3)\n",
                m->numbers.size(), inferred, third);
  });
}

}  // namespace trnmx::emu::cli
