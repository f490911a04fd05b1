// The pre-tokenizer table, transcribed from llama.cpp's src/llama-vocab.cpp (the names in
// llama_vocab::impl::load, the regex lists in llm_tokenizer_bpe). Where llama.cpp runs an
// approximation of a tokenizer.json regex that std::regex can digest (the lookahead
// spelling of \p{Lu}/\p{Ll} for Tekken and GPT-4o) or a hand-written splitter (GPT-2,
// Llama 3), the table has the tokenizer.json regex itself, which PCRE2 runs as written.
// The case-insensitive contraction group (?i:'s|...) is spelled out as llama.cpp does.
// A non-ASCII character in a regex is written \x{HHHH}, so no editor can normalize it.
//
// tests/runner/tokenizer/make_pretokenizer_vectors.py holds a second copy of this table;
// the test checks the two agree and that PCRE2 splits as Python's `regex` module does.

#include "runner/tokenizer/pretokenizer_table.h"

namespace tandem {

namespace {

const std::string kContractions = R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))";
const std::string kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const std::string kLlama3 =
    kContractions +
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kQwen2 =
    kContractions +
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kUpper = R"([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])";
const std::string kLower = R"([\p{Ll}\p{Lm}\p{Lo}\p{M}])";
const std::string kGpt4o = R"([^\r\n\p{L}\p{N}]?)" + kUpper + "*" + kLower + "+" + kContractions +
                           R"(?|[^\r\n\p{L}\p{N}]?)" + kUpper + "+" + kLower + "*" + kContractions +
                           R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kBloom =
    R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{0964}\x{06D4}\x{060C})]+)";
const std::string kCjkDeepseek = R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";
const std::string kCjkKana = R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)";
const std::string kAsciiPunctWord = R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+)";
// DeepSeek LLM's cased letters (Lu, Ll, Lt), as its tokenizer.json lists them.
const std::string kDeepseekLetters =
    R"(\s?[A-Za-z\x{00B5}\x{00C0}-\x{00D6}\x{00D8}-\x{00F6}\x{00F8}-\x{01BA}\x{01BC}-\x{01BF})"
    R"(\x{01C4}-\x{0293}\x{0295}-\x{02AF}\x{0370}-\x{0373}\x{0376}\x{0377}\x{037B}-\x{037D})"
    R"(\x{037F}\x{0386}\x{0388}-\x{038A}\x{038C}\x{038E}-\x{03A1}\x{03A3}-\x{03F5})"
    R"(\x{03F7}-\x{0481}\x{048A}-\x{052F}\x{0531}-\x{0556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5})"
    R"(\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77})"
    R"(\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D})"
    R"(\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4})"
    R"(\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3})"
    R"(\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})"
    R"(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D})"
    R"(\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184})"
    R"(\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D})"
    R"(\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF})"
    R"(\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A})"
    R"(\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2})"
    R"(\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)";

std::vector<PreTokenizerFamily> make_families() {
  const std::string letter_words = R"([^\r\n\p{L}\p{N}]?)" + kUpper + "*" + kLower + "+" +
                                   kContractions + R"(?|[^\r\n\p{L}\p{N}]?)" + kUpper + "+" +
                                   kLower + "*" + kContractions + "?";
  return {
      // No key, or "default": llama.cpp's fallback list.
      {{"", "default"}, {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", R"([0-9][0-9][0-9])"}},
      {.names = {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0",
                 "lfm2", "jina-v5-nano"},
       .regexes = {kLlama3},
       .ignore_merges = true,
       .add_bos = true},
      {{"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"}, {kLlama3}},
      {{"jais-2"},
       {kContractions +
        R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+)"
        R"(|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S))"
        R"(|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})"}},
      {.names = {"minicpm5"},
       .regexes =
           {R"(\p{N}{1,3})",
            kContractions +
                R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
       .ignore_merges = true},
      {{"deepseek-llm"},
       {R"([\r\n])", kDeepseekLetters,
        R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)",
        R"(\s+$)", kCjkDeepseek, R"(\p{N}+)"}},
      {{"deepseek-coder"}, {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjkDeepseek, R"(\p{N})"}},
      {{"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"},
       {R"(\p{N}{1,3})", kCjkKana,
        kAsciiPunctWord + R"(|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*)" +
            R"(|\s*[\r\n]+|\s+(?!\S)|\s+)"}},
      {{"spark2_5"},
       {R"(\p{N}{1,3})", kCjkKana,
        kAsciiPunctWord + R"(|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+|[\r\n])" +
            R"(|\s+(?!\S)|\s+)",
        R"(\p{N})"}},
      {.names = {"youtu"},
       .regexes = {R"([\x{AC00}-\x{D7A3}\x{3131}-\x{318E}]+)"
                   R"(|[\x{FF01}\x{2026}\x{201C}\x{201D}\x{2018}\x{2019}\x{2014}\x{FF1A}\x{FF1B})"
                   R"(\x{FF0C}\x{3001}-\x{303F}\x{FE30}-\x{FE4F}]+|[\x{3105}-\x{312F}]+|)" +
                       kCjkKana,
                   letter_words + R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
       .ignore_merges = true},
      {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, R"([0-9][0-9][0-9])"}},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b",
        "mellum2"},
       {R"(\p{N})", kGpt2}},
      // "gpt2" is tandem's own alias (the tokenizer.ggml.model value); llama.cpp: "gpt-2".
      {{"gpt-2", "gpt2", "phi-2", "jina-es", "jina-de", "gigachat", "a.x-4.0", "mellum", "exaone4",
        "mpt", "olmo", "jais", "trillion", "granite-docling"},
       {kGpt2}},
      {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2", "hunyuan",
        "solar-open", "grok-2"},
       {kQwen2}},
      {{"qwen35"},
       {kContractions +
        R"(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+)"
        R"(|\s+(?!\S)|\s+)"}},
      {{"poro-chat", "bloom", "gpt3-finnish"}, {kBloom}},
      {{"viking"}, {kBloom, R"(\p{N})"}},
      {.names = {"tekken"},
       .regexes = {R"([^\r\n\p{L}\p{N}]?)" + kUpper + "*" + kLower + "+" +
                   R"(|[^\r\n\p{L}\p{N}]?)" + kUpper + "+" + kLower + "*" +
                   R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
       .ignore_merges = true,
       .add_bos = true},
      {.names = {"chameleon"},
       .regexes = {R"(<sentinel:[0-9]+>)", R"((IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z)",
                   R"(([\t\n]|    |  ))", R"(\p{N})", R"([\p{P}!-/:-@\[-`{-~])", kGpt2},
       .add_bos = true},
      {{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, {kGpt4o}},
      // llama.cpp's own regex (no tokenizer.json original is recorded there).
      {{"granite-embed-multi-97m"},
       {R"([^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))*((?=[\p{L}\p{M}])([^A-Z]))+)" +
        kContractions + R"(?|[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))+)" +
        R"(((?=[\p{L}\p{M}])([^A-Z]))*)" + kContractions +
        R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
       true},
      {{"tiny_aya", "cohere2moe"}, {std::string(kDigitGroupsRegex), kGpt4o}},
      {{"superbpe"}, {R"(\p{N}+)", std::string(kDigitSplitsRegex)}},
      {{"bailingmoe", "bailingmoe2", "llada-moe"},
       {R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})"
        R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)"}},
      {{"seed-coder"},
       {kContractions +
        R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)"}},
      {{"ufakzeka"},
       {R"([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}},
      {{"laguna"}, {R"([^\n]+|[\n]+)", kQwen2}},
      {{"exaone-moe"},
       {kContractions +
        R"(|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?)"
        R"(|\s*[\r\n]|\s+(?!\S)|\s+)"}},
  };
}

}  // namespace

const std::vector<PreTokenizerFamily>& pre_tokenizer_families() {
  static const std::vector<PreTokenizerFamily> families = make_families();
  return families;
}

const std::vector<UnsupportedPreTokenizer>& unsupported_pre_tokenizers() {
  static const std::vector<UnsupportedPreTokenizer> names = {
      {"kimi-k2", "its regex intersects classes, which PCRE2 lacks, and it has no merges"},
      {"afmoe", "llama.cpp splits its digits by hand, not by a regex"},
      {"gemma4", "SentencePiece-style BPE on raw UTF-8, not byte-level BPE"},
      {"granite-embed-multi-311m", "SentencePiece-style BPE on raw UTF-8, not byte-level BPE"},
      {"sarvam-moe", "SentencePiece-style BPE on raw UTF-8, not byte-level BPE"},
      {"whitespace", "a whitespace-split vocabulary, not byte-level BPE"},
      {"jina-v1-en", "it appends a SEP token, which tandem does not"},
      {"jina-v2-code", "it appends a SEP token, which tandem does not"},
      {"roberta-bpe", "it appends a SEP token, which tandem does not"},
      {"jina-v2-de", "it strips the space before <mask>, which tandem does not"},
      {"jina-v2-es", "it strips the space before <mask>, which tandem does not"},
      {"modern-bert", "an encoder that strips the space before [MASK], which tandem does not"},
  };
  return names;
}

}  // namespace tandem
