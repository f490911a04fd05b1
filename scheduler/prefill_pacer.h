// How many prompt tokens a step may carry while other requests decode (issue 15, fair
// scheduling under long prompts). A step's time is about T_decode + (what its n prompt
// tokens add), and each decoding stream waits that long for its next token. Keeping the
// prompt tokens' part within kShare * T_decode keeps a mixed step within about (1 + kShare)
// decode steps, so a 4096-token prompt arriving among running streams stretches their token
// gaps (TPOT) by under 2x instead of by a whole 512-token chunk's time. With no request
// decoding, a step takes the full --max-step-tokens (nobody waits on it).
//
// That bound is for one prompt among the streams, not for a queue of them. Each prompt
// token costs every stream its time of waiting however the prompt is cut, so pacing buys
// the streams evenness, not time; its price, T_decode of waiting per step, is paid by each
// request still without its first token. With P of them (prefilling, or queued), each adds
// a share: the prompt tokens' part <= kShare * P * T_decode, which keeps pacing's cost to
// the waiting requests together at a lone prompt's (P = 1 is paced as above). With one
// share whatever the queue, 16 clients sending 1024-token prompts were served one at a
// time: one stream decoding, the next prompt fed 16 tokens a step beside it, the rest
// queued (issue 15's headline workload, TTFT p50 19 s).
//
// Both come from models of a step's device time (StepResult::seconds), fitted to the steps
// as they finish (cost_fit.h). The decode model, over decode-only steps: T_decode = c0 +
// c_row * rows + c_key * keys, where keys are those the rows' attention reads (a row at
// position p reads p + 1), so it prices the decode rows a step carries now, at their
// contexts. The prompt model, over steps with prompt tokens: what they took beyond the
// decode model's time for their decode rows (c0 alone for a prompt-only step) = c_token *
// tokens + c_prompt_key * keys, so a chunk deep in a long prompt, whose tokens read more
// keys, is dearer than its first. Keys cost each model its own: a small chunk's tile reads
// each key for a few queries (about 1 us a key over all layers on the smollm2 shape, twice a
// decode row's), a whole prompt's 16-query tiles for sixteen (0.3 us).
//
// Two moving averages did this before: T_decode over decode-only steps and t_token = (T -
// T_decode) / n over the others. But a queue of prompts leaves no decode-only step, so
// T_decode stayed the one measured when a single row decoded (5 ms) while 16 rows decoded
// at context 1100 (12+ ms), and t_token took up the difference: budgets a third of the
// intended (issue 15's headline workload, TTFT p50 4.7 s; docs/performance.md,
// 2026-12-03). A step far off its model (a page-fault storm, another process taking the
// core) counts as within kOutlier of the prediction once the model has kSettle samples,
// so one such step does not bend the fit for the next fifty.
//
// Pacing evens out a prompt's cost to the streams; it cannot lower it. Under a sustained
// load of prompts the device spends its time on them whatever the pace, so the streams'
// mean token gap is the same, and pacing only makes every prompt queue for its first token.
// So while the steps of the last kSustainWindow seconds gave prompt tokens kSustained or
// more of their time (their time beyond the decode model's for their decode rows), a step
// takes half the step budget of prompt tokens (256 of --max-step-tokens' 512), whatever the
// queue; and while kQueue or more requests wait for their first token, or kArrivals or more
// long prompts (half the step budget or more to prefill) began beside decode rows in the last
// kSustainWindow seconds, and the first in line is such a long prompt, at least that (their
// shares where those give more). Not for short prompts: a wave of 32-token prompts after a
// 1024-token cached prefix (each token dear, reading 1056 keys) then packed eight into a step that
// all of them waited on, TTFT p50 210-335 -> 328-330 ms. A lone prompt among the streams is paced
// as above. Why half: a prompt arriving then waits half a step on average before its first chunk,
// and each of its chunks carries the decode rows' time (T_decode), so its TTFT is least near chunks
// of sqrt(2 * N * T_decode / c) tokens (N its tokens, c a token's time): ~330 for a 1024-token
// prompt beside 15 rows on the smollm2 shape. Measured on the headline workload (Zen 5, 3
// alternating rounds each): half the budget, TTFT p50 0.84-0.93 s; the whole budget 1.10-1.43 s;
// that formula per step 0.79-1.41 s (it cut deep chunks short); the shares where they gave
// more 1.20-1.85 s.
//
// The share alone marked the load before the queue did, and it moved with the machine: on
// the Sapphire Rapids class Xeon, whose tile unit prefills about three times faster than
// the Zen 5's FMA, the headline workload's prompts held 0.46-0.49 of the steps, under
// kSustained, so each step took the waiting prompts' shares (113-354 tokens with 2-5
// waiting): TTFT p50 2.17-2.58 s (6 runs); a fixed 256 gave 1.04-1.06 s at the same output
// rate (TPOT p99 82-84 ms against 74-80). The floor behind a long prompt: 1.79-1.94 s (3
// runs, TPOT p99 75-78 ms; a queued prompt's first chunk, its cached prefix then not yet
// known, was still paced: priced since, below). The floor for every queue: 1.23-1.37 s, but the
// wave above at 328-330 ms against 210-335. A lone prompt paced at its share keeps the steps' share
// under kSustained (0.44), so item 4's bound holds for it; a burst prefilled before the streams
// started takes the whole budget (no decode rows).
//
// What the queue rule missed there: clients in a closed loop send their next long prompt as
// an answer ends, so prompts arrive one at a time, every half second or so, and mostly
// alone: each was paced as a lone prompt (1.5-2 s to its first token where its 1024 tokens
// take 0.4 s of device time), their share of the steps staying under kSustained. A stream of
// arrivals is a queue spread over time: pacing each of them buys the streams evenness at the
// same cost to the queue. So kArrivals long prompts begun beside decode rows within the
// window count as a queue; a lone long prompt among the streams (item 4) is one arrival.
// The prompt's length is its whole prefill, so its last chunk is not paced either, and a
// queued first in line is priced by what the prefix cache holds of it now
// (KvBlockPool::cached_blocks): 32-token prompts behind a cached 1024-token prefix stay
// short. On the Xeon (`tandem bench` headline workload, 4 rounds alternating with the binary
// before): TTFT p50 1.00-1.04 s against 1.90-2.25 s, output 175-183 against 171-190 tok/s,
// TPOT p99 81-85 against 76-85 ms.
//
// Short prompts after a long cached prefix (a chat turn after its cached history; issue
// 15's shared-prefix workload, 32-token suffixes after 1024 cached tokens) are the other
// way round: each token reads the whole prefix, so a step carrying several of them is long
// and all of them wait on it, and the queue's shares packed a wave of them into such steps.
// So a short prompt first in line whose prefill starts at half the step budget or more and
// costs more than a lone prompt's share is taken whole and alone where it costs two shares
// at most (one step of up to 2.6 decode steps' time where two would be paced), else at a
// lone prompt's pace, and the prompts behind it add no shares. From the start, short
// prompts keep the shares: there a step's extra rows cost little (the matmuls stream the
// same weights), and taking them one at a time made 32 streams of 32-token prompts wait
// longer (TTFT p50 154-236 against 119-161 ms). On the Xeon, 3 rounds alternating with the
// build before: the shared-prefix workload's TTFT p50 with the cache 108-122 against
// 227-252 ms (0.11 of the cache off's, against 0.19-0.20), output 662-709 against 651-717
// tok/s; 32 streams of 32-token prompts level (TTFT p50 120-149 against 124-150 ms, output
// 1603-1643 against 1558-1690 tok/s). Fixed chunks for comparison: 32 gave 88-94 ms, 64
// 121-133.
//
// Until the decode model has a sample, with a fixed chunk (--prefill-chunk N), and unpaced
// (the library's default), the budget is fixed; beside decode rows before the prompt model
// has one, a prompt takes a kProbeChunk probe, twice as long after each probe step that
// took no longer than the decode model's time for its rows (its prompt part lost in the
// noise: a decode model fitted on a few slow first steps over-predicts, and with a queue of
// prompts no decode-only step comes to correct it; a sanitizer run under load fed a burst
// 32 tokens a step to its end). The pace changes only how a prompt is cut,
// never a token: chunked prefill equals one-shot prefill (law 2, PrefixCacheLaw.*).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>

#include "scheduler/cost_fit.h"

namespace tandem {

// What a step carries, as the step-time model sees it.
struct StepLoad {
  int32_t decode_rows = 0;    // rows decoding one token
  int64_t decode_keys = 0;    // keys their attention reads (position + 1 each)
  int32_t prompt_tokens = 0;  // prompt tokens, over every prompt row
  int64_t prompt_keys = 0;    // keys those read (each token's position + 1)

  void add_decode(int32_t position) {
    ++decode_rows;
    decode_keys += int64_t{position} + 1;
  }
  void add_prompt(int32_t first_position, int32_t n) {
    prompt_tokens += n;
    prompt_keys += keys_of_chunk(first_position, n);
  }
  // Keys read by n prompt tokens from `first`: sum of (p + 1) over p in [first, first + n).
  static int64_t keys_of_chunk(int64_t first, int64_t n) { return n * first + n * (n + 1) / 2; }
};

class PrefillPacer {
 public:
  static constexpr double kShare = 0.8;         // of a decode step's time, for prompt tokens
  static constexpr int32_t kMinChunk = 1;       // a prompt always moves on
  static constexpr int32_t kProbeChunk = 32;    // beside decode rows, until a prompt is priced
  static constexpr double kForget = 0.97;       // each older step's weight in the fit, per step
  static constexpr double kOutlier = 3;         // a step's time counts within this factor
  static constexpr int kSettle = 8;             // of the model's prediction, after these steps
  static constexpr double kSustainWindow = 10;  // seconds of steps in the prompts' share
  static constexpr double kSustained = 0.55;    // that share, from which pacing is off
  static constexpr int32_t kQueue = 2;          // prompts waiting, from which half at least
  static constexpr int32_t kArrivals = 3;       // long prompts begun in the window, likewise

  // fixed_chunk > 0: that many prompt tokens a step beside decode rows (no pacing); else
  // paced, or (not paced) the whole step budget.
  PrefillPacer(int32_t max_step_tokens, int32_t fixed_chunk, bool paced)
      : max_step_tokens_(max_step_tokens), fixed_chunk_(fixed_chunk), paced_(paced) {}

  // Prompt tokens the next step may take beside `decode` (its decode rows; no prompt
  // tokens) while `waiting_prompts` requests wait for their first token (prefilling or
  // queued) and the first prompt in line goes on from `position`, its prefill `prefill`
  // tokens in all (from its start or the end of its cached prefix: long_prompt tells a long
  // prompt, all of whose chunks the floor behind it keeps, from a short one; 0: unknown), at
  // time `now` (seconds on record's clock; kNoClock: never sustained).
  static constexpr double kNoClock = -1;
  int32_t prompt_budget(const StepLoad& decode, int32_t waiting_prompts = 1, int32_t position = 0,
                        double now = kNoClock, int32_t prefill = 0) const;
  // The budget for one prompt from position 0 beside the last step's decode rows that the
  // pacer was told of, paced, or the whole step budget where nothing decodes now
  // (/metrics' tandem_prefill_chunk_tokens).
  int32_t lone_prompt_budget(bool decoding) const;

  // A prompt's prefill began, beside decode rows, at `now`, with `tokens` to prefill. Long
  // ones (half the step budget or more) count among the window's arrivals.
  void prompt_began(double now, int32_t tokens);
  // Long prompts begun beside decode rows in the kSustainWindow seconds before `now`.
  int32_t arrivals(double now) const;
  bool long_prompt(int32_t tokens) const { return tokens >= half_budget(); }

  // A finished step: its device time and what it carried, finished at `now` (seconds on a
  // steady clock, >= 0 and never decreasing; kNoClock: not counted in the prompts' share).
  void record(double seconds, const StepLoad& load, double now = kNoClock);

  // The share of the steps that finished in the kSustainWindow seconds before `now` that
  // went to prompt tokens (/metrics' tandem_prefill_sustained_share), and whether pacing is
  // off for it.
  double prompt_share(double now) const;
  bool sustained(double now) const { return now >= 0 && prompt_share(now) >= kSustained; }

  // The models' time for a step that carries `load` (0 until they have samples).
  double predict(const StepLoad& load) const;

 private:
  static CostFit<3>::Vec decode_features(const StepLoad& load);
  static CostFit<2>::Vec prompt_features(const StepLoad& load);
  // A sample's time, held within kOutlier of the model's prediction once it has settled.
  template <size_t N>
  static double within_reason(const CostFit<N>& fit, const typename CostFit<N>::Vec& x,
                              double seconds);

  int32_t max_step_tokens_;
  int32_t fixed_chunk_;
  bool paced_;
  int32_t half_budget() const { return std::max(kMinChunk, max_step_tokens_ / 2); }
  int32_t budget(const StepLoad& decode, int32_t waiting_prompts, int32_t position, bool sustained,
                 bool arriving, int32_t prefill) const;
  void remember(double now, double seconds, double prompt_seconds);

  struct Recent {
    double at, seconds, prompt_seconds;
  };
  StepLoad last_decode_;         // the decode part of the last step with decode rows
  std::deque<Recent> recent_;    // the steps of the last kSustainWindow seconds, oldest first
  std::deque<double> arrivals_;  // when long prompts began beside decode rows, oldest first
  double recent_seconds_ = 0, recent_prompt_seconds_ = 0;  // their sums
  CostFit<3> decode_{kForget};
  CostFit<2> prompt_{kForget};
  int32_t probe_ = kProbeChunk;  // the next probe's tokens
};

}  // namespace tandem
