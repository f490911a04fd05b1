#include "runner/model/forward.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>

#include "runner/kernels/kernels.h"

namespace tandem {
namespace {

// out = x / rms(x) * weight, one row. The sum of squares is taken in double so the
// result hardly depends on rounding order (and the order is fixed anyway).
void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
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

}  // namespace

ForwardPass::ForwardPass(const Model& model, KvCache& kv, ThreadPool& pool)
    : model_(model), cfg_(model.config()), kv_(kv), pool_(pool) {
  if (kv.kv_dim() != cfg_.kv_dim())
    throw std::invalid_argument("ForwardPass: KV cache built for another model shape");
  thread_scores_.resize(pool.size());
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
  grow(qkv_, n_tokens * (e + 2 * cfg_.kv_dim()));
  grow(attn_, n_tokens * e);
  grow(proj_, n_tokens * e);
  grow(gate_up_, n_tokens * 2 * cfg_.n_ff);
  grow(ffn_, n_tokens * cfg_.n_ff);
  grow(rope_cos_, n_tokens * (cfg_.n_rot / 2));
  grow(rope_sin_, n_tokens * (cfg_.n_rot / 2));
  grow(last_, n_logits * e);
  grow(logits_, n_logits * cfg_.n_vocab);
}

std::span<float> ForwardPass::run(std::span<const ForwardRow> rows) {
  validate(rows);
  int64_t n_tokens = 0, n_logits = 0;
  for (const ForwardRow& r : rows) {
    n_tokens += static_cast<int64_t>(r.tokens.size());
    n_logits += r.want_logits ? 1 : 0;
  }
  reserve(n_tokens, n_logits);

  const int64_t e = cfg_.n_embd, kv_dim = cfg_.kv_dim(), ff = cfg_.n_ff;
  const int64_t qkv_width = e + 2 * kv_dim;
  const int32_t half_rot = cfg_.n_rot / 2;

  // Token bookkeeping, embeddings, and RoPE angles (once per token, shared by all layers).
  token_row_.resize(n_tokens);
  token_position_.resize(n_tokens);
  for (int64_t t = 0, r = 0; r < static_cast<int64_t>(rows.size()); ++r)
    for (size_t i = 0; i < rows[r].tokens.size(); ++i, ++t) {
      token_row_[t] = static_cast<int32_t>(r);
      token_position_[t] = rows[r].position + static_cast<int32_t>(i);
    }
  pool_.parallel_for(n_tokens, [&](int64_t t) {
    const ForwardRow& r = rows[token_row_[t]];
    model_.embed(r.tokens[token_position_[t] - r.position], &x_[t * e]);
    for (int32_t i = 0; i < half_rot; ++i) {
      // The angle in double: positions reach 10^5 and more, where float angles drift.
      const double freq = std::pow(static_cast<double>(cfg_.rope_base), -2.0 * i / cfg_.n_rot);
      const double angle = token_position_[t] * freq;
      rope_cos_[t * half_rot + i] = static_cast<float>(std::cos(angle));
      rope_sin_[t * half_rot + i] = static_cast<float>(std::sin(angle));
    }
  });

  for (int32_t l = 0; l < cfg_.n_layer; ++l) {
    const LayerWeights& w = model_.layers()[l];

    // Attention block: x += Wo * attention(rope(Wq,k,v * norm(x)))
    pool_.parallel_for(n_tokens, [&](int64_t t) {
      rms_norm(&x_[t * e], w.attn_norm.data(), &xn_[t * e], e, cfg_.rms_eps);
    });
    kernels::matmul(pool_, w.qkv, xn_.data(), n_tokens, qkv_.data());
    pool_.parallel_for(n_tokens, [&](int64_t t) {
      float* q = &qkv_[t * qkv_width];
      if (!w.qkv_bias.empty())
        for (int64_t i = 0; i < qkv_width; ++i) q[i] += w.qkv_bias[i];
      const float* cs = &rope_cos_[t * half_rot];
      const float* sn = &rope_sin_[t * half_rot];
      for (int32_t h = 0; h < cfg_.n_head; ++h)
        rope(q + h * cfg_.head_dim, cs, sn, cfg_.n_rot, cfg_.rope_style);
      float* k = q + e;
      for (int32_t h = 0; h < cfg_.n_head_kv; ++h)
        rope(k + h * cfg_.head_dim, cs, sn, cfg_.n_rot, cfg_.rope_style);
      // Store K and V in the token's cache slot before any token attends to it.
      const ForwardRow& r = rows[token_row_[t]];
      const int32_t pos = token_position_[t];
      const int32_t block = r.kv_blocks[pos / kv_.block_size()];
      const int32_t slot = pos % kv_.block_size();
      std::copy(k, k + kv_dim, kv_.k(l, block, slot));
      std::copy(k + kv_dim, k + 2 * kv_dim, kv_.v(l, block, slot));
    });
    attention(l, rows);
    kernels::matmul(pool_, w.attn_out, attn_.data(), n_tokens, proj_.data());
    pool_.parallel_for(n_tokens, [&](int64_t t) {
      for (int64_t i = 0; i < e; ++i) x_[t * e + i] += proj_[t * e + i];
      rms_norm(&x_[t * e], w.ffn_norm.data(), &xn_[t * e], e, cfg_.rms_eps);
    });

    // Feed-forward block: x += W_down * (silu(W_gate * xn) * (W_up * xn))
    kernels::matmul(pool_, w.gate_up, xn_.data(), n_tokens, gate_up_.data());
    pool_.parallel_for(n_tokens, [&](int64_t t) {
      const float* g = &gate_up_[t * 2 * ff];
      kernels::silu_mul(g, g + ff, &ffn_[t * ff], ff);
    });
    kernels::matmul(pool_, w.down, ffn_.data(), n_tokens, proj_.data());
    pool_.parallel_for(n_tokens, [&](int64_t t) {
      for (int64_t i = 0; i < e; ++i) x_[t * e + i] += proj_[t * e + i];
    });
  }

  // Logits for the last token of each row that wants them.
  int64_t n_out = 0;
  for (int64_t t = 0, r = 0; r < static_cast<int64_t>(rows.size()); ++r) {
    t += static_cast<int64_t>(rows[r].tokens.size());
    if (rows[r].want_logits) {
      rms_norm(&x_[(t - 1) * e], model_.output_norm().data(), &last_[n_out * e], e, cfg_.rms_eps);
      ++n_out;
    }
  }
  if (n_out > 0) kernels::matmul(pool_, model_.output(), last_.data(), n_out, logits_.data());
  return {logits_.data(), static_cast<size_t>(n_out * cfg_.n_vocab)};
}

// Causal attention for every (token, head) of the batch. Each task reads the K/V
// slots of its own sequence up to its own position; the order of the reduction is
// fixed, so a token's output does not depend on the batch or on the thread count.
void ForwardPass::attention(int32_t layer, std::span<const ForwardRow> rows) {
  const int64_t n_tokens = static_cast<int64_t>(token_row_.size());
  const int32_t hd = cfg_.head_dim, group = cfg_.n_head / cfg_.n_head_kv;
  const int64_t e = cfg_.n_embd, qkv_width = e + 2 * cfg_.kv_dim();
  const int32_t bs = kv_.block_size();
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t n_tasks = n_tokens * cfg_.n_head;
  std::atomic<int64_t> next{0};

  pool_.run_on_all([&](int thread, int) {
    std::vector<float>& scores = thread_scores_[thread];
    for (int64_t task = next.fetch_add(1); task < n_tasks; task = next.fetch_add(1)) {
      const int64_t t = task / cfg_.n_head;
      const int32_t h = static_cast<int32_t>(task % cfg_.n_head);
      const int32_t kv_head = h / group;
      const ForwardRow& r = rows[token_row_[t]];
      const int32_t n_ctx = token_position_[t] + 1;
      if (static_cast<int32_t>(scores.size()) < n_ctx) scores.resize(n_ctx);

      const float* q = &qkv_[t * qkv_width + static_cast<int64_t>(h) * hd];
      const int64_t stride = cfg_.kv_dim();
      // Scores block by block: a block's slots sit kv_dim floats apart.
      for (int32_t j0 = 0; j0 < n_ctx; j0 += bs) {
        const int32_t count = std::min(bs, n_ctx - j0);
        const float* k = kv_.k(layer, r.kv_blocks[j0 / bs], 0) + kv_head * hd;
        kernels::dot_rows(q, k, stride, count, hd, &scores[j0]);
      }
      float max_score = -INFINITY;
      for (int32_t j = 0; j < n_ctx; ++j) {
        scores[j] *= scale;
        max_score = std::max(max_score, scores[j]);
      }
      float sum = 0;
      for (int32_t j = 0; j < n_ctx; ++j) {
        scores[j] = std::exp(scores[j] - max_score);
        sum += scores[j];
      }
      const float inv = 1.0f / sum;
      for (int32_t j = 0; j < n_ctx; ++j) scores[j] *= inv;
      float* out = &attn_[t * e + static_cast<int64_t>(h) * hd];
      std::fill(out, out + hd, 0.0f);
      for (int32_t j0 = 0; j0 < n_ctx; j0 += bs) {
        const int32_t count = std::min(bs, n_ctx - j0);
        const float* v = kv_.v(layer, r.kv_blocks[j0 / bs], 0) + kv_head * hd;
        kernels::axpy_rows(&scores[j0], v, stride, count, hd, out);
      }
    }
  });
}

}  // namespace tandem
