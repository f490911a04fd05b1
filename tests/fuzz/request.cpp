// Fuzzes protocol/'s request parsers with the request body as input: completions, chat,
// responses, Anthropic's messages (and count_tokens), llama-server's /completion and /infill,
// embeddings, tokenize and detokenize. No
// exception may escape them (they return ApiError), every error is a 4xx whose JSON body parses,
// and every accepted request holds the ranges completion_request.h promises. Chat requests are also
// rendered with every template and checked against a vocabulary size and a context length. Each
// parser sees the bodies that name its key field ("prompt", "messages", "input", "content",
// "tokens"); bodies naming none go to the completions parser. Bodies with a tool call's
// marker are also read as a model's output by every tool-call format's reader.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/api_error.h"
#include "protocol/chat_prompt.h"
#include "protocol/completion_request.h"
#include "protocol/embedding_request.h"
#include "protocol/messages_api_request.h"
#include "protocol/messages_api_writer.h"
#include "protocol/native_request.h"
#include "protocol/native_writer.h"
#include "protocol/responses_api_request.h"
#include "protocol/tokenize_request.h"
#include "protocol/tool_calls/tool_call_parser.h"

namespace {

using tandem::ApiError;
using tandem::CompletionRequest;
using tandem::Endpoint;

// A broken invariant is a crash, so libFuzzer saves the input.
void require(bool condition) {
  if (!condition) std::abort();
}

void check_error(const ApiError& error) {
  require(error.status >= 400 && error.status < 500);
  require(!error.message.empty() && !error.type.empty());
  const auto body = nlohmann::json::parse(tandem::to_json_body(error), nullptr, false);
  require(body.is_object() && body.contains("error") && body["error"]["message"].is_string());
}

void check_sampling(const CompletionRequest& request) {
  const tandem::SamplingParams& s = request.sampling;
  require(std::isfinite(s.temperature) && s.temperature >= 0.0f);
  require(s.top_p > 0.0f && s.top_p <= 1.0f);
  require(s.min_p >= 0.0f && s.min_p <= 1.0f);
  require(s.top_k >= 0);
  require(s.seed == 0);
  for (size_t i = 0; i < s.logit_bias.size(); ++i) {
    const auto& [id, bias] = s.logit_bias[i];
    require(id >= 0 && bias >= -100.0f && bias <= 100.0f);
    require(i == 0 || s.logit_bias[i - 1].first < id);  // sorted, one entry per id
  }
}

// The model-dependent checks agree with the request: a vocabulary one past the largest
// id accepts it, one at the largest id rejects it.
// ChatML, as Qwen's GGUFs carry it: every message's content lands in the prompt.
const tandem::JinjaChatTemplate& chatml() {
  static const tandem::JinjaChatTemplate compiled =
      std::get<tandem::JinjaChatTemplate>(tandem::JinjaChatTemplate::compile(
          "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
          "message['content'] + '<|im_end|>\\n' }}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"));
  return compiled;
}

void check_model_checks(const CompletionRequest& request) {
  int32_t max_id = -1;
  for (int32_t id : request.prompt_tokens) max_id = std::max(max_id, id);
  for (const auto& more : request.more_prompt_tokens)
    for (int32_t id : more) max_id = std::max(max_id, id);
  for (const auto& entry : request.sampling.logit_bias) max_id = std::max(max_id, entry.first);
  if (max_id >= 0) {
    if (max_id < INT32_MAX) require(!tandem::check_token_ids(request, max_id + 1).has_value());
    const auto error = tandem::check_token_ids(request, max_id);
    require(error.has_value());
    check_error(*error);
  } else {
    require(!tandem::check_token_ids(request, 1).has_value());
  }
  const size_t n = request.prompt_tokens.size();
  const auto length_error = tandem::check_prompt_length(n, 64, request.endpoint);
  require(length_error.has_value() == (n == 0 || n >= 64));
  if (length_error) check_error(*length_error);
}

void check_completion(const CompletionRequest& request, Endpoint endpoint) {
  require(request.endpoint == endpoint);
  if (endpoint == Endpoint::kCompletions) {
    require(request.prompt_text.empty() != request.prompt_tokens.empty());
    require(request.chat.messages.empty());
    require(request.max_tokens.has_value());
  } else {
    require(!request.chat.messages.empty());
    require(request.prompt_text.empty() && request.prompt_tokens.empty());
    for (const auto& m : request.chat.messages) {
      const std::string& role = m["role"].get_ref<const std::string&>();
      require(role == "system" || role == "user" || role == "assistant" || role == "tool");
      require(m["content"].is_string());
    }
    // Every message's content reaches the rendered prompt, as text from the input.
    const auto rendered = chatml().render(request.chat.messages, tandem::ChatRenderOptions{});
    if (const auto* segments = std::get_if<std::vector<tandem::PromptSegment>>(&rendered)) {
      const std::string prompt = tandem::join_segments(*segments);
      for (const auto& m : request.chat.messages)
        require(prompt.find(m["content"].get<std::string>()) != prompt.npos);
    }
  }
  for (int32_t id : request.prompt_tokens) require(id >= 0);
  require(request.n >= 1 && request.n <= tandem::kMaxChoices);
  require(request.prompt_count() <= tandem::kMaxPrompts);
  for (const auto& more : request.more_prompt_tokens) require(!more.empty());
  for (const auto& more : request.more_prompt_texts) require(!more.empty());
  require(request.more_prompt_texts.empty() || request.more_prompt_tokens.empty());
  if (request.max_tokens)
    require(*request.max_tokens >= 1 && *request.max_tokens <= tandem::kMaxTokensLimit);
  require(request.stop.size() <= (request.endpoint == Endpoint::kMessages
                                      ? tandem::kMaxMessagesStopSequences
                                      : tandem::kMaxStopSequences));
  for (const auto& stop : request.stop) require(!stop.empty());
  require(!request.include_usage || request.stream);
  check_sampling(request);
  check_model_checks(request);
}

void check_completion(std::string_view body, Endpoint endpoint) {
  auto parsed = tandem::parse_completion_request(body, endpoint);
  if (const auto* error = std::get_if<ApiError>(&parsed)) return check_error(*error);
  check_completion(std::get<CompletionRequest>(parsed), endpoint);
}

// A Responses request is a chat request (every check above) whose echo is the object the
// response repeats.
void check_responses(std::string_view body) {
  auto parsed = tandem::parse_responses_request(body);
  if (const auto* error = std::get_if<ApiError>(&parsed)) return check_error(*error);
  const auto& request = std::get<tandem::ResponsesRequest>(parsed);
  require(request.request.endpoint == Endpoint::kResponses);
  require(request.request.n == 1 && !request.request.chat.messages.empty());
  require(request.echo.is_object() && request.echo["store"] == false);
  check_completion(request.request, Endpoint::kResponses);
}

// A Messages request is a chat request too; its errors also make Anthropic's body, and a
// final assistant turn it continues holds text.
void check_messages(std::string_view body) {
  for (bool count : {false, true}) {
    auto parsed =
        count ? tandem::parse_count_tokens_request(body) : tandem::parse_messages_request(body);
    if (const auto* error = std::get_if<ApiError>(&parsed)) {
      check_error(*error);
      const auto anthropic =
          nlohmann::json::parse(tandem::anthropic_error_body(*error), nullptr, false);
      require(anthropic.is_object() && anthropic["error"]["message"].is_string());
      continue;
    }
    const auto& request = std::get<tandem::MessagesRequest>(parsed).request;
    require(request.endpoint == Endpoint::kMessages);
    require(request.n == 1 && !request.chat.messages.empty());
    require(count || request.max_tokens.has_value());
    if (request.chat.continue_final_message) {
      require(!request.chat.add_generation_prompt);
      require(request.chat.messages.back()["role"] == "assistant");
    }
    check_completion(request, Endpoint::kMessages);
  }
}

// An accepted embeddings request holds inputs as promised, and its answer (for made-up
// vectors, in both encodings) parses with one entry per input.
void check_embeddings(std::string_view body) {
  auto parsed = tandem::parse_embedding_request(body);
  if (const auto* error = std::get_if<ApiError>(&parsed)) return check_error(*error);
  const auto& request = std::get<tandem::EmbeddingRequest>(parsed);
  require(!request.inputs.empty() && request.inputs.size() <= tandem::kMaxEmbeddingInputs);
  for (const auto& in : request.inputs) {
    require(in.is_tokens ? !in.tokens.empty() && in.text.empty() : !in.text.empty());
    for (int32_t id : in.tokens) require(id >= 0);
  }
  require(!request.dimensions || *request.dimensions >= 1);
  require(!request.truncate_prompt_tokens || *request.truncate_prompt_tokens != 0);
  std::vector<std::vector<float>> vectors(request.inputs.size(), std::vector<float>{0.5f, -1.0f});
  const auto answer = nlohmann::json::parse(
      tandem::embedding_response_json(request.model, vectors, request.base64, 3));
  require(answer["data"].size() == request.inputs.size());
}

// llama-server's /completion and /infill bodies are completions requests (every check
// above) with the native fields in range; the answer, picked by the request's
// response_fields, parses.
void check_native(std::string_view body) {
  for (bool infill : {false, true}) {
    auto parsed = tandem::parse_native_request(body, infill);
    if (const auto* error = std::get_if<ApiError>(&parsed)) {
      check_error(*error);
      continue;
    }
    const auto& native = std::get<tandem::NativeRequest>(parsed);
    require(native.infill == infill && native.request.n == 1);
    require(native.min_indent >= 0 && native.time_limit_ms >= 0);
    require(!native.request.max_tokens || *native.request.max_tokens >= 0);
    // Beyond a completions request's range: no limit (n_predict -1) or none generated (0).
    CompletionRequest as_completion = native.request;
    if (!as_completion.max_tokens || *as_completion.max_tokens == 0) as_completion.max_tokens = 1;
    check_completion(as_completion, Endpoint::kCompletions);
    tandem::NativeWriter writer(tandem::ResponseHeader{}, "p", 1, native.settings,
                                native.response_fields);
    const auto answer = nlohmann::json::parse(
        writer.whole_body("text", {}, tandem::FinishReason::kStop, tandem::Usage{3, 1, 0}, nullptr),
        nullptr, false);
    require(answer.is_object());
  }
}

void check_tokenize(std::string_view body, bool tokenize, bool detokenize) {
  if (tokenize) {
    auto parsed = tandem::parse_tokenize_request(body);
    if (const auto* error = std::get_if<ApiError>(&parsed)) check_error(*error);
  }
  if (!detokenize) return;
  auto parsed = tandem::parse_detokenize_request(body);
  if (const auto* error = std::get_if<ApiError>(&parsed)) {
    check_error(*error);
  } else {
    const auto& tokens = std::get<tandem::DetokenizeRequest>(parsed).tokens;
    for (int32_t id : tokens) require(id >= 0);
    const auto echoed = nlohmann::json::parse(tandem::tokenize_response_json(tokens));
    require(echoed["tokens"].get<std::vector<int32_t>>() == tokens);
  }
  // Any bytes make valid JSON content (invalid UTF-8 becomes U+FFFD).
  const auto content =
      nlohmann::json::parse(tandem::detokenize_response_json(body), nullptr, false);
  require(content.is_object() && content["content"].is_string());
}

}  // namespace

// A model's output read for tool calls in every family's format: each call read has a
// name and arguments that are a JSON object's text, and a stream never releases more than
// the output holds.
void check_tool_calls(std::string_view output) {
  static const std::vector<tandem::ToolFunction> functions = [] {
    tandem::ToolFunction f;
    f.name = "f";
    f.parameters = nlohmann::ordered_json::parse(
        R"({"type": "object", "properties": {"s": {"type": "string"}, "i": {"type": "integer"},
            "n": {"type": "number"}, "b": {"type": "boolean"}, "o": {"type": "object"},
            "a": {"type": ["array", "null"]}}})");
    return std::vector<tandem::ToolFunction>{f};
  }();
  using tandem::ToolCallFormat;
  for (ToolCallFormat format :
       {ToolCallFormat::kJson, ToolCallFormat::kHermes, ToolCallFormat::kLlama3,
        ToolCallFormat::kMistral, ToolCallFormat::kMistralArgs, ToolCallFormat::kQwenXml,
        ToolCallFormat::kGlmXml}) {
    const tandem::ParsedToolCalls parsed = tandem::parse_tool_calls(format, output, functions);
    for (const tandem::ParsedToolCall& call : parsed.calls) {
      require(!call.name.empty());
      const auto arguments = nlohmann::json::parse(call.arguments, nullptr, false);
      require(arguments.is_object());
    }
    require(tandem::tool_call_safe_prefix(format, output, 0) <= output.size());
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  // Each parser runs only on bodies that name its key field: without it every parser stops
  // at the same "'x' is required" after the shared JSON parse, so running all four on
  // every input would cost four parses for one parse's coverage.
  const auto names = [&](std::string_view key) { return body.find(key) != body.npos; };
  const bool chat = names("messages"), tokenize = names("content"), detokenize = names("tokens");
  const bool responses = names("input");
  if (names("prompt") || !(chat || responses || tokenize || detokenize))
    check_completion(body, Endpoint::kCompletions);
  if (names("prompt") || names("input_")) check_native(body);
  if (chat) {
    check_completion(body, Endpoint::kChatCompletions);
    check_messages(body);
  }
  if (responses) {
    check_responses(body);
    check_embeddings(body);
  }
  if (tokenize || detokenize) check_tokenize(body, tokenize, detokenize);
  if (names("<tool_call>") || names("[TOOL_CALLS]") || names("\"name\"")) check_tool_calls(body);
  return 0;
}
