// Program IR: buffers, allocation rules, validation and the text dump.
#include "trnmx/emu/program.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>

namespace trnmx::emu {
namespace {

std::string Bytes(int64_t b) { return std::to_string(b) + " B"; }

int64_t AlignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// trainium.md section 4 (S7): an access over > 64 partitions starts at 0; over
// 33-64 at 0 or 64; over <= 32 at a multiple of 32 (quadrants).
Status CheckPartitionRange(int start, int count, int total, const std::string& what) {
  if (count < 1 || start < 0 || start + count > total) {
    return InvalidArgumentError(what + ": partitions [" + std::to_string(start) + ", " +
                                std::to_string(start + count) + ") outside [0, " +
                                std::to_string(total) + ")");
  }
  const int quadrant = total / 4;
  bool ok = true;
  if (count > 2 * quadrant) {
    ok = start == 0;
  } else if (count > quadrant) {
    ok = start == 0 || start == 2 * quadrant;
  } else {
    ok = start % quadrant == 0;
  }
  if (!ok) {
    return InvalidArgumentError(what + ": " + std::to_string(count) +
                                " partitions cannot start at partition " + std::to_string(start) +
                                " (more than 64 start at 0; 33-64 at 0 or 64; up to 32 at a " +
                                "multiple of 32)");
  }
  return OkStatus();
}

bool IsTensorOp(Opcode op) {
  return op == Opcode::kLoadStationary || op == Opcode::kMultiplyMoving || op == Opcode::kTranspose;
}

}  // namespace

std::string_view MemSpaceName(MemSpace space) {
  switch (space) {
    case MemSpace::kHbm:
      return "hbm";
    case MemSpace::kSbuf:
      return "sbuf";
    case MemSpace::kPsum:
      return "psum";
  }
  return "?";
}

std::string_view EngineKindName(EngineKind engine) {
  switch (engine) {
    case EngineKind::kTensor:
      return "tensor";
    case EngineKind::kVector:
      return "vector";
    case EngineKind::kScalar:
      return "scalar";
    case EngineKind::kGpSimd:
      return "gpsimd";
    case EngineKind::kDma:
      return "dma";
    case EngineKind::kCollective:
      return "cc";
  }
  return "?";
}

std::string_view ElemTypeName(ElemType type) {
  switch (type) {
    case ElemType::kFp32:
      return "fp32";
    case ElemType::kBf16:
      return "bf16";
    case ElemType::kFp16:
      return "fp16";
    case ElemType::kFp8:
      return "fp8";
    case ElemType::kU8:
      return "u8";
  }
  return "?";
}

int ElemBytes(ElemType type) {
  switch (type) {
    case ElemType::kFp32:
      return 4;
    case ElemType::kBf16:
    case ElemType::kFp16:
      return 2;
    case ElemType::kFp8:
    case ElemType::kU8:
      return 1;
  }
  return 1;
}

std::string_view AluOpName(AluOp op) {
  switch (op) {
    case AluOp::kAdd:
      return "add";
    case AluOp::kSubtract:
      return "subtract";
    case AluOp::kMultiply:
      return "multiply";
    case AluOp::kMax:
      return "max";
    case AluOp::kBypass:
      return "bypass";
  }
  return "?";
}

std::string_view ActFuncName(ActFunc f) {
  switch (f) {
    case ActFunc::kIdentity:
      return "identity";
    case ActFunc::kExp:
      return "exp";
  }
  return "?";
}

ActTableSet ActTableSetOf(ActFunc f) {
  return f == ActFunc::kExp ? ActTableSet::kNaturalLogExp : ActTableSet::kNone;
}

std::string_view OpcodeName(Opcode op) {
  switch (op) {
    case Opcode::kLoadStationary:
      return "LoadStationary";
    case Opcode::kMultiplyMoving:
      return "MultiplyMoving";
    case Opcode::kTranspose:
      return "Transpose";
    case Opcode::kTensorCopy:
      return "TensorCopy";
    case Opcode::kTensorScalar:
      return "TensorScalar";
    case Opcode::kTensorTensor:
      return "TensorTensor";
    case Opcode::kTensorReduce:
      return "TensorReduce";
    case Opcode::kMemset:
      return "Memset";
    case Opcode::kReciprocal:
      return "Reciprocal";
    case Opcode::kQuantizeMx:
      return "QuantizeMx";
    case Opcode::kExponential:
      return "Exponential";
    case Opcode::kActivation:
      return "Activation";
    case Opcode::kIota:
      return "Iota";
    case Opcode::kDmaCopy:
      return "DmaCopy";
  }
  return "?";
}

int TensorOperandPartitions(const Machine& m, MatmulDtype dtype, int64_t k) {
  const int64_t per_row =
      dtype == MatmulDtype::kFp32 ? 1 : static_cast<int64_t>(MacsPerPeCycle(m, dtype));
  if (per_row <= 0) return 0;
  return static_cast<int>((k + per_row - 1) / per_row);
}

int64_t TensorOperandBytesPerPartition(const Machine& m, MatmulDtype dtype, int64_t free_elems) {
  switch (dtype) {
    case MatmulDtype::kBf16:
      return 2 * free_elems;
    case MatmulDtype::kFp32:
      return 4 * free_elems;
    case MatmulDtype::kFp8:
      return static_cast<int64_t>(MacsPerPeCycle(m, dtype)) * free_elems;
    case MatmulDtype::kMxfp8:
      return static_cast<int64_t>(MacsPerPeCycle(m, dtype)) * free_elems;
    case MatmulDtype::kMxfp4:
      return (static_cast<int64_t>(MacsPerPeCycle(m, dtype)) * free_elems + 1) / 2;
  }
  return 0;
}

int64_t MxScaleBytesPerPartition(int64_t free_elems) { return (free_elems + 3) / 4; }

Instruction Instruction::LoadStationary(BufferId stationary, MatmulDtype dtype, int64_t k,
                                        int64_t m, BufferId scales) {
  Instruction in;
  in.op = Opcode::kLoadStationary;
  in.src0 = stationary;
  in.src1 = scales;
  in.dtype = dtype;
  in.k = k;
  in.m = m;
  return in;
}

Instruction Instruction::MultiplyMoving(BufferId moving, BufferId psum, MatmulDtype dtype,
                                        int64_t k, int64_t m, int64_t n, bool accumulate,
                                        BufferId scales) {
  Instruction in;
  in.op = Opcode::kMultiplyMoving;
  in.src0 = moving;
  in.src1 = scales;
  in.dst = psum;
  in.dtype = dtype;
  in.k = k;
  in.m = m;
  in.n = n;
  in.accumulate = accumulate;
  return in;
}

Instruction Instruction::Transpose(BufferId src, BufferId psum, int partitions,
                                   int64_t free_elems) {
  Instruction in;
  in.op = Opcode::kTranspose;
  in.src0 = src;
  in.dst = psum;
  in.partitions = partitions;
  in.n = free_elems;
  return in;
}

Instruction Instruction::Elementwise(Opcode op, BufferId dst, BufferId src0, int partitions,
                                     int64_t elems, ElemType in_type, ElemType out_type,
                                     BufferId src1) {
  Instruction in;
  in.op = op;
  in.dst = dst;
  in.src0 = src0;
  in.src1 = src1;
  in.partitions = partitions;
  in.n = elems;
  in.in_type = in_type;
  in.out_type = out_type;
  return in;
}

Instruction Instruction::DmaCopy(BufferId src, BufferId dst, int64_t bytes, int partitions,
                                 int64_t src_offset, int64_t dst_offset) {
  Instruction in;
  in.op = Opcode::kDmaCopy;
  in.src0 = src;
  in.dst = dst;
  in.bytes = bytes;
  in.partitions = partitions;
  in.src_offset = src_offset;
  in.dst_offset = dst_offset;
  return in;
}

Program::Program(const Machine& machine, int cores_per_chip, int chips,
                 const ProgramOptions& options)
    : machine_(machine), cores_per_chip_(cores_per_chip), chips_(chips), options_(options) {
  const int cores = cores_per_chip * chips;
  semaphores_per_core_.assign(cores, 0);
  dma_queues_per_core_.assign(cores, 0);
  cc_queues_per_core_.assign(cores, 0);
  sbuf_.resize(cores);
  psum_.resize(cores);
  for (int c = 0; c < cores; ++c) {
    sbuf_[c].capacity = machine.sbuf_usable_bytes_per_partition();
    psum_[c].capacity = machine.psum_bytes_per_partition();
  }
  hbm_.resize(chips);
  for (Arena& a : hbm_) a.capacity = static_cast<int64_t>(machine.hbm.capacity_bytes.value);
  // Compute streams first, in a fixed order: stream id = core * 4 + engine.
  for (int c = 0; c < cores; ++c) {
    for (EngineKind e :
         {EngineKind::kTensor, EngineKind::kVector, EngineKind::kScalar, EngineKind::kGpSimd}) {
      Stream s;
      s.name = CoreName(c) + "." + std::string(EngineKindName(e));
      s.chip = ChipOfCore(c);
      s.core = c;
      s.engine = e;
      streams_.push_back(std::move(s));
    }
  }
  last_load_stationary_.assign(streams_.size(), -1);
}

StatusOr<Program> Program::Create(const Machine& machine, int cores,
                                  const ProgramOptions& options) {
  return Create(machine, cores, 1, options);
}

StatusOr<Program> Program::Create(const Machine& machine, int cores_per_chip, int chips,
                                  const ProgramOptions& options) {
  if (cores_per_chip < 1 || cores_per_chip > machine.core_count()) {
    return InvalidArgumentError("program cores = " + std::to_string(cores_per_chip) + ", machine " +
                                machine.name + " has " + std::to_string(machine.core_count()));
  }
  // The bound keeps every program-wide core id, stream id and semaphore id an int32.
  constexpr int kMaxChips = 1 << 16;
  if (chips < 1 || chips > kMaxChips) {
    return InvalidArgumentError("program chips = " + std::to_string(chips) + " outside [1, " +
                                std::to_string(kMaxChips) + "]");
  }
  if (options.max_instructions < 1) {
    return InvalidArgumentError(
        "program max_instructions = " + std::to_string(options.max_instructions) + " must be >= 1");
  }
  return Program(machine, cores_per_chip, chips, options);
}

StatusOr<Program> Program::Create(const System& system, int cores_per_chip, int chips,
                                  const ProgramOptions& options) {
  if (chips == 0) chips = system.chip_count();
  if (chips < 1 || chips > system.chip_count()) {
    return InvalidArgumentError("program chips = " + std::to_string(chips) + ", system " +
                                system.name + " has " + std::to_string(system.chip_count()));
  }
  StatusOr<Program> created = Create(system.chip, cores_per_chip, chips, options);
  if (!created.ok()) return created.status();
  Program p = std::move(*created);
  p.system_ = std::make_shared<const System>(system);
  return p;
}

std::string Program::CoreName(int core) const {
  const std::string local = "core" + std::to_string(LocalCore(core));
  return chips_ == 1 ? local : "chip" + std::to_string(ChipOfCore(core)) + "." + local;
}

StreamId Program::EngineStream(int core, EngineKind engine) const {
  return core * kComputeEngines + static_cast<int>(engine);
}

Status Program::CheckCore(int core, std::string_view what) const {
  if (core < 0 || core >= cores()) {
    return InvalidArgumentError(std::string(what) + ": core " + std::to_string(core) +
                                " outside [0, " + std::to_string(cores()) + ")");
  }
  return OkStatus();
}

StatusOr<BufferId> Program::AllocHbm(std::string name, int64_t bytes, int chip) {
  if (bytes <= 0) return InvalidArgumentError("HBM buffer '" + name + "': size must be > 0");
  if (chip < 0 || chip >= chips_) {
    return InvalidArgumentError("HBM buffer '" + name + "': chip " + std::to_string(chip) +
                                " outside [0, " + std::to_string(chips_) + ")");
  }
  Arena& hbm = hbm_[chip];
  const int64_t align = 64;
  const int64_t offset = AlignUp(hbm.high_water, align);
  if (bytes > hbm.capacity - offset) {
    return ResourceExhaustedError("HBM buffer '" + name + "' needs " + Bytes(bytes) + "; " +
                                  Bytes(hbm.capacity - offset) + " of " + Bytes(hbm.capacity) +
                                  " left on chip " + std::to_string(chip));
  }
  hbm.high_water = offset + bytes;
  Buffer b;
  b.name = std::move(name);
  b.space = MemSpace::kHbm;
  b.chip = chip;
  b.offset = offset;
  b.bytes = bytes;
  buffers_.push_back(std::move(b));
  return static_cast<BufferId>(buffers_.size() - 1);
}

StatusOr<BufferId> Program::AllocSbuf(int core, std::string name, int64_t bytes_per_partition,
                                      int partitions, int partition_start) {
  return AllocOnChip(MemSpace::kSbuf, core, std::move(name), bytes_per_partition, partitions,
                     partition_start);
}

StatusOr<BufferId> Program::AllocPsum(int core, std::string name, int64_t bytes_per_partition,
                                      int partitions, int partition_start) {
  return AllocOnChip(MemSpace::kPsum, core, std::move(name), bytes_per_partition, partitions,
                     partition_start);
}

StatusOr<BufferId> Program::AllocOnChip(MemSpace space, int core, std::string name,
                                        int64_t bytes_per_partition, int partitions,
                                        int partition_start) {
  const std::string what =
      std::string(space == MemSpace::kSbuf ? "SBUF" : "PSUM") + " buffer '" + name + "'";
  if (Status s = CheckCore(core, what); !s.ok()) return s;
  if (bytes_per_partition <= 0) return InvalidArgumentError(what + ": size must be > 0");
  if (Status s = CheckPartitionRange(partition_start, partitions, machine_.partitions(), what);
      !s.ok()) {
    return s;
  }
  Arena& arena = space == MemSpace::kSbuf ? sbuf_[core] : psum_[core];
  const int64_t align = static_cast<int64_t>(machine_.sbuf.alignment_bytes.value);
  const int64_t bank = static_cast<int64_t>(machine_.psum.bank_bytes_per_partition.value);
  const int64_t size = bytes_per_partition;  // starts are aligned, sizes exact
  if (space == MemSpace::kPsum && size > bank && size > arena.capacity) {
    return ResourceExhaustedError(what + " needs " + Bytes(bytes_per_partition) +
                                  " per partition; PSUM has " + Bytes(arena.capacity) + " (" +
                                  std::to_string(arena.capacity / bank) + " banks x " +
                                  Bytes(bank) + ")");
  }
  // First fit. PSUM: a buffer of at most one bank must not cross a bank
  // boundary; a larger one starts on a bank boundary (one matmul may span
  // banks only on v4, which the MultiplyMoving check enforces).
  int64_t candidate = 0;
  int64_t free_total = arena.capacity;
  for (const Range& r : arena.live) free_total -= r.end - r.begin;
  auto fix = [&](int64_t c) {
    c = AlignUp(c, align);
    if (space == MemSpace::kPsum) {
      if (size <= bank) {
        if (c / bank != (c + size - 1) / bank) c = AlignUp(c, bank);
      } else {
        c = AlignUp(c, bank);
      }
    }
    return c;
  };
  candidate = fix(0);
  size_t insert_at = 0;
  for (; insert_at < arena.live.size(); ++insert_at) {
    const Range& r = arena.live[insert_at];
    if (candidate + size <= r.begin) break;
    candidate = fix(std::max(candidate, r.end));
  }
  if (candidate + size > arena.capacity) {
    return ResourceExhaustedError(what + " needs " + Bytes(size) + " per partition; " +
                                  Bytes(free_total) + " of " + Bytes(arena.capacity) +
                                  " per partition free on core " + std::to_string(core) +
                                  (free_total >= size ? " but not in one aligned range" : ""));
  }
  Buffer b;
  b.name = std::move(name);
  b.space = space;
  b.chip = ChipOfCore(core);
  b.core = core;
  b.partition_start = partition_start;
  b.partitions = partitions;
  b.offset = candidate;
  b.bytes = bytes_per_partition;
  buffers_.push_back(std::move(b));
  const BufferId id = static_cast<BufferId>(buffers_.size() - 1);
  arena.live.insert(arena.live.begin() + static_cast<std::ptrdiff_t>(insert_at),
                    Range{candidate, candidate + size, id});
  arena.high_water = std::max(arena.high_water, candidate + size);
  return id;
}

Status Program::Free(BufferId id) {
  if (id < 0 || id >= static_cast<BufferId>(buffers_.size())) {
    return InvalidArgumentError("Free: no buffer " + std::to_string(id));
  }
  Buffer& b = buffers_[id];
  if (!b.live) return FailedPreconditionError("Free: buffer '" + b.name + "' was already freed");
  b.live = false;
  if (b.space == MemSpace::kHbm) return OkStatus();  // HBM is a bump allocator
  Arena& arena = b.space == MemSpace::kSbuf ? sbuf_[b.core] : psum_[b.core];
  arena.live.erase(std::remove_if(arena.live.begin(), arena.live.end(),
                                  [id](const Range& r) { return r.owner == id; }),
                   arena.live.end());
  return OkStatus();
}

StatusOr<SemId> Program::AddSemaphore(int core, std::string name) {
  if (Status s = CheckCore(core, "semaphore '" + name + "'"); !s.ok()) return s;
  const int limit = static_cast<int>(machine_.sync.semaphores.value);
  if (semaphores_per_core_[core] >= limit) {
    return ResourceExhaustedError("semaphore '" + name + "': core " + std::to_string(core) +
                                  " already has all " + std::to_string(limit) + " semaphores");
  }
  ++semaphores_per_core_[core];
  semaphores_.push_back(Semaphore{std::move(name), ChipOfCore(core), core});
  return static_cast<SemId>(semaphores_.size() - 1);
}

StatusOr<StreamId> Program::AddDmaQueue(int core, std::string name) {
  return AddQueue(core, EngineKind::kDma, std::move(name));
}

StatusOr<StreamId> Program::AddCollectiveQueue(int core, std::string name) {
  return AddQueue(core, EngineKind::kCollective, std::move(name));
}

StatusOr<StreamId> Program::AddCollectiveRing(StreamId queue, std::string name) {
  if (queue < 0 || queue >= static_cast<StreamId>(streams_.size()) ||
      streams_[queue].engine != EngineKind::kCollective) {
    return InvalidArgumentError("collective ring '" + name + "': stream " + std::to_string(queue) +
                                " is not a collective queue");
  }
  const int core = streams_[queue].core;
  const int limit =
      static_cast<int>(machine_.dma.engines.value * machine_.dma.queues_per_engine.value);
  if (dma_queues_per_core_[core] >= limit) {
    return ResourceExhaustedError("collective ring '" + name + "': " + CoreName(core) +
                                  " already has all " + std::to_string(limit) + " queues");
  }
  ++dma_queues_per_core_[core];
  Stream s;
  s.name = CoreName(core) + ".cc." + name;
  s.chip = ChipOfCore(core);
  s.core = core;
  s.engine = EngineKind::kCollective;
  streams_.push_back(std::move(s));
  last_load_stationary_.push_back(-1);
  return static_cast<StreamId>(streams_.size() - 1);
}

StatusOr<StreamId> Program::AddQueue(int core, EngineKind engine, std::string name) {
  const bool dma = engine == EngineKind::kDma;
  const std::string what = std::string(dma ? "DMA" : "collective") + " queue '" + name + "'";
  if (Status s = CheckCore(core, what); !s.ok()) return s;
  const int limit =
      dma ? static_cast<int>(machine_.dma.engines.value * machine_.dma.queues_per_engine.value)
          : static_cast<int>(machine_.sync.cc_cores.value);
  int& used = (dma ? dma_queues_per_core_ : cc_queues_per_core_)[core];
  if (used >= limit) {
    return ResourceExhaustedError(what + ": " + CoreName(core) + " already has all " +
                                  std::to_string(limit) + (dma ? " queues" : " CC-cores"));
  }
  ++used;
  Stream s;
  s.name = CoreName(core) + (dma ? ".dma." : ".cc.") + name;
  s.chip = ChipOfCore(core);
  s.core = core;
  s.engine = engine;
  streams_.push_back(std::move(s));
  last_load_stationary_.push_back(-1);
  return static_cast<StreamId>(streams_.size() - 1);
}

Status Program::CheckBuffer(BufferId id, int core, std::initializer_list<MemSpace> spaces,
                            std::string_view role, const Site& where, bool remote_hbm) const {
  if (id < 0 || id >= static_cast<BufferId>(buffers_.size())) {
    return InvalidArgumentError(where() + ": " + std::string(role) + " is not a buffer");
  }
  const Buffer& b = buffers_[id];
  if (!b.live) {
    return FailedPreconditionError(where() + ": " + std::string(role) + " '" + b.name +
                                   "' was freed");
  }
  if (std::find(spaces.begin(), spaces.end(), b.space) == spaces.end()) {
    return InvalidArgumentError(where() + ": " + std::string(role) + " '" + b.name + "' is in " +
                                std::string(MemSpaceName(b.space)) + ", not allowed here");
  }
  if (b.space != MemSpace::kHbm && b.core != core) {
    return InvalidArgumentError(where() + ": " + std::string(role) + " '" + b.name +
                                "' belongs to " + CoreName(b.core));
  }
  if (b.space == MemSpace::kHbm && b.chip != ChipOfCore(core) && !(remote_hbm && system_)) {
    const char* why = !remote_hbm ? "; only a transfer's destination may be on another chip"
                                  : "; transfers between chips need a program created for a "
                                    "System (its links)";
    return InvalidArgumentError(where() + ": " + std::string(role) + " '" + b.name +
                                "' is in the HBM of chip " + std::to_string(b.chip) + why);
  }
  return OkStatus();
}

Status Program::Validate(const Stream& stream, const Instruction& in, const Site& where) const {
  const int c = stream.core;
  // The operand [offset, offset + bytes_pp) of each of `partitions` partitions.
  auto need = [&](BufferId id, std::string_view role, int64_t bytes_pp, int partitions,
                  int64_t offset = 0) -> Status {
    const Buffer& b = buffers_[id];
    if (offset < 0 || bytes_pp > b.bytes - offset) {
      return InvalidArgumentError(where() + ": " + std::string(role) + " '" + b.name + "' holds " +
                                  Bytes(b.bytes) + " per partition, needs " + Bytes(bytes_pp) +
                                  (offset != 0 ? " at offset " + std::to_string(offset) : ""));
    }
    if (partitions > b.partitions) {
      return InvalidArgumentError(where() + ": " + std::string(role) + " '" + b.name + "' spans " +
                                  std::to_string(b.partitions) + " partitions, needs " +
                                  std::to_string(partitions));
    }
    return OkStatus();
  };
  const bool tensor = stream.engine == EngineKind::kTensor;
  if (IsTensorOp(in.op) != tensor) {
    return InvalidArgumentError(where() + ": " + std::string(OpcodeName(in.op)) +
                                " cannot run on the " + std::string(EngineKindName(stream.engine)) +
                                " engine");
  }
  switch (in.op) {
    case Opcode::kLoadStationary:
    case Opcode::kMultiplyMoving: {
      const bool ls = in.op == Opcode::kLoadStationary;
      if (MacsPerPeCycle(machine_, in.dtype) <= 0) {
        return InvalidArgumentError(where() + ": machine " + machine_.name + " has no " +
                                    std::string(MatmulDtypeName(in.dtype)) + " matmul");
      }
      const int64_t max_k = MatmulMaxK(machine_, in.dtype);
      const int64_t max_m = static_cast<int64_t>(machine_.tensor.pe_cols.value);
      if (in.k < 1 || in.k > max_k) {
        return InvalidArgumentError(where() + ": K = " + std::to_string(in.k) + " outside [1, " +
                                    std::to_string(max_k) + "] for " +
                                    std::string(MatmulDtypeName(in.dtype)));
      }
      if (in.m < 1 || in.m > max_m) {
        return InvalidArgumentError(where() + ": M = " + std::to_string(in.m) + " outside [1, " +
                                    std::to_string(max_m) + "]");
      }
      const bool mx = in.dtype == MatmulDtype::kMxfp8 || in.dtype == MatmulDtype::kMxfp4;
      if (mx && in.k % 128 != 0) {
        return InvalidArgumentError(where() + ": MX matmul K = " + std::to_string(in.k) +
                                    " must be a multiple of 128 (partition dim a multiple of 32)");
      }
      if (mx && in.m % 2 != 0) {
        return InvalidArgumentError(
            where() + ": MX stationary free size M = " + std::to_string(in.m) + " must be even");
      }
      const int parts = TensorOperandPartitions(machine_, in.dtype, in.k);
      const int64_t free_elems = ls ? in.m : in.n;
      if (Status s =
              CheckBuffer(in.src0, c, {MemSpace::kSbuf}, ls ? "stationary" : "moving", where);
          !s.ok()) {
        return s;
      }
      if (Status s = need(in.src0, ls ? "stationary" : "moving",
                          TensorOperandBytesPerPartition(machine_, in.dtype, free_elems), parts,
                          in.src_offset);
          !s.ok()) {
        return s;
      }
      if (mx) {
        if (Status s = CheckBuffer(in.src1, c, {MemSpace::kSbuf}, "MX scales", where); !s.ok()) {
          return s;
        }
        if (Status s = need(in.src1, "MX scales", MxScaleBytesPerPartition(free_elems), parts,
                            in.src1_offset);
            !s.ok()) {
          return s;
        }
      }
      if (!ls) {
        const int64_t max_n = static_cast<int64_t>(machine_.tensor.max_moving_free.value);
        if (in.n < 1 || in.n > max_n) {
          return InvalidArgumentError(where() + ": N = " + std::to_string(in.n) + " outside [1, " +
                                      std::to_string(max_n) + "] on " + machine_.core_name);
        }
        if (Status s = CheckBuffer(in.dst, c, {MemSpace::kPsum}, "output", where); !s.ok())
          return s;
        if (Status s = need(in.dst, "output", 4 * in.n, static_cast<int>(in.m), in.dst_offset);
            !s.ok()) {
          return s;
        }
        // The stationary of this MM is the last LoadStationary of the stream.
        const int64_t ls_index = last_load_stationary_[&stream - streams_.data()];
        const Instruction* last_ls = ls_index < 0 ? nullptr : &stream.instructions[ls_index];
        if (last_ls == nullptr) {
          return FailedPreconditionError(where() + ": MultiplyMoving without a LoadStationary");
        }
        if (last_ls->k != in.k || last_ls->m != in.m || last_ls->dtype != in.dtype) {
          return InvalidArgumentError(where() + ": MultiplyMoving k/m/dtype differ from the last " +
                                      "LoadStationary");
        }
      }
      return OkStatus();
    }
    case Opcode::kTranspose: {
      if (in.partitions < 1 || in.partitions > machine_.partitions() || in.n < 1 ||
          in.n > machine_.partitions()) {
        return InvalidArgumentError(where() + ": transpose of [" + std::to_string(in.partitions) +
                                    ", " + std::to_string(in.n) + "] outside [128, 128]");
      }
      if (Status s = CheckBuffer(in.src0, c, {MemSpace::kSbuf}, "input", where); !s.ok()) return s;
      if (Status s = CheckBuffer(in.dst, c, {MemSpace::kPsum}, "output", where); !s.ok()) return s;
      if (Status s = need(in.src0, "input", 4 * in.n, in.partitions, in.src_offset); !s.ok()) {
        return s;
      }
      return need(in.dst, "output", 4 * in.partitions, static_cast<int>(in.n), in.dst_offset);
    }
    case Opcode::kDmaCopy: {
      if (stream.engine != EngineKind::kDma && stream.engine != EngineKind::kCollective) {
        return InvalidArgumentError(where() + ": DmaCopy must go on a DMA or collective queue");
      }
      if (in.bytes <= 0) return InvalidArgumentError(where() + ": DMA of " + Bytes(in.bytes));
      const std::initializer_list<MemSpace> any = {MemSpace::kHbm, MemSpace::kSbuf,
                                                   MemSpace::kPsum};
      if (Status s = CheckBuffer(in.src0, c, any, "source", where); !s.ok()) return s;
      // Written into another chip's HBM over the system's links (a remote
      // write; reads stay on the chip).
      if (Status s = CheckBuffer(in.dst, c, any, "destination", where, /*remote_hbm=*/true);
          !s.ok()) {
        return s;
      }
      for (auto [id, off, role] : {std::tuple{in.src0, in.src_offset, "source"},
                                   std::tuple{in.dst, in.dst_offset, "destination"}}) {
        const Buffer& b = buffers_[id];
        if (b.space == MemSpace::kHbm) {
          if (off < 0 || off + in.bytes > b.bytes) {
            return InvalidArgumentError(where() + ": " + role + " '" + b.name + "' [" +
                                        std::to_string(off) + ", +" + Bytes(in.bytes) +
                                        ") outside its " + Bytes(b.bytes));
          }
        } else {
          if (in.partitions < 1 || in.partitions > b.partitions) {
            return InvalidArgumentError(where() + ": " + role + " '" + b.name + "' spans " +
                                        std::to_string(b.partitions) + " partitions, DMA uses " +
                                        std::to_string(in.partitions));
          }
          const int64_t per_partition = (in.bytes + in.partitions - 1) / in.partitions;
          if (off < 0 || off + per_partition > b.bytes) {
            return InvalidArgumentError(where() + ": " + role + " '" + b.name + "' holds " +
                                        Bytes(b.bytes) + " per partition, DMA writes " +
                                        Bytes(per_partition) + " at offset " + std::to_string(off));
          }
        }
      }
      // More inputs (DMA compute) and a duplicated write: HBM to HBM, on the
      // queue's chip (the duplicate stays on the chip; only dst may be remote).
      const bool extra = in.src1 >= 0 || in.src2 >= 0 || in.dst2 >= 0;
      if (extra &&
          (buffers_[in.src0].space != MemSpace::kHbm || buffers_[in.dst].space != MemSpace::kHbm)) {
        return InvalidArgumentError(where() +
                                    ": a DMA with a second input or a duplicated write moves HBM "
                                    "to HBM; source or destination is on chip");
      }
      for (auto [id, off, role] : {std::tuple{in.src1, in.src1_offset, "second input"},
                                   std::tuple{in.src2, in.src2_offset, "third input"},
                                   std::tuple{in.dst2, in.dst2_offset, "duplicate destination"}}) {
        if (id < 0) continue;
        if (Status s = CheckBuffer(id, c, {MemSpace::kHbm}, role, where); !s.ok()) return s;
        const Buffer& b = buffers_[id];
        if (off < 0 || off + in.bytes > b.bytes) {
          return InvalidArgumentError(where() + ": " + role + " '" + b.name + "' [" +
                                      std::to_string(off) + ", +" + Bytes(in.bytes) +
                                      ") outside its " + Bytes(b.bytes));
        }
      }
      if (in.src2 >= 0 && in.src1 < 0) {
        return InvalidArgumentError(where() + ": a third input needs a second (src1)");
      }
      return OkStatus();
    }
    default:
      break;
  }
  // Vector / Scalar / GpSimd element-wise operations.
  const EngineKind e = stream.engine;
  bool allowed = false;
  switch (in.op) {
    case Opcode::kTensorCopy:
    case Opcode::kTensorScalar:
      allowed = e == EngineKind::kVector || e == EngineKind::kScalar || e == EngineKind::kGpSimd;
      break;
    case Opcode::kTensorTensor:
    case Opcode::kTensorReduce:
    case Opcode::kMemset:
    case Opcode::kReciprocal:
      allowed = e == EngineKind::kVector;
      break;
    case Opcode::kQuantizeMx:
      allowed = e == EngineKind::kVector && machine_.vector.quantize_mx_elems_per_cycle.value > 0;
      break;
    case Opcode::kExponential:
      allowed = e == EngineKind::kVector && machine_.vector.exp_elems_per_cycle.value > 0;
      break;
    case Opcode::kActivation:
      allowed = e == EngineKind::kScalar;
      break;
    case Opcode::kIota:
      allowed = e == EngineKind::kGpSimd;
      break;
    default:
      break;
  }
  if (!allowed) {
    return InvalidArgumentError(where() + ": " + std::string(OpcodeName(in.op)) +
                                " cannot run on the " + std::string(EngineKindName(e)) +
                                " engine of " + machine_.core_name);
  }
  if (in.partitions < 1 || in.partitions > machine_.partitions() || in.n < 1) {
    return InvalidArgumentError(where() + ": shape [" + std::to_string(in.partitions) + ", " +
                                std::to_string(in.n) + "] is empty or exceeds the partitions");
  }
  // GpSimd cannot access PSUM (S10 tensor_copy).
  const std::initializer_list<MemSpace> onchip = {MemSpace::kSbuf, MemSpace::kPsum};
  const std::initializer_list<MemSpace> sbuf_only = {MemSpace::kSbuf};
  const auto& spaces = e == EngineKind::kGpSimd ? sbuf_only : onchip;
  if (Status s = CheckBuffer(in.dst, c, spaces, "output", where); !s.ok()) return s;
  const int64_t out_bytes =
      in.op == Opcode::kTensorReduce ? ElemBytes(in.out_type) : in.n * ElemBytes(in.out_type);
  if (Status s = need(in.dst, "output", out_bytes, in.partitions, in.dst_offset); !s.ok()) {
    return s;
  }
  const bool has_input = in.op != Opcode::kMemset && in.op != Opcode::kIota;
  if (has_input) {
    if (Status s = CheckBuffer(in.src0, c, spaces, "input", where); !s.ok()) return s;
    if (Status s =
            need(in.src0, "input", in.n * ElemBytes(in.in_type), in.partitions, in.src_offset);
        !s.ok()) {
      return s;
    }
  }
  const bool row_sum =
      (in.op == Opcode::kActivation || in.op == Opcode::kExponential) && in.accumulate;
  if (row_sum) {
    if (Status s = CheckBuffer(in.src1, c, spaces, "row sum output", where); !s.ok()) return s;
    if (Status s = need(in.src1, "row sum output", 4, in.partitions, in.src1_offset); !s.ok()) {
      return s;
    }
  }
  if (in.op == Opcode::kTensorTensor || in.op == Opcode::kQuantizeMx) {
    const char* role = in.op == Opcode::kQuantizeMx ? "scale output" : "second input";
    if (Status s = CheckBuffer(in.src1, c, spaces, role, where); !s.ok()) return s;
    const int64_t bytes = in.op == Opcode::kQuantizeMx ? MxScaleBytesPerPartition(in.n / 4)
                                                       : in.n * ElemBytes(in.in_type);
    if (Status s = need(in.src1, role, bytes, in.partitions, in.src1_offset); !s.ok()) return s;
  }
  return OkStatus();
}

std::string Program::Site::operator()() const {
  return stream.name + "[" + std::to_string(stream.instructions.size()) + "] " +
         std::string(OpcodeName(op));
}

Status Program::Reserve(StreamId stream, int64_t instructions) {
  if (stream < 0 || stream >= static_cast<StreamId>(streams_.size())) {
    return InvalidArgumentError("Reserve: no stream " + std::to_string(stream));
  }
  std::vector<Instruction>& list = streams_[stream].instructions;
  // Never past the budget: Append() refuses those instructions anyway.
  const int64_t room = std::min(instructions, options_.max_instructions - instruction_count_);
  if (room > 0) list.reserve(list.size() + static_cast<size_t>(room));
  return OkStatus();
}

Status Program::Append(StreamId stream, Instruction instruction) {
  if (stream < 0 || stream >= static_cast<StreamId>(streams_.size())) {
    return InvalidArgumentError("Append: no stream " + std::to_string(stream));
  }
  Stream& s = streams_[stream];
  const Site where{s, instruction.op};
  if (instruction_count_ >= options_.max_instructions) {
    return ResourceExhaustedError(where() + ": the program already holds " +
                                  std::to_string(instruction_count_) +
                                  " instructions, its budget (ProgramOptions::max_instructions); "
                                  "emulate a smaller problem or raise the budget");
  }
  if (Status st = Validate(s, instruction, where); !st.ok()) return st;
  for (const SemWait& w : instruction.waits) {
    if (w.sem < 0 || w.sem >= static_cast<SemId>(semaphores_.size()) ||
        semaphores_[w.sem].core != s.core) {
      return InvalidArgumentError(where() + ": waits on semaphore " + std::to_string(w.sem) +
                                  ", which is not a semaphore of " + CoreName(s.core));
    }
    if (w.value < 1) {
      return InvalidArgumentError(where() + ": waits for " + semaphores_[w.sem].name +
                                  " >= " + std::to_string(w.value) +
                                  ", which always holds; a wait needs a value >= 1");
    }
  }
  // A transfer may signal the chip it writes to (the semaphore write follows the data).
  const int remote_chip = instruction.op == Opcode::kDmaCopy && instruction.dst >= 0
                              ? buffers_[instruction.dst].chip
                              : s.chip;
  for (const SemSignal& g : instruction.signals) {
    const bool known = g.sem >= 0 && g.sem < static_cast<SemId>(semaphores_.size());
    const int chip = known ? semaphores_[g.sem].chip : -1;
    if (!known || (chip != s.chip && chip != remote_chip) || g.increment <= 0) {
      return InvalidArgumentError(
          where() + ": signals semaphore " + std::to_string(g.sem) + " with +" +
          std::to_string(g.increment) + "; needs a semaphore of chip " + std::to_string(s.chip) +
          (remote_chip != s.chip ? " or of the destination chip " + std::to_string(remote_chip)
                                 : std::string()) +
          " and a positive increment");
    }
  }
  if (instruction.op == Opcode::kLoadStationary) {
    last_load_stationary_[stream] = static_cast<int64_t>(s.instructions.size());
  }
  s.instructions.push_back(std::move(instruction));
  ++instruction_count_;
  return OkStatus();
}

std::string Program::Describe(const Instruction& in) const {
  auto name = [&](BufferId id) { return id < 0 ? std::string("-") : buffers_[id].name; };
  // A compute operand at a byte offset reads "buf+offset".
  auto at = [&](BufferId id, int64_t offset) {
    return offset == 0 ? name(id) : name(id) + "+" + std::to_string(offset);
  };
  std::ostringstream os;
  os << OpcodeName(in.op);
  switch (in.op) {
    case Opcode::kLoadStationary:
      os << " " << MatmulDtypeName(in.dtype) << " k=" << in.k << " m=" << in.m << " "
         << at(in.src0, in.src_offset);
      if (in.src1 >= 0) os << " scales " << at(in.src1, in.src1_offset);
      break;
    case Opcode::kMultiplyMoving:
      os << " " << MatmulDtypeName(in.dtype) << " k=" << in.k << " m=" << in.m << " n=" << in.n
         << " " << at(in.src0, in.src_offset) << " -> " << at(in.dst, in.dst_offset)
         << (in.accumulate ? " (accumulate)" : " (start)");
      if (in.src1 >= 0) os << " scales " << at(in.src1, in.src1_offset);
      break;
    case Opcode::kTranspose:
      os << " [" << in.partitions << "x" << in.n << "] " << at(in.src0, in.src_offset) << " -> "
         << at(in.dst, in.dst_offset);
      break;
    case Opcode::kDmaCopy:
      os << " " << in.bytes << " B " << at(in.src0, in.src_offset);
      if (in.src1 >= 0) os << " + " << at(in.src1, in.src1_offset);
      if (in.src2 >= 0) os << " + " << at(in.src2, in.src2_offset);
      os << (in.accumulate ? " += " : " -> ") << at(in.dst, in.dst_offset);
      if (in.dst2 >= 0) os << " and " << at(in.dst2, in.dst2_offset);
      os << " over " << in.partitions << " partitions";
      break;
    default:
      if (in.op == Opcode::kActivation) {
        os << " " << ActFuncName(in.act);
      } else if (in.op == Opcode::kTensorScalar || in.op == Opcode::kTensorTensor ||
                 in.op == Opcode::kTensorReduce) {
        os << " " << AluOpName(in.alu);
      }
      os << " [" << in.partitions << "x" << in.n << "] " << ElemTypeName(in.in_type) << "->"
         << ElemTypeName(in.out_type) << " " << at(in.src0, in.src_offset);
      if (in.src1 >= 0) {
        const bool row_sum =
            (in.op == Opcode::kActivation || in.op == Opcode::kExponential) && in.accumulate;
        os << (row_sum ? ", row sum -> " : ", ") << at(in.src1, in.src1_offset);
      }
      os << " -> " << at(in.dst, in.dst_offset);
      if (in.dependent) os << " (dependent)";
      break;
  }
  for (const SemWait& w : in.waits) os << "  wait " << semaphores_[w.sem].name << ">=" << w.value;
  for (const SemSignal& g : in.signals) {
    os << "  signal " << semaphores_[g.sem].name << "+=" << g.increment;
  }
  return os.str();
}

std::string Program::Dump() const {
  std::ostringstream os;
  os << "program on " << machine_.name << " (" << machine_.core_name << "), ";
  if (chips_ > 1) os << chips_ << " chips x ";
  os << cores_per_chip_ << " core(s), " << instruction_count() << " instructions\n";
  os << "buffers:\n";
  for (const Buffer& b : buffers_) {
    char line[320];
    if (b.space == MemSpace::kHbm) {
      const std::string where = chips_ > 1 ? " on chip " + std::to_string(b.chip) : "";
      std::snprintf(line, sizeof line, "  hbm   %-24s %14lld B at 0x%llx%s%s\n", b.name.c_str(),
                    static_cast<long long>(b.bytes), static_cast<unsigned long long>(b.offset),
                    where.c_str(), b.live ? "" : " (freed)");
    } else {
      std::snprintf(
          line, sizeof line, "  %-5s %-24s %s partitions [%d,%d) %lld B/partition at +%lld%s\n",
          std::string(MemSpaceName(b.space)).c_str(), b.name.c_str(), CoreName(b.core).c_str(),
          b.partition_start, b.partition_start + b.partitions, static_cast<long long>(b.bytes),
          static_cast<long long>(b.offset), b.live ? "" : " (freed)");
    }
    os << line;
  }
  os << "semaphores:\n";
  for (size_t i = 0; i < semaphores_.size(); ++i) {
    os << "  s" << i << " " << semaphores_[i].name << " (" << CoreName(semaphores_[i].core)
       << ")\n";
  }
  for (const Stream& s : streams_) {
    if (s.instructions.empty()) continue;
    os << s.name << ": " << s.instructions.size() << " instructions\n";
    for (size_t i = 0; i < s.instructions.size(); ++i) {
      os << "  " << i << "  " << Describe(s.instructions[i]) << "\n";
    }
  }
  return os.str();
}

}  // namespace trnmx::emu
