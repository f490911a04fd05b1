// Every pre-tokenizer name against the oracle: make_pretokenizer_vectors.py applied the
// same regex lists with Python's `regex` module (an engine independent of PCRE2) to
// tricky inputs and recorded the pieces in data/pretokenizer_vectors.h.

#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runner/tokenizer/pretokenizer.h"
#include "tests/runner/tokenizer/data/pretokenizer_vectors.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using Pieces = std::vector<std::string>;

const nlohmann::json& vectors() {
  static const nlohmann::json json = nlohmann::json::parse(testing::kPreTokenizerVectorsJson);
  return json;
}

Pieces expected_pieces(const std::string& text, const nlohmann::json& byte_lengths) {
  Pieces pieces;
  size_t offset = 0;
  for (size_t length : byte_lengths.get<std::vector<size_t>>()) {
    pieces.push_back(text.substr(offset, length));
    offset += length;
  }
  return pieces;
}

std::string printable(const std::string& text) {
  std::string out;
  for (char c : text)
    out += c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : std::string(1, c);
  return out;
}

TEST(PreTokenizerVectors, TheOracleCoversExactlyTheSupportedNames) {
  std::multiset<std::string> oracle_names;
  for (const auto& family : vectors().at("families"))
    for (const auto& name : family.at("names")) oracle_names.insert(name.get<std::string>());
  std::multiset<std::string> supported;
  for (std::string_view name : PreTokenizer::supported_names()) supported.emplace(name);
  EXPECT_EQ(oracle_names, supported);
  EXPECT_EQ(std::set<std::string>(supported.begin(), supported.end()).size(), supported.size())
      << "a name appears twice in the table";
}

TEST(PreTokenizerVectors, EachNameHasTheOraclesRegexesAndFlags) {
  for (const auto& family : vectors().at("families")) {
    for (const auto& name : family.at("names")) {
      const PreTokenizer pre(name.get<std::string>());
      EXPECT_EQ(pre.regexes(), family.at("regexes").get<std::vector<std::string>>()) << name;
      EXPECT_EQ(pre.ignore_merges(), family.at("ignore_merges").get<bool>()) << name;
      EXPECT_EQ(pre.add_bos_by_default(), family.at("add_bos").get<bool>()) << name;
    }
  }
}

TEST(PreTokenizerVectors, EachNameSplitsEveryInputAsTheOracleDid) {
  const auto inputs = vectors().at("inputs").get<std::vector<std::string>>();
  size_t checked = 0;
  for (const auto& family : vectors().at("families")) {
    const auto& splits = family.at("piece_bytes");
    ASSERT_EQ(splits.size(), inputs.size());
    for (const auto& name : family.at("names")) {
      const PreTokenizer pre(name.get<std::string>());
      for (size_t i = 0; i < inputs.size(); ++i) {
        Pieces pieces;
        for (std::string_view piece : pre.split(inputs[i])) pieces.emplace_back(piece);
        EXPECT_EQ(pieces, expected_pieces(inputs[i], splits[i]))
            << "pre '" << name.get<std::string>() << "', input \"" << printable(inputs[i]) << "\"";
        ++checked;
      }
    }
  }
  std::cout << "  " << checked << " (name, input) splits match the oracle\n";
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
