// Attention over the paged KV cache, flash-style: each query walks its keys block by block
// of the cache with an online softmax (running max and sum, the accumulated values rescaled
// when the max grows), so no score row of the whole context is ever formed. A prefill row's
// consecutive tokens go in tiles of kQueryTile that walk the blocks together: each block's
// keys and values are read once from memory and then served from cache to the tile's other
// queries. Each query's arithmetic is its own and in the same order (its keys split at the
// same block boundaries, the same kernel calls) whatever tile, chunk or batch it is in, so
// a row's result does not depend on them (law 2), and decode is the tile of one.
#include <algorithm>
#include <atomic>
#include <cmath>

#include "runner/kernels/kernels.h"
#include "runner/model/forward.h"

namespace tandem {
namespace {

constexpr int32_t kQueryTile = 16;

// A task's running softmax states, one per (query, head): the largest score so far, the
// sum of e^(score - max), and (in the caller's scratch, hd floats each, side by side) the
// values weighted by e^(score - max).
struct SoftmaxStates {
  std::vector<float> max, sum;
  std::vector<float> old_max, block_sum;  // one query's heads, while a block is folded
  void reset(int32_t n_states, int32_t n_heads) {
    max.assign(n_states, -INFINITY);
    sum.assign(n_states, 0.0f);
    old_max.resize(n_heads);
    block_sum.resize(n_heads);
  }
};

// One block's n scores of a query's n_heads heads (bs apart) into their states (from
// `first`): scaled (and soft-capped), each head's sum and values rescaled where its max
// grows, the scores turned into their weights e^(s - max).
void fold_block(SoftmaxStates& st, int32_t first, float* scores, int32_t bs, int32_t n_heads,
                int32_t n, float* acc, const ModelConfig& cfg) {
  float scale = cfg.attn_scale;
  if (cfg.attn_softcap > 0) {
    for (int32_t h = 0; h < n_heads; ++h)
      for (float* x = scores + h * bs; x < scores + h * bs + n; ++x)
        *x = cfg.attn_softcap * std::tanh(*x * cfg.attn_scale / cfg.attn_softcap);
    scale = 1.0f;  // applied above
  }
  float* max = st.max.data() + first;
  std::copy(max, max + n_heads, st.old_max.begin());
  kernels::scaled_exp_sums(scores, bs, n_heads, n, scale, max, st.block_sum.data());
  for (int32_t h = 0; h < n_heads; ++h) {
    float& sum = st.sum[first + h];
    if (max[h] > st.old_max[h]) {  // rescale what was summed against the old max
      const float factor = std::exp(st.old_max[h] - max[h]);
      sum *= factor;
      float* a = acc + static_cast<int64_t>(h) * cfg.head_dim;
      for (int32_t d = 0; d < cfg.head_dim; ++d) a[d] *= factor;
    }
    sum += st.block_sum[h];
  }
}

}  // namespace

// Asks for a block's K and V of heads first_head .. + n_heads - 1 a block ahead of use: a
// row's blocks may lie anywhere in the pool, and a block's lines are read in head order, a
// few of each slot at a time, which the hardware prefetchers do not follow far enough
// (BM_DecodeAtContext1024 f16 KV, docs/performance.md). A transposed K block holds the
// heads' keys as one run of rows.
void ForwardPass::prefetch_block(int32_t layer, int32_t block, int32_t first_head,
                                 int32_t n_heads) const {
  // The heads' part of a stored vector: [begin, end) bytes.
  const size_t begin = kv_head_offset(first_head);
  const size_t end =
      kv_head_offset(first_head + n_heads - 1) + kv_element_offset(kv_.type(), cfg_.head_dim);
  auto lines = [](const uint8_t* p, size_t from, size_t to) {
    for (size_t b = from & ~size_t{63}; b < to; b += 64) __builtin_prefetch(p + b);
  };
  const bool transposed = kv_.k_transposed();
  const size_t bs = static_cast<size_t>(kv_.block_size());
  if (transposed) lines(kv_.k_block(layer, block), begin * bs, end * bs);
  for (int32_t slot = 0; slot < kv_.block_size(); ++slot) {
    if (!transposed) lines(kv_.k(layer, block, slot), begin, end);
    lines(kv_.v(layer, block, slot), begin, end);
  }
}

// Tiles: runs of up to kQueryTile consecutive tokens of one row, each tile's first token and
// then n_tokens. The same for every layer, so planned once per step.
void ForwardPass::plan_query_tiles() {
  const int64_t n_tokens = static_cast<int64_t>(token_row_.size());
  query_tiles_.clear();
  for (int64_t t = 0; t < n_tokens; ++t) {
    const bool same_row = t > 0 && token_row_[t] == token_row_[t - 1];
    if (!same_row || t - query_tiles_.back() == kQueryTile) query_tiles_.push_back(t);
  }
  query_tiles_.push_back(n_tokens);
}

// Heads per task: as many as leave enough tasks to spread over the threads. A task of
// several KV heads walks each cache block once for all of them (the block's K, then its V,
// read front to back, not a head's strided part of each slot); the query heads that share
// a KV head go together (each K and V vector is read and widened once for all of them),
// split further only where that would leave too few tasks (batch 1 with 3 KV heads on 2
// threads). The grouped kernels give each query the one-query results bit for bit, so
// the split never changes a result.
int32_t ForwardPass::heads_per_task(int64_t n_tiles) const {
  const int32_t group = cfg_.n_head / cfg_.n_head_kv;
  const int64_t wanted = 4 * static_cast<int64_t>(pool_.size());
  for (int32_t kv_heads = cfg_.n_head_kv; kv_heads > 1; --kv_heads)
    if (cfg_.n_head_kv % kv_heads == 0 && n_tiles * (cfg_.n_head_kv / kv_heads) >= wanted)
      return kv_heads * group;
  for (int32_t heads = group; heads > 1; --heads)
    if (group % heads == 0 && n_tiles * (cfg_.n_head / heads) >= wanted) return heads;
  return 1;
}

void ForwardPass::attention(int32_t layer, std::span<const ForwardRow> rows) {
  const int64_t n_tiles = static_cast<int64_t>(query_tiles_.size()) - 1;
  const int32_t heads = heads_per_task(n_tiles), per_tile = cfg_.n_head / heads;
  const int64_t n_tasks = n_tiles * per_tile;
  std::atomic<int64_t> next{0};
  pool_.run_on_all([&](int thread, int) {
    std::vector<float>& scratch = thread_scores_[thread];
    for (int64_t task = next.fetch_add(1); task < n_tasks; task = next.fetch_add(1)) {
      const int64_t tile = task / per_tile;
      const int64_t first = query_tiles_[tile];
      attend_tile(layer, rows, first, static_cast<int32_t>(query_tiles_[tile + 1] - first),
                  static_cast<int32_t>(task % per_tile) * heads, heads, scratch);
    }
  });
}

// One cache block as a tile's queries see it: query i takes keys [from[i], to[i]) of the
// context (none where from[i] >= to[i]), all within [start, end).
struct ForwardPass::TileBlock {
  int32_t layer, block, start, end;
  int64_t first_token;
  int32_t n_queries, first_head, n_heads;
  const int32_t* from;
  const int32_t* to;
};

// Each query's scores for the block, [query][head][slot] (bs slots a head), at the slots of
// its keys. Transposed keys: slots [0, end - start) for every query of the tile that has
// keys here, in one dot_keys call per KV head (the keys read and widened once for the
// tile's queries and the query heads sharing the KV head). Q8_0 keys: each query's own
// slots, by the grouped row kernel. Either way a query's scores are the same bits
// whichever queries share the call (kernels.h).
void ForwardPass::block_scores(const TileBlock& b, float* scores) const {
  const int32_t hd = cfg_.head_dim, group = cfg_.n_head / cfg_.n_head_kv, bs = kv_.block_size();
  const int32_t per_kv = std::min(b.n_heads, group);
  const int64_t qkv_width = cfg_.q_dim() + 2 * cfg_.kv_dim();
  const gguf::TensorType type = kv_tensor_type(kv_.type());
  auto query = [&](int32_t i, int32_t h) {
    return &qkv_[(b.first_token + i) * qkv_width + static_cast<int64_t>(b.first_head + h) * hd];
  };
  auto out = [&](int32_t i, int32_t h) {
    return scores + (static_cast<int64_t>(i) * b.n_heads + h) * bs;
  };
  if (!kv_.k_transposed()) {
    const int64_t stride = static_cast<int64_t>(kv_.slot_stride());
    for (int32_t i = 0; i < b.n_queries; ++i) {
      if (b.from[i] >= b.to[i]) continue;
      const int32_t slot = b.from[i] - b.start;
      for (int32_t h0 = 0; h0 < b.n_heads; h0 += per_kv) {
        kernels::dot_rows_multi(type, query(i, h0), hd, per_kv,
                                kv_.k(b.layer, b.block, slot) + kv_head_offset(b.first_head + h0),
                                stride, b.to[i] - b.from[i], hd, out(i, h0) + slot, bs);
      }
    }
    return;
  }
  thread_local std::vector<const float*> qs;
  thread_local std::vector<float*> outs;
  for (int32_t h0 = 0; h0 < b.n_heads; h0 += per_kv) {
    qs.clear();
    outs.clear();
    for (int32_t i = 0; i < b.n_queries; ++i) {
      if (b.from[i] >= b.to[i]) continue;
      for (int32_t h = h0; h < h0 + per_kv; ++h) {
        qs.push_back(query(i, h));
        outs.push_back(out(i, h));
      }
    }
    const uint8_t* kt = kv_.k_block(b.layer, b.block) + kv_head_offset(b.first_head + h0) * bs;
    kernels::dot_keys(type, qs.data(), static_cast<int>(qs.size()), kt, bs, b.end - b.start, hd,
                      outs.data());
  }
}

// Queries first_token .. + n_queries - 1 (one row's consecutive positions), heads
// first_head .. + n_heads - 1 (within one KV head, or whole KV heads).
void ForwardPass::attend_tile(int32_t layer, std::span<const ForwardRow> rows, int64_t first_token,
                              int32_t n_queries, int32_t first_head, int32_t n_heads,
                              std::vector<float>& scratch) {
  const int32_t hd = cfg_.head_dim, group = cfg_.n_head / cfg_.n_head_kv;
  const int64_t q_dim = cfg_.q_dim();
  const int64_t stride = static_cast<int64_t>(kv_.slot_stride());  // bytes between slots
  const gguf::TensorType type = kv_tensor_type(kv_.type());
  const int32_t bs = kv_.block_size();
  const int32_t window = cfg_.is_local_layer(layer) ? cfg_.sliding_window : 0;
  const int32_t per_kv = std::min(n_heads, group);  // query heads per KV head in the task
  const std::span<const int32_t> blocks = table(rows[token_row_[first_token]], layer);

  // Scratch: each (query, head)'s accumulated values (hd floats, the heads of a query side
  // by side), then each (query, head)'s scores for one block. The threads' scratch vectors
  // may sit next to each other on the heap: 16 floats (a cache line) past what is written
  // keep one thread's writes off the next one's lines.
  const int32_t n_states = n_queries * n_heads;
  const size_t needed = static_cast<size_t>(n_states) * (hd + bs) + 16;
  if (scratch.size() < needed) scratch.resize(needed);
  float* scores = scratch.data() + static_cast<size_t>(n_states) * hd;
  thread_local SoftmaxStates states;
  states.reset(n_states, n_heads);
  float* const acc = scratch.data();
  std::fill(acc, acc + static_cast<size_t>(n_states) * hd, 0.0f);
  // Query i sees keys [begin(i), end(i)): causal, and within the window on a local layer.
  auto end_of = [&](int32_t i) { return token_position_[first_token + i] + 1; };
  auto begin_of = [&](int32_t i) { return window > 0 ? std::max(0, end_of(i) - window) : 0; };
  thread_local std::vector<int32_t> from, to;
  from.resize(n_queries);
  to.resize(n_queries);

  // The tile's keys, a cache block at a time: every query's scores for the block, then
  // each query folds them and adds the block's values, for all its heads at once.
  const int32_t last_end = end_of(n_queries - 1);
  for (int32_t j = begin_of(0); j < last_end;) {
    const int32_t block_end = std::min((j / bs + 1) * bs, last_end);
    if (block_end < last_end) prefetch_block(layer, blocks[block_end / bs], first_head, n_heads);
    for (int32_t i = 0; i < n_queries; ++i) {
      from[i] = std::max(j, begin_of(i));
      to[i] = std::min(block_end, end_of(i));
    }
    const int32_t block = blocks[j / bs], start = j / bs * bs;
    block_scores({layer, block, start, block_end, first_token, n_queries, first_head, n_heads,
                  from.data(), to.data()},
                 scores);
    for (int32_t i = 0; i < n_queries; ++i) {
      if (from[i] >= to[i]) continue;
      const int32_t slot = from[i] - start, n = to[i] - from[i];
      float* s = scores + static_cast<int64_t>(i) * n_heads * bs + slot;
      float* a = acc + static_cast<int64_t>(i) * n_heads * hd;
      fold_block(states, i * n_heads, s, bs, n_heads, n, a, cfg_);
      // The task's KV heads in order, each with the query heads that share it.
      for (int32_t h0 = 0; h0 < n_heads; h0 += per_kv) {
        kernels::axpy_rows_multi(type, s + h0 * bs, bs, per_kv,
                                 kv_.v(layer, block, slot) + kv_head_offset(first_head + h0),
                                 stride, n, hd, a + static_cast<int64_t>(h0) * hd, hd);
      }
    }
    j = block_end;
  }
  for (int32_t i = 0; i < n_queries; ++i) {
    for (int32_t h = 0; h < n_heads; ++h) {
      const int64_t s = static_cast<int64_t>(i) * n_heads + h;
      float* out = &attn_[(first_token + i) * q_dim + static_cast<int64_t>(first_head + h) * hd];
      const float inv = 1.0f / states.sum[s];
      for (int32_t d = 0; d < hd; ++d) out[d] = acc[s * hd + d] * inv;
    }
  }
}

}  // namespace tandem
