// `tandem quantize` and `make-model --dtype`: which type each tensor of a model is written
// as, by llama-quantize's rules (llama.cpp src/llama-quant.cpp, llama_tensor_get_type), and
// the file rewrite that quantizes a GGUF one tensor at a time. Pure functions plus one
// that writes a file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runner/gguf/gguf.h"

namespace tandem::quantize_model {

// What to quantize to: one of llama-quantize's mixes (Q4_K_M, ...) or a single type.
struct Target {
  std::string name;        // as llama-quantize spells it ("Q4_K_M", "IQ4_XS", "F16")
  gguf::TensorType base;   // the type of most weight matrices
  uint32_t file_type = 0;  // general.file_type: llama.cpp's LLAMA_FTYPE value
  bool mix = false;        // per-tensor rules apply (else every weight matrix is `base`)
};

// Case-insensitive: the mixes Q4_K_M, Q4_K_S, Q5_K_M, Q5_K_S, Q6_K, Q8_0, Q4_0, and the
// single types Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, IQ4_NL, IQ4_XS, F32, F16, BF16.
// nullopt for anything else.
std::optional<Target> find_target(std::string_view name);
std::vector<std::string> target_names();

// The LLAMA_FTYPE value for a file whose weights are mostly `type` (0 F32, 1 F16, 2 Q4_0,
// ..., Q3_K/Q4_K/Q5_K as their _S mixes). Throws std::invalid_argument for none.
uint32_t file_type_of(gguf::TensorType type);

// The type a tensor of row length `row_length` gets when `type`'s blocks do not divide its
// rows, as llama-quantize's tensor_type_fallback: Q2_K/Q3_K -> Q4_0, IQ4_XS -> IQ4_NL,
// Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, then F16 if that still does not fit (where
// llama-quantize throws for a 32-block type, this falls back to F16 too). `type` itself
// when it fits.
gguf::TensorType row_fallback(gguf::TensorType type, uint64_t row_length);

// What the per-tensor rules need to know about the model.
struct ModelFacts {
  std::string architecture;
  int64_t layers = 0;  // {arch}.block_count
  int64_t heads = 0, kv_heads = 0;
  int64_t attn_v_count = 0;     // attn_v.weight and attn_qkv.weight tensors
  bool tied_embeddings = true;  // no output.weight
};
ModelFacts facts_of(const gguf::File& file);

// The type a tensor is written as under `target`, row-length fallback included. Tensors
// that are not weight matrices (1-D, norms, names not ending in "weight") keep `current`.
gguf::TensorType tensor_type(const Target& target, const ModelFacts& facts, const std::string& name,
                             const std::vector<uint64_t>& dims, gguf::TensorType current);

struct Report {
  std::map<gguf::TensorType, int> tensors_by_type;
  uint64_t in_bytes = 0, out_bytes = 0;  // tensor data, before and after
  uint64_t out_file_bytes = 0;
};

// Reads `in` (any type tandem can dequantize), writes `out` with every metadata key copied
// (general.file_type and general.quantization_version set), tensors in the same order and
// alignment. One tensor is in memory at a time. Throws gguf::GgufError for a bad input
// file, std::runtime_error for an I/O failure.
Report quantize_file(const std::filesystem::path& in, const std::filesystem::path& out,
                     const Target& target);

}  // namespace tandem::quantize_model
