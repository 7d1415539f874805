// Program IR of the emulator: what the NeuronCores of one or more chips
// execute.
//
// A program holds, per core, one in-order instruction stream per compute
// engine (TensorE, VectorE, ScalarE, GpSimdE), any number of DMA queues and
// up to `sync.cc_cores` collective queues (the CC-cores, which drive the same
// DMA engines as the core's DMA queues; trainium.md section 7), each also in
// order, plus named buffers in HBM (one address space per chip), SBUF and
// PSUM (per core) and counting semaphores (trainium.md section 3: a consumer
// waits until semaphore >= value; completions increment it).
//
// Cores are numbered across the program: core c is core c % cores_per_chip()
// of chip c / cores_per_chip(). Every buffer, stream and semaphore belongs to
// one chip. A stream waits only on semaphores of its own core; it may signal
// any semaphore of its chip (a cross-core semaphore), and a DMA or collective
// transfer whose destination is on another chip may signal semaphores of that
// chip: the semaphore write follows the data on the same path, so it lands
// when the data has (trainium.md section 10.2).
//
//   Program p = Program::Create(machine, /*cores=*/1).value();
//   BufferId a = p.AllocSbuf(0, "a", 1024).value();      // 1 KiB per partition
//   SemId ready = p.AddSemaphore(0, "a_ready").value();
//   StreamId q = p.AddDmaQueue(0, "load").value();
//   Instruction dma = Instruction::DmaCopy(hbm_a, a, 128 * 1024, 128);
//   dma.signals = {{ready, 1}};
//   Status s = p.Append(q, dma);
//
// Buffers are allocated when they are created and live until Free(): the
// allocator enforces the SBUF/PSUM rules at build time (capacity per
// partition, alignment, PSUM bank boundaries, partition quadrants) and every
// error names the buffer. Append() validates an instruction against its
// engine, its buffers (with their byte offsets) and the machine's tile
// limits, and refuses to grow a program past its instruction budget (the
// emulator's own memory: RESOURCE_EXHAUSTED, never an allocation failure).
#ifndef TRNMX_EMU_PROGRAM_H_
#define TRNMX_EMU_PROGRAM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trnmx/emu/machine.h"
#include "trnmx/emu/system.h"
#include "trnmx/status.h"

namespace trnmx::emu {

enum class MemSpace : uint8_t { kHbm, kSbuf, kPsum };
enum class EngineKind : uint8_t { kTensor, kVector, kScalar, kGpSimd, kDma, kCollective };
inline constexpr int kComputeEngines = 4;  // Tensor, Vector, Scalar, GpSimd
std::string_view MemSpaceName(MemSpace space);
std::string_view EngineKindName(EngineKind engine);

// Element types seen by Vector/Scalar/GpSimd and DMA (MX data is moved as bytes).
enum class ElemType : uint8_t { kFp32, kBf16, kFp16, kFp8, kU8 };
std::string_view ElemTypeName(ElemType type);
int ElemBytes(ElemType type);

using BufferId = int32_t;
using SemId = int32_t;
using StreamId = int32_t;

struct Buffer {
  std::string name;
  MemSpace space = MemSpace::kHbm;
  int chip = 0;
  int core = -1;            // program-wide core id; -1 for HBM (shared by the chip)
  int partition_start = 0;  // SBUF/PSUM only
  int partitions = 0;       // SBUF/PSUM only
  int64_t offset = 0;       // HBM: byte address; SBUF/PSUM: byte offset within each partition
  int64_t bytes = 0;        // HBM: bytes; SBUF/PSUM: bytes per partition
  bool live = true;
};

enum class Opcode : uint8_t {
  // TensorE (nc_matmul = LoadStationary + MultiplyMoving; nc_matmul_mx with an MX dtype).
  kLoadStationary,  // src0 = stationary [K, M] (+ src1 = MX scales)
  kMultiplyMoving,  // src0 = moving [K, N] (+ src1 = MX scales) -> dst PSUM [M, N] FP32
  kTranspose,       // src0 [P, F] -> dst PSUM [F, P]
  // VectorE (kTensorCopy / kTensorScalar also on ScalarE and GpSimdE).
  kTensorCopy,    // dst = src0 (with dtype cast): PSUM evacuation
  kTensorScalar,  // dst = src0 op scalar
  kTensorTensor,  // dst = src0 op src1
  kTensorReduce,  // dst[p] = reduce(src0[p, :])
  kMemset,        // dst = constant
  kReciprocal,    // dst = 1 / src0
  kQuantizeMx,    // dst = MXFP8(src0), dst2 (src1) = E8M0 scales (v4)
  // dst = exp(src0 - bias) (v4 `exponential`); with `accumulate`, src1[p]
  // (FP32) = the row sum of dst.
  kExponential,
  // ScalarE.
  kActivation,  // dst = act(src0 * scale + bias); with `accumulate`, src1[p] = row sum
  // GpSimdE.
  kIota,  // dst = affine index pattern
  // DMA queue.
  kDmaCopy,  // dst = src0, `bytes` bytes (DMA compute and duplication: Instruction)
};
std::string_view OpcodeName(Opcode op);

// The ALU operation of a TensorScalar, TensorTensor or TensorReduce. The
// per-partition scalar, bias and max operands of the element-wise
// instructions ([P, 1]) are not buffers of the IR: they are too small to
// cost anything but the instruction (trainium.md section 6).
enum class AluOp : uint8_t { kAdd, kSubtract, kMultiply, kMax, kBypass };
std::string_view AluOpName(AluOp op);

// The function of a ScalarE activation. Each non-linear function lives in an
// activation-table set that ScalarE must have loaded (trainium.md section 6,
// S35); identity is in every set.
enum class ActFunc : uint8_t { kIdentity, kExp };
enum class ActTableSet : uint8_t { kNone, kNaturalLogExp };
std::string_view ActFuncName(ActFunc f);
ActTableSet ActTableSetOf(ActFunc f);

struct SemWait {
  SemId sem = -1;
  int64_t value = 0;  // proceed when the semaphore's count >= value
};
struct SemSignal {
  SemId sem = -1;
  int64_t increment = 1;  // added when the instruction completes
};

struct Instruction {
  Opcode op = Opcode::kTensorCopy;
  MatmulDtype dtype = MatmulDtype::kBf16;  // TensorE
  ElemType in_type = ElemType::kFp32;      // Vector/Scalar/GpSimd
  ElemType out_type = ElemType::kFp32;
  BufferId dst = -1, src0 = -1, src1 = -1;
  int partitions = 0;  // partitions touched (Vector/Scalar/GpSimd/Transpose; SBUF side of DMA)
  int64_t k = 0;       // TensorE contraction size
  int64_t m = 0;       // TensorE stationary free size (output partitions)
  int64_t n = 0;       // moving free size; elements per partition for Vector/Scalar/GpSimd
  // MultiplyMoving: add to PSUM (true) or start a new group. DmaCopy: DMA
  // compute, dst += src in FP32 (trainium.md section 7), which also reads dst.
  // Activation / Exponential: also write the row sum of dst to src1.
  bool accumulate = false;
  int64_t bytes = 0;                 // DMA: bytes moved
  AluOp alu = AluOp::kAdd;           // TensorScalar, TensorTensor, TensorReduce
  ActFunc act = ActFunc::kIdentity;  // Activation
  // Vector/Scalar: issued back to back after the instruction whose result
  // it reads (a chain of small dependent steps): costs the engine's
  // dependent_overhead_cycles more (trainium.md section 6, S7).
  bool dependent = false;
  // Byte offsets into the buffers: in HBM from the buffer's start, on chip
  // within each partition. Compute instructions read and write their
  // operands from these offsets, so a kernel can work on a slice of a
  // larger buffer.
  int64_t src_offset = 0;   // src0
  int64_t src1_offset = 0;  // src1 (second input, MX scales, QuantizeMx scale output)
  int64_t dst_offset = 0;
  // DmaCopy between HBM buffers only, each of these an HBM buffer of the
  // queue's own chip (-1: none). src1 and src2 make it a DMA compute of more
  // inputs, dst = src0 + src1 (+ src2) (+ dst with `accumulate`), one more
  // read of `bytes` each; dst2 duplicates the write: the bytes read once are
  // also written at dst2 (trainium.md 10.3, S17: KangaRing's "1R2W" and
  // "3R1W" transfers).
  BufferId src2 = -1, dst2 = -1;
  int64_t src2_offset = 0, dst2_offset = 0;
  std::vector<SemWait> waits;
  std::vector<SemSignal> signals;

  static Instruction LoadStationary(BufferId stationary, MatmulDtype dtype, int64_t k, int64_t m,
                                    BufferId scales = -1);
  static Instruction MultiplyMoving(BufferId moving, BufferId psum, MatmulDtype dtype, int64_t k,
                                    int64_t m, int64_t n, bool accumulate, BufferId scales = -1);
  static Instruction Transpose(BufferId src, BufferId psum, int partitions, int64_t free_elems);
  static Instruction Elementwise(Opcode op, BufferId dst, BufferId src0, int partitions,
                                 int64_t elems, ElemType in_type, ElemType out_type,
                                 BufferId src1 = -1);
  static Instruction DmaCopy(BufferId src, BufferId dst, int64_t bytes, int partitions,
                             int64_t src_offset = 0, int64_t dst_offset = 0);
};

struct Stream {
  std::string name;  // "core0.tensor", "core0.dma.load_b"; "chip1.core0.cc.ring" on several chips
  int chip = 0;
  int core = 0;  // program-wide core id
  EngineKind engine = EngineKind::kTensor;
  std::vector<Instruction> instructions;
};

struct Semaphore {
  std::string name;
  int chip = 0;
  int core = 0;  // program-wide core id
};

struct ProgramOptions {
  // Instructions the program may hold (all streams). The default keeps a
  // program within a few GiB of the emulator's memory.
  int64_t max_instructions = int64_t{1} << 24;
};

class Program {
 public:
  // A program for `cores` NeuronCores of one chip of `machine` (1 <= cores
  // <= machine cores).
  static StatusOr<Program> Create(const Machine& machine, int cores,
                                  const ProgramOptions& options = {});
  // `cores_per_chip` cores on each of `chips` chips of the same kind, with
  // no links between them (each chip's transfers stay on the chip).
  static StatusOr<Program> Create(const Machine& machine, int cores_per_chip, int chips,
                                  const ProgramOptions& options = {});
  // `cores_per_chip` cores on each of the first `chips` chips of `system`
  // (0: all of them). A DMA or collective transfer may write into the HBM of
  // another chip: it travels the system's route between the two chips
  // (System::Route), holding each link of it (simulator.h).
  static StatusOr<Program> Create(const System& system, int cores_per_chip, int chips = 0,
                                  const ProgramOptions& options = {});

  // The system whose links carry transfers between chips; nullptr when the
  // program was created for a machine.
  const System* system() const { return system_.get(); }

  const Machine& machine() const { return machine_; }
  int chips() const { return chips_; }
  int cores_per_chip() const { return cores_per_chip_; }
  int cores() const { return cores_per_chip_ * chips_; }  // all chips
  int ChipOfCore(int core) const { return core / cores_per_chip_; }
  int LocalCore(int core) const { return core % cores_per_chip_; }  // index on its chip
  int CoreId(int chip, int local_core) const { return chip * cores_per_chip_ + local_core; }

  StatusOr<BufferId> AllocHbm(std::string name, int64_t bytes, int chip = 0);
  // bytes per partition over `partitions` partitions from `partition_start`.
  StatusOr<BufferId> AllocSbuf(int core, std::string name, int64_t bytes_per_partition,
                               int partitions = 128, int partition_start = 0);
  StatusOr<BufferId> AllocPsum(int core, std::string name, int64_t bytes_per_partition,
                               int partitions = 128, int partition_start = 0);
  Status Free(BufferId buffer);

  StatusOr<SemId> AddSemaphore(int core, std::string name);
  StatusOr<StreamId> AddDmaQueue(int core, std::string name);
  // A collective queue: a CC-core's stream of DMA transfers, on the same
  // DMA engines as the core's DMA queues (at most sync.cc_cores per core).
  StatusOr<StreamId> AddCollectiveQueue(int core, std::string name);
  // Another DMA ring driven by the CC-core of collective queue `queue`
  // (trainium.md section 7: CC-cores drive DMA rings): a collective stream
  // of the same core that keeps its own order and runs side by side with
  // the queue; it takes one of the core's DMA queues (RESOURCE_EXHAUSTED
  // past them; INVALID_ARGUMENT if `queue` is not a collective queue).
  StatusOr<StreamId> AddCollectiveRing(StreamId queue, std::string name);
  StreamId EngineStream(int core, EngineKind engine) const;
  // Makes room for `instructions` more instructions in `stream`, so that a
  // lowering that knows its counts (a collective: millions of transfers)
  // appends without regrowing the stream. Changes nothing else.
  Status Reserve(StreamId stream, int64_t instructions);

  // Validates and appends; the error names the stream, the instruction index
  // and the buffer at fault. Semaphore waits need a value >= 1 on a
  // semaphore of the stream's core; signals a positive increment on a
  // semaphore of the stream's chip, or of the destination chip of a DMA.
  // RESOURCE_EXHAUSTED past ProgramOptions::max_instructions.
  Status Append(StreamId stream, Instruction instruction);

  const std::vector<Stream>& streams() const { return streams_; }
  const std::vector<Buffer>& buffers() const { return buffers_; }
  const std::vector<Semaphore>& semaphores() const { return semaphores_; }
  int64_t instruction_count() const { return instruction_count_; }
  int64_t max_instructions() const { return options_.max_instructions; }

  // Largest byte extent per partition ever allocated at once.
  int64_t sbuf_high_water(int core) const { return sbuf_[core].high_water; }
  int64_t psum_high_water(int core) const { return psum_[core].high_water; }
  int64_t hbm_allocated(int chip = 0) const { return hbm_[chip].high_water; }

  // Readable text: buffers, semaphores, then each stream's instructions.
  std::string Dump() const;
  // One instruction, e.g. "MultiplyMoving mxfp8 k=512 m=128 n=512 b[0] -> acc[3] (start)".
  std::string Describe(const Instruction& in) const;

 private:
  struct Range {
    int64_t begin, end;
    BufferId owner;
  };
  struct Arena {
    int64_t capacity = 0;
    int64_t high_water = 0;
    std::vector<Range> live;  // sorted by begin
  };

  Program(const Machine& machine, int cores_per_chip, int chips, const ProgramOptions& options);
  StatusOr<BufferId> AllocOnChip(MemSpace space, int core, std::string name,
                                 int64_t bytes_per_partition, int partitions, int partition_start);
  // The instruction being appended, for error messages ("core0.tensor[12]
  // MultiplyMoving"); the text is built only when there is an error.
  struct Site {
    const Stream& stream;
    Opcode op;
    std::string operator()() const;
  };
  Status CheckCore(int core, std::string_view what) const;
  StatusOr<StreamId> AddQueue(int core, EngineKind engine, std::string name);
  std::string CoreName(int core) const;  // "core3" or "chip1.core3"
  // `remote_hbm`: the buffer may be in the HBM of another chip of the system.
  Status CheckBuffer(BufferId id, int core, std::initializer_list<MemSpace> spaces,
                     std::string_view role, const Site& where, bool remote_hbm = false) const;
  Status Validate(const Stream& stream, const Instruction& in, const Site& where) const;

  Machine machine_;
  std::shared_ptr<const System> system_;
  int cores_per_chip_ = 1, chips_ = 1;
  ProgramOptions options_;
  int64_t instruction_count_ = 0;
  std::vector<Stream> streams_;
  std::vector<Buffer> buffers_;
  std::vector<Semaphore> semaphores_;
  // Per stream: index of its last LoadStationary (-1: none), the stationary
  // a MultiplyMoving appended next will use.
  std::vector<int64_t> last_load_stationary_;
  std::vector<int> semaphores_per_core_;
  std::vector<int> dma_queues_per_core_, cc_queues_per_core_;
  std::vector<Arena> sbuf_, psum_;
  std::vector<Arena> hbm_;  // per chip
};

// Bytes per partition that a TensorE operand [k, free] of `dtype` occupies
// in SBUF (K folded onto the partitions: 1 element per partition row for
// BF16/FP32, 2 for FP8 double-row, 4 packed for MX).
int64_t TensorOperandBytesPerPartition(const Machine& m, MatmulDtype dtype, int64_t free_elems);
// Bytes per partition of the MX scale tile of an operand with `free_elems`
// columns: the [P, F/4] uint8 allocation of trainium.md section 9.
int64_t MxScaleBytesPerPartition(int64_t free_elems);
// Partitions a TensorE operand with contraction size k occupies.
int TensorOperandPartitions(const Machine& m, MatmulDtype dtype, int64_t k);

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_PROGRAM_H_
