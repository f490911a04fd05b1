// infill_prompt: llama-server's format_infill token for token. The expected sequences are
// written out by hand from its rules, on make-model --fim's byte-level vocabulary, where a
// text's tokens are its bytes and the FIM tokens have fixed ids.
#include "server/infill_prompt.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "runner/gguf/gguf.h"
#include "runner/model/make_model.h"
#include "tests/common/test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using server::infill_prompt;
using server::InfillBudget;

constexpr int32_t kBos = 256, kPre = 258, kMid = 259, kSuf = 260, kPad = 261, kRepo = 262,
                  kSep = 263;

// An expected sequence: ids and texts (a text's tokens are its bytes) in order.
struct Seq {
  std::vector<int32_t> ids;
  Seq& id(int32_t token) {
    ids.push_back(token);
    return *this;
  }
  Seq& text(std::string_view bytes) {
    for (unsigned char c : bytes) ids.push_back(c);
    return *this;
  }
};

// make-model --fim's tokenizer (it adds BOS); with add_bos false, the same keys but that.
std::unique_ptr<Tokenizer> fim_tokenizer(bool add_bos = true) {
  ScratchDir dir;
  make_model::MakeModelOptions options;
  options.fim = true;
  options.out = dir.file("fim.gguf");
  make_model::write_random_model(options);
  if (add_bos) return Tokenizer::from_gguf(gguf::File::open(options.out));
  gguf::Writer writer;
  const gguf::File made = gguf::File::open(options.out);
  for (const auto& [key, value] : made.metadata())
    if (key.starts_with("tokenizer.") && key != "tokenizer.ggml.add_bos_token")
      writer.add(key, value);
  writer.add_bool("tokenizer.ggml.add_bos_token", false);
  writer.write(dir.file("vocab.gguf"));
  return Tokenizer::from_gguf(gguf::File::open(dir.file("vocab.gguf")));
}

// The byte vocabulary (<|bos|> is 256, and added) with `extra` tokens from id 258.
std::unique_ptr<Tokenizer> byte_tokenizer(const std::vector<std::string>& extra) {
  ScratchDir dir;
  std::vector<std::string> tokens = make_model::byte_level_tokens();
  tokens.insert(tokens.end(), extra.begin(), extra.end());
  gguf::Writer writer;
  writer.add_string("tokenizer.ggml.model", "gpt2");
  writer.add_string("tokenizer.ggml.pre", "default");
  writer.add_string_array("tokenizer.ggml.tokens", tokens);
  writer.add_string_array("tokenizer.ggml.merges", {});
  writer.add_uint32("tokenizer.ggml.bos_token_id", 256);
  writer.add_bool("tokenizer.ggml.add_bos_token", true);
  writer.write(dir.file("vocab.gguf"));
  return Tokenizer::from_gguf(gguf::File::open(dir.file("vocab.gguf")));
}

class InfillPrompt : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { tokenizer_ = fim_tokenizer().release(); }
  static void TearDownTestSuite() {
    delete tokenizer_;
    tokenizer_ = nullptr;
  }
  static const Tokenizer& tokenizer() { return *tokenizer_; }
  static constexpr InfillBudget kRoomy{2048, -1, 4096};

 private:
  static Tokenizer* tokenizer_;
};
Tokenizer* InfillPrompt::tokenizer_ = nullptr;

TEST_F(InfillPrompt, TheVocabularyEncodesTextAsItsBytes) {
  EXPECT_EQ(tokenizer().encode("ab\n", false, false), (std::vector<int32_t>{97, 98, 10}));
  EXPECT_TRUE(tokenizer().add_bos());
}

// Even without extra chunks the repository header and the current file's separator come
// first, in front of BOS.
TEST_F(InfillPrompt, NoExtraChunks) {
  const auto got = infill_prompt(tokenizer(), {"def f(", ")\n", "", {}}, kRoomy);
  const auto want = Seq{}
                        .id(kRepo)
                        .text("myproject\n")
                        .id(kSep)
                        .text("filename\n")
                        .id(kBos)
                        .id(kPre)
                        .text("def f(")
                        .id(kSuf)
                        .text(")\n")
                        .id(kMid)
                        .ids;
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, want);
}

TEST_F(InfillPrompt, ExtraChunksUnderTheirFileNames) {
  InfillInputs inputs{"a", "b", "", {}};
  inputs.extra.push_back({"lib/x.py", "x = 1\n"});
  inputs.extra.push_back(InfillChunk{.text = "y"});  // no name: "tmp"
  const auto want = Seq{}
                        .id(kRepo)
                        .text("myproject\n")
                        .id(kSep)
                        .text("lib/x.py\n")
                        .text("x = 1\n")
                        .id(kSep)
                        .text("tmp\n")
                        .text("y")
                        .id(kSep)
                        .text("filename\n")
                        .id(kBos)
                        .id(kPre)
                        .text("a")
                        .id(kSuf)
                        .text("b")
                        .id(kMid)
                        .ids;
  EXPECT_EQ(infill_prompt(tokenizer(), inputs, kRoomy), want);
}

// Control-token text is parsed in the prompt only: in the prefix, suffix and chunks (and
// their names) it stays bytes.
TEST_F(InfillPrompt, OnlyThePromptParsesControlTokenText) {
  InfillInputs inputs{"<|fim_pad|>", "<|fim_pad|>", "<|fim_pad|>z", {{"<|fim_pad|>", "q"}}};
  const auto want = Seq{}
                        .id(kRepo)
                        .text("myproject\n")
                        .id(kSep)
                        .text("<|fim_pad|>\n")
                        .text("q")
                        .id(kSep)
                        .text("filename\n")
                        .id(kBos)
                        .id(kPre)
                        .text("<|fim_pad|>")
                        .id(kPad)
                        .text("z")
                        .id(kSuf)
                        .text("<|fim_pad|>")
                        .id(kMid)
                        .ids;
  EXPECT_EQ(infill_prompt(tokenizer(), inputs, kRoomy), want);
}

// batch 16: the prefix keeps its last 12 tokens (3 * 16/4), the suffix its first
// 16/4 - 2 = 2, less one per prompt token; context 27 - 16 - 2 * 3 leaves the extra
// context its last 5 tokens.
TEST_F(InfillPrompt, SmallBudgetsTruncateEachPart) {
  const InfillInputs inputs{"0123456789abcdefgh", "XYZW", "", {{"a.py", "long chunk"}}};
  const auto want =
      Seq{}.text("name\n").id(kBos).id(kPre).text("6789abcdefgh").id(kSuf).text("XY").id(kMid).ids;
  EXPECT_EQ(infill_prompt(tokenizer(), inputs, {16, 3, 27}), want);
  // No predict given (-1): n_ctx - n_batch - 2 * -1, so context 19 leaves the same 5.
  EXPECT_EQ(infill_prompt(tokenizer(), inputs, {16, -1, 19}), want);

  InfillInputs with_prompt = inputs;
  with_prompt.prompt = "p";
  const auto shorter_suffix = Seq{}
                                  .text("name\n")
                                  .id(kBos)
                                  .id(kPre)
                                  .text("6789abcdefgh")
                                  .text("p")
                                  .id(kSuf)
                                  .text("X")
                                  .id(kMid)
                                  .ids;
  EXPECT_EQ(infill_prompt(tokenizer(), with_prompt, {16, 3, 27}), shorter_suffix);
  // Prompt tokens beyond the suffix's share take nothing more from anything.
  with_prompt.prompt = "ppppp";
  const auto no_suffix = Seq{}
                             .text("name\n")
                             .id(kBos)
                             .id(kPre)
                             .text("6789abcdefgh")
                             .text("ppppp")
                             .id(kSuf)
                             .id(kMid)
                             .ids;
  EXPECT_EQ(infill_prompt(tokenizer(), with_prompt, {16, 3, 27}), no_suffix);
}

// A batch under 4 leaves no room for prefix or suffix; a context the batch and the reply
// fill leaves none for the extra context.
TEST_F(InfillPrompt, NoRoomLeavesOnlyTheMarkers) {
  const InfillInputs inputs{"prefix", "suffix", "", {{"a.py", "chunk"}}};
  const auto want = Seq{}.id(kBos).id(kPre).id(kSuf).id(kMid).ids;
  EXPECT_EQ(infill_prompt(tokenizer(), inputs, {3, 100, 50}), want);
}

TEST_F(InfillPrompt, SpmInfillPutsTheSuffixFirst) {
  const auto want = Seq{}
                        .id(kRepo)
                        .text("myproject\n")
                        .id(kSep)
                        .text("filename\n")
                        .id(kBos)
                        .id(kSuf)
                        .text("b")
                        .id(kPre)
                        .text("a")
                        .text("p")
                        .id(kMid)
                        .ids;
  EXPECT_EQ(infill_prompt(tokenizer(), {"a", "b", "p", {}}, kRoomy, true), want);
}

TEST(InfillPromptVocabularies, WithoutAddBosThereIsNoBos) {
  const auto tokenizer = fim_tokenizer(false);
  ASSERT_FALSE(tokenizer->add_bos());
  const auto want = Seq{}
                        .id(kRepo)
                        .text("myproject\n")
                        .id(kSep)
                        .text("filename\n")
                        .id(kPre)
                        .text("a")
                        .id(kSuf)
                        .text("b")
                        .id(kMid)
                        .ids;
  EXPECT_EQ(infill_prompt(*tokenizer, {"a", "b", "", {}}, {2048, -1, 4096}), want);
}

// StarCoder's markers have no repository or file separator token: no header, each chunk
// after llama-server's snippet separator, and no current file name.
TEST(InfillPromptVocabularies, WithoutFileSeparatorsChunksFollowASnippetLine) {
  const auto tokenizer =
      byte_tokenizer({"<fim_prefix>", "<fim_middle>", "<fim_suffix>"});  // ids 258, 259, 260
  ASSERT_EQ(tokenizer->fim().prefix, 258);
  ASSERT_EQ(tokenizer->fim().file_sep, -1);
  InfillInputs inputs{"a", "b", "", {{"x.py", "x"}, {"y.py", "y"}}};
  const auto want = Seq{}
                        .text("\n\n--- snippet ---\n\n")
                        .text("x")
                        .text("\n\n--- snippet ---\n\n")
                        .text("y")
                        .id(kBos)
                        .id(258)
                        .text("a")
                        .id(260)
                        .text("b")
                        .id(259)
                        .ids;
  EXPECT_EQ(infill_prompt(*tokenizer, inputs, {2048, -1, 4096}), want);
}

TEST(InfillPromptVocabularies, WithoutFimTokensThereIsNoPrompt) {
  const auto plain = byte_tokenizer({});
  EXPECT_EQ(infill_prompt(*plain, {"a", "b", "", {}}, {2048, -1, 4096}), std::nullopt);
  const auto no_middle = byte_tokenizer({"<|fim_prefix|>", "<|fim_suffix|>"});
  EXPECT_EQ(infill_prompt(*no_middle, {"a", "b", "", {}}, {2048, -1, 4096}), std::nullopt);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
