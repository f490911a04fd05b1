#include "bench/progress.h"

#include <unistd.h>

#include <cstdio>

namespace tandem::bench {

ProgressBar::ProgressBar(std::string label, int64_t total, bool enabled)
    : label_(std::move(label)),
      total_(total),
      enabled_(enabled),
      start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() { finish(); }

bool ProgressBar::stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

void ProgressBar::advance(bool ok) {
  std::lock_guard lock(mutex_);
  ++done_;
  if (!ok) ++failed_;
  draw(done_ == total_);
}

void ProgressBar::finish() {
  std::lock_guard lock(mutex_);
  if (finished_) return;
  finished_ = true;
  if (!enabled_) return;
  if (drawn_ != done_) draw(true);
  std::fputc('\n', stderr);
}

void ProgressBar::draw(bool force) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  drawn_ = done_;
  constexpr int kWidth = 30;
  const int filled = total_ > 0 ? static_cast<int>(kWidth * done_ / total_) : kWidth;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  std::fprintf(stderr, "\r%s [%s%s] %lld/%lld done, %lld failed, %.1f s", label_.c_str(),
               std::string(filled, '#').c_str(), std::string(kWidth - filled, ' ').c_str(),
               static_cast<long long>(done_), static_cast<long long>(total_),
               static_cast<long long>(failed_), seconds);
  std::fflush(stderr);
}

}  // namespace tandem::bench
