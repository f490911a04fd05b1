// A thinking model's reasoning, split from its answer as llama-server's
// `--reasoning-format deepseek` and vLLM's reasoning parsers split it: the text between the
// family's markers (<think> ... </think> for Qwen3, DeepSeek-R1, SmolLM3, GLM, Kimi,
// MiniMax, Nemotron; [THINK] ... [/THINK] for Magistral; Command-A's
// <|START_THINKING|> ... <|END_THINKING|>) becomes `reasoning_content`, the rest `content`.
//
// The rules, one implementation for whole outputs and streams (split_reasoning is one
// ReasoningStream fed the whole text, so a stream's pieces, laid end to end, are always the
// whole split, however the text was cut):
// - The output is inside the reasoning from its start when the prompt opened it (the
//   template's generation prompt ends with the open marker, as DeepSeek-R1's does), or when
//   it begins, after blanks, with the open marker. Otherwise all of it is content.
// - The reasoning ends at the first close marker; without one, everything is reasoning (a
//   generation cut short while thinking). Its blanks at both ends are dropped, and the
//   content's leading blanks, as the templates drop them when they render a past turn.
// Pure; a ReasoningStream is one choice's state.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tandem {

struct ReasoningMarkers {
  std::string open;
  std::string close;
  bool operator==(const ReasoningMarkers&) const = default;
};

// The markers of the family whose chat template this is (read from its source: the close
// marker it writes or splits on); nullopt: the template knows no reasoning.
std::optional<ReasoningMarkers> detect_reasoning_markers(std::string_view template_source);

// Whether a rendered prompt leaves the model inside its reasoning: it ends, after blanks,
// with the open marker.
bool reasoning_opened_by(std::string_view prompt, const ReasoningMarkers& markers);

struct ReasoningPieces {
  std::string reasoning;
  std::string content;
};

class ReasoningStream {
 public:
  ReasoningStream(ReasoningMarkers markers, bool opened);
  // The next text of the output; returns what can be sent of it now (text that may be part
  // of a marker, or blanks that may end the reasoning, are held back).
  ReasoningPieces push(std::string_view text);
  // The output has ended: what was held back.
  ReasoningPieces finish();
  bool in_reasoning() const { return state_ == State::kReasoning; }

 private:
  enum class State { kStart, kReasoning, kContent };
  void drain(ReasoningPieces& out, bool final);
  void drain_start(ReasoningPieces& out, bool final);
  void drain_reasoning(ReasoningPieces& out, bool final);

  ReasoningMarkers markers_;
  State state_;
  std::string held_;              // text not yet placed
  bool reasoning_began_ = false;  // a reasoning character was sent (leading blanks dropped)
  bool content_began_ = false;    // a content character was sent after the reasoning
  bool after_reasoning_ = false;  // content follows a reasoning block (its blanks dropped)
};

// The whole output's split: the same as a ReasoningStream fed all of it.
ReasoningPieces split_reasoning(std::string_view output, const ReasoningMarkers& markers,
                                bool opened);

}  // namespace tandem
