// POST /v1/embeddings: each input becomes a request that prefills its prompt and pools the
// last layer's states (the model card's pooling), generating nothing; the session answers
// once every input's embedding is in (GenerationResponse, EmbeddingsOut).
#include <string>
#include <utility>
#include <vector>

#include "protocol/embedding_request.h"
#include "server/endpoints.h"

namespace tandem::server {

namespace {

// The last k tokens of a text's prompt, its BOS and EOS kept where it has them, as vLLM's
// truncate_prompt_tokens (Hugging Face's left truncation) keeps the special tokens.
std::vector<int32_t> keep_last(std::vector<int32_t> with, const std::vector<int32_t>& plain,
                               int32_t bos, int64_t k) {
  if (static_cast<int64_t>(with.size()) <= k) return with;
  const int64_t pre = !with.empty() && with.front() == bos && (plain.empty() || plain[0] != bos);
  const int64_t post = static_cast<int64_t>(with.size() - plain.size()) - pre;
  if (post < 0 || k < pre + post) return {with.end() - k, with.end()};
  std::vector<int32_t> out(with.begin(), with.begin() + pre);
  out.insert(out.end(), plain.end() - (k - pre - post), plain.end());
  out.insert(out.end(), with.end() - post, with.end());
  return out;
}

}  // namespace

// The inputs' prompts as token ids, cut to the request's truncate_prompt_tokens, or the 400
// that refuses them (a token outside the vocabulary, a prompt past the context).
std::variant<std::vector<std::vector<int32_t>>, HttpAnswer> Endpoints::embedding_prompts(
    const EmbeddingRequest& request) const {
  std::vector<std::vector<int32_t>> prompts;
  const int64_t context = model_.context_length;
  if (request.truncate_prompt_tokens > context)
    return error_answer(
        bad_request("'truncate_prompt_tokens' " + std::to_string(*request.truncate_prompt_tokens) +
                        " is beyond the model's context of " + std::to_string(context) + " tokens.",
                    "truncate_prompt_tokens"));
  const int64_t keep = !request.truncate_prompt_tokens       ? -1
                       : *request.truncate_prompt_tokens < 0 ? context
                                                             : *request.truncate_prompt_tokens;
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    const EmbeddingInput& in = request.inputs[i];
    const std::string param = request.listed ? "input[" + std::to_string(i) + "]" : "input";
    std::vector<int32_t> tokens = in.tokens;
    if (!in.is_tokens) {
      tokens = tokenizer_.encode(in.text, request.add_special_tokens, /*parse_special=*/true);
      if (keep >= 0 && static_cast<int64_t>(tokens.size()) > keep && request.add_special_tokens)
        tokens = keep_last(std::move(tokens), tokenizer_.encode(in.text, false, true),
                           tokenizer_.bos_id(), keep);
    }
    for (size_t k = 0; k < tokens.size() && in.is_tokens; ++k) {
      if (tokens[k] >= model_.vocab_size)
        return error_answer(bad_request("Token id " + std::to_string(tokens[k]) +
                                            " is outside the model's vocabulary of " +
                                            std::to_string(model_.vocab_size) + ".",
                                        param + "[" + std::to_string(k) + "]"));
    }
    if (keep >= 0 && static_cast<int64_t>(tokens.size()) > keep)
      tokens.erase(tokens.begin(), tokens.end() - keep);
    if (static_cast<int64_t>(tokens.size()) > context)
      return error_answer(context_length_exceeded(
          "This model's maximum context length is " + std::to_string(context) + " tokens, but " +
              param + " has " + std::to_string(tokens.size()) +
              " tokens. Send less, or set 'truncate_prompt_tokens'.",
          param));
    prompts.push_back(std::move(tokens));
  }
  return prompts;
}

Endpoints::Result Endpoints::embeddings(const ApiRequest& api) {
  auto parsed = parse_embedding_request(api.body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return error_answer(*error);
  EmbeddingRequest& request = std::get<EmbeddingRequest>(parsed);
  if (!model_.answers_to(request.model)) return error_answer(model_not_found(request.model));
  if (model_.embedding_size == 0)
    return error_answer(bad_request(
        "This server's device computes no embeddings (the GPU executor does not pool yet); "
        "serve with --device cpu for /v1/embeddings.",
        "input"));
  if (!model_.pooling_refusal.empty())
    return error_answer(bad_request(model_.pooling_refusal, "model"));
  if (request.dimensions && *request.dimensions != model_.embedding_size)
    return error_answer(bad_request(
        "'dimensions' " + std::to_string(*request.dimensions) + " is not this model's width (" +
            std::to_string(model_.embedding_size) +
            "): tandem does not shorten embeddings, which only Matryoshka-trained models allow.",
        "dimensions"));
  auto prompts = embedding_prompts(request);
  if (auto* refused = std::get_if<HttpAnswer>(&prompts)) return std::move(*refused);

  ResponseHeader header;
  header.id = api.request_id.empty() ? next_response_id(Endpoint::kCompletions)
                                     : "embd-" + std::string(api.request_id);
  if (api.request_id.empty()) header.id.replace(0, header.id.find('-'), "embd");
  header.created = static_cast<int64_t>(std::time(nullptr));
  header.model = model_.id;
  header.system_fingerprint = model_.fingerprint;
  auto& inputs = std::get<std::vector<std::vector<int32_t>>>(prompts);
  std::vector<ChoiceId> ids;  // one choice per input, in order
  for (size_t i = 0; i < inputs.size(); ++i) ids.push_back({static_cast<int32_t>(i), 0});
  GenerationPlan plan{{},    ResponseEncoder(Endpoint::kCompletions, header, false, std::move(ids)),
                      false, {},
                      false, 1,
                      {},    {},
                      {}};
  int64_t prompt_tokens = 0;
  for (auto& prompt : inputs) {
    prompt_tokens += static_cast<int64_t>(prompt.size());
    GenerationRequest one;
    one.prompt = std::move(prompt);
    one.max_tokens = 0;
    one.pooling = model_.pooling;
    one.cache_salt = request.cache_salt;
    plan.choices.push_back(std::move(one));
  }
  plan.embeddings = EmbeddingsOut{model_.id, request.base64, request.normalize};
  plan.access =
      AccessRecord{"/v1/embeddings", header.id, std::move(request.user), prompt_tokens, false, ""};
  return plan;
}

}  // namespace tandem::server
