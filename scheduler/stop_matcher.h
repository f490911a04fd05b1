// Stop strings matched across token boundaries, for one request's output text. Text
// goes in as it becomes final; what comes out is safe to stream: never anything at or
// past a stop string, and a tail that could still grow into one is held back until it
// is resolved. The stop string itself is not emitted (as OpenAI does) unless
// include_stop (vLLM's include_stop_str_in_output). Not thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tandem {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops = {}, bool include_stop = false);

  struct Output {
    std::string text;      // safe to emit now
    bool stopped = false;  // a stop string completed; nothing more will come out
  };
  // Appends text; once stopped, further input is ignored. With may_stop false (min_tokens
  // not reached yet) no stop is looked for, but a tail that could begin one is still held
  // back, so a stop that ends in a later push is found whole.
  Output push(std::string_view text, bool may_stop = true);
  // End of output without a stop: releases the held-back tail.
  std::string flush();

  bool stopped() const { return stopped_; }
  // The stop string that stopped the output (the earliest, the longest there); empty
  // until one does.
  const std::string& matched() const { return matched_; }
  size_t held() const { return held_.size(); }

 private:
  std::vector<std::string> stops_;
  bool include_stop_ = false;
  std::string held_;  // not yet emitted: a suffix that is a proper prefix of some stop
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace tandem
