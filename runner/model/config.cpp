#include "runner/model/config.h"

#include <charconv>
#include <cmath>
#include <string>

namespace tandem {
namespace {

[[noreturn]] void fail(const gguf::File& file, const std::string& what) {
  throw gguf::GgufError(file.name() + ": " + what);
}

int32_t positive_int(const gguf::File& file, const std::string& key, int64_t limit) {
  int64_t v = file.get_int(key);
  if (v <= 0 || v > limit) fail(file, key + " = " + std::to_string(v) + " is out of range");
  return static_cast<int32_t>(v);
}

float positive_float(const gguf::File& file, const std::string& key, double fallback) {
  const double v = file.get_float_or(key, fallback);
  if (!(v > 0) || !std::isfinite(v)) fail(file, key + " must be a positive number");
  return static_cast<float>(v);
}

// The per-family choices, as llama.cpp's graph for each architecture makes them.
void set_family(ModelConfig& c, const gguf::File& file) {
  const std::string& arch = c.architecture;
  c.rope_style = arch == "llama" ? RopeStyle::kAdjacentPairs : RopeStyle::kNeox;
  if (arch == "llama") {
    // llama.cpp's llama graph adds each Q/K/V bias a layer has ("llamafied" Qwen files).
    for (const gguf::TensorInfo& t : file.tensors())
      c.qkv_bias = c.qkv_bias || (tensor_layer(t.name) >= 0 && (t.name.ends_with(".attn_q.bias") ||
                                                                t.name.ends_with(".attn_k.bias") ||
                                                                t.name.ends_with(".attn_v.bias")));
  } else if (arch == "qwen2") {
    c.qkv_bias = true;
  } else if (arch == "qwen3") {
    c.qk_norm = true;
  } else if (arch == "phi3") {
    c.fused_qkv = c.fused_gate_up = true;
  } else if (arch == "gemma2" || arch == "gemma3") {
    c.post_norms = true;
    c.activation = Activation::kGeluTanh;
    c.qk_norm = arch == "gemma3";
  } else {
    fail(file, "unsupported architecture '" + gguf::printable(arch) +
                   "' (supported: llama, qwen2, qwen3, phi3, gemma2, gemma3)");
  }
}

// A soft cap from `key`, else `fallback`; 0 turns the cap off (llama.cpp tests the value).
float soft_cap_or(const gguf::File& file, const std::string& key, double fallback) {
  const double v = file.get_float_or(key, fallback);
  if (!(v >= 0) || !std::isfinite(v)) fail(file, key + " must be a non-negative number");
  return static_cast<float>(v);
}

// Which layers attend through the sliding window: attention.sliding_window_pattern as
// llama.cpp reads it, a period N (layer l is local iff l % N < N - 1) or one bool per
// layer, else the family's period.
void read_swa_pattern(ModelConfig& c, const gguf::File& file, const std::string& key,
                      int32_t period) {
  const gguf::Value* v = file.find(key);
  c.local_layers.assign(static_cast<size_t>(c.n_layer), false);
  if (v && v->type == gguf::ValueType::kArray) {
    const gguf::Array& flags = v->to_array(key);
    if (flags.items.size() != static_cast<size_t>(c.n_layer))
      fail(file, key + " holds " + std::to_string(flags.items.size()) + " flags for " +
                     std::to_string(c.n_layer) + " layers");
    for (size_t l = 0; l < flags.items.size(); ++l) c.local_layers[l] = flags.items[l].to_bool(key);
    return;
  }
  if (v) period = positive_int(file, key, 1 << 16);
  for (int32_t l = 0; l < c.n_layer; ++l)
    c.local_layers[static_cast<size_t>(l)] = l % period < period - 1;
}

// Hyperparameters only some families have; the key names follow llama.cpp's converter.
void read_family_keys(ModelConfig& c, const gguf::File& file, const std::string& a) {
  if (file.get_int_or(a + "expert_count", 0) > 0)
    fail(file, a + "expert_count: MoE is not supported");
  const bool gemma = c.architecture == "gemma2" || c.architecture == "gemma3";
  if (!gemma) return;  // phi3's sliding_window is ignored, as llama.cpp does (a wrong one)
  const bool gemma2 = c.architecture == "gemma2";
  // Gemma 2 always caps, at 50 and 30 where a file predates the keys (llama.cpp's defaults);
  // Gemma 3 caps only where its file says so, as transformers' Gemma3 does (null there).
  c.attn_softcap = soft_cap_or(file, a + "attn_logit_softcapping", gemma2 ? 50.0 : 0.0);
  c.final_softcap = soft_cap_or(file, a + "final_logit_softcapping", gemma2 ? 30.0 : 0.0);
  c.embed_scale = std::sqrt(static_cast<float>(c.n_embd));
  if (gemma2) c.sliding_window = 4096;  // llama.cpp's default for gemma 2
  if (file.has(a + "attention.sliding_window"))
    c.sliding_window = positive_int(file, a + "attention.sliding_window", 1 << 24);
  read_swa_pattern(c, file, a + "attention.sliding_window_pattern", gemma2 ? 2 : 6);
  // gemma_pytorch: the 27B models scale queries by (n_embd / n_head)^-0.5.
  const bool is_27b = c.n_layer == (gemma2 ? 46 : 62);
  c.attn_scale = 1.0f / std::sqrt(static_cast<float>(is_27b ? c.n_embd / c.n_head : c.head_dim));
}

// phi3 128k's LongRoPE, read as llama.cpp does: both factor tensors or neither, the
// context they switch at, and the attention factor the converter derived from the
// scaling (sqrt(1 + ln(s) / ln(original)) for s = context / original).
void read_long_rope(ModelConfig& c, const gguf::File& file, const std::string& a) {
  const bool has_long = file.find_tensor("rope_factors_long.weight") != nullptr;
  const bool has_short = file.find_tensor("rope_factors_short.weight") != nullptr;
  if (has_long != has_short)
    fail(file, std::string("tensor '") +
                   (has_long ? "rope_factors_short.weight" : "rope_factors_long.weight") +
                   "' is missing (LongRoPE needs both factor tensors)");
  c.rope_long_short_factors = has_long;
  c.rope_original_context =
      file.has(a + "rope.scaling.original_context_length")
          ? positive_int(file, a + "rope.scaling.original_context_length", 1 << 24)
          : c.context_length;
  // llama.cpp multiplies RoPE's cos and sin by this for every architecture.
  c.rope_attn_factor = positive_float(file, a + "rope.scaling.attn_factor", 1.0);
}

// rope.freq_base, and rope.scaling.{type,factor} as llama.cpp combines them: the type
// defaults to linear, the factor falls back to the older rope.scale_linear, a factor of 0
// means none, and type none never scales. none and linear are implemented; any other type
// would change the outputs, so it is refused rather than ignored.
void read_rope(ModelConfig& c, const gguf::File& file, const std::string& a) {
  c.rope.base = positive_float(file, a + "rope.freq_base", 10000.0);
  const std::string type = file.get_string_or(a + "rope.scaling.type", "linear");
  if (type != "linear" && type != "none")
    fail(file, a + "rope.scaling.type = '" + type + "' is not supported (none, linear)");
  const std::string key =
      file.has(a + "rope.scaling.factor") ? a + "rope.scaling.factor" : a + "rope.scale_linear";
  const double factor = file.get_float_or(key, 0.0);
  if (!(factor >= 0) || !std::isfinite(factor)) fail(file, key + " must be a non-negative number");
  c.rope.scale = type == "none" || factor == 0 ? 1.0f : static_cast<float>(1.0 / factor);
  c.rope_local = c.rope;
  if (c.architecture == "gemma3")  // local layers: their own base, no scaling
    c.rope_local = {positive_float(file, a + "rope.freq_base_swa", 10000.0), 1.0f};
  c.rope_freq_factors = file.find_tensor("rope_freqs.weight") != nullptr;
}

// A layer's tensors past block_count would be left out silently: a different model than
// the file holds. llama.cpp refuses such a file ("wrong number of tensors"); so does tandem.
void check_layer_tensors(const gguf::File& file, int32_t n_layer) {
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (tensor_layer(t.name) >= n_layer)
      fail(file,
           "tensor " + t.name + " belongs to a layer past block_count " + std::to_string(n_layer));
  }
}

void read_shape(ModelConfig& c, const gguf::File& file, const std::string& a) {
  constexpr int64_t kMaxDim = 1 << 20;
  c.n_embd = positive_int(file, a + "embedding_length", kMaxDim);
  c.n_layer = positive_int(file, a + "block_count", 4096);
  check_layer_tensors(file, c.n_layer);
  c.n_head = positive_int(file, a + "attention.head_count", 4096);
  c.n_head_kv = file.has(a + "attention.head_count_kv")
                    ? positive_int(file, a + "attention.head_count_kv", 4096)
                    : c.n_head;
  c.n_ff = positive_int(file, a + "feed_forward_length", kMaxDim);
  c.context_length = positive_int(file, a + "context_length", 1 << 24);
  if (c.n_head % c.n_head_kv != 0)
    fail(file, "head_count " + std::to_string(c.n_head) + " is not a multiple of head_count_kv " +
                   std::to_string(c.n_head_kv));
  if (file.has(a + "attention.key_length")) {
    c.head_dim = positive_int(file, a + "attention.key_length", 1 << 16);
  } else if (c.n_embd % c.n_head != 0) {
    fail(file, "embedding_length " + std::to_string(c.n_embd) +
                   " is not a multiple of head_count " + std::to_string(c.n_head));
  } else {
    c.head_dim = c.n_embd / c.n_head;
  }
  if (file.has(a + "attention.value_length") &&
      file.get_int(a + "attention.value_length") != c.head_dim)
    fail(file, a + "attention.value_length differs from key_length (not supported)");
  c.n_rot = file.has(a + "rope.dimension_count")
                ? positive_int(file, a + "rope.dimension_count", c.head_dim)
                : c.head_dim;
  if (c.n_rot % 2 != 0) fail(file, "rope.dimension_count must be even");
  // llama.cpp's llama graph rotates whole heads and refuses a file that says otherwise.
  if (c.architecture == "llama" && c.n_rot != c.head_dim)
    fail(file, a + "rope.dimension_count = " + std::to_string(c.n_rot) +
                   " differs from the head size " + std::to_string(c.head_dim) +
                   " (llama rotates whole heads)");
  // Required, as llama.cpp requires it: a guessed epsilon would shift every norm.
  if (!file.has(a + "attention.layer_norm_rms_epsilon"))
    fail(file, "missing " + a + "attention.layer_norm_rms_epsilon");
  c.rms_eps = positive_float(file, a + "attention.layer_norm_rms_epsilon", 1e-5);
}

// What an embedding model's converter writes: how its states pool, and that attention is
// causal (bidirectional encoders' files say false: every kernel here is causal).
void read_pooling(ModelConfig& c, const gguf::File& file, const std::string& a) {
  if (!file.get_bool_or(a + "attention.causal", true))
    fail(file, a + "attention.causal is false: bidirectional attention is not supported");
  // Generation never reads it: a type not served here is kept for /v1/embeddings to refuse,
  // and the model still loads (a reranker's file generates as its family does).
  const gguf::Value* v = file.find(a + "pooling_type");
  if (v == nullptr) return;
  try {
    c.pooling_type = file.get_int(a + "pooling_type");
  } catch (const gguf::GgufError&) {
    fail(file, a + "pooling_type must be an integer");
  }
}

}  // namespace

int tensor_layer(std::string_view name) {
  if (!name.starts_with("blk.")) return -1;
  int layer = -1;
  const char* first = name.data() + 4;
  const char* last = name.data() + name.size();
  const auto [end, ec] = std::from_chars(first, last, layer);
  if (ec != std::errc() || end == first || end == last || *end != '.') return -1;
  return layer;
}

ModelConfig ModelConfig::from_gguf(const gguf::File& file) {
  ModelConfig c;
  c.architecture = file.get_string("general.architecture");
  const std::string a = c.architecture + ".";
  set_family(c, file);
  read_shape(c, file, a);
  read_family_keys(c, file, a);
  read_pooling(c, file, a);
  read_rope(c, file, a);
  read_long_rope(c, file, a);
  c.attn_scale = c.attn_scale > 0 ? c.attn_scale : 1.0f / std::sqrt(static_cast<float>(c.head_dim));

  // The vocabulary size is the embedding's outer dimension; metadata may omit it.
  const gguf::TensorInfo* embd = file.find_tensor("token_embd.weight");
  if (!embd) fail(file, "missing tensor 'token_embd.weight'");
  if (embd->dims.size() != 2 || embd->dims[0] != static_cast<uint64_t>(c.n_embd) ||
      embd->dims[1] == 0 || embd->dims[1] > (1u << 24))
    fail(file, "tensor 'token_embd.weight' has the wrong shape");
  c.n_vocab = static_cast<int32_t>(embd->dims[1]);
  return c;
}

}  // namespace tandem
