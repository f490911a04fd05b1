#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace tandem::server {

// Generations whose response is not yet complete; the server waits on it to drain.
class ActiveGenerations {
 public:
  void begin();
  void end();
  // True when the count reached zero before the deadline. An interruptible wait also ends
  // once cut_short() is called (before or during it).
  bool wait_for_zero(std::chrono::steady_clock::time_point deadline, bool interruptible = false);
  // Ends interruptible waits now: a second SIGINT/SIGTERM cuts the grace period short.
  void cut_short();

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int64_t count_ = 0;
  bool cut_ = false;
};

}  // namespace tandem::server
