// llama-server's answer shape on /completion and /infill: the whole object, its stop_type per
// ending, the stream's data lines (no [DONE]), and response_fields' picking by path.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "protocol/logprobs.h"
#include "protocol/native_writer.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using Json = nlohmann::ordered_json;

ResponseHeader header() {
  ResponseHeader h;
  h.id = "cmpl-1";
  h.model = "m";
  h.seed = 7;
  h.system_fingerprint = "fp_x";
  return h;
}

NativeWriter writer(std::vector<std::string> fields = {}) {
  return NativeWriter(header(), "<|fim_prefix|>a", 10, Json{{"temperature", 0.8}},
                      std::move(fields));
}

const Usage kUsage{10, 4, 6};  // prompt 10 (6 from the cache), 4 generated

TEST(NativeWriter, WholeObjectHasLlamaServersFields) {
  NativeWriter w = writer();
  w.output_seen(1);
  const Json body = Json::parse(w.whole_body("x\ny", {}, FinishReason::kStop, kUsage, nullptr));
  EXPECT_EQ(body["content"], "x\ny");
  EXPECT_EQ(body["stop"], true);
  EXPECT_EQ(body["stop_type"], "eos");
  EXPECT_EQ(body["stopping_word"], "");
  EXPECT_EQ(body["tokens_predicted"], 4);
  EXPECT_EQ(body["tokens_evaluated"], 10);
  EXPECT_EQ(body["tokens_cached"], 13);  // the last token was never fed
  EXPECT_EQ(body["has_new_line"], true);
  EXPECT_EQ(body["truncated"], false);
  EXPECT_EQ(body["prompt"], "<|fim_prefix|>a");
  EXPECT_EQ(body["model"], "m");
  EXPECT_EQ(body["generation_settings"]["seed"], 7);
  EXPECT_EQ(body["generation_settings"]["temperature"], 0.8);
  EXPECT_EQ(body["timings"]["prompt_n"], 4);  // computed: the cache held 6
  EXPECT_EQ(body["timings"]["cache_n"], 6);
  EXPECT_EQ(body["timings"]["predicted_n"], 4);
  EXPECT_GE(body["timings"]["prompt_ms"].get<double>(), 0.0);
  EXPECT_GE(body["timings"]["predicted_per_second"].get<double>(), 0.0);
  EXPECT_EQ(body["seed"], 7);
}

TEST(NativeWriter, StopTypeSaysWhatEndedTheOutput) {
  auto stop_type = [](FinishReason finish, std::string_view stop) {
    NativeWriter w = writer();
    return Json::parse(w.whole_body("a", {}, finish, kUsage, nullptr, {}, stop));
  };
  EXPECT_EQ(stop_type(FinishReason::kLength, "")["stop_type"], "limit");
  const Json word = stop_type(FinishReason::kStop, "\n\n");
  EXPECT_EQ(word["stop_type"], "word");
  EXPECT_EQ(word["stopping_word"], "\n\n");
  EXPECT_EQ(stop_type(FinishReason::kStop, "")["stop_type"], "eos");
  EXPECT_EQ(stop_type(FinishReason::kStop, "")["has_new_line"], false);
}

TEST(NativeWriter, StreamsDataLinesThenTheFinalObject) {
  NativeWriter w = writer();
  EXPECT_EQ(w.opening_events(), "");
  w.output_seen(2);  // two tokens made the piece
  const std::string piece = w.text_events("ab\n", nullptr);
  ASSERT_TRUE(piece.starts_with("data: ")) << piece;
  ASSERT_TRUE(piece.ends_with("\n\n")) << piece;
  const Json chunk = Json::parse(piece.substr(6));
  EXPECT_EQ(chunk["content"], "ab\n");
  EXPECT_EQ(chunk["stop"], false);
  EXPECT_EQ(chunk["index"], 0);
  EXPECT_EQ(chunk["tokens_predicted"], 2);
  EXPECT_EQ(chunk["tokens_evaluated"], 10);
  EXPECT_EQ(w.text_events("", nullptr), "");
  const std::string closing = w.closing_events({}, FinishReason::kLength, kUsage);
  EXPECT_EQ(closing.find("[DONE]"), std::string::npos);
  const Json last = Json::parse(closing.substr(6));
  EXPECT_EQ(last["stop"], true);
  EXPECT_EQ(last["content"], "");  // the text came in the chunks
  EXPECT_EQ(last["stop_type"], "limit");
  EXPECT_EQ(last["has_new_line"], true);  // a streamed chunk held one
  const Json error = Json::parse(w.error_events(bad_request("no", "x")).substr(6));
  EXPECT_EQ(error["error"]["message"], "no");
}

// n_probs' completion_probabilities: each token's id, text (cut before a character it leaves
// open), bytes and logprob, and its top_logprobs in the same form, on each streamed piece
// and in the whole object.
TEST(NativeWriter, CompletionProbabilitiesCarryEachTokenAndItsAlternatives) {
  const std::vector<TokenLogprobs> tokens = {
      {{"a\xC3", -0.5f, 7}, {{"a\xC3", -0.5f, 7}, {"b", -1.25f, 9}}},
      {{"\xA9", -0.25f, 8}, {{"\xA9", -0.25f, 8}, {"c", -2.0f, 3}}}};
  const LogprobsPiece piece{tokens, {}};
  NativeWriter w = writer();
  const Json body = Json::parse(w.whole_body("a\xC3\xA9", {}, FinishReason::kStop, kUsage, &piece));
  const Json& probs = body["completion_probabilities"];
  ASSERT_EQ(probs.size(), 2u);
  EXPECT_EQ(probs[0]["id"], 7);
  EXPECT_EQ(probs[0]["token"], "a");  // the open \xC3 is left to the bytes
  EXPECT_EQ(probs[0]["bytes"], (Json{0x61, 0xC3}));
  EXPECT_EQ(probs[0]["logprob"], -0.5);
  EXPECT_EQ(probs[0]["top_logprobs"][1],
            (Json{{"id", 9}, {"token", "b"}, {"bytes", {0x62}}, {"logprob", -1.25}}));
  EXPECT_EQ(probs[1]["bytes"], (Json{0xA9}));
  EXPECT_EQ(probs[1]["top_logprobs"][1]["id"], 3);
  w.output_seen(1);
  const LogprobsPiece first{std::span(tokens).first(1), {}};
  const Json chunk = Json::parse(w.text_events("a", &first).substr(6));
  EXPECT_EQ(chunk["completion_probabilities"], Json::array({probs[0]}));
  EXPECT_FALSE(
      Json::parse(w.text_events("b", nullptr).substr(6)).contains("completion_probabilities"));
  // Tokens without text (a stop string's) still stream their probabilities.
  const LogprobsPiece held{std::span(tokens).last(1), {}};
  const Json silent = Json::parse(w.text_events("", &held).substr(6));
  EXPECT_EQ(silent["content"], "");
  EXPECT_EQ(silent["completion_probabilities"], Json::array({probs[1]}));
  EXPECT_EQ(w.text_events("", nullptr), "");
  // No token, no key (n_predict 0), as llama-server.
  const LogprobsPiece none{};
  EXPECT_FALSE(Json::parse(w.whole_body("", {}, FinishReason::kLength, kUsage, &none))
                   .contains("completion_probabilities"));
}

TEST(NativeWriter, ResponseFieldsPickPaths) {
  NativeWriter w = writer({"content", "timings/prompt_n", "timings/nothing", "absent"});
  const Json body = Json::parse(w.whole_body("hi", {}, FinishReason::kStop, kUsage, nullptr));
  EXPECT_EQ(body, (Json{{"content", "hi"}, {"timings/prompt_n", 4}}));
  EXPECT_EQ(pick_fields(Json{{"a", {{"b", {{"c", 1}}}}}}, {"a/b/c", "a/b"}),
            (Json{{"a/b/c", 1}, {"a/b", {{"c", 1}}}}));
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
