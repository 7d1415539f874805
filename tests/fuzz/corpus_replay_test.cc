// Every file of the checked-in fuzz corpora (tests/fuzz/corpus/<harness>/)
// through its harness: the inputs that the fuzzers kept for new coverage, and
// every crash they found, stay regression tests in every build (the
// sanitizer build included). A failing input aborts the test with the
// harness's message; the test prints each file's name first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/fuzz_support.h"

namespace trnmx::fuzz {
namespace {

using Harness = int (*)(const std::uint8_t*, std::size_t);

void Replay(const char* dir, Harness harness) {
  const std::filesystem::path root = std::filesystem::path(TRNMX_FUZZ_CORPUS_DIR) / dir;
  ASSERT_TRUE(std::filesystem::is_directory(root)) << root << " is missing";
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty()) << root << " has no inputs";
  for (const std::filesystem::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                          std::istreambuf_iterator<char>());
    std::fprintf(stderr, "%s (%zu bytes)\n", file.filename().c_str(), bytes.size());
    EXPECT_EQ(harness(bytes.data(), bytes.size()), 0) << file;
  }
  std::printf("%s: %zu inputs replayed\n", dir, files.size());
}

#define TRNMX_FUZZ_REPLAY(Name, dir) \
  TEST(FuzzCorpus, Name) { Replay(dir, &Fuzz##Name); }
TRNMX_FUZZ_CORE_HARNESSES(TRNMX_FUZZ_REPLAY)
#ifdef TRNMX_FUZZ_HAVE_EMULATOR
TRNMX_FUZZ_EMULATOR_HARNESSES(TRNMX_FUZZ_REPLAY)
#endif
#undef TRNMX_FUZZ_REPLAY

}  // namespace
}  // namespace trnmx::fuzz
