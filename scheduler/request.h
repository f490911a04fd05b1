// What a caller (the server) hands the scheduler, and how it hears back. A request's
// events arrive on the scheduler thread, in order, and end with exactly one on_finish or
// on_error; the sink must not block (the server posts them onto the session's strand).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/logprobs.h"
#include "protocol/outcomes.h"  // FinishReason, ErrorKind, Usage
#include "protocol/pooling.h"
#include "protocol/sampling_params.h"
#include "runner/grammar/compiled_grammar.h"

namespace tandem {

class RequestSink {
 public:
  virtual ~RequestSink() = default;
  virtual void on_text(std::string_view delta) = 0;  // valid UTF-8, never empty
  // Once, when the request is first admitted: the prompt tokens the prefix cache held (or a
  // share of its prompt supplied), which usage.cached_tokens repeats at the end.
  virtual void on_admitted(int32_t cached_tokens) { (void)cached_tokens; }
  // Each accepted token (EOS and stop tokens too), before the text it adds, if any: the
  // next on_text holds the text of the tokens counted since the last one (a partial
  // character's or a possible stop string's text waits for later tokens). id: the token.
  virtual void on_token(int32_t id) { (void)id; }
  // With sampling.logprobs >= 0: every accepted token's log-probabilities (EOS and stop
  // tokens too), each sent before the text that token adds, if any.
  virtual void on_logprobs(const TokenLogprobs& logprobs) { (void)logprobs; }
  // With sampling.prompt_logprobs >= 0: the prompt's tokens, in order and in pieces (one
  // per prefill chunk; a choice that took its prompt from another's, the shared positions
  // in one piece at admission), before any other event; the first token's logprob is NaN.
  virtual void on_prompt_logprobs(std::span<const TokenLogprobs> logprobs) { (void)logprobs; }
  // With pooling: the prompt's pooled embedding (protocol/pooling.h; not normalized), once,
  // just before on_finish.
  virtual void on_embedding(std::span<const float> embedding) { (void)embedding; }
  // The stop string that ended the output (kStop), just before on_finish; not sent for an
  // end by EOS or a stop_token_ids token.
  virtual void on_stop_string(std::string_view stop) { (void)stop; }
  // The stop_token_ids token that ended the output (kStop), just before on_finish; not sent
  // when the token is also an end-of-generation token (as vLLM, which reports no reason for
  // EOS), nor when a stop string ended the output.
  virtual void on_stop_token(int32_t token) { (void)token; }
  // kStop (EOS, a stop_token_ids token or a stop string), kLength (max_tokens, the context or the
  // KV pool), or kCancelled. usage.completion_tokens counts EOS and stop tokens too.
  virtual void on_finish(FinishReason reason, const Usage& usage) = 0;
  // kShuttingDown (the scheduler stopped first) or kInternal (the device failed); the
  // message is for logs, not for clients.
  virtual void on_error(ErrorKind kind, std::string_view message) = 0;
};

struct GenerationRequest {
  std::vector<int32_t> prompt;  // token ids, BOS included as the caller wants
  // Carried to the device unchanged. sampling.ignore_eos both bans EOS in the sampler and
  // stops the scheduler from finishing on it.
  SamplingParams sampling;
  // >= 0 (0: the prompt is prefilled, its prompt_logprobs sent, and nothing generated:
  // finish_reason length). The scheduler clamps it (and nullopt means "until then") to what the
  // context and the KV pool leave after the prompt: min(context, KV capacity) - prompt, at least 1.
  std::optional<int32_t> max_tokens;
  std::vector<std::string> stop;
  // The stop string or stop_token_ids token that ends the output is part of its text.
  bool include_stop_str_in_output = false;
  // Control tokens give no text; false: their text is emitted (vLLM's skip_special_tokens).
  bool skip_special_tokens = true;
  // llama-server's code-completion limits (scheduler/line_limits.h): n_indent, the least
  // indentation of every line after the first newline (0: none), and t_max_predict_ms, the
  // time after which the next newline ends the output (0: none). Either ends it "length".
  int32_t min_indent = 0;
  double time_limit_ms = 0;
  // Structured output: every generated token is drawn under this grammar's mask, and
  // end-of-generation only where the grammar accepts. Compiled for the engine's vocabulary
  // (Engine::grammars()). Null: unconstrained.
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  // vLLM's cache_salt: the prefix cache finds for this request only the blocks of requests
  // with the same salt, and its own blocks only for those ("": the shared cache). A hit
  // changes no output either way; the salt keeps one tenant from timing another's hits.
  std::string cache_salt;
  // Embeddings: the prompt's hidden states are pooled so (max_tokens must be 0), and the
  // embedding is sent before the finish. Mean and cls read every position's state, so they
  // take nothing from the prefix cache; last reads only the last, which is always computed.
  Pooling pooling = Pooling::kNone;
  std::shared_ptr<RequestSink> sink;
};

// submit()'s answer: accepted with an id (ids for a list), or refused (a list: all of it):
// kOverloaded (the waiting queue is at
// --max-queue), kInvalidRequest (the request can never run; message says why), or
// kShuttingDown.
struct SubmitResult {
  uint64_t id = 0;  // for cancel(); 0 unless accepted (the first of ids)
  std::optional<ErrorKind> refusal;
  std::string message;
  std::vector<uint64_t> ids;  // one per request, in the order given
  bool accepted() const { return !refusal; }
};

}  // namespace tandem
