// JSON bodies of successful OpenAI-compatible responses: completions and chat
// completions, whole or as stream chunks, the usage chunk, and /v1/models. Pure
// functions; their output is valid JSON for any input bytes (invalid UTF-8 becomes U+FFFD).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/completion_request.h"
#include "protocol/llama_timings.h"
#include "protocol/logprobs.h"
#include "protocol/outcomes.h"

namespace tandem {

// What every body and chunk of one response shares. The seed is the one actually used
// (the request's, or the one the server drew), so that the output can be replayed.
struct ResponseHeader {
  std::string id;       // make_response_id(...)
  int64_t created = 0;  // Unix seconds
  std::string model;
  uint64_t seed = 0;
  // Identifies the model file and the build that answered (see model_fingerprint).
  std::string system_fingerprint;
};

// What a chunk may carry beside its text: vLLM's stop_reason (a choice's last chunk: what
// ended it; null where nothing but EOS or a limit did) and llama-server's timings (a
// request that sent timings_per_token: true), at the chunk's top level.
struct ChunkExtras {
  const StopReason* stop = nullptr;
  const LlamaTimings* timings = nullptr;
};

// One choice of a response: its index (prompt_index * n + choice, as OpenAI numbers them)
// and the seed that replays it alone (choice_seed in protocol/choice_seed.h).
struct ChoiceId {
  int32_t index = 0;
  uint64_t seed = 0;
};

// A tool call the model made, as a chat response reports it.
struct ToolCallOut {
  std::string id;         // "call_..." unique in the response
  std::string name;       // the function's
  std::string arguments;  // a JSON object's text
};

// A finished choice of a response that is not streamed.
struct ChoiceResult {
  ChoiceId id;
  std::string_view text;
  FinishReason finish = FinishReason::kStop;
  const LogprobsPiece* logprobs = nullptr;  // null: the choice's logprobs are null
  // Chat: message.tool_calls, when not empty (content is then null when text is empty).
  std::span<const ToolCallOut> tool_calls = {};
  // Chat with the reasoning split off (protocol/reasoning.h): message.reasoning_content,
  // when not empty.
  std::string_view reasoning = {};
  // vLLM's stop_reason: what ended the choice (null: nothing but EOS or a limit).
  const StopReason* stop = nullptr;
};

// "cmpl-", "chatcmpl-", "resp_" (/v1/responses) or "msg_" (/v1/messages) and 32 hex digits: high
// then low, 64 bits each. The server supplies a number unique across its runs (random at start,
// counting up).
std::string make_response_id(Endpoint endpoint, uint64_t high, uint64_t low);
// "chatcmpl-", "cmpl-", "resp_" or "msg_": what an id begins with, the client's request id after it
// where it gave one (vLLM's X-Request-Id and request_id).
std::string response_id_prefix(Endpoint endpoint);
// Whether `id` is one a client may name its request by (the X-Request-Id header, vLLM's
// request_id field): 1 to 128 visible ASCII characters, which a header, a log line and a
// response id carry unchanged.
bool is_client_request_id(std::string_view id);

// Non-streamed: object "text_completion" with choices [{index, text, logprobs, finish_reason,
// stop_reason}], or "chat.completion" with choices [{index, message {role, content}, logprobs,
// finish_reason, stop_reason}] (stop_reason: vLLM's, the stop string or stop token id that
// ended the choice, null for EOS and the limits);
// both with usage {prompt_tokens, completion_tokens, total_tokens}, seed and
// system_fingerprint (every chunk carries seed and system_fingerprint too).
// logprobs: the choice's logprobs (logprobs.h); null when nullptr.
// Every choice, in order; each carries its own `seed` besides the response's. timings:
// llama-server's, beside usage.
std::string completion_response_json(const ResponseHeader& header,
                                     std::span<const ChoiceResult> choices, const Usage& usage,
                                     const LlamaTimings* timings = nullptr);
std::string chat_completion_response_json(const ResponseHeader& header,
                                          std::span<const ChoiceResult> choices, const Usage& usage,
                                          const LlamaTimings* timings = nullptr);
// One choice: index 0, the response's seed.
std::string completion_response_json(const ResponseHeader& header, std::string_view text,
                                     FinishReason finish, const Usage& usage,
                                     const LogprobsPiece* logprobs = nullptr);
std::string chat_completion_response_json(const ResponseHeader& header, std::string_view text,
                                          FinishReason finish, const Usage& usage,
                                          const LogprobsPiece* logprobs = nullptr);

// Stream chunks, each for one choice (index and seed; without `choice`: index 0 and the
// response's seed). A completion chunk carries choices [{index, seed, text, logprobs,
// finish_reason}] with finish_reason null until the choice's last, which adds stop_reason. Chat
// chunks
// ("chat.completion.chunk") carry a delta: the first is {role: "assistant", content: ""}, then
// {content}; the last has the finish reason and, when its text is empty, an empty delta.
std::string completion_chunk_json(const ResponseHeader& header, std::string_view text,
                                  std::optional<FinishReason> finish,
                                  const LogprobsPiece* logprobs = nullptr,
                                  std::optional<ChoiceId> choice = std::nullopt,
                                  ChunkExtras extras = {});
std::string chat_role_chunk_json(const ResponseHeader& header,
                                 std::optional<ChoiceId> choice = std::nullopt);
std::string chat_chunk_json(const ResponseHeader& header, std::string_view text,
                            std::optional<FinishReason> finish,
                            const LogprobsPiece* logprobs = nullptr,
                            std::optional<ChoiceId> choice = std::nullopt, ChunkExtras extras = {});
// A piece of a choice's reasoning, split from its content: delta {reasoning_content}, as
// llama-server and vLLM stream it.
std::string chat_reasoning_chunk_json(const ResponseHeader& header, std::string_view text,
                                      const LogprobsPiece* logprobs = nullptr,
                                      std::optional<ChoiceId> choice = std::nullopt,
                                      const LlamaTimings* timings = nullptr);
// A tool call as OpenAI streams it: the first chunk of call `index` carries its id, type,
// function name and empty arguments; then (first false) a chunk with the arguments.
std::string chat_tool_call_chunk_json(const ResponseHeader& header, ChoiceId choice, int32_t index,
                                      const ToolCallOut& call, bool first,
                                      const LlamaTimings* timings = nullptr);
// The chunk sent after the last one when stream_options.include_usage: choices [] and usage.
std::string usage_chunk_json(const ResponseHeader& header, Endpoint endpoint, const Usage& usage);

// GET /v1/models: a list with the one served model. Besides OpenAI's fields it says what
// vLLM and llama-server clients look for: max_model_len and the chat template in use.
struct ServedModel {
  std::vector<std::string> names;  // one entry each in /v1/models, as vLLM lists them
  int64_t created = 0;
  int32_t context_length = 0;
  // Where the chat template in use came from ("tokenizer.chat_template" or the
  // --chat-template path); nullopt: the model has none (null in the list).
  std::optional<std::string> chat_template;
};
std::string models_list_json(const ServedModel& model);
// One entry of the list, named `name` (one of model.names): GET /v1/models/{name}.
std::string model_json(const ServedModel& model, const std::string& name);

}  // namespace tandem
