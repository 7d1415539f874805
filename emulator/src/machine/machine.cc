// Machine-description loader: nlohmann-json at the edge, then typed structs.
#include "trnmx/emu/machine.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "machine/json_reader.h"
#include "machine/presets.h"

namespace trnmx::emu {
namespace {

using internal::FormatNumber;
using internal::Fraction;
using internal::Int;
using internal::Json;
using internal::LoadError;
using internal::NonNeg;
using internal::ObjectReader;
using internal::Pos;
using internal::RequireInteger;
using internal::RequirePositive;

constexpr double kMaxClockHz = 1e11;  // 100 GHz: anything above is a unit error.
constexpr double kBig = internal::kBigInteger;

Sourced Clock(ObjectReader& r, const char* key) {
  Sourced s = r.Number(key);
  RequireInteger(r.Child(key), s, 1e6, kMaxClockHz);
  return s;
}

void ReadTensor(ObjectReader r, TensorEngineSpec& t) {
  t.clock_hz = Clock(r, "clock_hz");
  t.pe_rows = Int(r, "pe_rows", 1, 4096);
  t.pe_cols = Int(r, "pe_cols", 1, 4096);
  t.macs_per_pe_cycle_bf16 = Int(r, "macs_per_pe_cycle_bf16", 1, 16);
  t.macs_per_pe_cycle_fp8 = Int(r, "macs_per_pe_cycle_fp8", 0, 16);
  t.macs_per_pe_cycle_mx = Int(r, "macs_per_pe_cycle_mx", 0, 16);
  t.fp32_cycle_multiplier = Int(r, "fp32_cycle_multiplier", 1, 64);
  t.mm_init_cycles = Int(r, "mm_init_cycles", 0, 1 << 20);
  t.load_stationary_speedup = Int(r, "load_stationary_speedup", 1, 64);
  t.max_moving_free = Int(r, "max_moving_free", 1, 1 << 20);
  t.throttle_start_fraction = Fraction(r, "throttle_start_fraction");
  t.throttle_ramp_ns = NonNeg(r, "throttle_ramp_ns");
  RequireInteger(r.Child("throttle_ramp_ns"), t.throttle_ramp_ns, 0, 1e9);
  t.throttle_window_ns = NonNeg(r, "throttle_window_ns");
  RequireInteger(r.Child("throttle_window_ns"), t.throttle_window_ns, 0, 1e9);
  r.Finish();
}

void ReadVector(ObjectReader r, VectorEngineSpec& v) {
  v.clock_hz = Clock(r, "clock_hz");
  v.min_ii_cycles = Int(r, "min_ii_cycles", 0, 1 << 20);
  v.perf_mode_max = Int(r, "perf_mode_max", 1, 64);
  v.quantize_mx_elems_per_cycle = Int(r, "quantize_mx_elems_per_cycle", 0, 64);
  v.exp_elems_per_cycle = Int(r, "exp_elems_per_cycle", 0, 64);
  v.dependent_overhead_cycles = Int(r, "dependent_overhead_cycles", 0, 1 << 20);
  r.Finish();
}

void ReadScalar(ObjectReader r, ScalarEngineSpec& s) {
  s.clock_hz = Clock(r, "clock_hz");
  s.min_ii_cycles = Int(r, "min_ii_cycles", 0, 1 << 20);
  s.bf16_copy_speedup = Int(r, "bf16_copy_speedup", 1, 64);
  s.dependent_overhead_cycles = Int(r, "dependent_overhead_cycles", 0, 1 << 20);
  s.activation_table_load_ns = NonNeg(r, "activation_table_load_ns");
  RequireInteger(r.Child("activation_table_load_ns"), s.activation_table_load_ns, 0, 1e9);
  r.Finish();
}

void ReadGpSimd(ObjectReader r, GpSimdEngineSpec& g) {
  g.clock_hz = Clock(r, "clock_hz");
  g.start_cycles = Int(r, "start_cycles", 0, 1 << 20);
  r.Finish();
}

void ReadSbuf(ObjectReader r, SbufSpec& s) {
  s.partitions = Int(r, "partitions", 1, 1024);
  s.bytes_per_partition = Int(r, "bytes_per_partition", 1, 1 << 30);
  s.reserved_bytes_per_partition = Int(r, "reserved_bytes_per_partition", 0, 1 << 30);
  s.alignment_bytes = Int(r, "alignment_bytes", 1, 1 << 20);
  double a = s.alignment_bytes.value;
  if (std::fmod(a, 1.0) != 0 || (static_cast<int64_t>(a) & (static_cast<int64_t>(a) - 1)) != 0) {
    throw LoadError{r.Child("alignment_bytes") + "/value",
                    "must be a power of two (got " + FormatNumber(a) + ")"};
  }
  if (s.reserved_bytes_per_partition.value >= s.bytes_per_partition.value) {
    throw LoadError{r.Child("reserved_bytes_per_partition") + "/value",
                    "must be < bytes_per_partition (" + FormatNumber(s.bytes_per_partition.value) +
                        ")"};
  }
  r.Finish();
}

void ReadPsum(ObjectReader r, PsumSpec& p) {
  p.partitions = Int(r, "partitions", 1, 1024);
  p.banks = Int(r, "banks", 1, 64);
  p.bank_bytes_per_partition = Int(r, "bank_bytes_per_partition", 4, 1 << 20);
  r.Finish();
}

void ReadDma(ObjectReader r, DmaSpec& d) {
  d.engines = Int(r, "engines", 1, 1024);
  d.queues_per_engine = Int(r, "queues_per_engine", 1, 1024);
  d.partitions_per_engine = Int(r, "partitions_per_engine", 1, 1024);
  d.engine_bandwidth_bytes_per_s = Pos(r, "engine_bandwidth_bytes_per_s");
  d.fixed_cost_ns = NonNeg(r, "fixed_cost_ns");
  d.dependency_start_ns = NonNeg(r, "dependency_start_ns");
  d.efficiency_knee_bytes_per_partition = Pos(r, "efficiency_knee_bytes_per_partition");
  d.row_overhead_bytes = NonNeg(r, "row_overhead_bytes");
  r.Finish();
}

void ReadSync(ObjectReader r, SyncSpec& s) {
  s.semaphores = Int(r, "semaphores", 1, 65536);
  s.semaphore_latency_cycles = Int(r, "semaphore_latency_cycles", 0, 1 << 20);
  s.cc_cores = Int(r, "cc_cores", 1, 64);
  r.Finish();
}

void ReadHbm(ObjectReader r, HbmSpec& h) {
  h.capacity_bytes = Int(r, "capacity_bytes", 1, kBig);
  h.bandwidth_bytes_per_s = Pos(r, "bandwidth_bytes_per_s");
  h.stacks = Int(r, "stacks", 1, 64);
  h.sustained_fraction = Fraction(r, "sustained_fraction");
  r.Finish();
}

void ReadPublished(ObjectReader r, PublishedSpec& p) {
  ObjectReader t = r.Object("dense_tflops");
  for (auto it = t.json().begin(); it != t.json().end(); ++it) {
    std::string path = t.Child(it.key());
    StatusOr<MatmulDtype> dt = ParseMatmulDtype(it.key());
    if (!dt.ok()) throw LoadError{path, "unknown dtype (bf16, fp8, mxfp8, mxfp4, fp32)"};
    Sourced s = t.ParseSourced(it.value(), path);
    RequirePositive(path, s);
    p.dense_tflops[*dt] = s;
    t.Optional(it.key().c_str());  // mark as seen
  }
  t.Finish();
  p.dma_bandwidth_bytes_per_s = Pos(r, "dma_bandwidth_bytes_per_s");
  p.sbuf_bytes = Int(r, "sbuf_bytes", 1, kBig);
  r.Finish();
}

// Cross-field consistency (trainium.md section 14: "headline totals are a
// consistency check, not an input").
void CheckConsistency(const Machine& m) {
  auto fail = [](const std::string& path, const std::string& msg) {
    throw LoadError{path + "/value", msg};
  };
  const double partitions = m.sbuf.partitions.value;
  if (m.psum.partitions.value != partitions) {
    fail("/core/psum/partitions", "must equal /core/sbuf/partitions (" +
                                      FormatNumber(partitions) + ")");
  }
  if (m.tensor.pe_rows.value != partitions) {
    fail("/core/tensor/pe_rows",
         "must equal /core/sbuf/partitions (" + FormatNumber(partitions) + ")");
  }
  if (m.dma.engines.value * m.dma.partitions_per_engine.value != partitions) {
    fail("/core/dma/partitions_per_engine",
         "engines x partitions_per_engine = " +
             FormatNumber(m.dma.engines.value * m.dma.partitions_per_engine.value) +
             " must equal /core/sbuf/partitions (" + FormatNumber(partitions) + ")");
  }
  const double mx = m.tensor.macs_per_pe_cycle_mx.value;
  if (mx != 0 && mx < m.tensor.macs_per_pe_cycle_fp8.value) {
    fail("/core/tensor/macs_per_pe_cycle_mx", "must be 0 (no MX) or >= macs_per_pe_cycle_fp8");
  }
  const double bank_fp32 = m.psum.bank_bytes_per_partition.value / 4;
  if (m.tensor.max_moving_free.value < bank_fp32 ||
      m.tensor.max_moving_free.value > bank_fp32 * m.psum.banks.value) {
    fail("/core/tensor/max_moving_free",
         "must lie between one PSUM bank (" + FormatNumber(bank_fp32) + " FP32) and all banks (" +
             FormatNumber(bank_fp32 * m.psum.banks.value) + ")");
  }
  if (std::fmod(m.cores.value, m.hbm.stacks.value) != 0) {
    fail("/chip/hbm/stacks",
         "must divide /chip/cores (" + FormatNumber(m.cores.value) + "): cores share stacks evenly");
  }
  // Published SBUF total = cores x partitions x bytes per partition, exactly.
  const double sbuf_total = m.cores.value * partitions * m.sbuf.bytes_per_partition.value;
  if (m.published.sbuf_bytes.value != sbuf_total) {
    fail("/chip/published/sbuf_bytes",
         "does not match cores x partitions x bytes_per_partition = " + FormatNumber(sbuf_total));
  }
  // Published chip DMA bandwidth ~ cores x engines x per-engine bandwidth
  // (3.48 vs 3.5 TB/s on Trn2, 4.92 vs 4.9 on Trn3): within 5 %.
  const double dma_total =
      m.cores.value * m.dma.engines.value * m.dma.engine_bandwidth_bytes_per_s.value;
  const double dma_ratio = m.published.dma_bandwidth_bytes_per_s.value / dma_total;
  if (dma_ratio < 0.95 || dma_ratio > 1.05) {
    fail("/chip/published/dma_bandwidth_bytes_per_s",
         "is " + FormatNumber(dma_ratio) + "x of cores x engines x engine_bandwidth (" +
             FormatNumber(dma_total) + " B/s); expected within 5 %");
  }
  // Published chip FLOPS / modelled TensorE FLOPS must lie in [1.00, 1.20]
  // (conflict #1: 1.00-1.16 on the real chips; a factor 2 would be a unit or
  // dtype error). Published dtypes the model cannot run are errors too.
  for (const auto& [dtype, s] : m.published.dense_tflops) {
    const std::string path = "/chip/published/dense_tflops/" + std::string(MatmulDtypeName(dtype));
    const double modelled = CorePeakFlops(m, dtype) * m.cores.value / 1e12;
    if (modelled == 0) fail(path, "published, but the TensorE has no such matmul (rate 0)");
    const double ratio = s.value / modelled;
    if (ratio < 0.995 || ratio > 1.2) {
      fail(path, "published/modelled = " + FormatNumber(ratio) + " (modelled " +
                     FormatNumber(modelled) + " TFLOP/s); expected 1.00-1.20 (conflict #1)");
    }
  }
}

}  // namespace

std::string_view SourceTagName(SourceTag tag) {
  switch (tag) {
    case SourceTag::kPublished: return "P";
    case SourceTag::kThirdParty: return "P3";
    case SourceTag::kInferred: return "I";
  }
  return "?";
}

std::string_view MatmulDtypeName(MatmulDtype dtype) {
  switch (dtype) {
    case MatmulDtype::kBf16: return "bf16";
    case MatmulDtype::kFp8: return "fp8";
    case MatmulDtype::kMxfp8: return "mxfp8";
    case MatmulDtype::kMxfp4: return "mxfp4";
    case MatmulDtype::kFp32: return "fp32";
  }
  return "?";
}

StatusOr<MatmulDtype> ParseMatmulDtype(std::string_view name) {
  for (MatmulDtype d : kAllMatmulDtypes) {
    if (MatmulDtypeName(d) == name) return d;
  }
  return InvalidArgumentError("unknown matmul dtype '" + std::string(name) +
                              "' (bf16, fp8, mxfp8, mxfp4, fp32)");
}

double MacsPerPeCycle(const Machine& m, MatmulDtype dtype) {
  switch (dtype) {
    case MatmulDtype::kBf16: return m.tensor.macs_per_pe_cycle_bf16.value;
    case MatmulDtype::kFp8: return m.tensor.macs_per_pe_cycle_fp8.value;
    case MatmulDtype::kMxfp8:
    case MatmulDtype::kMxfp4: return m.tensor.macs_per_pe_cycle_mx.value;
    case MatmulDtype::kFp32:
      return m.tensor.macs_per_pe_cycle_bf16.value / m.tensor.fp32_cycle_multiplier.value;
  }
  return 0;
}

double CorePeakFlops(const Machine& m, MatmulDtype dtype) {
  return m.tensor.pe_rows.value * m.tensor.pe_cols.value * 2.0 * m.tensor.clock_hz.value *
         MacsPerPeCycle(m, dtype);
}

int MatmulMaxK(const Machine& m, MatmulDtype dtype) {
  const int rows = static_cast<int>(m.tensor.pe_rows.value);
  if (dtype == MatmulDtype::kFp32) return rows;
  return rows * static_cast<int>(MacsPerPeCycle(m, dtype));
}

StatusOr<Machine> ParseMachine(std::string_view json_text, std::string_view origin) {
  const std::string prefix = "machine description (" + std::string(origin) + "): ";
  StatusOr<Json> parsed = internal::ParseJsonText(json_text, prefix);
  if (!parsed.ok()) return parsed.status();
  const Json& j = *parsed;
  Machine m;
  try {
    ObjectReader root(j, "", &m.numbers);
    std::string schema = root.String("schema");
    if (schema != kMachineSchema && schema != kChipSchemaV1) {
      throw LoadError{"/schema", "must be \"" + std::string(kMachineSchema) + "\" (or \"" +
                                     std::string(kChipSchemaV1) + "\" for a chip; got \"" +
                                     schema + "\")"};
    }
    if (j.contains("system")) {
      throw LoadError{"/system", "this is a system description, not a chip: load it with "
                                 "LoadSystem (trnmx-emu --system)"};
    }
    m.name = root.String("name");
    m.description = root.String("description");
    m.generation = root.String("generation");
    m.core_name = root.String("core_name");
    {
      ObjectReader chip = root.Object("chip");
      m.cores = Int(chip, "cores", 1, 1024);
      ReadHbm(chip.Object("hbm"), m.hbm);
      ReadPublished(chip.Object("published"), m.published);
      if (const Json* power = chip.Optional("power_watts")) {
        const std::string path = chip.Child("power_watts");
        m.power_watts = chip.ParseSourced(*power, path);
        RequirePositive(path, *m.power_watts);
      }
      chip.Finish();
    }
    {
      ObjectReader core = root.Object("core");
      ReadTensor(core.Object("tensor"), m.tensor);
      ReadVector(core.Object("vector"), m.vector);
      ReadScalar(core.Object("scalar"), m.scalar);
      ReadGpSimd(core.Object("gpsimd"), m.gpsimd);
      ReadSbuf(core.Object("sbuf"), m.sbuf);
      ReadPsum(core.Object("psum"), m.psum);
      ReadDma(core.Object("dma"), m.dma);
      ReadSync(core.Object("sync"), m.sync);
      core.Finish();
    }
    root.Finish();
    CheckConsistency(m);
  } catch (const LoadError& e) {
    return InvalidArgumentError(prefix + e.path + ": " + e.message);
  }
  return m;
}

StatusOr<Machine> LoadMachineFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgumentError("cannot open machine description '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return ParseMachine(text.str(), path);
}

std::vector<std::string> PresetMachineNames() {
  std::vector<std::string> names;
  for (const auto& p : internal::Presets()) names.emplace_back(p.name);
  return names;
}

StatusOr<std::string> PresetMachineJson(std::string_view name) {
  for (const auto& p : internal::Presets()) {
    if (p.name == name) return std::string(p.json);
  }
  std::string known;
  for (const auto& p : internal::Presets()) known += (known.empty() ? "" : ", ") + std::string(p.name);
  return InvalidArgumentError("unknown machine preset '" + std::string(name) + "' (known: " + known +
                              ")");
}

StatusOr<Machine> LoadPresetMachine(std::string_view name) {
  StatusOr<std::string> json = PresetMachineJson(name);
  if (!json.ok()) return json.status();
  return ParseMachine(*json, "preset " + std::string(name));
}

StatusOr<Machine> LoadMachine(const std::string& name_or_path) {
  if (PresetMachineJson(name_or_path).ok()) return LoadPresetMachine(name_or_path);
  if (name_or_path.find('/') != std::string::npos ||
      name_or_path.find(".json") != std::string::npos) {
    return LoadMachineFile(name_or_path);
  }
  return PresetMachineJson(name_or_path).status();
}

}  // namespace trnmx::emu
