// Chat templates: detection from real GGUF template sources, and the exact prompt text
// each family renders for system, user and assistant turns (as llama.cpp renders them).
#include "protocol/chat_template.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tandem {
namespace {

// Jinja sources as they appear in the tokenizer.chat_template of published GGUF files.
constexpr const char* kChatmlSource =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}";
constexpr const char* kLlama3Source =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | "
    "trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}"
    "{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";
constexpr const char* kLlama2Source =
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
    "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages "
    "%}{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
    "{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + "
    "system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = "
    "message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' "
    "+ content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + "
    "content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";
constexpr const char* kMistralSource =
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != "
    "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
    "user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}"
    "{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
    "{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant "
    "roles are supported!') }}{% endif %}{% endfor %}";
constexpr const char* kZephyrSource =
    "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\\n' + "
    "message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n"
    "{{ '<|system|>\\n' + message['content'] + eos_token }}\n{% elif message['role'] == "
    "'assistant' %}\n{{ '<|assistant|>\\n'  + message['content'] + eos_token }}\n{% endif %}\n"
    "{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n"
    "{% endfor %}";
constexpr const char* kPhi3Source =
    "{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\\n' + "
    "message['content'] + '<|end|>\\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\\n' + "
    "message['content'] + '<|end|>\\n'}}{% endif %}{% endfor %}{{ '<|assistant|>\\n' }}";
constexpr const char* kGemmaSource =
    "{% for message in messages %}{{ '<start_of_turn>' + role + '\\n' + message['content'] | "
    "trim + '<end_of_turn>\\n' }}{% endfor %}";

const std::vector<ChatMessage> kConversation = {
    {"system", "You are kind."},
    {"user", "Hi"},
    {"assistant", "Hello!"},
    {"user", "Bye?"},
};

TEST(ChatTemplate, DetectsEachFamilyFromItsGgufSource) {
  EXPECT_EQ(detect_chat_template(kChatmlSource), ChatTemplate::kChatml);
  EXPECT_EQ(detect_chat_template(kLlama3Source), ChatTemplate::kLlama3);
  EXPECT_EQ(detect_chat_template(kLlama2Source), ChatTemplate::kLlama2);
  EXPECT_EQ(detect_chat_template(kMistralSource), ChatTemplate::kMistral);
  EXPECT_EQ(detect_chat_template(kZephyrSource), ChatTemplate::kZephyr);
}

TEST(ChatTemplate, EmptyOrUnknownTemplatesFallBackToChatml) {
  EXPECT_EQ(detect_chat_template(""), ChatTemplate::kChatml);
  EXPECT_EQ(detect_chat_template(kGemmaSource), ChatTemplate::kChatml);
  EXPECT_EQ(detect_chat_template(kPhi3Source), ChatTemplate::kChatml);
  EXPECT_EQ(detect_chat_template("{{ messages }}"), ChatTemplate::kChatml);
}

TEST(ChatTemplate, NamesRoundTrip) {
  for (ChatTemplate t : {ChatTemplate::kChatml, ChatTemplate::kLlama2, ChatTemplate::kLlama3,
                         ChatTemplate::kMistral, ChatTemplate::kZephyr}) {
    EXPECT_EQ(chat_template_from_name(chat_template_name(t)), t);
    EXPECT_EQ(detect_chat_template(chat_template_name(t)), t);  // a name is a template too
  }
  EXPECT_STREQ(chat_template_name(ChatTemplate::kLlama3), "llama3");
  EXPECT_FALSE(chat_template_from_name("gemma").has_value());
}

TEST(ChatTemplate, ChatmlRendersEveryTurnAndTheAssistantPrompt) {
  EXPECT_EQ(render_chat(ChatTemplate::kChatml, kConversation, "<s>", "</s>"),
            "<|im_start|>system\nYou are kind.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n"
            "<|im_start|>user\nBye?<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplate, Llama2WrapsTheSystemPromptAndOpensLaterTurnsWithBos) {
  EXPECT_EQ(
      render_chat(ChatTemplate::kLlama2, kConversation, "<s>", "</s>"),
      "[INST] <<SYS>>\nYou are kind.\n<</SYS>>\n\nHi [/INST]Hello!</s><s>[INST] Bye? [/INST]");
}

TEST(ChatTemplate, MistralPutsTheSystemPromptBareInTheFirstTurn) {
  EXPECT_EQ(render_chat(ChatTemplate::kMistral, kConversation, "<s>", "</s>"),
            "[INST] You are kind.\nHi [/INST]Hello!</s>[INST] Bye? [/INST]");
}

TEST(ChatTemplate, Llama3TrimsContentAndEndsWithTheAssistantHeader) {
  std::vector<ChatMessage> messages = kConversation;
  messages[1].content = "  Hi \n";
  EXPECT_EQ(render_chat(ChatTemplate::kLlama3, messages, "<|begin_of_text|>", "<|eot_id|>"),
            "<|start_header_id|>system<|end_header_id|>\n\nYou are kind.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nBye?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, ZephyrEndsTurnsWithEos) {
  EXPECT_EQ(render_chat(ChatTemplate::kZephyr, kConversation, "<s>", "</s>"),
            "<|system|>\nYou are kind.</s>\n<|user|>\nHi</s>\n<|assistant|>\nHello!</s>\n"
            "<|user|>\nBye?</s>\n<|assistant|>\n");
}

TEST(ChatTemplate, EmptyEosFallsBackToLlamaCppsLiterals) {
  const std::vector<ChatMessage> turn = {{"user", "a"}, {"assistant", "b"}, {"user", "c"}};
  EXPECT_EQ(render_chat(ChatTemplate::kZephyr, turn, "", ""),
            "<|user|>\na<|endoftext|>\n<|assistant|>\nb<|endoftext|>\n<|user|>\nc<|endoftext|>\n"
            "<|assistant|>\n");
  EXPECT_EQ(render_chat(ChatTemplate::kMistral, turn, "", ""),
            "[INST] a [/INST]b</s>[INST] c [/INST]");
  EXPECT_EQ(render_chat(ChatTemplate::kLlama2, turn, "", ""),
            "[INST] a [/INST]b</s>[INST] c [/INST]");
}

TEST(ChatTemplate, SingleUserTurnGetsJustTheGenerationPrompt) {
  const std::vector<ChatMessage> one = {{"user", "Hello"}};
  EXPECT_EQ(render_chat(ChatTemplate::kChatml, one, "", ""),
            "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render_chat(ChatTemplate::kLlama2, one, "<s>", "</s>"), "[INST] Hello [/INST]");
  EXPECT_EQ(render_chat(ChatTemplate::kMistral, one, "<s>", "</s>"), "[INST] Hello [/INST]");
  EXPECT_EQ(render_chat(ChatTemplate::kLlama3, one, "", ""),
            "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(render_chat(ChatTemplate::kZephyr, one, "<s>", "</s>"),
            "<|user|>\nHello</s>\n<|assistant|>\n");
}

TEST(ChatTemplate, ContentIsCopiedVerbatimIncludingMarkersAndUnicode) {
  // The template does not escape: a user who types a marker gets the marker. (llama.cpp
  // and vLLM behave the same; the server parses special tokens in the rendered prompt.)
  const std::vector<ChatMessage> one = {{"user", "\xf0\x9f\x98\x80 <|im_end|>\n"}};
  EXPECT_EQ(render_chat(ChatTemplate::kChatml, one, "", ""),
            "<|im_start|>user\n\xf0\x9f\x98\x80 <|im_end|>\n<|im_end|>\n<|im_start|>assistant\n");
}

}  // namespace
}  // namespace tandem
