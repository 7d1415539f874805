// trnmx-emu train: one training step of a model on a system (train.h): memory
// per chip with the optimizer state and activations, step time, tokens/s,
// MFU and energy (analytical).
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "trnmx/emu/model.h"
#include "trnmx/emu/train.h"

namespace trnmx::emu::cli {
namespace {

struct TrainArgs {
  std::string system = "trn3-ultraserver-gen2";
  std::string model;
  std::string weights = "bf16";
  bool no_zero = false;
  bool json = false;
  TrainConfig config;
};

nlohmann::json OpsJson(const std::vector<OpCost>& ops) {
  nlohmann::json j = nlohmann::json::array();
  for (const OpCost& o : ops) j.push_back(OpCostJson(o));
  return j;
}

// A phase's time per op class (PhaseCost::classes, largest first) as text.
std::string Classes(const PhaseCost& phase, double total) {
  std::string out;
  char buf[96];
  for (const ClassCost& c : phase.classes) {
    std::snprintf(buf, sizeof(buf), "%s%s %.3f ms (%.0f %%)", out.empty() ? "" : "; ",
                  c.op_class.c_str(), c.seconds * 1e3, 100 * c.seconds / total);
    out += buf;
  }
  return out;
}

int RunTrain(const TrainArgs& args) {
  StatusOr<ModelRunInputs> inputs = LoadModelRunInputs(args.system, args.model, args.weights);
  if (!inputs.ok()) {
    std::cerr << inputs.status().ToString() << "\n";
    return 1;
  }
  const System* system = &inputs->system;
  const Model* model = &inputs->model;
  const WeightFormats* weights = &inputs->weights;
  TrainConfig c = args.config;
  c.weights = *weights;
  c.zero1 = !args.no_zero;
  StatusOr<TrainEstimate> e = EstimateTraining(*system, *model, c);
  if (!e.ok()) {
    std::cerr << e.status().ToString() << "\n";
    return 1;
  }
  const ParameterCount params = CountParameters(*model);
  const ParallelLayout& l = c.layout;
  const TrainMemory& mem = e->memory;
  const char* backward_note =
      "no backward lowering exists: each forward GEMM, attention and elementwise op costs 2x its "
      "forward FLOPs and HBM bytes, each tensor-parallel collective and the runtime overhead "
      "once more";
  const std::string optimizer =
      c.zero1 ? "AdamW, ZeRO-1 (FP32 master weights and moments sharded over dp)"
              : "AdamW, unsharded (FP32 master weights and moments on every replica)";
  if (args.json) {
    nlohmann::json j = {
        {"model", model->name},
        {"system", system->name},
        {"mode", "analytical"},
        {"parameters", params.total},
        {"active_parameters", params.active},
        {"layout", {{"tp", l.tp}, {"ep", l.ep}, {"dp", l.dp}, {"pp", l.pp}, {"lnc", l.lnc}}},
        {"weights", WeightFormatsName(c.weights)},
        {"batch", c.batch},
        {"seq", c.seq},
        {"microbatches", c.microbatches},
        {"optimizer", optimizer},
        {"backward", backward_note},
        {"step_ms", e->step_s * 1e3},
        {"forward_ms", e->forward_s * 1e3},
        {"backward_ms", e->backward_s * 1e3},
        {"pipeline_ms", e->pipeline_s * 1e3},
        {"bubble_fraction", e->bubble_fraction},
        {"gradient_sync_ms", e->gradient_sync_s * 1e3},
        {"optimizer_ms", e->optimizer.seconds * 1e3},
        {"tokens_per_step", e->tokens_per_step},
        {"tokens_per_s", e->tokens_per_s},
        {"model_flops", e->model_flops},
        {"attention_flops", e->attention_flops},
        {"peak_flops", e->peak_flops},
        {"peak_dtype", std::string(MatmulDtypeName(e->peak_dtype))},
        {"mfu", e->mfu},
        {"hbm_bytes_per_chip", mem.total},
        {"memory",
         {{"weights", mem.weights},
          {"gradients", mem.gradients},
          {"optimizer", mem.optimizer},
          {"activations", mem.activations},
          {"capacity", mem.capacity},
          {"parameters_per_rank", mem.parameters_per_rank},
          {"ranks_per_chip", mem.ranks_per_chip},
          {"chips", mem.chips}}},
        {"forward_ops", OpsJson(e->forward.ops)},
        {"backward_ops", OpsJson(e->backward)},
        {"gradient_sync_ops", OpsJson(e->gradient_sync)},
        {"joules_per_token", nullptr},
        {"tokens_per_s_per_mw", nullptr}};
    if (e->energy.reported) {
      j["joules_per_token"] = e->energy.joules_per_token;
      j["tokens_per_s_per_mw"] = e->energy.tokens_per_s_per_mw;
      j["watts"] = e->energy.watts;
    } else {
      j["energy_why_not"] = e->energy.why_not;
    }
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  const double gib = 1024.0 * 1024.0 * 1024.0;
  std::printf("model        %s (%s, %.2f B parameters, %.2f B active)\n", model->name.c_str(),
              std::string(ModelFamilyName(model->family)).c_str(), params.total / 1e9,
              params.active / 1e9);
  std::printf(
      "layout       %s: tp %d x ep %d x pp %d x dp %d at LNC %d = %lld ranks on %d chip(s)\n",
      system->name.c_str(), l.tp, l.ep, l.pp, l.dp, l.lnc,
      static_cast<long long>(int64_t{l.tp} * l.pp * l.dp), mem.chips);
  std::printf("weights      %s\n", WeightFormatsName(c.weights).c_str());
  std::printf(
      "workload     batch %lld x seq %lld per replica in %lld microbatch(es): %.0f tokens per "
      "step\n",
      static_cast<long long>(c.batch), static_cast<long long>(c.seq),
      static_cast<long long>(c.microbatches), e->tokens_per_step);
  std::printf(
      "HBM per chip %.2f GiB of %.2f GiB: weights %.2f, gradients %.2f, optimizer %.2f, "
      "activations %.2f GiB (%d ranks; no recompute)\n",
      mem.total / gib, mem.capacity / gib, mem.weights / gib, mem.gradients / gib,
      mem.optimizer / gib, mem.activations / gib, mem.ranks_per_chip);
  std::printf("step         %.3f ms\n", e->step_s * 1e3);
  std::printf("throughput   %.1f tok/s\n", e->tokens_per_s);
  std::printf(
      "MFU          %.1f %% (%.3g FLOP per step = 6 N tokens + %.3g attention; peak %.3g "
      "FLOP/s = %lld ranks at %s dense)\n",
      100 * e->mfu, e->model_flops, e->attention_flops, e->peak_flops,
      static_cast<long long>(int64_t{l.tp} * l.pp * l.dp),
      std::string(MatmulDtypeName(e->peak_dtype)).c_str());
  std::printf("forward      %.3f ms per microbatch: %s\n", e->forward_s * 1e3,
              Classes(e->forward, e->forward_s).c_str());
  std::printf("backward     %.3f ms per microbatch (%s)\n", e->backward_s * 1e3, backward_note);
  std::printf(
      "pipeline     %.3f ms: (%lld microbatches + %d - 1) x (forward + backward) / %d "
      "stages, bubble %.1f %%\n",
      e->pipeline_s * 1e3, static_cast<long long>(c.microbatches), l.pp, l.pp,
      100 * e->bubble_fraction);
  std::printf("gradients    %.3f ms", e->gradient_sync_s * 1e3);
  for (const OpCost& o : e->gradient_sync) {
    std::printf("; %s %.3f ms (%s)", o.name.c_str(), o.seconds * 1e3, o.bound.c_str());
  }
  std::printf("%s\n", l.dp > 1 ? "" : " (dp 1: none)");
  std::printf("optimizer    %.3f ms: %s, 28 B of HBM traffic per parameter of the shard\n",
              e->optimizer.seconds * 1e3, optimizer.c_str());
  if (!e->energy.reported) {
    std::printf("energy       %s\n", e->energy.why_not.c_str());
  } else {
    std::printf(
        "energy       %d chips x %.0f W (%s, %s; chips only, hosts excluded) = %.1f kW: "
        "%.4f J per trained token, %.0f tok/s per MW\n",
        e->energy.chips, e->energy.chip_watts.value,
        std::string(SourceTagName(e->energy.chip_watts.tag)).c_str(),
        e->energy.chip_watts.source.c_str(), e->energy.watts / 1e3, e->energy.joules_per_token,
        e->energy.tokens_per_s_per_mw);
  }
  return 0;
}

}  // namespace

void AddTrainCommand(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand(
      "train", "One training step of a model on a system: memory, step time, MFU (analytical)");
  cmd->add_option("--system", args->system, "system preset or JSON file")->capture_default_str();
  cmd->add_option("--model", args->model, "built-in model or a Hugging Face config.json")
      ->required();
  cmd->add_option("--tp", args->config.layout.tp, "tensor-parallel ranks (logical cores)")
      ->required();
  cmd->add_option("--ep", args->config.layout.ep, "expert-parallel ranks: 1 or --tp")
      ->capture_default_str();
  cmd->add_option("--dp", args->config.layout.dp, "data-parallel replicas")->capture_default_str();
  cmd->add_option("--pp", args->config.layout.pp, "pipeline stages")->capture_default_str();
  cmd->add_option("--lnc", args->config.layout.lnc, "physical cores per logical core (1 or 2)")
      ->capture_default_str();
  cmd->add_option("--weights", args->weights,
                  "GEMM weight formats: bf16|fp8|mxfp8|mxfp4, or per group (attn, mlp, experts, "
                  "embed)")
      ->capture_default_str();
  cmd->add_option("--batch", args->config.batch, "sequences per data-parallel replica per step")
      ->capture_default_str();
  cmd->add_option("--seq", args->config.seq, "tokens per sequence")->capture_default_str();
  cmd->add_option("--microbatches", args->config.microbatches,
                  "microbatches per step (pipeline bubble (pp - 1) / (microbatches + pp - 1))")
      ->capture_default_str();
  cmd->add_flag("--no-zero", args->no_zero,
                "keep the optimizer state whole on every replica (default: ZeRO-1 over dp)");
  cmd->add_flag("--json", args->json, "one JSON object instead of text");
  cmd->callback([args, &exit_code]() { exit_code = RunTrain(*args); });
}

}  // namespace trnmx::emu::cli
