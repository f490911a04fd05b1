// The tool-call parsers, on outputs written as each family writes them (from the models'
// cards and vLLM's and llama.cpp's parser tests): calls come out with their arguments as
// compact JSON text, the text around them as content, and anything that does not parse
// stays content. A stream that holds back possible calls sends the same content.
#include "protocol/tool_calls/tool_call_parser.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace tandem::TANDEM_UNITY_ID {
namespace {

void expect_calls(const ParsedToolCalls& parsed, const std::vector<ParsedToolCall>& calls) {
  ASSERT_EQ(parsed.calls.size(), calls.size()) << parsed.content;
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(parsed.calls[i].name, calls[i].name) << i;
    EXPECT_EQ(parsed.calls[i].arguments, calls[i].arguments) << i;
  }
}

TEST(HermesToolCalls, ReadsQwenParallelCalls) {
  const auto parsed =
      parse_tool_calls(ToolCallFormat::kHermes,
                       "<tool_call>\n{\"name\": \"get_current_temperature\", "
                       "\"arguments\": {\"location\": \"San Francisco, CA, USA\"}}\n"
                       "</tool_call>\n<tool_call>\n{\"name\": "
                       "\"get_temperature_date\", \"arguments\": {\"location\": "
                       "\"San Francisco, CA, USA\", \"date\": \"2024-10-01\"}}\n"
                       "</tool_call>");
  EXPECT_EQ(parsed.content, "");
  expect_calls(parsed, {{"get_current_temperature", R"({"location":"San Francisco, CA, USA"})"},
                        {"get_temperature_date",
                         R"({"location":"San Francisco, CA, USA","date":"2024-10-01"})"}});
}

TEST(HermesToolCalls, KeepsTheTextBeforeAsContent) {
  const auto parsed = parse_tool_calls(
      ToolCallFormat::kHermes,
      "<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", "
      "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>");
  EXPECT_EQ(parsed.content, "<think>\nThe user wants the weather.\n</think>\n\n");
  expect_calls(parsed, {{"get_weather", R"({"city":"Paris"})"}});
}

TEST(HermesToolCalls, ReadsABlockWhoseClosingTagNeverCame) {
  const auto parsed = parse_tool_calls(
      ToolCallFormat::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, 2]}}\n");
  expect_calls(parsed, {{"f", R"({"a":[1,2]})"}});
}

TEST(HermesToolCalls, ABlockThatIsNotACallStaysContent) {
  const std::string text =
      "Let me try.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}\n</tool_call>";
  const auto parsed = parse_tool_calls(ToolCallFormat::kHermes, text);
  EXPECT_EQ(parsed.content, text);
  EXPECT_TRUE(parsed.calls.empty());
  // One good block beside a bad one: the good one is a call, the bad one content.
  const auto mixed = parse_tool_calls(
      ToolCallFormat::kHermes,
      "<tool_call>{\"name\": \"g\"}</tool_call><tool_call>{\"arguments\": {}}</tool_call>");
  expect_calls(mixed, {{"g", "{}"}});
  EXPECT_EQ(mixed.content, "<tool_call>{\"arguments\": {}}</tool_call>");
}

// A model's call nested past a body's depth stays content: its arguments would be walked
// recursively by the response writer and the next turn's template (a stack overflow).
TEST(HermesToolCalls, ACallNestedPastTheBodysDepthStaysContent) {
  const std::string deep = std::string(20000, '[') + std::string(20000, ']');
  const std::string text =
      "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": " + deep + "}}</tool_call>";
  const auto parsed = parse_tool_calls(ToolCallFormat::kHermes, text);
  EXPECT_TRUE(parsed.calls.empty());
  EXPECT_EQ(parsed.content, text);
  expect_calls(parse_tool_calls(ToolCallFormat::kHermes,
                                "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": " +
                                    std::string(60, '[') + std::string(60, ']') + "}}</tool_call>"),
               {{"f", "{\"a\":" + std::string(60, '[') + std::string(60, ']') + "}"}});
}

TEST(HermesToolCalls, ArgumentsWrittenAsAJsonStringAreRead) {
  const auto parsed =
      parse_tool_calls(ToolCallFormat::kHermes,
                       R"(<tool_call>{"name": "f", "arguments": "{\"x\": \"}\"}"}</tool_call>)");
  expect_calls(parsed, {{"f", R"({"x":"}"})"}});
}

TEST(Llama3ToolCalls, ReadsTheJsonObjectWithParameters) {
  const auto parsed = parse_tool_calls(
      ToolCallFormat::kLlama3,
      R"({"name": "get_current_conditions", "parameters": {"location": "San Francisco, CA", "unit": "Fahrenheit"}})");
  EXPECT_EQ(parsed.content, "");
  expect_calls(parsed, {{"get_current_conditions",
                         R"({"location":"San Francisco, CA","unit":"Fahrenheit"})"}});
}

TEST(Llama3ToolCalls, ReadsPythonTagAndSeveralCalls) {
  const auto parsed = parse_tool_calls(
      ToolCallFormat::kLlama3,
      "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"x\": 1}}; {\"name\": \"b\", "
      "\"arguments\": {\"y\": \"{;}\"}}");
  expect_calls(parsed, {{"a", R"({"x":1})"}, {"b", R"({"y":"{;}"})"}});
}

TEST(Llama3ToolCalls, TextOrABrokenFirstCallIsContent) {
  for (const std::string& text :
       {std::string("The weather in Paris is sunny."),
        std::string("Here: {\"name\": \"a\", \"parameters\": {}}"),
        std::string("{\"name\": \"a\", \"parameters\": {\"x\": }"), std::string("{\"x\": 1}")}) {
    const auto parsed = parse_tool_calls(ToolCallFormat::kLlama3, text);
    EXPECT_EQ(parsed.content, text);
    EXPECT_TRUE(parsed.calls.empty()) << text;
  }
}

// After complete calls, a call cut by max_tokens (QA: tool_choice "required" wrote two and
// began a third) or other text stays content from its start, and the calls are read.
TEST(Llama3ToolCalls, ACutCallAfterCompleteOnesStaysContent) {
  const std::string cut = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Pa";
  const auto parsed =
      parse_tool_calls(ToolCallFormat::kLlama3,
                       "{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": "
                       "{\"x\": 2}}; " +
                           cut);
  expect_calls(parsed, {{"a", "{}"}, {"b", R"({"x":2})"}});
  EXPECT_EQ(parsed.content, cut);
  const auto text = parse_tool_calls(ToolCallFormat::kLlama3,
                                     "{\"name\": \"a\", \"parameters\": {}} and then some text");
  expect_calls(text, {{"a", "{}"}});
  EXPECT_EQ(text.content, "and then some text");
  const auto not_a_call = parse_tool_calls(ToolCallFormat::kLlama3,
                                           "{\"name\": \"a\", \"parameters\": {}}; {\"x\": 1}");
  expect_calls(not_a_call, {{"a", "{}"}});
  EXPECT_EQ(not_a_call.content, "{\"x\": 1}");
}

TEST(MistralToolCalls, ReadsTheArrayAfterTheMarker) {
  const auto parsed = parse_tool_calls(
      ToolCallFormat::kMistral,
      R"([TOOL_CALLS][{"name": "get_current_weather", "arguments": {"location": "Paris, France", "format": "celsius"}}, {"name": "b", "arguments": {}}])");
  EXPECT_EQ(parsed.content, "");
  expect_calls(
      parsed,
      {{"get_current_weather", R"({"location":"Paris, France","format":"celsius"})"}, {"b", "{}"}});
}

TEST(MistralToolCalls, ReadsTheArgsFormWithContentBefore) {
  const auto parsed = parse_tool_calls(ToolCallFormat::kMistralArgs,
                                       "Checking both.[TOOL_CALLS]get_weather[ARGS]{\"city\": "
                                       "\"Paris\"}[TOOL_CALLS]get_time[ARGS]{}");
  EXPECT_EQ(parsed.content, "Checking both.");
  expect_calls(parsed, {{"get_weather", R"({"city":"Paris"})"}, {"get_time", "{}"}});
}

// A call cut short after complete ones: those are read, its text stays content.
TEST(MistralToolCalls, ACutCallAfterCompleteOnesStaysContent) {
  const std::string cut = "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Pa";
  const auto parsed = parse_tool_calls(ToolCallFormat::kMistralArgs,
                                       "[TOOL_CALLS]get_time[ARGS]{\"tz\": \"UTC\"}" + cut);
  expect_calls(parsed, {{"get_time", R"({"tz":"UTC"})"}});
  EXPECT_EQ(parsed.content, cut);
  const auto array = parse_tool_calls(ToolCallFormat::kMistral,
                                      R"(Go.[TOOL_CALLS][{"name": "f", "arguments": {}}])" + cut);
  expect_calls(array, {{"f", "{}"}});
  EXPECT_EQ(array.content, "Go." + cut);
}

TEST(MistralToolCalls, ReadsTheArrayWhenTheMarkerWasASkippedControlToken) {
  const auto parsed =
      parse_tool_calls(ToolCallFormat::kMistral, R"( [{"name": "f", "arguments": {"q": "x"}}])");
  expect_calls(parsed, {{"f", R"({"q":"x"})"}});
  const std::string not_calls = "[1, 2, 3] are the numbers.";
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::kMistral, not_calls).content, not_calls);
  const std::string broken = R"([TOOL_CALLS][{"name": "f", "arguments": {"q": )";
  const auto cut = parse_tool_calls(ToolCallFormat::kMistral, broken);
  EXPECT_EQ(cut.content, broken);
  EXPECT_TRUE(cut.calls.empty());
}

// The arguments are the text the model wrote, minified: a number beyond a double's
// precision keeps its digits (re-serialized through a double it would not), in every format.
TEST(ToolCallArguments, KeepTheNumbersTheModelWrote) {
  const std::string args = R"({"a": 123456789012345678901, "b": [0.10000000000000000001, -0],
      "s": "x \" y\u00e9", "n": {"k": 1E+2}})";
  const std::string minified =
      R"({"a":123456789012345678901,"b":[0.10000000000000000001,-0],"s":"x \" y\u00e9","n":{"k":1E+2}})";
  const std::pair<ToolCallFormat, std::string> outputs[] = {
      {ToolCallFormat::kLlama3, R"({"name": "add", "parameters": )" + args + "}"},
      {ToolCallFormat::kHermes,
       "<tool_call>\n{\"name\": \"add\", \"arguments\": " + args + "}\n</tool_call>"},
      {ToolCallFormat::kMistral, R"([TOOL_CALLS][{"name": "add", "arguments": )" + args + "}]"},
      {ToolCallFormat::kMistralArgs, "[TOOL_CALLS]add[ARGS]" + args},
      {ToolCallFormat::kJson, R"([{"arguments": )" + args + R"(, "name": "add"}])"},
  };
  for (const auto& [format, output] : outputs) {
    SCOPED_TRACE(output);
    expect_calls(parse_tool_calls(format, output), {{"add", minified}});
  }
  // Arguments sent as a JSON string: that string's text, minified.
  expect_calls(parse_tool_calls(ToolCallFormat::kHermes,
                                "<tool_call>{\"name\": \"f\", \"arguments\": "
                                "\"{\\\"id\\\": 18446744073709551617}\"}</tool_call>"),
               {{"f", R"({"id":18446744073709551617})"}});
}

TEST(JsonToolCalls, ReadsAnArrayOrOneObject) {
  expect_calls(parse_tool_calls(ToolCallFormat::kJson,
                                R"([{"name": "a", "arguments": {"x": 1}}, {"name": "b"}])"),
               {{"a", R"({"x":1})"}, {"b", "{}"}});
  expect_calls(parse_tool_calls(ToolCallFormat::kJson, R"({"name": "a", "arguments": {}})"),
               {{"a", "{}"}});
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::kJson, "[]").calls.empty());
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::kJson, R"({"name": 3})").calls.empty());
}

// An array cut by max_tokens (QA: gemma-2 under "required") gives the calls it completed;
// the element it was writing stays content. A closed array with an element that is not a
// call, or a cut one that completed none, is content whole.
TEST(JsonToolCalls, ACutArrayGivesTheCallsItCompleted) {
  const std::string cut = R"({"name": "get_weather", "arguments": { "city)";
  const auto parsed = parse_tool_calls(
      ToolCallFormat::kJson,
      R"([{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"x": 2}}, )" + cut);
  expect_calls(parsed, {{"a", "{}"}, {"b", R"({"x":2})"}});
  EXPECT_EQ(parsed.content, cut);
  const auto ended = parse_tool_calls(ToolCallFormat::kJson, R"([{"name": "a", "arguments": {}})");
  expect_calls(ended, {{"a", "{}"}});
  EXPECT_EQ(ended.content, "");
  for (const std::string& text : {std::string(R"([{"name": "a", "arguments": {}}, {"x": 1}])"),
                                  std::string("[" + cut), std::string(R"([{"x": 1}, )")}) {
    const auto whole = parse_tool_calls(ToolCallFormat::kJson, text);
    EXPECT_TRUE(whole.calls.empty()) << text;
    EXPECT_EQ(whole.content, text);
  }
}

// What a stream sends: the safe prefix as the text grows piece by piece, then at the end
// the parsed content after what was sent. It must equal the parsed content, and nothing
// of a call may have been sent as content.
std::string streamed_content(ToolCallFormat format, const std::string& text, size_t piece) {
  std::string output, sent;
  size_t released = 0;
  for (size_t at = 0; at < text.size(); at += piece) {
    output += text.substr(at, piece);
    const size_t safe = tool_call_safe_prefix(format, output, released);
    sent += output.substr(released, safe);
    released += safe;
  }
  ParsedToolCalls parsed = parse_tool_calls(format, output);
  EXPECT_LE(released, parsed.content.size()) << text;
  EXPECT_EQ(parsed.content.substr(0, released), sent) << text;
  return sent + parsed.content.substr(std::min(released, parsed.content.size()));
}

TEST(ToolCallStream, SendsTheSameContentAsTheWholeOutputWhateverThePieces) {
  const std::vector<std::pair<ToolCallFormat, std::string>> outputs = {
      {ToolCallFormat::kHermes,
       "Sure.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>"},
      {ToolCallFormat::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>"},
      {ToolCallFormat::kHermes, "a < b <tool and <tool_call> broken"},
      {ToolCallFormat::kHermes, "plain text, no calls at all  "},
      {ToolCallFormat::kLlama3, "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}"},
      {ToolCallFormat::kLlama3, "  {\"name\": \"a\", \"parameters\": {}}"},
      {ToolCallFormat::kLlama3, "No call {here}."},
      {ToolCallFormat::kLlama3, "{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"par"},
      {ToolCallFormat::kMistral, "Hi [TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}]"},
      {ToolCallFormat::kMistralArgs, "[TOOL_CALLS]a[ARGS]{\"x\": 1}"},
      {ToolCallFormat::kJson, "[{\"name\": \"a\", \"arguments\": {}}]"},
      {ToolCallFormat::kJson, "Just words."},
      {ToolCallFormat::kJson, "[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"argu"},
  };
  for (const auto& [format, text] : outputs) {
    const std::string whole = parse_tool_calls(format, text).content;
    for (size_t piece : {1u, 2u, 3u, 7u, 1000u}) {
      EXPECT_EQ(streamed_content(format, text, piece), whole) << text << " / " << piece;
    }
  }
}

// Qwen3-Coder's XML: each value is text, read back by its parameter's schema type as vLLM's
// qwen3_coder parser reads it; a value that is not of its type, or of a parameter the tools
// do not type, stays a string (a string's "None" too: only a non-string's null is null).
std::vector<ToolFunction> qwen_tools() {
  ToolFunction f;
  f.name = "plan";
  f.parameters = nlohmann::ordered_json::parse(R"({"type": "object", "properties": {
      "city": {"type": "string"}, "days": {"type": "integer"}, "scale": {"type": "number"},
      "metric": {"type": "boolean"}, "filters": {"type": "object"},
      "hours": {"type": ["array", "null"]}, "note": {"type": ["null", "string"]}}})");
  return {f};
}

TEST(QwenXmlToolCalls, ReadsEachValueByItsParametersType) {
  const auto parsed = parse_tool_calls(
      ToolCallFormat::kQwenXml,
      "Let me plan.\n<tool_call>\n<function=plan>\n<parameter=city>\n42\n</parameter>\n"
      "<parameter=days>\n12345678901234567890\n</parameter>\n<parameter=scale>\n1.50\n"
      "</parameter>\n<parameter=metric>\nTrue\n</parameter>\n<parameter=filters>\n"
      "{\"rain\": false}\n</parameter>\n<parameter=hours>\n[6, 12]\n</parameter>\n"
      "<parameter=note>\nNone\n</parameter>\n<parameter=extra>\n7\n</parameter>\n"
      "</function>\n</tool_call>",
      qwen_tools());
  EXPECT_EQ(parsed.content, "Let me plan.\n");  // as Hermes keeps the text before
  expect_calls(parsed, {{"plan", R"({"city":"42","days":12345678901234567890,"scale":1.50,)"
                                 R"("metric":true,"filters":{"rain":false},"hours":[6,12],)"
                                 R"("note":"None","extra":"7"})"}});
}

TEST(QwenXmlToolCalls, AValueNotOfItsTypeStaysTextAndInnerLinesAreKept) {
  const auto parsed = parse_tool_calls(ToolCallFormat::kQwenXml,
                                       "<tool_call>\n<function=plan>\n<parameter=days>\nthree\n"
                                       "</parameter>\n<parameter=city>\n\"New\"\nYork\n"
                                       "</parameter>\n<parameter=metric>\nyes\n</parameter>\n"
                                       "<parameter=scale>\nnull\n</parameter>\n"
                                       "</function>\n</tool_call>",
                                       qwen_tools());
  expect_calls(
      parsed, {{"plan", R"({"days":"three","city":"\"New\"\nYork","metric":"yes","scale":null})"}});
}

// Two calls, the second without its closing tag at the very end; a call cut before
// </function> does not parse and stays content, as does a block that is not a function.
TEST(QwenXmlToolCalls, ReadsCallsAndKeepsWhatDoesNotParseAsContent) {
  const std::string first = "<tool_call>\n<function=a>\n</function>\n</tool_call>\n";
  auto parsed = parse_tool_calls(
      ToolCallFormat::kQwenXml,
      first + "<tool_call>\n<function=b>\n<parameter=x>\n1\n</parameter>\n</function>\n");
  expect_calls(parsed, {{"a", "{}"}, {"b", R"({"x":"1"})"}});
  EXPECT_EQ(parsed.content, "");
  const std::string cut = "<tool_call>\n<function=b>\n<parameter=x>\n1\n</parameter>\n";
  parsed = parse_tool_calls(ToolCallFormat::kQwenXml, first + cut);
  expect_calls(parsed, {{"a", "{}"}});
  EXPECT_EQ(parsed.content, cut);
  parsed =
      parse_tool_calls(ToolCallFormat::kQwenXml, "<tool_call>\n{\"name\": \"a\"}\n</tool_call>");
  EXPECT_TRUE(parsed.calls.empty());
  EXPECT_EQ(parsed.content, "<tool_call>\n{\"name\": \"a\"}\n</tool_call>");
}

// A value whose close tag is missing ends at the next parameter (as vLLM's pattern ends it);
// bytes that are not UTF-8 are replaced, never thrown on; a name no request could give
// (space, a tag) is not a call.
TEST(QwenXmlToolCalls, OddTextEndsValuesAsVllmDoesAndNeverThrows) {
  auto parsed = parse_tool_calls(ToolCallFormat::kQwenXml,
                                 "<tool_call>\n<function=plan>\n<parameter=city>\nRome\n"
                                 "<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>",
                                 qwen_tools());
  expect_calls(parsed, {{"plan", R"({"city":"Rome","days":2})"}});
  parsed = parse_tool_calls(ToolCallFormat::kQwenXml,
                            "<tool_call>\n<function=plan>\n<parameter=c\xff>\n\xfe\n</parameter>\n"
                            "</function>\n</tool_call>");
  expect_calls(parsed, {{"plan", "{\"c\xef\xbf\xbd\":\"\xef\xbf\xbd\"}"}});
  for (const char* name : {"my plan", "a<b", ""}) {
    const std::string block =
        std::string("<tool_call>\n<function=") + name + ">\n</function>\n</tool_call>";
    parsed = parse_tool_calls(ToolCallFormat::kQwenXml, block);
    EXPECT_TRUE(parsed.calls.empty()) << name;
    EXPECT_EQ(parsed.content, block);
  }
}

// A key given twice keeps its first place and its last value, as the dict vLLM builds does
// (the APIs showed duplicate keys differently, QA); literals are read in any case; a block
// of many parameters is read whole (in one pass: it was quadratic).
TEST(QwenXmlToolCalls, RepeatedKeysKeepTheLastValueAndLiteralsAnyCase) {
  auto parsed = parse_tool_calls(ToolCallFormat::kQwenXml,
                                 "<tool_call>\n<function=plan>\n<parameter=days>\n1\n</parameter>\n"
                                 "<parameter=metric>\n TRUE \n</parameter>\n<parameter=days>\n"
                                 "2\n</parameter>\n<parameter=hours>\nNULL\n</parameter>\n"
                                 "</function>\n</tool_call>",
                                 qwen_tools());
  expect_calls(parsed, {{"plan", R"({"days":2,"metric":true,"hours":null})"}});
  std::string many = "<tool_call>\n<function=f>\n";
  std::string expected = "{";
  for (int i = 0; i < 20000; ++i) {
    many += "<parameter=p" + std::to_string(i) + ">\nv\n</parameter>\n";
    expected += (i ? ",\"p" : "\"p") + std::to_string(i) + "\":\"v\"";
  }
  parsed = parse_tool_calls(ToolCallFormat::kQwenXml, many + "</function>\n</tool_call>");
  expect_calls(parsed, {{"f", expected + "}"}});
}

// GLM 4.5+: strings as they are, everything else as JSON; an untyped parameter's JSON is
// read as JSON. Space between the tags (GLM 4.5's newlines) and around a value (vLLM strips
// it) is not the value; a repeated key keeps its first place and its last value.
TEST(GlmXmlToolCalls, ReadsStringsAsTextAndOtherValuesAsJson) {
  const auto parsed = parse_tool_calls(
      ToolCallFormat::kGlmXml,
      "Checking.<tool_call>plan\n<arg_key>city</arg_key>\n<arg_value>[Paris]</arg_value>\n"
      "<arg_key>days</arg_key><arg_value>3</arg_value><arg_key>metric</arg_key>"
      "<arg_value>false</arg_value><arg_key>filters</arg_key><arg_value>{\"rain\": true}"
      "</arg_value><arg_key>extra</arg_key><arg_value>[1, 2]</arg_value><arg_key>word"
      "</arg_key><arg_value> hi there\n</arg_value><arg_key>days</arg_key><arg_value>4"
      "</arg_value></tool_call><tool_call>plan</tool_call>",
      qwen_tools());
  EXPECT_EQ(parsed.content, "Checking.");
  expect_calls(parsed, {{"plan", R"({"city":"[Paris]","days":4,"metric":false,)"
                                 R"("filters":{"rain":true},"extra":[1,2],"word":"hi there"})"},
                        {"plan", "{}"}});
  // A value whose tag does not close stays content, and so does Qwen3-Coder's form.
  const std::string cut = "<tool_call>plan<arg_key>days</arg_key><arg_value>3</tool_call>";
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::kGlmXml, cut, qwen_tools()).calls.empty());
  EXPECT_EQ(detect_tool_call_format("<tool_call>{{ name }}<arg_key>{{ k }}</arg_key><arg_value>"),
            ToolCallFormat::kGlmXml);
  EXPECT_EQ(framed_call_format(ToolCallFormat::kGlmXml), ToolCallFormat::kJson);
}

// Where a grammar writes the calls, an XML format's are the plain JSON array.
TEST(QwenXmlToolCalls, FramedCallsAreThePlainJsonArray) {
  EXPECT_EQ(framed_call_format(ToolCallFormat::kQwenXml), ToolCallFormat::kJson);
  EXPECT_EQ(framed_call_format(ToolCallFormat::kHermes), ToolCallFormat::kHermes);
  EXPECT_EQ(tool_call_safe_prefix(ToolCallFormat::kQwenXml, "Sure <tool_c", 0), 4u);
  EXPECT_EQ(tool_call_safe_prefix(ToolCallFormat::kQwenXml, "[1, 2]", 0), 6u);
}

TEST(ToolCallStream, HoldsOnlyWhatMayBeginACall) {
  EXPECT_EQ(tool_call_safe_prefix(ToolCallFormat::kHermes, "Hello <tool", 0), 5u);
  EXPECT_EQ(tool_call_safe_prefix(ToolCallFormat::kHermes, "Hello <b>", 0), 9u);
  EXPECT_EQ(tool_call_safe_prefix(ToolCallFormat::kHermes, "Hi <tool_call>{", 0), 2u);
  EXPECT_EQ(tool_call_safe_prefix(ToolCallFormat::kLlama3, " {\"name\"", 0), 0u);
  EXPECT_EQ(tool_call_safe_prefix(ToolCallFormat::kLlama3, "Sunny.", 0), 6u);
  EXPECT_EQ(tool_call_safe_prefix(ToolCallFormat::kJson, "Sunny.", 3), 3u);
}

// Mistral's [TOOL_CALLS] and Llama's <|python_tag|> are control tokens: their text must be
// kept in a tool-parsing request's output (skip_special_tokens off), or the Mistral [ARGS]
// form could not be read at all. Hermes's <tool_call> and the plain JSON have none.
TEST(ToolCallFormat, MarkersThatAreControlTokensAreKeptOnlyForTheirFamilies) {
  EXPECT_TRUE(tool_call_marker_is_control_token(ToolCallFormat::kMistral));
  EXPECT_TRUE(tool_call_marker_is_control_token(ToolCallFormat::kMistralArgs));
  EXPECT_TRUE(tool_call_marker_is_control_token(ToolCallFormat::kLlama3));
  EXPECT_FALSE(tool_call_marker_is_control_token(ToolCallFormat::kHermes));
  EXPECT_FALSE(tool_call_marker_is_control_token(ToolCallFormat::kJson));
  // With the marker kept, the [ARGS] form is read.
  const ParsedToolCalls parsed =
      parse_tool_calls(ToolCallFormat::kMistralArgs, "[TOOL_CALLS]add[ARGS]{\"a\": 1}");
  ASSERT_EQ(parsed.calls.size(), 1u);
  EXPECT_EQ(parsed.calls[0].name, "add");
}

TEST(ToolCallFormat, IsDetectedFromTheTemplateSource) {
  EXPECT_EQ(detect_tool_call_format("{{ '<tool_call>\\n' }}{{ tool_call | tojson }}"),
            ToolCallFormat::kHermes);
  EXPECT_EQ(detect_tool_call_format("<tool_call>\\n<function={{ name }}>"), ToolCallFormat::kJson);
  EXPECT_EQ(detect_tool_call_format("<tool_call>\\n<function={{ name }}>\\n<parameter={{ p }}>"),
            ToolCallFormat::kQwenXml);
  EXPECT_EQ(detect_tool_call_format("[TOOL_CALLS]{{ calls|tojson }}"), ToolCallFormat::kMistral);
  EXPECT_EQ(detect_tool_call_format("[TOOL_CALLS]{{ name }}[ARGS]{{ args }}"),
            ToolCallFormat::kMistralArgs);
  EXPECT_EQ(detect_tool_call_format("<|python_tag|>"), ToolCallFormat::kLlama3);
  EXPECT_EQ(detect_tool_call_format("{{ messages }}"), ToolCallFormat::kJson);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
