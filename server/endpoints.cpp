#include "server/endpoints.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <mutex>
#include <random>

#include "protocol/choice_seed.h"
#include "protocol/messages_api_writer.h"
#include "protocol/responses_api_request.h"
#include "protocol/tokenize_request.h"
#include "server/chat_tokens.h"
#include "server/output_grammar.h"
#include "server/reasoning_effort.h"
#include "server/tool_grammar.h"

namespace tandem::server {
namespace {

// Whether text begins with prefix, ignoring ASCII case; prefix is lowercase.
bool starts_with_lowercase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
  }
  return true;
}

// The path of an origin-form target ("/v1/models?x=1") or of an absolute-form one
// ("http://host/v1/models"), which proxies send and RFC 9112 says servers must accept.
std::string_view path_of(std::string_view target) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (starts_with_lowercase(target, scheme)) {
      const size_t slash = target.find('/', scheme.size());
      target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
      break;
    }
  }
  return target.substr(0, target.find('?'));
}

// A path segment with its %XX escapes decoded (a client may send a served name's '/' as
// %2F); a malformed escape stays as it is.
std::string percent_decoded(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    auto hex = [](char c) {
      return std::isxdigit(static_cast<unsigned char>(c))
                 ? (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10)
                 : -1;
    };
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

HttpAnswer json_answer(std::string body) {
  HttpAnswer answer;
  answer.body = std::move(body);
  return answer;
}

// A bearer token (OpenAI's clients), or an X-Api-Key header (Anthropic's).
bool authorized(const ApiRequest& request, const std::string& api_key) {
  constexpr std::string_view kScheme = "bearer ";  // the scheme is case-insensitive
  if (!request.api_key.empty() && constant_time_equal(request.api_key, api_key)) return true;
  if (!starts_with_lowercase(request.authorization, kScheme)) return false;
  return constant_time_equal(request.authorization.substr(kScheme.size()), api_key);
}

// Mistral's templates refuse a call id that is not 9 alphanumerics: the ids of calls sent
// back (another provider's, a client's own) are given ones they accept, the same for a
// call and its result.
ChatInputs with_mistral_call_ids(ChatInputs inputs) {
  for (auto& message : inputs.messages) {
    if (message.contains("tool_call_id") && message["tool_call_id"].is_string()) {
      message["tool_call_id"] = mistral_call_id(message["tool_call_id"].get<std::string>());
    }
    if (!message.contains("tool_calls") || !message["tool_calls"].is_array()) continue;
    for (auto& call : message["tool_calls"]) {
      if (call.contains("id") && call["id"].is_string()) {
        call["id"] = mistral_call_id(call["id"].get<std::string>());
      }
    }
  }
  return inputs;
}

}  // namespace

struct Endpoints::Route {
  std::string_view path;
  std::string_view method;
  bool public_route;  // answered without the API key (probes and scrapers)
  Result (Endpoints::*handler)(const ApiRequest& api);
};

// Every route, once: adding one is a line here and its handler.
const Endpoints::Route* Endpoints::find_route(std::string_view path) {
  static constexpr Route kRoutes[] = {
      {"/v1/completions", "POST", false, &Endpoints::completions},
      {"/v1/chat/completions", "POST", false, &Endpoints::chat_completions},
      {"/v1/responses", "POST", false, &Endpoints::responses},
      {"/v1/messages", "POST", false, &Endpoints::messages},
      {"/v1/messages/count_tokens", "POST", false, &Endpoints::count_tokens},
      {"/v1/embeddings", "POST", false, &Endpoints::embeddings},
      {"/completion", "POST", false, &Endpoints::native_completion},
      {"/completions", "POST", false, &Endpoints::native_completion},
      {"/infill", "POST", false, &Endpoints::infill},
      {"/v1/models", "GET", false, &Endpoints::models},
      {"/apply-template", "POST", false, &Endpoints::apply_template},
      {"/tokenize", "POST", false, &Endpoints::tokenize},
      {"/detokenize", "POST", false, &Endpoints::detokenize},
      {"/props", "GET", false, &Endpoints::props},
      {"/slots", "GET", false, &Endpoints::slots},
      {"/health", "GET", true, &Endpoints::health},
      {"/metrics", "GET", true, &Endpoints::metrics_page},
  };
  for (const Route& route : kRoutes) {
    if (route.path == path) return &route;
  }
  return nullptr;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Every byte of the longer string is visited whatever the contents, so the time says
  // nothing about how much of a guessed key was right.
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

HttpAnswer error_answer(const ApiError& error, std::string_view allow) {
  HttpAnswer answer;
  answer.status = error.status;
  answer.body = to_json_body(error);
  answer.error = error;
  if (error.status == 405 && !allow.empty()) answer.headers.emplace_back("Allow", allow);
  if (error.status == 401) answer.headers.emplace_back("WWW-Authenticate", "Bearer");
  if (error.status == 503) answer.headers.emplace_back("Retry-After", "1");
  return answer;
}

bool anthropic_route(std::string_view route) {
  return route == "/v1/messages" || route.starts_with("/v1/messages/");
}

void answer_in_route_shape(std::string_view route, HttpAnswer& answer) {
  if (!answer.error || !anthropic_route(route)) return;
  answer.body = anthropic_error_body(*answer.error);
  answer.error.reset();
}

Endpoints::Endpoints(Scheduler& scheduler, const Tokenizer& tokenizer, ModelCard model,
                     std::string api_key, ServerMetrics& metrics)
    : scheduler_(scheduler),
      tokenizer_(tokenizer),
      model_(std::move(model)),
      api_key_(std::move(api_key)),
      metrics_(metrics),
      created_(static_cast<int64_t>(std::time(nullptr))) {
  std::random_device entropy;
  response_id_high_ = (uint64_t{entropy()} << 32) | entropy();
  next_response_ = (uint64_t{entropy()} << 32) | entropy();
}

// OpenAI's "retrieve model": /v1/models/{id}, the id being the rest of the path (a served
// name may hold a '/', as Hugging Face repository names do).
constexpr std::string_view kModelPrefix = "/v1/models/";
// OpenAI's stored-response routes (retrieve, delete, cancel, input_items): none is stored.
constexpr std::string_view kResponsePrefix = "/v1/responses/";

std::string Endpoints::route_name(std::string_view target) {
  const std::string_view path = path_of(target);
  if (path.starts_with(kModelPrefix)) return "/v1/models/{id}";
  if (path.starts_with(kResponsePrefix)) return "/v1/responses/{id}";
  const Route* route = find_route(path);
  return route ? std::string(route->path) : "other";
}

// The checks every route shares: its method (HEAD for GET: GET without the body, which the
// session leaves out, as RFC 9110 asks), then the key unless the route is public.
std::optional<HttpAnswer> Endpoints::refusal(const ApiRequest& request, std::string_view route,
                                             std::string_view method, bool public_route) const {
  const bool head_of_get = request.method == "HEAD" && method == "GET";
  if (request.method != method && !head_of_get) {
    return error_answer(method_not_allowed(std::string(route) + " accepts " + std::string(method) +
                                           ", not " + std::string(request.method) + "."),
                        method);
  }
  if (!public_route && !api_key_.empty() && !authorized(request, api_key_)) {
    return error_answer(unauthorized());
  }
  return std::nullopt;
}

Endpoints::Result Endpoints::handle(const ApiRequest& request) {
  const std::string_view path = path_of(request.target);
  if (path.starts_with(kModelPrefix) && path.size() > kModelPrefix.size()) {
    if (auto refused = refusal(request, "/v1/models/{id}", "GET", false)) return *refused;
    return model_retrieve(path.substr(kModelPrefix.size()));
  }
  if (path.starts_with(kResponsePrefix) && path.size() > kResponsePrefix.size()) {
    if (auto refused = refusal(request, "/v1/responses/{id}", request.method, false)) {
      return *refused;
    }
    const std::string_view rest = path.substr(kResponsePrefix.size());
    return error_answer(not_found("Response with id '" +
                                  std::string(rest.substr(0, rest.find('/'))) +
                                  "' not found: this server stores no responses (every one is "
                                  "answered with store false)."));
  }
  const Route* route = find_route(path);
  if (route == nullptr) {
    HttpAnswer unknown = error_answer(not_found("Unknown route " + std::string(path) + "."));
    answer_in_route_shape(path, unknown);  // /v1/messages/batches: Anthropic's clients
    return unknown;
  }
  if (auto refused = refusal(request, path, route->method, route->public_route)) {
    answer_in_route_shape(path, *refused);
    return *refused;
  }
  Result result = (this->*route->handler)(request);
  if (auto* answer = std::get_if<HttpAnswer>(&result)) answer_in_route_shape(path, *answer);
  return result;
}

std::variant<std::vector<uint64_t>, HttpAnswer> Endpoints::submit(
    GenerationPlan& plan, const std::function<std::shared_ptr<RequestSink>(int32_t)>& make_sink) {
  // More choices than the queue ever holds: a 503's retry could never succeed. (An
  // embeddings request's inputs count as one request there: Scheduler::submit.)
  const auto count = static_cast<int64_t>(plan.choices.size());
  if (count > scheduler_.max_queue() && !plan.embeddings) {
    return error_answer(
        bad_request(std::to_string(count) +
                        " choices (n times the prompts) are more than this server queues "
                        "at once (" +
                        std::to_string(scheduler_.max_queue()) + ", its --max-queue); send fewer.",
                    plan.n > 1 ? "n" : "prompt"));
  }
  for (size_t i = 0; i < plan.choices.size(); ++i) {
    plan.choices[i].sink = make_sink(static_cast<int32_t>(i));
  }
  SubmitResult submitted = scheduler_.submit(std::move(plan.choices));
  if (submitted.accepted()) {
    if (access_log_ != nullptr) access_log_->record(plan.access);
    return std::move(submitted.ids);
  }
  HttpAnswer refused = error_answer(api_error_for(*submitted.refusal, submitted.message));
  refused.close = submitted.refusal == ErrorKind::kShuttingDown;
  answer_in_route_shape(plan.access.route, refused);
  return refused;
}

Endpoints::Result Endpoints::completion(const ApiRequest& api, Endpoint endpoint) {
  auto parsed = parse_completion_request(api.body, endpoint);
  if (auto* error = std::get_if<ApiError>(&parsed)) return error_answer(*error);
  return generation(api, std::get<CompletionRequest>(parsed));
}

// The chat request a Responses request amounts to, answered by the Responses writer.
Endpoints::Result Endpoints::responses(const ApiRequest& api) {
  auto parsed = parse_responses_request(api.body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return error_answer(*error);
  ResponsesRequest& request = std::get<ResponsesRequest>(parsed);
  Result result = generation(api, request.request, &request.renames);
  if (auto* plan = std::get_if<GenerationPlan>(&result)) {
    plan->writer =
        std::make_unique<ResponsesWriter>(plan->encoder.header(), std::move(request.echo));
  }
  return result;
}

Endpoints::Result Endpoints::generation(const ApiRequest& api, CompletionRequest& request,
                                        const ParamRenames* renames) {
  // /v1/responses and /v1/messages name the fields their client sent, not their chat forms.
  const auto refuse = [&](ApiError error) {
    return error_answer(renames ? renamed_params(std::move(error), *renames) : error);
  };
  // The header's id over the body's, as vLLM takes them.
  if (!api.request_id.empty()) request.request_id = std::string(api.request_id);
  // As vLLM: naming another model is a 404, not a silent answer from this one.
  if (!model_.answers_to(request.model)) {
    return error_answer(model_not_found(request.model));
  }
  if (auto error = check_token_ids(request, model_.vocab_size)) return refuse(*error);
  if (request.sampling.dry_on()) {
    request.sampling.dry_breakers = dry_breakers_.get(request.dry_sequence_breakers);
  }
  // llama-server's timings ride on the OpenAI routes' chunks; the routes with writers of
  // their own (/v1/responses, /v1/messages) have no place for them.
  if (renames != nullptr && request.timings_per_token) {
    return refuse(bad_request(
        "'timings_per_token' is only supported on /v1/completions and /v1/chat/completions.",
        "timings_per_token"));
  }
  // The parameters of each tool a constrained call may take, one by one: in the call
  // grammar a schema nothing satisfies would only drop its tool, and the error would not
  // name it.
  if (auto error = check_tool_parameters(request.tools)) return refuse(*error);
  const ToolCallFormat framed = framed_call_format(tool_format());
  auto grammar = request.tools.constrains()
                     ? compile_tool_call_grammar(request.tools, framed, model_.grammars.get())
                     : compile_output_constraint(request.constraint, model_.grammars.get());
  if (auto* error = std::get_if<ApiError>(&grammar)) return refuse(*error);
  // The format the output's calls are read in: the grammar's where one writes them.
  ToolCallFormat calls_format = request.tools.constrains() ? framed : tool_format();
  // Tools under "auto" beside a JSON format: a call, or the shaped answer.
  if (auto both = compile_call_or_answer_grammar(request.tools, framed, request.constraint,
                                                 model_.grammars.get())) {
    grammar = std::move(both);
    calls_format = framed;
  }
  // Before rendering, so that /v1/responses names its own field (reasoning.effort).
  if (is_chat(request.endpoint) && model_.chat_template) {
    if (auto error = check_reasoning_effort(*model_.chat_template, request.chat)) {
      return refuse(*error);
    }
  }
  bool reasoning_opened = false;
  auto prompts = prompts_of(request, &reasoning_opened);
  if (auto* refused = std::get_if<HttpAnswer>(&prompts)) return std::move(*refused);
  return plan_choices(request, std::move(std::get<std::vector<std::vector<int32_t>>>(prompts)),
                      std::move(std::get<0>(grammar)), reasoning_opened, calls_format);
}

std::variant<std::vector<std::vector<int32_t>>, HttpAnswer> Endpoints::prompts_of(
    CompletionRequest& request, bool* reasoning_opened) {
  const Endpoint endpoint = request.endpoint;
  std::vector<std::vector<int32_t>> prompts;
  if (is_chat(endpoint)) {
    // generation() has checked reasoning_effort, naming the field the client sent.
    auto rendered = render_template(request.chat, prompt_param(endpoint));
    if (auto* refused = std::get_if<HttpAnswer>(&rendered)) return std::move(*refused);
    const auto& segments = std::get<std::vector<PromptSegment>>(rendered);
    // Read only where the answer will be split: it joins the whole prompt.
    const ReasoningReading split = reasoning_reading(request, false);
    *reasoning_opened =
        split.enabled && reasoning_opened_by(join_segments(segments), split.markers);
    prompts.push_back(tokenize_chat_prompt(tokenizer_, segments));
  } else if (request.has_prompt_tokens()) {
    prompts.push_back(request.prompt_tokens);
    for (const auto& ids : request.more_prompt_tokens) prompts.push_back(ids);
  } else {
    for (size_t p = 0; p < request.prompt_count(); ++p) {
      const std::string& text = p == 0 ? request.prompt_text : request.more_prompt_texts[p - 1];
      prompts.push_back(
          tokenizer_.encode(text, request.add_special_tokens, /*parse_special=*/true));
    }
  }
  for (const auto& prompt : prompts) {
    if (prompt.empty()) {
      return error_answer(bad_request("The prompt is empty.", prompt_param(endpoint)));
    }
    if (auto error = check_prompt_length(prompt.size(), model_.context_length, endpoint,
                                         request.max_tokens != 0)) {
      return error_answer(*error);
    }
  }
  return prompts;
}

// n choices of each prompt, choice i = prompt_index * n + c seeded choice_seed(seed, i).
GenerationPlan Endpoints::plan_choices(CompletionRequest& request,
                                       std::vector<std::vector<int32_t>> prompts,
                                       std::shared_ptr<const grammar::CompiledGrammar> grammar,
                                       bool reasoning_opened, ToolCallFormat calls_format) {
  const Endpoint endpoint = request.endpoint;
  ReasoningReading reasoning = reasoning_reading(request, reasoning_opened);
  // A marker that is a control token reaches the text only when special tokens are rendered
  // (as a control-token tool-call marker does).
  const bool render_markers =
      reasoning.enabled && model_.chat_template->reasoning_markers_are_control;
  ResponseHeader header;
  header.id = request.request_id.empty() ? next_response_id(endpoint)
                                         : response_id_prefix(endpoint) + request.request_id;
  header.created = static_cast<int64_t>(std::time(nullptr));
  header.model = model_.id;
  header.seed = request.seed ? *request.seed : draw_seed();
  header.system_fingerprint = model_.fingerprint;
  GenerationPlan plan{{},
                      ResponseEncoder(endpoint, header, request.include_usage),
                      request.stream,
                      {},
                      request.sampling.logprobs >= 0,
                      request.n,
                      {},
                      {},
                      {request.tokens_as_ids, request.sampling.post_sampling_probs}};
  plan.timings = request.timings_per_token;
  std::vector<ChoiceId> ids;
  int64_t prompt_tokens = 0;
  for (size_t p = 0; p < prompts.size(); ++p) {
    prompt_tokens += static_cast<int64_t>(prompts[p].size());
    std::string echo;
    if (request.echo && request.has_prompt_tokens()) {
      // A token prompt's control tokens show as the generated ones do (vLLM decodes the
      // ids with the same skip_special_tokens). Token prompts have no texts to index.
      echo = tokenizer_.decode(prompts[p], /*render_special=*/!request.skip_special_tokens);
    } else if (request.echo) {
      echo = p == 0 ? request.prompt_text : request.more_prompt_texts.at(p - 1);
    }
    for (int32_t c = 0; c < request.n; ++c) {
      const int32_t index = static_cast<int32_t>(p) * request.n + c;
      GenerationRequest generation;
      generation.prompt = prompts[p];
      generation.sampling = request.sampling;
      generation.sampling.seed = choice_seed(header.seed, index);
      // Completions default to 16 (the parser's); chat's nullopt runs until the context or
      // the KV pool ends. The scheduler clamps either to what the prompt leaves.
      generation.max_tokens = request.max_tokens;
      generation.stop = request.stop;
      generation.include_stop_str_in_output = request.include_stop_str_in_output;
      generation.skip_special_tokens =
          request.skip_special_tokens && !render_markers &&
          !(request.tools.parses() && tool_call_marker_is_control_token(tool_format()));
      generation.grammar = grammar;
      generation.cache_salt = request.cache_salt;
      ids.push_back(ChoiceId{index, generation.sampling.seed});
      plan.choices.push_back(std::move(generation));
      plan.echoes.push_back(echo);
    }
  }
  plan.encoder = ResponseEncoder(endpoint, header, request.include_usage, std::move(ids));
  plan.reasoning = std::move(reasoning);
  if (request.tools.parses()) {
    // Call ids come from the response id's digits, the choice and the call's index.
    plan.tools = ToolCallReading{true,
                                 calls_format,
                                 header.id.substr(header.id.find_first_of("-_") + 1),
                                 request.tools.parallel,
                                 request.tools.choice.mode == ToolChoice::Mode::kNamed,
                                 false,
                                 request.tools.functions};
  }
  plan.access = AccessRecord{endpoint == Endpoint::kCompletions       ? "/v1/completions"
                             : endpoint == Endpoint::kChatCompletions ? "/v1/chat/completions"
                             : endpoint == Endpoint::kResponses       ? "/v1/responses"
                                                                      : "/v1/messages",
                             header.id,
                             std::move(request.user),
                             prompt_tokens,
                             request.stream,
                             ""};  // request_id: the session's
  return plan;
}

ReasoningReading Endpoints::reasoning_reading(const CompletionRequest& request, bool opened) const {
  if (!is_chat(request.endpoint) || !model_.chat_template) return {};
  const ChatTemplateCard& chat = *model_.chat_template;
  if (!chat.reasoning || !request.split_reasoning.value_or(chat.split_reasoning)) return {};
  // A JSON answer's grammar (a schema, json_object, a required or named call) writes the
  // answer from the first token, so a prompt that opened the reasoning gets none: the output
  // is read as starting outside the block. A client's own grammar or regex is read as any
  // output, since it may spell the reasoning itself.
  const OutputConstraint::Kind kind = request.constraint.kind;
  const bool json_answer = request.tools.constrains() ||
                           kind == OutputConstraint::Kind::kJsonObject ||
                           kind == OutputConstraint::Kind::kJsonSchema;
  return ReasoningReading{true, *chat.reasoning, opened && !json_answer};
}

// Asked only for requests with tools, which render through the tool_use template where
// the model has one.
ToolCallFormat Endpoints::tool_format() const {
  if (!model_.chat_template) return ToolCallFormat::kJson;
  const ChatTemplateCard& chat = *model_.chat_template;
  return chat.tool_use ? chat.tool_use_format : chat.tool_format;
}

std::variant<std::vector<PromptSegment>, HttpAnswer> Endpoints::render_chat(
    const ChatInputs& inputs, const char* param) const {
  if (model_.chat_template) {
    if (auto error = check_reasoning_effort(*model_.chat_template, inputs)) {
      return error_answer(*error);
    }
  }
  return render_template(inputs, param);
}

std::variant<std::vector<PromptSegment>, HttpAnswer> Endpoints::render_template(
    const ChatInputs& inputs, const char* param) const {
  if (!model_.chat_template) {
    return error_answer(bad_request(
        "This model has no chat template (its GGUF has no tokenizer.chat_template); use "
        "/v1/completions, or start the server with --chat-template FILE.",
        param));
  }
  const ChatTemplateCard& chat = *model_.chat_template;
  const bool tools = inputs.tools.is_array() && !inputs.tools.empty();
  const JinjaChatTemplate& chosen = tools && chat.tool_use ? *chat.tool_use : *chat.compiled;
  const ToolCallFormat format = tools && chat.tool_use ? chat.tool_use_format : chat.tool_format;
  const bool mistral = format == ToolCallFormat::kMistral || format == ToolCallFormat::kMistralArgs;
  auto rendered = render_chat_request(chosen, mistral ? with_mistral_call_ids(inputs) : inputs,
                                      chat.bos_token, chat.eos_token);
  if (auto* error = std::get_if<ApiError>(&rendered)) {
    error->param = param;  // the template failed on the conversation as a whole
    return error_answer(*error);
  }
  return std::get<std::vector<PromptSegment>>(std::move(rendered));
}

Endpoints::Result Endpoints::apply_template(const ApiRequest& api) {
  const std::string_view body = api.body;
  auto parsed = parse_apply_template_request(body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return error_answer(*error);
  auto rendered = render_chat(std::get<ChatInputs>(parsed));
  if (auto* refused = std::get_if<HttpAnswer>(&rendered)) return std::move(*refused);
  return json_answer(
      apply_template_response_json(join_segments(std::get<std::vector<PromptSegment>>(rendered))));
}

Endpoints::Result Endpoints::tokenize(const ApiRequest& api) {
  const std::string_view body = api.body;
  auto parsed = parse_tokenize_request(body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return error_answer(*error);
  const auto& request = std::get<TokenizeRequest>(parsed);
  std::vector<int32_t> tokens;
  if (request.chat) {  // vLLM's chat form: the prompt a chat completion would feed
    auto rendered = render_chat(*request.chat);
    if (auto* refused = std::get_if<HttpAnswer>(&rendered)) return std::move(*refused);
    tokens = tokenize_chat_prompt(tokenizer_, std::get<std::vector<PromptSegment>>(rendered));
  } else {
    tokens = tokenizer_.encode(request.content, request.add_special, request.parse_special);
  }
  std::vector<std::string> pieces;
  if (request.with_pieces) {
    for (int32_t id : tokens) pieces.push_back(tokenizer_.token_bytes(id, /*render_special=*/true));
  }
  if (request.vllm_form) {
    VllmTokenizeExtras extras{model_.context_length, {}};
    if (request.token_strs)
      for (int32_t id : tokens) extras.token_strs.push_back(tokenizer_.token_text(id));
    return json_answer(vllm_tokenize_response_json(tokens, extras));
  }
  return json_answer(tokenize_response_json(tokens, pieces));
}

Endpoints::Result Endpoints::detokenize(const ApiRequest& api) {
  const std::string_view body = api.body;
  auto parsed = parse_detokenize_request(body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return error_answer(*error);
  const auto& request = std::get<DetokenizeRequest>(parsed);
  for (size_t i = 0; i < request.tokens.size(); ++i) {
    if (request.tokens[i] >= model_.vocab_size) {
      return error_answer(bad_request("Token id " + std::to_string(request.tokens[i]) +
                                          " is outside the vocabulary (size " +
                                          std::to_string(model_.vocab_size) + ").",
                                      "tokens[" + std::to_string(i) + "]"));
    }
  }
  // Control tokens' text included, as llama-server renders them: what /tokenize parsed as
  // special comes back as the same text. The pieces are joined as they are, a
  // SentencePiece leading space kept, as llama-server joins them: a client detokenizing
  // one token at a time gets "Hello" and " world", not "Helloworld".
  return json_answer(
      detokenize_response_json(tokenizer_.join_pieces(request.tokens, /*render_special=*/true)));
}

ServedModel Endpoints::served_model() const {
  std::optional<std::string> chat_template;
  if (model_.chat_template) chat_template = model_.chat_template->origin;
  return ServedModel{model_.names, created_, model_.context_length, chat_template};
}

Endpoints::Result Endpoints::models(const ApiRequest&) {
  return json_answer(models_list_json(served_model()));
}

Endpoints::Result Endpoints::model_retrieve(std::string_view name) {
  const std::string id = percent_decoded(name);
  if (std::find(model_.names.begin(), model_.names.end(), id) == model_.names.end()) {
    return error_answer(model_not_found(id));
  }
  return json_answer(model_json(served_model(), id));
}

Endpoints::Result Endpoints::health(const ApiRequest&) {
  if (!serving()) return error_answer(service_unavailable("The server is not serving."));
  return json_answer(R"({"status":"ok"})");
}

Endpoints::Result Endpoints::metrics_page(const ApiRequest&) {
  HttpAnswer answer;
  answer.content_type = "text/plain; version=0.0.4; charset=utf-8";
  std::optional<GrammarCacheStats> grammars;
  if (model_.grammars)
    grammars = GrammarCacheStats{model_.grammars->mask_bytes(), model_.grammars->mask_budget(),
                                 model_.grammars->masks_not_kept()};
  answer.body = metrics_.render(scheduler_.metrics(), grammars ? &*grammars : nullptr);
  return answer;
}

// Below 2^53, so that a JavaScript client (whose numbers are doubles) reads it exactly and
// can send it back to replay the output.
uint64_t Endpoints::draw_seed() {
  static std::mutex mutex;
  static std::mt19937_64 engine{std::random_device{}()};
  std::lock_guard lock(mutex);
  return engine() & ((uint64_t{1} << 53) - 1);
}

std::string Endpoints::next_response_id(Endpoint endpoint) {
  return make_response_id(endpoint, response_id_high_, next_response_.fetch_add(1));
}

}  // namespace tandem::server
