// Per-target arrays of Highway vectors that compile on every target.
//
// SVE's vectors (svfloat32_t, ...) are sizeless types: C++ code may not make
// them array elements or class members (GCC: "array elements cannot have SVE
// type"). The kernels that keep a fixed set of vectors live across a loop
// (an MX block's vectors, a GEMM register tile) hold them in a VecArray
// instead of a plain array:
//   - where vectors have a size (x86, NEON, SCALAR), a VecArray is an array
//     of vectors, and the code is what the plain array gave: once the loops
//     over it are unrolled, the compiler keeps each element in a register;
//   - on SVE (TRNMX_SIZELESS_VECTORS) it is aligned memory with room for
//     MaxLanes(D) lanes per vector: Get is a load and Set a store (L1).
// The numbers are the same either way; only where the lanes wait differs.
#if defined(TRNMX_SRC_INTERNAL_VEC_ARRAY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TRNMX_SRC_INTERNAL_VEC_ARRAY_INL_H_
#undef TRNMX_SRC_INTERNAL_VEC_ARRAY_INL_H_
#else
#define TRNMX_SRC_INTERNAL_VEC_ARRAY_INL_H_
#endif

#include <hwy/highway.h>

#include <cstddef>

// 1 where this target's vectors are sizeless types (Highway 1.0.3's SVE
// family; RVV's are too, though trnmx does not build for RISC-V).
#undef TRNMX_SIZELESS_VECTORS
#if HWY_TARGET == HWY_SVE || HWY_TARGET == HWY_SVE2 || HWY_TARGET == HWY_SVE_256 || \
    HWY_TARGET == HWY_SVE2_128 || HWY_TARGET == HWY_RVV
#define TRNMX_SIZELESS_VECTORS 1
#else
#define TRNMX_SIZELESS_VECTORS 0
#endif

// 1 where the vector length is known at run time only: SVE and SVE2 (and
// RVV); Highway's SVE_256 and SVE2_128 fix it at compile time. There a lane
// count is `const`, elsewhere `constexpr`:
//   TRNMX_LANES_CONSTEXPR std::size_t n = LanesOf(d);
#undef TRNMX_RUNTIME_LANES
#undef TRNMX_LANES_CONSTEXPR
#if HWY_TARGET == HWY_SVE || HWY_TARGET == HWY_SVE2 || HWY_TARGET == HWY_RVV
#define TRNMX_RUNTIME_LANES 1
#define TRNMX_LANES_CONSTEXPR const
#else
#define TRNMX_RUNTIME_LANES 0
#define TRNMX_LANES_CONSTEXPR constexpr
#endif

HWY_BEFORE_NAMESPACE();
namespace trnmx {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Lanes of a vector of tag D: Lanes(d), as a compile-time constant where
// the length is fixed.
template <class D>
HWY_INLINE constexpr std::size_t LanesOf(D d) {
#if TRNMX_RUNTIME_LANES
  return hn::Lanes(d);
#else
  return hn::MaxLanes(d);
#endif
}

// The fewest lanes a vector of tag D (full or capped, not a fraction) has on
// this target: MaxLanes(D) where the length is fixed; on SVE, whose vectors
// are 128 to 2048 bits, a 128-bit vector's lanes (or the cap, if less).
template <class D>
inline constexpr std::size_t kMinLanes = (TRNMX_RUNTIME_LANES == 1 &&
                                          hn::MaxLanes(D()) * sizeof(hn::TFromD<D>) > 16)
                                             ? 16 / sizeof(hn::TFromD<D>)
                                             : hn::MaxLanes(D());

// kCount vectors of tag D: Get(i) and Set(i, v) for i < kCount.
template <class D, std::size_t kCount>
class VecArray {
 public:
  using V = hn::Vec<D>;
  // Declared, not implicit: an implicit constructor would be compiled
  // without this target's attributes (GCC then refuses to inline the
  // vectors' own constructors into it).
  HWY_INLINE VecArray() {}
#if TRNMX_SIZELESS_VECTORS
  HWY_INLINE V Get(std::size_t i) const { return hn::Load(D(), lanes_ + i * kStride); }
  HWY_INLINE void Set(std::size_t i, V v) { hn::Store(v, D(), lanes_ + i * kStride); }

 private:
  static constexpr std::size_t kStride = hn::MaxLanes(D());
  HWY_ALIGN hn::TFromD<D> lanes_[kCount * kStride];
#else
  HWY_INLINE V Get(std::size_t i) const { return v_[i]; }
  HWY_INLINE void Set(std::size_t i, V v) { v_[i] = v; }

 private:
  V v_[kCount];
#endif
};

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace trnmx
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
