#include "server/chat_tokens.h"

namespace tandem::server {

std::vector<int32_t> tokenize_chat_prompt(const Tokenizer& tokenizer,
                                          const std::vector<PromptSegment>& segments) {
  std::string text;
  std::vector<Tokenizer::Range> template_ranges;
  for (const PromptSegment& segment : segments) {
    const size_t begin = text.size();
    text += segment.text;
    if (segment.from_input || segment.text.empty()) continue;
    if (!template_ranges.empty() && template_ranges.back().end == begin) {
      template_ranges.back().end = text.size();  // adjacent template text is one range
    } else {
      template_ranges.push_back({begin, text.size()});
    }
  }
  std::vector<int32_t> tokens = tokenizer.encode(text, /*add_special=*/false, template_ranges);
  const int32_t bos = tokenizer.bos_id();
  if (tokenizer.add_bos() && bos >= 0 && (tokens.empty() || tokens.front() != bos)) {
    tokens.insert(tokens.begin(), bos);
  }
  return tokens;
}

}  // namespace tandem::server
