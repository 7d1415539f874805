// The calibration rows of trainium.md section 12 against the emulator
// (trnmx/emu/validate.h). The published values below are copied from that
// section, with its source ids and tags.
#include "trnmx/emu/validate.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "model/serve_internal.h"
#include "trnmx/emu/collective.h"
#include "trnmx/emu/model.h"
#include "trnmx/emu/serve.h"
#include "trnmx/emu/simulator.h"
#include "trnmx/emu/system.h"

namespace trnmx::emu {
namespace {

struct ServeRow {
  const char* id;
  const char* model;
  const char* configuration;
  int tp;
  bool sp;
  int64_t batch, input, output;
  int64_t max_context;  // the runtime's compiled context: prefill pads to its bucket
  double ttft_ms, tpot_ms, tokens_per_s;
  const char* source;
};

// trainium.md 12.1 (P): trn2.48xlarge (16 Trn2 chips, trn2-server), LNC 2, BF16.
constexpr ServeRow kServeRows[] = {
    {"A1", "llama-3.1-405b",
     "llama-3.1-405b bf16, trn2-server, tp 64 lnc 2, sequence-parallel prefill, batch 1, "
     "10000 in / 1500 out, max context 12288",
     64, true, 1, 10000, 1500, 12288, 2442, 37.9, 25.46, "trainium.md 12.1, S23 (P)"},
    {"E1", "llama-3.1-8b",
     "llama-3.1-8b bf16, trn2-server, tp 8 lnc 2, concurrency 2 as batch 2, 512 in / 128 out, "
     "max model len 2048",
     8, false, 2, 512, 128, 2048, 51.07, 10.52, 184.4, "trainium.md 12.1, S27 (P, illustrative)"},
};

struct NormRow {
  int64_t hidden, tokens;
  double us;
};
// trainium.md 12.2 (P, S28): RMSNorm + FP8 quantisation design targets, Trn2, LNC 2, batch 1.
constexpr NormRow kNormRows[] = {
    {8192, 2048, 458.2}, {8192, 32768, 6287.0}, {16384, 2048, 866.81}, {16384, 32768, 13214.40}};

struct CollectiveRow {
  CollectiveOp op;
  int ranks;
  int64_t bytes;
  bool busbw;  // the published value is bus bandwidth (GB/s), else time (us)
  double published;
  const char* note;
};
// trainium.md 12.2 (P weak, S29): nccom-test examples, no instance type given
// (AWS calls them out of date; the section says to fit curve shape).
constexpr CollectiveRow kCollectiveRows[] = {
    {CollectiveOp::kAllReduce, 2, 64 << 10, false, 58, "latency floor up to 64 KiB"},
    {CollectiveOp::kAllReduce, 2, 1 << 20, false, 68, ""},
    {CollectiveOp::kAllReduce, 2, int64_t{1} << 30, true, 52.8, "busbw plateau"},
    {CollectiveOp::kAllGather, 32, 1 << 10, false, 6.2, "another run: 149-179 us"},
    {CollectiveOp::kAllGather, 32, 512 << 10, false, 23.2, "another run: 149-179 us"},
    {CollectiveOp::kAllGather, 8, 1 << 10, false, 10, "p50"},
    {CollectiveOp::kAllGather, 8, 512 << 10, false, 15, "p50"},
};

CalibrationRow Row(std::string id, std::string quantity, std::string configuration,
                   std::string unit, double model, double published, std::string source) {
  CalibrationRow r;
  r.id = std::move(id);
  r.quantity = std::move(quantity);
  r.configuration = std::move(configuration);
  r.unit = std::move(unit);
  r.model = model;
  r.published = published;
  r.error_pct = CalibrationError(model, published);
  r.source = std::move(source);
  return r;
}

StatusOr<ServeEstimate> EstimateRow(const System& sys, const ServeRow& s, ServeMode mode) {
  StatusOr<Model> m = LoadModel(s.model);
  if (!m.ok()) return m.status();
  ServeConfig c;
  c.mode = mode;
  c.layout.tp = s.tp;
  c.layout.lnc = 2;
  c.layout.sp = s.sp;
  c.batch = s.batch;
  c.input = s.input;
  c.output = s.output;
  c.max_context = s.max_context;
  return EstimateServing(sys, *m, c);
}

// The fitted quantities of a row: TTFT and TPOT (ms).
void AddFittedRows(const ServeRow& s, const ServeEstimate& e, std::vector<CalibrationRow>& out) {
  out.push_back(Row(s.id, "TTFT", s.configuration, "ms", e.ttft_s * 1e3, s.ttft_ms, s.source));
  out.push_back(Row(s.id, "TPOT", s.configuration, "ms", e.tpot_s * 1e3, s.tpot_ms, s.source));
}

double SquaredRelativeErrors(const std::vector<CalibrationRow>& rows) {
  double sum = 0;
  for (const CalibrationRow& r : rows) sum += (r.error_pct / 100) * (r.error_pct / 100);
  return sum;
}

void SetOverheads(System& sys, const std::vector<FittedParameter>& p) {
  const char* source = "trainium.md 12.1 A1 E1 (TTFT, TPOT; trnmx-emu calibrate)";
  sys.runtime.layer_ns = {p[0].value, "ns", SourceTag::kInferred, source, "fitted"};
  sys.runtime.pass_ns = {p[1].value, "ns", SourceTag::kInferred, source, "fitted"};
  sys.runtime.prefill_ns = {p[2].value, "ns", SourceTag::kInferred, source, "fitted"};
}

}  // namespace

double CalibrationError(double model, double published) {
  return 100 * (model - published) / published;
}

StatusOr<std::vector<CalibrationRow>> RunCalibration(ServeMode mode) {
  StatusOr<System> trn2 = LoadSystem("trn2-server");
  if (!trn2.ok()) return trn2.status();
  std::vector<CalibrationRow> rows;
  for (const ServeRow& s : kServeRows) {
    StatusOr<ServeEstimate> e = EstimateRow(*trn2, s, mode);
    if (!e.ok()) return e.status();
    rows.push_back(Row(s.id, "TTFT", s.configuration, "ms", e->ttft_s * 1e3, s.ttft_ms, s.source));
    rows.push_back(Row(s.id, "TPOT", s.configuration, "ms", e->tpot_s * 1e3, s.tpot_ms, s.source));
    rows.push_back(Row(s.id, "throughput", s.configuration, "tok/s", e->tokens_per_s,
                       s.tokens_per_s, s.source));
  }
  // One rank at LNC 2 costs the kernel as serve costs a norm: BF16 in, FP8 out.
  ServeConfig one_rank;
  one_rank.layout.lnc = 2;
  for (const NormRow& n : kNormRows) {
    const double elements = static_cast<double>(n.hidden * n.tokens);
    const OpCost op = internal::CostRoofline(*trn2, one_rank, "rmsnorm", "elementwise", 0,
                                             elements * (2 + 1), MatmulDtype::kBf16);
    rows.push_back(Row("RMSNorm", "time",
                       "RMSNorm + FP8 quantisation, trn2 one rank lnc 2, H " +
                           std::to_string(n.hidden) + ", " + std::to_string(n.tokens) +
                           " tokens (serve's norm op: HBM roofline, no kernel lowering)",
                       "us", op.seconds * 1e6, n.us, "trainium.md 12.2, S28 (P, design target)"));
  }
  for (const CollectiveRow& r : kCollectiveRows) {
    CollectiveConfig cc;
    cc.op = r.op;
    cc.bytes = r.bytes;
    cc.ranks = r.ranks;
    cc.lnc = 2;
    StatusOr<LoweredCollective> lowered = LowerCollective(*trn2, cc);
    if (!lowered.ok()) return lowered.status();
    StatusOr<SimResult> sim = Simulate(lowered->program);
    if (!sim.ok()) return sim.status();
    const CollectiveFigures f = Figures(lowered->plan, *sim);
    std::string config = std::to_string(r.ranks) + "-rank " + std::string(CollectiveOpName(r.op)) +
                         " " + ByteSizeName(r.bytes) + ", trn2-server lnc 2, ranks packed, " +
                         std::string(CollectiveAlgorithmName(lowered->plan.algorithm));
    if (*r.note != '\0') config += " (published: " + std::string(r.note) + ")";
    rows.push_back(r.busbw ? Row("nccom", "busbw", config, "GB/s", f.busbw_bytes_per_s / 1e9,
                                 r.published, "trainium.md 12.2, S29 (P weak)")
                           : Row("nccom", "time", config, "us", f.seconds * 1e6, r.published,
                                 "trainium.md 12.2, S29 (P weak)"));
  }
  return rows;
}

std::string CalibrationTable(const std::vector<CalibrationRow>& rows, ServeMode mode) {
  std::string out =
      "calibration rows of trainium.md section 12 (A1, E1: " + std::string(ServeModeName(mode)) +
      " mode; runtime overheads as in the trn2-server description)\n";
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%-8s %-11s %12s %12s %6s %9s  %s\n", "row", "quantity", "model",
                "published", "unit", "error", "configuration [source]");
  out += buf;
  for (const CalibrationRow& r : rows) {
    std::snprintf(buf, sizeof(buf), "%-8s %-11s %12.3f %12.3f %6s %+8.1f%%  ", r.id.c_str(),
                  r.quantity.c_str(), r.model, r.published, r.unit.c_str(), r.error_pct);
    out += buf + r.configuration + " [" + r.source + "]\n";
  }
  return out;
}

}  // namespace trnmx::emu

namespace trnmx::emu {

std::vector<double> FitCoordinateDescent(
    const std::function<double(const std::vector<double>&)>& objective,
    const std::vector<FitRange>& ranges) {
  constexpr int kPoints = 21, kRefinements = 8, kSweeps = 50;
  std::vector<double> x;
  for (const FitRange& r : ranges) x.push_back(r.lo);
  double best = objective(x);
  for (int sweep = 0; sweep < kSweeps; ++sweep) {
    const double start = best;
    for (size_t i = 0; i < ranges.size(); ++i) {
      double lo = ranges[i].lo, hi = ranges[i].hi;
      for (int round = 0; round <= kRefinements; ++round) {
        const double step = (hi - lo) / (kPoints - 1);
        double best_v = x[i];
        for (int k = 0; k < kPoints; ++k) {
          std::vector<double> trial = x;
          trial[i] = lo + step * k;
          const double f = objective(trial);
          if (f < best) {
            best = f;
            best_v = trial[i];
          }
        }
        x[i] = best_v;
        lo = std::max(ranges[i].lo, best_v - step);
        hi = std::min(ranges[i].hi, best_v + step);
      }
    }
    if (start - best <= 1e-12 * start) break;
  }
  return x;
}

StatusOr<CalibrationFit> Calibrate() {
  StatusOr<System> loaded = LoadSystem("trn2-server");
  if (!loaded.ok()) return loaded.status();
  System sys = std::move(*loaded);
  CalibrationFit fit;
  fit.parameters = {{"layer_overhead_ns", "ns", {0, 200e3}, 0},
                    {"pass_overhead_ns", "ns", {0, 20e6}, 0},
                    {"prefill_overhead_ns", "ns", {0, 100e6}, 0}};
  const size_t n = fit.parameters.size();
  // Each row's TTFT and TPOT at the overheads 0 (index 0) and with overhead
  // i alone at 1 ms (index i + 1): the rows are linear in the overheads.
  std::vector<std::vector<CalibrationRow>> probes;
  for (size_t probe = 0; probe <= n; ++probe) {
    for (size_t i = 0; i < n; ++i) fit.parameters[i].value = probe == i + 1 ? 1e6 : 0;
    SetOverheads(sys, fit.parameters);
    std::vector<CalibrationRow> rows;
    for (const ServeRow& s : kServeRows) {
      StatusOr<ServeEstimate> e = EstimateRow(sys, s, ServeMode::kEvent);
      if (!e.ok()) return e.status();
      AddFittedRows(s, *e, rows);
    }
    probes.push_back(std::move(rows));
  }
  fit.before = probes[0];
  auto rows_at = [&](const std::vector<double>& x) {
    std::vector<CalibrationRow> rows = probes[0];
    for (size_t r = 0; r < rows.size(); ++r) {
      double model = probes[0][r].model;
      for (size_t i = 0; i < n; ++i)
        model += (probes[i + 1][r].model - probes[0][r].model) * x[i] / 1e6;
      rows[r].model = model;
      rows[r].error_pct = CalibrationError(model, rows[r].published);
    }
    return rows;
  };
  std::vector<FitRange> ranges;
  for (const FittedParameter& p : fit.parameters) ranges.push_back(p.range);
  const std::vector<double> x = FitCoordinateDescent(
      [&](const std::vector<double>& v) { return SquaredRelativeErrors(rows_at(v)); }, ranges);
  for (size_t i = 0; i < n; ++i) fit.parameters[i].value = x[i];
  // The rows after the fit, costed in full (not from the linear form).
  SetOverheads(sys, fit.parameters);
  for (const ServeRow& s : kServeRows) {
    StatusOr<ServeEstimate> e = EstimateRow(sys, s, ServeMode::kEvent);
    if (!e.ok()) return e.status();
    AddFittedRows(s, *e, fit.after);
  }
  fit.objective_before = SquaredRelativeErrors(fit.before);
  fit.objective_after = SquaredRelativeErrors(fit.after);
  return fit;
}

std::string CalibrationFitTable(const CalibrationFit& fit) {
  std::string out =
      "calibration of the runtime overheads (in-sample: fitted on and judged on the rows below)\n"
      "rows: trainium.md 12.1 A1 and E1, TTFT and TPOT, event mode, trn2-server\n"
      "objective: sum of squared relative errors; search: coordinate descent from 0, each\n"
      "coordinate a 21-point grid over its range refined 8 times around the best point\n";
  char buf[200];
  for (const FittedParameter& p : fit.parameters) {
    std::snprintf(buf, sizeof(buf),
                  "%-18s %14.1f %s  (range %.0f .. %.0f %s; /system/runtime/%s)\n", p.name.c_str(),
                  p.value, p.unit.c_str(), p.range.lo, p.range.hi, p.unit.c_str(), p.name.c_str());
    out += buf;
  }
  std::snprintf(buf, sizeof(buf), "%-4s %-5s %10s %10s %9s %10s %9s\n", "row", "qty", "published",
                "before", "error", "after", "error");
  out += buf;
  for (size_t r = 0; r < fit.before.size(); ++r) {
    const CalibrationRow& b = fit.before[r];
    const CalibrationRow& a = fit.after[r];
    std::snprintf(buf, sizeof(buf), "%-4s %-5s %10.3f %10.3f %+8.1f%% %10.3f %+8.1f%%  %s\n",
                  b.id.c_str(), b.quantity.c_str(), b.published, b.model, b.error_pct, a.model,
                  a.error_pct, b.unit.c_str());
    out += buf;
  }
  std::snprintf(buf, sizeof(buf), "objective %.6f before, %.6f after\n", fit.objective_before,
                fit.objective_after);
  out += buf;
  return out;
}

}  // namespace trnmx::emu
