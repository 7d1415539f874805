// Bf16Mode::kNativeDot micro-kernels: VDPBF16PS (AVX512_BF16) intrinsics in
// functions compiled for that instruction set only; gemm.cc calls them only
// when CpuHasAvx512Bf16(). Highway 1.0.3 has no native BF16 dot.
#include "kernels/gemm/gemm_bf16_native.h"

#include <array>
#include <utility>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TRNMX_HAVE_NATIVE_BF16 1
#else
#define TRNMX_HAVE_NATIVE_BF16 0
#endif

namespace trnmx::internal {
namespace {

#if TRNMX_HAVE_NATIVE_BF16
#define TRNMX_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))

template <std::size_t kRows>
TRNMX_AVX512_BF16 void NativeKernel(std::size_t kpairs, const std::uint32_t* ap,
                                    const std::uint16_t* bp, std::size_t ldb, float* c,
                                    std::size_t ldc, bool load) {
  __m512 acc[kRows][2];
  for (std::size_t r = 0; r < kRows; ++r) {
    acc[r][0] = load ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
    acc[r][1] = load ? _mm512_loadu_ps(c + r * ldc + 16) : _mm512_setzero_ps();
  }
  for (std::size_t t = 0; t < kpairs; ++t) {
    _mm_prefetch(reinterpret_cast<const char*>(bp + 8 * ldb), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(bp + 8 * ldb + 32), _MM_HINT_T0);
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + 32);
    for (std::size_t r = 0; r < kRows; ++r) {
      const __m512bh a = (__m512bh)_mm512_set1_epi32(static_cast<int>(ap[r]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], a, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], a, b1);
    }
    ap += kNativeBf16Mr;
    bp += ldb;
  }
  for (std::size_t r = 0; r < kRows; ++r) {
    _mm512_storeu_ps(c + r * ldc, acc[r][0]);
    _mm512_storeu_ps(c + r * ldc + 16, acc[r][1]);
  }
}

template <std::size_t... kIs>
constexpr std::array<NativeBf16KernelFn, sizeof...(kIs)> MakeTable(std::index_sequence<kIs...>) {
  return {&NativeKernel<kIs + 1>...};
}

constexpr std::array<NativeBf16KernelFn, kNativeBf16Mr> kKernels =
    MakeTable(std::make_index_sequence<kNativeBf16Mr>());
#endif

}  // namespace

const NativeBf16KernelFn* NativeBf16Kernels() {
#if TRNMX_HAVE_NATIVE_BF16
  return kKernels.data();
#else
  return nullptr;
#endif
}

}  // namespace trnmx::internal
