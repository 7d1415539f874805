// Consumer test of the optional xsimd inline layer: a program outside the
// trnmx tree that includes <trnmx/inline/all.h> from the installed (or
// embedded) package, brings its own xsimd, and checks a few known answers
// (shared/reference/formats.md sections 12.1, 12.3, 12.5) against the scalar
// codecs. Exits non-zero on the first mismatch with a message naming it.
//
//   consumer_inline
#include <bit>
#include <cstdint>
#include <cstdio>

#include "trnmx/formats/codec.h"
#include "trnmx/inline/all.h"

namespace {

int g_failures = 0;

void CheckCode(std::uint32_t got, std::uint32_t want, const char* what) {
  if (got != want) {
    std::fprintf(stderr, "consumer_inline: FAILED: %s: got 0x%X, want 0x%X\n", what, got, want);
    ++g_failures;
  }
}

}  // namespace

int main() {
  namespace tis = trnmx::inline_simd;
  using trnmx::Fp4E2M1Traits;
  using trnmx::Fp8E4M3Traits;

  // 37 values: whole batches at every width, then a scalar tail.
  float x[37];
  for (int i = 0; i < 37; ++i) x[i] = static_cast<float>(i - 18) * 29.5f;
  x[0] = 17.0f;                                // E4M3 0x58 (tie to even)
  x[1] = std::bit_cast<float>(0x3F818000u);    // BF16 3F82 (tie, odd LSB: up)
  x[2] = std::bit_cast<float>(0x7F800001u);    // sNaN: BF16 7FC0, E4M3 7F

  std::uint16_t bf16[37];
  tis::EncodeBf16(x, bf16, 37);
  std::uint8_t e4m3[37];
  tis::Encode<Fp8E4M3Traits>(x, e4m3, 37);
  for (int i = 0; i < 37; ++i) {
    CheckCode(bf16[i], trnmx::Fp32ToBf16Rne(x[i]).bits, "EncodeBf16 vs Fp32ToBf16Rne");
    CheckCode(e4m3[i], trnmx::EncodeWithFlags<Fp8E4M3Traits>(x[i]).code, "Encode<E4M3> vs scalar");
  }
  CheckCode(bf16[1], 0x3F82, "EncodeBf16(0x3F818000)");
  CheckCode(bf16[2], 0x7FC0, "EncodeBf16(sNaN)");
  CheckCode(e4m3[0], 0x58, "Encode<E4M3>(17)");

  const float block[11] = {7, 2.5f, 0.75f, 1.25f, 1.75f, 3.5f, 5, -0.75f, -0.1f, 6.5f, 1};
  std::uint8_t packed[16];
  const std::uint8_t scale = tis::QuantizeMxBlockE2M1Packed(block, 11, packed);
  CheckCode(scale, 0x7F, "MXFP4 scale");
  CheckCode(packed[0], 0x47, "MXFP4 codes 0, 1");   // 7, 4
  CheckCode(packed[3], 0xA6, "MXFP4 codes 6, 7");   // 6, A
  float back[11];
  tis::DequantizeMxBlockE2M1Packed(scale, packed, back, 11);
  CheckCode(std::bit_cast<std::uint32_t>(back[8]), 0x80000000u, "MXFP4 -0.1 dequantizes to -0");

  if (g_failures != 0) {
    std::fprintf(stderr, "consumer_inline: %d check(s) failed\n", g_failures);
    return 1;
  }
  std::printf("consumer_inline: trnmx inline layer OK (xsimd %d.%d, arch %s, %zu lanes)\n",
              XSIMD_VERSION_MAJOR, XSIMD_VERSION_MINOR, xsimd::default_arch::name(),
              xsimd::batch<float>::size);
  return 0;
}
