#include "tests/runner/model/reference_model.h"

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

ReferenceModel::ReferenceModel(const std::filesystem::path& path) {
  gguf::File f = gguf::File::open(path);
  const std::string arch = f.get_string("general.architecture");
  neox_ = arch == "qwen2";
  const std::string a = arch + ".";
  n_embd_ = static_cast<int32_t>(f.get_int(a + "embedding_length"));
  n_layer_ = static_cast<int32_t>(f.get_int(a + "block_count"));
  n_head_ = static_cast<int32_t>(f.get_int(a + "attention.head_count"));
  n_head_kv_ = static_cast<int32_t>(f.get_int_or(a + "attention.head_count_kv", n_head_));
  n_ff_ = static_cast<int32_t>(f.get_int(a + "feed_forward_length"));
  head_dim_ = n_embd_ / n_head_;
  n_rot_ = static_cast<int32_t>(f.get_int_or(a + "rope.dimension_count", head_dim_));
  rope_base_ = f.get_float_or(a + "rope.freq_base", 10000.0);
  eps_ = f.get_float_or(a + "attention.layer_norm_rms_epsilon", 1e-5);
  embd_ = tensor(f, "token_embd.weight");
  n_vocab_ = static_cast<int32_t>(embd_.size() / n_embd_);
  out_norm_ = tensor(f, "output_norm.weight");
  out_ = f.find_tensor("output.weight") ? tensor(f, "output.weight") : embd_;
  for (int32_t l = 0; l < n_layer_; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    Layer L;
    L.attn_norm = tensor(f, p + "attn_norm.weight");
    L.ffn_norm = tensor(f, p + "ffn_norm.weight");
    L.wq = tensor(f, p + "attn_q.weight");
    L.wk = tensor(f, p + "attn_k.weight");
    L.wv = tensor(f, p + "attn_v.weight");
    L.wo = tensor(f, p + "attn_output.weight");
    L.w_gate = tensor(f, p + "ffn_gate.weight");
    L.w_up = tensor(f, p + "ffn_up.weight");
    L.w_down = tensor(f, p + "ffn_down.weight");
    if (f.find_tensor(p + "attn_q.bias")) {
      L.q_bias = tensor(f, p + "attn_q.bias");
      L.k_bias = tensor(f, p + "attn_k.bias");
      L.v_bias = tensor(f, p + "attn_v.bias");
    }
    layers_.push_back(std::move(L));
  }
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
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int32_t kv_dim = n_head_kv_ * head_dim_;
  std::vector<std::vector<double>> x(n);
  for (int64_t t = 0; t < n; ++t)
    x[t].assign(embd_.begin() + int64_t{tokens[t]} * n_embd_,
                embd_.begin() + int64_t{tokens[t] + 1} * n_embd_);

  auto rotate = [&](std::vector<double>& v, int64_t offset, int64_t pos) {
    for (int32_t i = 0; i < n_rot_ / 2; ++i) {
      const double theta = pos * std::pow(rope_base_, -2.0 * i / n_rot_);
      const int64_t a = offset + (neox_ ? i : 2 * i);
      const int64_t b = offset + (neox_ ? i + n_rot_ / 2 : 2 * i + 1);
      const double x0 = v[a], x1 = v[b];
      v[a] = x0 * std::cos(theta) - x1 * std::sin(theta);
      v[b] = x0 * std::sin(theta) + x1 * std::cos(theta);
    }
  };

  for (const Layer& L : layers_) {
    std::vector<std::vector<double>> q(n), k(n), v(n);
    for (int64_t t = 0; t < n; ++t) {
      std::vector<double> xn = rms_norm(x[t], L.attn_norm, eps_);
      q[t] = matvec(L.wq, xn, n_embd_);
      k[t] = matvec(L.wk, xn, kv_dim);
      v[t] = matvec(L.wv, xn, kv_dim);
      if (!L.q_bias.empty()) {
        for (int32_t i = 0; i < n_embd_; ++i) q[t][i] += L.q_bias[i];
        for (int32_t i = 0; i < kv_dim; ++i) k[t][i] += L.k_bias[i], v[t][i] += L.v_bias[i];
      }
      for (int32_t h = 0; h < n_head_; ++h) rotate(q[t], int64_t{h} * head_dim_, t);
      for (int32_t h = 0; h < n_head_kv_; ++h) rotate(k[t], int64_t{h} * head_dim_, t);
    }
    for (int64_t t = 0; t < n; ++t) {
      std::vector<double> att(n_embd_, 0.0);
      for (int32_t h = 0; h < n_head_; ++h) {
        const int32_t g = h / (n_head_ / n_head_kv_);
        std::vector<double> s(t + 1);
        double mx = -INFINITY;
        for (int64_t j = 0; j <= t; ++j) {
          double d = 0;
          for (int32_t i = 0; i < head_dim_; ++i)
            d += q[t][h * head_dim_ + i] * k[j][g * head_dim_ + i];
          s[j] = d / std::sqrt(static_cast<double>(head_dim_));
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (double& e : s) sum += (e = std::exp(e - mx));
        for (int64_t j = 0; j <= t; ++j)
          for (int32_t i = 0; i < head_dim_; ++i)
            att[h * head_dim_ + i] += s[j] / sum * v[j][g * head_dim_ + i];
      }
      std::vector<double> o = matvec(L.wo, att, n_embd_);
      for (int32_t i = 0; i < n_embd_; ++i) x[t][i] += o[i];
      std::vector<double> xn = rms_norm(x[t], L.ffn_norm, eps_);
      std::vector<double> g = matvec(L.w_gate, xn, n_ff_), u = matvec(L.w_up, xn, n_ff_);
      for (int32_t i = 0; i < n_ff_; ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
      std::vector<double> d = matvec(L.w_down, g, n_embd_);
      for (int32_t i = 0; i < n_embd_; ++i) x[t][i] += d[i];
    }
  }
  return matvec(out_, rms_norm(x[n - 1], out_norm_, eps_), n_vocab_);
}

}  // namespace tandem::testing
