// The fused sampler's row logic (see sampler.h for the contract). The passes over the whole
// vocabulary are the kernels in sampler_kernels.h; what is here works on a candidate set
// that the kernels have already cut down to the tokens near the top:
// - greedy: one argmax pass;
// - no filter: one pruned Gumbel pass (Philox and logs only where a token could still win);
// - top_k: a running-threshold pass and nth_element, then top_p (if on) over those k's mass;
// - top_p alone: the exact Z pass, a ladder estimate of where the prefix ends, one collect
//   pass above it, and a quickselect on mass over the candidates (no full sort);
// - min_p: its cut is a threshold, so it bounds every candidate pass; with top_p (and no
//   top_k) one collect at the cut, whose mass top_p weighs.
#include "runner/sampler/sampler.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "runner/sampler/dry.h"
#include "runner/sampler/dynatemp.h"
#include "runner/sampler/infill.h"
#include "runner/sampler/kernels.h"
#include "runner/sampler/rank_order.h"
#include "runner/sampler/top_n_sigma.h"
#include "runner/sampler/typical.h"
#include "runner/sampler/xtc.h"

namespace tandem {
namespace {

using sampler_rank::precedes;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kPosInf = std::numeric_limits<float>::infinity();

// Reorders `ranked` so that its first c entries are the c first in rank order, c the length of
// the shortest rank prefix whose mass reaches `target`, and returns c; 0 if all of `ranked`
// falls short. A quickselect on mass: expected linear time, where a full sort would cost
// n log n on the thousands of candidates a flat distribution leaves.
template <typename T>
size_t top_p_cut(std::span<T> ranked, float target) {
  if (ranked.empty()) return 0;
  if (!(target > 0.0f)) {  // p so small that the top token alone reaches it
    std::iter_swap(ranked.begin(), std::min_element(ranked.begin(), ranked.end(), precedes<T>));
    return 1;
  }
  size_t lo = 0, hi = ranked.size();
  float acc = 0.0f;  // mass of ranked[0, lo), all kept; acc < target
  for (int rounds = 0; hi - lo > 32 && rounds < 64; ++rounds) {
    T* first = ranked.data() + lo;
    T* last = ranked.data() + hi;
    T* middle = first + (hi - lo) / 2;
    // Median of three as the pivot, moved to the end while partitioning.
    if (precedes(*middle, *first)) std::swap(*middle, *first);
    if (precedes(*(last - 1), *first)) std::swap(*(last - 1), *first);
    if (precedes(*middle, *(last - 1))) std::swap(*middle, *(last - 1));
    const T pivot = *(last - 1);
    T* split = std::partition(first, last - 1, [&](const T& t) { return precedes(t, pivot); });
    std::swap(*split, *(last - 1));
    float above = 0.0f;
    for (T* t = first; t != split; ++t) above += t->e;
    const size_t mid = static_cast<size_t>(split - ranked.data());
    if (acc + above >= target) {
      hi = mid;
      continue;
    }
    acc += above;
    acc += ranked[mid].e;
    if (acc >= target) return mid + 1;
    lo = mid + 1;
  }
  std::sort(ranked.begin() + static_cast<ptrdiff_t>(lo),
            ranked.begin() + static_cast<ptrdiff_t>(hi), precedes<T>);
  for (size_t i = lo; i < hi; ++i) {
    acc += ranked[i].e;
    if (acc >= target) return i + 1;
  }
  return 0;
}

// top_p over the tokens min_p and top_k left, renormalized: `kept` in increasing id order,
// each with its e, is reordered so that the returned prefix is the shortest in rank order
// whose mass reaches top_p of theirs (summed in id order: sampler.h's S). All of `kept` when
// rounding leaves the sum short.
template <typename T>
std::span<T> nucleus(std::span<T> kept, float top_p) {
  float mass = 0.0f;
  for (const T& t : kept) mass += t.e;
  const size_t cut = top_p_cut(kept, top_p * mass);
  return cut > 0 ? kept.first(cut) : kept;
}

}  // namespace

Sampler::Sampler(SamplerConfig config)
    : config_(std::move(config)), kernels_(&sampler_kernels::detected()) {
  if (config_.vocab_size <= 0) throw std::invalid_argument("Sampler: vocab_size must be > 0");
  // No end-of-turn id in the vocabulary: the first end-of-generation id in it, if any.
  const auto in_vocab = [&](int32_t id) { return id >= 0 && id < config_.vocab_size; };
  if (!in_vocab(config_.eot_id)) {
    const auto eog = std::find_if(config_.eog_ids.begin(), config_.eog_ids.end(), in_vocab);
    config_.eot_id = eog != config_.eog_ids.end() ? *eog : -1;
  }
  const auto n = static_cast<size_t>(config_.vocab_size);
  saved_.reserve(config_.eog_ids.size() + 16);
  cand_z_.resize(n + 16);  // collect may write up to 16 entries past the count
  cand_id_.resize(n + 16);
  cand_e_.resize(n);
  ranked_.resize(n);
  kept_ids_.resize(n);
  kept_z_.resize(n);
  seen_.assign(n, 0);
  top_list_ = std::make_unique<sampler_kernels::TopList>();
  panel_list_ = std::make_unique<sampler_kernels::TopList>();
}

Sampler::~Sampler() = default;
Sampler::Sampler(Sampler&&) noexcept = default;
Sampler& Sampler::operator=(Sampler&&) noexcept = default;

bool Sampler::uses_avx512() const { return kernels_ == sampler_kernels::avx512(); }

// ignore_eos bans end-of-generation, except the ids stop_token_ids names (sorted): those
// still end the output, as vLLM's "ignore EOS, stop at <|eot_id|>" asks.
void Sampler::ban_unless_stop(std::span<float> logits, std::span<const int32_t> eog,
                              std::span<const int32_t> stop_ids) {
  const auto n = static_cast<int32_t>(logits.size());
  for (int32_t id : eog) {
    if (id < 0 || id >= n || std::binary_search(stop_ids.begin(), stop_ids.end(), id)) continue;
    saved_.emplace_back(id, logits[id]);
    logits[id] = kNegInf;
  }
}

void Sampler::ban(std::span<float> logits, std::span<const int32_t> ids) {
  const auto n = static_cast<int32_t>(logits.size());
  for (int32_t id : ids) {
    if (id < 0 || id >= n) continue;
    saved_.emplace_back(id, logits[id]);
    logits[id] = kNegInf;
  }
}

namespace {

// What changes a row in place whatever its history: bias, ignore_eos's ban, a temperature
// other than 1 (fixed or dynamic).
bool params_touch_row(const SamplingParams& params) {
  return !params.logit_bias.empty() || params.ignore_eos || params.dynatemp_on() ||
         (params.temperature > 0.0f && 1.0f / params.temperature != 1.0f);
}

}  // namespace

bool Sampler::may_touch_row(const SamplingParams& params) {
  return params_touch_row(params) || params.repetition_penalty != 1.0f ||
         params.frequency_penalty != 0.0f || params.presence_penalty != 0.0f || params.dry_on();
}

// Whether sampling changes the row in place before it picks (bias, penalties, bans, the
// grammar's mask, a temperature other than 1). An untouched row still holds the raw logits
// when the token is known, and its argmax is the log-probability scan's.
bool Sampler::touches_row(const SamplingParams& params, const RowHistory& history) const {
  const bool counted =
      !history.output.empty() || (params.penalty_last_n > 0 && !history.prompt.empty());
  const bool penalties =
      params.repetition_penalty != 1.0f ||
      ((params.frequency_penalty != 0.0f || params.presence_penalty != 0.0f) && counted) ||
      (params.dry_on() && (!history.prompt.empty() || !history.output.empty()));
  return params_touch_row(params) || penalties || history.ban_stop || !history.allowed.empty();
}

int32_t Sampler::sample(std::span<float> logits, const SamplingParams& params, int64_t position,
                        const RowHistory& history, RowLogprobs* logprobs) {
  const int32_t n = config_.vocab_size;
  if (logits.size() != static_cast<size_t>(n)) {
    throw std::invalid_argument("Sampler: row of " + std::to_string(logits.size()) +
                                " logits for a vocabulary of " + std::to_string(n));
  }
  const bool post = logprobs != nullptr && params.logprobs >= 0 && params.post_sampling_probs;
  const bool want_logprobs = logprobs != nullptr && params.logprobs >= 0 && !post;
  float log_z = 0.0f;
  int32_t raw_top = kUnknownTop;
  post_ = post ? logprobs : nullptr;
  post_k_ = params.logprobs;
  post_weighed_ = false;
  SamplerState fresh = SamplerState::first(params);
  state_ = history.state != nullptr ? history.state : &fresh;
  const float* raw = nullptr;
  if (want_logprobs) {
    // The chosen token's raw logit is read once the token is known: from the row itself when
    // nothing will change it, else from the copy the forward pass kept, else from one made
    // here.
    if (touches_row(params, history)) {
      if (history.raw.size() == logits.size()) {
        raw = history.raw.data();
      } else {
        raw_.assign(logits.begin(), logits.end());
        raw = raw_.data();
      }
    }
    log_z = log_normalizer(logits, params.logprobs, *logprobs, raw_top, history.partials);
    if (raw != nullptr) raw_top = kUnknownTop;
  }
  saved_.clear();
  for (const auto& [id, bias] : params.logit_bias) {
    if (id < 0 || id >= n) continue;
    saved_.emplace_back(id, logits[id]);
    logits[id] = bias <= -100.0f ? kNegInf : logits[id] + bias;
  }
  // Mirostat replaces the chain: the penalties and DRY do not act (llama.cpp's).
  const bool chain = params.mirostat == 0;
  if (chain && params.counts_tokens()) apply_penalties(logits, params, history);
  if (chain && params.dry_on()) {
    if (!dry_) dry_ = std::make_unique<sampler_dry::Scratch>();
    sampler_dry::apply(logits, params, history.prompt, history.output, *dry_);
  }
  if (history.ban_stop) {
    ban(logits, config_.eog_ids);
    ban(logits, params.stop_token_ids);
  } else if (params.ignore_eos) {
    ban_unless_stop(logits, config_.eog_ids, params.stop_token_ids);
  }
  if (!history.allowed.empty()) apply_mask(logits, history.allowed);

  const int32_t token = choose(logits, params, position, history.allowed, raw_top);
  if (want_logprobs)
    logprobs->chosen = {token, (raw != nullptr ? raw[token] : logits[token]) - log_z};
  if (post && !post_weighed_) {  // taken without a draw: certain
    logprobs->chosen = {token, 0.0f};
    logprobs->top.clear();
    if (params.logprobs > 0) logprobs->top.push_back({token, 0.0f});
  }
  post_ = nullptr;
  state_ = nullptr;
  return token;
}

// raw_top: the row's argmax when the caller knows it (an untouched row whose logprobs were
// scanned), else kUnknownTop; it spares the passes that would find it again.
int32_t Sampler::choose(std::span<float> logits, const SamplingParams& params, int64_t position,
                        std::span<const uint32_t> allowed, int32_t raw_top) {
  const int32_t n = config_.vocab_size;
  const float inv_t = 1.0f / params.temperature;
  const bool known = raw_top != kUnknownTop;
  int32_t token;
  if (!(params.temperature > 0.0f) || !std::isfinite(inv_t)) {
    token = known ? raw_top : kernels_->argmax(logits.data(), n);
    // llama.cpp's greedy keeps the best of what its chain leaves, and XTC or typ_p may have
    // dropped the argmax: the filters run on the raw logits, and draw() takes the best left.
    if ((params.xtc_on() || params.typical_on()) && params.mirostat == 0 && token >= 0 &&
        std::isfinite(logits[token])) {
      token = sample_filtered(logits, params, position, logits[token] + 0.0f, token, 1.0f);
    }
  } else if (params.mirostat != 0) {
    const float z_max = kernels_->scale_max(logits.data(), n, inv_t);
    if (z_max == kPosInf) {
      token = kernels_->argmax(logits.data(), n);
    } else {
      token = z_max == kNegInf ? -1 : mirostat(logits, params, position, z_max);
    }
  } else {
    // temperature_last: the filters read the raw logits; the draw alone is tempered (by a
    // dynamic temperature too, over what the filters kept: draw()).
    const bool late = params.temperature_last && filters_act(params, n) &&
                      (inv_t != 1.0f || params.dynatemp_on());
    float scale = late ? 1.0f : inv_t;
    if (params.dynatemp_on() && !late) {
      // The temperature first (or no filter): its entropy is the whole row's.
      const float t = row_dynamic_temperature(logits, params);
      if (!(t > 0.0f)) {  // T_dyn 0 is greedy, as llama.cpp's temperature 0
        const int32_t top = kernels_->argmax(logits.data(), n);
        return top >= 0 ? top : fallback(logits, allowed);
      }
      scale = 1.0f / t;
    }
    // scale_max's answer when inv_t is 1 (the row is untouched): the max, -0 made +0.
    const float z_max = !known         ? kernels_->scale_max(logits.data(), n, scale)
                        : raw_top >= 0 ? logits[raw_top] + 0.0f
                                       : kNegInf;
    if (z_max == kPosInf) {
      token = known ? raw_top : kernels_->argmax(logits.data(), n);  // lowest id of the +infs
    } else if (z_max == kNegInf) {
      token = -1;
    } else {
      token = sample_filtered(logits, params, position, z_max, raw_top, late ? inv_t : 1.0f);
    }
  }
  return token >= 0 ? token : fallback(logits, allowed);
}

// A word at a time: all-ones words (most of a JSON string's mask) cost one compare.
void Sampler::apply_mask(std::span<float> logits, std::span<const uint32_t> allowed) {
  const size_t n = logits.size();
  for (size_t word = 0; word * 32 < n; ++word) {
    const uint32_t bits = word < allowed.size() ? allowed[word] : 0u;
    if (bits == ~0u) continue;
    const size_t end = std::min(n, word * 32 + 32);
    for (size_t id = word * 32; id < end; ++id) {
      if (((bits >> (id % 32)) & 1u) == 0) logits[id] = kNegInf;
    }
  }
}

namespace {

// Fills a list of k with placeholders just below `bound` (> -inf): an entry joins only if it
// reaches the bound, and k entries that reach it push them all out.
void prefill_below(sampler_kernels::TopList& list, int32_t k, float bound) {
  for (int32_t i = 0; i < k; ++i) {
    list.value[i] = std::nextafter(bound, kNegInf);
    list.id[i] = -1;
  }
  list.count = k;
}

}  // namespace

float Sampler::log_normalizer(std::span<const float> logits, int32_t k, RowLogprobs& out,
                              int32_t& top, LogitPartials partials) {
  using sampler_kernels::kLogitPanel;
  const auto n = static_cast<int32_t>(logits.size());
  const int32_t panels = sampler_kernels::logit_panels(n);
  out.top.clear();
  if (partials.max.size() != static_cast<size_t>(panels) ||
      partials.sum.size() != static_cast<size_t>(panels)) {
    partial_max_.resize(static_cast<size_t>(panels));
    partial_sum_.resize(static_cast<size_t>(panels));
    kernels_->panel_partials(logits.data(), n, partial_max_.data(), partial_sum_.data());
    partials = {partial_max_, partial_sum_};
  }
  // The `want` best entries lie in the panels whose max reaches the want-th largest panel
  // max: those maxima are want distinct entries, so the want-th best entry is at least as
  // large, and so is the max of every panel that holds one of the best. Those panels, taken
  // in id order through top_insert, give the list a scan of the whole row gives.
  // One panel more is listed, to see whether a panel beyond the want-th ties with it.
  const int32_t want = std::min(std::max(k, 1), sampler_kernels::kMaxTop - 1);
  sampler_kernels::TopList& best_panels = *panel_list_;
  best_panels.count = 0;
  kernels_->scan_top(partials.max.data(), panels, want + 1, 0, &best_panels);
  top = -1;
  if (best_panels.count == 0) return kPosInf;  // nothing finite: every log-probability is -inf
  const int32_t listed = std::min(want, best_panels.count);
  const float bar = best_panels.value[listed - 1];
  sampler_kernels::TopList& list = *top_list_;
  list.count = 0;
  // At least `want` entries reach the bar (the listed maxima): the list starts full of
  // placeholders just below it, which they all push out, so the scans insert only them.
  if (listed == want) prefill_below(list, want, bar);
  auto scan_panel = [&](int32_t p) {
    const int32_t first = p * kLogitPanel;
    kernels_->scan_top(logits.data() + first, std::min(kLogitPanel, n - first), want, first, &list);
  };
  if (best_panels.count > want && best_panels.value[want] == bar) {
    for (int32_t p = 0; p < panels; ++p) {  // ties at the bar: every panel that reaches it
      if (partials.max[p] >= bar) scan_panel(p);
    }
  } else {  // the listed panels alone, in id order
    std::sort(best_panels.id, best_panels.id + listed);
    for (int32_t i = 0; i < listed; ++i) scan_panel(best_panels.id[i]);
  }
  top = list.id[0];
  const float x_max = logits[top];
  if (x_max == kPosInf) return kPosInf;
  // Z = the sum of exp(x - x_max) >= 1, from the panels' sums, in the kernels' fixed order.
  const float z = kernels_->partials_z(partials.max.data(), partials.sum.data(), panels, x_max);
  const float log_z = x_max + static_cast<float>(std::log(static_cast<double>(z)));
  if (k > 0 && k <= want) {
    for (int32_t i = 0; i < std::min(k, list.count); ++i)
      out.top.push_back({list.id[i], list.value[i] - log_z});
  } else if (k > 0) {  // more than the kernels list (never, through the API's 20)
    std::span<RankedToken> best =
        top_k_candidates(logits, x_max, static_cast<size_t>(std::min(k, n)), -FLT_MAX);
    std::sort(best.begin(), best.end(), precedes<RankedToken>);
    for (const RankedToken& t : best) out.top.push_back({t.id, t.z - log_z});
  }
  return log_z;
}

void Sampler::logprobs_of(std::span<const float> logits, int32_t target, int32_t k,
                          RowLogprobs& out, LogitPartials partials) {
  int32_t top;
  const float log_z = log_normalizer(logits, k, out, top, partials);
  const bool valid = target >= 0 && target < static_cast<int32_t>(logits.size());
  out.chosen = {target, valid ? logits[target] - log_z : kNegInf};
}

int32_t Sampler::fallback(std::span<float> logits, std::span<const uint32_t> allowed) {
  // Everything was banned, -inf or NaN. The unbanned tokens are all -inf or NaN now, so
  // restoring the raw values of the biased and banned ones recovers the raw argmax.
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) logits[it->first] = it->second;
  if (!allowed.empty()) {
    // The grammar still decides: the best allowed raw logit, else the lowest allowed id.
    apply_mask(logits, allowed);
    const int32_t token = kernels_->argmax(logits.data(), config_.vocab_size);
    if (token >= 0) return token;
    const auto words = std::min(allowed.size(), (logits.size() + 31) / 32);
    for (size_t word = 0; word < words; ++word) {
      if (allowed[word] == 0) continue;
      const auto id = static_cast<int32_t>(word * 32) + std::countr_zero(allowed[word]);
      if (id < config_.vocab_size) return id;
    }
    // Nothing allowed (a grammar already ended): the row is finished; any token will do.
  }
  const int32_t token = kernels_->argmax(logits.data(), config_.vocab_size);
  return token >= 0 ? token : 0;
}

bool Sampler::filters_act(const SamplingParams& params, int32_t n) {
  return (params.top_k > 0 && params.top_k < n) || params.top_p < 1.0f || params.min_p > 0.0f ||
         params.top_n_sigma_on() || params.typical_on() || params.infill || params.xtc_on() ||
         params.adaptive_on();
}

int32_t Sampler::sample_filtered(std::span<float> z, const SamplingParams& params, int64_t position,
                                 float z_max, int32_t raw_top, float draw_scale) {
  const int32_t n = config_.vocab_size;
  const bool k_on = params.top_k > 0 && params.top_k < n;
  const bool p_on = params.top_p < 1.0f;
  const bool m_on = params.min_p > 0.0f;
  if (!filters_act(params, n)) {
    const int32_t top = raw_top != kUnknownTop ? raw_top : -2;  // -2: the kernel finds it
    const int32_t token = kernels_->gumbel_argmax(z.data(), n, top, params.seed, position);
    weigh_row(z, token);
    return token;
  }
  // min_p's cut: z - z_max >= log(min_p), i.e. p >= min_p * p_max.
  const float min_p_cut = m_on ? std::min(std::log(params.min_p), 0.0f) : -FLT_MAX;
  // min_p_last: min_p cuts what top_p (or typ_p) kept (llama.cpp's order); it commutes with
  // top_k, so only their turns change.
  const bool y_on = params.typical_on();
  const bool cut_last = params.min_p_last && m_on && (p_on || y_on);
  // What top_k, typ_p and top_p read: the tokens at or above `first`, top_n_sigma's cut
  // (first in every chain) and min_p's where it comes before top_p.
  const bool sigma_on = params.top_n_sigma_on();
  const bool first_on = sigma_on || (m_on && !cut_last);
  const float first = std::max(sigma_on ? sampler_sigma::cut(z, params.top_n_sigma) : -FLT_MAX,
                               cut_last ? -FLT_MAX : min_p_cut);
  // A late min_p cuts relative to the best token kept (llama.cpp's min_p reads the set before
  // it), which is the row's top unless typ_p dropped it.
  const auto draw_kept = [&](std::span<RankedToken> kept) {
    if (cut_last && !kept.empty()) {
      float kept_max = kept.front().z;
      for (const RankedToken& t : kept) kept_max = std::max(kept_max, t.z);
      kept = kept.first(static_cast<size_t>(
          std::partition(kept.begin(), kept.end(),
                         [&](const RankedToken& t) { return t.z - kept_max >= min_p_cut; }) -
          kept.begin()));
    }
    return draw(kept, z, params, position, draw_scale);
  };
  // Every candidate set below holds the tokens with z - z_max >= some threshold, never below
  // the floor: `first`, or every finite token. Where min_p cuts what top_p kept, top_k's
  // renormalized top_p needs every one of its k; without top_k or top_n_sigma, top_p weighs
  // the whole vocabulary and its prefix ends within min_p's or is cut to it, so min_p's floor
  // holds.
  const float floor = first_on ? first : min_p_cut;

  if (k_on) {
    // top_n_sigma, min_p and top_k keep rank prefixes of the same order, so either may go
    // first; top_p then weighs what they left, renormalized (vLLM's top-k-then-top-p).
    std::span<RankedToken> kept =
        top_k_candidates(z, z_max, static_cast<size_t>(params.top_k), first);
    if (p_on || y_on) {
      std::sort(kept.begin(), kept.end(),
                [](const RankedToken& a, const RankedToken& b) { return a.id < b.id; });
      for (RankedToken& t : kept) t.e = sampler_kernels::exp_shifted(t.z - z_max);
      if (y_on) kept = locally_typical(kept, z_max, params.typical_p);
      if (p_on) kept = nucleus(kept, params.top_p);
    }
    return draw_kept(kept);
  }
  if ((first_on && p_on) || y_on) {
    // typ_p and top_p over min_p's or top_n_sigma's survivors (or every finite token),
    // renormalized (vLLM applies min_p before top_p, llama.cpp top_n_sigma before both): all
    // of them are collected, in id order.
    const auto count = static_cast<size_t>(
        kernels_->collect(z.data(), n, z_max, first, cand_z_.data(), cand_id_.data()));
    kernels_->exp_shifted(cand_z_.data(), static_cast<int32_t>(count), z_max, cand_e_.data());
    for (size_t i = 0; i < count; ++i) ranked_[i] = {cand_z_[i], cand_id_[i], cand_e_[i]};
    std::span<RankedToken> kept(ranked_.data(), count);
    if (y_on) kept = locally_typical(kept, z_max, params.typical_p);
    return draw_kept(p_on ? nucleus(kept, params.top_p) : kept);
  }
  // top_p alone weighs the whole vocabulary: Z in the kernels' shared 16-lane order.
  const float target = p_on ? params.top_p * kernels_->z_sum(z.data(), n, z_max) : 0.0f;

  // top_p without top_k: collect above the shallowest ladder rung whose estimated mass holds
  // the prefix (with 4% to spare for the estimate's error), and go one rung deeper whenever
  // the candidates fall short.
  int rung = sampler_kernels::kRungs;
  if (p_on) {
    sampler_kernels::Ladder ladder;
    kernels_->ladder(z.data(), n, z_max, &ladder);
    for (rung = 0; rung < sampler_kernels::kRungs; ++rung) {
      if (-sampler_kernels::kRungDepth[rung] <= floor) break;
      if (ladder.mass[rung] >= 1.04f * target) break;
    }
  }
  for (;; ++rung) {
    const bool whole =
        rung >= sampler_kernels::kRungs || -sampler_kernels::kRungDepth[rung] <= floor;
    const float threshold = whole ? floor : -sampler_kernels::kRungDepth[rung];
    const auto count = static_cast<size_t>(
        kernels_->collect(z.data(), n, z_max, threshold, cand_z_.data(), cand_id_.data()));
    if (p_on) {
      kernels_->exp_shifted(cand_z_.data(), static_cast<int32_t>(count), z_max, cand_e_.data());
    }
    for (size_t i = 0; i < count; ++i) {
      ranked_[i] = {cand_z_[i], cand_id_[i], p_on ? cand_e_[i] : 0.0f};
    }
    std::span<RankedToken> kept(ranked_.data(), count);
    if (p_on) {
      const size_t cut = top_p_cut(kept, target);
      if (cut > 0) return draw_kept(kept.first(cut));
    }
    if (whole) return draw_kept(kept);
  }
}

std::span<Sampler::RankedToken> Sampler::top_k_candidates(std::span<const float> z, float z_max,
                                                          size_t k, float floor) {
  // One pass in chunks: each chunk's tokens above the threshold join the pool; when the pool
  // passes `cap`, nth_element keeps its best k and the threshold rises to the k-th one (a
  // later token that ties it has a higher id, so it cannot enter). The threshold only rises,
  // so the pool always holds the top k of what has been read.
  constexpr int32_t kChunk = 2048;
  const size_t cap = std::max<size_t>(2 * k, 2048);
  const auto n = static_cast<int32_t>(z.size());
  float threshold = floor;
  size_t pool = 0;
  auto keep_best_k = [&] {
    std::nth_element(ranked_.begin(), ranked_.begin() + static_cast<ptrdiff_t>(k - 1),
                     ranked_.begin() + static_cast<ptrdiff_t>(pool), precedes<RankedToken>);
    pool = k;
    threshold = std::max(threshold, ranked_[k - 1].z - z_max);
  };
  for (int32_t start = 0; start < n; start += kChunk) {
    const int32_t len = std::min(kChunk, n - start);
    const int32_t got =
        kernels_->collect(z.data() + start, len, z_max, threshold, cand_z_.data(), cand_id_.data());
    for (int32_t i = 0; i < got; ++i) ranked_[pool++] = {cand_z_[i], cand_id_[i] + start, 0.0f};
    if (pool >= cap) keep_best_k();
  }
  if (pool > k) keep_best_k();
  return {ranked_.data(), pool};
}

// typ_p (typical.h) over `kept`, in increasing id order: its survivors move to the front,
// still in id order, and are returned.
std::span<Sampler::RankedToken> Sampler::locally_typical(std::span<RankedToken> kept, float z_max,
                                                         float typical_p) {
  if (!typical_) typical_ = std::make_unique<sampler_typical::Scratch>();
  sampler_typical::Scratch& s = *typical_;
  s.z.resize(kept.size());
  s.e.resize(kept.size());
  s.ids.resize(kept.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    s.z[i] = kept[i].z;
    s.e[i] = kept[i].e;
    s.ids[i] = kept[i].id;
  }
  const size_t count = sampler_typical::mark_typical(s.z, s.e, z_max, s.ids, typical_p, s, s.keep);
  // Survivors to the front, in order (what is left behind them is not read again).
  size_t out = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (s.keep[i] != 0) kept[out++] = kept[i];
  }
  return kept.first(count);
}

// XTC (xtc.h) on the kept set, when its draw fires: what is left is copied to xtc_kept_.
std::span<const Sampler::RankedToken> Sampler::exclude_top_choices(
    std::span<const RankedToken> kept, const SamplingParams& params, int64_t position) {
  if (kept.size() < 2 || !sampler_xtc::fires(params.xtc_probability, params.seed, position)) {
    return kept;
  }
  xtc_z_.resize(kept.size());
  xtc_ids_.resize(kept.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    xtc_z_[i] = kept[i].z;
    xtc_ids_[i] = kept[i].id;
  }
  if (!sampler_xtc::mark_top_choices(xtc_z_, xtc_ids_, params.xtc_threshold, xtc_drop_)) {
    return kept;
  }
  xtc_kept_.clear();
  for (size_t i = 0; i < kept.size(); ++i) {
    if (!xtc_drop_[i]) xtc_kept_.push_back(kept[i]);
  }
  return xtc_kept_;
}

// The dynamic temperature of the whole row (the temperature before the filters), as the
// candidates llama.cpp's temperature stage sees there: every entry.
float Sampler::row_dynamic_temperature(std::span<float> x, const SamplingParams& params) {
  const auto n = static_cast<int32_t>(x.size());
  const float x_max = kernels_->scale_max(x.data(), n, 1.0f);
  if (!std::isfinite(x_max) || n < 2) return params.temperature;
  kernels_->exp_shifted(x.data(), n, x_max, cand_e_.data());
  return sampler_dynatemp::temperature(x, std::span<const float>(cand_e_.data(), x.size()), x_max,
                                       x.size(), params.temperature, params.dynatemp_range,
                                       params.dynatemp_exponent);
}

// A late dynamic temperature's scale (1 / T_dyn; 0 for T_dyn 0) over what the filters and
// XTC kept.
float Sampler::kept_dynamic_scale(std::span<const RankedToken> kept, const SamplingParams& params) {
  dyn_x_.resize(kept.size());
  dyn_e_.resize(kept.size());
  float x_max = kNegInf;
  for (size_t i = 0; i < kept.size(); ++i) x_max = std::max(x_max, dyn_x_[i] = kept[i].z);
  for (size_t i = 0; i < kept.size(); ++i) {
    dyn_e_[i] = sampler_kernels::exp_shifted(dyn_x_[i] - x_max);
  }
  const float t =
      sampler_dynatemp::temperature(dyn_x_, dyn_e_, x_max, kept.size(), params.temperature,
                                    params.dynatemp_range, params.dynatemp_exponent);
  return t > 0.0f ? 1.0f / t : 0.0f;
}

int32_t Sampler::draw(std::span<const RankedToken> kept, std::span<const float> z,
                      const SamplingParams& params, int64_t position, float scale) {
  if (params.xtc_on()) kept = exclude_top_choices(kept, params, position);
  if (params.dynatemp_on() && params.temperature_last && kept.size() > 1) {
    scale = kept_dynamic_scale(kept, params);
  }
  if (!(params.temperature > 0.0f) || !std::isfinite(1.0f / params.temperature) || scale == 0.0f) {
    // Greedy with XTC or typ_p (choose), or a dynamic temperature of 0: the best token
    // left, ties to the lowest id.
    const auto best = std::min_element(kept.begin(), kept.end(), precedes<RankedToken>);
    return best == kept.end() ? -1 : best->id;
  }
  if (!params.infill) return final_draw(kept, params, position, scale);
  if (!infill_) infill_ = std::make_unique<sampler_infill::Scratch>();
  infill_->tokens.resize(kept.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    infill_->tokens[i].id = kept[i].id;
    infill_->tokens[i].z = kept[i].z;
  }
  // The end-of-turn answer only where the row could sample that token at all.
  const int32_t eot = config_.eot_id;
  const bool eot_allowed = eot >= 0 && z[static_cast<size_t>(eot)] > kNegInf;
  const sampler_infill::Vocab vocab{config_.pieces.get(), config_.eog_ids, eot_allowed ? eot : -1};
  // The draw is llama.cpp's dist after the step: over the survivors' logits (the merged
  // masses decided who survives, not how likely each is), merged-away tokens left out. The
  // kept set was copied out above, so ranked_ is free to hold them.
  size_t count = 0;
  for (const sampler_infill::Token& t : sampler_infill::apply(vocab, *infill_)) {
    if (!t.gone) ranked_[count++] = {t.z, t.id, 0.0f};
  }
  if (count == 0) return -1;
  return final_draw(std::span<const RankedToken>(ranked_.data(), count), params, position, scale);
}

int32_t Sampler::final_draw(std::span<const RankedToken> kept, const SamplingParams& params,
                            int64_t position, float scale) {
  return params.adaptive_on() ? adaptive_over(kept, params, position, scale)
                              : gumbel_over(kept, params.seed, position, scale);
}

int32_t Sampler::gumbel_over(std::span<const RankedToken> kept, uint64_t seed, int64_t position,
                             float scale) {
  if (kept.size() == 1) return kept[0].id;
  const auto count = static_cast<int32_t>(kept.size());
  for (int32_t i = 0; i < count; ++i) {
    // The same product as scale_max's, so a late temperature draws what an early one would.
    kept_z_[i] = scale == 1.0f ? kept[i].z : kept[i].z * scale;
    kept_ids_[i] = kept[i].id;
  }
  const int32_t at =
      kernels_->gumbel_argmax_at(kept_z_.data(), kept_ids_.data(), count, seed, position);
  weigh_kept(count, at);
  return at >= 0 ? kept_ids_[at] : -1;
}

}  // namespace tandem
