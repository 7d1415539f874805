// Shared plumbing of trnmx's optional header-only xsimd layer (trnmx/inline/).
//
// The inline layer gives `xsimd::batch` codecs that an application compiles
// into its own hot loops, with the same bits as the scalar reference in
// trnmx/formats/ (shared/reference/formats.md). Every function is templated on
// `class Arch = xsimd::default_arch`: the architecture is fixed at compile
// time by the flags of the translation unit that includes the header
// (-march=x86-64-v4 gives xsimd::avx512bw, -march=x86-64-v3 gives
// xsimd::fma3<xsimd::avx2>, plain x86-64 gives xsimd::sse2). There is no
// run-time dispatch on purpose: xsimd 8.1's CPU detection misreports AVX on
// the project's Zen 5 machines, and an application that wants dispatch
// already has its own (compile one TU per -march and pick at run time).
// Because `Arch` is a template parameter, TUs built with different -march
// instantiate different batch functions. The scalar reference functions used
// for array tails are ordinary inline functions: as for any inline code, the
// linker keeps one copy of them per program.
//
// This file holds what the codec headers share:
//   Batch<T, Arch>          xsimd::batch<T, Arch>
//   Codes<Arch>             xsimd::batch<std::int32_t, Arch>: one code per lane
//                           in the low bits (BF16 16, FP8 8, FP4 4), rest zero
//   BitCast<To>(b)          reinterprets the lanes (no value conversion)
//   LoadCodes(p) / StoreCodes(c, p)
//                           widen / narrow between Codes and uint8_t or
//                           uint16_t arrays (any alignment)
//
// Codes are int32 lanes, not uint32, because xsimd 8.1 implements unsigned
// 32-bit compares on SSE2 with a scalar loop; every value compared here is a
// magnitude below 2^31, so signed compares are exact.
//
// Requirements: C++20, xsimd 8.x (Debian 12's 8.1 is what the tests use;
// xsimd 9 and later changed bitwise_cast and are rejected below). Nothing here
// depends on the MXCSR rounding mode; FTZ/DAZ matter only where a function
// says it multiplies in FP32 (MX scaling), exactly as for the scalar reference.
//
//   #include <trnmx/inline/common.h>
//   using B = trnmx::inline_simd::Batch<float>;        // xsimd::default_arch
//   static_assert(B::size >= 4);
#ifndef TRNMX_INLINE_COMMON_H_
#define TRNMX_INLINE_COMMON_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

// GCC 12.2's AVX-512 intrinsics trip -W(maybe-)uninitialized on their own
// _mm512_undefined_epi32() once inlined (GCC PR 105593, fixed in 12.3); the
// location is inside <immintrin.h>, so silence it for that include only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <xsimd/xsimd.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#if !defined(XSIMD_VERSION_MAJOR) || XSIMD_VERSION_MAJOR != 8
#error "trnmx/inline/ is written and tested against xsimd 8.x (Debian 12 ships 8.1)"
#endif

namespace trnmx::inline_simd {

template <class T, class Arch = xsimd::default_arch>
using Batch = xsimd::batch<T, Arch>;

template <class Arch = xsimd::default_arch>
using Codes = xsimd::batch<std::int32_t, Arch>;

// Same-size lane reinterpretation (float <-> int32).
template <class To, class From, class Arch>
inline Batch<To, Arch> BitCast(const Batch<From, Arch>& b) noexcept {
  static_assert(sizeof(To) == sizeof(From));
  return xsimd::bitwise_cast<Batch<To, Arch>>(b);
}

// Loads Codes<Arch>::size codes of type In (uint8_t or uint16_t), zero-extended.
// xsimd 8.1 has no integer widening or narrowing op: on SSE2 and AVX2 (and
// the architectures built on them) these use the ISA's zero-extensions and
// packs directly, elsewhere an aligned buffer (the fixed-length copy loops
// compile to vector code at -O2). Through the buffer, narrowing was half of
// an AVX2 FP8 encode's time.
template <class Arch, class In>
inline Codes<Arch> LoadCodes(const In* in) noexcept {
  static_assert(sizeof(In) <= 2);
#if XSIMD_WITH_AVX2
  if constexpr (std::is_base_of_v<xsimd::avx2, Arch>) {
    if constexpr (sizeof(In) == 1) {
      return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(in)));
    } else {
      return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in)));
    }
  }
#endif
#if XSIMD_WITH_SSE2
  if constexpr (std::is_base_of_v<xsimd::sse2, Arch>) {
    const __m128i zero = _mm_setzero_si128();
    if constexpr (sizeof(In) == 1) {
      std::int32_t four;
      std::memcpy(&four, in, 4);
      return _mm_unpacklo_epi16(_mm_unpacklo_epi8(_mm_cvtsi32_si128(four), zero), zero);
    } else {
      return _mm_unpacklo_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(in)), zero);
    }
  }
#endif
  alignas(Arch::alignment()) std::int32_t tmp[Codes<Arch>::size];
  for (std::size_t i = 0; i < Codes<Arch>::size; ++i) tmp[i] = in[i];
  return Codes<Arch>::load_aligned(tmp);
}

// Stores the low bits of every lane to Codes<Arch>::size elements of type Out
// (the lanes are masked to Out's width first, so the packs never saturate).
template <class Arch, class Out>
inline void StoreCodes(const Codes<Arch>& codes, Out* out) noexcept {
  static_assert(sizeof(Out) <= 2);
#if XSIMD_WITH_AVX2
  if constexpr (std::is_base_of_v<xsimd::avx2, Arch>) {
    const __m256i v = _mm256_and_si256(codes, _mm256_set1_epi32(sizeof(Out) == 1 ? 0xFF : 0xFFFF));
    const __m256i w = _mm256_packus_epi32(v, v);  // 16-bit lanes 0-3 0-3 | 4-7 4-7
    if constexpr (sizeof(Out) == 2) {
      const __m256i lanes = _mm256_permute4x64_epi64(w, 0x08);  // 64-bit quarters 0, 2
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(lanes));
    } else {
      const __m256i b = _mm256_packus_epi16(w, w);  // bytes 0-3 in each 128-bit half
      const __m128i lo = _mm256_castsi256_si128(b);
      const __m128i hi = _mm256_extracti128_si256(b, 1);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out), _mm_unpacklo_epi32(lo, hi));
    }
    return;
  }
#endif
#if XSIMD_WITH_SSE2
  if constexpr (std::is_base_of_v<xsimd::sse2, Arch>) {
    if constexpr (sizeof(Out) == 1) {
      const __m128i v = _mm_and_si128(codes, _mm_set1_epi32(0xFF));
      const __m128i w = _mm_packs_epi32(v, v);  // in [0, 255]: exact
      const std::int32_t four = _mm_cvtsi128_si32(_mm_packus_epi16(w, w));
      std::memcpy(out, &four, 4);
    } else {
      // SSE2 has only the signed 32 -> 16 pack: move [0, 65535] to
      // [-32768, 32767], pack exactly, move back.
      const __m128i v = _mm_sub_epi32(_mm_and_si128(codes, _mm_set1_epi32(0xFFFF)),
                                      _mm_set1_epi32(0x8000));
      const __m128i w = _mm_xor_si128(_mm_packs_epi32(v, v), _mm_set1_epi16(-0x8000));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out), w);
    }
    return;
  }
#endif
  alignas(Arch::alignment()) std::int32_t tmp[Codes<Arch>::size];
  codes.store_aligned(tmp);
  for (std::size_t i = 0; i < Codes<Arch>::size; ++i) out[i] = static_cast<Out>(tmp[i]);
}

}  // namespace trnmx::inline_simd

#endif  // TRNMX_INLINE_COMMON_H_
