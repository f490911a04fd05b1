#include "runner/grammar/matcher.h"

#include <algorithm>
#include <stdexcept>

namespace tandem::grammar {

namespace {

void set_bit(std::span<uint32_t> mask, int32_t id) {
  mask[static_cast<size_t>(id) >> 5] |= uint32_t{1} << (static_cast<uint32_t>(id) & 31);
}

bool test_bit(std::span<const uint32_t> mask, int32_t id) {
  return (mask[static_cast<size_t>(id) >> 5] >> (static_cast<uint32_t>(id) & 31)) & 1;
}

}  // namespace

Matcher::Matcher(std::shared_ptr<const CompiledGrammar> compiled)
    : compiled_(std::move(compiled)), recognizer_(compiled_->grammar()) {}

Matcher::Matcher(std::shared_ptr<const Grammar> grammar,
                 std::shared_ptr<const Vocabulary> vocabulary)
    : Matcher(std::make_shared<const CompiledGrammar>(std::move(grammar), std::move(vocabulary))) {}

void Matcher::fill_mask(std::span<uint32_t> mask) {
  const size_t words = mask_words();
  if (mask.size() < words) throw std::invalid_argument("grammar mask span is too short");
  mask = mask.first(words);
  std::fill(mask.begin(), mask.end(), 0u);
  if (terminated_) return;
  // Checking uncertain tokens uses the recognizer's arena and scratch, never its heads.
  for (const Head& head : recognizer_.heads()) {
    const MaskEntry& entry = compiled_->entry(head.state, walker_);
    entry.set_accepted(mask);
    if (head.below != kBase && !entry.uncertain_ids.empty()) add_uncertain(entry, head.below, mask);
  }
  walker_.let_go();
  if (recognizer_.accepts())
    for (int32_t id : compiled_->vocabulary().end_of_generation()) set_bit(mask, id);
}

// The tokens that may end the head's rule part-way decide on the frame below it.
void Matcher::add_uncertain(const MaskEntry& entry, int32_t below, std::span<uint32_t> mask) {
  const Vocabulary& vocabulary = compiled_->vocabulary();
  for (size_t i = 0; i < entry.uncertain_ids.size(); ++i) {
    const int32_t id = entry.uncertain_ids[i];
    if (test_bit(mask, id)) continue;
    const std::string_view bytes = vocabulary.bytes(id);
    for (uint32_t k = entry.offset_begin[i]; k < entry.offset_begin[i + 1]; ++k) {
      if (rest_continues(below, bytes.substr(entry.offsets[k]))) {
        set_bit(mask, id);
        break;
      }
    }
  }
}

// Whether `rest` can be read after returning into frame `below`.
bool Matcher::rest_continues(int32_t below, std::string_view rest) {
  Pda& pda = recognizer_.pda();
  FrameArena& arena = recognizer_.arena();
  current_.clear();
  pda.close(arena.frame(below), arena, current_);
  for (size_t i = 0; i < rest.size(); ++i) {
    next_.clear();
    const bool returned = pda.step(current_, static_cast<uint8_t>(rest[i]), arena, next_);
    if (next_.empty()) return returned && i + 1 == rest.size();
    current_.swap(next_);
  }
  return true;
}

bool Matcher::is_end_of_generation(int32_t token) const {
  const auto eog = compiled_->vocabulary().end_of_generation();
  return std::binary_search(eog.begin(), eog.end(), token);
}

bool Matcher::advance(int32_t token) {
  if (terminated_ || token < 0 || token >= compiled_->vocabulary().size()) return false;
  if (is_end_of_generation(token)) {
    if (!recognizer_.accepts()) return false;
    history_.push_back({recognizer_.position(), terminated_});
    terminated_ = true;
    return true;
  }
  const std::string_view bytes = compiled_->vocabulary().bytes(token);
  if (bytes.empty()) return false;
  return advance_bytes(bytes);
}

bool Matcher::advance_bytes(std::string_view bytes) {
  if (terminated_) return false;
  Recognizer::Position before = recognizer_.position();
  if (!recognizer_.feed(bytes)) return false;
  history_.push_back({std::move(before), terminated_});
  return true;
}

void Matcher::rollback(size_t steps) {
  steps = std::min(steps, history_.size());
  if (steps == 0) return;
  Step& target = history_[history_.size() - steps];
  recognizer_.restore(std::move(target.position));
  terminated_ = target.terminated;
  history_.resize(history_.size() - steps);
}

}  // namespace tandem::grammar
