// Reports and traces of a simulated program.
//
//   Report r = MakeReport(program, result, flops, MatmulDtype::kMxfp8);
//   std::cout << FormatReport(r);
//   std::string json = ChromeTraceJson(program, result);  // chrome://tracing, Perfetto
//   std::string svg = TimelineSvg(program, result);       // any browser or image viewer
#ifndef TRNMX_EMU_REPORT_H_
#define TRNMX_EMU_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "trnmx/emu/machine.h"
#include "trnmx/emu/program.h"
#include "trnmx/emu/simulator.h"

namespace trnmx::emu {

struct ResourceUse {
  std::string name;  // "TensorE", "VectorE", "ScalarE", "GpSimdE", "DMA engines", "HBM", "links"
  double busy = 0;   // fraction of the run time, averaged over the units in use
};

struct Report {
  std::string machine;
  int chips = 1;
  int cores = 0;  // all chips
  int64_t time_ps = 0;
  double flops = 0;
  double achieved_flops_per_s = 0;
  double peak_flops_per_s = 0;  // modelled TensorE peak of the cores in use
  double fraction_of_peak = 0;
  std::vector<ResourceUse> resources;
  std::string limiting;  // name of the busiest resource
  std::string bound;     // "compute (TensorE)", "memory (HBM bandwidth)", ...
  int64_t dma_bytes = 0, hbm_read_bytes = 0, hbm_write_bytes = 0;
  int64_t link_transfer_bytes = 0;  // written into other chips' HBM over links
  std::string busiest_link;         // name of the busiest link; empty without transfers
  double hbm_bytes_per_s = 0;       // achieved
  double hbm_peak_bytes_per_s = 0;  // published peak of the stacks in use
  int64_t sbuf_high_water = 0, sbuf_capacity = 0;  // bytes per partition, worst core
  int64_t psum_high_water = 0, psum_capacity = 0;
  int64_t instructions = 0, events = 0;
  double throttle_extra_fraction = 0;  // share of TensorE time added by the throttle
};

// `flops` and `dtype` give achieved vs peak; pass flops = 0 for non-matmul programs.
Report MakeReport(const Program& program, const SimResult& result, double flops, MatmulDtype dtype);
std::string FormatReport(const Report& report);

// Chrome trace-event JSON: one process per core, one track per engine, DMA
// queue and collective queue, one complete event per instruction; on a
// system, one more process with a track per link in use and an event per
// transfer on it (needs SimOptions::record_trace).
std::string ChromeTraceJson(const Program& program, const SimResult& result);

// The same trace drawn as one standalone SVG image (no script, no external
// reference; needs SimOptions::record_trace): a row per engine, DMA queue
// and collective queue that ran something, core by core (the first 48), and
// on a system a row for each of the 16 busiest links; every instruction is a
// box coloured by opcode (links: one colour) on a time axis in microseconds.
// Drawn at pixel resolution: each pixel column of a row shows the opcode
// busy longest in it, so a row has at most 1,136 boxes, however long the
// program.
// The caption says how many tracks and links are shown of how many.
std::string TimelineSvg(const Program& program, const SimResult& result);

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_REPORT_H_
