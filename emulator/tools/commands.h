// Subcommands of trnmx-emu. Each Add*Command registers options on `app` and a
// callback that writes its exit status (0 ok, 1 bad input) to `exit_code`.
#ifndef TRNMX_EMU_TOOLS_COMMANDS_H_
#define TRNMX_EMU_TOOLS_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "trnmx/emu/model.h"
#include "trnmx/emu/program.h"
#include "trnmx/emu/serve.h"
#include "trnmx/emu/simulator.h"
#include "trnmx/emu/system.h"
#include "trnmx/status.h"

namespace trnmx::emu::cli {

void AddMachinesCommand(CLI::App& app, int& exit_code);
void AddPeakCommand(CLI::App& app, int& exit_code);
void AddGemmCommand(CLI::App& app, int& exit_code);
void AddAttentionCommand(CLI::App& app, int& exit_code);
void AddSystemsCommand(CLI::App& app, int& exit_code);
void AddCollectiveCommand(CLI::App& app, int& exit_code);
void AddMoeCommand(CLI::App& app, int& exit_code);
void AddServeCommand(CLI::App& app, int& exit_code);
void AddTrainCommand(CLI::App& app, int& exit_code);
void AddValidateCommand(CLI::App& app, int& exit_code);

// peak --system NAME [--systems N]: system totals; returns the exit status.
int RunSystemPeak(const std::string& name, int systems);

// --skew "zipf:S" (S >= 0) -> S; "" -> 0 (even). INVALID_ARGUMENT otherwise.
StatusOr<double> ParseZipfSkew(const std::string& text);

// What `serve` and `train` load from their --system, --model and --weights
// (LoadSystem, LoadModel, ParseWeightFormats); the first error otherwise.
struct ModelRunInputs {
  System system;
  Model model;
  WeightFormats weights;
};
// One op of a serve or train estimate in --json: name, class, count, ms,
// flops, hbm_bytes, bound.
nlohmann::json OpCostJson(const OpCost& op);

StatusOr<ModelRunInputs> LoadModelRunInputs(const std::string& system, const std::string& model,
                                            const std::string& weights);

// Writes `text` to `path`; on failure prints "INVALID_ARGUMENT: OPTION PATH:
// cannot write the file" and returns false.
bool WriteFile(const std::string& option, const std::string& path, const std::string& text);

// --trace PATH of a simulated program: an SVG timeline (TimelineSvg) when
// PATH ends in ".svg", else Chrome trace JSON; prints a "trace" line.
bool WriteProgramTrace(const std::string& path, const Program& program, const SimResult& result);

}  // namespace trnmx::emu::cli

#endif  // TRNMX_EMU_TOOLS_COMMANDS_H_
