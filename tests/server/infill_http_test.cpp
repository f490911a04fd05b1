// llama-server's own API over HTTP: /infill builds llama-server's FIM prompt from the model's
// FIM tokens and answers as /v1/completions would for that prompt and sampling; /completion
// answers as /v1/completions does; both in llama-server's shape, streamed or whole; the
// requests editor plugins send are accepted; a model without FIM tokens is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/common/test_support.h"
#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using json = nlohmann::json;

std::filesystem::path fim_model() {
  static ScratchDir dir;
  static const std::filesystem::path path = [] {
    const auto out = dir.file("fim.gguf");
    const CommandResult made =
        run_tandem({"make-model", "--shape", "tiny", "--fim", "--out", out.string()});
    if (made.exit_code != 0) throw std::runtime_error("make-model --fim failed: " + made.err);
    return out;
  }();
  return path;
}

ServerProcess& fim_server() {
  static ServerProcess server(fim_model());
  return server;
}

std::vector<int32_t> tokens_of(uint16_t port, const std::string& text, bool special) {
  const json answer =
      post_json(port, "/tokenize",
                json{{"content", text}, {"add_special", false}, {"parse_special", special}});
  return answer["tokens"].get<std::vector<int32_t>>();
}

void append(std::vector<int32_t>& to, const std::vector<int32_t>& more) {
  to.insert(to.end(), more.begin(), more.end());
}

// llama-server's format_infill, written out for this request: the repository line, each
// extra chunk after a file separator, then BOS (this vocabulary adds one) and [PRE] prefix
// prompt [SUF] suffix [MID].
std::vector<int32_t> expected_prompt(uint16_t port) {
  auto special = [&](const char* text) { return tokens_of(port, text, true).at(0); };
  std::vector<int32_t> want = {special("<|repo_name|>")};
  append(want, tokens_of(port, "myproject\n", false));
  want.push_back(special("<|file_sep|>"));
  append(want, tokens_of(port, "util.py\n", false));
  append(want, tokens_of(port, "def helper():\n    return 2\n", false));
  want.push_back(special("<|file_sep|>"));
  append(want, tokens_of(port, "filename\n", false));
  want.push_back(special("<|bos|>"));  // after the extra context, as llama-server puts it
  want.push_back(special("<|fim_prefix|>"));
  append(want, tokens_of(port, "def f(x):\n", false));
  append(want, tokens_of(port, "    y", true));
  want.push_back(special("<|fim_suffix|>"));
  append(want, tokens_of(port, "\n    return y\n", false));
  want.push_back(special("<|fim_middle|>"));
  return want;
}

const json kInfill = {
    {"input_prefix", "def f(x):\n"},
    {"input_suffix", "\n    return y\n"},
    {"input_extra", {{{"filename", "util.py"}, {"text", "def helper():\n    return 2\n"}}}},
    {"prompt", "    y"},
    {"n_predict", 12},
    {"samplers", {"top_k", "top_p"}},
    {"top_k", 40},
    {"top_p", 0.99},
    {"seed", 5},
    {"cache_prompt", true}};

TEST(InfillHttp, AnswersAsCompletionsWouldForLlamaServersFimPrompt) {
  const uint16_t port = fim_server().port();
  const std::vector<int32_t> prompt = expected_prompt(port);
  const json infill = post_json(port, "/infill", kInfill);
  EXPECT_EQ(infill["tokens_evaluated"], prompt.size()) << infill.dump();
  // No temperature in the chain: T = 1; no min_p: off.
  const json completion = post_json(port, "/v1/completions",
                                    json{{"prompt", prompt},
                                         {"max_tokens", 12},
                                         {"temperature", 1.0},
                                         {"top_k", 40},
                                         {"top_p", 0.99},
                                         {"seed", 5}});
  EXPECT_EQ(infill["content"], completion["choices"][0]["text"]) << infill.dump();
  EXPECT_EQ(infill["tokens_predicted"], completion["usage"]["completion_tokens"]);
  EXPECT_EQ(infill["stop"], true);
  EXPECT_EQ(infill["generation_settings"]["seed"], 5);
  EXPECT_EQ(infill["timings"]["predicted_n"], infill["tokens_predicted"]);
}

// Whole and streamed agree, with and without the infill stage (on this random model the
// stage mostly ends at once: its end-of-generation tokens hold too much of the kept mass);
// the pieces count the tokens so far and the prompt's length, as llama-server's do.
TEST(InfillHttp, StreamsTheSameTextAndTheInfillFilterReplaysBySeed) {
  const uint16_t port = fim_server().port();
  for (const json& samplers : {json{"top_k", "top_p", "infill"}, json{"top_k", "top_p"}}) {
    json body = kInfill;
    body["samplers"] = samplers;
    const json whole = post_json(port, "/infill", body);
    EXPECT_EQ(post_json(port, "/infill", body)["content"], whole["content"]);
    body["stream"] = true;
    // llama-server's timings on every piece, in the run whose pieces are asserted below.
    const bool timed = samplers.size() == 2;
    body["timings_per_token"] = timed;
    const HttpResult streamed = fetch(port, "POST", "/infill", body.dump());
    ASSERT_EQ(streamed.status, 200) << streamed.body;
    std::string text;
    json last;
    int64_t counted = 0;  // the pieces' tokens_predicted, which only grows
    int pieces = 0;
    for (const std::string& data : sse_data(streamed.body)) {
      ASSERT_NE(data, "[DONE]");  // llama-server sends none on its own routes
      last = json::parse(data);
      text += last["content"].get<std::string>();
      if (last["stop"] == true) break;
      ++pieces;
      EXPECT_GE(last["tokens_predicted"].get<int64_t>(), std::max<int64_t>(counted, 1));
      counted = last["tokens_predicted"].get<int64_t>();
      EXPECT_EQ(last["tokens_evaluated"], whole["tokens_evaluated"]);
      EXPECT_EQ(last.contains("timings"), timed) << data;
      if (timed) {
        EXPECT_EQ(last["timings"]["predicted_n"], last["tokens_predicted"]);
        EXPECT_EQ(
            last["timings"]["prompt_n"].get<int64_t>() + last["timings"]["cache_n"].get<int64_t>(),
            whole["tokens_evaluated"].get<int64_t>());
        EXPECT_GT(last["timings"]["cache_n"].get<int64_t>(), 0) << "the whole answer's prompt";
      }
    }
    EXPECT_LE(counted, whole["tokens_predicted"].get<int64_t>());
    if (samplers.size() == 2) {
      EXPECT_GT(pieces, 0) << streamed.body;
    }
    EXPECT_EQ(text, whole["content"]) << samplers.dump();
    EXPECT_EQ(last["stop"], true);
    EXPECT_EQ(last["stop_type"], whole["stop_type"]);
  }
}

TEST(InfillHttp, AcceptsWhatEditorPluginsSend) {
  const uint16_t port = fim_server().port();
  // llama.vscode's cache warm-up: nothing to generate.
  const json warm = post_json(port, "/infill",
                              json{{"input_prefix", ""},
                                   {"input_suffix", ""},
                                   {"input_extra", json::array()},
                                   {"prompt", ""},
                                   {"n_predict", 0},
                                   {"samplers", json::array()},
                                   {"cache_prompt", true},
                                   {"t_max_prompt_ms", 500},
                                   {"t_max_predict_ms", 1}});
  EXPECT_EQ(warm["content"], "");
  EXPECT_EQ(warm["tokens_predicted"], 0);
  EXPECT_GT(warm["tokens_evaluated"].get<int>(), 0);
  // llama.vim's completion, with its response_fields.
  const json picked =
      post_json(port, "/infill",
                json{{"input_prefix", "x = "},
                     {"input_suffix", ""},
                     {"prompt", ""},
                     {"n_predict", 4},
                     {"n_indent", 4},
                     {"top_k", 40},
                     {"top_p", 0.9},
                     {"samplers", {"top_k", "top_p", "infill"}},
                     {"stream", false},
                     {"t_max_predict_ms", 500},
                     {"response_fields", {"content", "timings/prompt_n", "truncated"}}});
  EXPECT_TRUE(picked.contains("content")) << picked.dump();
  EXPECT_TRUE(picked.contains("timings/prompt_n")) << picked.dump();
  EXPECT_EQ(picked["truncated"], false);
  EXPECT_EQ(picked.size(), 3u) << picked.dump();
}

// Inputs far past the context are cut as llama-server cuts them (the prefix keeps its end,
// the suffix its start, the extra context its end), leaving room to generate.
TEST(InfillHttp, LongInputsAreCutToFitTheContext) {
  const uint16_t port = fim_server().port();
  const json answer =
      post_json(port, "/infill",
                json{{"input_prefix", std::string(50000, 'P') + "END"},
                     {"input_suffix", "START" + std::string(50000, 'S')},
                     {"input_extra", {{{"filename", "x.py"}, {"text", std::string(100000, 'x')}}}},
                     {"n_predict", 16},
                     {"model", "some-proxy-name"},
                     {"temperature", 0}});
  const int evaluated = answer["tokens_evaluated"].get<int>();
  EXPECT_LE(evaluated, 512 - 126) << answer.dump();
  EXPECT_EQ(answer["tokens_predicted"], 16);
  const std::string prompt = answer["prompt"].get<std::string>();
  EXPECT_NE(prompt.find("PEND<|fim_suffix|>START"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("xx<|file_sep|>filename\n"), std::string::npos) << prompt;
}

TEST(InfillHttp, CompletionAnswersAsCompletionsDoes) {
  const uint16_t port = fim_server().port();
  const json native = post_json(
      port, "/completion", json{{"prompt", "Once upon"}, {"n_predict", 6}, {"temperature", 0}});
  const json openai =
      post_json(port, "/v1/completions",
                json{{"prompt", "Once upon"}, {"max_tokens", 6}, {"temperature", 0}});
  EXPECT_EQ(native["content"], openai["choices"][0]["text"]);
  EXPECT_EQ(native["tokens_evaluated"], openai["usage"]["prompt_tokens"]);
  EXPECT_EQ(native["stop_type"],
            openai["choices"][0]["finish_reason"] == "length" ? "limit" : "eos");
  EXPECT_EQ(
      post_json(port, "/completions",
                json{{"prompt", "Once upon"}, {"n_predict", 6}, {"temperature", 0}})["content"],
      native["content"]);
}

// llama-server's penalties on /completion are llama.cpp's over its window (64 unless sent):
// the same text as /v1/completions with llama.cpp's names, greedy so the filters are moot.
TEST(InfillHttp, CompletionsPenaltiesAreLlamaCppsOverItsWindow) {
  const uint16_t port = fim_server().port();
  const json native = post_json(port, "/completion",
                                json{{"prompt", "Once upon a time"},
                                     {"n_predict", 24},
                                     {"temperature", 0},
                                     {"presence_penalty", 0.6},
                                     {"frequency_penalty", 0.4},
                                     {"repeat_penalty", 1.3}});
  EXPECT_EQ(native["generation_settings"]["repeat_last_n"], 64);
  json openai = {
      {"prompt", "Once upon a time"}, {"max_tokens", 24},         {"temperature", 0},
      {"presence_penalty", 0.6},      {"frequency_penalty", 0.4}, {"repetition_penalty", 1.3},
      {"penalty_last_n", 64}};
  EXPECT_EQ(post_json(port, "/v1/completions", openai)["choices"][0]["text"], native["content"]);
  const json windowed = post_json(port, "/completion",
                                  json{{"prompt", "Once upon a time"},
                                       {"n_predict", 24},
                                       {"temperature", 0},
                                       {"presence_penalty", 0.6},
                                       {"repeat_last_n", 3}});
  json whole_history = {{"prompt", "Once"}, {"n_predict", 1}, {"repeat_last_n", -1}};
  EXPECT_EQ(post_json(port, "/completion", whole_history)["generation_settings"]["repeat_last_n"],
            512);  // the context, as llama-server reports -1
  openai["penalty_last_n"] = 3;
  openai.erase("frequency_penalty");
  openai.erase("repetition_penalty");
  EXPECT_EQ(post_json(port, "/v1/completions", openai)["choices"][0]["text"], windowed["content"]);
}

// XTC end to end: with the two likeliest kept (top_k 2, each at least 0.1 likely on this
// near-uniform model) and a draw that always fires, the likelier one is excluded, so every
// token is the second of the two alternatives listed, on /completion (llama.cpp's chain) and
// /v1/completions (vLLM's order) alike; streamed as whole.
TEST(InfillHttp, XtcExcludesTheTopChoice) {
  const uint16_t port = fim_server().port();
  const auto second_best = [](const json& alternatives) {
    std::vector<std::pair<double, int32_t>> ranked;
    for (const json& a : alternatives) ranked.emplace_back(a["logprob"], a["id"]);
    std::sort(ranked.rbegin(), ranked.rend());
    return ranked.at(1).second;
  };
  json body = {{"prompt", "Once upon"},  {"n_predict", 12},      {"top_k", 2}, {"n_probs", 2},
               {"xtc_probability", 1.0}, {"xtc_threshold", 0.1}, {"seed", 3}};
  const json native = post_json(port, "/completion", body);
  EXPECT_EQ(native["generation_settings"]["xtc_probability"], 1.0);
  ASSERT_EQ(native["completion_probabilities"].size(), 12u);
  for (const json& entry : native["completion_probabilities"]) {
    EXPECT_EQ(entry["id"], second_best(entry["top_logprobs"])) << entry.dump();
  }
  // Greedy too: llama.cpp's greedy takes the best of what XTC leaves.
  json greedy = body;
  greedy["temperature"] = 0;
  const json greedy_answer = post_json(port, "/completion", greedy);  // outlives the loop
  for (const json& entry : greedy_answer["completion_probabilities"]) {
    EXPECT_EQ(entry["id"], second_best(entry["top_logprobs"])) << entry.dump();
  }
  body["stream"] = true;
  std::string streamed;
  for (const std::string& data : sse_data(fetch(port, "POST", "/completion", body.dump()).body)) {
    streamed += json::parse(data)["content"].get<std::string>();
  }
  EXPECT_EQ(streamed, native["content"]);
  const json openai = post_json(port, "/v1/completions",
                                json{{"prompt", "Once upon"},
                                     {"max_tokens", 12},
                                     {"top_k", 2},
                                     {"logprobs", 2},
                                     {"return_tokens_as_token_ids", true},
                                     {"xtc_probability", 1.0},
                                     {"seed", 3}});
  const json& lp = openai["choices"][0]["logprobs"];
  for (size_t i = 0; i < lp["tokens"].size(); ++i) {
    json alternatives = json::array();
    for (const auto& [key, value] : lp["top_logprobs"][i].items()) {
      alternatives.push_back({{"id", std::stoi(key.substr(9))}, {"logprob", value}});
    }
    EXPECT_EQ(lp["tokens"][i], "token_id:" + std::to_string(second_best(alternatives)));
  }
}

// Seeded draws at temperature 1 with `base`, and then with `filter` too, on /completion and
// /v1/completions: with the filter each must be greedy's text (which /completion's settings
// report it applied); returns how many seeds drew otherwise without it.
int draws_otherwise_than_greedy(uint16_t port, const json& base, const json& filter) {
  const json greedy = post_json(
      port, "/completion", json{{"prompt", "Once upon"}, {"n_predict", 12}, {"temperature", 0}});
  int differs = 0;
  for (int seed = 1; seed <= 3; ++seed) {
    json body = {{"prompt", "Once upon"}, {"n_predict", 12}, {"temperature", 1.0}, {"seed", seed}};
    body.update(base);
    differs += post_json(port, "/completion", body)["content"] != greedy["content"];
    body.update(filter);
    const json native = post_json(port, "/completion", body);
    EXPECT_EQ(native["content"], greedy["content"]) << seed << " " << filter.dump();
    for (const auto& [name, value] : filter.items()) {
      EXPECT_FLOAT_EQ(native["generation_settings"][name].get<float>(), value.get<float>());
    }
    json openai = {{"prompt", "Once upon"}, {"max_tokens", 12}, {"seed", seed}};
    openai.update(base);
    openai.update(filter);
    EXPECT_EQ(post_json(port, "/v1/completions", openai)["choices"][0]["text"], greedy["content"])
        << seed << " " << filter.dump();
  }
  return differs;
}

// top-n-sigma end to end: a cut a millionth of a deviation below the top keeps the top token
// alone, so any seed draws greedy's text, on /completion (llama.cpp's chain, top_k 40 and the
// rest after it) and /v1/completions alike; without it the seeds draw otherwise.
TEST(InfillHttp, ATinyTopNSigmaDrawsGreedysText) {
  EXPECT_GT(
      draws_otherwise_than_greedy(fim_server().port(), json::object(), json{{"top_n_sigma", 1e-6}}),
      0);
}

// The dynamic temperature end to end: a range equal to the temperature and a huge exponent
// send every step's temperature to 0, greedy's text for any seed, over the kept set
// (/completion's chain, the temperature last) and the whole row (/v1/completions, first).
TEST(InfillHttp, ADynamicTemperatureDownToZeroDrawsGreedysText) {
  EXPECT_GT(draws_otherwise_than_greedy(fim_server().port(), json::object(),
                                        json{{"dynatemp_range", 1.0}, {"dynatemp_exponent", 1e30}}),
            0);
}

// Where the chain puts the temperature decides what a dynamic one measures: with the
// greedy token 3 logits ahead and top_k 2, the pair after top_k is nearly certain (a low
// temperature: the other token almost never drawn), the whole row before it is not (a high
// one: the other token often drawn). Both counts are fixed by the seeds.
TEST(InfillHttp, ADynamicTemperatureMeasuresWhatItsPlaceInTheChainSees) {
  const uint16_t port = fim_server().port();
  const json greedy = post_json(
      port, "/completion",
      json{{"prompt", "Once upon"}, {"n_predict", 1}, {"temperature", 0}, {"n_probs", 1}});
  const int top = greedy["completion_probabilities"][0]["id"];
  const auto others = [&](const json& chain) {
    int count = 0;
    for (int seed = 1; seed <= 100; ++seed) {
      const json r = post_json(port, "/completion",
                               json{{"prompt", "Once upon"},
                                    {"n_predict", 1},
                                    {"n_probs", 1},
                                    {"temperature", 1},
                                    {"dynatemp_range", 1},
                                    {"top_k", 2},
                                    {"logit_bias", json::array({json::array({top, 3})})},
                                    {"samplers", chain},
                                    {"seed", seed}});
      count += r["completion_probabilities"][0]["id"] != top;
    }
    return count;
  };
  const int after = others(json{"top_k", "temperature"});
  const int first = others(json{"temperature", "top_k"});
  EXPECT_LE(after, 3);
  EXPECT_GE(first, 8);
}

// typ_p end to end: of two tokens (top_k 2) the likelier is the more typical, so typical_p 0,
// which keeps the single most typical token, draws greedy's text for any seed; without it the
// seeds draw otherwise. SillyTavern's shape (top_p 1 in llama-server's default chain, which
// puts min_p right after typ_p) is accepted.
TEST(InfillHttp, TypicalPOfZeroOverTwoTokensDrawsGreedysText) {
  const uint16_t port = fim_server().port();
  EXPECT_GT(draws_otherwise_than_greedy(port, json{{"top_k", 2}}, json{{"typical_p", 0}}), 0);
  const HttpResult st = fetch(port, "POST", "/completion",
                              json{{"prompt", "Once upon"},
                                   {"n_predict", 4},
                                   {"typical_p", 0.9},
                                   {"top_p", 1},
                                   {"min_p", 0.05}}
                                  .dump());
  EXPECT_EQ(st.status, 200) << st.body;
}

// n_probs: llama-server's completion_probabilities, the same values /v1/completions'
// logprobs give for the same request, streamed piece by piece as whole.
TEST(InfillHttp, CompletionProbabilitiesAreTheLogprobsInLlamaServersShape) {
  const uint16_t port = fim_server().port();
  json body = {{"prompt", "Once upon"}, {"n_predict", 10}, {"temperature", 0}, {"n_probs", 3}};
  const json whole = post_json(port, "/completion", body);
  EXPECT_EQ(whole["generation_settings"]["n_probs"], 3);
  const json& probs = whole["completion_probabilities"];
  ASSERT_EQ(probs.size(), whole["tokens_predicted"].get<size_t>()) << whole.dump();
  const json openai = post_json(port, "/v1/completions",
                                json{{"prompt", "Once upon"},
                                     {"max_tokens", 10},
                                     {"temperature", 0},
                                     {"logprobs", 3},
                                     {"return_tokens_as_token_ids", true}});
  const json& lp = openai["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), probs.size());
  for (size_t i = 0; i < probs.size(); ++i) {
    const json& entry = probs[i];
    EXPECT_EQ("token_id:" + std::to_string(entry["id"].get<int32_t>()), lp["tokens"][i]);
    EXPECT_EQ(entry["logprob"], lp["token_logprobs"][i]);
    ASSERT_EQ(entry["top_logprobs"].size(), 3u);
    double previous = 0.0;
    for (const json& top : entry["top_logprobs"]) {
      EXPECT_LE(top["logprob"].get<double>(), previous);
      previous = top["logprob"].get<double>();
      EXPECT_EQ(lp["top_logprobs"][i]["token_id:" + std::to_string(top["id"].get<int32_t>())],
                top["logprob"]);
    }
    // Greedy: the chosen token is the most likely one.
    EXPECT_EQ(entry["id"], entry["top_logprobs"][0]["id"]);
    EXPECT_FALSE(entry["bytes"].empty());
  }
  body["stream"] = true;
  const HttpResult streamed = fetch(port, "POST", "/completion", body.dump());
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  json pieces = json::array();
  for (const std::string& data : sse_data(streamed.body)) {
    const json chunk = json::parse(data);
    for (const json& entry : chunk.value("completion_probabilities", json::array())) {
      pieces.push_back(entry);
    }
  }
  EXPECT_EQ(pieces, probs);
  // With a stop string the whole object and the stream still list the same tokens (the stop
  // string's included), though the text leaves it out.
  const std::string content = whole["content"];
  size_t at = 1;
  while (at < content.size() && !std::isgraph(static_cast<unsigned char>(content[at]))) ++at;
  ASSERT_LT(at, content.size()) << "no character to stop at in " << content;
  json stopped = body;
  stopped.erase("stream");
  stopped["stop"] = {content.substr(at, 1)};
  const json cut = post_json(port, "/completion", stopped);
  EXPECT_EQ(cut["stop_type"], "word");
  stopped["stream"] = true;
  json cut_pieces = json::array();
  for (const std::string& data :
       sse_data(fetch(port, "POST", "/completion", stopped.dump()).body)) {
    const json chunk = json::parse(data);
    for (const json& entry : chunk.value("completion_probabilities", json::array())) {
      cut_pieces.push_back(entry);
    }
  }
  EXPECT_EQ(cut_pieces, cut["completion_probabilities"]);
  body.erase("stream");
  body["n_probs"] = 1025;  // llama-server's n_probs is bounded here at 1024
  const HttpResult refused = fetch(port, "POST", "/completion", body.dump());
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.json()["error"]["param"], "n_probs");
}

// `samplers` on the OpenAI routes (llama.cpp's web UI sends its chain with every chat) is
// applied as /completion applies it: the same chain, fields and seed draw the same text.
TEST(InfillHttp, TheOpenAiRoutesApplySamplersAsCompletionDoes) {
  const uint16_t port = fim_server().port();
  const json native = post_json(port, "/completion",
                                json{{"prompt", "Once upon"}, {"n_predict", 24}, {"seed", 11}});
  const json chain = json{"penalties", "dry",   "top_n_sigma", "top_k",      "typ_p",
                          "top_p",     "min_p", "xtc",         "temperature"};
  const json openai = post_json(port, "/v1/completions",
                                json{{"prompt", "Once upon"},
                                     {"max_tokens", 24},
                                     {"seed", 11},
                                     {"temperature", 0.8},
                                     {"top_k", 40},
                                     {"top_p", 0.95},
                                     {"min_p", 0.05},
                                     {"samplers", chain}});
  EXPECT_EQ(openai["choices"][0]["text"], native["content"]);
  const json chat = post_json(port, "/v1/chat/completions",
                              json{{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                                   {"max_tokens", 4},
                                   {"samplers", "edkypmxt"},
                                   {"dry_multiplier", 0},
                                   {"xtc_probability", 0}});
  EXPECT_EQ(chat["choices"][0]["finish_reason"].is_string(), true) << chat.dump();
}

TEST(InfillHttp, RefusesWhatItCannotHonourByName) {
  const uint16_t fim = fim_server().port();
  auto refused = [](uint16_t port, const std::string& route, const json& body) {
    const HttpResult r = fetch(port, "POST", route, body.dump());
    EXPECT_EQ(r.status, 400) << r.body;
    return r.json()["error"]["param"];
  };
  json body = kInfill;
  body["samplers"] = {"top_p", "top_k"};
  EXPECT_EQ(refused(fim, "/infill", body), "samplers");
  // llama-server's default chain (temperature last) is taken, and replays by seed.
  body["samplers"] = "edskypmxt";
  const json first = post_json(fim, "/infill", body);
  EXPECT_EQ(first["content"], post_json(fim, "/infill", body)["content"]) << first.dump();
  EXPECT_EQ(refused(fim, "/infill", json{{"input_prefix", 3}}), "input_prefix");
  EXPECT_EQ(refused(fim, "/completion", json{{"prompt", "a"}, {"n_predict", -5}}), "n_predict");
  EXPECT_EQ(refused(fim, "/completion", json{{"prompt", "a"}, {"input_suffix", "b"}}),
            "input_suffix");
  // A vocabulary without FIM tokens has no FIM prompt.
  EXPECT_EQ(refused(shared_server().port(), "/infill", kInfill), "input_prefix");
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
