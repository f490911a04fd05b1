// The slots llama-server's GET /slots shows (BusySlot): the running requests and then the
// waiting ones, numbered on the scheduler thread at each publish.
#include <algorithm>
#include <utility>
#include <vector>

#include "scheduler/scheduler_internal.h"

namespace tandem {
// The running requests keep their slots and the waiting ones theirs; then each running
// request without one takes the lowest free (or, none being free, the slot of the last
// waiting request that holds one: a running request always has a slot), and the waiting
// ones without take what is left, in queue order, so that the next to be admitted hold
// slots. Admission is in queue order, so a waiting request keeps its slot when admitted.
std::vector<BusySlot> Scheduler::number_slots() {
  const auto total = static_cast<size_t>(options_.max_batch);
  std::vector<Request*> holder(total, nullptr);
  auto keep = [&](Request* r) {
    if (r->slot < 0) return;
    Request*& h = holder[static_cast<size_t>(r->slot)];
    if (h == nullptr) {
      h = r;
    } else {
      r->slot = -1;  // a running request kept it first
    }
  };
  for (Request* r : running_) keep(r);
  for (auto& w : waiting_) keep(w.get());
  size_t free = 0;
  auto take_free = [&](Request* r) {
    while (free < total && holder[free] != nullptr) ++free;
    if (free == total) return false;
    holder[free] = r;
    r->slot = static_cast<int32_t>(free);
    return true;
  };
  for (Request* r : running_) {
    if (r->slot >= 0 || take_free(r)) continue;
    for (auto w = waiting_.rbegin(); w != waiting_.rend(); ++w) {
      if ((*w)->slot < 0) continue;
      r->slot = std::exchange((*w)->slot, -1);
      holder[static_cast<size_t>(r->slot)] = r;
      break;
    }
  }
  for (auto& w : waiting_) {
    if (w->slot < 0 && !take_free(w.get())) break;
  }
  std::vector<bool> admitted(total, false);
  for (const Request* r : running_) admitted[static_cast<size_t>(r->slot)] = true;
  std::vector<BusySlot> slots;
  for (size_t i = 0; i < total; ++i) {
    if (holder[i] == nullptr) continue;
    const Request& r = *holder[i];
    const bool running = admitted[i];
    BusySlot& out = slots.emplace_back();
    out.slot = r.slot;
    out.id = r.id;
    out.admitted = running;
    out.prompt_tokens = r.prompt_len;
    out.cached_tokens = running ? r.cached_tokens : 0;
    out.decoding = running && r.decoding;
    out.prefilled = !running     ? 0
                    : r.decoding ? r.prompt_len
                                 : std::min(r.prefill_launched, r.prompt_len);
    out.generated = r.completion_tokens;
    out.max_new = r.max_new;
    out.limited = r.in.max_tokens.has_value();
    out.temperature = r.in.sampling.temperature;
    out.top_k = r.in.sampling.top_k;
    out.top_p = r.in.sampling.top_p;
    out.min_p = r.in.sampling.min_p;
    out.seed = r.in.sampling.seed;
  }
  return slots;
}

std::vector<BusySlot> Scheduler::busy_slots() const {
  std::lock_guard lock(metrics_mutex_);
  return published_slots_;
}

}  // namespace tandem
