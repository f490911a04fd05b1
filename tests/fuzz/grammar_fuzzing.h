// Shared by the grammar fuzzers (gbnf.cpp, json_schema.cpp): a small vocabulary built in
// memory and a walk that checks the matcher's invariants on whatever grammar the input
// compiled to. A broken invariant aborts, so libFuzzer keeps the input.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "runner/grammar/grammar.h"
#include "runner/grammar/matcher.h"

namespace tandem::fuzzing {

inline void require(bool condition) {
  if (!condition) std::abort();
}

// Limits small enough that a hostile input costs milliseconds, not seconds.
inline grammar::BuildLimits fuzz_limits() {
  return {.max_nfa_states = 20'000, .max_states = 5'000, .max_work = 2'000'000};
}

// Id 0: end of generation; 1: a control token (no bytes); then every single byte, then
// tokens that cross JSON's structure.
inline std::shared_ptr<const grammar::Vocabulary> fuzz_vocabulary() {
  static const auto vocabulary = [] {
    std::vector<std::string> tokens = {"", ""};
    for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
    for (const char* t : {"{\"",
                          "\":",
                          "\",",
                          "\"}",
                          "},",
                          "}]",
                          "]}",
                          "[{",
                          "\": \"",
                          "true",
                          "null",
                          "false",
                          "12",
                          "0.",
                          "e+",
                          "\\u00",
                          "\\n",
                          "  ",
                          "\n  ",
                          "ab",
                          "\xC3\xA9",
                          "\xE6\x97\xA5",
                          "\xF0\x9F\xA6\x99",
                          "\xE6",
                          "\x80"})
      tokens.emplace_back(t);
    return std::make_shared<const grammar::Vocabulary>(std::move(tokens), std::vector<int32_t>{0});
  }();
  return vocabulary;
}

// Up to `steps` tokens chosen by `choices`: at each step the mask must equal the
// brute-force check (every token fed to a copy of the recognizer), be non-empty (every
// prefix the grammar allows can be completed), and the chosen token must advance. A token
// that completes the grammar is preferred, so walks end. Returns the text when it ended.
inline bool walk(const std::shared_ptr<const grammar::Grammar>& g, const uint8_t* choices,
                 size_t size, size_t steps, std::string& text) {
  const auto vocab = fuzz_vocabulary();
  grammar::Matcher m(g, vocab);
  std::vector<uint32_t> mask(m.mask_words()), brute(m.mask_words());
  for (size_t step = 0; step < steps; ++step) {
    m.fill_mask(mask);
    std::fill(brute.begin(), brute.end(), 0u);
    std::vector<int32_t> allowed, finishing;
    grammar::Recognizer probe = m.recognizer();
    const auto start = probe.position();
    for (int32_t id = 0; id < vocab->size(); ++id) {
      const bool ok =
          id == 0 ? m.accepts() : !vocab->bytes(id).empty() && probe.feed(vocab->bytes(id));
      if (!ok) continue;
      brute[static_cast<size_t>(id) / 32] |= uint32_t{1} << (id % 32);
      allowed.push_back(id);
      if (id != 0 && probe.accepts()) finishing.push_back(id);
      if (id != 0) probe.restore(start);
    }
    require(mask == brute);
    require(!allowed.empty());
    if (m.accepts()) {
      require(m.advance(0) && m.is_terminated());
      return true;
    }
    const uint8_t choice = size ? choices[step % size] : 0;
    const auto& from = (choice & 1) && !finishing.empty() ? finishing : allowed;
    const int32_t token = from[choice % from.size()];
    require(m.advance(token));
    text += vocab->bytes(token);
  }
  return false;
}

}  // namespace tandem::fuzzing
