// Tokenizer throughput: encodes about 100 KB of mixed text (prose, code, numbers, CJK,
// emoji) with each vocabulary and reports bytes per second; the pathological inputs
// (one 100 KB word, 100 KB of spaces or digits) show encoding stays near-linear.
// The ../shared vocabularies are used when present (TANDEM_SHARED_DIR overrides where).

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>

#include "runner/gguf/gguf.h"
#include "runner/tokenizer/pretokenizer.h"
#include "runner/tokenizer/tokenizer.h"
#include "runner/tokenizer/utf8.h"
#include "runner/tokenizer/vocab.h"

namespace {

using tandem::Tokenizer;

constexpr size_t kTextBytes = 100 * 1024;

std::string mixed_text() {
  static const char* const kParagraphs[] = {
      "The quick brown fox jumps over the lazy dog. It's 3.14159 o'clock, and we'll see "
      "what they've done with the 1,234,567 records they'd found.\n\n",
      "int main(int argc, char** argv) {\n  for (int i = 0; i < argc; ++i) printf(\"%s\\n\", "
      "argv[i]);\n  return 0;\n}\n",
      "我想在apple工作1314151天～ 日本語のテキストと한국어 нещо на Български. ",
      "Emoji: 🦙🚀 😶‍🌫️ 👩‍👩‍👧 — “quotes” and ‘more’ … "
      "done.\n",
  };
  std::string text;
  for (size_t i = 0; text.size() < kTextBytes; ++i) {
    text += kParagraphs[i % 4];
    text += std::to_string(i * 7919) + " ";
  }
  return text;
}

std::filesystem::path vocab_dir() {
  if (const char* dir = std::getenv("TANDEM_SHARED_DIR"))
    return std::filesystem::path(dir) / "vocab";
  // This file lives at <repo>/bench/micro/; ../shared sits beside the repository.
  return std::filesystem::path(__FILE__).parent_path() / ".." / ".." / ".." / "shared" / "vocab";
}

std::unique_ptr<Tokenizer> shared_tokenizer(const std::string& name) {
  const auto path = vocab_dir() / ("ggml-vocab-" + name + ".gguf");
  if (!std::filesystem::exists(path)) return nullptr;
  return Tokenizer::from_gguf(tandem::gguf::File::open(path));
}

// The vocabulary `tandem make-model` writes without --vocab: 256 byte tokens, no merges.
std::unique_ptr<Tokenizer> byte_level_tokenizer() {
  tandem::TokenizerVocab vocab;
  vocab.model = tandem::TokenizerModel::kByteLevelBpe;
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    vocab.tokens.push_back(tandem::utf8::encode(printable ? static_cast<char32_t>(b) : next++));
  }
  return tandem::make_tokenizer(vocab);
}

void encode(benchmark::State& state, const Tokenizer* tokenizer, const std::string& text) {
  if (tokenizer == nullptr) {
    state.SkipWithError("vocabulary not found (../shared/vocab absent)");
    return;
  }
  size_t tokens = 0;
  for (auto _ : state) {
    const auto ids = tokenizer->encode(text, true, false);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(tokens);
}

void decode(benchmark::State& state, const Tokenizer* tokenizer, const std::string& text) {
  if (tokenizer == nullptr) {
    state.SkipWithError("vocabulary not found (../shared/vocab absent)");
    return;
  }
  const auto ids = tokenizer->encode(text, false, false);
  for (auto _ : state) {
    tandem::Detokenizer detokenizer(*tokenizer);
    size_t bytes = 0;
    for (int32_t id : ids) bytes += detokenizer.push(id).size();
    benchmark::DoNotOptimize(bytes);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

void pre_tokenize(benchmark::State& state, const char* pre, const std::string& text) {
  const tandem::PreTokenizer pre_tokenizer(pre);
  for (auto _ : state) benchmark::DoNotOptimize(pre_tokenizer.split(text));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

// Building a tokenizer from an already-open file: index, decoded pieces, merge table.
void load(benchmark::State& state, const std::string& name) {
  const auto path = vocab_dir() / ("ggml-vocab-" + name + ".gguf");
  if (!std::filesystem::exists(path)) {
    state.SkipWithError("vocabulary not found (../shared/vocab absent)");
    return;
  }
  const auto file = tandem::gguf::File::open(path);
  for (auto _ : state) benchmark::DoNotOptimize(Tokenizer::from_gguf(file));
}

}  // namespace

int main(int argc, char** argv) {
  static const auto spm = shared_tokenizer("llama-spm");
  static const auto gpt2 = shared_tokenizer("gpt-2");
  static const auto bytes = byte_level_tokenizer();
  static const std::string text = mixed_text();
  static const std::string one_word(kTextBytes, 'a');
  static const std::string spaces(kTextBytes, ' ');
  static const std::string digits = [] {
    std::string s;
    for (size_t i = 0; s.size() < kTextBytes; ++i) s += std::to_string(i);
    return s;
  }();

  const struct {
    const char* name;
    const Tokenizer* tokenizer;
  } vocabs[] = {{"llama_spm", spm.get()}, {"gpt2", gpt2.get()}, {"byte_level", bytes.get()}};
  for (const auto& vocab : vocabs) {
    const std::string name = vocab.name;
    benchmark::RegisterBenchmark(("encode_mixed_100KB/" + name).c_str(), encode, vocab.tokenizer,
                                 text)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("encode_one_word_100KB/" + name).c_str(), encode, vocab.tokenizer,
                                 one_word)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("encode_spaces_100KB/" + name).c_str(), encode, vocab.tokenizer,
                                 spaces)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("encode_digits_100KB/" + name).c_str(), encode, vocab.tokenizer,
                                 digits)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("detokenize_mixed_100KB/" + name).c_str(), decode,
                                 vocab.tokenizer, text)
        ->Unit(benchmark::kMillisecond);
  }
  for (const char* pre : {"gpt2", "llama3", "qwen2", "smollm"}) {
    benchmark::RegisterBenchmark(("pre_tokenize_mixed_100KB/" + std::string(pre)).c_str(),
                                 pre_tokenize, pre, text)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("pre_tokenize_spaces_100KB/" + std::string(pre)).c_str(),
                                 pre_tokenize, pre, spaces)
        ->Unit(benchmark::kMillisecond);
  }
  for (const std::string name : {"llama-spm", "gpt-2"})
    benchmark::RegisterBenchmark(("from_gguf/" + name).c_str(), load, name)
        ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
