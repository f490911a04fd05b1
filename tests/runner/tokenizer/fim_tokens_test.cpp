// Tokenizer::fim(): the fill-in-the-middle ids /infill builds its prompt from, found as
// llama.cpp's loader finds them: the tokenizer.ggml.fim_*_token_id keys (and the deprecated
// prefix/suffix/middle_token_id, which win), else the families' spellings of the tokens.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runner/gguf/gguf.h"
#include "runner/model/make_model.h"
#include "runner/tokenizer/tokenizer.h"
#include "tests/common/test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

// make-model --fim's ids: the 256 bytes, <|bos|>, <|eos|>, then Qwen2.5-Coder's order.
constexpr int32_t kPre = 258, kMid = 259, kSuf = 260, kPad = 261, kRepo = 262, kSep = 263;

std::filesystem::path made_model(const ScratchDir& dir, bool fim) {
  make_model::MakeModelOptions options;
  options.fim = fim;
  options.out = dir.file(fim ? "fim.gguf" : "plain.gguf");
  make_model::write_random_model(options);
  return options.out;
}

// A vocabulary file: `from`'s tokenizer.* keys but those in `drop` and those `uint32_keys`
// replaces, then `uint32_keys`.
std::unique_ptr<Tokenizer> vocab_from(const ScratchDir& dir, const std::filesystem::path& from,
                                      const std::set<std::string>& drop,
                                      const std::map<std::string, uint32_t>& uint32_keys) {
  gguf::Writer writer;
  const gguf::File file = gguf::File::open(from);
  for (const auto& [key, value] : file.metadata())
    if (key.starts_with("tokenizer.") && !drop.contains(key) && !uint32_keys.contains(key))
      writer.add(key, value);
  for (const auto& [key, value] : uint32_keys) writer.add_uint32(key, value);
  writer.write(dir.file("vocab.gguf"));
  return Tokenizer::from_gguf(gguf::File::open(dir.file("vocab.gguf")));
}

// A byte-level vocabulary of the 256 bytes, <|bos|>, <|eos|> and `extra` (normal type).
std::unique_ptr<Tokenizer> byte_vocab_with(const ScratchDir& dir,
                                           const std::vector<std::string>& extra) {
  std::vector<std::string> tokens = make_model::byte_level_tokens();
  tokens.insert(tokens.end(), extra.begin(), extra.end());
  gguf::Writer writer;
  writer.add_string("tokenizer.ggml.model", "gpt2");
  writer.add_string("tokenizer.ggml.pre", "default");
  writer.add_string_array("tokenizer.ggml.tokens", tokens);
  writer.add_int32_array("tokenizer.ggml.token_type", std::vector<int32_t>(tokens.size(), 1));
  writer.add_string_array("tokenizer.ggml.merges", {});
  writer.write(dir.file("bytes.gguf"));
  return Tokenizer::from_gguf(gguf::File::open(dir.file("bytes.gguf")));
}

const std::set<std::string> kFimKeys = {
    "tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.fim_suf_token_id",
    "tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.fim_pad_token_id",
    "tokenizer.ggml.fim_rep_token_id", "tokenizer.ggml.fim_sep_token_id"};

TEST(FimTokens, MakeModelFimNamesItsTokensByKeys) {
  ScratchDir dir;
  const gguf::File file = gguf::File::open(made_model(dir, true));
  EXPECT_EQ(file.get_int("tokenizer.ggml.fim_pre_token_id"), kPre);
  EXPECT_EQ(file.get_int("tokenizer.ggml.fim_suf_token_id"), kSuf);
  EXPECT_EQ(file.get_int("tokenizer.ggml.fim_mid_token_id"), kMid);
  EXPECT_EQ(file.get_int("tokenizer.ggml.fim_pad_token_id"), kPad);
  EXPECT_EQ(file.get_int("tokenizer.ggml.fim_rep_token_id"), kRepo);
  EXPECT_EQ(file.get_int("tokenizer.ggml.fim_sep_token_id"), kSep);
  EXPECT_EQ(file.get_int("llama.vocab_size"), 264);
  EXPECT_EQ(file.find_tensor("token_embd.weight")->dims, (std::vector<uint64_t>{64, 264}));
  EXPECT_EQ(file.get_int_array("tokenizer.ggml.token_type")[kSep], 3);  // control

  const auto tokenizer = Tokenizer::from_gguf(file);
  const Tokenizer::FimTokens& fim = tokenizer->fim();
  EXPECT_TRUE(fim.usable());
  EXPECT_EQ(
      std::vector<int32_t>({fim.prefix, fim.suffix, fim.middle, fim.pad, fim.repo, fim.file_sep}),
      std::vector<int32_t>({kPre, kSuf, kMid, kPad, kRepo, kSep}));
  EXPECT_EQ(tokenizer->token_text(kRepo), "<|repo_name|>");
  // Control tokens: matched in text only when asked, and a FIM completion ends at the
  // separators (as llama.cpp's end-of-generation set has them).
  EXPECT_EQ(tokenizer->encode("<|fim_prefix|>", false, true), std::vector<int32_t>{kPre});
  EXPECT_EQ(tokenizer->encode("<|fim_prefix|>", false, false).size(), 14u);
  const std::vector<int32_t>& eog = tokenizer->eog_ids();
  EXPECT_EQ(eog, (std::vector<int32_t>{257, kPad, kRepo, kSep}));
}

TEST(FimTokens, MakeModelWithoutFimHasNone) {
  ScratchDir dir;
  const gguf::File file = gguf::File::open(made_model(dir, false));
  EXPECT_FALSE(file.has("tokenizer.ggml.fim_pre_token_id"));
  EXPECT_EQ(file.get_string_array("tokenizer.ggml.tokens").size(), 258u);
  const auto tokenizer = Tokenizer::from_gguf(file);
  const Tokenizer::FimTokens& fim = tokenizer->fim();
  EXPECT_FALSE(fim.usable());
  EXPECT_EQ(
      std::vector<int32_t>({fim.prefix, fim.suffix, fim.middle, fim.pad, fim.repo, fim.file_sep}),
      std::vector<int32_t>(6, -1));
}

TEST(FimTokens, WithoutKeysTheTokensAreFoundByTheirText) {
  ScratchDir dir;
  const auto tokenizer = vocab_from(dir, made_model(dir, true), kFimKeys, {});
  const Tokenizer::FimTokens& fim = tokenizer->fim();
  EXPECT_EQ(
      std::vector<int32_t>({fim.prefix, fim.suffix, fim.middle, fim.pad, fim.repo, fim.file_sep}),
      std::vector<int32_t>({kPre, kSuf, kMid, kPad, kRepo, kSep}));
}

// CodeLlama's and StarCoder's spellings, typed normal by their converter: found, and made
// control as llama.cpp makes them, so a user's "<PRE>" stays text.
TEST(FimTokens, OtherFamiliesSpellingsAreFoundAndMadeControl) {
  ScratchDir dir;
  const auto codellama = byte_vocab_with(dir, {"<PRE>", "<SUF>", "<MID>", "<EOT>"});
  const Tokenizer::FimTokens& fim = codellama->fim();
  EXPECT_EQ(
      std::vector<int32_t>({fim.prefix, fim.suffix, fim.middle, fim.pad, fim.repo, fim.file_sep}),
      std::vector<int32_t>({258, 259, 260, -1, -1, -1}));
  EXPECT_TRUE(fim.usable());
  EXPECT_EQ(codellama->encode("<PRE>", false, false).size(), 5u);
  EXPECT_EQ(codellama->encode("<PRE>", false, true), std::vector<int32_t>{258});

  const auto starcoder =
      byte_vocab_with(dir, {"<fim_middle>", "<fim_suffix>", "<fim_prefix>", "<fim_pad>"});
  EXPECT_EQ(starcoder->fim().prefix, 260);
  EXPECT_EQ(starcoder->fim().suffix, 259);
  EXPECT_EQ(starcoder->fim().middle, 258);
  EXPECT_EQ(starcoder->fim().pad, 261);
  EXPECT_EQ(starcoder->fim().file_sep, -1);

  const auto partial = byte_vocab_with(dir, {"<|fim_prefix|>", "<|fim_suffix|>"});
  EXPECT_FALSE(partial->fim().usable());  // no middle
}

TEST(FimTokens, AKeyWinsOverTheTextAndAnIdOutsideTheVocabularyIsIgnored) {
  ScratchDir dir;
  const auto tokenizer = vocab_from(dir, made_model(dir, true), {},
                                    {{"tokenizer.ggml.fim_pre_token_id", 65},
                                     {"tokenizer.ggml.fim_suf_token_id", 9999},
                                     {"tokenizer.ggml.fim_rep_token_id", 264}});
  EXPECT_EQ(tokenizer->fim().prefix, 65);
  EXPECT_EQ(tokenizer->fim().suffix, kSuf);  // out of range: found by its text instead
  EXPECT_EQ(tokenizer->fim().repo, kRepo);
}

// llama.cpp reads the deprecated keys after the fim_* ones, so they win where both are.
TEST(FimTokens, TheDeprecatedPrefixSuffixMiddleKeysWin) {
  ScratchDir dir;
  const auto tokenizer = vocab_from(dir, made_model(dir, true), {},
                                    {{"tokenizer.ggml.prefix_token_id", 65},
                                     {"tokenizer.ggml.suffix_token_id", 66},
                                     {"tokenizer.ggml.middle_token_id", 100000}});
  EXPECT_EQ(tokenizer->fim().prefix, 65);
  EXPECT_EQ(tokenizer->fim().suffix, 66);
  EXPECT_EQ(tokenizer->fim().middle, kMid);  // out of range: the fim_mid key stands
}

// A separator the metadata names ends generation even where its text is no known spelling.
TEST(FimTokens, ASeparatorNamedByKeyEndsGeneration) {
  ScratchDir dir;
  const auto tokenizer =
      vocab_from(dir, made_model(dir, false), {}, {{"tokenizer.ggml.fim_sep_token_id", 65}});
  EXPECT_EQ(tokenizer->fim().file_sep, 65);
  EXPECT_EQ(tokenizer->eog_ids(), (std::vector<int32_t>{65, 257}));
}

// The end-of-turn id that the infill sampler answers with comes from the metadata's key.
TEST(FimTokens, TheEndOfTurnIdIsTheOneTheKeyNames) {
  ScratchDir dir;
  EXPECT_EQ(vocab_from(dir, made_model(dir, false), {}, {})->eot_id(), -1);
  const auto named =
      vocab_from(dir, made_model(dir, false), {}, {{"tokenizer.ggml.eot_token_id", 66}});
  EXPECT_EQ(named->eot_id(), 66);
  EXPECT_NE(std::find(named->eog_ids().begin(), named->eog_ids().end(), 66),
            named->eog_ids().end());
  TANDEM_REQUIRE_SHARED();
  const auto llama3 =
      Tokenizer::from_gguf(gguf::File::open(*shared_dir() / "vocab" / "ggml-vocab-llama3.gguf"));
  EXPECT_EQ(llama3->eot_id(), llama3->find_token("<|eot_id|>"));
}

TEST(FimTokens, LlamaSpmHasNone) {
  TANDEM_REQUIRE_SHARED();
  const auto tokenizer =
      Tokenizer::from_gguf(gguf::File::open(*shared_dir() / "vocab" / "ggml-vocab-llama-spm.gguf"));
  EXPECT_FALSE(tokenizer->fim().usable());
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
