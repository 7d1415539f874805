// Serving a model (trnmx/emu/model.h) on a system (trnmx/emu/system.h): the
// parallel layout, whether it fits in HBM, and the analytical estimate of
// prefill (TTFT) and decode (TPOT) from per-op rooflines (docs/models.md has
// every formula and what is not modelled).
//
// Layout. Ranks are logical NeuronCores of `lnc` physical cores (LNC = 2 by
// default, as on Neuron): --tp counts them as Neuron does, so TP = 64 at
// LNC = 2 is a whole trn2-server (16 chips x 4). A replica is tp x pp ranks:
// pp pipeline stages of consecutive layers, each tensor-parallel over tp
// ranks; dp replicas serve independent requests. Ranks fill chips in order
// (cores / lnc per chip). Attention is split by heads (KV heads replicated
// when tp exceeds them; MLA's latent cache replicated on every rank), the
// dense MLP and the experts by their intermediate dimension, the embedding
// and LM head by vocabulary, each followed by a tensor-parallel all-reduce of
// the hidden state. With ep = tp > 1, each rank holds experts / ep whole
// experts instead: the tokens are split over the ranks, dispatched to their
// experts' ranks and combined back by two all-to-alls, then all-gathered
// (kept split under sequence parallelism). With sp, a prefill keeps the
// hidden state split by token between blocks (ParallelLayout::sp).
//
// Analytical timing (one rank; ranks of a stage are symmetric): every op is a
// roofline max(FLOPs / peak, HBM bytes / HBM bandwidth) with the rank's peak
// = lnc x CorePeakFlops(chip, dtype) and bandwidth = lnc x the chip's
// sustained HBM bandwidth / cores (cost.h HbmStackBandwidth: a rank at
// LNC = 2 has one stack). GEMM dtype: the weights' (MX on a chip without MX
// matmuls runs at the BF16 rate from MX bytes). Collectives are lowered and
// simulated once per distinct (op, bytes) (collective.h), with the
// algorithm PlanCollective chooses. MoE routing is the uniform expectation:
// every expert gets T x top_k / experts tokens, and a step reads the weights
// of experts x (1 - (1 - top_k / experts)^T) experts. Runtime overheads
// (system.h RuntimeOverheads, fitted by `trnmx-emu calibrate`, validate.h):
// every pass adds layers x layer_ns + pass_ns (+ prefill_ns for a prefill) as
// one op "runtime overhead" (class "overhead", bound "runtime", on no engine
// or link; --compare counts it in "other"), the same in both modes; none at 0.
//
//   System sys = LoadSystem("trn3-ultraserver-gen2").value();
//   Model m = LoadModel("gpt-oss-120b").value();
//   ServeConfig c;
//   c.layout = {.tp = 16, .dp = 36};
//   c.weights = ParseWeightFormats("attn=bf16,experts=mxfp4").value();
//   c.batch = 64; c.input = 2048; c.output = 128;
//   ServeEstimate e = EstimateServing(sys, m, c).value();
//   // e.ttft_s, e.tpot_s, e.tokens_per_s, e.memory.total,
//   // e.energy.joules_per_token, e.energy.tokens_per_s_per_mw
//
// Event mode (ServeConfig::mode = ServeMode::kEvent; docs/models.md "Two
// fidelities"): the same pass over the same ops, but the ops that have a
// lowering are lowered onto one rank (`lnc` cores of one chip) and run
// through the discrete-event simulator (simulator.h) instead of the
// roofline:
//   GEMMs      (QKV, O, MLP, router, shared experts, LM head) gemm.h at the
//              rank's tensor-parallel shape, in the weights' matmul dtype;
//   attention  attention.h with the rank's query heads and KV heads (a KV
//              head replicated over ranks counts as one per rank; the
//              lowering is one chip's, and a rank's heads are on its chip),
//              causal, the layer's window, BF16; a decode step of a window
//              layer as its one query over the window's last keys (the same
//              pairs; it keeps the LNC pair's split of the keys); MLA keeps
//              its roofline (its Q-K and V head dims differ and the lowering
//              takes one D);
//   experts    moe.h SimulateExpertGemms on the rank's cores: for every
//              expert the uniform routing reaches (round(experts held x the
//              hit fraction above)), gate/up then down GEMMs of ceil(
//              assignments / experts reached) tokens, chained as in moe.h.
//              SimulateMoe itself is not called: its EP rank is a whole
//              chip with all its cores and whole experts, while a serve rank
//              is a logical core holding 1 / tp of each expert (ep = 1) or
//              experts / ep whole ones; dispatch and combine are the
//              all-to-alls below;
//   collectives are simulated in both modes (as above).
// MX GEMMs pad a rank's share of K to whole 32-element blocks (gpt-oss-
// 120b's expert 2880 / 16 = 180 runs as 192), as MX weights are stored.
// Embedding, norms, residuals, RoPE, SwiGLU, the MoE combine and sampling
// have no lowering: they keep their roofline (OpCost::fidelity
// "analytical"). The ops of a layer run in series, as in the analytical
// mode. Each distinct (op, shape) is simulated once, so a phase simulates
// one instance of each distinct layer kind (full or window attention, dense
// or MoE: PhaseCost::layer_kinds) and multiplies it by its count; the
// tensor-parallel ranks of a stage are symmetric (one rank simulated) and
// data-parallel replicas identical (one simulated). So, for a phase,
//   seconds = sum over kinds (count x seconds) + the analytical ops
//             (pipeline sends included: a closed form) + the simulated
//             ops outside the layers (embedding all-reduce, LM head,
//             sampling all-gather).
//
//   c.mode = ServeMode::kEvent;
//   ServeEstimate ev = EstimateServing(sys, m, c).value();
//   std::vector<ClassDivergence> d = CompareClasses(analytical.decode, ev.decode);
//
// Energy (chips only: hosts, switches, NICs and cooling are excluded). With
// P = the chip's power_watts from the machine description (machine.h;
// trainium.md #18: Trn2 500 W, Trn3 1,000 W, third-party, tag P3) and N the
// chips holding ranks (MemoryFit::chips), each drawing P for the whole run:
//   watts               = N x P
//   joules per token    = watts / tokens_per_s          (output tokens)
//   tokens/s per MW     = tokens_per_s / (watts / 1e6) = 1e6 / joules per token
// A description without power_watts gives no energy (ServeEnergy::why_not).
//
// Errors (INVALID_ARGUMENT, naming the option): tp, ep, dp, pp < 1; lnc
// other than 1 or 2 or not dividing the chip's cores; tp x pp x dp above the
// system's logical cores; heads (or KV heads) not divisible by tp; ep other
// than 1 or tp, not dividing the experts, or on a dense model; pp above the
// layers; batch, input or output < 1. RESOURCE_EXHAUSTED when a chip's HBM
// does not hold its share, naming the parts and by how much it overflows.
#ifndef TRNMX_EMU_SERVE_H_
#define TRNMX_EMU_SERVE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trnmx/emu/machine.h"
#include "trnmx/emu/model.h"
#include "trnmx/emu/system.h"
#include "trnmx/status.h"

namespace trnmx::emu {

enum class WeightDtype { kBf16, kFp8, kMxfp8, kMxfp4 };
std::string_view WeightDtypeName(WeightDtype d);  // "bf16", "fp8", "mxfp8", "mxfp4"
StatusOr<WeightDtype> ParseWeightDtype(std::string_view name);
// Bytes per weight in HBM: 2, 1, 1 + 1/32, 1/2 + 1/32 (MX: one E8M0 scale per 32).
double WeightBytes(WeightDtype d);
// The matmul a weight of `d` runs as on `chip`: MX where the chip has MX
// matmuls, else BF16 (dequantized, as Neuron does on Trainium2); FP8 as FP8.
MatmulDtype WeightMatmulDtype(const Machine& chip, WeightDtype d);

// Weight formats per group: attention projections, dense MLPs and shared
// experts, routed experts, embedding and LM head. Routers and norms stay BF16.
struct WeightFormats {
  WeightDtype attention = WeightDtype::kBf16;
  WeightDtype mlp = WeightDtype::kBf16;
  WeightDtype experts = WeightDtype::kBf16;
  WeightDtype embedding = WeightDtype::kBf16;
};
// "mxfp4" (every group), or groups "attn=bf16,experts=mxfp4" (groups attn,
// mlp, experts, embed; the others BF16). The error names the bad item.
StatusOr<WeightFormats> ParseWeightFormats(std::string_view spec);
std::string WeightFormatsName(
    const WeightFormats& w);  // "attn=bf16 mlp=bf16 experts=mxfp4 embed=bf16"

struct ParallelLayout {
  int tp = 1, ep = 1, dp = 1, pp = 1;
  int lnc = 2;
  // Sequence parallelism in prefill (Neuron applies it to context encoding):
  // the hidden state between blocks split by token over the tp ranks (norms
  // and residuals on 1 / tp of the tokens), each block's input all-gathered
  // and its output reduce-scattered instead of all-reduced.
  bool sp = false;
};

// The fidelity of the timing (above).
enum class ServeMode { kAnalytical, kEvent };
std::string_view ServeModeName(ServeMode m);  // "analytical", "event"
// The error names --mode and the modes.
StatusOr<ServeMode> ParseServeMode(std::string_view name);

struct ServeConfig {
  ServeMode mode = ServeMode::kAnalytical;
  ParallelLayout layout;
  WeightFormats weights;
  int64_t batch = 1;     // sequences per replica, prefilled together and decoded together
  int64_t input = 128;   // prompt tokens per sequence
  int64_t output = 128;  // generated tokens per sequence
  // The context the runtime was compiled for (vLLM's max_model_len, NxD
  // Inference's max_context_length); 0: none. When set, prefill runs each
  // prompt padded to its context-encoding bucket (PrefillTokens) and the KV
  // cache is allocated for max_context tokens per sequence, as the Neuron
  // runtime's fixed-shape graphs do; at least input + output.
  int64_t max_context = 0;
  // Continuous batching (ContinuousBatching below): clients per replica in
  // a closed loop; 0: a static batch (all `batch` sequences prefilled
  // together, then decoded together). With it, `batch` is the most
  // sequences a replica runs at once (vLLM's max-num-seqs).
  int64_t concurrency = 0;
  // Requests to complete per replica under continuous batching; 0: the
  // larger of 50 and 4 x concurrency.
  int64_t requests = 0;
};

// Tokens per sequence that prefill computes: `input` when max_context is 0;
// else the smallest of the buckets 128, 256, 512, ... (powers of two) and
// max_context (the last bucket) that holds the prompt. The Neuron runtime
// compiles one prefill graph per bucket and pads the prompt to it
// ("num_batched_tokens_buckets: power-of-2 token counts from 128 up to the
// maximum", vLLM Neuron's configuration guide; NxD Inference's
// context-encoding buckets likewise end at max_context_length).
// Example: input 10000, max_context 12288 -> 12288; input 512 -> 512.
int64_t PrefillTokens(const ServeConfig& config);

// Bytes per chip (the fullest chip: the pipeline stage with the most
// weights, all its ranks on the chip).
struct MemoryFit {
  int ranks_per_chip = 0;  // ranks on the fullest chip
  int chips = 0;           // chips holding ranks
  double weights = 0, kv_cache = 0, activations = 0, workspace = 0;
  double total = 0, capacity = 0;
};

// One op of a phase, over all the layers it runs in (seconds, FLOPs and bytes
// of one rank).
struct OpCost {
  std::string name;      // "qkv", "attention", "experts", "all-reduce", ...
  std::string op_class;  // "gemm", "attention", "elementwise", "collective", "overhead"
  int64_t count = 0;     // times per pass
  double seconds = 0;
  double flops = 0, hbm_bytes = 0;
  std::string bound;  // "compute", "HBM", or the collective's limiting resource
  // A collective or send whose ranks are on more than one chip: it moves over
  // the system's links (else it is DMA through the chip's HBM).
  bool crosses_chips = false;
  // "event": simulated (event mode's lowered ops, and collectives in both
  // modes); "analytical": the roofline.
  std::string fidelity = "analytical";
};
// One run of an op in one layer, in the order the pass runs them (one rank;
// the analytical mode adds ops up in series, so start_s is the sum of the
// spans before it). layer -1: before the first layer (embedding); layer =
// the model's layers: after the last (pipeline hand-offs, final norm, LM
// head, sampling).
struct OpSpan {
  int op = 0;  // index into PhaseCost::ops
  int64_t layer = -1;
  double start_s = 0, seconds = 0;
  // The roofline's terms: FLOPs / peak and HBM bytes / bandwidth (0 for
  // collectives); seconds is their maximum.
  double compute_s = 0, memory_s = 0;
};
struct ClassCost {
  std::string op_class;
  double seconds = 0;
  std::string bound;  // of the op that takes most of the class's time
};
// One distinct kind of layer of a pass in event mode: its simulated ops
// (those with fidelity "event") in one instance, and how many layers are of
// the kind.
struct LayerKindCost {
  std::string kind;  // "full attention, dense MLP", "sliding window 128, MoE", ...
  int64_t count = 0;
  double seconds = 0;  // simulated ops of one layer of the kind
};
struct PhaseCost {
  double seconds = 0;
  std::vector<OpCost> ops;
  std::vector<ClassCost> classes;          // largest first
  std::vector<OpSpan> timeline;            // every op of every layer, in order
  std::vector<LayerKindCost> layer_kinds;  // event mode only, in order of first layer
};

// The comparison classes of --compare: "gemm" (dense projections and the LM
// head), "attention", "collective" (tensor-parallel collectives, sends,
// sampling), "moe" (router, experts, shared experts, MoE combine and the
// expert-parallel all-to-alls), "other" (embedding, norms, residuals,
// RoPE, SwiGLU, the runtime overhead).
std::string_view CompareClassOf(const OpCost& op);
struct ClassDivergence {
  std::string op_class;
  double analytical_s = 0, event_s = 0;
  double divergence_pct = 0;  // 100 (event - analytical) / analytical; 0 when both are 0
};
// Every comparison class, in the order above, of two estimates of one phase.
std::vector<ClassDivergence> CompareClasses(const PhaseCost& analytical, const PhaseCost& event);

// Energy of the estimate (formulas above).
struct ServeEnergy {
  bool reported = false;
  std::string why_not;  // when not reported: what the description lacks
  Sourced chip_watts;   // the chip's power_watts with its tag and source
  int chips = 0;        // chips holding ranks
  double watts = 0, joules_per_token = 0, tokens_per_s_per_mw = 0;
};

// Continuous batching (ServeConfig::concurrency > 0), one replica: C =
// concurrency clients in a closed loop, all sending their first request at
// t = 0 and each sending its next one (input tokens in, output out) the
// moment its last one completes, until `requests` have been sent. The
// scheduler runs one pass at a time, as vLLM does on Neuron without chunked
// prefill: while requests wait and fewer than `batch` sequences run, it
// prefills min(waiting, free slots) of them together, oldest first (the
// pass that also yields their first token); otherwise one decode step of
// every running sequence, which ends those with `output` tokens. A prefill
// of k prompts costs serve's prefill pass at batch k (PrefillTokens each), a
// decode step of n sequences serve's decode pass at batch n at the mean
// decode context; each is costed once per k or n in the estimate's mode.
//   TTFT of a request = end of its prefill - its arrival;
//   TPOT = (its completion - its first token) / (output - 1) (0 if output 1);
//   tokens_per_s = dp x requests x output / the time the last one completes.
// p50 is the lower median (the ceil(n / 2)-th smallest).
struct ContinuousBatching {
  int64_t concurrency = 0, requests = 0;
  double ttft_p50_s = 0, ttft_mean_s = 0, ttft_max_s = 0;
  double tpot_p50_s = 0, tpot_mean_s = 0;
  double tokens_per_s = 0;  // all replicas
  double makespan_s = 0;    // one replica, until the last completion
  int64_t prefill_passes = 0, decode_steps = 0;
  double mean_prefill_batch = 0, mean_decode_batch = 0;
};

struct ServeEstimate {
  ServeConfig config;  // config.mode: the fidelity it was timed at
  MemoryFit memory;
  int64_t decode_context = 0;  // tokens in context at the mean decode step: input + output / 2
  // The passes at the full batch (prefill of `batch` prompts, a decode step
  // of `batch` sequences): the report's charts and the static estimate.
  PhaseCost prefill, decode;
  // Static batch: the two passes' times, and dp x batch x output / (TTFT +
  // (output - 1) x TPOT). With concurrency: the continuous-batching p50s and
  // its throughput.
  double ttft_s = 0, tpot_s = 0;
  double tokens_per_s = 0;  // all replicas
  std::optional<ContinuousBatching> continuous;
  ServeEnergy energy;
};

// Validates the layout against the model and system (errors above).
Status CheckLayout(const System& system, const Model& model, const ServeConfig& config);
// CheckLayout, then the bytes per chip; RESOURCE_EXHAUSTED when they do not fit.
StatusOr<MemoryFit> FitMemory(const System& system, const Model& model, const ServeConfig& config);
StatusOr<ServeEstimate> EstimateServing(const System& system, const Model& model,
                                        const ServeConfig& config);

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_SERVE_H_
