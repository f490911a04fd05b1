// The oracle: 42 published chat templates rendered by Python Jinja2 (configured as
// transformers does) for 9 conversations x add_generation_prompt (../shared/chat-templates,
// see its README). Every case must render byte for byte the same here, or stop with the
// same raise_exception message; and every from_input byte must come from the conversation.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/chat_prompt.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using nlohmann::ordered_json;

std::optional<std::filesystem::path> templates_dir() {
  const std::filesystem::path dir = std::filesystem::path(TANDEM_SHARED_DIR) / "chat-templates";
  if (!std::filesystem::is_regular_file(dir / "index.json")) return std::nullopt;
  return dir;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<std::string> template_names() {
  const auto dir = templates_dir();
  if (!dir) return {"absent"};
  std::vector<std::string> names;
  for (const auto& entry : ordered_json::parse(read_file(*dir / "index.json"))) {
    names.push_back(entry["name"].get<std::string>());
  }
  return names;
}

// Where two renders part, with a little context, for the failure message.
std::string first_difference(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  const size_t from = i < 40 ? 0 : i - 40;
  return "first difference at byte " + std::to_string(i) + "\n  want: ..." +
         ordered_json(want.substr(from, 100))
             .dump(-1, ' ', false, ordered_json::error_handler_t::replace) +
         "\n  got:  ..." +
         ordered_json(got.substr(from, 100))
             .dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

// Every from_input segment must be text of the request: part of some role or content.
void expect_input_segments_come_from(const std::vector<PromptSegment>& segments,
                                     const ordered_json& messages) {
  for (const PromptSegment& segment : segments) {
    if (!segment.from_input) continue;
    bool found = false;
    for (const auto& message : messages) {
      for (const char* field : {"role", "content"}) {
        const auto& value = message[field];
        found = found || (value.is_string() &&
                          value.get<std::string>().find(segment.text) != std::string::npos);
      }
    }
    EXPECT_TRUE(found) << "from_input segment not found in the request: "
                       << ordered_json(segment.text).dump();
  }
}

ChatRenderOptions options_for(const ordered_json& expected) {
  ChatRenderOptions options;
  options.add_generation_prompt = expected["add_generation_prompt"].get<bool>();
  if (expected["bos_token"].is_string())
    options.bos_token = expected["bos_token"].get<std::string>();
  if (expected["eos_token"].is_string())
    options.eos_token = expected["eos_token"].get<std::string>();
  options.now = [] { return jinja::DateTime{2024, 7, 26, 12, 0, 0}; };
  return options;
}

class ChatTemplateOracle : public ::testing::TestWithParam<std::string> {};

TEST_P(ChatTemplateOracle, RendersEveryCaseAsPythonJinja2Does) {
  const auto dir = templates_dir();
  if (!dir) GTEST_SKIP() << "../shared/chat-templates is absent";
  const std::string& name = GetParam();
  auto compiled = JinjaChatTemplate::compile(read_file(*dir / (name + ".jinja")));
  if (auto* error = std::get_if<ChatTemplateError>(&compiled)) {
    FAIL() << name << " does not compile: " << error->describe();
  }
  const auto& chat_template = std::get<JinjaChatTemplate>(compiled);
  const ordered_json conversations = ordered_json::parse(read_file(*dir / "conversations.json"));
  const ordered_json cases = ordered_json::parse(read_file(*dir / (name + ".expected.json")));
  ASSERT_FALSE(cases.empty());
  for (const auto& expected : cases) {
    const int conversation = expected["conversation"].get<int>();
    SCOPED_TRACE(name + ", conversation " + std::to_string(conversation) +
                 ", add_generation_prompt " + expected["add_generation_prompt"].dump());
    const ordered_json& messages = conversations.at(static_cast<size_t>(conversation))["messages"];
    const auto result = chat_template.render(messages, options_for(expected));
    const auto* error = std::get_if<ChatTemplateError>(&result);
    if (expected["rendered"].is_null()) {
      ASSERT_NE(error, nullptr) << "rendered, but Jinja2 raised " << expected["error"];
      EXPECT_EQ(error->kind, ChatTemplateError::Kind::kRaised) << error->describe();
      EXPECT_EQ(error->message, expected["error"].get<std::string>());
      continue;
    }
    ASSERT_EQ(error, nullptr) << error->describe();
    const auto& segments = std::get<std::vector<PromptSegment>>(result);
    const std::string want = expected["rendered"].get<std::string>();
    const std::string got = join_segments(segments);
    EXPECT_EQ(got, want) << first_difference(want, got);
    expect_input_segments_come_from(segments, messages);
  }
}

// A long conversation (an agent's history) renders: the interpreter's steps must grow with
// the messages as Jinja2's work does. Qwen3's template reads messages|length inside its loop
// over the messages, which ran out of the budget (then 1M steps) at 999 messages when a
// filter's step cost was its input's size; 6001 messages would take 36M steps that way,
// past the 16M budget. Gemma 4's template scans back over the earlier messages for each
// one, quadratic in Jinja2 too: 3001 messages (4.5M steps) is its case.
TEST_P(ChatTemplateOracle, RendersAConversationOfThousandsOfMessages) {
  const auto dir = templates_dir();
  if (!dir) GTEST_SKIP() << "../shared/chat-templates is absent";
  const std::string name = GetParam();
  auto compiled = JinjaChatTemplate::compile(read_file(*dir / (name + ".jinja")));
  ASSERT_TRUE(std::holds_alternative<JinjaChatTemplate>(compiled));
  ordered_json messages = ordered_json::array();
  const int count = name == "google-gemma-4-31B-it" ? 3001 : 6001;
  for (int i = 0; i < count; ++i) {
    messages.push_back(
        {{"role", i % 2 == 0 ? "user" : "assistant"}, {"content", "turn " + std::to_string(i)}});
  }
  ChatRenderOptions options;
  options.add_generation_prompt = true;
  options.bos_token = "<s>";
  options.eos_token = "</s>";
  options.now = [] { return jinja::DateTime{2024, 7, 26, 12, 0, 0}; };
  const auto result = std::get<JinjaChatTemplate>(compiled).render(messages, options);
  const auto* error = std::get_if<ChatTemplateError>(&result);
  ASSERT_EQ(error, nullptr) << error->describe();
  const std::string text = join_segments(std::get<std::vector<PromptSegment>>(result));
  EXPECT_NE(text.find("turn " + std::to_string(count - 1)), std::string::npos);
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Published, ChatTemplateOracle, ::testing::ValuesIn(template_names()),
                         test_name);

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
