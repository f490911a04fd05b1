// Submission: a request checked against the model and the KV pool before it may wait
// for admission, and the lists of requests (n choices, prompt lists) accepted as one,
// whose equal prompts share their prefill (see PromptShare in scheduler_internal.h).
#include <algorithm>
#include <string>
#include <utility>

#include "scheduler/scheduler_internal.h"

namespace tandem {

SubmitResult Scheduler::submit(GenerationRequest request) {
  std::vector<GenerationRequest> one;
  one.push_back(std::move(request));
  return submit(std::move(one));
}

SubmitResult Scheduler::submit(std::vector<GenerationRequest> requests) {
  std::vector<std::unique_ptr<Request>> made;
  for (GenerationRequest& request : requests) {
    auto r = make_request(std::move(request));
    if (auto* refused = std::get_if<SubmitResult>(&r)) return std::move(*refused);
    made.push_back(std::move(std::get<std::unique_ptr<Request>>(r)));
  }
  if (made.empty()) return SubmitResult{0, ErrorKind::kInvalidRequest, "no request", {}};
  share_prompts(made);
  SubmitResult accepted;
  {
    std::lock_guard lock(inbox_mutex_);
    if (stopping_) return SubmitResult{0, ErrorKind::kShuttingDown, "the server is stopping", {}};
    // The inputs of one embeddings request (a list of pooling requests, up to OpenAI's
    // 2048) count as one request while any of them waits: each is a prefill only, and
    // clients batch hundreds.
    const bool pooling_list = std::all_of(
        made.begin(), made.end(), [](const auto& r) { return r->in.pooling != Pooling::kNone; });
    for (size_t i = 1; i < made.size() && pooling_list; ++i) made[i]->queue_follower = true;
    const int64_t queued = pooling_list ? 1 : static_cast<int64_t>(made.size());
    if (static_cast<int64_t>(waiting_.size()) - waiting_followers_ + queued > options_.max_queue) {
      return SubmitResult{0, ErrorKind::kOverloaded, "the waiting queue is full", {}};
    }
    for (auto& r : made) {
      r->id = next_id_++;
      accepted.ids.push_back(r->id);
      waiting_followers_ += r->queue_follower;
      waiting_.push_back(std::move(r));
    }
  }
  accepted.id = accepted.ids.front();
  inbox_cv_.notify_one();
  return accepted;
}

// Members of one submit with the same prompt share all of it but the last token (the one
// each member computes for its own logits): the full blocks by reference, the rest by copy.
// Members that score the prompt (echo with logprobs) share with those that score it alike,
// and take the leader's scores of the shared positions with its blocks (n choices of an
// echoed, scored prompt compute it once).
void Scheduler::share_prompts(std::vector<std::unique_ptr<Request>>& requests) {
  const int32_t bs = pool_.block_size();
  for (size_t i = 0; i < requests.size(); ++i) {
    Request& first = *requests[i];
    const int32_t before_last = first.prompt_len - 1;
    // A pooling request computes its own states (a share's members skip the leader's).
    if (first.share || before_last <= 0 || first.in.pooling != Pooling::kNone) continue;
    auto share = std::make_shared<PromptShare>();
    share->blocks = before_last / bs;
    // With a sliding-window group the partly filled block is not copied: its local-layer
    // slots live in the member's local block, which is taken only when its prefill chunk
    // is built, so the member computes those few positions itself.
    share->partial = local_pool_ ? 0 : before_last % bs;
    if (share->blocks == 0 && share->partial == 0) continue;  // nothing to share
    for (size_t j = i; j < requests.size(); ++j) {
      Request& other = *requests[j];
      if (other.share || other.in.pooling != Pooling::kNone ||
          other.in.sampling.prompt_logprobs != first.in.sampling.prompt_logprobs ||
          other.in.prompt != first.in.prompt)
        continue;
      other.share = share;
      ++share->unadmitted;
    }
    if (share->unadmitted == 1) first.share.reset();  // alone: nothing to share
  }
}

std::variant<std::unique_ptr<Scheduler::Request>, SubmitResult> Scheduler::make_request(
    GenerationRequest request) {
  auto invalid = [](std::string message) {
    return SubmitResult{0, ErrorKind::kInvalidRequest, std::move(message), {}};
  };
  if (!request.sink) return invalid("the request has no event sink");
  if (request.prompt.empty()) return invalid("the prompt is empty");
  if (request.grammar && request.grammar->vocabulary().size() > info_.vocab_size) {
    return invalid("the grammar was compiled for a larger vocabulary than the model's");
  }
  if (request.max_tokens && *request.max_tokens < 0) {
    return invalid("max_tokens must not be negative");
  }
  if (request.pooling != Pooling::kNone) {
    if (!info_.pools) return invalid("this device does not compute embeddings");
    if (request.max_tokens != 0 || request.sampling.prompt_logprobs >= 0 || request.grammar)
      return invalid("a pooling request generates and scores nothing (max_tokens 0)");
  }
  const int64_t prompt_len = static_cast<int64_t>(request.prompt.size());
  // A request that generates nothing (max_tokens 0: echo scoring a prompt) may fill the
  // whole context; any other needs room for one generated token.
  const bool generates = !request.max_tokens || *request.max_tokens > 0;
  if (prompt_len > info_.context_length || (generates && prompt_len == info_.context_length)) {
    return invalid("the prompt has " + std::to_string(prompt_len) +
                   " tokens; the model's context holds " + std::to_string(info_.context_length) +
                   (generates ? " with room for at least one generated token" : ""));
  }
  for (int32_t id : request.prompt) {
    if (id < 0 || id >= info_.vocab_size) {
      return invalid("prompt token " + std::to_string(id) + " is outside the vocabulary");
    }
  }
  auto r = std::make_unique<Request>(tokenizer_, std::move(request));
  r->prompt_len = static_cast<int32_t>(prompt_len);
  if (r->in.sampling.has_prompt_penalty()) {
    const std::span<const int32_t> counted = penalty_counted(r->in.sampling, r->in.prompt);
    r->penalty_prompt =
        std::make_shared<const std::vector<int32_t>>(counted.begin(), counted.end());
  }
  // Each choice gets a matcher of its own: they share the compiled grammar, not the state.
  if (r->in.grammar) r->matcher = std::make_shared<grammar::Matcher>(r->in.grammar);
  // So does each get its own sampler state (Mirostat, adaptive-p), from llama.cpp's start.
  if (SamplerState::needed(r->in.sampling))
    r->sampler_state = std::make_shared<SamplerState>(SamplerState::first(r->in.sampling));
  // The one place max_tokens is clamped: generation ends where the context or the KV pool
  // does, and a request without max_tokens runs until then.
  const int64_t capacity =
      std::min<int64_t>(info_.context_length, int64_t{pool_.total()} * pool_.block_size());
  const int32_t room = static_cast<int32_t>(std::max<int64_t>(1, capacity - prompt_len));
  r->max_new = std::min(r->in.max_tokens.value_or(room), room);
  r->prefill_end = r->prompt_len;
  // Blocks are taken as the sequence grows (scheduler_kv.cpp); a request must only fit
  // the pool on its own, so that preempting the others always lets it finish. That holds
  // because nothing else keeps a block then: waiting shares' pins are let go first
  // (Scheduler::release_pinned_shares), and finished requests' blocks are back.
  const int64_t most_tokens = int64_t{r->prompt_len} + r->max_new;
  if (pool_.blocks_for(most_tokens) > pool_.total()) {
    return invalid("the request needs " + std::to_string(most_tokens) +
                   " KV positions; the pool holds " +
                   std::to_string(int64_t{pool_.total()} * pool_.block_size()));
  }
  return r;
}

}  // namespace tandem
