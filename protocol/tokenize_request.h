// llama-server's /tokenize and /detokenize bodies, so its clients work unchanged:
// {"content": TEXT, "add_special": BOOL, "parse_special": BOOL, "with_pieces": BOOL} ->
// {"tokens": [IDS]} (with pieces: [{"id": ID, "piece": TEXT or [BYTES]}]) and
// {"tokens": [IDS]} -> {"content": TEXT, "prompt": TEXT}. vLLM's completion form is read
// too: {"prompt": TEXT, "add_special_tokens": BOOL (default true), "return_token_strs":
// BOOL} -> {"count", "max_model_len", "tokens", "token_strs"}, and its detokenize answer is
// the "prompt" beside llama-server's "content". vLLM's chat form is read as well:
// {"messages": [...], the chat fields of /v1/chat/completions (add_generation_prompt,
// chat_template_kwargs, documents, tools), "return_token_strs": BOOL} -> the prompt a chat
// completion of them feeds the model (its BOS rule applied, so "add_special_tokens": true,
// which would add a second, is refused), in the completion form's answer, its count
// usage.prompt_tokens. Errors are 400s in the completions' style.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/api_error.h"
#include "protocol/chat_messages.h"

namespace tandem {

struct TokenizeRequest {
  std::string content;
  // Add BOS as the model's metadata says (as a completion prompt does); off unless asked,
  // as llama-server's default is.
  bool add_special = false;
  bool parse_special = true;  // markers such as "<|im_start|>" become their special tokens
  bool with_pieces = false;   // each id with its text
  bool vllm_form = false;     // sent as {"prompt": ...}: answered in vLLM's shape
  bool token_strs = false;    // vLLM's return_token_strs: each id's vocabulary text
  // vLLM's chat form: the messages to render with the model's chat template (content is
  // then empty, add_special false).
  std::optional<ChatInputs> chat;
};

// What vLLM's /tokenize answer adds: the served context, and each id's vocabulary text
// when asked (empty: null).
struct VllmTokenizeExtras {
  int64_t max_model_len = 0;
  std::vector<std::string> token_strs;
};

struct DetokenizeRequest {
  std::vector<int32_t> tokens;  // each in [0, INT32_MAX]; the server checks the vocabulary
};

std::variant<TokenizeRequest, ApiError> parse_tokenize_request(std::string_view body);
std::variant<DetokenizeRequest, ApiError> parse_detokenize_request(std::string_view body);

// pieces: empty, or each token's bytes (control tokens' text included), given as a string
// where they are valid UTF-8 and as a list of byte values where not, as llama-server does.
std::string tokenize_response_json(std::span<const int32_t> tokens,
                                   std::span<const std::string> pieces = {});
std::string vllm_tokenize_response_json(std::span<const int32_t> tokens,
                                        const VllmTokenizeExtras& extras);
// Valid JSON for any bytes: a token sequence cut inside a character decodes to invalid
// UTF-8, which becomes U+FFFD.
std::string detokenize_response_json(std::string_view content);

}  // namespace tandem
