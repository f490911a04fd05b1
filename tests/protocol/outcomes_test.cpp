// Outcomes as values: each has one name (OpenAI's finish_reason, the metrics label), and
// each error kind one error object.
#include "protocol/outcomes.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "protocol/api_error.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

TEST(Outcomes, FinishReasonsHaveOpenAisNames) {
  EXPECT_STREQ(finish_reason_name(FinishReason::kStop), "stop");
  EXPECT_STREQ(finish_reason_name(FinishReason::kLength), "length");
  EXPECT_STREQ(finish_reason_name(FinishReason::kToolCalls), "tool_calls");
  EXPECT_STREQ(finish_reason_name(FinishReason::kCancelled), "cancelled");
  std::set<std::string> names;
  for (int i = 0; i < kFinishReasons; ++i) {
    names.insert(finish_reason_name(static_cast<FinishReason>(i)));
  }
  EXPECT_EQ(names.size(), size_t{kFinishReasons});
  EXPECT_EQ(names.count("unknown"), 0u);
}

TEST(Outcomes, ErrorKindsHaveDistinctNames) {
  EXPECT_STREQ(error_kind_name(ErrorKind::kInvalidRequest), "invalid_request");
  EXPECT_STREQ(error_kind_name(ErrorKind::kOverloaded), "overloaded");
  EXPECT_STREQ(error_kind_name(ErrorKind::kShuttingDown), "shutting_down");
  EXPECT_STREQ(error_kind_name(ErrorKind::kInternal), "internal");
}

TEST(Outcomes, EachErrorKindAnswersWithItsErrorObject) {
  struct Expected {
    ErrorKind kind;
    int status;
    const char* code;
    std::string message;  // the detail shows only for an invalid request
  };
  const Expected cases[] = {
      {ErrorKind::kInvalidRequest, 400, "", "the prompt is empty"},
      {ErrorKind::kOverloaded, 503, "overloaded", overloaded().message},
      {ErrorKind::kShuttingDown, 503, "unavailable", "The server is shutting down."},
      {ErrorKind::kInternal, 500, "", internal_error().message},  // the detail stays in logs
  };
  for (const Expected& c : cases) {
    const ApiError error = api_error_for(c.kind, "the prompt is empty");
    EXPECT_EQ(error.status, c.status) << error_kind_name(c.kind);
    EXPECT_EQ(error.code, c.code) << error_kind_name(c.kind);
    EXPECT_EQ(error.message, c.message) << error_kind_name(c.kind);
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
