// JinjaChatTemplate: the server's API over the interpreter. Compile errors name their
// position, raise_exception refuses the request with the template's message, the context
// is what transformers passes, and one compiled template renders from many threads at once.
#include "protocol/chat_prompt.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace tandem::TANDEM_UNITY_ID {
namespace {

constexpr const char* kChatml =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}";

JinjaChatTemplate compile(const std::string& source) {
  auto compiled = JinjaChatTemplate::compile(source);
  if (auto* error = std::get_if<ChatTemplateError>(&compiled)) {
    ADD_FAILURE() << error->describe();
    return std::get<JinjaChatTemplate>(JinjaChatTemplate::compile(""));
  }
  return std::get<JinjaChatTemplate>(std::move(compiled));
}

std::string render_text(const JinjaChatTemplate& chat_template,
                        const nlohmann::ordered_json& messages,
                        const ChatRenderOptions& options = {}) {
  const auto result = chat_template.render(messages, options);
  if (const auto* error = std::get_if<ChatTemplateError>(&result))
    return "ERROR: " + error->describe();
  return join_segments(std::get<std::vector<PromptSegment>>(result));
}

TEST(JinjaChatTemplate, ACompileErrorNamesItsLineAndColumn) {
  const auto compiled = JinjaChatTemplate::compile("{% for m in messages %}\n{{ m.content }\n");
  const auto* error = std::get_if<ChatTemplateError>(&compiled);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->kind, ChatTemplateError::Kind::kSyntax);
  EXPECT_EQ(error->line, 2);
  EXPECT_EQ(error->column, 14);
  EXPECT_EQ(error->describe(), "line 2, column 14: unexpected '}'");
}

TEST(JinjaChatTemplate, RendersParsedMessagesWithTheGenerationPrompt) {
  const auto chat_template = compile(kChatml);
  const std::vector<ChatMessage> messages = {{"system", "Be brief."}, {"user", "Hi"}};
  const auto result = chat_template.render(messages, ChatRenderOptions{});
  ASSERT_TRUE(std::holds_alternative<std::vector<PromptSegment>>(result));
  EXPECT_EQ(join_segments(std::get<std::vector<PromptSegment>>(result)),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
  ChatRenderOptions no_prompt;
  no_prompt.add_generation_prompt = false;
  EXPECT_EQ(render_text(chat_template, {{{"role", "user"}, {"content", "Hi"}}}, no_prompt),
            "<|im_start|>user\nHi<|im_end|>\n");
}

std::string render_request(const JinjaChatTemplate& chat_template, const ChatInputs& inputs) {
  const auto result = render_chat_request(chat_template, inputs, std::nullopt, std::nullopt);
  if (const auto* error = std::get_if<ApiError>(&result)) return "ERROR " + error->param;
  return join_segments(std::get<std::vector<PromptSegment>>(result));
}

// vLLM's continue_final_message, cut as transformers cuts it: the prompt ends right after
// the final message's text, so the model continues that message (an assistant's prefill).
TEST(JinjaChatTemplate, ContinueFinalMessageEndsThePromptInsideTheLastMessage) {
  const auto chat_template = compile(kChatml);
  ChatInputs inputs;
  inputs.messages = {{{"role", "user"}, {"content", "2+2?"}},
                     {{"role", "assistant"}, {"content", "The answer is"}}};
  inputs.continue_final_message = true;
  inputs.add_generation_prompt = false;
  EXPECT_EQ(render_request(chat_template, inputs),
            "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\nThe answer is");
  // The last place the text appears is the one continued, blanks the template kept stay.
  inputs.messages = {{{"role", "user"}, {"content", "Say x"}},
                     {{"role", "assistant"}, {"content", "x "}}};
  EXPECT_EQ(render_request(chat_template, inputs),
            "<|im_start|>user\nSay x<|im_end|>\n<|im_start|>assistant\nx ");
  // A template that rewrites the text leaves nothing to continue: refused by name.
  const auto upper =
      compile("{% for m in messages %}{{ m['role'] }}: {{ m['content'] | upper }}\n{% endfor %}");
  inputs.messages = {{{"role", "assistant"}, {"content", "abc"}}};
  EXPECT_EQ(render_request(upper, inputs), "ERROR continue_final_message");
}

TEST(JinjaChatTemplate, RaiseExceptionRefusesTheRequestWithTheTemplatesMessage) {
  const auto chat_template = compile(
      "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
      "{% endif %}ok");
  const auto result = chat_template.render(std::vector<ChatMessage>{{"system", "x"}}, {});
  const auto* error = std::get_if<ChatTemplateError>(&result);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->kind, ChatTemplateError::Kind::kRaised);
  EXPECT_EQ(error->message, "System role not supported");
}

TEST(JinjaChatTemplate, TheContextIsWhatTransformersPasses) {
  const auto chat_template = compile(
      "{{ bos_token is defined }}|{{ eos_token }}|{{ tools is none }}|{{ documents is none }}|"
      "{{ tools2 is defined }}|{{ enable_thinking }}|{{ messages|length }}");
  ChatRenderOptions options;
  options.eos_token = "</s>";
  options.extra = {{"enable_thinking", false}, {"messages", "ignored"}};
  EXPECT_EQ(render_text(chat_template, nlohmann::ordered_json::array(), options),
            "False|</s>|True|True|False|False|0");
  options.tools = nlohmann::ordered_json::array({{{"type", "function"}}});
  EXPECT_EQ(render_text(compile("{{ tools|tojson }}"), nlohmann::ordered_json::array(), options),
            R"([{"type": "function"}])");
}

TEST(JinjaChatTemplate, StrftimeNowReadsTheCallersClock) {
  ChatRenderOptions options;
  options.now = [] { return jinja::DateTime{2025, 1, 5, 9, 3, 0}; };
  EXPECT_EQ(render_text(compile("{{ strftime_now('%d %B %Y, %A %H:%M') }}"),
                        nlohmann::ordered_json::array(), options),
            "05 January 2025, Sunday 09:03");
  const std::string today =
      render_text(compile("{{ strftime_now('%Y') }}"), nlohmann::ordered_json::array());
  EXPECT_EQ(today.size(), 4u);
}

TEST(JinjaChatTemplate, OneCompiledTemplateRendersFromManyThreadsAtOnce) {
  const auto chat_template = compile(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
      "{{ m.content|upper }}{% endfor %}{{ ns.n }}");
  std::vector<std::thread> threads;
  std::vector<std::string> results(8);
  for (size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] {
      nlohmann::ordered_json messages = nlohmann::ordered_json::array();
      for (size_t i = 0; i <= t; ++i)
        messages.push_back({{"role", "user"}, {"content", "m" + std::to_string(t)}});
      for (int round = 0; round < 200; ++round) results[t] = render_text(chat_template, messages);
    });
  }
  for (auto& thread : threads) thread.join();
  for (size_t t = 0; t < results.size(); ++t) {
    std::string want;
    for (size_t i = 0; i <= t; ++i) want += "M" + std::to_string(t);
    EXPECT_EQ(results[t], want + std::to_string(t + 1));
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
