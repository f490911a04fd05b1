// DRY's sequence breakers in token form (server/dry_breakers.h), as llama.cpp's
// get_overlapping_token_sequences makes them: on make-model's byte-level vocabulary, where
// the expected heads and tails are written out by hand, and on the real Llama 3 vocabulary
// (../shared), where every token whose text holds a breaker must be a single-token one.
#include "server/dry_breakers.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runner/gguf/gguf.h"
#include "runner/model/make_model.h"
#include "tests/common/test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using server::make_dry_breakers;

std::unique_ptr<Tokenizer> byte_tokenizer() {
  ScratchDir dir;
  make_model::MakeModelOptions options;
  options.fim = true;
  options.out = dir.file("fim.gguf");
  make_model::write_random_model(options);
  return Tokenizer::from_gguf(gguf::File::open(options.out));
}

using Tails = std::vector<std::vector<int32_t>>;

TEST(DryBreakers, HeadsAndTailsOnAByteVocabulary) {
  const auto tokenizer = byte_tokenizer();
  const DryBreakers b = make_dry_breakers(*tokenizer, {"\n", "ab", "fim"});
  // "\n" is a token of its own; 'a' ends with the start of "ab" and 'f' of "fim": the rest
  // is spelled by the following tokens (bytes here).
  EXPECT_EQ(b.tails().at('\n'), (Tails{{}}));
  EXPECT_EQ(b.tails().at('a'), (Tails{{'b'}}));
  EXPECT_EQ(b.tails().at('f'), (Tails{{'i', 'm'}}));
  EXPECT_TRUE(b.single_token('\n'));
  EXPECT_FALSE(b.single_token('a'));
  EXPECT_EQ(b.tails().count('b'), 0u);
  EXPECT_EQ(b.tails().count('i'), 0u);
  // The FIM control tokens' texts (<|fim_prefix|>, ...) hold "fim": single-token breakers.
  size_t specials = 0;
  for (int32_t id = 256; id < tokenizer->vocab_size(); ++id) {
    const std::string text = tokenizer->token_bytes(id, /*render_special=*/true);
    const bool holds = text.find("fim") != std::string::npos;
    EXPECT_EQ(b.single_token(id), holds) << text;
    specials += holds;
  }
  EXPECT_GT(specials, 0u);
  EXPECT_EQ(b.tails().size(), 3 + specials);
}

TEST(DryBreakers, EveryLlama3TokenHoldingABreakerIsOne) {
  TANDEM_REQUIRE_SHARED();
  const auto tokenizer =
      Tokenizer::from_gguf(gguf::File::open(*shared_dir() / "vocab" / "ggml-vocab-llama3.gguf"));
  const std::vector<std::string> strings = {"\n", ":", "\"", "*", "User:"};
  const DryBreakers b = make_dry_breakers(*tokenizer, strings);
  size_t singles = 0;
  for (int32_t id = 0; id < tokenizer->vocab_size(); ++id) {
    const std::string text = tokenizer->token_bytes(id, /*render_special=*/true);
    bool holds = false;
    for (const std::string& s : strings) holds = holds || text.find(s) != std::string::npos;
    ASSERT_EQ(b.single_token(id), holds) << id << " " << text;
    singles += holds;
  }
  EXPECT_GT(singles, 1000u);
  // "User" (one token) heads "User:", followed by ":" as the tokenizer spells it.
  const std::vector<int32_t> user = tokenizer->encode("User", false, false);
  ASSERT_EQ(user.size(), 1u);
  const Tails& tails = b.tails().at(user[0]);
  EXPECT_NE(std::find(tails.begin(), tails.end(), tokenizer->encode(":", false, false)),
            tails.end());
}

TEST(DryBreakers, TheCacheSharesAListsTokens) {
  const auto tokenizer = byte_tokenizer();
  server::DryBreakerCache cache(*tokenizer);
  const auto a = cache.get({"\n", ":"});
  EXPECT_EQ(cache.get({"\n", ":"}), a);
  const auto b = cache.get({":"});
  EXPECT_NE(b, a);
  EXPECT_TRUE(a->single_token('\n'));
  EXPECT_FALSE(b->single_token('\n'));
  // More lists than it keeps: the first is made again, the same.
  for (int i = 0; i < 10; ++i) cache.get({std::to_string(i)});
  const auto again = cache.get({"\n", ":"});
  EXPECT_EQ(again->tails(), a->tails());
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
