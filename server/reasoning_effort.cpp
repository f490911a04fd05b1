#include "server/reasoning_effort.h"

#include <string>

namespace tandem::server {

std::optional<ApiError> check_reasoning_effort(const ChatTemplateCard& chat,
                                               const ChatInputs& inputs) {
  const std::string& effort = inputs.reasoning_effort;
  if (effort.empty()) return std::nullopt;
  // The template the request renders through (render_chat picks tool_use for tools).
  const bool tools = inputs.tools.is_array() && !inputs.tools.empty();
  const JinjaChatTemplate& chosen = tools && chat.tool_use ? *chat.tool_use : *chat.compiled;
  if (chosen.reads("reasoning_effort")) return std::nullopt;
  if (effort == "none") {
    if (chosen.reads("enable_thinking") || !chat.reasoning) return std::nullopt;
    return bad_request(
        "'reasoning_effort': \"none\" cannot be honoured: this model's chat template always "
        "reasons (it reads neither reasoning_effort nor enable_thinking).",
        "reasoning_effort");
  }
  return bad_request("'reasoning_effort' \"" + effort +
                         "\" is not read by this model's chat template, so it would change "
                         "nothing; leave it out" +
                         (chosen.reads("enable_thinking")
                              ? std::string(" (\"none\" turns thinking off: the template reads "
                                            "enable_thinking).")
                              : std::string(".")),
                     "reasoning_effort");
}

}  // namespace tandem::server
