// A one-line progress bar on stderr ("[####    ] 12/64 done, 0 failed, 3.1 s"), redrawn at
// most ten times a second, and only when stderr is a terminal. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace tandem::bench {

class ProgressBar {
 public:
  // enabled: usually stderr_is_terminal().
  ProgressBar(std::string label, int64_t total, bool enabled);
  ~ProgressBar();  // finish()
  void advance(bool ok);
  // Draws the final state and ends the line.
  void finish();

  static bool stderr_is_terminal();

 private:
  void draw(bool force);

  std::mutex mutex_;
  std::string label_;
  int64_t total_ = 0, done_ = 0, failed_ = 0;
  int64_t drawn_ = -1;  // done_ when last drawn
  bool enabled_ = false, finished_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace tandem::bench
