// The chat template in service: the GGUF's own (rendered by tandem's Jinja interpreter),
// --chat-template overriding it, /apply-template showing exactly what the model is fed,
// tool turns, templates that refuse a conversation, models without one, and the serving
// flags that go with them (--served-model-name A B, --ctx-size).
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runner/model/make_model.h"
#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using nlohmann::json;

const char* kHiBody = R"({"messages": [{"role": "user", "content": "hi"}]})";

std::filesystem::path write_file(const ScratchDir& dir, const std::string& name,
                                 const std::string& text) {
  const std::filesystem::path path = dir.file(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(ChatTemplate, ApplyTemplateRendersTheFilesOwnTemplate) {
  const uint16_t port = shared_server().port();
  const HttpResult result = fetch(port, "POST", "/apply-template", kHiBody);
  ASSERT_EQ(result.status, 200) << result.body;
  // make-model's files carry ChatML in tokenizer.chat_template.
  EXPECT_EQ(result.json()["prompt"], "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  const HttpResult without =
      fetch(port, "POST", "/apply-template",
            R"({"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": false})");
  EXPECT_EQ(without.json()["prompt"], "<|im_start|>user\nhi<|im_end|>\n");
  EXPECT_EQ(fetch(port, "POST", "/apply-template", R"({"messages": 3})").json()["error"]["param"],
            "messages");
}

// A file with tokenizer.chat_template.tool_use beside its default template: requests with
// tools render through it, as transformers (so vLLM) and llama.cpp choose it (QA: the
// tools of a Hermes-style file never reached the prompt); the others through the default.
TEST(ChatTemplate, RequestsWithToolsRenderThroughTheFilesToolUseTemplate) {
  ScratchDir dir;
  const gguf::File tiny = gguf::File::open(tiny_model());
  gguf::Writer vocab;
  for (const auto& [key, value] : tiny.metadata())
    if (key.starts_with("tokenizer.") && key != "tokenizer.chat_template") vocab.add(key, value);
  vocab.add_string("tokenizer.chat_template", "DEFAULT {{ messages[0].content }}");
  vocab.add_string("tokenizer.chat_template.tool_use",
                   "TOOLS {{ tools | length }} {{ messages[0].content }}");
  vocab.write(dir.file("vocab.gguf"));
  make_model::MakeModelOptions options;
  options.vocab = dir.file("vocab.gguf");
  options.out = dir.file("tool-use.gguf");
  make_model::write_random_model(options);
  ServerProcess server(options.out);
  EXPECT_EQ(fetch(server.port(), "POST", "/apply-template", kHiBody).json()["prompt"],
            "DEFAULT hi");
  const HttpResult tools = fetch(server.port(), "POST", "/apply-template", R"({
      "messages": [{"role": "user", "content": "hi"}],
      "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]})");
  ASSERT_EQ(tools.status, 200) << tools.body;
  EXPECT_EQ(tools.json()["prompt"], "TOOLS 1 hi");
}

TEST(ChatTemplate, ToolTurnsAreServed) {
  const HttpResult result = fetch(shared_server().port(), "POST", "/v1/chat/completions", R"({
      "max_tokens": 2, "ignore_eos": true, "messages": [
      {"role": "user", "content": "weather?"},
      {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
          "function": {"name": "weather", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]})");
  ASSERT_EQ(result.status, 200) << result.body;
  EXPECT_EQ(result.json()["usage"]["completion_tokens"], 2);
}

TEST(ChatTemplate, ChatTemplateFileOverridesTheFilesAndIsListed) {
  ScratchDir dir;
  const auto path = write_file(
      dir, "t.jinja",
      "{% for m in messages %}[{{ m.role }}:{{ m.content | upper }}]{% endfor %}"
      "{% if messages[0].role != 'user' %}{{ raise_exception('Start with a user turn, please') }}"
      "{% endif %}");
  ServerProcess server(tiny_model(), {"--chat-template", path.string()});
  const HttpResult rendered = fetch(server.port(), "POST", "/apply-template", kHiBody);
  EXPECT_EQ(rendered.json()["prompt"], "[user:HI]");
  const json models = fetch(server.port(), "GET", "/v1/models").json();
  EXPECT_EQ(models["data"][0]["chat_template"], path.string());
  EXPECT_NE(server.ready_line().find("chat template " + path.string()), std::string::npos);
  // The template's raise_exception is the client's 400, with its message.
  const HttpResult raised =
      fetch(server.port(), "POST", "/v1/chat/completions",
            R"({"messages": [{"role": "assistant", "content": "hi"}], "max_tokens": 1})");
  EXPECT_EQ(raised.status, 400);
  EXPECT_EQ(raised.json()["error"]["message"], "Start with a user turn, please");
}

TEST(ChatTemplate, AnUnsupportedConstructFailsAtLoadNamingIt) {
  ScratchDir dir;
  const auto path = write_file(dir, "bad.jinja", "{% include 'other.jinja' %}");
  const CommandResult result = run_tandem(
      {"serve", "--model", tiny_model().string(), "--port", "0", "--chat-template", path.string()});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("include"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("line 1"), std::string::npos) << result.err;
}

TEST(ChatTemplate, AModelWithoutATemplateRefusesChatButServesCompletions) {
  TANDEM_REQUIRE_SHARED();
  ScratchDir dir;
  const auto model = dir.file("no-template.gguf");
  const CommandResult made =
      run_tandem({"make-model", "--shape", "tiny", "--out", model.string(), "--vocab",
                  (*shared_dir() / "vocab" / "ggml-vocab-gpt-2.gguf").string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  ServerProcess server(model);
  const HttpResult chat = fetch(server.port(), "POST", "/v1/chat/completions", kHiBody);
  EXPECT_EQ(chat.status, 400);
  EXPECT_NE(chat.json()["error"]["message"].get<std::string>().find("--chat-template"),
            std::string::npos);
  EXPECT_TRUE(
      fetch(server.port(), "GET", "/v1/models").json()["data"][0]["chat_template"].is_null());
  EXPECT_EQ(fetch(server.port(), "POST", "/v1/completions", R"({"prompt": "hi", "max_tokens": 1})")
                .status,
            200);
}

TEST(ChatTemplate, EveryServedNameIsListedAndAnswered) {
  ServerProcess server(tiny_model(), {"--served-model-name", "team/tiny", "tiny-alias"});
  const json models = fetch(server.port(), "GET", "/v1/models").json();
  ASSERT_EQ(models["data"].size(), 2u);
  EXPECT_EQ(models["data"][0]["id"], "team/tiny");
  EXPECT_EQ(models["data"][1]["id"], "tiny-alias");
  const HttpResult alias = fetch(server.port(), "POST", "/v1/completions",
                                 R"({"model": "tiny-alias", "prompt": "a", "max_tokens": 1})");
  ASSERT_EQ(alias.status, 200) << alias.body;
  EXPECT_EQ(alias.json()["model"], "team/tiny");  // responses report the first, as vLLM does
}

TEST(ChatTemplate, CtxSizeBoundsTheContext) {
  ServerProcess server(tiny_model(), {"--ctx-size", "64"});
  EXPECT_EQ(fetch(server.port(), "GET", "/v1/models").json()["data"][0]["max_model_len"], 64);
  const HttpResult long_prompt =
      fetch(server.port(), "POST", "/v1/completions",
            json{{"prompt", std::string(100, 'a')}, {"max_tokens", 1}}.dump());
  EXPECT_EQ(long_prompt.status, 400);
  EXPECT_EQ(long_prompt.json()["error"]["code"], "context_length_exceeded");
  // Without max_tokens, generation ends at the 64-token context.
  const HttpResult to_the_end =
      fetch(server.port(), "POST", "/v1/chat/completions",
            R"({"messages": [{"role": "user", "content": "hi"}], "ignore_eos": true})");
  ASSERT_EQ(to_the_end.status, 200) << to_the_end.body;
  const json usage = to_the_end.json()["usage"];
  EXPECT_EQ(usage["prompt_tokens"].get<int>() + usage["completion_tokens"].get<int>(), 64);
  EXPECT_EQ(to_the_end.json()["choices"][0]["finish_reason"], "length");

  const CommandResult beyond =
      run_tandem({"serve", "--model", tiny_model().string(), "--port", "0", "--ctx-size", "4096"});
  EXPECT_EQ(beyond.exit_code, 2);
  EXPECT_NE(beyond.err.find("--ctx-size 4096"), std::string::npos) << beyond.err;
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
