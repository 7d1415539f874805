// Consumer test: a program outside the trnmx tree that uses the installed
// package (find_package, pkg-config or Conan) the way an application would.
// It exercises the header-only codecs and the compiled registry, checks known
// answers (shared/reference/formats.md section 12.3) and exits non-zero on the
// first mismatch with a message naming it.
//
//   consumer [EXPECTED_VERSION]   e.g. consumer 0.1.0
#include <bit>
#include <cstdint>
#include <cstdio>
#include <string_view>
#include <vector>

#include "trnmx/executor.h"
#include "trnmx/formats.h"
#include "trnmx/gemm.h"
#include "trnmx/status.h"
#include "trnmx/version.h"

namespace {

int g_failures = 0;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "consumer: FAILED: %s\n", what);
    ++g_failures;
  }
}

void CheckCode(std::uint32_t got, std::uint32_t want, const char* what) {
  if (got != want) {
    std::fprintf(stderr, "consumer: FAILED: %s: got 0x%X, want 0x%X\n", what, got, want);
    ++g_failures;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trnmx;

  // Version macros come from the installed, generated version.h.
  if (argc > 1) {
    if (std::string_view(argv[1]) != TRNMX_VERSION_STRING) {
      std::fprintf(stderr, "consumer: FAILED: TRNMX_VERSION_STRING is \"%s\", expected \"%s\"\n",
                   TRNMX_VERSION_STRING, argv[1]);
      ++g_failures;
    }
  }

  // Header-only codecs, compile time and run time.
  static_assert(Encode<Fp8E4M3>(17.0f).bits == 0x58);
  volatile float pi = 3.14159f;  // Keep the run-time path honest.
  CheckCode(Encode<Fp8E4M3>(pi).bits, 0x45, "Encode<Fp8E4M3>(3.14159)");
  CheckCode(Encode<Fp8E4M3>(1000.0f).bits, 0x7E, "Encode<Fp8E4M3>(1000) saturates");
  EncodeOptions nonsat;
  nonsat.overflow = Overflow::kNonSat;
  CheckCode(Encode<Fp8E4M3>(1000.0f, nonsat).bits, 0x7F, "Encode<Fp8E4M3>(1000, nonsat) is NaN");
  CheckCode(Encode<Fp8E5M2>(-61440.0f).bits, 0xFB, "Encode<Fp8E5M2>(-61440)");
  CheckCode(Encode<Fp4E2M1>(-0.25f).bits, 0x8, "Encode<Fp4E2M1>(-0.25)");
  Check(Decode(Fp8E4M3::FromBits(0x7E)) == 448.0f, "Decode(Fp8E4M3 0x7E) == 448");
  Check(Decode(Fp8E4M3::FromBits(0x38)) == 1.0f, "Decode(Fp8E4M3 0x38) == 1");
  Check(std::bit_cast<std::uint32_t>(Decode(Encode<Bf16>(-1.5f))) == 0xBFC00000u,
        "Decode(Encode<Bf16>(-1.5)) == -1.5");

  // Compiled part of the library: registry and batch conversions.
  const StatusOr<Format> e2m1 = ParseFormatName("e2m1");
  Check(e2m1.ok(), "ParseFormatName(\"e2m1\") is ok");
  if (e2m1.ok()) {
    Check(*e2m1 == Format::kFp4E2M1, "ParseFormatName(\"e2m1\") == kFp4E2M1");
    const FormatInfo& info = GetFormatInfo(*e2m1);
    Check(info.max_normal == 6.0 && info.total_bits == 4, "GetFormatInfo(e2m1): max 6, 4 bits");

    const std::vector<float> xs = {1.0f, 5.0f, -6.0f, 100.0f, -0.25f};
    const std::vector<std::uint32_t> want = {0x2, 0x6, 0xF, 0x7, 0x8};
    std::vector<std::uint32_t> codes(xs.size(), 0xDEAD);
    const Status s = EncodeScalars(*e2m1, xs, codes, {});
    Check(s.ok(), "EncodeScalars(e2m1) is ok");
    for (std::size_t i = 0; i < xs.size(); ++i) CheckCode(codes[i], want[i], "EncodeScalars(e2m1)");

    std::vector<float> back(codes.size());
    Check(DecodeScalars(*e2m1, codes, back).ok(), "DecodeScalars(e2m1) is ok");
    Check(back[1] == 4.0f && back[2] == -6.0f, "DecodeScalars(e2m1) values");

    const std::vector<std::uint32_t> bad = {0x10};  // Wider than 4 bits.
    std::vector<float> one(1, -1.0f);
    const Status out_of_range = DecodeScalars(*e2m1, bad, one);
    Check(out_of_range.code() == StatusCode::kOutOfRange && one[0] == -1.0f,
          "DecodeScalars(e2m1, 0x10) is kOutOfRange and writes nothing");
  }
  const StatusOr<Format> unknown = ParseFormatName("e9m9");
  Check(!unknown.ok() && unknown.status().code() == StatusCode::kInvalidArgument,
        "ParseFormatName(\"e9m9\") is kInvalidArgument");
  Check(AllFormats().size() >= 10, "AllFormats() lists every format");

  // Highway-dispatched bulk codec (libhwy on the link line) and a GEMM.
  {
    const std::vector<float> xs = {1.0f, -1.5f, 3.0e38f, 1.0e-40f};
    std::vector<Bf16> bf(xs.size());
    Check(BulkEncode(xs, bf).ok(), "BulkEncode(FP32 -> BF16) is ok");
    CheckCode(bf[0].bits, 0x3F80, "BulkEncode BF16 1.0");
    CheckCode(bf[1].bits, 0xBFC0, "BulkEncode BF16 -1.5");
    CheckCode(bf[2].bits, 0x7F62, "BulkEncode BF16 3e38");
    const std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
    std::vector<float> c(4, -1.0f);
    SerialExecutor serial;
    Check(Gemm(GemmOperand::Fp32(a.data(), 2, 2, 2), GemmOperand::Fp32(b.data(), 2, 2, 2),
               GemmOutput::Fp32(c.data(), 2, 2, 2), {}, &serial)
              .ok(),
          "Gemm 2x2 is ok");
    Check(c == std::vector<float>({19, 22, 43, 50}), "Gemm 2x2 values");
  }

  // Compiled executor on pthreadpool: every task runs once.
  {
    ThreadPoolExecutor pool(2);
    std::vector<int> hits(64, 0);
    pool.ParallelFor(hits.size(), [&](std::size_t i) { hits[i] += 1; });
    bool all_once = pool.NumThreads() == 2;
    for (const int h : hits) all_once = all_once && h == 1;
    Check(all_once, "ThreadPoolExecutor(2) runs every task once");
  }

  if (g_failures != 0) {
    std::fprintf(stderr, "consumer: %d check(s) failed\n", g_failures);
    return 1;
  }
  std::printf("consumer: trnmx %s OK (%zu formats)\n", TRNMX_VERSION_STRING, AllFormats().size());
  return 0;
}
