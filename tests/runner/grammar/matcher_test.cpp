// The Matcher: its mask equals the brute-force check over the whole vocabulary (every
// token's bytes fed to a copy of the byte-level recognizer) on random prefixes; control
// tokens and end-of-generation; advance, rollback, sharing one CompiledGrammar.

#include "runner/grammar/matcher.h"

#include <algorithm>
#include <thread>

#include <gtest/gtest.h>

#include "tests/runner/grammar/grammar_test_support.h"

namespace tandem::grammar::TANDEM_UNITY_ID {
namespace {

using testing::allowed_ids;
using testing::brute_force_mask;
using testing::random_walk;
using testing::synthetic_vocabulary;

// Grammars whose structure exercises the matcher: recursion across kept rules (tokens that
// cross a rule's end are "uncertain" and checked against the stack), nullable repetitions,
// UTF-8 classes, counted repetitions, ambiguity (several heads).
const char* const kJson = R"gbnf(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( string ws ":" ws value ws ("," ws string ws ":" ws value ws)* )? "}"
array  ::= "[" ws ( value ws ("," ws value ws)* )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\""
number ::= "-"? ([0-9] | [1-9] [0-9]{0,5}) ("." [0-9]{1,4})? ([eE] [-+]? [0-9]{1,2})?
ws     ::= ([ \t\n] ws)?
)gbnf";

const char* const kArithmetic = R"gbnf(
root ::= expr
expr ::= term (("+" | "-") term)*
term ::= factor (("*" | "/") factor)*
factor ::= [0-9]+ | "(" expr ")" | "-" factor
)gbnf";

const char* const kAmbiguous = R"gbnf(
root ::= (a | b | c)+ "!"?
a ::= "ab" | "a"
b ::= "b" "c"? | "abc"
c ::= [a-c]{2,3} | x
x ::= "(" root ")" | ""
)gbnf";

const char* const kUnicode = R"gbnf(
root ::= ( [^\x00-\x7F]{1,3} | [a-z\u00e0-\u00ff]+ | "日本" | [\U0001F980-\U0001F9FF] ) ( " " root )?
)gbnf";

const char* const kCounted = R"gbnf(
root ::= "\"" [a-z"]{2,6} "\"" ("," [0-9]{3})* "}"
)gbnf";

const char* const kGrammars[] = {kJson, kArithmetic, kAmbiguous, kUnicode, kCounted};

void expect_masks_match_brute_force(const std::shared_ptr<const Vocabulary>& vocab, int walks,
                                    size_t check_every) {
  for (const char* text : kGrammars) {
    const auto compiled = std::make_shared<const CompiledGrammar>(parse_gbnf(text), vocab);
    std::mt19937_64 rng(1234);
    size_t checked = 0;
    for (int w = 0; w < walks; ++w) {
      Matcher matcher(compiled);
      size_t step = 0;
      random_walk(matcher, rng, {.free_tokens = 60, .max_tokens = 60, .end_chance = 0.02},
                  [&](const Matcher& m, const std::vector<uint32_t>& mask) {
                    if (step++ % check_every != 0) return;
                    ++checked;
                    ASSERT_EQ(mask, brute_force_mask(m))
                        << "grammar:\n"
                        << text << "after: " << m.steps() << " tokens";
                  });
    }
    EXPECT_GT(checked, 0u);
  }
}

TEST(Matcher, MaskEqualsBruteForceOnRandomPrefixesSyntheticVocabulary) {
  expect_masks_match_brute_force(synthetic_vocabulary(), 12, 1);
}

TEST(Matcher, MaskEqualsBruteForceOnRandomPrefixesSharedVocabularies) {
  for (const char* name : {"llama-spm", "llama3"}) {
    const auto vocab = testing::shared_vocabulary(name);
    if (!vocab) GTEST_SKIP() << "../shared/vocab is absent";
    expect_masks_match_brute_force(vocab, 3, 6);
  }
}

TEST(Matcher, ControlTokensAreNeverAllowedAndEndOfGenerationOnlyWhenAccepting) {
  const auto vocab = synthetic_vocabulary();
  Matcher m(parse_gbnf("root ::= \"ab\" \"c\"?"), vocab);
  std::vector<uint32_t> mask(m.mask_words());
  const auto bit = [&](int32_t id) {
    return (mask[static_cast<size_t>(id) / 32] >> (id % 32)) & 1;
  };
  m.fill_mask(mask);
  EXPECT_FALSE(bit(0) || bit(1) || bit(2) || bit(3));
  EXPECT_FALSE(m.accepts());
  EXPECT_FALSE(m.advance(1));  // EOS before the grammar accepts
  EXPECT_FALSE(m.advance(0));  // a control token has no bytes
  ASSERT_TRUE(m.advance(3 + 1 + 'a'));
  ASSERT_TRUE(m.advance(3 + 1 + 'b'));
  m.fill_mask(mask);
  EXPECT_TRUE(m.accepts());
  EXPECT_TRUE(bit(1) && bit(3));  // both end-of-generation ids, "</s>" by id not by text
  EXPECT_FALSE(bit(0) || bit(2));
  EXPECT_TRUE(m.advance(1));
  EXPECT_TRUE(m.is_terminated());
  m.fill_mask(mask);
  EXPECT_TRUE(allowed_ids(mask, vocab->size()).empty());
  EXPECT_FALSE(m.advance(3 + 1 + 'c'));
  m.rollback(1);
  EXPECT_FALSE(m.is_terminated());
  EXPECT_TRUE(m.advance(3 + 1 + 'c'));
  m.fill_mask(mask);
  EXPECT_EQ(allowed_ids(mask, vocab->size()), (std::vector<int32_t>{1, 3}));
  EXPECT_FALSE(m.can_continue());
}

TEST(Matcher, RealControlTokensAreNeverAllowedAndEndOfGenerationOnlyWhenAccepting) {
  const auto vocab = testing::shared_vocabulary("llama3");
  if (!vocab) GTEST_SKIP() << "../shared/vocab is absent";
  std::vector<int32_t> control;
  for (int32_t id = 0; id < vocab->size(); ++id)
    if (vocab->bytes(id).empty()) control.push_back(id);
  ASSERT_GT(control.size(), 200u);  // <|begin_of_text|>, <|reserved_special_token_*|>, ...
  Matcher m(parse_gbnf("root ::= [^<>]* \"!\""), vocab);
  std::vector<uint32_t> mask(m.mask_words());
  const auto bit = [&](int32_t id) {
    return (mask[static_cast<size_t>(id) / 32] >> (id % 32)) & 1;
  };
  for (std::string_view text : {"", "Hello", "!"}) {
    ASSERT_TRUE(m.advance_bytes(text));
    m.fill_mask(mask);
    for (int32_t id : control) {
      const bool eog =
          std::find(vocab->end_of_generation().begin(), vocab->end_of_generation().end(), id) !=
          vocab->end_of_generation().end();
      EXPECT_EQ(bit(id), eog && m.accepts()) << "id " << id << " after '" << text << "'";
    }
  }
}

TEST(Matcher, ACopyGoesOnIndependently) {
  Matcher a(parse_gbnf(kJson), synthetic_vocabulary());
  ASSERT_TRUE(a.advance_bytes("{\"k\": ["));
  Matcher b = a;
  std::vector<uint32_t> ma(a.mask_words()), mb(b.mask_words());
  a.fill_mask(ma);
  b.fill_mask(mb);
  EXPECT_EQ(ma, mb);
  ASSERT_TRUE(a.advance_bytes("1"));
  ASSERT_TRUE(b.advance_bytes("]"));
  a.fill_mask(ma);
  b.fill_mask(mb);
  EXPECT_NE(ma, mb);
  EXPECT_EQ(mb, brute_force_mask(b));
  EXPECT_EQ(ma, brute_force_mask(a));
}

TEST(Matcher, ADisallowedTokenLeavesTheStateAsItWas) {
  Matcher m(parse_gbnf(kJson), synthetic_vocabulary());
  std::vector<uint32_t> before(m.mask_words()), after(m.mask_words());
  ASSERT_TRUE(m.advance_bytes("{\"a\": [1, "));
  m.fill_mask(before);
  EXPECT_FALSE(m.advance_bytes("}"));
  EXPECT_FALSE(m.advance(3 + 1 + ']'));  // "[1, ]" is not JSON
  m.fill_mask(after);
  EXPECT_EQ(before, after);
  EXPECT_EQ(m.steps(), 1u);
}

TEST(Matcher, RollbackRestoresEveryEarlierMask) {
  const auto compiled =
      std::make_shared<const CompiledGrammar>(parse_gbnf(kJson), synthetic_vocabulary());
  Matcher m(compiled);
  std::mt19937_64 rng(7);
  std::vector<std::vector<uint32_t>> masks;
  testing::Walk walk;
  while (walk.tokens.size() < 5) {  // a walk may end at once ("1", end of generation)
    m.reset();
    masks.clear();
    walk = random_walk(
        m, rng, {.free_tokens = 40, .max_tokens = 40},
        [&](const Matcher&, const std::vector<uint32_t>& mask) { masks.push_back(mask); });
  }
  std::vector<uint32_t> mask(m.mask_words());
  for (size_t back = 1; back <= walk.tokens.size(); back += 3) {
    Matcher replay(compiled);
    for (int32_t t : walk.tokens) ASSERT_TRUE(replay.advance(t));
    replay.rollback(back);
    replay.fill_mask(mask);
    EXPECT_EQ(mask, masks[walk.tokens.size() - back]) << "rolled back " << back;
  }
  m.reset();
  m.fill_mask(mask);
  EXPECT_EQ(mask, masks[0]);
}

TEST(Matcher, MatchersOnManyThreadsShareOneCacheAndAgree) {
  const auto compiled =
      std::make_shared<const CompiledGrammar>(parse_gbnf(kJson), synthetic_vocabulary());
  const auto run = [&](uint64_t seed) {
    Matcher m(compiled);
    std::mt19937_64 rng(seed);
    std::vector<std::vector<uint32_t>> masks;
    random_walk(m, rng, {.free_tokens = 50, .max_tokens = 50},
                [&](const Matcher&, const std::vector<uint32_t>& mask) { masks.push_back(mask); });
    return masks;
  };
  std::vector<std::vector<std::vector<uint32_t>>> results(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i)
    threads.emplace_back([&, i] { results[i] = run(i % 2); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(results[0], results[2]);
  EXPECT_EQ(results[1], results[3]);
  EXPECT_GT(compiled->cached_states(), 0u);
}

TEST(Matcher, PrecomputedAndLazyCachesGiveTheSameMasks) {
  const auto grammar = parse_gbnf(kArithmetic);
  const auto lazy = std::make_shared<const CompiledGrammar>(grammar, synthetic_vocabulary());
  const auto eager = std::make_shared<const CompiledGrammar>(grammar, synthetic_vocabulary());
  eager->precompute();
  size_t reading = 0;
  for (uint8_t flags : grammar->automaton().flags) reading += (flags & Automaton::kReadsBytes) != 0;
  EXPECT_EQ(eager->cached_states(), reading);
  Matcher a(lazy), b(eager);
  std::vector<uint32_t> ma(a.mask_words()), mb(b.mask_words());
  for (std::string_view bytes : {"(", "1", "2", "+", "(", "-", "3", ")", ")", "*", "4"}) {
    a.fill_mask(ma);
    b.fill_mask(mb);
    ASSERT_EQ(ma, mb);
    ASSERT_TRUE(a.advance_bytes(bytes) && b.advance_bytes(bytes));
  }
}

TEST(Matcher, TokensWithTheSameBytesAreAllowedTogether) {
  const auto vocab = synthetic_vocabulary();
  Matcher m(parse_gbnf("root ::= \"name\" \"!\""), vocab);
  std::vector<uint32_t> mask(m.mask_words());
  m.fill_mask(mask);
  std::vector<int32_t> names;
  for (int32_t id : allowed_ids(mask, vocab->size())) names.push_back(id);
  int named = 0;
  for (int32_t id : names) named += vocab->bytes(id) == "name";
  EXPECT_EQ(named, 2);
}

// Found by fuzz_gbnf: after "s" the state may go on in the class or take any character as
// the `.`, which must then be followed by a control byte. Plain tokens of 2+ characters
// all in the class ("ab", "alpha") are allowed; the mask cache once dropped them, because
// the state after "st" reads letters back into itself and the search for how much text it
// reads met that state only once.
TEST(Matcher, ARepetitionFollowedByAnyCharacterKeepsMultiCharacterTokens) {
  const auto vocab = synthetic_vocabulary();
  for (const char* text : {"root ::= [a-z]+ . \"\\x01\"", "root ::= [a-z\\u00ec]+ . \"\\x01\""}) {
    Matcher m(parse_gbnf(text), vocab);
    std::vector<uint32_t> mask(m.mask_words());
    for (const char* token : {"s", "t", "alpha"}) {
      ASSERT_TRUE(m.advance_bytes(token)) << text;
      m.fill_mask(mask);
      EXPECT_EQ(mask, brute_force_mask(m)) << text << " after " << token;
    }
  }
}

}  // namespace
}  // namespace tandem::grammar::TANDEM_UNITY_ID
