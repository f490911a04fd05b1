// Accepted request bodies: defaults, the several shapes of prompt, stop and messages, the
// neutral values of unsupported options, and the model-dependent checks.
#include "protocol/completion_request.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace tandem::TANDEM_UNITY_ID {
namespace {

using namespace std::string_literals;

CompletionRequest parse_ok(const std::string& body, Endpoint endpoint = Endpoint::kCompletions) {
  auto parsed = parse_completion_request(body, endpoint);
  if (auto* error = std::get_if<ApiError>(&parsed)) {
    ADD_FAILURE() << "rejected " << body << ": " << error->message << " (" << error->param << ")";
    return {};
  }
  return std::get<CompletionRequest>(parsed);
}

CompletionRequest parse_chat_ok(const std::string& body) {
  return parse_ok(body, Endpoint::kChatCompletions);
}

// llama-server's `samplers` (llama.cpp's web UI sends its chain with every chat): the order
// becomes the sampler's flags and the stages left out are off, as on /completion; without
// it the order is vLLM's.
TEST(CompletionRequest, LlamaServersSamplersApplyAsOnItsOwnRoutes) {
  const std::string fields =
      R"("temperature": 0.8, "top_k": 40, "top_p": 0.95, "min_p": 0.05, "dry_multiplier": 0,
         "typ_p": 1, "xtc_probability": 0, "messages": [{"role": "user", "content": "hi"}])";
  const CompletionRequest ui = parse_chat_ok(
      "{" + fields +
      R"(, "samplers": ["penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p", "min_p",
          "xtc", "temperature"]})");
  EXPECT_TRUE(ui.sampling.temperature_last);
  EXPECT_TRUE(ui.sampling.min_p_last);
  EXPECT_FLOAT_EQ(ui.sampling.temperature, 0.8f);
  EXPECT_EQ(ui.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(ui.sampling.top_p, 0.95f);
  EXPECT_FLOAT_EQ(ui.sampling.min_p, 0.05f);
  const CompletionRequest letters = parse_chat_ok("{" + fields + R"(, "samplers": "kt"})");
  EXPECT_EQ(letters.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(letters.sampling.top_p, 1.0f);  // left out: off
  EXPECT_FLOAT_EQ(letters.sampling.min_p, 0.0f);
  // top_k keeps the same tokens before or after the temperature: no flag needed.
  EXPECT_FALSE(letters.sampling.temperature_last);
  const CompletionRequest plain = parse_chat_ok("{" + fields + "}");
  EXPECT_FALSE(plain.sampling.temperature_last || plain.sampling.min_p_last);
  auto refused = parse_completion_request(
      R"({"prompt": "x", "top_k": 5, "top_p": 0.9, "samplers": ["top_p", "top_k"]})",
      Endpoint::kCompletions);
  ASSERT_TRUE(std::holds_alternative<ApiError>(refused));
  EXPECT_EQ(std::get<ApiError>(refused).param, "samplers");
}

// llama-server's -1 (its web UI sends it): no limit, until EOS or the context.
TEST(CompletionRequest, MaxTokensMinusOneIsNoLimit) {
  EXPECT_FALSE(parse_ok(R"({"prompt": "x", "max_tokens": -1})").max_tokens.has_value());
  EXPECT_FALSE(
      parse_chat_ok(R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": -1})")
          .max_tokens.has_value());
  EXPECT_FALSE(parse_ok(R"({"prompt": "x", "max_tokens": 5, "max_completion_tokens": -1})")
                   .max_tokens.has_value());
  EXPECT_EQ(parse_ok(R"({"prompt": "x", "max_tokens": -1, "max_completion_tokens": 5})").max_tokens,
            5);
}

TEST(CompletionRequest, MinimalCompletionGetsOpenAiDefaults) {
  CompletionRequest r = parse_ok(R"({"prompt": "Hello"})");
  EXPECT_EQ(r.endpoint, Endpoint::kCompletions);
  EXPECT_EQ(r.prompt_text, "Hello");
  EXPECT_FALSE(r.has_prompt_tokens());
  EXPECT_TRUE(r.model.empty());
  EXPECT_EQ(r.max_tokens, 16);
  EXPECT_EQ(r.sampling.temperature, 1.0f);
  EXPECT_EQ(r.sampling.top_p, 1.0f);
  EXPECT_EQ(r.sampling.top_k, 0);
  EXPECT_EQ(r.sampling.min_p, 0.0f);
  EXPECT_TRUE(r.sampling.logit_bias.empty());
  EXPECT_FALSE(r.sampling.ignore_eos);
  EXPECT_FALSE(r.seed.has_value());
  EXPECT_TRUE(r.stop.empty());
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.include_usage);
  EXPECT_TRUE(r.user.empty());
}

TEST(CompletionRequest, ChatWithoutMaxTokensRunsUntilTheContextEnds) {
  CompletionRequest r = parse_chat_ok(R"({"messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_EQ(r.endpoint, Endpoint::kChatCompletions);
  EXPECT_FALSE(r.max_tokens.has_value());
  ASSERT_EQ(r.chat.messages.size(), 1u);
  EXPECT_EQ(r.chat.messages[0]["role"], "user");
  EXPECT_EQ(r.chat.messages[0]["content"], "hi");
  EXPECT_TRUE(r.chat.add_generation_prompt);
  EXPECT_TRUE(r.prompt_text.empty());
}

TEST(CompletionRequest, EveryFieldIsRead) {
  CompletionRequest r = parse_ok(R"({
      "model": "tiny", "prompt": "x", "max_tokens": 7, "temperature": 0.5, "top_p": 0.9,
      "top_k": 40, "min_p": 0.05, "seed": 1234, "stop": ["\n", "END"], "stream": true,
      "stream_options": {"include_usage": true}, "logit_bias": {"15": -100, "3": 2.5},
      "ignore_eos": true, "user": "alice"})");
  EXPECT_EQ(r.model, "tiny");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_EQ(r.sampling.temperature, 0.5f);
  EXPECT_EQ(r.sampling.top_p, 0.9f);
  EXPECT_EQ(r.sampling.top_k, 40);
  EXPECT_EQ(r.sampling.min_p, 0.05f);
  EXPECT_EQ(r.seed, 1234u);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  // Sorted by token id, whatever the JSON order.
  ASSERT_EQ(r.sampling.logit_bias.size(), 2u);
  EXPECT_EQ(r.sampling.logit_bias[0], (std::pair<int32_t, float>{3, 2.5f}));
  EXPECT_EQ(r.sampling.logit_bias[1], (std::pair<int32_t, float>{15, -100.0f}));
  EXPECT_TRUE(r.sampling.ignore_eos);
  EXPECT_EQ(r.user, "alice");
  EXPECT_EQ(r.sampling.seed, 0u);  // the server copies the seed in once it is settled
}

TEST(CompletionRequest, MaxCompletionTokensWinsOverMaxTokens) {
  CompletionRequest r = parse_chat_ok(
      R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5,
          "max_completion_tokens": 9})");
  EXPECT_EQ(r.max_tokens, 9);
  EXPECT_EQ(parse_ok(R"({"prompt": "x", "max_completion_tokens": 3})").max_tokens, 3);
}

TEST(CompletionRequest, IntegralFloatsCountAsIntegers) {
  CompletionRequest r = parse_ok(R"({"prompt": "x", "max_tokens": 16.0, "top_k": 2e1, "n": 1.0})");
  EXPECT_EQ(r.max_tokens, 16);
  EXPECT_EQ(r.sampling.top_k, 20);
}

TEST(CompletionRequest, BoundaryValuesAreAccepted) {
  CompletionRequest r = parse_ok(
      R"({"prompt": "x", "max_tokens": 16777216, "temperature": 0, "top_p": 1, "min_p": 1,
          "logit_bias": {"0": 100, "2147483647": -100}})");
  EXPECT_EQ(r.max_tokens, kMaxTokensLimit);
  EXPECT_EQ(r.sampling.temperature, 0.0f);
  EXPECT_EQ(r.sampling.top_p, 1.0f);
  EXPECT_EQ(r.sampling.min_p, 1.0f);
  EXPECT_EQ(r.sampling.logit_bias.back().first, 2147483647);
  EXPECT_EQ(parse_ok(R"({"prompt": "x", "max_tokens": 1})").max_tokens, 1);
  EXPECT_EQ(parse_ok(R"({"prompt": "x", "top_p": 1e-9})").sampling.top_p, 1e-9f);
}

TEST(CompletionRequest, TopKMinusOneMeansOffAsInVllm) {
  EXPECT_EQ(parse_ok(R"({"prompt": "x", "top_k": -1})").sampling.top_k, 0);
}

TEST(CompletionRequest, NullMeansTheDefault) {
  CompletionRequest r = parse_ok(
      R"({"prompt": "x", "max_tokens": null, "temperature": null, "top_p": null, "seed": null,
          "stop": null, "stream": null, "stream_options": null, "logit_bias": null, "n": null,
          "user": null, "model": null, "logprobs": null, "echo": null, "best_of": null})");
  EXPECT_EQ(r.max_tokens, 16);
  EXPECT_EQ(r.sampling.temperature, 1.0f);
  EXPECT_FALSE(r.seed.has_value());
  EXPECT_FALSE(r.stream);
}

TEST(CompletionRequest, UnknownFieldsAreIgnored) {
  CompletionRequest r = parse_ok(
      R"({"prompt": "x", "frobnicate": [1, {"a": null}], "metadata": {"k": "v"},
          "top_a": "weird", "": 0})");
  EXPECT_EQ(r.prompt_text, "x");
}

TEST(CompletionRequest, NeutralValuesOfUnsupportedOptionsAreAccepted) {
  parse_ok(R"({"prompt": "x", "n": 1, "best_of": 1, "echo": false, "suffix": ""})");
  parse_ok(R"({"prompt": "x", "logprobs": false})");
  parse_chat_ok(R"({"messages": [{"role": "user", "content": "hi"}], "logprobs": false,
                    "top_logprobs": 0, "tools": [], "tool_choice": "none",
                    "response_format": {"type": "text"}})");
}

// An output constraint beside tools under tool_choice "auto" (or none given) is accepted:
// its grammar makes the answer the shaped message, one of the outcomes "auto" allows. The
// Agents SDK's agent with an output type sends this on every turn after its first call.
TEST(CompletionRequest, AConstraintBesideToolsUnderAutoIsAccepted) {
  const std::string tools =
      R"("tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}])";
  for (const char* constraint :
       {R"("response_format": {"type": "json_object"})", R"("guided_regex": "[a-z]+")"}) {
    for (const char* choice : {R"(, "tool_choice": "auto")", "", R"(, "tool_choice": "none")"}) {
      const CompletionRequest r =
          parse_chat_ok(R"({"messages": [{"role": "user", "content": "hi"}], )" + tools + ", " +
                        constraint + choice + "}");
      EXPECT_TRUE(r.constraint.active()) << constraint << choice;
      EXPECT_FALSE(r.tools.constrains()) << constraint << choice;
    }
  }
}

TEST(CompletionRequest, PenaltiesAreRead) {
  CompletionRequest r = parse_ok(R"({"prompt": "x", "presence_penalty": -2, "frequency_penalty": 2,
                                     "repetition_penalty": 1.3})");
  EXPECT_EQ(r.sampling.presence_penalty, -2.0f);
  EXPECT_EQ(r.sampling.frequency_penalty, 2.0f);
  EXPECT_EQ(r.sampling.repetition_penalty, 1.3f);
  EXPECT_TRUE(r.sampling.has_output_penalties());
  EXPECT_TRUE(r.sampling.has_prompt_penalty());
  CompletionRequest none = parse_ok(R"({"prompt": "x"})");
  EXPECT_FALSE(none.sampling.has_output_penalties());
  EXPECT_FALSE(none.sampling.has_prompt_penalty());
}

// Without llama.cpp's names the penalties are vLLM's (penalty_last_n 0); with any of them
// they are llama.cpp's, over repeat_last_n (alias penalty_last_n; 64 unsent, -1 the whole
// history, 0 no penalty at all).
TEST(CompletionRequest, LlamaCppsPenaltyNamesPickItsDefinitions) {
  const CompletionRequest vllm = parse_ok(R"({"prompt": "x", "repetition_penalty": 1.2})");
  EXPECT_EQ(vllm.sampling.penalty_last_n, 0);
  const CompletionRequest repeat =
      parse_chat_ok(R"({"messages": [{"role": "user", "content": "hi"}], "repeat_penalty": 1.1})");
  EXPECT_FLOAT_EQ(repeat.sampling.repetition_penalty, 1.1f);
  EXPECT_EQ(repeat.sampling.penalty_last_n, 64);
  const CompletionRequest window =
      parse_ok(R"({"prompt": "x", "frequency_penalty": 0.5, "repeat_last_n": 16})");
  EXPECT_EQ(window.sampling.penalty_last_n, 16);
  EXPECT_TRUE(window.sampling.has_prompt_penalty());  // the window holds prompt tokens
  const CompletionRequest whole = parse_ok(
      R"({"prompt": "x", "presence_penalty": 1, "penalty_last_n": -1, "repeat_last_n": -1})");
  EXPECT_EQ(whole.sampling.penalty_last_n, SamplingParams::kWholeHistory);
  const CompletionRequest off = parse_ok(
      R"({"prompt": "x", "presence_penalty": 1, "repetition_penalty": 1.5, "repeat_last_n": 0})");
  EXPECT_FALSE(off.sampling.has_output_penalties());
  EXPECT_FALSE(off.sampling.has_prompt_penalty());
  const CompletionRequest same =
      parse_ok(R"({"prompt": "x", "repetition_penalty": 1.5, "repeat_penalty": 1.5})");
  EXPECT_FLOAT_EQ(same.sampling.repetition_penalty, 1.5f);
  // Without a penalty the window changes nothing.
  EXPECT_FALSE(parse_ok(R"({"prompt": "x", "repeat_last_n": 64})").sampling.has_prompt_penalty());
}

// llama-server's DRY fields on every route: its defaults unless sent, -1 the whole history,
// breakers cut to 40 bytes with the empty ones dropped; the penalties' reach covers DRY's
// window, which reads the prompt too.
TEST(CompletionRequest, DryIsRead) {
  const CompletionRequest none = parse_ok(R"({"prompt": "x"})");
  EXPECT_FALSE(none.sampling.dry_on());
  EXPECT_FALSE(none.sampling.has_output_penalties());
  EXPECT_EQ(none.dry_sequence_breakers, (std::vector<std::string>{"\n", ":", "\"", "*"}));
  const CompletionRequest r = parse_chat_ok(
      R"({"messages": [{"role": "user", "content": "hi"}], "dry_multiplier": 0.8,
          "dry_base": 1.5, "dry_allowed_length": 3, "dry_penalty_last_n": 128,
          "dry_sequence_breakers": ["\n\n", "", "User:", "0123456789012345678901234567890123456789xyz"]})");
  EXPECT_FLOAT_EQ(r.sampling.dry_multiplier, 0.8f);
  EXPECT_FLOAT_EQ(r.sampling.dry_base, 1.5f);
  EXPECT_EQ(r.sampling.dry_allowed_length, 3);
  EXPECT_EQ(r.sampling.dry_last_n, 128);
  EXPECT_EQ(
      r.dry_sequence_breakers,
      (std::vector<std::string>{"\n\n", "User:", "0123456789012345678901234567890123456789"}));
  EXPECT_TRUE(r.sampling.dry_on());
  EXPECT_TRUE(r.sampling.has_output_penalties());
  EXPECT_TRUE(r.sampling.has_prompt_penalty());
  EXPECT_EQ(r.sampling.penalty_reach(), 128);
  // Beside a shorter penalty window, the longer of the two is read.
  const CompletionRequest both = parse_ok(
      R"({"prompt": "x", "dry_multiplier": 1, "presence_penalty": 1, "repeat_last_n": 16})");
  EXPECT_EQ(both.sampling.dry_last_n, SamplingParams::kWholeHistory);
  EXPECT_EQ(both.sampling.penalty_reach(), SamplingParams::kWholeHistory);
  const CompletionRequest off =
      parse_ok(R"({"prompt": "x", "dry_multiplier": 1, "dry_penalty_last_n": 0})");
  EXPECT_FALSE(off.sampling.dry_on());
  EXPECT_EQ(off.sampling.penalty_reach(), 0);
  EXPECT_EQ(parse_ok(R"({"prompt": "x", "dry_multiplier": 1, "dry_penalty_last_n": -1})")
                .sampling.dry_last_n,
            SamplingParams::kWholeHistory);
}

TEST(CompletionRequest, TypicalPIsRead) {
  EXPECT_FLOAT_EQ(parse_ok(R"({"prompt": "x"})").sampling.typical_p, 1.0f);
  EXPECT_FLOAT_EQ(parse_ok(R"({"prompt": "x", "typical_p": 0.5})").sampling.typical_p, 0.5f);
  EXPECT_FLOAT_EQ(parse_ok(R"({"prompt": "x", "typical_p": 0})").sampling.typical_p, 0.0f);
}

TEST(CompletionRequest, TopNSigmaIsRead) {
  EXPECT_LE(parse_ok(R"({"prompt": "x"})").sampling.top_n_sigma, 0.0f);
  EXPECT_FLOAT_EQ(parse_ok(R"({"prompt": "x", "top_n_sigma": 2})").sampling.top_n_sigma, 2.0f);
  // Too small for a float: still on, at the smallest float above 0.
  EXPECT_GT(parse_ok(R"({"prompt": "x", "top_n_sigma": 1e-300})").sampling.top_n_sigma, 0.0f);
  EXPECT_FLOAT_EQ(
      parse_chat_ok(R"({"messages": [{"role": "user", "content": "hi"}], "top_n_sigma": -1})")
          .sampling.top_n_sigma,
      -1.0f);
}

TEST(CompletionRequest, LogprobsAndEchoAreRead) {
  CompletionRequest r =
      parse_ok(R"({"prompt": "x", "logprobs": 5, "echo": true, "max_tokens": 0})");
  EXPECT_EQ(r.sampling.logprobs, 5);
  EXPECT_EQ(r.sampling.prompt_logprobs, 5);
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(r.max_tokens, 0);
  CompletionRequest no_echo = parse_ok(R"({"prompt": "x", "logprobs": 0})");
  EXPECT_EQ(no_echo.sampling.logprobs, 0);
  EXPECT_EQ(no_echo.sampling.prompt_logprobs, -1);
  CompletionRequest echo_only = parse_ok(R"({"prompt": "x", "echo": true})");
  EXPECT_EQ(echo_only.sampling.logprobs, -1);
  EXPECT_EQ(echo_only.sampling.prompt_logprobs, -1);
  CompletionRequest chat = parse_chat_ok(
      R"({"messages": [{"role": "user", "content": "hi"}], "logprobs": true, "top_logprobs": 3})");
  EXPECT_EQ(chat.sampling.logprobs, 3);
  EXPECT_EQ(chat.sampling.prompt_logprobs, -1);
  CompletionRequest chat_plain =
      parse_chat_ok(R"({"messages": [{"role": "user", "content": "hi"}], "logprobs": true})");
  EXPECT_EQ(chat_plain.sampling.logprobs, 0);
}

TEST(CompletionRequest, StopControlsAreRead) {
  CompletionRequest r = parse_ok(
      R"({"prompt": "x", "max_tokens": 8, "min_tokens": 8, "stop_token_ids": [7, 2, 7],
          "include_stop_str_in_output": true, "skip_special_tokens": false, "user": "u-1"})");
  EXPECT_EQ(r.sampling.min_tokens, 8);
  EXPECT_EQ(r.sampling.stop_token_ids, (std::vector<int32_t>{2, 7}));  // sorted, distinct
  EXPECT_TRUE(r.include_stop_str_in_output);
  EXPECT_FALSE(r.skip_special_tokens);
  EXPECT_EQ(r.user, "u-1");
  // OpenAI's safety_identifier, which replaces user, is recorded where user is absent.
  EXPECT_EQ(parse_ok(R"({"prompt": "x", "safety_identifier": "s-2"})").user, "s-2");
  EXPECT_EQ(parse_ok(R"({"prompt": "x", "safety_identifier": "s-2", "user": "u-1"})").user, "u-1");
  EXPECT_EQ(parse_ok(R"({"prompt": "x", "cache_salt": "tenant-a"})").cache_salt, "tenant-a");
  EXPECT_TRUE(parse_ok(R"({"prompt": "x"})").cache_salt.empty());
  CompletionRequest defaults = parse_ok(R"({"prompt": "x"})");
  EXPECT_EQ(defaults.sampling.min_tokens, 0);
  EXPECT_TRUE(defaults.sampling.stop_token_ids.empty());
  EXPECT_FALSE(defaults.include_stop_str_in_output);
  EXPECT_TRUE(defaults.skip_special_tokens);
  // Chat without max_tokens has no ceiling for min_tokens.
  CompletionRequest chat =
      parse_chat_ok(R"({"messages": [{"role": "user", "content": "hi"}], "min_tokens": 100})");
  EXPECT_EQ(chat.sampling.min_tokens, 100);
}

TEST(CompletionRequest, StopTokenIdsAreCheckedAgainstTheVocabulary) {
  CompletionRequest r = parse_ok(R"({"prompt": "x", "stop_token_ids": [3, 10]})");
  EXPECT_FALSE(check_token_ids(r, 11).has_value());
  auto error = check_token_ids(r, 10);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->param, "stop_token_ids");
  EXPECT_NE(error->message.find("10"), std::string::npos);
}

TEST(CompletionRequest, PromptMayBeTokenIds) {
  CompletionRequest r = parse_ok(R"({"prompt": [1, 2, 2147483647, 0]})");
  EXPECT_TRUE(r.has_prompt_tokens());
  EXPECT_EQ(r.prompt_tokens, (std::vector<int32_t>{1, 2, 2147483647, 0}));
  EXPECT_TRUE(r.prompt_text.empty());
}

TEST(CompletionRequest, PromptMayBeABatchOfOne) {
  EXPECT_EQ(parse_ok(R"({"prompt": ["only"]})").prompt_text, "only");
  EXPECT_EQ(parse_ok(R"({"prompt": [[5, 6]]})").prompt_tokens, (std::vector<int32_t>{5, 6}));
}

TEST(CompletionRequest, PromptTextKeepsEveryByte) {
  // Control characters, quotes, backslashes, NUL, emoji and CJK survive the round trip.
  CompletionRequest r =
      parse_ok(R"({"prompt": "a\"b\\c\n\t\u0000\u0001 \ud83d\ude00 \u4e2d <|im_start|>"})");
  EXPECT_EQ(r.prompt_text, "a\"b\\c\n\t\0\x01 \xf0\x9f\x98\x80 \xe4\xb8\xad <|im_start|>"s);
}

TEST(CompletionRequest, StopMayBeAStringOrAnArrayAndEmptiesAreDropped) {
  EXPECT_EQ(parse_ok(R"({"prompt": "x", "stop": "###"})").stop, (std::vector<std::string>{"###"}));
  EXPECT_TRUE(parse_ok(R"({"prompt": "x", "stop": ""})").stop.empty());
  EXPECT_EQ(parse_ok(R"({"prompt": "x", "stop": ["a", "", "b", ""]})").stop,
            (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(parse_ok(R"({"prompt": "x", "stop": []})").stop.empty());
}

TEST(CompletionRequest, SeedCoversTheWholeUint64RangeAndNegativesWrap) {
  EXPECT_EQ(parse_ok(R"({"prompt": "x", "seed": 0})").seed, 0u);
  EXPECT_EQ(parse_ok(R"({"prompt": "x", "seed": 18446744073709551615})").seed, UINT64_MAX);
  EXPECT_EQ(parse_ok(R"({"prompt": "x", "seed": -1})").seed, UINT64_MAX);
  EXPECT_EQ(parse_ok(R"({"prompt": "x", "seed": 42.0})").seed, 42u);
}

TEST(CompletionRequest, StreamOptionsAreReadOnlyWhenStreaming) {
  CompletionRequest r = parse_ok(R"({"prompt": "x", "stream": true, "stream_options": {}})");
  EXPECT_TRUE(r.stream);
  EXPECT_FALSE(r.include_usage);
  r = parse_ok(R"({"prompt": "x", "stream": true, "stream_options": {"include_usage": false}})");
  EXPECT_FALSE(r.include_usage);
}

TEST(CompletionRequest, ChatReadsRolesAndTextParts) {
  CompletionRequest r = parse_chat_ok(R"({"messages": [
      {"role": "developer", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "one"},
                                   {"type": "text", "text": "two"}]},
      {"role": "assistant", "content": null},
      {"role": "assistant", "content": "ok", "name": "bot"},
      {"role": "user", "content": ""}]})");
  const auto& m = r.chat.messages;
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0]["role"], "system");  // developer is OpenAI's newer name for system
  EXPECT_EQ(m[0]["content"], "be brief");
  EXPECT_EQ(m[1]["content"], "one\ntwo");
  EXPECT_EQ(m[2]["role"], "assistant");
  EXPECT_EQ(m[2]["content"], "");
  EXPECT_EQ(m[3].dump(), R"({"role":"assistant","content":"ok","name":"bot"})");
  EXPECT_EQ(m[4]["content"], "");
}

TEST(CompletionRequest, ChatIgnoresPromptAndCompletionsIgnoresMessages) {
  CompletionRequest chat =
      parse_chat_ok(R"({"prompt": 12, "messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_TRUE(chat.prompt_text.empty());
  CompletionRequest cmpl = parse_ok(R"({"prompt": "p", "messages": 12})");
  EXPECT_TRUE(cmpl.chat.messages.empty());
}

TEST(CompletionRequest, ParseErrorsSayWhere) {
  auto parsed = parse_completion_request("{\n  \"prompt\": \"x\",\n  \"max_tokens\": 1x\n}",
                                         Endpoint::kCompletions);
  ASSERT_TRUE(std::holds_alternative<ApiError>(parsed));
  EXPECT_NE(std::get<ApiError>(parsed).message.find("line 3"), std::string::npos)
      << std::get<ApiError>(parsed).message;
}

TEST(CompletionRequest, DeeplyNestedJsonIsRefusedNotCrashed) {
  std::string body =
      R"({"prompt": )" + std::string(100000, '[') + "1" + std::string(100000, ']') + "}";
  auto parsed = parse_completion_request(body, Endpoint::kCompletions);
  ASSERT_TRUE(std::holds_alternative<ApiError>(parsed));
  // Refused while parsing, at the depth limit, before a tree 100000 levels deep is built.
  EXPECT_EQ(std::get<ApiError>(parsed).param, "");
  EXPECT_NE(std::get<ApiError>(parsed).message.find("deeper than 64"), std::string::npos);
}

TEST(CompletionRequest, ErrorMessagesQuoteAtMostABoundedPartOfTheRequest) {
  std::string body = R"({"prompt": "x", "max_tokens": )" + std::string(5000, '9') + "}";
  auto parsed = parse_completion_request(body, Endpoint::kCompletions);
  ASSERT_TRUE(std::holds_alternative<ApiError>(parsed));
  EXPECT_LT(std::get<ApiError>(parsed).message.size(), 600u);
}

TEST(CompletionRequest, TokenIdsAreCheckedAgainstTheVocabulary) {
  CompletionRequest r = parse_ok(R"({"prompt": [0, 99], "logit_bias": {"5": 1}})");
  EXPECT_FALSE(check_token_ids(r, 100).has_value());
  auto error = check_token_ids(r, 99);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->status, 400);
  EXPECT_EQ(error->param, "prompt");
  EXPECT_NE(error->message.find("99"), std::string::npos);

  CompletionRequest bias = parse_ok(R"({"prompt": "x", "logit_bias": {"1000": 1}})");
  error = check_token_ids(bias, 1000);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->param, "logit_bias");
}

TEST(CompletionRequest, NestingUpToSixtyFourLevelsIsAcceptedAndTheLastDuplicateKeyWins) {
  // The body object and 63 arrays inside it: 64 levels, the most a body may nest.
  const std::string nested = std::string(63, '[') + std::string(63, ']');
  CompletionRequest r =
      parse_ok(R"({"prompt": "hi", "max_tokens": 0, "x": )" + nested + R"(, "max_tokens": 3})");
  EXPECT_EQ(r.max_tokens, 3);
}

TEST(CompletionRequest, PromptMustLeaveRoomForOneToken) {
  EXPECT_FALSE(check_prompt_length(2047, 2048, Endpoint::kCompletions).has_value());
  auto full = check_prompt_length(2048, 2048, Endpoint::kCompletions);
  ASSERT_TRUE(full.has_value());
  EXPECT_EQ(full->status, 400);
  EXPECT_EQ(full->code, "context_length_exceeded");
  EXPECT_EQ(full->param, "prompt");
  auto chat = check_prompt_length(5000, 2048, Endpoint::kChatCompletions);
  ASSERT_TRUE(chat.has_value());
  EXPECT_EQ(chat->param, "messages");
  // max_tokens 0 (echo) generates nothing: a prompt as long as the context is scored.
  EXPECT_FALSE(check_prompt_length(2048, 2048, Endpoint::kCompletions, false).has_value());
  auto over = check_prompt_length(2049, 2048, Endpoint::kCompletions, false);
  ASSERT_TRUE(over.has_value());
  EXPECT_EQ(over->code, "context_length_exceeded");
  auto empty = check_prompt_length(0, 2048, Endpoint::kCompletions);
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->status, 400);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
