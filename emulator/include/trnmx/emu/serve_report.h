// Reports of a serving estimate (serve.h): a Chrome/Perfetto trace and one
// self-contained HTML page.
//
//   ServeEstimate e = EstimateServing(sys, model, config).value();
//   std::string trace = ServeTraceJson(sys, model, e);  // chrome://tracing, ui.perfetto.dev
//   std::string html = ServeReportHtml(sys, model, e);  // opens offline in any browser
//
// Both show one rank of the first pipeline stage (the ranks of a stage are
// symmetric) with the ops of a phase in series, as both modes add them
// (PhaseCost::timeline; in event mode a simulated op's TensorE and HBM
// spans are its roofline terms, capped at its simulated time). Each op runs on the resources it
// uses:
//   TensorE         GEMMs and attention, for FLOPs / peak (OpSpan::compute_s)
//   Vector/ScalarE  elementwise ops (norms, RoPE, SwiGLU, ...), for their time
//   HBM             every roofline op, for bytes / bandwidth (OpSpan::memory_s)
//   links           collectives and sends whose ranks span chips
//   on-chip DMA     collectives among the ranks of one chip
// A resource's utilisation is its busy time over the phase's time.
//
// The trace has one process per phase (the prefill, then one decode step at
// the mean context, placed after it), a track of layers, a track of ops and
// one track per resource in use. The HTML page has the summary (the numbers
// `trnmx-emu serve` prints), the time per layer and op class of both
// phases, the utilisation of each resource with its timeline, the memory per
// chip and the op table, all drawn as inline SVG by this code: no script, no
// style sheet, font or image from elsewhere, no URL at all.
#ifndef TRNMX_EMU_SERVE_REPORT_H_
#define TRNMX_EMU_SERVE_REPORT_H_

#include <string>
#include <vector>

#include "trnmx/emu/model.h"
#include "trnmx/emu/report.h"
#include "trnmx/emu/serve.h"
#include "trnmx/emu/system.h"

namespace trnmx::emu {

// Busy fraction of each resource above over the phase, in that order; the
// resources a phase does not use are left out.
std::vector<ResourceUse> PhaseResourceUse(const PhaseCost& phase);

std::string ServeTraceJson(const System& system, const Model& model, const ServeEstimate& e);
std::string ServeReportHtml(const System& system, const Model& model, const ServeEstimate& e);

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_SERVE_REPORT_H_
