// How many prompt tokens a step may carry while other requests decode (issue 15, fair
// scheduling under long prompts). A step's time is about T_decode + n * t_token for n
// prompt tokens beside the decode rows, and each decoding stream waits that long for its
// next token. Keeping n <= kShare * T_decode / t_token keeps a mixed step within about
// (1 + kShare) decode steps, so a 4096-token prompt arriving among running streams stretches
// their token gaps (TPOT) by under 2x instead of by a whole 512-token chunk's time. With no
// request decoding, a step takes the full --max-step-tokens (nobody waits on it).
//
// That bound is for one prompt among the streams, not for a queue of them. Each prompt
// token costs every stream t_token of waiting however the prompt is cut, so pacing buys
// the streams evenness, not time; its price, T_decode of waiting per step, is paid by each
// request still without its first token. With P of them (prefilling, or queued), each adds
// a share: n <= kShare * P * T_decode / t_token, which keeps pacing's cost to the waiting
// requests together at a lone prompt's (P = 1 is paced as above). With one share whatever
// the queue, 16 clients sending 1024-token prompts were served one at a time: one stream
// decoding, the next prompt fed 16 tokens a step beside it, the rest queued (issue 15's
// headline workload, TTFT p50 19 s).
//
// T_decode and t_token are moving averages of the device's own step times
// (StepResult::seconds): decode-only steps give T_decode; steps with prompt tokens give
// t_token = (T - T_decode) / n (T_decode stands for the cost every step pays, so a short
// prompt's step does not make its tokens look dear; before it is known, T / n). Until both are
// measured, with a fixed chunk
// (--prefill-chunk N), and unpaced (the library's default), the budget is fixed. The pace changes
// only how a prompt is cut, never a token: chunked prefill equals one-shot prefill (law 2,
// PrefixCacheLaw.*).
#pragma once

#include <cstdint>

namespace tandem {

class PrefillPacer {
 public:
  static constexpr double kShare = 0.8;     // of a decode step's time, for prompt tokens
  static constexpr int32_t kMinChunk = 16;  // a prompt always moves on
  static constexpr double kWeight = 0.2;    // of the newest measure in each average

  // fixed_chunk > 0: that many prompt tokens a step beside decode rows (no pacing); else
  // paced, or (not paced) the whole step budget.
  PrefillPacer(int32_t max_step_tokens, int32_t fixed_chunk, bool paced)
      : max_step_tokens_(max_step_tokens), fixed_chunk_(fixed_chunk), paced_(paced) {}

  // Prompt tokens the next step may take when it also carries `decode_rows` decode rows
  // and `waiting_prompts` requests wait for their first token (prefilling or queued).
  int32_t prompt_budget(int32_t decode_rows, int32_t waiting_prompts = 1) const;

  // A finished step: its device time, decode rows and prompt tokens.
  void record(double seconds, int32_t decode_rows, int32_t prompt_tokens);

  double decode_step_seconds() const { return decode_seconds_; }  // 0 until measured
  double prompt_token_seconds() const { return token_seconds_; }  // 0 until measured

 private:
  int32_t max_step_tokens_;
  int32_t fixed_chunk_;
  bool paced_;
  double decode_seconds_ = 0;
  double token_seconds_ = 0;
};

}  // namespace tandem
