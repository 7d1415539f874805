// Report and Chrome trace of a simulated program.
#include "trnmx/emu/report.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "trace/chrome_trace.h"

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

}  // namespace trnmx::emu
