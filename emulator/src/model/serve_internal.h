// Serve's analytical cost rules (serve.cc) for the other whole-model
// estimates (training, train.h; calibration, validate.h): one pass over the
// model, single ops and collectives costed exactly as `serve` costs its own,
// so that every estimate shares one set of per-op rules.
#ifndef TRNMX_EMU_MODEL_SERVE_INTERNAL_H_
#define TRNMX_EMU_MODEL_SERVE_INTERNAL_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "cost/cost_model.h"
#include "trnmx/emu/collective.h"
#include "trnmx/emu/cost.h"
#include "trnmx/emu/serve.h"

namespace trnmx::emu::internal {

// "12.34 GiB": the byte counts of serve's and train's does-not-fit messages.
inline std::string FormatGib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f GiB", bytes / kGiB);
  return buf;
}

// The ops of one pass of config.batch sequences of `tokens_per_seq` new
// tokens after `past` cached ones (serve's prefill: past 0; a decode step:
// one token). training: every position's logits and a cross-entropy loss
// (its elementwise passes and the vocabulary-parallel all-reduce) instead of
// the last position's logits and sampling. The layout is not checked
// (CheckLayout).
StatusOr<PhaseCost> CostPass(const System& sys, const Model& m, const ServeConfig& c, int64_t past,
                             int64_t tokens_per_seq, bool training);
// One roofline op on one rank of the layout: max(flops / peak(dtype), bytes /
// HBM bandwidth).
OpCost CostRoofline(const System& sys, const ServeConfig& c, const std::string& name,
                    const std::string& op_class, double flops, double bytes, MatmulDtype dtype);
// One collective of `bytes` per rank over `ranks` ranks, lowered and
// simulated (ranks_per_chip as CollectiveConfig's; 0 packs the chips). Fewer
// than two ranks cost nothing.
StatusOr<OpCost> CostCollective(const System& sys, const ServeConfig& c, const std::string& name,
                                CollectiveOp op, double bytes, int ranks, int ranks_per_chip);
// Weight bytes of one rank of the fullest pipeline stage, at config.weights.
double StageWeightBytes(const Model& m, const ServeConfig& c);
// Requests a continuous-batching run completes per replica (serve.h).
inline int64_t ContinuousRequests(const ServeConfig& c) {
  return c.requests > 0 ? c.requests : (c.concurrency > 12 ? 4 * c.concurrency : 50);
}
// The continuous-batching simulation of serve.h (config.concurrency > 0;
// the layout already checked), over serve's passes (serve_continuous.cc).
StatusOr<ContinuousBatching> SimulateContinuousBatching(const System& sys, const Model& m,
                                                        const ServeConfig& c);
// Energy of `chips` chips producing tokens_per_s tokens (serve.h "Energy").
ServeEnergy ChipEnergy(const System& sys, int chips, double tokens_per_s);

}  // namespace trnmx::emu::internal

#endif  // TRNMX_EMU_MODEL_SERVE_INTERNAL_H_
