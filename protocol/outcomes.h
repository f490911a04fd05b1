// How a generation ends, as values: the finish reason and token usage of one that
// completed, or the kind of error that ended it (or refused it at submission). The
// scheduler reports them, the server answers with them; their text is made only at the
// edges, in the JSON bodies and the metrics labels, by the naming functions below.
#pragma once

#include <cstdint>
#include <string>

namespace tandem {

enum class FinishReason {
  kStop,       // EOS or a stop string
  kLength,     // max_tokens, the context or the KV pool
  kToolCalls,  // the model called a tool (OpenAI's reason; nothing produces it yet)
  kCancelled,  // the caller cancelled it (a client that went away)
};
inline constexpr int kFinishReasons = 4;

// "stop", "length", "tool_calls", "cancelled": OpenAI's finish_reason and the metrics label.
const char* finish_reason_name(FinishReason reason);

enum class ErrorKind {
  kInvalidRequest,  // the request can never run (the message says why)
  kOverloaded,      // the waiting queue is full
  kShuttingDown,    // the server is stopping
  kInternal,        // the device failed, or a bug
};
inline constexpr int kErrorKinds = 4;

// "invalid_request", "overloaded", "shutting_down", "internal".
const char* error_kind_name(ErrorKind kind);

// Tokens of one generation; completion_tokens counts EOS and stop tokens too.
struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens whose KV came from the prefix cache
  // Of completion_tokens, those of the reasoning, where a chat answer splits it off (the
  // server counts them from the text each token added); -1: not counted (no split).
  int64_t reasoning_tokens = -1;
};

// What ended a choice that finished kStop other than by EOS, as vLLM's stop_reason reports
// it: the stop string that matched, or the stop_token_ids token; neither (EOS, a length, a
// cancel): stop_reason is null.
struct StopReason {
  std::string text;    // the stop string, or empty
  int32_t token = -1;  // the stop token's id, or -1
};

}  // namespace tandem
