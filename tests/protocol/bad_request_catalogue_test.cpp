// The catalogue of malformed and out-of-range request bodies: each must be refused with a
// 400 invalid_request_error whose param names the field at fault (empty for body-level
// problems). The hardening tests replay this list against the running server.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <variant>

#include "protocol/api_error.h"
#include "protocol/completion_request.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

struct BadRequest {
  const char* name;
  Endpoint endpoint;
  std::string body;
  const char* param;
  const char* message_part = "";  // a substring the message must contain
};

constexpr Endpoint kCmpl = Endpoint::kCompletions;
constexpr Endpoint kChat = Endpoint::kChatCompletions;

std::string with_prompt(const std::string& extra) {
  return std::string(R"({"prompt": "hi", )") + extra + "}";
}
std::string with_messages(const std::string& extra) {
  return std::string(R"({"messages": [{"role": "user", "content": "hi"}], )") + extra + "}";
}
std::string messages(const std::string& list) { return R"({"messages": )" + list + "}"; }
std::string prompts(int count) {
  std::string list = R"("a")";
  for (int i = 1; i < count; ++i) list += R"(, "a")";
  return R"({"prompt": [)" + list + "]}";
}

const BadRequest kCatalogue[] = {
    // The body itself.
    {"TruncatedJson", kCmpl, R"({"prompt": "hi",)", "", "line 1"},
    {"TrailingGarbage", kCmpl, R"({"prompt": "hi"} x)", "", "Malformed JSON"},
    {"EmptyBody", kCmpl, "", "", "Malformed JSON"},
    {"BodyIsArray", kCmpl, "[1, 2]", "", "JSON object"},
    {"BodyIsString", kCmpl, R"("hi")", "", "JSON object"},
    {"NumberBeyondDouble", kCmpl, with_prompt(R"("temperature": 1e400)"), "", "overflow"},
    {"InvalidUtf8InString", kCmpl, "{\"prompt\": \"a\xff\"}", "", "UTF-8"},
    {"TruncatedUtf8Sequence", kCmpl, "{\"prompt\": \"\xe2\x82\"}", "", "UTF-8"},
    {"LoneSurrogateEscape", kCmpl, R"({"prompt": "\ud800"})", "", "surrogate"},
    {"NanLiteral", kCmpl, with_prompt(R"("temperature": NaN)"), "", "Malformed JSON"},
    {"InfinityLiteral", kCmpl, with_prompt(R"("temperature": Infinity)"), "", "Malformed JSON"},
    {"SingleQuotes", kCmpl, "{'prompt': 'hi'}", "", "Malformed JSON"},
    {"NestedDeeperThan64", kCmpl,
     with_prompt(R"("x": )" + std::string(65, '[') + std::string(65, ']')), "", "deeper than 64"},
    {"UnclosedNestingOfAMillion", kCmpl, std::string(1 << 20, '['), "", "deeper than 64"},
    // prompt.
    {"PromptMissing", kCmpl, "{}", "prompt", "required"},
    {"PromptNull", kCmpl, R"({"prompt": null})", "prompt", "required"},
    {"PromptEmptyString", kCmpl, R"({"prompt": ""})", "prompt", "empty"},
    {"PromptEmptyArray", kCmpl, R"({"prompt": []})", "prompt", "empty"},
    {"PromptNumber", kCmpl, R"({"prompt": 5})", "prompt", "an integer"},
    {"PromptObject", kCmpl, R"({"prompt": {"text": "hi"}})", "prompt", "an object"},
    {"PromptListMixingKinds", kCmpl, R"({"prompt": ["a", [2]]})", "prompt[1]", "a string"},
    {"PromptListMixingKindsTheOtherWay", kCmpl, R"({"prompt": [[1], "b"]})", "prompt[1]", ""},
    {"PromptListWithAnEmptyOne", kCmpl, R"({"prompt": ["a", ""]})", "prompt[1]", "empty"},
    {"PromptListOfSixtyFive", kCmpl, prompts(65), "prompt", "at most 64"},
    {"PromptSingleEmptyString", kCmpl, R"({"prompt": [""]})", "prompt[0]", "empty"},
    {"PromptSingleEmptyTokenList", kCmpl, R"({"prompt": [[]]})", "prompt[0]", "empty"},
    {"PromptNegativeTokenId", kCmpl, R"({"prompt": [1, -2]})", "prompt[1]", "[0, 2147483647]"},
    {"PromptTokenIdBeyondInt32", kCmpl, R"({"prompt": [3000000000]})", "prompt[0]", ""},
    {"PromptFractionalTokenId", kCmpl, R"({"prompt": [1.5]})", "prompt[0]", "decimal"},
    {"PromptTokenIdAsString", kCmpl, R"({"prompt": [1, "2"]})", "prompt[1]", "a string"},
    {"PromptTokenIdBoolean", kCmpl, R"({"prompt": [true]})", "prompt[0]", "a boolean"},
    {"PromptNestedTooDeep", kCmpl, R"({"prompt": [[[1]]]})", "prompt[0][0]", ""},
    // Sampling parameters.
    {"TemperatureNegative", kCmpl, with_prompt(R"("temperature": -0.5)"), "temperature", ">= 0"},
    {"TemperatureString", kCmpl, with_prompt(R"("temperature": "1")"), "temperature", "string"},
    {"TemperatureBeyondFloat", kCmpl, with_prompt(R"("temperature": 1e39)"), "temperature",
     "finite"},
    {"TopPZero", kCmpl, with_prompt(R"("top_p": 0)"), "top_p", "(0, 1]"},
    {"TopPAboveOne", kCmpl, with_prompt(R"("top_p": 1.5)"), "top_p", "(0, 1]"},
    {"TopPNegative", kCmpl, with_prompt(R"("top_p": -1)"), "top_p", ""},
    {"MinPNegative", kCmpl, with_prompt(R"("min_p": -0.1)"), "min_p", "[0, 1]"},
    {"MinPAboveOne", kCmpl, with_prompt(R"("min_p": 1.01)"), "min_p", "[0, 1]"},
    {"TopKBelowMinusOne", kCmpl, with_prompt(R"("top_k": -2)"), "top_k", ""},
    {"TopKFractional", kCmpl, with_prompt(R"("top_k": 2.5)"), "top_k", "an integer"},
    {"TopKBeyondInt32", kCmpl, with_prompt(R"("top_k": 4294967296)"), "top_k", ""},
    {"IgnoreEosNumber", kCmpl, with_prompt(R"("ignore_eos": 1)"), "ignore_eos", "a boolean"},
    {"LogitBiasArray", kCmpl, with_prompt(R"("logit_bias": [1, 2])"), "logit_bias", "object"},
    {"LogitBiasKeyNotAnId", kCmpl, with_prompt(R"("logit_bias": {"hello": 1})"), "logit_bias",
     "token id"},
    {"LogitBiasNegativeKey", kCmpl, with_prompt(R"("logit_bias": {"-5": 1})"), "logit_bias",
     "token id"},
    {"LogitBiasKeyBeyondInt32", kCmpl, with_prompt(R"("logit_bias": {"99999999999": 1})"),
     "logit_bias", "token id"},
    {"LogitBiasEmptyKey", kCmpl, with_prompt(R"("logit_bias": {"": 1})"), "logit_bias", ""},
    {"LogitBiasAbove100", kCmpl, with_prompt(R"("logit_bias": {"5": 100.5})"), "logit_bias",
     "[-100, 100]"},
    {"LogitBiasBelowMinus100", kCmpl, with_prompt(R"("logit_bias": {"5": -101})"), "logit_bias",
     "[-100, 100]"},
    {"LogitBiasValueString", kCmpl, with_prompt(R"("logit_bias": {"5": "1"})"), "logit_bias",
     "a number"},
    {"SeedFractional", kCmpl, with_prompt(R"("seed": 1.5)"), "seed", ""},
    {"SeedString", kCmpl, with_prompt(R"("seed": "42")"), "seed", ""},
    {"SeedBeyondUint64", kCmpl, with_prompt(R"("seed": 1e30)"), "seed", ""},
    // Lengths.
    {"MaxTokensZero", kCmpl, with_prompt(R"("max_tokens": 0)"), "max_tokens", "[1, 16777216]"},
    {"MaxTokensNegative", kCmpl, with_prompt(R"("max_tokens": -2)"), "max_tokens", ""},
    {"MaxTokensFractional", kCmpl, with_prompt(R"("max_tokens": 16.5)"), "max_tokens",
     "an integer"},
    {"MaxTokensAbsurd", kCmpl, with_prompt(R"("max_tokens": 16777217)"), "max_tokens", ""},
    {"MaxTokensHugeFloat", kCmpl, with_prompt(R"("max_tokens": 1e30)"), "max_tokens", ""},
    {"MaxTokensBeyondUint64", kCmpl, with_prompt(R"("max_tokens": 99999999999999999999999)"),
     "max_tokens", ""},
    {"MaxTokensString", kCmpl, with_prompt(R"("max_tokens": "16")"), "max_tokens", "a string"},
    {"MaxTokensBoolean", kCmpl, with_prompt(R"("max_tokens": true)"), "max_tokens", "boolean"},
    {"MaxCompletionTokensZero", kChat, with_messages(R"("max_completion_tokens": 0)"),
     "max_completion_tokens", ""},
    // stop.
    {"StopFiveSequences", kCmpl, with_prompt(R"("stop": ["a", "b", "c", "d", "e"])"), "stop",
     "at most 4"},
    {"StopNumber", kCmpl, with_prompt(R"("stop": 5)"), "stop", ""},
    {"StopArrayWithNumber", kCmpl, with_prompt(R"("stop": ["a", 5])"), "stop[1]", "a string"},
    {"MinTokensNegative", kCmpl, with_prompt(R"("min_tokens": -1)"), "min_tokens", ""},
    {"MinTokensString", kCmpl, with_prompt(R"("min_tokens": "2")"), "min_tokens", "an integer"},
    {"MinTokensAboveMaxTokens", kCmpl, with_prompt(R"("max_tokens": 4, "min_tokens": 5)"),
     "min_tokens", "max_tokens"},
    {"ChatMinTokensAboveMaxCompletionTokens", kChat,
     with_messages(R"("max_completion_tokens": 1, "min_tokens": 2)"), "min_tokens", ""},
    {"StopTokenIdsNotArray", kCmpl, with_prompt(R"("stop_token_ids": 2)"), "stop_token_ids",
     "an array"},
    {"StopTokenIdsNegative", kCmpl, with_prompt(R"("stop_token_ids": [1, -2])"),
     "stop_token_ids[1]", ""},
    {"IncludeStopStrNumber", kCmpl, with_prompt(R"("include_stop_str_in_output": 1)"),
     "include_stop_str_in_output", "a boolean"},
    {"SkipSpecialTokensString", kChat, with_messages(R"("skip_special_tokens": "no")"),
     "skip_special_tokens", "a boolean"},
    {"SuffixNumber", kCmpl, with_prompt(R"("suffix": 3)"), "suffix", "a string"},
    {"BestOfZero", kCmpl, with_prompt(R"("best_of": 0)"), "best_of", "not supported"},
    // Streaming.
    {"StreamString", kCmpl, with_prompt(R"("stream": "true")"), "stream", "a boolean"},
    {"StreamOptionsWithoutStream", kCmpl, with_prompt(R"("stream_options": {})"), "stream_options",
     "stream"},
    {"StreamOptionsNotObject", kCmpl, with_prompt(R"("stream": true, "stream_options": true)"),
     "stream_options", ""},
    {"IncludeUsageString", kChat,
     with_messages(R"("stream": true, "stream_options": {"include_usage": "yes"})"),
     "stream_options.include_usage", ""},
    // Plain string fields.
    {"ModelNumber", kCmpl, with_prompt(R"("model": 7)"), "model", "a string"},
    {"UserObject", kCmpl, with_prompt(R"("user": {})"), "user", "a string"},
    // Options this server does not implement.
    {"NSeventeen", kCmpl, with_prompt(R"("n": 17)"), "n", "[1, 16]"},
    {"NZero", kCmpl, with_prompt(R"("n": 0)"), "n", "[1, 16]"},
    {"NFraction", kCmpl, with_prompt(R"("n": 2.5)"), "n", ""},
    {"NString", kCmpl, with_prompt(R"("n": "1")"), "n", ""},
    {"ChatNSeventeen", kChat, with_messages(R"("n": 17)"), "n", "[1, 16]"},
    {"BestOfTwo", kCmpl, with_prompt(R"("best_of": 2)"), "best_of", "not supported"},
    {"LogprobsTwentyOne", kCmpl, with_prompt(R"("logprobs": 21)"), "logprobs", "[0, 20]"},
    {"LogprobsNegative", kCmpl, with_prompt(R"("logprobs": -1)"), "logprobs", "[0, 20]"},
    {"LogprobsTrue", kCmpl, with_prompt(R"("logprobs": true)"), "logprobs", "an integer"},
    {"EchoString", kCmpl, with_prompt(R"("echo": "no")"), "echo", "a boolean"},
    {"MaxTokensZeroWithoutEcho", kCmpl, with_prompt(R"("max_tokens": 0, "echo": false)"),
     "max_tokens", "[1, "},
    {"MaxTokensNegativeWithEcho", kCmpl, with_prompt(R"("max_tokens": -2, "echo": true)"),
     "max_tokens", "[0, "},
    {"SuffixNonEmpty", kCmpl, with_prompt(R"("suffix": "end")"), "suffix", "not supported"},
    {"PresencePenaltyAboveTwo", kCmpl, with_prompt(R"("presence_penalty": 2.5)"),
     "presence_penalty", "[-2, 2]"},
    {"FrequencyPenaltyBelowMinusTwo", kChat, with_messages(R"("frequency_penalty": -3)"),
     "frequency_penalty", "[-2, 2]"},
    {"FrequencyPenaltyString", kCmpl, with_prompt(R"("frequency_penalty": "1")"),
     "frequency_penalty", "a number"},
    {"RepetitionPenaltyZero", kCmpl, with_prompt(R"("repetition_penalty": 0)"),
     "repetition_penalty", "> 0"},
    {"RepetitionPenaltyNegative", kChat, with_messages(R"("repetition_penalty": -1.2)"),
     "repetition_penalty", "> 0"},
    {"RepeatPenaltyZero", kChat, with_messages(R"("repeat_penalty": 0)"), "repeat_penalty", "> 0"},
    {"RepeatPenaltyDiffersFromRepetitionPenalty", kCmpl,
     with_prompt(R"("repeat_penalty": 1.1, "repetition_penalty": 1.2)"), "repeat_penalty",
     "same penalty"},
    {"RepeatLastNBelowMinusOne", kCmpl, with_prompt(R"("repeat_last_n": -2)"), "repeat_last_n",
     "[-1, "},
    {"PenaltyLastNFraction", kChat, with_messages(R"("penalty_last_n": 1.5)"), "penalty_last_n",
     "integer"},
    {"PenaltyLastNDiffersFromRepeatLastN", kCmpl,
     with_prompt(R"("repeat_last_n": 8, "penalty_last_n": 16)"), "penalty_last_n", "same window"},
    {"XtcProbabilityAboveOne", kCmpl, with_prompt(R"("xtc_probability": 1.5)"), "xtc_probability",
     "[0, 1]"},
    {"XtcThresholdNegative", kChat, with_messages(R"("xtc_threshold": -0.1)"), "xtc_threshold",
     "[0, 1]"},
    {"DryMultiplierNegative", kCmpl, with_prompt(R"("dry_multiplier": -0.5)"), "dry_multiplier",
     ">= 0"},
    {"DryBaseBelowOne", kChat, with_messages(R"("dry_base": 0.9)"), "dry_base", ">= 1"},
    {"DryAllowedLengthNegative", kCmpl, with_prompt(R"("dry_allowed_length": -1)"),
     "dry_allowed_length", ""},
    {"DryPenaltyLastNBelowMinusOne", kCmpl, with_prompt(R"("dry_penalty_last_n": -2)"),
     "dry_penalty_last_n", ""},
    {"DrySequenceBreakersEmpty", kCmpl, with_prompt(R"("dry_sequence_breakers": [])"),
     "dry_sequence_breakers", "non-empty"},
    {"DrySequenceBreakersAString", kChat, with_messages(R"("dry_sequence_breakers": "[\"\\n\"]")"),
     "dry_sequence_breakers", "array"},
    {"DrySequenceBreakerNotAString", kCmpl, with_prompt(R"("dry_sequence_breakers": ["a", 3])"),
     "dry_sequence_breakers[1]", "string"},
    {"TypicalPAboveOne", kChat, with_messages(R"("typical_p": 1.00000001)"), "typical_p", "[0, 1]"},
    // Below 0 by less than a float can hold: the value sent is checked, not its float.
    {"TypicalPJustBelowZero", kCmpl, with_prompt(R"("typical_p": -1e-300)"), "typical_p", "[0, 1]"},
    {"MinPJustBelowZero", kCmpl, with_prompt(R"("min_p": -1e-300)"), "min_p", "[0, 1]"},
    {"DynatempRangeNegative", kCmpl, with_prompt(R"("dynatemp_range": -0.5)"), "dynatemp_range",
     ">= 0"},
    {"DynatempRangeAtTemperatureZero", kChat,
     with_messages(R"("dynatemp_range": 0.5, "temperature": 0)"), "dynatemp_range", "temperature"},
    {"DynatempExponentNegative", kCmpl, with_prompt(R"("dynatemp_exponent": -1)"),
     "dynatemp_exponent", ">= 0"},
    {"TopNSigmaAString", kCmpl, with_prompt(R"("top_n_sigma": "1")"), "top_n_sigma", "number"},
    {"ChatLogprobsNumber", kChat, with_messages(R"("logprobs": 5)"), "logprobs", "a boolean"},
    {"ChatTopLogprobsWithoutLogprobs", kChat, with_messages(R"("top_logprobs": 3)"), "top_logprobs",
     "logprobs"},
    {"ChatTopLogprobsTwentyOne", kChat, with_messages(R"("logprobs": true, "top_logprobs": 21)"),
     "top_logprobs", "[0, 20]"},
    // tools, tool_choice, parallel_tool_calls.
    {"ToolsNotArray", kChat, with_messages(R"("tools": {"type": "function"})"), "tools",
     "an array"},
    {"ToolNotObject", kChat, with_messages(R"("tools": ["f"])"), "tools[0]", "an object"},
    {"ToolTypeMissing", kChat, with_messages(R"("tools": [{"function": {"name": "f"}}])"),
     "tools[0].type", "required"},
    {"ToolTypeNotFunction", kChat,
     with_messages(R"("tools": [{"type": "code_interpreter", "function": {"name": "f"}}])"),
     "tools[0].type", "code_interpreter"},
    {"ToolFunctionMissing", kChat, with_messages(R"("tools": [{"type": "function"}])"),
     "tools[0].function", "required"},
    {"ToolNameMissing", kChat,
     with_messages(R"("tools": [{"type": "function", "function": {"description": "x"}}])"),
     "tools[0].function.name", "required"},
    {"ToolNameWithSpace", kChat,
     with_messages(R"("tools": [{"type": "function", "function": {"name": "get weather"}}])"),
     "tools[0].function.name", "64"},
    {"ToolNameRepeated", kChat,
     with_messages(R"("tools": [{"type": "function", "function": {"name": "f"}},
                                {"type": "function", "function": {"name": "f"}}])"),
     "tools[1].function.name", "earlier tool"},
    {"ToolParametersNotObject", kChat,
     with_messages(R"("tools": [{"type": "function", "function": {"name": "f",
                                 "parameters": "{}"}}])"),
     "tools[0].function.parameters", "an object"},
    {"ToolParametersNotAnObjectSchema", kChat,
     with_messages(R"("tools": [{"type": "function", "function": {"name": "f",
                                 "parameters": {"type": "string"}}}])"),
     "tools[0].function.parameters", "type 'object'"},
    {"ToolStrictNotBool", kChat,
     with_messages(R"("tools": [{"type": "function", "function": {"name": "f",
                                 "strict": "yes"}}])"),
     "tools[0].function.strict", "a string"},
    {"ToolChoiceUnknownMode", kChat,
     with_messages(R"("tools": [{"type": "function", "function": {"name": "f"}}],
                      "tool_choice": "any")"),
     "tool_choice", "'any'"},
    {"ToolChoiceNumber", kChat,
     with_messages(R"("tools": [{"type": "function", "function": {"name": "f"}}],
                      "tool_choice": 1)"),
     "tool_choice", "an integer"},
    {"ToolChoiceRequiredWithoutTools", kChat, with_messages(R"("tool_choice": "required")"),
     "tool_choice", "requires 'tools'"},
    {"ToolChoiceNamesUnknownFunction", kChat,
     with_messages(R"("tools": [{"type": "function", "function": {"name": "f"}}],
                      "tool_choice": {"type": "function", "function": {"name": "g"}})"),
     "tool_choice.function.name", "'g'"},
    {"ToolChoiceFunctionMissing", kChat,
     with_messages(R"("tools": [{"type": "function", "function": {"name": "f"}}],
                      "tool_choice": {"type": "function"})"),
     "tool_choice.function", "required"},
    {"ParallelToolCallsNotBool", kChat, with_messages(R"("parallel_tool_calls": "no")"),
     "parallel_tool_calls", "a string"},
    {"ToolChoiceRequiredWithResponseFormat", kChat,
     with_messages(R"("tools": [{"type": "function", "function": {"name": "f"}}],
                      "tool_choice": "required", "response_format": {"type": "json_object"})"),
     "tool_choice", "both constrain"},
    {"ToolChoiceRequiredWithIgnoreEos", kChat,
     with_messages(R"("tools": [{"type": "function", "function": {"name": "f"}}],
                      "tool_choice": "required", "ignore_eos": true)"),
     "ignore_eos", "grammar decides"},
    {"ResponseFormatUnknownType", kChat, with_messages(R"("response_format": {"type": "yaml"})"),
     "response_format.type", "yaml"},
    {"ResponseFormatJsonSchemaMissing", kCmpl,
     with_prompt(R"("response_format": {"type": "json_schema"})"), "response_format.json_schema",
     "required"},
    {"ResponseFormatSchemaNotObject", kCmpl,
     with_prompt(R"("response_format": {"type": "json_schema", "json_schema": {"name": "a",
        "schema": "{}"}})"),
     "response_format.json_schema.schema", "an object"},
    {"ResponseFormatBadName", kChat,
     with_messages(R"("response_format": {"type": "json_schema", "json_schema": {"name": "a b"}})"),
     "response_format.json_schema.name", "64"},
    {"GrammarNotString", kCmpl, with_prompt(R"("grammar": 3)"), "grammar", "a string"},
    {"TwoConstraints", kCmpl,
     with_prompt(R"("response_format": {"type": "json_object"}, "grammar": "root ::= \"a\"")"),
     "grammar", "response_format"},
    {"ConstraintWithIgnoreEos", kChat,
     with_messages(R"("response_format": {"type": "json_object"}, "ignore_eos": true)"),
     "ignore_eos", "grammar decides"},
    {"ConstraintWithMinTokens", kCmpl,
     with_prompt(R"("json_schema": {"type": "string"}, "min_tokens": 2)"), "min_tokens",
     "grammar decides"},
    // messages.
    {"MessagesMissing", kChat, R"({"prompt": "hi"})", "messages", "required"},
    {"MessagesEmpty", kChat, messages("[]"), "messages", "empty"},
    {"MessagesObject", kChat, messages(R"({"role": "user", "content": "hi"})"), "messages",
     "an array"},
    {"MessageNotObject", kChat, messages(R"(["hi"])"), "messages[0]", "an object"},
    {"MessageRoleMissing", kChat, messages(R"([{"content": "hi"}])"), "messages[0].role",
     "required"},
    {"MessageRoleUnknown", kChat,
     messages(R"([{"role": "user", "content": "a"}, {"role": "wizard", "content": "b"}])"),
     "messages[1].role", "wizard"},
    {"MessageToolCallIdMissing", kChat, messages(R"([{"role": "tool", "content": "21"}])"),
     "messages[0].tool_call_id", "required"},
    {"MessageToolContentMissing", kChat, messages(R"([{"role": "tool", "tool_call_id": "c"}])"),
     "messages[0].content", "required"},
    {"ToolCallArgumentsNotJson", kChat,
     messages(R"([{"role": "assistant", "tool_calls": [{"type": "function",
                  "function": {"name": "f", "arguments": "{"}}]}])"),
     "messages[0].tool_calls[0].function.arguments", "not valid JSON"},
    {"MessageRoleNumber", kChat, messages(R"([{"role": 1, "content": "hi"}])"), "messages[0].role",
     "a string"},
    {"MessageUserContentMissing", kChat, messages(R"([{"role": "user"}])"), "messages[0].content",
     "required"},
    {"MessageContentNumber", kChat, messages(R"([{"role": "user", "content": 3}])"),
     "messages[0].content", ""},
    {"MessageContentImagePart", kChat,
     messages(R"([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}])"),
     "messages[0].content[0].type", "image_url"},
    {"MessageContentPartWithoutText", kChat,
     messages(R"([{"role": "user", "content": [{"type": "text"}]}])"),
     "messages[0].content[0].text", "required"},
    {"MessageContentPartNotObject", kChat, messages(R"([{"role": "user", "content": ["hi"]}])"),
     "messages[0].content[0]", "an object"},
    {"MessageContentPartTextNumber", kChat,
     messages(R"([{"role": "user", "content": [{"type": "text", "text": 1}]}])"),
     "messages[0].content[0].text", "a string"},
    // A refusal part is an assistant's (OpenAI's spec); it needs its `refusal` text.
    {"MessageContentRefusalPartOfAUser", kChat,
     messages(R"([{"role": "user", "content": [{"type": "refusal", "refusal": "no"}]}])"),
     "messages[0].content[0].type", "belongs to an assistant turn"},
    {"MessageContentRefusalPartWithoutRefusal", kChat,
     messages(R"([{"role": "user", "content": "hi"},
                  {"role": "assistant", "content": [{"type": "refusal", "text": "no"}]},
                  {"role": "user", "content": "why"}])"),
     "messages[1].content[0].refusal", "required"},
    {"ChatTemperatureNegative", kChat, with_messages(R"("temperature": -1)"), "temperature", ""},
    {"CacheSaltEmpty", kChat, with_messages(R"("cache_salt": "")"), "cache_salt", "non-empty"},
    {"CacheSaltNumber", kChat, with_messages(R"("cache_salt": 7)"), "cache_salt", "a string"},
};

class BadRequestCatalogue : public testing::TestWithParam<BadRequest> {};

TEST_P(BadRequestCatalogue, IsRefusedWith400NamingTheField) {
  const BadRequest& c = GetParam();
  auto parsed = parse_completion_request(c.body, c.endpoint);
  ASSERT_TRUE(std::holds_alternative<ApiError>(parsed)) << "accepted: " << c.body;
  const ApiError& error = std::get<ApiError>(parsed);
  EXPECT_EQ(error.status, 400);
  EXPECT_EQ(error.type, "invalid_request_error");
  EXPECT_EQ(error.param, c.param) << error.message;
  EXPECT_NE(error.message.find(c.message_part), std::string::npos) << error.message;
  // The error body is valid JSON even when the message quotes invalid bytes.
  auto body = nlohmann::json::parse(to_json_body(error));
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
}

INSTANTIATE_TEST_SUITE_P(Protocol, BadRequestCatalogue, testing::ValuesIn(kCatalogue),
                         [](const testing::TestParamInfo<BadRequest>& info) {
                           return std::string(info.param.name);
                         });

TEST(BadRequestCatalogue, HoldsAtLeastFortyCases) { EXPECT_GE(std::size(kCatalogue), 40u); }

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
