#include "scheduler/line_limits.h"

namespace tandem {

LineLimits::Output LineLimits::push(std::string_view text, double elapsed_ms) {
  Output out;
  if (stopped_) return out;
  for (const char c : text) {
    if (at_line_start_) {
      if (c == ' ' || c == '\t') {
        held_ += c;
        continue;
      }
      // The line's first other character (a newline too: an empty line) decides, as
      // llama-server counts the blanks before it; the cut keeps them.
      const bool short_line = held_.size() < static_cast<size_t>(min_indent_);
      out.text += held_;
      held_.clear();
      at_line_start_ = false;
      if (short_line) {
        stopped_ = out.stopped = true;
        return out;
      }
    }
    out.text += c;
    if (c == '\n') {
      at_line_start_ = min_indent_ > 0;
    }
  }
  // llama-server checks the time only on a token whose text holds a newline.
  if (time_limit_ms_ > 0 && elapsed_ms > time_limit_ms_ &&
      text.find('\n') != std::string_view::npos) {
    out.text += held_;
    held_.clear();
    stopped_ = out.stopped = true;
  }
  return out;
}

std::string LineLimits::flush() {
  if (stopped_) return {};
  std::string rest = std::move(held_);
  held_.clear();
  return rest;
}

}  // namespace tandem
