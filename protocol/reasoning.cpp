#include "protocol/reasoning.h"

#include <utility>

namespace tandem {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t first_non_blank(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && is_blank(text[i])) ++i;
  return i;
}

// The end of text without its trailing blanks.
size_t end_without_blanks(std::string_view text, size_t end) {
  while (end > 0 && is_blank(text[end - 1])) --end;
  return end;
}

// The longest proper prefix of marker that text ends with (a marker cut by the chunk's end).
size_t partial_marker_at_end(std::string_view text, std::string_view marker) {
  for (size_t k = std::min(marker.size() - 1, text.size()); k > 0; --k) {
    if (text.substr(text.size() - k) == marker.substr(0, k)) return k;
  }
  return 0;
}

}  // namespace

std::optional<ReasoningMarkers> detect_reasoning_markers(std::string_view source) {
  // Magistral and Command-A first: their templates may also mention <think> in prose.
  if (source.find("[/THINK]") != std::string_view::npos) {
    return ReasoningMarkers{"[THINK]", "[/THINK]"};
  }
  if (source.find("<|END_THINKING|>") != std::string_view::npos) {
    return ReasoningMarkers{"<|START_THINKING|>", "<|END_THINKING|>"};
  }
  if (source.find("</think>") != std::string_view::npos) {
    return ReasoningMarkers{"<think>", "</think>"};
  }
  return std::nullopt;
}

bool reasoning_opened_by(std::string_view prompt, const ReasoningMarkers& markers) {
  return prompt.substr(0, end_without_blanks(prompt, prompt.size())).ends_with(markers.open);
}

ReasoningStream::ReasoningStream(ReasoningMarkers markers, bool opened)
    : markers_(std::move(markers)), state_(opened ? State::kReasoning : State::kStart) {}

ReasoningPieces ReasoningStream::push(std::string_view text) {
  held_ += text;
  ReasoningPieces out;
  drain(out, false);
  return out;
}

ReasoningPieces ReasoningStream::finish() {
  ReasoningPieces out;
  drain(out, true);
  return out;
}

void ReasoningStream::drain(ReasoningPieces& out, bool final) {
  if (state_ == State::kStart) drain_start(out, final);
  if (state_ == State::kReasoning) drain_reasoning(out, final);
  if (state_ != State::kContent) return;
  // The answer after a reasoning block starts at its first character, not at the blanks
  // the model wrote after the close marker.
  if (after_reasoning_ && !content_began_) held_.erase(0, first_non_blank(held_));
  content_began_ = content_began_ || !held_.empty();
  out.content += held_;
  held_.clear();
}

// Before the first character: blanks, then the open marker (the reasoning) or anything
// else (all content, blanks included).
void ReasoningStream::drain_start(ReasoningPieces&, bool final) {
  const size_t begin = first_non_blank(held_);
  const std::string_view rest = std::string_view(held_).substr(begin);
  if (rest.starts_with(markers_.open)) {
    held_.erase(0, begin + markers_.open.size());
    state_ = State::kReasoning;
  } else if (!final && std::string_view(markers_.open).starts_with(rest)) {
    return;  // blanks, or the marker's beginning: wait for more
  } else {
    state_ = State::kContent;  // drain() sends held_ as it is
  }
}

void ReasoningStream::drain_reasoning(ReasoningPieces& out, bool final) {
  if (!reasoning_began_) held_.erase(0, first_non_blank(held_));
  const size_t close = held_.find(markers_.close);
  size_t send = 0;
  if (close != std::string::npos) {
    send = end_without_blanks(held_, close);
  } else if (final) {
    send = end_without_blanks(held_, held_.size());
  } else {
    // Hold back what may still turn out to end the reasoning: a cut marker and the blanks
    // before it.
    send = end_without_blanks(held_, held_.size() - partial_marker_at_end(held_, markers_.close));
  }
  out.reasoning.append(held_, 0, send);
  reasoning_began_ = reasoning_began_ || send > 0;
  if (close != std::string::npos) {
    held_.erase(0, close + markers_.close.size());
    state_ = State::kContent;
    after_reasoning_ = true;
  } else if (final) {
    held_.clear();
  } else {
    held_.erase(0, send);
  }
}

ReasoningPieces split_reasoning(std::string_view output, const ReasoningMarkers& markers,
                                bool opened) {
  ReasoningStream stream(markers, opened);
  ReasoningPieces whole = stream.push(output);
  ReasoningPieces rest = stream.finish();
  whole.reasoning += rest.reasoning;
  whole.content += rest.content;
  return whole;
}

}  // namespace tandem
