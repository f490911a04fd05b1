// The byte-level BPE pre-tokenizers tandem knows, as data: which tokenizer.ggml.pre names
// share which regex list, and llama.cpp's settings for each. Internal to the tokenizer.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tandem {

struct PreTokenizerFamily {
  std::vector<std::string_view> names;
  std::vector<std::string> regexes;  // PCRE2 syntax, applied in order
  bool ignore_merges = false;        // a piece that is a whole token skips the merges
  bool add_bos = false;              // BOS by default (no tokenizer.ggml.add_bos_token)
};

// Two regexes that group a run of decimal digits in threes from its right end, through a
// lookahead over the rest of the run. PreTokenizer splits them without the regex engine,
// which would rescan the run at every position (quadratic: minutes for 100,000 digits).
inline constexpr std::string_view kDigitGroupsRegex = R"(\d{1,3}(?=(?:\d{3})*\b))";
inline constexpr std::string_view kDigitSplitsRegex = R"((?=(\d{3})+(?!\d)))";

struct UnsupportedPreTokenizer {
  std::string_view name;
  std::string_view reason;
};

// In llama.cpp's order (llama-vocab.cpp); built once, immutable.
const std::vector<PreTokenizerFamily>& pre_tokenizer_families();

// Names llama.cpp maps that tandem refuses, each with why.
const std::vector<UnsupportedPreTokenizer>& unsupported_pre_tokenizers();

}  // namespace tandem
