// trnmx-emu validate: every calibration row of trainium.md section 12 with
// the emulator's value, the published one and the error; trnmx-emu
// calibrate: the fit of the runtime overheads against A1 and E1 (validate.h).
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "trnmx/emu/validate.h"

namespace trnmx::emu::cli {
namespace {

nlohmann::json RowJson(const CalibrationRow& r) {
  return {{"id", r.id},
          {"quantity", r.quantity},
          {"configuration", r.configuration},
          {"unit", r.unit},
          {"model", r.model},
          {"published", r.published},
          {"error_pct", r.error_pct},
          {"source", r.source}};
}

int RunValidate(const std::string& mode_name, bool json) {
  StatusOr<ServeMode> mode = ParseServeMode(mode_name);
  if (!mode.ok()) {
    std::cerr << mode.status().ToString() << "\n";
    return 2;
  }
  StatusOr<std::vector<CalibrationRow>> rows = RunCalibration(*mode);
  if (!rows.ok()) {
    std::cerr << rows.status().ToString() << "\n";
    return 1;
  }
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (const CalibrationRow& r : *rows) j.push_back(RowJson(r));
    std::printf("%s\n",
                nlohmann::json{{"mode", ServeModeName(*mode)}, {"rows", j}}.dump(2).c_str());
    return 0;
  }
  std::printf("%s", CalibrationTable(*rows, *mode).c_str());
  return 0;
}

int RunCalibrate(bool json) {
  StatusOr<CalibrationFit> fit = Calibrate();
  if (!fit.ok()) {
    std::cerr << fit.status().ToString() << "\n";
    return 1;
  }
  if (json) {
    nlohmann::json params = nlohmann::json::array(), before = nlohmann::json::array(),
                   after = nlohmann::json::array();
    for (const FittedParameter& p : fit->parameters) {
      params.push_back({{"name", p.name},
                        {"path", "/system/runtime/" + p.name},
                        {"value", p.value},
                        {"unit", p.unit},
                        {"range", {p.range.lo, p.range.hi}}});
    }
    for (const CalibrationRow& r : fit->before) before.push_back(RowJson(r));
    for (const CalibrationRow& r : fit->after) after.push_back(RowJson(r));
    std::printf("%s\n", nlohmann::json{{"mode", "event"},
                                       {"in_sample", true},
                                       {"method", "coordinate descent, 21-point grids refined 8x"},
                                       {"parameters", params},
                                       {"before", before},
                                       {"after", after},
                                       {"objective_before", fit->objective_before},
                                       {"objective_after", fit->objective_after}}
                            .dump(2)
                            .c_str());
    return 0;
  }
  std::printf("%s", CalibrationFitTable(*fit).c_str());
  return 0;
}

}  // namespace

void AddValidateCommand(CLI::App& app, int& exit_code) {
  auto json = std::make_shared<bool>(false);
  auto mode = std::make_shared<std::string>("analytical");
  CLI::App* cmd = app.add_subcommand(
      "validate", "Every calibration row of trainium.md section 12: model, published, error %");
  cmd->add_option("--mode", *mode, "A1 and E1 timed analytical (default) or event");
  cmd->add_flag("--json", *json, "one JSON object instead of text");
  cmd->callback([mode, json, &exit_code]() { exit_code = RunValidate(*mode, *json); });

  auto cal_json = std::make_shared<bool>(false);
  CLI::App* cal = app.add_subcommand(
      "calibrate", "Fit the runtime overheads against trainium.md 12.1 A1 and E1 (event mode)");
  cal->add_flag("--json", *cal_json, "one JSON object instead of text");
  cal->callback([cal_json, &exit_code]() { exit_code = RunCalibrate(*cal_json); });
}

}  // namespace trnmx::emu::cli
