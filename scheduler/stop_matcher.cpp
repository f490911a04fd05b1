#include "scheduler/stop_matcher.h"

#include <algorithm>

namespace tandem {

StopMatcher::StopMatcher(std::vector<std::string> stops, bool include_stop)
    : include_stop_(include_stop) {
  for (auto& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

StopMatcher::Output StopMatcher::push(std::string_view text, bool may_stop) {
  Output out;
  if (stopped_) {
    out.stopped = true;
    return out;
  }
  if (stops_.empty()) {
    out.text.assign(text);
    return out;
  }
  held_.append(text);
  // The earliest complete stop wins. No stop can start in text already emitted: any
  // suffix of it that begins a stop was held back.
  // Of stops found at the same place, the longest is the one included.
  size_t first = std::string::npos;
  size_t end = 0;
  const std::string* found = nullptr;
  for (const std::string& stop : stops_) {
    const size_t at = may_stop ? held_.find(stop) : std::string::npos;
    if (at == std::string::npos) continue;
    if (at < first || (at == first && at + stop.size() > end)) {
      first = at;
      end = at + stop.size();
      found = &stop;
    }
  }
  if (found != nullptr) {
    matched_ = *found;
    out.text = held_.substr(0, include_stop_ ? end : first);
    out.stopped = stopped_ = true;
    held_.clear();
    return out;
  }
  // Hold back the longest tail that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const std::string& stop : stops_) {
    const size_t longest = std::min(stop.size() - 1, held_.size());
    for (size_t n = longest; n > keep; --n) {
      if (std::string_view(held_).substr(held_.size() - n) == std::string_view(stop).substr(0, n)) {
        keep = n;
        break;
      }
    }
  }
  out.text = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace tandem
