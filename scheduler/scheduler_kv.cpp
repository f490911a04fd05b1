// The scheduler's KV block management: admission against the pool (with the prefix cache),
// blocks taken as sequences grow, recompute preemption when the pool runs dry, and
// offering fully written blocks to the prefix cache. See "KV cache" in docs/design.md.
#include <algorithm>

#include "scheduler/scheduler_internal.h"

namespace tandem {

// Admits r if the blocks of its whole prefill can be had: first the longest cached prefix
// (never the last position: the step that writes it yields the logits, or, resuming, is
// the one decode needs), then fresh blocks for the rest. All or nothing.
bool Scheduler::try_admit(Request& r) {
  const int32_t bs = pool_.block_size();
  if (r.share && !take_shared_prompt(r)) return false;  // its leader is computing them
  const int32_t shared = static_cast<int32_t>(r.blocks.size());
  const bool from_share = shared > 0 || r.prompt_copy.slots > 0;
  // A request that scores its prompt (echo with logprobs) computes every position: the
  // cache holds KV, not the logits it needs.
  if (!from_share && options_.prefix_cache && r.in.sampling.prompt_logprobs < 0) {
    std::vector<int32_t> tokens;
    tokens.reserve(r.prefill_end);
    for (int32_t i = 0; i < r.prefill_end; ++i) tokens.push_back(r.token_at(i));
    pool_.match(tokens, (r.prefill_end - 1) / bs, r.blocks);
  }
  const int32_t cached = static_cast<int32_t>(r.blocks.size());
  if (!pool_.reserve(int64_t{r.prefill_end} - int64_t{cached} * bs, r.blocks)) {
    pool_.release(r.blocks);
    r.prompt_copy = {};  // taken again, with the blocks, at the next try
    return false;
  }
  int32_t copied = 0;  // the share's partly filled block, copied into this request's own
  if (r.prompt_copy.slots > 0) {
    r.prompt_copy.to = r.blocks[cached];
    copied = r.prompt_copy.slots;
  }
  r.prefill_launched = cached * bs + copied;
  r.kv_written = cached * bs;
  r.blocks_offered = cached;  // registered already, or shared (offered by their writer)
  if (!r.admitted_before) {
    r.admitted_before = true;
    r.cached_tokens = from_share ? 0 : std::min(cached * bs, r.prompt_len);
    if (options_.prefix_cache && !from_share) {
      counters_.prefix_queried_tokens += r.prompt_len;
      counters_.prefix_hit_tokens += r.cached_tokens;
    }
    if (r.share) {
      if (r.share->leader == r.id) {
        --r.share->unadmitted;  // counted; it stays to publish the blocks
      } else {
        leave_share(r);
      }
    }
  } else if (r.share && r.share->leader != r.id) {
    r.share.reset();  // a preempted member that took the blocks before: nothing more to do
  }
  return true;
}

// A member of a prompt share being admitted: takes the shared blocks when they are
// written, or becomes the leader that computes them when nobody admitted does. False: the
// leader is running and has not written them yet (wait; admission stops behind it).
bool Scheduler::take_shared_prompt(Request& r) {
  PromptShare& s = *r.share;
  if (s.ready) {
    pool_.share(std::span<const int32_t>(s.held).first(s.blocks), r.blocks);
    if (s.partial > 0) r.prompt_copy = {s.held[s.blocks], -1, s.partial};
    return true;
  }
  if (s.leader != 0 && s.leader != r.id && live_.contains(s.leader)) return false;
  s.leader = r.id;
  return true;
}

// The leader's processed steps wrote the shared blocks: the share takes a reference to
// each, for the members still waiting. The leader's part ends here.
void Scheduler::publish_shared_prompt(Request& r) {
  PromptShare& s = *r.share;
  const int32_t table = s.blocks + (s.partial > 0 ? 1 : 0);
  if (s.leader != r.id || s.ready || r.kv_written < s.blocks * pool_.block_size() + s.partial) {
    return;
  }
  if (static_cast<int32_t>(r.blocks.size()) < table) return;
  if (s.unadmitted > 0) {
    // The partly filled block is held too: the leader goes on writing its later slots, but
    // the ones members copy stay as they are until the last member has copied them.
    pool_.share(std::span<const int32_t>(r.blocks).first(table), s.held);
    s.ready = true;
  }
  r.share.reset();
}

// r leaves the share: admitted with its blocks, or dropped (cancelled, shut down) before
// its first admission; the last member to be admitted lets the share's references go.
void Scheduler::leave_share(Request& r) {
  if (!r.share) return;
  PromptShare& s = *r.share;
  if (!r.admitted_before || s.leader != r.id) --s.unadmitted;
  if (s.unadmitted == 0 && s.ready) {
    pool_.release(s.held);
    s.ready = false;
  }
  r.share.reset();
}

// Grows r's block table to cover `positions` positions; false when the pool is dry.
bool Scheduler::grow_blocks(Request& r, int64_t positions) {
  const int64_t have = static_cast<int64_t>(r.blocks.size()) * pool_.block_size();
  if (have >= positions) return true;
  return pool_.reserve(positions - have, r.blocks);
}

// Sends a running request back to the front of the queue, its blocks freed. It will be
// admitted again and recompute its prompt and generated tokens (its full blocks may still
// be cached); sampling is keyed by seed and position, so its output does not change.
// Called only from schedule(), when no step is in flight.
void Scheduler::preempt(Request& r) {
  pool_.release(r.blocks);
  r.prefill_end = r.resuming() ? r.prompt_len + r.completion_tokens - 1 : r.prompt_len;
  r.prefill_launched = 0;
  r.kv_written = 0;
  r.blocks_offered = 0;
  r.prompt_copy = {};  // recomputed with the rest
  r.decoding = false;
  std::erase(running_, &r);
  ++counters_.preemptions;
  auto it = live_.find(r.id);
  std::unique_ptr<Request> owned = std::move(it->second);
  live_.erase(it);
  std::lock_guard lock(inbox_mutex_);
  waiting_.push_front(std::move(owned));
}

// A processed step wrote r's KV up to write_end: every block now full whose tokens are all
// known (a discarded token's KV is never offered) goes to the prefix cache, in order. Only
// completed steps get here, so no half-written block is ever findable.
void Scheduler::offer_written_blocks(Request& r, int32_t write_end) {
  r.kv_written = std::max(r.kv_written, write_end);
  if (!options_.prefix_cache) return;
  const int32_t bs = pool_.block_size();
  const int64_t full = std::min<int64_t>(r.kv_written, r.known_tokens()) / bs;
  std::vector<int32_t> tokens(bs);
  for (; r.blocks_offered < full && r.blocks_offered < static_cast<int32_t>(r.blocks.size());
       ++r.blocks_offered) {
    const int32_t b = r.blocks_offered;
    for (int32_t i = 0; i < bs; ++i) tokens[i] = r.token_at(int64_t{b} * bs + i);
    pool_.register_block(r.blocks[b], b == 0 ? -1 : r.blocks[b - 1], tokens);
  }
}

}  // namespace tandem
