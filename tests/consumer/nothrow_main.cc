// Consumer test: an application compiled with -fno-exceptions (as many
// embedders are: Chromium, game engines, XNNPACK's own users) links trnmx and
// uses its public API. Built in-tree by tests/core/CMakeLists.txt with
// -fno-exceptions; run by ctest (consumer.nothrow) and by
// tests/core/status_test.cc, which also checks the abort path.
//
//   nothrow_consumer                 quantize, GEMM and StatusOr on the ok
//                                    paths; exits 0, or 1 naming a failed check
//   nothrow_consumer --access-error  reads the value of an error StatusOr:
//                                    must abort and print the status (status.h)
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#error "nothrow_main.cc must be compiled with -fno-exceptions"
#endif

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "trnmx/trnmx.h"  // every public core header, compiled without exceptions

namespace {

int g_failures = 0;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "nothrow_consumer: FAILED: %s\n", what);
    ++g_failures;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trnmx;
  if (argc > 1 && std::strcmp(argv[1], "--access-error") == 0) {
    StatusOr<Format> f = ParseFormatName("e9m9");
    // Not ok: without exceptions this prints the status and aborts.
    std::printf("unreachable: %d\n", static_cast<int>(f.value()));
    return 0;
  }

  StatusOr<Format> f = ParseFormatName("e4m3");
  Check(f.ok() && *f == Format::kFp8E4M3, "ParseFormatName(\"e4m3\")");
  StatusOr<Format> bad = ParseFormatName("e9m9");
  Check(!bad.ok() && bad.status().code() == StatusCode::kInvalidArgument,
        "ParseFormatName(\"e9m9\") is INVALID_ARGUMENT");

  // Quantize 4 x 64 values to MXFP8 and back: every value is a small integer,
  // exact in E4M3 with scale 2^0, so the round trip is exact.
  const std::size_t rows = 4, cols = 64;
  std::vector<float> x(rows * cols);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(static_cast<int>(i % 15) - 7);
  StatusOr<MxTensor> t =
      QuantizeMx(Fp32MatrixView{x.data(), rows, cols, cols}, MxFormat::kMxfp8E4M3);
  Check(t.ok(), "QuantizeMx");
  if (t.ok()) {
    std::vector<float> y(x.size());
    Check(DequantizeMx(t->view(), Fp32MatrixSpan{y.data(), rows, cols, cols}).ok(), "DequantizeMx");
    Check(y == x, "MXFP8 round trip of small integers is exact");
  }

  // A 2 x 3 x 2 FP32 GEMM with exact integer products, on a 2-thread pool.
  const float a[6] = {1, 2, 3, 4, 5, 6};
  const float b[6] = {1, 0, 0, 1, 1, 1};
  float c[4] = {};
  ThreadPoolExecutor pool(2);
  Check(Gemm(GemmOperand::Fp32(a, 2, 3, 3), GemmOperand::Fp32(b, 3, 2, 2),
             GemmOutput::Fp32(c, 2, 2, 2), {}, &pool)
            .ok(),
        "Gemm");
  Check(c[0] == 4 && c[1] == 5 && c[2] == 10 && c[3] == 11, "Gemm result");

  if (g_failures != 0) return 1;
  std::printf("nothrow_consumer: all checks passed\n");
  return 0;
}
