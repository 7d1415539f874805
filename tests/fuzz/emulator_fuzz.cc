// Fuzz harnesses of the emulator's description files: machine (chip) and
// system JSON (emulator/machines/) and Hugging Face model configs
// (emulator/models/). Every malformed, out-of-range or inconsistent file
// must come back as an error naming what is wrong.
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "trnmx/emu/machine.h"
#include "trnmx/emu/model.h"
#include "trnmx/emu/system.h"

namespace trnmx::fuzz {

int FuzzMachineJson(const std::uint8_t* data, std::size_t size) {
  const StatusOr<emu::Machine> m = emu::ParseMachine(AsText(data, size), "fuzz");
  if (!m.ok()) TRNMX_FUZZ_CHECK(!m.status().message().empty());
  return 0;
}

// A system that parses must route between its chips: a route from a chip to
// another one names at least one link, and one to itself none.
int FuzzSystemJson(const std::uint8_t* data, std::size_t size) {
  const StatusOr<emu::System> s = emu::ParseSystem(AsText(data, size), "fuzz");
  if (!s.ok()) {
    TRNMX_FUZZ_CHECK(!s.status().message().empty());
    return 0;
  }
  const int chips = s->chip_count();
  TRNMX_FUZZ_CHECK(chips >= 1);
  TRNMX_FUZZ_CHECK(s->Route(0, 0).empty());
  if (chips > 1) {
    const std::vector<int> route = s->Route(0, chips - 1);
    TRNMX_FUZZ_CHECK(!route.empty());
    for (const int link : route) {
      TRNMX_FUZZ_CHECK(link >= 0 && static_cast<std::size_t>(link) < s->links.size());
    }
  }
  return 0;
}

int FuzzModelConfig(const std::uint8_t* data, std::size_t size) {
  const StatusOr<emu::Model> m = emu::ParseModelConfig(AsText(data, size), "fuzz");
  if (!m.ok()) {
    TRNMX_FUZZ_CHECK(!m.status().message().empty());
    return 0;
  }
  TRNMX_FUZZ_CHECK(m->kv_cache_elements_per_token() > 0);
  return 0;
}

}  // namespace trnmx::fuzz
