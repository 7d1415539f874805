// Support for trnmx's fuzz harnesses (tests/fuzz/README.md): the list of
// harnesses, a reader that turns the fuzzer's bytes into choices, and the
// check that ends a run when an invariant fails.
//
// Each harness is a function `int Fuzz<Name>(const std::uint8_t* data,
// std::size_t size)` that feeds outside data to one parser or API. Bad input
// must come back as an error Status; a crash, a sanitizer report or a failed
// TRNMX_FUZZ_CHECK (a round trip that changes the data, two paths that
// disagree) is a finding. The same functions run under libFuzzer
// (libfuzzer_entry.cc, `tools/run.sh fuzz`) and over the checked-in corpora in
// the test suite (corpus_replay_test.cc).
#ifndef TRNMX_TESTS_FUZZ_FUZZ_SUPPORT_H_
#define TRNMX_TESTS_FUZZ_FUZZ_SUPPORT_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string_view>

// X(Name, corpus directory): the library's and the trnmx program's parsers.
#define TRNMX_FUZZ_CORE_HARNESSES(X) \
  X(Npy, "npy")                      \
  X(MxContainer, "mx_container")     \
  X(TextTokens, "text")              \
  X(GgmlMxfp4, "ggml_mxfp4")         \
  X(MxQuantize, "mx_quantize")
// The emulator's description files.
#define TRNMX_FUZZ_EMULATOR_HARNESSES(X) \
  X(MachineJson, "machine")              \
  X(SystemJson, "system")                \
  X(ModelConfig, "model_config")

namespace trnmx::fuzz {

#define TRNMX_FUZZ_DECLARE(Name, dir) int Fuzz##Name(const std::uint8_t* data, std::size_t size);
TRNMX_FUZZ_CORE_HARNESSES(TRNMX_FUZZ_DECLARE)
TRNMX_FUZZ_EMULATOR_HARNESSES(TRNMX_FUZZ_DECLARE)
#undef TRNMX_FUZZ_DECLARE

// Aborts with a message: the fuzzer saves the input, the replay test dies.
[[noreturn]] inline void Fail(const char* file, int line, const char* what) {
  std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", file, line, what);
  std::abort();
}
#define TRNMX_FUZZ_CHECK(cond) \
  ((cond) ? void(0) : ::trnmx::fuzz::Fail(__FILE__, __LINE__, #cond))

// Reads choices from the front of the input; past its end every choice is 0.
class ByteReader {
 public:
  ByteReader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  template <class T>
  T Take() {
    T value{};
    const std::size_t n = sizeof(T) < size_ ? sizeof(T) : size_;
    if (n != 0) std::memcpy(&value, data_, n);
    data_ += n;
    size_ -= n;
    return value;
  }
  // A value in [0, bound) (bound > 0).
  std::size_t TakeBelow(std::size_t bound) { return Take<std::uint16_t>() % bound; }
  // What is left, as bytes.
  std::span<const std::uint8_t> Rest() const { return {data_, size_}; }
  std::size_t remaining() const { return size_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
};

inline std::string_view AsText(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace trnmx::fuzz

#endif  // TRNMX_TESTS_FUZZ_FUZZ_SUPPORT_H_
