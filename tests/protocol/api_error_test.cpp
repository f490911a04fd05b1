// OpenAI error objects: each maker's status, type and code, and a body that is always
// valid JSON with null for an absent param or code.
#include "protocol/api_error.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tandem::TANDEM_UNITY_ID {
namespace {

using Json = nlohmann::json;

TEST(ApiError, BodyIsOpenAisErrorObject) {
  Json body = Json::parse(to_json_body(bad_request("temperature must be >= 0", "temperature")));
  ASSERT_TRUE(body.contains("error"));
  const Json& error = body["error"];
  EXPECT_EQ(error.size(), 4u);
  EXPECT_EQ(error["message"], "temperature must be >= 0");
  EXPECT_EQ(error["type"], "invalid_request_error");
  EXPECT_EQ(error["param"], "temperature");
  EXPECT_TRUE(error["code"].is_null());
}

TEST(ApiError, EmptyParamAndCodeAreNull) {
  Json error = Json::parse(to_json_body(not_found("No route for GET /nope")))["error"];
  EXPECT_TRUE(error["param"].is_null());
  EXPECT_TRUE(error["code"].is_null());
  EXPECT_EQ(error["type"], "not_found_error");
}

TEST(ApiError, MakersFixStatusTypeAndCode) {
  struct Expected {
    ApiError error;
    int status;
    const char* type;
    const char* code;
  };
  const Expected cases[] = {
      {bad_request("m", "p"), 400, "invalid_request_error", ""},
      {context_length_exceeded("m"), 400, "invalid_request_error", "context_length_exceeded"},
      {unauthorized(), 401, "authentication_error", "invalid_api_key"},
      {not_found("m"), 404, "not_found_error", ""},
      {model_not_found("gpt-9"), 404, "not_found_error", "model_not_found"},
      {method_not_allowed("m"), 405, "invalid_request_error", "method_not_allowed"},
      {payload_too_large("m"), 413, "invalid_request_error", "request_too_large"},
      {overloaded(), 503, "server_error", "overloaded"},
      {service_unavailable("m"), 503, "server_error", "unavailable"},
      {internal_error(), 500, "server_error", ""},
  };
  for (const Expected& c : cases) {
    EXPECT_EQ(c.error.status, c.status) << c.type;
    EXPECT_EQ(c.error.type, c.type);
    EXPECT_EQ(c.error.code, c.code);
    EXPECT_FALSE(c.error.message.empty());
  }
  EXPECT_EQ(model_not_found("gpt-9").param, "model");
  EXPECT_NE(model_not_found("gpt-9").message.find("gpt-9"), std::string::npos);
}

TEST(ApiError, ModelNotFoundQuotesALongNameOnlyInPart) {
  const ApiError error = model_not_found(std::string(1 << 20, 'm'));
  EXPECT_LT(error.message.size(), 300u);
  EXPECT_NE(error.message.find(std::string(100, 'm') + "..."), std::string::npos);
}

TEST(ApiError, BodyStaysValidJsonForAnyMessageBytes) {
  const std::string message = "quote \" backslash \\ newline \n ctrl \x01 bad \xff\xc0 end";
  std::string body;
  ASSERT_NO_THROW(body = to_json_body(bad_request(message)));
  Json parsed = Json::parse(body);
  std::string round = parsed["error"]["message"];
  EXPECT_EQ(round.rfind("quote \" backslash \\ newline \n ctrl \x01 bad ", 0), 0u);
  EXPECT_NE(round.find("\xef\xbf\xbd"), std::string::npos);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
