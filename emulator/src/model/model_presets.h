// Built-in models compiled into the library (the generated model_presets.cc
// embeds emulator/models/*.json, Hugging Face config.json files with their
// sources), in the order emulator/CMakeLists.txt lists them.
#ifndef TRNMX_EMU_SRC_MODEL_MODEL_PRESETS_H_
#define TRNMX_EMU_SRC_MODEL_MODEL_PRESETS_H_

#include <span>

#include "machine/presets.h"

namespace trnmx::emu::internal {

std::span<const PresetJson> ModelPresets();

}  // namespace trnmx::emu::internal

#endif  // TRNMX_EMU_SRC_MODEL_MODEL_PRESETS_H_
