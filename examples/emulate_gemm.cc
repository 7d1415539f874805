// Example: run a GEMM on the Trainium3 emulator, print its report, and check
// the numbers the emulated program computes.
//
//   build/dev/examples/emulate_gemm
//
// C (1024 x 1024, BF16) = A (1024 x 2048) x B (2048 x 1024) in MXFP8 on two
// NeuronCores of the built-in "trn3" machine description
// (emulator/machines/trn3.json):
//   1. LowerGemm turns the problem into a per-engine program (tiling, SBUF
//      buffers, DMA queues, semaphores; trnmx/emu/gemm.h);
//   2. Simulate runs it on the discrete-event simulator (integer picoseconds);
//   3. MakeReport / FormatReport summarise time, achieved vs peak FLOP/s,
//      the limiting resource and memory high-water marks;
//   4. the functional mode (trnmx/emu/functional.h) replays the program's
//      tile operations on random MXFP8 data through trnmx's own kernels, in
//      the order the simulator completed them.
//
// Checks (exit 1 if one fails): the replayed C equals one trnmx::Gemm call
// over the whole problem bit for bit, and the simulated time is positive and
// no faster than the machine's peak (fraction of peak in (0, 1]).
#include <trnmx/emu/functional.h>
#include <trnmx/emu/gemm.h>
#include <trnmx/emu/machine.h>
#include <trnmx/emu/report.h>
#include <trnmx/emu/simulator.h>
#include <trnmx/trnmx.h>

#include <cstdio>
#include <string>
#include <vector>

namespace emu = trnmx::emu;

int main() {
  trnmx::StatusOr<emu::Machine> machine = emu::LoadPresetMachine("trn3");
  if (!machine.ok()) {
    std::fprintf(stderr, "%s\n", machine.status().ToString().c_str());
    return 1;
  }
  emu::GemmConfig config;
  config.m = 1024;
  config.n = 1024;
  config.k = 2048;
  config.dtype = emu::MatmulDtype::kMxfp8;
  config.cores = 2;

  trnmx::StatusOr<emu::LoweredGemm> gemm = emu::LowerGemm(*machine, config);
  if (!gemm.ok()) {
    std::fprintf(stderr, "LowerGemm: %s\n", gemm.status().ToString().c_str());
    return 1;
  }
  emu::SimOptions options;
  options.record_trace = true;  // the functional replay follows the trace
  trnmx::StatusOr<emu::SimResult> sim = emu::Simulate(gemm->program, options);
  if (!sim.ok()) {
    std::fprintf(stderr, "Simulate: %s\n", sim.status().ToString().c_str());
    return 1;
  }
  const emu::Report report = emu::MakeReport(gemm->program, *sim, gemm->plan.flops, config.dtype);
  std::printf("%s", emu::FormatReport(report).c_str());

  // Functional replay on random MXFP8 operands (seed 1), against trnmx::Gemm.
  trnmx::StatusOr<emu::GemmData> data = emu::MakeGemmData(*machine, gemm->plan.config, /*seed=*/1);
  if (!data.ok()) {
    std::fprintf(stderr, "MakeGemmData: %s\n", data.status().ToString().c_str());
    return 1;
  }
  trnmx::StatusOr<std::vector<trnmx::Bf16>> got = emu::ExecuteGemm(*gemm, *sim, data->a, data->b);
  trnmx::StatusOr<std::vector<trnmx::Bf16>> want =
      emu::ReferenceGemm(gemm->plan.config, data->a, data->b, &trnmx::DefaultExecutor());
  if (!got.ok() || !want.ok()) {
    std::fprintf(stderr, "functional mode: %s\n",
                 (!got.ok() ? got.status() : want.status()).ToString().c_str());
    return 1;
  }
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < got->size(); ++i) mismatches += (*got)[i].bits != (*want)[i].bits;

  int failures = 0;
  if (got->size() != want->size() || mismatches != 0) {
    std::fprintf(stderr, "FAILED: %zu of %zu C elements differ from trnmx::Gemm\n", mismatches,
                 got->size());
    ++failures;
  }
  if (!(report.time_ps > 0 && report.fraction_of_peak > 0 && report.fraction_of_peak <= 1)) {
    std::fprintf(stderr, "FAILED: time %lld ps, fraction of peak %.3f\n",
                 static_cast<long long>(report.time_ps), report.fraction_of_peak);
    ++failures;
  }
  if (failures != 0) return 1;
  std::printf("emulate_gemm: %zu tile operations replayed; C equals trnmx::Gemm bit for bit\n",
              gemm->tile_ops.size());
  return 0;
}
