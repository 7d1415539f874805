// The internal checking layer (src/internal/checks.h) shared by MX tensors
// and GEMM, and the Status macros (src/internal/status_macros.h).
#include "internal/checks.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "internal/status_macros.h"
#include "trnmx/mx.h"

namespace trnmx::internal {
namespace {

constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();

TEST(Checks, CeilDivAndRoundUp) {
  static_assert(CeilDiv(0, 32) == 0 && CeilDiv(1, 32) == 1 && CeilDiv(64, 32) == 2);
  static_assert(RoundUp(33, 32) == 64 && RoundUp(32, 32) == 32);
}

TEST(Checks, StridedArray) {
  alignas(4) std::uint8_t buf[64] = {};
  ByteRange r;
  // Row-major 3 x 4 floats, ld 5: ((2 * 5 + 3) + 1) * 4 = 56 bytes.
  ASSERT_TRUE(CheckStridedArray("A", buf, 3, 4, 5, 1, 4, &r).ok());
  EXPECT_EQ(r.hi - r.lo, 56u);
  // Empty arrays need no pointer and touch nothing.
  ASSERT_TRUE(CheckStridedArray("A", nullptr, 0, 4, 5, 1, 4, &r).ok());
  EXPECT_EQ(r.lo, r.hi);
  Status s = CheckStridedArray("GEMM operand A", nullptr, 3, 4, 5, 1, 4, &r);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "GEMM operand A is 3 x 4 but its data pointer is null");
  s = CheckStridedArray("source", buf + 1, 3, 4, 5, 1, 4, &r);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("not aligned to 4 bytes"), std::string::npos) << s.message();
  s = CheckStridedArray("B", buf, 3, 4, kMax / 2, 1, 4, &r);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("overflows the address space"), std::string::npos) << s.message();
}

TEST(Checks, DistinctElements) {
  EXPECT_TRUE(DistinctElements(4, 4, 4, 1));   // Row-major.
  EXPECT_TRUE(DistinctElements(4, 4, 1, 4));   // Column-major.
  EXPECT_FALSE(DistinctElements(4, 4, 3, 1));  // Rows overlap.
  EXPECT_FALSE(DistinctElements(4, 4, 4, 0));  // Columns share an element.
  EXPECT_TRUE(DistinctElements(1, 4, 0, 1));   // A single row needs no row stride.
  EXPECT_TRUE(DistinctElements(4, 1, 1, 0));
}

TEST(Checks, LineOverlap) {
  // Lines of 4 bytes every 8 bytes, and the gaps between them.
  const LineRanges lines{1000, 8, 4, 4};
  const LineRanges gaps{1004, 8, 4, 4};
  EXPECT_FALSE(Overlap(lines, gaps));
  EXPECT_TRUE(Overlap(lines, LineRanges{1006, 8, 4, 2}));
  EXPECT_TRUE(lines.bounds().Overlaps(gaps.bounds()));  // The boxes do overlap.
  EXPECT_FALSE(Overlap(lines, LineRanges{}));
  const Status s = CheckLineRanges(LineRanges{1000, kMax / 2, 4, 4}, "MX codes");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("MX codes (4 lines"), std::string::npos) << s.message();
}

TEST(Checks, MxLayoutCodes) {
  std::vector<std::uint8_t> codes(2 * 16), scales(2);
  const MxShape shape{MxFormat::kMxfp4, 2, 32, BlockAxis::kRows};
  EXPECT_TRUE(CheckMxLayout(shape, codes.data(), 16, scales.data(), 1).ok());
  // A shape whose byte count cannot exist: kOutOfRange.
  const MxShape huge{MxFormat::kMxfp4, kMax / 4, kMax / 4, BlockAxis::kRows};
  EXPECT_EQ(CheckMxShape(huge).code(), StatusCode::kOutOfRange);
  // Bad arguments: kInvalidArgument.
  EXPECT_EQ(CheckMxShape({static_cast<MxFormat>(99), 1, 1, BlockAxis::kRows}).code(),
            StatusCode::kInvalidArgument);
  // Strides whose last line lies past the end of the address space.
  const MxShape four{MxFormat::kMxfp4, 4, 32, BlockAxis::kRows};
  const Status wraps = CheckMxLayout(four, codes.data(), kMax / 2, scales.data(), 1);
  EXPECT_EQ(wraps.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wraps.message().find("overflows the address space"), std::string::npos)
      << wraps.message();
  EXPECT_EQ(CheckMxLayout(shape, codes.data(), 16, codes.data() + 8, 1).message(),
            "MX codes and scales overlap");
  // CheckMxView is the same layer.
  const MxTensorView view{shape, codes.data(), 15, scales.data(), 1, 1.0f};
  EXPECT_EQ(CheckMxView(view).message(), "codes_stride 15 is less than a line's 16 code bytes");
}

Status FailIfOdd(int x) {
  return x % 2 != 0 ? InvalidArgumentError("odd") : OkStatus();
}
StatusOr<int> Half(int x) {
  TRNMX_RETURN_IF_ERROR(FailIfOdd(x));
  return x / 2;
}
StatusOr<int> Quarter(int x) {
  TRNMX_ASSIGN_OR_RETURN(const int h, Half(x));
  TRNMX_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(Checks, StatusMacros) {
  EXPECT_EQ(*Quarter(12), 3);
  EXPECT_EQ(Quarter(6).status().message(), "odd");  // 6 -> 3, then odd.
  EXPECT_EQ(Prefixed("MX GEMM operand B", InvalidArgumentError("x")).message(),
            "MX GEMM operand B: x");
  EXPECT_TRUE(Prefixed("p", OkStatus()).ok());
}

}  // namespace
}  // namespace trnmx::internal
