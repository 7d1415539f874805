// Per-target inner loops of attention (Highway dynamic dispatch; included
// once per target by attention.cc through hwy/foreach_target.h).
//
// Numerics (attention.h steps 2 and 4): a score is one FP32 FMA chain over d
// increasing from +0, and acc_d continues one FMA chain over the allowed keys
// j increasing. QK^T vectorises across keys (lanes = keys of the K tile, held
// transposed, [d][key]); PV vectorises across d (lanes = d, broadcast p_j).
// No chain is split, so every target gives the bits of the scalar reference.
// Targets without a fused multiply-add (HWY_NATIVE_FMA == 0: SSSE3, SSE4,
// EMU128) run the same loops with std::fma: slower, same bits.
#if defined(TRNMX_SRC_KERNELS_ATTENTION_ATTENTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TRNMX_SRC_KERNELS_ATTENTION_ATTENTION_INL_H_
#undef TRNMX_SRC_KERNELS_ATTENTION_ATTENTION_INL_H_
#else
#define TRNMX_SRC_KERNELS_ATTENTION_ATTENTION_INL_H_
#endif

#include <hwy/highway.h>

#include <cmath>
#include <cstddef>
#include <limits>

HWY_BEFORE_NAMESPACE();
namespace trnmx {
namespace HWY_NAMESPACE {
namespace attn {

namespace hn = hwy::HWY_NAMESPACE;

// Floats per vector of this target (a power of two; on SVE known at run time
// only): attention.cc pads the rows ScoreRows and PvRows read and write to a
// multiple of it.
HWY_INLINE std::size_t VectorFloats() { return hn::Lanes(hn::ScalableTag<float>()); }

// s[r * lds + j] = sum over d increasing of q[r * ldq + d] * kt[d * ldk + j]
// (FMA chain from +0) for r < rows and j < n. Lanes past n (up to the next
// whole vector) are computed from kt's padding and written to s's padding:
// ldk and lds must hold n rounded up to a whole number of vectors.
HWY_NOINLINE void ScoreRows(const float* HWY_RESTRICT q, std::size_t ldq, std::size_t rows,
                            const float* HWY_RESTRICT kt, std::size_t ldk, std::size_t dqk,
                            std::size_t n, float* HWY_RESTRICT s, std::size_t lds) {
#if HWY_NATIVE_FMA
  const hn::ScalableTag<float> df;
  using V = hn::Vec<decltype(df)>;
  const std::size_t lanes = hn::Lanes(df);
  std::size_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float* q0 = q + r * ldq;
    std::size_t j = 0;
    for (; j + lanes < n; j += 2 * lanes) {  // Two vectors (the second may be padding).
      V a00 = hn::Zero(df), a01 = hn::Zero(df), a10 = hn::Zero(df), a11 = hn::Zero(df);
      V a20 = hn::Zero(df), a21 = hn::Zero(df), a30 = hn::Zero(df), a31 = hn::Zero(df);
      for (std::size_t d = 0; d < dqk; ++d) {
        const V k0 = hn::LoadU(df, kt + d * ldk + j);
        const V k1 = hn::LoadU(df, kt + d * ldk + j + lanes);
        const V b0 = hn::Set(df, q0[d]);
        const V b1 = hn::Set(df, q0[ldq + d]);
        const V b2 = hn::Set(df, q0[2 * ldq + d]);
        const V b3 = hn::Set(df, q0[3 * ldq + d]);
        a00 = hn::MulAdd(b0, k0, a00);
        a01 = hn::MulAdd(b0, k1, a01);
        a10 = hn::MulAdd(b1, k0, a10);
        a11 = hn::MulAdd(b1, k1, a11);
        a20 = hn::MulAdd(b2, k0, a20);
        a21 = hn::MulAdd(b2, k1, a21);
        a30 = hn::MulAdd(b3, k0, a30);
        a31 = hn::MulAdd(b3, k1, a31);
      }
      float* o = s + r * lds + j;
      hn::StoreU(a00, df, o);
      hn::StoreU(a01, df, o + lanes);
      hn::StoreU(a10, df, o + lds);
      hn::StoreU(a11, df, o + lds + lanes);
      hn::StoreU(a20, df, o + 2 * lds);
      hn::StoreU(a21, df, o + 2 * lds + lanes);
      hn::StoreU(a30, df, o + 3 * lds);
      hn::StoreU(a31, df, o + 3 * lds + lanes);
    }
    for (; j < n; j += lanes) {
      V a0 = hn::Zero(df), a1 = hn::Zero(df), a2 = hn::Zero(df), a3 = hn::Zero(df);
      for (std::size_t d = 0; d < dqk; ++d) {
        const V k0 = hn::LoadU(df, kt + d * ldk + j);
        a0 = hn::MulAdd(hn::Set(df, q0[d]), k0, a0);
        a1 = hn::MulAdd(hn::Set(df, q0[ldq + d]), k0, a1);
        a2 = hn::MulAdd(hn::Set(df, q0[2 * ldq + d]), k0, a2);
        a3 = hn::MulAdd(hn::Set(df, q0[3 * ldq + d]), k0, a3);
      }
      float* o = s + r * lds + j;
      hn::StoreU(a0, df, o);
      hn::StoreU(a1, df, o + lds);
      hn::StoreU(a2, df, o + 2 * lds);
      hn::StoreU(a3, df, o + 3 * lds);
    }
  }
  for (; r < rows; ++r) {
    const float* q0 = q + r * ldq;
    for (std::size_t j = 0; j < n; j += lanes) {
      V a0 = hn::Zero(df);
      for (std::size_t d = 0; d < dqk; ++d) {
        a0 = hn::MulAdd(hn::Set(df, q0[d]), hn::LoadU(df, kt + d * ldk + j), a0);
      }
      hn::StoreU(a0, df, s + r * lds + j);
    }
  }
#else
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t j = 0; j < n; ++j) {
      float a = 0.0f;
      for (std::size_t d = 0; d < dqk; ++d) a = std::fma(q[r * ldq + d], kt[d * ldk + j], a);
      s[r * lds + j] = a;
    }
  }
#endif
}

// acc[r * lda + d] = fma(p[r * ldp + j], v[j * ldv + d], acc[...]) for j
// in [j0, j1) increasing, for the `rows` rows from r0 on and every d < dv.
// lda and ldv must hold dv rounded up to a whole number of vectors (the
// padding lanes of acc are written with garbage).
HWY_NOINLINE void PvRows(const float* HWY_RESTRICT p, std::size_t ldp, std::size_t rows,
                         std::size_t j0, std::size_t j1, const float* HWY_RESTRICT v,
                         std::size_t ldv, std::size_t dv, float* HWY_RESTRICT acc,
                         std::size_t lda) {
#if HWY_NATIVE_FMA
  const hn::ScalableTag<float> df;
  using V = hn::Vec<decltype(df)>;
  const std::size_t lanes = hn::Lanes(df);
  std::size_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float* p0 = p + r * ldp;
    float* c = acc + r * lda;
    std::size_t d = 0;
    for (; d + lanes < dv; d += 2 * lanes) {
      V a00 = hn::LoadU(df, c + d), a01 = hn::LoadU(df, c + d + lanes);
      V a10 = hn::LoadU(df, c + lda + d), a11 = hn::LoadU(df, c + lda + d + lanes);
      V a20 = hn::LoadU(df, c + 2 * lda + d), a21 = hn::LoadU(df, c + 2 * lda + d + lanes);
      V a30 = hn::LoadU(df, c + 3 * lda + d), a31 = hn::LoadU(df, c + 3 * lda + d + lanes);
      for (std::size_t j = j0; j < j1; ++j) {
        const V v0 = hn::LoadU(df, v + j * ldv + d);
        const V v1 = hn::LoadU(df, v + j * ldv + d + lanes);
        const V b0 = hn::Set(df, p0[j]);
        const V b1 = hn::Set(df, p0[ldp + j]);
        const V b2 = hn::Set(df, p0[2 * ldp + j]);
        const V b3 = hn::Set(df, p0[3 * ldp + j]);
        a00 = hn::MulAdd(b0, v0, a00);
        a01 = hn::MulAdd(b0, v1, a01);
        a10 = hn::MulAdd(b1, v0, a10);
        a11 = hn::MulAdd(b1, v1, a11);
        a20 = hn::MulAdd(b2, v0, a20);
        a21 = hn::MulAdd(b2, v1, a21);
        a30 = hn::MulAdd(b3, v0, a30);
        a31 = hn::MulAdd(b3, v1, a31);
      }
      hn::StoreU(a00, df, c + d);
      hn::StoreU(a01, df, c + d + lanes);
      hn::StoreU(a10, df, c + lda + d);
      hn::StoreU(a11, df, c + lda + d + lanes);
      hn::StoreU(a20, df, c + 2 * lda + d);
      hn::StoreU(a21, df, c + 2 * lda + d + lanes);
      hn::StoreU(a30, df, c + 3 * lda + d);
      hn::StoreU(a31, df, c + 3 * lda + d + lanes);
    }
    for (; d < dv; d += lanes) {
      V a0 = hn::LoadU(df, c + d), a1 = hn::LoadU(df, c + lda + d);
      V a2 = hn::LoadU(df, c + 2 * lda + d), a3 = hn::LoadU(df, c + 3 * lda + d);
      for (std::size_t j = j0; j < j1; ++j) {
        const V v0 = hn::LoadU(df, v + j * ldv + d);
        a0 = hn::MulAdd(hn::Set(df, p0[j]), v0, a0);
        a1 = hn::MulAdd(hn::Set(df, p0[ldp + j]), v0, a1);
        a2 = hn::MulAdd(hn::Set(df, p0[2 * ldp + j]), v0, a2);
        a3 = hn::MulAdd(hn::Set(df, p0[3 * ldp + j]), v0, a3);
      }
      hn::StoreU(a0, df, c + d);
      hn::StoreU(a1, df, c + lda + d);
      hn::StoreU(a2, df, c + 2 * lda + d);
      hn::StoreU(a3, df, c + 3 * lda + d);
    }
  }
  for (; r < rows; ++r) {
    const float* p0 = p + r * ldp;
    float* c = acc + r * lda;
    for (std::size_t d = 0; d < dv; d += lanes) {
      V a0 = hn::LoadU(df, c + d);
      for (std::size_t j = j0; j < j1; ++j) {
        a0 = hn::MulAdd(hn::Set(df, p0[j]), hn::LoadU(df, v + j * ldv + d), a0);
      }
      hn::StoreU(a0, df, c + d);
    }
  }
#else
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t d = 0; d < dv; ++d) {
      float a = acc[r * lda + d];
      for (std::size_t j = j0; j < j1; ++j) a = std::fma(p[r * ldp + j], v[j * ldv + d], a);
      acc[r * lda + d] = a;
    }
  }
#endif
}

// s[j] = fl32(s[j] * scale) for j < n; returns the max of the results, NaN
// if any is NaN, -Inf for n = 0 (the max is exact, so any order gives it).
HWY_NOINLINE float ScaleMax(float* HWY_RESTRICT s, std::size_t n, float scale) {
  const hn::ScalableTag<float> df;
  const std::size_t lanes = hn::Lanes(df);
  const auto vs = hn::Set(df, scale);
  auto vmax = hn::Set(df, -std::numeric_limits<float>::infinity());
  auto nan = hn::Zero(df);
  std::size_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    const auto v = hn::Mul(hn::LoadU(df, s + j), vs);
    hn::StoreU(v, df, s + j);
    vmax = hn::Max(vmax, v);
    nan = hn::Or(nan, hn::VecFromMask(df, hn::IsNaN(v)));
  }
  float m = hn::GetLane(hn::MaxOfLanes(df, vmax));
  bool any_nan = !hn::AllFalse(df, hn::MaskFromVec(nan));
  for (; j < n; ++j) {
    const float x = s[j] * scale;
    s[j] = x;
    any_nan = any_nan || std::isnan(x);
    m = x > m ? x : m;
  }
  return any_nan ? std::numeric_limits<float>::quiet_NaN() : m;
}

}  // namespace attn
}  // namespace HWY_NAMESPACE
}  // namespace trnmx
HWY_AFTER_NAMESPACE();

#endif  // TRNMX_SRC_KERNELS_ATTENTION_ATTENTION_INL_H_
