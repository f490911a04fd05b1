// llama-server's post_sampling_probs and return_tokens over HTTP: /completion's and chat's
// probabilities are the draw's (prob, top_probs), the same as the model's where nothing
// changes the row, renormalized where top_k or a grammar cuts it, streamed as whole; the
// generated ids come back in `tokens`; the OpenAI routes that cannot carry them refuse them.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using json = nlohmann::json;

// A /completion body that samples the whole row at temperature 1: llama-server's default
// filters (top_k 40, top_p 0.95, min_p 0.05) turned off.
json whole_row(int n_predict, int n_probs) {
  return json{{"prompt", "Once upon a time"},
              {"n_predict", n_predict},
              {"seed", 17},
              {"temperature", 1.0},
              {"top_k", 0},
              {"top_p", 1.0},
              {"min_p", 0.0},
              {"n_probs", n_probs}};
}

std::vector<json> streamed_probabilities(uint16_t port, json body) {
  body["stream"] = true;
  const HttpResult streamed = fetch(port, "POST", "/completion", body.dump());
  EXPECT_EQ(streamed.status, 200) << streamed.body;
  std::vector<json> out;
  for (const std::string& data : sse_data(streamed.body)) {
    const json chunk = json::parse(data);
    for (const json& entry : chunk.value("completion_probabilities", json::array()))
      out.push_back(entry);
  }
  return out;
}

// Where nothing changes the row, the draw's distribution is the model's: each prob is the
// exp of the logprob the same request reports without post_sampling_probs, and the same
// tokens are drawn.
TEST(PostSamplingHttp, OverAnUntouchedRowTheyAreTheModelsProbabilities) {
  const uint16_t port = shared_server().port();
  json body = whole_row(8, 5);
  const json model = post_json(port, "/completion", body);
  body["post_sampling_probs"] = true;
  const json drawn = post_json(port, "/completion", body);
  EXPECT_EQ(drawn["content"], model["content"]);
  EXPECT_EQ(drawn["generation_settings"]["post_sampling_probs"], true);
  const json& p = drawn["completion_probabilities"];
  const json& lp = model["completion_probabilities"];
  ASSERT_FALSE(p.empty()) << drawn.dump();
  ASSERT_EQ(lp.size(), p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(p[i]["id"], lp[i]["id"]);
    EXPECT_FALSE(p[i].contains("logprob"));
    EXPECT_NEAR(p[i]["prob"].get<double>(), std::exp(lp[i]["logprob"].get<double>()), 1e-5);
    ASSERT_EQ(p[i]["top_probs"].size(), 5u);
    for (size_t j = 0; j < 5; ++j) {
      const json& top = p[i]["top_probs"][j];
      EXPECT_EQ(top["id"], lp[i]["top_logprobs"][j]["id"]);
      EXPECT_EQ(top["bytes"], lp[i]["top_logprobs"][j]["bytes"]);
      EXPECT_NEAR(top["prob"].get<double>(),
                  std::exp(lp[i]["top_logprobs"][j]["logprob"].get<double>()), 1e-5);
    }
  }
  EXPECT_EQ(streamed_probabilities(port, body), std::vector<json>(p.begin(), p.end()));
}

// top_k keeps k tokens: the draw weighs only them, so their probabilities add up to 1, and
// no more than k are listed however many are asked for.
TEST(PostSamplingHttp, TopKsTokensAreRenormalized) {
  const uint16_t port = shared_server().port();
  json body = whole_row(6, 20);
  body["top_k"] = 4;
  body["ignore_eos"] = true;  // six tokens
  body["post_sampling_probs"] = true;
  const json drawn = post_json(port, "/completion", body);
  const json& p = drawn["completion_probabilities"];
  ASSERT_EQ(p.size(), 6u) << drawn.dump();
  for (const json& entry : p) {
    ASSERT_EQ(entry["top_probs"].size(), 4u) << entry.dump();
    double sum = 0, previous = 1.0;
    bool chosen_listed = false;
    for (const json& top : entry["top_probs"]) {
      const double prob = top["prob"].get<double>();
      EXPECT_LE(prob, previous);
      previous = prob;
      sum += prob;
      if (top["id"] == entry["id"]) {
        chosen_listed = true;
        EXPECT_EQ(top["prob"], entry["prob"]);
      }
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
    EXPECT_TRUE(chosen_listed);
  }
  EXPECT_EQ(streamed_probabilities(port, body), std::vector<json>(p.begin(), p.end()));
}

// A grammar limits the draw to the tokens it allows: a classifier reads their
// probabilities, which add up to 1 over them.
TEST(PostSamplingHttp, AGrammarsTokensShareAllTheMass) {
  const uint16_t port = shared_server().port();
  json body = whole_row(1, 100);
  body["grammar"] = "root ::= [0-9]";
  body["post_sampling_probs"] = true;
  const json drawn = post_json(port, "/completion", body);
  const json& entry = drawn["completion_probabilities"].at(0);
  ASSERT_FALSE(entry["top_probs"].empty());
  ASSERT_LT(entry["top_probs"].size(), 100u) << "every allowed token is listed";
  double sum = 0;
  for (const json& top : entry["top_probs"]) {
    const std::string text = top["token"];
    ASSERT_EQ(text.size(), 1u) << text;
    EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(text[0]))) << text;
    sum += top["prob"].get<double>();
  }
  EXPECT_NEAR(sum, 1.0, 1e-5);
  // The model's own probabilities of the same tokens add up to less.
  body.erase("post_sampling_probs");
  const json model = post_json(port, "/completion", body);
  double model_sum = 0;
  for (const json& top : model["completion_probabilities"].at(0)["top_logprobs"]) {
    const std::string text = top["token"];
    if (text.size() == 1 && std::isdigit(static_cast<unsigned char>(text[0])))
      model_sum += std::exp(top["logprob"].get<double>());
  }
  EXPECT_LT(model_sum, 0.99);
}

// Greedy decoding draws nothing: each token is certain and listed alone (as llama-server
// drops the candidates greedy leaves at probability 0).
TEST(PostSamplingHttp, AGreedyTokenIsCertain) {
  const uint16_t port = shared_server().port();
  json body = whole_row(5, 3);
  body["temperature"] = 0;
  body["post_sampling_probs"] = true;
  const json drawn = post_json(port, "/completion", body);
  for (const json& entry : drawn["completion_probabilities"]) {
    EXPECT_EQ(entry["prob"], 1.0);
    ASSERT_EQ(entry["top_probs"].size(), 1u);
    EXPECT_EQ(entry["top_probs"][0]["id"], entry["id"]);
  }
}

// Chat with logprobs: llama-server's shape with prob and top_probs in logprobs.content.
TEST(PostSamplingHttp, ChatCarriesThemInLlamaServersShape) {
  const uint16_t port = shared_server().port();
  json body = {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})},
               {"max_tokens", 4},
               {"seed", 3},
               {"temperature", 0.7},
               {"top_k", 3},
               {"logprobs", true},
               {"top_logprobs", 5},
               {"post_sampling_probs", true}};
  const json answer = post_json(port, "/v1/chat/completions", body);
  const json& content = answer["choices"][0]["logprobs"]["content"];
  ASSERT_FALSE(content.empty()) << answer.dump();
  for (const json& entry : content) {
    EXPECT_TRUE(entry.contains("id"));
    EXPECT_FALSE(entry.contains("logprob"));
    EXPECT_GT(entry["prob"].get<double>(), 0.0);
    EXPECT_LE(entry["top_probs"].size(), 3u);  // top_k's 3 at most
    double sum = 0;
    for (const json& top : entry["top_probs"]) sum += top["prob"].get<double>();
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
  body["stream"] = true;
  const HttpResult streamed = fetch(port, "POST", "/v1/chat/completions", body.dump());
  json pieces = json::array();
  for (const std::string& data : sse_data(streamed.body)) {
    if (data == "[DONE]") continue;
    const json chunk = json::parse(data);
    if (chunk["choices"].empty() || chunk["choices"][0]["logprobs"].is_null()) continue;
    for (const json& entry : chunk["choices"][0]["logprobs"]["content"]) pieces.push_back(entry);
  }
  EXPECT_EQ(pieces, content);
}

TEST(PostSamplingHttp, RoutesThatCannotCarryThemRefuseThem) {
  const uint16_t port = shared_server().port();
  for (const char* field : {"post_sampling_probs", "return_tokens"}) {
    const HttpResult refused =
        fetch(port, "POST", "/v1/completions",
              json{{"prompt", "x"}, {"max_tokens", 1}, {"logprobs", 1}, {field, true}}.dump());
    EXPECT_EQ(refused.status, 400) << refused.body;
    EXPECT_EQ(refused.json()["error"]["param"], field);
  }
  const HttpResult typed = fetch(port, "POST", "/completion",
                                 json{{"prompt", "x"}, {"post_sampling_probs", "true"}}.dump());
  EXPECT_EQ(typed.status, 400);
  EXPECT_EQ(typed.json()["error"]["param"], "post_sampling_probs");
}

// llama-server's clients ask for many more alternatives than OpenAI's 20.
TEST(PostSamplingHttp, NProbsReachesWellPastOpenAisTwenty) {
  const uint16_t port = shared_server().port();
  const json answer = post_json(port, "/completion", whole_row(1, 100));
  EXPECT_EQ(answer["completion_probabilities"].at(0)["top_logprobs"].size(), 100u);
  EXPECT_EQ(answer["generation_settings"]["n_probs"], 100);
}

// return_tokens: the whole object's tokens are the generated ids, which detokenize to its
// content; each streamed piece lists the ids that made it, whatever return_tokens says.
TEST(ReturnTokensHttp, TheGeneratedIdsComeBack) {
  const uint16_t port = shared_server().port();
  json body = whole_row(12, 0);
  body.erase("n_probs");
  body["ignore_eos"] = true;  // twelve tokens
  const json plain = post_json(port, "/completion", body);
  EXPECT_EQ(plain["tokens"], json::array());
  body["return_tokens"] = true;
  const json whole = post_json(port, "/completion", body);
  const std::vector<int32_t> ids = whole["tokens"];
  ASSERT_EQ(ids.size(), 12u) << whole.dump();
  const json text = post_json(port, "/detokenize", json{{"tokens", ids}});
  EXPECT_EQ(text["content"], whole["content"]);
  for (bool return_tokens : {true, false}) {
    body["return_tokens"] = return_tokens;
    body["stream"] = true;
    const HttpResult streamed = fetch(port, "POST", "/completion", body.dump());
    std::vector<int32_t> pieces;
    for (const std::string& data : sse_data(streamed.body)) {
      const json chunk = json::parse(data);
      if (chunk["stop"] == true) {
        EXPECT_EQ(chunk["tokens"], json::array());  // as llama-server's last chunk
        continue;
      }
      const std::vector<int32_t> some = chunk["tokens"];
      EXPECT_FALSE(some.empty()) << data;
      pieces.insert(pieces.end(), some.begin(), some.end());
    }
    EXPECT_EQ(pieces, ids);
  }
}

// Tokens that make no text (an EOS, a stop string's) are listed by a stream as by the whole
// object, with or without their probabilities.
TEST(ReturnTokensHttp, AStreamListsTheIdsOfTokensThatMadeNoText) {
  const uint16_t port = shared_server().port();
  json body = whole_row(12, 0);
  body.erase("n_probs");
  body["return_tokens"] = true;
  body["ignore_eos"] = true;
  const json free_run = post_json(port, "/completion", body);
  const std::string content = free_run["content"];
  // A stop string mid-output: an ASCII letter after the first few bytes.
  size_t at = 3;
  while (at < content.size() && !std::isalpha(static_cast<unsigned char>(content[at]))) ++at;
  ASSERT_LT(at, content.size()) << content;
  body["stop"] = {content.substr(at, 1)};
  const json grammar = {{"prompt", "Answer:"},
                        {"n_predict", 5},
                        {"seed", 3},
                        {"grammar", R"(root ::= "yes" | "no")"},
                        {"return_tokens", true}};
  for (json request : {body, grammar}) {
    const json whole = post_json(port, "/completion", request);
    ASSERT_FALSE(whole["tokens"].empty()) << whole.dump();
    for (int n_probs : {0, 1}) {
      request["n_probs"] = n_probs;
      request["stream"] = true;
      std::vector<int32_t> pieces;
      for (const std::string& data :
           sse_data(fetch(port, "POST", "/completion", request.dump()).body)) {
        const std::vector<int32_t> some = json::parse(data)["tokens"];
        pieces.insert(pieces.end(), some.begin(), some.end());
      }
      EXPECT_EQ(json(pieces), whole["tokens"]) << request.dump();
      request.erase("stream");
    }
  }
}

// A streamed answer's final object keeps only response_fields, as the whole one does.
TEST(ReturnTokensHttp, ResponseFieldsShapeTheLastStreamedObject) {
  const uint16_t port = shared_server().port();
  const json body = {{"prompt", "x"},
                     {"n_predict", 2},
                     {"stream", true},
                     {"response_fields", {"stop_type", "timings/predicted_n"}}};
  const std::vector<std::string> events =
      sse_data(fetch(port, "POST", "/completion", body.dump()).body);
  ASSERT_FALSE(events.empty());
  const json last = json::parse(events.back());
  EXPECT_EQ(last.size(), 2u) << last.dump();
  EXPECT_TRUE(last.contains("stop_type"));
  EXPECT_EQ(last["timings/predicted_n"], 2);
}

// An end by EOS still lists the EOS token, as llama-server's generated_tokens does.
TEST(ReturnTokensHttp, AnEndOfGenerationTokenIsListed) {
  const uint16_t port = shared_server().port();
  const std::string eos_text = fetch(port, "GET", "/props").json()["eos_token"];
  const json eos =
      post_json(port, "/tokenize",
                json{{"content", eos_text}, {"add_special", false}, {"parse_special", true}});
  ASSERT_EQ(eos["tokens"].size(), 1u);
  const int32_t eos_id = eos["tokens"][0];
  json body = whole_row(8, 0);
  body.erase("n_probs");
  body["return_tokens"] = true;
  body["logit_bias"] = json::array({json::array({eos_id, 100})});
  const json answer = post_json(port, "/completion", body);
  EXPECT_EQ(answer["stop_type"], "eos");
  EXPECT_EQ(answer["content"], "");
  EXPECT_EQ(answer["tokens"], json::array({eos_id}));
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
