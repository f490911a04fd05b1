// The fused sampler: one row of logits and its request's SamplingParams in, one token out
// (DESIGN.md, "The fused sampler"). A Sampler is per-thread scratch: not thread-safe, reused
// across rows and steps, and it allocates nothing per call once warm (after the first call
// with the longest logit_bias list). A row's token depends only on its logits, its
// parameters, its seed and its position: never on other rows, the thread or the CPU's ISA.
//
// Order of operations, all per row:
//  0. Log-probabilities, when asked (params.logprobs >= 0), from the logits as they come
//     (post-sampling probabilities instead: at the draw, below).
//  1. logit_bias: the bias is added to the logit; a bias <= -100 bans the token. Ids outside
//     the vocabulary are ignored. Then the penalties (sampling_params.h; each token once,
//     whatever its number of occurrences: repetition over prompt and output, then
//     frequency * count, then presence, over the output; in a llama.cpp window all three
//     over its last tokens of both), then llama.cpp's DRY (dry.h) over its window of both.
//     ignore_eos then bans every id in
//     SamplerConfig::eog_ids that params.stop_token_ids does not name; RowHistory::ban_stop
//     (min_tokens not reached) bans them and params.stop_token_ids. Then the grammar mask
//     (RowHistory::allowed, when given) bans every token it does not allow. Banned tokens, -inf
//     logits and NaN logits are never sampled.
//  2. temperature <= 0 (or NaN): greedy. The token is the argmax of the biased logits, ties to
//     the lowest id; nothing else applies and no noise is drawn. With XTC (3b) or typ_p on,
//     the filters and XTC run on those logits as at temperature 1 and the token is the argmax
//     of what they keep (llama.cpp's greedy takes the best its chain leaves, and XTC and
//     typ_p may drop the top token).
//  3. Otherwise z_i = logit_i * (1/T), the reciprocal rounded to float once, so T = 1 leaves
//     the logits as they are. Then the filters, in vLLM's order (min_p, then top_k, then
//     top_p over what they left, renormalized), all after llama.cpp's top-n-sigma when it
//     is on. Rank order is z descending, ties to the lower id; each filter keeps a prefix of
//     that order, so the kept set is the first n tokens in rank order:
//     - top_n_sigma (off when <= 0, top_n_sigma.h): keeps z_i - z_max >= -n * sigma, sigma
//       the standard deviation of the row's finite z. min_p, top_k and top_p read what it
//       leaves (top_p's S is then summed over it, in increasing id order).
//     - min_p (off when <= 0): keeps z_i - z_max >= log(min_p) (p_i >= min_p * p_max); tied
//       tokens are kept or dropped together. The top token always survives.
//     - top_k (off when <= 0 or >= vocab): the first k ranks of those. Exactly k tokens are
//       kept (fewer if fewer are left); ties at the k-th place go to the lowest ids.
//     - top_p (off when >= 1): the shortest rank prefix of the tokens left whose mass
//       reaches p of theirs, i.e. whose sum of e_i = exp(z_i - z_max) is >= p * S (the token
//       that crosses p is kept). S is the sum over the tokens min_p and top_k left: over the
//       whole vocabulary in the kernels' shared 16-lane order when neither is on, else in
//       increasing id order (also when typ_p is on: then over what typ_p kept). e_i is the
//       sampler's own float exp (0 below z_max - 86); the
//       sums are float sums in a fixed order, so a cut within rounding of p is decided by
//       rounding (the same way on every run and CPU). Ties beyond the cut go to the lowest
//       ids. So top_k 40 with top_p 0.9 keeps the nucleus of the 40, as vLLM and llama.cpp
//       do, not of the whole vocabulary.
//     - typ_p (off when >= 1; typical.h), between top_k and top_p: of the tokens top_k (or
//       top_n_sigma and min_p, or nothing) left, the locally typical ones, which need not be
//       a rank prefix (it may drop the top token); top_p then weighs what it kept.
//  3b. XTC (params.xtc_on(), xtc.h): when the row's XTC draw for this position fires, the
//     kept tokens with p_i = softmax of z over the kept set >= xtc_threshold leave it, all
//     but the least likely of them (ties: the highest id), when at least two reach it. The
//     z are as the filters read them (raw before a late temperature).
//  3c. A dynamic temperature (params.dynatemp_on(), dynatemp.h) replaces 1/T: over the kept
//     set's z after XTC when the temperature comes last (temperature_last), else over the
//     whole row before step 3; a T_dyn of 0 takes the best token, as greedy.
//  4. Gumbel-max over the kept set: token = argmax_i (z_i + g_i), ties to the lowest id, with
//     g_i = -log(-log(u_i)) and u_i = uniform_open01(philox word) defined as follows.
//     Key = {seed & 0xffffffff, seed >> 32}. For vocabulary id i, counter =
//     {i / 4, 0, position & 0xffffffff, (uint64)position >> 32}, and u_i comes from word i % 4
//     of philox4x32_10(counter, key). Both logs are the sampler's own float log (a fixed
//     sequence of IEEE multiplies and adds, accurate to ~1 ulp), so the AVX-512 and portable
//     paths give bit-identical noise and hence identical tokens.
//     When the kept set is a single token, it is returned without drawing noise.
//  4b. params.adaptive_on() (llama.cpp's adaptive-p, adaptive_p.h) replaces step 4's draw,
//     last (after infill too), over the kept set even without filters (all finite tokens):
//     p_i = softmax of z_i * scale over it (the sampler's float exp, summed in double in the
//     set's order), then the Gumbel-max of step 4 over logit_of(p_i, adapted), adapted from
//     the request's average (RowHistory::state), which then takes the chosen token's p. A
//     single token is returned without noise, its p (1) still averaged. Greedy rows skip it.
//  5. params.infill (llama.cpp's "infill" sampler, infill.h) replaces step 4's draw. Over the
//     kept set in rank order with p_i = softmax of z over it (the sampler's float exp,
//     summed in rank order):
//     - p_eog = sum of p over the kept ids in SamplerConfig::eog_ids, p_txt over the rest. If
//       3 * p_eog * n_kept > p_txt, only the kept EOG tokens stay, renormalized.
//     - Otherwise, for i0 in rank order, for i1 in rank order (stopping once i0 is merged
//       away; skipping i1 == i0 and merged ones): when piece(i0) is non-empty and a byte
//       prefix of piece(i1) (SamplerConfig::pieces), the likelier of the two (i0 unless
//       p[i1] > p[i0]) takes the other's p, which is merged away (p = 0).
//     - Text (non-EOG) tokens with p < 0.2 go; EOG ones stay. If no text token is left, the
//       result is SamplerConfig::eot_id alone; if that token is banned for the row (its z is
//       -inf or NaN: logit_bias, ignore_eos, min_tokens, the grammar) or there is none, the
//       tokens not merged away stay instead, renormalized, and the draw below picks one.
//     - Else renormalize; with n text tokens left, text tokens with p < 1 / (n + 1) go;
//       renormalize again.
//     The draw is llama.cpp's dist after the step: the softmax of the z of what is left
//     (not of the masses above, which only decide what is left), by step 4's Gumbel-max:
//     token = argmax of (z_i + g_i) over the tokens not merged away, ties to the lowest id;
//     a single token is returned without noise. Greedy rows and +inf logits never get here.
// Mirostat (params.mirostat 1 or 2, mirostat.h) replaces steps 1 to 5 but logit_bias, the
// bans and the mask, as llama.cpp's chain does (no penalties, DRY, filters, XTC, dynamic
// temperature or infill): at temperature <= 0 greedy; else z = logit * (1/T), then
// - v2: the kept set is the tokens with z_i - z_max >= log(sum of e_i) - mu ln 2 (surprise
//   -log2 p_i within mu, p the softmax of z over the row, its sum in the kernels' 16-lane
//   order), the top token alone if none;
// - v1: the top k in rank order, k = mirostat::v1_k of the 100 best z (fewer if fewer are
//   finite) and mu;
// then step 4's Gumbel-max over it, and mu -= eta * (-log2 p'_c - tau), p'_c the chosen
// token's e_c over the sum of the kept set's e (in increasing id order). mu starts at
// 2 tau (RowHistory::state carries it).
// Post-sampling probabilities (params.post_sampling_probs, with logprobs >= 0): the
// RowLogprobs then describe the draw instead of the model. Over the set the draw chose from
// (after step 1's changes, the filters, XTC and infill's merges), x_i = z_i * the draw's
// scale (1/T, or the dynamic temperature's), and logprob_i = x_i - x_max - log(sum of
// exp(x_j - x_max)) (the sampler's float exp, summed in double in the set's order): the
// chosen token's, and the k best of the set in rank order (x descending, ties to the lower
// id), those whose probability is not 0 in float. Without filters the set is the row; a
// step that takes a token without a draw (greedy, a single survivor, a +inf logit, the
// fallback) gives it logprob 0 (probability 1) and lists it alone.
// Edge cases: a +inf z beats everything (the lowest id among the +inf ones is returned). If
// every token is banned, -inf or NaN, the sampler falls back to the argmax of the raw
// (unbiased, unbanned) logits, ignoring NaN; if those are all -inf or NaN, it returns 0.
// A grammar mask holds in the fallback too: the argmax is over the allowed tokens' raw
// logits, else the lowest allowed id; only a mask that allows nothing falls back as above.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "protocol/sampling_params.h"

namespace tandem {

namespace sampler_kernels {
struct Kernels;
struct TopList;
}  // namespace sampler_kernels
namespace sampler_infill {
struct Scratch;
}
namespace sampler_dry {
struct Scratch;
}
namespace sampler_typical {
struct Scratch;
}

class TokenPieces;

// What a row's stateful stages carry from token to token, owned by the request and advanced
// by each of its draws: Mirostat's mu, adaptive-p's running average of the chosen tokens'
// probabilities (adaptive_sum / adaptive_weight, llama.cpp's weighted_sum and total_weight).
struct SamplerState {
  float mirostat_mu = 0.0f;
  float adaptive_sum = 0.0f;
  float adaptive_weight = 0.0f;
  // The state before the first token, as llama.cpp starts it: mu 2 tau, the average primed
  // at the target (adaptive_target / (1 - decay) over 1 / (1 - decay)).
  static SamplerState first(const SamplingParams& params);
  // Whether a request with these parameters has any state to carry.
  static bool needed(const SamplingParams& params) {
    return params.mirostat != 0 || params.adaptive_on();
  }
};

// A row's softmax partials, sampler_kernels::kLogitPanel logits a panel (Kernels::
// panel_partials): each panel's max and its sum of exps below that max. The forward pass
// computes them where it writes the logits (ForwardPass::partials); a sampler given none
// computes the same bits itself, so a row's log-probabilities never depend on which did.
struct LogitPartials {
  std::span<const float> max;
  std::span<const float> sum;
};

// What the sampler needs of a row besides its logits and parameters.
struct RowHistory {
  bool ban_stop = false;  // min_tokens not reached: eog_ids and stop_token_ids banned
  // The prompt's tokens (repetition_penalty; every penalty in a llama.cpp window; DRY), and
  // the tokens generated so far (every penalty). A window reads only their last
  // SamplingParams::penalty_reach() tokens, so a caller may pass just those.
  std::span<const int32_t> prompt;
  std::span<const int32_t> output;
  // The grammar's mask (grammar::Matcher::fill_mask): bit (id % 32) of word id / 32 set
  // when token id may come next; ids past its end are not allowed. Empty: no constraint.
  std::span<const uint32_t> allowed = {};
  // The request's state (Mirostat, adaptive-p), read and advanced by the row's draw. Null:
  // a fresh one (SamplerState::first) that is not kept.
  SamplerState* state = nullptr;
  // The raw logits' partials, for the log-probabilities; empty: the sampler computes them.
  LogitPartials partials = {};
  // The raw logits kept apart (ForwardPass::raw_logits), for a row asking for
  // log-probabilities that sampling changes in place (touches_row): the chosen token's is
  // read there. Empty: the sampler copies the row before changing it.
  std::span<const float> raw = {};
};

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0;
};

// A token's log-probability under the model (the log-softmax of the raw logits, before
// logit_bias, penalties, bans, temperature and filters, as vLLM returns by default), and
// the k most likely tokens', most likely first (ties: the lower id; -inf and NaN logits
// never listed, so there may be fewer than k).
struct RowLogprobs {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;
};

struct SamplerConfig {
  // A constructor rather than an aggregate, so that {vocab, eog_ids} still says all a
  // Sampler without infill needs (-Wmissing-field-initializers).
  SamplerConfig() = default;
  SamplerConfig(int32_t vocab, std::vector<int32_t> eog,
                std::shared_ptr<const TokenPieces> token_pieces = {}, int32_t end_of_turn = -1)
      : vocab_size(vocab),
        eog_ids(std::move(eog)),
        pieces(std::move(token_pieces)),
        eot_id(end_of_turn) {}

  int32_t vocab_size = 0;
  std::vector<int32_t> eog_ids;  // end-of-generation ids; banned by ignore_eos
  // For params.infill (step 5). Each token's piece, shared by every Sampler of a model; null
  // treats every piece as "" (nothing merges).
  std::shared_ptr<const TokenPieces> pieces;
  // The end-of-turn id (llama.cpp's token_eot), infill's "nothing likely is left" answer;
  // -1 (or an id outside the vocabulary): the first of eog_ids in the vocabulary, if any.
  int32_t eot_id = -1;
};

class Sampler {
 public:
  explicit Sampler(SamplerConfig config);
  ~Sampler();
  Sampler(Sampler&&) noexcept;
  Sampler& operator=(Sampler&&) noexcept;

  // Samples one token from a row of logits (vocab_size floats; overwritten as scratch).
  // position: the sequence position of the token being sampled (the counter's upper words).
  // logprobs: filled when params.logprobs >= 0 (k = params.logprobs).
  int32_t sample(std::span<float> logits, const SamplingParams& params, int64_t position,
                 const RowHistory& history = {}, RowLogprobs* logprobs = nullptr);

  // The log-probability of `target` and the top k (k <= 0: none) under a row of logits,
  // which are left as they are: what sample() reports, for prompt tokens (echo).
  // partials: as RowHistory's.
  void logprobs_of(std::span<const float> logits, int32_t target, int32_t k, RowLogprobs& out,
                   LogitPartials partials = {});

  // Whether sampling with these parameters may change a row in place before it picks (so a
  // row asking for log-probabilities needs its raw logits kept apart, RowHistory::raw); a
  // grammar's mask and min_tokens' bans, which the parameters do not show, change it too.
  static bool may_touch_row(const SamplingParams& params);

  // True when this Sampler runs the AVX-512 kernels: the CPU has them and TANDEM_ISA, read at
  // construction, names no lower ISA (avx2, portable). Both give identical tokens.
  bool uses_avx512() const;

 private:
  struct RankedToken {
    float z;
    int32_t id;
    float e;  // exp(z - z_max), filled only when top_p needs it
  };
  static constexpr int32_t kUnknownTop = -2;  // no argmax known in advance
  bool touches_row(const SamplingParams& params, const RowHistory& history) const;
  int32_t choose(std::span<float> logits, const SamplingParams& params, int64_t position,
                 std::span<const uint32_t> allowed, int32_t raw_top);
  // draw_scale: 1/T where the temperature applies only to the draw (temperature_last; z is
  // then the raw row), else 1.
  int32_t sample_filtered(std::span<float> z, const SamplingParams& params, int64_t position,
                          float z_max, int32_t raw_top, float draw_scale);
  // The top k tokens (fewer if fewer are above the floor) among those with
  // z - z_max >= floor, in ranked_, in no particular order.
  std::span<RankedToken> top_k_candidates(std::span<const float> z, float z_max, size_t k,
                                          float floor);
  // scale: the temperature's 1/T where it applies only to the draw (temperature_last).
  int32_t gumbel_over(std::span<const RankedToken> kept, uint64_t seed, int64_t position,
                      float scale = 1.0f);
  // Post-sampling probabilities into *post_ (null: not asked): over the whole row of
  // drawn z, or over the kept_z_ / kept_ids_ of a draw over `count` tokens.
  void weigh_row(std::span<const float> z, int32_t token);
  void weigh_kept(int32_t count, int32_t chosen_at);
  // The last draw over what is left: step 4's Gumbel-max, or adaptive-p's (step 4b).
  int32_t final_draw(std::span<const RankedToken> kept, const SamplingParams& params,
                     int64_t position, float scale);
  int32_t adaptive_over(std::span<const RankedToken> kept, const SamplingParams& params,
                        int64_t position, float scale);
  // The draw over the kept set: step 4's, or step 5's when the row asks for infill. z: the
  // row's tempered logits (infill reads whether its EOT token is banned).
  int32_t draw(std::span<const RankedToken> kept, std::span<const float> z,
               const SamplingParams& params, int64_t position, float scale = 1.0f);
  // Whether any of min_p, top_k, top_p and infill acts on a row of n tokens.
  static bool filters_act(const SamplingParams& params, int32_t n);
  int32_t fallback(std::span<float> logits, std::span<const uint32_t> allowed);
  // Sets every token that `allowed` does not allow to -inf.
  void apply_mask(std::span<float> logits, std::span<const uint32_t> allowed);
  void ban(std::span<float> logits, std::span<const int32_t> ids);
  void ban_unless_stop(std::span<float> logits, std::span<const int32_t> eog,
                       std::span<const int32_t> stop_ids);
  // kept in increasing id order, each with its e (relative to the row's top, z_max).
  float row_dynamic_temperature(std::span<float> x, const SamplingParams& params);
  float kept_dynamic_scale(std::span<const RankedToken> kept, const SamplingParams& params);
  // Mirostat's kept set and draw over a tempered row; advances state_->mirostat_mu.
  int32_t mirostat(std::span<float> z, const SamplingParams& params, int64_t position, float z_max);
  std::span<RankedToken> locally_typical(std::span<RankedToken> kept, float z_max, float typical_p);
  std::span<const RankedToken> exclude_top_choices(std::span<const RankedToken> kept,
                                                   const SamplingParams& params, int64_t position);
  void apply_penalties(std::span<float> logits, const SamplingParams& params,
                       const RowHistory& history);
  void apply_window_penalties(std::span<float> logits, const SamplingParams& params,
                              const RowHistory& history);
  // log Z of the row, and the top k into out.top; the row's argmax (-1: nothing finite) into
  // top. partials: as RowHistory's.
  float log_normalizer(std::span<const float> logits, int32_t k, RowLogprobs& out, int32_t& top,
                       LogitPartials partials);

  SamplerConfig config_;
  const sampler_kernels::Kernels* kernels_;
  std::vector<std::pair<int32_t, float>> saved_;  // raw logits of the biased and banned ids
  std::vector<float> cand_z_;                     // candidates' z, in id order
  std::vector<int32_t> cand_id_;                  // candidates' ids
  std::vector<float> cand_e_;                     // candidates' exp(z - z_max)
  std::vector<RankedToken> ranked_;               // candidates, partly ordered by rank
  std::vector<float> kept_z_;                     // the kept tokens' z
  std::vector<int32_t> kept_ids_;                 // and their ids
  std::vector<uint32_t> seen_;                    // per id: the stamp of the last penalty pass
  uint32_t stamp_ = 0;
  std::vector<float> xtc_z_;  // XTC's view of the kept set
  std::vector<int32_t> xtc_ids_;
  std::vector<uint8_t> xtc_drop_;
  std::vector<RankedToken> xtc_kept_;  // what XTC left
  std::vector<float> dyn_x_, dyn_e_;   // a late dynamic temperature's view of the kept set
  std::vector<int32_t> counts_;        // the counted ids, sorted
  std::vector<float> raw_;           // the row as it came, when logprobs are asked of a touched row
  RowLogprobs* post_ = nullptr;      // the row's post-sampling probabilities, while it is sampled
  int32_t post_k_ = 0;               // how many to list
  bool post_weighed_ = false;        // a draw filled them
  SamplerState* state_ = nullptr;    // the row's state, while it is sampled
  std::vector<float> adaptive_p_;    // adaptive-p's probabilities of the kept set
  std::vector<int32_t> post_order_;  // weigh_kept's ranking of the kept set
  std::unique_ptr<sampler_kernels::TopList> top_list_;    // the log-probability scan's k best
  std::unique_ptr<sampler_kernels::TopList> panel_list_;  // and the panels holding them
  std::vector<float> partial_max_, partial_sum_;          // partials the sampler computed
  std::unique_ptr<sampler_infill::Scratch> infill_;       // made by the first infill row
  std::unique_ptr<sampler_dry::Scratch> dry_;             // made by the first DRY row
  std::unique_ptr<sampler_typical::Scratch> typical_;     // made by the first typ_p row
};

}  // namespace tandem
