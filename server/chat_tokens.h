// A rendered chat prompt to token ids, with law 9: text that came from the request (message
// contents, names, arguments) never becomes a control token; only the template's own text
// may open and close turns.
#pragma once

#include <cstdint>
#include <vector>

#include "protocol/chat_prompt.h"
#include "runner/tokenizer/tokenizer.h"

namespace tandem::server {

// The segments are tokenized as one text (so pieces merge across the seams as in the
// joined prompt, and as llama.cpp and vLLM tokenize it), with control-token text parsed
// only inside template segments. The prompt starts with exactly one BOS when the
// tokenizer adds one: templates that render bos_token keep theirs, and the others get it
// prepended, as an add_special encode would.
std::vector<int32_t> tokenize_chat_prompt(const Tokenizer& tokenizer,
                                          const std::vector<PromptSegment>& segments);

}  // namespace tandem::server
