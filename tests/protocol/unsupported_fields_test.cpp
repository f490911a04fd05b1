// Known fields of OpenAI, vLLM and llama-server that tandem does not implement: each is
// refused with a 400 naming it when it would change the output, and accepted at its neutral
// value; fields no one defines stay ignored.
#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "protocol/completion_request.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

constexpr Endpoint kCmpl = Endpoint::kCompletions;
constexpr Endpoint kChat = Endpoint::kChatCompletions;

struct FieldCase {
  const char* name;
  Endpoint endpoint;
  const char* extra;  // the fields added to a minimal body
  const char* param = "";
  const char* message_part = "";
};

std::string body_with(Endpoint endpoint, const std::string& extra) {
  const std::string head = endpoint == kCmpl
                               ? R"({"prompt": "hi")"
                               : R"({"messages": [{"role": "user", "content": "hi"}])";
  return head + (extra.empty() ? "" : ", " + extra) + "}";
}

const FieldCase kRefused[] = {
    {"UseBeamSearch", kCmpl, R"("use_beam_search": true)", "use_beam_search", "beam search"},
    {"LengthPenalty", kChat, R"("length_penalty": 0.8)", "length_penalty", "not supported"},
    {"BadWords", kChat, R"("bad_words": ["x"])", "bad_words", "not supported"},
    {"AllowedTokenIds", kCmpl, R"("allowed_token_ids": [1, 2])", "allowed_token_ids", ""},
    {"PromptLogprobs", kCmpl, R"("prompt_logprobs": 1)", "prompt_logprobs", "echo"},
    {"PromptLogprobsZero", kChat, R"("prompt_logprobs": 0)", "prompt_logprobs", ""},
    {"TruncatePromptTokens", kCmpl, R"("truncate_prompt_tokens": 8)", "truncate_prompt_tokens", ""},
    {"LogitsProcessors", kChat, R"("logits_processors": ["m.f"])", "logits_processors", ""},
    {"SpacesBetweenSpecialTokens", kChat, R"("spaces_between_special_tokens": false)",
     "spaces_between_special_tokens", ""},
    {"Priority", kCmpl, R"("priority": 3)", "priority", ""},
    {"ChatEcho", kChat, R"("echo": true)", "echo", "chat"},
    {"MmProcessorKwargs", kChat, R"("mm_processor_kwargs": {"fps": 2})", "mm_processor_kwargs", ""},
    {"ContinuousUsageStats", kChat,
     R"("stream": true, "stream_options": {"include_usage": true, "continuous_usage_stats": true})",
     "stream_options.continuous_usage_stats", ""},
    {"ChatAddSpecialTokens", kChat, R"("add_special_tokens": true)", "add_special_tokens",
     "template"},
    {"Modalities", kChat, R"("modalities": ["text", "audio"])", "modalities", "text"},
    {"Audio", kChat, R"("audio": {"voice": "alloy", "format": "wav"})", "audio", ""},
    {"ReasoningEffort", kCmpl, R"("reasoning_effort": "low")", "reasoning_effort", "chat"},
    {"WebSearchOptions", kChat, R"("web_search_options": {})", "web_search_options", ""},
    {"Functions", kChat, R"("functions": [{"name": "f"}])", "functions", "'tools'"},
    {"FunctionCall", kChat, R"("function_call": "auto")", "function_call", "'tool_choice'"},
    {"CompletionsTools", kCmpl, R"("tools": [{"type": "function", "function": {"name": "f"}}])",
     "tools", "/v1/chat/completions"},
    {"CompletionsToolChoice", kCmpl, R"("tool_choice": "auto")", "tool_choice", ""},
    {"CompletionsTopLogprobs", kCmpl, R"("top_logprobs": 2)", "top_logprobs", "'logprobs'"},
    {"MirostatVersion", kCmpl, R"("mirostat": 3)", "mirostat", ""},
    {"MirostatTau", kChat, R"("mirostat": 2, "mirostat_tau": -1)", "mirostat_tau", ">= 0"},
    {"MirostatEta", kCmpl, R"("mirostat": 1, "mirostat_eta": "fast")", "mirostat_eta", ""},
    {"NProbs", kCmpl, R"("n_probs": 5)", "n_probs", "'logprobs'"},
    {"NPredictAlone", kCmpl, R"("n_predict": 32)", "n_predict", "'max_tokens'"},
    {"NPredictUnlimitedOnCompletions", kCmpl, R"("n_predict": -1)", "n_predict", "'max_tokens'"},
    {"NPredictLimitOnUnlimitedChat", kChat, R"("n_predict": 32)", "n_predict", "'max_tokens'"},
    {"NPredictDifferentFromMaxTokens", kCmpl, R"("n_predict": 32, "max_tokens": 16)", "n_predict",
     ""},
    {"Lora", kCmpl, R"("lora": [{"id": 0, "scale": 1}])", "lora", ""},
    // llama-server fields that had been ignored in silence though they change the output.
    {"ReasoningFormat", kCmpl, R"("reasoning_format": "deepseek")", "reasoning_format", "chat"},
    {"ReasoningFormatValue", kChat, R"("reasoning_format": "deepseek-legacy")", "reasoning_format",
     "expected"},
    {"IncludeReasoning", kChat, R"("include_reasoning": false)", "include_reasoning", "none"},
    {"ParseToolCallsOff", kChat, R"("parse_tool_calls": false)", "parse_tool_calls", ""},
    {"GrammarLazy", kCmpl, R"("grammar_lazy": true)", "grammar_lazy", ""},
    {"GrammarTriggers", kCmpl, R"("grammar_triggers": [{"type": "word", "value": "x"}])",
     "grammar_triggers", ""},
    {"MinKeep", kCmpl, R"("min_keep": 50)", "min_keep", ""},
    {"TimeLimit", kCmpl, R"("t_max_predict_ms": 500)", "t_max_predict_ms", "'max_tokens'"},
    {"NCmpl", kCmpl, R"("n_cmpl": 2)", "n_cmpl", "'n'"},
    {"PostSamplingProbs", kCmpl, R"("post_sampling_probs": true)", "post_sampling_probs",
     "/completion reads it"},
    {"ImageData", kCmpl, R"("image_data": [{"data": "AAAA", "id": 1}])", "image_data", ""},
    {"MultimodalData", kCmpl, R"("multimodal_data": ["AAAA"])", "multimodal_data", ""},
    {"PromptEmbeds", kCmpl, R"("prompt_embeds": "AAAA")", "prompt_embeds", "'prompt'"},
    // A non-empty string is not empty (nlohmann's empty() is false for every string).
    {"BadWordsAsText", kCmpl, R"("bad_words": "x")", "bad_words", ""},
    // vLLM lets these replace what the server sets; here they could not, so they are named.
    {"TemplateKwargsAddGenerationPrompt", kChat,
     R"("chat_template_kwargs": {"add_generation_prompt": false})",
     "chat_template_kwargs.add_generation_prompt", "send 'add_generation_prompt'"},
    {"TemplateKwargsDocuments", kChat, R"("chat_template_kwargs": {"documents": []})",
     "chat_template_kwargs.documents", "send 'documents'"},
    {"TemplateKwargsBosToken", kChat, R"("chat_template_kwargs": {"bos_token": "<s>"})",
     "chat_template_kwargs.bos_token", ""},
    {"GuidedWhitespacePattern", kChat, R"("guided_whitespace_pattern": "\\s*")",
     "guided_whitespace_pattern", ""},
    // Found silently ignored by QA (stop 75): OpenAI's, vLLM's and llama-server's newer fields.
    {"ChatBestOf", kChat, R"("best_of": 2)", "best_of", ""},
    {"Store", kChat, R"("store": true)", "store", "stored completions"},
    {"ServiceTier", kChat, R"("service_tier": "flex")", "service_tier", ""},
    {"Verbosity", kChat, R"("verbosity": "low")", "verbosity", ""},
    {"ReturnTokenIds", kCmpl, R"("return_token_ids": true)", "return_token_ids", ""},
    {"VllmXargs", kCmpl, R"("vllm_xargs": {"k": 1})", "vllm_xargs", ""},
    {"KvTransferParams", kChat, R"("kv_transfer_params": {"do_remote_decode": true})",
     "kv_transfer_params", ""},
    {"ReturnTokens", kCmpl, R"("return_tokens": true)", "return_tokens", ""},
    {"BeamSearchOfTheWrongType", kCmpl, R"("use_beam_search": "no")", "use_beam_search", ""},
    // A boolean field given as text is a type error, not read as "set to true" (QA N).
    {"StoreAsText", kChat, R"("store": "true")", "store", "a boolean"},
    {"ReturnTokenIdsAsNumber", kCmpl, R"("return_token_ids": 0)", "return_token_ids", "a boolean"},
    {"BestOfString", kCmpl, R"("best_of": "2")", "best_of", "an integer"},
    // Typed as vLLM and OpenAI type them: an empty list is not an empty dict.
    {"VllmXargsAsAList", kCmpl, R"("vllm_xargs": [])", "vllm_xargs", "an object"},
    {"KvTransferParamsAsText", kChat, R"("kv_transfer_params": "")", "kv_transfer_params",
     "an object"},
    {"MetadataAsText", kChat, R"("metadata": "s")", "metadata", "an object"},
    {"MetadataWithANumber", kCmpl, R"("metadata": {"a": "b", "n": 3})", "metadata.n", "a string"},
    // max_tokens and max_completion_tokens are both checked, whichever wins.
    {"MaxTokensBadBesideMaxCompletionTokens", kChat,
     R"("max_completion_tokens": 8, "max_tokens": "lots")", "max_tokens", "a string"},
    {"MaxCompletionTokensBadBesideMaxTokens", kCmpl,
     R"("max_tokens": 8, "max_completion_tokens": -3)", "max_completion_tokens", ""},
};

const FieldCase kAccepted[] = {
    {"NeutralVllmValues", kCmpl,
     R"("use_beam_search": false, "length_penalty": 1, "typical_p": 1.0, "bad_words": [],
        "allowed_token_ids": [], "prompt_logprobs": null, "truncate_prompt_tokens": null,
        "logits_processors": [], "return_tokens_as_token_ids": false,
        "spaces_between_special_tokens": true, "priority": 0, "mm_processor_kwargs": {},
        "guided_decoding_backend": "xgrammar", "guided_whitespace_pattern": null)"},
    {"NeutralChatValues", kChat,
     R"("echo": false, "add_special_tokens": false, "modalities": ["text"], "audio": null,
        "functions": [], "stream": true,
        "stream_options": {"include_usage": true, "continuous_usage_stats": false})"},
    {"NeutralLlamaServerValues", kCmpl,
     R"("mirostat": 0, "mirostat_tau": 5.0, "mirostat_eta": 0.1, "dry_multiplier": 0,
        "xtc_probability": 0.0, "dynatemp_range": 0, "top_n_sigma": -1, "n_probs": 0,
        "repeat_penalty": 1.0, "repeat_last_n": 64, "penalty_last_n": 64, "lora": [],
        "reasoning_format": "none", "parse_tool_calls": true, "grammar_lazy": false,
        "grammar_triggers": [], "min_keep": 1, "t_max_predict_ms": 0, "n_cmpl": 1,
        "post_sampling_probs": false, "image_data": [], "multimodal_data": [],
        "prompt_embeds": null, "bad_words": "")"},
    {"TemplateKwargsOfTheTemplatesOwn", kChat,
     R"("chat_template_kwargs": {"enable_thinking": false, "custom": [1, 2]})"},
    {"PenaltyWindowOfTheWholeHistory", kChat,
     R"("repetition_penalty": 1.2, "penalty_last_n": -1, "repeat_last_n": -1)"},
    {"NPredictEqualToMaxTokens", kCmpl, R"("max_tokens": 12, "n_predict": 12)"},
    // Chat without a limit runs until EOS or the context: llama-server's -1.
    {"NPredictUnlimitedOnUnlimitedChat", kChat, R"("n_predict": -1)"},
    {"NeutralCompletionsToolFields", kCmpl, R"("tools": [], "tool_choice": "none",
        "top_logprobs": 0, "best_of": 1, "suffix": "")"},
    // OpenAI's and others' harmless extras, and names no one defines.
    // Predicted outputs change only how fast the same output comes.
    {"PredictionChangesNoOutput", kChat, R"("prediction": {"type": "content", "content": "x"})"},
    {"NeutralNewerValues", kChat,
     R"("metadata": {"a": "b"}, "store": false, "service_tier": "auto", "verbosity": "medium",
        "prompt_cache_key": "k", "safety_identifier": "s", "best_of": 1,
        "return_token_ids": false, "vllm_xargs": {}, "kv_transfer_params": null,
        "return_tokens": false, "cache_prompt": false, "id_slot": 2)"},
    {"UnknownNamesAreIgnored", kChat, R"("frobnicate": 7)"},
};

class RefusedFields : public ::testing::TestWithParam<FieldCase> {};

TEST_P(RefusedFields, AreRefusedWith400NamingTheField) {
  const FieldCase& c = GetParam();
  auto parsed = parse_completion_request(body_with(c.endpoint, c.extra), c.endpoint);
  ASSERT_TRUE(std::holds_alternative<ApiError>(parsed)) << "accepted: " << c.extra;
  const ApiError& error = std::get<ApiError>(parsed);
  EXPECT_EQ(error.status, 400);
  EXPECT_EQ(error.param, c.param) << error.message;
  EXPECT_NE(error.message.find(c.message_part), std::string::npos) << error.message;
}

INSTANTIATE_TEST_SUITE_P(Protocol, RefusedFields, ::testing::ValuesIn(kRefused),
                         [](const ::testing::TestParamInfo<FieldCase>& info) {
                           return std::string(info.param.name);
                         });

class NeutralFields : public ::testing::TestWithParam<FieldCase> {};

TEST_P(NeutralFields, AreAccepted) {
  const FieldCase& c = GetParam();
  auto parsed = parse_completion_request(body_with(c.endpoint, c.extra), c.endpoint);
  const auto* error = std::get_if<ApiError>(&parsed);
  EXPECT_EQ(error, nullptr) << error->message << " (" << error->param << ")";
}

INSTANTIATE_TEST_SUITE_P(Protocol, NeutralFields, ::testing::ValuesIn(kAccepted),
                         [](const ::testing::TestParamInfo<FieldCase>& info) {
                           return std::string(info.param.name);
                         });

CompletionRequest parsed_or_fail(Endpoint endpoint, const std::string& extra) {
  auto parsed = parse_completion_request(body_with(endpoint, extra), endpoint);
  if (auto* error = std::get_if<ApiError>(&parsed)) {
    ADD_FAILURE() << error->message << " (" << error->param << ")";
    return {};
  }
  return std::get<CompletionRequest>(std::move(parsed));
}

TEST(RequestFields, MaxCompletionTokensWinsOverMaxTokensWhenBothAreValid) {
  EXPECT_EQ(parsed_or_fail(kChat, R"("max_tokens": 30, "max_completion_tokens": 7)").max_tokens, 7);
  EXPECT_EQ(parsed_or_fail(kCmpl, R"("max_completion_tokens": 7, "max_tokens": 30)").max_tokens, 7);
  EXPECT_EQ(parsed_or_fail(kCmpl, R"("max_tokens": 30)").max_tokens, 30);
  EXPECT_EQ(parsed_or_fail(kCmpl, "").max_tokens, kDefaultCompletionMaxTokens);
}

// llama.cpp's Mirostat replaces its chain: the stages that chain would run are off.
TEST(RequestFields, MirostatReplacesTheChain) {
  for (Endpoint endpoint : {kCmpl, kChat}) {
    const SamplingParams s =
        parsed_or_fail(endpoint, R"("mirostat": 2, "top_k": 40, "top_p": 0.9, "min_p": 0.1,
                                   "repeat_penalty": 1.1, "presence_penalty": 0.5,
                                   "dry_multiplier": 0.8, "xtc_probability": 0.5,
                                   "typical_p": 0.5, "top_n_sigma": 1, "temperature": 0.7)")
            .sampling;
    EXPECT_EQ(s.mirostat, 2);
    EXPECT_FLOAT_EQ(s.mirostat_tau, 5.0f);
    EXPECT_FLOAT_EQ(s.mirostat_eta, 0.1f);
    EXPECT_FLOAT_EQ(s.temperature, 0.7f);
    EXPECT_EQ(s.top_k, 0);
    EXPECT_EQ(s.top_p, 1.0f);
    EXPECT_EQ(s.min_p, 0.0f);
    EXPECT_EQ(s.repetition_penalty, 1.0f);
    EXPECT_EQ(s.presence_penalty, 0.0f);
    EXPECT_FALSE(s.dry_on());
    EXPECT_FALSE(s.xtc_on());
    EXPECT_FALSE(s.typical_on());
    EXPECT_FALSE(s.top_n_sigma_on());
  }
  const SamplingParams v1 =
      parsed_or_fail(kCmpl, R"("mirostat": 1, "mirostat_tau": 3, "mirostat_eta": 0.2, "top_k": 5)")
          .sampling;
  EXPECT_EQ(v1.mirostat, 1);
  EXPECT_FLOAT_EQ(v1.mirostat_tau, 3.0f);
  EXPECT_FLOAT_EQ(v1.mirostat_eta, 0.2f);
  EXPECT_EQ(v1.top_k, 0);
  // adaptive-p is a stage of the chain it replaces (refused alone, as it is not implemented).
  EXPECT_EQ(parsed_or_fail(kChat, R"("mirostat": 1, "adaptive_target": 0.4)").sampling.mirostat, 1);
  auto adaptive = parse_completion_request(body_with(kChat, R"("adaptive_target": 0.4)"), kChat);
  ASSERT_TRUE(std::holds_alternative<ApiError>(adaptive));
  EXPECT_EQ(std::get<ApiError>(adaptive).param, "adaptive_target");
  // adaptive-p on chat when its samplers name it, as on /completion.
  const SamplingParams chained = parsed_or_fail(kChat, R"("adaptive_target": 0.25,
      "samplers": ["top_k", "temperature", "adaptive_p"])")
                                     .sampling;
  EXPECT_TRUE(chained.adaptive_on());
  EXPECT_FLOAT_EQ(chained.adaptive_target, 0.25f);
  // Off, the chain stays as sent.
  EXPECT_EQ(parsed_or_fail(kCmpl, R"("mirostat": 0, "top_k": 5)").sampling.top_k, 5);
}

// llama-server's post_sampling_probs: read on chat (refused on /v1/completions above).
TEST(RequestFields, PostSamplingProbsIsReadOnChat) {
  EXPECT_TRUE(parsed_or_fail(kChat, R"("logprobs": true, "top_logprobs": 2,
                                       "post_sampling_probs": true)")
                  .sampling.post_sampling_probs);
  EXPECT_FALSE(parsed_or_fail(kChat, R"("logprobs": true)").sampling.post_sampling_probs);
  EXPECT_FALSE(
      parsed_or_fail(kCmpl, R"("post_sampling_probs": false)").sampling.post_sampling_probs);
  auto wrong = parse_completion_request(body_with(kChat, R"("post_sampling_probs": "yes")"), kChat);
  ASSERT_TRUE(std::holds_alternative<ApiError>(wrong));
  EXPECT_EQ(std::get<ApiError>(wrong).param, "post_sampling_probs");
}

TEST(RequestFields, AddSpecialTokensIsReadOnCompletionsAndFalseOnChat) {
  EXPECT_TRUE(parsed_or_fail(kCmpl, "").add_special_tokens);
  EXPECT_TRUE(parsed_or_fail(kCmpl, R"("add_special_tokens": true)").add_special_tokens);
  EXPECT_FALSE(parsed_or_fail(kCmpl, R"("add_special_tokens": false)").add_special_tokens);
  EXPECT_FALSE(parsed_or_fail(kChat, "").add_special_tokens);
  auto wrong = parse_completion_request(body_with(kCmpl, R"("add_special_tokens": 1)"), kCmpl);
  ASSERT_TRUE(std::holds_alternative<ApiError>(wrong));
  EXPECT_EQ(std::get<ApiError>(wrong).param, "add_special_tokens");
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
