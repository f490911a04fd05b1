// POST /v1/embeddings over HTTP against a real `tandem serve`: OpenAI's response shape,
// unit-length vectors, an input's embedding the same alone or in a list, as text or as its
// tokens, base64 as the float answer's bytes (decoded here by hand), truncation, --pooling,
// and each bad value refused naming its field.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runner/gguf/gguf.h"
#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using json = nlohmann::json;
constexpr const char* kRoute = "/v1/embeddings";

std::vector<float> floats_of(const json& embedding) {
  std::vector<float> out;
  for (const json& x : embedding) out.push_back(x.get<float>());
  return out;
}

double norm_of(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  return std::sqrt(s);
}

// RFC 4648 base64, decoded by hand: the oracle for the server's encoder (Boost's).
std::vector<float> decode_base64_floats(const std::string& text) {
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> bytes;
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    if (c == '=') break;
    bits = (bits << 6) | static_cast<uint32_t>(alphabet.find(c));
    count += 6;
    if (count >= 8) {
      count -= 8;
      bytes.push_back(static_cast<uint8_t>((bits >> count) & 0xff));
    }
  }
  std::vector<float> out(bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    const uint32_t word = bytes[4 * i] | (bytes[4 * i + 1] << 8) | (bytes[4 * i + 2] << 16) |
                          (uint32_t{bytes[4 * i + 3]} << 24);
    std::memcpy(&out[i], &word, sizeof word);
  }
  return out;
}

std::vector<float> embedding_of(const json& body, size_t i = 0) {
  const json response = post_json(kRoute, body);
  if (!response.contains("data") || response["data"].size() <= i) {
    ADD_FAILURE() << response.dump();
    return {};
  }
  return floats_of(response["data"][i]["embedding"]);
}

TEST(EmbeddingsHttp, AnswersInOpenAIsShape) {
  const std::vector<std::string> inputs = {"The cat", "sat on", "the mat"};
  const json response = post_json(kRoute, {{"input", inputs}});
  EXPECT_EQ(response["object"], "list");
  EXPECT_EQ(response["model"], "tiny");
  ASSERT_EQ(response["data"].size(), 3u) << response.dump();
  int64_t tokens = 0;
  for (size_t i = 0; i < 3; ++i) {
    const json& item = response["data"][i];
    EXPECT_EQ(item["object"], "embedding");
    EXPECT_EQ(item["index"], i);
    const std::vector<float> v = floats_of(item["embedding"]);
    EXPECT_EQ(v.size(), 64u);  // tiny's width
    EXPECT_NEAR(norm_of(v), 1.0, 1e-5);
    tokens += post_json("/tokenize", {{"prompt", inputs[i]}})["count"].get<int64_t>();
  }
  EXPECT_EQ(response["usage"], json({{"prompt_tokens", tokens}, {"total_tokens", tokens}}));
  EXPECT_NE(floats_of(response["data"][0]["embedding"]),
            floats_of(response["data"][1]["embedding"]));
}

TEST(EmbeddingsHttp, AnInputGivesOneEmbeddingAloneInAListOrAsItsTokens) {
  const std::vector<float> alone = embedding_of({{"input", "sat on the mat"}});
  EXPECT_EQ(embedding_of({{"input", {"a cat", "sat on the mat", "zzz"}}}, 1), alone);
  const json tokens = post_json("/tokenize", {{"prompt", "sat on the mat"}})["tokens"];
  EXPECT_EQ(embedding_of({{"input", tokens}}), alone);
  EXPECT_EQ(embedding_of({{"input", {tokens, tokens}}}, 1), alone);
  // Without the special tokens the prompt differs, and so does the embedding.
  EXPECT_NE(embedding_of({{"input", "sat on the mat"}, {"add_special_tokens", false}}), alone);
}

TEST(EmbeddingsHttp, Base64IsTheFloatAnswersBytes) {
  const json input = {"one", "two words"};
  const json floats = post_json(kRoute, {{"input", input}});
  const json base64 = post_json(kRoute, {{"input", input}, {"encoding_format", "base64"}});
  ASSERT_EQ(base64["data"].size(), 2u) << base64.dump();
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(base64["data"][i]["embedding"].is_string());
    EXPECT_EQ(decode_base64_floats(base64["data"][i]["embedding"]),
              floats_of(floats["data"][i]["embedding"]));
  }
}

TEST(EmbeddingsHttp, UnnormalizedIsTheSameDirection) {
  const std::vector<float> unit = embedding_of({{"input", "hello"}});
  for (const json& off : {json{{"normalize", false}}, json{{"embd_normalize", -1}}}) {
    json body = off;
    body["input"] = "hello";
    const std::vector<float> raw = embedding_of(body);
    ASSERT_EQ(raw.size(), unit.size());
    const double n = norm_of(raw);
    EXPECT_GT(std::abs(n - 1.0), 1e-3) << "the raw pooled state happens to be unit length";
    for (size_t i = 0; i < raw.size(); ++i) EXPECT_NEAR(raw[i] / n, unit[i], 1e-6);
  }
}

// vLLM's truncate_prompt_tokens: a text's last k tokens, its special tokens kept (the tiny
// model's BOS), as Hugging Face's left truncation keeps them; token inputs as given.
TEST(EmbeddingsHttp, TruncationKeepsTheLastTokensAndTheSpecialOnes) {
  const std::string text = "one two three four five six";
  const json with = post_json("/tokenize", {{"prompt", text}})["tokens"];
  const json plain = post_json("/tokenize", {{"content", text}})["tokens"];
  ASSERT_EQ(with.size(), plain.size() + 1) << "tiny adds BOS: " << with.dump();
  ASSERT_GT(plain.size(), 4u);
  json kept = json::array({with[0]});
  for (auto it = plain.end() - 3; it != plain.end(); ++it) kept.push_back(*it);
  const json response = post_json(kRoute, {{"input", text}, {"truncate_prompt_tokens", 4}});
  EXPECT_EQ(response["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(floats_of(response["data"][0]["embedding"]), embedding_of({{"input", kept}}));
  const json last4(plain.end() - 4, plain.end());
  EXPECT_EQ(embedding_of({{"input", plain}, {"truncate_prompt_tokens", 4}}),
            embedding_of({{"input", last4}}));
  // Past the context: refused, unless truncated to it.
  const std::string long_text(3000, 'a');
  const HttpResult too_long =
      fetch(shared_server().port(), "POST", kRoute, json({{"input", {"x", long_text}}}).dump());
  EXPECT_EQ(too_long.status, 400) << too_long.body;
  EXPECT_EQ(too_long.json()["error"]["param"], "input[1]") << too_long.body;
  const json cut = post_json(kRoute, {{"input", long_text}, {"truncate_prompt_tokens", -1}});
  EXPECT_EQ(cut["usage"]["prompt_tokens"], 512) << cut.dump();
}

TEST(EmbeddingsHttp, RefusesBadValuesByName) {
  struct Case {
    json body;
    int status;
    std::string param;
  };
  const std::vector<Case> cases = {
      {{{"input", "x"}, {"model", "other"}}, 404, "model"},
      {{{"input", "x"}, {"dimensions", 32}}, 400, "dimensions"},
      {{{"input", {1, 99999}}}, 400, "input[1]"},
      {{{"input", {{1}, {2, 99999}}}}, 400, "input[1][1]"},
      {{{"input", {std::string(3000, 'a')}}}, 400, "input[0]"},
      {{{"input", "x"}, {"encoding_format", "int8"}}, 400, "encoding_format"},
      {{{"input", ""}}, 400, "input"},
      {{{"input", "x"}, {"truncate_prompt_tokens", 100000}}, 400, "truncate_prompt_tokens"},
      {{{"input", "x"}, {"embd_normalize", 0}}, 400, "embd_normalize"},
  };
  for (const Case& c : cases) {
    const HttpResult r = fetch(shared_server().port(), "POST", kRoute, c.body.dump());
    EXPECT_EQ(r.status, c.status) << c.body.dump() << " " << r.body;
    EXPECT_EQ(r.json()["error"]["param"], c.param) << c.body.dump() << " " << r.body;
  }
  // The model's own width is accepted.
  EXPECT_EQ(embedding_of({{"input", "x"}, {"dimensions", 64}}).size(), 64u);
}

// A reranker's file (pooling_type 4, rank): it loads and generates, /v1/embeddings refuses
// it by name unless --pooling says how to pool.
TEST(EmbeddingsHttp, AFilesRankPoolingIsRefusedUnlessPoolingIsGiven) {
  ScratchDir dir;
  const gguf::File tiny = gguf::File::open(tiny_model());
  gguf::Writer w;
  for (const auto& [key, value] : tiny.metadata()) w.add(key, value);
  w.add_uint32(tiny.get_string("general.architecture") + ".pooling_type", 4);
  for (const gguf::TensorInfo& t : tiny.tensors())
    w.add_tensor(t.name, t.type, t.dims, std::span<const uint8_t>(t.data, t.n_bytes));
  w.write(dir.file("rank.gguf"));
  ServerProcess rank(dir.file("rank.gguf"), {"--kv-tokens", "4096"});
  EXPECT_NE(rank.ready_line().find("embeddings off"), std::string::npos) << rank.ready_line();
  const HttpResult refused =
      fetch(rank.port(), "POST", kRoute, json({{"input", "sat on the mat"}}).dump());
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(refused.json()["error"]["param"], "model") << refused.body;
  EXPECT_NE(refused.body.find("pooling_type is 4"), std::string::npos) << refused.body;
  const json completion = post_json(rank.port(), "/v1/completions",
                                    {{"prompt", "Hi"}, {"max_tokens", 3}, {"ignore_eos", true}});
  EXPECT_EQ(completion["usage"]["completion_tokens"], 3);
  ServerProcess last(dir.file("rank.gguf"), {"--kv-tokens", "4096", "--pooling", "last"});
  const json body = {{"input", "sat on the mat"}};
  const json embedded = post_json(last.port(), kRoute, body);
  ASSERT_EQ(embedded["data"].size(), 1u) << embedded.dump();
  EXPECT_EQ(floats_of(embedded["data"][0]["embedding"]), embedding_of(body));  // same weights
}

// --pooling mean: the startup line says so, and the embedding is another vector; the same
// server's completions are unaffected.
TEST(EmbeddingsHttp, PoolingIsTheServersChoice) {
  EXPECT_NE(shared_server().ready_line().find("embeddings 64-wide, last pooling (default)"),
            std::string::npos)
      << shared_server().ready_line();
  ServerProcess mean(tiny_model(), {"--pooling", "mean", "--kv-tokens", "4096"});
  EXPECT_NE(mean.ready_line().find("mean pooling (--pooling)"), std::string::npos)
      << mean.ready_line();
  const json body = {{"input", "sat on the mat"}};
  const json mean_answer = post_json(mean.port(), kRoute, body);
  ASSERT_EQ(mean_answer["data"].size(), 1u);
  EXPECT_NE(floats_of(mean_answer["data"][0]["embedding"]), embedding_of(body));
  const json completion = post_json(mean.port(), "/v1/completions",
                                    {{"prompt", "Hi"}, {"max_tokens", 3}, {"ignore_eos", true}});
  EXPECT_EQ(completion["usage"]["completion_tokens"], 3);
  // cls on a causal model: the first position sees BOS only, which startup says (QA Y).
  ServerProcess cls(tiny_model(), {"--pooling", "cls", "--kv-tokens", "4096"});
  EXPECT_NE(cls.stderr_text().find("every text that starts with BOS gets the same embedding"),
            std::string::npos)
      << cls.stderr_text();
  EXPECT_EQ(post_json(cls.port(), kRoute, {{"input", "a"}})["data"][0]["embedding"],
            post_json(cls.port(), kRoute, {{"input", "b"}})["data"][0]["embedding"]);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
