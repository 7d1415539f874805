// Conan test_package: the packaged headers and library work together.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "trnmx/executor.h"
#include "trnmx/formats.h"

#ifdef TRNMX_TEST_SHARED_PLUGIN
extern "C" std::uint32_t test_plugin_encode_e4m3(float x);
#endif

int main() {
  using namespace trnmx;
  int failures = 0;
  auto check = [&failures](bool ok, const char* what) {
    if (!ok) {
      std::fprintf(stderr, "test_package: FAILED: %s\n", what);
      ++failures;
    }
  };

  // Header-only codec.
  check(Encode<Fp8E4M3>(3.14159f).bits == 0x45, "Encode<Fp8E4M3>(3.14159) == 0x45");
  check(Decode(Fp8E4M3::FromBits(0x7E)) == 448.0f, "Decode(Fp8E4M3 0x7E) == 448");

  // Compiled registry.
  const StatusOr<Format> e5m2 = ParseFormatName("e5m2");
  check(e5m2.ok() && *e5m2 == Format::kFp8E5M2, "ParseFormatName(\"e5m2\")");
  if (e5m2.ok()) {
    const std::vector<float> xs = {1.0f, -61440.0f};
    std::vector<std::uint32_t> codes(xs.size());
    check(EncodeScalars(*e5m2, xs, codes, {}).ok(), "EncodeScalars(e5m2) is ok");
    check(codes[0] == 0x3C && codes[1] == 0xFB, "EncodeScalars(e5m2) == {0x3C, 0xFB}");
  }
  check(!ParseFormatName("e9m9").ok(), "ParseFormatName(\"e9m9\") fails");

  // Highway-dispatched bulk codec (hwy, a system library of the package).
  const std::vector<float> xs = {1.0f, -1.5f};
  std::vector<Bf16> bf(xs.size());
  check(BulkEncode(xs, bf).ok() && bf[0].bits == 0x3F80 && bf[1].bits == 0xBFC0,
        "BulkEncode(FP32 -> BF16) == {0x3F80, 0xBFC0}");

  // Compiled executor (pthreadpool, a system library of the package).
  ThreadPoolExecutor pool(2);
  std::vector<int> hits(16, 0);
  pool.ParallelFor(hits.size(), [&](std::size_t i) { hits[i] += 1; });
  bool all_once = true;
  for (const int h : hits) all_once = all_once && h == 1;
  check(all_once, "ThreadPoolExecutor(2) runs every task once");

#ifdef TRNMX_TEST_SHARED_PLUGIN
  // Registry inside a shared library that contains the static, -fPIC trnmx.
  check(test_plugin_encode_e4m3(3.14159f) == 0x45, "shared plugin: EncodeScalars(e4m3, 3.14159)");
#endif

  if (failures != 0) return 1;
  std::printf("trnmx test_package OK: e4m3(3.14159) = 0x45, %zu formats\n", AllFormats().size());
  return 0;
}
