// libFuzzer's entry point for one harness, chosen at compile time with
// -DTRNMX_FUZZ_HARNESS=<Name> (tests/fuzz/CMakeLists.txt builds one
// executable per harness when TRNMX_BUILD_FUZZERS is on).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_support.h"

#ifndef TRNMX_FUZZ_HARNESS
#error "TRNMX_FUZZ_HARNESS must name a harness of fuzz_support.h, e.g. Npy"
#endif
#define TRNMX_FUZZ_CONCAT(a, b) a##b
#define TRNMX_FUZZ_FUNCTION(name) TRNMX_FUZZ_CONCAT(Fuzz, name)

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return trnmx::fuzz::TRNMX_FUZZ_FUNCTION(TRNMX_FUZZ_HARNESS)(data, size);
}
