#include "protocol/responses.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>

#include "protocol/choice_seed.h"

namespace tandem {
namespace {

using Json = nlohmann::ordered_json;

// Generated text is valid UTF-8 by the detokenizer's contract; replace is the last line
// of defence, so that a broken token can never turn into a throw or invalid JSON.
std::string dump(const Json& body) {
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json finish_json(std::optional<FinishReason> finish) {
  return finish ? Json(finish_reason_name(*finish)) : Json(nullptr);
}

// vLLM's stop_reason: the stop token's id, else the stop string, else null.
Json stop_reason_json(const StopReason* stop) {
  if (stop == nullptr) return nullptr;
  if (stop->token >= 0) return stop->token;
  return stop->text.empty() ? Json(nullptr) : Json(stop->text);
}

Json usage_json(const Usage& usage) {
  Json json{{"prompt_tokens", usage.prompt_tokens},
            {"completion_tokens", usage.completion_tokens},
            {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
            // As OpenAI reports it: the prompt tokens the prefix cache supplied.
            {"prompt_tokens_details", Json{{"cached_tokens", usage.cached_tokens}}}};
  // As OpenAI's reasoning models report it, where the answer splits the reasoning off.
  if (usage.reasoning_tokens >= 0)
    json["completion_tokens_details"] = Json{{"reasoning_tokens", usage.reasoning_tokens}};
  return json;
}

Json envelope(const ResponseHeader& header, const char* object) {
  return Json{{"id", header.id},
              {"object", object},
              {"created", header.created},
              {"model", header.model},
              {"seed", reported_seed(header.seed)},
              {"system_fingerprint", header.system_fingerprint}};
}

Json tool_call_json(const ToolCallOut& call) {
  return Json{{"id", call.id},
              {"type", "function"},
              {"function", Json{{"name", call.name}, {"arguments", call.arguments}}}};
}

// OpenAI's assistant message: content null when the model only called tools, and refusal
// always null (OpenAI and vLLM send the key; the SDK's type has it as string | null).
Json message_json(const ChoiceResult& c) {
  Json message{{"role", "assistant"}, {"content", c.text}, {"refusal", nullptr}};
  if (!c.reasoning.empty()) message["reasoning_content"] = c.reasoning;
  if (c.tool_calls.empty()) return message;
  if (c.text.empty()) message["content"] = nullptr;
  Json calls = Json::array();
  for (const ToolCallOut& call : c.tool_calls) calls.push_back(tool_call_json(call));
  message["tool_calls"] = std::move(calls);
  return message;
}

}  // namespace

std::string response_id_prefix(Endpoint endpoint) {
  return endpoint == Endpoint::kCompletions       ? "cmpl-"
         : endpoint == Endpoint::kChatCompletions ? "chatcmpl-"
         : endpoint == Endpoint::kResponses       ? "resp_"
                                                  : "msg_";
}

bool is_client_request_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id)
    if (c < 0x21 || c > 0x7e) return false;
  return true;
}

std::string make_response_id(Endpoint endpoint, uint64_t high, uint64_t low) {
  char hex[33];
  std::snprintf(hex, sizeof(hex), "%016llx%016llx", static_cast<unsigned long long>(high),
                static_cast<unsigned long long>(low));
  return response_id_prefix(endpoint) + hex;
}

std::string completion_response_json(const ResponseHeader& header,
                                     std::span<const ChoiceResult> choices, const Usage& usage,
                                     const LlamaTimings* timings) {
  Json body = envelope(header, "text_completion");
  body["choices"] = Json::array();
  for (const ChoiceResult& c : choices) {
    body["choices"].push_back(Json{{"index", c.id.index},
                                   {"seed", reported_seed(c.id.seed)},
                                   {"text", c.text},
                                   {"logprobs", logprobs_json(Endpoint::kCompletions, c.logprobs)},
                                   {"finish_reason", finish_reason_name(c.finish)},
                                   {"stop_reason", stop_reason_json(c.stop)}});
  }
  body["usage"] = usage_json(usage);
  if (timings != nullptr) body["timings"] = timings_json(*timings);
  return dump(body);
}

std::string chat_completion_response_json(const ResponseHeader& header,
                                          std::span<const ChoiceResult> choices, const Usage& usage,
                                          const LlamaTimings* timings) {
  Json body = envelope(header, "chat.completion");
  body["choices"] = Json::array();
  for (const ChoiceResult& c : choices) {
    body["choices"].push_back(
        Json{{"index", c.id.index},
             {"seed", reported_seed(c.id.seed)},
             {"message", message_json(c)},
             {"logprobs", logprobs_json(Endpoint::kChatCompletions, c.logprobs)},
             {"finish_reason", finish_reason_name(c.finish)},
             {"stop_reason", stop_reason_json(c.stop)}});
  }
  body["usage"] = usage_json(usage);
  if (timings != nullptr) body["timings"] = timings_json(*timings);
  return dump(body);
}

std::string completion_response_json(const ResponseHeader& header, std::string_view text,
                                     FinishReason finish, const Usage& usage,
                                     const LogprobsPiece* logprobs) {
  const ChoiceResult one{{0, header.seed}, text, finish, logprobs};
  return completion_response_json(header, std::span(&one, 1), usage);
}

std::string chat_completion_response_json(const ResponseHeader& header, std::string_view text,
                                          FinishReason finish, const Usage& usage,
                                          const LogprobsPiece* logprobs) {
  const ChoiceResult one{{0, header.seed}, text, finish, logprobs};
  return chat_completion_response_json(header, std::span(&one, 1), usage);
}

std::string completion_chunk_json(const ResponseHeader& header, std::string_view text,
                                  std::optional<FinishReason> finish, const LogprobsPiece* logprobs,
                                  std::optional<ChoiceId> choice, ChunkExtras extras) {
  const ChoiceId id = choice.value_or(ChoiceId{0, header.seed});
  Json body = envelope(header, "text_completion");
  Json one{{"index", id.index},
           {"seed", reported_seed(id.seed)},
           {"text", text},
           {"logprobs", logprobs_json(Endpoint::kCompletions, logprobs)},
           {"finish_reason", finish_json(finish)}};
  if (finish) one["stop_reason"] = stop_reason_json(extras.stop);
  body["choices"] = Json::array({std::move(one)});
  if (extras.timings != nullptr) body["timings"] = timings_json(*extras.timings);
  return dump(body);
}

std::string chat_role_chunk_json(const ResponseHeader& header, std::optional<ChoiceId> choice) {
  const ChoiceId id = choice.value_or(ChoiceId{0, header.seed});
  Json body = envelope(header, "chat.completion.chunk");
  body["choices"] = Json::array({Json{{"index", id.index},
                                      {"seed", reported_seed(id.seed)},
                                      {"delta", Json{{"role", "assistant"}, {"content", ""}}},
                                      {"logprobs", nullptr},
                                      {"finish_reason", nullptr}}});
  return dump(body);
}

namespace {

std::string chat_delta_chunk(const ResponseHeader& header, Json delta,
                             std::optional<FinishReason> finish, const LogprobsPiece* logprobs,
                             std::optional<ChoiceId> choice, ChunkExtras extras = {}) {
  const ChoiceId id = choice.value_or(ChoiceId{0, header.seed});
  Json body = envelope(header, "chat.completion.chunk");
  Json one{{"index", id.index},
           {"seed", reported_seed(id.seed)},
           {"delta", std::move(delta)},
           {"logprobs", logprobs_json(Endpoint::kChatCompletions, logprobs)},
           {"finish_reason", finish_json(finish)}};
  if (finish) one["stop_reason"] = stop_reason_json(extras.stop);
  body["choices"] = Json::array({std::move(one)});
  if (extras.timings != nullptr) body["timings"] = timings_json(*extras.timings);
  return dump(body);
}

}  // namespace

std::string chat_chunk_json(const ResponseHeader& header, std::string_view text,
                            std::optional<FinishReason> finish, const LogprobsPiece* logprobs,
                            std::optional<ChoiceId> choice, ChunkExtras extras) {
  // OpenAI's last chunk has an empty delta; a last chunk that still carries text keeps it.
  Json delta = Json::object();
  if (!text.empty() || !finish) delta["content"] = text;
  return chat_delta_chunk(header, std::move(delta), finish, logprobs, choice, extras);
}

std::string chat_reasoning_chunk_json(const ResponseHeader& header, std::string_view text,
                                      const LogprobsPiece* logprobs, std::optional<ChoiceId> choice,
                                      const LlamaTimings* timings) {
  return chat_delta_chunk(header, Json{{"reasoning_content", text}}, std::nullopt, logprobs, choice,
                          ChunkExtras{nullptr, timings});
}

std::string chat_tool_call_chunk_json(const ResponseHeader& header, ChoiceId choice, int32_t index,
                                      const ToolCallOut& call, bool first,
                                      const LlamaTimings* timings) {
  Json delta_call{{"index", index}};
  if (first) {
    delta_call["id"] = call.id;
    delta_call["type"] = "function";
    delta_call["function"] = Json{{"name", call.name}, {"arguments", ""}};
  } else {
    delta_call["function"] = Json{{"arguments", call.arguments}};
  }
  Json body = envelope(header, "chat.completion.chunk");
  body["choices"] =
      Json::array({Json{{"index", choice.index},
                        {"seed", reported_seed(choice.seed)},
                        {"delta", Json{{"tool_calls", Json::array({std::move(delta_call)})}}},
                        {"logprobs", nullptr},
                        {"finish_reason", nullptr}}});
  if (timings != nullptr) body["timings"] = timings_json(*timings);
  return dump(body);
}

std::string usage_chunk_json(const ResponseHeader& header, Endpoint endpoint, const Usage& usage) {
  Json body = envelope(
      header, endpoint == Endpoint::kChatCompletions ? "chat.completion.chunk" : "text_completion");
  body["choices"] = Json::array();
  body["usage"] = usage_json(usage);
  return dump(body);
}

namespace {

Json model_object(const ServedModel& model, const std::string& name) {
  return Json{{"id", name},
              {"object", "model"},
              {"created", model.created},
              {"owned_by", "tandem"},
              {"root", model.names.front()},
              {"max_model_len", model.context_length},
              {"chat_template", model.chat_template ? Json(*model.chat_template) : Json()}};
}

}  // namespace

std::string models_list_json(const ServedModel& model) {
  Json data = Json::array();
  for (const std::string& name : model.names) data.push_back(model_object(model, name));
  return dump(Json{{"object", "list"}, {"data", std::move(data)}});
}

std::string model_json(const ServedModel& model, const std::string& name) {
  return dump(model_object(model, name));
}

}  // namespace tandem
