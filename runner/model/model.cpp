#include "runner/model/model.h"

#include <cmath>
#include <string>
#include <utility>

namespace tandem {
namespace {

std::string shape_string(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Finds a tensor and checks its ggml shape (dims[0] innermost). Rows are whole blocks of
// the tensor's type: gguf::File checks that for every tensor when it opens the file.
const gguf::TensorInfo& require(const gguf::File& file, const std::string& name,
                                std::vector<uint64_t> dims) {
  const gguf::TensorInfo* t = file.find_tensor(name);
  if (!t) throw gguf::GgufError(file.name() + ": missing tensor '" + name + "'");
  if (t->dims != dims)
    throw gguf::GgufError(file.name() + ": tensor '" + name + "' has shape " +
                          shape_string(t->dims) + ", expected " + shape_string(dims));
  return *t;
}

std::vector<float> load_vector(const gguf::File& file, const std::string& name, int64_t n) {
  const gguf::TensorInfo& t = require(file, name, {static_cast<uint64_t>(n)});
  std::vector<float> out(n);
  kernels::dequantize_row(t.type, t.data, out.data(), n);
  return out;
}

// A RoPE factor tensor: n_rot / 2 divisors, each positive and finite.
std::vector<float> load_rope_factors(const gguf::File& file, const std::string& name, int64_t n) {
  std::vector<float> factors = load_vector(file, name, n);
  for (float v : factors)
    if (!(v > 0) || !std::isfinite(v))
      throw gguf::GgufError(file.name() + ": " + name + " holds a non-positive factor");
  return factors;
}

kernels::WeightSource matrix(const gguf::File& file, const std::string& name, int64_t n_in,
                             int64_t n_out) {
  const gguf::TensorInfo& t =
      require(file, name, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out)});
  return {t.type, t.data, n_out, n_in};
}

// Q, K and V as one matrix, from attn_qkv (phi3) or the three tensors.
std::vector<kernels::WeightSource> qkv_sources(const gguf::File& f, const ModelConfig& c,
                                               const std::string& p) {
  const int64_t e = c.n_embd, q = c.q_dim(), kv = c.kv_dim();
  if (c.fused_qkv) return {matrix(f, p + "attn_qkv.weight", e, q + 2 * kv)};
  return {matrix(f, p + "attn_q.weight", e, q), matrix(f, p + "attn_k.weight", e, kv),
          matrix(f, p + "attn_v.weight", e, kv)};
}

// Gate and up as one matrix, from ffn_up holding [gate; up] (phi3) or the two.
std::vector<kernels::WeightSource> gate_up_sources(const gguf::File& f, const ModelConfig& c,
                                                   const std::string& p) {
  const int64_t e = c.n_embd, ff = c.n_ff;
  if (c.fused_gate_up) return {matrix(f, p + "ffn_up.weight", e, 2 * ff)};
  return {matrix(f, p + "ffn_gate.weight", e, ff), matrix(f, p + "ffn_up.weight", e, ff)};
}

LayerWeights load_layer(const gguf::File& f, const ModelConfig& c, int32_t l) {
  const std::string p = "blk." + std::to_string(l) + ".";
  const int64_t e = c.n_embd, q = c.q_dim(), kv = c.kv_dim();
  LayerWeights w;
  w.attn_norm = load_vector(f, p + "attn_norm.weight", e);
  w.qkv_sources = qkv_sources(f, c, p);
  w.qkv = kernels::PackedWeights::pack(w.qkv_sources);
  if (c.qkv_bias) {
    for (auto [name, n] : {std::pair{"attn_q.bias", q}, {"attn_k.bias", kv}, {"attn_v.bias", kv}}) {
      std::vector<float> b = load_vector(f, p + name, n);
      w.qkv_bias.insert(w.qkv_bias.end(), b.begin(), b.end());
    }
  }
  if (c.qk_norm) {
    w.q_norm = load_vector(f, p + "attn_q_norm.weight", c.head_dim);
    w.k_norm = load_vector(f, p + "attn_k_norm.weight", c.head_dim);
  }
  w.attn_out_sources = {matrix(f, p + "attn_output.weight", q, e)};
  w.attn_out = kernels::PackedWeights::pack(w.attn_out_sources);
  w.ffn_norm = load_vector(f, p + "ffn_norm.weight", e);
  if (c.post_norms) {
    w.post_attn_norm = load_vector(f, p + "post_attention_norm.weight", e);
    w.post_ffn_norm = load_vector(f, p + "post_ffw_norm.weight", e);
  }
  w.gate_up_sources = gate_up_sources(f, c, p);
  w.gate_up = kernels::PackedWeights::pack(w.gate_up_sources);
  w.down_sources = {matrix(f, p + "ffn_down.weight", c.n_ff, e)};
  w.down = kernels::PackedWeights::pack(w.down_sources);
  return w;
}

}  // namespace

std::unique_ptr<Model> Model::load(const std::filesystem::path& path) {
  return load(gguf::File::open(path));
}

std::unique_ptr<Model> Model::load(gguf::File file) {
  std::unique_ptr<Model> m(new Model(std::move(file)));
  const gguf::File& f = m->file_;
  m->config_ = ModelConfig::from_gguf(f);
  const ModelConfig& c = m->config_;
  const int64_t e = c.n_embd;

  m->token_embd_ = &require(f, "token_embd.weight",
                            {static_cast<uint64_t>(e), static_cast<uint64_t>(c.n_vocab)});
  if (c.rope_freq_factors)
    m->rope_freq_factors_ = load_rope_factors(f, "rope_freqs.weight", c.n_rot / 2);
  if (c.rope_long_short_factors) {
    m->rope_long_ = load_rope_factors(f, "rope_factors_long.weight", c.n_rot / 2);
    m->rope_short_ = load_rope_factors(f, "rope_factors_short.weight", c.n_rot / 2);
  }
  m->layers_.reserve(c.n_layer);
  for (int32_t l = 0; l < c.n_layer; ++l) m->layers_.push_back(load_layer(f, c, l));
  m->output_norm_ = load_vector(f, "output_norm.weight", e);
  m->tied_ = f.find_tensor("output.weight") == nullptr;
  m->output_source_ = matrix(f, m->tied_ ? "token_embd.weight" : "output.weight", e, c.n_vocab);
  m->output_ = kernels::PackedWeights::pack(m->output_source_);
  return m;
}

const std::vector<float>& Model::rope_freq_factors(int32_t served_context) const {
  if (!config_.rope_long_short_factors || config_.rope_freq_factors) return rope_freq_factors_;
  return served_context > config_.rope_original_context ? rope_long_ : rope_short_;
}

void Model::embed(int32_t id, float* out) const {
  const int64_t e = config_.n_embd;
  const uint64_t row_bytes = gguf::tensor_bytes(token_embd_->type, e);
  kernels::dequantize_row(token_embd_->type, token_embd_->data + row_bytes * id, out, e);
}

Model::TokenWork Model::work_per_token() const {
  TokenWork work;
  double bytes_by_peak[kernels::kPeakCount] = {};
  for_each_packed([&](const kernels::PackedWeights& w) {
    work.weight_bytes += static_cast<double>(w.bytes());
    work.flops += 2.0 * static_cast<double>(w.n_in()) * static_cast<double>(w.n_out());
    bytes_by_peak[static_cast<int>(w.peak())] += static_cast<double>(w.bytes());
  });
  work.head_bytes = static_cast<double>(output_.bytes());
  work.head_flops =
      2.0 * static_cast<double>(output_.n_in()) * static_cast<double>(output_.n_out());
  for (int p = 1; p < kernels::kPeakCount; ++p)
    if (bytes_by_peak[p] > bytes_by_peak[static_cast<int>(work.peak)])
      work.peak = static_cast<kernels::Peak>(p);
  return work;
}

size_t Model::packed_bytes() const {
  size_t total = 0;
  for_each_packed([&](const kernels::PackedWeights& w) { total += w.bytes(); });
  return total;
}

}  // namespace tandem
