// Machine descriptions: presets load, numbers carry tags, headline totals are
// consistent with the per-core model (trainium.md section 14), and malformed or
// inconsistent descriptions are rejected with the JSON path of the problem.
#include "trnmx/emu/machine.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace trnmx::emu {
namespace {

using Json = nlohmann::json;

Json PresetJson(const std::string& name) {
  StatusOr<std::string> text = PresetMachineJson(name);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return Json::parse(*text);
}

// Loads `j` and expects an INVALID_ARGUMENT error mentioning `path` and `what`.
void ExpectRejected(const Json& j, const std::string& path, const std::string& what) {
  StatusOr<Machine> m = ParseMachine(j.dump(), "test");
  ASSERT_FALSE(m.ok()) << "accepted a description that should fail at " << path;
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find(path + ":"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find(what), std::string::npos) << m.status().message();
}

// Every number of a machine file is range-checked: each one set to -1, and
// each one that must be positive set to 0, is rejected with its JSON path
// named (a check removed from the loader fails here; mutation testing found
// the HBM bandwidth's unguarded).
void ForEachNumber(const Json& j, const std::string& path,
                   const std::function<void(const std::string&)>& fn) {
  if (j.is_object()) {
    if (j.contains("value") && j["value"].is_number()) {
      fn(path);
      return;
    }
    for (auto it = j.begin(); it != j.end(); ++it)
      ForEachNumber(it.value(), path + "/" + it.key(), fn);
  }
}

TEST(MachineRangeChecks, EveryNumberRejectsNegativeAndPositiveOnesRejectZero) {
  // The fields that may be 0: costs and latencies that a machine may not have,
  // the reserved SBUF bytes, and the FP8 and MX matmul rates (0: no such
  // matmul, e.g. MX before NeuronCore-v4); every other number must be positive.
  const std::set<std::string> may_be_zero = {"mm_init_cycles",
                                             "throttle_ramp_ns",
                                             "throttle_window_ns",
                                             "min_ii_cycles",
                                             "quantize_mx_elems_per_cycle",
                                             "exp_elems_per_cycle",
                                             "dependent_overhead_cycles",
                                             "activation_table_load_ns",
                                             "start_cycles",
                                             "reserved_bytes_per_partition",
                                             "fixed_cost_ns",
                                             "dependency_start_ns",
                                             "row_overhead_bytes",
                                             "semaphore_latency_cycles",
                                             "macs_per_pe_cycle_fp8",
                                             "macs_per_pe_cycle_mx"};
  int checked = 0;
  for (const std::string& name : PresetMachineNames()) {
    const Json preset = PresetJson(name);
    ForEachNumber(preset, "", [&](const std::string& path) {
      const std::string key = path.substr(path.rfind('/') + 1);
      for (double bad : {-1.0, 0.0}) {
        if (bad == 0.0 && may_be_zero.count(key) != 0) continue;
        Json j = preset;
        j[Json::json_pointer(path + "/value")] = bad;
        StatusOr<Machine> m = ParseMachine(j.dump(), "test");
        ASSERT_FALSE(m.ok()) << name << ": " << path << " = " << bad << " accepted";
        EXPECT_NE(m.status().message().find(path), std::string::npos)
            << name << ": " << path << " = " << bad << ": " << m.status().message();
        ++checked;
      }
    });
  }
  EXPECT_GT(checked, 150);
}

TEST(MachinePresets, BothLoad) {
  ASSERT_EQ(PresetMachineNames(), (std::vector<std::string>{"trn2", "trn3"}));
  for (const std::string& name : PresetMachineNames()) {
    StatusOr<Machine> m = LoadPresetMachine(name);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(m->name, name);
    EXPECT_EQ(m->core_count(), 8);
    EXPECT_EQ(m->partitions(), 128);
    EXPECT_EQ(m->psum_bytes_per_partition(), 16384);  // 8 banks x 2 KiB (S7, S8, S9)
    EXPECT_GT(m->numbers.size(), 40u);
  }
}

TEST(MachinePresets, Trn3Figures) {
  Machine m = LoadPresetMachine("trn3").value();
  EXPECT_EQ(m.sbuf.bytes_per_partition.value, 256 * 1024);
  EXPECT_EQ(m.sbuf_usable_bytes_per_partition(), 240 * 1024);
  EXPECT_EQ(m.hbm.capacity_bytes.value, 144.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(m.tensor.clock_hz.value, 2.4e9);
  // 128 x 128 x 2 x 2.4 GHz = 78.6 TF BF16, x2 FP8, x4 MX, /4 FP32 (section 1.2).
  EXPECT_DOUBLE_EQ(CorePeakFlops(m, MatmulDtype::kBf16), 78.6432e12);
  EXPECT_DOUBLE_EQ(CorePeakFlops(m, MatmulDtype::kFp8), 2 * 78.6432e12);
  EXPECT_DOUBLE_EQ(CorePeakFlops(m, MatmulDtype::kMxfp8), 4 * 78.6432e12);
  EXPECT_DOUBLE_EQ(CorePeakFlops(m, MatmulDtype::kMxfp4), 4 * 78.6432e12);
  EXPECT_DOUBLE_EQ(CorePeakFlops(m, MatmulDtype::kFp32), 78.6432e12 / 4);
  EXPECT_EQ(MatmulMaxK(m, MatmulDtype::kMxfp8), 512);
  EXPECT_EQ(MatmulMaxK(m, MatmulDtype::kFp8), 256);
  EXPECT_EQ(MatmulMaxK(m, MatmulDtype::kBf16), 128);
  // Published 2,517 TF MXFP8 = 8 x 314.6 TF: ratio 1.00 (section 2).
  const double chip_mx = 8 * CorePeakFlops(m, MatmulDtype::kMxfp8) / 1e12;
  EXPECT_NEAR(m.published.dense_tflops.at(MatmulDtype::kMxfp8).value / chip_mx, 1.0004, 1e-3);
  // Tags are carried through.
  EXPECT_EQ(m.tensor.clock_hz.tag, SourceTag::kPublished);
  EXPECT_EQ(m.tensor.clock_hz.source, "S9");
  EXPECT_EQ(m.tensor.macs_per_pe_cycle_fp8.tag, SourceTag::kInferred);
  EXPECT_EQ(m.tensor.macs_per_pe_cycle_fp8.source, "#20");
}

TEST(MachinePresets, Trn2Figures) {
  Machine m = LoadPresetMachine("trn2").value();
  EXPECT_EQ(m.sbuf_usable_bytes_per_partition(), 212728);  // S31 library constant
  EXPECT_EQ(m.vector.clock_hz.value, 0.96e9);
  EXPECT_EQ(CorePeakFlops(m, MatmulDtype::kMxfp8), 0);  // no MX before NeuronCore-v4
  // Published 1,299 TF FP8 vs 8 x 157.3 = 1,258: ratio 1.03 (section 2).
  const double chip_fp8 = 8 * CorePeakFlops(m, MatmulDtype::kFp8) / 1e12;
  EXPECT_NEAR(m.published.dense_tflops.at(MatmulDtype::kFp8).value / chip_fp8, 1.0325, 1e-3);
  // 16 engines x 27.2 GB/s x 8 cores = 3.48 TB/s ~ published 3.5 TB/s.
  EXPECT_NEAR(8 * 16 * m.dma.engine_bandwidth_bytes_per_s.value / 1e12, 3.4816, 1e-9);
}

TEST(MachinePresets, UnknownPresetNamesTheKnownOnes) {
  StatusOr<Machine> m = LoadMachine("trn9");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("trn2, trn3"), std::string::npos);
}

TEST(MachineLoader, RejectsBadJsonSyntax) {
  StatusOr<Machine> m = ParseMachine("{\"schema\": ", "test");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("JSON parse error"), std::string::npos);
}

TEST(MachineLoader, RejectsMissingField) {
  Json j = PresetJson("trn3");
  j["core"]["tensor"].erase("clock_hz");
  ExpectRejected(j, "/core/tensor/clock_hz", "missing");
}

TEST(MachineLoader, RejectsUnknownKey) {
  Json j = PresetJson("trn3");
  j["core"]["vector"]["clock_mhz"] = j["core"]["vector"]["clock_hz"];
  ExpectRejected(j, "/core/vector/clock_mhz", "unknown key");
}

TEST(MachineLoader, RejectsBareNumberWithoutSource) {
  Json j = PresetJson("trn3");
  j["core"]["psum"]["banks"] = 8;
  ExpectRejected(j, "/core/psum/banks", "must be an object");
}

TEST(MachineLoader, RejectsBadTag) {
  Json j = PresetJson("trn3");
  j["core"]["dma"]["engines"]["tag"] = "maybe";
  ExpectRejected(j, "/core/dma/engines/tag", "\"P\", \"P3\" or \"I\"");
}

TEST(MachineLoader, RejectsMissingSource) {
  Json j = PresetJson("trn3");
  j["chip"]["hbm"]["stacks"].erase("source");
  ExpectRejected(j, "/chip/hbm/stacks/source", "missing");
}

TEST(MachineLoader, RejectsNonPositiveClock) {
  Json j = PresetJson("trn3");
  j["core"]["tensor"]["clock_hz"]["value"] = -1;
  ExpectRejected(j, "/core/tensor/clock_hz/value", "must be an integer");
}

TEST(MachineLoader, RejectsNonIntegerCount) {
  Json j = PresetJson("trn2");
  j["core"]["psum"]["banks"]["value"] = 7.5;
  ExpectRejected(j, "/core/psum/banks/value", "must be an integer");
}

TEST(MachineLoader, RejectsStringValue) {
  Json j = PresetJson("trn3");
  j["core"]["sbuf"]["partitions"]["value"] = "128";
  ExpectRejected(j, "/core/sbuf/partitions/value", "must be a number");
}

TEST(MachineLoader, RejectsWrongSchema) {
  Json j = PresetJson("trn3");
  j["schema"] = "trnmx-machine/3";
  ExpectRejected(j, "/schema", "\"trnmx-machine/2\" (or \"trnmx-machine/1\" for a chip");
}

TEST(MachineLoader, ReadsChipsOfSchemaVersion1) {
  Json j = PresetJson("trn2");
  ASSERT_EQ(j["schema"], "trnmx-machine/2");
  j["schema"] = "trnmx-machine/1";
  StatusOr<Machine> m = ParseMachine(j.dump(), "test");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->name, "trn2");
}

// NeuronCore-v2 overheads reused on v3/v4 are defaults of conflict #8, not
// published v3/v4 figures.
TEST(MachinePresets, ReusedNeuronCoreV2OverheadsAreInferred) {
  for (const std::string& name : PresetMachineNames()) {
    const Machine m = LoadPresetMachine(name).value();
    for (const Sourced* s :
         {&m.tensor.mm_init_cycles, &m.tensor.load_stationary_speedup, &m.vector.min_ii_cycles,
          &m.scalar.min_ii_cycles, &m.gpsimd.start_cycles}) {
      EXPECT_EQ(s->tag, SourceTag::kInferred) << name << ": " << s->note;
      EXPECT_EQ(s->source, "#8") << name << ": " << s->note;
    }
    // 368/435 = 0.85 (Trn2), 528/614 = 0.86 (Trn3): trainium.md #7.
    EXPECT_EQ(m.hbm.sustained_fraction.value, 0.85);
  }
}

TEST(MachineLoader, RejectsPartitionMismatch) {
  Json j = PresetJson("trn3");
  j["core"]["psum"]["partitions"]["value"] = 64;
  ExpectRejected(j, "/core/psum/partitions/value", "must equal /core/sbuf/partitions");
}

TEST(MachineLoader, RejectsDmaEnginesNotCoveringPartitions) {
  Json j = PresetJson("trn3");
  j["core"]["dma"]["engines"]["value"] = 12;
  ExpectRejected(j, "/core/dma/partitions_per_engine/value", "must equal /core/sbuf/partitions");
}

TEST(MachineLoader, RejectsReservedLargerThanSbuf) {
  Json j = PresetJson("trn3");
  j["core"]["sbuf"]["reserved_bytes_per_partition"]["value"] = 300000;
  ExpectRejected(j, "/core/sbuf/reserved_bytes_per_partition/value", "must be < bytes_per");
}

TEST(MachineLoader, RejectsSbufTotalMismatch) {
  Json j = PresetJson("trn3");
  j["core"]["sbuf"]["bytes_per_partition"]["value"] = 229376;  // Trn2's 224 KiB
  ExpectRejected(j, "/chip/published/sbuf_bytes/value", "cores x partitions");
}

TEST(MachineLoader, RejectsPublishedFlopsFarFromModel) {
  // A clock typo (0.24 GHz) leaves the published 2,517 TF 10x above the model.
  Json j = PresetJson("trn3");
  j["core"]["tensor"]["clock_hz"]["value"] = 2.4e8;
  ExpectRejected(j, "/chip/published/dense_tflops/bf16/value", "published/modelled");
}

TEST(MachineLoader, RejectsPublishedDtypeTheModelCannotRun) {
  Json j = PresetJson("trn2");
  j["chip"]["published"]["dense_tflops"]["mxfp8"] = {
      {"value", 2517}, {"tag", "P"}, {"source", "test"}};
  ExpectRejected(j, "/chip/published/dense_tflops/mxfp8/value", "no such matmul");
}

TEST(MachineLoader, RejectsUnknownPublishedDtype) {
  Json j = PresetJson("trn3");
  j["chip"]["published"]["dense_tflops"]["int8"] = {{"value", 1}, {"tag", "P"}, {"source", "x"}};
  ExpectRejected(j, "/chip/published/dense_tflops/int8", "unknown dtype");
}

TEST(MachineLoader, RejectsDmaTotalFarFromPublished) {
  Json j = PresetJson("trn3");
  j["core"]["dma"]["engine_bandwidth_bytes_per_s"]["value"] = 27.2e9;
  ExpectRejected(j, "/chip/published/dma_bandwidth_bytes_per_s/value", "within 5 %");
}

TEST(MachineLoader, RejectsStacksNotDividingCores) {
  Json j = PresetJson("trn3");
  j["chip"]["hbm"]["stacks"]["value"] = 3;
  ExpectRejected(j, "/chip/hbm/stacks/value", "must divide /chip/cores");
}

TEST(MachineLoader, RejectsFractionOutOfRange) {
  Json j = PresetJson("trn3");
  j["chip"]["hbm"]["sustained_fraction"]["value"] = 1.5;
  ExpectRejected(j, "/chip/hbm/sustained_fraction/value", "(0, 1]");
}

TEST(MachineLoader, RejectsMovingFreeBeyondPsum) {
  Json j = PresetJson("trn3");
  j["core"]["tensor"]["max_moving_free"]["value"] = 8192;
  ExpectRejected(j, "/core/tensor/max_moving_free/value", "all banks");
}

TEST(MachineLoader, FileRoundTripAndMissingFile) {
  const std::string path = ::testing::TempDir() + "/trnmx_emu_machine_test.json";
  {
    std::ofstream out(path);
    out << PresetMachineJson("trn3").value();
  }
  StatusOr<Machine> loaded = LoadMachine(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->name, "trn3");
  StatusOr<Machine> missing = LoadMachineFile("/nonexistent/trn3.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/trn3.json"), std::string::npos);
}

}  // namespace
}  // namespace trnmx::emu
