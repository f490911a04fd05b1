// The slots llama-server's GET /slots shows (BusySlot): the running requests and then the
// waiting ones, numbered on the scheduler thread at each publish. It runs at every step, so
// it allocates nothing once its buffers have grown, and looks at no more than max_batch
// waiting requests however long the queue.
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
// The slotted waiting requests are the queue's first ones (arrivals join the back, a
// preempted request the front with its slot), so only the first max_batch are looked at; a
// later one that held a slot meets its holder when it comes into that window and gives it
// up there.
void Scheduler::number_slots() {
  const auto total = static_cast<size_t>(options_.max_batch);
  const size_t window = std::min(total, waiting_.size());
  std::vector<Request*>& holder = slot_holders_;
  holder.assign(total, nullptr);
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
  for (size_t i = 0; i < window; ++i) keep(waiting_[i].get());
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
    for (size_t i = window; i-- > 0;) {
      if (waiting_[i]->slot < 0) continue;
      r->slot = std::exchange(waiting_[i]->slot, -1);
      holder[static_cast<size_t>(r->slot)] = r;
      break;
    }
  }
  for (size_t i = 0; i < window; ++i) {
    if (waiting_[i]->slot < 0 && !take_free(waiting_[i].get())) break;
  }
  fill_slots(holder);
}

// The numbered requests as BusySlots, into slots_scratch_ (its capacity kept).
void Scheduler::fill_slots(const std::vector<Request*>& holder) {
  slot_running_.assign(holder.size(), false);  // every running request holds a slot by now
  for (const Request* r : running_) slot_running_[static_cast<size_t>(r->slot)] = true;
  slots_scratch_.clear();
  for (size_t i = 0; i < holder.size(); ++i) {
    const Request* r = holder[i];
    if (r == nullptr) continue;
    const bool running = slot_running_[i];
    BusySlot& out = slots_scratch_.emplace_back();
    out.slot = r->slot;
    out.id = r->id;
    out.admitted = running;
    out.prompt_tokens = r->prompt_len;
    out.cached_tokens = running ? r->cached_tokens : 0;
    out.decoding = running && r->decoding;
    out.prefilled = !running      ? 0
                    : r->decoding ? r->prompt_len
                                  : std::min(r->prefill_launched, r->prompt_len);
    out.generated = r->completion_tokens;
    out.max_new = r->max_new;
    out.limited = r->in.max_tokens.has_value();
    out.temperature = r->in.sampling.temperature;
    out.top_k = r->in.sampling.top_k;
    out.top_p = r->in.sampling.top_p;
    out.min_p = r->in.sampling.min_p;
    out.seed = r->in.sampling.seed;
  }
}

std::vector<BusySlot> Scheduler::busy_slots() const {
  std::lock_guard lock(metrics_mutex_);
  return published_slots_;
}

}  // namespace tandem
