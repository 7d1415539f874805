// trnmx-emu moe: a mixture-of-experts layer with expert parallelism on a
// system (moe.h): router, dispatch all-to-all-v, expert GEMMs, combine.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "trnmx/emu/collective.h"
#include "trnmx/emu/moe.h"
#include "trnmx/emu/system.h"

namespace trnmx::emu::cli {
namespace {

struct MoeArgs {
  std::string system = "trn3-ultraserver-gen2";
  std::string weights = "mxfp4";
  std::string skew;
  std::string histogram;
  MoeConfig config;
};

// A recorded histogram: a JSON list of tokens per expert (integers >= 0).
StatusOr<std::vector<std::uint64_t>> ReadHistogram(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgumentError("--histogram: cannot read '" + path + "'");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_array()) {
    return InvalidArgumentError(path + ": expected a JSON list of tokens per expert");
  }
  std::vector<std::uint64_t> out;
  for (std::size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number_unsigned()) {
      return InvalidArgumentError(path + ": [" + std::to_string(i) + "] is not an integer >= 0");
    }
    out.push_back(j[i].get<std::uint64_t>());
  }
  return out;
}

int RunMoe(const MoeArgs& args) {
  MoeConfig c = args.config;
  StatusOr<System> system = LoadSystem(args.system);
  StatusOr<MoeWeights> weights = ParseMoeWeights(args.weights);
  StatusOr<double> skew = ParseZipfSkew(args.skew);
  for (const Status& s : {system.status(), weights.status(), skew.status()}) {
    if (!s.ok()) {
      std::cerr << s.ToString() << "\n";
      return 1;
    }
  }
  if (!args.skew.empty() && !args.histogram.empty()) {
    std::cerr << "INVALID_ARGUMENT: --skew and --histogram: one or the other\n";
    return 1;
  }
  c.weights = *weights;
  c.zipf_s = *skew;
  if (!args.histogram.empty()) {
    StatusOr<std::vector<std::uint64_t>> h = ReadHistogram(args.histogram);
    if (!h.ok()) {
      std::cerr << h.status().ToString() << "\n";
      return 1;
    }
    c.histogram = std::move(*h);
  }
  StatusOr<MoeResult> r = SimulateMoe(*system, c);
  if (!r.ok()) {
    std::cerr << r.status().ToString() << "\n";
    return 1;
  }
  const MoeConfig& rc = r->config;
  const RoutingStats& st = r->routing.stats;
  std::printf(
      "moe               %lld experts, top-%lld, %lld tokens, hidden %lld, intermediate "
      "%lld, %s weights on %s\n",
      static_cast<long long>(rc.experts), static_cast<long long>(rc.top_k),
      static_cast<long long>(rc.tokens), static_cast<long long>(rc.hidden),
      static_cast<long long>(rc.intermediate), std::string(MoeWeightsName(rc.weights)).c_str(),
      system->name.c_str());
  std::printf("routing           %s; EP %d (%lld experts per chip)\n",
              rc.histogram.empty()
                  ? (rc.zipf_s > 0 ? ("router on Zipf(" + std::to_string(rc.zipf_s) +
                                      ") logits, seed " + std::to_string(rc.seed))
                                   : "router on uniform logits, seed " + std::to_string(rc.seed))
                        .c_str()
                  : ("histogram " + args.histogram).c_str(),
              rc.ep, static_cast<long long>(rc.experts / rc.ep));
  std::printf(
      "imbalance         experts max/mean %.3f (expert %zu: %llu); chips max/mean %.3f "
      "(chip %zu: %llu of %llu assignments)\n",
      st.expert_imbalance, st.busiest_expert,
      static_cast<unsigned long long>(st.tokens_per_expert[st.busiest_expert]), st.device_imbalance,
      st.busiest_device, static_cast<unsigned long long>(st.tokens_per_device[st.busiest_device]),
      static_cast<unsigned long long>(st.total));
  for (const MoePhase& p : r->phases) {
    std::printf("%-17s %10.3f us  limiting %-28s %s\n", p.name.c_str(), p.time_ps * 1e-6,
                p.limiting.c_str(), p.detail.c_str());
  }
  std::printf("total             %10.3f us\n", r->total_ps * 1e-6);
  const MoePhase* experts = nullptr;
  for (const MoePhase& p : r->phases) {
    if (p.name == "experts") experts = &p;
  }
  if (experts != nullptr && experts->time_ps > 0) {
    std::printf(
        "expert GEMMs      %.3f TFLOP over all chips, %.1f TFLOP/s per chip on the slowest\n",
        r->expert_flops / 1e12, r->expert_flops / rc.ep / (experts->time_ps * 1e-12) / 1e12);
  }
  return 0;
}

}  // namespace

void AddMoeCommand(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<MoeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "moe", "A mixture-of-experts layer with expert parallelism: router, all-to-all-v, experts");
  cmd->add_option("--system", args->system, "system preset or JSON file")->capture_default_str();
  cmd->add_option("--experts", args->config.experts, "experts E")->required();
  cmd->add_option("--top-k", args->config.top_k, "experts per token k")->required();
  cmd->add_option("--tokens", args->config.tokens, "tokens T, over all EP ranks")->required();
  cmd->add_option("--hidden", args->config.hidden, "hidden size H")->required();
  cmd->add_option("--intermediate", args->config.intermediate, "expert intermediate size I")
      ->required();
  cmd->add_option("--weights", args->weights, "bf16, mxfp8 or mxfp4")->capture_default_str();
  cmd->add_option("--ep", args->config.ep, "EP ranks, one chip each (0 = every chip)")
      ->capture_default_str();
  cmd->add_option("--skew", args->skew, "expert popularity zipf:S (default uniform)");
  cmd->add_option("--histogram", args->histogram,
                  "JSON list of tokens per expert (bypasses the router)");
  cmd->add_option("--seed", args->config.seed, "seed of the synthetic router logits")
      ->capture_default_str();
  cmd->add_option("--lnc", args->config.lnc, "physical cores per rank in the all-to-all-v")
      ->capture_default_str();
  cmd->callback([args, &exit_code]() { exit_code = RunMoe(*args); });
}

}  // namespace trnmx::emu::cli
