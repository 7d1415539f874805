// Discrete-event simulator: events ordered by (time, sequence), integer ps.
#include "trnmx/emu/simulator.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cost/cost_model.h"

namespace trnmx::emu {
namespace {

using internal::AsInt;
using internal::ClockHz;
using internal::CostModel;
using internal::CycleMemo;
using internal::kPpm;
using internal::kPsPerNs;
using internal::PsOfCycles;
using internal::Uint128;

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

// A unit that transfers hold for a time: a DMA engine, an HBM stack (and
// the links of a system). Holds are granted in the order the simulator asks,
// which is (time, seq) order, so a resource shared by several queues or
// cores serves them first come, first served.
struct BandwidthResource {
  int64_t free_ps = 0;  // end of the last hold
  int64_t busy_ps = 0;  // sum of hold durations
  int64_t bytes = 0;    // bytes carried (links)
  // Holds the resource for `duration` from max(from, free); returns the end.
  int64_t Hold(int64_t from, int64_t duration) {
    free_ps = std::max(from, free_ps) + duration;
    busy_ps += duration;
    return free_ps;
  }
};

struct SemState {
  int64_t value = 0;
  // (value after an increment, time): values strictly increase, times do not decrease.
  std::vector<std::pair<int64_t, int64_t>> history;
  std::vector<StreamId> waiters;
};

// What the event loop needs of one instruction, resolved before it starts.
// A large program (a collective over hundreds of ranks: millions of
// instructions over thousands of streams) is visited stream after stream in
// time order, so every instruction is a cache miss; this record and the flat
// wait and signal lists keep each visit to one cache line of records and
// the lists' next entries (Sim::Issue fetches them ahead), instead of the
// instruction and its two heap-allocated lists.
struct Op {
  // Transfer queues: the cost (cost.h), a function of the instruction only.
  int64_t engine_ps = 0, hbm_ps = 0, remote_hbm_ps = 0;
  int64_t bytes = 0;                          // moved
  uint32_t waits = 0, signals = 0;            // first index into Sim::waits_ / signals_
  uint32_t wait_count = 0, signal_count = 0;  // list lengths
  int32_t route = -1;                         // Sim::routes_ index of a write into another chip
  int32_t stack = -1;         // program-wide HBM stack of the core's reads and writes (-1: none)
  int32_t remote_stack = -1;  // program-wide HBM stack written on the other chip
  int16_t first_engine = 0, engines = 0;
};
static_assert(sizeof(Op) == 64, "one cache line per instruction");

struct StreamState {
  size_t pc = 0;
  size_t size = 0;   // instructions
  int64_t base = 0;  // index of its first instruction in Sim::ops_
  bool blocked = false;
  bool issue_scheduled = false;
  // Vector/Scalar/GpSimd: when the unit is free. Transfer queues: when the
  // previous transfer's last byte has left (a queue keeps order,
  // trainium.md section 7, even where the next one takes other engines).
  int64_t unit_free = 0;
  CycleMemo duration;                          // Vector/Scalar/GpSimd
  ActTableSet act_table = ActTableSet::kNone;  // ScalarE: the table set loaded
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
    const size_t engine_slots = static_cast<size_t>(p.cores()) * engines_;
    engine_free_ps_.assign(engine_slots, 0);
    engine_busy_ps_.assign(engine_slots, 0);
    stacks_per_chip_ = static_cast<int>(m_.hbm.stacks.value);
    hbm_stacks_.resize(static_cast<size_t>(p.chips()) * stacks_per_chip_);
    if (p.system() != nullptr) {
      links_.resize(p.system()->links.size());
      for (const SystemLink& l : p.system()->links) {
        link_bandwidth_.push_back(l.bandwidth_bytes_per_s.value);
      }
    }
    window_ps_ = static_cast<int64_t>(m_.tensor.throttle_window_ns.value) * kPsPerNs;
    ramp_ps_ = static_cast<int64_t>(m_.tensor.throttle_ramp_ns.value) * kPsPerNs;
    // At least 1 ppm: the cap divides the instruction time (the fraction is in (0, 1]).
    start_ppm_ = std::max<int64_t>(1, std::llround(m_.tensor.throttle_start_fraction.value * kPpm));
    clock_hz_[static_cast<int>(EngineKind::kTensor)] = ClockHz(m_.tensor.clock_hz);
    clock_hz_[static_cast<int>(EngineKind::kVector)] = ClockHz(m_.vector.clock_hz);
    clock_hz_[static_cast<int>(EngineKind::kScalar)] = ClockHz(m_.scalar.clock_hz);
    clock_hz_[static_cast<int>(EngineKind::kGpSimd)] = ClockHz(m_.gpsimd.clock_hz);
    const int64_t lat = static_cast<int64_t>(m_.sync.semaphore_latency_cycles.value);
    for (int e = 0; e < kComputeEngines; ++e) sem_lat_[e] = PsOfCycles(lat, clock_hz_[e]);
    sem_lat_[static_cast<int>(EngineKind::kDma)] = DmaWaitLatencyPs(m_);
    sem_lat_[static_cast<int>(EngineKind::kCollective)] =
        sem_lat_[static_cast<int>(EngineKind::kDma)];
    if (opt_.record_trace) res_.trace.reserve(static_cast<size_t>(p.instruction_count()));
    compiled_ = Compile();
  }

  StatusOr<SimResult> Run() {
    if (!compiled_) {
      return ResourceExhaustedError(
          "the program's semaphore waits or signals pass 2^32 entries, the simulator's limit");
    }
    for (StreamId s = 0; s < static_cast<StreamId>(st_.size()); ++s) Issue(s, 0);
    while (!queue_.empty() && !time_overflow_) {
      const Event e = queue_.Pop();
      ++res_.events;
      if (e.index == kIssue) {
        st_[e.stream].issue_scheduled = false;
        Issue(e.stream, e.time);
      } else {
        Complete(e.stream, e.index, e.time);
      }
    }
    if (time_overflow_) {
      return OutOfRangeError(
          "simulated time passed 2^62 ps (53 days): the program is too long "
          "for the emulator's integer picosecond clock");
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
    return Finish();
  }

 private:
  // Fills ops_, waits_, signals_ and routes_, and adds up what does not
  // depend on the schedule: the bytes each stream, link and HBM moves.
  // False when the wait or signal lists pass 2^32 entries.
  bool Compile() {
    const auto& streams = p_.streams();
    ops_.reserve(static_cast<size_t>(p_.instruction_count()) + 1);
    std::unordered_map<int64_t, int32_t> route_of;  // from chip x chips + to chip -> routes_
    for (StreamId s = 0; s < static_cast<StreamId>(streams.size()); ++s) {
      const Stream& stream = streams[s];
      st_[s].base = static_cast<int64_t>(ops_.size());
      st_[s].size = stream.instructions.size();
      const bool transfer = IsTransferQueue(stream.engine);
      for (const Instruction& in : stream.instructions) {
        Op op;
        op.waits = static_cast<uint32_t>(waits_.size());
        op.signals = static_cast<uint32_t>(signals_.size());
        op.wait_count = static_cast<uint32_t>(in.waits.size());
        op.signal_count = static_cast<uint32_t>(in.signals.size());
        if (waits_.size() + in.waits.size() > UINT32_MAX ||
            signals_.size() + in.signals.size() > UINT32_MAX) {
          return false;
        }
        waits_.insert(waits_.end(), in.waits.begin(), in.waits.end());
        signals_.insert(signals_.end(), in.signals.begin(), in.signals.end());
        res_.streams[s].bytes += in.bytes;  // DMA queues (0 elsewhere)
        if (transfer) CompileTransfer(stream.core, in, route_of, op);
        ops_.push_back(op);
      }
    }
    // Issue() fetches one record and list entry past a stream's last.
    ops_.emplace_back();
    waits_.emplace_back();
    signals_.emplace_back();
    return true;
  }

  void CompileTransfer(int core, const Instruction& in,
                       std::unordered_map<int64_t, int32_t>& route_of, Op& op) {
    const DmaCost c = cost_.Dma(p_, in);
    op.engine_ps = c.engine_ps;
    op.bytes = in.bytes;
    op.first_engine = static_cast<int16_t>(c.first_engine);
    op.engines = static_cast<int16_t>(c.engines);
    if (c.hbm_bytes > 0) {
      op.stack = p_.ChipOfCore(core) * stacks_per_chip_ + HbmStackOfCore(m_, p_.LocalCore(core));
      op.hbm_ps = c.hbm_ps;
    }
    const Buffer& src = p_.buffers()[in.src0];
    const Buffer& dst = p_.buffers()[in.dst];
    if (c.remote_hbm_bytes > 0) {
      const int64_t key = static_cast<int64_t>(src.chip) * p_.chips() + dst.chip;
      auto it = route_of.find(key);
      if (it == route_of.end()) {
        Route r;
        r.links = p_.system()->Route(src.chip, dst.chip);
        r.latency_ps = internal::RouteLatencyPs(*p_.system(), r.links);
        it = route_of.emplace(key, static_cast<int32_t>(routes_.size())).first;
        routes_.push_back(std::move(r));
      }
      op.route = it->second;
      for (int id : routes_[op.route].links) links_[id].bytes += in.bytes;
      op.remote_stack =
          dst.chip * stacks_per_chip_ + HbmStackOfAddress(m_, dst.offset + in.dst_offset);
      op.remote_hbm_ps = c.remote_hbm_ps;
      res_.link_transfer_bytes += in.bytes;
    }
    if (src.space == MemSpace::kHbm) res_.hbm_read_bytes += in.bytes;
    if (dst.space == MemSpace::kHbm) {
      res_.hbm_write_bytes += in.bytes;
      if (in.accumulate) res_.hbm_read_bytes += in.bytes;  // DMA compute reads dst too
    }
    res_.hbm_read_bytes += ((in.src1 >= 0) + (in.src2 >= 0)) * in.bytes;  // more inputs
    if (in.dst2 >= 0) res_.hbm_write_bytes += in.bytes;                   // duplicated write
    res_.dma_bytes += in.bytes;
  }

  static bool IsTransferQueue(EngineKind e) {
    return e == EngineKind::kDma || e == EngineKind::kCollective;
  }

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
    const bool transfer = IsTransferQueue(stream.engine);
    while (ss.pc < ss.size && !time_overflow_) {
      const Op* op = &ops_[ss.base + ss.pc];
      int64_t ready = now;
      for (uint32_t i = 0; i < op->wait_count; ++i) {
        const SemWait& w = waits_[op->waits + i];
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
      // A transfer queue hands its next transfer to the engines once they are
      // free, not before, so that resources are reserved in time order.
      int first_engine = 0;
      if (transfer) {
        first_engine = FirstEngine(stream.core, *op);
        const int64_t free =
            std::max(ss.unit_free, WindowFree(stream.core, first_engine, op->engines));
        if (free > now) {
          ScheduleIssue(ss, s, free);
          return;
        }
      }
      int64_t start = 0, end = 0;
      StreamStats& stats = res_.streams[s];
      if (transfer) {
        ss.unit_free = ExecuteTransfer(s, stream.core, first_engine, *op, now, start, end);
        stats.busy_ps += end - start;
      } else {
        const Instruction& in = stream.instructions[ss.pc];
        Execute(s, stream, in, now, start, end);
        // LoadStationary runs in the background of the MM unit (section 5).
        (in.op == Opcode::kLoadStationary ? stats.background_ps : stats.busy_ps) += end - start;
      }
      ++stats.instructions;
      if (opt_.record_trace) {
        res_.trace.push_back(TraceRecord{s, static_cast<int32_t>(ss.pc), start, end});
      }
      res_.end_ps = std::max(res_.end_ps, end);
      if (end > kMaxTimePs) time_overflow_ = true;
      if (op->signal_count > 0) Push(end, s, static_cast<int32_t>(ss.pc));
      ++ss.pc;
      // The stream comes back to its next instruction after other streams'
      // events: fetch its record and lists now (they follow this one's).
      __builtin_prefetch(op + 1);
      __builtin_prefetch(&waits_[op->waits + op->wait_count]);
      __builtin_prefetch(&signals_[op->signals + op->signal_count]);
      // A transfer queue yields after each transfer: its next look comes
      // after the events already due now, so queues waiting for the same
      // engines take them in turn (transfer by transfer), not the one that
      // just had them again.
      if (transfer) {
        ScheduleIssue(ss, s, now);
        return;
      }
    }
  }

  void Complete(StreamId s, int32_t index, int64_t now) {
    const Op& op = ops_[st_[s].base + index];
    wake_.clear();
    for (uint32_t i = 0; i < op.signal_count; ++i) {
      const SemSignal& g = signals_[op.signals + i];
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
    if (stream.engine == EngineKind::kTensor) {
      ExecuteTensor(stream.core, in, now, start, end);
      return;
    }
    StreamState& ss = st_[s];
    start = std::max(now, ss.unit_free);
    // An in-order stream loads the activation tables in program order.
    const int64_t table = cost_.ActivationTableCycles(in, ss.act_table);
    end = start + ss.duration.Ps(cost_.ElementwiseCycles(p_, stream.engine, in) + table,
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
    if (ppm < kPpm) {  // ceil(base / cap), saturated like every duration
      const Uint128 capped = (static_cast<Uint128>(base) * kPpm + ppm - 1) / ppm;
      dur = capped >= static_cast<Uint128>(internal::kMaxDurationPs) ? internal::kMaxDurationPs
                                                                     : static_cast<int64_t>(capped);
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

  // When every DMA engine of the core from `first` to first + n - 1 is free.
  int64_t WindowFree(int core, int first, int n) const {
    const int64_t* free_ps = &engine_free_ps_[static_cast<size_t>(core) * engines_ + first];
    int64_t free = 0;
    for (int e = 0; e < n; ++e) free = std::max(free, free_ps[e]);
    return free;
  }

  // The first DMA engine that serves `op`: its own, or (kAnyEngines) the
  // first of the adjacent engines free soonest, the lowest on a tie.
  int FirstEngine(int core, const Op& op) const {
    if (op.first_engine != kAnyEngines) return op.first_engine;
    int best = 0;
    int64_t best_free = WindowFree(core, 0, op.engines);
    for (int f = 1; f + op.engines <= engines_; ++f) {
      const int64_t free = WindowFree(core, f, op.engines);
      if (free < best_free) best = f, best_free = free;
    }
    return best;
  }

  // The DMA engines that serve the transfer are taken together once all are
  // free; bytes read or written in HBM hold the core's stack from then on,
  // and a write into another chip's HBM holds every link of the route and
  // the destination stack too (cut through). The engines stay held until the
  // last byte has left; the transfer completes the route's latency later.
  // `first_engine`: FirstEngine(core, op), found when the engines were free.
  // Returns when the last byte has left (the engines are free again).
  int64_t ExecuteTransfer(StreamId s, int core, int first_engine, const Op& op, int64_t now,
                          int64_t& start, int64_t& end) {
    const size_t first = static_cast<size_t>(core) * engines_ + first_engine;
    int64_t* engine_free = &engine_free_ps_[first];
    start = now;  // Issue() hands a transfer over only once its engines are free.
    int64_t data_end = start + op.engine_ps;
    if (op.stack >= 0) data_end = std::max(data_end, hbm_stacks_[op.stack].Hold(start, op.hbm_ps));
    int64_t latency = 0;
    if (op.route >= 0) {
      const Route& route = routes_[op.route];
      for (int id : route.links) {
        const int64_t hold = internal::CeilPs(static_cast<double>(op.bytes) / link_bandwidth_[id]);
        const int64_t link_end = links_[id].Hold(start, hold);
        if (opt_.record_trace) {
          res_.link_trace.push_back(
              LinkTraceRecord{id, s, static_cast<int32_t>(st_[s].pc), link_end - hold, link_end});
        }
        data_end = std::max(data_end, link_end);
      }
      data_end = std::max(data_end, hbm_stacks_[op.remote_stack].Hold(start, op.remote_hbm_ps));
      latency = route.latency_ps;
    }
    // Engine time proper; waiting on a backlogged stack or link counts as theirs.
    int64_t* engine_busy = &engine_busy_ps_[first];
    for (int e = 0; e < op.engines; ++e) {
      engine_busy[e] += op.engine_ps;
      engine_free[e] = data_end;
    }
    end = data_end + latency;
    return data_end;
  }

  // The links and latency from one chip to another.
  struct Route {
    std::vector<int> links;
    int64_t latency_ps = 0;
  };

  SimResult Finish() {
    res_.dma_engine_busy_ps = std::move(engine_busy_ps_);
    res_.hbm_stack_busy_ps.reserve(hbm_stacks_.size());
    for (const BandwidthResource& r : hbm_stacks_) res_.hbm_stack_busy_ps.push_back(r.busy_ps);
    res_.link_busy_ps.reserve(links_.size());
    for (const BandwidthResource& r : links_) res_.link_busy_ps.push_back(r.busy_ps);
    for (const BandwidthResource& r : links_) res_.link_bytes.push_back(r.bytes);
    return std::move(res_);
  }

  const Program& p_;
  const Machine& m_;
  SimOptions opt_;
  CostModel cost_;
  SimResult res_;
  std::vector<StreamState> st_;
  std::vector<SemState> sems_;
  std::vector<TensorState> tensor_;
  std::vector<Op> ops_;  // every stream's instructions, stream after stream, then a spare
  std::vector<SemWait> waits_;
  std::vector<SemSignal> signals_;
  std::vector<Route> routes_;
  // DMA engines [core * engines + engine]: when each is free, and its busy time.
  std::vector<int64_t> engine_free_ps_, engine_busy_ps_;
  std::vector<BandwidthResource> hbm_stacks_;  // [chip * stacks + stack]
  std::vector<BandwidthResource> links_;       // the system's links, by id
  std::vector<double> link_bandwidth_;         // bytes/s per direction, by link id
  std::vector<StreamId> wake_;
  int engines_ = 16, stacks_per_chip_ = 4;
  int64_t window_ps_ = 0, ramp_ps_ = 0, start_ppm_ = kPpm;
  uint64_t clock_hz_[kComputeEngines] = {};
  int64_t sem_lat_[kComputeEngines + 2] = {};  // per EngineKind
  EventQueue queue_;
  uint64_t seq_ = 0;
  // The run stops once a time passes 2^62 ps; durations are at most 2^60 ps
  // (cost_model.h), so the few sums formed before the check fit in int64.
  static constexpr int64_t kMaxTimePs = int64_t{1} << 62;
  bool time_overflow_ = false;
  bool compiled_ = false;
};

}  // namespace

StatusOr<SimResult> Simulate(const Program& program, const SimOptions& options) {
  return Sim(program, options).Run();
}

}  // namespace trnmx::emu
