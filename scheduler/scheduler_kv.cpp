// The scheduler's KV block management: admission against the pool (with the prefix cache),
// blocks taken as sequences grow, recompute preemption when the pool runs dry, and
// offering fully written blocks to the prefix cache. See "KV cache" in docs/design.md.
#include <algorithm>

#include "scheduler/scheduler_internal.h"

namespace tandem {

// Whether r may take its prefix from the cache: not a request that scores its prompt (echo
// with logprobs), which computes every position (the cache holds KV, not the logits it
// needs). Admission's test, and the pacer's look below.
// Nor one that pools mean or cls (embeddings), which read every position's hidden state.
bool Scheduler::reuses_prefix(const Request& r) const {
  return options_.prefix_cache && r.in.sampling.prompt_logprobs < 0 &&
         r.in.pooling != Pooling::kMean && r.in.pooling != Pooling::kCls;
}

// Where r's prefill would start if admitted now: after the full blocks of its prompt that the
// prefix cache holds (never its last position), taking nothing. A pacing hint only:
// admission may find another share, or the blocks evicted by then.
int32_t Scheduler::cached_prefix(const Request& r) const {
  if (!reuses_prefix(r) || (r.share && !r.share->dissolved) || r.resuming()) return 0;
  const int32_t bs = pool_.block_size();
  return bs * pool_.cached_blocks(r.in.prompt, (r.prompt_len - 1) / bs, r.in.cache_salt);
}

// Admits r if the blocks of its whole prefill can be had: first the longest cached prefix
// (never the last position: the step that writes it yields the logits, or, resuming, is
// the one decode needs), then fresh blocks for the rest. All or nothing.
// A request preempted before comes back only with a block to spare for each running
// request too (vLLM's old watermark, sized to the batch): the pool it left was too small
// for everyone, and taking exactly what it needs had it preempted again at the next block
// boundary any running request crossed, recomputing each time. In tokens; 0 for the rest.
int64_t Scheduler::readmission_spare(const Request& r) const {
  return r.admitted_before ? int64_t{pool_.block_size()} * static_cast<int64_t>(running_.size())
                           : 0;
}

bool Scheduler::try_admit(Request& r) {
  const int32_t bs = pool_.block_size();
  // While not even a block of its own and its spares are free, the prefix-cache match a
  // preempted request would make first, over all its tokens, is skipped (it waits many
  // steps now, and was matched at each).
  const int64_t spare = readmission_spare(r);
  if (spare > 0 && !pool_.can_reserve(spare + 1)) return false;
  if (r.share && !take_shared_prompt(r)) return false;  // its leader is computing them
  const int32_t shared = static_cast<int32_t>(r.blocks.size());
  const bool from_share = shared > 0 || r.prompt_copy.slots > 0;
  if (!from_share && reuses_prefix(r)) {
    std::vector<int32_t> tokens;
    tokens.reserve(r.prefill_end);
    for (int32_t i = 0; i < r.prefill_end; ++i) tokens.push_back(r.token_at(i));
    pool_.match(tokens, (r.prefill_end - 1) / bs, r.blocks, r.in.cache_salt);
    if (local_pool_) take_local_prefix_hit(r);
  }
  const int32_t cached = static_cast<int32_t>(r.blocks.size());
  const int64_t need = int64_t{r.prefill_end} - int64_t{cached} * bs;
  if (!pool_.can_reserve(need + spare) || !pool_.reserve(need, r.blocks)) {
    release_kv(r);
    r.prompt_copy = {};  // taken again, with the blocks, at the next try
    return false;
  }
  int32_t copied = 0;  // the share's partly filled block, copied into this request's own
  if (r.prompt_copy.slots > 0) {
    r.prompt_copy.to = r.blocks[cached];
    copied = r.prompt_copy.slots;
  }
  r.prefill_launched = cached * bs + copied;
  r.prefill_start = r.prefill_launched;
  take_shared_scores(r);
  r.kv_written = cached * bs;
  r.blocks_offered = cached;  // registered already, or shared (offered by their writer)
  if (!r.admitted_before) {
    r.admitted_before = true;
    // A share's member reports the full blocks it took by reference as cached (it computed
    // none of them), as a plain request would had it arrived a step after its leader:
    // prompt lists [D, D] count D's blocks twice. Members that score their prompt too,
    // though the prefix cache never serves such a request (its logits are not cached).
    r.cached_tokens = !options_.prefix_cache ? 0 : std::min(cached * bs, r.prompt_len);
    if (options_.prefix_cache) {
      counters_.prefix_queried_tokens += r.prompt_len;
      counters_.prefix_hit_tokens += r.cached_tokens;
    }
    r.in.sink->on_admitted(r.cached_tokens);
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
  if (s.dissolved) {
    r.share.reset();  // a plain request now: it computes (or finds cached) its whole prompt
    return true;
  }
  if (s.ready) {
    pool_.share(std::span<const int32_t>(s.held).first(s.blocks), r.blocks);
    if (local_pool_) local_pool_->share(s.held_local, r.local_blocks);
    if (s.partial > 0) r.prompt_copy = {s.held[s.blocks], -1, s.partial};
    return true;
  }
  if (s.leader != 0 && s.leader != r.id && live_.contains(s.leader)) return false;
  if (s.leader != r.id) s.scored.clear();  // a leader that ended mid-prefill kept some
  s.leader = r.id;
  return true;
}

// A member admitted from a scored share sends the leader's scores of the positions it took
// (up to the share's end, the first it computes itself) as its prompt's entries, from the
// first it has not sent: none, unless it once led the share and was preempted (a member's
// prefill starts at the share's end whatever it sent before).
void Scheduler::take_shared_scores(Request& r) {
  if (!r.share || !r.share->ready || r.in.sampling.prompt_logprobs < 0) return;
  const std::vector<TokenLogprobs>& scored = r.share->scored;
  const auto from = static_cast<size_t>(r.prompt_logprobs_sent);
  if (from >= scored.size()) return;
  r.prompt_logprobs_sent = static_cast<int32_t>(scored.size());
  r.in.sink->on_prompt_logprobs(std::span<const TokenLogprobs>(scored).subspan(from));
}

// The leader's processed steps wrote the shared blocks: the share takes a reference to
// each, for the members still waiting. The leader's part ends here.
void Scheduler::publish_shared_prompt(Request& r) {
  PromptShare& s = *r.share;
  const int32_t table = s.blocks + (s.partial > 0 ? 1 : 0);
  if (s.leader != r.id || s.ready || r.kv_written < s.end(pool_.block_size())) return;
  // A scored share goes with the scores of every position members take (kept by the
  // leader as its chunks are processed, cancelled or not; should any be missing, the share
  // waits, and the next member admitted after the leader ends leads it from the start).
  if (r.in.sampling.prompt_logprobs >= 0 &&
      static_cast<int32_t>(s.scored.size()) != s.end(pool_.block_size()) + 1)
    return;
  if (static_cast<int32_t>(r.blocks.size()) < table) return;
  if (local_pool_ && static_cast<int32_t>(r.local_blocks.size()) < s.blocks) return;
  if (s.unadmitted > 0) {
    // The partly filled block is held too: the leader goes on writing its later slots, but
    // the ones members copy stay as they are until the last member has copied them.
    pool_.share(std::span<const int32_t>(r.blocks).first(table), s.held);
    // drop_local_blocks kept the window before position s.blocks * block_size for this.
    if (local_pool_)
      local_pool_->share(std::span<const int32_t>(r.local_blocks).first(s.blocks), s.held_local);
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
    if (local_pool_) local_pool_->release(s.held_local);
    s.ready = false;
    std::vector<TokenLogprobs>().swap(s.scored);
  }
  r.share.reset();
}

// The pool is dry and something must give. A share holds its own references until its
// last member is admitted; once its leader is preempted (or ends) before that, some of
// those references are the only ones left on their blocks (the leader's partly filled
// prompt block always, as it recomputes into a fresh one), and they stay pinned while the
// members wait behind whoever needs them: the one running request preempted itself every
// step, was readmitted and hit the same wall (QA's livelock). Such shares are dissolved:
// their blocks go back (full ones stay cached) and each member computes its prompt alone,
// which the laws say gives the same output. A share whose blocks all have other holders
// frees nothing and is kept. Called only from schedule(), when no step is in flight.
// Returns whether any share let go.
bool Scheduler::release_pinned_shares() {
  auto pins = [](const KvBlockPool& pool, const std::vector<int32_t>& held) {
    return std::any_of(held.begin(), held.end(),
                       [&](int32_t b) { return b >= 0 && pool.refcount(b) == 1; });
  };
  std::vector<std::shared_ptr<PromptShare>> pinning;
  {
    std::lock_guard lock(inbox_mutex_);
    for (const auto& w : waiting_) {
      const std::shared_ptr<PromptShare>& s = w->share;
      if (!s || !s->ready || std::find(pinning.begin(), pinning.end(), s) != pinning.end())
        continue;
      if (pins(pool_, s->held) || (local_pool_ && pins(*local_pool_, s->held_local)))
        pinning.push_back(s);
    }
  }
  for (const auto& s : pinning) {
    pool_.release(s->held);
    if (local_pool_) local_pool_->release(s->held_local);
    s->ready = false;
    s->dissolved = true;
    std::vector<TokenLogprobs>().swap(s->scored);  // its members score alone now
  }
  return !pinning.empty();
}

// Grows r's block tables to cover `positions` positions, in both groups or in neither;
// false when a pool is dry. The next query is at first_query: local blocks wholly before
// its window go back first (they are never read again).
bool Scheduler::grow_blocks(Request& r, int64_t positions, int64_t first_query) {
  const int64_t bs = pool_.block_size();
  const int64_t global = std::max<int64_t>(positions - int64_t(r.blocks.size()) * bs, 0);
  if (!local_pool_) return global == 0 || pool_.reserve(global, r.blocks);
  drop_local_blocks(r, first_query);
  const int64_t local = std::max<int64_t>(positions - int64_t(r.local_blocks.size()) * bs, 0);
  if (pool_.blocks_for(global) > pool_.free_blocks() ||
      local_pool_->blocks_for(local) > local_pool_->free_blocks())
    return false;
  return pool_.reserve(global, r.blocks) && local_pool_->reserve(local, r.local_blocks);
}

// Drops r's local blocks that hold only positions before first_query - window + 1: no
// query from first_query on sees them. A step still in flight may read them, but a block
// handed out again is written only by a step launched later, which runs after it. A
// leader of n choices keeps the window its members start from until it hands them over.
void Scheduler::drop_local_blocks(Request& r, int64_t first_query) {
  const int64_t bs = pool_.block_size();
  int64_t keep_from = first_query - info_.sliding_window + 1;
  if (r.share && r.share->leader == r.id && !r.share->ready)
    keep_from = std::min(keep_from, r.share->blocks * bs - info_.sliding_window + 1);
  if (keep_from <= 0) return;
  const int32_t droppable =
      static_cast<int32_t>(std::min<int64_t>(keep_from / bs, int64_t(r.local_blocks.size())));
  for (; r.local_dropped < droppable; ++r.local_dropped) {
    int32_t& id = r.local_blocks[r.local_dropped];
    if (id >= 0) local_pool_->release_one(id);
    id = kNoBlock;
  }
}

// A prefix hit of k blocks is usable only if the local group still holds the blocks of
// the window before position k * block_size (what the first computed query sees): walk k
// down, block by block, until it does (as vLLM's sliding-window manager does), then take
// those local blocks. A dropped, evicted or never cached local block costs hits, never a
// wrong one: a local block is found under its global block's id and generation.
void Scheduler::take_local_prefix_hit(Request& r) {
  const int64_t bs = pool_.block_size();
  auto first_needed = [&](int64_t k) {
    return static_cast<int32_t>(std::max<int64_t>(0, k * bs - info_.sliding_window + 1) / bs);
  };
  auto local_of = [&](int32_t b) { return local_pool_->find_tagged(pool_.tag_of(r.blocks[b])); };
  int32_t k = static_cast<int32_t>(r.blocks.size());
  for (; k > 0; --k) {
    bool held = true;
    for (int32_t b = first_needed(k); b < k && held; ++b) held = local_of(b) >= 0;
    if (held) break;
    pool_.release_one(r.blocks.back());
    r.blocks.pop_back();
  }
  r.local_dropped = first_needed(k);
  r.local_blocks.assign(r.local_dropped, kNoBlock);
  for (int32_t b = r.local_dropped; b < k; ++b) {
    const int32_t id = local_of(b);
    local_pool_->take(id);
    r.local_blocks.push_back(id);
  }
}

// Gives back everything r holds in both groups.
void Scheduler::release_kv(Request& r) {
  pool_.release(r.blocks);
  if (local_pool_) local_pool_->release(r.local_blocks);
  r.local_blocks.clear();
  r.local_dropped = 0;
}

// Sends a running request back to the front of the queue, its blocks freed. It will be
// admitted again and recompute its prompt and generated tokens (its full blocks may still
// be cached); sampling is keyed by seed and position, so its output does not change.
// Called only from schedule(), when no step is in flight.
void Scheduler::preempt(Request& r) {
  release_kv(r);
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
  waiting_followers_ += owned->queue_follower;
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
    const bool ours =
        pool_.register_block(r.blocks[b], b == 0 ? -1 : r.blocks[b - 1], tokens, r.in.cache_salt);
    // The local block of the same positions is found through the global one.
    if (ours && local_pool_ && b < static_cast<int32_t>(r.local_blocks.size()) &&
        r.local_blocks[b] >= 0)
      local_pool_->register_tagged(r.local_blocks[b], pool_.tag_of(r.blocks[b]));
  }
}

}  // namespace tandem
