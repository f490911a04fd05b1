// The overlap event loop (DESIGN.md): admits requests against the KV pool, batches them
// continuously with chunked prefill, keeps up to two steps in flight by chaining pure
// decode steps, and finalizes each step (detokenize, stops, stream, cancel, free KV).
// submit(), cancel() and metrics() are thread-safe; the loop runs on one thread, either
// its own (start/stop) or the caller's (run_once, for deterministic tests).
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <variant>
#include <vector>

#include "runner/device/device.h"
#include "runner/tokenizer/tokenizer.h"
#include "scheduler/kv_block_pool.h"
#include "scheduler/prefill_pacer.h"
#include "scheduler/request.h"

namespace tandem {

struct SchedulerOptions {
  bool overlap = true;            // --overlap on|off
  int32_t max_batch = 64;         // --max-batch: requests running at once
  int32_t max_step_tokens = 512;  // --max-step-tokens: tokens fed per step (decode rows count 1)
  // --prefill-chunk: prompt tokens a step may take while other requests decode. auto
  // (paced_prefill): paced by the measured step times so decoding streams wait at most
  // about 2 decode steps for their next token (prefill_pacer.h); N (prefill_chunk > 0): at
  // most N. Neither, the default here (serve's and bench's is auto): the whole step
  // budget, so a step's contents never depend on a timing (the scheduler suites rely on it).
  bool paced_prefill = false;
  int32_t prefill_chunk = 0;
  int32_t max_queue = 256;   // --max-queue: requests waiting for admission
  bool prefix_cache = true;  // --prefix-cache on|off: reuse cached KV blocks of prefixes
  // Speculative decoding by n-gram prompt lookup (--spec-tokens, ngram_drafter.h): a
  // decoding request proposes up to spec_tokens drafts from its own sequence and the step
  // verifies them (StepRow::verify), accepting the ones that match what it samples. 0: off.
  // By the laws the output is the same on or off; only the steps it takes change. Needs
  // an executor that verifies (DeviceInfo::verifies); elsewhere nothing is drafted.
  int32_t spec_tokens = 0;
  int32_t spec_ngram_min = 2;  // --spec-ngram MIN:MAX: the suffix lengths looked up
  int32_t spec_ngram_max = 4;
  // Drafts only while at most this many requests decode (--spec-max-batch): a verify row
  // costs the step a row per draft, which pays while the step is bound by streaming the
  // weights (a few rows) and costs throughput once it is bound by compute.
  int32_t spec_max_batch = 8;
  // Runs on the scheduler thread after each step is processed. Benchmarks put synthetic
  // host work here; tests may observe the loop. Leave empty in production.
  std::function<void()> after_process;
  // The pacer's clock, in seconds (prefill_pacer.h: the prompts' share of the last seconds'
  // steps). Empty: a steady clock. Tests whose executors model their steps' time give the
  // same model's clock, so the pace never depends on the machine's load.
  std::function<double()> clock;
  // While /metrics shows a prompts' share of the last 10 s above 0, an idle loop wakes this
  // often (real seconds) to publish it again, as it falls with time alone. Tests shorten it.
  double idle_republish_seconds = 10;
};

// Why a step's successor was not chained (counted once per unchained step, overlap on).
// kKvFull: a row crossed into a new KV block and the pool had none to give.
// kSpeculation: a row may draft (SchedulerOptions::spec_tokens), and its drafts start
// from the token this step samples, which the host must see first.
enum class ChainBreak { kFinish = 0, kPrefill, kBatchChange, kCancel, kKvFull, kSpeculation };
inline constexpr int kChainBreakReasons = 6;
const char* chain_break_name(ChainBreak reason);  // "finish", "prefill", ...

struct SchedulerMetrics {
  uint64_t steps = 0;
  uint64_t chained_steps = 0;
  // The work the steps gave the device, for speeds against the machine's ceilings
  // (roofline.h): tokens through the layers, of which rows through the output head (a
  // sampled token's row, or every row whose prompt logprobs are asked), and the steps with
  // any such row (the others never read the head).
  uint64_t rows_fed = 0;
  uint64_t logit_rows = 0;
  uint64_t logit_steps = 0;
  std::array<uint64_t, kChainBreakReasons> chain_breaks{};  // indexed by ChainBreak
  uint64_t discarded_tokens = 0;   // sampled for rows already finished: never streamed
  uint64_t prompt_tokens = 0;      // prefilled
  uint64_t completion_tokens = 0;  // accepted
  uint64_t requests_finished = 0;  // on_finish or on_error sent
  double host_seconds = 0;         // the loop's own time, outside waits for the device
  double device_busy_seconds = 0;
  double device_idle_seconds = 0;
  // Measured on a GPU's own clock (DeviceCounters), else -1: its time running steps, and
  // the median time it sat idle between a step and the chained step after it.
  double gpu_busy_seconds = -1;
  double chained_gap_median_us = -1;
  int32_t waiting = 0;  // queue size
  int32_t running = 0;  // batch size: admitted, not finished
  int32_t last_step_rows = 0;
  // Prompt tokens a step may take now beside decode rows for one waiting prompt
  // (--prefill-chunk: the pacer's budget when paced, which grows with the requests waiting
  // for their first token, the fixed chunk, or the whole step budget).
  int32_t prefill_chunk_tokens = 0;
  // The share of the last 10 s of steps that went to prompt tokens; from 0.55 the pacer
  // leaves prompts unpaced (prefill_pacer.h, sustained).
  double prefill_sustained_share = 0;
  int32_t kv_blocks_used = 0;
  int32_t kv_blocks_total = 0;
  int32_t kv_blocks_cached = 0;    // registered in the prefix cache (used or not)
  int64_t kv_bytes_per_token = 0;  // the device's KV element type, all layers
  int64_t kv_capacity_tokens = 0;  // the pool's size in token positions
  // The sliding-window layers' group (0 blocks: none): each sequence holds only its window.
  int32_t kv_local_blocks_used = 0;
  int32_t kv_local_blocks_total = 0;
  int64_t kv_local_bytes_per_token = 0;  // the local layers, per position of a local block
  int32_t sliding_window = 0;
  uint64_t prefix_queried_tokens = 0;  // prompt tokens looked up in the prefix cache
  uint64_t prefix_hit_tokens = 0;      // of which found there (not prefilled)
  uint64_t preemptions = 0;            // running requests sent back to recompute later
  // Speculative decoding: rows that verified drafts, the drafts they carried, and the
  // drafts accepted (each a token that took no step of its own).
  uint64_t spec_verify_rows = 0;
  uint64_t spec_draft_tokens = 0;
  uint64_t spec_accepted_tokens = 0;
};

// A busy slot as llama-server's GET /slots shows it (Scheduler::busy_slots()). The scheduler
// has no fixed slots: its batch runs up to max_batch requests, and `slot` numbers them as
// llama-server numbers its slots, 0 .. max_batch - 1. A request takes the lowest free
// number when it is first published, running or waiting for admission (llama-server gives
// a task its slot as it starts, before its prompt is computed; what waits beyond max_batch
// has none, as llama-server's deferred tasks), and keeps it until it finishes, preempted
// or not (a preempted request waits at the queue's front, the next to run again).
struct BusySlot {
  int32_t slot = 0;
  uint64_t id = 0;            // submit()'s id (llama-server's id_task)
  bool admitted = false;      // running, not waiting for admission
  int32_t prompt_tokens = 0;  // the prompt's length
  int32_t cached_tokens = 0;  // of which the prefix cache held at admission
  int32_t prefilled = 0;      // prompt positions computed or taken so far
  int32_t generated = 0;      // tokens accepted
  int32_t max_new = 0;        // max_tokens, capped by the context and the KV pool
  bool limited = false;       // the request set max_tokens
  bool decoding = false;      // its prompt is done
  // The sampling fields llama-server's slot params show.
  float temperature = 1.0f;
  int32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  uint64_t seed = 0;
};

class Scheduler {
 public:
  // device and tokenizer must outlive the scheduler.
  Scheduler(Device& device, const Tokenizer& tokenizer, SchedulerOptions options = {});
  ~Scheduler();  // stop(); requests still live get on_error(kShuttingDown)
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  SubmitResult submit(GenerationRequest request);
  // Several requests at once (n choices, a list of prompts), all accepted or all refused
  // (the queue bound counts them all). Requests of the list with the same prompt prefill
  // its full blocks once: the first admitted computes them, the others wait for that
  // prefill and take references to its blocks, then each computes the rest of its prompt
  // (the partly filled block, never shared, so no choice writes over another's KV).
  // Requests that score their prompt (prompt_logprobs) share with those that score it with
  // the same top count, and take the leader's scores of the shared positions too.
  SubmitResult submit(std::vector<GenerationRequest> requests);
  // Cancels a request wherever it is (waiting, prefilling, decoding, in flight); it then
  // gets on_finish(kCancelled). Unknown or finished ids are ignored.
  void cancel(uint64_t id);
  SchedulerMetrics metrics() const;
  // The busy slots as of the last published step, by slot number.
  std::vector<BusySlot> busy_slots() const;
  // SchedulerOptions::max_batch: the batch's rows, llama-server's total_slots.
  int32_t max_batch() const { return options_.max_batch; }
  // Whether decoding requests may draft (SchedulerOptions::spec_tokens).
  bool speculative() const { return options_.spec_tokens > 0; }
  // The most requests that may wait at once (SchedulerOptions::max_queue): a list larger
  // than this is refused whatever the load, so the server answers it as a bad request.
  int32_t max_queue() const { return options_.max_queue; }
  // The longest sequence served: the device's context, lowered to what the KV pool holds
  // when the pool is smaller (--kv-tokens), so that a request the pool cannot hold is
  // refused as too long for the context rather than cut short or refused for the pool.
  int32_t context_length() const { return info_.context_length; }

  // Runs the loop on a thread of its own until stop().
  void start();
  // Stops the loop: steps in flight are finalized, live and waiting requests get
  // on_error(kShuttingDown).
  void stop();

  // One turn of the loop on the calling thread (when not start()ed). Returns false when
  // there was nothing to do; it never blocks waiting for work.
  bool run_once();
  // No request waiting or live and no step in flight (scheduler thread).
  bool drained() const;

 private:
  struct Request;
  struct Launched;
  struct PromptShare;

  // A request checked against the model and the pool, or the refusal.
  std::variant<std::unique_ptr<Request>, SubmitResult> make_request(GenerationRequest request);
  void share_prompts(std::vector<std::unique_ptr<Request>>& requests);

  void apply_cancels();
  void process(Launched& step, const StepResult& result);
  void accept(Request& r, int32_t token, const RowLogprobs* logprobs);
  double generation_ms(const Request& r) const;
  TokenLogprobs named(const RowLogprobs& logprobs) const;
  void add_pooled(Request& r, int32_t first_position, int32_t tokens,
                  const std::vector<int64_t>& sum);
  void send_prompt_logprobs(Request& r, int32_t first_position,
                            const std::vector<RowLogprobs>& scored);
  void finish(Request& r, FinishReason reason, bool flush);
  void fail(Request& r, ErrorKind kind, std::string_view message);
  void retire_if_done(Request& r);
  std::unique_ptr<Launched> schedule(bool admit = true);  // admit: take new requests too
  void add_decode_rows(StepPlan& plan, Launched& step, int32_t& budget);
  // Whether decoding requests draft this step (spec_tokens, spec_max_batch), and r's drafts.
  bool speculating() const;
  // Whether a row of curr may draft in the step after it (so that step cannot be chained).
  bool may_draft_next(const Launched& curr) const;
  std::vector<int32_t> draft_for(Request& r, int32_t budget) const;
  void accept_verified(Request& r, const Launched& step, size_t i, const StepResult& result);
  bool add_prefill_row(StepPlan& plan, Launched& step, Request& r, int32_t& budget);
  // Into counters_: the tokens a step feeds, those of them through the output head, and
  // the step among the logit steps when any is.
  void count_planned_work(const StepPlan& plan);
  void count_work(uint64_t fed, uint64_t logit_rows);
  std::optional<ChainBreak> chain_break(const Launched& curr);
  // KV blocks (scheduler_kv.cpp).
  bool try_admit(Request& r);
  int64_t readmission_spare(const Request& r) const;  // tokens beside its own (scheduler_kv.cpp)
  bool reuses_prefix(const Request& r) const;
  int32_t cached_prefix(const Request& r) const;  // the pacer's look at a queued prompt
  // Grows r's tables (both groups) to cover `positions` positions, dropping the local
  // blocks that no query from first_query on can see; all or nothing.
  bool grow_blocks(Request& r, int64_t positions, int64_t first_query);
  void drop_local_blocks(Request& r, int64_t first_query);
  void take_local_prefix_hit(Request& r);
  void release_kv(Request& r);
  void preempt(Request& r);
  void offer_written_blocks(Request& r, int32_t write_end);
  bool take_shared_prompt(Request& r);
  void take_shared_scores(Request& r);
  void publish_shared_prompt(Request& r);
  void leave_share(Request& r);
  bool release_pinned_shares();
  void launch_chained_from(Launched& curr);
  void fail_in_flight(std::string_view message);
  void shutdown();
  void publish();
  // Slots for the running requests, then the waiting ones, as the published slots show
  // them (scheduler_slots.cpp); under inbox_mutex_.
  void number_slots();  // into slots_scratch_
  void fill_slots(const std::vector<Request*>& holder);
  void thread_main();

  Device& device_;
  const Tokenizer& tokenizer_;
  SchedulerOptions options_;
  DeviceInfo info_;
  KvBlockPool pool_;
  PrefillPacer pacer_;  // scheduler thread only
  // The sliding-window layers' group, when the device has one (DeviceInfo::kv_local_blocks).
  std::optional<KvBlockPool> local_pool_;

  // Shared with submitters.
  mutable std::mutex inbox_mutex_;
  std::condition_variable inbox_cv_;
  std::deque<std::unique_ptr<Request>> waiting_;
  // Of waiting_, the pooling lists' members after their first (Request::queue_follower),
  // which --max-queue does not count.
  int64_t waiting_followers_ = 0;
  std::vector<uint64_t> cancels_;
  bool stopping_ = false;
  uint64_t next_id_ = 1;

  // Scheduler thread only.
  std::unordered_map<uint64_t, std::unique_ptr<Request>> live_;  // admitted, holding KV
  std::vector<Request*> running_;   // admitted and not finished, in admission order
  std::unique_ptr<Launched> curr_;  // finalized, its tokens not yet processed
  std::optional<StepResult> curr_result_;
  std::unique_ptr<Launched> next_;  // chained from curr_, in flight
  bool device_active_ = false;
  SchedulerMetrics counters_;

  mutable std::mutex metrics_mutex_;
  SchedulerMetrics published_;
  std::vector<BusySlot> published_slots_;
  // number_slots' buffers (scheduler thread, under inbox_mutex_): kept, so that a step's
  // publish allocates nothing; slots_scratch_ and published_slots_ swap.
  std::vector<Request*> slot_holders_;
  std::vector<bool> slot_running_;  // by slot: its holder is running, not waiting
  std::vector<BusySlot> slots_scratch_;

  std::thread thread_;
};

}  // namespace tandem
