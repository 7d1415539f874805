// Discrete-event simulator: events ordered by (time, sequence), integer ps.
#include "trnmx/emu/simulator.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace trnmx::emu {
namespace {

__extension__ typedef unsigned __int128 Uint128;

constexpr int64_t kPsPerNs = 1000;
constexpr uint64_t kPsPerS = 1000000000000ULL;
constexpr int64_t kPpm = 1000000;

int64_t CeilPs(double seconds) { return static_cast<int64_t>(std::ceil(seconds * 1e12)); }
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
bool Is16Bit(ElemType t) { return t == ElemType::kBf16 || t == ElemType::kFp16; }
int64_t AsInt(const Sourced& s) { return static_cast<int64_t>(s.value); }

// ceil(cycles * 1e12 / hz). 64-bit arithmetic when it cannot overflow
// (cycles < 2^24 and hz < 2^40 keep cycles * 1e12 + hz below 2^64), else 128-bit.
int64_t PsOfCycles(int64_t cycles, uint64_t hz) {
  if (cycles >= 0 && cycles < (int64_t{1} << 24) && hz < (uint64_t{1} << 40)) {
    return static_cast<int64_t>((static_cast<uint64_t>(cycles) * kPsPerS + hz - 1) / hz);
  }
  const Uint128 num = static_cast<Uint128>(cycles) * kPsPerS;
  return static_cast<int64_t>((num + hz - 1) / hz);
}

// PsOfCycles with the last conversion remembered: an engine mostly repeats
// the same instruction shape, and the division is a large part of its cost.
struct CycleMemo {
  int64_t cycles = -1;
  int64_t ps = 0;
  int64_t Ps(int64_t c, uint64_t hz) {
    if (c != cycles) {
      cycles = c;
      ps = PsOfCycles(c, hz);
    }
    return ps;
  }
};

uint64_t ClockHz(const Sourced& clock) { return static_cast<uint64_t>(std::llround(clock.value)); }

// The cost rules of the header with the machine's numbers converted once:
// the simulator evaluates them for every instruction, the public functions
// below for one.
class CostModel {
 public:
  explicit CostModel(const Machine& m)
      : ls_speedup_(AsInt(m.tensor.load_stationary_speedup)),
        mm_init_(AsInt(m.tensor.mm_init_cycles)),
        fp32_multiplier_(AsInt(m.tensor.fp32_cycle_multiplier)),
        vector_min_ii_(AsInt(m.vector.min_ii_cycles)),
        vector_perf_(AsInt(m.vector.perf_mode_max)),
        quantize_rate_(AsInt(m.vector.quantize_mx_elems_per_cycle)),
        scalar_min_ii_(AsInt(m.scalar.min_ii_cycles)),
        scalar_copy_speedup_(AsInt(m.scalar.bf16_copy_speedup)),
        gpsimd_start_(AsInt(m.gpsimd.start_cycles)),
        dma_engines_(static_cast<int>(m.dma.engines.value)),
        dma_partitions_per_engine_(static_cast<int>(m.dma.partitions_per_engine.value)),
        dma_fixed_ps_(static_cast<int64_t>(std::llround(m.dma.fixed_cost_ns.value * kPsPerNs))),
        dma_engine_bandwidth_(m.dma.engine_bandwidth_bytes_per_s.value),
        dma_knee_(m.dma.efficiency_knee_bytes_per_partition.value),
        dma_row_overhead_(m.dma.row_overhead_bytes.value),
        hbm_stack_bandwidth_(HbmStackBandwidth(m)) {}

  int64_t TensorCycles(const Instruction& in) const {
    switch (in.op) {
      case Opcode::kLoadStationary:
        return std::max<int64_t>(1, CeilDiv(in.m, ls_speedup_));
      case Opcode::kMultiplyMoving:
        return std::max(std::min(mm_init_, in.m), in.n) *
               (in.dtype == MatmulDtype::kFp32 ? fp32_multiplier_ : 1);
      case Opcode::kTranspose:
        return std::max<int64_t>(in.partitions, std::min<int64_t>(64, in.n));
      default:
        return 0;
    }
  }

  int64_t ElementwiseCycles(const Program& p, EngineKind engine, const Instruction& in) const {
    const auto space = [&](BufferId id) {
      return id < 0 ? MemSpace::kSbuf : p.buffers()[id].space;
    };
    const int64_t n = in.n;
    const bool in16 = Is16Bit(in.in_type), out16 = Is16Bit(in.out_type);
    if (engine == EngineKind::kGpSimd) return gpsimd_start_ + n;
    if (engine == EngineKind::kScalar) {
      const bool copy = in.op == Opcode::kTensorCopy || in.op == Opcode::kTensorScalar;
      return std::max(scalar_min_ii_, CeilDiv(n, copy && in16 && out16 ? scalar_copy_speedup_ : 1));
    }
    const bool any_psum = space(in.src0) == MemSpace::kPsum || space(in.dst) == MemSpace::kPsum ||
                          space(in.src1) == MemSpace::kPsum;
    int64_t cycles = n;
    switch (in.op) {
      case Opcode::kTensorCopy:
      case Opcode::kTensorScalar: {
        int64_t r = 1;
        if (in16 && out16) r = any_psum ? std::min<int64_t>(2, vector_perf_) : vector_perf_;
        cycles = CeilDiv(n, r);
        break;
      }
      case Opcode::kTensorTensor: {
        const bool mixed = space(in.src0) != space(in.src1);
        cycles = (mixed || (in16 && out16 && !any_psum)) ? n : 2 * n;
        break;
      }
      case Opcode::kTensorReduce:
      case Opcode::kMemset:
        cycles = in16 ? CeilDiv(n, 2) : n;
        break;
      case Opcode::kReciprocal:
        cycles = 8 * n;
        break;
      case Opcode::kQuantizeMx:
        cycles = CeilDiv(n, quantize_rate_);
        break;
      default:
        break;
    }
    return std::max(vector_min_ii_, cycles);
  }

  double DmaEfficiency(double bytes_per_partition) const {
    if (bytes_per_partition >= dma_knee_) return 1.0;
    const double overhead = dma_row_overhead_ * (1.0 - bytes_per_partition / dma_knee_);
    return bytes_per_partition / (bytes_per_partition + overhead);
  }

  DmaCost Dma(const Program& p, const Instruction& in) const {
    const Buffer& src = p.buffers()[in.src0];
    const Buffer& dst = p.buffers()[in.dst];
    DmaCost c;
    // The on-chip side decides which engines serve the transfer (engine e
    // serves partitions [8e, 8e + 8)); HBM to HBM uses all of them.
    const Buffer* chip = src.space != MemSpace::kHbm   ? &src
                         : dst.space != MemSpace::kHbm ? &dst
                                                       : nullptr;
    double bytes_per_partition = dma_knee_;
    if (chip != nullptr) {
      const int first = chip->partition_start;
      const int last = first + in.partitions;  // exclusive
      c.first_engine = first / dma_partitions_per_engine_;
      c.engines =
          (last + dma_partitions_per_engine_ - 1) / dma_partitions_per_engine_ - c.first_engine;
      bytes_per_partition = static_cast<double>(in.bytes) / in.partitions;
    } else {
      c.first_engine = 0;
      c.engines = dma_engines_;
    }
    const double bytes_per_engine = std::ceil(static_cast<double>(in.bytes) / c.engines);
    const double rate = dma_engine_bandwidth_ * DmaEfficiency(bytes_per_partition);
    c.engine_ps = dma_fixed_ps_ + CeilPs(bytes_per_engine / rate);
    c.hbm_bytes =
        (src.space == MemSpace::kHbm ? in.bytes : 0) + (dst.space == MemSpace::kHbm ? in.bytes : 0);
    c.hbm_ps =
        c.hbm_bytes > 0 ? CeilPs(static_cast<double>(c.hbm_bytes) / hbm_stack_bandwidth_) : 0;
    return c;
  }

 private:
  int64_t ls_speedup_, mm_init_, fp32_multiplier_;
  int64_t vector_min_ii_, vector_perf_, quantize_rate_;
  int64_t scalar_min_ii_, scalar_copy_speedup_;
  int64_t gpsimd_start_;
  int dma_engines_, dma_partitions_per_engine_;
  int64_t dma_fixed_ps_;
  double dma_engine_bandwidth_, dma_knee_, dma_row_overhead_, hbm_stack_bandwidth_;
};

// A pending event. `index` is the completing instruction, or kIssue for a
// sequencer wake-up. Events are taken in (time, seq) order; seq is the push
// order, so equal times keep their push order.
struct Event {
  int64_t time;  // >= 0
  uint64_t seq;
  int32_t stream;
  int32_t index;
};
constexpr int32_t kIssue = -1;

// Min-queue of events: a 4-ary heap on the 128-bit key (time, seq), which
// compares without branches and is shallower than a binary heap.
class EventQueue {
 public:
  bool empty() const { return heap_.empty(); }

  void Push(const Event& e) {
    size_t i = heap_.size();
    heap_.push_back(e);
    const Uint128 key = Key(e);
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (Key(heap_[parent]) <= key) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }

  Event Pop() {
    const Event top = heap_.front();
    const Event last = heap_.back();
    heap_.pop_back();
    const size_t n = heap_.size();
    if (n == 0) return top;
    const Uint128 key = Key(last);
    size_t i = 0;
    for (;;) {
      const size_t first = 4 * i + 1;
      if (first >= n) break;
      size_t best = first;
      Uint128 best_key = Key(heap_[first]);
      const size_t end = std::min(first + 4, n);
      for (size_t c = first + 1; c < end; ++c) {
        const Uint128 k = Key(heap_[c]);
        if (k < best_key) {
          best = c;
          best_key = k;
        }
      }
      if (key <= best_key) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = last;
    return top;
  }

 private:
  static Uint128 Key(const Event& e) {
    return (static_cast<Uint128>(static_cast<uint64_t>(e.time)) << 64) | e.seq;
  }
  std::vector<Event> heap_;
};

struct SemState {
  int64_t value = 0;
  // (value after an increment, time): values strictly increase, times do not decrease.
  std::vector<std::pair<int64_t, int64_t>> history;
  std::vector<StreamId> waiters;
};

struct StreamState {
  size_t pc = 0;
  bool blocked = false;
  bool issue_scheduled = false;
  int64_t unit_free = 0;  // Vector/Scalar/GpSimd
  CycleMemo duration;     // Vector/Scalar/GpSimd
};

// TensorE of one core: LoadStationary unit, MultiplyMoving unit, two weight
// slots, throttle history.
struct TensorState {
  int64_t ls_free = 0;
  int64_t mm_free = 0;
  int64_t slot_release[2] = {0, 0};  // end of the last MM that read each slot
  int64_t weights_ready = 0;
  int slot = 1;  // slot of the current weights; the first LS goes to slot 0
  CycleMemo ls_duration, mm_duration;
  // MM-unit intervals that may still overlap the throttle window: busy[head..]
  // (in time order, disjoint), with busy_sum their total length.
  std::vector<std::pair<int64_t, int64_t>> busy;
  size_t head = 0;
  int64_t busy_sum = 0;
  int64_t burst_start = INT64_MIN / 4;  // no burst yet
};

class Sim {
 public:
  Sim(const Program& p, const SimOptions& o) : p_(p), m_(p.machine()), opt_(o), cost_(m_) {
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
    window_ps_ = static_cast<int64_t>(m_.tensor.throttle_window_ns.value) * kPsPerNs;
    ramp_ps_ = static_cast<int64_t>(m_.tensor.throttle_ramp_ns.value) * kPsPerNs;
    start_ppm_ = static_cast<int64_t>(std::llround(m_.tensor.throttle_start_fraction.value * kPpm));
    clock_hz_[static_cast<int>(EngineKind::kTensor)] = ClockHz(m_.tensor.clock_hz);
    clock_hz_[static_cast<int>(EngineKind::kVector)] = ClockHz(m_.vector.clock_hz);
    clock_hz_[static_cast<int>(EngineKind::kScalar)] = ClockHz(m_.scalar.clock_hz);
    clock_hz_[static_cast<int>(EngineKind::kGpSimd)] = ClockHz(m_.gpsimd.clock_hz);
    const int64_t lat = static_cast<int64_t>(m_.sync.semaphore_latency_cycles.value);
    for (int e = 0; e < kComputeEngines; ++e) sem_lat_[e] = PsOfCycles(lat, clock_hz_[e]);
    sem_lat_[static_cast<int>(EngineKind::kDma)] =
        static_cast<int64_t>(std::llround(m_.dma.dependency_start_ns.value * kPsPerNs));
    if (opt_.record_trace) res_.trace.reserve(static_cast<size_t>(p.instruction_count()));
  }

  StatusOr<SimResult> Run() {
    for (StreamId s = 0; s < static_cast<StreamId>(st_.size()); ++s) Issue(s, 0);
    while (!queue_.empty()) {
      const Event e = queue_.Pop();
      ++res_.events;
      if (e.index == kIssue) {
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
  void Push(int64_t time, StreamId s, int32_t index) { queue_.Push(Event{time, seq_++, s, index}); }

  // Schedules the sequencer of `s` to look at its next instruction at `time`.
  void ScheduleIssue(StreamState& ss, StreamId s, int64_t time) {
    if (!ss.issue_scheduled) {
      ss.issue_scheduled = true;
      Push(time, s, kIssue);
    }
  }

  // Time at which a semaphore first reached `value` (it has). Waits are
  // usually for the latest increment, so that is checked first.
  static int64_t ReachedAt(const SemState& sem, int64_t value) {
    const auto& h = sem.history;
    const size_t n = h.size();
    if (n == 1 || h[n - 2].first < value) return h[n - 1].second;
    auto it = std::lower_bound(
        h.begin(), h.end(), value,
        [](const std::pair<int64_t, int64_t>& e, int64_t v) { return e.first < v; });
    return it->second;
  }

  void Issue(StreamId s, int64_t now) {
    StreamState& ss = st_[s];
    const Stream& stream = p_.streams()[s];
    const int64_t wait_latency = sem_lat_[static_cast<int>(stream.engine)];
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
        ready = std::max(ready, ReachedAt(sem, w.value) + wait_latency);
      }
      if (ready > now) {
        ScheduleIssue(ss, s, ready);
        return;
      }
      int64_t start = 0, end = 0;
      Execute(s, stream, in, now, start, end);
      StreamStats& stats = res_.streams[s];
      // LoadStationary runs in the background of the MM unit (section 5).
      (in.op == Opcode::kLoadStationary ? stats.background_ps : stats.busy_ps) += end - start;
      ++stats.instructions;
      stats.bytes += in.bytes;  // DMA queues (0 elsewhere)
      if (opt_.record_trace) {
        res_.trace.push_back(TraceRecord{s, static_cast<int32_t>(ss.pc), start, end});
      }
      res_.end_ps = std::max(res_.end_ps, end);
      if (!in.signals.empty()) Push(end, s, static_cast<int32_t>(ss.pc));
      ++ss.pc;
      // A DMA queue hands its next transfer to the engines when this one
      // starts, so that queues sharing engines interleave transfer by transfer.
      if (stream.engine == EngineKind::kDma && start > now) {
        ScheduleIssue(ss, s, start);
        return;
      }
    }
  }

  void Complete(StreamId s, int32_t index, int64_t now) {
    const Instruction& in = p_.streams()[s].instructions[index];
    wake_.clear();
    for (const SemSignal& g : in.signals) {
      SemState& sem = sems_[g.sem];
      sem.value += g.increment;
      sem.history.emplace_back(sem.value, now);
      wake_.insert(wake_.end(), sem.waiters.begin(), sem.waiters.end());
      sem.waiters.clear();
    }
    // Issue() never completes anything, so wake_ is stable during the loop.
    for (StreamId w : wake_) {
      if (st_[w].blocked) {
        st_[w].blocked = false;
        Issue(w, now);
      }
    }
  }

  void Execute(StreamId s, const Stream& stream, const Instruction& in, int64_t now, int64_t& start,
               int64_t& end) {
    switch (stream.engine) {
      case EngineKind::kTensor:
        ExecuteTensor(stream.core, in, now, start, end);
        return;
      case EngineKind::kDma:
        ExecuteDma(stream.core, in, now, start, end);
        return;
      default:
        break;
    }
    StreamState& ss = st_[s];
    start = std::max(now, ss.unit_free);
    end = start + ss.duration.Ps(cost_.ElementwiseCycles(p_, stream.engine, in),
                                 clock_hz_[static_cast<int>(stream.engine)]);
    ss.unit_free = end;
  }

  // Throttle cap in parts per million at `at` (trainium.md #17). `at` never
  // decreases and no earlier MM-unit interval ends after it.
  int64_t ThrottlePpm(TensorState& t, int64_t at) {
    if (!opt_.throttle || start_ppm_ >= kPpm) return kPpm;
    const int64_t from = at - window_ps_;
    while (t.head < t.busy.size() && t.busy[t.head].second <= from) {
      t.busy_sum -= t.busy[t.head].second - t.busy[t.head].first;
      ++t.head;
    }
    if (t.head >= 64 && 2 * t.head >= t.busy.size()) {
      t.busy.erase(t.busy.begin(), t.busy.begin() + static_cast<std::ptrdiff_t>(t.head));
      t.head = 0;
    }
    // Busy time inside [from, at): the intervals left, the first one clipped at `from`.
    int64_t busy = t.busy_sum;
    if (t.head < t.busy.size()) busy -= std::max<int64_t>(0, from - t.busy[t.head].first);
    // Re-armed (a new burst starts here) after a whole window below 50 % busy
    // that lies after the current burst's start.
    if (at - t.burst_start >= window_ps_ && 2 * busy < window_ps_) t.burst_start = at;
    const int64_t into = at - t.burst_start;
    if (into >= ramp_ps_) return kPpm;  // past the ramp (or no ramp)
    return start_ppm_ + (kPpm - start_ppm_) * into / ramp_ps_;
  }

  void ExecuteTensor(int core, const Instruction& in, int64_t now, int64_t& start, int64_t& end) {
    TensorState& t = tensor_[core];
    const int64_t cycles = cost_.TensorCycles(in);
    const uint64_t hz = clock_hz_[static_cast<int>(EngineKind::kTensor)];
    if (in.op == Opcode::kLoadStationary) {
      const int64_t base = t.ls_duration.Ps(cycles, hz);
      // Background load into the other weight slot, once the MMs reading it finished.
      const int slot = 1 - t.slot;
      start = std::max({now, t.ls_free, t.slot_release[slot]});
      end = start + base;
      t.ls_free = end;
      t.weights_ready = end;
      t.slot = slot;
      return;
    }
    const int64_t base = t.mm_duration.Ps(cycles, hz);
    start = std::max(now, t.mm_free);
    if (in.op == Opcode::kMultiplyMoving) start = std::max(start, t.weights_ready);
    const int64_t ppm = ThrottlePpm(t, start);
    int64_t dur = base;
    if (ppm < kPpm) {  // ceil(base / cap)
      dur = base < (INT64_MAX / kPpm)
                ? (base * kPpm + ppm - 1) / ppm
                : static_cast<int64_t>((static_cast<Uint128>(base) * kPpm + ppm - 1) / ppm);
    }
    res_.tensor_throttle_extra_ps += dur - base;
    end = start + dur;
    t.mm_free = end;
    if (in.op == Opcode::kMultiplyMoving) t.slot_release[t.slot] = end;
    if (opt_.throttle) {
      t.busy.emplace_back(start, end);
      t.busy_sum += end - start;
    }
  }

  void ExecuteDma(int core, const Instruction& in, int64_t now, int64_t& start, int64_t& end) {
    const DmaCost c = cost_.Dma(p_, in);
    int64_t* free = &dma_free_[static_cast<size_t>(core) * engines_];
    start = now;
    for (int e = c.first_engine; e < c.first_engine + c.engines; ++e)
      start = std::max(start, free[e]);
    end = start + c.engine_ps;
    if (c.hbm_bytes > 0) {
      const int stack = HbmStackOfCore(m_, core);
      const int64_t hbm_start = std::max(start, stack_free_[stack]);
      stack_free_[stack] = hbm_start + c.hbm_ps;
      res_.hbm_stack_busy_ps[stack] += c.hbm_ps;
      end = std::max(end, stack_free_[stack]);
      if (p_.buffers()[in.src0].space == MemSpace::kHbm) res_.hbm_read_bytes += in.bytes;
      if (p_.buffers()[in.dst].space == MemSpace::kHbm) res_.hbm_write_bytes += in.bytes;
    }
    int64_t* busy = &res_.dma_engine_busy_ps[static_cast<size_t>(core) * engines_];
    for (int e = c.first_engine; e < c.first_engine + c.engines; ++e) {
      free[e] = end;
      // Engine time proper; waiting on a backlogged HBM stack counts as HBM time.
      busy[e] += c.engine_ps;
    }
    res_.dma_bytes += in.bytes;
  }

  const Program& p_;
  const Machine& m_;
  SimOptions opt_;
  CostModel cost_;
  SimResult res_;
  std::vector<StreamState> st_;
  std::vector<SemState> sems_;
  std::vector<TensorState> tensor_;
  std::vector<int64_t> dma_free_;
  std::vector<int64_t> stack_free_;
  std::vector<StreamId> wake_;
  int engines_ = 16;
  int64_t window_ps_ = 0, ramp_ps_ = 0, start_ppm_ = kPpm;
  uint64_t clock_hz_[kComputeEngines] = {};
  int64_t sem_lat_[kComputeEngines + 1] = {};  // per EngineKind, DMA last
  EventQueue queue_;
  uint64_t seq_ = 0;
};

}  // namespace

int64_t CyclesToPs(int64_t cycles, double clock_hz) {
  return PsOfCycles(cycles, static_cast<uint64_t>(std::llround(clock_hz)));
}

int64_t TensorCycles(const Machine& m, const Instruction& in) {
  return CostModel(m).TensorCycles(in);
}

int64_t ElementwiseCycles(const Program& p, EngineKind engine, const Instruction& in) {
  return CostModel(p.machine()).ElementwiseCycles(p, engine, in);
}

double DmaEfficiency(const Machine& m, double bytes_per_partition) {
  return CostModel(m).DmaEfficiency(bytes_per_partition);
}

int HbmStackOfCore(const Machine& m, int core) {
  return core / (m.core_count() / static_cast<int>(m.hbm.stacks.value));
}

double HbmStackBandwidth(const Machine& m) {
  return m.hbm.bandwidth_bytes_per_s.value * m.hbm.sustained_fraction.value / m.hbm.stacks.value;
}

DmaCost DmaCostOf(const Program& p, const Instruction& in) {
  return CostModel(p.machine()).Dma(p, in);
}

StatusOr<SimResult> Simulate(const Program& program, const SimOptions& options) {
  return Sim(program, options).Run();
}

}  // namespace trnmx::emu
