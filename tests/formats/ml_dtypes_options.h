// The trnmx EncodeOptions that reproduce ml_dtypes' (and numpy's) conversions
// (formats.md sections 3.2, 3.3, 4, 11). One definition for the two tests
// that together prove trnmx equal to ml_dtypes over all 2^32 FP32 inputs:
// golden_test.cc (SHA-256 of the bulk codec's codes == ml_dtypes' digest) and
// bulk_exhaustive_test.cc (bulk codec == scalar codec under these options).
#ifndef TRNMX_TESTS_FORMATS_ML_DTYPES_OPTIONS_H_
#define TRNMX_TESTS_FORMATS_ML_DTYPES_OPTIONS_H_

#include "trnmx/formats/policy.h"

namespace trnmx::test {

// astype of the FP8/FP6/FP4 formats.
inline constexpr EncodeOptions kAstype{.overflow = Overflow::kNonSat,
                                       .nan = NanPolicy::kMlDtypesNaN};
// np.clip(x, -MAX, MAX) then astype.
inline constexpr EncodeOptions kClipAstype{.overflow = Overflow::kSatFinite,
                                           .nan = NanPolicy::kMlDtypesNaN};
// bfloat16 astype: canonical NaNs 7FC0/FFC0.
inline constexpr EncodeOptions kBf16Astype{.overflow = Overflow::kNonSat,
                                           .nan = NanPolicy::kCanonical};
// numpy astype(float16) on non-NaN inputs (NaN inputs are not compared).
inline constexpr EncodeOptions kFp16Astype{.overflow = Overflow::kNonSat,
                                           .nan = NanPolicy::kQuietPayload};

}  // namespace trnmx::test

#endif  // TRNMX_TESTS_FORMATS_ML_DTYPES_OPTIONS_H_
