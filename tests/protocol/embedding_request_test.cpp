// The /v1/embeddings request as OpenAI, vLLM and llama-server clients send it (its four
// input forms, the encodings, the normalization switches), each bad value refused naming
// its field, and the response body (floats read back exactly; base64 as Python's
// base64.b64encode(struct.pack('<...f', ...)) gives it).
#include "protocol/embedding_request.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "protocol/pooling.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

EmbeddingRequest parsed(const std::string& body) {
  auto result = parse_embedding_request(body);
  if (auto* error = std::get_if<ApiError>(&result)) {
    ADD_FAILURE() << body << ": " << error->message;
    return {};
  }
  return std::get<EmbeddingRequest>(result);
}

ApiError refused(const std::string& body) {
  auto result = parse_embedding_request(body);
  if (auto* error = std::get_if<ApiError>(&result)) return *error;
  ADD_FAILURE() << body << " was accepted";
  return {};
}

TEST(EmbeddingRequest, ReadsTheFourInputForms) {
  EmbeddingRequest one = parsed(R"({"input": "hello", "model": "m"})");
  ASSERT_EQ(one.inputs.size(), 1u);
  EXPECT_EQ(one.inputs[0].text, "hello");
  EXPECT_FALSE(one.inputs[0].is_tokens);
  EXPECT_EQ(one.model, "m");
  EXPECT_TRUE(one.normalize);
  EXPECT_FALSE(one.base64);
  EXPECT_TRUE(one.add_special_tokens);

  EmbeddingRequest texts = parsed(R"({"input": ["a", "b", "c"]})");
  ASSERT_EQ(texts.inputs.size(), 3u);
  EXPECT_EQ(texts.inputs[2].text, "c");

  EmbeddingRequest ids = parsed(R"({"input": [5, 6, 7]})");
  ASSERT_EQ(ids.inputs.size(), 1u);
  EXPECT_TRUE(ids.inputs[0].is_tokens);
  EXPECT_EQ(ids.inputs[0].tokens, (std::vector<int32_t>{5, 6, 7}));

  EmbeddingRequest lists = parsed(R"({"input": [[1], [2, 3]]})");
  ASSERT_EQ(lists.inputs.size(), 2u);
  EXPECT_EQ(lists.inputs[1].tokens, (std::vector<int32_t>{2, 3}));
}

TEST(EmbeddingRequest, ReadsTheOptions) {
  EmbeddingRequest r = parsed(
      R"({"input": "x", "encoding_format": "base64", "dimensions": 64, "normalize": false,
          "truncate_prompt_tokens": -1, "add_special_tokens": false, "user": "u",
          "cache_salt": "s"})");
  EXPECT_TRUE(r.base64);
  EXPECT_EQ(r.dimensions, 64);
  EXPECT_FALSE(r.normalize);
  EXPECT_EQ(r.truncate_prompt_tokens, -1);
  EXPECT_FALSE(r.add_special_tokens);
  EXPECT_EQ(r.user, "u");
  EXPECT_EQ(r.cache_salt, "s");
  EXPECT_FALSE(parsed(R"({"input": "x", "embd_normalize": -1})").normalize);
  EXPECT_TRUE(parsed(R"({"input": "x", "embd_normalize": 2, "normalize": true})").normalize);
  EXPECT_FALSE(parsed(R"({"input": "x", "encoding_format": "float"})").base64);
}

TEST(EmbeddingRequest, RefusesBadValuesByName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({})", "input"},
      {R"({"input": ""})", "input"},
      {R"({"input": []})", "input"},
      {R"({"input": 5})", "input"},
      {R"({"input": ["a", ""]})", "input[1]"},
      {R"({"input": ["a", [1]]})", "input[1]"},
      {R"({"input": [[1], []]})", "input[1]"},
      {R"({"input": [[1], {"a": 1}]})", "input[1]"},
      {R"({"input": [-1]})", "input[0]"},
      {R"({"input": "x", "encoding_format": "int8"})", "encoding_format"},
      {R"({"input": "x", "dimensions": 0})", "dimensions"},
      {R"({"input": "x", "normalize": "yes"})", "normalize"},
      {R"({"input": "x", "embd_normalize": 1})", "embd_normalize"},
      {R"({"input": "x", "embd_normalize": 2, "normalize": false})", "embd_normalize"},
      {R"({"input": "x", "truncate_prompt_tokens": 0})", "truncate_prompt_tokens"},
      {R"({"input": "x", "cache_salt": ""})", "cache_salt"},
      {R"({"input": "x", "model": 3})", "model"},
  };
  for (const auto& [body, param] : cases) {
    const ApiError error = refused(body);
    EXPECT_EQ(error.status, 400) << body;
    EXPECT_EQ(error.param, param) << body << ": " << error.message;
  }
  std::string many = R"({"input": [)";
  for (size_t i = 0; i <= kMaxEmbeddingInputs; ++i) many += i ? ",\"a\"" : "\"a\"";
  EXPECT_EQ(refused(many + "]}").param, "input");
}

TEST(EmbeddingRequest, TheResponseListsEachEmbeddingInOrder) {
  const std::vector<std::vector<float>> all = {{0.1f, -2.5f, 1e-8f}, {3.0f, 0.0f, -0.333333f}};
  const auto body = nlohmann::json::parse(embedding_response_json("tiny", all, false, 7));
  EXPECT_EQ(body["object"], "list");
  EXPECT_EQ(body["model"], "tiny");
  EXPECT_EQ(body["usage"], nlohmann::json({{"prompt_tokens", 7}, {"total_tokens", 7}}));
  ASSERT_EQ(body["data"].size(), 2u);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(body["data"][i]["object"], "embedding");
    EXPECT_EQ(body["data"][i]["index"], i);
    ASSERT_EQ(body["data"][i]["embedding"].size(), all[i].size());
    for (size_t k = 0; k < all[i].size(); ++k)  // the shortest text reads back as the float
      EXPECT_EQ(body["data"][i]["embedding"][k].get<float>(), all[i][k]);
  }
}

TEST(EmbeddingRequest, Base64IsTheFloatsLittleEndianBytes) {
  const std::vector<std::vector<float>> all = {{1.0f, -2.0f}, {0.5f, -0.25f, 3.0f}, {}};
  const auto body = nlohmann::json::parse(embedding_response_json("m", all, true, 1));
  EXPECT_EQ(body["data"][0]["embedding"], "AACAPwAAAMA=");
  EXPECT_EQ(body["data"][1]["embedding"], "AAAAPwAAgL4AAEBA");
  EXPECT_EQ(body["data"][2]["embedding"], "");
}

TEST(EmbeddingRequest, NormalizingGivesUnitLength) {
  std::vector<float> v = {3.0f, -4.0f};
  normalize_embedding(v);
  EXPECT_FLOAT_EQ(v[0], 0.6f);
  EXPECT_FLOAT_EQ(v[1], -0.8f);
  std::vector<float> zero = {0.0f, 0.0f};
  normalize_embedding(zero);
  EXPECT_EQ(zero, (std::vector<float>{0.0f, 0.0f}));
}

TEST(Pooling, FixedPointSumsAreTheSameInAnyGrouping) {
  // Floats whose float (and double) sums depend on the order.
  const std::vector<float> values = {1e8f, 1.0f, -1e8f, 3.3f, 1e-7f, -2.5f, 7.125f};
  std::vector<int64_t> whole(1, 0), left(1, 0), right(1, 0);
  for (float v : values) add_to_pooled(std::span<const float>(&v, 1), whole);
  for (size_t i = 0; i < 3; ++i) add_to_pooled(std::span<const float>(&values[i], 1), left);
  for (size_t i = 3; i < values.size(); ++i)
    add_to_pooled(std::span<const float>(&values[i], 1), right);
  EXPECT_EQ(whole[0], left[0] + right[0]);
  const float mean = pooled_embedding(whole, static_cast<int64_t>(values.size()))[0];
  EXPECT_NEAR(mean, (1.0 + 3.3 - 2.5 + 7.125 + 1e-7) / 7.0, 1e-6);
  std::vector<int64_t> odd(3, 0);
  const float bad[3] = {std::nanf(""), INFINITY, 1e30f};
  EXPECT_EQ(add_to_pooled(bad, odd), 2) << "NaN and infinity are counted, 1e30 clamped";
  EXPECT_EQ(odd[0], 0);
  EXPECT_EQ(odd[2], std::llrint(kPoolClamp * kPoolScale));
  EXPECT_EQ(parse_pooling("last"), Pooling::kLast);
  EXPECT_EQ(parse_pooling("rank"), std::nullopt);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
