// llama-quantize's per-tensor rules and the one-tensor-at-a-time GGUF rewrite.
//
// The rules are the subset of llama.cpp's llama_tensor_get_type (src/llama-quant.cpp) that
// applies to the mixes offered here and the architectures tandem runs (llama, qwen2, qwen3,
// phi3, gemma2, gemma3). Left out, because no offered mix or supported model reaches them:
// the IQ1/IQ2/IQ3, Q2_K, Q3_K_S/M/L and IQ4_NL/IQ4_XS mixes' own rules (a single type named
// here is written "pure", as llama-quantize --pure does), Falcon's rules, the MoE
// (n_expert) rules, imatrix-dependent choices, --tensor-type / --output-tensor-type
// overrides, and the 70B attn_v bump for qwen2 (only llama's 80-layer GQA model, which
// llama.cpp types as 70B, gets it).
#include "runner/model/quantize_model.h"

#include <algorithm>
#include <cctype>
#include <span>
#include <stdexcept>

#include "runner/gguf/quant.h"
#include "runner/gguf/quantize.h"
#include "runner/model/config.h"

namespace tandem::quantize_model {

namespace {

using gguf::TensorType;

struct TargetRow {
  const char* name;
  TensorType base;
  bool mix;
};

// llama-quantize's names. Q6_K, Q8_0 and Q4_0 are mixes there too (their output/embedding
// rule), so they are listed as mixes.
constexpr TargetRow kTargets[] = {
    {"Q4_K_M", TensorType::kQ4_K, true},    {"Q4_K_S", TensorType::kQ4_K, true},
    {"Q5_K_M", TensorType::kQ5_K, true},    {"Q5_K_S", TensorType::kQ5_K, true},
    {"Q6_K", TensorType::kQ6_K, true},      {"Q8_0", TensorType::kQ8_0, true},
    {"Q4_0", TensorType::kQ4_0, true},      {"Q4_1", TensorType::kQ4_1, false},
    {"Q5_0", TensorType::kQ5_0, false},     {"Q5_1", TensorType::kQ5_1, false},
    {"Q2_K", TensorType::kQ2_K, false},     {"Q3_K", TensorType::kQ3_K, false},
    {"Q4_K", TensorType::kQ4_K, false},     {"Q5_K", TensorType::kQ5_K, false},
    {"IQ4_NL", TensorType::kIQ4_NL, false}, {"IQ4_XS", TensorType::kIQ4_XS, false},
    {"F32", TensorType::kF32, false},       {"F16", TensorType::kF16, false},
    {"BF16", TensorType::kBF16, false},
};

// LLAMA_FTYPE values (llama.h) of the mixes.
uint32_t mix_file_type(std::string_view name) {
  if (name == "Q4_K_S") return 14;
  if (name == "Q4_K_M") return 15;
  if (name == "Q5_K_S") return 16;
  if (name == "Q5_K_M") return 17;
  return 0;
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) ==
                  std::toupper(static_cast<unsigned char>(y));
         });
}

bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

// ggml_n_dims: the dimensions up to the last one above 1.
size_t effective_dims(const std::vector<uint64_t>& dims) {
  size_t n = 1;
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] > 1) n = i + 1;
  return n;
}

// llama-quantize's tensor_allows_quantization, for the tensors these families carry.
bool is_weight_matrix(const std::string& name, const std::vector<uint64_t>& dims) {
  if (effective_dims(dims) < 2) return false;
  if (!name.ends_with("weight")) return false;
  return !contains(name, "_norm.weight") && !contains(name, "ffn_gate_inp.weight");
}

// llama-quantize's use_more_bits: the first and last eighth of the layers, and every third
// in between.
bool use_more_bits(int64_t layer, int64_t layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

TensorType mix_rule(const Target& target, const ModelFacts& facts, const std::string& name,
                    const std::vector<uint64_t>& dims) {
  const std::string& mix = target.name;
  TensorType type = target.base;
  const bool is_output = name == "output.weight";
  const bool is_embedding = name == "token_embd.weight";
  if (is_output || (facts.tied_embeddings && is_embedding)) {
    // The output matrix (or the embedding that doubles as it) gets more bits.
    if (dims[0] % static_cast<uint64_t>(gguf::block_elements(type)) != 0) {
      type = TensorType::kQ8_0;
    } else if (type != TensorType::kQ8_0) {
      type = TensorType::kQ6_K;
    }
    return type;
  }
  if (is_embedding) return type;
  const int64_t layer = tensor_layer(name);
  if (contains(name, "attn_v.weight") || contains(name, "attn_qkv.weight")) {
    if ((mix == "Q4_K_M" || mix == "Q5_K_M") && use_more_bits(layer, facts.attn_v_count)) {
      type = TensorType::kQ6_K;
    } else if (mix == "Q4_K_S" && layer < 4) {
      type = TensorType::kQ5_K;
    }
    // llama.cpp's 70B (llama, 80 layers, GQA): attn_v is 8x smaller than attn_q; more bits.
    const bool is_70b =
        facts.architecture == "llama" && facts.layers == 80 && facts.heads != facts.kv_heads;
    if (is_70b && (type == TensorType::kQ3_K || type == TensorType::kQ4_K))
      type = TensorType::kQ5_K;
    return type;
  }
  if (contains(name, "ffn_down")) {
    if ((mix == "Q4_K_M" || mix == "Q5_K_M") && use_more_bits(layer, facts.layers)) {
      type = TensorType::kQ6_K;
    } else if (mix == "Q4_K_S" && layer < facts.layers / 8) {
      type = TensorType::kQ5_K;
    }
  }
  return type;
}

}  // namespace

std::optional<Target> find_target(std::string_view name) {
  for (const auto& row : kTargets) {
    if (!equal_ignoring_case(name, row.name)) continue;
    const uint32_t file_type =
        row.mix && mix_file_type(row.name) != 0 ? mix_file_type(row.name) : file_type_of(row.base);
    return Target{row.name, row.base, file_type, row.mix};
  }
  return std::nullopt;
}

std::vector<std::string> target_names() {
  std::vector<std::string> names;
  for (const auto& row : kTargets) names.emplace_back(row.name);
  return names;
}

uint32_t file_type_of(TensorType type) {
  switch (type) {
    case TensorType::kF32:
      return 0;
    case TensorType::kF16:
      return 1;
    case TensorType::kQ4_0:
      return 2;
    case TensorType::kQ4_1:
      return 3;
    case TensorType::kQ8_0:
      return 7;
    case TensorType::kQ5_0:
      return 8;
    case TensorType::kQ5_1:
      return 9;
    case TensorType::kQ2_K:
      return 10;
    case TensorType::kQ3_K:
      return 11;  // Q3_K_S
    case TensorType::kQ4_K:
      return 14;  // Q4_K_S
    case TensorType::kQ5_K:
      return 16;  // Q5_K_S
    case TensorType::kQ6_K:
      return 18;
    case TensorType::kIQ4_NL:
      return 25;
    case TensorType::kIQ4_XS:
      return 30;
    case TensorType::kBF16:
      return 32;
  }
  throw std::invalid_argument(std::string("no llama.cpp file type for ") + gguf::type_name(type));
}

TensorType row_fallback(TensorType type, uint64_t row_length) {
  auto fits = [row_length](TensorType t) {
    return row_length % static_cast<uint64_t>(gguf::block_elements(t)) == 0;
  };
  if (fits(type)) return type;
  TensorType fallback = TensorType::kF16;
  switch (type) {
    // llama-quantize's llama_tensor_get_type (build 10587, which made the shared
    // kquants): the 2- and 3-bit K types fall back to IQ4_NL, as IQ4_XS does.
    case TensorType::kQ2_K:
    case TensorType::kQ3_K:
    case TensorType::kIQ4_XS:
      fallback = TensorType::kIQ4_NL;
      break;
    case TensorType::kQ4_K:
      fallback = TensorType::kQ5_0;
      break;
    case TensorType::kQ5_K:
      fallback = TensorType::kQ5_1;
      break;
    case TensorType::kQ6_K:
      fallback = TensorType::kQ8_0;
      break;
    default:
      break;
  }
  return fits(fallback) ? fallback : TensorType::kF16;
}

ModelFacts facts_of(const gguf::File& file) {
  ModelFacts facts;
  facts.architecture = file.get_string_or("general.architecture", "");
  const std::string prefix = facts.architecture + ".";
  facts.layers = file.get_int_or(prefix + "block_count", 0);
  facts.heads = file.get_int_or(prefix + "attention.head_count", 0);
  facts.kv_heads = file.get_int_or(prefix + "attention.head_count_kv", facts.heads);
  int64_t max_layer = -1;
  for (const auto& t : file.tensors()) {
    if (contains(t.name, "attn_v.weight") || contains(t.name, "attn_qkv.weight"))
      ++facts.attn_v_count;
    if (t.name == "output.weight") facts.tied_embeddings = false;
    max_layer = std::max<int64_t>(max_layer, tensor_layer(t.name));
  }
  if (facts.layers == 0) facts.layers = max_layer + 1;
  return facts;
}

TensorType tensor_type(const Target& target, const ModelFacts& facts, const std::string& name,
                       const std::vector<uint64_t>& dims, TensorType current) {
  if (!is_weight_matrix(name, dims)) return current;
  const bool quantized = gguf::block_elements(target.base) > 1;
  if (!quantized) return target.base;
  const TensorType type = target.mix ? mix_rule(target, facts, name, dims) : target.base;
  return row_fallback(type, dims[0]);
}

Report quantize_file(const std::filesystem::path& in, const std::filesystem::path& out,
                     const Target& target) {
  const gguf::File file = gguf::File::open(in);
  // Only a model tandem runs: the checks its loading makes (architecture, shapes, layers)
  // come first, so that every file quantize writes is one that generate and serve load.
  (void)ModelConfig::from_gguf(file);
  const ModelFacts facts = facts_of(file);

  gguf::Writer writer;
  // Every key in order; the two llama-quantize sets are replaced in place or appended.
  const gguf::Value file_type{gguf::ValueType::kUint32, uint64_t{target.file_type}};
  const gguf::Value quant_version{gguf::ValueType::kUint32, uint64_t{2}};  // GGML_QNT_VERSION
  bool has_file_type = false, has_quant_version = false;
  for (const auto& [key, value] : file.metadata()) {
    if (key == "general.file_type") {
      writer.add(key, file_type);
      has_file_type = true;
    } else if (key == "general.quantization_version") {
      writer.add(key, quant_version);
      has_quant_version = true;
    } else {
      writer.add(key, value);
    }
  }
  if (!has_file_type) writer.add("general.file_type", file_type);
  if (!has_quant_version) writer.add("general.quantization_version", quant_version);

  Report report;
  for (const gguf::TensorInfo& t : file.tensors()) {
    const TensorType type = tensor_type(target, facts, t.name, t.dims, t.type);
    ++report.tensors_by_type[type];
    report.in_bytes += t.n_bytes;
    report.out_bytes += gguf::tensor_bytes(type, t.n_elements);
    const gguf::TensorInfo* info = &t;
    if (type == t.type) {  // copied byte for byte
      writer.add_tensor(t.name, type, t.dims, [info] {
        return std::vector<uint8_t>(info->data, info->data + info->n_bytes);
      });
      continue;
    }
    // Row by row: dequantize to F32, quantize to the new type.
    writer.add_tensor(t.name, type, t.dims, [info, type] {
      const uint64_t row = info->dims.empty() ? 1 : info->dims[0];
      const uint64_t rows = info->n_elements / row;
      const uint64_t in_row_bytes = info->n_bytes / rows;
      const uint64_t out_row_bytes = gguf::tensor_bytes(type, row);
      std::vector<uint8_t> bytes(out_row_bytes * rows);
      std::vector<float> values(row);
      for (uint64_t r = 0; r < rows; ++r) {
        gguf::dequantize_row(info->type, info->data + r * in_row_bytes, static_cast<int64_t>(row),
                             values.data());
        try {
          gguf::quantize_row(type, values.data(), static_cast<int64_t>(row),
                             bytes.data() + r * out_row_bytes);
        } catch (const std::invalid_argument& e) {
          throw gguf::GgufError("tensor '" + info->name + "' row " + std::to_string(r) + ": " +
                                e.what());
        }
      }
      return bytes;
    });
  }
  writer.write(out);
  report.out_file_bytes = std::filesystem::file_size(out);
  return report;
}

}  // namespace tandem::quantize_model
