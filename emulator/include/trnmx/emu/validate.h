// The calibration set of trainium.md section 12 against the emulator: every
// published row next to the value the emulator gives for the row's own
// configuration, and the error. Nothing is fitted here: the rows are
// reported as the current cost rules give them (issue 13 "Calibration" fits
// at most four overhead parameters against them, elsewhere).
//
// Rows (trainium.md 12.1 and 12.2; docs/models.md "Validation"):
//   A1      llama-3.1-405b, BF16, trn2-server, TP 64 at LNC 2, sequence-
//           parallel prefill, batch 1, 10,000 in / 1,500 out (serve.h,
//           analytical): TTFT, TPOT, output tokens/s
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
// error % = 100 x (model - published) / published.
//
//   std::vector<CalibrationRow> rows = RunCalibration().value();
//   for (const CalibrationRow& r : rows) std::printf("%s %s %.1f %%\n",
//       r.id.c_str(), r.quantity.c_str(), r.error_pct);
//   std::string text = CalibrationTable(rows);  // what `trnmx-emu validate` prints
//
// Errors: those of loading the built-in systems and models, or of costing a
// row (none expected for the built-in descriptions).
#ifndef TRNMX_EMU_VALIDATE_H_
#define TRNMX_EMU_VALIDATE_H_

#include <string>
#include <vector>

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

StatusOr<std::vector<CalibrationRow>> RunCalibration();

// The rows as `trnmx-emu validate` prints them: a heading, then one line per
// row (id, quantity, model, published, unit, error %, configuration and
// source).
std::string CalibrationTable(const std::vector<CalibrationRow>& rows);

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_VALIDATE_H_
