#include "runner/grammar/recognizer.h"

namespace tandem::grammar {

Recognizer::Recognizer(std::shared_ptr<const Grammar> grammar)
    : grammar_(std::move(grammar)), pda_(grammar_->automaton()) {
  const Automaton& a = grammar_->automaton();
  accepts_ = pda_.close({a.rule_start[static_cast<size_t>(a.root)], kBase}, arena_, heads_);
}

bool Recognizer::feed(std::string_view bytes) {
  if (bytes.empty()) return true;
  std::vector<Head> current = heads_;
  bool accepts = false;
  for (size_t i = 0; i < bytes.size(); ++i) {
    next_.clear();
    accepts = pda_.step(current, static_cast<uint8_t>(bytes[i]), arena_, next_);
    if (next_.empty() && !(accepts && i + 1 == bytes.size())) return false;
    current.swap(next_);
  }
  heads_.swap(current);
  accepts_ = accepts;
  return true;
}

void Recognizer::restore(Position position) {
  heads_ = std::move(position.heads);
  accepts_ = position.accepts;
}

}  // namespace tandem::grammar
