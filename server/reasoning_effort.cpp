#include "server/reasoning_effort.h"

#include <string>
#include <variant>
#include <vector>

namespace tandem::server {
namespace {

// Whether the level renders otherwise than "none" would (a template's default may already be
// the level asked for, as Command-A thinks unless told "none"; DeepSeek-V4's renders every
// OpenAI level as none). A render that fails either way counts as a difference (the
// request's own render then reports the failure).
bool differs_from_none(const ChatTemplateCard& chat, const JinjaChatTemplate& chosen,
                       const ChatInputs& inputs) {
  ChatInputs none = inputs;
  put_reasoning_effort(none.template_kwargs, "none");
  const auto level = render_chat_request(chosen, inputs, chat.bos_token, chat.eos_token);
  const auto off = render_chat_request(chosen, none, chat.bos_token, chat.eos_token);
  const auto* a = std::get_if<std::vector<PromptSegment>>(&level);
  const auto* b = std::get_if<std::vector<PromptSegment>>(&off);
  return a == nullptr || b == nullptr || join_segments(*a) != join_segments(*b);
}

}  // namespace

std::optional<ApiError> check_reasoning_effort(const ChatTemplateCard& chat,
                                               const ChatInputs& inputs) {
  const std::string& effort = inputs.reasoning_effort;
  if (effort.empty()) return std::nullopt;
  // The template the request renders through (render_chat picks tool_use for tools).
  const bool tools = inputs.tools.is_array() && !inputs.tools.empty();
  const JinjaChatTemplate& chosen = tools && chat.tool_use ? *chat.tool_use : *chat.compiled;
  if (effort == "none") {
    if (chosen.reads("enable_thinking") || chosen.reads("reasoning_effort") || !chat.reasoning) {
      return std::nullopt;
    }
    return bad_request(
        "'reasoning_effort': \"none\" cannot be honoured: this model's chat template marks "
        "reasoning but reads neither reasoning_effort nor enable_thinking, so nothing turns "
        "its reasoning off.",
        "reasoning_effort");
  }
  // The request's chat_template_kwargs asked for this level themselves.
  if (inputs.effort_in_kwargs) return std::nullopt;
  if (chosen.reads("reasoning_effort") && differs_from_none(chat, chosen, inputs)) {
    return std::nullopt;
  }
  return bad_request(
      "'reasoning_effort' \"" + effort + "\" changes nothing in this model's chat template" +
          (chosen.reads("reasoning_effort")
               ? std::string(" (it reads reasoning_effort, but renders this level as \"none\")")
               : std::string(" (it never reads reasoning_effort)")) +
          "; leave it out" +
          (chosen.reads("enable_thinking")
               ? std::string(" (\"none\" turns thinking off: the template reads enable_thinking).")
               : std::string(".")),
      "reasoning_effort");
}

}  // namespace tandem::server
