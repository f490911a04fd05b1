// Per-request sampling parameters, as a request states them. Parsed and validated
// by protocol, carried unchanged by the scheduler, applied by the runner's fused
// sampler. A plain value type: no threads, no I/O.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

namespace tandem {

class DryBreakers;  // protocol/dry_breakers.h

struct SamplingParams {
  float temperature = 1.0f;  // 0: argmax (ties to the lowest id), no noise drawn
  // llama.cpp's dynamic temperature (runner/sampler/dynatemp.h), with temperature > 0: the
  // step's temperature within [max(0, T - range), T + range] by the normalized entropy of
  // what the temperature stage sees, to the power dynatemp_exponent. range 0: off.
  float dynatemp_range = 0.0f;
  float dynatemp_exponent = 1.0f;
  bool dynatemp_on() const { return dynatemp_range > 0.0f && temperature > 0.0f; }
  int32_t top_k = 0;   // 0, or k >= vocab: off
  float top_p = 1.0f;  // in (0, 1]; 1: off
  float min_p = 0.0f;  // in [0, 1); 0: off
  // llama.cpp's top-n-sigma (runner/sampler/top_n_sigma.h): keeps z >= z_max - n * sigma
  // (sigma: the standard deviation of the row's finite z), before every other filter;
  // <= 0: off (llama-server's default -1).
  float top_n_sigma = -1.0f;
  bool top_n_sigma_on() const { return top_n_sigma > 0.0f; }
  // llama.cpp's locally typical sampling (typ_p, runner/sampler/typical.h), after top_k and
  // before top_p: in [0, 1]; 1: off.
  float typical_p = 1.0f;
  bool typical_on() const { return typical_p < 1.0f; }
  uint64_t seed = 0;  // Gumbel noise key; the server draws one when the request has none
  // Added to the logits before everything else; a bias <= -100 bans the token.
  std::vector<std::pair<int32_t, float>> logit_bias;
  bool ignore_eos = false;  // EOS is banned (but an id stop_token_ids names)

  // End-of-generation ids and stop_token_ids are banned while fewer than min_tokens tokens
  // have been generated (the device bans them for those positions, as vLLM does).
  int32_t min_tokens = 0;
  // Ids that end generation with finish_reason "stop" (their text is not emitted unless
  // include_stop_str_in_output); sorted, distinct. ignore_eos does not ban them.
  std::vector<int32_t> stop_token_ids;

  // Penalties, applied after logit_bias (vLLM's order: repetition, frequency, presence).
  // repetition_penalty (> 0; 1 off) over the prompt's and the output's tokens:
  // logit > 0 ? logit / p : logit * p. frequency_penalty and presence_penalty ([-2, 2]; 0
  // off) over the output's tokens: logit -= frequency * count, then logit -= presence.
  float repetition_penalty = 1.0f;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  // Which tokens the penalties count. 0: vLLM's definitions above. N > 0: llama.cpp's
  // (llama-server's repeat_last_n), which clients of llama-server send: all three
  // penalties count the last N tokens of the prompt and the output taken together, and
  // logit -= count * frequency + presence in one subtraction. kWholeHistory: every token.
  static constexpr int32_t kWholeHistory = std::numeric_limits<int32_t>::max();
  int32_t penalty_last_n = 0;

  // Log-probabilities to return, from the model's log-softmax before anything above or
  // below changes the logits: -1 none; k >= 0 (at most 20, or /completion's n_probs
  // bound, kMaxNativeProbs): the chosen token's and the k most
  // likely. prompt_logprobs: the same for every prompt token after the first (echo).
  int32_t logprobs = -1;
  int32_t prompt_logprobs = -1;
  // llama-server's post_sampling_probs: `logprobs` then weighs the tokens as the draw did
  // instead (runner/sampler/sampler.h, "Post-sampling probabilities"): the log of each
  // token's probability of being drawn, after every bias, penalty, ban, mask, filter and
  // the temperature, over the tokens the draw chose from; the k listed are the likeliest
  // of those. prompt_logprobs stay the model's.
  bool post_sampling_probs = false;

  // llama.cpp's "infill" sampler after the filters (llama-server's /infill, code completion):
  // end when the end-of-generation tokens hold enough of the kept mass, else merge tokens
  // whose text is a prefix of another's and keep only the clearly likely ones, then draw
  // (runner/sampler/sampler.h, step 5). Ignored when temperature is 0 (greedy).
  bool infill = false;

  // llama.cpp's XTC after the filters, before the draw (runner/sampler/xtc.h): with
  // probability xtc_probability, drawn per row and position from the seed, the kept tokens
  // at least xtc_threshold likely are dropped but the least likely of them, when at least
  // two are. Off at probability 0, or a threshold above 0.5 (two cannot reach it).
  float xtc_probability = 0.0f;
  float xtc_threshold = 0.1f;
  bool xtc_on() const { return xtc_probability > 0.0f && xtc_threshold <= 0.5f; }

  // llama.cpp's DRY ("don't repeat yourself", runner/sampler/dry.h) after the penalties,
  // over the last dry_last_n tokens of the prompt and the output taken together (like a
  // penalty window; kWholeHistory: every one): a token that would extend a repeat of the
  // history's end longer than dry_allowed_length tokens, counted back to the last sequence
  // breaker, gets logit -= dry_multiplier * dry_base^(length - dry_allowed_length). Off at
  // multiplier 0 or window 0; dry_base >= 1 (the parser checks). dry_breakers: null is none.
  float dry_multiplier = 0.0f;
  float dry_base = 1.75f;
  int32_t dry_allowed_length = 2;
  int32_t dry_last_n = kWholeHistory;
  std::shared_ptr<const DryBreakers> dry_breakers;
  bool dry_on() const { return dry_multiplier > 0.0f && dry_last_n > 0; }

  // llama.cpp's Mirostat (runner/sampler/mirostat.h): 1 or 2 replaces the whole chain, as
  // in llama.cpp, by the temperature and then Mirostat's own cut, which adapts to keep each
  // token's surprise near mirostat_tau (its running estimate mu, carried from token to
  // token, starts at 2 tau and moves by mirostat_eta times the error). Only logit_bias, the
  // bans and a grammar's mask act before it: the parser turns the penalties, DRY, XTC and
  // the filters off. 0: off.
  int32_t mirostat = 0;
  float mirostat_tau = 5.0f;
  float mirostat_eta = 0.1f;

  // llama.cpp's adaptive-p (runner/sampler/adaptive_p.h), the draw at the end of a chain that
  // names it: the kept tokens' probabilities p are turned into logits that peak where p is
  // at a target that adapts (2 adaptive_target - the decayed average of the chosen tokens'
  // p), so the text keeps choosing tokens about that likely. adaptive_target in [0, 1] (< 0:
  // off); adaptive_decay in [0, 0.99], the average's decay. Off under Mirostat.
  float adaptive_target = -1.0f;
  float adaptive_decay = 0.9f;
  bool adaptive_on() const { return adaptive_target >= 0.0f && mirostat == 0; }

  // llama.cpp's chain orders (llama-server's `samplers`), where they differ from vLLM's
  // (temperature, then min_p, top_k, top_p over what is left):
  // - temperature_last: min_p, top_k and top_p choose the kept set from the raw logits (as
  //   at temperature 1); the temperature applies only to the draw among the kept tokens.
  // - min_p_last: min_p applies after top_p, or typ_p where top_p is off (keeping, of
  //   the tokens they kept, those with p >= min_p * the best one's p), not before top_k.
  // llama-server's default chain (top_k, top_p, min_p, temperature) sets both.
  bool temperature_last = false;
  bool min_p_last = false;

  // Whether repetition, frequency or presence acts.
  bool counts_tokens() const {
    return frequency_penalty != 0.0f || presence_penalty != 0.0f || repetition_penalty != 1.0f;
  }
  // Whether a penalty reads the output (every one that acts, DRY included).
  bool has_output_penalties() const { return counts_tokens() || dry_on(); }
  // Whether a penalty reads the prompt: repetition always, the others in a llama.cpp
  // window, and DRY.
  bool has_prompt_penalty() const {
    return repetition_penalty != 1.0f || (penalty_last_n > 0 && counts_tokens()) || dry_on();
  }
  // How many of the last tokens of the prompt, and of the output, the penalties read: every
  // one under vLLM's definitions, else the longer of llama.cpp's windows that act.
  int32_t penalty_reach() const {
    int32_t reach = 0;
    if (counts_tokens()) reach = penalty_last_n > 0 ? penalty_last_n : kWholeHistory;
    if (dry_on()) reach = std::max(reach, dry_last_n);
    return reach;
  }
};

}  // namespace tandem
