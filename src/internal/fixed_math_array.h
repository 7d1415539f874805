// Internal: the fixed exp and sigmoid of fixed_math.h over arrays, with
// Highway dynamic dispatch (fixed_math-inl.h). Every element equals the
// scalar FixedExp / FixedSigmoid bit for bit on every target; y may equal x.
// FixedExpFlushedArray: FixedExp, then +0 for results below 2^-126 (the
// probabilities of attention.h step 4), through attention's own lanes.
#ifndef TRNMX_SRC_INTERNAL_FIXED_MATH_ARRAY_H_
#define TRNMX_SRC_INTERNAL_FIXED_MATH_ARRAY_H_

#include <cstddef>

namespace trnmx::internal {

void FixedExpArray(const float* x, float* y, std::size_t n);
void FixedExpFlushedArray(const float* x, float* y, std::size_t n);
void FixedSigmoidArray(const float* x, float* y, std::size_t n);

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_INTERNAL_FIXED_MATH_ARRAY_H_
