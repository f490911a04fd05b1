// Results: a processed step's rows turned into each request's events (its tokens, their
// logprobs, the prompt's scores, stop strings and finishes), and the blocks of requests
// that are done given back.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "scheduler/scheduler_internal.h"

namespace tandem {

void Scheduler::process(Launched& step, const StepResult& result) {
  pacer_.record(result.seconds, step.load, pacer_seconds(options_));
  for (size_t i = 0; i < step.rows.size(); ++i) {
    Request& r = *step.rows[i];
    --r.in_flight;
    // Before its token: the KV is the step's. A verify row wrote its drafts' too, but only
    // the accepted ones' hold this sequence (the rest is written over later).
    const bool verified = !step.drafts[i].empty();
    offer_written_blocks(
        r, verified ? step.first_position[i] + 1 + result.accepted[i] : step.write_end[i]);
    // The prompt's scores before the share is published: a leader's go with its blocks.
    // A leader cancelled with this chunk in flight keeps them for the share too (its KV is
    // written as well), though its own sink hears nothing more.
    if ((!r.finished || r.leads_unpublished_share()) && !result.prompt_logprobs.empty() &&
        r.in.sampling.prompt_logprobs >= 0 && r.prompt_logprobs_sent < r.prompt_len) {
      send_prompt_logprobs(r, step.first_position[i], result.prompt_logprobs[i]);
    }
    if (r.share) publish_shared_prompt(r);
    if (r.finished) {
      // Never streamed, never counted.
      if (step.sample[i]) counters_.discarded_tokens += 1 + (verified ? result.accepted[i] : 0);
      continue;
    }
    if (!result.pooled.empty() && !result.pooled[i].empty()) {
      add_pooled(r, step.first_position[i], step.write_end[i] - step.first_position[i],
                 result.pooled[i]);
    }
    if (verified) {
      accept_verified(r, step, i, result);
    } else if (step.sample[i]) {
      accept(r, result.tokens[i], result.logprobs.empty() ? nullptr : &result.logprobs[i]);
    } else if (r.max_new == 0 && r.prefill_launched == r.prompt_len) {
      // max_tokens 0: the prompt was only scored, or pooled into an embedding.
      if (r.in.pooling == Pooling::kNone) {
        finish(r, FinishReason::kLength, false);
      } else if (r.pooled_sum.empty() || r.pooled_sum.back() != 0) {
        // A NaN or infinite state: a broken model, whose zeros must not pass for a vector.
        fail(r, ErrorKind::kInternal, "the model's hidden states are not finite");
      } else {
        r.in.sink->on_embedding(pooled_embedding(
            std::span(r.pooled_sum).first(r.pooled_sum.size() - 1), r.pooled_count));
        finish(r, FinishReason::kLength, false);
      }
    }
  }
  // Blocks go back only now: this step was the last one that could write them.
  for (Request* r : step.rows) retire_if_done(*r);
}

// A chunk's pooled states into r's sum. The chunk at position 0 starts the sum again: a
// request preempted mid-prefill recomputes every position from there (a pooling request
// takes nothing from the cache but a last state, which no earlier chunk gives), and its
// earlier chunks' steps were all processed before (steps are processed in launch order).
void Scheduler::add_pooled(Request& r, int32_t first_position, int32_t tokens,
                           const std::vector<int64_t>& sum) {
  if (first_position == 0 || r.pooled_sum.size() != sum.size()) {
    r.pooled_sum.assign(sum.size(), 0);
    r.pooled_count = 0;
  }
  for (size_t k = 0; k < sum.size(); ++k) r.pooled_sum[k] += sum[k];
  // Mean pools every token of the chunk; cls and last one state.
  r.pooled_count += r.in.pooling == Pooling::kMean ? tokens : 1;
}

TokenLogprobs Scheduler::named(const RowLogprobs& logprobs) const {
  TokenLogprobs out;
  out.chosen = {tokenizer_.token_bytes(logprobs.chosen.id, true), logprobs.chosen.logprob,
                logprobs.chosen.id};
  for (const TokenLogprob& t : logprobs.top) {
    out.top.push_back({tokenizer_.token_bytes(t.id, true), t.logprob, t.id});
  }
  return out;
}

// A prefill chunk from first_position scores the prompt positions after it: scored[k] is
// position first_position + 1 + k's. Each position is sent once: a request preempted
// mid-prefill recomputes its prompt from the start (a scoring request takes nothing from
// the cache), and the positions it had sent come out again, identical (the laws), so they
// are skipped rather than appended twice.
void Scheduler::send_prompt_logprobs(Request& r, int32_t first_position,
                                     const std::vector<RowLogprobs>& scored) {
  std::vector<TokenLogprobs> entries;
  // Nothing predicts the prompt's first token: its entry has no logprob.
  if (first_position == 0 && r.prompt_logprobs_sent == 0) {
    entries.push_back(
        {{tokenizer_.token_bytes(r.in.prompt[0], true), std::nanf(""), r.in.prompt[0]}, {}});
  }
  for (size_t k = 0; k < scored.size(); ++k) {
    const int64_t position = int64_t{first_position} + 1 + static_cast<int64_t>(k);
    if (position < r.prompt_logprobs_sent || position >= r.prompt_len) continue;
    entries.push_back(named(scored[k]));
  }
  // A share's leader keeps the entries of the positions its members take from it.
  if (r.leads_unpublished_share()) {
    std::vector<TokenLogprobs>& kept = r.share->scored;
    const int32_t end = r.share->end(pool_.block_size());
    for (size_t k = 0; k < entries.size(); ++k) {
      const int64_t position = int64_t{r.prompt_logprobs_sent} + static_cast<int64_t>(k);
      if (position == static_cast<int64_t>(kept.size()) && position <= end)
        kept.push_back(entries[k]);
    }
  }
  r.prompt_logprobs_sent += static_cast<int32_t>(entries.size());
  if (!entries.empty() && !r.finished) r.in.sink->on_prompt_logprobs(entries);
}

// How long the request has generated, in ms (LineLimits' time limit), from its first token.
double Scheduler::generation_ms(const Request& r) const {
  if (r.in.time_limit_ms <= 0 || r.completion_tokens <= 1) return 0;
  return 1000.0 * (pacer_seconds(options_) - r.generation_started);
}

void Scheduler::accept(Request& r, int32_t token, const RowLogprobs* logprobs) {
  ++r.completion_tokens;
  if (r.completion_tokens == 1 && r.in.time_limit_ms > 0)
    r.generation_started = pacer_seconds(options_);
  ++counters_.completion_tokens;
  r.in.sink->on_token(token);
  r.generated.push_back(token);
  r.last_token = token;
  r.decoding = true;
  if (logprobs != nullptr && r.in.sampling.logprobs >= 0) r.in.sink->on_logprobs(named(*logprobs));
  // Before min_tokens nothing may end the output (the device bans EOG and stop ids there).
  const bool may_stop = r.completion_tokens >= r.in.sampling.min_tokens;
  const bool stop_token = may_stop && std::binary_search(r.in.sampling.stop_token_ids.begin(),
                                                         r.in.sampling.stop_token_ids.end(), token);
  const bool eog =
      may_stop && !r.in.sampling.ignore_eos &&
      std::find(info_.eog_ids.begin(), info_.eog_ids.end(), token) != info_.eog_ids.end();
  if (stop_token && !eog) r.stop_token = token;
  if ((stop_token || eog) && !(stop_token && r.in.include_stop_str_in_output)) {
    finish(r, FinishReason::kStop, true);
    return;
  }
  StopMatcher::Output out = r.stop.push(r.detok.push(token), may_stop);
  if (r.lines.active()) {
    LineLimits::Output lines = r.lines.push(out.text, generation_ms(r));
    if (lines.stopped) {
      if (!lines.text.empty()) r.in.sink->on_text(lines.text);
      finish(r, FinishReason::kLength, false);  // what comes after the cut is dropped
      return;
    }
    out.text = std::move(lines.text);
  }
  if (!out.text.empty()) r.in.sink->on_text(out.text);
  if (out.stopped || stop_token) {
    finish(r, FinishReason::kStop, !out.stopped);
  } else if (r.completion_tokens >= r.max_new) {
    finish(r, FinishReason::kLength, true);
  }
}

void Scheduler::finish(Request& r, FinishReason reason, bool flush) {
  if (flush) {
    // An incomplete UTF-8 tail becomes U+FFFD, which may itself complete a stop string.
    StopMatcher::Output out = r.stop.push(r.detok.flush());
    std::string text = std::move(out.text);
    if (out.stopped) {
      reason = FinishReason::kStop;
    } else {
      text += r.stop.flush();
    }
    if (r.lines.active()) {
      LineLimits::Output lines = r.lines.push(text, generation_ms(r));
      text = std::move(lines.text);
      if (lines.stopped) {
        reason = FinishReason::kLength;
      } else {
        text += r.lines.flush();
      }
    }
    if (!text.empty()) r.in.sink->on_text(text);
  }
  r.finished = true;
  std::erase(running_, &r);
  ++counters_.requests_finished;
  // Publish first, so a client that reads the metrics after its answer sees its tokens.
  publish();
  if (reason == FinishReason::kStop && r.stop.stopped()) {
    r.in.sink->on_stop_string(r.stop.matched());
  } else if (reason == FinishReason::kStop && r.stop_token >= 0) {
    r.in.sink->on_stop_token(r.stop_token);
  }
  r.in.sink->on_finish(reason, Usage{r.prompt_len, r.completion_tokens, r.cached_tokens});
}

void Scheduler::fail(Request& r, ErrorKind kind, std::string_view message) {
  r.finished = true;
  std::erase(running_, &r);
  ++counters_.requests_finished;
  publish();
  r.in.sink->on_error(kind, message);
}

void Scheduler::retire_if_done(Request& r) {
  if (!r.finished || r.in_flight > 0) return;
  release_kv(r);
  live_.erase(r.id);  // r is gone
}

}  // namespace tandem
