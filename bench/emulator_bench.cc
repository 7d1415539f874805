// Simulator speed (issue 5 bar: >= 5 million events per second; the 8192^3
// chip GEMM simulates in < 2 s; issue 10's system bars below).
//
// What counts as an event: one entry taken from the simulator's (time, seq)
// queue, i.e. SimResult::events. An entry is either a sequencer wake-up (a
// semaphore wait whose latency has not yet elapsed, a DMA queue handing its
// next transfer to the engines) or the completion of an instruction that
// signals a semaphore. An instruction that can start at once is issued
// without an event, and a completion that signals nothing makes none, so a
// GEMM has about 0.2 events per instruction: events/s depends on how
// event-dense a program is, and instructions/s (every instruction simulated)
// is the figure to compare across programs. Both are per run of Simulate()
// on an already lowered program; the BM_LowerAndSimulate* cases add the
// lowering, which is the wall time a user of `trnmx-emu gemm` sees.
#include <benchmark/benchmark.h>

#include "trnmx/emu/collective.h"
#include "trnmx/emu/gemm.h"
#include "trnmx/emu/parallel.h"
#include "trnmx/emu/simulator.h"
#include "trnmx/emu/system.h"

namespace trnmx::emu {
namespace {

GemmConfig Gemm(int64_t m, int64_t n, int64_t k, MatmulDtype dtype, int cores) {
  GemmConfig c;
  c.m = m;
  c.n = n;
  c.k = k;
  c.dtype = dtype;
  c.cores = cores;
  return c;
}

void SimulateProgram(benchmark::State& state, const Program& program) {
  int64_t events = 0;
  for (auto _ : state) {
    StatusOr<SimResult> r = Simulate(program);
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
    events += r->events;
    benchmark::DoNotOptimize(r->end_ps);
  }
  const double runs = static_cast<double>(state.iterations());
  const double instructions = static_cast<double>(program.instruction_count());
  state.counters["events/s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["instructions/s"] =
      benchmark::Counter(instructions * runs, benchmark::Counter::kIsRate);
  state.counters["events/run"] = static_cast<double>(events) / runs;
  state.counters["instructions/run"] = instructions;
}

void SimulateGemm(benchmark::State& state, const GemmConfig& config) {
  StatusOr<LoweredGemm> g = LowerGemm(LoadPresetMachine("trn3").value(), config);
  if (!g.ok()) {
    state.SkipWithError(g.status().ToString().c_str());
    return;
  }
  SimulateProgram(state, g->program);
}

void LowerAndSimulateGemm(benchmark::State& state, const GemmConfig& config) {
  const Machine m = LoadPresetMachine("trn3").value();
  for (auto _ : state) {
    StatusOr<LoweredGemm> g = LowerGemm(m, config);
    if (!g.ok()) {
      state.SkipWithError(g.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(Simulate(g->program).value().end_ps);
  }
}

// The workload: 8192^3 MXFP8 on the 8 cores of a trn3 chip
// (compute-bound).
void BM_Simulate8192Mxfp8Chip(benchmark::State& state) {
  SimulateGemm(state, Gemm(8192, 8192, 8192, MatmulDtype::kMxfp8, 8));
}
BENCHMARK(BM_Simulate8192Mxfp8Chip)->Unit(benchmark::kMillisecond);

// 4096^3 BF16 on one core: one DMA-heavy core, K tiles of 128.
void BM_Simulate4096Bf16Core(benchmark::State& state) {
  SimulateGemm(state, Gemm(4096, 4096, 4096, MatmulDtype::kBf16, 1));
}
BENCHMARK(BM_Simulate4096Bf16Core)->Unit(benchmark::kMillisecond);

// Matrix-vector BF16 on the chip: memory-bound, many small DMA transfers.
void BM_SimulateGemvBf16Chip(benchmark::State& state) {
  SimulateGemm(state, Gemm(1, 65536, 8192, MatmulDtype::kBf16, 8));
}
BENCHMARK(BM_SimulateGemvBf16Chip)->Unit(benchmark::kMillisecond);

// Long K: 2048 x 2048 x 65536 BF16 on the chip, lowered with K blocks
// accumulating in PSUM.
void BM_SimulateLongKBf16Chip(benchmark::State& state) {
  SimulateGemm(state, Gemm(2048, 2048, 65536, MatmulDtype::kBf16, 8));
}
BENCHMARK(BM_SimulateLongKBf16Chip)->Unit(benchmark::kMillisecond);

// Lowering + simulation of the 8192^3 chip GEMM (the "< 2 s" bar).
void BM_LowerAndSimulate8192Mxfp8Chip(benchmark::State& state) {
  LowerAndSimulateGemm(state, Gemm(8192, 8192, 8192, MatmulDtype::kMxfp8, 8));
}
BENCHMARK(BM_LowerAndSimulate8192Mxfp8Chip)->Unit(benchmark::kMillisecond);

// Issue 10's speed bars on trn3-ultraserver-gen2 (144 chips), wall time of
// lowering plus simulation (the bar: each < 1 s):
//   * a 1 GiB all-reduce over every rank (576 at LNC 2; auto's
//     hierarchical schedule, 36 servers x 16 ranks, 172,800 transfers where
//     the flat ring has 1.99 M; simulated rank by rank: the routes differ);
//   * an 8192^3 MXFP8 GEMM on each chip (8 cores) followed by the
//     all-reduce of the outputs (128 MiB per chip, one rank per chip), the
//     identical chips' GEMM simulated once (parallel.h).
const System& Gen2() {
  static const System s = LoadSystem("trn3-ultraserver-gen2").value();
  return s;
}

void BM_AllReduce1GiBGen2AllRanks(benchmark::State& state) {
  CollectiveConfig c;
  c.op = CollectiveOp::kAllReduce;
  c.bytes = int64_t{1} << 30;
  int64_t events = 0, instructions = 0;
  for (auto _ : state) {
    StatusOr<LoweredCollective> l = LowerCollective(Gen2(), c);
    if (!l.ok()) {
      state.SkipWithError(l.status().ToString().c_str());
      return;
    }
    StatusOr<SimResult> r = Simulate(l->program);
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
    events = r->events;
    instructions = l->program.instruction_count();
    benchmark::DoNotOptimize(r->end_ps);
  }
  state.counters["events/run"] = static_cast<double>(events);
  state.counters["instructions/run"] = static_cast<double>(instructions);
}
BENCHMARK(BM_AllReduce1GiBGen2AllRanks)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_GemmThenAllReduceGen2(benchmark::State& state) {
  TensorParallelGemmConfig c;
  c.gemm = Gemm(8192, 8192, 8192, MatmulDtype::kMxfp8, 8);
  int64_t events = 0, instructions = 0;
  for (auto _ : state) {
    StatusOr<TensorParallelTiming> t = SimulateTensorParallelGemm(Gen2(), c);
    if (!t.ok()) {
      state.SkipWithError(t.status().ToString().c_str());
      return;
    }
    events = t->events;
    instructions = t->instructions;
    benchmark::DoNotOptimize(t->end_ps);
  }
  state.counters["events/run"] = static_cast<double>(events);
  state.counters["instructions/run"] = static_cast<double>(instructions);
}
BENCHMARK(BM_GemmThenAllReduceGen2)->Unit(benchmark::kMillisecond);

// Event-heavy synthetic program: on each of 8 cores, VectorE and ScalarE
// ping-pong through semaphores (every instruction waits and signals) while
// a DMA queue streams small transfers that each signal. About 2.4 events per
// instruction: an upper end for events/s, not a realistic kernel.
void BM_SemaphorePingPong(benchmark::State& state) {
  const int steps = static_cast<int>(state.range(0));
  Program p = Program::Create(LoadPresetMachine("trn3").value(), 8).value();
  BufferId hbm = p.AllocHbm("src", 1 << 20).value();
  for (int core = 0; core < 8; ++core) {
    BufferId a = p.AllocSbuf(core, "a", 1024).value();
    BufferId b = p.AllocSbuf(core, "b", 1024).value();
    SemId ping = p.AddSemaphore(core, "ping").value();
    SemId pong = p.AddSemaphore(core, "pong").value();
    SemId dma = p.AddSemaphore(core, "dma").value();
    const StreamId q = p.AddDmaQueue(core, "q").value();
    for (int i = 0; i < steps; ++i) {
      Instruction v = Instruction::Elementwise(Opcode::kTensorCopy, b, a, 128, 256, ElemType::kBf16,
                                               ElemType::kBf16);
      if (i > 0) v.waits = {{pong, i}};
      v.signals = {{ping, 1}};
      Instruction s = Instruction::Elementwise(Opcode::kActivation, a, b, 128, 256, ElemType::kBf16,
                                               ElemType::kBf16);
      s.waits = {{ping, i + 1}};
      s.signals = {{pong, 1}};
      Instruction d = Instruction::DmaCopy(hbm, a, 16384, 128);
      d.signals = {{dma, 1}};
      for (Status st : {p.Append(p.EngineStream(core, EngineKind::kVector), std::move(v)),
                        p.Append(p.EngineStream(core, EngineKind::kScalar), std::move(s)),
                        p.Append(q, std::move(d))}) {
        if (!st.ok()) {
          state.SkipWithError(st.ToString().c_str());
          return;
        }
      }
    }
  }
  SimulateProgram(state, p);
}
BENCHMARK(BM_SemaphorePingPong)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace trnmx::emu
BENCHMARK_MAIN();
