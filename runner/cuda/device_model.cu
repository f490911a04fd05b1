#include "runner/cuda/device_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runner/cuda/cuda_check.h"
#include "runner/kernels/kernels.h"
#include "runner/util/float16.h"

namespace tandem::cuda {
namespace {

bool kept_as_is(gguf::TensorType t) {
  return t == gguf::TensorType::kF32 || t == gguf::TensorType::kF16 || t == gguf::TensorType::kBF16;
}

// Types whose every block is an F16 scale d (its first two bytes) times integers of at most
// 8 bits, over 32 elements: repacked as int8 q and F32 d, exactly.
bool scaled_int8_type(gguf::TensorType t) {
  return t == gguf::TensorType::kQ8_0 || t == gguf::TensorType::kQ5_0 ||
         t == gguf::TensorType::kQ4_0 || t == gguf::TensorType::kIQ4_NL;
}

// One row as q and d (q = w / d, checked exact); false if some element is not q * d.
bool split_scaled_row(gguf::TensorType type, const uint8_t* src, int64_t n, float* widened,
                      int8_t* q, float* d) {
  kernels::dequantize_row(type, src, widened, n);
  const uint64_t block_bytes = gguf::tensor_bytes(type, 32);
  for (int64_t b = 0; b < n / 32; ++b) {
    uint16_t bits;
    std::memcpy(&bits, src + b * block_bytes, sizeof bits);
    const float scale = float_from_half(bits);
    if (!std::isfinite(scale)) return false;
    d[b] = scale;
    for (int64_t j = b * 32; j < b * 32 + 32; ++j) {
      const float v = scale == 0 ? 0.0f : widened[j] / scale;
      if (!(v >= -128 && v <= 127) || std::nearbyint(v) != v || v * scale != widened[j])
        return false;
      q[j] = static_cast<int8_t>(v);
    }
  }
  return true;
}

WeightType weight_type(gguf::TensorType t) {
  switch (t) {
    case gguf::TensorType::kF16:
      return WeightType::kF16;
    case gguf::TensorType::kBF16:
      return WeightType::kBF16;
    default:
      return WeightType::kF32;
  }
}

}  // namespace

DeviceModel::DeviceModel(const Model& model, int32_t served_context) {
  const ModelConfig& c = model.config();
  for (const LayerWeights& w : model.layers()) {
    DeviceLayer d;
    d.attn_norm = upload_vector(w.attn_norm);
    d.qkv = upload_matrix(w.qkv_sources);
    d.qkv_bias = upload_vector(w.qkv_bias);
    d.q_norm = upload_vector(w.q_norm);
    d.k_norm = upload_vector(w.k_norm);
    d.attn_out = upload_matrix(w.attn_out_sources);
    d.post_attn_norm = upload_vector(w.post_attn_norm);
    d.ffn_norm = upload_vector(w.ffn_norm);
    d.post_ffn_norm = upload_vector(w.post_ffn_norm);
    d.gate_up = upload_matrix(w.gate_up_sources);
    d.down = upload_matrix(w.down_sources);
    layers_.push_back(d);
  }
  const gguf::TensorInfo& embd = model.token_embedding();
  const kernels::WeightSource embd_source{embd.type, embd.data, c.n_vocab, c.n_embd};
  embedding_ = upload_matrix({embd_source});
  const kernels::WeightSource& out = model.output_source();
  // Tied embeddings: one copy serves both (a 49k x 576 table is most of a small model).
  output_ = out.data == embd.data && out.type == embd.type ? embedding_ : upload_matrix({out});
  output_norm_ = upload_vector(model.output_norm());
  rope_global_ = upload_frequencies(model, c.rope, served_context);
  rope_local_ = upload_frequencies(model, c.rope_local, served_context);
}

DeviceModel::~DeviceModel() {
  for (void* p : allocations_) cudaFree(p);
}

void* DeviceModel::upload(const void* data, size_t bytes) {
  void* p = nullptr;
  TANDEM_CUDA_CHECK(cudaMalloc(&p, bytes));
  allocations_.push_back(p);
  bytes_ += bytes;
  TANDEM_CUDA_CHECK(cudaMemcpy(p, data, bytes, cudaMemcpyHostToDevice));
  return p;
}

const float* DeviceModel::upload_vector(const std::vector<float>& v) {
  if (v.empty()) return nullptr;
  return static_cast<const float*>(upload(v.data(), v.size() * sizeof(float)));
}

// The sources' rows one after another as int8 and a scale per 32 (scaled_int8_type); an
// empty matrix if some block is not of that form.
DeviceMatrix DeviceModel::upload_scaled_int8(const std::vector<kernels::WeightSource>& sources) {
  DeviceMatrix m;
  m.type = WeightType::kScaledInt8;
  m.n_in = sources.front().n_in;
  for (const kernels::WeightSource& s : sources) m.n_out += s.n_out;
  std::vector<int8_t> q(static_cast<size_t>(m.n_out * m.n_in));
  std::vector<float> d(static_cast<size_t>(m.n_out * (m.n_in / 32))), widened(m.n_in);
  int64_t row = 0;
  for (const kernels::WeightSource& s : sources) {
    const auto* src = static_cast<const uint8_t*>(s.data);
    const uint64_t row_bytes = gguf::tensor_bytes(s.type, static_cast<uint64_t>(s.n_in));
    for (int64_t r = 0; r < s.n_out; ++r, ++row)
      if (!split_scaled_row(s.type, src + row_bytes * r, m.n_in, widened.data(),
                            q.data() + row * m.n_in, d.data() + row * (m.n_in / 32)))
        return {};
  }
  m.data = upload(q.data(), q.size());
  m.scales = static_cast<const float*>(upload(d.data(), d.size() * sizeof(float)));
  return m;
}

// The sources' rows one after another, in their own type when they share one the kernels
// read (scaled int8 for the types that repack exactly), else widened to F32
// (kernels::dequantize_row: exact).
DeviceMatrix DeviceModel::upload_matrix(const std::vector<kernels::WeightSource>& sources) {
  const gguf::TensorType first = sources.front().type;
  const bool all_scaled =
      scaled_int8_type(first) && sources.front().n_in % 32 == 0 &&
      std::all_of(sources.begin(), sources.end(),
                  [&](const kernels::WeightSource& s) { return s.type == first; });
  if (all_scaled)
    if (DeviceMatrix m = upload_scaled_int8(sources); m.data) return m;
  DeviceMatrix m;
  m.n_in = sources.front().n_in;
  bool same = kept_as_is(sources.front().type);
  for (const kernels::WeightSource& s : sources) {
    m.n_out += s.n_out;
    same = same && s.type == sources.front().type;
  }
  m.type = same ? weight_type(sources.front().type) : WeightType::kF32;
  std::vector<uint8_t> host;
  for (const kernels::WeightSource& s : sources) {
    const auto* src = static_cast<const uint8_t*>(s.data);
    const uint64_t row_bytes = gguf::tensor_bytes(s.type, static_cast<uint64_t>(s.n_in));
    if (same) {
      host.insert(host.end(), src, src + row_bytes * s.n_out);
      continue;
    }
    const size_t at = host.size();
    host.resize(at + static_cast<size_t>(s.n_out * s.n_in) * sizeof(float));
    auto* dst = reinterpret_cast<float*>(host.data() + at);
    for (int64_t r = 0; r < s.n_out; ++r)
      kernels::dequantize_row(s.type, src + row_bytes * r, dst + r * s.n_in, s.n_in);
  }
  m.data = upload(host.data(), host.size());
  return m;
}

// theta_i = scale * base^(-2i / n_rot) / factor_i, in double, as ForwardPass computes it.
const double* DeviceModel::upload_frequencies(const Model& model, const RopeParams& p,
                                              int32_t served) {
  const ModelConfig& c = model.config();
  const std::vector<float>& factors =
      model.rope_freq_factors(served > 0 ? served : c.context_length);
  std::vector<double> f(static_cast<size_t>(std::max(c.n_rot / 2, 1)));
  for (int32_t i = 0; i < c.n_rot / 2; ++i) {
    f[i] = p.scale * std::pow(static_cast<double>(p.base), -2.0 * i / c.n_rot);
    if (!factors.empty()) f[i] /= factors[i];
  }
  return static_cast<const double*>(upload(f.data(), f.size() * sizeof(double)));
}

}  // namespace tandem::cuda
