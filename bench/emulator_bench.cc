// Simulator speed (issue bar: >= 5 million events per second; the 8192^3 chip
// GEMM simulates in < 2 s). Counters: events/s and instructions/s.
#include <benchmark/benchmark.h>

#include "trnmx/emu/gemm.h"
#include "trnmx/emu/simulator.h"

namespace trnmx::emu {
namespace {

void RunProgram(benchmark::State& state, const Program& program) {
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
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events),
                                                  benchmark::Counter::kIsRate);
  state.counters["instructions/s"] = benchmark::Counter(
      static_cast<double>(program.instruction_count() * state.iterations()),
      benchmark::Counter::kIsRate);
  state.counters["events/run"] = static_cast<double>(events) / state.iterations();
}

// Lowering + simulation of the 8192^3 MXFP8 GEMM on a trn3 chip.
void BM_Gemm8192Mxfp8Chip(benchmark::State& state) {
  const Machine m = LoadPresetMachine("trn3").value();
  GemmConfig c;
  c.m = c.n = c.k = 8192;
  c.dtype = MatmulDtype::kMxfp8;
  c.cores = 8;
  for (auto _ : state) {
    LoweredGemm g = LowerGemm(m, c).value();
    benchmark::DoNotOptimize(Simulate(g.program).value().end_ps);
  }
}
BENCHMARK(BM_Gemm8192Mxfp8Chip)->Unit(benchmark::kMillisecond);

// Simulation only, of the same program.
void BM_Simulate8192Mxfp8Chip(benchmark::State& state) {
  GemmConfig c;
  c.m = c.n = c.k = 8192;
  c.dtype = MatmulDtype::kMxfp8;
  c.cores = 8;
  LoweredGemm g = LowerGemm(LoadPresetMachine("trn3").value(), c).value();
  RunProgram(state, g.program);
}
BENCHMARK(BM_Simulate8192Mxfp8Chip)->Unit(benchmark::kMillisecond);

// Event-heavy program: on each of 8 cores, VectorE and ScalarE ping-pong
// through semaphores (every instruction waits and signals) while a DMA queue
// streams small transfers that each signal.
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
      Instruction v = Instruction::Elementwise(Opcode::kTensorCopy, b, a, 128, 256,
                                               ElemType::kBf16, ElemType::kBf16);
      if (i > 0) v.waits = {{pong, i}};
      v.signals = {{ping, 1}};
      (void)p.Append(p.EngineStream(core, EngineKind::kVector), v);
      Instruction s = Instruction::Elementwise(Opcode::kActivation, a, b, 128, 256,
                                               ElemType::kBf16, ElemType::kBf16);
      s.waits = {{ping, i + 1}};
      s.signals = {{pong, 1}};
      (void)p.Append(p.EngineStream(core, EngineKind::kScalar), s);
      Instruction d = Instruction::DmaCopy(hbm, a, 16384, 128);
      d.signals = {{dma, 1}};
      (void)p.Append(q, d);
    }
  }
  RunProgram(state, p);
}
BENCHMARK(BM_SemaphorePingPong)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace trnmx::emu
BENCHMARK_MAIN();
