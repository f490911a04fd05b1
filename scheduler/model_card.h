// The served model as every front end describes it: the ids /v1/models lists and requests
// may name, and the limits and chat template requests are checked and rendered against.
// The Engine builds it once, so `tandem serve` and `tandem bench --model` name a file alike.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/chat_prompt.h"
#include "protocol/pooling.h"
#include "protocol/reasoning.h"
#include "protocol/tool_calls/tool_call_format.h"
#include "runner/grammar/grammar_cache.h"

namespace tandem {

// The chat template in use, compiled once at load and shared by every request.
struct ChatTemplateCard {
  std::shared_ptr<const JinjaChatTemplate> compiled;
  std::string origin;  // "tokenizer.chat_template" (the GGUF's), or the --chat-template path
  std::string source;  // the template's text (llama-server's /props shows it)
  // The tokenizer's BOS and EOS text, which transformers passes as bos_token and eos_token.
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  // How the model family writes tool calls, read from the template's source.
  ToolCallFormat tool_format = ToolCallFormat::kJson;
  // tokenizer.chat_template.tool_use, where the file has one beside its default template
  // and no --chat-template replaces them: requests with tools render through it, as
  // transformers (so vLLM) and llama.cpp choose it. Null: `compiled` renders every request.
  std::shared_ptr<const JinjaChatTemplate> tool_use;
  ToolCallFormat tool_use_format = ToolCallFormat::kJson;
  // How the family marks its reasoning, read from the template's source; nullopt: it has
  // none, and no output is split.
  std::optional<ReasoningMarkers> reasoning;
  // A marker is a control token (Magistral's [THINK]), which reaches the text only when
  // special tokens are rendered: requests that split render them.
  bool reasoning_markers_are_control = false;
  // --reasoning-format deepseek: chat answers carry the reasoning apart
  // (reasoning_content), unless a request's reasoning_format says otherwise.
  bool split_reasoning = false;
};

struct ModelCard {
  std::string id;                  // names[0]: responses report it
  std::vector<std::string> names;  // --served-model-name's, else the model file's stem
  std::string path;                // the model file, as given
  int32_t context_length = 0;      // the model's, or --ctx-size or the KV pool when smaller
  int32_t vocab_size = 0;
  int64_t kv_capacity_tokens = 0;  // the KV pool's size: no request may need more
  std::string kv_type;             // the KV cache's element type, "f16" etc.
  int64_t kv_bytes_per_token = 0;  // the global layers, K and V
  // Sliding-window layers (gemma2/3) keep only the window, in a pool of their own: its
  // size in tokens (0: no such pool, every layer is counted above), the bytes per token
  // of its layers, and the window.
  int64_t kv_local_capacity_tokens = 0;
  int64_t kv_local_bytes_per_token = 0;
  int32_t sliding_window = 0;
  std::optional<ChatTemplateCard> chat_template;  // nullopt: the model has none
  // /v1/embeddings: how the prompt's states pool (never kNone), where that came from
  // ("--pooling", the file's "pooling_type", or "default": last), and the embedding's
  // width; 0 where the device computes none (the GPU executor, for now).
  Pooling pooling = Pooling::kLast;
  std::string pooling_origin = "default";
  // Non-empty: the file names a pooling not served here (a reranker's rank) and no
  // --pooling replaced it; /v1/embeddings answers 400 with this message.
  std::string pooling_refusal;
  int32_t embedding_size = 0;
  // system_fingerprint: "fp_" + 16 hex digits of a hash of the file's header and metadata,
  // its size and tandem's version (model_fingerprint.h).
  std::string fingerprint;
  // Structured output: grammars compiled for the model's vocabulary (built once, at load),
  // one compilation per schema or grammar text. Null: constrained requests are refused.
  std::shared_ptr<grammar::GrammarCache> grammars;

  // Whether a request's "model" names this model (empty names nothing in particular).
  bool answers_to(std::string_view name) const {
    return name.empty() || std::find(names.begin(), names.end(), name) != names.end();
  }
};

}  // namespace tandem
