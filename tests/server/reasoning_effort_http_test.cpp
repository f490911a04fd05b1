// reasoning_effort on /v1/chat/completions (and /v1/responses' reasoning.effort) against a
// real `tandem serve` with published chat templates from ../shared: the template gets the
// level as reasoning_effort (Cohere's Command-A reads it), "none" turns thinking off through
// enable_thinking where the template reads that instead (Qwen3), and a level the template
// cannot honour is a 400 naming the field: a template that always reasons (DeepSeek-R1's
// Llama distill) refuses even "none", one that reads only enable_thinking refuses the
// levels, and a template without reasoning (the tiny model's) takes "none" alone.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/common/test_support.h"
#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using nlohmann::json;

// The tiny model's context (512) is short for Command-A's long system preamble: the demo
// model's holds 2048.
std::unique_ptr<ServerProcess> start_with(const char* chat_template, bool long_context = false) {
  const auto shared = shared_dir();
  const auto path = shared ? *shared / "chat-templates" / chat_template : std::filesystem::path();
  if (!shared || !std::filesystem::is_regular_file(path)) return nullptr;
  return std::make_unique<ServerProcess>(
      long_context ? demo_model() : tiny_model(),
      std::vector<std::string>{"--chat-template", path.string()});
}

const json kHi = json::array({{{"role", "user"}, {"content", "Hi"}}});

// The prompt /apply-template renders for `effort` (HTTP status, and the prompt or the
// error's param).
std::pair<int, std::string> rendered(uint16_t port, const char* effort) {
  const HttpResult r = fetch(port, "POST", "/apply-template",
                             json{{"messages", kHi}, {"reasoning_effort", effort}}.dump());
  const json body = r.json();
  return {r.status, r.status == 200 ? body["prompt"].get<std::string>()
                                    : body["error"]["param"].get<std::string>()};
}

json chat(const char* effort) {
  return json{{"messages", kHi}, {"max_tokens", 2}, {"reasoning_effort", effort}};
}

TEST(ReasoningEffort, ATemplateThatReadsItGetsTheLevel) {
  TANDEM_REQUIRE_SHARED();
  const auto server = start_with("Cohere2MoE.jinja", /*long_context=*/true);
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();
  // The generation prompt opens the thinking, or opens and closes it at once for "none".
  const auto [high_status, high] = rendered(port, "high");
  ASSERT_EQ(high_status, 200) << high;
  EXPECT_TRUE(high.ends_with("<|START_THINKING|>")) << high;
  const auto [none_status, none] = rendered(port, "none");
  ASSERT_EQ(none_status, 200) << none;
  EXPECT_TRUE(none.ends_with("<|START_THINKING|><|END_THINKING|>")) << none;
  EXPECT_EQ(fetch(port, "POST", "/v1/chat/completions", chat("low").dump()).status, 200);
  const HttpResult responses = fetch(
      port, "POST", "/v1/responses",
      json{{"input", "Hi"}, {"max_output_tokens", 2}, {"reasoning", {{"effort", "none"}}}}.dump());
  EXPECT_EQ(responses.status, 200) << responses.body;
  // The same variable from chat_template_kwargs must agree.
  json conflict = chat("low");
  conflict["chat_template_kwargs"] = {{"reasoning_effort", "high"}};
  const HttpResult refused = fetch(port, "POST", "/v1/chat/completions", conflict.dump());
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.json()["error"]["param"], "reasoning_effort");
}

// DeepSeek-V4's template reads reasoning_effort, but only to compare it with "max": every
// OpenAI level renders as "none" does, so it is refused; its own "max" goes through
// chat_template_kwargs.
TEST(ReasoningEffort, ALevelTheTemplateRendersAsNoneIsRefused) {
  TANDEM_REQUIRE_SHARED();
  const auto server = start_with("deepseek-ai-DeepSeek-V4.jinja");
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();
  const HttpResult r = fetch(port, "POST", "/apply-template",
                             json{{"messages", kHi}, {"reasoning_effort", "high"}}.dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["param"], "reasoning_effort");
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("renders this level as \"none\""),
            std::string::npos);
  EXPECT_EQ(fetch(port, "POST", "/apply-template",
                  json{{"messages", kHi},
                       {"chat_template_kwargs", {{"reasoning_effort", "max"}, {"thinking", true}}}}
                      .dump())
                .status,
            200);
}

TEST(ReasoningEffort, NoneTurnsThinkingOffThroughEnableThinking) {
  TANDEM_REQUIRE_SHARED();
  const auto server = start_with("Qwen-Qwen3-0.6B.jinja");
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();
  const auto [status, prompt] = rendered(port, "none");
  ASSERT_EQ(status, 200) << prompt;
  EXPECT_TRUE(prompt.ends_with("<think>\n\n</think>\n\n")) << prompt;  // Qwen3's "no thinking"
  EXPECT_EQ(rendered(port, "high"), std::make_pair(400, std::string("reasoning_effort")));
  const HttpResult refused =
      fetch(port, "POST", "/v1/responses",
            json{{"input", "Hi"}, {"reasoning", {{"effort", "medium"}}}}.dump());
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.json()["error"]["param"], "reasoning.effort");
  EXPECT_NE(refused.json()["error"]["message"].get<std::string>().find("enable_thinking"),
            std::string::npos);
  // "none" against the request's own enable_thinking: true is a contradiction.
  const HttpResult contradiction = fetch(port, "POST", "/v1/chat/completions",
                                         json{{"messages", kHi},
                                              {"reasoning_effort", "none"},
                                              {"chat_template_kwargs", {{"enable_thinking", true}}}}
                                             .dump());
  EXPECT_EQ(contradiction.status, 400);
  EXPECT_EQ(contradiction.json()["error"]["param"], "reasoning_effort");
}

TEST(ReasoningEffort, ATemplateThatAlwaysReasonsRefusesEvenNone) {
  TANDEM_REQUIRE_SHARED();
  const auto server = start_with("deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja");
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();
  for (const char* effort : {"none", "low"}) {
    const HttpResult r = fetch(port, "POST", "/v1/chat/completions", chat(effort).dump());
    EXPECT_EQ(r.status, 400) << effort;
    EXPECT_EQ(r.json()["error"]["param"], "reasoning_effort") << effort;
  }
}

TEST(ReasoningEffort, AModelWithoutReasoningTakesNoneAlone) {
  const uint16_t port = shared_server().port();
  EXPECT_EQ(fetch(port, "POST", "/v1/chat/completions", chat("none").dump()).status, 200);
  const HttpResult low = fetch(port, "POST", "/v1/chat/completions", chat("low").dump());
  EXPECT_EQ(low.status, 400);
  EXPECT_EQ(low.json()["error"]["param"], "reasoning_effort");
  for (const json& bad : {json("maximum"), json(3)}) {
    json body = chat("none");
    body["reasoning_effort"] = bad;
    const HttpResult r = fetch(port, "POST", "/v1/chat/completions", body.dump());
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_EQ(r.json()["error"]["param"], "reasoning_effort");
  }
  const HttpResult completions =
      fetch(port, "POST", "/v1/completions",
            json{{"prompt", "x"}, {"max_tokens", 1}, {"reasoning_effort", "low"}}.dump());
  EXPECT_EQ(completions.status, 400);
  EXPECT_EQ(completions.json()["error"]["param"], "reasoning_effort");
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
