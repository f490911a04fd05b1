// Anthropic's Messages API: POST /v1/messages, the chat request it amounts to
// (protocol/messages_api_request.h) answered by the Messages writer; and POST
// /v1/messages/count_tokens, the prompt's length as the chat template renders it. Their
// errors take Anthropic's shape on the way out (answer_in_route_shape).
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "protocol/messages_api_request.h"
#include "protocol/messages_api_writer.h"
#include "server/chat_tokens.h"
#include "server/endpoints.h"

namespace tandem::server {

Endpoints::Result Endpoints::messages(const ApiRequest& api) {
  auto parsed = parse_messages_request(api.body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return error_answer(*error);
  MessagesRequest& request = std::get<MessagesRequest>(parsed);
  if (auto refused = thinking_refusal(request)) return std::move(*refused);
  Result result = generation(api, request.request, &request.renames);
  if (auto* plan = std::get_if<GenerationPlan>(&result)) {
    plan->writer =
        std::make_unique<MessagesWriter>(plan->encoder.header(), plan->access.prompt_tokens);
    plan->tools.drop_cut_call = true;
    plan->admissions = plan->stream;
  }
  return result;
}

// Thinking asked for where no reasoning can be told apart: the answer would hold none.
std::optional<HttpAnswer> Endpoints::thinking_refusal(const MessagesRequest& request) const {
  const bool thinks = model_.chat_template && model_.chat_template->reasoning;
  if (!request.thinking || thinks || !model_.answers_to(request.request.model)) return std::nullopt;
  return error_answer(bad_request(
      "'thinking' is not supported by this model: its chat template marks no reasoning.",
      "thinking"));
}

// {"input_tokens": N}: the tokens the request's prompt (system, messages, tools) renders to.
Endpoints::Result Endpoints::count_tokens(const ApiRequest& api) {
  auto parsed = parse_count_tokens_request(api.body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return error_answer(*error);
  MessagesRequest& request = std::get<MessagesRequest>(parsed);
  if (!model_.answers_to(request.request.model)) {
    return error_answer(model_not_found(request.request.model));
  }
  if (auto refused = thinking_refusal(request)) return std::move(*refused);
  auto rendered = render_chat(request.request.chat, "messages");
  if (auto* refused = std::get_if<HttpAnswer>(&rendered)) {
    if (refused->error) *refused = error_answer(renamed_params(*refused->error, request.renames));
    return std::move(*refused);
  }
  const auto tokens =
      tokenize_chat_prompt(tokenizer_, std::get<std::vector<PromptSegment>>(rendered));
  HttpAnswer answer;
  answer.body = "{\"input_tokens\":" + std::to_string(tokens.size()) + "}";
  return answer;
}

}  // namespace tandem::server
