#include "runner/tokenizer/vocabulary_tokenizer.h"

#include <algorithm>
#include <charconv>
#include <span>

namespace tandem {

namespace {

// llama.cpp's llama_vocab::impl::load finds these tokens by their text, and forces each one
// it finds to the control type ("control-looking token ... its type will be overridden"),
// so a converter that typed <|im_end|> as normal text still gets a turn that ends and a
// marker that is neither shown nor typed by a user's text. tandem does the same.
//
// End of generation: the turn and message ends of the families' templates.
constexpr std::string_view kEndOfGenerationTexts[] = {
    "<|eot_id|>",    "<|im_end|>", "<|end|>", "<|return|>", "<|call|>",        "<end_of_turn>",
    "<|endoftext|>", "<|eom_id|>", "<EOT>",   "_<EOT>",     "<|end_of_text|>", "<end_of_utterance>",
};
// The fill-in-the-middle markers, one list per role as llama.cpp's loader has them (Qwen,
// StarCoder/Granite, DeepSeek, CodeLlama, GLM-4.5). The first one a vocabulary has is its
// FIM token of that role where the metadata names none (llama.cpp takes whichever its hash
// map yields first; a real vocabulary has one spelling of each). All are control; the pad,
// repository and file separators also end generation (a FIM completion ends there).
constexpr std::string_view kFimPrefixTexts[] = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",    "<｜fim▁begin｜>",
    "<PRE>",          "▁<PRE>",       "<|code_prefix|>",
};
constexpr std::string_view kFimSuffixTexts[] = {
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",    "<｜fim▁hole｜>",
    "<SUF>",          "▁<SUF>",       "<|code_suffix|>",
};
constexpr std::string_view kFimMiddleTexts[] = {
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>",    "<｜fim▁end｜>",
    "<MID>",          "▁<MID>",       "<|code_middle|>",
};
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>"};
constexpr std::string_view kFimRepoTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                              "<REPO>", "<reponame>"};
constexpr std::string_view kFimSepTexts[] = {"<|file_sep|>"};
using TextList = std::span<const std::string_view>;
constexpr TextList kEndOfGenerationLists[] = {kEndOfGenerationTexts, kFimPadTexts, kFimRepoTexts,
                                              kFimSepTexts};
constexpr TextList kOtherControlLists[] = {kFimPrefixTexts, kFimSuffixTexts, kFimMiddleTexts};
// DeepSeek's end of sentence: control, and the turn's end (llama.cpp's EOT) only where the
// file names no eot_token_id.
constexpr std::string_view kEndOfSentenceText = "<｜end▁of▁sentence｜>";

// C's isspace in the "C" locale, which llama.cpp's RSTRIP uses.
bool is_c_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

bool is_special_type(TokenType type) {
  return type == TokenType::kControl || type == TokenType::kUserDefined ||
         type == TokenType::kUnknown;
}

}  // namespace

VocabularyTokenizer::VocabularyTokenizer(
    const TokenizerVocab& vocab, bool add_bos_default,
    const std::function<std::string(const std::string&)>& decoded_piece)
    : tokens_(vocab.tokens),
      types_(vocab.types),
      bos_id_(vocab.bos_id),
      eos_id_(vocab.eos_id),
      unk_id_(vocab.unk_id),
      add_bos_(vocab.add_bos.value_or(add_bos_default)),
      add_eos_(vocab.add_eos.value_or(false)) {
  if (types_.empty()) types_.assign(tokens_.size(), TokenType::kNormal);
  index_.reserve(tokens_.size());
  for (int32_t id = 0; id < vocab_size(); ++id)
    index_.insert_or_assign(tokens_[static_cast<size_t>(id)], id);  // a duplicate: the last id
  find_marked_tokens(vocab);
  pieces_.resize(tokens_.size());
  for (int32_t id = 0; id < vocab_size(); ++id) {
    const std::string& text = tokens_[static_cast<size_t>(id)];
    switch (type(id)) {
      case TokenType::kControl:
      case TokenType::kUnknown:
        break;  // rendered only on request (token_bytes' render_special)
      case TokenType::kUserDefined:
        pieces_[static_cast<size_t>(id)] = text;
        break;
      case TokenType::kByte:
        if (unsigned byte = 0;
            text.size() == 6 && text.starts_with("<0x") && text.ends_with(">") &&
            std::from_chars(text.data() + 3, text.data() + 5, byte, 16).ptr == text.data() + 5) {
          pieces_[static_cast<size_t>(id)] = std::string(1, static_cast<char>(byte));
          break;
        }
        [[fallthrough]];
      default:
        pieces_[static_cast<size_t>(id)] = decoded_piece(text);
    }
    if (is_special_type(type(id)) && !text.empty()) special_ids_.push_back(id);
  }
  rstrip_.assign(tokens_.size(), false);
  for (int32_t id : vocab.rstrip_ids)
    if (id >= 0 && id < vocab_size()) rstrip_[static_cast<size_t>(id)] = true;
  std::stable_sort(special_ids_.begin(), special_ids_.end(), [&](int32_t a, int32_t b) {
    return tokens_[static_cast<size_t>(a)].size() > tokens_[static_cast<size_t>(b)].size();
  });
}

// The end-of-generation ids (eos, eot, eom and the texts above) and the control type of
// every text above, as llama.cpp's loader sets them: a user-defined one becomes control
// too (llama.cpp tests the control bit, which it lacks), so a user's text that spells a
// turn's end stays text wherever control tokens are not parsed.
void VocabularyTokenizer::find_marked_tokens(const TokenizerVocab& vocab) {
  const auto mark_control = [&](int32_t id) {
    types_[static_cast<size_t>(id)] = TokenType::kControl;
  };
  for (int32_t id : {eos_id_, vocab.eot_id, vocab.eom_id})
    if (id >= 0 && id < vocab_size()) eog_ids_.push_back(id);
  if (vocab.eot_id >= 0 && vocab.eot_id < vocab_size()) eot_id_ = vocab.eot_id;
  for (TextList texts : kEndOfGenerationLists)
    for (std::string_view text : texts)
      if (const int32_t id = find_token(text); id >= 0) {
        mark_control(id);
        eog_ids_.push_back(id);
      }
  for (TextList texts : kOtherControlLists)
    for (std::string_view text : texts)
      if (const int32_t id = find_token(text); id >= 0) mark_control(id);
  if (const int32_t id = find_token(kEndOfSentenceText); id >= 0) {
    mark_control(id);
    if (vocab.eot_id < 0) eog_ids_.push_back(id);
  }
  find_fim_tokens(vocab.fim);
  // llama.cpp ends generation at the FIM pad, repository and file separators however they
  // were found, so a separator the metadata names ends a completion too.
  for (int32_t id : {fim_.pad, fim_.repo, fim_.file_sep})
    if (id >= 0) eog_ids_.push_back(id);
  std::sort(eog_ids_.begin(), eog_ids_.end());
  eog_ids_.erase(std::unique(eog_ids_.begin(), eog_ids_.end()), eog_ids_.end());
}

// The FIM ids the metadata named (make_tokenizer dropped any outside the vocabulary), the
// others by their text; llama.cpp looks a role up by text only where its key is absent.
void VocabularyTokenizer::find_fim_tokens(const FimTokens& named) {
  const auto by_text = [&](int32_t id, TextList texts) {
    for (std::string_view text : texts) {
      if (id >= 0) break;
      id = find_token(text);
    }
    return id;
  };
  fim_.prefix = by_text(named.prefix, kFimPrefixTexts);
  fim_.suffix = by_text(named.suffix, kFimSuffixTexts);
  fim_.middle = by_text(named.middle, kFimMiddleTexts);
  fim_.pad = by_text(named.pad, kFimPadTexts);
  fim_.repo = by_text(named.repo, kFimRepoTexts);
  fim_.file_sep = by_text(named.file_sep, kFimSepTexts);
}

const std::string& VocabularyTokenizer::token_text(int32_t id) const {
  static const std::string kNone;
  if (id < 0 || id >= vocab_size()) return kNone;
  return tokens_[static_cast<size_t>(id)];
}

int32_t VocabularyTokenizer::find_token(std::string_view text) const {
  const auto it = index_.find(text);
  return it == index_.end() ? -1 : it->second;
}

std::string VocabularyTokenizer::token_bytes(int32_t id, bool render_special) const {
  if (id < 0 || id >= vocab_size()) return {};
  if (render_special && (type(id) == TokenType::kControl || type(id) == TokenType::kUnknown))
    return tokens_[static_cast<size_t>(id)];
  return pieces_[static_cast<size_t>(id)];
}

bool VocabularyTokenizer::SpecialPolicy::allows(size_t begin, size_t end) const {
  if (all) return true;
  // The first range ending after `begin` is the only one that can hold [begin, end).
  const auto it = std::upper_bound(ranges.begin(), ranges.end(), begin,
                                   [](size_t pos, const Range& r) { return pos < r.end; });
  return it != ranges.end() && it->begin <= begin && end <= it->end;
}

// As llama.cpp (and Hugging Face tokenizers) do: user-defined tokens are always split
// out; control and unknown ones only where the policy allows. Longer tokens are split out
// first, so "<|im_start|>" wins over a shorter "<|im". A token marked rstrip takes the
// whitespace that follows it along (Phi-3's "<|user|>\n").
std::vector<VocabularyTokenizer::Fragment> VocabularyTokenizer::split_special(
    std::string_view text, SpecialPolicy policy) const {
  const bool any_control = policy.all || !policy.ranges.empty();
  std::vector<Fragment> fragments{{-1, text}};
  std::vector<Fragment> next;
  for (int32_t id : special_ids_) {
    const bool user_defined = type(id) == TokenType::kUserDefined;
    if (!any_control && !user_defined) continue;
    const std::string& special = tokens_[static_cast<size_t>(id)];
    if (text.find(special) == std::string_view::npos) continue;  // the common case
    next.clear();
    for (const Fragment& fragment : fragments) {
      if (fragment.token >= 0) {
        next.push_back(fragment);
        continue;
      }
      std::string_view raw = fragment.text;
      const size_t offset = static_cast<size_t>(raw.data() - text.data());
      size_t pos = 0;  // raw[pos..] is not yet emitted
      for (size_t hit = raw.find(special); hit != std::string_view::npos;) {
        if (!user_defined && !policy.allows(offset + hit, offset + hit + special.size())) {
          hit = raw.find(special, hit + 1);  // stays text; a later match may still count
          continue;
        }
        if (hit > pos) next.push_back({-1, raw.substr(pos, hit - pos)});
        next.push_back({id, special});
        pos = hit + special.size();
        if (rstrip_[static_cast<size_t>(id)])
          while (pos < raw.size() && is_c_space(raw[pos])) ++pos;
        hit = raw.find(special, pos);
      }
      if (pos < raw.size()) next.push_back({-1, raw.substr(pos)});
    }
    fragments.swap(next);
  }
  return fragments;
}

std::vector<int32_t> VocabularyTokenizer::encode(std::string_view text, bool add_special,
                                                 bool parse_special) const {
  return encode_split(text, add_special, SpecialPolicy{parse_special, {}});
}

std::vector<int32_t> VocabularyTokenizer::encode(std::string_view text, bool add_special,
                                                 std::span<const Range> special_ranges) const {
  return encode_split(text, add_special, SpecialPolicy{false, special_ranges});
}

std::vector<int32_t> VocabularyTokenizer::encode_split(std::string_view text, bool add_special,
                                                       SpecialPolicy policy) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && add_bos_ && bos_id_ >= 0) out.push_back(bos_id_);
  bool after_special = true;
  if (!text.empty()) {
    for (const Fragment& fragment : split_special(text, policy)) {
      if (fragment.token >= 0) {
        out.push_back(fragment.token);
        after_special = true;
      } else {
        encode_text(fragment.text, after_special, out);
        after_special = false;
      }
    }
  }
  if (add_special && add_eos_ && eos_id_ >= 0) out.push_back(eos_id_);
  return out;
}

std::unique_ptr<Tokenizer> make_tokenizer(TokenizerVocab vocab) {
  const size_t n = vocab.tokens.size();
  if (n == 0) throw gguf::GgufError("tokenizer.ggml.tokens is empty");
  if (!vocab.scores.empty() && vocab.scores.size() != n)
    throw gguf::GgufError("tokenizer.ggml.scores has " + std::to_string(vocab.scores.size()) +
                          " entries for " + std::to_string(n) + " tokens");
  if (!vocab.types.empty() && vocab.types.size() != n)
    throw gguf::GgufError("tokenizer.ggml.token_type has " + std::to_string(vocab.types.size()) +
                          " entries for " + std::to_string(n) + " tokens");
  for (TokenType& type : vocab.types)
    if (static_cast<int32_t>(type) < 0 || static_cast<int32_t>(type) > 6) type = TokenType::kNormal;

  if (vocab.model == TokenizerModel::kSentencePiece) {
    // llama.cpp's defaults for SentencePiece vocabularies without the keys.
    if (vocab.bos_id < 0 && n > 2) vocab.bos_id = 1;
    if (vocab.eos_id < 0 && n > 2) vocab.eos_id = 2;
    if (vocab.unk_id < 0) vocab.unk_id = 0;
  }
  const auto in_range = [n](int32_t id) { return id >= 0 && static_cast<size_t>(id) < n; };
  for (auto [id, key] : {std::pair{vocab.bos_id, "bos_token_id"}, {vocab.eos_id, "eos_token_id"}})
    if (id >= 0 && !in_range(id))
      throw gguf::GgufError("tokenizer.ggml." + std::string(key) + " = " + std::to_string(id) +
                            " is outside the vocabulary of " + std::to_string(n) + " tokens");
  // Optional ids some converters get wrong: ignored when out of range, as llama.cpp does.
  for (int32_t* id :
       {&vocab.eot_id, &vocab.eom_id, &vocab.pad_id, &vocab.unk_id, &vocab.fim.prefix,
        &vocab.fim.suffix, &vocab.fim.middle, &vocab.fim.pad, &vocab.fim.repo, &vocab.fim.file_sep})
    if (!in_range(*id)) *id = -1;

  if (vocab.model == TokenizerModel::kSentencePiece) return make_sentencepiece_tokenizer(vocab);
  return make_byte_level_bpe_tokenizer(vocab);
}

}  // namespace tandem
