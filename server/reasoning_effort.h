// Whether a chat request's reasoning_effort can be honoured by the model's template. A level
// other than "none" must render otherwise than "none" (the template reads reasoning_effort,
// and not only to compare it with a value of its own, as DeepSeek-V4's "max"); "none" needs a
// template that reads enable_thinking or reasoning_effort, or one that marks no reasoning at
// all, so that there is none to turn off. vLLM passes reasoning_effort to every template and
// lets those that never read it ignore it; tandem refuses what would change nothing.
#pragma once

#include <optional>

#include "protocol/api_error.h"
#include "protocol/chat_messages.h"
#include "scheduler/model_card.h"

namespace tandem::server {

// The 400 (param "reasoning_effort") when the request's effort would change nothing.
std::optional<ApiError> check_reasoning_effort(const ChatTemplateCard& chat,
                                               const ChatInputs& inputs);

}  // namespace tandem::server
