// stop_token_ids, include_stop_str_in_output and min_tokens over HTTP: each changes a greedy
// output exactly as specified (the scheduler-level cases are tests/scheduler/stop_controls).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using nlohmann::json;

// The greedy output's tokens, as text pieces and as ids (each piece tokenizes to one id).
struct Greedy {
  std::vector<std::string> pieces;
  std::vector<int32_t> ids;
};

json base_body() {
  return json{{"prompt", "Stop controls are tested on"},
              {"max_tokens", 16},
              {"temperature", 0},
              {"ignore_eos", true}};
}

Greedy greedy() {
  json body = base_body();
  body["logprobs"] = 0;
  const json whole = post_json("/v1/completions", body);
  Greedy out;
  for (const json& token : whole["choices"][0]["logprobs"]["tokens"]) {
    out.pieces.push_back(token);
    const json ids =
        post_json("/tokenize", json{{"content", token}, {"add_special", false}})["tokens"];
    out.ids.push_back(ids.size() == 1 ? ids[0].get<int32_t>() : -1);
  }
  return out;
}

// The first position whose token occurs nowhere before it, past the first: stopping on its
// id must end the output right there.
size_t stop_position(const Greedy& g) {
  for (size_t i = 1; i < g.ids.size(); ++i) {
    if (g.ids[i] < 0) continue;
    bool seen = false;
    for (size_t j = 0; j < i; ++j) seen = seen || g.ids[j] == g.ids[i];
    if (!seen) return i;
  }
  return 0;
}

TEST(StopControlsOverHttp, StopTokenIdsEndTheOutputAtThatTokenWithOrWithoutItsText) {
  const Greedy g = greedy();
  const size_t k = stop_position(g);
  ASSERT_GT(k, 0u) << "the greedy output has no usable stop token";
  std::string before;
  for (size_t i = 0; i < k; ++i) before += g.pieces[i];
  json body = base_body();
  body["stop_token_ids"] = {g.ids[k]};
  const json stopped = post_json("/v1/completions", body);
  EXPECT_EQ(stopped["choices"][0]["text"], before);
  EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(stopped["usage"]["completion_tokens"], k + 1);    // the stop token counts
  EXPECT_EQ(stopped["choices"][0]["stop_reason"], g.ids[k]);  // vLLM's: the token's id
  body["include_stop_str_in_output"] = true;
  const json kept = post_json("/v1/completions", body);
  EXPECT_EQ(kept["choices"][0]["text"], before + g.pieces[k]);
  EXPECT_EQ(kept["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(kept["choices"][0]["stop_reason"], g.ids[k]);
}

// The last streamed chunk of a choice carries what its whole answer's choice does.
json last_chunk_choice(const json& body) {
  const HttpResult streamed = fetch(shared_server().port(), "POST", "/v1/completions", body.dump());
  EXPECT_EQ(streamed.status, 200) << streamed.body;
  const std::vector<std::string> events = sse_data(streamed.body);
  EXPECT_GE(events.size(), 2u);
  for (size_t i = 0; i + 2 < events.size(); ++i) {  // before the last: no stop_reason yet
    EXPECT_FALSE(json::parse(events[i])["choices"][0].contains("stop_reason")) << events[i];
  }
  return json::parse(events.at(events.size() - 2))["choices"][0];
}

// vLLM's stop_reason: the stop string that matched, the stop token's id, or null where the
// output ended otherwise (a limit, EOS); whole and streamed alike, completions and chat.
TEST(StopControlsOverHttp, StopReasonSaysWhichStopEndedTheOutput) {
  const Greedy g = greedy();
  ASSERT_FALSE(g.pieces[2].empty());
  json body = base_body();
  body["stop"] = {"never in this output", g.pieces[2]};
  const json stopped = post_json("/v1/completions", body);
  EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(stopped["choices"][0]["stop_reason"], g.pieces[2]);
  body["stream"] = true;
  EXPECT_EQ(last_chunk_choice(body)["stop_reason"], g.pieces[2]);

  json limited = base_body();
  const json length = post_json("/v1/completions", limited);
  EXPECT_EQ(length["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(length["choices"][0]["stop_reason"].is_null()) << length.dump();
  limited["stream"] = true;
  const json last = last_chunk_choice(limited);
  EXPECT_TRUE(last.contains("stop_reason") && last["stop_reason"].is_null()) << last.dump();

  json token_stop = base_body();
  token_stop["stop_token_ids"] = {g.ids.at(stop_position(g))};
  token_stop["stream"] = true;
  EXPECT_EQ(last_chunk_choice(token_stop)["stop_reason"], g.ids.at(stop_position(g)));

  json chat{{"messages", {{{"role", "user"}, {"content", "Stop controls"}}}},
            {"max_tokens", 8},
            {"temperature", 0},
            {"ignore_eos", true},
            {"logprobs", true}};
  const json free_run = post_json("/v1/chat/completions", chat);
  const std::string piece = free_run["choices"][0]["logprobs"]["content"][1]["token"];
  ASSERT_FALSE(piece.empty());
  chat["stop"] = piece;
  const json chat_stopped = post_json("/v1/chat/completions", chat);
  EXPECT_EQ(chat_stopped["choices"][0]["stop_reason"], piece) << chat_stopped.dump();
  EXPECT_TRUE(free_run["choices"][0]["stop_reason"].is_null());

  // ignore_eos with EOS among the stop ids (vLLM's "ignore EOS, stop at <|eot_id|>"): EOS is
  // not banned and ends the output, reported by its id; without ignore_eos it is plain EOS.
  const std::string eos_text = fetch(shared_server().port(), "GET", "/props").json()["eos_token"];
  const int32_t eos =
      post_json("/tokenize", json{{"content", eos_text}, {"parse_special", true}})["tokens"][0];
  json eos_stop = base_body();
  eos_stop["logit_bias"] = {{std::to_string(eos), 100}};
  eos_stop["stop_token_ids"] = {eos};
  const json by_id = post_json("/v1/completions", eos_stop);
  EXPECT_EQ(by_id["choices"][0]["finish_reason"], "stop") << by_id.dump();
  EXPECT_EQ(by_id["choices"][0]["stop_reason"], eos);
  EXPECT_EQ(by_id["usage"]["completion_tokens"], 1);
  eos_stop["ignore_eos"] = false;
  EXPECT_TRUE(post_json("/v1/completions", eos_stop)["choices"][0]["stop_reason"].is_null());
}

// The first token as a stop token ends the output at once; with min_tokens 4 it is banned
// for the first 4 tokens, so the output runs on and differs.
TEST(StopControlsOverHttp, MinTokensHoldsOffStopTokensUntilReached) {
  const Greedy g = greedy();
  ASSERT_GE(g.ids[0], 0);
  json body = base_body();
  body["stop_token_ids"] = {g.ids[0]};
  const json at_once = post_json("/v1/completions", body);
  EXPECT_EQ(at_once["choices"][0]["text"], "");
  EXPECT_EQ(at_once["usage"]["completion_tokens"], 1);
  body["min_tokens"] = 4;
  const json held = post_json("/v1/completions", body);
  EXPECT_GE(held["usage"]["completion_tokens"].get<int>(), 4);
  const std::string text = held["choices"][0]["text"];
  EXPECT_NE(text.rfind(g.pieces[0], 0), 0u) << "the banned token came first: " << text;
}

// A stop string is ignored until min_tokens tokens are out (vLLM's rule).
TEST(StopControlsOverHttp, MinTokensIgnoresStopStringsUntilReached) {
  const Greedy g = greedy();
  ASSERT_FALSE(g.pieces[1].empty());
  json body = base_body();
  body["stop"] = {g.pieces[1]};
  const json early = post_json("/v1/completions", body);
  const int early_tokens = early["usage"]["completion_tokens"];
  EXPECT_LE(early_tokens, 2);
  body["min_tokens"] = 8;
  const json held = post_json("/v1/completions", body);
  EXPECT_GE(held["usage"]["completion_tokens"].get<int>(), 8);
  EXPECT_GT(held["choices"][0]["text"].get<std::string>().size(),
            early["choices"][0]["text"].get<std::string>().size());
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
