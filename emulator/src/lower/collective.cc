// Collective lowering: ring, mesh, rdh, KangaRing and hierarchical schedules
// as CC-core transfers between the ranks' HBM buffers (see the header).
#include "trnmx/emu/collective.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace trnmx::emu {
namespace {

// [floor(i n / parts), floor((i + 1) n / parts)): part i of n bytes.
std::pair<int64_t, int64_t> Part(int64_t n, int64_t parts, int64_t i) {
  const int64_t begin = n * i / parts, end = n * (i + 1) / parts;
  return {begin, end - begin};
}

// Received chunks one mesh reduction adds into the rank's buffer: a DMA
// compute reads up to three inputs besides its destination (program.h).
constexpr int kMeshSlotsPerReduction = 3;

// Mesh reductions per rank and half: R - 1 received chunks, three at a time.
int64_t MeshReductions(int64_t ranks) {
  return (ranks - 1 + kMeshSlotsPerReduction - 1) / kMeshSlotsPerReduction;
}

bool IsReduction(CollectiveOp op) {
  return op == CollectiveOp::kAllReduce || op == CollectiveOp::kReduceScatter;
}

// KangaRing's two cycles over the chips of an n x n torus (chip = x + n y),
// edge-disjoint Hamiltonian cycles (S17: "2 non-overlapping Hamiltonian
// cycles on 2D Torus"): cycle 0 steps x + 1 n - 1 times, then y + 1 (row y
// entered at x = -y); cycle 1 the same with x and y swapped. Each uses the
// links the other leaves, one direction each.
std::vector<int> KangaRingChips(int n, int cycle) {
  std::vector<int> chips;
  for (int t = 0; t < n * n; ++t) {
    const int a = t / n, b = ((t % n - a) % n + n) % n;
    chips.push_back(cycle == 0 ? b + n * a : a + n * b);
  }
  return chips;
}

// One rank: its chip, one CC-core queue (and its further DMA rings) and one
// arrival semaphore on each of its physical cores, its buffers.
struct Rank {
  int chip = 0;
  std::vector<std::vector<StreamId>> rings;  // [half][ring]: ring 0 is the CC-core's queue
  std::vector<SemId> arrived;                // [half]: +1 when a transfer into this rank lands
  // Mesh all-reduce: [half], +1 when the reductions are done (the other
  // rings' all-gather sends wait for it).
  std::vector<SemId> reduced;
  // Mesh all-reduce: [half], +1 per reduced chunk that lands from a peer,
  // kept apart from `arrived`, whose count the reductions wait for (an early
  // peer's chunk must not stand in for a late partial sum).
  std::vector<SemId> gathered;
  // Hierarchical: [half], +1 per arrival of the inter-server all-reduce
  // (`arrived` counts the intra-server rings').
  std::vector<SemId> inter_arrived;
  // RDH: [half][step], one semaphore per step, since a later step's partner
  // may deliver before an earlier step's.
  std::vector<std::vector<SemId>> step_arrived;
  BufferId data = -1;  // the collective's buffer, its bytes from data_offset
  int64_t data_offset = 0;
  BufferId staging = -1;      // received chunks (reductions, all-to-all, permute, send-recv)
  // [half][ring]: the ring holds an instruction (start_after is on it).
  std::vector<std::vector<bool>> started;
};

class Lowering {
 public:
  Lowering(Program& p, const CollectivePlan& plan, const CollectiveOperands& operands,
           int64_t queue_instructions)
      : p_(p),
        plan_(plan),
        c_(plan.config),
        ops_(operands),
        queue_instructions_(queue_instructions) {}

  Status Run() {
    const int ranks = c_.ranks, lnc = c_.lnc;
    const int64_t bytes = c_.bytes;
    const int64_t chunk_max = (bytes + ranks - 1) / ranks;
    int64_t staging = 0;
    switch (c_.op) {
      case CollectiveOp::kAllReduce:
      case CollectiveOp::kReduceScatter:
        // One slot per step (ring) or per sender (mesh); RDH: R/2, R/4, ..
        // chunks, R - 1 in all. Hierarchical: the intra-server ring's L - 1
        // slots, then the inter-server ring's S - 1 slots of its piece.
        // KangaRing: a primary's M - 1 received partial sums.
        staging = plan_.algorithm == CollectiveAlgorithm::kHierarchical
                      ? InterStagingBase() + (Servers() - 1) * InterSlotBytes()
                  : plan_.algorithm == CollectiveAlgorithm::kKangaRing ? (ranks / 2 - 1) * chunk_max
                                                                       : (ranks - 1) * chunk_max;
        break;
      case CollectiveOp::kAllToAll:
        staging = ranks * chunk_max;  // one slot per sender
        break;
      case CollectiveOp::kAllToAllV:  // per rank: what it receives (below)
      case CollectiveOp::kPermute:
      case CollectiveOp::kSendRecv:
        staging = bytes;
        break;
      case CollectiveOp::kAllGather:
        break;
    }
    for (int r = 0; r < ranks; ++r) {
      Rank rank;
      rank.chip = r / c_.ranks_per_chip;
      rank.started.assign(lnc, std::vector<bool>(plan_.rings, false));
      const std::string name = ops_.name_prefix + "rank" + std::to_string(r);
      for (int h = 0; h < lnc; ++h) {
        const int core = p_.CoreId(rank.chip, (r % c_.ranks_per_chip) * lnc + h);
        StatusOr<StreamId> q = p_.AddCollectiveQueue(core, name);
        if (!q.ok()) return q.status();
        if (Status st = p_.Reserve(*q, queue_instructions_); !st.ok()) return st;
        rank.rings.push_back({*q});
        for (int i = 1; i < plan_.rings; ++i) {  // a share of the sends each
          StatusOr<StreamId> ring = p_.AddCollectiveRing(*q, name + ".ring" + std::to_string(i));
          if (!ring.ok()) return ring.status();
          if (Status st = p_.Reserve(*ring, queue_instructions_ / plan_.rings + 1); !st.ok()) {
            return st;
          }
          rank.rings[h].push_back(*ring);
        }
        StatusOr<SemId> s = p_.AddSemaphore(core, name + ".arrived");
        if (!s.ok()) return s.status();
        rank.arrived.push_back(*s);
        if (plan_.rings > 1 && c_.op == CollectiveOp::kAllReduce) {
          StatusOr<SemId> reduced = p_.AddSemaphore(core, name + ".reduced");
          if (!reduced.ok()) return reduced.status();
          rank.reduced.push_back(*reduced);
        }
        if (plan_.algorithm == CollectiveAlgorithm::kMesh && c_.op == CollectiveOp::kAllReduce) {
          StatusOr<SemId> gathered = p_.AddSemaphore(core, name + ".gathered");
          if (!gathered.ok()) return gathered.status();
          rank.gathered.push_back(*gathered);
        }
        if (plan_.algorithm == CollectiveAlgorithm::kHierarchical) {
          StatusOr<SemId> inter = p_.AddSemaphore(core, name + ".arrived.inter");
          if (!inter.ok()) return inter.status();
          rank.inter_arrived.push_back(*inter);
        }
        if (plan_.algorithm == CollectiveAlgorithm::kRdh) {
          rank.step_arrived.emplace_back();
          for (int j = 0; j < plan_.steps; ++j) {
            StatusOr<SemId> step =
                p_.AddSemaphore(core, name + ".arrived.step" + std::to_string(j));
            if (!step.ok()) return step.status();
            rank.step_arrived.back().push_back(*step);
          }
        }
      }
      if (ops_.data.empty()) {
        StatusOr<BufferId> d = p_.AllocHbm(name + ".data", bytes, rank.chip);
        if (!d.ok()) return d.status();
        rank.data = *d;
      } else {
        rank.data = ops_.data[r];
        rank.data_offset = ops_.data_offset.empty() ? 0 : ops_.data_offset[r];
      }
      if (c_.op == CollectiveOp::kAllToAllV) {
        staging = 0;
        for (int from = 0; from < ranks; ++from) staging += Size(from, r);
        staging = std::max<int64_t>(1, staging);
      }
      if (staging > 0) {
        StatusOr<BufferId> s = p_.AllocHbm(name + ".staging", staging, rank.chip);
        if (!s.ok()) return s.status();
        rank.staging = *s;
      }
      ranks_.push_back(std::move(rank));
    }
    if (plan_.algorithm == CollectiveAlgorithm::kRdh) PlaceHypercube();
    if (plan_.algorithm == CollectiveAlgorithm::kKangaRing) PlaceKangaRing();
    for (int h = 0; h < lnc; ++h) {
      for (int r = 0; r < ranks; ++r) {
        if (Status s = LowerRank(r, h); !s.ok()) return s;
      }
    }
    return OkStatus();
  }

 private:
  // All-to-all-v: bytes rank `from` sends rank `to`.
  int64_t Size(int from, int to) const {
    return c_.sizes[static_cast<size_t>(from) * c_.ranks + to];
  }
  int64_t ChunkOffset(int64_t c) const { return c_.bytes * c / c_.ranks; }
  int64_t ChunkBytes(int64_t c) const { return ChunkOffset(c + 1) - ChunkOffset(c); }
  int64_t SlotBytes() const { return (c_.bytes + c_.ranks - 1) / c_.ranks; }
  int Next(int r, int k = 1) const { return (r + k) % c_.ranks; }
  int Prev(int r, int k = 1) const { return ((r - k) % c_.ranks + c_.ranks) % c_.ranks; }

  // Hierarchical: L ranks per server, S servers; the inter-server ring
  // works on one intra-server chunk (at most ceil(bytes / L)) in S pieces.
  int Local() const { return plan_.ranks_per_server; }
  int Servers() const { return c_.ranks / plan_.ranks_per_server; }
  int64_t InterStagingBase() const { return (Local() - 1) * SlotBytesOf(c_.bytes, Local()); }
  int64_t InterSlotBytes() const { return SlotBytesOf(SlotBytesOf(c_.bytes, Local()), Servers()); }
  static int64_t SlotBytesOf(int64_t n, int64_t parts) { return (n + parts - 1) / parts; }

  // A ring of n ranks, position p holding rank first + p x stride, over the
  // bytes [offset, offset + bytes) of every member's buffer, cut into n
  // pieces; arrivals count on each member's `arrived` (or inter_arrived).
  struct Ring {
    int first = 0, stride = 1, n = 0;
    int64_t offset = 0, bytes = 0;
    bool inter = false;
    int Rank(int pos) const { return first + ((pos % n + n) % n) * stride; }
    int64_t PieceOffset(int i) const { return offset + bytes * i / n; }
    int64_t PieceBytes(int i) const { return bytes * (i + 1) / n - bytes * i / n; }
  };
  SemId ArrivalOf(const Ring& ring, int q, int h) const {
    return ring.inter ? ranks_[q].inter_arrived[h] : ranks_[q].arrived[h];
  }

  // Ring reduce-scatter, half h of the member at position i: in step k it
  // sends piece i - k into the next member's staging slot k (from
  // staging_base) and adds the piece i - k - 1 it received into its buffer
  // once `count_base + k + 1` arrivals have landed. Position i ends with the
  // sum of piece i + 1.
  Status RingReduceScatter(const Ring& ring, int i, int h, int64_t staging_base,
                           int64_t count_base) {
    const int r = ring.Rank(i), next = ring.Rank(i + 1), n = ring.n;
    const int64_t slot = SlotBytesOf(ring.bytes, n);
    for (int k = 0; k + 1 < n; ++k) {
      const int send = ((i - k) % n + n) % n, recv = ((i - k - 1) % n + n) % n;
      if (Status s =
              Send(r, h, ring.PieceOffset(send), next, ranks_[next].staging,
                   staging_base + k * slot, ring.PieceBytes(send), {}, ArrivalOf(ring, next, h));
          !s.ok()) {
        return s;
      }
      if (Status s = Reduce(r, h, staging_base + k * slot, ring.PieceOffset(recv),
                            ring.PieceBytes(recv), {{ArrivalOf(ring, r, h), count_base + k + 1}});
          !s.ok()) {
        return s;
      }
    }
    return OkStatus();
  }

  // Ring all-gather, half h of the member at position i starting with piece
  // `own`: in step k it writes piece own - k into the next member's buffer,
  // after `first_waits` (k = 0) or the arrival count_base + k (the piece
  // received in step k - 1).
  Status RingAllGather(const Ring& ring, int i, int h, int own, int64_t count_base,
                       std::vector<SemWait> first_waits) {
    const int r = ring.Rank(i), next = ring.Rank(i + 1), n = ring.n;
    for (int k = 0; k + 1 < n; ++k) {
      const int piece = ((own - k) % n + n) % n;
      std::vector<SemWait> waits;
      if (k == 0) waits = std::move(first_waits);
      if (k > 0) waits.push_back({ArrivalOf(ring, r, h), count_base + k});
      if (Status s =
              Send(r, h, ring.PieceOffset(piece), next, ranks_[next].data, ring.PieceOffset(piece),
                   ring.PieceBytes(piece), std::move(waits), ArrivalOf(ring, next, h));
          !s.ok()) {
        return s;
      }
    }
    return OkStatus();
  }

  // Hierarchical (header). All-reduce: intra-server ring reduce-scatter,
  // the inter-server ring all-reduce of the piece it leaves, intra-server
  // ring all-gather, which first waits for the inter ring's 2 (S - 1)
  // arrivals (the piece it sends out whole). Reduce-scatter: the first two
  // of those. All-gather: the inter-server ring all-gather of piece l (rank
  // (s, l) starting with its sub-piece s), then the intra-server one, after
  // the S - 1 arrivals.
  Status LowerRankHierarchical(int r, int h) {
    const int L = Local(), S = Servers(), server = r / L, l = r % L;
    const Ring intra{server * L, 1, L, 0, c_.bytes, false};
    if (c_.op == CollectiveOp::kAllGather) {
      const Ring inter{l, L, S, intra.PieceOffset(l), intra.PieceBytes(l), true};
      if (Status s = RingAllGather(inter, server, h, server, 0, {}); !s.ok()) return s;
      return RingAllGather(intra, l, h, l, 0,
                           {{ranks_[r].inter_arrived[h], static_cast<int64_t>(S - 1)}});
    }
    if (Status s = RingReduceScatter(intra, l, h, 0, 0); !s.ok()) return s;
    const int chunk = (l + 1) % L;
    const Ring inter{l, L, S, intra.PieceOffset(chunk), intra.PieceBytes(chunk), true};
    if (Status s = RingReduceScatter(inter, server, h, InterStagingBase(), 0); !s.ok()) return s;
    if (c_.op == CollectiveOp::kReduceScatter) return OkStatus();
    if (Status s = RingAllGather(inter, server, h, (server + 1) % S, S - 1, {}); !s.ok()) return s;
    return RingAllGather(intra, l, h, chunk, L - 1,
                         {{ranks_[r].inter_arrived[h], 2 * static_cast<int64_t>(S - 1)}});
  }

  // The byte offset of rank r's part of buffer b.
  int64_t Base(int r, BufferId b) const { return b == ranks_[r].data ? ranks_[r].data_offset : 0; }

  // Appends `in` to rank r's half-h queue (or its further DMA ring `ring`);
  // the first instruction of each also waits for the operands' start_after.
  Status Emit(int r, int h, Instruction in, int ring = 0) {
    Rank& rank = ranks_[r];
    if (!rank.started[h][ring]) {
      rank.started[h][ring] = true;
      if (!ops_.start_after.empty()) {
        const std::vector<SemWait>& first = ops_.start_after[static_cast<size_t>(r) * c_.lnc + h];
        in.waits.insert(in.waits.begin(), first.begin(), first.end());
      }
    }
    return p_.Append(rank.rings[h][ring], std::move(in));
  }

  // Adds rank r's done signals to an instruction that writes its result.
  void SignalDone(int r, Instruction& in) const {
    if (!ops_.done_signals.empty()) {
      const std::vector<SemSignal>& done = ops_.done_signals[r];
      in.signals.insert(in.signals.end(), done.begin(), done.end());
    }
  }

  // Half h of a transfer of `n` bytes from rank `from` (at src_off in its
  // data) to rank `to` (at dst_off in dst), after `waits`; signals `to`'s
  // arrival, and its done signals unless the bytes are a reduction's
  // partial sums (staging).
  // `arrival`: the semaphore of `to` it signals instead of its arrival count;
  // `ring`: the DMA ring of `from` it goes on (Emit).
  Status Send(int from, int h, int64_t src_off, int to, BufferId dst, int64_t dst_off, int64_t n,
              std::vector<SemWait> waits, SemId arrival = -1, int ring = 0) {
    const auto [off, len] = Part(n, c_.lnc, h);
    if (len == 0) return OkStatus();  // all-to-all-v: fewer bytes than physical cores
    const BufferId src = ranks_[from].data;
    Instruction in = Instruction::DmaCopy(src, dst, len, 128, Base(from, src) + src_off + off,
                                          Base(to, dst) + dst_off + off);
    in.waits = std::move(waits);
    in.signals = {{arrival >= 0 ? arrival : ranks_[to].arrived[h], 1}};
    if (!(IsReduction(c_.op) && dst == ranks_[to].staging)) SignalDone(to, in);
    return Emit(from, h, std::move(in), ring);
  }

  // Mesh: the ring of rank r's transfer to its k-th peer (k = 1 .. R - 1).
  int MeshRing(int k) const { return (k - 1) % plan_.rings; }

  // Half h of adding `n` received bytes at `staging_off` into the rank's
  // buffer at `data_off` (DMA compute: dst += src), after `waits`.
  // Mesh: `slots` (at most kMeshSlotsPerReduction) received chunks, slot
  // bytes apart from staging_off, added in one DMA compute (dst += each);
  // `also` (>= 0) is signalled too.
  Status Reduce(int r, int h, int64_t staging_off, int64_t data_off, int64_t n,
                std::vector<SemWait> waits, int slots = 1, SemId also = -1) {
    const auto [off, len] = Part(n, c_.lnc, h);
    const Rank& rank = ranks_[r];
    const auto slot = [&](int i) { return staging_off + i * SlotBytes() + off; };
    Instruction in = Instruction::DmaCopy(rank.staging, rank.data, len, 128, slot(0),
                                          rank.data_offset + data_off + off);
    if (slots > 1) in.src1 = rank.staging, in.src1_offset = slot(1);
    if (slots > 2) in.src2 = rank.staging, in.src2_offset = slot(2);
    in.accumulate = true;
    in.waits = std::move(waits);
    SignalDone(r, in);
    if (also >= 0) in.signals.push_back({also, 1});
    return Emit(r, h, std::move(in));
  }

  SemWait Arrived(int r, int h, int64_t count) const { return {ranks_[r].arrived[h], count}; }

  // Recursive halving (reduce-scatter) then doubling (all-gather) over
  // log2 R steps each; ranks are a power of two. Halving step j pairs rank
  // r with r ^ (R >> (j + 1)): each keeps the half of its segment of
  // chunks on its side of that bit, sends the other half into the
  // partner's staging slot j (chunks R - R / 2^j onwards) and adds the
  // partner's half of its own into its buffer; rank r ends with chunk r.
  // Doubling step j pairs r with r ^ 2^j: each writes its segment (2^j
  // chunks) into the partner's buffer at the same offsets.
  // RDH's hypercube: position p holds rank rank_of_pos_[p]. The ranks of a
  // chip take the high bits (the first, largest halving steps stay on the
  // chip; the chips exchange bytes / ranks_per_chip at most), the chips the
  // low bits; on a torus each full ring of 2 or 4 chips is Gray-coded
  // (0, 1, 3, 2 around the ring), so that every exchange between chips
  // crosses one link (trainium.md 10.3: the 4x4 torus as a 4-D hypercube).
  void PlaceHypercube() {
    const int R = c_.ranks;
    const int local = std::min(R, c_.ranks_per_chip);
    const bool split = (local & (local - 1)) == 0 && R % local == 0;
    const int chips = split ? R / local : R;
    int chip_bits = 0;
    while ((1 << chip_bits) < chips) ++chip_bits;
    const System* sys = p_.system();
    rank_of_pos_.assign(R, 0);
    for (int r = 0; r < R; ++r) {
      const int chip = split ? r / c_.ranks_per_chip : r, l = split ? r % c_.ranks_per_chip : 0;
      int label = chip;
      if (sys != nullptr && sys->topology.kind == TopologyKind::kTorus) {
        label = 0;
        int shift = 0, remaining = chips, id = chip;
        for (const TorusDim& d : sys->topology.dims) {
          const int n = static_cast<int>(d.size.value), coord = id % n;
          id /= n;
          int bits = 0;
          if (remaining >= n && (n & (n - 1)) == 0) {
            while ((1 << bits) < n) ++bits;
            label |= (coord ^ (coord >> 1)) << shift;
            remaining /= n;
          } else {
            while ((1 << bits) < remaining) ++bits;
            label |= coord << shift;
            remaining = 1;
          }
          shift += bits;
        }
      }
      rank_of_pos_[(l << chip_bits) | label] = r;
    }
    pos_of_rank_.assign(R, 0);
    for (int p = 0; p < R; ++p) pos_of_rank_[rank_of_pos_[p]] = p;
  }

  Status LowerRankRdh(int r, int h) {
    const int R = c_.ranks, steps = plan_.steps / (c_.op == CollectiveOp::kAllReduce ? 2 : 1);
    // Step k's arrival into rank q (k counts halving steps, then doubling).
    const auto arrival = [&](int q, int k) { return ranks_[q].step_arrived[h][k]; };
    // Positions and chunks: the rank at position p ends the halving with
    // chunk p, and starts the doubling with it.
    const int p = pos_of_rank_[r];
    int k = 0;
    if (IsReduction(c_.op)) {
      int lo = 0;  // rank r's segment of chunks: [lo, lo + 2d) before step j
      for (int j = 0; j < steps; ++j, ++k) {
        const int d = R >> (j + 1), partner = rank_of_pos_[p ^ d];
        const int keep = (p & d) == 0 ? lo : lo + d, send = keep == lo ? lo + d : lo;
        const int64_t slot = static_cast<int64_t>(R - (R >> j)) * SlotBytes();
        if (Status s = Send(r, h, ChunkOffset(send), partner, ranks_[partner].staging, slot,
                            ChunkOffset(send + d) - ChunkOffset(send), {}, arrival(partner, k));
            !s.ok()) {
          return s;
        }
        if (Status s = Reduce(r, h, slot, ChunkOffset(keep),
                              ChunkOffset(keep + d) - ChunkOffset(keep), {{arrival(r, k), 1}});
            !s.ok()) {
          return s;
        }
        lo = keep;
      }
    }
    if (c_.op == CollectiveOp::kReduceScatter) return OkStatus();
    for (int j = 0; j < steps; ++j, ++k) {
      const int d = 1 << j, partner = rank_of_pos_[p ^ d];
      const int lo = p & ~(d - 1);  // the segment: chunks [lo, lo + d)
      std::vector<SemWait> waits;
      if (j > 0) waits.push_back({arrival(r, k - 1), 1});  // the previous partner's half of it
      if (Status s =
              Send(r, h, ChunkOffset(lo), partner, ranks_[partner].data, ChunkOffset(lo),
                   ChunkOffset(lo + d) - ChunkOffset(lo), std::move(waits), arrival(partner, k));
          !s.ok()) {
        return s;
      }
    }
    return OkStatus();
  }

  // KangaRing (header): the ranks of a chip pair up (2j, 2j + 1); in cycle c
  // the rank of each pair with r % 2 == c is the primary. Cycle c visits the
  // chips along KangaRingChips(c) and, on each chip, its primaries in rank
  // order; it carries the chunks of its primaries.
  void PlaceKangaRing() {
    // The plan's chips are an n x n layer (KangaRingMisfit); n from them,
    // not from the program's system, which CheckOperands does not compare.
    const int per_chip = c_.ranks_per_chip, chips = c_.ranks / per_chip;
    int n = 1;
    while (n * n < chips) ++n;
    kanga_pos_.assign(c_.ranks, 0);
    for (int cycle = 0; cycle < 2; ++cycle) {
      kanga_cycle_[cycle].clear();
      for (int chip : KangaRingChips(n, cycle)) {
        for (int j = 0; j < per_chip / 2; ++j) {
          const int r = chip * per_chip + 2 * j + cycle;
          kanga_pos_[r] = static_cast<int>(kanga_cycle_[cycle].size());
          kanga_cycle_[cycle].push_back(r);
        }
      }
    }
  }

  // Half h of a KangaRing transfer of `n` bytes by rank r: the sum of
  // `inputs` (buffer, byte offset within the owner's part; one to three)
  // written into `to`'s buffer `dst` and, when dup >= 0, also into rank
  // dup's data at dup_off (write duplication). Signals `to`'s arrival when
  // `arrival`, and the done signals of the ranks whose results it writes.
  struct At {
    int rank;
    BufferId buffer;
    int64_t offset;
  };
  Status KangaTransfer(int r, int h, const std::vector<At>& inputs, At to, bool arrival, int dup,
                       int64_t dup_off, int64_t n, std::vector<SemWait> waits) {
    const auto [part_off, len] = Part(n, c_.lnc, h);
    // A named copy: Clang 14 cannot capture a structured binding.
    const int64_t off = part_off;
    const auto abs = [&](const At& a) { return Base(a.rank, a.buffer) + a.offset + off; };
    Instruction in =
        Instruction::DmaCopy(inputs[0].buffer, to.buffer, len, 128, abs(inputs[0]), abs(to));
    if (inputs.size() > 1) in.src1 = inputs[1].buffer, in.src1_offset = abs(inputs[1]);
    if (inputs.size() > 2) in.src2 = inputs[2].buffer, in.src2_offset = abs(inputs[2]);
    in.waits = std::move(waits);
    if (arrival) in.signals.push_back({ranks_[to.rank].arrived[h], 1});
    if (to.buffer == ranks_[to.rank].data) SignalDone(to.rank, in);
    if (dup >= 0) {
      in.dst2 = ranks_[dup].data;
      in.dst2_offset = Base(dup, in.dst2) + dup_off + off;
      SignalDone(dup, in);
    }
    return Emit(r, h, std::move(in));
  }

  // KangaRing, half h of rank r, a member of M primaries at position i of
  // its cycle: reduce-scatter (3R1W: the partial sum received, its own and
  // its secondary's copy of a chunk, written to the next primary), then
  // all-gather (1R2W: each chunk read once, written to the next primary and
  // to the secondary); S17's schedules.
  Status LowerRankKangaRing(int r, int h) {
    const std::vector<int>& cycle = kanga_cycle_[r % 2];
    const int M = static_cast<int>(cycle.size()), i = kanga_pos_[r], sec = r ^ 1;
    const int next = cycle[(i + 1) % M];
    const BufferId data = ranks_[r].data, sec_data = ranks_[sec].data;
    // The chunk of the primary at position q (mod M).
    const auto owner = [&](int q) { return cycle[((q % M) + M) % M]; };
    const auto arrived = [&](int64_t count) { return SemWait{ranks_[r].arrived[h], count}; };
    int64_t base = 0;
    if (IsReduction(c_.op)) {
      // Step k adds chunk owner(i - 1 - k): its partial sum from staging slot
      // k - 1 (k > 0), its own and its secondary's copy; the last step
      // (k = M - 1, chunk owner(i)) writes the sum into its own buffer.
      for (int k = 0; k < M; ++k) {
        const int x = owner(i - 1 - k);
        const int64_t off = ChunkOffset(x), n = ChunkBytes(x);
        std::vector<At> inputs;
        std::vector<SemWait> waits;
        if (k > 0) {
          inputs.push_back({r, ranks_[r].staging, (k - 1) * SlotBytes()});
          waits.push_back(arrived(k));
        }
        inputs.push_back({r, data, off});
        inputs.push_back({sec, sec_data, off});
        const bool last = k == M - 1;
        const At to = last ? At{r, data, off} : At{next, ranks_[next].staging, k * SlotBytes()};
        if (Status s = KangaTransfer(r, h, inputs, to, !last, -1, 0, n, std::move(waits));
            !s.ok()) {
          return s;
        }
      }
      base = M - 1;
    }
    if (c_.op == CollectiveOp::kReduceScatter) return OkStatus();
    // Step k forwards chunk owner(i - k) (k = 0: its own) to the next primary
    // and its secondary; the last step (k = M - 1) only to its secondary.
    for (int k = 0; k < M; ++k) {
      const int x = owner(i - k);
      const int64_t off = ChunkOffset(x), n = ChunkBytes(x);
      std::vector<SemWait> waits;
      if (k > 0) waits.push_back(arrived(base + k));
      const bool last = k == M - 1;
      const At to = last ? At{sec, sec_data, off} : At{next, ranks_[next].data, off};
      if (Status s = KangaTransfer(r, h, {{r, data, off}}, to, !last, last ? -1 : sec, off, n,
                                   std::move(waits));
          !s.ok()) {
        return s;
      }
    }
    return OkStatus();
  }

  // Rank r's instructions on its half-h queue. Arrival counts of a rank are
  // known in advance from the schedule, so waits name absolute values.
  Status LowerRank(int r, int h) {
    if (plan_.algorithm == CollectiveAlgorithm::kRdh) return LowerRankRdh(r, h);
    if (plan_.algorithm == CollectiveAlgorithm::kKangaRing) return LowerRankKangaRing(r, h);
    if (plan_.algorithm == CollectiveAlgorithm::kHierarchical) return LowerRankHierarchical(r, h);
    const int R = c_.ranks;
    const bool ring = plan_.algorithm == CollectiveAlgorithm::kRing;
    switch (c_.op) {
      case CollectiveOp::kPermute:
        return Send(r, h, 0, Next(r), ranks_[Next(r)].staging, 0, c_.bytes, {});
      case CollectiveOp::kSendRecv: {
        const int peer = r % 2 == 0 ? r + 1 : r - 1;
        return Send(r, h, 0, peer, ranks_[peer].staging, 0, c_.bytes, {});
      }
      case CollectiveOp::kAllToAll:
        for (int k = 1; k < R; ++k) {  // peer r + k: spreads the writes over the receivers
          const int to = Next(r, k);
          if (Status s = Send(r, h, ChunkOffset(to), to, ranks_[to].staging, r * SlotBytes(),
                              ChunkBytes(to), {}, -1, MeshRing(k));
              !s.ok()) {
            return s;
          }
        }
        return OkStatus();
      case CollectiveOp::kAllToAllV:
        for (int k = 1; k < R; ++k) {  // as all-to-all; rows and columns at their prefix sums
          const int to = Next(r, k);
          if (Size(r, to) == 0) continue;
          int64_t src = 0, dst = 0;
          for (int t = 0; t < to; ++t) src += Size(r, t);
          for (int f = 0; f < r; ++f) dst += Size(f, to);
          if (Status s =
                  Send(r, h, src, to, ranks_[to].staging, dst, Size(r, to), {}, -1, MeshRing(k));
              !s.ok()) {
            return s;
          }
        }
        return OkStatus();
      default:
        break;
    }
    // Reduce-scatter part (all-reduce, reduce-scatter). Rank r ends up with
    // the sum of chunk Next(r) (ring) or chunk r (mesh).
    const Ring all{0, 1, R, 0, c_.bytes, false};
    if (IsReduction(c_.op)) {
      if (ring) {
        if (Status s = RingReduceScatter(all, r, h, 0, 0); !s.ok()) return s;
      } else {
        for (int k = 1; k < R; ++k) {
          const int to = Next(r, k);  // r is k ranks behind `to`: slot R - 1 - k there
          if (Status s = Send(r, h, ChunkOffset(to), to, ranks_[to].staging,
                              (R - 1 - k) * SlotBytes(), ChunkBytes(to), {}, -1, MeshRing(k));
              !s.ok()) {
            return s;
          }
        }
        // The slots fill in any order: once all have landed, add them on
        // ring 0 in order, kMeshSlotsPerReduction at a time.
        for (int k = 0; k + 1 < R; k += kMeshSlotsPerReduction) {
          std::vector<SemWait> waits;
          if (k == 0) waits.push_back(Arrived(r, h, R - 1));
          const int slots = std::min(kMeshSlotsPerReduction, R - 1 - k);
          // The last one tells the other rings (all-reduce) the sum is done.
          const bool last = k + slots == R - 1 && !ranks_[r].reduced.empty();
          if (Status s = Reduce(r, h, k * SlotBytes(), ChunkOffset(r), ChunkBytes(r),
                                std::move(waits), slots, last ? ranks_[r].reduced[h] : -1);
              !s.ok()) {
            return s;
          }
        }
      }
    }
    if (c_.op == CollectiveOp::kReduceScatter) return OkStatus();
    // All-gather part (all-gather, all-reduce): rank r starts with chunk r
    // (all-gather), or with the reduced chunk of the reduce-scatter above.
    const int64_t base = IsReduction(c_.op) ? (ring ? R - 1 : 0) : 0;
    const int own = c_.op == CollectiveOp::kAllGather ? r : (ring ? Next(r) : r);
    if (ring) {
      if (Status s = RingAllGather(all, r, h, own, base, {}); !s.ok()) return s;
    } else {
      for (int k = 1; k < R; ++k) {
        const int to = Next(r, k);
        // The other rings' first sends of the reduced chunk wait for ring 0's reductions.
        std::vector<SemWait> waits;
        if (IsReduction(c_.op) && MeshRing(k) > 0 && k <= plan_.rings) {
          waits.push_back({ranks_[r].reduced[h], 1});
        }
        const SemId arrival = IsReduction(c_.op) ? ranks_[to].gathered[h] : -1;
        if (Status s = Send(r, h, ChunkOffset(own), to, ranks_[to].data, ChunkOffset(own),
                            ChunkBytes(own), std::move(waits), arrival, MeshRing(k));
            !s.ok()) {
          return s;
        }
      }
    }
    return OkStatus();
  }

  Program& p_;
  const CollectivePlan& plan_;
  const CollectiveConfig& c_;
  const CollectiveOperands& ops_;
  std::vector<Rank> ranks_;
  std::vector<int> rank_of_pos_, pos_of_rank_;   // RDH (PlaceHypercube)
  std::vector<int> kanga_cycle_[2], kanga_pos_;  // KangaRing: ranks by position, r's position
  int64_t queue_instructions_;                   // each queue's count (InstructionsPerQueue)
};

// Instructions per rank and half: sends, and reductions for the reduce ops.
int64_t InstructionsPerQueue(const CollectivePlan& plan) {
  // A transfer per step, and a reduction per reduce-scatter step.
  if (plan.algorithm == CollectiveAlgorithm::kRdh) {
    return plan.config.op == CollectiveOp::kAllGather
               ? plan.steps
               : plan.steps + plan.steps / (plan.config.op == CollectiveOp::kAllReduce ? 2 : 1);
  }
  if (plan.algorithm == CollectiveAlgorithm::kKangaRing) {  // one transfer per step, primaries
    return plan.steps;
  }
  if (plan.algorithm == CollectiveAlgorithm::kHierarchical) {
    // Per ring step: a send, and a reduction in reduce-scatter phases.
    const int64_t L = plan.ranks_per_server, S = plan.config.ranks / L;
    const int64_t per_step = plan.config.op == CollectiveOp::kAllReduce       ? 3
                             : plan.config.op == CollectiveOp::kReduceScatter ? 2
                                                                              : 1;
    return per_step * ((L - 1) + (S - 1));
  }
  const int64_t R = plan.config.ranks;
  // Ring: a reduction per received chunk; mesh: per kMeshSlotsPerReduction.
  const int64_t reductions =
      plan.algorithm == CollectiveAlgorithm::kMesh ? MeshReductions(R) : R - 1;
  switch (plan.config.op) {
    case CollectiveOp::kPermute:
    case CollectiveOp::kSendRecv:
      return 1;
    case CollectiveOp::kAllToAll:
    case CollectiveOp::kAllToAllV:  // at most
    case CollectiveOp::kAllGather:
      return R - 1;
    case CollectiveOp::kReduceScatter:
      return (R - 1) + reductions;
    case CollectiveOp::kAllReduce:
      return 2 * (R - 1) + reductions;
  }
  return 0;
}

// Instructions per rank that write its result (CollectiveOperands::done_signals).
int64_t Completions(const CollectivePlan& plan) {
  const int64_t lnc = plan.config.lnc;
  // rdh: one write of the rank's result per step (a reduction or an arrival).
  // Hierarchical: the rings' reductions and gathered pieces, one per step.
  if (plan.algorithm == CollectiveAlgorithm::kRdh ||
      plan.algorithm == CollectiveAlgorithm::kHierarchical) {
    return lnc * plan.steps;
  }
  const int64_t R = plan.config.ranks;
  if (plan.algorithm == CollectiveAlgorithm::kKangaRing) {
    // Reduce-scatter: the last step's sum, in place. All-gather: R / 2 - 1
    // chunks as a primary, R / 2 as a secondary.
    const int64_t rs = IsReduction(plan.config.op) ? 1 : 0;
    const int64_t ag = plan.config.op == CollectiveOp::kReduceScatter ? 0 : R - 1;
    return lnc * (rs + ag);
  }
  const int64_t reductions =
      plan.algorithm == CollectiveAlgorithm::kMesh ? MeshReductions(R) : R - 1;
  switch (plan.config.op) {
    case CollectiveOp::kAllReduce:
      return lnc * (reductions + R - 1);  // its reductions, then the gathered chunks
    case CollectiveOp::kReduceScatter:
      return lnc * reductions;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kAllToAll:
      return lnc * (R - 1);
    case CollectiveOp::kPermute:
    case CollectiveOp::kSendRecv:
      return lnc;
    case CollectiveOp::kAllToAllV:
      return 0;
  }
  return 0;
}

// The ranks are simulated one by one. Where the routes between consecutive
// chips differ (a torus row's wrap, a Trn3 rack's twin link), no rank's
// timeline is another's shifted, so none can stand for another; say so.
std::string WhySimulatedRankByRank(const System& system, int chips) {
  if (chips < 2) return "every rank (one chip, no links)";
  size_t shortest = SIZE_MAX, longest = 0;
  int short_at = 0, long_at = 0;
  for (int chip = 0; chip < chips; ++chip) {
    const size_t hops = system.Route(chip, (chip + 1) % chips).size();
    if (hops < shortest) shortest = hops, short_at = chip;
    if (hops > longest) longest = hops, long_at = chip;
  }
  const auto pair = [&](int chip, size_t hops) {
    return "chip " + std::to_string(chip) + " -> " + std::to_string((chip + 1) % chips) + ": " +
           std::to_string(hops);
  };
  if (shortest == longest) {
    return "every rank (the routes from chip c to chip c + 1 all take " + std::to_string(shortest) +
           " link(s); symmetric ranks are not simulated once)";
  }
  return "every rank: the routes from chip c to chip c + 1 take " + std::to_string(shortest) +
         " to " + std::to_string(longest) + " links (" + pair(short_at, shortest) + ", " +
         pair(long_at, longest) + "), so no rank stands for another";
}

// Why KangaRing cannot run this collective, or "" when it can (S17): over
// the two Hamiltonian cycles of one n x n torus (all 16 devices of a
// trn2.48xlarge; the first server of a trn2-ultraserver), pairing the ranks
// of each chip, so every rank of each chip in the group; all-reduce,
// all-gather or reduce-scatter.
std::string KangaRingMisfit(const System& system, const CollectiveConfig& c, int logical) {
  if (system.topology.kind != TopologyKind::kTorus) {
    return "KangaRing runs over the two Hamiltonian cycles of a Trn2 torus; " + system.name +
           " is " + DescribeTopology(system);
  }
  if (c.op != CollectiveOp::kAllReduce && c.op != CollectiveOp::kAllGather &&
      c.op != CollectiveOp::kReduceScatter) {
    return "KangaRing is lowered for all-reduce, all-gather and reduce-scatter";
  }
  if (c.ranks_per_chip != logical || logical % 2 != 0) {
    return "KangaRing pairs the ranks of a chip and needs all of them in the group (S17: "
           "\"all ranks in chip are in same rank-list\"); ranks_per_chip = " +
           std::to_string(c.ranks_per_chip) + " of " + std::to_string(logical);
  }
  const std::vector<TorusDim>& dims = system.topology.dims;
  const int n = static_cast<int>(dims[0].size.value);
  const bool square = dims.size() >= 2 && static_cast<int>(dims[1].size.value) == n && n >= 3;
  if (!square || c.ranks != n * n * c.ranks_per_chip) {
    return "KangaRing runs over the two Hamiltonian cycles of one n x n torus of chips (n >= "
           "3); ranks = " +
           std::to_string(c.ranks) + " are " + std::to_string(c.ranks / c.ranks_per_chip) +
           " chips of the " + DescribeTopology(system) +
           (square ? " (KangaRing needs the " + std::to_string(n * n * c.ranks_per_chip) +
                         " ranks of its first " + std::to_string(n) + "x" + std::to_string(n) +
                         " layer)"
                   : std::string());
  }
  return "";
}

// All-to-all-v sizes against the resolved ranks and bytes, named by entry.
Status CheckSizes(const CollectiveConfig& c) {
  const size_t want = static_cast<size_t>(c.ranks) * c.ranks;
  if (c.sizes.size() != want) {
    return InvalidArgumentError("sizes has " + std::to_string(c.sizes.size()) +
                                " entries; all-to-all-v over " + std::to_string(c.ranks) +
                                " ranks needs " + std::to_string(c.ranks) + " x " +
                                std::to_string(c.ranks));
  }
  for (int from = 0; from < c.ranks; ++from) {
    int64_t row = 0;
    for (int to = 0; to < c.ranks; ++to) {
      const int64_t n = c.sizes[static_cast<size_t>(from) * c.ranks + to];
      if (n < 0) {
        return InvalidArgumentError("sizes[" + std::to_string(from) + "][" + std::to_string(to) +
                                    "] = " + std::to_string(n) + " < 0");
      }
      row += n;
      if (row > c.bytes) {
        return InvalidArgumentError("sizes row " + std::to_string(from) +
                                    " sums to more than bytes = " + std::to_string(c.bytes) +
                                    " (the send buffer)");
      }
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::vector<int64_t>> ZipfAllToAllSizes(int ranks, int64_t bytes, double s) {
  if (ranks < 1 || bytes < 0 || !(s >= 0) || !std::isfinite(s)) {
    return InvalidArgumentError("zipf all-to-all-v sizes: ranks = " + std::to_string(ranks) +
                                ", bytes = " + std::to_string(bytes) + ", s = " +
                                std::to_string(s) + " (ranks >= 1, bytes >= 0, finite s >= 0)");
  }
  std::vector<double> weight(ranks);
  double total = 0;
  for (int j = 0; j < ranks; ++j) total += weight[j] = std::pow(j + 1.0, -s);
  // Floors, then the bytes left one each to the largest remainders (ties: lower j).
  std::vector<int64_t> row(ranks);
  std::vector<std::pair<double, int>> rest(ranks);
  int64_t given = 0;
  for (int j = 0; j < ranks; ++j) {
    const double share = static_cast<double>(bytes) * weight[j] / total;
    row[j] = static_cast<int64_t>(std::floor(share));
    given += row[j];
    rest[j] = {share - static_cast<double>(row[j]), j};
  }
  std::stable_sort(rest.begin(), rest.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (int64_t k = 0; k < bytes - given; ++k) ++row[rest[static_cast<size_t>(k % ranks)].second];
  std::vector<int64_t> sizes;
  sizes.reserve(static_cast<size_t>(ranks) * ranks);
  for (int i = 0; i < ranks; ++i) sizes.insert(sizes.end(), row.begin(), row.end());
  return sizes;
}

StatusOr<std::vector<int64_t>> ParseAllToAllSizes(std::string_view json_text) {
  const nlohmann::json doc = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgumentError("all-to-all-v sizes: not valid JSON");
  if (!doc.is_array() || doc.empty()) {
    return InvalidArgumentError("all-to-all-v sizes: expected an array of R arrays of R integers");
  }
  const size_t ranks = doc.size();
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < ranks; ++i) {
    const std::string row = "[" + std::to_string(i) + "]";
    if (!doc[i].is_array() || doc[i].size() != ranks) {
      return InvalidArgumentError("all-to-all-v sizes" + row + ": expected an array of " +
                                  std::to_string(ranks) + " integers");
    }
    for (size_t j = 0; j < ranks; ++j) {
      const nlohmann::json& v = doc[i][j];
      if (!v.is_number_integer() || v.get<int64_t>() < 0) {
        return InvalidArgumentError("all-to-all-v sizes" + row + "[" + std::to_string(j) +
                                    "]: expected an integer >= 0, got " + v.dump());
      }
      sizes.push_back(v.get<int64_t>());
    }
  }
  return sizes;
}

std::string_view CollectiveOpName(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return "all-reduce";
    case CollectiveOp::kAllGather:
      return "all-gather";
    case CollectiveOp::kReduceScatter:
      return "reduce-scatter";
    case CollectiveOp::kAllToAll:
      return "all-to-all";
    case CollectiveOp::kAllToAllV:
      return "all-to-all-v";
    case CollectiveOp::kPermute:
      return "permute";
    case CollectiveOp::kSendRecv:
      return "send-recv";
  }
  return "?";
}

StatusOr<CollectiveOp> ParseCollectiveOp(std::string_view name) {
  for (CollectiveOp op :
       {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
        CollectiveOp::kAllToAll, CollectiveOp::kAllToAllV, CollectiveOp::kPermute,
        CollectiveOp::kSendRecv}) {
    if (name == CollectiveOpName(op)) return op;
  }
  return InvalidArgumentError("unknown collective '" + std::string(name) +
                              "' (all-reduce, all-gather, reduce-scatter, all-to-all, "
                              "all-to-all-v, permute, send-recv)");
}

std::string_view CollectiveAlgorithmName(CollectiveAlgorithm a) {
  switch (a) {
    case CollectiveAlgorithm::kAuto:
      return "auto";
    case CollectiveAlgorithm::kRing:
      return "ring";
    case CollectiveAlgorithm::kMesh:
      return "mesh";
    case CollectiveAlgorithm::kRdh:
      return "rdh";
    case CollectiveAlgorithm::kKangaRing:
      return "kangaring";
    case CollectiveAlgorithm::kHierarchical:
      return "hierarchical";
  }
  return "?";
}

StatusOr<CollectiveAlgorithm> ParseCollectiveAlgorithm(std::string_view name) {
  for (CollectiveAlgorithm a :
       {CollectiveAlgorithm::kAuto, CollectiveAlgorithm::kRing, CollectiveAlgorithm::kMesh,
        CollectiveAlgorithm::kRdh, CollectiveAlgorithm::kKangaRing,
        CollectiveAlgorithm::kHierarchical}) {
    if (name == CollectiveAlgorithmName(a)) return a;
  }
  return InvalidArgumentError("unknown collective algorithm '" + std::string(name) +
                              "' (auto, ring, mesh, rdh, kangaring, hierarchical)");
}

std::string ByteSizeName(int64_t bytes) {
  for (const auto& [shift, unit] : {std::pair{30, " GiB"}, {20, " MiB"}, {10, " KiB"}}) {
    const int64_t size = int64_t{1} << shift;
    if (bytes >= size && bytes % size == 0) return std::to_string(bytes >> shift) + unit;
  }
  return std::to_string(bytes) + " B";
}

StatusOr<CollectivePlan> PlanCollective(const System& system, const CollectiveConfig& config) {
  CollectivePlan plan;
  plan.config = config;
  CollectiveConfig& c = plan.config;
  const std::string what =
      std::string(CollectiveOpName(c.op)) + " of " + ByteSizeName(c.bytes) + " on " + system.name;
  const int cores = system.chip.core_count();
  if (c.lnc != 1 && c.lnc != 2) {
    return InvalidArgumentError(what + ": LNC = " + std::to_string(c.lnc) + " (1 or 2)");
  }
  if (cores % c.lnc != 0) {
    return InvalidArgumentError(what + ": LNC = " + std::to_string(c.lnc) +
                                " does not divide the " + std::to_string(cores) +
                                " cores of a chip");
  }
  const int logical = cores / c.lnc;
  if (c.ranks_per_chip == 0) c.ranks_per_chip = logical;
  if (c.ranks_per_chip < 1 || c.ranks_per_chip > logical) {
    return InvalidArgumentError(what + ": ranks_per_chip = " + std::to_string(c.ranks_per_chip) +
                                " outside [1, " + std::to_string(logical) +
                                "] at LNC = " + std::to_string(c.lnc));
  }
  const int64_t available = static_cast<int64_t>(system.chip_count()) * c.ranks_per_chip;
  if (c.ranks == 0) c.ranks = static_cast<int>(available);
  if (c.ranks < 2 || c.ranks > available) {
    return InvalidArgumentError(what + ": ranks = " + std::to_string(c.ranks) + " outside [2, " +
                                std::to_string(available) + "] (" +
                                std::to_string(system.chip_count()) + " chips x " +
                                std::to_string(c.ranks_per_chip) + " ranks)");
  }
  if (c.op == CollectiveOp::kSendRecv && c.ranks % 2 != 0) {
    return InvalidArgumentError(what + ": send-recv pairs ranks 2i and 2i + 1; ranks = " +
                                std::to_string(c.ranks) + " is odd");
  }
  const int64_t per_rank_parts = static_cast<int64_t>(c.ranks) * c.lnc;
  if (c.bytes < per_rank_parts) {
    return InvalidArgumentError(what + ": bytes = " + std::to_string(c.bytes) + " < ranks " +
                                std::to_string(c.ranks) + " x LNC " + std::to_string(c.lnc) +
                                ": each rank's chunk needs a byte per physical core");
  }
  // The algorithm: what the op allows, what was asked, else the thresholds.
  const bool mesh_only = c.op == CollectiveOp::kAllToAll || c.op == CollectiveOp::kAllToAllV ||
                         c.op == CollectiveOp::kSendRecv;
  if (c.op == CollectiveOp::kAllToAllV) {
    if (Status s = CheckSizes(c); !s.ok()) return Status(s.code(), what + ": " + s.message());
  } else if (!c.sizes.empty()) {
    return InvalidArgumentError(what + ": sizes are for all-to-all-v only");
  }
  const bool ring_only = c.op == CollectiveOp::kPermute;
  const bool power_of_two = (c.ranks & (c.ranks - 1)) == 0;
  const std::string kanga_misfit = KangaRingMisfit(system, c, logical);
  if (c.algorithm == CollectiveAlgorithm::kKangaRing && !kanga_misfit.empty()) {
    return InvalidArgumentError(what + ": " + kanga_misfit);
  }
  if ((mesh_only && c.algorithm != CollectiveAlgorithm::kAuto &&
       c.algorithm != CollectiveAlgorithm::kMesh) ||
      (ring_only && c.algorithm != CollectiveAlgorithm::kAuto &&
       c.algorithm != CollectiveAlgorithm::kRing)) {
    return InvalidArgumentError(what + ": " + std::string(CollectiveOpName(c.op)) +
                                " is lowered as " + (mesh_only ? "mesh" : "ring") + " only");
  }
  // Hierarchical: L ranks per server (ranks are taken server by server),
  // and it composes only where the ranks fill two or more whole servers.
  const int per_server = c.ranks_per_chip * static_cast<int>(system.chips_per_server.value);
  const int servers = c.ranks / per_server;
  const bool whole_servers = c.ranks % per_server == 0 && servers >= 2;
  if (c.algorithm == CollectiveAlgorithm::kHierarchical) {
    if (!whole_servers) {
      return InvalidArgumentError(
          what +
          ": hierarchical composes rings across servers; ranks = " + std::to_string(c.ranks) +
          " do not fill two or more whole servers of " + std::to_string(per_server) + " ranks (" +
          std::to_string(static_cast<int>(system.chips_per_server.value)) + " chips x " +
          std::to_string(c.ranks_per_chip) + ")");
    }
  }
  if (c.algorithm == CollectiveAlgorithm::kRdh && !power_of_two) {
    return InvalidArgumentError(what + ": rdh pairs ranks by the bits of their index; ranks = " +
                                std::to_string(c.ranks) + " is not a power of two");
  }
  if (mesh_only || ring_only) {
    plan.algorithm = mesh_only ? CollectiveAlgorithm::kMesh : CollectiveAlgorithm::kRing;
    plan.why = std::string(CollectiveOpName(c.op)) + " has one schedule";
  } else if (c.algorithm != CollectiveAlgorithm::kAuto) {
    plan.algorithm = c.algorithm;
    plan.why = "asked for";
  } else {
    const int64_t mesh_max =
        system.collectives ? static_cast<int64_t>(system.collectives->mesh_max_bytes.value) : 0;
    const int64_t rdh_max =
        system.collectives ? static_cast<int64_t>(system.collectives->rdh_max_bytes.value) : 0;
    const std::string of = " of " + system.name;
    if (c.bytes <= mesh_max) {
      plan.algorithm = CollectiveAlgorithm::kMesh;
      plan.why = ByteSizeName(c.bytes) + " <= mesh_max_bytes " + ByteSizeName(mesh_max) + of;
    } else if ((c.op == CollectiveOp::kAllReduce || c.op == CollectiveOp::kAllGather ||
                c.op == CollectiveOp::kReduceScatter) &&
               whole_servers) {
      // trainium.md 10.3: across nodes the runtime composes AG = inter AG +
      // intra AG, RS = intra RS + inter RS, AR = intra RS + inter AR + intra
      // AG (a flat ring only in edge cases); #19 keeps it hierarchical across
      // the Trn3 servers and racks.
      plan.algorithm = CollectiveAlgorithm::kHierarchical;
      plan.why = ByteSizeName(c.bytes) + " > mesh_max_bytes " + ByteSizeName(mesh_max) + of +
                 ", ranks over " + std::to_string(servers) + " servers: hierarchical";
    } else if (c.bytes <= rdh_max && power_of_two) {
      plan.algorithm = CollectiveAlgorithm::kRdh;
      plan.why = ByteSizeName(c.bytes) + " <= rdh_max_bytes " + ByteSizeName(rdh_max) + of;
    } else if (c.bytes > rdh_max && kanga_misfit.empty()) {
      // S17: KangaRing above 56 MB, where every rank of each chip is in the group.
      plan.algorithm = CollectiveAlgorithm::kKangaRing;
      plan.why = ByteSizeName(c.bytes) + " > rdh_max_bytes " + ByteSizeName(rdh_max) + of +
                 ", every rank of its chips: kangaring";
    } else {
      plan.algorithm = CollectiveAlgorithm::kRing;
      plan.why = c.bytes <= rdh_max
                     ? ByteSizeName(c.bytes) + " <= rdh_max_bytes " + ByteSizeName(rdh_max) + of +
                           " but " + std::to_string(c.ranks) + " ranks are not a power of two"
                     : ByteSizeName(c.bytes) + " > rdh_max_bytes " + ByteSizeName(rdh_max) + of;
    }
  }
  const bool ring = plan.algorithm == CollectiveAlgorithm::kRing;
  const bool rdh = plan.algorithm == CollectiveAlgorithm::kRdh;
  const bool hierarchical = plan.algorithm == CollectiveAlgorithm::kHierarchical;
  const bool kanga = plan.algorithm == CollectiveAlgorithm::kKangaRing;
  const int R = c.ranks;
  int log2_r = 0;
  while ((1 << log2_r) < R) ++log2_r;
  switch (c.op) {
    case CollectiveOp::kAllReduce:
      plan.steps = ring           ? 2 * (R - 1)
                   : rdh          ? 2 * log2_r
                   : hierarchical ? 2 * (per_server - 1) + 2 * (servers - 1)
                   : kanga        ? R  // 2 x the R / 2 primaries of a cycle
                                  : 2;
      plan.bus_factor = 2.0 * (R - 1) / R;
      break;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
      plan.steps = ring           ? R - 1
                   : rdh          ? log2_r
                   : kanga        ? R / 2
                   : hierarchical ? (per_server - 1) + (servers - 1)
                                  : 1;
      plan.bus_factor = static_cast<double>(R - 1) / R;
      break;
    case CollectiveOp::kAllToAll:
    case CollectiveOp::kAllToAllV:
      plan.steps = 1;
      plan.bus_factor = static_cast<double>(R - 1) / R;
      break;
    case CollectiveOp::kPermute:
    case CollectiveOp::kSendRecv:
      plan.steps = 1;
      plan.bus_factor = 1;
      break;
  }
  const bool whole = c.op == CollectiveOp::kPermute || c.op == CollectiveOp::kSendRecv;
  plan.chunk_bytes = whole ? c.bytes : (c.bytes + R - 1) / R;
  if (hierarchical) {
    plan.ranks_per_server = per_server;
    plan.chunk_bytes = (c.bytes + per_server - 1) / per_server;
  }
  plan.chips = (R + c.ranks_per_chip - 1) / c.ranks_per_chip;
  // Mesh: a rank's transfers to its peers spread over DMA rings, one per
  // DMA engine of its core at most (trainium.md section 7).
  if (plan.algorithm == CollectiveAlgorithm::kMesh && !whole) {
    plan.rings = std::min(R - 1, static_cast<int>(system.chip.dma.engines.value));
  }

  plan.simulated = kanga ? "every rank (KangaRing: each hop of its cycles takes one link or "
                           "none; symmetric ranks are not simulated once)"
                         : WhySimulatedRankByRank(system, plan.chips);
  plan.instructions = InstructionsPerQueue(plan) * R * c.lnc;
  if (c.op == CollectiveOp::kAllToAllV) {  // the transfers that move bytes, in halves of >= 1 B
    plan.instructions = 0;
    plan.chunk_bytes = 0;
    for (int from = 0; from < R; ++from) {
      for (int to = 0; to < R; ++to) {
        const int64_t n = c.sizes[static_cast<size_t>(from) * R + to];
        if (from != to) plan.instructions += std::min<int64_t>(n, c.lnc);
        if (from != to) plan.chunk_bytes = std::max(plan.chunk_bytes, n);
      }
    }
  }
  plan.completions = Completions(plan);
  return plan;
}

namespace {

std::string Describe(const CollectivePlan& plan, const std::string& where) {
  const CollectiveConfig& c = plan.config;
  return std::string(CollectiveOpName(c.op)) + " of " + ByteSizeName(c.bytes) + " on " + where;
}

// Operands that cannot serve the plan in `program`, named by their field.
Status CheckOperands(const Program& program, const CollectivePlan& plan,
                     const CollectiveOperands& ops) {
  const CollectiveConfig& c = plan.config;
  const size_t ranks = static_cast<size_t>(c.ranks);
  if (plan.chips > program.chips() || c.ranks_per_chip * c.lnc > program.cores_per_chip()) {
    return InvalidArgumentError("the plan needs " + std::to_string(plan.chips) + " chip(s) x " +
                                std::to_string(c.ranks_per_chip * c.lnc) +
                                " core(s); the program has " + std::to_string(program.chips()) +
                                " x " + std::to_string(program.cores_per_chip()));
  }
  if (plan.chips > 1 && program.system() == nullptr) {
    return InvalidArgumentError("the ranks span " + std::to_string(plan.chips) +
                                " chips; the program needs a System (its links)");
  }
  const auto count = [&](const char* field, size_t have, size_t want) -> Status {
    if (have != 0 && have != want) {
      return InvalidArgumentError(std::string("operands.") + field + " has " +
                                  std::to_string(have) + " entries; needs 0 or " +
                                  std::to_string(want));
    }
    return OkStatus();
  };
  if (Status s = count("data", ops.data.size(), ranks); !s.ok()) return s;
  if (Status s = count("data_offset", ops.data_offset.size(), ops.data.empty() ? 0 : ranks);
      !s.ok()) {
    return s;
  }
  if (Status s = count("start_after", ops.start_after.size(), ranks * c.lnc); !s.ok()) return s;
  if (Status s = count("done_signals", ops.done_signals.size(), ranks); !s.ok()) return s;
  if (c.op == CollectiveOp::kAllToAllV && !ops.done_signals.empty()) {
    return InvalidArgumentError(
        "operands.done_signals: the ranks of an all-to-all-v receive different numbers of "
        "transfers, so no one count completes them");
  }
  for (size_t r = 0; r < ops.data.size(); ++r) {
    const std::string field = "operands.data[" + std::to_string(r) + "]";
    const BufferId id = ops.data[r];
    if (id < 0 || id >= static_cast<BufferId>(program.buffers().size())) {
      return InvalidArgumentError(field + " = " + std::to_string(id) + " is not a buffer");
    }
    const Buffer& b = program.buffers()[id];
    const int chip = static_cast<int>(r) / c.ranks_per_chip;
    const int64_t offset = ops.data_offset.empty() ? 0 : ops.data_offset[r];
    if (!b.live || b.space != MemSpace::kHbm || b.chip != chip) {
      return InvalidArgumentError(field + " '" + b.name + "' must be a live HBM buffer of chip " +
                                  std::to_string(chip) + " (rank " + std::to_string(r) + ")");
    }
    if (offset < 0 || offset > b.bytes - c.bytes) {
      return InvalidArgumentError(field + " '" + b.name + "' holds " + std::to_string(b.bytes) +
                                  " B; the rank's " + ByteSizeName(c.bytes) + " at offset " +
                                  std::to_string(offset) + " do not fit");
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<LoweredCollectiveKernel> LowerCollectiveInto(Program& program, const CollectivePlan& plan,
                                                      const CollectiveOperands& operands) {
  const std::string what =
      Describe(plan, program.system() != nullptr ? program.system()->name : program.machine().name);
  if (Status s = CheckOperands(program, plan, operands); !s.ok()) {
    return Status(s.code(), what + ": " + s.message());
  }
  const int64_t room = program.max_instructions() - program.instruction_count();
  if (plan.instructions > room) {
    return ResourceExhaustedError(
        what + ": " + std::to_string(plan.config.ranks) + " ranks need " +
        std::to_string(plan.instructions) + " instructions; the program has room for " +
        std::to_string(room) + " of its budget " + std::to_string(program.max_instructions()) +
        " (ProgramOptions::max_instructions)");
  }
  Lowering lowering(program, plan, operands, InstructionsPerQueue(plan));
  if (Status s = lowering.Run(); !s.ok()) return Status(s.code(), what + ": " + s.message());
  return LoweredCollectiveKernel{plan};
}

StatusOr<LoweredCollective> LowerCollective(const System& system, const CollectiveConfig& config,
                                            const ProgramOptions& options) {
  StatusOr<CollectivePlan> plan = PlanCollective(system, config);
  if (!plan.ok()) return plan.status();
  const std::string what = Describe(*plan, system.name);
  if (plan->instructions > options.max_instructions) {
    return ResourceExhaustedError(
        what + ": " + std::to_string(plan->config.ranks) + " ranks need " +
        std::to_string(plan->instructions) + " instructions; the program budget is " +
        std::to_string(options.max_instructions) + " (ProgramOptions::max_instructions)");
  }
  StatusOr<Program> prog = Program::Create(system, system.chip.core_count(), plan->chips, options);
  if (!prog.ok()) return prog.status();
  StatusOr<LoweredCollectiveKernel> k = LowerCollectiveInto(*prog, *plan, {});
  if (!k.ok()) return k.status();
  return LoweredCollective{std::move(*prog), std::move(*plan)};
}

CollectiveFigures Figures(const CollectivePlan& plan, const SimResult& result) {
  CollectiveFigures f;
  f.seconds = static_cast<double>(result.end_ps) * 1e-12;
  if (f.seconds > 0) {
    f.algbw_bytes_per_s = static_cast<double>(plan.config.bytes) / f.seconds;
    f.busbw_bytes_per_s = f.algbw_bytes_per_s * plan.bus_factor;
  }
  return f;
}

}  // namespace trnmx::emu
