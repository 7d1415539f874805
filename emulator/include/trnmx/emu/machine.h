// Machine descriptions of Trainium chips for the trnmx emulator.
//
// A description is a JSON document (schema "trnmx-machine/2", see
// docs/emulator.md and emulator/machines/*.json); a chip document has the
// sections "chip" and "core", a system document (trnmx/emu/system.h) a
// "system" section that names its chip. Chip documents written for
// "trnmx-machine/1" (before systems existed) are read unchanged. Every number
// in a description is an object {"value", "unit", "tag", "source", "note"}:
// the tag says whether AWS published it (P), a third party did (P3), or trnmx
// inferred it (I), and the source names the key of
// ../shared/reference/trainium.md (S1-S39, T1-T10) or the conflict number
// (#1-#20) it comes from.
//
//   trnmx::StatusOr<trnmx::emu::Machine> m = trnmx::emu::LoadPresetMachine("trn3");
//   double peak = trnmx::emu::CorePeakFlops(*m, trnmx::emu::MatmulDtype::kMxfp8);
//
// The loader rejects malformed or inconsistent descriptions; the error
// message starts with the JSON pointer of the offending field, e.g.
// "/core/tensor/clock_hz/value: must be > 0 (got -1)".
#ifndef TRNMX_EMU_MACHINE_H_
#define TRNMX_EMU_MACHINE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trnmx/status.h"

namespace trnmx::emu {

// Schema of the documents written today, and the chip-only schema still read.
inline constexpr std::string_view kMachineSchema = "trnmx-machine/2";
inline constexpr std::string_view kChipSchemaV1 = "trnmx-machine/1";

// Provenance of a number (trainium.md, "Every number has a tag").
enum class SourceTag { kPublished, kThirdParty, kInferred };  // P, P3, I
std::string_view SourceTagName(SourceTag tag);                   // "P", "P3", "I"

// One number of a machine description with its provenance.
struct Sourced {
  double value = 0;
  std::string unit;
  SourceTag tag = SourceTag::kInferred;
  std::string source;  // e.g. "S9", "S7 S16", "#17"
  std::string note;
};

// Input types of a TensorE matmul. kFp8 is the non-MX double-row mode.
enum class MatmulDtype { kBf16, kFp8, kMxfp8, kMxfp4, kFp32 };
inline constexpr MatmulDtype kAllMatmulDtypes[] = {MatmulDtype::kBf16, MatmulDtype::kFp8,
                                                   MatmulDtype::kMxfp8, MatmulDtype::kMxfp4,
                                                   MatmulDtype::kFp32};
std::string_view MatmulDtypeName(MatmulDtype dtype);  // "bf16", "fp8", "mxfp8", ...
StatusOr<MatmulDtype> ParseMatmulDtype(std::string_view name);

struct TensorEngineSpec {
  Sourced clock_hz, pe_rows, pe_cols;
  Sourced macs_per_pe_cycle_bf16, macs_per_pe_cycle_fp8, macs_per_pe_cycle_mx;
  Sourced fp32_cycle_multiplier, mm_init_cycles, load_stationary_speedup, max_moving_free;
  Sourced throttle_start_fraction, throttle_ramp_ns, throttle_window_ns;
};
struct VectorEngineSpec {
  Sourced clock_hz, min_ii_cycles, perf_mode_max, quantize_mx_elems_per_cycle;
  // `exponential` (exp(x - max) with a fused row sum), elements per
  // partition per cycle; 0: the engine has none (before NeuronCore-v4).
  Sourced exp_elems_per_cycle;
  // Extra cycles of an instruction issued back to back after the one whose
  // result it reads, or of a tiny one (trainium.md section 6, S7).
  Sourced dependent_overhead_cycles;
};
struct ScalarEngineSpec {
  Sourced clock_hz, min_ii_cycles, bf16_copy_speedup;
  Sourced dependent_overhead_cycles;  // as VectorEngineSpec's
  // Loading another activation-function table set (trainium.md #9).
  Sourced activation_table_load_ns;
};
struct GpSimdEngineSpec {
  Sourced clock_hz, start_cycles;
};
struct SbufSpec {
  Sourced partitions, bytes_per_partition, reserved_bytes_per_partition, alignment_bytes;
};
struct PsumSpec {
  Sourced partitions, banks, bank_bytes_per_partition;
};
struct DmaSpec {
  Sourced engines, queues_per_engine, partitions_per_engine, engine_bandwidth_bytes_per_s;
  Sourced fixed_cost_ns, dependency_start_ns, efficiency_knee_bytes_per_partition,
      row_overhead_bytes;
};
struct SyncSpec {
  Sourced semaphores, semaphore_latency_cycles;
  Sourced cc_cores;  // collective sequencers (CC-cores) per physical core
};
struct HbmSpec {
  Sourced capacity_bytes, bandwidth_bytes_per_s, stacks, sustained_fraction;
};
struct PublishedSpec {
  std::map<MatmulDtype, Sourced> dense_tflops;  // chip totals; a dtype may be absent
  Sourced dma_bandwidth_bytes_per_s, sbuf_bytes;
};

struct Machine {
  std::string name, description, generation, core_name;
  Sourced cores;
  HbmSpec hbm;
  PublishedSpec published;
  // Power of one chip, for energy estimates (serve.h). AWS publishes none;
  // the presets carry trainium.md #18's third-party figures (Trn2 500 W,
  // Trn3 1,000 W, tag P3). Absent in a description that gives none.
  std::optional<Sourced> power_watts;
  TensorEngineSpec tensor;
  VectorEngineSpec vector;
  ScalarEngineSpec scalar;
  GpSimdEngineSpec gpsimd;
  SbufSpec sbuf;
  PsumSpec psum;
  DmaSpec dma;
  SyncSpec sync;

  // Every number with its JSON pointer ("/core/tensor/clock_hz"), in
  // document order: lets a report say how much rests on I or P3 values.
  std::vector<std::pair<std::string, Sourced>> numbers;

  // Integer views of the fields the simulator uses.
  int core_count() const { return static_cast<int>(cores.value); }
  int partitions() const { return static_cast<int>(sbuf.partitions.value); }
  int64_t sbuf_usable_bytes_per_partition() const {
    return static_cast<int64_t>(sbuf.bytes_per_partition.value) -
           static_cast<int64_t>(sbuf.reserved_bytes_per_partition.value);
  }
  int64_t psum_bytes_per_partition() const {
    return static_cast<int64_t>(psum.banks.value) *
           static_cast<int64_t>(psum.bank_bytes_per_partition.value);
  }
};

// Parses and validates a description. `origin` prefixes error messages
// (a file name or "preset trn3").
StatusOr<Machine> ParseMachine(std::string_view json_text, std::string_view origin = "machine");
StatusOr<Machine> LoadMachineFile(const std::string& path);

// Presets shipped inside the library (emulator/machines/*.json).
std::vector<std::string> PresetMachineNames();
StatusOr<std::string> PresetMachineJson(std::string_view name);
StatusOr<Machine> LoadPresetMachine(std::string_view name);
// A preset name, or else a path to a JSON file.
StatusOr<Machine> LoadMachine(const std::string& name_or_path);

// MACs per PE per TensorE cycle for `dtype` (FP32: 1 / fp32_cycle_multiplier);
// 0 when the machine has no such matmul (MX on Trainium2).
double MacsPerPeCycle(const Machine& m, MatmulDtype dtype);
// Modelled dense TensorE peak of one core: rows x cols x 2 x clock x MACs/PE/cycle
// (trainium.md section 14 and conflict #1: TensorE only).
double CorePeakFlops(const Machine& m, MatmulDtype dtype);
// Contraction size of one matmul instruction: 128 x MACs per PE per cycle
// (128 BF16/FP32, 256 FP8 double-row, 512 MX).
int MatmulMaxK(const Machine& m, MatmulDtype dtype);

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_MACHINE_H_
