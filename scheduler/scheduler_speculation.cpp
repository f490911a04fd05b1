// Speculative decoding's half of the scheduler (docs/design.md, "Speculative decoding"):
// whether this step's decoding requests draft, each one's drafts, and a processed verify
// row's tokens accepted one by one.
#include <algorithm>
#include <memory>
#include <vector>

#include "scheduler/ngram_drafter.h"
#include "scheduler/scheduler_internal.h"

namespace tandem {

bool Scheduler::speculating() const {
  if (options_.spec_tokens <= 0 || !info_.verifies) return false;
  const auto decoding =
      std::count_if(running_.begin(), running_.end(), [](const Request* r) { return r->decoding; });
  return decoding <= options_.spec_max_batch;
}

// A row whose pace waits would draft nothing next step: while every row waits, the chain
// goes on (each chained step is a decode step they wait through: launch_chained_from).
bool Scheduler::may_draft_next(const Launched& curr) const {
  return speculating() && std::any_of(curr.rows.begin(), curr.rows.end(), [](const Request* r) {
           return !r->pace || !r->pace->waiting();
         });
}

// r's drafts (ngram_drafter.h), no more than the step's budget leaves beside its own token
// or than its output has room for beside the token the step samples after them.
std::vector<int32_t> Scheduler::draft_for(Request& r, int32_t budget) const {
  const int32_t room =
      std::min({options_.spec_tokens, budget - 1, r.max_new - r.completion_tokens - 1});
  if (room <= 0) return {};
  if (!r.ngrams) {
    r.ngrams = std::make_unique<NgramIndex>(options_.spec_ngram_min, options_.spec_ngram_max);
    r.pace.emplace(options_.spec_tokens);
  }
  // The index takes the sequence's new tokens even while the pace waits.
  const int32_t allowed = std::min(room, r.pace->allowance());
  std::vector<int32_t> drafts = r.ngrams->draft(
      std::span(r.in.prompt).first(static_cast<size_t>(r.prompt_len)), r.generated, allowed);
  if (allowed > 0) r.pace->looked_up(!drafts.empty());
  return drafts;
}

// A verify row's tokens: the drafts it accepted, then the token it sampled after them,
// each accepted as a decode step's token would be, until one ends the output (the rest
// are discarded, as a finished row's are).
void Scheduler::accept_verified(Request& r, const Launched& step, size_t i,
                                const StepResult& result) {
  const std::vector<int32_t>& drafts = step.drafts[i];
  const int32_t accepted = result.accepted[i];
  ++counters_.spec_verify_rows;
  counters_.spec_draft_tokens += drafts.size();
  counters_.spec_accepted_tokens += static_cast<uint64_t>(accepted);
  r.sampled_launched += accepted;  // the step sampled them too
  r.pace->verified(static_cast<int32_t>(drafts.size()), accepted);
  const std::vector<RowLogprobs>* draft_logprobs =
      result.draft_logprobs.empty() ? nullptr : &result.draft_logprobs[i];
  for (int32_t j = 0; j <= accepted; ++j) {
    if (r.finished) {
      counters_.discarded_tokens += static_cast<uint64_t>(accepted - j + 1);
      return;
    }
    if (j < accepted) {
      const bool scored = draft_logprobs && static_cast<size_t>(j) < draft_logprobs->size();
      accept(r, drafts[j], scored ? &(*draft_logprobs)[j] : nullptr);
    } else {
      accept(r, result.tokens[i], result.logprobs.empty() ? nullptr : &result.logprobs[i]);
    }
  }
}

}  // namespace tandem
