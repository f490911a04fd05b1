// Attention over the paged KV cache, flash-style: each query walks its keys block by block
// of the cache with an online softmax (running max and sum, the accumulated values rescaled
// when the max grows), so no score row of the whole context is ever formed. A prefill row's
// consecutive tokens go in tiles of kQueryTile that walk the blocks together: each block's
// keys and values are read once from memory and then served from cache to the tile's other
// queries. Each query's arithmetic is its own and in the same order (its keys split at the
// same block boundaries, the same kernel calls) whatever tile, chunk or batch it is in, so
// a row's result does not depend on them (law 2), and decode is the tile of one.
//
// A query's keys are split at fixed positions, every kKeyChunk keys of its sequence: each
// chunk's keys fold into a state of their own, and the chunks' states merge in position
// order (merge_chunk). The split depends on key positions alone, so a query's arithmetic is
// the same whether one task walks all its chunks (prefill, and decode batches that give
// every thread tasks enough) or each chunk is a task of its own, its state left in
// chunk_states_ for the last of them to merge (a step whose tiles give the threads too few
// KV heads' walks: on the smollm2 shape with two threads, a batch of one or two rows, whose
// few long walks would otherwise leave a thread idle, and whose query heads would otherwise
// be split apart, reading each KV head once per query head).
#include <algorithm>
#include <atomic>
#include <cmath>

#include "runner/kernels/kernels.h"
#include "runner/model/forward.h"
#include "runner/model/soft_cap.h"

namespace tandem {
namespace {

constexpr int32_t kQueryTile = 16;

// One cache line into L2, as an asm statement the optimizer keeps (prefetch_head_run).
inline void prefetch_into_l2(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetcht1 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 0, 2);
#endif
}

// A task's softmax states, one per (query, head): the largest score so far, the sum of
// e^(score - max), and (in the caller's scratch, hd floats each, side by side) the values
// weighted by e^(score - max); for the chunk being walked, and merged over the chunks
// before it.
struct SoftmaxStates {
  std::vector<float> max, sum;
  std::vector<float> merged_max, merged_sum;
  void reset(int32_t n_states) {
    merged_max.assign(n_states, -INFINITY);
    merged_sum.assign(n_states, 0.0f);
  }
  void start_chunk(int32_t n_states) {
    max.assign(n_states, -INFINITY);
    sum.assign(n_states, 0.0f);
  }
};
// A thread's, shared by attend and merge_chunks (which runs once its task's attend is done).
thread_local SoftmaxStates tls_states;

// One block's n scores of a query's n_heads heads (bs apart) into their running states
// (max and sum, one per head): scaled (and soft-capped), each head's sum and values
// rescaled where its max grows, the scores turned into their weights e^(s - max).
// old_max and block_sum: n_heads floats of scratch each.
void fold_block(float* max, float* sum, float* scores, int32_t bs, int32_t n_heads, int32_t n,
                float* acc, float* old_max, float* block_sum, const ModelConfig& cfg) {
  float scale = cfg.attn_scale;
  if (cfg.attn_softcap > 0) {
    for (int32_t h = 0; h < n_heads; ++h)
      soft_cap(scores + h * bs, n, cfg.attn_softcap, cfg.attn_scale);
    scale = 1.0f;  // applied above
  }
  std::copy(max, max + n_heads, old_max);
  kernels::scaled_exp_sums(scores, bs, n_heads, n, scale, max, block_sum);
  for (int32_t h = 0; h < n_heads; ++h) {
    // Rescale what was summed against the old max. A state's first block (old max -inf,
    // at every key chunk's start) has summed nothing, and zeros times e^-inf are the zeros
    // already there, so it skips the std::exp and the pass over its values.
    if (max[h] > old_max[h] && old_max[h] != -INFINITY) {
      const float factor = std::exp(old_max[h] - max[h]);
      sum[h] *= factor;
      float* a = acc + static_cast<int64_t>(h) * cfg.head_dim;
      for (int32_t d = 0; d < cfg.head_dim; ++d) a[d] *= factor;
    }
    sum[h] += block_sum[h];
  }
}

// Merges a chunk's state (max m, sum s, values a) into the chunks' before it, which are
// empty (max -inf) before the first. A chunk without keys of this query (max -inf) changes
// nothing. One function for both paths (a task's own chunks, and the last chunk task
// merging the others' states), so they give the same bits.
[[gnu::noinline]] void merge_chunk(float& merged_max, float& merged_sum, float* merged, float m,
                                   float s, const float* a, int32_t hd) {
  if (m == -INFINITY) return;
  if (merged_max == -INFINITY) {
    merged_max = m;
    merged_sum = s;
    std::copy(a, a + hd, merged);
    return;
  }
  // Each side times e^(its max - the larger): the side with the larger max is times
  // e^0 = 1, which leaves it as it is, so only the other is scaled.
  if (m > merged_max) {
    const float f = std::exp(merged_max - m);
    merged_sum = merged_sum * f + s;
    for (int32_t d = 0; d < hd; ++d) merged[d] = merged[d] * f + a[d];
    merged_max = m;
  } else {
    const float f = std::exp(m - merged_max);
    merged_sum = merged_sum + s * f;
    for (int32_t d = 0; d < hd; ++d) merged[d] = merged[d] + a[d] * f;
  }
}

// Whether every query sees the same, non-empty range of the block.
bool same_keys(const int32_t* from, const int32_t* to, int32_t n_queries) {
  if (from[0] >= to[0]) return false;
  for (int32_t i = 1; i < n_queries; ++i)
    if (from[i] != from[0] || to[i] != to[0]) return false;
  return true;
}

// The lowest and highest key the block's queries see: [lo, hi), empty where lo >= hi.
std::pair<int32_t, int32_t> seen_keys(const int32_t* from, const int32_t* to, int32_t n_queries) {
  int32_t lo = INT32_MAX, hi = INT32_MIN;
  for (int32_t i = 0; i < n_queries; ++i) {
    if (from[i] >= to[i]) continue;
    lo = std::min(lo, from[i]);
    hi = std::max(hi, to[i]);
  }
  return {lo, hi};
}

}  // namespace

// Asks for one KV head's K (which 0) or V (1) of a block, the block the walk reads next
// (none where block < 0), just before the walk reads the same head's run of the block at
// hand: both K layouts keep a KV head's keys as one run of block_size() x head_bytes()
// bytes, the heads' runs in order (a transposed block's rows of the head's elements, or
// Q8_0's K held by heads), as V does (kv_cache.h, v_head). A row's blocks may lie anywhere
// in the pool, and one run's requests a head's pass apart keep the loads ahead of the
// arithmetic. The requests go into L2 (prefetcht1), not L1: a line asked for into L1
// holds one of L1's few miss buffers for its whole trip from memory (AMD's optimization
// guide; the quantized walks' prefetch_record), and a run's 32-64 lines at once filled
// them, so the kernel's own loads waited behind its prefetches. On a Zen 4, 16 rows at
// context 1024 (BM_DecodeAtContext1024, 3 alternating rounds of one binary with a switch):
// F16 KV no prefetch 30.2, 29.7, 32.5 ms, into L1 37.1, 37.2, 36.6, into L2 26.3, 25.3,
// 26.8; F32 KV 41.0, 40.2, 42.5 / 50.5, 48.7, 49.9 / 43.4, 38.8, 41.5.
//
// Each line is asked for by an asm statement, not __builtin_prefetch: GCC counts the
// builtin as free of side effects, so a function doing nothing else is "const" to its
// interprocedural analysis, and every call to it, whose result nobody uses, is deleted.
// That happened here: until 2026-12-04 the release builds never called this function (its
// out-of-line copy had no caller; docs/design.md "KV cache").
void ForwardPass::prefetch_head_run(int32_t layer, int32_t block, int32_t which,
                                    int32_t kv_head) const {
  if (block < 0) return;
  const size_t run = static_cast<size_t>(kv_.block_size()) * kv_.head_bytes();
  const uint8_t* p = which == 0 ? kv_.k_block(layer, block) + static_cast<size_t>(kv_head) * run
                                : kv_.v_head(layer, block, kv_head, 0);
  for (size_t b = 0; b < run; b += 64) prefetch_into_l2(p + b);
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

// The plan lists a prefill row's tiles in position order, each walking one more block than
// the one before, so the threads take the tasks from the back: the longest first, and the
// last taken is the shortest, which leaves the other thread the least to wait for (512-token
// BM_Prefill 147-155 -> 142-150 ms, 4 alternating rounds; docs/performance.md). Which thread
// walks a task changes no bit (attend, merge_chunks).
void ForwardPass::attention(int32_t layer, std::span<const ForwardRow> rows) {
  plan_attention(layer);
  const int64_t n_tasks = static_cast<int64_t>(attend_tasks_.size());
  std::atomic<int64_t> next{0};
  pool_.run_on_all([&](int thread, int) {
    std::vector<float>& scratch = thread_scores_[thread];
    for (int64_t n = next.fetch_add(1); n < n_tasks; n = next.fetch_add(1)) {
      const AttendTask& task = attend_tasks_[n_tasks - 1 - n];
      attend(layer, rows, task, scratch);
      if (task.group >= 0) finish_chunk(task, scratch);
    }
  });
}

// One cache block as a tile's queries see it: query i takes keys [from[i], to[i]) of the
// context (none where from[i] >= to[i]), all within [start, end).
struct ForwardPass::TileBlock {
  int32_t layer, block, next, start, end;  // next: the block the walk reads after, or -1
  int64_t first_token;
  int32_t n_queries, first_head, n_heads;
  const int32_t* from;
  const int32_t* to;
};

// block_scores for keys held by heads (Q8_0): per KV head, each query's slots by the
// grouped row kernel for the query heads sharing it. A tile of several queries first widens
// the KV head's keys it sees to F32 rows (widen_rows, exact), where each query would
// otherwise widen every key again (a 1900-token prefill took 1.35x F16's time); the row
// kernel gives F32 rows the bits it gives the stored keys (kernels.h), so a query's scores
// do not depend on its tile.
void ForwardPass::row_scores(const TileBlock& b, float* scores) const {
  const int32_t hd = cfg_.head_dim, group = cfg_.n_head / cfg_.n_head_kv, bs = kv_.block_size();
  const int32_t per_kv = std::min(b.n_heads, group);
  const int64_t qkv_width = cfg_.q_dim() + 2 * cfg_.kv_dim();
  const auto stride = static_cast<int64_t>(kv_.head_bytes());
  const gguf::TensorType type = kv_tensor_type(kv_.type());
  const auto [lo, hi] = seen_keys(b.from, b.to, b.n_queries);
  if (lo >= hi) return;
  const bool widen = b.n_queries > 1;
  thread_local std::vector<float> wide;
  if (widen && wide.size() < static_cast<size_t>(bs) * hd)
    wide.resize(static_cast<size_t>(bs) * hd);
  for (int32_t h0 = 0; h0 < b.n_heads; h0 += per_kv) {
    const int32_t kv_head = kv_head_of(b.first_head + h0);
    prefetch_head_run(b.layer, b.next, 0, kv_head);
    if (widen)
      kernels::widen_rows(type, kv_.k_head(b.layer, b.block, kv_head, lo - b.start), stride,
                          hi - lo, hd, wide.data(), hd);
    for (int32_t i = 0; i < b.n_queries; ++i) {
      if (b.from[i] >= b.to[i]) continue;
      const int32_t slot = b.from[i] - b.start;
      const float* q =
          &qkv_[(b.first_token + i) * qkv_width + static_cast<int64_t>(b.first_head + h0) * hd];
      float* out = scores + (static_cast<int64_t>(i) * b.n_heads + h0) * bs + slot;
      if (widen) {
        kernels::dot_rows_multi(gguf::TensorType::kF32, q, hd, per_kv,
                                wide.data() + static_cast<int64_t>(b.from[i] - lo) * hd,
                                static_cast<int64_t>(hd) * 4, b.to[i] - b.from[i], hd, out, bs);
      } else {
        kernels::dot_rows_multi(type, q, hd, per_kv, kv_.k_head(b.layer, b.block, kv_head, slot),
                                stride, b.to[i] - b.from[i], hd, out, bs);
      }
    }
  }
}

// Each query's scores for the block, [query][head][slot] (bs slots a head), at the slots of
// its keys. Transposed keys: slots [0, end - start) for every query of the tile that has
// keys here, in one dot_keys call per KV head (the keys read and widened once for the
// tile's queries and the query heads sharing the KV head). Q8_0 keys: each query's own
// slots, by the grouped row kernel (row_scores). Either way a query's scores are the same
// bits whichever queries share the call (kernels.h).
void ForwardPass::block_scores(const TileBlock& b, float* scores) const {
  if (!kv_.k_transposed()) return row_scores(b, scores);
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
    prefetch_head_run(b.layer, b.next, 0, kv_head_of(b.first_head + h0));
    kernels::dot_keys(type, qs.data(), static_cast<int>(qs.size()), kt, bs, b.end - b.start, hd,
                      outs.data());
  }
}

// The task's queries (one row's consecutive positions, a tile) and heads (within one KV
// head, or whole KV heads), over its key chunks. A chunk task leaves its state in
// chunk_states_; any other task merges its chunks (the first one is the merged state as it
// is: merged into nothing it would be copied) and writes the queries' outputs.
void ForwardPass::attend(int32_t layer, std::span<const ForwardRow> rows, const AttendTask& task,
                         std::vector<float>& scratch) {
  const int64_t first_token = query_tiles_[task.tile];
  const auto n_queries = static_cast<int32_t>(query_tiles_[task.tile + task.n_tiles] - first_token);
  const int32_t hd = cfg_.head_dim;
  // Scratch: each (query, head)'s accumulated values for the chunk (hd floats, the heads of
  // a query side by side), the same merged over the chunks before, then each (query,
  // head)'s scores for one block (two: walk_pair). The threads' scratch
  // vectors may sit next to each other on the heap: 16 floats (a cache line) past what is
  // written keep one thread's writes off the next one's lines.
  const int32_t n_states = n_queries * task.n_heads;
  const size_t state_floats = static_cast<size_t>(n_states) * hd;
  const size_t needed =
      2 * state_floats + 2 * static_cast<size_t>(n_states) * kv_.block_size() + 16;
  if (scratch.size() < needed) scratch.resize(needed);
  float* acc = scratch.data();
  float* merged = acc + state_floats;
  const TileWalk walk{layer,
                      table(rows[token_row_[first_token]], layer),
                      first_token,
                      n_queries,
                      task.first_head,
                      task.n_heads,
                      cfg_.is_local_layer(layer) ? cfg_.sliding_window : 0,
                      merged + state_floats};
  SoftmaxStates& states = tls_states;
  states.reset(n_states);
  for (int32_t c = task.first_chunk; c < task.end_chunk; ++c) {
    states.start_chunk(n_states);
    std::fill(acc, acc + state_floats, 0.0f);
    walk_chunk(walk, c, states.max.data(), states.sum.data(), acc);
    if (task.group >= 0) return store_chunk(task, states.max.data(), states.sum.data(), acc);
    if (c == task.first_chunk) {
      std::swap(states.max, states.merged_max);
      std::swap(states.sum, states.merged_sum);
      std::swap(acc, merged);
      continue;
    }
    for (int32_t s = 0; s < n_states; ++s)
      merge_chunk(states.merged_max[s], states.merged_sum[s], merged + s * hd, states.max[s],
                  states.sum[s], acc + s * hd, hd);
  }
  write_attention(task, states.merged_sum.data(), merged);
}

// A block's values for a tile of several queries over F16, BF16 or Q8_0 values: the slots
// its queries use, of the task's KV heads, widened once to F32 rows (kernels::widen_rows,
// exact) in the thread's scratch, where each query would otherwise widen every value again.
// Null rows for a decode row (one query) and F32 values: they read the cache as stored.
// axpy_rows_multi gives F32 rows the bits it gives their stored type, so a query's result
// does not depend on its tile.
ForwardPass::WidenedValues ForwardPass::widened_values(const TileWalk& w, int32_t block,
                                                       int32_t next, int32_t start,
                                                       const int32_t* from,
                                                       const int32_t* to) const {
  const gguf::TensorType type = kv_tensor_type(kv_.type());
  if (w.n_queries == 1 || type == gguf::TensorType::kF32) return {nullptr, 0};
  const auto [lo, hi] = seen_keys(from, to, w.n_queries);
  if (lo >= hi) return {nullptr, 0};
  const int32_t first_kv = kv_head_of(w.first_head);
  const int32_t n_kv = kv_head_of(w.first_head + w.n_heads - 1) - first_kv + 1;
  const int64_t width = static_cast<int64_t>(n_kv) * cfg_.head_dim;
  thread_local std::vector<float> rows;
  const auto needed = static_cast<size_t>(kv_.block_size() * width);
  if (rows.size() < needed) rows.resize(needed);
  for (int32_t k = 0; k < n_kv; ++k) {
    prefetch_head_run(w.layer, next, 1, first_kv + k);
    kernels::widen_rows(
        type, kv_.v_head(w.layer, block, first_kv + k, lo - start),
        static_cast<int64_t>(kv_.head_bytes()), hi - lo, cfg_.head_dim,
        rows.data() + (lo - start) * width + static_cast<int64_t>(k) * cfg_.head_dim, width);
  }
  return {rows.data(), width};
}

// The tile's keys in chunk c, a cache block at a time: every query's scores for the block,
// then each query folds them into its states (max, sum, acc: the chunk's) and adds the
// block's values, for all its heads at once.
void ForwardPass::walk_chunk(const TileWalk& w, int32_t c, float* max, float* sum, float* acc) {
  const int32_t bs = kv_.block_size();
  // Query i sees keys [begin(i), end(i)): causal, and within the window on a local layer.
  auto end_of = [&](int32_t i) { return token_position_[w.first_token + i] + 1; };
  auto begin_of = [&](int32_t i) { return w.window > 0 ? std::max(0, end_of(i) - w.window) : 0; };
  thread_local std::vector<int32_t> from, to;
  from.resize(w.n_queries);
  to.resize(w.n_queries);
  thread_local std::vector<float> fold_scratch;  // fold_block's
  const int32_t n_states = w.n_queries * w.n_heads;
  fold_scratch.resize(2 * static_cast<size_t>(n_states));
  const int32_t last_end = end_of(w.n_queries - 1);
  const int32_t chunk_end = std::min((c + 1) * kKeyChunk, last_end);
  for (int32_t j = std::max(c * kKeyChunk, begin_of(0)); j < chunk_end;) {
    const int32_t block_end = std::min((j / bs + 1) * bs, chunk_end);
    if (kv_.k_transposed() && block_end < chunk_end &&
        sees_pair(w, j, std::min(block_end + bs, chunk_end))) {
      j = walk_pair(w, j, chunk_end, max, sum, acc, fold_scratch.data());
      continue;
    }
    const int32_t block = w.blocks[j / bs], start = j / bs * bs;
    const int32_t next = next_block(w, block_end, last_end);
    for (int32_t i = 0; i < w.n_queries; ++i) {
      from[i] = std::max(j, begin_of(i));
      to[i] = std::min(block_end, end_of(i));
    }
    const TileBlock b{w.layer,     block,        next,      start,       block_end, w.first_token,
                      w.n_queries, w.first_head, w.n_heads, from.data(), to.data()};
    block_scores(b, w.scores);
    add_block(w, b, w.scores, max, sum, acc, fold_scratch.data());
    j = block_end;
  }
}

// One block's step of a tile's walk, its scores in hand (scores: the tile's, [query][head]
// [slot]): each query folds them into its states (max, sum, acc) and adds the block's
// values (read as stored, or widened once for the tile), for all its heads at once.
// scratch: fold_block's, 2 * n_queries * n_heads floats.
void ForwardPass::add_block(const TileWalk& w, const TileBlock& b, float* scores, float* max,
                            float* sum, float* acc, float* scratch) {
  const int32_t hd = cfg_.head_dim, group = cfg_.n_head / cfg_.n_head_kv, bs = kv_.block_size();
  const auto v_stride = static_cast<int64_t>(kv_.head_bytes());  // bytes between slots
  const gguf::TensorType type = kv_tensor_type(kv_.type());
  const int32_t per_kv = std::min(w.n_heads, group);  // query heads per KV head in the task
  const int32_t n_states = w.n_queries * w.n_heads;
  const WidenedValues wide = widened_values(w, b.block, b.next, b.start, b.from, b.to);
  // Where every query of the tile sees the same keys (a block before the tile's own), one
  // fold takes all their heads' rows, which lie side by side: each row's softmax step is
  // its own (elementwise, its sum in its own order), so the bits are the per-query folds'.
  const bool one_fold = w.n_queries > 1 && same_keys(b.from, b.to, w.n_queries);
  if (one_fold) {
    fold_block(max, sum, scores + (b.from[0] - b.start), bs, n_states, b.to[0] - b.from[0], acc,
               scratch, scratch + n_states, cfg_);
    if (wide.rows != nullptr)
      return gathered_values(w, wide, scores, b.from[0] - b.start, b.to[0] - b.from[0], acc);
  }
  bool asked = false;  // for the next block's values, once (below)
  for (int32_t i = 0; i < w.n_queries; ++i) {
    if (b.from[i] >= b.to[i]) continue;
    const int32_t slot = b.from[i] - b.start, n = b.to[i] - b.from[i];
    const int32_t first = i * w.n_heads;
    float* s = scores + static_cast<int64_t>(first) * bs + slot;
    float* a = acc + static_cast<int64_t>(first) * hd;
    if (!one_fold)
      fold_block(max + first, sum + first, s, bs, w.n_heads, n, a, scratch, scratch + w.n_heads,
                 cfg_);
    // The task's KV heads in order, each with the query heads that share it.
    for (int32_t h0 = 0; h0 < w.n_heads; h0 += per_kv) {
      float* y = a + static_cast<int64_t>(h0) * hd;
      if (wide.rows != nullptr) {
        const int64_t kv = kv_head_of(w.first_head + h0) - kv_head_of(w.first_head);
        kernels::axpy_rows_multi(gguf::TensorType::kF32, s + h0 * bs, bs, per_kv,
                                 wide.rows + slot * wide.width + kv * hd,
                                 wide.width * static_cast<int64_t>(sizeof(float)), n, hd, y, hd);
      } else {
        if (!asked) prefetch_head_run(w.layer, b.next, 1, kv_head_of(w.first_head + h0));
        kernels::axpy_rows_multi(type, s + h0 * bs, bs, per_kv,
                                 kv_.v_head(w.layer, b.block, kv_head_of(w.first_head + h0), slot),
                                 v_stride, n, hd, y, hd);
      }
    }
    asked = true;
  }
}

// The value sums of a block every query of the tile sees whole (n keys from slot on), its
// values widened: per KV head, one axpy_rows_gathered call over all the queries' heads
// that share it, so each widened value row is loaded once per group of rows the registers
// hold, not once per query. Each row's sums are the per-query calls' bits (kernels.h).
void ForwardPass::gathered_values(const TileWalk& w, const WidenedValues& wide, const float* scores,
                                  int32_t slot, int32_t n, float* acc) const {
  const int32_t hd = cfg_.head_dim, group = cfg_.n_head / cfg_.n_head_kv, bs = kv_.block_size();
  const int32_t per_kv = std::min(w.n_heads, group);
  thread_local std::vector<const float*> ws;
  thread_local std::vector<float*> ys;
  for (int32_t h0 = 0; h0 < w.n_heads; h0 += per_kv) {
    ws.clear();
    ys.clear();
    for (int32_t i = 0; i < w.n_queries; ++i) {
      for (int32_t h = h0; h < h0 + per_kv; ++h) {
        const int64_t row = static_cast<int64_t>(i) * w.n_heads + h;
        ws.push_back(scores + row * bs + slot);
        ys.push_back(acc + row * hd);
      }
    }
    const int64_t kv = kv_head_of(w.first_head + h0) - kv_head_of(w.first_head);
    kernels::axpy_rows_gathered(ws.data(), ys.data(), static_cast<int>(ws.size()),
                                wide.rows + slot * wide.width + kv * hd, wide.width, n, hd);
  }
}

// The last chunk task of a group: every chunk's states merged in position order, as one
// task walking them all would, and the outputs written.
void ForwardPass::merge_chunks(const AttendTask& task, std::vector<float>& scratch) {
  const ChunkGroup& g = chunk_groups_[task.group];
  const int32_t hd = cfg_.head_dim;
  const int64_t n_states = (query_tiles_[task.tile + 1] - query_tiles_[task.tile]) * task.n_heads;
  SoftmaxStates& states = tls_states;
  states.reset(static_cast<int32_t>(n_states));
  float* merged = scratch.data();  // attend's needs are larger
  for (int32_t c = 0; c < g.n_chunks; ++c) {
    const float* state = &chunk_states_[g.offset + c * n_states * (hd + 2)];
    for (int64_t s = 0; s < n_states; ++s, state += hd + 2)
      merge_chunk(states.merged_max[s], states.merged_sum[s], merged + s * hd, state[0], state[1],
                  state + 2, hd);
  }
  write_attention(task, states.merged_sum.data(), merged);
}

// The task's outputs: each (query, head)'s merged values over its sum.
void ForwardPass::write_attention(const AttendTask& task, const float* sum, const float* merged) {
  const int32_t hd = cfg_.head_dim;
  const int64_t q_dim = cfg_.q_dim(), first_token = query_tiles_[task.tile];
  const int64_t n_queries = query_tiles_[task.tile + 1] - first_token;
  for (int64_t i = 0; i < n_queries; ++i) {
    for (int32_t h = 0; h < task.n_heads; ++h) {
      const int64_t s = i * task.n_heads + h;
      float* out =
          &attn_[(first_token + i) * q_dim + static_cast<int64_t>(task.first_head + h) * hd];
      const float inv = 1.0f / sum[s];
      for (int32_t d = 0; d < hd; ++d) out[d] = merged[s * hd + d] * inv;
    }
  }
}

// Whether every query of the tile sees keys [j, end) whole.
bool ForwardPass::sees_pair(const TileWalk& w, int32_t j, int32_t end) const {
  for (int32_t i = 0; i < w.n_queries; ++i) {
    const int32_t seen = token_position_[w.first_token + i] + 1;  // keys up to its own
    if (seen < end || (w.window > 0 && seen - w.window > j)) return false;
  }
  return true;
}

// The block holding `key`, for the walk to ask for ahead: none past the tile's keys (last_end)
// or past the walk's table (a shared span walks its first row's, which may end before another
// row's keys do).
int32_t ForwardPass::next_block(const TileWalk& w, int32_t key, int32_t last_end) const {
  const int32_t index = key / kv_.block_size();
  return key < last_end && index < static_cast<int32_t>(w.blocks.size()) ? w.blocks[index] : -1;
}

// A tile's walk two blocks at a time (keys transposed) where the chunk holds both (the
// first from key j, the second whole or cut by the chunk's end) and every query of the tile
// sees all their keys: a decode row always, a prefill tile's blocks before its own
// positions, a shared span's chunk. Both blocks' scores in one dot_keys_pair call per KV head,
// each query element broadcast once for both blocks' keys, then each block's softmax step
// and value sums in order by add_block, as walk_chunk goes a block at a time: the same
// operations on the same numbers, so the same bits (kernels.h). Each KV head asks for its
// keys' runs of the two blocks after these, and each block's value sums for the next
// block's values. Returns the key after the pair. scratch: fold_block's, 2 * n_states floats.
int32_t ForwardPass::walk_pair(const TileWalk& w, int32_t j, int32_t chunk_end, float* max,
                               float* sum, float* acc, float* scratch) {
  const int32_t hd = cfg_.head_dim, bs = kv_.block_size();
  const int32_t per_kv = std::min(w.n_heads, cfg_.n_head / cfg_.n_head_kv);
  const gguf::TensorType type = kv_tensor_type(kv_.type());
  const int32_t last_end = token_position_[w.first_token + w.n_queries - 1] + 1;
  const int32_t start = j / bs * bs, mid = start + bs, end = std::min(mid + bs, chunk_end);
  const int32_t first = w.blocks[j / bs], second = w.blocks[j / bs + 1];
  const int32_t next = next_block(w, end, last_end), after = next_block(w, end + bs, last_end);
  const int64_t n_states = static_cast<int64_t>(w.n_queries) * w.n_heads;
  float* scores[2] = {w.scores, w.scores + n_states * bs};
  const int64_t qkv_width = cfg_.q_dim() + 2 * cfg_.kv_dim();
  thread_local std::vector<const float*> qs;
  thread_local std::vector<float*> outs[2];
  for (int32_t h0 = 0; h0 < w.n_heads; h0 += per_kv) {
    const int32_t kv_head = kv_head_of(w.first_head + h0);
    prefetch_head_run(w.layer, next, 0, kv_head);
    prefetch_head_run(w.layer, after, 0, kv_head);
    qs.clear();
    for (auto& o : outs) o.clear();
    for (int32_t i = 0; i < w.n_queries; ++i) {
      const float* query = &qkv_[(w.first_token + i) * qkv_width];
      for (int32_t h = h0; h < h0 + per_kv; ++h) {
        qs.push_back(query + static_cast<int64_t>(w.first_head + h) * hd);
        for (int b = 0; b < 2; ++b)
          outs[b].push_back(scores[b] + (static_cast<int64_t>(i) * w.n_heads + h) * bs);
      }
    }
    const int64_t offset = kv_head_offset(w.first_head + h0) * bs;
    kernels::dot_keys_pair(type, qs.data(), static_cast<int>(qs.size()),
                           kv_.k_block(w.layer, first) + offset,
                           kv_.k_block(w.layer, second) + offset, bs, mid - start, end - mid, hd,
                           outs[0].data(), outs[1].data());
  }
  // Each block's from and to, per query: on the stack for a decode row or a prefill tile.
  thread_local std::vector<int32_t> many;
  int32_t few[4 * kQueryTile];
  int32_t* bounds = few;
  if (w.n_queries > kQueryTile) {
    many.resize(4 * static_cast<size_t>(w.n_queries));
    bounds = many.data();
  }
  int32_t* from[2] = {bounds, bounds + w.n_queries};
  int32_t* to[2] = {bounds + 2 * w.n_queries, bounds + 3 * w.n_queries};
  std::fill_n(from[0], w.n_queries, j);
  std::fill_n(to[0], w.n_queries, mid);
  std::fill_n(from[1], w.n_queries, mid);
  std::fill_n(to[1], w.n_queries, end);
  const TileBlock blocks[2] = {{w.layer, first, second, start, mid, w.first_token, w.n_queries,
                                w.first_head, w.n_heads, from[0], to[0]},
                               {w.layer, second, next, mid, end, w.first_token, w.n_queries,
                                w.first_head, w.n_heads, from[1], to[1]}};
  for (int b = 0; b < 2; ++b) add_block(w, blocks[b], scores[b], max, sum, acc, scratch);
  return end;
}

}  // namespace tandem
