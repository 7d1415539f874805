// Discrete-event simulator: events ordered by (time, sequence), integer ps.
#include "trnmx/emu/simulator.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <deque>
#include <queue>
#include <string>
#include <utility>
#include <vector>

namespace trnmx::emu {
namespace {

__extension__ typedef unsigned __int128 Uint128;

constexpr int64_t kPsPerNs = 1000;
constexpr int64_t kPpm = 1000000;

int64_t CeilPs(double seconds) { return static_cast<int64_t>(std::ceil(seconds * 1e12)); }

bool Is16Bit(ElemType t) { return t == ElemType::kBf16 || t == ElemType::kFp16; }

struct Event {
  int64_t time;
  int64_t seq;
  int32_t stream;
  int32_t index;  // instruction index for kComplete
  uint8_t kind;   // 0 = issue, 1 = complete
};
struct EventLater {
  bool operator()(const Event& a, const Event& b) const {
    return a.time != b.time ? a.time > b.time : a.seq > b.seq;
  }
};
constexpr uint8_t kIssue = 0;
constexpr uint8_t kComplete = 1;

struct SemState {
  int64_t value = 0;
  std::vector<std::pair<int64_t, int64_t>> history;  // (value after increment, time)
  std::vector<StreamId> waiters;
};

struct StreamState {
  size_t pc = 0;
  bool blocked = false;
  bool issue_scheduled = false;
  int64_t unit_free = 0;  // Vector/Scalar/GpSimd
};

// TensorE of one core: LoadStationary unit, MultiplyMoving unit, two weight
// slots, throttle history.
struct TensorState {
  int64_t ls_free = 0;
  int64_t mm_free = 0;
  int64_t slot_release[2] = {0, 0};  // end of the last MM that read each slot
  int64_t weights_ready = 0;
  int slot = 1;  // slot of the current weights; the first LS goes to slot 0
  std::deque<std::pair<int64_t, int64_t>> busy;  // recent MM intervals
  int64_t burst_start = INT64_MIN / 4;  // no burst yet
};

class Sim {
 public:
  Sim(const Program& p, const SimOptions& o) : p_(p), m_(p.machine()), opt_(o) {
    const auto& streams = p.streams();
    st_.resize(streams.size());
    res_.streams.resize(streams.size());
    sems_.resize(p.semaphores().size());
    tensor_.resize(p.cores());
    engines_ = static_cast<int>(m_.dma.engines.value);
    dma_free_.assign(static_cast<size_t>(p.cores()) * engines_, 0);
    res_.dma_engine_busy_ps.assign(dma_free_.size(), 0);
    const int stacks = static_cast<int>(m_.hbm.stacks.value);
    stack_free_.assign(stacks, 0);
    res_.hbm_stack_busy_ps.assign(stacks, 0);
    cores_per_stack_ = m_.core_count() / stacks;
    window_ps_ = static_cast<int64_t>(m_.tensor.throttle_window_ns.value) * kPsPerNs;
    ramp_ps_ = static_cast<int64_t>(m_.tensor.throttle_ramp_ns.value) * kPsPerNs;
    start_ppm_ = static_cast<int64_t>(std::llround(m_.tensor.throttle_start_fraction.value * kPpm));
    dma_dep_ps_ = static_cast<int64_t>(std::llround(m_.dma.dependency_start_ns.value * kPsPerNs));
    const int64_t lat = static_cast<int64_t>(m_.sync.semaphore_latency_cycles.value);
    sem_lat_[static_cast<int>(EngineKind::kTensor)] = CyclesToPs(lat, m_.tensor.clock_hz.value);
    sem_lat_[static_cast<int>(EngineKind::kVector)] = CyclesToPs(lat, m_.vector.clock_hz.value);
    sem_lat_[static_cast<int>(EngineKind::kScalar)] = CyclesToPs(lat, m_.scalar.clock_hz.value);
    sem_lat_[static_cast<int>(EngineKind::kGpSimd)] = CyclesToPs(lat, m_.gpsimd.clock_hz.value);
    sem_lat_[static_cast<int>(EngineKind::kDma)] = dma_dep_ps_;
  }

  StatusOr<SimResult> Run() {
    for (StreamId s = 0; s < static_cast<StreamId>(st_.size()); ++s) Issue(s, 0);
    while (!queue_.empty()) {
      const Event e = queue_.top();
      queue_.pop();
      ++res_.events;
      if (e.kind == kIssue) {
        st_[e.stream].issue_scheduled = false;
        Issue(e.stream, e.time);
      } else {
        Complete(e.stream, e.index, e.time);
      }
    }
    for (StreamId s = 0; s < static_cast<StreamId>(st_.size()); ++s) {
      const Stream& stream = p_.streams()[s];
      if (st_[s].pc < stream.instructions.size()) {
        const Instruction& in = stream.instructions[st_[s].pc];
        std::string why;
        for (const SemWait& w : in.waits) {
          if (sems_[w.sem].value < w.value) {
            why = "waits for " + p_.semaphores()[w.sem].name + " >= " + std::to_string(w.value) +
                  " (reached " + std::to_string(sems_[w.sem].value) + ")";
            break;
          }
        }
        return FailedPreconditionError("deadlock: " + stream.name + "[" +
                                       std::to_string(st_[s].pc) + "] " + p_.Describe(in) + " " +
                                       why);
      }
    }
    return std::move(res_);
  }

 private:
  void Push(int64_t time, StreamId s, int32_t index, uint8_t kind) {
    queue_.push(Event{time, seq_++, s, index, kind});
  }

  // Time at which a semaphore first reached `value` (it has).
  int64_t ReachedAt(const SemState& sem, int64_t value) const {
    auto it = std::lower_bound(sem.history.begin(), sem.history.end(), value,
                               [](const std::pair<int64_t, int64_t>& h, int64_t v) {
                                 return h.first < v;
                               });
    return it->second;
  }

  void Issue(StreamId s, int64_t now) {
    StreamState& ss = st_[s];
    const Stream& stream = p_.streams()[s];
    while (ss.pc < stream.instructions.size()) {
      const Instruction& in = stream.instructions[ss.pc];
      int64_t ready = now;
      for (const SemWait& w : in.waits) {
        SemState& sem = sems_[w.sem];
        if (sem.value < w.value) {
          if (!ss.blocked) {
            ss.blocked = true;
            sem.waiters.push_back(s);
          }
          return;
        }
        ready = std::max(ready, ReachedAt(sem, w.value) + sem_lat_[static_cast<int>(stream.engine)]);
      }
      if (ready > now) {
        if (!ss.issue_scheduled) {
          ss.issue_scheduled = true;
          Push(ready, s, 0, kIssue);
        }
        return;
      }
      int64_t start = 0, end = 0;
      Execute(stream, in, now, start, end);
      StreamStats& stats = res_.streams[s];
      // LoadStationary runs in the background of the MM unit (section 5).
      (in.op == Opcode::kLoadStationary ? stats.background_ps : stats.busy_ps) += end - start;
      ++stats.instructions;
      if (opt_.record_trace) {
        res_.trace.push_back(TraceRecord{s, static_cast<int32_t>(ss.pc), start, end});
      }
      res_.end_ps = std::max(res_.end_ps, end);
      if (!in.signals.empty()) Push(end, s, static_cast<int32_t>(ss.pc), kComplete);
      ++ss.pc;
      // A DMA queue hands its next transfer to the engines when this one
      // starts, so that queues sharing engines interleave transfer by transfer.
      if (stream.engine == EngineKind::kDma && start > now) {
        if (!ss.issue_scheduled) {
          ss.issue_scheduled = true;
          Push(start, s, 0, kIssue);
        }
        return;
      }
    }
  }

  void Complete(StreamId s, int32_t index, int64_t now) {
    const Instruction& in = p_.streams()[s].instructions[index];
    std::vector<StreamId> wake;
    for (const SemSignal& g : in.signals) {
      SemState& sem = sems_[g.sem];
      sem.value += g.increment;
      sem.history.emplace_back(sem.value, now);
      for (StreamId w : sem.waiters) wake.push_back(w);
      sem.waiters.clear();
    }
    for (StreamId w : wake) {
      if (st_[w].blocked) {
        st_[w].blocked = false;
        Issue(w, now);
      }
    }
  }

  void Execute(const Stream& stream, const Instruction& in, int64_t now, int64_t& start,
               int64_t& end) {
    switch (stream.engine) {
      case EngineKind::kTensor: ExecuteTensor(stream.core, in, now, start, end); return;
      case EngineKind::kDma: ExecuteDma(stream.core, in, now, start, end); return;
      default: break;
    }
    StreamState& ss = st_[&stream - p_.streams().data()];
    double clock = m_.vector.clock_hz.value;
    if (stream.engine == EngineKind::kScalar) clock = m_.scalar.clock_hz.value;
    if (stream.engine == EngineKind::kGpSimd) clock = m_.gpsimd.clock_hz.value;
    start = std::max(now, ss.unit_free);
    end = start + CyclesToPs(ElementwiseCycles(p_, stream.engine, in), clock);
    ss.unit_free = end;
  }

  // Throttle cap in parts per million at `t` (trainium.md #17).
  int64_t ThrottlePpm(TensorState& t, int64_t at) {
    if (!opt_.throttle || start_ppm_ >= kPpm) return kPpm;
    const int64_t from = at - window_ps_;
    while (!t.busy.empty() && t.busy.front().second <= from) t.busy.pop_front();
    int64_t busy = 0;
    for (const auto& [b, e] : t.busy) busy += std::min(e, at) - std::max(b, from);
    // Re-armed (a new burst starts here) after a whole window below 50 % busy
    // that lies after the current burst's start.
    if (at - t.burst_start >= window_ps_ && 2 * busy < window_ps_) t.burst_start = at;
    if (ramp_ps_ == 0) return kPpm;
    const int64_t into = std::min(at - t.burst_start, ramp_ps_);
    return start_ppm_ + (kPpm - start_ppm_) * into / ramp_ps_;
  }

  void ExecuteTensor(int core, const Instruction& in, int64_t now, int64_t& start, int64_t& end) {
    TensorState& t = tensor_[core];
    const int64_t base = CyclesToPs(TensorCycles(m_, in), m_.tensor.clock_hz.value);
    if (in.op == Opcode::kLoadStationary) {
      // Background load into the other weight slot, once the MMs reading it finished.
      const int slot = 1 - t.slot;
      start = std::max({now, t.ls_free, t.slot_release[slot]});
      end = start + base;
      t.ls_free = end;
      t.weights_ready = end;
      t.slot = slot;
      return;
    }
    start = std::max(now, t.mm_free);
    if (in.op == Opcode::kMultiplyMoving) start = std::max(start, t.weights_ready);
    const int64_t ppm = ThrottlePpm(t, start);
    const int64_t dur = static_cast<int64_t>((static_cast<Uint128>(base) * kPpm + ppm - 1) / ppm);
    res_.tensor_throttle_extra_ps += dur - base;
    end = start + dur;
    t.mm_free = end;
    if (in.op == Opcode::kMultiplyMoving) t.slot_release[t.slot] = end;
    if (opt_.throttle) t.busy.emplace_back(start, end);
  }

  void ExecuteDma(int core, const Instruction& in, int64_t now, int64_t& start, int64_t& end) {
    const DmaCost c = DmaCostOf(p_, in);
    int64_t* free = &dma_free_[static_cast<size_t>(core) * engines_];
    start = now;
    for (int e = c.first_engine; e < c.first_engine + c.engines; ++e) start = std::max(start, free[e]);
    end = start + c.engine_ps;
    if (c.hbm_bytes > 0) {
      const int stack = core / cores_per_stack_;
      const int64_t hbm_start = std::max(start, stack_free_[stack]);
      stack_free_[stack] = hbm_start + c.hbm_ps;
      res_.hbm_stack_busy_ps[stack] += c.hbm_ps;
      end = std::max(end, stack_free_[stack]);
      const bool src_hbm = p_.buffers()[in.src0].space == MemSpace::kHbm;
      const bool dst_hbm = p_.buffers()[in.dst].space == MemSpace::kHbm;
      if (src_hbm) res_.hbm_read_bytes += in.bytes;
      if (dst_hbm) res_.hbm_write_bytes += in.bytes;
    }
    for (int e = c.first_engine; e < c.first_engine + c.engines; ++e) {
      free[e] = end;
      // Engine time proper; waiting on a backlogged HBM stack counts as HBM time.
      res_.dma_engine_busy_ps[static_cast<size_t>(core) * engines_ + e] += c.engine_ps;
    }
    res_.dma_bytes += in.bytes;
  }

  const Program& p_;
  const Machine& m_;
  SimOptions opt_;
  SimResult res_;
  std::vector<StreamState> st_;
  std::vector<SemState> sems_;
  std::vector<TensorState> tensor_;
  std::vector<int64_t> dma_free_;
  std::vector<int64_t> stack_free_;
  int engines_ = 16;
  int cores_per_stack_ = 2;
  int64_t window_ps_ = 0, ramp_ps_ = 0, start_ppm_ = kPpm, dma_dep_ps_ = 0;
  int64_t sem_lat_[5] = {};
  std::priority_queue<Event, std::vector<Event>, EventLater> queue_;
  int64_t seq_ = 0;
};

}  // namespace

int64_t CyclesToPs(int64_t cycles, double clock_hz) {
  const Uint128 hz = static_cast<Uint128>(std::llround(clock_hz));
  const Uint128 num = static_cast<Uint128>(cycles) * 1000000000000ULL;
  return static_cast<int64_t>((num + hz - 1) / hz);
}

int64_t TensorCycles(const Machine& m, const Instruction& in) {
  switch (in.op) {
    case Opcode::kLoadStationary: {
      const int64_t speedup = static_cast<int64_t>(m.tensor.load_stationary_speedup.value);
      return std::max<int64_t>(1, (in.m + speedup - 1) / speedup);
    }
    case Opcode::kMultiplyMoving: {
      const int64_t init = static_cast<int64_t>(m.tensor.mm_init_cycles.value);
      const int64_t cycles = std::max(std::min(init, in.m), in.n);
      const int64_t fp32 = in.dtype == MatmulDtype::kFp32
                               ? static_cast<int64_t>(m.tensor.fp32_cycle_multiplier.value)
                               : 1;
      return cycles * fp32;
    }
    case Opcode::kTranspose:
      return std::max<int64_t>(in.partitions, std::min<int64_t>(64, in.n));
    default: return 0;
  }
}

int64_t ElementwiseCycles(const Program& p, EngineKind engine, const Instruction& in) {
  const Machine& m = p.machine();
  const auto space = [&](BufferId id) {
    return id < 0 ? MemSpace::kSbuf : p.buffers()[id].space;
  };
  const int64_t n = in.n;
  const bool in16 = Is16Bit(in.in_type), out16 = Is16Bit(in.out_type);
  const bool any_psum = space(in.src0) == MemSpace::kPsum || space(in.dst) == MemSpace::kPsum ||
                        space(in.src1) == MemSpace::kPsum;
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  if (engine == EngineKind::kGpSimd) {
    return static_cast<int64_t>(m.gpsimd.start_cycles.value) + n;
  }
  if (engine == EngineKind::kScalar) {
    const int64_t min_ii = static_cast<int64_t>(m.scalar.min_ii_cycles.value);
    int64_t r = 1;
    if ((in.op == Opcode::kTensorCopy || in.op == Opcode::kTensorScalar) && in16 && out16) {
      r = static_cast<int64_t>(m.scalar.bf16_copy_speedup.value);
    }
    return std::max(min_ii, ceil_div(n, r));
  }
  const int64_t min_ii = static_cast<int64_t>(m.vector.min_ii_cycles.value);
  const int64_t perf = static_cast<int64_t>(m.vector.perf_mode_max.value);
  int64_t cycles = n;
  switch (in.op) {
    case Opcode::kTensorCopy:
    case Opcode::kTensorScalar: {
      int64_t r = 1;
      if (in16 && out16) r = any_psum ? std::min<int64_t>(2, perf) : perf;
      cycles = ceil_div(n, r);
      break;
    }
    case Opcode::kTensorTensor: {
      const bool mixed = space(in.src0) != space(in.src1);
      cycles = (mixed || (in16 && out16 && !any_psum)) ? n : 2 * n;
      break;
    }
    case Opcode::kTensorReduce:
    case Opcode::kMemset: cycles = in16 ? ceil_div(n, 2) : n; break;
    case Opcode::kReciprocal: cycles = 8 * n; break;
    case Opcode::kQuantizeMx:
      cycles = ceil_div(n, static_cast<int64_t>(m.vector.quantize_mx_elems_per_cycle.value));
      break;
    default: break;
  }
  return std::max(min_ii, cycles);
}

double DmaEfficiency(const Machine& m, double bpp) {
  const double knee = m.dma.efficiency_knee_bytes_per_partition.value;
  if (bpp >= knee) return 1.0;
  const double overhead = m.dma.row_overhead_bytes.value * (1.0 - bpp / knee);
  return bpp / (bpp + overhead);
}

double HbmStackBandwidth(const Machine& m) {
  return m.hbm.bandwidth_bytes_per_s.value * m.hbm.sustained_fraction.value / m.hbm.stacks.value;
}

DmaCost DmaCostOf(const Program& p, const Instruction& in) {
  const Machine& m = p.machine();
  const Buffer& src = p.buffers()[in.src0];
  const Buffer& dst = p.buffers()[in.dst];
  const int engines = static_cast<int>(m.dma.engines.value);
  const int per_engine = static_cast<int>(m.dma.partitions_per_engine.value);
  DmaCost c;
  // The on-chip side decides which engines serve the transfer (engine e
  // serves partitions [8e, 8e + 8)); HBM to HBM uses all of them.
  const Buffer* chip = src.space != MemSpace::kHbm ? &src : (dst.space != MemSpace::kHbm ? &dst : nullptr);
  double bpp = m.dma.efficiency_knee_bytes_per_partition.value;
  if (chip != nullptr) {
    const int first = chip->partition_start;
    const int last = first + in.partitions;  // exclusive
    c.first_engine = first / per_engine;
    c.engines = (last + per_engine - 1) / per_engine - c.first_engine;
    bpp = static_cast<double>(in.bytes) / in.partitions;
  } else {
    c.first_engine = 0;
    c.engines = engines;
  }
  const double bytes_per_engine = std::ceil(static_cast<double>(in.bytes) / c.engines);
  const double rate = m.dma.engine_bandwidth_bytes_per_s.value * DmaEfficiency(m, bpp);
  c.engine_ps = static_cast<int64_t>(std::llround(m.dma.fixed_cost_ns.value * kPsPerNs)) +
                CeilPs(bytes_per_engine / rate);
  c.hbm_bytes = (src.space == MemSpace::kHbm ? in.bytes : 0) + (dst.space == MemSpace::kHbm ? in.bytes : 0);
  c.hbm_ps = c.hbm_bytes > 0 ? CeilPs(static_cast<double>(c.hbm_bytes) / HbmStackBandwidth(m)) : 0;
  return c;
}

StatusOr<SimResult> Simulate(const Program& program, const SimOptions& options) {
  Sim sim(program, options);
  StatusOr<SimResult> r = sim.Run();
  if (!r.ok()) return r;
  // Per-queue bytes.
  SimResult& res = r.value();
  for (size_t s = 0; s < program.streams().size(); ++s) {
    const Stream& st = program.streams()[s];
    if (st.engine != EngineKind::kDma) continue;
    for (const Instruction& in : st.instructions) res.streams[s].bytes += in.bytes;
  }
  return r;
}

}  // namespace trnmx::emu
