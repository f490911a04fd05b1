#include "tests/runner/grammar/grammar_test_support.h"

#include <algorithm>
#include <filesystem>

#include "runner/gguf/gguf.h"
#include "runner/tokenizer/tokenizer.h"
#include "tests/common/test_support.h"

namespace tandem::grammar::testing {

namespace {

// Multi-byte tokens of the synthetic vocabulary: JSON structure, numbers, words, UTF-8.
// clang-format off
const char* const kFragments[] = {
    "{\"", "\":", "\": ", "\",", "\", \"", "\"}", "\"]", "\"}]", "\"},", "\"]}", "},", "}]",
    "]}", "],", "}}", "]]", "[{", "[[", "[\"", "{}", "[]", "\":\"", ": ", ", ", " {", " [",
    " \"", "\n", "\n ", "\n  ", "\n    ", "  ", "    ", "\t", " \n", "true", "false", "null",
    "tru", "nul", "fal", "true,", "null}", "0", "00", "01", "10", "12", "123", "999", "-1", "-0",
    "0.", ".5", "1e", "e+", "E-1", "1.0", "2024", "-12", "3]", "4}", "5,", "\\n", "\\\"", "\\\\",
    "\\u", "\\u00", "\\ud83d", "\\uDC00", "abc", "name", "\"name\"", "\"name\": ", "age", " the",
    " a", "Hello", " world", "id", "type", "x", "\xC3\xA9", "\xE6\x97\xA5\xE6\x9C\xAC",
    "\xF0\x9F\xA6\x99", "\xE6\x97", "\xF0\x9F", "\x80\x80", "\xC3", "caf\xC3\xA9", "(", "((",
    "))", "()", "+", "*", "1+", "2*", "-", "--", "T", "Z", ":0", "2024-", "-01", "T12", ":00",
    "@", ".com", "user", "abc\"", "a\"", "a\",", "\"a", "\"\"", "\"\",", "xyz", "red", "green",
    "blue", "\"red\"", "\"green\"", "\"blue\"", "\"b", "lue", "</", "s>"};
// clang-format on

}  // namespace

std::shared_ptr<const Vocabulary> synthetic_vocabulary() {
  static const std::shared_ptr<const Vocabulary> vocabulary = [] {
    std::vector<std::string> tokens = {"", "", "", "</s>"};  // <s>, EOS, <pad>, </s> as text
    for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
    for (const char* f : kFragments) tokens.emplace_back(f);
    for (int i = 0; i < 100; ++i) tokens.push_back(std::to_string(i * 37 % 1000));
    for (const char* w : {"alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma"}) {
      tokens.emplace_back(w);
      tokens.push_back(std::string(" ") + w);
      tokens.push_back(std::string("\"") + w);
      tokens.push_back(std::string(w) + "\"");
    }
    tokens.emplace_back("name");  // a duplicate: both ids are allowed together
    return std::make_shared<const Vocabulary>(std::move(tokens), std::vector<int32_t>{1, 3});
  }();
  return vocabulary;
}

std::shared_ptr<const Vocabulary> shared_vocabulary(const std::string& name) {
  const auto dir = tandem::testing::shared_dir();
  if (!dir) return nullptr;
  const auto path = *dir / "vocab" / ("ggml-vocab-" + name + ".gguf");
  if (!std::filesystem::exists(path)) return nullptr;
  const auto tokenizer = Tokenizer::from_gguf(gguf::File::open(path));
  return Vocabulary::from_tokenizer(*tokenizer);
}

std::vector<uint32_t> brute_force_mask(const Matcher& matcher) {
  const Vocabulary& vocab = matcher.compiled().vocabulary();
  std::vector<uint32_t> mask(vocab.mask_words(), 0);
  if (matcher.is_terminated()) return mask;
  Recognizer copy = matcher.recognizer();
  const Recognizer::Position start = copy.position();
  const auto eog = vocab.end_of_generation();
  for (int32_t id = 0; id < vocab.size(); ++id) {
    bool allowed = false;
    if (std::find(eog.begin(), eog.end(), id) != eog.end()) {
      allowed = matcher.accepts();
    } else if (!vocab.bytes(id).empty() && copy.feed(vocab.bytes(id))) {
      allowed = true;
      copy.restore(start);
    }
    if (allowed) mask[static_cast<size_t>(id) / 32] |= uint32_t{1} << (id % 32);
  }
  return mask;
}

std::vector<int32_t> allowed_ids(const std::vector<uint32_t>& mask, int32_t vocab_size) {
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < vocab_size; ++id)
    if ((mask[static_cast<size_t>(id) / 32] >> (id % 32)) & 1) ids.push_back(id);
  return ids;
}

namespace {

// Allowed tokens after which the grammar is complete (a sample of at most 512 tried).
std::vector<int32_t> finishing_tokens(const Matcher& matcher, const std::vector<int32_t>& allowed,
                                      std::mt19937_64& rng) {
  const Vocabulary& vocab = matcher.compiled().vocabulary();
  std::vector<int32_t> candidates;
  for (int32_t id : allowed)
    if (vocab.bytes(id).size() == 1 || allowed.size() <= 512 || rng() % allowed.size() < 256)
      candidates.push_back(id);
  std::vector<int32_t> finishing;
  Recognizer probe = matcher.recognizer();
  const Recognizer::Position start = probe.position();
  for (int32_t id : candidates) {
    if (vocab.bytes(id).empty() || !probe.feed(vocab.bytes(id))) continue;
    if (probe.accepts()) finishing.push_back(id);
    probe.restore(start);
  }
  return finishing;
}

}  // namespace

int32_t choose_token(const Matcher& matcher, const std::vector<int32_t>& allowed,
                     std::mt19937_64& rng, bool heading_for_the_end, double end_chance) {
  const Vocabulary& vocab = matcher.compiled().vocabulary();
  const auto eog = vocab.end_of_generation();
  const auto pick = [&](const std::vector<int32_t>& from) {
    return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
  };
  const bool can_end = matcher.accepts() && !eog.empty();
  if (!heading_for_the_end) {
    if (can_end && std::uniform_real_distribution<double>(0, 1)(rng) < end_chance) return eog[0];
    return pick(allowed);
  }
  if (can_end) return eog[0];
  if (const auto finishing = finishing_tokens(matcher, allowed, rng); !finishing.empty())
    return pick(finishing);
  // Closers half of the time; random short tokens otherwise (a closer may be plain text
  // where the walk is, inside a string, and always taking it would never end).
  if (rng() % 2 == 0) {
    for (const char closer : {'"', '}', ']', ','}) {
      for (int32_t id : allowed)
        if (vocab.bytes(id).size() == 1 && vocab.bytes(id)[0] == closer) return id;
    }
  }
  std::vector<int32_t> short_tokens;
  for (int32_t id : allowed)
    if (vocab.bytes(id).size() == 1) short_tokens.push_back(id);
  return pick(short_tokens.empty() ? allowed : short_tokens);
}

Walk random_walk(Matcher& matcher, std::mt19937_64& rng, const WalkOptions& options) {
  return random_walk(matcher, rng, options, [](const Matcher&, const std::vector<uint32_t>&) {});
}

}  // namespace tandem::grammar::testing
