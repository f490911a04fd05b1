#include "tests/runner/model/reference_model.h"

#include "runner/gguf/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "runner/gguf/gguf.h"

namespace tandem::testing {
namespace {

// Dequantization written independently of runner/kernels so a bug there cannot hide.
double half_to_double(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0)
    v = std::ldexp(mant, -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = std::ldexp(1024 + mant, exp - 25);
  return sign ? -v : v;
}

double bf16_to_double(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::vector<double> dequantize(const gguf::TensorInfo& t) {
  std::vector<double> out(t.n_elements);
  const uint8_t* p = t.data;
  switch (t.type) {
    case gguf::TensorType::kF32:
      for (uint64_t i = 0; i < t.n_elements; ++i) {
        float f;
        std::memcpy(&f, p + 4 * i, 4);
        out[i] = f;
      }
      break;
    case gguf::TensorType::kF16:
    case gguf::TensorType::kBF16:
      for (uint64_t i = 0; i < t.n_elements; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = t.type == gguf::TensorType::kF16 ? half_to_double(h) : bf16_to_double(h);
      }
      break;
    case gguf::TensorType::kQ8_0:
      for (uint64_t b = 0; b < t.n_elements / 32; ++b) {
        const uint8_t* block = p + 34 * b;
        uint16_t d;
        std::memcpy(&d, block, 2);
        for (int i = 0; i < 32; ++i)
          out[b * 32 + i] = half_to_double(d) * static_cast<int8_t>(block[2 + i]);
      }
      break;
    default: {  // the other quantized types: their decoding is checked element by element
                // against its own reference in tests/runner/gguf/quant_test.cpp
      std::vector<float> values(t.n_elements);
      gguf::dequantize_row(t.type, p, static_cast<int64_t>(t.n_elements), values.data());
      std::copy(values.begin(), values.end(), out.begin());
      break;
    }
  }
  return out;
}

std::vector<double> tensor(const gguf::File& f, const std::string& name) {
  const gguf::TensorInfo* t = f.find_tensor(name);
  if (!t) throw std::runtime_error("reference: missing tensor " + name);
  return dequantize(*t);
}

std::vector<double> rms_norm(const std::vector<double>& x, const std::vector<double>& w,
                             double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double scale = 1.0 / std::sqrt(ss / x.size() + eps);
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] * scale * w[i];
  return out;
}

}  // namespace

ReferenceModel::ReferenceModel(const std::filesystem::path& path, int64_t served_context) {
  gguf::File f = gguf::File::open(path);
  read_hparams(f);
  embd_ = tensor(f, "token_embd.weight");
  n_vocab_ = static_cast<int32_t>(embd_.size() / n_embd_);
  out_norm_ = tensor(f, "output_norm.weight");
  out_ = f.find_tensor("output.weight") ? tensor(f, "output.weight") : embd_;
  read_rope_factors(f, served_context);
  for (int32_t l = 0; l < n_layer_; ++l) layers_.push_back(read_layer(f, l));
}

// The metadata, as llama.cpp reads it for each architecture.
void ReferenceModel::read_hparams(const gguf::File& f) {
  const std::string arch = f.get_string("general.architecture");
  const std::string a = arch + ".";
  gemma_ = arch == "gemma2" || arch == "gemma3";
  neox_ = arch != "llama";
  gelu_ = gemma_;
  n_embd_ = static_cast<int32_t>(f.get_int(a + "embedding_length"));
  n_layer_ = static_cast<int32_t>(f.get_int(a + "block_count"));
  n_head_ = static_cast<int32_t>(f.get_int(a + "attention.head_count"));
  n_head_kv_ = static_cast<int32_t>(f.get_int_or(a + "attention.head_count_kv", n_head_));
  n_ff_ = static_cast<int32_t>(f.get_int(a + "feed_forward_length"));
  head_dim_ = static_cast<int32_t>(f.get_int_or(a + "attention.key_length", n_embd_ / n_head_));
  n_rot_ = static_cast<int32_t>(f.get_int_or(a + "rope.dimension_count", head_dim_));
  eps_ = f.get_float_or(a + "attention.layer_norm_rms_epsilon", 1e-5);
  embed_scale_ = gemma_ ? std::sqrt(static_cast<double>(n_embd_)) : 1.0;
  attn_softcap_ = f.get_float_or(a + "attn_logit_softcapping", 0);
  final_softcap_ = f.get_float_or(a + "final_logit_softcapping", 0);
  rope_base_ = f.get_float_or(a + "rope.freq_base", 10000.0);
  rope_base_local_ =
      arch == "gemma3" ? f.get_float_or(a + "rope.freq_base_swa", 10000.0) : rope_base_;
  if (f.get_string_or(a + "rope.scaling.type", "none") == "linear")
    rope_scale_ = 1.0 / f.get_float(a + "rope.scaling.factor");
  rope_scale_local_ = arch == "gemma3" ? 1.0 : rope_scale_;  // gemma3's local layers: unscaled
  // gemma2: every other layer is local (sliding window), from the first; gemma3: five of six.
  swa_pattern_ = arch == "gemma2" ? 2 : arch == "gemma3" ? 6 : 0;
  window_ = static_cast<int32_t>(f.get_int_or(a + "attention.sliding_window", 4096));
}

// llama.cpp's get_rope_factors: rope_freqs (llama 3), else phi3's LongRoPE pair, long when
// the served context exceeds rope.scaling.original_context_length; the attention factor
// (ggml_rope_ext's attn_factor) applies whatever the choice.
void ReferenceModel::read_rope_factors(const gguf::File& f, int64_t served_context) {
  const std::string a = f.get_string("general.architecture") + ".";
  const int64_t context = f.get_int(a + "context_length");
  const int64_t original = f.get_int_or(a + "rope.scaling.original_context_length", context);
  const int64_t served = served_context > 0 ? served_context : context;
  rope_attn_factor_ = f.get_float_or(a + "rope.scaling.attn_factor", 1.0);
  if (f.find_tensor("rope_freqs.weight"))
    rope_freqs_ = tensor(f, "rope_freqs.weight");
  else if (f.find_tensor("rope_factors_long.weight"))
    rope_freqs_ =
        tensor(f, served > original ? "rope_factors_long.weight" : "rope_factors_short.weight");
}

ReferenceModel::Layer ReferenceModel::read_layer(const gguf::File& f, int32_t l) const {
  const std::string p = "blk." + std::to_string(l) + ".";
  auto optional = [&](const std::string& name) {
    return f.find_tensor(p + name) ? tensor(f, p + name) : std::vector<double>{};
  };
  const int64_t q_rows = int64_t{n_head_} * head_dim_ * n_embd_;
  const int64_t kv_rows = int64_t{n_head_kv_} * head_dim_ * n_embd_;
  Layer L;
  L.attn_norm = tensor(f, p + "attn_norm.weight");
  L.ffn_norm = tensor(f, p + "ffn_norm.weight");
  if (f.find_tensor(p + "attn_qkv.weight")) {  // phi3: rows [q; k; v]
    Matrix qkv = tensor(f, p + "attn_qkv.weight");
    L.wq.assign(qkv.begin(), qkv.begin() + q_rows);
    L.wk.assign(qkv.begin() + q_rows, qkv.begin() + q_rows + kv_rows);
    L.wv.assign(qkv.begin() + q_rows + kv_rows, qkv.end());
  } else {
    L.wq = tensor(f, p + "attn_q.weight");
    L.wk = tensor(f, p + "attn_k.weight");
    L.wv = tensor(f, p + "attn_v.weight");
  }
  L.wo = tensor(f, p + "attn_output.weight");
  L.w_up = tensor(f, p + "ffn_up.weight");
  if (f.find_tensor(p + "ffn_gate.weight")) {
    L.w_gate = tensor(f, p + "ffn_gate.weight");
  } else {  // phi3: ffn_up holds rows [gate; up]
    const int64_t half = int64_t{n_ff_} * n_embd_;
    L.w_gate.assign(L.w_up.begin(), L.w_up.begin() + half);
    L.w_up.erase(L.w_up.begin(), L.w_up.begin() + half);
  }
  L.w_down = tensor(f, p + "ffn_down.weight");
  L.q_bias = optional("attn_q.bias");
  L.k_bias = optional("attn_k.bias");
  L.v_bias = optional("attn_v.bias");
  L.q_norm = optional("attn_q_norm.weight");
  L.k_norm = optional("attn_k_norm.weight");
  L.post_attn_norm = optional("post_attention_norm.weight");
  L.post_ffn_norm = optional("post_ffw_norm.weight");
  const bool local = swa_pattern_ > 0 && l % swa_pattern_ < swa_pattern_ - 1;
  L.window = local ? window_ : 0;
  L.rope_base = local ? rope_base_local_ : rope_base_;
  L.rope_scale = local ? rope_scale_local_ : rope_scale_;
  return L;
}

std::vector<double> ReferenceModel::matvec(const Matrix& w, const std::vector<double>& x,
                                           int64_t n_out) const {
  const int64_t n_in = static_cast<int64_t>(x.size());
  std::vector<double> y(n_out, 0.0);
  for (int64_t o = 0; o < n_out; ++o)
    for (int64_t i = 0; i < n_in; ++i) y[o] += w[o * n_in + i] * x[i];
  return y;
}

std::vector<double> ReferenceModel::logits(const std::vector<int32_t>& tokens) const {
  std::vector<double> out = matvec(out_, hidden_states(tokens).back(), n_vocab_);
  for (double& l : out) l = soft_cap(l, final_softcap_);
  return out;
}

std::vector<std::vector<double>> ReferenceModel::hidden_states(
    const std::vector<int32_t>& tokens) const {
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int32_t q_dim = n_head_ * head_dim_, kv_dim = n_head_kv_ * head_dim_;
  std::vector<std::vector<double>> x(n);
  for (int64_t t = 0; t < n; ++t) {
    x[t].assign(embd_.begin() + int64_t{tokens[t]} * n_embd_,
                embd_.begin() + int64_t{tokens[t] + 1} * n_embd_);
    for (double& e : x[t]) e *= embed_scale_;
  }

  // theta_i = pos * scale * base^(-2i/n_rot) / rope_freqs[i]; the rotated pair is then
  // scaled by the attention factor (cos and sin times it, as ggml does).
  auto rotate = [&](const Layer& L, std::vector<double>& v, int64_t offset, int64_t pos) {
    for (int32_t i = 0; i < n_rot_ / 2; ++i) {
      double theta = pos * L.rope_scale * std::pow(L.rope_base, -2.0 * i / n_rot_);
      if (!rope_freqs_.empty()) theta /= rope_freqs_[i];
      const int64_t a = offset + (neox_ ? i : 2 * i);
      const int64_t b = offset + (neox_ ? i + n_rot_ / 2 : 2 * i + 1);
      const double c = std::cos(theta) * rope_attn_factor_;
      const double s = std::sin(theta) * rope_attn_factor_;
      const double x0 = v[a], x1 = v[b];
      v[a] = x0 * c - x1 * s;
      v[b] = x0 * s + x1 * c;
    }
  };
  // Per-head RMSNorm (qwen3, gemma3), then RoPE.
  auto heads = [&](const Layer& L, std::vector<double>& v, int32_t n_heads,
                   const std::vector<double>& norm, int64_t pos) {
    for (int32_t h = 0; h < n_heads; ++h) {
      const auto begin = v.begin() + int64_t{h} * head_dim_;
      if (!norm.empty()) {
        std::vector<double> normed = rms_norm({begin, begin + head_dim_}, norm, eps_);
        std::copy(normed.begin(), normed.end(), begin);
      }
      rotate(L, v, int64_t{h} * head_dim_, pos);
    }
  };
  auto add_bias = [](std::vector<double>& v, const std::vector<double>& b) {
    for (size_t i = 0; i < b.size(); ++i) v[i] += b[i];
  };

  for (const Layer& L : layers_) {
    std::vector<std::vector<double>> q(n), k(n), v(n);
    for (int64_t t = 0; t < n; ++t) {
      std::vector<double> xn = rms_norm(x[t], L.attn_norm, eps_);
      q[t] = matvec(L.wq, xn, q_dim);
      k[t] = matvec(L.wk, xn, kv_dim);
      v[t] = matvec(L.wv, xn, kv_dim);
      add_bias(q[t], L.q_bias);
      add_bias(k[t], L.k_bias);
      add_bias(v[t], L.v_bias);
      heads(L, q[t], n_head_, L.q_norm, t);
      heads(L, k[t], n_head_kv_, L.k_norm, t);
    }
    for (int64_t t = 0; t < n; ++t) {
      std::vector<double> o = matvec(L.wo, attend(L, q, k, v, t), n_embd_);
      if (!L.post_attn_norm.empty()) o = rms_norm(o, L.post_attn_norm, eps_);
      for (int32_t i = 0; i < n_embd_; ++i) x[t][i] += o[i];
      std::vector<double> xn = rms_norm(x[t], L.ffn_norm, eps_);
      std::vector<double> g = matvec(L.w_gate, xn, n_ff_), u = matvec(L.w_up, xn, n_ff_);
      for (int32_t i = 0; i < n_ff_; ++i) g[i] = activation(g[i]) * u[i];
      std::vector<double> d = matvec(L.w_down, g, n_embd_);
      if (!L.post_ffn_norm.empty()) d = rms_norm(d, L.post_ffn_norm, eps_);
      for (int32_t i = 0; i < n_embd_; ++i) x[t][i] += d[i];
    }
  }
  for (int64_t t = 0; t < n; ++t) x[t] = rms_norm(x[t], out_norm_, eps_);
  return x;
}

double ReferenceModel::activation(double g) const {
  if (!gelu_) return g / (1.0 + std::exp(-g));  // silu
  return 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g)));
}

double ReferenceModel::soft_cap(double x, double cap) {
  return cap > 0 ? cap * std::tanh(x / cap) : x;
}

// Token t's attention output over tokens j <= t (and t - j < window on a local layer).
std::vector<double> ReferenceModel::attend(const Layer& L,
                                           const std::vector<std::vector<double>>& q,
                                           const std::vector<std::vector<double>>& k,
                                           const std::vector<std::vector<double>>& v,
                                           int64_t t) const {
  std::vector<double> att(int64_t{n_head_} * head_dim_, 0.0);
  const int64_t first = L.window > 0 ? std::max<int64_t>(0, t - L.window + 1) : 0;
  for (int32_t h = 0; h < n_head_; ++h) {
    const int32_t g = h / (n_head_ / n_head_kv_);
    std::vector<double> s(t + 1, -INFINITY);
    double mx = -INFINITY;
    for (int64_t j = first; j <= t; ++j) {
      double d = 0;
      for (int32_t i = 0; i < head_dim_; ++i)
        d += q[t][h * head_dim_ + i] * k[j][g * head_dim_ + i];
      s[j] = soft_cap(d / std::sqrt(static_cast<double>(head_dim_)), attn_softcap_);
      mx = std::max(mx, s[j]);
    }
    double sum = 0;
    for (double& e : s) sum += (e = std::exp(e - mx));
    for (int64_t j = first; j <= t; ++j)
      for (int32_t i = 0; i < head_dim_; ++i)
        att[h * head_dim_ + i] += s[j] / sum * v[j][g * head_dim_ + i];
  }
  return att;
}

}  // namespace tandem::testing
