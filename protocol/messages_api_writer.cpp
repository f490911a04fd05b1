#include "protocol/messages_api_writer.h"

#include <utility>

#include "protocol/choice_seed.h"
#include "protocol/sse.h"

namespace tandem {
namespace {

using Json = nlohmann::ordered_json;

std::string object_text(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string event(std::string_view type, const Json& data) {
  return sse_event(type, object_text(data));
}

Json messages_usage(int64_t prompt_tokens, int64_t cached_tokens, int64_t output_tokens) {
  return Json{{"input_tokens", prompt_tokens - cached_tokens},
              {"cache_creation_input_tokens", 0},
              {"cache_read_input_tokens", cached_tokens},
              {"output_tokens", output_tokens}};
}

Json messages_usage(const Usage& usage) {
  return messages_usage(usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens);
}

// A call that parsed has a JSON object's text as its arguments; anything else (which no
// reader makes) would be shown as an empty input rather than break the body.
Json input_of(const ToolCallOut& call) {
  Json input = Json::parse(call.arguments, nullptr, false);
  return input.is_object() ? input : Json::object();
}

Json tool_use_block(const ToolCallOut& call, Json input) {
  return Json{
      {"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", std::move(input)}};
}

// The limit, then a stop sequence, cut the output whatever calls came before the cut.
Json stop_reason_of(FinishReason finish, bool calls, std::string_view stop) {
  if (finish == FinishReason::kLength) return "max_tokens";
  if (!stop.empty()) return "stop_sequence";
  return calls || finish == FinishReason::kToolCalls ? "tool_use" : "end_turn";
}

// Named where stop_reason_of says "stop_sequence".
Json stop_sequence_of(FinishReason finish, std::string_view stop) {
  return finish != FinishReason::kLength && !stop.empty() ? Json(stop) : Json();
}

const char* anthropic_error_type(int status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    default:
      return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

// The machine-readable code, where there is one, as Anthropic's details.error_code (the
// SDKs read thread_unsupported_request there, with the unsupported field).
Json error_json(const ApiError& error) {
  Json body{{"type", anthropic_error_type(error.status)}, {"message", error.message}};
  if (!error.code.empty()) {
    body["details"] = {{"error_code", error.code}};
    if (error.code == "thread_unsupported_request") {
      body["details"]["unsupported"] = Json::array({error.param});
    }
  }
  return Json{{"type", "error"}, {"error", std::move(body)}};
}

}  // namespace

MessagesWriter::MessagesWriter(ResponseHeader header, int64_t prompt_tokens)
    : header_(std::move(header)), prompt_tokens_(prompt_tokens) {}

Json MessagesWriter::message_object(Json content, const Json& stop_reason,
                                    const Json& stop_sequence, const Json& usage) const {
  return Json{{"id", header_.id},
              {"type", "message"},
              {"role", "assistant"},
              {"model", header_.model},
              {"content", std::move(content)},
              {"stop_reason", stop_reason},
              {"stop_sequence", stop_sequence},
              {"usage", usage},
              // tandem's additions, as on its other endpoints: what replays the answer.
              {"seed", reported_seed(header_.seed)},
              {"system_fingerprint", header_.system_fingerprint}};
}

// Anthropic's message_start carries the input's split between new and cached tokens, as the
// final usage does (QA: it said 0 cached where message_delta then said 112).
std::string MessagesWriter::start(int64_t cached_tokens) {
  if (started_) return {};
  started_ = true;
  const Json message = message_object(Json::array(), nullptr, nullptr,
                                      messages_usage(prompt_tokens_, cached_tokens, 0));
  return event("message_start", Json{{"type", "message_start"}, {"message", message}}) +
         event("ping", Json{{"type", "ping"}});
}

std::string MessagesWriter::prompt_cached(int64_t tokens) { return start(tokens); }

std::string MessagesWriter::close_block() {
  if (open_ == Open::kNone) return {};
  open_ = Open::kNone;
  return event("content_block_stop", Json{{"type", "content_block_stop"}, {"index", blocks_ - 1}});
}

// Opens a block of `kind` unless one is open already, closing the other kind first.
std::string MessagesWriter::open_block(Open kind) {
  if (open_ == kind) return {};
  std::string events = close_block();
  const Json block = kind == Open::kThinking
                         ? Json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}
                         : Json{{"type", "text"}, {"text", ""}};
  events +=
      event("content_block_start",
            Json{{"type", "content_block_start"}, {"index", blocks_}, {"content_block", block}});
  ++blocks_;
  open_ = kind;
  return events;
}

std::string MessagesWriter::reasoning_events(std::string_view text) {
  if (text.empty()) return {};
  std::string events = start(0) + open_block(Open::kThinking);
  return events + event("content_block_delta",
                        Json{{"type", "content_block_delta"},
                             {"index", blocks_ - 1},
                             {"delta", {{"type", "thinking_delta"}, {"thinking", text}}}});
}

std::string MessagesWriter::text_events(std::string_view text, const LogprobsPiece*) {
  if (text.empty()) return {};
  std::string events = start(0) + open_block(Open::kText);
  return events +
         event("content_block_delta", Json{{"type", "content_block_delta"},
                                           {"index", blocks_ - 1},
                                           {"delta", {{"type", "text_delta"}, {"text", text}}}});
}

std::string MessagesWriter::closing_events(std::span<const ToolCallOut> calls, FinishReason finish,
                                           const Usage& usage, std::string_view stop) {
  // Nothing came at all: one empty text block, as clients read content[0].
  std::string events = start(0);
  if (blocks_ == 0 && calls.empty()) events += open_block(Open::kText);
  events += close_block();
  for (const ToolCallOut& call : calls) {
    events +=
        event("content_block_start", Json{{"type", "content_block_start"},
                                          {"index", blocks_},
                                          {"content_block", tool_use_block(call, Json::object())}});
    events += event(
        "content_block_delta",
        Json{{"type", "content_block_delta"},
             {"index", blocks_},
             {"delta",
              {{"type", "input_json_delta"}, {"partial_json", object_text(input_of(call))}}}});
    events += event("content_block_stop", Json{{"type", "content_block_stop"}, {"index", blocks_}});
    ++blocks_;
  }
  const bool called = !calls.empty();
  events += event("message_delta", Json{{"type", "message_delta"},
                                        {"delta",
                                         {{"stop_reason", stop_reason_of(finish, called, stop)},
                                          {"stop_sequence", stop_sequence_of(finish, stop)}}},
                                        {"usage", messages_usage(usage)}});
  return events + event("message_stop", Json{{"type", "message_stop"}});
}

std::string MessagesWriter::error_events(const ApiError& error) {
  return event("error", error_json(error));
}

std::string MessagesWriter::whole_body(std::string_view text, std::span<const ToolCallOut> calls,
                                       FinishReason finish, const Usage& usage,
                                       const LogprobsPiece*, std::string_view reasoning,
                                       std::string_view stop) {
  Json content = Json::array();
  if (!reasoning.empty()) {
    content.push_back(Json{{"type", "thinking"}, {"thinking", reasoning}, {"signature", ""}});
  }
  if (!text.empty() || (content.empty() && calls.empty())) {
    content.push_back(Json{{"type", "text"}, {"text", text}});
  }
  for (const ToolCallOut& call : calls) content.push_back(tool_use_block(call, input_of(call)));
  const bool called = !calls.empty();
  return object_text(message_object(std::move(content), stop_reason_of(finish, called, stop),
                                    stop_sequence_of(finish, stop), messages_usage(usage)));
}

std::string anthropic_error_body(const ApiError& error) { return object_text(error_json(error)); }

}  // namespace tandem
