#include "server/active_generations.h"

namespace tandem::server {

void ActiveGenerations::begin() {
  std::lock_guard lock(mutex_);
  ++count_;
}

void ActiveGenerations::end() {
  {
    std::lock_guard lock(mutex_);
    --count_;
  }
  cv_.notify_all();
}

bool ActiveGenerations::wait_for_zero(std::chrono::steady_clock::time_point deadline,
                                      bool interruptible) {
  std::unique_lock lock(mutex_);
  cv_.wait_until(lock, deadline, [&] { return count_ == 0 || (interruptible && cut_); });
  return count_ == 0;
}

void ActiveGenerations::cut_short() {
  {
    std::lock_guard lock(mutex_);
    cut_ = true;
  }
  cv_.notify_all();
}

}  // namespace tandem::server
