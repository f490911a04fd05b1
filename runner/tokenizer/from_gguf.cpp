// Tokenizer::from_gguf: reads the tokenizer.* metadata into a TokenizerVocab.

#include <cctype>

#include "runner/tokenizer/tokenizer.h"
#include "runner/tokenizer/vocab.h"

namespace tandem {

namespace {

int32_t optional_id(const gguf::File& file, std::string_view key) {
  const int64_t id = file.get_int_or(key, -1);
  if (id < -1 || id > INT32_MAX)
    throw gguf::GgufError(file.name() + ": " + std::string(key) + " = " + std::to_string(id) +
                          " is not a token id");
  return static_cast<int32_t>(id);
}

std::optional<bool> optional_flag(const gguf::File& file, std::string_view key) {
  if (!file.has(key)) return std::nullopt;
  return file.get_bool_or(key, false);
}

// llama.cpp marks Phi-3's special tokens RSTRIP (as its tokenizer.json does), choosing the
// model by general.name: every control, user-defined and unknown token but <unk>, <s> and
// <|endoftext|>. So "<|user|>\nHi" tokenizes as <|user|> then "Hi".
std::vector<int32_t> phi3_rstrip_ids(const gguf::File& file, const TokenizerVocab& vocab) {
  std::string name = file.get_string_or("general.name", "");
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name.find("phi-3") == std::string::npos && name.find("phi3") == std::string::npos) return {};
  std::vector<int32_t> ids;
  for (size_t id = 0; id < vocab.types.size() && id < vocab.tokens.size(); ++id) {
    const TokenType type = vocab.types[id];
    const std::string& text = vocab.tokens[id];
    if ((type == TokenType::kControl || type == TokenType::kUserDefined ||
         type == TokenType::kUnknown) &&
        text != "<unk>" && text != "<s>" && text != "<|endoftext|>")
      ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

// The FIM ids as llama.cpp's loader reads them: each key as an id, one outside the
// vocabulary ignored (a warning there), and the deprecated prefix/suffix/middle_token_id
// after the fim_* keys, so where a file has both the deprecated key wins.
Tokenizer::FimTokens fim_ids(const gguf::File& file, size_t vocab_size) {
  Tokenizer::FimTokens fim;
  const auto read = [&](std::string_view key, int32_t& id) {
    const int64_t value = file.get_int_or(key, -1);
    if (value >= 0 && static_cast<uint64_t>(value) < vocab_size) id = static_cast<int32_t>(value);
  };
  read("tokenizer.ggml.fim_pre_token_id", fim.prefix);
  read("tokenizer.ggml.fim_suf_token_id", fim.suffix);
  read("tokenizer.ggml.fim_mid_token_id", fim.middle);
  read("tokenizer.ggml.fim_pad_token_id", fim.pad);
  read("tokenizer.ggml.fim_rep_token_id", fim.repo);
  read("tokenizer.ggml.fim_sep_token_id", fim.file_sep);
  read("tokenizer.ggml.prefix_token_id", fim.prefix);
  read("tokenizer.ggml.suffix_token_id", fim.suffix);
  read("tokenizer.ggml.middle_token_id", fim.middle);
  return fim;
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const gguf::File& file) {
  TokenizerVocab vocab;
  const std::string model = file.get_string("tokenizer.ggml.model");
  if (model == "llama") {
    vocab.model = TokenizerModel::kSentencePiece;
  } else if (model == "gpt2") {
    vocab.model = TokenizerModel::kByteLevelBpe;
  } else {
    throw gguf::GgufError(file.name() + ": tokenizer.ggml.model '" + model +
                          "' is not supported (llama or gpt2)");
  }
  vocab.pre = file.get_string_or("tokenizer.ggml.pre", "");
  vocab.tokens = file.get_string_array("tokenizer.ggml.tokens");
  if (file.has("tokenizer.ggml.scores"))
    vocab.scores = file.get_float_array("tokenizer.ggml.scores");
  if (file.has("tokenizer.ggml.token_type"))
    for (int32_t type : file.get_int_array("tokenizer.ggml.token_type"))
      vocab.types.push_back(static_cast<TokenType>(type));
  if (file.has("tokenizer.ggml.merges")) {
    vocab.merges = file.get_string_array("tokenizer.ggml.merges");
  } else if (vocab.model == TokenizerModel::kByteLevelBpe) {
    // Without its merges a byte-level BPE would split every text into single bytes: a
    // different tokenizer than the model's. llama.cpp refuses the file too.
    throw gguf::GgufError(file.name() +
                          ": tokenizer.ggml.merges is missing (a gpt2 tokenizer "
                          "needs its merges)");
  }
  vocab.bos_id = optional_id(file, "tokenizer.ggml.bos_token_id");
  vocab.eos_id = optional_id(file, "tokenizer.ggml.eos_token_id");
  vocab.eot_id = optional_id(file, "tokenizer.ggml.eot_token_id");
  vocab.eom_id = optional_id(file, "tokenizer.ggml.eom_token_id");
  vocab.pad_id = optional_id(file, "tokenizer.ggml.padding_token_id");
  vocab.unk_id = optional_id(file, "tokenizer.ggml.unknown_token_id");
  vocab.fim = fim_ids(file, vocab.tokens.size());
  vocab.add_bos = optional_flag(file, "tokenizer.ggml.add_bos_token");
  vocab.add_eos = optional_flag(file, "tokenizer.ggml.add_eos_token");
  vocab.add_space_prefix = optional_flag(file, "tokenizer.ggml.add_space_prefix");
  // tokenizer.ggml.remove_extra_whitespaces is read by llama.cpp but used only by its
  // Unigram (T5) tokenizer, which tandem does not have; SentencePiece BPE ignores it there.
  vocab.rstrip_ids = phi3_rstrip_ids(file, vocab);
  try {
    return make_tokenizer(std::move(vocab));
  } catch (const gguf::GgufError& e) {
    throw gguf::GgufError(file.name() + ": " + e.what());
  }
}

}  // namespace tandem
