// A shared library with the static trnmx inside (conan/test_package, fPIC=True).
#include <cstdint>
#include <span>

#include "trnmx/formats.h"

extern "C" std::uint32_t test_plugin_encode_e4m3(float x) {
  const trnmx::StatusOr<trnmx::Format> f = trnmx::ParseFormatName("e4m3");
  std::uint32_t code = 0xFFFFFFFFu;
  if (!f.ok() || !trnmx::EncodeScalars(*f, std::span<const float>(&x, 1),
                                       std::span<std::uint32_t>(&code, 1), {})
                      .ok()) {
    return 0xFFFFFFFFu;
  }
  return code;
}
