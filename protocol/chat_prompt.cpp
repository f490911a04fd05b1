#include "protocol/chat_prompt.h"

#include <memory>
#include <set>

#include "protocol/jinja/json.h"
#include "protocol/jinja/lexer.h"

namespace tandem {
namespace {

ChatTemplateError to_chat_error(const jinja::Error& error) {
  ChatTemplateError out;
  switch (error.kind()) {
    case jinja::ErrorKind::kSyntax:
      out.kind = ChatTemplateError::Kind::kSyntax;
      break;
    case jinja::ErrorKind::kRender:
      out.kind = ChatTemplateError::Kind::kRender;
      break;
    case jinja::ErrorKind::kRaised:
      out.kind = ChatTemplateError::Kind::kRaised;
      break;
  }
  out.message = error.message();
  out.line = error.line();
  out.column = error.column();
  return out;
}

constexpr std::string_view kBlanks = " \t\n\r\f\v";

std::string_view strip_left(std::string_view text) {
  const size_t first = text.find_first_not_of(kBlanks);
  return first == std::string_view::npos ? std::string_view() : text.substr(first);
}

// continue_final_message, as transformers cuts the rendered chat: after the last place the
// final message's text (stripped) appears, keeping its trailing blanks where the template
// kept them. The segments are cut at that byte; false when the text is not there (a
// template that rewrites the message).
bool cut_after_final_message(std::vector<PromptSegment>& segments, std::string_view content) {
  std::string_view trimmed = strip_left(content);
  const std::string_view kept = trimmed;  // stripped on the left only
  trimmed = trimmed.substr(0, trimmed.find_last_not_of(kBlanks) + 1);
  const std::string prompt = join_segments(segments);
  const size_t at = prompt.rfind(trimmed);
  if (trimmed.empty() || at == std::string::npos) return false;
  const size_t end =
      prompt.compare(at, kept.size(), kept) == 0 ? at + kept.size() : at + trimmed.size();
  size_t offset = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    const size_t size = segments[i].text.size();
    if (offset + size >= end) {
      segments[i].text.resize(end - offset);
      segments.resize(i + 1);
      return true;
    }
    offset += size;
  }
  return true;
}

}  // namespace

std::string ChatTemplateError::describe() const {
  if (line <= 0) return message;
  return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + message;
}

std::variant<JinjaChatTemplate, ChatTemplateError> JinjaChatTemplate::compile(
    std::string_view source) {
  auto compiled = jinja::Template::compile(source);
  if (auto* error = std::get_if<jinja::Error>(&compiled)) return to_chat_error(*error);
  // The names its code spells (a source that compiled also tokenizes).
  auto names = std::make_shared<std::set<std::string, std::less<>>>();
  for (const jinja::Token& token : jinja::tokenize(source)) {
    if (token.type == jinja::TokenType::kName) names->insert(token.value);
  }
  return JinjaChatTemplate(std::get<jinja::Template>(std::move(compiled)), std::move(names));
}

bool JinjaChatTemplate::reads(std::string_view name) const { return names_->contains(name); }

std::variant<std::vector<PromptSegment>, ChatTemplateError> JinjaChatTemplate::render(
    const nlohmann::ordered_json& messages, const ChatRenderOptions& options) const {
  // Later variables win: the extras come first so that they cannot replace these.
  jinja::Variables variables;
  try {
    if (options.extra.is_object()) {
      for (auto it = options.extra.begin(); it != options.extra.end(); ++it) {
        variables.emplace_back(it.key(), jinja::from_json(it.value(), true));
      }
    }
    variables.emplace_back("messages", jinja::from_json(messages, true));
    variables.emplace_back("tools", jinja::from_json(options.tools, true));
    variables.emplace_back("documents", jinja::from_json(options.documents, true));
    variables.emplace_back("add_generation_prompt", jinja::Value(options.add_generation_prompt));
    if (options.bos_token) {
      variables.emplace_back("bos_token", jinja::Value::string(*options.bos_token));
    }
    if (options.eos_token) {
      variables.emplace_back("eos_token", jinja::Value::string(*options.eos_token));
    }
  } catch (const jinja::Error& error) {
    return to_chat_error(error);
  }
  auto rendered = template_.render(std::move(variables), options.now);
  if (auto* error = std::get_if<jinja::Error>(&rendered)) return to_chat_error(*error);
  return std::get<std::vector<PromptSegment>>(std::move(rendered));
}

std::variant<std::vector<PromptSegment>, ChatTemplateError> JinjaChatTemplate::render(
    const std::vector<ChatMessage>& messages, const ChatRenderOptions& options) const {
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  for (const ChatMessage& message : messages) {
    array.push_back({{"role", message.role}, {"content", message.content}});
  }
  return render(array, options);
}

std::variant<std::vector<PromptSegment>, ApiError> render_chat_request(
    const JinjaChatTemplate& chat_template, const ChatInputs& inputs,
    const std::optional<std::string>& bos_token, const std::optional<std::string>& eos_token) {
  ChatRenderOptions options;
  options.add_generation_prompt = inputs.add_generation_prompt;
  options.bos_token = bos_token;
  options.eos_token = eos_token;
  options.documents = inputs.documents;
  options.tools = inputs.tools;
  options.extra = inputs.template_kwargs;
  auto rendered = chat_template.render(inputs.messages, options);
  if (const auto* error = std::get_if<ChatTemplateError>(&rendered)) {
    if (error->kind == ChatTemplateError::Kind::kRaised) {
      return bad_request(error->message, "messages");
    }
    return bad_request(
        "The model's chat template failed on these messages: " + error->describe() + ".",
        "messages");
  }
  auto segments = std::get<std::vector<PromptSegment>>(std::move(rendered));
  if (inputs.continue_final_message &&
      !cut_after_final_message(segments,
                               inputs.messages.back()["content"].get_ref<const std::string&>())) {
    return bad_request(
        "'continue_final_message': the final message's text does not appear in the prompt "
        "the model's chat template renders, so it cannot be continued.",
        "continue_final_message");
  }
  return segments;
}

std::string join_segments(const std::vector<PromptSegment>& segments) {
  std::string out;
  for (const PromptSegment& segment : segments) out += segment.text;
  return out;
}

}  // namespace tandem
