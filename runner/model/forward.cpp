#include "runner/model/forward.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "runner/kernels/kernels.h"
#include "runner/model/soft_cap.h"

namespace tandem {

namespace {

// out = x / rms(x) * weight, one row (out may be x). The sum of squares is taken in
// double so the result hardly depends on rounding order (and the order is fixed anyway):
// four partial sums over i mod 4, so that the additions overlap instead of waiting on one
// another (a serial chain was 4-5% of a long prefill).
void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps) {
  double part[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) part[k] += static_cast<double>(x[i + k]) * x[i + k];
  for (int k = 0; i < n; ++i, ++k) part[k] += static_cast<double>(x[i]) * x[i];
  const double ss = (part[0] + part[1]) + (part[2] + part[3]);
  const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  for (i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

// Rotates the first n_rot dimensions of one head.
void rope(float* head, const float* cos, const float* sin, int32_t n_rot, RopeStyle style) {
  const int32_t half = n_rot / 2;
  for (int32_t i = 0; i < half; ++i) {
    const int32_t a = style == RopeStyle::kAdjacentPairs ? 2 * i : i;
    const int32_t b = style == RopeStyle::kAdjacentPairs ? 2 * i + 1 : i + half;
    const float x0 = head[a], x1 = head[b];
    head[a] = x0 * cos[i] - x1 * sin[i];
    head[b] = x0 * sin[i] + x1 * cos[i];
  }
}

// RoPE frequency i of n_rot / 2: scale * base^(-2i/n_rot) / factor_i (in double: positions
// reach 10^5 and more, where float angles drift).
double rope_frequency(const RopeParams& p, int32_t i, int32_t n_rot,
                      const std::vector<float>& factors) {
  const double f = p.scale * std::pow(static_cast<double>(p.base), -2.0 * i / n_rot);
  return factors.empty() ? f : f / factors[i];
}

// out[i] = act(gate[i]) * up[i]. GELU is the tanh approximation, as gemma and ggml use.
void gated_activation(Activation act, const float* gate, const float* up, float* out, int64_t n) {
  if (act == Activation::kSilu) return kernels::silu_mul(gate, up, out, n);
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  // tanh through soft_cap's vector form (a cap of 1 is tanh itself): libm's scalar tanhf, once
  // per element of every gemma FFN, took about 8% of a tiny gemma's decode step.
  constexpr int64_t kChunk = 1024;
  float u[kChunk];
  for (int64_t at = 0; at < n; at += kChunk) {
    const int64_t m = std::min(kChunk, n - at);
    for (int64_t i = 0; i < m; ++i) {
      const float x = gate[at + i];
      u[i] = kSqrt2OverPi * x * (1.0f + 0.044715f * x * x);
    }
    soft_cap(u, m, 1.0f);
    for (int64_t i = 0; i < m; ++i) out[at + i] = 0.5f * gate[at + i] * (1.0f + u[i]) * up[at + i];
  }
}

void add(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace

ForwardPass::ForwardPass(const Model& model, KvCache& kv, ThreadPool& pool, int32_t served_context)
    : model_(model),
      cfg_(model.config()),
      rope_factors_(model.rope_freq_factors(served_context > 0 ? served_context
                                                               : model.config().context_length)),
      kv_(kv),
      pool_(pool) {
  if (kv.kv_dim() != cfg_.kv_dim() || kv.head_dim() != cfg_.head_dim)
    throw std::invalid_argument("ForwardPass: KV cache built for another model shape");
  if (kv.type() == KvType::kQ8_0 && cfg_.head_dim % gguf::kQ8_0BlockSize != 0)
    throw std::invalid_argument(
        "q8_0 needs a head size that is a multiple of 32 (this "
        "model's is " +
        std::to_string(cfg_.head_dim) + ")");
  for (int32_t l = 0; l < cfg_.n_layer && kv.has_local_group(); ++l)
    if (kv.n_layer() != cfg_.n_layer || kv.is_local(l) != cfg_.is_local_layer(l))
      throw std::invalid_argument("ForwardPass: the KV cache's local layers are not the model's");
  thread_scores_.resize(pool.size());
}

// A local table covers the row like the global one, and every block a query of the row
// can see (from position - window + 1 on) is there: a dropped block is outside the
// window by construction, and this makes sure of it before anything is read.
void ForwardPass::validate_local_table(const ForwardRow& r) const {
  const int64_t bs = kv_.block_size();
  const int64_t end = static_cast<int64_t>(r.position) + static_cast<int64_t>(r.tokens.size());
  if (static_cast<int64_t>(r.kv_local_blocks.size()) * bs < end)
    throw std::invalid_argument("forward: the local block table does not cover the row");
  const int64_t first_seen = std::max<int64_t>(0, r.position - cfg_.sliding_window + 1);
  for (int64_t b = 0; b < static_cast<int64_t>(r.kv_local_blocks.size()); ++b) {
    const int32_t id = r.kv_local_blocks[b];
    if (id >= kv_.n_local_blocks() || (id < 0 && (b + 1) * bs > first_seen))
      throw std::invalid_argument("forward: local KV block " + std::to_string(b) +
                                  (id < 0 ? " dropped inside the window" : " out of range"));
  }
}

void ForwardPass::validate(std::span<const ForwardRow> rows) const {
  const int64_t bs = kv_.block_size();
  for (const ForwardRow& r : rows) {
    if (r.tokens.empty()) throw std::invalid_argument("forward: a row has no tokens");
    const int64_t end = static_cast<int64_t>(r.position) + static_cast<int64_t>(r.tokens.size());
    if (r.position < 0 || end > cfg_.context_length)
      throw std::invalid_argument("forward: positions " + std::to_string(r.position) + ".." +
                                  std::to_string(end) + " exceed the context length " +
                                  std::to_string(cfg_.context_length));
    if (static_cast<int64_t>(r.kv_blocks.size()) * bs < end)
      throw std::invalid_argument("forward: the block table does not cover the row");
    for (int32_t b : r.kv_blocks)
      if (b < 0 || b >= kv_.n_blocks()) throw std::invalid_argument("forward: bad KV block id");
    if (kv_.has_local_group()) validate_local_table(r);
    for (int32_t t : r.tokens)
      if (t < 0 || t >= cfg_.n_vocab)
        throw std::invalid_argument("forward: token id " + std::to_string(t) +
                                    " is outside the vocabulary");
  }
}

void ForwardPass::reserve(int64_t n_tokens, int64_t n_logits) {
  const int64_t e = cfg_.n_embd;
  auto grow = [](std::vector<float>& v, int64_t n) {
    if (static_cast<int64_t>(v.size()) < n) v.resize(n);
  };
  grow(x_, n_tokens * e);
  grow(xn_, n_tokens * e);
  grow(qkv_, n_tokens * (cfg_.q_dim() + 2 * cfg_.kv_dim()));
  grow(attn_, n_tokens * cfg_.q_dim());
  grow(proj_, n_tokens * e);
  grow(gate_up_, n_tokens * 2 * cfg_.n_ff);
  grow(ffn_, n_tokens * cfg_.n_ff);
  grow(rope_cos_, 2 * n_tokens * (cfg_.n_rot / 2));
  grow(rope_sin_, 2 * n_tokens * (cfg_.n_rot / 2));
  grow(last_, n_logits * e);
  grow(logits_, n_logits * cfg_.n_vocab);
}

std::span<float> ForwardPass::run(std::span<const ForwardRow> given) {
  validate(given);
  const std::span<const ForwardRow> rows = order_rows(given);
  int64_t n_tokens = 0, n_logits = 0;
  for (const ForwardRow& r : rows) {
    n_tokens += static_cast<int64_t>(r.tokens.size());
    n_logits += r.all_logits ? static_cast<int64_t>(r.tokens.size()) : (r.want_logits ? 1 : 0);
  }
  reserve(n_tokens, n_logits);
  token_row_.resize(n_tokens);
  token_position_.resize(n_tokens);
  for (int64_t t = 0, r = 0; r < static_cast<int64_t>(rows.size()); ++r) {
    given_first_token_[row_order_[r]] = t;
    for (size_t i = 0; i < rows[r].tokens.size(); ++i, ++t) {
      token_row_[t] = static_cast<int32_t>(r);
      token_position_[t] = rows[r].position + static_cast<int32_t>(i);
    }
  }

  shared_chunk_walks_ = 0;
  clock_ = PhaseClock(profile_);
  if (profile_ != nullptr) ++profile_->steps;
  embed_and_angles(rows);
  plan_query_tiles();
  plan_shared_spans(rows);
  clock_.mark(ForwardPhase::kEmbed);
  // Each block's closing pass over the tokens adds its residual and norms x for the next
  // block (xn), so a layer costs two fewer pool dispatches than separate norm passes.
  for (int32_t l = 0; l < cfg_.n_layer; ++l) {
    attention_block(l, rows);
    ffn_block(l);
  }
  const int64_t n_out = output_logits(given);
  output_hidden(given);
  clock_.mark(ForwardPhase::kOutput);
  return {logits_.data(), static_cast<size_t>(n_out * cfg_.n_vocab)};
}

// The order the pass computes the rows in: decode rows (one token) first, ordered by their
// block tables, then the others as given, so that rows holding the same blocks (a prefix
// the prefix cache shares, n choices of one prompt) sit side by side and their attention
// can walk those blocks together (attention_plan.cpp). A row's result is its own whatever
// its neighbours (law 2), so the order changes no bit; output_logits hands the logits back
// in the given order.
std::span<const ForwardRow> ForwardPass::order_rows(std::span<const ForwardRow> given) {
  const auto n = static_cast<int32_t>(given.size());
  row_order_.resize(n);
  std::iota(row_order_.begin(), row_order_.end(), 0);
  auto decode = [&](int32_t r) { return given[r].tokens.size() == 1; };
  std::stable_sort(row_order_.begin(), row_order_.end(), [&](int32_t a, int32_t b) {
    if (decode(a) != decode(b)) return decode(a);
    return decode(a) &&
           std::lexicographical_compare(given[a].kv_blocks.begin(), given[a].kv_blocks.end(),
                                        given[b].kv_blocks.begin(), given[b].kv_blocks.end());
  });
  ordered_rows_.clear();
  for (int32_t r : row_order_) ordered_rows_.push_back(given[r]);
  given_first_token_.resize(n);
  return ordered_rows_;
}

// Per-token passes (norms, RoPE, the gated activation) are a microsecond or less a token,
// so one task a token cost more in the pool's claims (a contended compare-and-swap and a
// count each) than in work at decode batches: the tokens go in runs instead, one a thread
// up to kTokensPerRunBelow tokens (where the work is too small to be worth balancing) and
// kRunsPerThread a thread above. Each token's work is its own, so the split changes no bit.
template <class Fn>
void ForwardPass::for_each_token(const Fn& fn) {
  constexpr int64_t kTokensPerRunBelow = 64, kRunsPerThread = 4;
  const int64_t n_tokens = static_cast<int64_t>(token_row_.size());
  const int64_t threads = pool_.size();
  const int64_t runs =
      std::min(n_tokens, n_tokens <= kTokensPerRunBelow ? threads : kRunsPerThread * threads);
  pool_.parallel_for(runs, [&](int64_t r) {
    for (int64_t t = r * n_tokens / runs; t < (r + 1) * n_tokens / runs; ++t) fn(t);
  });
}

// x = embedding * embed_scale, and xn = the first layer's attention norm of it; RoPE's cos
// and sin (times the attention factor) once per token, shared by all layers.
void ForwardPass::embed_and_angles(std::span<const ForwardRow> rows) {
  const int64_t n_tokens = static_cast<int64_t>(token_row_.size()), e = cfg_.n_embd;
  const int32_t half = cfg_.n_rot / 2;
  for_each_token([&](int64_t t) {
    const ForwardRow& r = rows[token_row_[t]];
    float* x = &x_[t * e];
    model_.embed(r.tokens[token_position_[t] - r.position], x);
    if (cfg_.embed_scale != 1.0f)
      for (int64_t i = 0; i < e; ++i) x[i] *= cfg_.embed_scale;
    rms_norm(x, model_.layers()[0].attn_norm.data(), &xn_[t * e], e, cfg_.rms_eps);
    for (int table = 0; table < 2; ++table) {
      const RopeParams& p = table == 0 ? cfg_.rope : cfg_.rope_local;
      const int64_t at = (table * n_tokens + t) * half;
      const double mscale = cfg_.rope_attn_factor;
      for (int32_t i = 0; i < half; ++i) {
        const double angle = token_position_[t] * rope_frequency(p, i, cfg_.n_rot, rope_factors_);
        rope_cos_[at + i] = static_cast<float>(std::cos(angle) * mscale);
        rope_sin_[at + i] = static_cast<float>(std::sin(angle) * mscale);
      }
    }
  });
}

// x += post_norm(Wo * attention(rope(qk_norm(Wq,k,v * xn)))), xn = norm(x) on entry;
// then xn = ffn_norm(x).
void ForwardPass::attention_block(int32_t l, std::span<const ForwardRow> rows) {
  const LayerWeights& w = model_.layers()[l];
  const int64_t n_tokens = static_cast<int64_t>(token_row_.size()), e = cfg_.n_embd;
  kernels::matmul(pool_, w.qkv, xn_.data(), n_tokens, qkv_.data());
  clock_.mark(ForwardPhase::kQkv);
  for_each_token([&](int64_t t) { qk_rope_and_store(l, t, rows); });
  clock_.mark(ForwardPhase::kRopeStore);
  attention(l, rows);
  clock_.mark(ForwardPhase::kAttention);
  kernels::matmul(pool_, w.attn_out, attn_.data(), n_tokens, proj_.data());
  clock_.mark(ForwardPhase::kAttnOut);
  for_each_token([&](int64_t t) {
    float* p = &proj_[t * e];
    if (cfg_.post_norms) rms_norm(p, w.post_attn_norm.data(), p, e, cfg_.rms_eps);
    add(&x_[t * e], p, e);
    rms_norm(&x_[t * e], w.ffn_norm.data(), &xn_[t * e], e, cfg_.rms_eps);
  });
  clock_.mark(ForwardPhase::kAttnResidual);
}

// One token's q and k: bias, per-head norm, RoPE; then K and V go to the token's cache
// slot, before any token attends to it.
void ForwardPass::qk_rope_and_store(int32_t l, int64_t t, std::span<const ForwardRow> rows) {
  const LayerWeights& w = model_.layers()[l];
  const int64_t n_tokens = static_cast<int64_t>(token_row_.size()), kv_dim = cfg_.kv_dim();
  const int64_t qkv_width = cfg_.q_dim() + 2 * kv_dim;
  const int32_t hd = cfg_.head_dim, half = cfg_.n_rot / 2;
  float* q = &qkv_[t * qkv_width];
  float* k = q + cfg_.q_dim();
  if (!w.qkv_bias.empty()) add(q, w.qkv_bias.data(), qkv_width);
  const int64_t at = ((cfg_.is_local_layer(l) ? n_tokens : 0) + t) * half;
  auto per_head = [&](float* head, const std::vector<float>& norm) {
    if (!norm.empty()) rms_norm(head, norm.data(), head, hd, cfg_.rms_eps);
    rope(head, &rope_cos_[at], &rope_sin_[at], cfg_.n_rot, cfg_.rope_style);
  };
  for (int32_t h = 0; h < cfg_.n_head; ++h) per_head(q + h * hd, w.q_norm);
  for (int32_t h = 0; h < cfg_.n_head_kv; ++h) per_head(k + h * hd, w.k_norm);
  const ForwardRow& r = rows[token_row_[t]];
  const int32_t pos = token_position_[t];
  const int32_t block = table(r, l)[pos / kv_.block_size()];
  const int32_t slot = pos % kv_.block_size();
  kv_.store(l, block, slot, k, k + kv_dim);
}

// x += post_norm(W_down * (act(W_gate * xn) * (W_up * xn))), xn = norm(x) on entry; then
// xn = the next layer's attention norm of x (the output norm is output_logits' own).
void ForwardPass::ffn_block(int32_t l) {
  const LayerWeights& w = model_.layers()[l];
  const int64_t n_tokens = static_cast<int64_t>(token_row_.size()), e = cfg_.n_embd;
  const int64_t ff = cfg_.n_ff;
  const float* next_norm = l + 1 < cfg_.n_layer ? model_.layers()[l + 1].attn_norm.data() : nullptr;
  kernels::matmul(pool_, w.gate_up, xn_.data(), n_tokens, gate_up_.data());
  clock_.mark(ForwardPhase::kGateUp);
  for_each_token([&](int64_t t) {
    const float* g = &gate_up_[t * 2 * ff];
    gated_activation(cfg_.activation, g, g + ff, &ffn_[t * ff], ff);
  });
  clock_.mark(ForwardPhase::kActivation);
  kernels::matmul(pool_, w.down, ffn_.data(), n_tokens, proj_.data());
  clock_.mark(ForwardPhase::kDown);
  for_each_token([&](int64_t t) {
    float* p = &proj_[t * e];
    if (cfg_.post_norms) rms_norm(p, w.post_ffn_norm.data(), p, e, cfg_.rms_eps);
    add(&x_[t * e], p, e);
    if (next_norm != nullptr) rms_norm(&x_[t * e], next_norm, &xn_[t * e], e, cfg_.rms_eps);
  });
  clock_.mark(ForwardPhase::kFfnResidual);
}

// Logits (soft-capped where the family does) for the last token of each row that wants
// them, or every token of an all_logits row; returns how many logit rows there are. The
// output matmul computes each row alone (kernels.h), so a prompt's logits do not depend on
// the batch either.
// The given rows' logits in their given order, whatever order the pass computed them in.
int64_t ForwardPass::output_logits(std::span<const ForwardRow> given) {
  const int64_t e = cfg_.n_embd;
  int64_t n_out = 0;
  partial_rows_.clear();
  for (size_t r = 0; r < given.size(); ++r) {
    const auto n = static_cast<int64_t>(given[r].tokens.size());
    const int64_t t = given_first_token_[r];
    const int64_t first = given[r].all_logits ? t : (given[r].want_logits ? t + n - 1 : t + n);
    for (int64_t i = first; i < t + n; ++i) {
      rms_norm(&x_[i * e], model_.output_norm().data(), &last_[n_out * e], e, cfg_.rms_eps);
      const bool partials = given[r].logit_partials;
      partial_rows_.push_back(static_cast<uint8_t>(
          (partials ? kPartials : 0) | (partials && given[r].raw_logits ? kRawCopy : 0)));
      ++n_out;
    }
  }
  if (n_out == 0) return 0;
  output_matmul(n_out);
  return n_out;
}

// The output-normed states each pooling row gives its embedding: the same norm the logits
// read, one token at a time, so a state never depends on the batch either.
void ForwardPass::output_hidden(std::span<const ForwardRow> given) {
  const int64_t e = cfg_.n_embd;
  hidden_first_.assign(given.size(), 0);
  hidden_count_.assign(given.size(), 0);
  size_t n_states = 0;
  for (size_t r = 0; r < given.size(); ++r) {
    const Pooling p = given[r].pooling;
    hidden_first_[r] = n_states;
    hidden_count_[r] = p == Pooling::kNone ? 0 : p == Pooling::kMean ? given[r].tokens.size() : 1;
    n_states += hidden_count_[r];
  }
  if (n_states == 0) return;
  if (hidden_.size() < n_states * e) hidden_.resize(n_states * e);
  for (size_t r = 0; r < given.size(); ++r) {
    if (hidden_count_[r] == 0) continue;
    const auto n = static_cast<int64_t>(given[r].tokens.size());
    const int64_t t = given_first_token_[r];
    const int64_t first = given[r].pooling == Pooling::kLast ? t + n - 1 : t;
    for (size_t k = 0; k < hidden_count_[r]; ++k) {
      rms_norm(&x_[(first + static_cast<int64_t>(k)) * e], model_.output_norm().data(),
               &hidden_[(hidden_first_[r] + k) * e], e, cfg_.rms_eps);
    }
  }
}

// Causal attention for every (token, head) of the batch. Each task reads the K/V
// slots of its own sequence up to its own position (from position - window + 1 on a
// sliding-window layer), a block at a time, in the cache's stored type (widened in
// registers, accumulated in F32); the order of the reduction is fixed, so a token's output
// does not depend on the batch or on the thread count. Every key, the token's own and those
// of its chunk included, is read back from the cache, so a row's result does not depend
// on how its prompt was chunked either.
}  // namespace tandem
