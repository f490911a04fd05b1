// `tandem serve --spec-tokens`: over HTTP, the answers equal those of a server without
// speculative decoding (text, logprobs, n choices, streamed or whole, chat), /metrics
// counts the drafts, and the startup line says it is on.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using json = nlohmann::json;

// What of an answer must not change: everything but its id and creation time.
json comparable(json answer) {
  answer.erase("id");
  answer.erase("created");
  answer.erase("system_fingerprint");
  return answer;
}

// A streamed answer per choice: its text, its tokens' logprobs and its finish, joined
// over the chunks (a step that accepts drafts streams several tokens at once, so the
// chunks of different choices may interleave otherwise).
std::map<int, json> comparable_stream(const HttpResult& r) {
  std::map<int, json> out;
  for (const std::string& data : sse_data(r.body)) {
    if (data == "[DONE]") continue;
    const json chunk = json::parse(data);
    for (const json& c : chunk["choices"]) {
      json& choice = out[c["index"].get<int>()];
      if (choice.is_null()) choice = {{"text", ""}, {"logprobs", json::array()}};
      choice["text"] = choice["text"].get<std::string>() + c["text"].get<std::string>();
      if (c["logprobs"].is_object())
        for (const json& lp : c["logprobs"]["token_logprobs"]) choice["logprobs"].push_back(lp);
      if (!c["finish_reason"].is_null()) choice["finish_reason"] = c["finish_reason"];
    }
  }
  return out;
}

TEST(SpeculationHttp, AnswersEqualAServerWithoutDrafts) {
  ServerProcess spec(tiny_model(), {"--spec-tokens", "5", "--spec-ngram", "1:3"});
  const uint16_t plain = shared_server().port();
  EXPECT_NE(spec.ready_line().find("speculative decoding: n-gram 1:3 drafts of up to 5 tokens"),
            std::string::npos)
      << spec.ready_line();
  const std::vector<json> bodies = {
      {{"prompt", "Hello Hello Hello"},
       {"max_tokens", 48},
       {"temperature", 0},
       {"seed", 1},
       {"ignore_eos", true}},
      {{"prompt", "abc abc abc"},
       {"max_tokens", 40},
       {"temperature", 0},
       {"logprobs", 3},
       {"seed", 2},
       {"ignore_eos", true}},
      {{"prompt", "one two one two"},
       {"max_tokens", 32},
       {"temperature", 0.8},
       {"seed", 11},
       {"n", 3},
       {"presence_penalty", -1.0},
       {"ignore_eos", true}},
  };
  for (const json& body : bodies) {
    const json want = post_json(plain, "/v1/completions", body);
    const json got = post_json(spec.port(), "/v1/completions", body);
    EXPECT_EQ(comparable(got), comparable(want)) << body.dump();
    json streamed = body;
    streamed["stream"] = true;
    const HttpResult a = fetch(plain, "POST", "/v1/completions", streamed.dump());
    const HttpResult b = fetch(spec.port(), "POST", "/v1/completions", streamed.dump());
    ASSERT_EQ(b.status, 200) << b.body;
    EXPECT_EQ(comparable_stream(b), comparable_stream(a)) << body.dump();
    EXPECT_EQ(comparable_stream(b).size(), static_cast<size_t>(body.value("n", 1)));
  }
  const json chat = {{"messages", {{{"role", "user"}, {"content", "say it again and again"}}}},
                     {"max_tokens", 40},
                     {"temperature", 0},
                     {"logprobs", true},
                     {"top_logprobs", 2},
                     {"seed", 3}};
  EXPECT_EQ(comparable(post_json(spec.port(), "/v1/chat/completions", chat)),
            comparable(post_json(plain, "/v1/chat/completions", chat)));

  const std::string metrics = fetch(spec.port(), "GET", "/metrics").body;
  const double drafted = metric_value(metrics, "tandem_spec_draft_tokens_total").value_or(-1);
  const double accepted = metric_value(metrics, "tandem_spec_accepted_tokens_total").value_or(-1);
  EXPECT_GT(accepted, 0) << metrics;
  EXPECT_GE(drafted, accepted);
  EXPECT_GT(metric_value(metrics, "tandem_spec_verify_rows_total").value_or(0), 0);
  EXPECT_TRUE(
      metric_value(metrics, "tandem_chain_breaks_total{reason=\"speculation\"}").has_value());
  // Without --spec-tokens the counters are there, at 0.
  const std::string off = fetch(plain, "GET", "/metrics").body;
  EXPECT_EQ(metric_value(off, "tandem_spec_draft_tokens_total"), 0.0);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
