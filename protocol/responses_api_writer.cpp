#include "protocol/responses_api_writer.h"

#include <algorithm>
#include <utility>

#include "protocol/choice_seed.h"
#include "protocol/sse.h"

namespace tandem {
namespace {

using Json = nlohmann::ordered_json;

std::string object_text(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Chat's per-token entries ({token, logprob, bytes, top_logprobs}), which are Responses' too.
Json logprob_entries(const LogprobsPiece* piece) {
  if (piece == nullptr) return Json::array();
  Json chat = logprobs_json(Endpoint::kChatCompletions, piece);
  return chat.is_object() && chat.contains("content") ? chat["content"] : Json::array();
}

Json responses_usage(const Usage& usage) {
  return Json{{"input_tokens", usage.prompt_tokens},
              {"input_tokens_details", {{"cached_tokens", usage.cached_tokens}}},
              {"output_tokens", usage.completion_tokens},
              {"output_tokens_details",
               {{"reasoning_tokens", std::max<int64_t>(0, usage.reasoning_tokens)}}},
              {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
}

bool cut_short(FinishReason finish) { return finish == FinishReason::kLength; }

}  // namespace

ResponsesWriter::ResponsesWriter(ResponseHeader header, nlohmann::ordered_json echo)
    : header_(std::move(header)), echo_(std::move(echo)) {
  const size_t underscore = header_.id.find('_');
  key_ = underscore == std::string::npos ? header_.id : header_.id.substr(underscore + 1);
}

Json ResponsesWriter::response_object(std::string_view status, Json output,
                                      const Json& usage) const {
  Json object{{"id", header_.id},
              {"object", "response"},
              {"created_at", header_.created},
              {"status", status},
              {"background", false},
              {"error", nullptr},
              {"incomplete_details", nullptr}};
  if (status == "incomplete") object["incomplete_details"] = {{"reason", "max_output_tokens"}};
  object["model"] = header_.model;
  object["output"] = std::move(output);
  for (const auto& [key, value] : echo_.items()) object[key] = value;
  object["usage"] = usage;
  // tandem's additions, as on its other endpoints: the seed that replays the response.
  object["seed"] = reported_seed(header_.seed);
  object["system_fingerprint"] = header_.system_fingerprint;
  return object;
}

// "event: <type>" and the payload with its type and the next sequence number first.
std::string ResponsesWriter::event(std::string_view type, Json payload) {
  Json data{{"type", type}, {"sequence_number", sequence_++}};
  for (auto& [key, value] : payload.items()) data[key] = std::move(value);
  return sse_event(type, object_text(data));
}

Json ResponsesWriter::message_item(std::string_view status) const {
  Json part{{"type", "output_text"},
            {"text", text_},
            {"annotations", Json::array()},
            {"logprobs", logprobs_}};
  return Json{{"id", "msg_" + key_},
              {"type", "message"},
              {"status", status},
              {"role", "assistant"},
              {"content", Json::array({std::move(part)})}};
}

Json ResponsesWriter::reasoning_item(std::string_view status) const {
  return Json{{"id", "rs_" + key_},
              {"type", "reasoning"},
              {"status", status},
              {"summary", Json::array()},
              {"content", Json::array({Json{{"type", "reasoning_text"}, {"text", reasoning_}}})}};
}

Json ResponsesWriter::call_item(size_t index, const ToolCallOut& call,
                                std::string_view status) const {
  return Json{{"id", "fc_" + key_ + "_" + std::to_string(index)},
              {"type", "function_call"},
              {"status", status},
              {"arguments", call.arguments},
              {"call_id", call.id},
              {"name", call.name}};
}

std::string ResponsesWriter::opening_events() {
  const Json object = response_object("in_progress", Json::array(), nullptr);
  std::string events = event("response.created", Json{{"response", object}});
  events += event("response.in_progress", Json{{"response", object}});
  return events;
}

// The events that begin an item of one part: the item added (its content empty), then its
// part added, empty; end_item's counterpart.
std::string ResponsesWriter::begin_item(Json item, Json empty_part) {
  const Json item_id = item["id"];
  item["content"] = Json::array();
  std::string events = event("response.output_item.added",
                             Json{{"output_index", output_.size()}, {"item", std::move(item)}});
  events += event("response.content_part.added", Json{{"item_id", item_id},
                                                      {"output_index", output_.size()},
                                                      {"content_index", 0},
                                                      {"part", std::move(empty_part)}});
  return events;
}

std::string ResponsesWriter::open_message() {
  if (message_open_) return {};
  message_open_ = true;
  return begin_item(message_item("in_progress"), Json{{"type", "output_text"},
                                                      {"text", ""},
                                                      {"annotations", Json::array()},
                                                      {"logprobs", Json::array()}});
}

std::string ResponsesWriter::reasoning_events(std::string_view text) {
  if (text.empty()) return {};
  std::string events;
  if (!reasoning_open_) {
    reasoning_open_ = true;
    events +=
        begin_item(reasoning_item("in_progress"), Json{{"type", "reasoning_text"}, {"text", ""}});
  }
  reasoning_ += text;
  events += event("response.reasoning_text.delta", Json{{"item_id", "rs_" + key_},
                                                        {"output_index", output_.size()},
                                                        {"content_index", 0},
                                                        {"delta", text}});
  return events;
}

std::string ResponsesWriter::close_reasoning(std::string_view status) {
  if (!reasoning_open_) return {};
  reasoning_open_ = false;
  return end_item(reasoning_item(status), "response.reasoning_text.done",
                  Json{{"text", reasoning_}});
}

// The events that end an item of one part: its text done (with text_fields), the part
// done, the item done; the item joins the output.
std::string ResponsesWriter::end_item(const Json& item, std::string_view text_done,
                                      Json text_fields) {
  const Json place{{"item_id", item["id"]}, {"output_index", output_.size()}, {"content_index", 0}};
  Json done = place;
  for (auto& [key, value] : text_fields.items()) done[key] = std::move(value);
  std::string events = event(text_done, std::move(done));
  Json part_done = place;
  part_done["part"] = item["content"][0];
  events += event("response.content_part.done", std::move(part_done));
  events +=
      event("response.output_item.done", Json{{"output_index", output_.size()}, {"item", item}});
  output_.push_back(item);
  return events;
}

std::string ResponsesWriter::text_events(std::string_view text, const LogprobsPiece* logprobs) {
  Json entries = logprob_entries(logprobs);
  if (text.empty() && entries.empty()) return {};
  std::string events = close_reasoning("completed");
  events += open_message();
  text_ += text;
  for (const Json& entry : entries) logprobs_.push_back(entry);
  events += event("response.output_text.delta", Json{{"item_id", "msg_" + key_},
                                                     {"output_index", output_.size()},
                                                     {"content_index", 0},
                                                     {"delta", text},
                                                     {"logprobs", std::move(entries)}});
  return events;
}

std::string ResponsesWriter::close_message(std::string_view status) {
  std::string events = open_message();
  return events + end_item(message_item(status), "response.output_text.done",
                           Json{{"text", text_}, {"logprobs", logprobs_}});
}

std::string ResponsesWriter::call_events(size_t index, const ToolCallOut& call) {
  const std::string item_id = "fc_" + key_ + "_" + std::to_string(index);
  Json added = call_item(index, call, "in_progress");
  added["arguments"] = "";
  std::string events = event("response.output_item.added",
                             Json{{"output_index", output_.size()}, {"item", std::move(added)}});
  events += event(
      "response.function_call_arguments.delta",
      Json{{"item_id", item_id}, {"output_index", output_.size()}, {"delta", call.arguments}});
  events += event("response.function_call_arguments.done", Json{{"item_id", item_id},
                                                                {"output_index", output_.size()},
                                                                {"name", call.name},
                                                                {"arguments", call.arguments}});
  Json item = call_item(index, call, "completed");
  events +=
      event("response.output_item.done", Json{{"output_index", output_.size()}, {"item", item}});
  output_.push_back(std::move(item));
  return events;
}

std::string ResponsesWriter::closing_events(std::span<const ToolCallOut> calls, FinishReason finish,
                                            const Usage& usage, std::string_view) {
  const std::string_view status = cut_short(finish) ? "incomplete" : "completed";
  const bool reasoned = reasoning_open_ || !reasoning_.empty();
  // A reasoning still open was cut short by the limit; one the text closed was complete.
  std::string events = close_reasoning(calls.empty() ? status : "completed");
  if (message_open_ || (calls.empty() && !reasoned)) events += close_message(status);
  for (size_t i = 0; i < calls.size(); ++i) events += call_events(i, calls[i]);
  const Json object = response_object(status, output_, responses_usage(usage));
  events += event(cut_short(finish) ? "response.incomplete" : "response.completed",
                  Json{{"response", object}});
  return events;
}

std::string ResponsesWriter::error_events(const ApiError& error) {
  Json code = error.code.empty() ? Json(error.type) : Json(error.code);
  std::string events =
      event("error", Json{{"code", code},
                          {"message", error.message},
                          {"param", error.param.empty() ? Json() : Json(error.param)}});
  Json object = response_object("failed", output_, nullptr);
  object["error"] = {{"code", code}, {"message", error.message}};
  events += event("response.failed", Json{{"response", std::move(object)}});
  return events;
}

std::string ResponsesWriter::whole_body(std::string_view text, std::span<const ToolCallOut> calls,
                                        FinishReason finish, const Usage& usage,
                                        const LogprobsPiece* logprobs, std::string_view reasoning,
                                        std::string_view) {
  const std::string_view status = cut_short(finish) ? "incomplete" : "completed";
  text_ = text;
  logprobs_ = logprob_entries(logprobs);
  reasoning_ = reasoning;
  Json output = Json::array();
  // The reasoning was cut short only where nothing followed it.
  const bool answered = !text.empty() || !logprobs_.empty() || !calls.empty();
  if (!reasoning.empty()) output.push_back(reasoning_item(answered ? "completed" : status));
  if (!text.empty() || !logprobs_.empty() || (calls.empty() && reasoning.empty())) {
    output.push_back(message_item(status));
  }
  for (size_t i = 0; i < calls.size(); ++i) output.push_back(call_item(i, calls[i], "completed"));
  return object_text(response_object(status, std::move(output), responses_usage(usage)));
}

}  // namespace tandem
