// compile_regex: a whole output constrained by a regex (vLLM's guided_regex). The grammar
// accepts exactly the strings Python's re.fullmatch accepts (regex_vectors.inc, written by
// make_regex_vectors.py), as raw UTF-8; walks through it on the synthetic vocabulary end
// on a full match; what it refuses is named with "regex: ".

#include <random>
#include <regex>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runner/grammar/grammar.h"
#include "runner/grammar/matcher.h"
#include "runner/grammar/recognizer.h"
#include "tests/runner/grammar/grammar_test_support.h"

namespace tandem::grammar::TANDEM_UNITY_ID {
namespace {

#include "tests/runner/grammar/regex_vectors.inc"

bool fullmatches(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  Recognizer r(g);
  return r.feed(text) && r.accepts();
}

std::string error_of(std::string_view regex) {
  try {
    compile_regex(regex);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(RegexLanguage, AcceptsExactlyWhatPythonsFullmatchAccepts) {
  std::string text;
  for (const char* part : kRegexVectorParts) text += part;
  const auto vectors = nlohmann::json::parse(text);
  ASSERT_GE(vectors.size(), 25u);
  size_t accepted = 0, rejected = 0;
  for (const auto& vector : vectors) {
    const auto regex = vector["regex"].get<std::string>();
    SCOPED_TRACE(regex);
    std::shared_ptr<const Grammar> g;
    ASSERT_NO_THROW(g = compile_regex(regex));
    for (const auto& c : vector["cases"]) {
      const auto s = c[0].get<std::string>();
      const bool expected = c[1].get<bool>();
      EXPECT_EQ(fullmatches(g, s), expected) << "text: " << nlohmann::json(s).dump();
      ++(expected ? accepted : rejected);
    }
  }
  EXPECT_GT(accepted, 500u);
  EXPECT_GT(rejected, 5000u);
}

TEST(RegexLanguage, IsAFullMatchOfRawText) {
  const auto g = compile_regex("[A-Z][a-z]{2,5} [0-9]{3}");
  EXPECT_TRUE(fullmatches(g, "Abc 123"));
  EXPECT_FALSE(fullmatches(g, "Abc 12"));    // a prefix of a match
  EXPECT_FALSE(fullmatches(g, "Abc 1234"));  // a match and one more character
  EXPECT_FALSE(fullmatches(g, "xAbc 123"));
  EXPECT_FALSE(fullmatches(g, "\"Abc 123\""));  // not a JSON string
  // Quotes and backslashes are themselves, not JSON escapes.
  const auto quoted = compile_regex(R"("[^"\\]*\\?")");
  EXPECT_TRUE(fullmatches(quoted, R"("ab\")"));
  EXPECT_FALSE(fullmatches(quoted, R"("a\"b")"));
  // ^ and $ are implicit; written, they change nothing.
  const auto anchored = compile_regex("^ab+$");
  for (const char* s : {"ab", "abbb"}) EXPECT_TRUE(fullmatches(anchored, s)) << s;
  for (const char* s : {"a", "xab", "abx", "ab$", "^ab"})
    EXPECT_FALSE(fullmatches(anchored, s)) << s;
}

TEST(RegexLanguage, WalksOnTheSyntheticVocabularyEndOnAFullMatch) {
  const auto vocab = testing::synthetic_vocabulary();
  const char* const regex = "[A-Z][a-z]{2,5} [0-9]{3}( [a-z]+)?";
  const auto compiled = std::make_shared<const CompiledGrammar>(compile_regex(regex), vocab);
  const std::regex oracle(regex);
  for (uint64_t seed = 0; seed < 64; ++seed) {
    std::mt19937_64 rng(seed);
    Matcher matcher(compiled);
    const auto walk =
        testing::random_walk(matcher, rng, {.free_tokens = 8, .max_tokens = 200},
                             [&](const Matcher& m, const std::vector<uint32_t>& mask) {
                               ASSERT_EQ(mask, testing::brute_force_mask(m));
                             });
    ASSERT_TRUE(walk.ended) << walk.text;
    EXPECT_TRUE(std::regex_match(walk.text, oracle)) << walk.text;
  }
}

TEST(RegexLanguage, UnsupportedConstructsAreRefusedAsRegexErrors) {
  const std::pair<const char*, const char*> refused[] = {
      {"a(?=b)", "regex: lookaround is not supported"},
      {"(?<!a)b", "regex: lookaround is not supported"},
      {"(a)\\1", "regex: backreferences are not supported"},
      {"\\bword", "regex: word boundaries (\\b) are not supported"},
      {"\\p{L}", "regex: Unicode property escapes"},
      {"(?i)abc", "regex: inline flags"},
      {"a^b", "regex: '^' is supported only at the very start"},
      {"a$b", "regex: '$' is supported only at the very end"},
      {"(ab", "regex: missing ')'"},
      {"ab)", "regex: unbalanced ')'"},
      {"*a", "regex: nothing to repeat"},
      {"[a-", "regex: unterminated character class"},
      {"[^\\s\\S]", "regex: no text matches the regex"},
      {"a{2000}", "regex: a quantifier count above 1000"},
  };
  for (const auto& [regex, message] : refused) {
    const std::string error = error_of(regex);
    EXPECT_EQ(error.rfind(message, 0), 0u) << regex << ": " << error;
  }
  // The pattern of a JSON Schema still names itself so.
  try {
    compile_json_schema(R"j({"type": "string", "pattern": "a(?=b)"})j");
    ADD_FAILURE() << "no error";
  } catch (const GrammarError& e) {
    EXPECT_STREQ(e.what(), "json_schema: at #: pattern: lookaround is not supported");
  }
}

}  // namespace
}  // namespace tandem::grammar::TANDEM_UNITY_ID
