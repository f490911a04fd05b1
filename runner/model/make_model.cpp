// Random-weight llama models: the shape table, the portable weight stream, the
// built-in byte-level vocabulary and the GGUF they are written to.
#include "runner/model/make_model.h"

#include <cmath>
#include <numbers>

#include "runner/gguf/quantize.h"
#include "runner/model/quantize_model.h"
#include "runner/tokenizer/utf8.h"

namespace tandem::make_model {

namespace {

constexpr ModelShape kShapes[] = {
    // name, hidden, layers, heads, kv_heads, ffn, context, rope_base, tied
    {"tiny", 64, 2, 4, 2, 128, 512, 10000.0, false},
    {"demo", 256, 4, 4, 2, 768, 2048, 10000.0, false},
    {"smollm2-135m", 576, 30, 9, 3, 1536, 2048, 100000.0, true},
};

constexpr uint64_t kAlignment = 32;

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t fnv1a64(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

std::span<const uint8_t> as_bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

// The tokenizer.* keys of a --vocab file, in file order, and its vocabulary size.
struct CopiedVocab {
  std::vector<std::pair<std::string, gguf::Value>> keys;
  uint64_t size = 0;
};

CopiedVocab read_vocab(const std::filesystem::path& path) {
  CopiedVocab vocab;
  try {
    const gguf::File file = gguf::File::open(path);
    for (const auto& [key, value] : file.metadata()) {
      if (key.starts_with("tokenizer.")) vocab.keys.emplace_back(key, value);
    }
    if (vocab.keys.empty())
      throw VocabError(path.string() + ": has no tokenizer.* metadata: not a vocabulary file");
    vocab.size = file.get_string_array("tokenizer.ggml.tokens").size();
  } catch (const gguf::GgufError& e) {
    throw VocabError(e.what());
  }
  if (vocab.size == 0) throw VocabError(path.string() + ": tokenizer.ggml.tokens is empty");
  return vocab;
}

constexpr const char* kChatmlTemplate =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// The keys naming fim_tokens() in their order, as uint32 as gguf-py writes token ids.
// llama.cpp would find Qwen's spellings by their text too; the keys are the primary way.
constexpr const char* kFimKeys[] = {
    "tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.fim_mid_token_id",
    "tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.fim_pad_token_id",
    "tokenizer.ggml.fim_rep_token_id", "tokenizer.ggml.fim_sep_token_id",
};

uint64_t built_in_vocab_size(bool fim) {
  return byte_level_tokens().size() + (fim ? fim_tokens().size() : 0);
}

void add_byte_level_tokenizer(gguf::Writer& writer, bool fim) {
  std::vector<std::string> tokens = byte_level_tokens();
  const auto bos = static_cast<uint32_t>(tokens.size() - 2);
  const auto eos = static_cast<uint32_t>(tokens.size() - 1);
  const auto first_fim = static_cast<uint32_t>(tokens.size());
  if (fim)
    for (std::string& text : fim_tokens()) tokens.push_back(std::move(text));
  std::vector<int32_t> types(tokens.size(), 1);  // 1: normal
  types[bos] = types[eos] = 3;                   // 3: control
  for (size_t id = first_fim; id < tokens.size(); ++id) types[id] = 3;
  writer.add_string("tokenizer.ggml.model", "gpt2");
  writer.add_string("tokenizer.ggml.pre", "default");
  writer.add_string_array("tokenizer.ggml.tokens", tokens);
  writer.add_int32_array("tokenizer.ggml.token_type", types);
  writer.add_string_array("tokenizer.ggml.merges", {});
  writer.add_uint32("tokenizer.ggml.bos_token_id", bos);
  writer.add_uint32("tokenizer.ggml.eos_token_id", eos);
  writer.add_bool("tokenizer.ggml.add_bos_token", true);
  if (fim)
    for (uint32_t i = 0; i < std::size(kFimKeys); ++i)
      writer.add_uint32(kFimKeys[i], first_fim + i);
  // ChatML, as Qwen's and SmolLM's files carry it, so chat requests work on made models.
  // The byte-level vocabulary has no <|im_start|> token: the markers stay text.
  writer.add_string("tokenizer.chat_template", kChatmlTemplate);
}

}  // namespace

std::span<const ModelShape> model_shapes() { return kShapes; }

const ModelShape* find_model_shape(std::string_view name) {
  for (const auto& shape : kShapes) {
    if (shape.name == name) return &shape;
  }
  return nullptr;
}

std::vector<std::string> model_shape_names() {
  std::vector<std::string> names;
  for (const auto& shape : kShapes) names.emplace_back(shape.name);
  return names;
}

namespace {

struct Dtype {
  const char* name;
  gguf::TensorType type;
};
constexpr Dtype kDtypes[] = {
    {"f32", gguf::TensorType::kF32},       {"f16", gguf::TensorType::kF16},
    {"bf16", gguf::TensorType::kBF16},     {"q8_0", gguf::TensorType::kQ8_0},
    {"q4_0", gguf::TensorType::kQ4_0},     {"q4_1", gguf::TensorType::kQ4_1},
    {"q5_0", gguf::TensorType::kQ5_0},     {"q5_1", gguf::TensorType::kQ5_1},
    {"q2_k", gguf::TensorType::kQ2_K},     {"q3_k", gguf::TensorType::kQ3_K},
    {"q4_k", gguf::TensorType::kQ4_K},     {"q5_k", gguf::TensorType::kQ5_K},
    {"q6_k", gguf::TensorType::kQ6_K},     {"iq4_nl", gguf::TensorType::kIQ4_NL},
    {"iq4_xs", gguf::TensorType::kIQ4_XS},
};

}  // namespace

std::optional<gguf::TensorType> dtype_from_name(std::string_view name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return d.type;
  }
  return std::nullopt;
}

std::vector<std::string> dtype_names() {
  std::vector<std::string> names;
  for (const auto& d : kDtypes) names.emplace_back(d.name);
  return names;
}

uint32_t file_type(gguf::TensorType dtype) { return quantize_model::file_type_of(dtype); }

gguf::TensorType weight_type(gguf::TensorType dtype, uint64_t row_length) {
  return quantize_model::row_fallback(dtype, row_length);
}

std::vector<PlannedTensor> plan_tensors(const ModelShape& shape, uint64_t vocab_size) {
  const auto hidden = static_cast<uint64_t>(shape.hidden);
  const auto ffn = static_cast<uint64_t>(shape.ffn);
  const auto kv = static_cast<uint64_t>(shape.kv_heads * shape.head_dim());
  std::vector<PlannedTensor> plan;
  plan.push_back({"token_embd.weight", {hidden, vocab_size}, false});
  plan.push_back({"output_norm.weight", {hidden}, true});
  if (!shape.tied_embeddings) plan.push_back({"output.weight", {hidden, vocab_size}, false});
  for (int64_t layer = 0; layer < shape.layers; ++layer) {
    const std::string blk = "blk." + std::to_string(layer) + ".";
    plan.push_back({blk + "attn_norm.weight", {hidden}, true});
    plan.push_back({blk + "attn_q.weight", {hidden, hidden}, false});
    plan.push_back({blk + "attn_k.weight", {hidden, kv}, false});
    plan.push_back({blk + "attn_v.weight", {hidden, kv}, false});
    plan.push_back({blk + "attn_output.weight", {hidden, hidden}, false});
    plan.push_back({blk + "ffn_norm.weight", {hidden}, true});
    plan.push_back({blk + "ffn_gate.weight", {hidden, ffn}, false});
    plan.push_back({blk + "ffn_up.weight", {hidden, ffn}, false});
    plan.push_back({blk + "ffn_down.weight", {ffn, hidden}, false});
  }
  return plan;
}

std::vector<float> random_weights(uint64_t seed, std::string_view tensor_name, uint64_t n) {
  // The stream depends only on (seed, name), so a tensor does not depend on the others.
  uint64_t mix = seed;
  uint64_t state = splitmix64(mix) ^ fnv1a64(tensor_name);
  std::vector<float> out(n);
  constexpr double kTwoPi = 2.0 * std::numbers::pi;
  constexpr double kUnit = 1.0 / 9007199254740992.0;  // 2^-53
  for (uint64_t i = 0; i < n; i += 2) {
    // Box-Muller: u1 in (0, 1] keeps the log finite.
    const double u1 = static_cast<double>((splitmix64(state) >> 11) + 1) * kUnit;
    const double u2 = static_cast<double>(splitmix64(state) >> 11) * kUnit;
    const double radius = std::sqrt(-2.0 * std::log(u1)) * kWeightStddev;
    out[i] = static_cast<float>(radius * std::cos(kTwoPi * u2));
    if (i + 1 < n) out[i + 1] = static_cast<float>(radius * std::sin(kTwoPi * u2));
  }
  return out;
}

std::vector<uint8_t> encode_weights(gguf::TensorType type, std::span<const float> values) {
  return gguf::quantize(type, values);
}

std::vector<std::string> byte_level_tokens() {
  // GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the rest
  // map in order to code points from 256 up.
  std::vector<std::string> tokens(256);
  uint32_t next_code_point = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable =
        (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    tokens[b] = utf8::encode(printable ? b : next_code_point++);
  }
  tokens.push_back("<|bos|>");
  tokens.push_back("<|eos|>");
  return tokens;
}

std::vector<std::string> fim_tokens() {
  return {"<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
          "<|fim_pad|>",    "<|repo_name|>",  "<|file_sep|>"};
}

void write_random_model(const MakeModelOptions& options) {
  const ModelShape* shape = find_model_shape(options.shape);
  if (shape == nullptr) throw std::invalid_argument("unknown model shape '" + options.shape + "'");
  // A copied vocabulary would need its token, score, type and merge arrays extended in step.
  if (options.fim && options.vocab)
    throw std::invalid_argument(
        "fim tokens are added to the built-in vocabulary only, not --vocab");
  std::optional<CopiedVocab> vocab;
  if (options.vocab) vocab = read_vocab(*options.vocab);
  const uint64_t vocab_size = vocab ? vocab->size : built_in_vocab_size(options.fim);

  gguf::Writer writer;
  writer.add_string("general.architecture", "llama");
  writer.add_string("general.name", "tandem-random-" + std::string(shape->name));
  writer.add_uint32("general.alignment", kAlignment);
  writer.add_uint32("general.file_type", file_type(options.dtype));
  writer.add_uint32("llama.context_length", static_cast<uint32_t>(shape->context));
  writer.add_uint32("llama.embedding_length", static_cast<uint32_t>(shape->hidden));
  writer.add_uint32("llama.block_count", static_cast<uint32_t>(shape->layers));
  writer.add_uint32("llama.feed_forward_length", static_cast<uint32_t>(shape->ffn));
  writer.add_uint32("llama.attention.head_count", static_cast<uint32_t>(shape->heads));
  writer.add_uint32("llama.attention.head_count_kv", static_cast<uint32_t>(shape->kv_heads));
  writer.add_float32("llama.rope.freq_base", static_cast<float>(shape->rope_base));
  writer.add_uint32("llama.rope.dimension_count", static_cast<uint32_t>(shape->head_dim()));
  writer.add_float32("llama.attention.layer_norm_rms_epsilon", kRmsEps);
  writer.add_uint32("llama.vocab_size", static_cast<uint32_t>(vocab_size));
  if (vocab) {
    for (auto& [key, value] : vocab->keys) writer.add(key, value);
  } else {
    add_byte_level_tokenizer(writer, options.fim);
  }

  for (const auto& tensor : plan_tensors(*shape, vocab_size)) {
    uint64_t n = 1;
    for (auto d : tensor.dims) n *= d;
    if (tensor.is_norm) {
      const std::vector<float> ones(n, 1.0f);
      writer.add_tensor(tensor.name, gguf::TensorType::kF32, tensor.dims, as_bytes(ones));
    } else {
      // Made when the writer reaches it: one tensor in memory at a time.
      const gguf::TensorType type = weight_type(options.dtype, tensor.dims[0]);
      writer.add_tensor(tensor.name, type, tensor.dims, [seed = options.seed, tensor, n, type] {
        return encode_weights(type, random_weights(seed, tensor.name, n));
      });
    }
  }
  writer.write(options.out);
}

}  // namespace tandem::make_model
