// Report and Chrome trace of a simulated program.
#include "trnmx/emu/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "trace/chrome_trace.h"
#include "trace/markup.h"

namespace trnmx::emu {

Report MakeReport(const Program& p, const SimResult& r, double flops, MatmulDtype dtype) {
  const Machine& m = p.machine();
  Report rep;
  rep.machine = m.name;
  rep.chips = p.chips();
  rep.cores = p.cores();
  rep.time_ps = r.end_ps;
  rep.flops = flops;
  const double seconds = static_cast<double>(r.end_ps) * 1e-12;
  rep.peak_flops_per_s = CorePeakFlops(m, dtype) * p.cores();
  if (seconds > 0) {
    rep.achieved_flops_per_s = flops / seconds;
    rep.fraction_of_peak =
        rep.peak_flops_per_s > 0 ? rep.achieved_flops_per_s / rep.peak_flops_per_s : 0;
  }
  const double t = std::max<double>(1, static_cast<double>(r.end_ps));
  double busy[kComputeEngines] = {};
  int64_t tensor_busy = 0;
  for (size_t s = 0; s < p.streams().size(); ++s) {
    const Stream& st = p.streams()[s];
    if (st.engine == EngineKind::kDma || st.engine == EngineKind::kCollective) continue;
    busy[static_cast<int>(st.engine)] += static_cast<double>(r.streams[s].busy_ps);
    if (st.engine == EngineKind::kTensor) tensor_busy += r.streams[s].busy_ps;
  }
  const char* names[kComputeEngines] = {"TensorE", "VectorE", "ScalarE", "GpSimdE"};
  for (int e = 0; e < kComputeEngines; ++e) {
    rep.resources.push_back({names[e], busy[e] / (t * p.cores())});
  }
  double dma_busy = 0;
  for (int64_t b : r.dma_engine_busy_ps) dma_busy += static_cast<double>(b);
  const double dma_use = dma_busy / (t * static_cast<double>(r.dma_engine_busy_ps.size()));
  rep.resources.push_back({"DMA engines", dma_use});
  // HBM: the stacks of the cores in use (cores 2i and 2i+1 share stack i).
  const int stacks = static_cast<int>(m.hbm.stacks.value);
  std::set<int> used;
  for (int c = 0; c < p.cores(); ++c) {
    used.insert(p.ChipOfCore(c) * stacks + HbmStackOfCore(m, p.LocalCore(c)));
  }
  double hbm_busy = 0;
  for (int s : used) hbm_busy += static_cast<double>(r.hbm_stack_busy_ps[s]);
  const double hbm_use = hbm_busy / (t * static_cast<double>(used.size()));
  rep.resources.push_back({"HBM", hbm_use});
  // Links of the system: the busiest one stands for them all.
  if (const System* sys = p.system(); sys != nullptr && r.link_transfer_bytes > 0) {
    const auto busiest = std::max_element(r.link_busy_ps.begin(), r.link_busy_ps.end());
    const size_t id = static_cast<size_t>(busiest - r.link_busy_ps.begin());
    rep.busiest_link = sys->links[id].name;
    rep.resources.push_back({"links", static_cast<double>(*busiest) / t});
  }
  rep.link_transfer_bytes = r.link_transfer_bytes;
  rep.hbm_peak_bytes_per_s = m.hbm.bandwidth_bytes_per_s.value * used.size() / stacks;
  rep.dma_bytes = r.dma_bytes;
  rep.hbm_read_bytes = r.hbm_read_bytes;
  rep.hbm_write_bytes = r.hbm_write_bytes;
  if (seconds > 0) rep.hbm_bytes_per_s = (r.hbm_read_bytes + r.hbm_write_bytes) / seconds;
  auto best =
      std::max_element(rep.resources.begin(), rep.resources.end(),
                       [](const ResourceUse& a, const ResourceUse& b) { return a.busy < b.busy; });
  rep.limiting = best->name;
  if (best->busy < 0.5) {
    rep.bound = "latency (no resource above 50 % busy; busiest " + best->name + ")";
  } else if (rep.limiting == "TensorE") {
    rep.bound = "compute (TensorE)";
  } else if (rep.limiting == "links") {
    rep.bound = "network (link " + rep.busiest_link + ")";
  } else if (rep.limiting == "HBM" || rep.limiting == "DMA engines") {
    char text[160];
    std::snprintf(text, sizeof text,
                  "memory (HBM traffic: HBM stacks %.1f %% busy, DMA engines %.1f %% busy)",
                  100 * hbm_use, 100 * dma_use);
    rep.bound = text;
  } else {
    rep.bound = "elementwise (" + rep.limiting + ")";
  }
  for (int c = 0; c < p.cores(); ++c) {
    rep.sbuf_high_water = std::max(rep.sbuf_high_water, p.sbuf_high_water(c));
    rep.psum_high_water = std::max(rep.psum_high_water, p.psum_high_water(c));
  }
  rep.sbuf_capacity = m.sbuf_usable_bytes_per_partition();
  rep.psum_capacity = m.psum_bytes_per_partition();
  rep.instructions = p.instruction_count();
  rep.events = r.events;
  if (tensor_busy > 0) {
    rep.throttle_extra_fraction = static_cast<double>(r.tensor_throttle_extra_ps) / tensor_busy;
  }
  return rep;
}

std::string FormatReport(const Report& r) {
  std::ostringstream os;
  char line[256];
  if (r.chips > 1) {
    std::snprintf(line, sizeof line, "machine           %d x %s, %d core(s) each\n", r.chips,
                  r.machine.c_str(), r.cores / r.chips);
  } else {
    std::snprintf(line, sizeof line, "machine           %s, %d core(s)\n", r.machine.c_str(),
                  r.cores);
  }
  os << line;
  std::snprintf(line, sizeof line, "time              %.3f us (%lld ps)\n", r.time_ps / 1e6,
                static_cast<long long>(r.time_ps));
  os << line;
  if (r.flops > 0) {
    std::snprintf(line, sizeof line,
                  "throughput        %.1f TFLOP/s of %.1f modelled TensorE peak (%.1f %%)\n",
                  r.achieved_flops_per_s / 1e12, r.peak_flops_per_s / 1e12,
                  100 * r.fraction_of_peak);
    os << line;
  }
  os << "busy              ";
  for (size_t i = 0; i < r.resources.size(); ++i) {
    std::snprintf(line, sizeof line, "%s%s %.1f %%", i ? ", " : "", r.resources[i].name.c_str(),
                  100 * r.resources[i].busy);
    os << line;
  }
  os << "\n";
  std::snprintf(line, sizeof line, "limiting          %s -> %s\n", r.limiting.c_str(),
                r.bound.c_str());
  os << line;
  std::snprintf(line, sizeof line,
                "DMA               %.3f MB moved; HBM read %.3f MB, written %.3f MB\n",
                r.dma_bytes / 1e6, r.hbm_read_bytes / 1e6, r.hbm_write_bytes / 1e6);
  os << line;
  if (!r.busiest_link.empty()) {
    std::snprintf(line, sizeof line, "links             %.3f MB between chips; busiest %s\n",
                  r.link_transfer_bytes / 1e6, r.busiest_link.c_str());
    os << line;
  }
  std::snprintf(line, sizeof line, "HBM bandwidth     %.1f GB/s of %.1f GB/s peak (%.1f %%)\n",
                r.hbm_bytes_per_s / 1e9, r.hbm_peak_bytes_per_s / 1e9,
                100 * r.hbm_bytes_per_s / r.hbm_peak_bytes_per_s);
  os << line;
  std::snprintf(line, sizeof line,
                "SBUF high-water   %lld of %lld B per partition (%.1f %%)\n"
                "PSUM high-water   %lld of %lld B per partition (%.1f %%)\n",
                static_cast<long long>(r.sbuf_high_water), static_cast<long long>(r.sbuf_capacity),
                100.0 * r.sbuf_high_water / r.sbuf_capacity,
                static_cast<long long>(r.psum_high_water), static_cast<long long>(r.psum_capacity),
                100.0 * r.psum_high_water / r.psum_capacity);
  os << line;
  std::snprintf(line, sizeof line, "throttle          +%.2f %% of TensorE time\n",
                100 * r.throttle_extra_fraction);
  os << line;
  std::snprintf(line, sizeof line, "program           %lld instructions, %lld events\n",
                static_cast<long long>(r.instructions), static_cast<long long>(r.events));
  os << line;
  return os.str();
}

std::string ChromeTraceJson(const Program& p, const SimResult& r) {
  internal::ChromeTrace trace;
  for (int c = 0; c < p.cores(); ++c) {
    const std::string core = "core " + std::to_string(p.LocalCore(c));
    trace.Process(c, p.chips() > 1 ? "chip " + std::to_string(p.ChipOfCore(c)) + " " + core : core);
  }
  for (size_t s = 0; s < p.streams().size(); ++s) {
    const Stream& st = p.streams()[s];
    trace.Track(st.core, static_cast<int>(s), st.name, true);
  }
  for (const TraceRecord& t : r.trace) {
    const Stream& st = p.streams()[t.stream];
    const Instruction& in = st.instructions[t.index];
    trace.Complete(st.core, t.stream, std::string(OpcodeName(in.op)),
                   std::string(EngineKindName(st.engine)), static_cast<double>(t.start_ps) / 1e6,
                   static_cast<double>(t.end_ps - t.start_ps) / 1e6,
                   {{"index", t.index},
                    {"what", p.Describe(in)},
                    {"start_ps", t.start_ps},
                    {"end_ps", t.end_ps}});
  }
  // Links of the system in use: one more process, one track per link.
  if (const System* sys = p.system(); sys != nullptr && !r.link_trace.empty()) {
    const int pid = p.cores();
    trace.Process(pid, "links of " + sys->name);
    std::set<int> used;
    for (const LinkTraceRecord& l : r.link_trace) used.insert(l.link);
    for (int id : used) trace.Track(pid, id, sys->links[id].name, false);
    for (const LinkTraceRecord& l : r.link_trace) {
      const Instruction& in = p.streams()[l.stream].instructions[l.index];
      trace.Complete(pid, l.link, p.streams()[l.stream].name, "link",
                     static_cast<double>(l.start_ps) / 1e6,
                     static_cast<double>(l.end_ps - l.start_ps) / 1e6,
                     {{"what", p.Describe(in)}, {"bytes", in.bytes}});
    }
  }
  return trace.Dump({{"machine", p.machine().name}, {"end_ps", r.end_ps}});
}

namespace {

// Tableau 10: distinct on screen and in print; opcodes take them in order of
// first appearance, links have their own.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#76b7b2", "#edc948",
                                    "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr const char* kLinkColor = "#e15759";

struct TimelineBox {
  double x0, x1;  // pixels from the plot's left edge
  int color;      // index into kPalette; -1: kLinkColor
};

struct TimelineRow {
  std::string label;
  std::vector<TimelineBox> boxes;
};

// Draws a row at pixel resolution: each pixel column takes the colour that
// was busy longest in it (a column with any busy time is drawn, so short
// instructions stay visible), and runs of one colour become one box. A row
// thus holds at most one box per pixel, however many instructions it ran.
void RasterizeRow(std::vector<TimelineBox>& boxes, double width) {
  const size_t columns = static_cast<size_t>(std::ceil(width));
  std::map<int, std::vector<double>> busy;  // colour -> busy pixels per column
  for (const TimelineBox& b : boxes) {
    std::vector<double>& col = busy.try_emplace(b.color, columns, 0.0).first->second;
    const double x1 = std::min(b.x1, width);
    for (double x = std::max(0.0, b.x0); x < x1;) {
      const double next = std::min(std::floor(x) + 1, x1);
      col[std::min(columns - 1, static_cast<size_t>(x))] += std::max(next - x, 1e-9);
      x = next;
    }
  }
  std::vector<TimelineBox> runs;
  for (size_t c = 0; c < columns; ++c) {
    int best = 0;
    double most = 0;
    for (const auto& [color, col] : busy) {
      if (col[c] > most) most = col[c], best = color;
    }
    if (most <= 0) continue;
    const double x = static_cast<double>(c);
    if (!runs.empty() && runs.back().color == best && runs.back().x1 == x) {
      runs.back().x1 = x + 1;
    } else {
      runs.push_back({x, x + 1, best});
    }
  }
  boxes = std::move(runs);
}

}  // namespace

std::string TimelineSvg(const Program& p, const SimResult& r) {
  using internal::Escape;
  using internal::Fmt;
  constexpr size_t kMaxStreamRows = 48, kMaxLinkRows = 16;
  constexpr double kWidth = 1400, kLeft = 240, kRight = 24, kRowH = 14, kTop = 64;
  const double plot_w = kWidth - kLeft - kRight;
  const double end_ps = static_cast<double>(std::max<int64_t>(1, r.end_ps));
  const double scale = plot_w / end_ps;

  // Streams that ran something, core by core, the first kMaxStreamRows.
  std::vector<int64_t> count(p.streams().size(), 0);
  for (const TraceRecord& t : r.trace) ++count[t.stream];
  std::vector<size_t> order(p.streams().size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return p.streams()[a].core < p.streams()[b].core; });
  std::vector<TimelineRow> rows;
  std::vector<int> row_of_stream(p.streams().size(), -1);
  size_t active = 0;
  for (size_t s : order) {
    if (count[s] == 0) continue;
    ++active;
    if (rows.size() >= kMaxStreamRows) continue;
    row_of_stream[s] = static_cast<int>(rows.size());
    rows.push_back({p.streams()[s].name, {}});  // "core0.tensor", "chip3.core1.cc.rank13"
  }
  std::vector<std::string> opcodes;  // colour i is opcodes[i]
  std::map<std::string, int> color_of;
  for (const TraceRecord& t : r.trace) {
    const int row = row_of_stream[t.stream];
    if (row < 0) continue;
    const std::string op(OpcodeName(p.streams()[t.stream].instructions[t.index].op));
    auto [it, added] = color_of.try_emplace(op, static_cast<int>(opcodes.size()));
    if (added) opcodes.push_back(op);
    const int color = it->second % static_cast<int>(std::size(kPalette));
    rows[static_cast<size_t>(row)].boxes.push_back(
        {static_cast<double>(t.start_ps) * scale, static_cast<double>(t.end_ps) * scale, color});
  }
  // The busiest links, busiest first.
  const size_t stream_rows = rows.size();
  size_t links_used = 0;
  if (const System* sys = p.system(); sys != nullptr && !r.link_trace.empty()) {
    std::map<int, int64_t> busy;
    for (const LinkTraceRecord& l : r.link_trace) busy[l.link] += l.end_ps - l.start_ps;
    std::vector<std::pair<int64_t, int>> ranked;
    for (const auto& [link, ps] : busy) ranked.emplace_back(-ps, link);
    std::sort(ranked.begin(), ranked.end());
    links_used = ranked.size();
    std::map<int, size_t> row_of_link;
    for (size_t i = 0; i < std::min(kMaxLinkRows, ranked.size()); ++i) {
      row_of_link[ranked[i].second] = rows.size();
      rows.push_back({"link " + sys->links[static_cast<size_t>(ranked[i].second)].name, {}});
    }
    for (const LinkTraceRecord& l : r.link_trace) {
      auto it = row_of_link.find(l.link);
      if (it == row_of_link.end()) continue;
      rows[it->second].boxes.push_back(
          {static_cast<double>(l.start_ps) * scale, static_cast<double>(l.end_ps) * scale, -1});
    }
  }
  for (TimelineRow& row : rows) RasterizeRow(row.boxes, plot_w);

  const double axis_y = kTop + kRowH * static_cast<double>(rows.size()) + 4;
  const double height = axis_y + 40;
  std::string s =
      Fmt("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
          "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n"
          "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
          kWidth, height, kWidth, height);
  std::string title = p.machine().name + ", " + std::to_string(p.cores()) + " core(s)";
  if (p.chips() > 1) title = std::to_string(p.chips()) + " x " + title + " in all";
  if (const System* sys = p.system(); sys != nullptr) title += " on " + sys->name;
  s += Fmt("<text x=\"8\" y=\"18\" font-size=\"14\">%s: %.3f us, %lld instructions</text>\n",
           Escape(title).c_str(), end_ps / 1e6, static_cast<long long>(p.instruction_count()));
  std::string shown = Fmt("%zu of %zu active engine/queue tracks", stream_rows, active);
  if (links_used > 0) {
    shown += Fmt(", the %zu busiest of %zu links in use", rows.size() - stream_rows, links_used);
  }
  s +=
      Fmt("<text x=\"8\" y=\"34\" fill=\"#555555\">%s; each pixel column shows what was "
          "busy longest in it</text>\n",
          shown.c_str());
  // Legend: opcodes in order of appearance, then links.
  double lx = 8;
  auto key = [&](const std::string& name, const char* color) {
    s += Fmt("<rect x=\"%.1f\" y=\"42\" width=\"10\" height=\"10\" fill=\"%s\"/>", lx, color);
    s += Fmt("<text x=\"%.1f\" y=\"51\">%s</text>\n", lx + 13, Escape(name).c_str());
    lx += 13 + 6.5 * static_cast<double>(name.size()) + 12;
  };
  for (size_t i = 0; i < opcodes.size(); ++i) key(opcodes[i], kPalette[i % std::size(kPalette)]);
  if (links_used > 0) key("link transfer", kLinkColor);
  // Rows.
  for (size_t i = 0; i < rows.size(); ++i) {
    const double y = kTop + kRowH * static_cast<double>(i);
    s += Fmt("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", kLeft - 6, y + 10,
             Escape(rows[i].label).c_str());
    s += Fmt("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", kLeft,
             y + 1, plot_w, kRowH - 2, i % 2 ? "#f4f4f4" : "#eaeaea");
    for (const TimelineBox& b : rows[i].boxes) {
      s += Fmt("<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"/>\n",
               kLeft + b.x0, y + 1, std::max(0.3, b.x1 - b.x0), kRowH - 2,
               b.color < 0 ? kLinkColor : kPalette[b.color]);
    }
  }
  // Time axis in microseconds, four to eight round steps.
  const double end_us = end_ps / 1e6, step = internal::NiceCeiling(end_us) / 4;
  s += Fmt("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333333\"/>\n", kLeft,
           axis_y, kLeft + plot_w, axis_y);
  for (int k = 0; k * step <= end_us * (1 + 1e-9); ++k) {
    const double x = kLeft + plot_w * (k * step) / end_us;
    s += Fmt("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333333\"/>", x,
             axis_y, x, axis_y + 4);
    s += Fmt("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.4g us</text>\n", x, axis_y + 16,
             k * step);
  }
  return s + "</svg>\n";
}

}  // namespace trnmx::emu
