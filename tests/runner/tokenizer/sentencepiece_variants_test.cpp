// The SentencePiece variants of Gemma and Phi-3 on small vocabularies built in memory:
// no space prefix (Gemma's tokenizer.ggml.add_space_prefix = false), BOS/EOS by metadata,
// byte fallback, user-defined tokens, and Phi-3's special tokens that swallow the
// whitespace after them. Expected ids follow llama.cpp's llm_tokenizer_spm step by step.

#include <cstdio>

#include <gtest/gtest.h>

#include "runner/gguf/gguf.h"
#include "runner/tokenizer/tokenizer.h"
#include "runner/tokenizer/vocab.h"
#include "tests/common/test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

constexpr int32_t kUnk = 0, kBos = 1, kEos = 2;
constexpr int32_t kByte0 = 3;  // <0x00> .. <0xFF> are ids 3 .. 258

// <unk> <s> </s>, the 256 byte tokens, then pieces with their scores (higher merges
// first) and two added tokens.
TokenizerVocab small_vocab() {
  TokenizerVocab vocab;
  vocab.model = TokenizerModel::kSentencePiece;
  const auto add = [&](std::string text, float score, TokenType type) {
    vocab.tokens.push_back(std::move(text));
    vocab.scores.push_back(score);
    vocab.types.push_back(type);
  };
  add("<unk>", 0, TokenType::kUnknown);
  add("<s>", 0, TokenType::kControl);
  add("</s>", 0, TokenType::kControl);
  for (int byte = 0; byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", byte);
    add(name, 0, TokenType::kByte);
  }
  for (auto [text, score] :
       std::initializer_list<std::pair<const char*, float>>{{"Hi", -1},
                                                            {"\xE2\x96\x81y", -2},
                                                            {"\xE2\x96\x81yo", -3},
                                                            {"yo", -4},
                                                            {"\xE2\x96\x81H", -5},
                                                            {"\xE2\x96\x81Hi", -6},
                                                            {"\xE2\x96\x81", -10},
                                                            {"H", -11},
                                                            {"i", -12},
                                                            {"y", -13},
                                                            {"o", -14}})
    add(text, score, TokenType::kNormal);
  add("<h1>", 0, TokenType::kUserDefined);
  add("<|user|>", 0, TokenType::kControl);
  vocab.bos_id = kBos;
  vocab.eos_id = kEos;
  vocab.unk_id = kUnk;
  return vocab;
}

struct Ids {
  const Tokenizer& t;
  int32_t operator()(const char* text) const { return t.find_token(text); }
};

std::unique_ptr<Tokenizer> gemma_style(TokenizerVocab vocab = small_vocab()) {
  vocab.add_space_prefix = false;
  return make_tokenizer(std::move(vocab));
}

TEST(SentencePieceVariants, WithoutSpacePrefixTheFirstWordHasNoSpaceMark) {
  // "Hi▁yo": H+i (-1) merges first, then ▁+y (-2), then ▁y+o (-3); yo (-4) is stale.
  const auto gemma = gemma_style();
  const Ids id{*gemma};
  EXPECT_EQ(gemma->encode("Hi yo", false, false),
            (std::vector<int32_t>{id("Hi"), id("\xE2\x96\x81yo")}));
  // The same text with the prefix: "▁Hi▁yo" ends with ▁+Hi (-6) after ▁H (-5) went stale.
  const auto llama = make_tokenizer(small_vocab());
  EXPECT_EQ(llama->encode("Hi yo", false, false),
            (std::vector<int32_t>{id("\xE2\x96\x81Hi"), id("\xE2\x96\x81yo")}));
}

TEST(SentencePieceVariants, WithoutSpacePrefixNothingIsAddedAfterSpecialTokensEither) {
  const auto gemma = gemma_style();
  const Ids id{*gemma};
  EXPECT_EQ(gemma->encode("<s>Hi", false, true), (std::vector<int32_t>{kBos, id("Hi")}));
  EXPECT_EQ(gemma->encode("<h1>Hi", false, false), (std::vector<int32_t>{id("<h1>"), id("Hi")}));
  // With the prefix, llama.cpp adds one after every special token, user-defined ones too.
  const auto llama = make_tokenizer(small_vocab());
  EXPECT_EQ(llama->encode("<h1>Hi", false, false),
            (std::vector<int32_t>{id("<h1>"), id("\xE2\x96\x81Hi")}));
}

TEST(SentencePieceVariants, WithoutSpacePrefixALeadingSpaceIsTextAndDecodeKeepsIt) {
  const auto gemma = gemma_style();
  const Ids id{*gemma};
  const std::vector<int32_t> ids = gemma->encode(" Hi", false, false);
  EXPECT_EQ(ids, (std::vector<int32_t>{id("\xE2\x96\x81Hi")}));
  EXPECT_EQ(gemma->decode(ids), " Hi");
  const auto llama = make_tokenizer(small_vocab());
  EXPECT_EQ(llama->decode({id("\xE2\x96\x81Hi")}), "Hi");  // its own prefix, dropped
}

TEST(SentencePieceVariants, CharactersNoTokenCoversFallBackToByteTokens) {
  // "Hi▁é": é (C3 A9) is no token, so its bytes come out; ▁ alone is a token.
  const auto gemma = gemma_style();
  const Ids id{*gemma};
  EXPECT_EQ(gemma->encode("Hi \xC3\xA9", false, false),
            (std::vector<int32_t>{id("Hi"), id("\xE2\x96\x81"), kByte0 + 0xC3, kByte0 + 0xA9}));
  EXPECT_EQ(gemma->decode(gemma->encode("Hi \xC3\xA9", false, false)), "Hi \xC3\xA9");
}

TEST(SentencePieceVariants, AddBosAndAddEosFollowTheMetadata) {
  TokenizerVocab vocab = small_vocab();
  vocab.add_bos = false;
  vocab.add_eos = true;
  const auto tokenizer = gemma_style(vocab);
  EXPECT_EQ(tokenizer->encode("Hi", true, false),
            (std::vector<int32_t>{tokenizer->find_token("Hi"), kEos}));
  EXPECT_EQ(tokenizer->encode("Hi", false, false),
            (std::vector<int32_t>{tokenizer->find_token("Hi")}));
  EXPECT_EQ(gemma_style()->encode("Hi", true, false),  // no keys: BOS, no EOS
            (std::vector<int32_t>{kBos, tokenizer->find_token("Hi")}));
}

TEST(SentencePieceVariants, RstripTokensSwallowTheWhitespaceAfterThem) {
  TokenizerVocab vocab = small_vocab();
  const int32_t user = static_cast<int32_t>(vocab.tokens.size()) - 1;
  vocab.rstrip_ids = {user};
  const auto phi3 = make_tokenizer(vocab);
  const Ids id{*phi3};
  // "\n \t" after <|user|> is dropped; the text after it still gets the space prefix.
  EXPECT_EQ(phi3->encode("<|user|>\n \tHi", false, true),
            (std::vector<int32_t>{user, id("\xE2\x96\x81Hi")}));
  EXPECT_EQ(phi3->encode("<|user|>\n", false, true), (std::vector<int32_t>{user}));
  // Only after the token, and only when it is split out.
  EXPECT_EQ(phi3->encode("Hi <|user|>", false, true),
            (std::vector<int32_t>{id("\xE2\x96\x81Hi"), id("\xE2\x96\x81"), user}));
  const auto plain = make_tokenizer(small_vocab());
  EXPECT_EQ(plain->encode("<|user|>\nHi", false, true),
            (std::vector<int32_t>{user, id("\xE2\x96\x81"), kByte0 + '\n', id("Hi")}));
}

gguf::Writer phi3_like_file(const std::string& general_name) {
  const TokenizerVocab vocab = small_vocab();
  gguf::Writer writer;
  writer.add_string("general.architecture", "phi3");
  writer.add_string("general.name", general_name);
  writer.add_string("tokenizer.ggml.model", "llama");
  writer.add_string_array("tokenizer.ggml.tokens", vocab.tokens);
  writer.add_float32_array("tokenizer.ggml.scores", vocab.scores);
  std::vector<int32_t> types;
  for (TokenType type : vocab.types) types.push_back(static_cast<int32_t>(type));
  writer.add_int32_array("tokenizer.ggml.token_type", types);
  return writer;
}

TEST(SentencePieceVariants, FromGgufMarksPhi3SpecialTokensRstripByModelNameAsLlamaCppDoes) {
  testing::ScratchDir dir;
  phi3_like_file("Phi-3 Mini 4k Instruct").write(dir.file("phi3.gguf"));
  phi3_like_file("Phi 3 Mini").write(dir.file("other.gguf"));
  const auto phi3 = Tokenizer::from_gguf(gguf::File::open(dir.file("phi3.gguf")));
  const auto other = Tokenizer::from_gguf(gguf::File::open(dir.file("other.gguf")));
  const Ids id{*phi3};
  const int32_t user = id("<|user|>");
  const int32_t h1 = id("<h1>");
  EXPECT_EQ(phi3->encode("<|user|>\nHi", false, true),
            (std::vector<int32_t>{user, id("\xE2\x96\x81Hi")}));
  EXPECT_EQ(phi3->encode("<h1> Hi", false, false),  // user-defined: split out, so stripped
            (std::vector<int32_t>{h1, id("\xE2\x96\x81Hi")}));
  // <s> keeps the space after it, as llama.cpp excepts it (with <unk> and <|endoftext|>).
  EXPECT_EQ(phi3->encode("<s> Hi", false, true),
            (std::vector<int32_t>{kBos, id("\xE2\x96\x81"), id("\xE2\x96\x81Hi")}));
  // llama.cpp looks for "phi-3" or "phi3" in the lowercased general.name, nothing else.
  EXPECT_EQ(other->encode("<|user|>\nHi", false, true),
            (std::vector<int32_t>{user, id("\xE2\x96\x81"), kByte0 + '\n', id("Hi")}));
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
