// Trace and HTML report of a serving estimate (trnmx/emu/serve_report.h).
#include "trnmx/emu/serve_report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cost/cost_model.h"
#include "trace/chrome_trace.h"
#include "trace/markup.h"

namespace trnmx::emu {
namespace {

// The resources of serve_report.h, in their order.
enum Resource { kTensor, kVector, kHbm, kLinks, kOnChipDma, kResources };
constexpr const char* kResourceNames[kResources] = {"TensorE", "Vector/ScalarE", "HBM", "links",
                                                    "on-chip DMA"};
constexpr const char* kClasses[] = {"gemm", "attention", "elementwise", "collective"};
constexpr const char* kClassColors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759"};
constexpr const char* kResourceColors[kResources] = {"#4e79a7", "#59a14f", "#9c755f", "#e15759",
                                                     "#b07aa1"};
using internal::Escape;
using internal::Fmt;
using internal::kGiB;
using internal::NiceCeiling;

// Busy intervals [start, end) of one span on each resource (seconds).
struct Busy {
  Resource resource;
  double start, end;
};

std::vector<Busy> BusyOf(const PhaseCost& p, const OpSpan& s) {
  const OpCost& op = p.ops[static_cast<size_t>(s.op)];
  if (op.op_class == "collective") {
    return {{op.crosses_chips ? kLinks : kOnChipDma, s.start_s, s.start_s + s.seconds}};
  }
  std::vector<Busy> b;
  if (op.op_class == "elementwise") {
    b.push_back({kVector, s.start_s, s.start_s + s.seconds});
  } else if (s.compute_s > 0) {
    b.push_back({kTensor, s.start_s, s.start_s + s.compute_s});
  }
  if (s.memory_s > 0) b.push_back({kHbm, s.start_s, s.start_s + s.memory_s});
  return b;
}

int ClassIndex(const std::string& op_class) {
  for (int i = 0; i < 4; ++i) {
    if (op_class == kClasses[i]) return i;
  }
  return 3;
}

std::string LayerName(const Model& m, int64_t layer) {
  if (layer < 0) return "embedding";
  if (layer >= m.layers) return "LM head";
  std::string name = "layer " + std::to_string(layer);
  const int64_t w = m.window[static_cast<size_t>(layer)];
  if (w > 0) name += " (window " + std::to_string(w) + ")";
  return name;
}

std::string Ms(double seconds) { return Fmt("%.3f ms", seconds * 1e3); }

std::string PhaseTitle(const ServeEstimate& e, bool decode) {
  return decode ? "decode step at context " + std::to_string(e.decode_context) + " (TPOT)"
                : "prefill of " + std::to_string(e.config.batch) + " x " +
                      std::to_string(e.config.input) + " tokens (TTFT)";
}

// ---------------------------------------------------------------------------
// SVG charts.

// Horizontal legend of coloured boxes.
std::string Legend(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string s = "<p class=\"legend\">";
  for (const auto& [name, color] : items) {
    s += "<span class=\"key\" style=\"background:" + color + "\"></span>" + Escape(name) + " ";
  }
  return s + "</p>\n";
}

// Stacked columns of time per layer and op class (one phase).
std::string LayerChart(const Model& m, const PhaseCost& p) {
  // Buckets: embedding, the layers, LM head.
  const size_t buckets = static_cast<size_t>(m.layers) + 2;
  std::vector<std::array<double, 4>> t(buckets, {0, 0, 0, 0});
  for (const OpSpan& s : p.timeline) {
    const size_t b = static_cast<size_t>(std::clamp<int64_t>(s.layer + 1, 0, m.layers + 1));
    t[b][static_cast<size_t>(ClassIndex(p.ops[static_cast<size_t>(s.op)].op_class))] += s.seconds;
  }
  double top = 0;
  for (const auto& col : t) top = std::max(top, col[0] + col[1] + col[2] + col[3]);
  top = NiceCeiling(top);
  const double w = 900, h = 220, left = 70, bottom = 30, plot_w = w - left - 10,
               plot_h = h - bottom - 10;
  const double col_w = plot_w / static_cast<double>(buckets);
  std::string s =
      Fmt("<svg class=\"chart\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
          "role=\"img\">\n",
          w, h, w, h);
  for (int i = 0; i <= 4; ++i) {  // y grid in ms
    const double y = 10 + plot_h * (1 - i / 4.0);
    s += Fmt("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>\n", left, y,
             w - 10, y);
    s += Fmt("<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" text-anchor=\"end\">%.4g ms</text>\n",
             left - 4, y + 4, top * 1e3 * i / 4);
  }
  for (size_t b = 0; b < buckets; ++b) {
    double y = 10 + plot_h;
    const int64_t layer = static_cast<int64_t>(b) - 1;
    for (size_t c = 0; c < 4; ++c) {
      if (t[b][c] <= 0) continue;
      const double bar_h = plot_h * t[b][c] / top;
      y -= bar_h;
      s += Fmt(
          "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\">"
          "<title>%s: %s %s</title></rect>\n",
          left + col_w * static_cast<double>(b) + col_w * 0.1, y, col_w * 0.8, bar_h,
          kClassColors[c], Escape(LayerName(m, layer)).c_str(), kClasses[c], Ms(t[b][c]).c_str());
    }
  }
  // x labels: the two ends and every tenth layer.
  for (size_t b = 0; b < buckets; ++b) {
    const int64_t layer = static_cast<int64_t>(b) - 1;
    std::string label;
    if (layer < 0) {
      label = "emb";
    } else if (layer >= m.layers) {
      label = "head";
    } else if (layer % 10 == 0) {
      label = std::to_string(layer);
    } else {
      continue;
    }
    s += Fmt("<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" text-anchor=\"middle\">%s</text>\n",
             left + col_w * (static_cast<double>(b) + 0.5), h - bottom + 16, label.c_str());
  }
  return s + "</svg>\n";
}

// Utilisation bars and the busy timeline of each resource (one phase).
std::string UtilisationChart(const PhaseCost& p, double offset_s) {
  const std::vector<ResourceUse> use = PhaseResourceUse(p);
  const double w = 900, left = 120, right = 10, row = 22;
  const double plot_w = w - left - right;
  const double h = 30 + row * static_cast<double>(use.size()) * 2 + 10;
  std::string s =
      Fmt("<svg class=\"chart\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
          "role=\"img\">\n",
          w, h, w, h);
  // Bars: busy fraction.
  double y = 10;
  std::map<std::string, int> index;
  for (int r = 0; r < kResources; ++r) index[kResourceNames[r]] = r;
  for (const ResourceUse& u : use) {
    const char* color = kResourceColors[index[u.name]];
    s += Fmt("<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" text-anchor=\"end\">%s</text>\n", left - 6,
             y + 14, Escape(u.name).c_str());
    s += Fmt("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"16\" class=\"track\"/>\n", left,
             y + 2, plot_w);
    s += Fmt(
        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"16\" fill=\"%s\"><title>%s busy "
        "%.1f %% of the phase</title></rect>\n",
        left, y + 2, plot_w * std::min(1.0, u.busy), color, Escape(u.name).c_str(), 100 * u.busy);
    s += Fmt("<text x=\"%.1f\" y=\"%.1f\" class=\"ax\">%.1f %%</text>\n",
             left + plot_w * std::min(1.0, u.busy) + 4, y + 14, 100 * u.busy);
    y += row;
  }
  // Timeline: one row per resource, busy intervals merged below half a pixel.
  y += 8;
  s += Fmt("<text x=\"%.1f\" y=\"%.1f\" class=\"ax\">timeline, %s to %s</text>\n", left, y,
           Ms(offset_s).c_str(), Ms(offset_s + p.seconds).c_str());
  y += 4;
  const double scale = p.seconds > 0 ? plot_w / p.seconds : 0;
  std::vector<std::vector<std::pair<double, double>>> rows(kResources);
  for (const OpSpan& sp : p.timeline) {
    for (const Busy& b : BusyOf(p, sp)) {
      auto& r = rows[b.resource];
      const double x0 = b.start * scale, x1 = b.end * scale;
      if (!r.empty() && x0 - r.back().second < 0.5) {
        r.back().second = std::max(r.back().second, x1);
      } else {
        r.emplace_back(x0, x1);
      }
    }
  }
  for (const ResourceUse& u : use) {
    const int r = index[u.name];
    s += Fmt("<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" text-anchor=\"end\">%s</text>\n", left - 6,
             y + 14, Escape(u.name).c_str());
    s += Fmt("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"16\" class=\"track\"/>\n", left,
             y + 2, plot_w);
    for (const auto& [x0, x1] : rows[static_cast<size_t>(r)]) {
      s += Fmt("<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"16\" fill=\"%s\"/>\n",
               left + x0, y + 2, std::max(0.3, x1 - x0), kResourceColors[r]);
    }
    y += row;
  }
  return s + "</svg>\n";
}

// The fullest chip's HBM: one stacked bar against the capacity.
std::string MemoryChart(const MemoryFit& f) {
  const std::pair<const char*, double> parts[] = {{"weights", f.weights},
                                                  {"KV cache", f.kv_cache},
                                                  {"activations", f.activations},
                                                  {"workspace", f.workspace},
                                                  {"free", f.capacity - f.total}};
  const char* colors[] = {"#4e79a7", "#f28e2b", "#76b7b2", "#edc948", "#e6e6e6"};
  const double w = 900, left = 120, plot_w = w - left - 10;
  std::string s =
      "<svg class=\"chart\" width=\"900\" height=\"60\" viewBox=\"0 0 900 60\" role=\"img\">\n";
  s += Fmt("<text x=\"%.1f\" y=\"26\" class=\"ax\" text-anchor=\"end\">HBM, %.0f GiB</text>\n",
           left - 6, f.capacity / kGiB);
  double x = left;
  for (size_t i = 0; i < 5; ++i) {
    const double bw = plot_w * std::max(0.0, parts[i].second) / f.capacity;
    s +=
        Fmt("<rect x=\"%.2f\" y=\"10\" width=\"%.2f\" height=\"24\" fill=\"%s\"><title>%s %.2f "
            "GiB</title></rect>\n",
            x, bw, colors[i], parts[i].first, parts[i].second / kGiB);
    if (bw > 90) {
      s += Fmt("<text x=\"%.1f\" y=\"26\" class=\"%s\">%s %.1f GiB</text>\n", x + 4,
               i == 4 ? "ax" : "val", parts[i].first, parts[i].second / kGiB);
    }
    x += bw;
  }
  s +=
      Fmt("<text x=\"%.1f\" y=\"52\" class=\"ax\">%.2f GiB of %.2f GiB used (%.1f %%): weights "
          "%.2f, KV cache %.2f, activations %.2f, workspace %.2f GiB</text>\n",
          left, f.total / kGiB, f.capacity / kGiB, 100 * f.total / f.capacity, f.weights / kGiB,
          f.kv_cache / kGiB, f.activations / kGiB, f.workspace / kGiB);
  s += "</svg>\n";
  std::vector<std::pair<std::string, std::string>> legend;
  for (size_t i = 0; i < 5; ++i) legend.emplace_back(parts[i].first, colors[i]);
  return s + Legend(legend);
}

std::string OpTable(const PhaseCost& p) {
  std::string s =
      "<table class=\"ops\"><tr><th>op</th><th>class</th><th>count</th><th>ms</th><th>share</th>"
      "<th>GFLOP</th><th>HBM MB</th><th>bound</th></tr>\n";
  std::vector<const OpCost*> ops;
  for (const OpCost& o : p.ops) ops.push_back(&o);
  std::stable_sort(ops.begin(), ops.end(),
                   [](const OpCost* a, const OpCost* b) { return a->seconds > b->seconds; });
  for (const OpCost* o : ops) {
    s +=
        Fmt("<tr><td>%s</td><td>%s</td><td>%lld</td><td>%.4f</td><td>%.1f %%</td><td>%.3f</td>"
            "<td>%.3f</td><td>%s</td></tr>\n",
            Escape(o->name).c_str(), o->op_class.c_str(), static_cast<long long>(o->count),
            o->seconds * 1e3, p.seconds > 0 ? 100 * o->seconds / p.seconds : 0, o->flops / 1e9,
            o->hbm_bytes / 1e6, Escape(o->bound).c_str());
  }
  return s + "</table>\n";
}

constexpr const char* kStyle =
    R"(body{font:14px/1.4 sans-serif;margin:24px;color:#222;max-width:960px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ccc}
h3{font-size:15px;margin:16px 0 4px}.sub{color:#555;margin:0 0 12px}
table{border-collapse:collapse}td,th{padding:2px 10px;text-align:left;border-bottom:1px solid #eee}
table.ops td:nth-child(n+3){text-align:right;font-variant-numeric:tabular-nums}
table.kv td:first-child{color:#555}.chart{display:block;margin:4px 0}
.grid{stroke:#ddd}.ax{font-size:11px;fill:#444}.val{font-size:11px;fill:#fff}
.track{fill:#f2f2f2}.legend{font-size:12px;color:#444}
.key{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px})";

}  // namespace

std::vector<ResourceUse> PhaseResourceUse(const PhaseCost& p) {
  double busy[kResources] = {};
  for (const OpSpan& s : p.timeline) {
    for (const Busy& b : BusyOf(p, s)) busy[b.resource] += b.end - b.start;
  }
  std::vector<ResourceUse> use;
  for (int r = 0; r < kResources; ++r) {
    if (busy[r] > 0) use.push_back({kResourceNames[r], p.seconds > 0 ? busy[r] / p.seconds : 0});
  }
  return use;
}

std::string ServeTraceJson(const System& sys, const Model& m, const ServeEstimate& e) {
  internal::ChromeTrace trace;
  const PhaseCost* phases[] = {&e.prefill, &e.decode};
  for (int pid = 0; pid < 2; ++pid) {
    const PhaseCost& p = *phases[pid];
    const double offset_us = pid == 0 ? 0 : e.prefill.seconds * 1e6;
    trace.Process(pid, PhaseTitle(e, pid == 1) + ": one rank of " + sys.name + ", " +
                           std::string(ServeModeName(e.config.mode)));
    trace.Track(pid, 0, "layers", true);
    trace.Track(pid, 1, "ops", true);
    const std::vector<ResourceUse> use = PhaseResourceUse(p);
    for (int r = 0; r < kResources; ++r) {
      for (const ResourceUse& u : use) {
        if (u.name == kResourceNames[r]) trace.Track(pid, 2 + r, u.name, true);
      }
    }
    // Layers: runs of consecutive spans of one layer.
    for (size_t i = 0; i < p.timeline.size();) {
      size_t j = i;
      while (j < p.timeline.size() && p.timeline[j].layer == p.timeline[i].layer) ++j;
      const double start = p.timeline[i].start_s;
      const double end = p.timeline[j - 1].start_s + p.timeline[j - 1].seconds;
      trace.Complete(pid, 0, LayerName(m, p.timeline[i].layer), "layer", offset_us + start * 1e6,
                     (end - start) * 1e6, {{"layer", p.timeline[i].layer}});
      i = j;
    }
    for (const OpSpan& s : p.timeline) {
      const OpCost& op = p.ops[static_cast<size_t>(s.op)];
      const nlohmann::json args = {{"layer", s.layer},
                                   {"class", op.op_class},
                                   {"bound", op.bound},
                                   {"compute_us", s.compute_s * 1e6},
                                   {"memory_us", s.memory_s * 1e6}};
      trace.Complete(pid, 1, op.name, op.op_class, offset_us + s.start_s * 1e6, s.seconds * 1e6,
                     args);
      for (const Busy& b : BusyOf(p, s)) {
        trace.Complete(pid, 2 + b.resource, op.name, kResourceNames[b.resource],
                       offset_us + b.start * 1e6, (b.end - b.start) * 1e6, {{"layer", s.layer}});
      }
    }
  }
  return trace.Dump({{"model", m.name},
                     {"system", sys.name},
                     {"mode", std::string(ServeModeName(e.config.mode))},
                     {"ttft_ms", e.ttft_s * 1e3},
                     {"tpot_ms", e.tpot_s * 1e3}});
}

std::string ServeReportHtml(const System& sys, const Model& m, const ServeEstimate& e) {
  const ServeConfig& c = e.config;
  const ParallelLayout& l = c.layout;
  const MemoryFit& f = e.memory;
  const ParameterCount params = CountParameters(m);
  const std::string title = m.name + " on " + sys.name;
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" +
                  Escape("trnmx-emu serve: " + title) + "</title>\n<style>" + kStyle +
                  "</style></head>\n<body>\n";
  h += "<h1>" + Escape(title) + "</h1>\n";
  h += "<p class=\"sub\">" +
       Escape(Fmt("trnmx-emu serve, %s mode: tp %d x ep %d x pp %d x dp %d at LNC %d "
                  "= %lld ranks on %d chip(s)%s; weights ",
                  std::string(ServeModeName(c.mode)).c_str(), l.tp, l.ep, l.pp, l.dp, l.lnc,
                  static_cast<long long>(int64_t{l.tp} * l.pp * l.dp), f.chips,
                  l.sp ? ", sequence-parallel prefill" : "") +
              WeightFormatsName(c.weights)) +
       "</p>\n";

  // Summary: the numbers of `trnmx-emu serve`, in its formats.
  const ClassCost& top = e.decode.classes.front();
  std::vector<std::pair<std::string, std::string>> rows = {
      {"model", Fmt("%s (%s, %.2f B parameters, %.2f B active)", m.name.c_str(),
                    std::string(ModelFamilyName(m.family)).c_str(), params.total / 1e9,
                    params.active / 1e9)},
      {"workload", Fmt("batch %lld per replica, input %lld, output %lld (decode at mean context "
                       "%lld)",
                       static_cast<long long>(c.batch), static_cast<long long>(c.input),
                       static_cast<long long>(c.output), static_cast<long long>(e.decode_context))},
      {"TTFT", Ms(e.ttft_s)},
      {"TPOT", Ms(e.tpot_s)},
      {"throughput", Fmt("%.1f tok/s (%d replica(s) x batch %lld)", e.tokens_per_s, l.dp,
                         static_cast<long long>(c.batch))},
      {"HBM per chip", Fmt("%.2f GiB of %.2f GiB", f.total / kGiB, f.capacity / kGiB)},
      {"bottleneck", Fmt("decode: %s (%s), %.0f %% of TPOT", top.op_class.c_str(),
                         top.bound.c_str(), 100 * top.seconds / e.decode.seconds)}};
  if (e.energy.reported) {
    const ServeEnergy& en = e.energy;
    rows.emplace_back("energy", Fmt("%d chips x %.0f W (%s, %s; chips only, hosts excluded) = "
                                    "%.1f kW",
                                    en.chips, en.chip_watts.value,
                                    std::string(SourceTagName(en.chip_watts.tag)).c_str(),
                                    en.chip_watts.source.c_str(), en.watts / 1e3));
    rows.emplace_back("joules per output token", Fmt("%.4f J", en.joules_per_token));
    rows.emplace_back("output tokens/s per MW", Fmt("%.0f", en.tokens_per_s_per_mw));
  } else {
    rows.emplace_back("energy", e.energy.why_not);
  }
  h += "<h2>Summary</h2>\n<table class=\"kv\">\n";
  for (const auto& [k, v] : rows)
    h += "<tr><td>" + Escape(k) + "</td><td>" + Escape(v) + "</td></tr>\n";
  h += "</table>\n";

  std::vector<std::pair<std::string, std::string>> class_legend;
  for (int i = 0; i < 4; ++i) class_legend.emplace_back(kClasses[i], kClassColors[i]);
  h += "<h2>Time per layer</h2>\n<p>One rank, all ops of a layer in series (hover a bar for "
       "its time).</p>\n";
  h += "<h3>" + Escape(PhaseTitle(e, false)) + ": " + Ms(e.prefill.seconds) + "</h3>\n" +
       LayerChart(m, e.prefill);
  h += "<h3>" + Escape(PhaseTitle(e, true)) + ": " + Ms(e.decode.seconds) + "</h3>\n" +
       LayerChart(m, e.decode) + Legend(class_legend);

  h += "<h2>Engine and link utilisation</h2>\n<p>Busy time over the phase: TensorE for "
       "FLOPs / peak, HBM for bytes / bandwidth, Vector/ScalarE for elementwise ops, links or "
       "on-chip DMA for collectives.</p>\n";
  h += "<h3>" + Escape(PhaseTitle(e, false)) + "</h3>\n" + UtilisationChart(e.prefill, 0);
  h += "<h3>" + Escape(PhaseTitle(e, true)) + "</h3>\n" +
       UtilisationChart(e.decode, e.prefill.seconds);

  h += "<h2>Memory per chip</h2>\n<p>" +
       Escape(Fmt("%d rank(s) per chip on %d chip(s)%s.", f.ranks_per_chip, f.chips,
                  l.pp > 1 ? "; the fullest pipeline stage's chips" : "; every chip alike")) +
       "</p>\n" + MemoryChart(f);

  h += "<h2>Ops</h2>\n<h3>" + Escape(PhaseTitle(e, false)) + "</h3>\n" + OpTable(e.prefill);
  h += "<h3>" + Escape(PhaseTitle(e, true)) + "</h3>\n" + OpTable(e.decode);

  h += "<h2>How these numbers are made</h2>\n<ul>\n"
       "<li>Analytical mode: every op is max(FLOPs / peak, HBM bytes / bandwidth) of one rank; "
       "collectives are lowered and simulated once per distinct size; ops add up in series "
       "(no overlap). docs/models.md has every formula and what is not modelled.</li>\n"
       "<li>Energy: chips holding ranks x the chip power of the machine description, over the "
       "output tokens per second; hosts, switches and cooling excluded.</li>\n"
       "<li>Model: the numbers of its config.json (built-in configs: docs/models.md says "
       "where each was read).</li>\n</ul>\n</body></html>\n";
  return h;
}

}  // namespace trnmx::emu
