// The reasoning split over HTTP against a real `tandem serve` (tiny random-weight model,
// chat templates from ../shared): for the same seed and request, reasoning_format "none"
// gives the raw output T, and "deepseek" gives (reasoning_content, content) as this file's
// own reference of the rules in protocol/reasoning.h splits T, whole and streamed (all
// reasoning deltas before any content delta), where the template's generation prompt opens
// the reasoning (DeepSeek-R1's, with enable_thinking) and where it does not (Qwen3's);
// /v1/responses' reasoning item and message are chat's reasoning and content, streamed and
// whole; `--reasoning-format deepseek` makes the split the default; logprobs cover every
// generated token, the reasoning's included; /v1/completions refuses the split.
//
// The model is random and its tokens are bytes, so no bias alone makes it write a marker:
// a grammar lets it write only blanks, "a" and whole markers, and logit_bias makes the
// markers' tokens and the fillers the likely ones among them (their ids read through
// /tokenize). The seeds' coverage is asserted: at least one answer closes its reasoning and
// has content after it, and at least one is cut by max_tokens inside its reasoning.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/server/responses_http_support.h"
#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using namespace responses_http;  // NOLINT(google-build-using-namespace): the tests' own helpers

constexpr std::string_view kOpen = kThinkOpen;
constexpr std::string_view kClose = kThinkClose;
constexpr const char* kChatRoute = "/v1/chat/completions";

// DeepSeek-R1's generation prompt ends with "<think>\n" when enable_thinking is set (and
// closes it at once otherwise); Qwen3's ends with the assistant's header.
const std::filesystem::path kOpeningTemplate =
    "chat-templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja";
const std::filesystem::path kPlainTemplate = "chat-templates/Qwen-Qwen3-0.6B.jinja";

// ---------------------------------------------------------------------------------------
// The reference: protocol/reasoning.h's rules, written out plainly.

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && is_blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_blank(text.back())) text.remove_suffix(1);
  return text;
}

struct Split {
  std::string reasoning;
  std::string content;
  bool entered = false;  // the output was inside a reasoning at some point
  bool closed = false;   // ... and a close marker ended it
};

Split reference_split(std::string_view t, bool opened) {
  Split split;
  std::string_view rest = t;
  if (!opened) {
    size_t i = 0;
    while (i < t.size() && is_blank(t[i])) ++i;
    if (!t.substr(i).starts_with(kOpen)) {
      split.content = std::string(t);  // no reasoning: T unchanged
      return split;
    }
    rest = t.substr(i + kOpen.size());
  }
  split.entered = true;
  const size_t close = rest.find(kClose);
  if (close == std::string_view::npos) {  // cut short while thinking: all reasoning
    split.reasoning = std::string(trimmed(rest));
    return split;
  }
  split.closed = true;
  split.reasoning = std::string(trimmed(rest.substr(0, close)));
  std::string_view content = rest.substr(close + kClose.size());
  while (!content.empty() && is_blank(content.front())) content.remove_prefix(1);
  split.content = std::string(content);
  return split;
}

TEST(ReasoningHttpReference, SplitsAsTheRulesSay) {  // the oracle itself, on known texts
  const auto check = [](std::string_view t, bool opened, std::string_view reasoning,
                        std::string_view content) {
    const Split split = reference_split(t, opened);
    EXPECT_EQ(split.reasoning, reasoning) << t;
    EXPECT_EQ(split.content, content) << t;
  };
  check(" \n<think> a b \n</think>\n\t c ", false, "a b", "c ");
  check("x<think>a</think>b", false, "", "x<think>a</think>b");
  check("  <thi", false, "", "  <thi");
  check("\n a </think> b </think>", true, "a", "b </think>");
  check(" a <think> b\t", true, "a <think> b", "");
  check("</think> \n", true, "", "");
}

// ---------------------------------------------------------------------------------------
// Servers.

std::unique_ptr<ServerProcess> start_with(const std::filesystem::path& chat_template,
                                          std::vector<std::string> more = {}) {
  const auto shared = shared_dir();
  if (!shared || !std::filesystem::is_regular_file(*shared / chat_template)) return nullptr;
  std::vector<std::string> args = {"--chat-template", (*shared / chat_template).string(),
                                   "--kv-tokens", "65536"};
  args.insert(args.end(), more.begin(), more.end());
  return std::make_unique<ServerProcess>(tiny_model(), args);
}

ServerProcess* opening_server() {  // DeepSeek-R1's template, no split unless asked
  static const std::unique_ptr<ServerProcess> server = start_with(kOpeningTemplate);
  return server.get();
}

ServerProcess* plain_server() {  // Qwen3's template, no split unless asked
  static const std::unique_ptr<ServerProcess> server = start_with(kPlainTemplate);
  return server.get();
}

ServerProcess* splitting_server() {  // DeepSeek-R1's template, --reasoning-format deepseek
  static const std::unique_ptr<ServerProcess> server =
      start_with(kOpeningTemplate, {"--reasoning-format", "deepseek"});
  return server.get();
}

#define REQUIRE_SERVER(server)                                                        \
  do {                                                                                \
    if ((server) == nullptr)                                                          \
      GTEST_SKIP() << "../shared/chat-templates is absent: no thinking model's chat " \
                      "template to serve these tests";                                \
  } while (0)

// ---------------------------------------------------------------------------------------
// Requests.

// A chat request whose answer is steered; opened: the template opens the reasoning.
json chat_request(uint16_t port, uint64_t seed, int max_tokens, bool opened) {
  json body = {{"messages", {{{"role", "user"}, {"content", "Think, then answer."}}}},
               {"seed", seed},
               {"max_tokens", max_tokens},
               {"guided_grammar", steering_grammar()},
               {"logit_bias", steering_bias(port)}};
  if (opened) body["chat_template_kwargs"] = {{"enable_thinking", true}};
  return body;
}

json with_format(json body, const char* format) {
  body["reasoning_format"] = format;
  return body;
}

// What the request's rendered prompt is (checked so that "opened" means what it says).
std::string prompt_of(uint16_t port, const json& body) {
  const HttpResult rendered = fetch(port, "POST", "/apply-template", body.dump());
  EXPECT_EQ(rendered.status, 200) << rendered.body;
  return rendered.status == 200 ? rendered.json().value("prompt", "") : "";
}

bool prompt_opens(std::string_view prompt) { return trimmed(prompt).ends_with(kOpen); }

struct Answer {
  std::optional<std::string> reasoning;  // reasoning_content; nullopt when absent
  std::string content;
  std::string finish;
  json logprobs = json::array();  // logprobs.content, when asked for
  json usage;
};

Answer whole_chat(uint16_t port, const json& body) {
  const json answer = post_json(port, kChatRoute, body);
  Answer out;
  if (!answer.contains("choices")) return out;
  const json& choice = answer["choices"][0];
  const json& message = choice["message"];
  if (message.contains("reasoning_content")) {
    EXPECT_TRUE(message["reasoning_content"].is_string()) << answer.dump();
    out.reasoning = message["reasoning_content"].get<std::string>();
    EXPECT_FALSE(out.reasoning->empty()) << "an empty reasoning is omitted: " << answer.dump();
  }
  out.content = message.value("content", "");
  out.finish = choice.value("finish_reason", "");
  if (choice["logprobs"].is_object()) out.logprobs = choice["logprobs"]["content"];
  out.usage = answer["usage"];
  return out;
}

// The stream's deltas laid end to end, after checking that no reasoning comes after content.
Answer streamed_chat(uint16_t port, json body) {
  body["stream"] = true;
  const HttpResult sse = fetch(port, "POST", kChatRoute, body.dump());
  EXPECT_EQ(sse.status, 200) << sse.body;
  Answer out;
  bool any_reasoning = false;
  bool content_seen = false;
  for (const std::string& data : sse_data(sse.body)) {
    if (data == "[DONE]") continue;
    const json chunk = json::parse(data);
    if (chunk["choices"].empty()) continue;
    const json& choice = chunk["choices"][0];
    if (choice["finish_reason"].is_string()) out.finish = choice["finish_reason"];
    if (choice["logprobs"].is_object()) {
      for (const json& entry : choice["logprobs"]["content"]) out.logprobs.push_back(entry);
    }
    const json& delta = choice["delta"];
    if (delta.contains("reasoning_content")) {
      const std::string piece = delta["reasoning_content"];
      EXPECT_FALSE(piece.empty()) << data;
      EXPECT_FALSE(content_seen) << "reasoning after content: " << data;
      EXPECT_FALSE(delta.contains("content")) << data;
      any_reasoning = true;
      out.reasoning = out.reasoning.value_or("") + piece;
    }
    if (delta.contains("content")) {
      const std::string piece = delta["content"];
      content_seen = content_seen || !piece.empty();
      out.content += piece;
    }
  }
  if (!any_reasoning) out.reasoning.reset();
  return out;
}

std::optional<std::string> as_optional(const std::string& reasoning) {
  return reasoning.empty() ? std::nullopt : std::optional<std::string>(reasoning);
}

std::string printable(std::string_view text) { return json(std::string(text)).dump(); }

// For each seed and limit: "none" gives T whole; "deepseek" gives reference(T), whole and
// streamed. Asserts the coverage over the seeds.
void check_splits(uint16_t port, bool opened) {
  int closed_with_content = 0;
  int cut_while_thinking = 0;
  int without_reasoning = 0;
  for (int max_tokens : {10, 40}) {
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      const json body = chat_request(port, seed, max_tokens, opened);
      const Answer raw = whole_chat(port, with_format(body, "none"));
      const std::string& t = raw.content;
      SCOPED_TRACE("seed " + std::to_string(seed) + ", max_tokens " + std::to_string(max_tokens) +
                   ", T = " + printable(t));
      EXPECT_FALSE(raw.reasoning.has_value()) << "\"none\" leaves the reasoning in content";
      const Split expected = reference_split(t, opened);

      const Answer whole = whole_chat(port, with_format(body, "deepseek"));
      EXPECT_EQ(whole.reasoning, as_optional(expected.reasoning));
      EXPECT_EQ(whole.content, expected.content);
      EXPECT_EQ(whole.finish, raw.finish);

      const Answer streamed = streamed_chat(port, with_format(body, "deepseek"));
      EXPECT_EQ(streamed.reasoning, as_optional(expected.reasoning));
      EXPECT_EQ(streamed.content, expected.content);
      EXPECT_EQ(streamed.finish, raw.finish);

      closed_with_content += expected.closed && !expected.content.empty();
      cut_while_thinking += expected.entered && !expected.closed && !expected.reasoning.empty() &&
                            raw.finish == "length";
      without_reasoning += !expected.entered;
    }
  }
  EXPECT_GE(closed_with_content, 1) << "no seed closed its reasoning and answered after it";
  EXPECT_GE(cut_while_thinking, 1) << "no seed was cut by max_tokens while thinking";
  if (!opened) {
    EXPECT_GE(without_reasoning, 1) << "no seed answered without reasoning";
  }
}

// ---------------------------------------------------------------------------------------
// Chat.

TEST(ReasoningHttp, APromptThatOpensTheReasoningSplitsAtTheFirstCloseMarker) {
  REQUIRE_SERVER(opening_server());
  const uint16_t port = opening_server()->port();
  const std::string prompt = prompt_of(port, chat_request(port, 1, 10, true));
  ASSERT_TRUE(prompt.ends_with("<think>\n")) << printable(prompt);
  check_splits(port, true);
}

TEST(ReasoningHttp, OtherwiseAnAnswerIsReasoningOnlyWhenItBeginsWithTheOpenMarker) {
  REQUIRE_SERVER(plain_server());
  const uint16_t port = plain_server()->port();
  const std::string prompt = prompt_of(port, chat_request(port, 1, 10, false));
  ASSERT_FALSE(prompt.empty());
  ASSERT_FALSE(prompt_opens(prompt)) << printable(prompt);
  check_splits(port, false);
}

TEST(ReasoningHttp, DeepSeeksPromptWithoutThinkingClosesTheReasoningItself) {
  // Without enable_thinking the template writes "<think>\n</think>": the prompt does not
  // leave the model inside its reasoning, so the answer is read as Qwen3's is.
  REQUIRE_SERVER(opening_server());
  const uint16_t port = opening_server()->port();
  const std::string prompt = prompt_of(port, chat_request(port, 1, 10, false));
  ASSERT_FALSE(prompt.empty());
  ASSERT_FALSE(prompt_opens(prompt)) << printable(prompt);
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const json body = chat_request(port, seed, 24, false);
    const std::string t = whole_chat(port, body).content;
    SCOPED_TRACE("seed " + std::to_string(seed) + ", T = " + printable(t));
    const Split expected = reference_split(t, false);
    const Answer whole = whole_chat(port, with_format(body, "deepseek"));
    EXPECT_EQ(whole.reasoning, as_optional(expected.reasoning));
    EXPECT_EQ(whole.content, expected.content);
  }
}

TEST(ReasoningHttp, LogprobsCoverEveryGeneratedTokenTheReasoningsIncluded) {
  REQUIRE_SERVER(opening_server());
  const uint16_t port = opening_server()->port();
  int with_both = 0;
  for (uint64_t seed : {2u, 4u, 6u, 8u}) {
    json body = chat_request(port, seed, 24, true);
    const std::string t = whole_chat(port, body).content;
    SCOPED_TRACE("seed " + std::to_string(seed) + ", T = " + printable(t));
    body["logprobs"] = true;
    body["top_logprobs"] = 1;
    body["reasoning_format"] = "deepseek";
    const Answer whole = whole_chat(port, body);
    const Split expected = reference_split(t, true);
    EXPECT_EQ(whole.reasoning, as_optional(expected.reasoning));
    EXPECT_EQ(whole.content, expected.content);
    ASSERT_TRUE(whole.logprobs.is_array());
    EXPECT_EQ(whole.logprobs.size(), whole.usage.value("completion_tokens", size_t{0}));
    std::string bytes;
    for (const json& entry : whole.logprobs) {
      EXPECT_EQ(entry["top_logprobs"].size(), 1u) << entry.dump();
      for (int b : entry["bytes"]) bytes += static_cast<char>(b);
    }
    // Cut by the limit, the tokens are the output's (an end of turn adds its own token).
    if (whole.finish == "length") {
      EXPECT_EQ(bytes, t) << "the tokens laid end to end";
    }
    with_both += whole.reasoning.has_value() && !whole.content.empty();

    const Answer streamed = streamed_chat(port, body);
    EXPECT_EQ(streamed.reasoning, whole.reasoning);
    EXPECT_EQ(streamed.content, whole.content);
    EXPECT_EQ(streamed.logprobs, whole.logprobs) << "the chunks' logprobs laid end to end";
  }
  EXPECT_GE(with_both, 1) << "no seed had both reasoning and content";
}

TEST(ReasoningHttp, TheServerFlagMakesTheSplitTheDefault) {
  REQUIRE_SERVER(splitting_server());
  REQUIRE_SERVER(opening_server());
  const uint16_t port = splitting_server()->port();
  EXPECT_NE(splitting_server()->ready_line().find("reasoning: <think>...</think> split off"),
            std::string::npos)
      << splitting_server()->ready_line();
  EXPECT_NE(opening_server()->ready_line().find("reasoning: <think>...</think> kept in content"),
            std::string::npos)
      << opening_server()->ready_line();
  int split = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const json body = chat_request(port, seed, 24, true);
    const Answer raw = whole_chat(port, with_format(body, "none"));
    SCOPED_TRACE("seed " + std::to_string(seed) + ", T = " + printable(raw.content));
    EXPECT_FALSE(raw.reasoning.has_value());
    const Split expected = reference_split(raw.content, true);
    for (const Answer& answer : {whole_chat(port, body), streamed_chat(port, body),
                                 whole_chat(port, with_format(body, "auto")),
                                 whole_chat(port, with_format(body, "deepseek"))}) {
      EXPECT_EQ(answer.reasoning, as_optional(expected.reasoning));
      EXPECT_EQ(answer.content, expected.content);
    }
    split += !expected.reasoning.empty();
    // Without the flag the same request keeps it in content.
    const uint16_t other = opening_server()->port();
    const Answer unsplit = whole_chat(other, chat_request(other, seed, 24, true));
    EXPECT_FALSE(unsplit.reasoning.has_value());
    EXPECT_EQ(unsplit.content, raw.content);
  }
  EXPECT_GE(split, 1);
  // /v1/responses too: a reasoning item without being asked for one.
  const json response = post_json(port, kRoute,
                                  {{"input", "Think, then answer."},
                                   {"seed", 1},
                                   {"max_output_tokens", 6},
                                   {"chat_template_kwargs", {{"enable_thinking", true}}}});
  ASSERT_TRUE(response.contains("output")) << response.dump();
  ASSERT_GE(response["output"].size(), 1u) << response.dump();
  EXPECT_EQ(response["output"][0]["type"], "reasoning") << response.dump();
}

// ---------------------------------------------------------------------------------------
// /v1/responses.

// The same steering grammar as chat's: chat's extensions reach the chat request a
// Responses request amounts to.
json responses_request(uint16_t port, uint64_t seed, int max_tokens) {
  return {
      {"input", "Think, then answer."},    {"seed", seed},
      {"max_output_tokens", max_tokens},   {"guided_grammar", steering_grammar()},
      {"logit_bias", steering_bias(port)}, {"chat_template_kwargs", {{"enable_thinking", true}}},
      {"reasoning_format", "deepseek"}};
}

json chat_of(const json& responses) {
  return {{"messages", {{{"role", "user"}, {"content", responses["input"]}}}},
          {"seed", responses["seed"]},
          {"max_tokens", responses["max_output_tokens"]},
          {"guided_grammar", responses["guided_grammar"]},
          {"logit_bias", responses["logit_bias"]},
          {"chat_template_kwargs", responses["chat_template_kwargs"]},
          {"reasoning_format", "deepseek"}};
}

struct ItemsStream {
  std::string reasoning;           // reasoning_text.delta laid end to end
  std::string text;                // output_text.delta laid end to end
  std::vector<std::string> added;  // the items' types, as output_item.added opened them
  json final_response;
};

ItemsStream read_items_stream(const std::vector<Event>& events) {
  ItemsStream out;
  bool text_seen = false;
  std::optional<std::string> reasoning_done;
  for (const Event& event : events) {
    if (event.type == "response.reasoning_text.delta") {
      EXPECT_FALSE(text_seen) << "reasoning after text: " << event.data.dump();
      EXPECT_EQ(event.data["output_index"], 0) << event.data.dump();
      out.reasoning += event.data["delta"].get<std::string>();
    } else if (event.type == "response.reasoning_text.done") {
      reasoning_done = event.data["text"].get<std::string>();
    } else if (event.type == "response.output_item.added") {
      EXPECT_EQ(event.data["output_index"], out.added.size()) << event.data.dump();
      out.added.push_back(event.data["item"]["type"]);
    } else if (event.type == "response.output_text.delta") {
      text_seen = true;
      out.text += event.data["delta"].get<std::string>();
    }
  }
  if (!out.reasoning.empty()) {
    EXPECT_EQ(reasoning_done, out.reasoning) << "reasoning_text.done's text";
  } else {
    EXPECT_FALSE(reasoning_done.has_value());
  }
  EXPECT_FALSE(events.empty());
  if (!events.empty()) out.final_response = events.back().data["response"];
  return out;
}

TEST(ReasoningHttp, ResponsesGiveChatsReasoningAsAReasoningItemBeforeTheMessage) {
  REQUIRE_SERVER(opening_server());
  const uint16_t port = opening_server()->port();
  int with_both = 0;
  int reasoning_only = 0;
  for (const auto& [seed, max_tokens] : std::vector<std::pair<uint64_t, int>>{
           {1, 60}, {2, 60}, {3, 60}, {4, 60}, {5, 60}, {1, 4}, {2, 4}}) {
    SCOPED_TRACE("seed " + std::to_string(seed) + ", max_output_tokens " +
                 std::to_string(max_tokens));
    const json body = responses_request(port, seed, max_tokens);
    const Answer chat = whole_chat(port, chat_of(body));
    const bool cut = chat.finish == "length";
    const std::string reasoning = chat.reasoning.value_or("");

    const json whole = post_json(port, kRoute, body);
    ASSERT_TRUE(whole.contains("output")) << whole.dump();
    EXPECT_EQ(whole["status"], cut ? "incomplete" : "completed") << whole.dump();
    const json& output = whole["output"];
    std::vector<std::string> types;
    for (const json& item : output) types.push_back(item["type"]);
    std::vector<std::string> expected_types;
    if (!reasoning.empty()) expected_types.push_back("reasoning");
    if (!chat.content.empty() || reasoning.empty()) expected_types.push_back("message");
    ASSERT_EQ(types, expected_types) << whole.dump();
    if (!reasoning.empty()) {
      const json& item = output[0];
      EXPECT_EQ(item["content"], json::array({{{"type", "reasoning_text"}, {"text", reasoning}}}))
          << item.dump();
      EXPECT_TRUE(item["id"].get<std::string>().starts_with("rs_")) << item.dump();
      // Cut short while thinking, the reasoning is incomplete; ended by its marker, complete.
      EXPECT_EQ(item["status"], cut && chat.content.empty() ? "incomplete" : "completed")
          << item.dump();
    }
    if (!chat.content.empty()) {
      EXPECT_EQ(output.back()["content"][0]["text"], chat.content) << whole.dump();
    }
    with_both += !reasoning.empty() && !chat.content.empty();
    reasoning_only += !reasoning.empty() && chat.content.empty() && cut;
    // The reasoning's tokens, counted alike on both endpoints: all of them for an answer cut
    // while thinking (the prompt opened the reasoning); blanks before the close marker count
    // though the reasoning they make is empty.
    const json& details = chat.usage["completion_tokens_details"];
    ASSERT_TRUE(details.is_object()) << chat.usage.dump();
    const int64_t thought = details["reasoning_tokens"], out = chat.usage["completion_tokens"];
    EXPECT_EQ(whole["usage"]["output_tokens_details"]["reasoning_tokens"], thought);
    if (!reasoning.empty()) {
      EXPECT_GT(thought, 0) << chat.usage.dump();
    }
    EXPECT_LE(thought, out);
    if (cut && chat.content.empty()) {
      EXPECT_EQ(thought, out) << chat.usage.dump();
    }
    if (!chat.content.empty()) {
      EXPECT_LT(thought, out) << chat.usage.dump();
    }

    const ItemsStream streamed = read_items_stream(events_of(stream(port, body)));
    EXPECT_EQ(streamed.reasoning, reasoning);
    EXPECT_EQ(streamed.text, chat.content);
    EXPECT_EQ(streamed.added, expected_types);
    EXPECT_EQ(streamed.final_response["status"], whole["status"]);
    EXPECT_EQ(without_ids(streamed.final_response["output"]), without_ids(whole["output"]));
    EXPECT_EQ(streamed.final_response["usage"], whole["usage"]);
  }
  EXPECT_GE(with_both, 1) << "no seed had both a reasoning item and a message";
  EXPECT_GE(reasoning_only, 1) << "no seed was cut while thinking";
}

// ---------------------------------------------------------------------------------------
// Refusals.

// A JSON answer's grammar (a schema, a required call) writes the answer from its first
// token: after a prompt that opened the reasoning, the answer is content, not a reasoning
// that never closed (the JSON and the call would be lost in reasoning_content). A client's
// own grammar is read as any output (the tests above steer with one).
TEST(ReasoningHttp, AJsonAnswersGrammarWritesContentAfterAnOpenedPrompt) {
  REQUIRE_SERVER(splitting_server());
  const uint16_t port = splitting_server()->port();
  const json object_schema = {{"type", "object"},
                              {"properties", {{"a", {{"type", "integer"}}}}},
                              {"required", {"a"}},
                              {"additionalProperties", false}};
  const json chat = {
      {"messages", {{{"role", "user"}, {"content", "Answer in JSON."}}}},
      {"max_tokens", 40},
      {"seed", 2},
      {"chat_template_kwargs", {{"enable_thinking", true}}},
      {"response_format",
       {{"type", "json_schema"}, {"json_schema", {{"name", "o"}, {"schema", object_schema}}}}}};
  ASSERT_TRUE(prompt_opens(prompt_of(port, chat)));
  for (const bool stream : {false, true}) {
    const Answer answer = stream ? streamed_chat(port, chat) : whole_chat(port, chat);
    EXPECT_FALSE(answer.reasoning.has_value()) << *answer.reasoning;
    const json parsed = json::parse(answer.content, nullptr, false);
    EXPECT_TRUE(parsed.is_object() && parsed["a"].is_number_integer()) << answer.content;
  }
  // The Responses form: a named call is a function_call item, not reasoning text.
  const json call = {
      {"input", "Add."},
      {"max_output_tokens", 60},
      {"seed", 2},
      {"chat_template_kwargs", {{"enable_thinking", true}}},
      {"tools", {{{"type", "function"}, {"name", "add"}, {"parameters", object_schema}}}},
      {"tool_choice", {{"type", "function"}, {"name", "add"}}},
      {"text", {{"format", {{"type", "json_schema"}, {"name", "o"}, {"schema", object_schema}}}}}};
  const json response = post_json(port, "/v1/responses", call);
  ASSERT_TRUE(response.contains("output")) << response.dump();
  ASSERT_EQ(response["output"].size(), 1u) << response.dump();
  EXPECT_EQ(response["output"][0]["type"], "function_call") << response.dump();
  EXPECT_EQ(response["output"][0]["name"], "add");
  EXPECT_TRUE(
      json::parse(response["output"][0]["arguments"].get<std::string>())["a"].is_number_integer());
}

TEST(ReasoningHttp, CompletionsRefuseTheSplitAndBadValuesAreNamed) {
  REQUIRE_SERVER(opening_server());
  const uint16_t port = opening_server()->port();
  const auto refusal = [&](const char* route, const json& body) {
    const HttpResult result = fetch(port, "POST", route, body.dump());
    EXPECT_EQ(result.status, 400) << route << " " << body.dump() << " -> " << result.body;
    if (result.status != 400) return;
    const json error = result.json()["error"];
    EXPECT_EQ(error["param"], "reasoning_format") << result.body;
    EXPECT_NE(error["message"].get<std::string>().find("reasoning_format"), std::string::npos)
        << result.body;
  };
  for (const char* format : {"deepseek", "auto"}) {
    refusal("/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 4}, {"reasoning_format", format}});
  }
  EXPECT_EQ(fetch(port, "POST", "/v1/completions",
                  json({{"prompt", "Hi"}, {"max_tokens", 4}, {"reasoning_format", "none"}}).dump())
                .status,
            200);
  const json messages = {{{"role", "user"}, {"content", "Hi"}}};
  refusal(kChatRoute, {{"messages", messages}, {"max_tokens", 4}, {"reasoning_format", "bogus"}});
  refusal(kChatRoute, {{"messages", messages}, {"max_tokens", 4}, {"reasoning_format", 1}});
  refusal(kRoute, {{"input", "Hi"}, {"max_output_tokens", 4}, {"reasoning_format", "bogus"}});
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
