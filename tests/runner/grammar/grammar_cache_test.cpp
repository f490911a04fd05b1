// GrammarCache: one compilation per source text and vocabulary, shared; least recently
// used entries evicted; errors cached as well, and thrown again from the cache.

#include "runner/grammar/grammar_cache.h"

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

}  // namespace
}  // namespace tandem::grammar::TANDEM_UNITY_ID
