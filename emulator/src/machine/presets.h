// Machine presets compiled into the library (generated presets.cc embeds
// emulator/machines/*.json so that trnmx-emu needs no data directory): chips
// and systems, in the order emulator/CMakeLists.txt lists them.
#ifndef TRNMX_EMU_SRC_MACHINE_PRESETS_H_
#define TRNMX_EMU_SRC_MACHINE_PRESETS_H_

#include <span>
#include <string_view>

namespace trnmx::emu::internal {

struct PresetJson {
  std::string_view name;
  std::string_view json;
};

std::span<const PresetJson> Presets();        // chips
std::span<const PresetJson> SystemPresets();  // systems

}  // namespace trnmx::emu::internal

#endif  // TRNMX_EMU_SRC_MACHINE_PRESETS_H_
