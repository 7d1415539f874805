// One analytical training step (trnmx/emu/train.h; formulas in
// docs/models.md, "Training"), built on serve's per-op cost rules.
#include "trnmx/emu/train.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "model/serve_internal.h"

namespace trnmx::emu {
namespace {

constexpr double kGradBytes = 2;        // BF16 gradients
constexpr double kOptimizerBytes = 12;  // FP32 master weight, first and second moments
// AdamW per parameter: read gradient (2), master, m, v (12); write master,
// m, v (12) and the BF16 weight (2).
constexpr double kAdamBytes = 28;

using internal::CeilDiv;

// The serve configuration of one microbatch's forward pass.
ServeConfig MicrobatchConfig(const TrainConfig& c) {
  ServeConfig s;
  s.layout = c.layout;
  s.weights = c.weights;
  s.batch = c.microbatches > 0 ? c.batch / c.microbatches : c.batch;
  s.input = c.seq;
  s.output = 1;
  return s;
}

Status CheckTraining(const System& sys, const Model& m, const TrainConfig& c) {
  if (c.layout.sp) {
    return InvalidArgumentError("--sp: sequence parallelism is not modelled for training");
  }
  constexpr int64_t kMaxTokens = int64_t{1} << 31;
  for (auto [name, v] : {std::pair{"--batch", c.batch}, std::pair{"--seq", c.seq}}) {
    if (v < 1 || v > kMaxTokens) {
      return InvalidArgumentError(std::string(name) + " = " + std::to_string(v) +
                                  " outside [1, 2^31]");
    }
  }
  if (c.microbatches < 1 || c.batch % c.microbatches != 0) {
    return InvalidArgumentError("--microbatches " + std::to_string(c.microbatches) +
                                ": must be >= 1 and divide --batch " + std::to_string(c.batch));
  }
  return CheckLayout(sys, m, MicrobatchConfig(c));
}

}  // namespace

StatusOr<TrainMemory> FitTrainingMemory(const System& sys, const Model& m, const TrainConfig& c) {
  if (Status s = CheckTraining(sys, m, c); !s.ok()) return s;
  const ParallelLayout& l = c.layout;
  const ServeConfig mb = MicrobatchConfig(c);
  ServeConfig bf16 = mb;
  bf16.weights = WeightFormats{};
  const double params = internal::StageWeightBytes(m, bf16) / 2;
  const double b = static_cast<double>(mb.batch), s = static_cast<double>(c.seq);
  const double h = static_cast<double>(m.hidden);
  const double layers = static_cast<double>(CeilDiv(m.layers, l.pp));
  const double in_flight = static_cast<double>(std::min<int64_t>(c.microbatches, l.pp));
  const double vocab = static_cast<double>(CeilDiv(m.vocab, l.tp));

  const int rpc = sys.chip.core_count() / l.lnc;
  const int64_t ranks = int64_t{l.tp} * l.pp * l.dp;
  TrainMemory f;
  f.ranks_per_chip = static_cast<int>(std::min<int64_t>(rpc, ranks));
  f.chips = static_cast<int>(CeilDiv(ranks, rpc));
  f.parameters_per_rank = params;
  const double n = f.ranks_per_chip;
  f.weights = n * internal::StageWeightBytes(m, mb);
  f.gradients = n * params * kGradBytes;
  f.optimizer = n * params * kOptimizerBytes / (c.zero1 ? l.dp : 1);
  f.activations = n * (layers * in_flight * b * s * h * (10 + 24.0 / l.tp) + b * s * vocab * 4);
  f.total = f.weights + f.gradients + f.optimizer + f.activations;
  f.capacity = sys.chip.hbm.capacity_bytes.value;
  if (f.total > f.capacity) {
    // The smallest leading set of parts that overflows on its own.
    std::string what = "weights, gradients, optimizer state and activations";
    double need = f.total;
    if (f.weights > f.capacity) {
      what = "the weights alone";
      need = f.weights;
    } else if (f.weights + f.gradients > f.capacity) {
      what = "the weights and gradients";
      need = f.weights + f.gradients;
    } else if (f.weights + f.gradients + f.optimizer > f.capacity) {
      what = "the weights, gradients and optimizer state";
      need = f.weights + f.gradients + f.optimizer;
    }
    return ResourceExhaustedError(
        m.name + " does not fit on " + sys.name + " for training: per chip, " + what + " (" +
        internal::FormatGib(need) + ") exceed the " + internal::FormatGib(f.capacity) +
        " of HBM by " + internal::FormatGib(need - f.capacity) + " (weights " +
        internal::FormatGib(f.weights) + ", gradients " + internal::FormatGib(f.gradients) +
        ", optimizer " + internal::FormatGib(f.optimizer) +
        (c.zero1 ? " with ZeRO-1 over dp " + std::to_string(l.dp) : "") + ", activations " +
        internal::FormatGib(f.activations) + "; " + std::to_string(f.ranks_per_chip) +
        " ranks per chip; raise --tp, --pp or --dp, or lower --batch or --seq, or raise "
        "--microbatches)");
  }
  return f;
}

StatusOr<TrainEstimate> EstimateTraining(const System& sys, const Model& m, const TrainConfig& c) {
  StatusOr<TrainMemory> fit = FitTrainingMemory(sys, m, c);
  if (!fit.ok()) return fit.status();
  const ParallelLayout& l = c.layout;
  const ServeConfig mb = MicrobatchConfig(c);
  TrainEstimate e;
  e.config = c;
  e.memory = *fit;

  StatusOr<PhaseCost> fwd = internal::CostPass(sys, m, mb, 0, c.seq, /*training=*/true);
  if (!fwd.ok()) return fwd.status();
  e.forward = *std::move(fwd);
  e.forward_s = e.forward.seconds;
  double attention_fwd = 0;  // one rank, one microbatch
  for (const OpCost& op : e.forward.ops) {
    OpCost back = op;
    // The backward is one more pass: its collectives and its runtime
    // overhead (System::runtime) are paid once more, not 2x.
    if (op.op_class != "collective" && op.op_class != "overhead") {
      back.seconds *= 2;
      back.flops *= 2;
      back.hbm_bytes *= 2;
    }
    if (op.op_class == "attention") attention_fwd += op.flops;
    e.backward_s += back.seconds;
    e.backward.push_back(std::move(back));
  }
  const double stages_time = e.forward_s + e.backward_s;
  const double mbs = static_cast<double>(c.microbatches);
  e.pipeline_s = (mbs + l.pp - 1) * stages_time / l.pp;
  e.bubble_fraction = (l.pp - 1) / (mbs + l.pp - 1);

  // Data-parallel gradient collectives: the dp ranks of a group sit
  // rpc / (tp x pp) to a chip (at least one), and the groups of a chip's
  // other ranks move their bytes over the same links at the same time.
  const double params = e.memory.parameters_per_rank;
  if (l.dp > 1) {
    const int rpc = sys.chip.core_count() / l.lnc;
    const int replica = l.tp * l.pp;
    const int dp_per_chip = std::min(l.dp, std::max(1, rpc / replica));
    const int groups = std::max(1, std::min(rpc, replica * dp_per_chip) / dp_per_chip);
    // Whole 4-byte elements in every rank's chunk.
    const double unit = 4.0 * l.dp;
    const double bytes = std::ceil(params * kGradBytes * groups / unit) * unit;
    auto add = [&](const std::string& name, CollectiveOp op) -> Status {
      StatusOr<OpCost> o = internal::CostCollective(sys, mb, name, op, bytes, l.dp, dp_per_chip);
      if (!o.ok()) return o.status();
      e.gradient_sync_s += o->seconds;
      e.gradient_sync.push_back(*std::move(o));
      return OkStatus();
    };
    if (c.zero1) {
      if (Status s = add("gradient reduce-scatter", CollectiveOp::kReduceScatter); !s.ok()) {
        return s;
      }
      if (Status s = add("weight all-gather", CollectiveOp::kAllGather); !s.ok()) return s;
    } else if (Status s = add("gradient all-reduce", CollectiveOp::kAllReduce); !s.ok()) {
      return s;
    }
  }
  const double shard = c.zero1 ? params / l.dp : params;
  e.optimizer = internal::CostRoofline(sys, mb, "adamw", "elementwise", 0, shard * kAdamBytes,
                                       MatmulDtype::kBf16);
  e.step_s = e.pipeline_s + e.gradient_sync_s + e.optimizer.seconds;

  e.tokens_per_step = static_cast<double>(l.dp * c.batch * c.seq);
  e.tokens_per_s = e.tokens_per_step / e.step_s;
  // Attention per step: every head of every microbatch and replica, forward
  // and its 2x backward.
  e.attention_flops = 3 * attention_fwd * l.tp * mbs * l.dp;
  e.model_flops = 6 * CountParameters(m).active * e.tokens_per_step + e.attention_flops;
  e.peak_dtype = WeightMatmulDtype(sys.chip, m.is_moe() ? c.weights.experts : c.weights.mlp);
  e.peak_flops = static_cast<double>(int64_t{l.tp} * l.pp * l.dp) * l.lnc *
                 CorePeakFlops(sys.chip, e.peak_dtype);
  e.mfu = e.model_flops / e.step_s / e.peak_flops;
  e.energy = internal::ChipEnergy(sys, e.memory.chips, e.tokens_per_s);
  return e;
}

}  // namespace trnmx::emu
