// Streaming detokenization and UTF-8 sanitizing: the text that leaves the server is
// always valid UTF-8, a character split over byte tokens comes out whole and once, and
// invalid bytes become U+FFFD per maximal subpart.

#include <random>

#include <gtest/gtest.h>

#include "runner/tokenizer/tokenizer.h"
#include "runner/tokenizer/utf8.h"
#include "runner/tokenizer/vocab.h"
#include "tests/common/utf8_oracle.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using ::tandem::testing::valid_utf8;

const std::string kFffd = "\xEF\xBF\xBD";

// A SentencePiece vocabulary: <unk>, <s>, </s>, the 256 byte tokens (id = 3 + byte),
// and a few words.
std::unique_ptr<Tokenizer> byte_fallback_tokenizer(bool add_space_prefix = true) {
  TokenizerVocab vocab;
  vocab.tokens = {"<unk>", "<s>", "</s>"};
  vocab.types = {TokenType::kUnknown, TokenType::kControl, TokenType::kControl};
  for (int byte = 0; byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", byte);
    vocab.tokens.push_back(name);
    vocab.types.push_back(TokenType::kByte);
  }
  for (const char* word : {"\xE2\x96\x81Hello", "\xE2\x96\x81", "x", "\xE4\xB8\xAD"}) {
    vocab.tokens.push_back(word);
    vocab.types.push_back(TokenType::kNormal);
  }
  vocab.bos_id = 1;
  vocab.eos_id = 2;
  vocab.add_space_prefix = add_space_prefix;
  return make_tokenizer(vocab);
}

int32_t byte_token(uint8_t byte) { return 3 + byte; }
constexpr int32_t kHello = 259;  // "▁Hello"

std::string stream(const Tokenizer& tokenizer, const std::vector<int32_t>& ids,
                   std::vector<std::string>* chunks = nullptr) {
  Detokenizer detokenizer(tokenizer);
  std::string text;
  for (int32_t id : ids) {
    std::string chunk = detokenizer.push(id);
    if (chunks) chunks->push_back(chunk);
    text += chunk;
  }
  return text + detokenizer.flush();
}

std::vector<int32_t> byte_tokens(std::string_view bytes) {
  std::vector<int32_t> ids;
  for (char c : bytes) ids.push_back(byte_token(static_cast<uint8_t>(c)));
  return ids;
}

TEST(Detokenizer, MultiByteCharacterOverByteTokensIsEmittedWholeOnceComplete) {
  const auto tokenizer = byte_fallback_tokenizer();
  Detokenizer detokenizer(*tokenizer);
  EXPECT_EQ(detokenizer.push(byte_token(0xF0)), "");
  EXPECT_EQ(detokenizer.push(byte_token(0x9F)), "");
  EXPECT_EQ(detokenizer.push(byte_token(0xA6)), "");
  EXPECT_EQ(detokenizer.push(byte_token(0x99)), "🦙");
  EXPECT_EQ(detokenizer.push(byte_token('a')), "a");
  EXPECT_EQ(detokenizer.flush(), "");
}

TEST(Detokenizer, KeepsTheLeadingSpaceThatDecodeDrops) {
  const auto tokenizer = byte_fallback_tokenizer();
  EXPECT_EQ(stream(*tokenizer, {kHello, kHello}), " Hello Hello");
  EXPECT_EQ(tokenizer->decode({kHello, kHello}), "Hello Hello");
}

TEST(Detokenizer, ControlTokensProduceNoText) {
  const auto tokenizer = byte_fallback_tokenizer();
  EXPECT_EQ(stream(*tokenizer, {1, kHello, 2}), " Hello");
}

TEST(Detokenizer, LoneContinuationBytesBecomeReplacementCharacters) {
  const auto tokenizer = byte_fallback_tokenizer();
  EXPECT_EQ(stream(*tokenizer, byte_tokens("a\x80\xBF"
                                           "b")),
            "a" + kFffd + kFffd + "b");
}

TEST(Detokenizer, OverlongEncodingsBecomeOneReplacementPerByte) {
  const auto tokenizer = byte_fallback_tokenizer();
  // C0 never starts a sequence; E0 80 is not a valid prefix (E0 needs A0..BF next).
  EXPECT_EQ(stream(*tokenizer, byte_tokens("\xC0\xAF")), kFffd + kFffd);
  EXPECT_EQ(stream(*tokenizer, byte_tokens("\xE0\x80\xAF")), kFffd + kFffd + kFffd);
}

TEST(Detokenizer, SurrogatesBecomeReplacementCharacters) {
  const auto tokenizer = byte_fallback_tokenizer();
  EXPECT_EQ(stream(*tokenizer, byte_tokens("\xED\xA0\x80")), kFffd + kFffd + kFffd);
}

TEST(Detokenizer, TruncatedSequenceAtFlushBecomesOneReplacement) {
  const auto tokenizer = byte_fallback_tokenizer();
  Detokenizer detokenizer(*tokenizer);
  EXPECT_EQ(detokenizer.push(byte_token('x')), "x");
  EXPECT_EQ(detokenizer.push(byte_token(0xE4)), "");
  EXPECT_EQ(detokenizer.push(byte_token(0xB8)), "");
  EXPECT_EQ(detokenizer.flush(), kFffd);
  EXPECT_EQ(detokenizer.flush(), "");  // nothing is left to end
}

TEST(Detokenizer, SequenceInterruptedByAnotherCharacterGivesReplacementThenIt) {
  const auto tokenizer = byte_fallback_tokenizer();
  std::vector<std::string> chunks;
  EXPECT_EQ(stream(*tokenizer,
                   byte_tokens("\xF0\x9F\x98"
                               "A"),
                   &chunks),
            kFffd + "A");
  EXPECT_EQ(chunks, (std::vector<std::string>{"", "", "", kFffd + "A"}));
}

// Random strings of valid UTF-8 made of 1- to 4-byte characters.
std::string random_text(std::mt19937& rng) {
  static const std::vector<std::string> chars = {"a",  "Z",  " ", "\n",   "é", "ß",
                                                 "中", "語", "€", "🦙", "😀", "\xF4\x8F\xBF\xBF"};
  std::string text = "x";  // not a space first: decode() would drop it
  for (int i = static_cast<int>(rng() % 30); i > 0; --i) text += chars[rng() % chars.size()];
  return text;
}

TEST(Detokenizer, StreamedTextEqualsDecodeForValidSequences) {
  // Without a space prefix, decode() has no leading space to drop.
  const auto tokenizer = byte_fallback_tokenizer(/*add_space_prefix=*/false);
  std::mt19937 rng(1);
  for (int round = 0; round < 300; ++round) {
    const std::string text = random_text(rng);
    // Either the tokenizer's own encoding (words and byte fallback) or raw byte tokens.
    const std::vector<int32_t> ids =
        round % 2 ? tokenizer->encode(text, true, false) : byte_tokens(text);
    EXPECT_EQ(stream(*tokenizer, ids), tokenizer->decode(ids));
  }
}

TEST(Detokenizer, OutputIsValidUtf8ForRandomByteTokens) {
  const auto tokenizer = byte_fallback_tokenizer(/*add_space_prefix=*/false);
  std::mt19937 rng(2);
  for (int round = 0; round < 500; ++round) {
    std::vector<int32_t> ids;
    for (int i = static_cast<int>(rng() % 24); i > 0; --i) {
      // Bias towards the bytes of multi-byte sequences, where the edge cases are.
      const uint8_t byte =
          rng() % 4 ? static_cast<uint8_t>(0x80 + rng() % 0x80) : static_cast<uint8_t>(rng() % 256);
      ids.push_back(byte_token(byte));
    }
    std::vector<std::string> chunks;
    const std::string text = stream(*tokenizer, ids, &chunks);
    for (const std::string& chunk : chunks) ASSERT_TRUE(valid_utf8(chunk));
    ASSERT_TRUE(valid_utf8(text));
    // Streaming and whole decoding agree even on invalid input.
    ASSERT_EQ(text, tokenizer->decode(ids));
  }
}

TEST(Utf8, SanitizingReplacesMaximalSubpartsAsUnicodeTable3_8Shows) {
  // The example of the Unicode Standard, section 3.9 (U+FFFD substitution).
  std::string out;
  append_sanitized_utf8(out, "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64");
  EXPECT_EQ(out, "a" + kFffd + kFffd + kFffd + "b" + kFffd + "c" + kFffd + kFffd + "d");
}

TEST(Utf8, SanitizingKeepsValidTextAndAppends) {
  std::string out = "prefix:";
  append_sanitized_utf8(out, "héllo 中 🦙 \xF4\x8F\xBF\xBF");
  EXPECT_EQ(out, "prefix:héllo 中 🦙 \xF4\x8F\xBF\xBF");
}

TEST(Utf8, SanitizingRejectsCodePointsPastU10FFFFAndTruncation) {
  std::string out;
  append_sanitized_utf8(out, "\xF4\x90\x80\x80");  // U+110000: F4 needs 80..8F next
  EXPECT_EQ(out, kFffd + kFffd + kFffd + kFffd);
  out.clear();
  append_sanitized_utf8(out, "ok\xF0\x9F");
  EXPECT_EQ(out, "ok" + kFffd);
}

TEST(Utf8, ValidatorAgreesWithTheIndependentOneOnRandomBytes) {
  std::mt19937 rng(3);
  for (int round = 0; round < 2000; ++round) {
    std::string bytes;
    for (int i = static_cast<int>(rng() % 8); i > 0; --i)
      bytes += static_cast<char>(rng() % 3 ? 0x80 + rng() % 0x80 : rng() % 256);
    ASSERT_EQ(utf8::is_valid(bytes), valid_utf8(bytes));
    std::string sanitized;
    append_sanitized_utf8(sanitized, bytes);
    ASSERT_TRUE(valid_utf8(sanitized));
    if (valid_utf8(bytes)) {
      ASSERT_EQ(sanitized, bytes);
    }
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
