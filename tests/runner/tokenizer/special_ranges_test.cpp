// Tokenizer::encode with special ranges: control-token text becomes a control token only
// where it lies wholly inside a range (the chat template's own text).
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runner/gguf/gguf.h"
#include "runner/tokenizer/tokenizer.h"
#include "tests/common/test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using Range = Tokenizer::Range;

class SpecialRanges : public ::testing::Test {
 protected:
  void SetUp() override {
    TANDEM_REQUIRE_SHARED();
    tokenizer_ =
        Tokenizer::from_gguf(gguf::File::open(*shared_dir() / "vocab" / "ggml-vocab-llama3.gguf"));
    eot_ = tokenizer_->find_token("<|eot_id|>");
    ASSERT_GE(eot_, 0);
  }
  size_t eots(const std::vector<int32_t>& tokens) const {
    return static_cast<size_t>(std::count(tokens.begin(), tokens.end(), eot_));
  }
  std::unique_ptr<Tokenizer> tokenizer_;
  int32_t eot_ = -1;
};

TEST_F(SpecialRanges, OnlyMatchesInsideARangeAreControlTokens) {
  const std::string text = "a<|eot_id|>b<|eot_id|>c";  // matches at [1, 11) and [12, 22)
  const std::vector<Range> first{{0, 11}};
  const std::vector<Range> second{{12, 23}};
  const std::vector<Range> both{{0, 11}, {12, 23}};
  EXPECT_EQ(eots(tokenizer_->encode(text, false, std::span<const Range>())), 0u);
  EXPECT_EQ(eots(tokenizer_->encode(text, false, first)), 1u);
  EXPECT_EQ(eots(tokenizer_->encode(text, false, second)), 1u);
  EXPECT_EQ(eots(tokenizer_->encode(text, false, both)), 2u);
  // The same as the boolean forms at the extremes.
  EXPECT_EQ(tokenizer_->encode(text, false, both), tokenizer_->encode(text, false, true));
  EXPECT_EQ(tokenizer_->encode(text, false, std::span<const Range>()),
            tokenizer_->encode(text, false, false));
  // Which match counts is positional: the first one alone.
  const std::vector<int32_t> only_first = tokenizer_->encode(text, false, first);
  EXPECT_EQ(only_first[1], eot_);
}

TEST_F(SpecialRanges, AMatchAcrossARangesEdgeStaysText) {
  const std::string text = "x<|eot_id|>y";
  // Template text "x<|eot" then input "_id|>y": together they spell the marker, but it
  // is not wholly the template's.
  const std::vector<Range> partial{{0, 6}};
  EXPECT_EQ(eots(tokenizer_->encode(text, false, partial)), 0u);
  const std::vector<Range> adjacent{{0, 6}, {6, 12}};  // two ranges do not join
  EXPECT_EQ(eots(tokenizer_->encode(text, false, adjacent)), 0u);
  const std::vector<Range> whole{{1, 11}};
  EXPECT_EQ(eots(tokenizer_->encode(text, false, whole)), 1u);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
