// One training step of a model (trnmx/emu/model.h) on a system
// (trnmx/emu/system.h), analytical: the forward pass costed by serve's per-op
// rules (serve.h "Analytical timing": the same ops, rooflines and simulated
// collectives), the backward pass from it, the optimizer, the data-parallel
// gradient collectives and the pipeline bubble; memory per chip with the
// optimizer state and the activations; MFU and energy (docs/models.md,
// "Training").
//
// Layout as serve's (serve.h "Layout"; --tp counts logical cores): a replica
// is tp x pp ranks, dp replicas each take `batch` sequences of `seq` tokens
// per step, split into `microbatches` of batch / microbatches sequences.
// Sequence parallelism is not modelled for training (ParallelLayout::sp is
// refused).
//
// Step (one rank; the ranks of a stage are symmetric):
//   forward   one microbatch through every layer (serve's prefill pass, with
//             every position's logits and a cross-entropy loss instead of
//             sampling: internal CostPass with training = true)
//   backward  no backward lowering exists: each GEMM, attention and
//             elementwise op of the forward costs 2x its forward FLOPs and
//             2x its HBM bytes (so 2x its forward time); each tensor-parallel
//             collective runs once more (the conjugate collective of the
//             backward, the same bytes), and so does the runtime overhead
//             (system.h RuntimeOverheads: one more pass)
//   pipeline  (microbatches + pp - 1) x (forward + backward) / pp: stages
//             hold equal shares of the pass, so the bubble fraction is
//             (pp - 1) / (microbatches + pp - 1); pp = 1 is gradient
//             accumulation over the microbatches
//   gradients dp > 1: with ZeRO-1 (zero1, the default) a reduce-scatter of
//             the rank's BF16 gradients over its dp replicas, the optimizer
//             on 1 / dp of them, and an all-gather of the updated BF16
//             weights; without, one all-reduce of the gradients. Lowered and
//             simulated like serve's collectives, with the dp ranks of a
//             group placed as the layout puts them (one per chip when a
//             replica fills whole chips); the other ranks' groups on the same
//             chips run at the same time, modelled as one group moving their
//             bytes together. Not overlapped with the backward.
//   optimizer AdamW, HBM-bound: per parameter of the shard it reads the BF16
//             gradient, the FP32 master weight and both FP32 moments and
//             writes those three and the BF16 weight (28 bytes)
//   step      pipeline + gradients + optimizer
// tokens/s = dp x batch x seq / step. MFU = model FLOPs / step / peak, with
// model FLOPs = 6 x active parameters (model.h ParameterCount::active) x
// tokens + 3 x the forward attention FLOPs (2 (d_qk + d_v) per causal query-
// key pair and head, window layers attend their window), and peak = ranks x
// lnc x CorePeakFlops(chip, dtype) at the matmul dtype of the MLP weights
// (experts' on an MoE model; BF16 by default): the chips' dense peak.
//
// Memory per rank (the fullest stage; x ranks per chip): weights at their
// format; BF16 gradients (2 bytes per parameter); FP32 master weights and
// two FP32 moments (12 bytes per parameter, / dp under ZeRO-1);
// activations kept for the backward with no recompute:
//   layers per stage x min(microbatches, pp) in flight x b x seq x hidden x
//   (10 + 24 / tp) bytes   (Korthikanti et al. 2022, "Reducing activation
//   recomputation", Table 2 without sequence parallelism, less the 5 a s / h
//   term of the attention scores a fused attention kernel does not keep)
//   + b x seq x vocab / tp x 4 (the FP32 logits of the loss)
// where b = batch / microbatches. RESOURCE_EXHAUSTED names the smallest set
// of parts that overflows on its own and by how much.
//
//   System sys = LoadSystem("trn2-server").value();
//   Model m = LoadModel("llama-3.1-8b").value();
//   TrainConfig c;
//   c.layout = {.tp = 8, .dp = 8};
//   c.batch = 8; c.seq = 4096; c.microbatches = 8;
//   TrainEstimate e = EstimateTraining(sys, m, c).value();
//   // e.step_s, e.tokens_per_s, e.mfu, e.memory.total, e.energy.joules_per_token
//
// Errors (INVALID_ARGUMENT, naming the option): serve's layout errors
// (serve.h CheckLayout); --batch or --seq < 1; --microbatches < 1 or not
// dividing --batch; sequence parallelism.
#ifndef TRNMX_EMU_TRAIN_H_
#define TRNMX_EMU_TRAIN_H_

#include <cstdint>
#include <vector>

#include "trnmx/emu/machine.h"
#include "trnmx/emu/model.h"
#include "trnmx/emu/serve.h"
#include "trnmx/emu/system.h"
#include "trnmx/status.h"

namespace trnmx::emu {

struct TrainConfig {
  ParallelLayout layout;  // sp must be false
  WeightFormats weights;  // the formats the GEMMs read their weights in
  int64_t batch = 8;      // sequences per data-parallel replica per step
  int64_t seq = 2048;     // tokens per sequence
  int64_t microbatches = 1;
  bool zero1 = true;  // optimizer state sharded over dp (ZeRO stage 1)
};

// Bytes per chip (the fullest chip; Memory per rank above x ranks per chip).
struct TrainMemory {
  int ranks_per_chip = 0, chips = 0;
  double parameters_per_rank = 0;  // of the fullest stage
  double weights = 0, gradients = 0, optimizer = 0, activations = 0;
  double total = 0, capacity = 0;
};

struct TrainEstimate {
  TrainConfig config;
  TrainMemory memory;
  PhaseCost forward;             // one microbatch, one rank, all layers
  std::vector<OpCost> backward;  // the forward's ops, costed as above
  double forward_s = 0, backward_s = 0;
  double pipeline_s = 0, bubble_fraction = 0;
  std::vector<OpCost> gradient_sync;  // empty when dp = 1
  double gradient_sync_s = 0;
  OpCost optimizer;
  double step_s = 0;
  double tokens_per_step = 0, tokens_per_s = 0;
  double model_flops = 0;      // per step, all replicas: 6 N tokens + attention
  double attention_flops = 0;  // its attention part
  MatmulDtype peak_dtype = MatmulDtype::kBf16;
  double peak_flops = 0;  // of the ranks used
  double mfu = 0;
  ServeEnergy energy;  // joules per trained token
};

// Validates, then the bytes per chip; RESOURCE_EXHAUSTED when they do not fit.
StatusOr<TrainMemory> FitTrainingMemory(const System& system, const Model& model,
                                        const TrainConfig& config);
StatusOr<TrainEstimate> EstimateTraining(const System& system, const Model& model,
                                         const TrainConfig& config);

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_TRAIN_H_
