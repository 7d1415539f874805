// Status and StatusOr (status.h), including what reading the value of an
// error does with exceptions on (throws StatusError) and off (aborts with the
// status printed; checked on nothrow_consumer, built with -fno-exceptions).
#include "trnmx/status.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>

namespace trnmx {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("Half: " + std::to_string(x) + " is odd");
  return x / 2;
}

TEST(Status, ToStringNamesTheCode) {
  EXPECT_EQ(OkStatus().ToString(), "OK");
  EXPECT_EQ(OutOfRangeError("code 0x80").ToString(), "OUT_OF_RANGE: code 0x80");
  EXPECT_EQ(DataLossError("truncated").code(), StatusCode::kDataLoss);
}

TEST(StatusOr, HoldsAValueOrAnError) {
  StatusOr<int> v = Half(8);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 4);
  EXPECT_TRUE(v.status().ok());
  StatusOr<int> e = Half(7);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().ToString(), "INVALID_ARGUMENT: Half: 7 is odd");
}

TEST(StatusOr, FromAnOkStatusIsAnInternalError) {
  StatusOr<int> e = OkStatus();
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInternal);
}

TEST(StatusOr, ValueOfAnErrorThrowsWithExceptionsOn) {
  StatusOr<int> e = Half(7);
  try {
    (void)e.value();
    FAIL() << "value() of an error returned";
  } catch (const StatusError& error) {
    EXPECT_EQ(error.status().code(), StatusCode::kInvalidArgument);
    EXPECT_STREQ(error.what(), "INVALID_ARGUMENT: Half: 7 is odd");
  }
  EXPECT_THROW((void)*e, StatusError);
  EXPECT_THROW((void)std::move(e).value(), StatusError);
}

TEST(StatusOrWithoutExceptions, ProgramRunsItsOkPaths) {
  EXPECT_EXIT(
      {
        execl(TRNMX_NOTHROW_CONSUMER, TRNMX_NOTHROW_CONSUMER, static_cast<char*>(nullptr));
        std::_Exit(127);  // exec failed
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(StatusOrWithoutExceptions, ValueOfAnErrorAbortsWithTheStatus) {
  EXPECT_EXIT(
      {
        execl(TRNMX_NOTHROW_CONSUMER, TRNMX_NOTHROW_CONSUMER, "--access-error",
              static_cast<char*>(nullptr));
        std::_Exit(127);
      },
      ::testing::KilledBySignal(SIGABRT),
      "trnmx: StatusOr value accessed on an error: INVALID_ARGUMENT: .*e9m9");
}

}  // namespace
}  // namespace trnmx
