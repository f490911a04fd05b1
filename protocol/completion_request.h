// A validated /v1/completions or /v1/chat/completions request, parsed from the body.
// Everything that can be checked without the model is checked here (types, ranges,
// unsupported options); the server adds the model-dependent checks with the helpers below.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/api_error.h"
#include "protocol/chat_messages.h"
#include "protocol/output_constraint.h"
#include "protocol/sampling_params.h"
#include "protocol/tool_calls/tool_request.h"

namespace tandem {

// kResponses: /v1/responses, read as a chat request (protocol/responses_api_request.h);
// kMessages: Anthropic's /v1/messages, likewise (protocol/messages_api_request.h).
enum class Endpoint { kCompletions, kChatCompletions, kResponses, kMessages };

// Whether the endpoint's prompt is a conversation rendered by the chat template.
inline bool is_chat(Endpoint endpoint) { return endpoint != Endpoint::kCompletions; }
// The field that holds the endpoint's prompt, for errors about it.
inline const char* prompt_param(Endpoint endpoint) {
  return endpoint == Endpoint::kCompletions ? "prompt"
         : endpoint == Endpoint::kResponses ? "input"
                                            : "messages";
}

// A plain chat turn, for callers that build conversations in code (tests, tools).
struct ChatMessage {
  std::string role;
  std::string content;
};

// The largest max_tokens accepted; beyond it a value is surely a mistake.
inline constexpr int32_t kMaxTokensLimit = 1 << 24;
// OpenAI's limit on stop sequences.
inline constexpr size_t kMaxStopSequences = 4;
// /v1/messages' (Anthropic sets none; agents send more than 4): a bound on the matcher's work.
inline constexpr size_t kMaxMessagesStopSequences = 64;
// The most log-probabilities per token a request may ask for (vLLM's default limit).
inline constexpr int32_t kMaxLogprobs = 20;
// llama-server's n_probs (/completion, /infill) has no limit of its own, and its clients ask
// for 100 or more (classifiers reading labels' probabilities): a bound well above them.
inline constexpr int32_t kMaxNativeProbs = 1024;
// The most choices per prompt (`n`) and prompts per request (`prompt` as a list).
inline constexpr int32_t kMaxChoices = 16;
inline constexpr size_t kMaxPrompts = 64;
// The completions endpoint's max_tokens when the request has none (OpenAI's default).
inline constexpr int32_t kDefaultCompletionMaxTokens = 16;

struct CompletionRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;  // empty: the request named none (the served model is meant)

  // The prompt. Completions: exactly one of prompt_text and prompt_tokens is non-empty.
  // Chat: chat.messages is non-empty and both prompt fields are empty (the server renders
  // the messages with the model's chat template).
  std::string prompt_text;
  std::vector<int32_t> prompt_tokens;
  // `prompt` as a list (OpenAI's batch): the prompts after the first, of the first's kind
  // (texts, or token id lists). Each gets n choices, indexed prompt_index * n + choice.
  std::vector<std::string> more_prompt_texts;
  std::vector<std::vector<int32_t>> more_prompt_tokens;
  ChatInputs chat;
  int32_t n = 1;  // choices per prompt, in [1, kMaxChoices]

  // max_completion_tokens, else max_tokens, in [1, kMaxTokensLimit] (0 too, with echo:
  // the prompt is scored and nothing generated). Completions default to 16; chat's
  // nullopt means "until the context ends".
  std::optional<int32_t> max_tokens;
  // temperature, top_k (-1 is stored as 0, off), top_p, min_p, logit_bias (sorted by
  // token id, values in [-100, 100]), ignore_eos, min_tokens, stop_token_ids, the
  // penalties, logprobs (completions' logprobs; chat's top_logprobs when logprobs is true)
  // and prompt_logprobs (completions with echo and logprobs). sampling.seed is left 0.
  SamplingParams sampling;
  // llama.cpp's DRY sequence breakers (dry_sequence_breakers, llama-server's default unless
  // sent), which the server turns into sampling.dry_breakers for the model's vocabulary.
  std::vector<std::string> dry_sequence_breakers = {"\n", ":", "\"", "*"};
  // The request's seed; nullopt: the server draws one, puts it into sampling.seed and
  // reports it in the response. Negative seeds are kept as their two's complement.
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;  // at most 4, none empty
  // The stop string or stop token that ended the output is part of the text.
  bool include_stop_str_in_output = false;
  // Control tokens (EOS, <|im_end|>, ...) give no text; false: their text is emitted.
  bool skip_special_tokens = true;
  // Completions: the prompt's text comes back in front of the generated text.
  bool echo = false;
  // vLLM's return_tokens_as_token_ids: logprobs name each token "token_id:N".
  bool tokens_as_ids = false;
  // llama-server's timings_per_token: each chunk, and the body, carry its timings object.
  bool timings_per_token = false;
  // Completions: a text prompt is encoded with the tokenizer's special tokens (BOS), as
  // vLLM's add_special_tokens (default true) says. Chat: false (the template writes them).
  bool add_special_tokens = true;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::string user;
  // vLLM's cache_salt (non-empty when given): the prefix cache is shared only among
  // requests with the same salt (GenerationRequest::cache_salt).
  std::string cache_salt;
  // vLLM's request_id (1-128 visible ASCII characters): the response's id is made from it
  // (a client's X-Request-Id header comes first); empty: the server makes one.
  std::string request_id;
  // Chat: reasoning_format (llama-server's): true for "deepseek" or "auto" (a thinking
  // model's reasoning comes apart from its content), false for "none"; nullopt: the
  // server's --reasoning-format.
  std::optional<bool> split_reasoning;
  // response_format, json_schema or grammar: the shape the output must have.
  OutputConstraint constraint;
  // Chat: tools, tool_choice and parallel_tool_calls (tools also sit in chat.tools for the
  // template). Completions: none.
  ToolRequest tools;

  bool has_prompt_tokens() const { return !prompt_tokens.empty(); }
  size_t prompt_count() const {
    return 1 + (has_prompt_tokens() ? more_prompt_tokens.size() : more_prompt_texts.size());
  }
};

// Parses and validates a request body for the given endpoint; null means "the default".
// Errors are 400s whose param names the field. A known field of OpenAI, vLLM or
// llama-server that tandem does not implement is refused by name unless sent at its neutral
// value (protocol/unsupported_fields.cpp); a field none of them defines is ignored.
std::variant<CompletionRequest, ApiError> parse_completion_request(std::string_view body,
                                                                   Endpoint endpoint);

// --- Checks that need the model; the server calls them after parsing. ---

// Every prompt token id, logit_bias id and stop_token_ids id must be below vocab_size.
std::optional<ApiError> check_token_ids(const CompletionRequest& request, int32_t vocab_size);

// The prompt must leave room for at least one generated token, unless the request
// generates none (max_tokens 0 with echo: scoring a prompt as long as the context is
// allowed, as vLLM checks prompt + max_tokens <= max_model_len). Generation that would run
// past the context ends there with finish_reason "length"; it is not an error. The
// error's param is "prompt" or, for chat, "messages".
std::optional<ApiError> check_prompt_length(size_t prompt_tokens, int32_t context_length,
                                            Endpoint endpoint, bool generates = true);

}  // namespace tandem
