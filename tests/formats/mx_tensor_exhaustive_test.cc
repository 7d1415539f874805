// MX tensors over every shape rows, cols in 0..70 (all tails of both block
// sizes) for every format and both axes, against the one-block reference
// (see mx_tensor_test_support.h), with NaN / Inf planted in the inputs.
#include <cstddef>
#include <random>

#include <gtest/gtest.h>

#include "formats/mx_tensor_test_support.h"
#include "trnmx/executor.h"
#include "trnmx/mx.h"

namespace trnmx {
namespace {

TEST(MxTensorExhaustive, AllShapesUpTo70) {
  std::mt19937_64 rng(testing_mx::Seed() + 100);
  SerialExecutor serial;
  for (const MxFormatInfo& info : AllMxFormats()) {
    for (const BlockAxis axis : {BlockAxis::kRows, BlockAxis::kCols}) {
      for (std::size_t rows = 0; rows <= 70; ++rows) {
        for (std::size_t cols = 0; cols <= 70; ++cols) {
          MxQuantizeOptions o;
          o.axis = axis;
          testing_mx::CheckAgainstReference(info.format, rows, cols, cols + (rows % 3), o, rng,
                                            &serial, true);
          if (::testing::Test::HasFailure()) return;
        }
      }
    }
  }
}

}  // namespace
}  // namespace trnmx
