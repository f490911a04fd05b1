// The scheduler's private state, shared by scheduler.cpp (the loop, finalize),
// scheduler_kv.cpp (KV blocks: admission, growth, preemption, the prefix cache),
// scheduler_results.cpp (a processed step's events) and scheduler_speculation.cpp (drafts
// and verify rows). Not part of the scheduler's contract; include it only from those files.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "runner/device/device.h"
#include "runner/tokenizer/tokenizer.h"
#include "scheduler/line_limits.h"
#include "scheduler/ngram_drafter.h"
#include "scheduler/scheduler.h"
#include "scheduler/stop_matcher.h"

namespace tandem {

// The prompt that several requests of one submit share (n choices), all of it but its
// last token (which each member computes for its own logits): its full blocks, shared by
// reference, and the slots of the partly filled block after them, copied into each
// member's own block (a member writes its next positions there, so that block cannot be
// shared). The first member admitted computes them (the leader); once a processed step
// has written them, the share takes a reference to each block, and members admitted after
// take theirs from it (and copy the partial block's slots in their first step) instead of
// computing them. The share lets go when every member has been admitted once (or dropped
// before that). A member preempted later recomputes alone. A share whose references are
// the last on some block (its leader was preempted or ended while members wait) is
// dissolved when the pool runs dry (Scheduler::release_pinned_shares): those blocks could
// otherwise keep a lone request from ever growing, and its members then compute their
// prompts as plain requests (from the prefix cache where it still holds the blocks).
struct Scheduler::PromptShare {
  int32_t blocks = 0;         // full blocks before the prompt's last token
  int32_t partial = 0;        // slots of the next block before the prompt's last token
  uint64_t leader = 0;        // the member computing them; 0: none yet
  bool ready = false;         // `held` holds them
  std::vector<int32_t> held;  // the share's own references: the full blocks, then the
                              // partly filled one when partial > 0
  // The local group's blocks of the full blocks' positions (kNoBlock before the window of
  // the members' first query), when the model has sliding-window layers (partial is 0).
  std::vector<int32_t> held_local;
  int32_t unadmitted = 0;  // members not yet admitted once
  bool dissolved = false;  // its references let go under pressure: members go alone
  // Members that score their prompt (echo with logprobs: all of one share ask the same top
  // count) take its positions' entries from here too, the leader's, up to the share's end
  // (blocks * block size + partial, the first position a member computes); by the laws they
  // are the values each would compute alone. Empty when the members do not score.
  std::vector<TokenLogprobs> scored;
  int32_t end(int32_t block_size) const { return blocks * block_size + partial; }
};

struct Scheduler::Request {
  Request(const Tokenizer& tokenizer, GenerationRequest&& request)
      : in(std::move(request)),
        detok(tokenizer, !in.skip_special_tokens),
        stop(in.stop, in.include_stop_str_in_output),
        lines(in.min_indent, in.time_limit_ms) {}

  // Token i of the sequence: the prompt, then the accepted generated tokens.
  int32_t token_at(int64_t i) const {
    return i < prompt_len ? in.prompt[i] : generated[i - prompt_len];
  }
  int64_t known_tokens() const { return prompt_len + static_cast<int64_t>(generated.size()); }
  // Whether it computes a share's prompt that is not yet published (its scores are kept).
  bool leads_unpublished_share() const { return share && share->leader == id && !share->ready; }
  // A preempted request recomputes its generated tokens too; the last of them is fed by
  // the first decode step after, so its prefill stops one short.
  bool resuming() const { return completion_tokens > 0; }

  uint64_t id = 0;
  GenerationRequest in;
  Detokenizer detok;
  StopMatcher stop;
  LineLimits lines;
  double generation_started = 0;  // the clock (pacer_seconds) at the first accepted token
  int32_t prompt_len = 0;
  int32_t max_new = 0;          // max_tokens, capped by the context and the KV pool
  int32_t prefill_end = 0;      // positions the prefill writes: the prompt, or after a
                                // preemption the prompt and all generated tokens but the last
  std::vector<int32_t> blocks;  // the block table; grows as the sequence does
  // The sliding-window layers' table (a local group exists): same indexing, grows with the
  // sequence, and blocks no future query can see become kNoBlock, their reference gone.
  std::vector<int32_t> local_blocks;
  int32_t local_dropped = 0;       // leading local entries known to be kNoBlock
  std::vector<int32_t> generated;  // accepted tokens (also the output penalties' history)
  // The repetition penalty's prompt history (StepRow), shared by every step; null when
  // the request has no prompt penalty.
  std::shared_ptr<const std::vector<int32_t>> penalty_prompt;
  // Echo with logprobs: the prompt positions whose logprobs were sent (0 .. this - 1). Kept
  // across preemption, so a recomputed prefill sends only the positions after them.
  int32_t prompt_logprobs_sent = 0;
  // Embeddings (in.pooling): the fixed-point sum of the states pooled so far, and how many.
  // A chunk at position 0 starts it again (a preempted prefill recomputes from there).
  std::vector<int64_t> pooled_sum;
  int64_t pooled_count = 0;
  // A pooling list's members after its first (one embeddings request's other inputs): they
  // wait without counting against --max-queue, as the request counts once.
  bool queue_follower = false;
  // Structured output: made at submission from in.grammar and from then on advanced only by
  // the device worker (StepRow::grammar). Every sampled token is either accepted or comes
  // after the row finished, so it matches `generated` whenever the row is next launched;
  // a preempted request's resumed prefill samples nothing, so it stays valid across it.
  std::shared_ptr<grammar::Matcher> matcher;
  // Mirostat's and adaptive-p's state, advanced on the worker by each token's draw
  // (StepRow::sampler_state).
  std::shared_ptr<SamplerState> sampler_state;

  int32_t prefill_launched = 0;   // positions handed to launched prefill steps (or cached)
  int32_t prefill_start = 0;      // where this admission's prefill began (after the cache's)
  int32_t sampled_launched = 0;   // tokens that launched steps sample for this request
  int32_t completion_tokens = 0;  // tokens accepted (processed while not finished)
  int32_t last_token = kNoToken;
  int32_t in_flight = 0;  // launched steps holding this row whose tokens are unprocessed
  bool decoding = false;  // the prefill is done: each step feeds last_token
  bool finished = false;  // its finish or error event is sent; later tokens are discarded
  bool cancelled = false;
  // Its slot (BusySlot::slot); -1 until first published. Kept while preempted: the request
  // waits at the queue's front, the next to run again.
  int32_t slot = -1;
  // The stop_token_ids token that ended the output (not an end-of-generation one), or -1.
  int32_t stop_token = -1;

  // The prefix cache and preemption.
  bool admitted_before = false;  // cached_tokens is counted at the first admission only
  int32_t cached_tokens = 0;     // prompt tokens the prefix cache held at admission
  int32_t kv_written = 0;        // positions whose KV processed steps wrote
  int32_t blocks_offered = 0;    // leading blocks already offered to the prefix cache
  // n choices: the prompt's full blocks shared with the other members; null once this
  // request has no more to do with the share.
  std::shared_ptr<PromptShare> share;
  // Taken from the share at admission: the leader's partly filled prompt block, to copy
  // into this request's own by its first prefill row (StepRow::kv_copy).
  KvSlotCopy prompt_copy;
  // Speculative decoding: where the sequence's n-grams last ended, made at its first draft,
  // and how many drafts it proposes next.
  std::unique_ptr<NgramIndex> ngrams;
  std::optional<DraftPace> pace;
};

// A launched step as the scheduler remembers it: which request each row belongs to.
// Pointers stay valid: a request is retired only once no launched step holds it.
struct Scheduler::Launched {
  PendingStep step;
  std::vector<Request*> rows;
  std::vector<uint8_t> sample;
  std::vector<int32_t> write_end;       // per row: the position after the last KV it writes
  std::vector<int32_t> first_position;  // per row: the position of its first token
  // per row: the drafts a verify row carries (StepRow::verify), empty elsewhere
  std::vector<std::vector<int32_t>> drafts;
  bool decode_only = true;
  StepLoad load;  // its decode rows and prompt tokens, and the keys they read

  // A row verifies drafts: no step can be chained from this one.
  bool verifies() const {
    return std::any_of(drafts.begin(), drafts.end(), [](const auto& d) { return !d.empty(); });
  }
};

// The pacer's clock (prefill_pacer.h: the prompts' share of the last seconds' steps):
// SchedulerOptions::clock where a test gives one, else a steady clock.
// The part of a history (the prompt, or the output so far) that the penalties can count:
// all of it, or the last tokens that llama.cpp's windows (penalties, DRY) reach, which is
// all the sampler reads of either part (RowHistory).
inline std::span<const int32_t> penalty_counted(const SamplingParams& sampling,
                                                const std::vector<int32_t>& history) {
  const auto window = static_cast<size_t>(sampling.penalty_reach());
  return std::span<const int32_t>(history).last(std::min(window, history.size()));
}

inline double pacer_seconds(const SchedulerOptions& options) {
  if (options.clock) return options.clock();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace tandem
