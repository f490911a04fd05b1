// Chat prompts from a model's own Jinja chat template (GGUF tokenizer.chat_template), as
// vLLM renders them through transformers' apply_chat_template: compile the template once
// per model, render it per request from any thread.
//
// The prompt comes back as segments: text the template wrote and text that came from the
// request (message contents, roles, tool definitions, extra variables). Law 9: text from
// the request never becomes a control token, so the server tokenizes from_input segments
// with special-token parsing off and template segments with it on (rule in
// protocol/jinja/template.h).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/api_error.h"
#include "protocol/chat_messages.h"
#include "protocol/completion_request.h"
#include "protocol/jinja/template.h"

namespace tandem {

using PromptSegment = jinja::Segment;  // {std::string text; bool from_input;}

struct ChatTemplateError {
  enum class Kind {
    kSyntax,  // the template does not compile (or uses a construct tandem lacks)
    kRender,  // rendering failed as Jinja2 would (or hit a construct tandem lacks)
    kRaised,  // the template called raise_exception: the request is refused with message
  };
  Kind kind = Kind::kRender;
  std::string message;  // kRaised: exactly the template's message
  int line = 0;         // 1-based position in the template; 0 when not known
  int column = 0;
  // "line L, column C: message", or the bare message when the position is not known.
  std::string describe() const;
};

struct ChatRenderOptions {
  bool add_generation_prompt = true;
  // The tokenizer's BOS / EOS text; nullopt: not passed (undefined in the template).
  // Template-side text: special-token parsing stays on for it.
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  // The request's tools and documents; null is Python's None (what transformers passes).
  nlohmann::ordered_json tools = nullptr;
  nlohmann::ordered_json documents = nullptr;
  // More top-level variables from the request (e.g. chat_template_kwargs such as
  // enable_thinking): an object, or null for none. From input, like messages.
  nlohmann::ordered_json extra = nullptr;
  // strftime_now's clock; empty: the local time.
  std::function<jinja::DateTime()> now;
};

class JinjaChatTemplate {
 public:
  static std::variant<JinjaChatTemplate, ChatTemplateError> compile(std::string_view source);

  // messages: the request's JSON array of message objects, used as given. Parse the request
  // as ordered_json: Python keeps each object's key order, and templates show it (tojson of
  // tool-call arguments, loops over a dict's items).
  std::variant<std::vector<PromptSegment>, ChatTemplateError> render(
      const nlohmann::ordered_json& messages, const ChatRenderOptions& options) const;
  // The same for parsed messages ({"role", "content"} each).
  std::variant<std::vector<PromptSegment>, ChatTemplateError> render(
      const std::vector<ChatMessage>& messages, const ChatRenderOptions& options) const;

  // Whether the template's code spells this name (a variable it may read, such as
  // enable_thinking or reasoning_effort): a request variable it never names changes nothing.
  bool reads(std::string_view name) const;

 private:
  JinjaChatTemplate(jinja::Template compiled,
                    std::shared_ptr<const std::set<std::string, std::less<>>> names)
      : template_(std::move(compiled)), names_(std::move(names)) {}
  jinja::Template template_;
  std::shared_ptr<const std::set<std::string, std::less<>>> names_;
};

// Renders a request's chat inputs (messages, chat_template_kwargs, documents,
// add_generation_prompt) with the tokenizer's BOS/EOS text. A failure is the 400 a client
// sees (param "messages"): a template's raise_exception gives exactly its message, as
// vLLM does; any other render failure says that the template failed, and where.
std::variant<std::vector<PromptSegment>, ApiError> render_chat_request(
    const JinjaChatTemplate& chat_template, const ChatInputs& inputs,
    const std::optional<std::string>& bos_token, const std::optional<std::string>& eos_token);

// The segments' text joined: the prompt as one string (for logging and /tokenize-like uses).
std::string join_segments(const std::vector<PromptSegment>& segments);

}  // namespace tandem
