// llama-server's two code-completion limits on a request's output text, which editor
// plugins (llama.vscode, llama.vim) send to /infill:
// - n_indent (min_indent): every line after the first newline must be indented by at least
//   this many spaces or tabs; the first line that is not ends the output just before its
//   first visible character (its short indentation stays, as llama-server cuts it), with
//   finish_reason "length". A line's leading blanks are held back until its first visible
//   character decides, so a stream never sends what the whole answer would cut.
// - t_max_predict_ms (time_limit_ms): once generation has run that long, the output ends
//   at the next text that holds a newline (that text included), with finish_reason
//   "length". This is the one limit that depends on time: the same request may end at
//   another line on a busier server, as it does on llama-server.
// Text goes in after the stop strings have been matched (StopMatcher's output). Not
// thread-safe: one per request, on the scheduler thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tandem {

class LineLimits {
 public:
  LineLimits(int32_t min_indent, double time_limit_ms)
      : min_indent_(min_indent), time_limit_ms_(time_limit_ms) {}

  bool active() const { return min_indent_ > 0 || time_limit_ms_ > 0; }

  struct Output {
    std::string text;      // safe to emit now
    bool stopped = false;  // a limit ended the output: nothing more comes out
  };
  // Appends text; elapsed_ms: how long generation has run (from its first token). Once
  // stopped, further input is ignored.
  Output push(std::string_view text, double elapsed_ms);
  // End of output without a limit: the held-back blanks.
  std::string flush();

 private:
  int32_t min_indent_ = 0;
  double time_limit_ms_ = 0;
  bool at_line_start_ = false;  // inside the leading blanks of a line after a newline
  std::string held_;            // those blanks, not yet emitted
  bool stopped_ = false;
};

}  // namespace tandem
