// `tandem make-model`: deterministic random-weight llama models of named shapes, so
// tests and the default `serve` need no download. The weights are a pure function of
// (seed, tensor name): same options, byte-identical file, on any platform.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "runner/gguf/gguf.h"

namespace tandem::make_model {

struct ModelShape {
  std::string_view name;
  int64_t hidden = 0;
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t ffn = 0;
  int64_t context = 0;
  double rope_base = 10000.0;
  bool tied_embeddings = false;  // no output.weight: the head reuses token_embd.weight
  int64_t head_dim() const { return hidden / heads; }
};

inline constexpr float kRmsEps = 1e-5f;
inline constexpr float kWeightStddev = 0.02f;

// tiny, demo, smollm2-135m.
std::span<const ModelShape> model_shapes();
// nullptr when no shape has that name.
const ModelShape* find_model_shape(std::string_view name);
std::vector<std::string> model_shape_names();

// f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl,
// iq4_xs <-> the GGUF tensor type.
std::optional<gguf::TensorType> dtype_from_name(std::string_view name);
std::vector<std::string> dtype_names();
// general.file_type in llama.cpp's numbering (0 F32, 1 F16, 7 Q8_0, 32 BF16, 15 Q4_K_M, ...;
// Q3_K/Q4_K/Q5_K as their _S mixes).
uint32_t file_type(gguf::TensorType dtype);

struct MakeModelOptions {
  std::string shape = "tiny";
  gguf::TensorType dtype = gguf::TensorType::kF16;
  std::optional<std::filesystem::path> vocab;  // a GGUF whose tokenizer.* keys to copy
  // The built-in vocabulary gains Qwen2.5-Coder's FIM tokens (fim_tokens(), ids 258-263)
  // and the tokenizer.ggml.fim_*_token_id keys naming them, so /infill can be tested.
  // Not with `vocab` (write_random_model throws std::invalid_argument).
  bool fim = false;
  uint64_t seed = 0;
  std::filesystem::path out;
};

// A --vocab file that cannot be used: not GGUF, or no tokenizer.* keys / token list.
struct VocabError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One tensor of a model, in file order, with llama.cpp's name and ggml dim order.
struct PlannedTensor {
  std::string name;
  std::vector<uint64_t> dims;
  bool is_norm = false;  // RMS norm weight: all ones, always F32
};
std::vector<PlannedTensor> plan_tensors(const ModelShape& shape, uint64_t vocab_size);

// n samples of N(0, kWeightStddev) drawn from a stream seeded by (seed, tensor name).
std::vector<float> random_weights(uint64_t seed, std::string_view tensor_name, uint64_t n);
// Encodes F32 values as `type` with gguf::quantize (Q8_0 the ggml reference way); n must
// fill whole blocks.
std::vector<uint8_t> encode_weights(gguf::TensorType type, std::span<const float> values);
// The type a weight matrix with rows of `row_length` is written as for --dtype `dtype`:
// `dtype` where its blocks divide the rows, else llama-quantize's fallback
// (quantize_model::row_fallback; e.g. smollm2's 576-wide rows: Q4_K -> Q5_0).
gguf::TensorType weight_type(gguf::TensorType dtype, uint64_t row_length);

// The built-in byte-level vocabulary: the 256 GPT-2 byte strings, <|bos|>, <|eos|>.
std::vector<std::string> byte_level_tokens();
// The FIM control tokens MakeModelOptions::fim appends after them, in Qwen2.5-Coder's order:
// <|fim_prefix|>, <|fim_middle|>, <|fim_suffix|>, <|fim_pad|>, <|repo_name|>, <|file_sep|>.
std::vector<std::string> fim_tokens();

// Writes the model to options.out. Throws VocabError for a bad --vocab file,
// std::invalid_argument for options that do not go together, and std::runtime_error for
// an I/O failure.
void write_random_model(const MakeModelOptions& options);

}  // namespace tandem::make_model
