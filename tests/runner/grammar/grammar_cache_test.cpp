// GrammarCache: one compilation per source text and vocabulary, shared; least recently
// used entries evicted; errors cached as well, and thrown again from the cache.

#include "runner/grammar/grammar_cache.h"

#include "runner/grammar/compile_gate.h"

#include <thread>

#include <gtest/gtest.h>

#include "tests/runner/grammar/grammar_test_support.h"

namespace tandem::grammar::TANDEM_UNITY_ID {
namespace {

TEST(GrammarCache, TheSameTextSharesOneCompiledGrammar) {
  GrammarCache cache(testing::synthetic_vocabulary(), 4);
  const auto a = cache.json_schema(R"({"type": "integer"})");
  const auto b = cache.json_schema(R"({"type": "integer"})");
  const auto c = cache.json_schema(R"({"type": "string"})");
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(cache.gbnf("root ::= \"x\""), cache.gbnf("root ::= \"x\""));
  EXPECT_EQ(cache.json_object(), cache.json_object());
  // The same text as GBNF and as a schema are different grammars.
  EXPECT_NE(cache.gbnf("root ::= \"{}\""), cache.json_schema("{}"));
  // And as a regex: "{}" is the two characters there, "{}" the empty object as a schema.
  const auto regex = cache.regex("{}");
  EXPECT_EQ(cache.regex("{}"), regex);
  EXPECT_NE(regex, cache.json_schema("{}"));
  EXPECT_THROW(cache.regex("a(?=b)"), GrammarError);
}

TEST(GrammarCache, TheLeastRecentlyUsedEntryGoesFirst) {
  GrammarCache cache(testing::synthetic_vocabulary(), 2);
  const auto one = cache.gbnf("root ::= \"1\"");
  cache.gbnf("root ::= \"2\"");
  EXPECT_EQ(cache.gbnf("root ::= \"1\""), one);  // 1 is now the most recent
  cache.gbnf("root ::= \"3\"");                  // evicts 2
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.gbnf("root ::= \"1\""), one);
}

// The byte budget: large grammars (a long choice list's automaton) evict older entries
// once their sum passes it, whatever the entry count; the newest always stays, even alone
// past the budget, since its request uses it. (QA: 64 entries of ~150 MB each were kept.)
TEST(GrammarCache, EntriesPastTheByteBudgetAreEvictedOldestFirst) {
  auto choices = [](char tag) {  // root ::= "a0" | "a1" | ... : a few thousand states
    std::string text = "root ::= ";
    for (int i = 0; i < 300; ++i)
      text += (i ? " | \"" : "\"") + std::string(1, tag) + std::to_string(i * 7919) + "\"";
    return text;
  };
  GrammarCache probe(testing::synthetic_vocabulary());
  probe.gbnf(choices('a'));
  const size_t one = probe.memory_bytes();
  ASSERT_GT(one, 10000u);
  // Room for two such entries, not three.
  GrammarCache cache(testing::synthetic_vocabulary(), 64, one * 5 / 2);
  const auto a = cache.gbnf(choices('a'));
  const auto b = cache.gbnf(choices('b'));
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.gbnf(choices('a')), a);  // a is now the most recent
  cache.gbnf(choices('c'));                // evicts b, the least recently used
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_LE(cache.memory_bytes(), one * 5 / 2);
  EXPECT_EQ(cache.gbnf(choices('a')), a);
  EXPECT_NE(cache.gbnf(choices('b')), b);  // compiled again
  // A budget below one entry keeps only the newest.
  GrammarCache tiny(testing::synthetic_vocabulary(), 64, 1);
  const auto first = tiny.gbnf(choices('a'));
  EXPECT_EQ(tiny.size(), 1u);
  tiny.gbnf(choices('b'));
  EXPECT_EQ(tiny.size(), 1u);
  EXPECT_NE(tiny.gbnf(choices('a')), first);
}

// The masks every grammar the cache made keeps, cached or held by a request, stay within
// their budget: a grammar meeting states past it computes their masks for each use and
// keeps none, with the same masks as an unbounded one's. Before, a request's grammar kept
// every mask it met, whatever the bound (QA: four regexes sent with n 16 held 1.05 GB).
// Past three quarters of the budget a lookup frees the masks of idle grammars, oldest
// first, down to half, and keeps their automata, so the grammars in use keep theirs again.
TEST(GrammarCache, MasksKeptByItsGrammarsStayWithinTheBudget) {
  auto choices = [](char tag) {
    std::string text = "root ::= ";
    for (int i = 0; i < 300; ++i)
      text += (i ? " | \"" : "\"") + std::string(1, tag) + std::to_string(i * 7919) + "\"";
    return text;
  };
  const auto vocabulary = testing::synthetic_vocabulary();
  GrammarCache probe(vocabulary);
  const auto unbounded = probe.gbnf(choices('b'));
  unbounded->precompute();
  const size_t all = unbounded->cache_bytes();
  ASSERT_GT(all, 10000u);
  EXPECT_EQ(probe.mask_bytes(), all);
  EXPECT_EQ(probe.masks_not_kept(), 0u);
  // Room for one grammar's masks; the cache's own bound far away.
  GrammarCache cache(vocabulary, 64, GrammarCache::kDefaultBudgetBytes, all);
  auto a = cache.gbnf(choices('a'));
  auto b = cache.gbnf(choices('b'));  // both in use: the test holds them
  a->precompute();
  EXPECT_GT(a->cached_states(), 0u);
  b->precompute();
  EXPECT_LE(cache.mask_bytes(), all);
  EXPECT_LT(b->cached_states(), unbounded->cached_states());
  EXPECT_GT(cache.masks_not_kept(), 0u);
  // b's masks, kept or not, are the unbounded grammar's, along a path through its states.
  Matcher bounded_matcher(b), unbounded_matcher(unbounded);
  for (const std::string step : {"", "b", "7", "9", "1", "9"}) {
    ASSERT_TRUE(bounded_matcher.advance_bytes(step) || step.empty());
    ASSERT_TRUE(unbounded_matcher.advance_bytes(step) || step.empty());
    std::vector<uint32_t> got(bounded_matcher.mask_words()), want(got.size());
    bounded_matcher.fill_mask(got);
    unbounded_matcher.fill_mask(want);
    EXPECT_EQ(got, want) << "after '" << step << "'";
  }
  // a's request ends; b's goes on. A lookup (b's) frees a's masks, not a itself.
  const CompiledGrammar* a_compiled = a.get();
  a.reset();
  const size_t b_kept = b->cached_states();
  EXPECT_EQ(cache.gbnf(choices('b')), b);
  EXPECT_LE(cache.mask_bytes(), all / 2);
  EXPECT_EQ(b->cached_states(), b_kept);  // in use: untouched
  b->precompute();
  EXPECT_GT(b->cached_states(), b_kept);  // room again
  const size_t compiles = cache.compiles();
  EXPECT_EQ(cache.gbnf(choices('a')).get(), a_compiled);  // still cached, masks to warm again
  EXPECT_EQ(cache.compiles(), compiles);
  // A cache that keeps only the latest grammar still keeps masks.
  EXPECT_EQ(GrammarCache(vocabulary, 64, 0).mask_budget(), GrammarCache::kMinMaskBytes);
}

// A refusal can take as long as a compile (a grammar found too large at the end): the
// same text is refused from the cache, with the same message, every time.
TEST(GrammarCache, ErrorsAreThrownEveryTimeFromOneEntry) {
  GrammarCache cache(testing::synthetic_vocabulary());
  std::string first;
  try {
    cache.json_schema(R"({"minProperties": 1})");
    ADD_FAILURE() << "accepted";
  } catch (const GrammarError& error) {
    first = error.what();
  }
  EXPECT_NE(first.find("minProperties"), std::string::npos) << first;
  EXPECT_EQ(cache.size(), 1u);
  try {
    cache.json_schema(R"({"minProperties": 1})");
    ADD_FAILURE() << "accepted";
  } catch (const GrammarError& error) {
    EXPECT_EQ(error.what(), first);
  }
  EXPECT_EQ(cache.size(), 1u);
  // A good text beside it is compiled as before.
  EXPECT_NE(cache.json_schema(R"({"type": "integer"})"), nullptr);
  EXPECT_EQ(cache.size(), 2u);
}

TEST(GrammarCache, ConcurrentRequestsGetOneEntry) {
  GrammarCache cache(testing::synthetic_vocabulary());
  std::vector<std::shared_ptr<const CompiledGrammar>> got(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] { got[i] = cache.json_schema(R"({"enum": [1, 2]})"); });
  for (auto& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g, cache.json_schema(R"({"enum": [1, 2]})"));
  EXPECT_EQ(cache.size(), 1u);
}

// One compile per text at a time: requests that arrive while a text compiles wait for
// that compile (QA: four requests with one new 6 s schema took four compiles' CPU).
TEST(GrammarCache, RequestsForATextBeingCompiledWaitForThatCompile) {
  GrammarCache cache(testing::synthetic_vocabulary());
  std::string text = "root ::= ";  // some milliseconds to compile: the threads overlap
  for (int i = 0; i < 2000; ++i) text += (i ? " | \"" : "\"") + std::to_string(i * 7919) + "\"";
  std::vector<std::shared_ptr<const CompiledGrammar>> got(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] { got[i] = cache.gbnf(text); });
  for (auto& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g, got[0]);
  EXPECT_EQ(cache.compiles(), 1u);
}

// A thread that defers compiles (the server's quick preparation threads) gets what is
// cached, and CompileDeferred where a compile would start; the text is then compiled on
// another thread as usual.
TEST(GrammarCache, AThreadThatDefersCompilesUsesOnlyWhatIsCached) {
  GrammarCache cache(testing::synthetic_vocabulary());
  const auto cached = cache.json_schema(R"({"type": "integer"})");
  {
    DeferCompiles quick;
    EXPECT_EQ(cache.json_schema(R"({"type": "integer"})"), cached);
    EXPECT_THROW(cache.json_schema(R"({"type": "string"})"), CompileDeferred);
    EXPECT_THROW(cache.regex("a+"), CompileDeferred);
  }
  EXPECT_EQ(cache.compiles(), 1u);
  EXPECT_NE(cache.json_schema(R"({"type": "string"})"), nullptr);
  EXPECT_EQ(cache.compiles(), 2u);
}

}  // namespace
}  // namespace tandem::grammar::TANDEM_UNITY_ID
