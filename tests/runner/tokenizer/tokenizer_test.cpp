// Tokenizer behaviour beyond the shared vectors: round trips, special tokens, BOS/EOS,
// end-of-generation ids, token texts and bytes, vocabularies built in memory, and the
// errors from_gguf reports.

#include "runner/tokenizer/tokenizer.h"

#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "runner/gguf/gguf.h"
#include "runner/tokenizer/utf8.h"
#include "runner/tokenizer/vocab.h"
#include "tests/common/test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

std::unique_ptr<Tokenizer> shared_vocab(const std::string& name) {
  return Tokenizer::from_gguf(
      gguf::File::open(*testing::shared_dir() / "vocab" / ("ggml-vocab-" + name + ".gguf")));
}

const std::vector<std::string>& round_trip_texts() {
  static const std::vector<std::string> texts = {
      "",
      "Hello world",
      " leading space",
      "  two leading spaces and trailing  ",
      "tabs\tand\nnewlines\r\n\n",
      "Numbers 1234567890 and 3.14159",
      "我想在apple工作1314151天～",
      "日本語のテキストと한국어",
      "emoji 🦙🚀 and a ZWJ sequence 😶‍🌫️ 👩‍👩‍👧",
      "combining marks: e\xCC\x81 n\xCC\x83 a\xCC\x8A\xCC\x81",
      "нещо на Български",
      "កាន់តែពិសេសអាចខលចេញ",
      "Cửa Việt ½ ∑ ≠ →",
      "<s> looks special but is plain text </s>",
      "'s 're 'll y'all ''' \"quoted\"",
  };
  return texts;
}

TEST(Tokenizer, SentencePieceRoundTripsVariedText) {
  TANDEM_REQUIRE_SHARED();
  const auto tokenizer = shared_vocab("llama-spm");
  for (const std::string& text : round_trip_texts()) {
    EXPECT_EQ(tokenizer->decode(tokenizer->encode(text, false, false)), text);
    EXPECT_EQ(tokenizer->decode(tokenizer->encode(text, true, false)), text);
  }
}

// join_pieces (llama-server's /detokenize) keeps SentencePiece's leading space, so pieces
// joined one token at a time give the whole; decode drops it, as a text's decode should.
TEST(Tokenizer, JoinedPiecesKeepTheLeadingSpaceThatDecodeDrops) {
  TANDEM_REQUIRE_SHARED();
  const auto tokenizer = shared_vocab("llama-spm");
  const std::vector<int32_t> ids = tokenizer->encode("Hello world", true, false);
  ASSERT_EQ(ids.front(), tokenizer->bos_id());
  EXPECT_EQ(tokenizer->decode(ids), "Hello world");
  EXPECT_EQ(tokenizer->join_pieces(ids), " Hello world");
  EXPECT_EQ(tokenizer->join_pieces(ids, /*render_special=*/true), "<s> Hello world");
  std::string one_by_one;
  for (int32_t id : ids) one_by_one += tokenizer->join_pieces({id});
  EXPECT_EQ(one_by_one, " Hello world");
  const std::vector<int32_t> e_acute = tokenizer->encode("é", false, false);
  EXPECT_EQ(tokenizer->join_pieces(e_acute), " é");
}

TEST(Tokenizer, ByteLevelBpeRoundTripsVariedText) {
  TANDEM_REQUIRE_SHARED();
  const auto tokenizer = shared_vocab("gpt-2");
  for (const std::string& text : round_trip_texts())
    EXPECT_EQ(tokenizer->decode(tokenizer->encode(text, false, false)), text);
}

TEST(Tokenizer, ArbitraryBytesEncodeAndDecodeToTheirSanitizedSelves) {
  TANDEM_REQUIRE_SHARED();
  // Invalid UTF-8 is not an error: SentencePiece falls back to byte tokens and byte-level
  // BPE spells every byte, so decoding gives the bytes back, sanitized.
  std::mt19937 rng(5);
  for (const std::string name : {"gpt-2", "llama-spm"}) {
    const auto tokenizer = shared_vocab(name);
    for (int round = 0; round < 200; ++round) {
      std::string bytes;
      for (int i = static_cast<int>(rng() % 24); i > 0; --i)
        bytes += static_cast<char>(rng() % 2 ? 'a' + rng() % 4 : rng() % 256);
      std::string expected;
      append_sanitized_utf8(expected, bytes);
      ASSERT_EQ(tokenizer->decode(tokenizer->encode(bytes, true, true)), expected) << name;
    }
  }
}

TEST(Tokenizer, OneTokenizerEncodesFromManyThreadsAtOnce) {
  TANDEM_REQUIRE_SHARED();
  for (const std::string name : {"gpt-2", "llama-spm"}) {
    const auto tokenizer = shared_vocab(name);
    std::string text;
    for (const std::string& t : round_trip_texts()) text += t;
    const std::vector<int32_t> expected = tokenizer->encode(text, true, true);
    std::vector<std::vector<int32_t>> results(4);
    std::vector<std::thread> threads;
    for (auto& result : results)
      threads.emplace_back([&] {
        for (int i = 0; i < 20; ++i) result = tokenizer->encode(text, true, true);
      });
    for (auto& thread : threads) thread.join();
    for (const auto& result : results) EXPECT_EQ(result, expected) << name;
  }
}

TEST(Tokenizer, SentencePieceFallsBackToByteTokensForUnknownCharacters) {
  TANDEM_REQUIRE_SHARED();
  const auto tokenizer = shared_vocab("llama-spm");
  // U+1F999 is not in the vocabulary: its four bytes come out as <0xF0><0x9F><0xA6><0x99>.
  const std::vector<int32_t> ids = tokenizer->encode("🦙", false, false);
  ASSERT_EQ(ids.size(), 5u);
  EXPECT_EQ(tokenizer->token_text(ids[0]), "\xE2\x96\x81");  // the space prefix
  EXPECT_EQ(tokenizer->token_text(ids[1]), "<0xF0>");
  EXPECT_EQ(tokenizer->token_text(ids[4]), "<0x99>");
  EXPECT_EQ(tokenizer->token_bytes(ids[1]), "\xF0");
}

TEST(Tokenizer, SentencePieceParsesControlTokensOnlyWhenAsked) {
  TANDEM_REQUIRE_SHARED();
  const auto tokenizer = shared_vocab("llama-spm");
  const std::vector<int32_t> parsed = tokenizer->encode("<s>Hello</s>", false, true);
  ASSERT_EQ(parsed.size(), 3u);
  EXPECT_EQ(parsed[0], tokenizer->bos_id());
  EXPECT_EQ(tokenizer->token_text(parsed[1]), "\xE2\x96\x81Hello");  // space prefix after <s>
  EXPECT_EQ(parsed[2], tokenizer->eos_id());

  const std::vector<int32_t> plain = tokenizer->encode("<s>Hello</s>", false, false);
  EXPECT_GT(plain.size(), 3u);
  for (int32_t id : plain) {
    EXPECT_NE(id, tokenizer->bos_id());
    EXPECT_NE(id, tokenizer->eos_id());
  }
}

TEST(Tokenizer, ByteLevelBpeParsesEndOfTextOnlyWhenAsked) {
  TANDEM_REQUIRE_SHARED();
  const auto tokenizer = shared_vocab("gpt-2");
  const int32_t eot = tokenizer->find_token("<|endoftext|>");
  ASSERT_EQ(eot, 50256);
  const std::vector<int32_t> parsed = tokenizer->encode("a<|endoftext|>b", false, true);
  EXPECT_EQ(parsed,
            (std::vector<int32_t>{tokenizer->find_token("a"), eot, tokenizer->find_token("b")}));
  const std::vector<int32_t> plain = tokenizer->encode("a<|endoftext|>b", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), eot), 0);
  EXPECT_EQ(tokenizer->decode(plain), "a<|endoftext|>b");
}

TEST(Tokenizer, AddSpecialAddsBosAsTheMetadataSays) {
  TANDEM_REQUIRE_SHARED();
  const auto spm = shared_vocab("llama-spm");  // add_bos_token = true
  EXPECT_TRUE(spm->add_bos());
  EXPECT_EQ(spm->encode("Hello", true, false).front(), 1);
  EXPECT_EQ(spm->encode("Hello", false, false).front(), spm->find_token("\xE2\x96\x81Hello"));
  EXPECT_EQ(spm->encode("", true, false), std::vector<int32_t>{1});
  EXPECT_TRUE(spm->encode("", false, false).empty());

  const auto gpt2 = shared_vocab("gpt-2");  // no add_bos_token key: GPT-2 adds none
  EXPECT_FALSE(gpt2->add_bos());
  EXPECT_EQ(gpt2->encode("Hello", true, false), gpt2->encode("Hello", false, false));
}

TEST(Tokenizer, SpecialIdsAndTokenBytesFollowTheVocabulary) {
  TANDEM_REQUIRE_SHARED();
  const auto spm = shared_vocab("llama-spm");
  EXPECT_EQ(spm->vocab_size(), 32000);
  EXPECT_EQ(spm->bos_id(), 1);
  EXPECT_EQ(spm->eos_id(), 2);
  EXPECT_EQ(spm->eog_ids(), std::vector<int32_t>{2});
  EXPECT_EQ(spm->token_bytes(1), "");
  EXPECT_EQ(spm->token_bytes(1, /*render_special=*/true), "<s>");
  EXPECT_EQ(spm->token_bytes(spm->find_token("<0x41>")), "A");
  EXPECT_EQ(spm->token_bytes(spm->find_token("\xE2\x96\x81Hello")), " Hello");
  EXPECT_EQ(spm->token_bytes(-1), "");
  EXPECT_EQ(spm->token_bytes(32000), "");
  EXPECT_EQ(spm->token_text(32000), "");
  EXPECT_EQ(spm->find_token("no such token"), -1);
  EXPECT_EQ(spm->decode({1, spm->find_token("\xE2\x96\x81Hello"), 2}, true), "<s> Hello</s>");

  const auto gpt2 = shared_vocab("gpt-2");
  EXPECT_EQ(gpt2->eog_ids(), std::vector<int32_t>{50256});
  EXPECT_EQ(gpt2->token_text(995), "\xC4\xA0world");  // "Ġworld"
  EXPECT_EQ(gpt2->token_bytes(995), " world");
  EXPECT_EQ(gpt2->token_bytes(50256), "");
  EXPECT_EQ(gpt2->token_bytes(50256, true), "<|endoftext|>");
}

TEST(Tokenizer, SentencePieceDecodeDropsOnlyTheOneSpaceEncodingAdded) {
  TANDEM_REQUIRE_SHARED();
  const auto spm = shared_vocab("llama-spm");
  const int32_t hello = spm->find_token("\xE2\x96\x81Hello");
  EXPECT_EQ(spm->decode({hello, hello}), "Hello Hello");
  EXPECT_EQ(spm->decode({1, hello}), "Hello");
  EXPECT_EQ(spm->decode(spm->encode("  x", false, false)), "  x");
}

// GPT-2's bytes_to_unicode(), written out independently of the tokenizer.
std::string gpt2_spelling(int byte) {
  int extra = 0;
  for (int b = 0; b < byte; ++b)
    if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)) ++extra;
  const bool printable = (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || byte >= 174;
  return utf8::encode(static_cast<char32_t>(printable ? byte : 256 + extra));
}

TokenizerVocab byte_level_vocab() {
  TokenizerVocab vocab;
  vocab.model = TokenizerModel::kByteLevelBpe;
  for (int byte = 0; byte < 256; ++byte) vocab.tokens.push_back(gpt2_spelling(byte));
  vocab.tokens.push_back("<|bos|>");
  vocab.tokens.push_back("<|eos|>");
  vocab.types.assign(256, TokenType::kNormal);
  vocab.types.push_back(TokenType::kControl);
  vocab.types.push_back(TokenType::kControl);
  vocab.bos_id = 256;
  vocab.eos_id = 257;
  return vocab;
}

TEST(Tokenizer, ByteLevelVocabWithoutMergesEncodesEachByteAsItsToken) {
  const auto tokenizer = make_tokenizer(byte_level_vocab());
  std::string text = "Hé 😀 \n\t 'll 42";
  for (int byte = 0; byte < 256; ++byte) text += static_cast<char>(byte);
  const std::vector<int32_t> ids = tokenizer->encode(text, false, false);
  ASSERT_EQ(ids.size(), text.size());
  for (size_t i = 0; i < text.size(); ++i)
    EXPECT_EQ(ids[i], static_cast<uint8_t>(text[i])) << "byte " << i;
  EXPECT_EQ(tokenizer->decode(tokenizer->encode("Hé 😀", false, false)), "Hé 😀");
  EXPECT_FALSE(tokenizer->add_bos());
  EXPECT_EQ(tokenizer->eog_ids(), std::vector<int32_t>{257});
}

TEST(Tokenizer, AddBosAndAddEosMetadataAddThemToByteLevelBpe) {
  TokenizerVocab vocab = byte_level_vocab();
  vocab.add_bos = true;
  vocab.add_eos = true;
  const auto tokenizer = make_tokenizer(vocab);
  EXPECT_EQ(tokenizer->encode("A", true, false), (std::vector<int32_t>{256, 'A', 257}));
  EXPECT_EQ(tokenizer->encode("A", false, false), (std::vector<int32_t>{'A'}));
}

TEST(Tokenizer, MergesApplyByRankWithinPieces) {
  TokenizerVocab vocab = byte_level_vocab();
  const std::string space = gpt2_spelling(' ');
  for (std::string token : {std::string("ab"), std::string("abc"), std::string("bc"), "b" + space})
    vocab.tokens.push_back(token);
  vocab.types.resize(vocab.tokens.size(), TokenType::kNormal);
  // "b c" outranks "a b", so "abc" is a + bc although "ab c" would make "abc".
  vocab.merges = {"b " + space, "b c", "a b", "ab c"};
  const auto tokenizer = make_tokenizer(vocab);
  const int32_t ab = tokenizer->find_token("ab"), bc = tokenizer->find_token("bc");
  EXPECT_EQ(tokenizer->encode("abc", false, false), (std::vector<int32_t>{'a', bc}));
  EXPECT_EQ(tokenizer->encode("ab", false, false), (std::vector<int32_t>{ab}));
  // The pre-tokenizer splits "ab ab" into "ab" and " ab": the best-ranked merge "b Ġ"
  // would cross that line, so it never applies.
  EXPECT_EQ(tokenizer->encode("ab ab", false, false), (std::vector<int32_t>{ab, ' ', ab}));
}

TEST(Tokenizer, UserDefinedTokensAreAlwaysSplitOutControlOnlyOnRequest) {
  TokenizerVocab vocab = byte_level_vocab();
  vocab.tokens.push_back("<think>");
  vocab.types.push_back(TokenType::kUserDefined);
  vocab.tokens.push_back("<|im_end|>");
  vocab.types.push_back(TokenType::kControl);
  const auto tokenizer = make_tokenizer(vocab);
  const int32_t think = 258, im_end = 259;
  EXPECT_EQ(tokenizer->encode("<think>x", false, false), (std::vector<int32_t>{think, 'x'}));
  EXPECT_EQ(tokenizer->encode("x<|im_end|>", false, true), (std::vector<int32_t>{'x', im_end}));
  EXPECT_EQ(tokenizer->encode("x<|im_end|>", false, false).size(), 11u);
  EXPECT_EQ(tokenizer->token_bytes(think), "<think>");  // user-defined text renders
  EXPECT_EQ(tokenizer->token_bytes(im_end), "");
  EXPECT_EQ(tokenizer->eog_ids(), (std::vector<int32_t>{257, im_end}));
}

TEST(Tokenizer, LongerSpecialTokensWinOverTheirPrefixes) {
  TokenizerVocab vocab = byte_level_vocab();
  vocab.tokens.push_back("<|im");
  vocab.tokens.push_back("<|im_start|>");
  vocab.types.resize(vocab.tokens.size(), TokenType::kControl);
  const auto tokenizer = make_tokenizer(vocab);
  EXPECT_EQ(tokenizer->encode("<|im_start|><|im", false, true), (std::vector<int32_t>{259, 258}));
}

// As llama.cpp's loader: the texts it knows as turn, message and FIM ends become control
// tokens and end generation whatever type the file gave them (a converter that typed
// <|eot_id|> normal would otherwise never stop, and would show the marker); the FIM
// prefix/suffix/middle markers become control without ending anything; DeepSeek's end of
// sentence ends generation only where the file names no eot_token_id.
TEST(Tokenizer, MarkerTextsBecomeControlAndEndGenerationAsLlamaCppMakesThem) {
  TokenizerVocab vocab = byte_level_vocab();
  const std::vector<std::pair<std::string, TokenType>> extra = {
      {"<|eot_id|>", TokenType::kNormal},
      {"<|end|>", TokenType::kControl},
      {"<|file_sep|>", TokenType::kUserDefined},
      {"<|fim_pad|>", TokenType::kNormal},
      {"<|repo_name|>", TokenType::kNormal},
      {"<|call|>", TokenType::kNormal},
      {"_<EOT>", TokenType::kNormal},
      {"<|fim_prefix|>", TokenType::kNormal},
      {"<｜end▁of▁sentence｜>", TokenType::kNormal},
      {"<|not_a_marker|>", TokenType::kNormal},
  };
  for (const auto& [text, type] : extra) {
    vocab.tokens.push_back(text);
    vocab.types.push_back(type);
  }
  const int32_t eot = 258, end = 259, file_sep = 260, fim_pad = 261, repo = 262, call = 263,
                eot_text = 264, fim_prefix = 265, end_of_sentence = 266, other = 267;
  vocab.eot_id = -1;
  const auto tokenizer = make_tokenizer(vocab);
  EXPECT_EQ(tokenizer->eog_ids(), (std::vector<int32_t>{257, eot, end, file_sep, fim_pad, repo,
                                                        call, eot_text, end_of_sentence}));
  // Control now: parsed only where special tokens are, and not shown unless asked for.
  EXPECT_EQ(tokenizer->encode("<|eot_id|>", false, true), (std::vector<int32_t>{eot}));
  EXPECT_EQ(tokenizer->encode("<|eot_id|>", false, false).size(), 10u);
  EXPECT_EQ(tokenizer->encode("<|file_sep|>", false, false).size(), 12u);
  for (int32_t id : {eot, file_sep, fim_prefix}) EXPECT_EQ(tokenizer->token_bytes(id), "") << id;
  EXPECT_EQ(tokenizer->token_bytes(fim_prefix, /*render_special=*/true), "<|fim_prefix|>");
  EXPECT_EQ(tokenizer->token_bytes(other), "<|not_a_marker|>");  // an unknown text stays normal

  vocab.eot_id = eot;  // named by the file: DeepSeek's text is no longer the turn's end
  EXPECT_EQ(make_tokenizer(vocab)->eog_ids(),
            (std::vector<int32_t>{257, eot, end, file_sep, fim_pad, repo, call, eot_text}));
}

gguf::Writer vocab_writer(const std::string& model, const std::string& pre) {
  gguf::Writer writer;
  writer.add_string("general.architecture", "llama");
  writer.add_string("tokenizer.ggml.model", model);
  if (!pre.empty()) writer.add_string("tokenizer.ggml.pre", pre);
  std::vector<std::string> tokens;
  for (int byte = 0; byte < 256; ++byte) tokens.push_back(gpt2_spelling(byte));
  writer.add_string_array("tokenizer.ggml.tokens", tokens);
  if (model == "gpt2") writer.add_string_array("tokenizer.ggml.merges", {});
  return writer;
}

// Listed but empty: every piece stays in single bytes, as the merges say.
TEST(Tokenizer, FromGgufReadsAByteLevelVocabWithAnEmptyMergesList) {
  testing::ScratchDir dir;
  gguf::Writer writer = vocab_writer("gpt2", "llama-bpe");
  writer.add_bool("tokenizer.ggml.add_bos_token", true);
  writer.add_uint32("tokenizer.ggml.bos_token_id", 65);
  writer.write(dir.file("v.gguf"));
  const auto tokenizer = Tokenizer::from_gguf(gguf::File::open(dir.file("v.gguf")));
  EXPECT_EQ(tokenizer->encode("hi 123", true, false),
            (std::vector<int32_t>{65, 'h', 'i', ' ', '1', '2', '3'}));
}

// Missing altogether, the file's tokenizer is not known: llama.cpp refuses it too.
TEST(Tokenizer, FromGgufRejectsAByteLevelVocabWithoutItsMerges) {
  testing::ScratchDir dir;
  gguf::Writer writer;
  writer.add_string("general.architecture", "llama");
  writer.add_string("tokenizer.ggml.model", "gpt2");
  writer.add_string("tokenizer.ggml.pre", "llama-bpe");
  std::vector<std::string> tokens;
  for (int byte = 0; byte < 256; ++byte) tokens.push_back(gpt2_spelling(byte));
  writer.add_string_array("tokenizer.ggml.tokens", tokens);
  writer.write(dir.file("v.gguf"));
  try {
    Tokenizer::from_gguf(gguf::File::open(dir.file("v.gguf")));
    FAIL() << "expected GgufError";
  } catch (const gguf::GgufError& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.merges is missing"), std::string::npos)
        << e.what();
  }
}

TEST(Tokenizer, FromGgufRejectsAnUnknownPreTokenizerByName) {
  testing::ScratchDir dir;
  vocab_writer("gpt2", "mystery-pre").write(dir.file("v.gguf"));
  try {
    Tokenizer::from_gguf(gguf::File::open(dir.file("v.gguf")));
    FAIL() << "expected GgufError";
  } catch (const gguf::GgufError& e) {
    EXPECT_NE(std::string(e.what()).find("mystery-pre"), std::string::npos) << e.what();
  }
}

TEST(Tokenizer, FromGgufRejectsAnUnknownModelAndMissingTokens) {
  testing::ScratchDir dir;
  vocab_writer("wordpiece", "").write(dir.file("a.gguf"));
  EXPECT_THROW(Tokenizer::from_gguf(gguf::File::open(dir.file("a.gguf"))), gguf::GgufError);
  gguf::Writer writer;
  writer.add_string("tokenizer.ggml.model", "llama");
  writer.write(dir.file("b.gguf"));
  EXPECT_THROW(Tokenizer::from_gguf(gguf::File::open(dir.file("b.gguf"))), gguf::GgufError);
}

TEST(Tokenizer, MakeTokenizerRejectsScoresOfTheWrongLengthAndBosOutOfRange) {
  TokenizerVocab vocab = byte_level_vocab();
  vocab.scores = {0.0f};
  EXPECT_THROW(make_tokenizer(vocab), gguf::GgufError);
  vocab = byte_level_vocab();
  vocab.bos_id = 1000;
  EXPECT_THROW(make_tokenizer(vocab), gguf::GgufError);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
