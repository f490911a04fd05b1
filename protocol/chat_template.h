// Chat templates: recognizes the common families in a GGUF's tokenizer.chat_template by
// their markers, and renders messages into prompt text with the assistant's generation
// prompt appended, as llama.cpp's built-in (non-Jinja) templates do. Pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/completion_request.h"

namespace tandem {

enum class ChatTemplate { kChatml, kLlama2, kLlama3, kMistral, kZephyr };

// "chatml", "llama2", "llama3", "mistral", "zephyr".
const char* chat_template_name(ChatTemplate chat_template);
// The inverse of chat_template_name; nullopt for any other string.
std::optional<ChatTemplate> chat_template_from_name(std::string_view name);

// A template's name, or the Jinja source from GGUF metadata, recognized by its markers:
// "<|im_start|>" chatml; "<|start_header_id|>" llama3; "[INST]" with "<<SYS>>" llama2 and
// without it mistral; "<|user|>" (without phi-3's "<|end|>") zephyr. Empty or unknown: chatml.
ChatTemplate detect_chat_template(std::string_view gguf_template);

// The prompt for messages, ending where the assistant's reply begins. bos_text and eos_text
// are the tokenizer's BOS and EOS pieces ("<s>", "</s>"): llama2 opens every turn after the
// first with BOS, and llama2, mistral and zephyr close turns with EOS (empty eos_text: "</s>",
// or "<|endoftext|>" for zephyr, as llama.cpp writes). The leading BOS is not rendered: the
// tokenizer adds it (add_special). The server encodes the text with special-token parsing on,
// so the markers become their special tokens.
std::string render_chat(ChatTemplate chat_template, const std::vector<ChatMessage>& messages,
                        std::string_view bos_text, std::string_view eos_text);

}  // namespace tandem
