#include "runner/model/model.h"

#include <cmath>
#include <string>
#include <unordered_set>
#include <utility>

namespace tandem {
namespace {

std::string shape_string(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Reads the model's tensors by name and remembers which it read, so that a tensor the
// forward pass would leave out is refused by name: llama.cpp refuses such a file ("wrong
// number of tensors"), and skipping, say, a bias would run another model than the file's.
class TensorReader {
 public:
  explicit TensorReader(const gguf::File& file) : file_(file) {}

  // Finds a tensor and checks its ggml shape (dims[0] innermost). Rows are whole blocks of
  // the tensor's type: gguf::File checks that for every tensor when it opens the file.
  const gguf::TensorInfo& require(const std::string& name, std::vector<uint64_t> dims) {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (!t) throw gguf::GgufError(file_.name() + ": missing tensor '" + name + "'");
    if (t->dims != dims)
      throw gguf::GgufError(file_.name() + ": tensor '" + name + "' has shape " +
                            shape_string(t->dims) + ", expected " + shape_string(dims));
    used_.insert(name);
    return *t;
  }

  std::vector<float> vector(const std::string& name, int64_t n) {
    const gguf::TensorInfo& t = require(name, {static_cast<uint64_t>(n)});
    std::vector<float> out(n);
    kernels::dequantize_row(t.type, t.data, out.data(), n);
    return out;
  }

  // A RoPE factor tensor: n_rot / 2 divisors, each positive and finite.
  std::vector<float> rope_factors(const std::string& name, int64_t n) {
    std::vector<float> factors = vector(name, n);
    for (float v : factors)
      if (!(v > 0) || !std::isfinite(v))
        throw gguf::GgufError(file_.name() + ": " + name + " holds a non-positive factor");
    return factors;
  }

  kernels::WeightSource matrix(const std::string& name, int64_t n_in, int64_t n_out) {
    const gguf::TensorInfo& t =
        require(name, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out)});
    return {t.type, t.data, n_out, n_in};
  }

  bool has(const std::string& name) const { return file_.find_tensor(name) != nullptr; }

  void refuse_unread() const {
    for (const gguf::TensorInfo& t : file_.tensors())
      if (!used_.contains(t.name))
        throw gguf::GgufError(file_.name() + ": tensor '" + t.name + "' is not used by " +
                              file_.get_string("general.architecture") +
                              " as tandem runs it (not supported)");
  }

 private:
  const gguf::File& file_;
  std::unordered_set<std::string> used_;
};

// Q, K and V as one matrix, from attn_qkv (phi3) or the three tensors.
std::vector<kernels::WeightSource> qkv_sources(TensorReader& r, const ModelConfig& c,
                                               const std::string& p) {
  const int64_t e = c.n_embd, q = c.q_dim(), kv = c.kv_dim();
  if (c.fused_qkv) return {r.matrix(p + "attn_qkv.weight", e, q + 2 * kv)};
  return {r.matrix(p + "attn_q.weight", e, q), r.matrix(p + "attn_k.weight", e, kv),
          r.matrix(p + "attn_v.weight", e, kv)};
}

// Gate and up as one matrix, from ffn_up holding [gate; up] (phi3) or the two.
std::vector<kernels::WeightSource> gate_up_sources(TensorReader& r, const ModelConfig& c,
                                                   const std::string& p) {
  const int64_t e = c.n_embd, ff = c.n_ff;
  if (c.fused_gate_up) return {r.matrix(p + "ffn_up.weight", e, 2 * ff)};
  return {r.matrix(p + "ffn_gate.weight", e, ff), r.matrix(p + "ffn_up.weight", e, ff)};
}

LayerWeights load_layer(TensorReader& r, const ModelConfig& c, int32_t l) {
  const std::string p = "blk." + std::to_string(l) + ".";
  const int64_t e = c.n_embd, q = c.q_dim(), kv = c.kv_dim();
  LayerWeights w;
  w.attn_norm = r.vector(p + "attn_norm.weight", e);
  w.qkv_sources = qkv_sources(r, c, p);
  w.qkv = kernels::PackedWeights::pack(w.qkv_sources);
  if (c.qkv_bias) {
    // qwen2 has all three; llama.cpp's llama graph adds each that a layer has (zeros else).
    const bool each_optional = c.architecture == "llama";
    for (auto [name, n] : {std::pair{"attn_q.bias", q}, {"attn_k.bias", kv}, {"attn_v.bias", kv}}) {
      std::vector<float> b =
          each_optional && !r.has(p + name) ? std::vector<float>(n, 0.0f) : r.vector(p + name, n);
      w.qkv_bias.insert(w.qkv_bias.end(), b.begin(), b.end());
    }
  }
  if (c.qk_norm) {
    w.q_norm = r.vector(p + "attn_q_norm.weight", c.head_dim);
    w.k_norm = r.vector(p + "attn_k_norm.weight", c.head_dim);
  }
  w.attn_out_sources = {r.matrix(p + "attn_output.weight", q, e)};
  w.attn_out = kernels::PackedWeights::pack(w.attn_out_sources);
  w.ffn_norm = r.vector(p + "ffn_norm.weight", e);
  if (c.post_norms) {
    w.post_attn_norm = r.vector(p + "post_attention_norm.weight", e);
    w.post_ffn_norm = r.vector(p + "post_ffw_norm.weight", e);
  }
  w.gate_up_sources = gate_up_sources(r, c, p);
  w.gate_up = kernels::PackedWeights::pack(w.gate_up_sources);
  w.down_sources = {r.matrix(p + "ffn_down.weight", c.n_ff, e)};
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

  TensorReader r(f);
  m->token_embd_ =
      &r.require("token_embd.weight", {static_cast<uint64_t>(e), static_cast<uint64_t>(c.n_vocab)});
  if (c.rope_freq_factors) m->rope_freq_factors_ = r.rope_factors("rope_freqs.weight", c.n_rot / 2);
  if (c.rope_long_short_factors) {
    m->rope_long_ = r.rope_factors("rope_factors_long.weight", c.n_rot / 2);
    m->rope_short_ = r.rope_factors("rope_factors_short.weight", c.n_rot / 2);
  }
  m->layers_.reserve(c.n_layer);
  for (int32_t l = 0; l < c.n_layer; ++l) m->layers_.push_back(load_layer(r, c, l));
  m->output_norm_ = r.vector("output_norm.weight", e);
  m->tied_ = f.find_tensor("output.weight") == nullptr;
  m->output_source_ = r.matrix(m->tied_ ? "token_embd.weight" : "output.weight", e, c.n_vocab);
  m->output_ = kernels::PackedWeights::pack(m->output_source_);
  r.refuse_unread();
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
