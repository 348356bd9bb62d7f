// The two check macros: user errors carry their streamed message, our bugs say they are bugs.
#include <gtest/gtest.h>

#include "berth/core/error.h"

namespace {

int checked_threads(int n) {
  BERTH_CHECK(n > 0, "threads must be positive, found ", n, ". Fix: pass --threads 1 or more");
  return n;
}

TEST(Error, CheckPassesAndReturns) { EXPECT_EQ(checked_threads(3), 3); }

TEST(Error, CheckThrowsUserErrorWithStreamedValues) {
  try {
    checked_threads(-2);
    FAIL() << "expected berth::Error";
  } catch (const berth::Error& e) {
    EXPECT_STREQ(e.what(), "threads must be positive, found -2. Fix: pass --threads 1 or more");
  }
}

TEST(Error, CheckAsThrowsTheNamedType) {
  EXPECT_THROW(BERTH_CHECK_AS(berth::PlacementError, 1 + 1 == 3, "x"), berth::PlacementError);
  // A PlacementError is still a berth::Error, so callers that only know Error catch it.
  EXPECT_THROW(BERTH_CHECK_AS(berth::PlacementError, false, "x"), berth::Error);
}

TEST(Error, BugNamesConditionLocationAndSaysItIsOurs) {
  try {
    BERTH_BUG(2 < 1, "shard ", 3, " of ", 2);
    FAIL() << "expected berth::InternalError";
  } catch (const berth::InternalError& e) {
    std::string text = e.what();
    EXPECT_NE(text.find("2 < 1 failed at "), std::string::npos) << text;
    EXPECT_NE(text.find("error_test.cpp:"), std::string::npos) << text;
    EXPECT_NE(text.find("(shard 3 of 2)"), std::string::npos) << text;
    EXPECT_NE(text.find("bug in berth, not in your code"), std::string::npos) << text;
  }
}

TEST(Error, BugIsNotAUserError) {
  // The CLI maps berth::Error to exit 2 and InternalError to 70; the two must never mix.
  bool caught_as_user_error = false;
  try {
    BERTH_BUG(false);
  } catch (const berth::Error&) {
    caught_as_user_error = true;
  } catch (const berth::InternalError&) {
  }
  EXPECT_FALSE(caught_as_user_error);
}

}  // namespace
