// trnmx-emu gemm: lower a GEMM, simulate it, print the report.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "trnmx/emu/collective.h"
#include "trnmx/emu/functional.h"
#include "trnmx/emu/gemm.h"
#include "trnmx/emu/parallel.h"
#include "trnmx/emu/report.h"
#include "trnmx/emu/simulator.h"
#include "trnmx/emu/system.h"
#include "trnmx/executor.h"

namespace trnmx::emu::cli {
namespace {

struct GemmArgs {
  std::string machine = "trn3";
  std::string dtype = "mxfp8";
  GemmConfig config;
  std::string placement = "auto";
  std::string trace;
  bool dump = false;
  bool no_throttle = false;
  bool check = false;
  uint64_t seed = 1;
  // --system: a tensor-parallel GEMM on the system's chips (parallel.h).
  std::string system;
  bool all_reduce = false;
  int chips = 0;
  int lnc = 2;
  std::string algorithm = "auto";
  bool no_dedup = false;
};

// --check: run the lowered program functionally on random data and compare
// C with one trnmx::Gemm call, bit for bit. Returns the exit status.
int CheckFunctional(const Machine& machine, const LoweredGemm& gemm, const SimResult& sim,
                    uint64_t seed) {
  const GemmConfig& config = gemm.plan.config;
  const auto t0 = std::chrono::steady_clock::now();
  StatusOr<GemmData> data = MakeGemmData(machine, config, seed);
  if (!data.ok()) {
    std::cerr << data.status().ToString() << "\n";
    return 1;
  }
  StatusOr<std::vector<Bf16>> got = ExecuteGemm(gemm, sim, data->a, data->b);
  if (!got.ok()) {
    std::cerr << got.status().ToString() << "\n";
    return 1;
  }
  // The whole-problem reference is the one big product here: give it the
  // process pool (the tile replay above is mostly sub-MFLOP tiles, which run
  // on the calling thread whatever the executor).
  StatusOr<std::vector<Bf16>> want = ReferenceGemm(config, data->a, data->b, &DefaultExecutor());
  if (!want.ok()) {
    std::cerr << want.status().ToString() << "\n";
    return 1;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  size_t mismatches = 0, first = 0;
  for (size_t i = got->size(); i-- > 0;) {
    if ((*got)[i].bits != (*want)[i].bits) {
      ++mismatches;
      first = i;
    }
  }
  const unsigned long long seed_ull = seed;
  if (mismatches != 0) {
    const size_t n = static_cast<size_t>(config.n);
    std::printf(
        "check             FAILED: %zu of %zu C elements differ from trnmx::Gemm (seed %llu); "
        "first C[%zu][%zu] = 0x%04x, expected 0x%04x\n",
        mismatches, got->size(), seed_ull, first / n, first % n, (*got)[first].bits,
        (*want)[first].bits);
    return 1;
  }
  std::printf(
      "check             C equals trnmx::Gemm bit for bit (%zu BF16 elements, %zu tile ops "
      "replayed, seed %llu, %.3f s)\n",
      got->size(), gemm.tile_ops.size(), seed_ull, s);
  return 0;
}

// --system NAME --all-reduce: K split across the chips, each chip's GEMM,
// then the all-reduce of the partial C's.
int RunTensorParallel(const GemmArgs& args, GemmConfig config) {
  StatusOr<System> system = LoadSystem(args.system);
  if (!system.ok()) {
    std::cerr << system.status().ToString() << "\n";
    return 1;
  }
  StatusOr<CollectiveAlgorithm> algorithm = ParseCollectiveAlgorithm(args.algorithm);
  if (!algorithm.ok()) {
    std::cerr << algorithm.status().ToString() << "\n";
    return 1;
  }
  TensorParallelGemmConfig tp;
  tp.chips = args.chips == 0 ? system->chip_count() : args.chips;
  tp.lnc = args.lnc;
  tp.algorithm = *algorithm;
  if (tp.chips < 1 || config.k % tp.chips != 0) {
    std::cerr << "--k " << config.k << " does not split into " << tp.chips
              << " equal shares (--chips, or every chip of " << system->name << ")\n";
    return 1;
  }
  config.k /= tp.chips;
  tp.gemm = config;
  // A trace needs the whole program.
  const bool dedup = !args.no_dedup && args.trace.empty();
  const auto t0 = std::chrono::steady_clock::now();
  StatusOr<TensorParallelTiming> t = SimulateTensorParallelGemm(*system, tp, dedup);
  if (!t.ok()) {
    std::cerr << t.status().ToString() << "\n";
    return 1;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const CollectivePlan& ar = t->all_reduce;
  std::printf(
      "tensor parallel   C[%lld, %lld] = A x B, K = %lld split over %d chips of %s (%lld each, "
      "%s)\n",
      static_cast<long long>(config.m), static_cast<long long>(config.n),
      static_cast<long long>(config.k * tp.chips), ar.chips, system->name.c_str(),
      static_cast<long long>(config.k), args.dtype.c_str());
  std::printf(
      "gemm              per chip on %d core(s), %s stationary; every chip's C stored at %.3f us\n",
      t->gemm.config.cores, t->gemm.b_stationary ? "B" : "A", t->gemm_ps * 1e-6);
  std::printf("all-reduce        %s of C per chip, %s (%s), LNC %d; %.3f us\n",
              ByteSizeName(ar.config.bytes).c_str(),
              std::string(CollectiveAlgorithmName(ar.algorithm)).c_str(), ar.why.c_str(),
              ar.config.lnc, (t->end_ps - t->gemm_ps) * 1e-6);
  std::printf("time              %.3f us (%lld ps)\n", t->end_ps * 1e-6,
              static_cast<long long>(t->end_ps));
  const double flops = 2.0 * config.m * config.n * config.k * ar.chips;
  std::printf("throughput        %.1f TFLOP/s over %d chips\n", flops / (t->end_ps * 1e-12) / 1e12,
              ar.chips);
  std::printf("simulated         %s\n", t->how.c_str());
  std::printf("wall              %.3f s (%lld instructions, %lld events)\n", wall,
              static_cast<long long>(t->instructions), static_cast<long long>(t->events));
  if (!args.trace.empty()) {
    StatusOr<TensorParallelGemm> whole = LowerTensorParallelGemm(*system, tp);
    if (!whole.ok()) {
      std::cerr << whole.status().ToString() << "\n";
      return 1;
    }
    SimOptions options;
    options.record_trace = true;
    options.throttle = !args.no_throttle;
    StatusOr<SimResult> result = Simulate(whole->program, options);
    if (!result.ok()) {
      std::cerr << result.status().ToString() << "\n";
      return 1;
    }
    if (!WriteProgramTrace(args.trace, whole->program, *result)) return 1;
  }
  return 0;
}

int RunGemm(const GemmArgs& args) {
  if (!args.system.empty() || args.all_reduce) {
    if (args.system.empty() || !args.all_reduce || args.check || args.dump || args.no_throttle) {
      std::cerr << "--system and --all-reduce go together (a tensor-parallel GEMM followed by the "
                   "all-reduce of C), without --check, --dump-program or --no-throttle\n";
      return 1;
    }
  }
  StatusOr<Machine> machine = LoadMachine(args.machine);
  if (!machine.ok()) {
    std::cerr << machine.status().ToString() << "\n";
    return 1;
  }
  StatusOr<MatmulDtype> dtype = ParseMatmulDtype(args.dtype);
  if (!dtype.ok()) {
    std::cerr << dtype.status().ToString() << "\n";
    return 1;
  }
  GemmConfig config = args.config;
  config.dtype = *dtype;
  if (args.placement == "a") {
    config.placement = OperandPlacement::kAStationary;
  } else if (args.placement == "b") {
    config.placement = OperandPlacement::kBStationary;
  }
  if (args.all_reduce) return RunTensorParallel(args, config);
  const auto t0 = std::chrono::steady_clock::now();
  StatusOr<LoweredGemm> gemm = LowerGemm(*machine, config);
  if (!gemm.ok()) {
    std::cerr << gemm.status().ToString() << "\n";
    return 1;
  }
  const auto t1 = std::chrono::steady_clock::now();
  SimOptions options;
  options.record_trace = !args.trace.empty() || args.check;
  options.throttle = !args.no_throttle;
  StatusOr<SimResult> result = Simulate(gemm->program, options);
  if (!result.ok()) {
    std::cerr << result.status().ToString() << "\n";
    return 1;
  }
  const auto t2 = std::chrono::steady_clock::now();
  if (args.dump) std::cout << gemm->program.Dump() << "\n";
  const GemmPlan& plan = gemm->plan;
  std::printf("gemm              M=%lld N=%lld K=%lld %s, C in BF16\n",
              static_cast<long long>(config.m), static_cast<long long>(config.n),
              static_cast<long long>(config.k), args.dtype.c_str());
  std::printf(
      "placement         %s stationary (TensorE cycles on the busiest core: A stationary "
      "%lld, B stationary %lld)\n",
      plan.b_stationary ? "B" : "A", static_cast<long long>(plan.tensor_cycles_a_stationary),
      static_cast<long long>(plan.tensor_cycles_b_stationary));
  std::printf(
      "estimate          %.3f us (TensorE %.3f, DMA engines %.3f, HBM stack %.3f, first loads "
      "%.3f, last store %.3f us; the planner's pick among placements, grids and blockings)\n",
      plan.estimate.total_ps * 1e-6, plan.estimate.tensor_ps * 1e-6, plan.estimate.dma_ps * 1e-6,
      plan.estimate.hbm_ps * 1e-6, plan.estimate.prologue_ps * 1e-6,
      plan.estimate.epilogue_ps * 1e-6);
  const std::string groups =
      plan.k_blocks > 1 ? ", " + std::to_string(plan.group_n) + " panel(s) per PSUM group" : "";
  std::printf(
      "tiling            %d x %d core grid (M x N), %zu with work; stationary block %lld "
      "rows, n_tile %lld, k_tile %lld, K in %lld block(s) of %lld%s, %d moving buffers, "
      "%d output tile(s) per store; %lld matmuls\n",
      plan.grid_m, plan.grid_n, plan.cores.size(),
      static_cast<long long>(plan.config.stationary_block),
      static_cast<long long>(plan.config.n_tile), static_cast<long long>(plan.k_tile),
      static_cast<long long>(plan.k_blocks), static_cast<long long>(plan.config.k_block),
      groups.c_str(), plan.config.moving_buffers, plan.config.store_tiles,
      static_cast<long long>(plan.matmuls));
  Report report = MakeReport(gemm->program, *result, plan.flops, config.dtype);
  std::cout << FormatReport(report);
  const double lower_s = std::chrono::duration<double>(t1 - t0).count();
  const double sim_s = std::chrono::duration<double>(t2 - t1).count();
  std::printf("wall              lowering %.3f s, simulation %.3f s", lower_s, sim_s);
  if (sim_s > 0) {
    std::printf(" (%.2f M events/s, %.2f M instructions/s)", result->events / sim_s / 1e6,
                gemm->program.instruction_count() / sim_s / 1e6);
  }
  std::printf("\n");
  if (!args.trace.empty() && !WriteProgramTrace(args.trace, gemm->program, *result)) return 1;
  if (args.check) return CheckFunctional(*machine, *gemm, *result, args.seed);
  return 0;
}

}  // namespace

void AddGemmCommand(CLI::App& app, int& exit_code) {
  CLI::App* cmd = app.add_subcommand("gemm", "Lower C = A x B onto the machine and simulate it");
  auto args = std::make_shared<GemmArgs>();
  args->config.m = args->config.n = args->config.k = 0;
  cmd->add_option("--machine", args->machine, "preset name or JSON file")->capture_default_str();
  cmd->add_option("--m", args->config.m, "rows of A and C")->required()->check(CLI::PositiveNumber);
  cmd->add_option("--n", args->config.n, "columns of B and C")
      ->required()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--k", args->config.k, "contraction size")
      ->required()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--dtype", args->dtype, "bf16, fp8 (double-row), mxfp8, mxfp4, fp32")
      ->capture_default_str();
  cmd->add_option("--cores", args->config.cores, "NeuronCores to use")->capture_default_str();
  cmd->add_option("--stationary-block", args->config.stationary_block,
                  "stationary rows kept in SBUF per block, multiple of 128 (0 = chosen)");
  cmd->add_option("--k-block", args->config.k_block,
                  "K elements per SBUF block, multiple of the matmul K tile (0 = all of K when "
                  "it fits and reads no more HBM)");
  cmd->add_option("--n-tile", args->config.n_tile, "moving free size per matmul (0 = 512)");
  cmd->add_option("--moving-buffers", args->config.moving_buffers,
                  "moving panel buffers (2 = double buffering; 0 = chosen)")
      ->capture_default_str();
  cmd->add_option("--store-tiles", args->config.store_tiles,
                  "output tiles per store DMA (0 = chosen: 1, or 4 to 32 KiB per partition)")
      ->capture_default_str();
  cmd->add_option("--stationary", args->placement,
                  "operand TensorE holds stationary: a, b, or auto (least estimated time)")
      ->check(CLI::IsMember({"auto", "a", "b"}))
      ->capture_default_str();
  cmd->add_option(
      "--trace", args->trace,
      "write a Chrome/Perfetto trace JSON here, or an SVG timeline if FILE ends in .svg");
  cmd->add_flag("--dump-program", args->dump, "print the lowered program");
  cmd->add_flag("--no-throttle", args->no_throttle, "disable the TensorE dI/dt throttle");
  cmd->add_flag("--check", args->check,
                "functional mode: run the program's tiles on random data with the trnmx kernels "
                "and compare C with trnmx::Gemm bit for bit");
  cmd->add_option("--seed", args->seed, "seed of the --check data (std::mt19937_64)")
      ->capture_default_str();
  cmd->add_option("--system", args->system,
                  "with --all-reduce: a system preset or JSON file; the GEMM is tensor parallel "
                  "over its chips (K split across them)");
  cmd->add_flag("--all-reduce", args->all_reduce,
                "with --system: every chip's GEMM, then the all-reduce of C (one rank per chip)");
  cmd->add_option("--chips", args->chips, "chips of --system taking part (0 = all)")
      ->capture_default_str();
  cmd->add_option("--lnc", args->lnc, "physical cores per all-reduce rank (1 or 2)")
      ->capture_default_str();
  cmd->add_option("--algorithm", args->algorithm,
                  "all-reduce algorithm: auto, ring, mesh, rdh, hierarchical")
      ->capture_default_str();
  cmd->add_flag("--no-dedup", args->no_dedup,
                "simulate every chip's GEMM instead of one for all (same result, slower)");
  cmd->callback([args, &exit_code]() { exit_code = RunGemm(*args); });
}

}  // namespace trnmx::emu::cli
