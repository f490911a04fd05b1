// llama-server's /completion and /infill bodies read as the /v1/completions requests they
// amount to: llama-server's defaults, n_predict, seed -1, samplers (which filters act, and
// the orders this server refuses), the infill inputs and the line limits; refusals name the
// field the client sent.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <variant>

#include "protocol/native_request.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

NativeRequest parsed(const std::string& body, bool infill = false) {
  auto result = parse_native_request(body, infill);
  if (auto* error = std::get_if<ApiError>(&result)) {
    ADD_FAILURE() << body << " -> " << error->message;
    return {};
  }
  return std::get<NativeRequest>(std::move(result));
}

ApiError refused(const std::string& body, bool infill = false) {
  auto result = parse_native_request(body, infill);
  if (auto* error = std::get_if<ApiError>(&result)) return *error;
  ADD_FAILURE() << "accepted: " << body;
  return {};
}

// Each body's samplers chain is one the sampler has no form for: a 400 naming `samplers`.
void expect_order_refused(std::initializer_list<const char*> bodies) {
  for (const char* body : bodies) EXPECT_EQ(refused(body).param, "samplers") << body;
}

TEST(NativeRequest, TakesLlamaServersDefaults) {
  const NativeRequest r = parsed(R"({"prompt": "def f():"})");
  EXPECT_EQ(r.request.prompt_text, "def f():");
  EXPECT_FLOAT_EQ(r.request.sampling.temperature, 0.8f);
  EXPECT_EQ(r.request.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(r.request.sampling.top_p, 0.95f);
  EXPECT_FLOAT_EQ(r.request.sampling.min_p, 0.05f);
  EXPECT_FALSE(r.request.max_tokens.has_value());  // until EOS or the context
  EXPECT_FALSE(r.request.seed.has_value());
  EXPECT_FALSE(r.request.sampling.infill);
  // llama-server's default chain: top_k, top_p, min_p, then the temperature.
  EXPECT_TRUE(r.request.sampling.temperature_last);
  EXPECT_TRUE(r.request.sampling.min_p_last);
  EXPECT_EQ(r.settings["n_predict"], -1);
  EXPECT_EQ(r.settings["samplers"],
            nlohmann::ordered_json({"penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p",
                                    "min_p", "xtc", "temperature"}));
}

TEST(NativeRequest, ReadsNPredictSeedAndTokenPrompts) {
  NativeRequest r = parsed(R"({"prompt": [1, 2, 3], "n_predict": 7, "seed": 42})");
  EXPECT_EQ(r.request.prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(r.request.max_tokens, 7);
  EXPECT_EQ(r.request.seed, 42u);
  // 0 processes the prompt and generates nothing, as llama.vscode warms its cache.
  EXPECT_EQ(parsed(R"({"prompt": "x", "n_predict": 0})").request.max_tokens, 0);
  EXPECT_FALSE(parsed(R"({"prompt": "x", "n_predict": -1})").request.max_tokens.has_value());
  EXPECT_EQ(parsed(R"({"prompt": "x", "max_tokens": 5})").request.max_tokens, 5);
  EXPECT_EQ(parsed(R"({"prompt": "x", "max_tokens": 5, "n_predict": 9})").request.max_tokens, 9);
  // -1 and LLAMA_DEFAULT_SEED are llama-server's "draw one".
  EXPECT_FALSE(parsed(R"({"prompt": "x", "seed": -1})").request.seed.has_value());
  EXPECT_FALSE(parsed(R"({"prompt": "x", "seed": 4294967295})").request.seed.has_value());
}

TEST(NativeRequest, SamplersTurnOffWhatTheyLeaveOut) {
  // llama.vscode's FIM request: no temperature sampler, so none is applied (T = 1).
  const NativeRequest r = parsed(
      R"({"input_prefix": "a", "samplers": ["top_k", "top_p", "infill"], "top_k": 40,
          "top_p": 0.99, "temperature": 0.2})",
      true);
  EXPECT_TRUE(r.request.sampling.infill);
  EXPECT_FLOAT_EQ(r.request.sampling.temperature, 1.0f);
  EXPECT_EQ(r.request.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(r.request.sampling.top_p, 0.99f);
  EXPECT_FLOAT_EQ(r.request.sampling.min_p, 0.0f);
  // An empty chain: plain sampling at T = 1, no filter.
  const NativeRequest plain = parsed(R"({"prompt": "x", "samplers": []})");
  EXPECT_FLOAT_EQ(plain.request.sampling.temperature, 1.0f);
  EXPECT_EQ(plain.request.sampling.top_k, 0);
  EXPECT_FLOAT_EQ(plain.request.sampling.top_p, 1.0f);
  EXPECT_FALSE(plain.request.sampling.infill);
  // llama.cpp's letters.
  const NativeRequest letters = parsed(R"({"prompt": "x", "samplers": "kti", "temperature": 0.5})");
  EXPECT_TRUE(letters.request.sampling.infill);
  EXPECT_FLOAT_EQ(letters.request.sampling.temperature, 0.5f);
  EXPECT_EQ(letters.request.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(letters.request.sampling.min_p, 0.0f);
  // generation_settings names them as llama-server does, whichever spelling was sent.
  EXPECT_EQ(letters.settings["samplers"],
            nlohmann::ordered_json({"top_k", "temperature", "infill"}));
  EXPECT_EQ(
      parsed(R"({"prompt": "x", "samplers": ["top-k", "nucleus", "temp"]})").settings["samplers"],
      nlohmann::ordered_json({"top_k", "top_p", "temperature"}));
}

TEST(NativeRequest, TheChainsOrderBecomesTheSamplersOrder) {
  // llama-server's default chain: top_p and min_p on the raw logits, min_p after top_p, the
  // temperature for the draw alone.
  NativeRequest r = parsed(R"({"prompt": "x", "samplers": "edskypmxt"})");
  EXPECT_TRUE(r.request.sampling.temperature_last);
  EXPECT_TRUE(r.request.sampling.min_p_last);
  EXPECT_FLOAT_EQ(r.request.sampling.min_p, 0.05f);
  r = parsed(R"({"prompt": "x", "samplers": ["top_k", "top_p", "min_p", "temperature"]})");
  EXPECT_TRUE(r.request.sampling.temperature_last && r.request.sampling.min_p_last);
  // vLLM's order sets neither; nor does a chain whose temperature does nothing, or greedy.
  for (const char* body :
       {R"({"prompt": "x", "samplers": ["temperature", "min_p", "top_k", "top_p"]})",
        R"({"prompt": "x", "samplers": ["top_k", "temperature", "min_p", "top_p"]})",
        R"({"prompt": "x", "samplers": ["top_k", "top_p", "temperature"], "temperature": 1})",
        R"({"prompt": "x", "samplers": ["top_p", "temperature"], "temperature": 0})"}) {
    r = parsed(body);
    EXPECT_FALSE(r.request.sampling.temperature_last) << body;
    EXPECT_FALSE(r.request.sampling.min_p_last) << body;
  }
  // min_p after top_p, the temperature first.
  r = parsed(R"({"prompt": "x", "samplers": ["temperature", "top_p", "min_p"]})");
  EXPECT_FALSE(r.request.sampling.temperature_last);
  EXPECT_TRUE(r.request.sampling.min_p_last);
  // min_p's place against the temperature is a change of its value: before it (the raw
  // logits) while the filters read the tempered ones, min_p^(1/T); and the other way round.
  r = parsed(R"({"prompt": "x", "samplers": ["min_p", "temperature", "top_p"], "min_p": 0.09,
                 "temperature": 2})");
  EXPECT_FALSE(r.request.sampling.temperature_last);
  EXPECT_NEAR(r.request.sampling.min_p, 0.3f, 1e-6);
  r = parsed(R"({"prompt": "x", "samplers": ["top_p", "temperature", "min_p"], "min_p": 0.3,
                 "temperature": 2})");
  EXPECT_TRUE(r.request.sampling.temperature_last);
  EXPECT_NEAR(r.request.sampling.min_p, 0.09f, 1e-6);
  // Without top_p and infill, min_p before the temperature reads the raw logits as asked:
  // no conversion, whose float would round towards 1 at a huge temperature.
  r = parsed(R"({"prompt": "x", "samplers": ["min_p", "temperature"], "min_p": 0.2,
                 "temperature": 1e8})");
  EXPECT_TRUE(r.request.sampling.temperature_last);
  EXPECT_FLOAT_EQ(r.request.sampling.min_p, 0.2f);
  // llama.vscode's: infill after the filters, no temperature.
  r = parsed(R"({"prompt": "x", "samplers": ["top_k", "top_p", "infill"]})");
  EXPECT_TRUE(r.request.sampling.infill);
  EXPECT_FALSE(r.request.sampling.temperature_last);
  r = parsed(R"({"prompt": "x", "samplers": ["top_k", "top_p", "infill", "temperature"]})");
  EXPECT_TRUE(r.request.sampling.temperature_last);
  // Filters this server lacks pass at their neutral values.
  parsed(R"({"prompt": "x", "samplers": ["penalties", "dry", "top_n_sigma", "top_k", "typ_p",
             "temperature", "min_p", "top_p", "xtc"]})");
  // SillyTavern's default chain ends in adaptive_p, off while adaptive_target < 0; its older
  // presets name tail-free sampling, which llama.cpp removed and skips.
  const NativeRequest st = parsed(R"({"prompt": "x", "adaptive_target": -1, "adaptive_decay": 0.9,
      "samplers": ["penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p", "min_p", "xtc",
                   "temperature", "adaptive_p"]})");
  EXPECT_TRUE(st.request.sampling.temperature_last);  // top_p, min_p, then the temperature
  EXPECT_EQ(st.settings["samplers"].back(), "adaptive_p");
  const NativeRequest old = parsed(
      R"({"prompt": "x", "samplers": ["top_k", "tfs_z", "typical_p", "top_p", "min_p", "temperature"]})");
  EXPECT_EQ(old.settings["samplers"],
            nlohmann::ordered_json({"top_k", "typ_p", "top_p", "min_p", "temperature"}));
  EXPECT_FALSE(st.request.sampling.adaptive_on());
  // Named with a target of 0 or more, adaptive-p draws (llama.cpp puts it last wherever it
  // is named).
  const SamplingParams adaptive = parsed(R"({"prompt": "x", "adaptive_target": 0.5,
      "samplers": ["adaptive_p", "top_k", "temperature"]})")
                                      .request.sampling;
  EXPECT_TRUE(adaptive.adaptive_on());
  EXPECT_FLOAT_EQ(adaptive.adaptive_target, 0.5f);
  EXPECT_FLOAT_EQ(adaptive.adaptive_decay, 0.9f);
  // llama.cpp's letter for it, 'a' (QA: it had been an unknown letter).
  EXPECT_TRUE(parsed(R"({"prompt": "x", "adaptive_target": 0.5, "samplers": "kta"})")
                  .request.sampling.adaptive_on());
  EXPECT_FLOAT_EQ(parsed(R"({"prompt": "x", "adaptive_target": 0, "adaptive_decay": 0.5,
                            "samplers": ["adaptive-p"]})")
                      .request.sampling.adaptive_decay,
                  0.5f);
  EXPECT_EQ(refused(R"({"prompt": "x", "adaptive_target": 1.5, "samplers": ["adaptive_p"]})").param,
            "adaptive_target");
  EXPECT_EQ(refused(R"({"prompt": "x", "adaptive_target": 0.5, "adaptive_decay": 0.995,
                        "samplers": ["adaptive_p"]})")
                .param,
            "adaptive_decay");
  EXPECT_EQ(
      refused(R"({"prompt": "x", "adaptive_target": "0.5", "samplers": ["adaptive_p"]})").param,
      "adaptive_target");
  // Left out of the chain, it does nothing, as in llama.cpp.
  parsed(R"({"prompt": "x", "adaptive_target": 0.5, "samplers": ["top_k"]})");
  // Without a chain of the client's, a target that would act is refused (no default chain
  // names the stage, so llama-server would drop it in silence).
  EXPECT_EQ(refused(R"({"prompt": "x", "adaptive_target": 0.3})").param, "adaptive_target");
}

TEST(NativeRequest, RefusesAnOrderTheSamplerHasNoFormFor) {
  for (const char* body :
       {R"({"prompt": "x", "samplers": ["top_p", "top_k"]})",
        R"({"prompt": "x", "samplers": ["infill", "top_k"]})",
        R"({"prompt": "x", "samplers": ["top_k", "penalties"], "presence_penalty": 1})",
        R"({"prompt": "x", "samplers": ["top_p", "temperature", "infill"]})"}) {
    const ApiError e = refused(body);
    EXPECT_EQ(e.param, "samplers") << body;
    EXPECT_NE(e.message.find("cannot apply"), std::string::npos) << e.message;
  }
  // xtc reads the kept set as the filters leave it, with the logits as they read them.
  expect_order_refused(
      {R"({"prompt": "x", "xtc_probability": 0.5, "samplers": ["xtc", "top_k"]})",
       R"({"prompt": "x", "xtc_probability": 0.5, "samplers": ["top_p", "infill", "xtc"]})",
       R"({"prompt": "x", "xtc_probability": 0.5, "samplers": ["top_p", "temperature", "xtc"]})"});
  EXPECT_EQ(refused(R"({"prompt": "x", "samplers": ["top_k", "mirostat"]})").param, "samplers[1]");
  EXPECT_EQ(refused(R"({"prompt": "x", "samplers": "kq"})").param, "samplers");
  EXPECT_EQ(refused(R"({"prompt": "x", "samplers": ["top_k", "top_k"]})").param, "samplers[1]");
  EXPECT_EQ(refused(R"({"prompt": "x", "samplers": 3})").param, "samplers");
}

TEST(NativeRequest, ReadsTheInfillInputsAndLineLimits) {
  const NativeRequest r = parsed(
      R"({"input_prefix": "def f():\n", "input_suffix": "\nreturn 1", "prompt": "    ",
          "input_extra": [{"filename": "a.py", "text": "x = 1\n"}, {"text": "y"}],
          "n_indent": 4, "t_max_predict_ms": 250, "n_predict": 32, "cache_prompt": true,
          "t_max_prompt_ms": 500, "response_fields": ["content", "timings/prompt_n"]})",
      true);
  EXPECT_TRUE(r.infill);
  EXPECT_EQ(r.infill_inputs.prefix, "def f():\n");
  EXPECT_EQ(r.infill_inputs.suffix, "\nreturn 1");
  EXPECT_EQ(r.infill_inputs.prompt, "    ");
  ASSERT_EQ(r.infill_inputs.extra.size(), 2u);
  EXPECT_EQ(r.infill_inputs.extra[0].filename, "a.py");
  EXPECT_EQ(r.infill_inputs.extra[1].filename, "tmp");  // llama-server's name for none
  EXPECT_EQ(r.infill_inputs.extra[1].text, "y");
  EXPECT_EQ(r.min_indent, 4);
  EXPECT_DOUBLE_EQ(r.time_limit_ms, 250);
  EXPECT_EQ(r.request.max_tokens, 32);
  EXPECT_EQ(r.response_fields, (std::vector<std::string>{"content", "timings/prompt_n"}));
  // An empty infill (llama.vscode's cache warm-up) is a request too.
  parsed(R"({"input_prefix": "", "input_suffix": "", "prompt": "", "n_predict": 0,
             "samplers": [], "t_max_predict_ms": 1})",
         true);
}

TEST(NativeRequest, RefusalsNameTheFieldSent) {
  EXPECT_EQ(refused(R"({"prompt": "x", "n_predict": -2})").param, "n_predict");
  EXPECT_EQ(refused(R"({"prompt": "x", "n_predict": "many"})").param, "n_predict");
  EXPECT_EQ(refused(R"({"prompt": "x", "input_prefix": "a"})").param, "input_prefix");
  EXPECT_EQ(refused(R"({"input_extra": [{"text": 1}]})", true).param, "input_extra[0].text");
  EXPECT_EQ(refused(R"({"input_extra": "a"})", true).param, "input_extra");
  EXPECT_EQ(refused(R"({"prompt": "x", "n_indent": -1})").param, "n_indent");
  EXPECT_EQ(refused(R"({"prompt": "x", "n": 2})").param, "n");
  // llama-server reads an OpenAI-style logprobs count as n_probs (SillyTavern sends both).
  EXPECT_EQ(parsed(R"({"prompt": "x", "logprobs": 2})").request.sampling.logprobs, 2);
  EXPECT_EQ(parsed(R"({"prompt": "x", "logprobs": 3, "n_probs": 3})").request.sampling.logprobs, 3);
  EXPECT_EQ(refused(R"({"prompt": "x", "logprobs": 2, "n_probs": 3})").param, "logprobs");
  // n_probs at its default (0) leaves the count to logprobs, as llama-server reads them.
  EXPECT_EQ(parsed(R"({"prompt": "x", "logprobs": 5, "n_probs": 0})").request.sampling.logprobs, 5);
  EXPECT_EQ(refused(R"({"prompt": "x", "logprobs": true})").param, "logprobs");
  // llama-server's n_probs has a bound of its own, well above OpenAI's 20.
  EXPECT_EQ(parsed(R"({"prompt": "x", "n_probs": 100})").request.sampling.logprobs, 100);
  EXPECT_EQ(parsed(R"({"prompt": "x", "logprobs": 1024})").request.sampling.logprobs, 1024);
  EXPECT_EQ(refused(R"({"prompt": "x", "n_probs": 1025})").param, "n_probs");
  EXPECT_EQ(refused(R"({"prompt": "x", "logprobs": 1025})").param, "logprobs");
  // post_sampling_probs and return_tokens are read here (and refused on /v1/completions).
  EXPECT_FALSE(parsed(R"({"prompt": "x", "n_probs": 2})").request.sampling.post_sampling_probs);
  EXPECT_TRUE(parsed(R"({"prompt": "x", "n_probs": 2, "post_sampling_probs": true})")
                  .request.sampling.post_sampling_probs);
  EXPECT_EQ(
      parsed(R"({"prompt": "x", "post_sampling_probs": true})").settings["post_sampling_probs"],
      true);
  EXPECT_EQ(refused(R"({"prompt": "x", "post_sampling_probs": 1})").param, "post_sampling_probs");
  EXPECT_FALSE(parsed(R"({"prompt": "x"})").return_tokens);
  EXPECT_TRUE(parsed(R"({"prompt": "x", "return_tokens": true})").return_tokens);
  EXPECT_EQ(refused(R"({"prompt": "x", "return_tokens": "yes"})").param, "return_tokens");
  EXPECT_EQ(refused(R"({"prompt": "x", "n_probs": -1})").param, "n_probs");
  EXPECT_EQ(parsed(R"({"prompt": "x", "n_probs": 2})").request.sampling.logprobs, 2);
  EXPECT_EQ(parsed(R"({"prompt": "x", "n_probs": 0})").request.sampling.logprobs, -1);
  EXPECT_EQ(refused(R"({"prompt": ["a", "b"]})").param, "prompt");
  EXPECT_EQ(refused(R"({"prompt": "x", "timings_per_token": 1})").param, "timings_per_token");
  EXPECT_TRUE(parsed(R"({"prompt": "x", "timings_per_token": true})").timings_per_token);
  EXPECT_EQ(refused(R"({"prompt": "x", "response_fields": [1]})").param, "response_fields[0]");
  EXPECT_EQ(refused(R"({"n_predict": 3})").param, "prompt");
  EXPECT_EQ(refused(R"({"prompt": "x", "temperature": -1})").param, "temperature");
  EXPECT_EQ(refused(R"({"prompt": "x", "repeat_last_n": -2})").param, "repeat_last_n");
  EXPECT_EQ(refused(R"({"prompt": "x", "repeat_penalty": 0})").param, "repeat_penalty");
  EXPECT_EQ(refused(R"({"input_extra": [{"filename": "a"}]})", true).param, "input_extra[0].text");
  EXPECT_EQ(refused(R"({"prompt": "x", "cache_prompt": "yes"})").param, "cache_prompt");
  EXPECT_EQ(refused(R"({"prompt": "x", "id_slot": "a"})").param, "id_slot");
}

// llama-server's penalties are llama.cpp's: all three over the last repeat_last_n (64)
// tokens of the prompt and the output; a chain without "penalties" turns them off.
// XTC in llama-server's default chain: after min_p, before the temperature (so it reads the
// raw logits, as top_p does); a threshold above 0.5 or a chain without it turns it off.
// Mirostat replaces llama.cpp's chain: its order is not refused, its stages are off, and the
// temperature applies even where the chain leaves it out (llama.cpp's common_sampler).
TEST(NativeRequest, MirostatReplacesTheChain) {
  const NativeRequest r = parsed(
      R"({"prompt": "x", "mirostat": 2, "mirostat_tau": 4, "samplers": ["top_p", "top_k"]})");
  const SamplingParams& s = r.request.sampling;
  EXPECT_EQ(s.mirostat, 2);
  EXPECT_FLOAT_EQ(s.mirostat_tau, 4.0f);
  EXPECT_FLOAT_EQ(s.temperature, 0.8f);  // llama-server's default, though the chain has none
  EXPECT_EQ(s.top_k, 0);
  EXPECT_EQ(s.top_p, 1.0f);
  EXPECT_EQ(s.min_p, 0.0f);
  EXPECT_EQ(r.settings["mirostat"], 2);
  EXPECT_EQ(r.settings["mirostat_tau"], 4.0);
  EXPECT_EQ(refused(R"({"prompt": "x", "mirostat": 2, "samplers": ["top_k", "mirostat"]})").param,
            "samplers[1]");
  EXPECT_EQ(refused(R"({"prompt": "x", "mirostat": -1})").param, "mirostat");
  // adaptive-p is a stage of the chain Mirostat replaces: its target never acts (QA).
  EXPECT_EQ(parsed(R"({"prompt": "x", "mirostat": 2, "adaptive_target": 0.5,
                      "samplers": ["adaptive_p"]})")
                .request.sampling.mirostat,
            2);
  EXPECT_EQ(parsed(R"({"prompt": "x"})").settings["mirostat"], 0);
}

TEST(NativeRequest, XtcIsReadInTheChain) {
  const NativeRequest r =
      parsed(R"({"prompt": "x", "xtc_probability": 0.5, "xtc_threshold": 0.2})");
  EXPECT_FLOAT_EQ(r.request.sampling.xtc_probability, 0.5f);
  EXPECT_FLOAT_EQ(r.request.sampling.xtc_threshold, 0.2f);
  EXPECT_TRUE(r.request.sampling.temperature_last);
  EXPECT_TRUE(r.request.sampling.xtc_on());
  EXPECT_FALSE(parsed(R"({"prompt": "x", "xtc_probability": 0.5, "samplers": ["top_k"]})")
                   .request.sampling.xtc_on());
  // Alone with the temperature, its side of the temperature decides how it reads the logits.
  EXPECT_TRUE(
      parsed(R"({"prompt": "x", "xtc_probability": 0.5, "samplers": ["xtc", "temperature"]})")
          .request.sampling.temperature_last);
  EXPECT_FALSE(
      parsed(R"({"prompt": "x", "xtc_probability": 0.5, "samplers": ["temperature", "xtc"]})")
          .request.sampling.temperature_last);
}

// DRY in llama-server's default chain, right after the penalties; reported in
// generation_settings (its whole-history window as -1 here, the context on the server); a
// chain without it turns it off; one placing it after a filter or before the penalties is
// refused.
TEST(NativeRequest, DryIsReadInTheChain) {
  const NativeRequest r = parsed(
      R"({"prompt": "x", "dry_multiplier": 0.8, "dry_allowed_length": 3,
          "dry_sequence_breakers": ["\n", "###"]})");
  EXPECT_TRUE(r.request.sampling.dry_on());
  EXPECT_EQ(r.request.sampling.dry_allowed_length, 3);
  EXPECT_FLOAT_EQ(r.settings["dry_multiplier"].get<float>(), 0.8f);
  EXPECT_FLOAT_EQ(r.settings["dry_base"].get<float>(), 1.75f);
  EXPECT_EQ(r.settings["dry_allowed_length"], 3);
  EXPECT_EQ(r.settings["dry_penalty_last_n"], -1);
  EXPECT_EQ(r.settings["dry_sequence_breakers"], nlohmann::ordered_json({"\n", "###"}));
  EXPECT_FALSE(parsed(R"({"prompt": "x", "dry_multiplier": 0.8, "samplers": ["top_k"]})")
                   .request.sampling.dry_on());
  expect_order_refused({
      R"({"prompt": "x", "dry_multiplier": 0.8, "samplers": ["top_k", "dry"]})",
      R"({"prompt": "x", "dry_multiplier": 0.8, "samplers": ["temperature", "dry"]})",
      R"({"prompt": "x", "dry_multiplier": 0.8, "repeat_penalty": 1.1,
               "samplers": ["dry", "penalties"]})",
  });
  // Off, its place in the chain does not matter.
  EXPECT_FALSE(
      parsed(R"({"prompt": "x", "samplers": ["top_k", "dry"]})").request.sampling.dry_on());
}

// top_n_sigma in llama-server's default chain, before top_k; off at <= 0 (its default -1, as
// generation_settings reports it) or without the stage; refused after a filter that acts.
TEST(NativeRequest, TopNSigmaIsReadInTheChain) {
  const NativeRequest r = parsed(R"({"prompt": "x", "top_n_sigma": 1.5})");
  EXPECT_FLOAT_EQ(r.request.sampling.top_n_sigma, 1.5f);
  EXPECT_FLOAT_EQ(r.settings["top_n_sigma"].get<float>(), 1.5f);
  EXPECT_FLOAT_EQ(parsed(R"({"prompt": "x"})").settings["top_n_sigma"].get<float>(), -1.0f);
  EXPECT_LE(parsed(R"({"prompt": "x", "top_n_sigma": 1.5, "samplers": ["top_k"]})")
                .request.sampling.top_n_sigma,
            0.0f);
  expect_order_refused({
      R"({"prompt": "x", "top_n_sigma": 1, "samplers": ["top_k", "top_n_sigma"]})",
      R"({"prompt": "x", "top_n_sigma": 1, "samplers": ["min_p", "top_n_sigma"]})",
      R"({"prompt": "x", "top_n_sigma": 1, "repeat_penalty": 1.2,
               "samplers": ["top_n_sigma", "penalties"]})",
  });
  // Its side of the temperature changes nothing: either is accepted.
  parsed(R"({"prompt": "x", "top_n_sigma": 1, "samplers": ["temperature", "top_n_sigma"]})");
}

// typ_p in llama-server's default chain, between top_k and top_p; off at 1 (its default, as
// generation_settings reports it) or without the stage; the orders the sampler has no form
// for are refused.
TEST(NativeRequest, TypicalPIsReadInTheChain) {
  const NativeRequest r = parsed(R"({"prompt": "x", "typical_p": 0.9})");
  EXPECT_FLOAT_EQ(r.request.sampling.typical_p, 0.9f);
  EXPECT_FLOAT_EQ(r.settings["typical_p"].get<float>(), 0.9f);
  EXPECT_TRUE(r.request.sampling.temperature_last);
  EXPECT_TRUE(r.request.sampling.min_p_last);
  EXPECT_FLOAT_EQ(parsed(R"({"prompt": "x"})").settings["typical_p"].get<float>(), 1.0f);
  EXPECT_FLOAT_EQ(parsed(R"({"prompt": "x", "typical_p": 0.9, "samplers": ["top_k"]})")
                      .request.sampling.typical_p,
                  1.0f);
  expect_order_refused({
      R"({"prompt": "x", "typical_p": 0.9, "samplers": ["typ_p", "top_k"]})",
      R"({"prompt": "x", "typical_p": 0.9, "samplers": ["top_p", "typ_p"]})",
      R"({"prompt": "x", "typical_p": 0.9, "samplers": ["typ_p", "min_p", "top_p"]})",
      R"({"prompt": "x", "typical_p": 0.9, "samplers": ["typ_p", "temperature", "top_p"]})",
      R"({"prompt": "x", "typical_p": 0.9, "samplers": ["typ_p", "top_n_sigma"],
               "top_n_sigma": 1})",
  });
  // min_p before it, or after top_p; the temperature after all of them: accepted.
  EXPECT_FALSE(
      parsed(R"({"prompt": "x", "typical_p": 0.9, "samplers": ["min_p", "typ_p", "top_p"]})")
          .request.sampling.min_p_last);
  parsed(R"({"prompt": "x", "typical_p": 0.9, "samplers": ["typ_p", "top_p", "min_p"]})");
  // min_p after typ_p where top_p does not act (SillyTavern sends top_p 1 with llama-server's
  // default chain, the web UI its letters) cuts what typ_p kept.
  for (const char* body :
       {R"({"prompt": "x", "typical_p": 0.9, "top_p": 1, "min_p": 0.05})",
        R"({"prompt": "x", "typical_p": 0.9, "top_p": 1, "samplers": "edskypmxt"})",
        R"({"prompt": "x", "typical_p": 0.9, "samplers": ["typ_p", "min_p"]})"}) {
    EXPECT_TRUE(parsed(body).request.sampling.min_p_last) << body;
  }
  EXPECT_FALSE(parsed(R"({"prompt": "x", "typical_p": 0.9, "samplers": ["temperature", "typ_p"]})")
                   .request.sampling.temperature_last);
}

// The dynamic temperature rides the temperature stage: reported in generation_settings, off
// without the stage, and refused where the temperature sits between filters (its entropy is
// of the whole row or of what every filter kept).
TEST(NativeRequest, DynatempIsReadWithTheTemperature) {
  const NativeRequest r =
      parsed(R"({"prompt": "x", "dynatemp_range": 0.5, "dynatemp_exponent": 2})");
  EXPECT_TRUE(r.request.sampling.dynatemp_on());
  EXPECT_FLOAT_EQ(r.request.sampling.dynatemp_exponent, 2.0f);
  EXPECT_TRUE(r.request.sampling.temperature_last);
  EXPECT_FLOAT_EQ(r.settings["dynatemp_range"].get<float>(), 0.5f);
  EXPECT_FLOAT_EQ(r.settings["dynatemp_exponent"].get<float>(), 2.0f);
  EXPECT_FALSE(parsed(R"({"prompt": "x", "dynatemp_range": 0.5, "samplers": ["top_k"]})")
                   .request.sampling.dynatemp_on());
  EXPECT_EQ(refused(R"({"prompt": "x", "dynatemp_range": 0.5,
                        "samplers": ["top_k", "temperature", "top_p"]})")
                .param,
            "samplers");
  EXPECT_FALSE(parsed(R"({"prompt": "x", "dynatemp_range": 0.5,
                          "samplers": ["temperature", "top_k", "top_p"]})")
                   .request.sampling.temperature_last);
  // With top_k the only filter that acts (SillyTavern's top_p 1 and min_p 0), the side of
  // the temperature still says what it measures: after, top_k's kept set (QA).
  EXPECT_TRUE(parsed(R"({"prompt": "x", "dynatemp_range": 0.5, "top_p": 1, "min_p": 0})")
                  .request.sampling.temperature_last);
  EXPECT_FALSE(parsed(R"({"prompt": "x", "dynatemp_range": 0.5, "top_p": 1, "min_p": 0,
                          "samplers": ["temperature", "top_k"]})")
                   .request.sampling.temperature_last);
  // At temperature 1 too: a dynamic temperature acts there (QA).
  EXPECT_TRUE(parsed(R"({"prompt": "x", "dynatemp_range": 1, "temperature": 1,
                         "samplers": ["top_k", "temperature"]})")
                  .request.sampling.temperature_last);
  // Without the range, top_k alone leaves the order as it was (it commutes).
  EXPECT_FALSE(
      parsed(R"({"prompt": "x", "top_p": 1, "min_p": 0})").request.sampling.temperature_last);
}

TEST(NativeRequest, PenaltiesAreLlamaCppsOverItsWindow) {
  const NativeRequest r = parsed(
      R"({"prompt": "x", "presence_penalty": 0.5, "frequency_penalty": -1, "repeat_penalty": 1.1})");
  EXPECT_EQ(r.request.sampling.penalty_last_n, 64);
  EXPECT_FLOAT_EQ(r.request.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.request.sampling.frequency_penalty, -1.0f);
  EXPECT_FLOAT_EQ(r.request.sampling.repetition_penalty, 1.1f);
  EXPECT_TRUE(r.request.sampling.has_prompt_penalty());
  EXPECT_EQ(r.settings["repeat_last_n"], 64);
  EXPECT_FLOAT_EQ(r.settings["repeat_penalty"].get<float>(), 1.1f);
  const NativeRequest whole =
      parsed(R"({"prompt": "x", "frequency_penalty": 1, "penalty_last_n": -1})");
  EXPECT_EQ(whole.request.sampling.penalty_last_n, SamplingParams::kWholeHistory);
  EXPECT_EQ(whole.settings["repeat_last_n"], -1);
  const NativeRequest off = parsed(R"({"prompt": "x", "presence_penalty": 1, "repeat_last_n": 0})");
  EXPECT_FALSE(off.request.sampling.has_output_penalties());
  const NativeRequest left_out =
      parsed(R"({"prompt": "x", "presence_penalty": 0.5, "samplers": ["top_k"]})");
  EXPECT_FALSE(left_out.request.sampling.has_output_penalties());
}

TEST(NativeRequest, ReadsLlamaServersLogitBiasPairs) {
  const NativeRequest r =
      parsed(R"({"prompt": "x", "logit_bias": [[5, 1.5], [3, false], [9, -1000]]})");
  const auto& bias = r.request.sampling.logit_bias;
  ASSERT_EQ(bias.size(), 3u);
  EXPECT_EQ(bias[0], (std::pair<int32_t, float>{3, -100.0f}));  // false bans it
  EXPECT_EQ(bias[1], (std::pair<int32_t, float>{5, 1.5f}));
  EXPECT_EQ(bias[2], (std::pair<int32_t, float>{9, -100.0f}));
  EXPECT_EQ(refused(R"({"prompt": "x", "logit_bias": [["hello", 1]]})").param, "logit_bias[0]");
  // The object form takes false as a ban too.
  const NativeRequest object = parsed(R"({"prompt": "x", "logit_bias": {"4": false, "6": 2}})");
  EXPECT_EQ(object.request.sampling.logit_bias,
            (std::vector<std::pair<int32_t, float>>{{4, -100.0f}, {6, 2.0f}}));
}

TEST(NativeRequest, IgnoresTheModelAsLlamaServerDoes) {
  // A proxy's model name (llama-swap) must not turn a plugin's request into a 404.
  EXPECT_EQ(parsed(R"({"prompt": "x", "model": "qwen-coder"})").request.model, "");
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
