#include "bench/offline_load.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "protocol/embedding_request.h"

namespace tandem::bench {

namespace {

// Shared by the driver thread and the sinks (which run on the scheduler thread).
struct Tally {
  std::mutex mutex;
  std::condition_variable cv;
  int32_t in_flight = 0;
  Clock::time_point last_end;
};

class RecordingSink : public RequestSink {
 public:
  RecordingSink(RequestRecord& record, Tally& tally, const LoadOptions& options)
      : record_(record), tally_(tally), options_(options) {}

  void start() { sent_ = Clock::now(); }

  void on_text(std::string_view delta) override {
    const auto now = Clock::now();
    if (!seen_text_)
      record_.ttft = seconds_between(sent_, now);
    else
      record_.itl.push_back(seconds_between(last_text_, now));
    seen_text_ = true;
    last_text_ = now;
    record_.text += delta;
  }

  // Normalized as the server's answer is by default, so both paths' texts compare.
  void on_embedding(std::span<const float> embedding) override {
    std::vector<float> unit(embedding.begin(), embedding.end());
    normalize_embedding(unit);
    record_.text = embedding_text(unit);
  }

  void on_finish(FinishReason reason, const Usage& usage) override {
    record_.finish_reason = options_.embeddings ? "" : finish_reason_name(reason);
    record_.prompt_tokens = static_cast<int64_t>(usage.prompt_tokens);
    record_.output_tokens = static_cast<int64_t>(usage.completion_tokens);
    record_.cached_tokens = static_cast<int64_t>(usage.cached_tokens);
    record_.ok = reason != FinishReason::kCancelled;
    if (!record_.ok) record_.error = "cancelled";
    done();
  }

  void on_error(ErrorKind, std::string_view message) override {
    record_.ok = false;
    record_.error = message;
    done();
  }

 private:
  void done() {
    const auto now = Clock::now();
    record_.e2e = seconds_between(sent_, now);
    // Text that never came (every token a partial character) still has a first token:
    // the end of the request is then the best bound on it.
    if (!seen_text_) record_.ttft = record_.e2e;
    if (options_.on_done) options_.on_done(record_);
    std::lock_guard lock(tally_.mutex);
    --tally_.in_flight;
    tally_.last_end = now;
    tally_.cv.notify_all();
  }

  RequestRecord& record_;
  Tally& tally_;
  const LoadOptions& options_;
  Clock::time_point sent_, last_text_;
  bool seen_text_ = false;
};

}  // namespace

LoadResult run_offline(Scheduler& scheduler, const std::vector<PlannedRequest>& workload,
                       const LoadOptions& options) {
  LoadResult result;
  result.records.resize(workload.size());
  Tally tally;
  const int32_t bound =
      options.concurrency > 0 ? options.concurrency : static_cast<int32_t>(workload.size());
  const auto start = Clock::now();
  tally.last_end = start;
  // Sinks live until every request has ended: the scheduler holds them only until then.
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (size_t i = 0; i < workload.size(); ++i) {
    const PlannedRequest& planned = workload[i];
    RequestRecord& record = result.records[i];
    {
      std::unique_lock lock(tally.mutex);
      tally.cv.wait(lock, [&] { return tally.in_flight < bound; });
      const auto due = start + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(planned.arrival_seconds));
      // Only arrival time gates here; a finishing request may wake us early, so re-wait.
      while (Clock::now() < due) tally.cv.wait_until(lock, due);
      ++tally.in_flight;
    }
    record.streamed = !options.embeddings;  // an embedding has no tokens to time
    record.start_seconds = seconds_between(start, Clock::now());
    record.prompt_tokens = static_cast<int64_t>(planned.prompt.size());
    auto sink = std::make_shared<RecordingSink>(record, tally, options);
    sinks.push_back(sink);
    GenerationRequest request;
    request.prompt = planned.prompt;
    request.sampling.temperature = options.temperature;
    request.sampling.seed = planned.seed;
    request.sampling.ignore_eos = options.grammar == nullptr;
    request.grammar = options.grammar;
    request.max_tokens = options.embeddings ? 0 : planned.max_tokens;
    if (options.embeddings) request.pooling = options.pooling;
    request.sink = sink;
    sink->start();
    const SubmitResult submitted = scheduler.submit(std::move(request));
    if (!submitted.accepted()) {
      record.ok = false;
      record.error = "refused: " + submitted.message;
      if (options.on_done) options.on_done(record);
      std::lock_guard lock(tally.mutex);
      --tally.in_flight;
      tally.last_end = Clock::now();
    }
  }
  std::unique_lock lock(tally.mutex);
  tally.cv.wait(lock, [&] { return tally.in_flight == 0; });
  result.duration_seconds = seconds_between(start, tally.last_end);
  return result;
}

}  // namespace tandem::bench
