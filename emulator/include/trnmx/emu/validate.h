// The calibration set of trainium.md section 12 against the emulator: every
// published row next to the value the emulator gives for the row's own
// configuration, and the error; and the fit of the runtime overhead
// parameters (system.h RuntimeOverheads) against rows A1 and E1.
//
// Rows (trainium.md 12.1 and 12.2; docs/models.md "Validation"):
//   A1      llama-3.1-405b, BF16, trn2-server, TP 64 at LNC 2, sequence-
//           parallel prefill, batch 1, 10,000 in / 1,500 out (serve.h, in
//           RunCalibration's mode, analytical by default): TTFT, TPOT,
//           output tokens/s
//   E1      llama-3.1-8b, BF16, trn2-server, TP 8 at LNC 2, concurrency 2 as
//           batch 2, 512 in / 128 out: TTFT, TPOT, output tokens/s
//   RMSNorm RMSNorm + FP8 quantisation on one rank (LNC 2) of Trn2, H 8,192
//           and 16,384, 2,048 and 32,768 tokens: the emulator has no RMSNorm
//           kernel lowering, so the value is serve's norm op (an HBM
//           roofline, internal CostRoofline) over BF16 in + FP8 out
//   nccom   nccom-test shapes on trn2-server at LNC 2 (collective.h, lowered
//           and simulated, ranks packed onto chips in order): 2-rank
//           all-reduce (FP32) time at 64 KiB and 1 MiB and bus bandwidth at
//           1 GiB; 32-rank and 8-rank all-gather time at 1 KiB and 512 KiB
// error % = 100 x (model - published) / published. RunCalibration uses the
// shipped trn2-server description as it is, fitted overheads included.
//
// Calibrate (`trnmx-emu calibrate`; docs/models.md "Calibration") fits the
// three runtime overheads, the same for every model and system, never a peak:
//   layer_overhead_ns    per model layer of a pass, range 0 .. 200 us
//   pass_overhead_ns     per pass (prefill or decode step), range 0 .. 20 ms
//   prefill_overhead_ns  per serving prefill, besides the pass's, 0 .. 100 ms
// on the rows A1 and E1, TTFT and TPOT, in event mode (in-sample: the rows it
// is fitted on are the rows it is judged on). Objective: the sum of squared
// relative errors of those four values. Search: FitCoordinateDescent from 0
// (below). An overhead adds a fixed time per layer or pass, so each row is
// linear in the three: each row is costed (EstimateServing on trn2-server) at
// 0, and with each overhead alone at 1 ms, and the search evaluates that
// exact linear form; the rows after the fit are costed again in full with the
// fitted values (CalibrationFit::after).
//
//   std::vector<CalibrationRow> rows = RunCalibration().value();
//   for (const CalibrationRow& r : rows) std::printf("%s %s %.1f %%\n",
//       r.id.c_str(), r.quantity.c_str(), r.error_pct);
//   std::string text = CalibrationTable(rows);  // what `trnmx-emu validate` prints
//   CalibrationFit fit = Calibrate().value();
//   // fit.parameters[1].value: the fitted pass_overhead_ns
//   std::string fitted = CalibrationFitTable(fit);  // what `trnmx-emu calibrate` prints
//
// Errors: those of loading the built-in systems and models, or of costing a
// row (none expected for the built-in descriptions).
#ifndef TRNMX_EMU_VALIDATE_H_
#define TRNMX_EMU_VALIDATE_H_

#include <functional>
#include <string>
#include <vector>

#include "trnmx/emu/serve.h"
#include "trnmx/status.h"

namespace trnmx::emu {

struct CalibrationRow {
  std::string id;             // "A1", "E1", "RMSNorm", "nccom"
  std::string quantity;       // "TTFT", "TPOT", "throughput", "time", "busbw"
  std::string configuration;  // the row's shape, as the emulator runs it
  std::string unit;           // "ms", "us", "tok/s", "GB/s"
  double model = 0, published = 0;
  double error_pct = 0;
  std::string source;  // trainium.md section, its source and tag
};

// 100 x (model - published) / published.
double CalibrationError(double model, double published);

StatusOr<std::vector<CalibrationRow>> RunCalibration(ServeMode mode = ServeMode::kAnalytical);

// The rows as `trnmx-emu validate` prints them: a heading, then one line per
// row (id, quantity, model, published, unit, error %, configuration and
// source).
std::string CalibrationTable(const std::vector<CalibrationRow>& rows,
                             ServeMode mode = ServeMode::kAnalytical);

// Deterministic coordinate descent: starting from every parameter at its
// lower bound, minimises `objective` one coordinate at a time, each by a
// 21-point grid over its whole range and then 8 refinements (a 21-point grid
// over +-1 step of the previous grid around its best point); sweeps over the
// coordinates until a sweep improves the objective by less than 1e-12
// relatively, or 50 sweeps. A tie keeps the current point. Returns the best
// point found (exact for a separable convex objective to about range x 1e-11).
struct FitRange {
  double lo = 0, hi = 0;
};
std::vector<double> FitCoordinateDescent(
    const std::function<double(const std::vector<double>&)>& objective,
    const std::vector<FitRange>& ranges);

struct FittedParameter {
  // "layer_overhead_ns", "pass_overhead_ns", "prefill_overhead_ns" (/system/runtime/<name>)
  std::string name;
  std::string unit;  // "ns"
  FitRange range;
  double value = 0;
};
struct CalibrationFit {
  std::vector<FittedParameter> parameters;
  // The fitted rows (A1, E1 TTFT and TPOT, event mode) with the overheads at
  // 0 (before) and at the fitted values (after).
  std::vector<CalibrationRow> before, after;
  double objective_before = 0, objective_after = 0;  // sum of squared relative errors
};
StatusOr<CalibrationFit> Calibrate();
// What `trnmx-emu calibrate` prints: the method, the parameters and each row
// before and after.
std::string CalibrationFitTable(const CalibrationFit& fit);

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_VALIDATE_H_
