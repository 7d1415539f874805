// Bf16Mode::kAmxTile micro-kernel: TDPBF16PS (AMX-BF16) intrinsics in
// functions compiled for that instruction set only; gemm.cc calls them only
// when AmxBf16Usable(). Highway 1.0.3 has no AMX.
#include "kernels/gemm/gemm_bf16_amx.h"

#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#define TRNMX_HAVE_AMX 1
#else
#define TRNMX_HAVE_AMX 0
#endif

namespace trnmx::internal {

#if TRNMX_HAVE_AMX
namespace {

#define TRNMX_AMX_TARGET __attribute__((target("amx-tile,amx-bf16,avx512f")))

// Tile registers: 0-3 the C tiles (rows 0-15 / 16-31 x columns 0-15 /
// 16-31), 4-5 the A tiles (rows 0-15 / 16-31), 6-7 the B tiles (columns
// 0-15 / 16-31). (GCC's tile intrinsics paste their register numbers into
// the assembly, so the calls below spell them as literals.)
enum : int { kC00 = 0, kC01 = 1, kC10 = 2, kC11 = 3, kA0 = 4, kA1 = 5, kB0 = 6, kB1 = 7 };

// LDTILECFG's 64-byte memory operand, palette 1.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};

// The pairs per step of the calling thread's current configuration (0: none).
// LDTILECFG zeroes every tile, so the configuration changes only between
// accumulations.
thread_local std::size_t configured_pairs = 0;

TRNMX_AMX_TARGET void Configure(std::size_t pairs) {
  if (configured_pairs == pairs) return;
  TileConfig cfg;
  for (int t = kC00; t <= kC11; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  for (int t = kA0; t <= kA1; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = static_cast<std::uint16_t>(4 * pairs);
  }
  for (int t = kB0; t <= kB1; ++t) {
    cfg.rows[t] = static_cast<std::uint8_t>(pairs);
    cfg.colsb[t] = 64;
  }
  _tile_loadconfig(&cfg);
  configured_pairs = pairs;
}

TRNMX_AMX_TARGET inline void ZeroC() {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
}

TRNMX_AMX_TARGET inline void LoadC(const float* c, std::size_t ldc_bytes) {
  _tile_loadd(0, c, ldc_bytes);
  _tile_loadd(1, c + 16, ldc_bytes);
  _tile_loadd(2, reinterpret_cast<const char*>(c) + 16 * ldc_bytes, ldc_bytes);
  _tile_loadd(3, reinterpret_cast<const char*>(c + 16) + 16 * ldc_bytes, ldc_bytes);
}

TRNMX_AMX_TARGET inline void StoreC(float* c, std::size_t ldc_bytes) {
  _tile_stored(0, c, ldc_bytes);
  _tile_stored(1, c + 16, ldc_bytes);
  _tile_stored(2, reinterpret_cast<char*>(c) + 16 * ldc_bytes, ldc_bytes);
  _tile_stored(3, reinterpret_cast<char*>(c + 16) + 16 * ldc_bytes, ldc_bytes);
}

// One step: 4 TDPBF16PS over the step's pairs (the configured count).
TRNMX_AMX_TARGET inline void Step(const std::uint32_t* a, std::size_t lda_bytes,
                                  const std::uint16_t* bp, std::size_t ldb_bytes) {
  _tile_loadd(4, a, lda_bytes);
  _tile_loadd(5, reinterpret_cast<const char*>(a) + 16 * lda_bytes, lda_bytes);
  _tile_loadd(6, bp, ldb_bytes);
  _tile_loadd(7, bp + 32, ldb_bytes);
  _tile_dpbf16ps(0, 4, 6);
  _tile_dpbf16ps(1, 4, 7);
  _tile_dpbf16ps(2, 5, 6);
  _tile_dpbf16ps(3, 5, 7);
}

}  // namespace

bool AmxBf16Usable() {
  static const bool usable = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
    const bool amx_bf16 = (edx >> 22) & 1u;
    const bool amx_tile = (edx >> 24) & 1u;
    if (!amx_bf16 || !amx_tile) return false;
    // The OS must enable XTILECFG and XTILEDATA (XCR0 bits 17, 18) and grant
    // this process the tile data state (Linux 5.16+).
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0 || ((ecx >> 27) & 1u) == 0) return false;
    unsigned xcr0_lo = 0, xcr0_hi = 0;
    __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0_lo & (3u << 17)) != (3u << 17)) return false;
    constexpr long kArchReqXcompPerm = 0x1023;
    constexpr long kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return usable;
}

TRNMX_AMX_TARGET void AmxBf16Kernel(std::size_t kpairs, const std::uint32_t* a, std::size_t lda,
                                    const std::uint16_t* bp, std::size_t ldb, float* c,
                                    std::size_t ldc, std::size_t rows, bool load) {
  constexpr std::size_t kStep = kAmxPairsPerStep;
  const std::size_t lda_bytes = lda * sizeof(std::uint32_t);
  const std::size_t ldb_bytes = ldb * sizeof(std::uint16_t);
  const std::size_t full = kpairs / kStep;
  const std::size_t tail = kpairs % kStep;
  // Rows past `rows` go through a 32 x 32 scratch (their results are dropped).
  alignas(64) float scratch[kAmxBf16Mr * 32];
  const bool direct = rows == kAmxBf16Mr;
  float* home = direct ? c : scratch;
  const std::size_t home_bytes = (direct ? ldc : 32) * sizeof(float);
  if (!direct && load) {
    std::memset(scratch, 0, sizeof(scratch));
    for (std::size_t r = 0; r < rows; ++r)
      std::memcpy(scratch + 32 * r, c + r * ldc, 32 * sizeof(float));
  }
  if (full > 0) {
    Configure(kStep);
    if (load) {
      LoadC(home, home_bytes);
    } else {
      ZeroC();
    }
    for (std::size_t s = 0; s < full; ++s) {
      // B streams from memory when it is prepacked (few rows of A): fetch the
      // step after next (16 pair rows of 128 bytes).
      const char* next = reinterpret_cast<const char*>(bp + (s + 2) * kStep * ldb);
      for (std::size_t line = 0; line < kStep * ldb_bytes; line += 64) {
        _mm_prefetch(next + line, _MM_HINT_T0);
      }
      Step(a + s * kStep, lda_bytes, bp + s * kStep * ldb, ldb_bytes);
    }
    StoreC(home, home_bytes);
    load = true;
  }
  if (tail > 0) {
    // A shorter last step: its own configuration (A columns and B rows), so
    // nothing past the K pairs is read.
    Configure(tail);
    if (load) {
      LoadC(home, home_bytes);
    } else {
      ZeroC();
    }
    Step(a + full * kStep, lda_bytes, bp + full * kStep * ldb, ldb_bytes);
    StoreC(home, home_bytes);
  }
  if (!direct) {
    for (std::size_t r = 0; r < rows; ++r)
      std::memcpy(c + r * ldc, scratch + 32 * r, 32 * sizeof(float));
  }
}

TRNMX_AMX_TARGET void AmxBf16Release() {
  if (configured_pairs != 0) {
    _tile_release();
    configured_pairs = 0;
  }
}

#undef TRNMX_AMX_TARGET
#else
bool AmxBf16Usable() { return false; }
// Never called: gemm.cc rejects Bf16Mode::kAmxTile where AmxBf16Usable() is false.
void AmxBf16Kernel(std::size_t, const std::uint32_t*, std::size_t, const std::uint16_t*,
                   std::size_t, float*, std::size_t, std::size_t, bool) {}
void AmxBf16Release() {}
#endif

}  // namespace trnmx::internal
