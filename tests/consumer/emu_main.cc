// Consumer test of the installed emulator (trnmx::emu, component `emu`): the
// machine description installed under trnmx_MACHINES_DIR parses to the same
// machine as the preset embedded in the library, and a small MXFP8 GEMM
// lowered onto one Trainium3 core simulates and, replayed functionally,
// equals trnmx::Gemm bit for bit.
//
//   consumer_emu   (TRNMX_MACHINE_FILE is compiled in: trnmx_MACHINES_DIR/trn3.json)
#include <cstdio>
#include <string>
#include <vector>

#include "trnmx/emu/functional.h"
#include "trnmx/emu/gemm.h"
#include "trnmx/emu/machine.h"
#include "trnmx/emu/report.h"
#include "trnmx/emu/simulator.h"

namespace {

int g_failures = 0;

void Check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "consumer_emu: FAILED: %s\n", what.c_str());
    ++g_failures;
  }
}

}  // namespace

int main() {
  using namespace trnmx;
  using namespace trnmx::emu;

  const StatusOr<Machine> file = LoadMachineFile(TRNMX_MACHINE_FILE);
  const StatusOr<Machine> preset = LoadPresetMachine("trn3");
  Check(file.ok(), std::string("LoadMachineFile(" TRNMX_MACHINE_FILE "): ") +
                       (file.ok() ? "ok" : file.status().ToString()));
  Check(preset.ok(), "LoadPresetMachine(\"trn3\") is ok");
  if (!file.ok() || !preset.ok()) return 1;
  Check(
      file->name == preset->name && file->core_count() == preset->core_count() &&
          file->numbers.size() == preset->numbers.size() &&
          CorePeakFlops(*file, MatmulDtype::kMxfp8) == CorePeakFlops(*preset, MatmulDtype::kMxfp8),
      "the installed trn3.json describes the embedded trn3 preset");

  GemmConfig config;
  config.m = 256;
  config.n = 384;
  config.k = 512;
  config.dtype = MatmulDtype::kMxfp8;
  config.cores = 1;
  StatusOr<LoweredGemm> gemm = LowerGemm(*file, config);
  Check(gemm.ok(), "LowerGemm(256 x 384 x 512 MXFP8) is ok");
  if (!gemm.ok()) return 1;
  SimOptions options;
  options.record_trace = true;  // ExecuteGemm replays the tiles in simulated order.
  StatusOr<SimResult> sim = Simulate(gemm->program, options);
  Check(sim.ok(), "Simulate is ok");
  if (!sim.ok()) return 1;
  const Report report = MakeReport(gemm->program, *sim, gemm->plan.flops, config.dtype);
  Check(sim->end_ps > 0 && report.fraction_of_peak > 0 && report.fraction_of_peak <= 1,
        "the report has a run time and a fraction of peak in (0, 1]");

  StatusOr<GemmData> data = MakeGemmData(*file, config, 7);
  Check(data.ok(), "MakeGemmData is ok");
  if (!data.ok()) return 1;
  StatusOr<std::vector<Bf16>> got = ExecuteGemm(*gemm, *sim, data->a, data->b);
  StatusOr<std::vector<Bf16>> want = ReferenceGemm(config, data->a, data->b);
  Check(got.ok() && want.ok(), "ExecuteGemm and ReferenceGemm are ok");
  if (got.ok() && want.ok()) {
    bool same = got->size() == want->size();
    for (std::size_t i = 0; same && i < got->size(); ++i) same = (*got)[i].bits == (*want)[i].bits;
    Check(same, "the replayed program's C equals trnmx::Gemm bit for bit");
  }

  if (g_failures != 0) {
    std::fprintf(stderr, "consumer_emu: %d check(s) failed\n", g_failures);
    return 1;
  }
  std::printf("consumer_emu: %s from %s, GEMM %lld ps simulated, %.1f%% of peak, C bit-exact\n",
              file->name.c_str(), TRNMX_MACHINE_FILE, static_cast<long long>(sim->end_ps),
              100 * report.fraction_of_peak);
  return 0;
}
