// trnmx-emu collective: lower a collective onto a system, simulate it, print
// nccom-test's figures (time, algbw, busbw) and the limiting resource.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "trnmx/emu/collective.h"
#include "trnmx/emu/report.h"
#include "trnmx/emu/simulator.h"
#include "trnmx/emu/system.h"

namespace trnmx::emu::cli {
namespace {

struct CollectiveArgs {
  std::string system = "trn2-server";
  std::string op = "all-reduce";
  std::string bytes = "64M";
  std::string algorithm = "auto";
  CollectiveConfig config;
  bool sweep = false;
  std::string trace;
  std::string skew;   // all-to-all-v: "zipf:S"
  std::string sizes;  // all-to-all-v: JSON file of the R x R sizes
};

// All-to-all-v's sizes for `bytes` per rank: the --sizes file, else
// --skew zipf:S (even without either); refused for the other ops.
Status FillSizes(const System& system, const CollectiveArgs& args, CollectiveConfig& config) {
  if (config.op != CollectiveOp::kAllToAllV) {
    if (!args.skew.empty() || !args.sizes.empty()) {
      return InvalidArgumentError("--skew and --sizes are for --op all-to-all-v");
    }
    return OkStatus();
  }
  if (!args.skew.empty() && !args.sizes.empty()) {
    return InvalidArgumentError("--skew and --sizes: one or the other");
  }
  if (!args.sizes.empty()) {
    std::ifstream in(args.sizes, std::ios::binary);
    if (!in) return InvalidArgumentError("--sizes: cannot read '" + args.sizes + "'");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    StatusOr<std::vector<int64_t>> sizes = ParseAllToAllSizes(text);
    if (!sizes.ok())
      return Status(sizes.status().code(), args.sizes + ": " + sizes.status().message());
    config.sizes = std::move(*sizes);
    return OkStatus();
  }
  StatusOr<double> s = ParseZipfSkew(args.skew);
  if (!s.ok()) return s.status();
  // The ranks as the lowering resolves them (all of the system's by default).
  CollectiveConfig probe = config;
  probe.op = CollectiveOp::kAllToAll;
  StatusOr<CollectivePlan> plan = PlanCollective(system, probe);
  if (!plan.ok()) return plan.status();
  StatusOr<std::vector<int64_t>> sizes = ZipfAllToAllSizes(plan->config.ranks, config.bytes, *s);
  if (!sizes.ok()) return sizes.status();
  config.sizes = std::move(*sizes);
  return OkStatus();
}

// "4096", "64K", "64M", "1G" (binary multiples, as nccom-test's -b/-e).
StatusOr<int64_t> ParseBytes(const std::string& text) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    return InvalidArgumentError("--bytes '" + text + "': not a number");
  }
  const std::string unit = text.substr(used);
  int shift = 0;
  if (unit == "K" || unit == "KiB") {
    shift = 10;
  } else if (unit == "M" || unit == "MiB") {
    shift = 20;
  } else if (unit == "G" || unit == "GiB") {
    shift = 30;
  } else if (!unit.empty()) {
    return InvalidArgumentError("--bytes '" + text + "': unit '" + unit + "' (K, M or G)");
  }
  if (v < 1 || v > (int64_t{1} << (50 - shift))) {
    return InvalidArgumentError("--bytes '" + text + "': outside [1, 1 PiB]");
  }
  return static_cast<int64_t>(v) << shift;
}

struct Run {
  LoweredCollective lowered;
  SimResult result;
  double lower_s = 0, sim_s = 0;
};

StatusOr<Run> LowerAndSimulate(const System& system, const CollectiveConfig& config, bool trace) {
  const auto t0 = std::chrono::steady_clock::now();
  StatusOr<LoweredCollective> lowered = LowerCollective(system, config);
  if (!lowered.ok()) return lowered.status();
  const auto t1 = std::chrono::steady_clock::now();
  SimOptions options;
  options.record_trace = trace;
  StatusOr<SimResult> result = Simulate(lowered->program, options);
  if (!result.ok()) return result.status();
  const auto t2 = std::chrono::steady_clock::now();
  return Run{std::move(*lowered), std::move(*result),
             std::chrono::duration<double>(t1 - t0).count(),
             std::chrono::duration<double>(t2 - t1).count()};
}

int RunOne(const System& system, CollectiveArgs args) {
  if (Status s = FillSizes(system, args, args.config); !s.ok()) {
    std::cerr << s.ToString() << "\n";
    return 1;
  }
  StatusOr<Run> run = LowerAndSimulate(system, args.config, !args.trace.empty());
  if (!run.ok()) {
    std::cerr << run.status().ToString() << "\n";
    return 1;
  }
  const CollectivePlan& plan = run->lowered.plan;
  const CollectiveConfig& c = plan.config;
  const CollectiveFigures f = Figures(plan, run->result);
  const Report rep = MakeReport(run->lowered.program, run->result, 0, MatmulDtype::kBf16);
  std::printf("collective        %s of %s per rank over %d ranks (%d chip(s) x %d, LNC %d) on %s\n",
              std::string(CollectiveOpName(c.op)).c_str(), ByteSizeName(c.bytes).c_str(), c.ranks,
              plan.chips, c.ranks_per_chip, c.lnc, system.name.c_str());
  std::printf("algorithm         %s (%s); %d step(s), %s per transfer\n",
              std::string(CollectiveAlgorithmName(plan.algorithm)).c_str(), plan.why.c_str(),
              plan.steps, ByteSizeName(plan.chunk_bytes).c_str());
  std::printf("time              %.3f us (%lld ps)\n", f.seconds * 1e6,
              static_cast<long long>(run->result.end_ps));
  std::printf("algbw             %.2f GB/s\n", f.algbw_bytes_per_s / 1e9);
  std::printf("busbw             %.2f GB/s (algbw x %.4f)\n", f.busbw_bytes_per_s / 1e9,
              plan.bus_factor);
  std::printf("limiting          %s -> %s\n", rep.limiting.c_str(), rep.bound.c_str());
  if (!rep.busiest_link.empty()) {
    std::printf("links             %.3f MB between chips; busiest %s\n",
                rep.link_transfer_bytes / 1e6, rep.busiest_link.c_str());
  }
  std::printf("simulated         %s\n", plan.simulated.c_str());
  std::printf(
      "program           %lld instructions, %lld events; lowering %.3f s, simulation %.3f s\n",
      static_cast<long long>(rep.instructions), static_cast<long long>(rep.events), run->lower_s,
      run->sim_s);
  if (!args.trace.empty() && !WriteProgramTrace(args.trace, run->lowered.program, run->result)) {
    return 1;
  }
  return 0;
}

// nccom-test style table from 1 KiB to 1 GiB, x4 per row.
int RunSweep(const System& system, CollectiveArgs args) {
  std::printf("%s on %s, %s ranks, LNC %d\n", std::string(CollectiveOpName(args.config.op)).c_str(),
              system.name.c_str(),
              args.config.ranks == 0 ? "all" : std::to_string(args.config.ranks).c_str(),
              args.config.lnc);
  std::printf("%10s %-12s %12s %12s %12s  %s\n", "size", "algorithm", "time us", "algbw GB/s",
              "busbw GB/s", "limiting");
  // A size too small to split over the ranks (on large systems the smallest
  // ones: 576 ranks at LNC 2) gets a row saying why instead of ending the
  // sweep, when the same collective plans at the largest size.
  CollectiveConfig largest = args.config;
  largest.bytes = int64_t{1} << 30;
  largest.sizes.clear();
  const bool largest_plans = PlanCollective(system, largest).ok();
  for (int64_t bytes = 1 << 10; bytes <= (int64_t{1} << 30); bytes *= 4) {
    if (largest_plans && args.config.op != CollectiveOp::kAllToAllV) {
      CollectiveConfig at = args.config;
      at.bytes = bytes;
      if (const StatusOr<CollectivePlan> p = PlanCollective(system, at); !p.ok()) {
        std::printf("%10s %-12s  skipped: %s\n", ByteSizeName(bytes).c_str(), "-",
                    p.status().message().c_str());
        continue;
      }
    }
    args.config.bytes = bytes;
    args.config.sizes.clear();
    if (Status s = FillSizes(system, args, args.config); !s.ok()) {
      std::cerr << s.ToString() << "\n";
      return 1;
    }
    StatusOr<Run> run = LowerAndSimulate(system, args.config, false);
    if (!run.ok()) {
      std::cerr << run.status().ToString() << "\n";
      return 1;
    }
    const CollectiveFigures f = Figures(run->lowered.plan, run->result);
    const Report rep = MakeReport(run->lowered.program, run->result, 0, MatmulDtype::kBf16);
    std::printf("%10s %-12s %12.3f %12.2f %12.2f  %s\n", ByteSizeName(bytes).c_str(),
                std::string(CollectiveAlgorithmName(run->lowered.plan.algorithm)).c_str(),
                f.seconds * 1e6, f.algbw_bytes_per_s / 1e9, f.busbw_bytes_per_s / 1e9,
                rep.limiting != "links" ? rep.limiting.c_str()
                                        : (rep.limiting + " (" + rep.busiest_link + ")").c_str());
  }
  return 0;
}

}  // namespace

StatusOr<double> ParseZipfSkew(const std::string& text) {
  if (text.empty()) return 0.0;
  size_t used = 0;
  double s = 0;
  try {
    if (text.rfind("zipf:", 0) != 0) throw std::invalid_argument("prefix");
    s = std::stod(text.substr(5), &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() - 5 || !(s >= 0)) {
    return InvalidArgumentError("--skew '" + text + "': expected zipf:S (S >= 0)");
  }
  return s;
}

void AddCollectiveCommand(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<CollectiveArgs>();
  CLI::App* cmd = app.add_subcommand(
      "collective", "Lower a collective onto a system's CC-cores and links, simulate it");
  cmd->add_option("--system", args->system, "system preset, chip preset or JSON file")
      ->capture_default_str();
  cmd->add_option("--op", args->op,
                  "all-reduce, all-gather, reduce-scatter, all-to-all, all-to-all-v, permute, "
                  "send-recv")
      ->capture_default_str();
  cmd->add_option("--bytes", args->bytes, "per-rank buffer as nccom-test counts it (K, M, G)")
      ->capture_default_str();
  cmd->add_option("--ranks", args->config.ranks, "logical cores taking part (0 = all)")
      ->capture_default_str();
  cmd->add_option("--lnc", args->config.lnc, "physical cores per logical core (1 or 2)")
      ->capture_default_str();
  cmd->add_option("--ranks-per-chip", args->config.ranks_per_chip,
                  "ranks on each chip (0 = all its logical cores; 1 = one per chip)")
      ->capture_default_str();
  cmd->add_option("--algorithm", args->algorithm,
                  "auto, ring, mesh, rdh, hierarchical (AR, AG, RS over whole servers), "
                  "kangaring (every rank of one n x n torus: Trn2)")
      ->capture_default_str();
  cmd->add_option("--skew", args->skew,
                  "all-to-all-v: zipf:S, each rank's bytes split over the receivers as "
                  "1 / (j + 1)^S (default zipf:0, even)");
  cmd->add_option("--sizes", args->sizes,
                  "all-to-all-v: JSON file, R arrays of R byte counts (row i: what rank i sends)");
  cmd->add_flag("--sweep", args->sweep, "a table from 1 KiB to 1 GiB (x4 per row)");
  cmd->add_option(
      "--trace", args->trace,
      "write a Chrome/Perfetto trace JSON here, or an SVG timeline if FILE ends in .svg");
  cmd->callback([args, &exit_code]() {
    StatusOr<System> system = LoadSystem(args->system);
    StatusOr<CollectiveOp> op = ParseCollectiveOp(args->op);
    StatusOr<CollectiveAlgorithm> algorithm = ParseCollectiveAlgorithm(args->algorithm);
    StatusOr<int64_t> bytes = ParseBytes(args->bytes);
    for (const Status& s : {system.status(), op.status(), algorithm.status(), bytes.status()}) {
      if (!s.ok()) {
        std::cerr << s.ToString() << "\n";
        exit_code = 1;
        return;
      }
    }
    args->config.op = *op;
    args->config.algorithm = *algorithm;
    args->config.bytes = *bytes;
    exit_code = args->sweep ? RunSweep(*system, *args) : RunOne(*system, *args);
  });
}

}  // namespace trnmx::emu::cli
