// The served model as every front end describes it: the id /v1/models lists and responses
// name, and the limits and chat template requests are checked and rendered against. The
// Engine builds it once, so `tandem serve` and `tandem bench --model` name a file alike.
#pragma once

#include <cstdint>
#include <string>

#include "protocol/chat_template.h"

namespace tandem {

struct ModelCard {
  std::string id;  // EngineOptions::served_name, else the model file's stem
  int32_t context_length = 0;
  int32_t vocab_size = 0;
  int64_t kv_capacity_tokens = 0;  // the KV pool's size: no request may need more
  std::string kv_type;             // the KV cache's element type, "f16" etc.
  int64_t kv_bytes_per_token = 0;  // all layers, K and V
  ChatTemplate chat_template = ChatTemplate::kChatml;  // from tokenizer.chat_template
};

}  // namespace tandem
