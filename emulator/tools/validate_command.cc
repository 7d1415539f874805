// trnmx-emu validate: every calibration row of trainium.md section 12 with
// the emulator's value, the published one and the error (validate.h).
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "commands.h"
#include "trnmx/emu/validate.h"

namespace trnmx::emu::cli {
namespace {

int RunValidate(bool json) {
  StatusOr<std::vector<CalibrationRow>> rows = RunCalibration();
  if (!rows.ok()) {
    std::cerr << rows.status().ToString() << "\n";
    return 1;
  }
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (const CalibrationRow& r : *rows) {
      j.push_back({{"id", r.id},
                   {"quantity", r.quantity},
                   {"configuration", r.configuration},
                   {"unit", r.unit},
                   {"model", r.model},
                   {"published", r.published},
                   {"error_pct", r.error_pct},
                   {"source", r.source}});
    }
    std::printf("%s\n", nlohmann::json{{"mode", "analytical"}, {"rows", j}}.dump(2).c_str());
    return 0;
  }
  std::printf("%s", CalibrationTable(*rows).c_str());
  return 0;
}

}  // namespace

void AddValidateCommand(CLI::App& app, int& exit_code) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "validate", "Every calibration row of trainium.md section 12: model, published, error %");
  cmd->add_flag("--json", *json, "one JSON object instead of text");
  cmd->callback([json, &exit_code]() { exit_code = RunValidate(*json); });
}

}  // namespace trnmx::emu::cli
