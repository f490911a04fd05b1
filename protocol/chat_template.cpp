#include "protocol/chat_template.h"

namespace tandem {
namespace {

bool contains(std::string_view text, std::string_view marker) {
  return text.find(marker) != std::string_view::npos;
}

std::string_view trim(std::string_view text) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  size_t begin = text.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  size_t end = text.find_last_not_of(kSpace);
  return text.substr(begin, end - begin + 1);
}

std::string render_chatml(const std::vector<ChatMessage>& messages) {
  std::string out;
  for (const ChatMessage& m : messages) {
    out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  }
  out += "<|im_start|>assistant\n";
  return out;
}

// Llama 2 and Mistral share the [INST] ... [/INST] layout. Llama 2 wraps the system prompt
// in <<SYS>> and opens each later turn with BOS (llama.cpp's "llama2-sys-bos"); Mistral
// puts the system prompt bare at the top of the first turn (llama.cpp's "llama2").
// The generation prompt is the closing [/INST] itself, so nothing is appended.
std::string render_inst(const std::vector<ChatMessage>& messages, bool llama2,
                        std::string_view bos_text, std::string_view eos_text) {
  std::string out = "[INST] ";
  bool inside_turn = true;
  for (const ChatMessage& m : messages) {
    if (!inside_turn) {
      inside_turn = true;
      if (llama2) out += bos_text;
      out += "[INST] ";
    }
    if (m.role == "system") {
      out += llama2 ? "<<SYS>>\n" + m.content + "\n<</SYS>>\n\n" : m.content + "\n";
    } else if (m.role == "user") {
      out += m.content + " [/INST]";
    } else {
      out += m.content;
      out += eos_text;
      inside_turn = false;
    }
  }
  return out;
}

std::string render_llama3(const std::vector<ChatMessage>& messages) {
  std::string out;
  for (const ChatMessage& m : messages) {
    out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n";
    out += trim(m.content);
    out += "<|eot_id|>";
  }
  out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

std::string render_zephyr(const std::vector<ChatMessage>& messages, std::string_view eos_text) {
  std::string out;
  for (const ChatMessage& m : messages) {
    out += "<|" + m.role + "|>\n" + m.content;
    out += eos_text;
    out += "\n";
  }
  out += "<|assistant|>\n";
  return out;
}

}  // namespace

const char* chat_template_name(ChatTemplate chat_template) {
  switch (chat_template) {
    case ChatTemplate::kChatml:
      return "chatml";
    case ChatTemplate::kLlama2:
      return "llama2";
    case ChatTemplate::kLlama3:
      return "llama3";
    case ChatTemplate::kMistral:
      return "mistral";
    case ChatTemplate::kZephyr:
      return "zephyr";
  }
  return "chatml";
}

std::optional<ChatTemplate> chat_template_from_name(std::string_view name) {
  for (ChatTemplate t : {ChatTemplate::kChatml, ChatTemplate::kLlama2, ChatTemplate::kLlama3,
                         ChatTemplate::kMistral, ChatTemplate::kZephyr}) {
    if (name == chat_template_name(t)) return t;
  }
  return std::nullopt;
}

ChatTemplate detect_chat_template(std::string_view gguf_template) {
  if (auto named = chat_template_from_name(gguf_template)) return *named;
  // The order follows llama.cpp's llm_chat_detect_template: chatml's marker first, since
  // other families' templates never contain it.
  if (contains(gguf_template, "<|im_start|>")) return ChatTemplate::kChatml;
  if (contains(gguf_template, "<|start_header_id|>")) return ChatTemplate::kLlama3;
  if (contains(gguf_template, "[INST]")) {
    return contains(gguf_template, "<<SYS>>") ? ChatTemplate::kLlama2 : ChatTemplate::kMistral;
  }
  // Phi-3 also writes <|user|>, but ends turns with <|end|>; rendering it as zephyr would be
  // wrong, so it falls through to the default.
  if (contains(gguf_template, "<|user|>") && !contains(gguf_template, "<|end|>")) {
    return ChatTemplate::kZephyr;
  }
  return ChatTemplate::kChatml;
}

std::string render_chat(ChatTemplate chat_template, const std::vector<ChatMessage>& messages,
                        std::string_view bos_text, std::string_view eos_text) {
  switch (chat_template) {
    case ChatTemplate::kChatml:
      return render_chatml(messages);
    case ChatTemplate::kLlama2:
    case ChatTemplate::kMistral:
      return render_inst(messages, chat_template == ChatTemplate::kLlama2, bos_text,
                         eos_text.empty() ? std::string_view("</s>") : eos_text);
    case ChatTemplate::kLlama3:
      return render_llama3(messages);
    case ChatTemplate::kZephyr:
      return render_zephyr(messages,
                           eos_text.empty() ? std::string_view("<|endoftext|>") : eos_text);
  }
  return render_chatml(messages);
}

}  // namespace tandem
