// FramedJson: literal text and schema-valid JSON composed in one grammar (tool calls). The
// grammar accepts exactly the framed calls; each schema part keeps its own "$ref"s; and
// seeded random walks over a vocabulary end in text that parses as calls (with the
// protocol's Hermes parser) whose arguments validate against their tool's schema.
#include <gtest/gtest.h>

#include <random>

#include "protocol/tool_calls/tool_call_parser.h"
#include "runner/grammar/grammar.h"
#include "runner/grammar/recognizer.h"
#include "tests/runner/grammar/grammar_test_support.h"
#include "tests/runner/grammar/schema_validator.h"

namespace tandem::grammar::TANDEM_UNITY_ID {
namespace {

using Json = nlohmann::ordered_json;

const Json kWeather = Json::parse(R"({
  "type": "object",
  "properties": {"city": {"$ref": "#/$defs/city"}, "days": {"type": "integer", "minimum": 1,
                 "maximum": 7}},
  "required": ["city"],
  "$defs": {"city": {"type": "string", "minLength": 1, "maxLength": 8}}})");
const Json kTime = Json::parse(R"({
  "type": "object", "properties": {"tz": {"enum": ["UTC", "CET"]}}, "required": ["tz"]})");

FramedJson::Part text(std::string t) { return {std::move(t)}; }
FramedJson::Part value(const Json& schema) { return {"", schema, true}; }

FramedJson hermes(uint32_t max_items) {
  FramedJson framed;
  framed.separator = "\n";
  framed.max_items = max_items;
  framed.alternatives = {
      {text("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "), value(kWeather),
       text("}\n</tool_call>")},
      {text("<tool_call>\n{\"name\": \"get_time\", \"arguments\": "), value(kTime),
       text("}\n</tool_call>")},
  };
  return framed;
}

bool accepts(const std::shared_ptr<const Grammar>& grammar, std::string_view input) {
  Recognizer recognizer(grammar);
  return recognizer.feed(input) && recognizer.accepts();
}

TEST(FramedJson, AcceptsExactlyTheFramedCalls) {
  const auto one = compile_framed_json(hermes(1));
  const std::string weather =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>";
  const std::string time =
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call>";
  EXPECT_TRUE(accepts(one, weather));
  EXPECT_TRUE(accepts(one, time));
  EXPECT_FALSE(accepts(one, weather + "\n" + time)) << "one call only";
  EXPECT_FALSE(accepts(
      one,
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"PST\"}}\n</tool_call>"));
  EXPECT_FALSE(accepts(one,
                       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                       "\"Amsterdam-Noord\"}}\n</tool_call>"))
      << "the $ref'd maxLength holds";
  EXPECT_FALSE(accepts(one, "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(one, weather.substr(0, weather.size() - 1)));
  const auto many = compile_framed_json(hermes(GrammarBuilder::kUnbounded));
  EXPECT_TRUE(accepts(many, weather + "\n" + time + "\n" + weather));
  EXPECT_FALSE(accepts(many, weather + time)) << "the separator is required";
}

TEST(FramedJson, OpenSeparatorAndCloseFrameTheItems) {
  FramedJson framed;
  framed.open = "[TOOL_CALLS][";
  framed.separator = ", ";
  framed.close = "]";
  framed.min_items = 2;
  framed.max_items = 3;
  framed.alternatives = {{text("{\"name\": \"t\", \"arguments\": "), value(kTime), text("}")}};
  const auto grammar = compile_framed_json(framed);
  const std::string call = "{\"name\": \"t\", \"arguments\": {\"tz\": \"UTC\"}}";
  EXPECT_FALSE(accepts(grammar, "[TOOL_CALLS][" + call + "]"));
  EXPECT_TRUE(accepts(grammar, "[TOOL_CALLS][" + call + ", " + call + "]"));
  EXPECT_TRUE(accepts(grammar, "[TOOL_CALLS][" + call + ", " + call + ", " + call + "]"));
  EXPECT_FALSE(
      accepts(grammar, "[TOOL_CALLS][" + call + ", " + call + ", " + call + ", " + call + "]"));
}

TEST(FramedJson, AnUnsupportedKeywordInAPartIsRefusedByName) {
  FramedJson framed;
  framed.alternatives = {{text("x"), value(Json::parse(R"({"type": "string", "multipleOf": 2})"))}};
  try {
    compile_framed_json(framed);
    FAIL() << "compiled";
  } catch (const GrammarError& error) {
    EXPECT_NE(std::string(error.what()).find("multipleOf"), std::string::npos) << error.what();
  }
}

TEST(FramedJson, KeysNameTheFramingExactly) {
  EXPECT_EQ(framed_json_key(hermes(1)), framed_json_key(hermes(1)));
  EXPECT_NE(framed_json_key(hermes(1)), framed_json_key(hermes(2)));
  FramedJson answered = hermes(1);
  answered.instead = {value(kTime)};
  EXPECT_NE(framed_json_key(answered), framed_json_key(hermes(1)));
}

// Tools under "auto" beside a response format: the calls, or the shaped answer instead, and
// nothing that mixes them; the answer's schema keeps its own "$ref"s beside the calls'.
TEST(FramedJson, TheAnswerInsteadOfTheCalls) {
  FramedJson framed = hermes(GrammarBuilder::kUnbounded);
  framed.instead = {value(kWeather)};
  const auto grammar = compile_framed_json(framed);
  const std::string time =
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call>";
  EXPECT_TRUE(accepts(grammar, time));
  EXPECT_TRUE(accepts(grammar, time + "\n" + time));
  EXPECT_TRUE(accepts(grammar, "{\"city\": \"Oslo\", \"days\": 3}"));
  EXPECT_FALSE(accepts(grammar, "{\"city\": \"Amsterdam-Noord\"}")) << "its $ref'd maxLength";
  EXPECT_FALSE(accepts(grammar, "{\"tz\": \"CET\"}")) << "city is required";
  EXPECT_FALSE(accepts(grammar, time + "\n{\"city\": \"Oslo\"}")) << "calls, then an answer";
  EXPECT_FALSE(accepts(grammar, "{\"city\": \"Oslo\"}" + time)) << "an answer, then a call";
  EXPECT_FALSE(accepts(compile_framed_json(hermes(1)), "{\"city\": \"Oslo\"}"));
}

// Qwen's <tool_call> is one vocabulary token with those bytes (a user-defined token): the
// matcher allows it whole where the grammar's literal starts, as well as its spelling.
TEST(FramedJson, AMarkerThatIsOneTokenIsAllowedWhole) {
  std::vector<std::string> tokens = {"", "<tool_call>", "<tool", "<", "x"};
  for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
  const auto vocab = std::make_shared<const Vocabulary>(tokens, std::vector<int32_t>{0});
  Matcher matcher(std::make_shared<const CompiledGrammar>(compile_framed_json(hermes(1)), vocab));
  std::vector<uint32_t> mask(vocab->mask_words(), 0);
  matcher.fill_mask(mask);
  const std::vector<int32_t> allowed = testing::allowed_ids(mask, vocab->size());
  EXPECT_EQ(allowed, (std::vector<int32_t>{1, 2, 3, 5 + '<'}));
  ASSERT_TRUE(matcher.advance(1));
  matcher.fill_mask(mask);
  EXPECT_EQ(testing::allowed_ids(mask, vocab->size()), (std::vector<int32_t>{5 + '\n'}));
}

TEST(FramedJson, RandomWalksEndInCallsWhoseArgumentsValidate) {
  const auto compiled = std::make_shared<const CompiledGrammar>(
      compile_framed_json(hermes(GrammarBuilder::kUnbounded)), testing::synthetic_vocabulary());
  std::mt19937_64 rng(17);
  int ended = 0;
  for (int walk = 0; walk < 60; ++walk) {
    Matcher matcher(compiled);
    const testing::Walk w = testing::random_walk(matcher, rng, {.free_tokens = 30});
    if (!w.ended) continue;
    ++ended;
    const ParsedToolCalls parsed = parse_tool_calls(ToolCallFormat::kHermes, w.text);
    ASSERT_FALSE(parsed.calls.empty()) << w.text;
    EXPECT_EQ(parsed.content, "") << w.text;
    for (const ParsedToolCall& call : parsed.calls) {
      const Json& schema = call.name == "get_weather" ? kWeather : kTime;
      const auto error = testing::validate(nlohmann::json::parse(call.arguments),
                                           nlohmann::json::parse(schema.dump()));
      EXPECT_FALSE(error) << *error << "\n" << w.text;
    }
  }
  EXPECT_GT(ended, 40);
}

}  // namespace
}  // namespace tandem::grammar::TANDEM_UNITY_ID
