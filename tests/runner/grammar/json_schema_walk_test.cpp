// The JSON Schema compiler over the schema suite: seeded random walks through each
// grammar (allowed tokens sampled from the masks until the grammar ends) produce texts
// that parse as JSON and validate against the schema with the tests' own validator, on the
// synthetic vocabulary and on the ../shared ones; along the way the masks equal the
// brute-force check.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runner/grammar/grammar.h"
#include "runner/grammar/matcher.h"
#include "tests/runner/grammar/grammar_test_support.h"
#include "tests/runner/grammar/schema_suite.h"
#include "tests/runner/grammar/schema_validator.h"

namespace tandem::grammar::TANDEM_UNITY_ID {
namespace {

using testing::brute_force_mask;
using testing::random_walk;
using testing::schema_suite;

struct WalkStats {
  int walks = 0;
  int brute_force_checks = 0;
};

// `walks` walks per schema; every `check_every`-th mask is compared with brute force
// (0: never).
void walk_the_suite(const std::shared_ptr<const Vocabulary>& vocab, int walks, size_t check_every,
                    size_t free_tokens, WalkStats& stats) {
  for (const auto& [name, text] : schema_suite()) {
    SCOPED_TRACE(name);
    std::shared_ptr<const Grammar> grammar;
    EXPECT_NO_THROW(grammar = compile_json_schema(text));
    if (!grammar) continue;
    const auto schema = nlohmann::json::parse(text);
    const auto compiled = std::make_shared<const CompiledGrammar>(grammar, vocab);
    std::mt19937_64 rng(std::hash<std::string>()(name));
    for (int w = 0; w < walks; ++w) {
      Matcher matcher(compiled);
      size_t step = 0;
      const auto walk = random_walk(matcher, rng, {.free_tokens = free_tokens, .max_tokens = 3000},
                                    [&](const Matcher& m, const std::vector<uint32_t>& mask) {
                                      if (check_every == 0 || step++ % check_every != 0) return;
                                      ++stats.brute_force_checks;
                                      ASSERT_EQ(mask, brute_force_mask(m))
                                          << "after " << m.steps() << " tokens";
                                    });
      ASSERT_TRUE(walk.ended) << "the walk did not reach the end: " << walk.text;
      const auto value = nlohmann::json::parse(walk.text, nullptr, false);
      ASSERT_FALSE(value.is_discarded()) << "not JSON: " << walk.text;
      const auto error = testing::validate(value, schema);
      EXPECT_FALSE(error.has_value()) << *error << "\ntext: " << walk.text;
      ++stats.walks;
    }
  }
}

TEST(JsonSchemaWalks, EveryWalkParsesAndValidatesOnTheSyntheticVocabulary) {
  WalkStats stats;
  walk_the_suite(testing::synthetic_vocabulary(), 8, 3, 40, stats);
  EXPECT_GE(stats.walks, 8 * 30);
  EXPECT_GT(stats.brute_force_checks, 1000);
}

TEST(JsonSchemaWalks, EveryWalkParsesAndValidatesOnLlamaSpm32k) {
  const auto vocab = testing::shared_vocabulary("llama-spm");
  if (!vocab) GTEST_SKIP() << "../shared/vocab is absent";
  WalkStats stats;
  walk_the_suite(vocab, 3, 25, 30, stats);
  EXPECT_GE(stats.walks, 3 * 30);
}

TEST(JsonSchemaWalks, EveryWalkParsesAndValidatesOnLlama3_128k) {
  const auto vocab = testing::shared_vocabulary("llama3");
  if (!vocab) GTEST_SKIP() << "../shared/vocab is absent";
  WalkStats stats;
  walk_the_suite(vocab, 1, 0, 30, stats);
  EXPECT_GE(stats.walks, 30);
}

TEST(JsonSchemaWalks, TheSuiteHasAtLeastThirtySchemas) { EXPECT_GE(schema_suite().size(), 30u); }

}  // namespace
}  // namespace tandem::grammar::TANDEM_UNITY_ID
