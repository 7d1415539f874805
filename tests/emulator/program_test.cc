// Program IR: allocation rules (capacity, alignment, PSUM banks, partition
// quadrants), instruction validation with errors that name the buffer, and
// the text dump.
#include "trnmx/emu/program.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "trnmx/emu/cost.h"

namespace trnmx::emu {
namespace {

// Built with a stream: GCC 12 -O3 gives a false -Wrestrict on "lit" + to_string.
std::string Indexed(const char* prefix, int i) {
  std::ostringstream os;
  os << prefix << i;
  return os.str();
}

Program MakeProgram(const char* machine = "trn3", int cores = 1) {
  return Program::Create(LoadPresetMachine(machine).value(), cores).value();
}

void ExpectError(const Status& s, StatusCode code, const std::string& fragment) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), code) << s.ToString();
  EXPECT_NE(s.message().find(fragment), std::string::npos) << s.message();
}

TEST(ProgramAlloc, SbufFirstFitAlignmentAndHighWater) {
  Program p = MakeProgram();
  BufferId a = p.AllocSbuf(0, "a", 100).value();  // next start rounds to 128 (64 B alignment)
  BufferId b = p.AllocSbuf(0, "b", 1000).value();
  EXPECT_EQ(p.buffers()[a].offset, 0);
  EXPECT_EQ(p.buffers()[b].offset, 128);
  EXPECT_EQ(p.sbuf_high_water(0), 128 + 1000);
  ASSERT_TRUE(p.Free(a).ok());
  BufferId c = p.AllocSbuf(0, "c", 64).value();  // reuses the hole left by a
  EXPECT_EQ(p.buffers()[c].offset, 0);
  EXPECT_EQ(p.sbuf_high_water(0), 128 + 1000);
  ExpectError(p.Free(a), StatusCode::kFailedPrecondition, "'a' was already freed");
}

TEST(ProgramAlloc, SbufOverflowNamesBufferAndSizes) {
  Program p = MakeProgram();
  ASSERT_TRUE(p.AllocSbuf(0, "weights", 200 * 1024).ok());
  StatusOr<BufferId> big = p.AllocSbuf(0, "activations", 64 * 1024);
  ASSERT_FALSE(big.ok());
  ExpectError(big.status(), StatusCode::kResourceExhausted,
              "SBUF buffer 'activations' needs 65536 B per partition; 40960 B of 245760 B");
}

TEST(ProgramAlloc, Trn2UsableSbufIsSmaller) {
  Program p = MakeProgram("trn2");
  EXPECT_TRUE(p.AllocSbuf(0, "fits", 212728).ok());
  Program q = MakeProgram("trn2");
  ExpectError(q.AllocSbuf(0, "too_big", 212729).status(), StatusCode::kResourceExhausted,
              "'too_big'");
}

TEST(ProgramAlloc, PsumBufferDoesNotCrossBanks) {
  Program p = MakeProgram();
  BufferId a = p.AllocPsum(0, "a", 1536).value();
  BufferId b = p.AllocPsum(0, "b", 1024).value();  // would cross bank 0/1 at 1536: moves to 2048
  EXPECT_EQ(p.buffers()[a].offset, 0);
  EXPECT_EQ(p.buffers()[b].offset, 2048);
  BufferId c = p.AllocPsum(0, "c", 512).value();  // fits in bank 0's tail
  EXPECT_EQ(p.buffers()[c].offset, 1536);
  BufferId wide = p.AllocPsum(0, "wide", 4096).value();  // two banks, bank-aligned
  EXPECT_EQ(p.buffers()[wide].offset, 4096);
  EXPECT_EQ(p.psum_high_water(0), 8192);
}

TEST(ProgramAlloc, PsumOverflowNamesBuffer) {
  Program p = MakeProgram();
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(p.AllocPsum(0, Indexed("bank", i), 2048).ok());
  ExpectError(p.AllocPsum(0, "ninth", 4).status(), StatusCode::kResourceExhausted,
              "PSUM buffer 'ninth' needs 4 B per partition; 0 B of 16384 B");
}

TEST(ProgramAlloc, PartitionQuadrantRules) {
  Program p = MakeProgram();
  EXPECT_TRUE(p.AllocSbuf(0, "q1", 64, 32, 32).ok());
  EXPECT_TRUE(p.AllocSbuf(0, "h1", 64, 64, 64).ok());
  ExpectError(p.AllocSbuf(0, "bad32", 64, 32, 16).status(), StatusCode::kInvalidArgument,
              "'bad32': 32 partitions cannot start at partition 16");
  ExpectError(p.AllocSbuf(0, "bad64", 64, 48, 32).status(), StatusCode::kInvalidArgument,
              "'bad64': 48 partitions cannot start at partition 32");
  ExpectError(p.AllocSbuf(0, "bad128", 64, 96, 32).status(), StatusCode::kInvalidArgument,
              "'bad128'");
  ExpectError(p.AllocSbuf(0, "over", 64, 128, 64).status(), StatusCode::kInvalidArgument,
              "outside [0, 128)");
  ExpectError(p.AllocSbuf(3, "nocore", 64).status(), StatusCode::kInvalidArgument, "core 3");
}

TEST(ProgramValidate, MatmulLimitsPerDtype) {
  Program p = MakeProgram();
  BufferId st = p.AllocSbuf(0, "st", 512).value();
  BufferId st_scale = p.AllocSbuf(0, "st_scale", 32).value();
  BufferId mv = p.AllocSbuf(0, "mv", 2048).value();
  BufferId mv_scale = p.AllocSbuf(0, "mv_scale", 128).value();
  BufferId acc = p.AllocPsum(0, "acc", 2048).value();
  const StreamId pe = p.EngineStream(0, EngineKind::kTensor);
  EXPECT_TRUE(
      p.Append(pe, Instruction::LoadStationary(st, MatmulDtype::kMxfp8, 512, 128, st_scale)).ok());
  EXPECT_TRUE(p.Append(pe, Instruction::MultiplyMoving(mv, acc, MatmulDtype::kMxfp8, 512, 128, 512,
                                                       false, mv_scale))
                  .ok());
  ExpectError(p.Append(pe, Instruction::LoadStationary(st, MatmulDtype::kBf16, 256, 128)),
              StatusCode::kInvalidArgument, "K = 256 outside [1, 128] for bf16");
  ExpectError(p.Append(pe, Instruction::LoadStationary(st, MatmulDtype::kMxfp8, 512, 128)),
              StatusCode::kInvalidArgument, "MX scales is not a buffer");
  ExpectError(p.Append(pe, Instruction::LoadStationary(st, MatmulDtype::kFp8, 256, 129)),
              StatusCode::kInvalidArgument, "M = 129");
  // The output tile needs 4 x 1024 B per partition; 'acc' has 2048.
  ASSERT_TRUE(p.Append(pe, Instruction::LoadStationary(st, MatmulDtype::kBf16, 128, 128)).ok());
  ExpectError(
      p.Append(pe, Instruction::MultiplyMoving(mv, acc, MatmulDtype::kBf16, 128, 128, 1024, false)),
      StatusCode::kInvalidArgument, "output 'acc' holds 2048 B per partition, needs 4096 B");
  // Moving operand too small: bf16 n=512 needs 1024 B per partition.
  BufferId tiny = p.AllocSbuf(0, "tiny", 512).value();
  ExpectError(
      p.Append(pe,
               Instruction::MultiplyMoving(tiny, acc, MatmulDtype::kBf16, 128, 128, 512, false)),
      StatusCode::kInvalidArgument, "moving 'tiny' holds 512 B per partition, needs 1024 B");
  // MX does not exist on Trainium2.
  Program q = MakeProgram("trn2");
  BufferId s2 = q.AllocSbuf(0, "s", 512).value();
  ExpectError(q.Append(q.EngineStream(0, EngineKind::kTensor),
                       Instruction::LoadStationary(s2, MatmulDtype::kMxfp8, 512, 128, s2)),
              StatusCode::kInvalidArgument, "has no mxfp8 matmul");
}

TEST(ProgramValidate, MovingFreeLimitDiffersByGeneration) {
  for (const char* name : {"trn2", "trn3"}) {
    Program p = MakeProgram(name);
    BufferId st = p.AllocSbuf(0, "st", 256).value();
    BufferId mv = p.AllocSbuf(0, "mv", 4096).value();
    BufferId acc = p.AllocPsum(0, "acc", 8192).value();
    const StreamId pe = p.EngineStream(0, EngineKind::kTensor);
    ASSERT_TRUE(p.Append(pe, Instruction::LoadStationary(st, MatmulDtype::kBf16, 128, 128)).ok());
    Status s = p.Append(
        pe, Instruction::MultiplyMoving(mv, acc, MatmulDtype::kBf16, 128, 128, 2048, false));
    if (std::string(name) == "trn3") {
      EXPECT_TRUE(s.ok()) << s.ToString();  // v4: one matmul spans 4 banks
    } else {
      ExpectError(s, StatusCode::kInvalidArgument, "N = 2048 outside [1, 512] on NeuronCore-v3");
    }
  }
}

TEST(ProgramValidate, EngineRulesAndSemaphores) {
  Program p = MakeProgram();
  BufferId acc = p.AllocPsum(0, "acc", 2048).value();
  BufferId out = p.AllocSbuf(0, "out", 1024).value();
  SemId s0 = p.AddSemaphore(0, "done").value();
  Instruction evac = Instruction::Elementwise(Opcode::kTensorCopy, out, acc, 128, 512,
                                              ElemType::kFp32, ElemType::kBf16);
  evac.signals = {{s0, 1}};
  EXPECT_TRUE(p.Append(p.EngineStream(0, EngineKind::kVector), evac).ok());
  EXPECT_TRUE(p.Append(p.EngineStream(0, EngineKind::kScalar), evac).ok());
  ExpectError(p.Append(p.EngineStream(0, EngineKind::kGpSimd), evac), StatusCode::kInvalidArgument,
              "input 'acc' is in psum");  // GpSimd cannot reach PSUM
  ExpectError(p.Append(p.EngineStream(0, EngineKind::kTensor), evac), StatusCode::kInvalidArgument,
              "TensorCopy cannot run on the tensor engine");
  Instruction bad = evac;
  bad.signals = {{s0 + 5, 1}};
  ExpectError(p.Append(p.EngineStream(0, EngineKind::kVector), bad), StatusCode::kInvalidArgument,
              "signals semaphore");
  BufferId hbm = p.AllocHbm("C", 1 << 20).value();
  const StreamId q = p.AddDmaQueue(0, "store").value();
  EXPECT_TRUE(p.Append(q, Instruction::DmaCopy(out, hbm, 128 * 1024, 128)).ok());
  ExpectError(p.Append(q, Instruction::DmaCopy(out, hbm, 256 * 1024, 128)),
              StatusCode::kInvalidArgument,
              "source 'out' holds 1024 B per partition, DMA writes 2048 B");
  ExpectError(p.Append(q, Instruction::DmaCopy(out, hbm, 1024, 128, 0, (1 << 20) - 512)),
              StatusCode::kInvalidArgument, "destination 'C'");
}

TEST(ProgramValidate, WaitsNeedAReachableValue) {
  // A wait for >= 0 always holds (and had no reach time to compute): rejected.
  Program p = MakeProgram();
  BufferId a = p.AllocSbuf(0, "a", 1024).value();
  BufferId b = p.AllocSbuf(0, "b", 1024).value();
  SemId s0 = p.AddSemaphore(0, "ready").value();
  Instruction copy = Instruction::Elementwise(Opcode::kTensorCopy, b, a, 128, 256, ElemType::kBf16,
                                              ElemType::kBf16);
  copy.waits = {{s0, 0}};
  ExpectError(p.Append(p.EngineStream(0, EngineKind::kVector), copy), StatusCode::kInvalidArgument,
              "waits for ready >= 0, which always holds; a wait needs a value >= 1");
  copy.waits = {{s0, 1}};
  EXPECT_TRUE(p.Append(p.EngineStream(0, EngineKind::kVector), copy).ok());
}

TEST(ProgramValidate, MultiplyMovingUsesTheLastLoadStationary) {
  // Many matmuls against one stationary (weights reused): each is checked
  // against the last LoadStationary of its stream, however far back.
  Program p = MakeProgram();
  BufferId st = p.AllocSbuf(0, "st", 512).value();
  BufferId mv = p.AllocSbuf(0, "mv", 1024).value();
  BufferId acc = p.AllocPsum(0, "acc", 2048).value();
  const StreamId pe = p.EngineStream(0, EngineKind::kTensor);
  ExpectError(
      p.Append(pe, Instruction::MultiplyMoving(mv, acc, MatmulDtype::kBf16, 128, 64, 512, false)),
      StatusCode::kFailedPrecondition, "MultiplyMoving without a LoadStationary");
  ASSERT_TRUE(p.Append(pe, Instruction::LoadStationary(st, MatmulDtype::kBf16, 128, 64)).ok());
  for (int i = 0; i < 20000; ++i) {
    ASSERT_TRUE(
        p.Append(pe, Instruction::MultiplyMoving(mv, acc, MatmulDtype::kBf16, 128, 64, 512, i > 0))
            .ok());
  }
  ExpectError(
      p.Append(pe, Instruction::MultiplyMoving(mv, acc, MatmulDtype::kBf16, 128, 128, 512, true)),
      StatusCode::kInvalidArgument, "k/m/dtype differ from the last LoadStationary");
  ASSERT_TRUE(p.Append(pe, Instruction::LoadStationary(st, MatmulDtype::kBf16, 128, 128)).ok());
  EXPECT_TRUE(
      p.Append(pe, Instruction::MultiplyMoving(mv, acc, MatmulDtype::kBf16, 128, 128, 512, true))
          .ok());
}

TEST(ProgramValidate, SemaphoreAndQueueLimits) {
  Program p = MakeProgram();
  for (int i = 0; i < 256; ++i) ASSERT_TRUE(p.AddSemaphore(0, Indexed("s", i)).ok());
  ExpectError(p.AddSemaphore(0, "one_more").status(), StatusCode::kResourceExhausted,
              "already has all 256 semaphores");
  for (int i = 0; i < 256; ++i) ASSERT_TRUE(p.AddDmaQueue(0, Indexed("q", i)).ok());
  ExpectError(p.AddDmaQueue(0, "q256").status(), StatusCode::kResourceExhausted, "256 queues");
}

TEST(ProgramDump, IsReadable) {
  Program p = MakeProgram();
  BufferId a = p.AllocHbm("A", 4096).value();
  BufferId t = p.AllocSbuf(0, "a_tile", 32).value();
  SemId s = p.AddSemaphore(0, "a_ready").value();
  const StreamId q = p.AddDmaQueue(0, "load").value();
  Instruction dma = Instruction::DmaCopy(a, t, 4096, 128);
  dma.signals = {{s, 1}};
  ASSERT_TRUE(p.Append(q, dma).ok());
  const std::string dump = p.Dump();
  EXPECT_NE(dump.find("hbm   A"), std::string::npos) << dump;
  EXPECT_NE(dump.find("sbuf  a_tile"), std::string::npos) << dump;
  EXPECT_NE(dump.find("core0.dma.load: 1 instructions"), std::string::npos) << dump;
  EXPECT_NE(dump.find("0  DmaCopy 4096 B A -> a_tile over 128 partitions  signal a_ready+=1"),
            std::string::npos)
      << dump;
}

// Several chips: cores numbered across the program, HBM per chip.
TEST(ProgramChips, CoresAreNumberedAcrossChips) {
  const Machine m = LoadPresetMachine("trn3").value();
  Program p = Program::Create(m, /*cores_per_chip=*/2, /*chips=*/3).value();
  EXPECT_EQ(p.cores(), 6);
  EXPECT_EQ(p.chips(), 3);
  EXPECT_EQ(p.ChipOfCore(5), 2);
  EXPECT_EQ(p.LocalCore(5), 1);
  EXPECT_EQ(p.CoreId(1, 1), 3);
  EXPECT_EQ(p.streams()[p.EngineStream(3, EngineKind::kTensor)].name, "chip1.core1.tensor");
  EXPECT_EQ(p.streams()[p.EngineStream(3, EngineKind::kTensor)].chip, 1);
  // Each chip has its own 144 GiB: 100 GiB fits on two chips but not twice on one.
  const int64_t big = int64_t{100} << 30;
  EXPECT_TRUE(p.AllocHbm("w0", big, 0).ok());
  EXPECT_TRUE(p.AllocHbm("w1", big, 1).ok());
  ExpectError(p.AllocHbm("w0b", big, 0).status(), StatusCode::kResourceExhausted, "on chip 0");
  ExpectError(p.AllocHbm("w3", 64, 3).status(), StatusCode::kInvalidArgument, "chip 3 outside");
  EXPECT_EQ(p.hbm_allocated(1), big);
  BufferId t = p.AllocSbuf(3, "t", 64).value();
  EXPECT_EQ(p.buffers()[t].chip, 1);
  ExpectError(Program::Create(m, 2, 0).status(), StatusCode::kInvalidArgument, "chips = 0");
}

TEST(ProgramChips, TransfersStayOnTheirChipWithoutLinks) {
  Program p = Program::Create(LoadPresetMachine("trn3").value(), 1, 2).value();
  BufferId remote = p.AllocHbm("remote", 4096, 1).value();
  BufferId t = p.AllocSbuf(0, "t", 32).value();
  const StreamId q = p.AddDmaQueue(0, "load").value();
  ExpectError(p.Append(q, Instruction::DmaCopy(t, remote, 4096, 128)), StatusCode::kInvalidArgument,
              "'remote' is in the HBM of chip 1; transfers between chips need a program created "
              "for a System");
}

TEST(ProgramChips, OnASystemTransfersWriteIntoOtherChips) {
  const System sys = LoadSystem("trn2-server").value();
  Program p = Program::Create(sys, 1).value();
  EXPECT_EQ(p.chips(), 16);
  ASSERT_NE(p.system(), nullptr);
  BufferId remote = p.AllocHbm("remote", 4096, 5).value();
  BufferId local = p.AllocHbm("local", 4096, 0).value();
  BufferId t = p.AllocSbuf(0, "t", 32).value();
  BufferId far_sbuf = p.AllocSbuf(5, "far", 32).value();
  const StreamId q = p.AddCollectiveQueue(0, "ring").value();
  const SemId far_ready = p.AddSemaphore(5, "far_ready").value();
  Instruction write = Instruction::DmaCopy(t, remote, 4096, 128);
  write.signals = {{far_ready, 1}};  // the destination chip's semaphore
  EXPECT_TRUE(p.Append(q, write).ok());
  EXPECT_TRUE(p.Append(q, Instruction::DmaCopy(local, remote, 4096, 128)).ok());
  ExpectError(p.Append(q, Instruction::DmaCopy(remote, t, 4096, 128)), StatusCode::kInvalidArgument,
              "only a transfer's destination may be on another chip");
  ExpectError(p.Append(q, Instruction::DmaCopy(t, far_sbuf, 4096, 128)),
              StatusCode::kInvalidArgument, "'far' belongs to chip5.core0");
  Instruction local_write = Instruction::DmaCopy(t, local, 4096, 128);
  local_write.signals = {{far_ready, 1}};  // not the chip it writes to
  ExpectError(p.Append(q, local_write), StatusCode::kInvalidArgument,
              "needs a semaphore of chip 0");
  ExpectError(Program::Create(sys, 1, 17).status(), StatusCode::kInvalidArgument,
              "system trn2-server has 16");
}

// KangaRing's transfers (trainium.md 10.3): DMA compute of up to three
// inputs and a duplicated write, HBM to HBM, extras on the queue's chip;
// each extra costs one more pass of the bytes over the core's HBM stack.
TEST(ProgramChips, DmaWithMoreInputsAndADuplicatedWrite) {
  const System sys = LoadSystem("trn2-server").value();
  Program p = Program::Create(sys, 1).value();
  const BufferId a = p.AllocHbm("a", 4096, 0).value(), b = p.AllocHbm("b", 4096, 0).value();
  const BufferId c = p.AllocHbm("c", 4096, 0).value(), far = p.AllocHbm("far", 4096, 1).value();
  const BufferId t = p.AllocSbuf(0, "t", 32).value();
  const StreamId q = p.AddCollectiveQueue(0, "kanga").value();
  Instruction rs = Instruction::DmaCopy(a, far, 1024, 128);  // 3R1W into the next chip
  rs.src1 = b;
  rs.src1_offset = 1024;
  rs.src2 = c;
  EXPECT_TRUE(p.Append(q, rs).ok());
  EXPECT_EQ(p.Describe(rs), "DmaCopy 1024 B a + b+1024 + c -> far over 128 partitions");
  Instruction ag = Instruction::DmaCopy(a, far, 1024, 128);  // 1R2W
  ag.dst2 = b;
  ag.dst2_offset = 3072;
  EXPECT_TRUE(p.Append(q, ag).ok());
  EXPECT_EQ(p.Describe(ag), "DmaCopy 1024 B a -> far and b+3072 over 128 partitions");
  // Local stack bytes: 3 reads; a read and the duplicate (the remote write holds chip 1's stack).
  EXPECT_EQ(DmaCostOf(p, rs).hbm_bytes, 3 * 1024);
  EXPECT_EQ(DmaCostOf(p, ag).hbm_bytes, 2 * 1024);
  EXPECT_EQ(DmaCostOf(p, ag).remote_hbm_bytes, 1024);
  Instruction bad = ag;
  bad.dst2 = far;
  ExpectError(p.Append(q, bad), StatusCode::kInvalidArgument,
              "duplicate destination 'far' is in the HBM of chip 1");
  bad = ag;
  bad.dst2_offset = 3584;
  ExpectError(p.Append(q, bad), StatusCode::kInvalidArgument,
              "duplicate destination 'b' [3584, +1024 B) outside its 4096 B");
  bad = rs;
  bad.src1 = -1;
  ExpectError(p.Append(q, bad), StatusCode::kInvalidArgument, "a third input needs a second");
  bad = Instruction::DmaCopy(t, far, 1024, 128);
  bad.dst2 = b;
  ExpectError(p.Append(q, bad), StatusCode::kInvalidArgument, "moves HBM to HBM");
}

TEST(ProgramQueues, CollectiveQueuesAreTheCcCores) {
  Program p = MakeProgram();
  const StreamId a = p.AddCollectiveQueue(0, "tp").value();
  EXPECT_TRUE(p.AddCollectiveQueue(0, "fsdp").ok());
  ExpectError(p.AddCollectiveQueue(0, "third").status(), StatusCode::kResourceExhausted,
              "core0 already has all 2 CC-cores");
  EXPECT_EQ(p.streams()[a].name, "core0.cc.tp");
  EXPECT_EQ(p.streams()[a].engine, EngineKind::kCollective);
  // A CC-core moves data; it computes nothing.
  BufferId x = p.AllocSbuf(0, "x", 2048).value();
  BufferId y = p.AllocSbuf(0, "y", 2048).value();
  ExpectError(p.Append(a, Instruction::Elementwise(Opcode::kTensorCopy, y, x, 128, 512,
                                                   ElemType::kFp32, ElemType::kFp32)),
              StatusCode::kInvalidArgument, "TensorCopy cannot run on the cc engine");
  EXPECT_TRUE(p.Append(a, Instruction::DmaCopy(x, y, 128 * 2048, 128)).ok());
}

// A CC-core drives more DMA rings: streams of its core that take the
// core's DMA queues (16 engines x 16 queues), not CC-cores.
TEST(ProgramQueues, CollectiveRingsTakeTheCoresDmaQueues) {
  Program p = Program::Create(LoadPresetMachine("trn3").value(), 2).value();
  const StreamId cc = p.AddCollectiveQueue(1, "tp").value();
  const StreamId ring = p.AddCollectiveRing(cc, "tp.ring1").value();
  EXPECT_EQ(p.streams()[ring].name, "core1.cc.tp.ring1");
  EXPECT_EQ(p.streams()[ring].engine, EngineKind::kCollective);
  EXPECT_EQ(p.streams()[ring].core, 1);
  EXPECT_TRUE(p.AddCollectiveQueue(1, "fsdp").ok());  // still a CC-core left
  ExpectError(p.AddCollectiveRing(p.EngineStream(1, EngineKind::kVector), "x").status(),
              StatusCode::kInvalidArgument, "is not a collective queue");
  ExpectError(p.AddCollectiveRing(-1, "x").status(), StatusCode::kInvalidArgument,
              "is not a collective queue");
  for (int i = 1; i < 256; ++i) ASSERT_TRUE(p.AddDmaQueue(1, "q" + std::to_string(i)).ok());
  ExpectError(p.AddCollectiveRing(cc, "more").status(), StatusCode::kResourceExhausted,
              "core1 already has all 256 queues");
  ExpectError(p.AddDmaQueue(1, "more").status(), StatusCode::kResourceExhausted,
              "already has all 256 queues");
}

TEST(ProgramSemaphores, SignalsCrossCoresWaitsDoNot) {
  Program p = Program::Create(LoadPresetMachine("trn3").value(), 2, 2).value();
  const SemId other_core = p.AddSemaphore(1, "on_core1").value();
  const SemId other_chip = p.AddSemaphore(2, "on_chip1").value();
  BufferId x = p.AllocSbuf(0, "x", 2048).value();
  const StreamId vec = p.EngineStream(0, EngineKind::kVector);
  Instruction set =
      Instruction::Elementwise(Opcode::kMemset, x, -1, 128, 512, ElemType::kFp32, ElemType::kFp32);
  set.signals = {{other_core, 1}};
  EXPECT_TRUE(p.Append(vec, set).ok());  // another core of the chip: allowed
  set.signals = {{other_chip, 1}};
  ExpectError(p.Append(vec, set), StatusCode::kInvalidArgument, "needs a semaphore of chip 0");
  set.signals = {};
  set.waits = {{other_core, 1}};
  ExpectError(p.Append(vec, set), StatusCode::kInvalidArgument,
              "which is not a semaphore of chip0.core0");
}

TEST(ProgramValidate, OperandOffsetsAreChecked) {
  Program p = MakeProgram();
  BufferId st = p.AllocSbuf(0, "st", 1024).value();
  BufferId mv = p.AllocSbuf(0, "mv", 2048).value();
  BufferId acc = p.AllocPsum(0, "acc", 4096).value();  // two banks
  const StreamId pe = p.EngineStream(0, EngineKind::kTensor);
  Instruction ls = Instruction::LoadStationary(st, MatmulDtype::kBf16, 128, 128);
  ls.src_offset = 768;  // 256 B of stationary from 768: fits in 1024
  ASSERT_TRUE(p.Append(pe, ls).ok());
  Instruction mm = Instruction::MultiplyMoving(mv, acc, MatmulDtype::kBf16, 128, 128, 512, false);
  mm.dst_offset = 2048;  // the second bank
  ASSERT_TRUE(p.Append(pe, mm).ok());
  EXPECT_NE(p.Describe(mm).find("mv -> acc+2048"), std::string::npos) << p.Describe(mm);
  mm.dst_offset = 2112;
  ExpectError(p.Append(pe, mm), StatusCode::kInvalidArgument,
              "output 'acc' holds 4096 B per partition, needs 2048 B at offset 2112");
  mm.dst_offset = 0;
  mm.src_offset = -64;
  ExpectError(p.Append(pe, mm), StatusCode::kInvalidArgument, "at offset -64");
}

TEST(ProgramValidate, InstructionBudget) {
  ProgramOptions options;
  options.max_instructions = 2;
  Program p = Program::Create(LoadPresetMachine("trn3").value(), 1, options).value();
  BufferId x = p.AllocSbuf(0, "x", 2048).value();
  const StreamId vec = p.EngineStream(0, EngineKind::kVector);
  const Instruction set =
      Instruction::Elementwise(Opcode::kMemset, x, -1, 128, 512, ElemType::kFp32, ElemType::kFp32);
  ASSERT_TRUE(p.Append(vec, set).ok());
  ASSERT_TRUE(p.Append(vec, set).ok());
  ExpectError(p.Append(vec, set), StatusCode::kResourceExhausted,
              "already holds 2 instructions, its budget");
  EXPECT_EQ(p.instruction_count(), 2);
  options.max_instructions = 0;
  ExpectError(Program::Create(LoadPresetMachine("trn3").value(), 1, options).status(),
              StatusCode::kInvalidArgument, "max_instructions = 0");
}

}  // namespace
}  // namespace trnmx::emu
