// llama-server's /tokenize and /detokenize bodies: defaults, errors naming the field, and
// response shapes.
#include "protocol/tokenize_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tandem::TANDEM_UNITY_ID {
namespace {

using Json = nlohmann::json;

// llama-server's defaults: no BOS, control-token text parsed, ids without pieces.
TEST(TokenizeRequest, DefaultsAreLlamaServers) {
  auto parsed = parse_tokenize_request(R"({"content": "Hello <|im_start|>"})");
  ASSERT_TRUE(std::holds_alternative<TokenizeRequest>(parsed));
  const TokenizeRequest& r = std::get<TokenizeRequest>(parsed);
  EXPECT_EQ(r.content, "Hello <|im_start|>");
  EXPECT_FALSE(r.add_special);
  EXPECT_TRUE(r.parse_special);
  EXPECT_FALSE(r.with_pieces);
}

TEST(TokenizeRequest, PiecesAreTextWhereValidUtf8AndBytesWhereNot) {
  const std::vector<int32_t> ids = {5, 7, 9};
  const std::vector<std::string> pieces = {" H\xc3\xa9", "\xe2\x82", "\xac"};
  EXPECT_EQ(Json::parse(tokenize_response_json(ids, pieces)),
            Json::parse(R"({"tokens": [{"id": 5, "piece": " H\u00e9"},)"
                        R"( {"id": 7, "piece": [226, 130]}, {"id": 9, "piece": [172]}]})"));
  EXPECT_EQ(tokenize_response_json(ids), R"({"tokens":[5,7,9]})");
}

TEST(TokenizeRequest, FlagsAreRead) {
  auto parsed = parse_tokenize_request(
      R"({"content": "", "add_special": false, "parse_special": false, "with_pieces": true})");
  ASSERT_TRUE(std::holds_alternative<TokenizeRequest>(parsed));
  EXPECT_FALSE(std::get<TokenizeRequest>(parsed).add_special);
  EXPECT_FALSE(std::get<TokenizeRequest>(parsed).parse_special);
  EXPECT_TRUE(std::get<TokenizeRequest>(parsed).with_pieces);
  EXPECT_TRUE(std::get<TokenizeRequest>(parsed).content.empty());
}

// vLLM's completion form: "prompt", special tokens added unless add_special_tokens is
// false (vLLM's default), token strings when asked; it had got "'content' is required".
TEST(TokenizeRequest, VllmsFormIsReadWithItsDefaults) {
  auto parsed = parse_tokenize_request(R"({"model": "m", "prompt": "Hi"})");
  ASSERT_TRUE(std::holds_alternative<TokenizeRequest>(parsed));
  const TokenizeRequest& r = std::get<TokenizeRequest>(parsed);
  EXPECT_EQ(r.content, "Hi");
  EXPECT_TRUE(r.vllm_form);
  EXPECT_TRUE(r.add_special);
  EXPECT_FALSE(r.token_strs);
  parsed = parse_tokenize_request(
      R"({"prompt": "Hi", "add_special_tokens": false, "return_token_strs": true})");
  ASSERT_TRUE(std::holds_alternative<TokenizeRequest>(parsed));
  EXPECT_FALSE(std::get<TokenizeRequest>(parsed).add_special);
  EXPECT_TRUE(std::get<TokenizeRequest>(parsed).token_strs);
  // llama-server's form reads vLLM's flag name too; its own default stays false.
  parsed = parse_tokenize_request(R"({"content": "Hi", "add_special_tokens": true})");
  ASSERT_TRUE(std::holds_alternative<TokenizeRequest>(parsed));
  EXPECT_TRUE(std::get<TokenizeRequest>(parsed).add_special);
  EXPECT_FALSE(std::get<TokenizeRequest>(parsed).vllm_form);
}

// vLLM's chat form: the messages and chat fields as a chat completion reads them, answered
// in vLLM's shape.
TEST(TokenizeRequest, ReadsVllmsChatForm) {
  auto parsed = parse_tokenize_request(
      R"({"model": "m", "messages": [{"role": "user", "content": "Hi"}],
          "add_generation_prompt": false, "return_token_strs": true,
          "chat_template_kwargs": {"enable_thinking": false}})");
  ASSERT_TRUE(std::holds_alternative<TokenizeRequest>(parsed));
  const auto& request = std::get<TokenizeRequest>(parsed);
  ASSERT_TRUE(request.chat.has_value());
  EXPECT_EQ(request.chat->messages.size(), 1u);
  EXPECT_FALSE(request.chat->add_generation_prompt);
  EXPECT_EQ(request.chat->template_kwargs["enable_thinking"], false);
  EXPECT_TRUE(request.vllm_form);
  EXPECT_TRUE(request.token_strs);
  EXPECT_FALSE(request.add_special);
}

TEST(TokenizeRequest, BadBodiesNameTheField) {
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({})", "content"},
      {R"({"content": null})", "content"},
      {R"({"content": 5})", "content"},
      {R"({"content": ["a"]})", "content"},
      {R"({"content": "a", "add_special": "yes"})", "add_special"},
      {R"({"content": "a", "parse_special": 0})", "parse_special"},
      {R"({"prompt": 5})", "prompt"},
      {R"({"prompt": "a", "add_special_tokens": 1})", "add_special_tokens"},
      {R"({"prompt": "a", "return_token_strs": "yes"})", "return_token_strs"},
      {R"({"messages": [{"role": "user", "content": "a"}], "content": "a"})", "messages"},
      {R"({"messages": 5})", "messages"},
      {R"({"messages": [{"role": "user", "content": "a"}], "add_special_tokens": true})",
       "add_special_tokens"},
      {R"({"messages": [{"role": "user", "content": "a"}], "add_special": true})", "add_special"},
      {R"({"messages": [{"role": "user", "content": "a"}], "parse_special": false})",
       "parse_special"},
      {R"({"messages": [{"role": "user", "content": "a"}], "with_pieces": true})", "with_pieces"},
      {R"({"messages": [{"role": "user", "content": "a"}], "return_token_strs": 1})",
       "return_token_strs"},
      {R"({"messages": [{"role": "user", "content": "a"}], "add_generation_prompt": 1})",
       "add_generation_prompt"},
      {R"({"content": "a")", ""},
      {R"([])", ""},
  };
  for (const Case& c : cases) {
    auto parsed = parse_tokenize_request(c.body);
    ASSERT_TRUE(std::holds_alternative<ApiError>(parsed)) << c.body;
    EXPECT_EQ(std::get<ApiError>(parsed).status, 400);
    EXPECT_EQ(std::get<ApiError>(parsed).param, c.param) << c.body;
  }
}

TEST(DetokenizeRequest, ReadsTokenIds) {
  auto parsed = parse_detokenize_request(R"({"tokens": [1, 15043, 0]})");
  ASSERT_TRUE(std::holds_alternative<DetokenizeRequest>(parsed));
  EXPECT_EQ(std::get<DetokenizeRequest>(parsed).tokens, (std::vector<int32_t>{1, 15043, 0}));
  auto empty = parse_detokenize_request(R"({"tokens": []})");
  ASSERT_TRUE(std::holds_alternative<DetokenizeRequest>(empty));
  EXPECT_TRUE(std::get<DetokenizeRequest>(empty).tokens.empty());
}

TEST(DetokenizeRequest, BadBodiesNameTheField) {
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({})", "tokens"},
      {R"({"tokens": "1 2"})", "tokens"},
      {R"({"tokens": [1, -1]})", "tokens[1]"},
      {R"({"tokens": [1.5]})", "tokens[0]"},
      {R"({"tokens": [4294967296]})", "tokens[0]"},
      {R"({"tokens": [[1]]})", "tokens[0]"},
      {"not json", ""},
  };
  for (const Case& c : cases) {
    auto parsed = parse_detokenize_request(c.body);
    ASSERT_TRUE(std::holds_alternative<ApiError>(parsed)) << c.body;
    EXPECT_EQ(std::get<ApiError>(parsed).status, 400);
    EXPECT_EQ(std::get<ApiError>(parsed).param, c.param) << c.body;
  }
}

TEST(TokenizeResponses, HaveLlamaServersShapes) {
  const std::vector<int32_t> ids = {1, 2, 3};
  EXPECT_EQ(Json::parse(tokenize_response_json(ids)), (Json{{"tokens", {1, 2, 3}}}));
  EXPECT_EQ(Json::parse(tokenize_response_json({})), (Json{{"tokens", Json::array()}}));
  // llama-server's "content", and vLLM's "prompt" for the same text.
  EXPECT_EQ(Json::parse(detokenize_response_json("a\n\"b\"")),
            (Json{{"content", "a\n\"b\""}, {"prompt", "a\n\"b\""}}));
  // vLLM's /tokenize answer.
  EXPECT_EQ(
      Json::parse(vllm_tokenize_response_json(ids, {2048, {}})),
      (Json{
          {"count", 3}, {"max_model_len", 2048}, {"tokens", {1, 2, 3}}, {"token_strs", nullptr}}));
  EXPECT_EQ(Json::parse(vllm_tokenize_response_json(ids, {16,
                                                          {"a",
                                                           "\xe2\x96\x81"
                                                           "b",
                                                           "c"}}))["token_strs"],
            (Json{"a",
                  "\xe2\x96\x81"
                  "b",
                  "c"}));
}

TEST(TokenizeResponses, DetokenizedPartialCharacterStillGivesValidJson) {
  // Token ids cut inside a multi-byte character decode to invalid UTF-8.
  Json body = Json::parse(detokenize_response_json("ab\xe4\xb8"));
  EXPECT_EQ(body["content"].get<std::string>().rfind("ab", 0), 0u);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
