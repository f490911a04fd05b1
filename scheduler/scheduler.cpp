#include "scheduler/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "scheduler/scheduler_internal.h"

namespace tandem {

const char* chain_break_name(ChainBreak reason) {
  switch (reason) {
    case ChainBreak::kFinish:
      return "finish";
    case ChainBreak::kPrefill:
      return "prefill";
    case ChainBreak::kBatchChange:
      return "batch_change";
    case ChainBreak::kCancel:
      return "cancel";
    case ChainBreak::kKvFull:
      return "kv_full";
    case ChainBreak::kSpeculation:
      return "speculation";
  }
  return "unknown";
}

Scheduler::Scheduler(Device& device, const Tokenizer& tokenizer, SchedulerOptions options)
    : device_(device),
      tokenizer_(tokenizer),
      options_(std::move(options)),
      info_(device.info()),
      pool_(info_.kv_blocks, info_.kv_block_size),
      pacer_(options_.max_step_tokens, options_.prefill_chunk, options_.paced_prefill) {
  if (options_.max_batch < 1 || options_.max_step_tokens < 1 || options_.max_queue < 0 ||
      options_.prefill_chunk < 0) {
    throw std::invalid_argument(
        "scheduler: max_batch and max_step_tokens must be >= 1, max_queue and prefill_chunk "
        ">= 0");
  }
  if (options_.spec_tokens < 0 || options_.spec_ngram_min < 1 ||
      options_.spec_ngram_max < options_.spec_ngram_min || options_.spec_max_batch < 0) {
    throw std::invalid_argument(
        "scheduler: spec_tokens and spec_max_batch must be >= 0, and 1 <= spec_ngram_min <= "
        "spec_ngram_max");
  }
  // Only the global pool bounds a sequence: the local (sliding-window) group holds a
  // window's positions however long the sequence grows.
  info_.context_length = static_cast<int32_t>(
      std::min<int64_t>(info_.context_length, int64_t{pool_.total()} * pool_.block_size()));
  counters_.kv_blocks_total = pool_.total();
  counters_.kv_bytes_per_token = info_.kv_bytes_per_token;
  counters_.kv_capacity_tokens = int64_t{pool_.total()} * pool_.block_size();
  if (info_.kv_local_blocks > 0) {
    if (info_.sliding_window <= 0)
      throw std::invalid_argument("scheduler: a local KV group needs a sliding window");
    // A lone request's chunk needs one sequence's local blocks (never more than the global
    // pool holds); with fewer, nothing running would ever free one and it waited forever.
    const int32_t one_sequence =
        std::min(local_blocks_per_sequence(info_.sliding_window, options_.max_step_tokens,
                                           info_.kv_block_size),
                 pool_.total());
    if (info_.kv_local_blocks < one_sequence)
      throw std::invalid_argument("scheduler: a local KV group of " +
                                  std::to_string(info_.kv_local_blocks) +
                                  " blocks cannot hold one sequence's window and step");
    local_pool_.emplace(info_.kv_local_blocks, info_.kv_block_size);
    counters_.kv_local_blocks_total = local_pool_->total();
    counters_.kv_local_bytes_per_token = info_.kv_local_bytes_per_token;
    counters_.sliding_window = info_.sliding_window;
  }
  published_ = counters_;
}

Scheduler::~Scheduler() { stop(); }

void Scheduler::cancel(uint64_t id) {
  {
    std::lock_guard lock(inbox_mutex_);
    cancels_.push_back(id);
  }
  inbox_cv_.notify_one();
}

SchedulerMetrics Scheduler::metrics() const {
  SchedulerMetrics out;
  {
    std::lock_guard lock(metrics_mutex_);
    out = published_;
  }
  const DeviceCounters device = device_.counters();
  out.device_busy_seconds = device.busy_seconds;
  out.device_idle_seconds = device.idle_seconds;
  out.gpu_busy_seconds = device.device_busy_seconds;
  out.chained_gap_median_us = device.chained_gap_median_us;
  return out;
}

void Scheduler::start() {
  if (thread_.joinable()) throw std::logic_error("scheduler: already started");
  thread_ = std::thread([this] { thread_main(); });
}

void Scheduler::stop() {
  {
    std::lock_guard lock(inbox_mutex_);
    stopping_ = true;
  }
  inbox_cv_.notify_one();
  if (thread_.joinable()) {
    thread_.join();  // the thread shuts down on its way out
  } else {
    shutdown();
  }
}

void Scheduler::thread_main() {
  for (;;) {
    {
      std::lock_guard lock(inbox_mutex_);
      if (stopping_) break;
    }
    if (run_once()) continue;
    std::unique_lock lock(inbox_mutex_);
    const auto ready = [&] { return stopping_ || !waiting_.empty() || !cancels_.empty(); };
    // The prompts' share of the last kSustainWindow seconds of steps falls with time alone:
    // while it shows one, the loop wakes a window later to publish it again (idle, it had
    // stayed at its last value; QA W), then sleeps until work comes.
    if (counters_.prefill_sustained_share > 0) {
      inbox_cv_.wait_for(lock, std::chrono::duration<double>(options_.idle_republish_seconds),
                         ready);
    } else {
      inbox_cv_.wait(lock, ready);
    }
  }
  shutdown();
}

bool Scheduler::drained() const {
  std::lock_guard lock(inbox_mutex_);
  return waiting_.empty() && live_.empty() && !curr_ && !next_;
}

// The loop of DESIGN.md, one turn: process curr (the device runs next meanwhile), adopt
// next or launch a fresh batch, chain its successor when allowed, then block on it.
bool Scheduler::run_once() {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  apply_cancels();
  bool worked = false;
  if (curr_) {
    process(*curr_, *curr_result_);
    curr_.reset();
    curr_result_.reset();
    if (options_.after_process) options_.after_process();
    worked = true;
  }
  if (next_) {
    curr_ = std::move(next_);
  } else {
    curr_ = schedule();
    if (!curr_) {
      counters_.host_seconds += std::chrono::duration<double>(Clock::now() - start).count();
      publish();
      return worked;
    }
  }
  if (options_.overlap) {
    if (auto reason = chain_break(*curr_)) {
      ++counters_.chain_breaks[static_cast<int>(*reason)];
    } else {
      launch_chained_from(*curr_);
    }
  }
  const auto wait_start = Clock::now();
  try {
    curr_result_ = device_.finalize(curr_->step);
  } catch (const std::exception& e) {
    fail_in_flight(std::string("the device failed: ") + e.what());
  }
  const auto end = Clock::now();
  counters_.host_seconds += std::chrono::duration<double>(wait_start - start).count();
  publish();  // the time it takes is counted at the next publish
  counters_.host_seconds += std::chrono::duration<double>(Clock::now() - end).count();
  return true;
}

void Scheduler::apply_cancels() {
  std::vector<uint64_t> ids;
  std::vector<std::unique_ptr<Request>> dropped;
  {
    std::lock_guard lock(inbox_mutex_);
    if (cancels_.empty()) return;
    ids.swap(cancels_);
    for (uint64_t id : ids) {
      auto it = std::find_if(waiting_.begin(), waiting_.end(),
                             [&](const auto& r) { return r->id == id; });
      if (it != waiting_.end()) {
        waiting_followers_ -= (*it)->queue_follower;
        dropped.push_back(std::move(*it));
        waiting_.erase(it);
      }
    }
  }
  for (auto& r : dropped) {
    leave_share(*r);
    ++counters_.requests_finished;
    // A preempted request waits here having streamed tokens: usage counts them.
    r->in.sink->on_finish(FinishReason::kCancelled,
                          Usage{r->prompt_len, r->completion_tokens, r->cached_tokens});
  }
  for (uint64_t id : ids) {
    auto it = live_.find(id);
    if (it == live_.end() || it->second->finished) continue;
    Request& r = *it->second;
    r.cancelled = true;
    finish(r, FinishReason::kCancelled, false);
    retire_if_done(r);
  }
}

// The states a prefill chunk from `first` gives a pooling request's embedding: all of a
// mean's, the cls state at position 0, the last state in the prompt's last chunk.
static Pooling chunk_pooling(Pooling pooling, int32_t first, bool last_chunk) {
  if (pooling == Pooling::kCls && first != 0) return Pooling::kNone;
  if (pooling == Pooling::kLast && !last_chunk) return Pooling::kNone;
  return pooling;
}

// A chunk of the prefill: the prompt (the last chunk samples the first token), or after a
// preemption the prompt and the generated tokens but the last (nothing to sample: the
// request decodes from its last token next). False, adding nothing, when the local group
// has no blocks for the chunk (admission reserved the global ones for the whole prefill).
bool Scheduler::add_prefill_row(StepPlan& plan, Launched& step, Request& r, int32_t& budget) {
  const int32_t n = std::min(r.prefill_end - r.prefill_launched, budget);
  if (!grow_blocks(r, int64_t{r.prefill_launched} + n, r.prefill_launched)) return false;
  const bool last_chunk = r.prefill_launched + n == r.prefill_end;
  StepRow row;
  row.request_id = r.id;
  for (int32_t i = r.prefill_launched; i < r.prefill_launched + n; ++i)
    row.tokens.push_back(r.token_at(i));
  row.position = r.prefill_launched;
  row.kv_blocks = r.blocks;
  row.kv_local_blocks = r.local_blocks;
  // A member of a prompt share copies the leader's partly filled block first. Copies run
  // before any row of the step writes, so the source still holds the leader's KV even when
  // the share let it go while this step was built (the last member's admission).
  row.kv_copy = std::exchange(r.prompt_copy, KvSlotCopy{});
  row.sampling = r.in.sampling;
  row.stop_banned_until = r.prompt_len + r.in.sampling.min_tokens;
  row.penalty_prompt = r.penalty_prompt;
  row.grammar = r.matcher;
  row.sampler_state = r.sampler_state;
  // A resumed prefill samples nothing (decode continues from its last token), nor does a
  // max_tokens 0 prompt, which is only scored.
  row.sample = last_chunk && !r.resuming() && r.max_new > 0;
  if (!last_chunk) row.next_prompt_token = r.token_at(r.prefill_launched + n);
  row.pooling = chunk_pooling(r.in.pooling, r.prefill_launched, last_chunk);
  step.first_position.push_back(r.prefill_launched);
  plan.rows.push_back(std::move(row));
  step.rows.push_back(&r);
  step.sample.push_back(plan.rows.back().sample);
  step.write_end.push_back(r.prefill_launched + n);
  step.drafts.emplace_back();
  step.decode_only = false;
  step.load.add_prompt(r.prefill_launched, n);
  r.prefill_launched += n;
  if (plan.rows.back().sample) ++r.sampled_launched;
  if (last_chunk && r.resuming()) r.decoding = true;  // its KV is written before the next step
  ++r.in_flight;
  budget -= n;
  counters_.prompt_tokens += n;
  return true;
}

// One token for each decoding request, its block table grown to cover it first. When the
// pool has no block left, blocks only a waiting share still holds go back first, then the
// most recently admitted running request is preempted (it may be this one), as vLLM's
// recompute preemption does. So the oldest running request always steps: alone it fits
// the pool (make_request), and nothing but running requests holds a block by then.
void Scheduler::add_decode_rows(StepPlan& plan, Launched& step, int32_t& budget) {
  const bool drafting = speculating();
  for (size_t i = 0; i < running_.size(); ++i) {
    Request* r = running_[i];
    if (!r->decoding) continue;
    const int32_t position = r->prompt_len + r->completion_tokens - 1;
    // Drafts take KV positions only where the pool has them to spare: a row never
    // preempts another for its drafts.
    std::vector<int32_t> drafts;
    if (drafting) drafts = draft_for(*r, budget);
    if (!drafts.empty() &&
        !grow_blocks(*r, position + 1 + static_cast<int64_t>(drafts.size()), position))
      drafts.clear();
    bool preempted_self = false;
    while (!grow_blocks(*r, position + 1, position)) {
      if (release_pinned_shares()) continue;
      Request* victim = running_.back();
      preempt(*victim);
      if (victim == r) {
        preempted_self = true;
        break;
      }
    }
    if (preempted_self) break;  // r was the last one: nothing after it to schedule
    StepRow row;
    row.request_id = r->id;
    row.tokens.assign(1, r->last_token);
    row.tokens.insert(row.tokens.end(), drafts.begin(), drafts.end());
    row.verify = !drafts.empty();
    row.position = position;
    row.kv_blocks = r->blocks;
    row.kv_local_blocks = r->local_blocks;
    row.sampling = r->in.sampling;
    row.stop_banned_until = r->prompt_len + r->in.sampling.min_tokens;
    row.penalty_prompt = r->penalty_prompt;
    if (r->in.sampling.has_output_penalties()) {
      // Copying a long output at every step would cost the loop: a window's tail suffices.
      const std::span<const int32_t> counted = penalty_counted(r->in.sampling, r->generated);
      row.penalty_output.assign(counted.begin(), counted.end());
    }
    row.grammar = r->matcher;
    row.sampler_state = r->sampler_state;
    plan.rows.push_back(std::move(row));
    step.rows.push_back(r);
    step.sample.push_back(1);
    step.first_position.push_back(position);
    step.write_end.push_back(position + 1);  // a verify row's: what it accepts (process)
    ++r->sampled_launched;  // a verify row's accepted drafts are added as it is processed
    ++r->in_flight;
    const auto fed = static_cast<int32_t>(1 + drafts.size());
    for (int32_t j = 0; j < fed; ++j) step.load.add_decode(position + j);
    step.drafts.push_back(std::move(drafts));
    budget -= fed;
  }
}

// A fresh batch, built when nothing is in flight: every decoding request (one token
// each), then prompt chunks of requests part-way through prefill, then new admissions,
// while the step's token budget, the pacer's prompt budget (decode rows wait on prompt
// tokens: prefill_pacer.h) and the batch cap allow.
std::unique_ptr<Scheduler::Launched> Scheduler::schedule(bool admit) {
  auto step = std::make_unique<Launched>();
  StepPlan plan;
  int32_t budget = options_.max_step_tokens;
  const uint64_t preemptions = counters_.preemptions;
  add_decode_rows(plan, *step, budget);
  // A step that had to preempt admits no one from the queue, as vLLM's scheduler does: the
  // request just sent back heads the queue and would come straight back into the blocks it
  // gave up, to be preempted again at its next block, each time recomputing a chunk beside
  // the others' decode rows. It waits until a running request frees blocks.
  if (counters_.preemptions != preemptions) admit = false;
  // Requests waiting for their first token: part-way through prefill, or queued.
  // The first in line goes on from where its prefill stands (a queued one from its start,
  // or from the end of its prefix that the cache holds now).
  int32_t prompts = 0, position = -1, prefill = 0;
  for (const Request* r : running_) {
    if (r->decoding) continue;
    ++prompts;
    if (position >= 0) continue;
    position = r->prefill_launched;
    prefill = r->prefill_end - r->prefill_start;
  }
  {
    std::lock_guard lock(inbox_mutex_);
    prompts += static_cast<int32_t>(waiting_.size());
    if (position < 0 && !waiting_.empty()) {
      position = cached_prefix(*waiting_.front());
      prefill = waiting_.front()->prefill_end - position;
    }
  }
  const double now = pacer_seconds(options_);
  budget = std::min(budget,
                    pacer_.prompt_budget(step->load, prompts, std::max(position, 0), now, prefill));
  bool starved = false;  // a prefill found the local group dry
  for (Request* r : running_) {
    if (budget <= 0) break;
    if (!r->decoding) starved = !add_prefill_row(plan, *step, *r, budget) || starved;
  }
  while (admit && budget > 0 && static_cast<int32_t>(running_.size()) < options_.max_batch) {
    std::unique_ptr<Request> admitted;
    {
      std::lock_guard lock(inbox_mutex_);
      if (waiting_.empty()) break;
      admitted = std::move(waiting_.front());
      waiting_.pop_front();
      waiting_followers_ -= admitted->queue_follower;
    }
    if (!try_admit(*admitted)) {
      {
        std::lock_guard lock(inbox_mutex_);
        waiting_followers_ += admitted->queue_follower;
        waiting_.push_front(std::move(admitted));
      }
      // Nothing running will free a block: only shares' pins can stand in the way.
      if (running_.empty() && release_pinned_shares()) continue;
      break;
    }
    Request* r = admitted.get();
    live_.emplace(r->id, std::move(admitted));
    running_.push_back(r);
    // Beside decode rows, a long prompt is one more arrival (prefill_pacer.h).
    if (step->load.decode_rows > 0) pacer_.prompt_began(now, r->prefill_end - r->prefill_start);
    starved = !add_prefill_row(plan, *step, *r, budget) || starved;
  }
  if (plan.rows.empty()) {
    // Every running request waits for local blocks that only they hold (shares or a pool
    // sized below the batch): waiting shares' pins go first, then the most recent one
    // recomputes later, as decode would.
    if (starved && release_pinned_shares()) return schedule(admit);
    if (!starved || running_.size() < 2) return nullptr;
    preempt(*running_.back());
    return schedule(/*admit=*/false);  // not the one just sent back, again
  }
  ++counters_.steps;
  count_planned_work(plan);
  counters_.last_step_rows = static_cast<int32_t>(plan.rows.size());
  // The gauges (running, waiting, KV blocks) show the step's requests while it runs: a long
  // prompt's first step takes seconds, and /metrics had read 0 running through it. Chained
  // steps run the same batch, so a fresh launch is the only place they change.
  publish();
  step->step = device_.launch(std::move(plan));
  return step;
}

// As the executor runs the rows (cpu_executor.cpp): a sampling row's last token, or every
// token of a row that asks for its prompt's logprobs, goes through the output head.
void Scheduler::count_planned_work(const StepPlan& plan) {
  uint64_t fed = 0, logit_rows = 0;
  for (const StepRow& row : plan.rows) {
    fed += row.tokens.size();
    const bool all = row.sampling.prompt_logprobs >= 0 || row.verify;
    logit_rows += all ? row.tokens.size() : (row.sample ? 1 : 0);
  }
  count_work(fed, logit_rows);
}

void Scheduler::count_work(uint64_t fed, uint64_t logit_rows) {
  counters_.rows_fed += fed;
  counters_.logit_rows += logit_rows;
  if (logit_rows > 0) ++counters_.logit_steps;
}

std::optional<ChainBreak> Scheduler::chain_break(const Launched& curr) {
  bool cancel_pending;
  bool admissible;
  {
    std::lock_guard lock(inbox_mutex_);
    cancel_pending = !cancels_.empty();
    // With the spare try_admit asks of a preempted request (without it, the chain broke
    // every step while that request waited).
    admissible = !waiting_.empty() && static_cast<int32_t>(running_.size()) < options_.max_batch &&
                 pool_.can_reserve(int64_t{waiting_.front()->prefill_end} +
                                   readmission_spare(*waiting_.front()));
  }
  if (cancel_pending) return ChainBreak::kCancel;
  for (const Request* r : curr.rows) {
    if (r->cancelled) return ChainBreak::kCancel;
  }
  for (const Request* r : curr.rows) {
    // Found finished while processing the step before, or this step samples its last
    // token (max_tokens or the context limit).
    if (r->finished || r->sampled_launched >= r->max_new) return ChainBreak::kFinish;
  }
  if (curr.verifies() || (curr.decode_only && may_draft_next(curr)))
    return ChainBreak::kSpeculation;
  if (!curr.decode_only) return ChainBreak::kPrefill;
  if (running_.size() != curr.rows.size()) {
    for (const Request* r : running_) {
      if (!r->decoding) return ChainBreak::kPrefill;
    }
    return ChainBreak::kBatchChange;
  }
  if (admissible) return ChainBreak::kBatchChange;
  // The chained step writes each row's next position: its block table must cover it.
  for (Request* r : curr.rows)
    if (!grow_blocks(*r, int64_t{r->prompt_len} + r->sampled_launched,
                     int64_t{r->prompt_len} + r->sampled_launched - 1))
      return ChainBreak::kKvFull;
  return std::nullopt;
}

void Scheduler::launch_chained_from(Launched& curr) {
  next_ = std::make_unique<Launched>();
  next_->rows = curr.rows;
  next_->sample.assign(curr.rows.size(), 1);
  next_->drafts.assign(curr.rows.size(), {});
  std::vector<std::vector<int32_t>> tables, local_tables;
  for (Request* r : curr.rows) {
    // Fed the token curr samples, at the position after it (chain_break grew the table).
    const int32_t position = r->prompt_len + r->sampled_launched - 1;
    next_->first_position.push_back(position);  // as add_decode_rows records it
    next_->write_end.push_back(position + 1);
    next_->load.add_decode(position);
    tables.push_back(r->blocks);
    if (local_pool_) local_tables.push_back(r->local_blocks);
    ++r->sampled_launched;
    ++r->in_flight;
    if (r->pace) r->pace->chained();  // a decode step its waits count (may_draft_next)
  }
  ++counters_.steps;
  ++counters_.chained_steps;
  count_work(curr.rows.size(), curr.rows.size());  // one token each, every one sampled
  counters_.last_step_rows = static_cast<int32_t>(curr.rows.size());
  next_->step = device_.launch_chained(curr.step, std::move(tables), std::move(local_tables));
}

// curr's finalize threw: its rows, and next's (chained from it, so failed too), end with
// an error; everything they hold is given back.
void Scheduler::fail_in_flight(std::string_view message) {
  std::vector<uint64_t> ids;
  for (Launched* step : {curr_.get(), next_.get()}) {
    if (!step) continue;
    if (step == next_.get()) {
      try {
        device_.finalize(step->step);
      } catch (const std::exception&) {
        // Expected: it continues the failed step.
      }
    }
    for (Request* r : step->rows) {
      --r->in_flight;
      if (!r->finished) fail(*r, ErrorKind::kInternal, message);
      ids.push_back(r->id);
    }
  }
  curr_.reset();
  curr_result_.reset();
  next_.reset();
  for (uint64_t id : ids) {
    auto it = live_.find(id);
    if (it != live_.end()) retire_if_done(*it->second);
  }
}

void Scheduler::shutdown() {
  if (next_) {
    try {
      device_.finalize(next_->step);
    } catch (const std::exception&) {
      // Its tokens are dropped either way.
    }
  }
  curr_.reset();
  curr_result_.reset();
  next_.reset();
  for (auto& [id, r] : live_) {
    if (!r->finished) fail(*r, ErrorKind::kShuttingDown, "the server is shutting down");
    r->in_flight = 0;
    release_kv(*r);
  }
  live_.clear();
  std::deque<std::unique_ptr<Request>> waiting;
  {
    std::lock_guard lock(inbox_mutex_);
    waiting.swap(waiting_);
    waiting_followers_ = 0;
    cancels_.clear();
  }
  for (auto& r : waiting) {
    leave_share(*r);
    ++counters_.requests_finished;
    r->in.sink->on_error(ErrorKind::kShuttingDown, "the server is shutting down");
  }
  publish();
}

void Scheduler::publish() {
  bool active = !live_.empty();
  {
    std::lock_guard lock(inbox_mutex_);
    counters_.waiting = static_cast<int32_t>(waiting_.size());
    active = active || !waiting_.empty();
    number_slots();
  }
  counters_.running = static_cast<int32_t>(running_.size());
  const bool decoding =
      std::any_of(running_.begin(), running_.end(), [](const Request* r) { return r->decoding; });
  counters_.prefill_chunk_tokens = pacer_.lone_prompt_budget(decoding);
  counters_.prefill_sustained_share = pacer_.prompt_share(pacer_seconds(options_));
  counters_.kv_blocks_used = pool_.used();
  counters_.kv_blocks_cached = pool_.cached();
  if (local_pool_) counters_.kv_local_blocks_used = local_pool_->used();
  if (active != device_active_) {
    device_.set_active(active);
    device_active_ = active;
  }
  std::lock_guard lock(metrics_mutex_);
  published_ = counters_;
  published_slots_.swap(slots_scratch_);
}

}  // namespace tandem
