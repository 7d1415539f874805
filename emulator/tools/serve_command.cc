// trnmx-emu serve: a model served on a system (serve.h): the layout, whether
// it fits in HBM, and TTFT, TPOT and throughput, analytical or event-driven
// (--mode), or both side by side per op class (--compare).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "commands.h"
#include "trnmx/emu/model.h"
#include "trnmx/emu/serve.h"
#include "trnmx/emu/serve_report.h"
#include "trnmx/emu/system.h"

namespace trnmx::emu::cli {
namespace {

struct ServeArgs {
  std::string system = "trn3-ultraserver-gen2";
  std::string model;
  std::string weights = "bf16";
  std::string mode = "analytical";
  bool json = false;
  bool ops = false;
  bool compare = false;
  std::string trace, html;  // output files; empty: none
  ServeConfig config;
};

nlohmann::json ServePhaseJson(const PhaseCost& p) {
  nlohmann::json ops = nlohmann::json::array();
  for (const OpCost& o : p.ops) {
    nlohmann::json op = OpCostJson(o);
    op["fidelity"] = o.fidelity;
    ops.push_back(std::move(op));
  }
  nlohmann::json classes = nlohmann::json::array();
  for (const ClassCost& c : p.classes) {
    classes.push_back({{"class", c.op_class}, {"ms", c.seconds * 1e3}, {"bound", c.bound}});
  }
  nlohmann::json j = {{"ms", p.seconds * 1e3}, {"classes", classes}, {"ops", ops}};
  if (!p.layer_kinds.empty()) {
    nlohmann::json kinds = nlohmann::json::array();
    for (const LayerKindCost& k : p.layer_kinds) {
      kinds.push_back({{"kind", k.kind}, {"count", k.count}, {"ms", k.seconds * 1e3}});
    }
    j["layer_kinds"] = kinds;
  }
  return j;
}

double DivergencePct(double analytical, double event) {
  return analytical > 0 ? 100 * (event - analytical) / analytical : 0;
}

// --compare: per phase and comparison class, and TTFT / TPOT, of both modes.
nlohmann::json CompareJson(const ServeEstimate& a, const ServeEstimate& e) {
  nlohmann::json j;
  for (const auto& [phase, pa, pe] : {std::tuple{"prefill", &a.prefill, &e.prefill},
                                      std::tuple{"decode", &a.decode, &e.decode}}) {
    nlohmann::json rows = nlohmann::json::array();
    for (const ClassDivergence& d : CompareClasses(*pa, *pe)) {
      rows.push_back({{"class", d.op_class},
                      {"analytical_ms", d.analytical_s * 1e3},
                      {"event_ms", d.event_s * 1e3},
                      {"divergence_pct", d.divergence_pct}});
    }
    j[phase] = rows;
  }
  for (const auto& [key, va, ve] :
       {std::tuple{"ttft_ms", a.ttft_s, e.ttft_s}, std::tuple{"tpot_ms", a.tpot_s, e.tpot_s}}) {
    j[key] = {
        {"analytical", va * 1e3}, {"event", ve * 1e3}, {"divergence_pct", DivergencePct(va, ve)}};
  }
  return j;
}

void PrintCompare(const ServeEstimate& a, const ServeEstimate& e) {
  std::printf(
      "compare      analytical vs event, per op class (ms; divergence = event / analytical - 1)\n");
  for (const auto& [phase, pa, pe] : {std::tuple{"prefill", &a.prefill, &e.prefill},
                                      std::tuple{"decode", &a.decode, &e.decode}}) {
    std::printf("  %-8s %-11s %12s %12s %10s\n", phase, "class", "analytical", "event",
                "divergence");
    for (const ClassDivergence& d : CompareClasses(*pa, *pe)) {
      std::printf("  %-8s %-11s %12.4f %12.4f %+9.1f %%\n", "", d.op_class.c_str(),
                  d.analytical_s * 1e3, d.event_s * 1e3, d.divergence_pct);
    }
  }
  std::printf("  TTFT     analytical %.3f ms, event %.3f ms (%+.1f %%)\n", a.ttft_s * 1e3,
              e.ttft_s * 1e3, DivergencePct(a.ttft_s, e.ttft_s));
  std::printf("  TPOT     analytical %.3f ms, event %.3f ms (%+.1f %%)\n", a.tpot_s * 1e3,
              e.tpot_s * 1e3, DivergencePct(a.tpot_s, e.tpot_s));
}

void PrintLayerKinds(const char* phase, const PhaseCost& p) {
  for (const LayerKindCost& k : p.layer_kinds) {
    std::printf("  %-8s %-32s x %3lld  %10.4f ms simulated per layer\n", phase, k.kind.c_str(),
                static_cast<long long>(k.count), k.seconds * 1e3);
  }
}

void PrintServePhase(const char* name, const PhaseCost& p) {
  std::printf("%-13s", name);
  bool first = true;
  for (const ClassCost& c : p.classes) {
    std::printf("%s%s %.3f ms (%.0f %%, %s)", first ? "" : "; ", c.op_class.c_str(),
                c.seconds * 1e3, 100 * c.seconds / p.seconds, c.bound.c_str());
    first = false;
  }
  std::printf("\n");
}

void PrintServeOps(const char* phase, const PhaseCost& p) {
  std::printf("%s ops (one rank, all layers):\n", phase);
  std::printf("  %-24s %-11s %-10s %6s %12s %12s %12s  %s\n", "op", "class", "fidelity", "count",
              "ms", "GFLOP", "HBM MB", "bound");
  for (const OpCost& o : p.ops) {
    std::printf("  %-24s %-11s %-10s %6lld %12.4f %12.3f %12.3f  %s\n", o.name.c_str(),
                o.op_class.c_str(), o.fidelity.c_str(), static_cast<long long>(o.count),
                o.seconds * 1e3, o.flops / 1e9, o.hbm_bytes / 1e6, o.bound.c_str());
  }
}

nlohmann::json ServeEnergyJson(const ServeEnergy& en) {
  if (!en.reported) return {{"reported", false}, {"why_not", en.why_not}};
  return {{"reported", true},
          {"chip_watts", en.chip_watts.value},
          {"chip_watts_tag", std::string(SourceTagName(en.chip_watts.tag))},
          {"chip_watts_source", en.chip_watts.source},
          {"chips", en.chips},
          {"watts", en.watts},
          {"joules_per_token", en.joules_per_token},
          {"tokens_per_s_per_mw", en.tokens_per_s_per_mw}};
}

void PrintServeEnergy(const ServeEnergy& en) {
  if (!en.reported) {
    std::printf("energy       %s\n", en.why_not.c_str());
    return;
  }
  std::printf(
      "energy       %d chips x %.0f W (%s, %s; chips only, hosts excluded) = %.1f kW: "
      "%.4f J per output token, %.0f output tok/s per MW\n",
      en.chips, en.chip_watts.value, std::string(SourceTagName(en.chip_watts.tag)).c_str(),
      en.chip_watts.source.c_str(), en.watts / 1e3, en.joules_per_token, en.tokens_per_s_per_mw);
}

// Writes `text` to `path`; false (with a message) when it cannot.
int RunServe(const ServeArgs& args) {
  StatusOr<ServeMode> mode = ParseServeMode(args.mode);
  if (!mode.ok()) {
    std::cerr << mode.status().ToString() << "\n";
    return 1;
  }
  StatusOr<ModelRunInputs> inputs = LoadModelRunInputs(args.system, args.model, args.weights);
  if (!inputs.ok()) {
    std::cerr << inputs.status().ToString() << "\n";
    return 1;
  }
  const System* system = &inputs->system;
  const Model* model = &inputs->model;
  const WeightFormats* weights = &inputs->weights;
  ServeConfig c = args.config;
  c.weights = *weights;
  c.mode = *mode;
  const auto start = std::chrono::steady_clock::now();
  StatusOr<ServeEstimate> e = EstimateServing(*system, *model, c);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!e.ok()) {
    std::cerr << e.status().ToString() << "\n";
    return 1;
  }
  // --compare: the other mode as well.
  std::optional<ServeEstimate> other;
  if (args.compare) {
    ServeConfig oc = c;
    oc.mode = c.mode == ServeMode::kEvent ? ServeMode::kAnalytical : ServeMode::kEvent;
    StatusOr<ServeEstimate> o = EstimateServing(*system, *model, oc);
    if (!o.ok()) {
      std::cerr << o.status().ToString() << "\n";
      return 1;
    }
    other = *o;
  }
  const ServeEstimate* analytical = nullptr;
  const ServeEstimate* event = nullptr;
  if (other) {
    analytical = c.mode == ServeMode::kEvent ? &*other : &*e;
    event = c.mode == ServeMode::kEvent ? &*e : &*other;
  }
  if (!args.trace.empty() &&
      !WriteFile("--trace", args.trace, ServeTraceJson(*system, *model, *e))) {
    return 1;
  }
  if (!args.html.empty() && !WriteFile("--html", args.html, ServeReportHtml(*system, *model, *e))) {
    return 1;
  }
  const ParameterCount params = CountParameters(*model);
  const ParallelLayout& l = c.layout;
  const MemoryFit& mem = e->memory;
  if (args.json) {
    nlohmann::json j = {
        {"model", model->name},
        {"system", system->name},
        {"mode", std::string(ServeModeName(c.mode))},
        {"wall_s", wall_s},
        {"parameters", params.total},
        {"active_parameters", params.active},
        {"layout",
         {{"tp", l.tp}, {"ep", l.ep}, {"dp", l.dp}, {"pp", l.pp}, {"lnc", l.lnc}, {"sp", l.sp}}},
        {"weights", WeightFormatsName(c.weights)},
        {"batch", c.batch},
        {"input", c.input},
        {"output", c.output},
        {"max_context", c.max_context},
        {"prefill_tokens", PrefillTokens(c)},
        {"decode_context", e->decode_context},
        {"ttft_ms", e->ttft_s * 1e3},
        {"tpot_ms", e->tpot_s * 1e3},
        {"tokens_per_s", e->tokens_per_s},
        {"continuous", nullptr},
        {"hbm_bytes_per_chip", mem.total},
        {"memory",
         {{"weights", mem.weights},
          {"kv_cache", mem.kv_cache},
          {"activations", mem.activations},
          {"workspace", mem.workspace},
          {"capacity", mem.capacity},
          {"ranks_per_chip", mem.ranks_per_chip},
          {"chips", mem.chips}}},
        {"prefill", ServePhaseJson(e->prefill)},
        {"decode", ServePhaseJson(e->decode)},
        {"joules_per_token", nullptr},
        {"tokens_per_s_per_mw", nullptr},
        {"energy", ServeEnergyJson(e->energy)}};
    if (e->energy.reported) {
      j["joules_per_token"] = e->energy.joules_per_token;
      j["tokens_per_s_per_mw"] = e->energy.tokens_per_s_per_mw;
    }
    if (const auto& cb = e->continuous) {
      j["continuous"] = {{"concurrency", cb->concurrency},
                         {"requests", cb->requests},
                         {"ttft_p50_ms", cb->ttft_p50_s * 1e3},
                         {"ttft_mean_ms", cb->ttft_mean_s * 1e3},
                         {"ttft_max_ms", cb->ttft_max_s * 1e3},
                         {"tpot_p50_ms", cb->tpot_p50_s * 1e3},
                         {"tpot_mean_ms", cb->tpot_mean_s * 1e3},
                         {"tokens_per_s", cb->tokens_per_s},
                         {"makespan_s", cb->makespan_s},
                         {"prefill_passes", cb->prefill_passes},
                         {"decode_steps", cb->decode_steps},
                         {"mean_prefill_batch", cb->mean_prefill_batch},
                         {"mean_decode_batch", cb->mean_decode_batch}};
    }
    if (other) j["compare"] = CompareJson(*analytical, *event);
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  const double gib = 1024.0 * 1024.0 * 1024.0;
  std::printf("model        %s (%s, %.2f B parameters, %.2f B active)\n", model->name.c_str(),
              std::string(ModelFamilyName(model->family)).c_str(), params.total / 1e9,
              params.active / 1e9);
  std::printf(
      "layout       %s: tp %d x ep %d x pp %d x dp %d at LNC %d = %lld ranks on %d chip(s)%s\n",
      system->name.c_str(), l.tp, l.ep, l.pp, l.dp, l.lnc,
      static_cast<long long>(int64_t{l.tp} * l.pp * l.dp), mem.chips,
      l.sp ? "; sequence-parallel prefill" : "");
  std::printf("weights      %s\n", WeightFormatsName(c.weights).c_str());
  if (c.mode == ServeMode::kEvent) {
    std::printf(
        "mode         event: each distinct layer kind lowered and simulated once on one rank "
        "(ranks of a stage symmetric; %d data-parallel replica(s) identical, one simulated); "
        "norms, embedding, RoPE, SwiGLU, MoE combine, sampling analytical; %.3f s wall\n",
        l.dp, wall_s);
  } else {
    std::printf("mode         analytical (%.3f s wall)\n", wall_s);
  }
  std::printf(
      "workload     batch %lld per replica, input %lld, output %lld (decode at mean "
      "context %lld)\n",
      static_cast<long long>(c.batch), static_cast<long long>(c.input),
      static_cast<long long>(c.output), static_cast<long long>(e->decode_context));
  if (c.max_context > 0) {
    std::printf(
        "buckets      prompt padded to %lld tokens (context-encoding bucket of max context "
        "%lld); KV cache for %lld tokens per sequence\n",
        static_cast<long long>(PrefillTokens(c)), static_cast<long long>(c.max_context),
        static_cast<long long>(c.max_context));
  }
  std::printf(
      "HBM per chip %.2f GiB of %.2f GiB: weights %.2f, KV cache %.2f, activations %.2f, "
      "workspace %.2f GiB (%d ranks)\n",
      mem.total / gib, mem.capacity / gib, mem.weights / gib, mem.kv_cache / gib,
      mem.activations / gib, mem.workspace / gib, mem.ranks_per_chip);
  if (const auto& cb = e->continuous) {
    std::printf(
        "continuous   %lld client(s) per replica in a closed loop, at most %lld running; %lld "
        "requests: %lld prefill passes (mean %.2f prompts), %lld decode steps (mean batch %.2f), "
        "%.3f s\n",
        static_cast<long long>(cb->concurrency), static_cast<long long>(c.batch),
        static_cast<long long>(cb->requests), static_cast<long long>(cb->prefill_passes),
        cb->mean_prefill_batch, static_cast<long long>(cb->decode_steps), cb->mean_decode_batch,
        cb->makespan_s);
    std::printf("TTFT         %.3f ms (p50; mean %.3f, max %.3f)\n", e->ttft_s * 1e3,
                cb->ttft_mean_s * 1e3, cb->ttft_max_s * 1e3);
    std::printf("TPOT         %.3f ms (p50; mean %.3f)\n", e->tpot_s * 1e3, cb->tpot_mean_s * 1e3);
    std::printf("throughput   %.1f tok/s (%d replica(s) x %lld client(s))\n", e->tokens_per_s, l.dp,
                static_cast<long long>(cb->concurrency));
  } else {
    std::printf("TTFT         %.3f ms\n", e->ttft_s * 1e3);
    std::printf("TPOT         %.3f ms\n", e->tpot_s * 1e3);
    std::printf("throughput   %.1f tok/s (%d replica(s) x batch %lld)\n", e->tokens_per_s, l.dp,
                static_cast<long long>(c.batch));
  }
  PrintServePhase("prefill", e->prefill);
  PrintServePhase("decode", e->decode);
  const ClassCost& top = e->decode.classes.front();
  std::printf("bottleneck   decode: %s (%s), %.0f %% of TPOT\n", top.op_class.c_str(),
              top.bound.c_str(), 100 * top.seconds / e->decode.seconds);
  PrintServeEnergy(e->energy);
  if (c.mode == ServeMode::kEvent) {
    std::printf("layer kinds\n");
    PrintLayerKinds("prefill", e->prefill);
    PrintLayerKinds("decode", e->decode);
  }
  if (other) PrintCompare(*analytical, *event);
  for (const auto& [what, path] :
       {std::pair{"report", args.html}, std::pair{"trace", args.trace}}) {
    if (!path.empty()) std::printf("%-12s %s\n", what, path.c_str());
  }
  if (args.ops) {
    PrintServeOps("prefill", e->prefill);
    PrintServeOps("decode", e->decode);
  }
  return 0;
}

}  // namespace

nlohmann::json OpCostJson(const OpCost& op) {
  return {{"name", op.name},        {"class", op.op_class}, {"count", op.count},
          {"ms", op.seconds * 1e3}, {"flops", op.flops},    {"hbm_bytes", op.hbm_bytes},
          {"bound", op.bound}};
}

StatusOr<ModelRunInputs> LoadModelRunInputs(const std::string& system, const std::string& model,
                                            const std::string& weights) {
  StatusOr<System> s = LoadSystem(system);
  if (!s.ok()) return s.status();
  StatusOr<Model> m = LoadModel(model);
  if (!m.ok()) return m.status();
  StatusOr<WeightFormats> w = ParseWeightFormats(weights);
  if (!w.ok()) return w.status();
  return ModelRunInputs{*std::move(s), *std::move(m), *w};
}

void AddServeCommand(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "A model served on a system: memory fit, TTFT, TPOT and throughput (analytical or event)");
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
  cmd->add_flag("--sp", args->config.layout.sp,
                "sequence parallelism in prefill (hidden state split by token over --tp)");
  cmd->add_option("--weights", args->weights,
                  "bf16|fp8|mxfp8|mxfp4, or per group: attn=bf16,experts=mxfp4 (groups attn, "
                  "mlp, experts, embed)")
      ->capture_default_str();
  cmd->add_option("--batch", args->config.batch, "sequences per replica")->capture_default_str();
  cmd->add_option("--input", args->config.input, "prompt tokens")->capture_default_str();
  cmd->add_option("--output", args->config.output, "generated tokens")->capture_default_str();
  cmd->add_option("--concurrency", args->config.concurrency,
                  "continuous batching: clients per replica in a closed loop (0: a static batch); "
                  "--batch is then the most sequences running at once")
      ->capture_default_str();
  cmd->add_option("--requests", args->config.requests,
                  "with --concurrency: requests to complete per replica (0: max(50, 4 x "
                  "concurrency))")
      ->capture_default_str();
  cmd->add_option("--max-context", args->config.max_context,
                  "context the runtime is compiled for (0: none); prefill pads the prompt to its "
                  "power-of-two bucket, the KV cache holds max-context tokens")
      ->capture_default_str();
  cmd->add_option("--mode", args->mode,
                  "analytical (per-op rooflines) or event (lowered ops simulated per layer kind)")
      ->capture_default_str();
  cmd->add_flag("--compare", args->compare,
                "also run the other mode and print both per op class, with divergence %");
  cmd->add_flag("--json", args->json, "one JSON object instead of text");
  cmd->add_flag("--ops", args->ops, "also print every op of both phases");
  cmd->add_option("--trace", args->trace,
                  "write a Chrome/Perfetto trace (JSON) of both phases to this file");
  cmd->add_option("--html", args->html,
                  "write a self-contained HTML report (summary, charts) to this file");
  cmd->callback([args, &exit_code]() { exit_code = RunServe(*args); });
}

}  // namespace trnmx::emu::cli
