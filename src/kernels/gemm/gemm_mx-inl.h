// Per-target MX x MX micro-kernels (Highway), included once per target by
// gemm_mx.cc through hwy/foreach_target.h. Layouts and numerics: see
// gemm_mx_kernels.h.
//
// TileFlat<T, kR, kC>: kR rows x kC vectors of columns. Per K block, S is
// accumulated with FMAs in T (float for the small formats, double for E4M3 /
// E5M2 pairings): every product and partial sum is an integer in units of
// the block's quantum, exactly representable in T, so the order and the
// vector width do not matter. Then y = DemoteTo(float, S * (fa * fb)) in
// FP64 (one rounding), acc = acc + y in FP32. The double layout holds the
// elements with fa and fb folded in (gemm_mx_kernels.h), so there S already
// is S * fa * fb and the tile's per-block epilogue skips two multiplies per
// vector (about 5 - 10 % of the kernel's time on Zen 3).

// Include guard toggled by foreach_target.h (per-target re-inclusion).
#if defined(TRNMX_SRC_KERNELS_GEMM_GEMM_MX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TRNMX_SRC_KERNELS_GEMM_GEMM_MX_INL_H_
#undef TRNMX_SRC_KERNELS_GEMM_GEMM_MX_INL_H_
#else
#define TRNMX_SRC_KERNELS_GEMM_GEMM_MX_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "internal/vec_array-inl.h"
#include "kernels/gemm/gemm_mx_kernels.h"

HWY_BEFORE_NAMESPACE();
namespace trnmx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// FP64 -> FP32 with one round-to-nearest-even, overflow to +-Inf. Highway's
// SCALAR/EMU128 DemoteTo clamps to +-FLT_MAX (and maps Inf there), so those
// targets convert lane by lane; elsewhere DemoteTo is CVTPD2PS (MXCSR
// round-to-nearest, no FTZ assumed).
template <class DF, class VD>
HWY_INLINE hn::Vec<DF> DemoteRne(DF df, VD v) {
#if HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128
  const hn::Rebind<double, DF> dd;
  HWY_ALIGN double in[hn::MaxLanes(hn::Rebind<double, DF>())];
  HWY_ALIGN float out[hn::MaxLanes(hn::Rebind<double, DF>())];
  hn::Store(v, dd, in);
  for (std::size_t i = 0; i < hn::Lanes(dd); ++i) out[i] = static_cast<float>(in[i]);
  return hn::Load(df, out);
#else
  return hn::DemoteTo(df, v);
#endif
}

template <class T, std::size_t kR, std::size_t kC>
HWY_NOINLINE void MxTileFlat(const internal::MxTileArgs& t) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const std::size_t n = hn::Lanes(d);
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> dfh;  // Half-width floats matching dd.
  const std::size_t nd = hn::Lanes(dd);
  const T* HWY_RESTRICT a = static_cast<const T*>(t.a);
  const T* HWY_RESTRICT b = static_cast<const T*>(t.b);
  HWY_ALIGN T spill[hn::MaxLanes(hn::ScalableTag<T>())];

  for (std::size_t blk = 0; blk < t.nblocks; ++blk) {
    // The register tile (vec_array-inl.h): S of row r, column vector c.
    VecArray<decltype(d), kR * kC> s;
#pragma GCC unroll 8
    for (std::size_t r = 0; r < kR; ++r) {
#pragma GCC unroll 8
      for (std::size_t c = 0; c < kC; ++c) s.Set(r * kC + c, hn::Zero(d));
    }
    const T* HWY_RESTRICT ak = a + blk * internal::kMxK;
    const T* HWY_RESTRICT bk = b + blk * internal::kMxK * t.ldb;
    for (std::size_t k = 0; k < internal::kMxK; ++k) {
      VecArray<decltype(d), kC> bv;
#pragma GCC unroll 8
      for (std::size_t c = 0; c < kC; ++c) bv.Set(c, hn::LoadU(d, bk + k * t.ldb + c * n));
#pragma GCC unroll 8
      for (std::size_t r = 0; r < kR; ++r) {
        const V av = hn::Set(d, ak[r * t.lda + k]);
#pragma GCC unroll 8
        for (std::size_t c = 0; c < kC; ++c) {
          s.Set(r * kC + c, hn::MulAdd(av, bv.Get(c), s.Get(r * kC + c)));
        }
      }
    }
#pragma GCC unroll 8
    for (std::size_t r = 0; r < kR; ++r) {
      float* HWY_RESTRICT acc = t.acc + r * t.ldacc;
#pragma GCC unroll 8
      for (std::size_t c = 0; c < kC; ++c) {
        if constexpr (sizeof(T) == sizeof(double)) {  // The packer folded fa * fb into S.
          const std::size_t col = c * n;
          const auto y = DemoteRne(dfh, s.Get(r * kC + c));
          hn::StoreU(hn::Add(hn::LoadU(dfh, acc + col), y), dfh, acc + col);
        } else {
          const auto fa = hn::Set(dd, t.fa[r * t.ldfa + blk]);
          const double* HWY_RESTRICT fb = t.fb + blk * t.ldfb;
          hn::Store(s.Get(r * kC + c), d, spill);
          for (std::size_t h = 0; h < n; h += nd) {
            const std::size_t col = c * n + h;
            const auto sv = hn::PromoteTo(dd, hn::Load(dfh, spill + h));
            const auto scale = hn::Mul(fa, hn::LoadU(dd, fb + col));
            const auto y = DemoteRne(dfh, hn::Mul(sv, scale));
            hn::StoreU(hn::Add(hn::LoadU(dfh, acc + col), y), dfh, acc + col);
          }
        }
      }
    }
  }
}

// Register tiles: 32 vector registers on AVX-512, 16 elsewhere, where 4 x 3
// accumulators, 3 B vectors and the broadcast fit (3 x 4 needed 17; on Zen 3
// the exact MXFP8 GEMM ran 20-23 GFLOP/s with it and 28-30 with 4 x 3, 6 x 2
// in between).
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
inline constexpr std::size_t kMxRows = 6;
inline constexpr std::size_t kMxColVecs = 4;
#else
inline constexpr std::size_t kMxRows = 4;
inline constexpr std::size_t kMxColVecs = 3;
#endif

void MxTileFlatF32(const internal::MxTileArgs& t) { MxTileFlat<float, kMxRows, kMxColVecs>(t); }
void MxTileFlatF64(const internal::MxTileArgs& t) { MxTileFlat<double, kMxRows, kMxColVecs>(t); }

internal::MxTileKernels GetMxTileKernels() {
  internal::MxTileKernels k;
  k.flat_f32 = {&MxTileFlatF32, kMxRows, kMxColVecs * hn::Lanes(hn::ScalableTag<float>())};
  k.flat_f64 = {&MxTileFlatF64, kMxRows, kMxColVecs * hn::Lanes(hn::ScalableTag<double>())};
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  // Every CPU these targets run on has AVX2 + FMA.
  k.gemv_fp4 = &internal::MxGemvFp4Avx2;
  k.gemv_fp4_planes = &internal::MxGemvFp4PlanesAvx2;
  k.gemv_planes_name = "avx2";
  k.gemv_dense_fp4 = &internal::GemvDenseFp4Avx2;
  k.gemv_name = "avx2";
#endif
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  // The VNNI kernels are chosen with the AVX-512 targets only, so forcing a
  // narrower target in tests exercises the AVX2 and portable kernels.
  if (internal::CpuHasAvx512Vnni()) {
    k.quad_i8 = {&internal::MxTileQuadI8Vnni, internal::kMxVnniRows, internal::kMxVnniCols};
    k.pair_i16 = {&internal::MxTilePair16Vnni, internal::kMxVnniRows, internal::kMxVnniCols};
    k.gemv_fp4 = &internal::MxGemvFp4Vnni;
    k.gemv_dense_fp4 = &internal::GemvDenseFp4Vnni;
    k.gemv_name = "avx512-vnni";
  }
#endif
  return k;
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace trnmx
HWY_AFTER_NAMESPACE();

#endif  // include guard
