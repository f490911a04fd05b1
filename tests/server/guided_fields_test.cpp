// vLLM's guided_* and structured_outputs fields through the real grammar engine, and
// completions' add_special_tokens, against a real `tandem serve` (tiny random-weight model).
#include <algorithm>
#include <regex>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "protocol/completion_request.h"
#include "runner/grammar/grammar.h"
#include "runner/grammar/recognizer.h"
#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using nlohmann::json;

bool grammar_accepts(const std::shared_ptr<const grammar::Grammar>& g, std::string_view text) {
  grammar::Recognizer recognizer(g);
  return recognizer.feed(text) && recognizer.accepts();
}

// The choices that need escaping in a GBNF literal, and some that look like GBNF.
const std::vector<std::string> kAwkwardChoices = {
    "plain",      "say \"hi\"", "back\\slash", "\\\"",    "two\nlines\r\n", "tab\there",
    "bell\x07",   "del\x7f",    "ünïcödé ✓",   "emoji 🎉", "[a-z]",          "x | y",
    "rule ::= z", "-",          "\\n",         "",
};

TEST(GuidedChoice, TheGrammarAcceptsExactlyTheChoices) {
  const json body = {{"prompt", "p"}, {"guided_choice", kAwkwardChoices}};
  auto parsed = parse_completion_request(body.dump(), Endpoint::kCompletions);
  ASSERT_TRUE(std::holds_alternative<CompletionRequest>(parsed))
      << std::get<ApiError>(parsed).message;
  const OutputConstraint& constraint = std::get<CompletionRequest>(parsed).constraint;
  ASSERT_EQ(constraint.kind, OutputConstraint::Kind::kGbnf);
  const auto g = grammar::parse_gbnf(constraint.text);  // throws on a bad escape
  for (const std::string& choice : kAwkwardChoices) {
    EXPECT_TRUE(grammar_accepts(g, choice)) << choice;
    EXPECT_FALSE(grammar_accepts(g, choice + "!")) << choice;
  }
  // What the escapes would read as if they were written wrongly.
  for (const char* other : {"say hi", "back\\\\slash", "two\\nlines", "n", "\\", "a", "x", "y",
                            "rule", "z", "ünïcödé", "bell"}) {
    EXPECT_FALSE(grammar_accepts(g, other)) << other;
  }
}

TEST(GuidedFieldsHttp, GuidedChoiceOutputIsOneOfTheChoicesOnBothEndpoints) {
  const uint16_t port = shared_server().port();
  const std::vector<std::string> choices = {"red \"wine\"", "blue\\sky", "grün"};
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const json completion = {
        {"prompt", "Colour: "}, {"max_tokens", 40}, {"seed", seed}, {"guided_choice", choices}};
    const HttpResult plain = fetch(port, "POST", "/v1/completions", completion.dump());
    ASSERT_EQ(plain.status, 200) << plain.body;
    const std::string text = plain.json()["choices"][0]["text"];
    EXPECT_NE(std::find(choices.begin(), choices.end(), text), choices.end()) << text;
    const json chat = {{"messages", {{{"role", "user"}, {"content", "Colour?"}}}},
                       {"max_tokens", 40},
                       {"seed", seed},
                       {"structured_outputs", {{"choice", choices}}}};
    const HttpResult answer = fetch(port, "POST", "/v1/chat/completions", chat.dump());
    ASSERT_EQ(answer.status, 200) << answer.body;
    const std::string content = answer.json()["choices"][0]["message"]["content"];
    EXPECT_NE(std::find(choices.begin(), choices.end(), content), choices.end()) << content;
  }
}

// A regex where ECMAScript (std::regex, the oracle) and the engine agree.
TEST(GuidedFieldsHttp, GuidedRegexOutputFullyMatchesOnBothEndpoints) {
  const uint16_t port = shared_server().port();
  const std::string regex = "[A-Z][a-z]{2,5} [0-9]{3}";
  const std::regex oracle(regex);
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE(seed);
    const json completion = {{"prompt", "Name and number: "},
                             {"max_tokens", 40},
                             {"seed", seed},
                             {"temperature", 1.0},
                             {"guided_regex", regex}};
    const HttpResult plain = fetch(port, "POST", "/v1/completions", completion.dump());
    ASSERT_EQ(plain.status, 200) << plain.body;
    const json choice = plain.json()["choices"][0];
    EXPECT_TRUE(std::regex_match(choice["text"].get<std::string>(), oracle)) << choice["text"];
    EXPECT_EQ(choice["finish_reason"], "stop");
    json chat = {{"messages", {{{"role", "user"}, {"content", "Name and number?"}}}},
                 {"max_tokens", 40},
                 {"seed", seed},
                 {"temperature", 1.0}};
    chat[seed % 2 == 0 ? "guided_regex" : "structured_outputs"] =
        seed % 2 == 0 ? json(regex) : json{{"regex", regex}};
    const HttpResult answer = fetch(port, "POST", "/v1/chat/completions", chat.dump());
    ASSERT_EQ(answer.status, 200) << answer.body;
    const json message = answer.json()["choices"][0];
    EXPECT_TRUE(std::regex_match(message["message"]["content"].get<std::string>(), oracle))
        << message["message"]["content"];
    EXPECT_EQ(message["finish_reason"], "stop");
  }
}

TEST(GuidedFieldsHttp, CompileErrorsNameTheFieldSent) {
  const uint16_t port = shared_server().port();
  const auto refused_param = [port](const json& extra) {
    json body = {{"prompt", "p"}, {"max_tokens", 4}};
    body.update(extra);
    const HttpResult result = fetch(port, "POST", "/v1/completions", body.dump());
    EXPECT_EQ(result.status, 400) << result.body;
    return result.json()["error"]["param"].get<std::string>();
  };
  EXPECT_EQ(refused_param({{"guided_json", {{"type", "integer"}, {"multipleOf", 3}}}}),
            "guided_json");
  EXPECT_EQ(refused_param({{"guided_json", R"({"type": "integer", "multipleOf": 3})"}}),
            "guided_json");
  EXPECT_EQ(refused_param({{"guided_grammar", "root ::= nowhere"}}), "guided_grammar");
  EXPECT_EQ(refused_param({{"structured_outputs", {{"grammar", "root ::= nowhere"}}}}),
            "structured_outputs.grammar");
  EXPECT_EQ(refused_param({{"guided_regex", "a(?=b)"}}), "guided_regex");
  EXPECT_EQ(refused_param({{"guided_regex", "(a)\\1"}}), "guided_regex");
  EXPECT_EQ(refused_param({{"structured_outputs", {{"regex", "\\bword"}}}}),
            "structured_outputs.regex");
}

TEST(AddSpecialTokens, FalseLeavesTheBosOutOfACompletionsTextPrompt) {
  const uint16_t port = shared_server().port();
  const auto prompt_tokens = [port](const json& extra) {
    json body = {{"prompt", "Hello there"}, {"max_tokens", 1}, {"temperature", 0}};
    body.update(extra);
    const HttpResult result = fetch(port, "POST", "/v1/completions", body.dump());
    EXPECT_EQ(result.status, 200) << result.body;
    return result.json()["usage"]["prompt_tokens"].get<int>();
  };
  const json tokenized = fetch(port, "POST", "/tokenize",
                               json{{"content", "Hello there"}, {"add_special", false}}.dump())
                             .json();
  const int bare = static_cast<int>(tokenized["tokens"].size());
  EXPECT_EQ(prompt_tokens(json::object()), bare + 1);
  EXPECT_EQ(prompt_tokens({{"add_special_tokens", true}}), bare + 1);
  EXPECT_EQ(prompt_tokens({{"add_special_tokens", false}}), bare);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
