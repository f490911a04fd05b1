// The attention's plan for a layer (attention.cpp walks the cache; this file decides
// which task walks which queries, heads and key chunks, and where chunk tasks' states go).
//
// Shared prefixes. Rows whose block tables hold the same blocks for a whole key chunk read
// the same keys and values there: a prefix-cache hit's cached blocks (every request with
// the same system prompt), or n choices of one prompt. Walked row by row, each row reads
// that chunk again; walked as one tile of those rows' queries (one query each), each
// block's keys and values are read and widened once and used for every row's queries, as a
// prefill tile uses them for its tokens (the shared-prefix, or "cascade", attention of
// FlashInfer and vLLM).
//
// Law 2 holds because a query's arithmetic in a tile is its arithmetic alone (attention.cpp:
// the same blocks, the same kernel calls, which give each query the one-query bits), and a
// chunk's state is merged in position order whoever computed it: every row in a shared span
// has its chunks as tasks of their own (chunk groups), the spans' chunks computed by the
// spans' tasks, its others (past the shared prefix, shared with no neighbour, the one
// holding its own position) by its own tasks, and the last task to finish one of its
// chunks merges them. A chunk is shared only whole, and only where every key in it lies at
// or before every row's position, so the rows see the same keys in it and their one-query
// walks would have read the same blocks. forward.cpp's order_rows puts rows on the same
// blocks side by side.
#include <algorithm>
#include <atomic>

#include "runner/model/forward.h"

namespace tandem {

// Heads per task: as many as leave enough tasks to spread over the threads, but never
// fewer than the query heads that share a KV head. A task of several KV heads walks each
// cache block once for all of them (the block's K, then its V, read front to back, not a
// head's strided part of each slot); the query heads that share a KV head always go
// together, so each K and V vector is read from memory and widened once for all of them.
// Splitting them where tasks were few (one row up to context 256) read every KV head once
// per query head from memory, which cost more than the thread it kept busy: a Q4_K_M file
// of the smollm2 shape, F16 KV, one row at context 256, 2.37 -> 2.11 ms a step (medians
// of 6 alternating rounds of bench_forward's DecodeAtContext256; docs/performance.md).
// The grouped kernels give each query the one-query results bit for bit, so the split
// never changes a result. n_walks: the tiles, or the tiles' chunks where chunks are tasks;
// wanted: the tasks to aim for.
int32_t ForwardPass::heads_per_task(int64_t n_walks, int64_t wanted) const {
  const int32_t group = cfg_.n_head / cfg_.n_head_kv;
  for (int32_t kv_heads = cfg_.n_head_kv; kv_heads > 1; --kv_heads)
    if (cfg_.n_head_kv % kv_heads == 0 && n_walks * (cfg_.n_head_kv / kv_heads) >= wanted)
      return kv_heads * group;
  return group;
}

// The layer's tasks: each tile's key chunks (from its first query's first key to its last
// query's own), its query heads split by heads_per_task; each chunk a task of its own where
// the tiles are too few to give every thread whole KV heads' walks (and the pool has
// threads to share them), unless the tile's keys lie in one chunk. The rows of shared spans
// (below) walk their shared chunks together and their own apart.
void ForwardPass::plan_attention(int32_t layer) {
  const int64_t n_tiles = static_cast<int64_t>(query_tiles_.size()) - 1;
  const int32_t window = cfg_.is_local_layer(layer) ? cfg_.sliding_window : 0;
  const int64_t wanted = kTasksPerThread * static_cast<int64_t>(pool_.size());
  const bool split = pool_.size() > 1 && n_tiles * cfg_.n_head_kv < wanted;
  auto chunks = [&](int64_t tile) {
    const int32_t last = token_position_[query_tiles_[tile + 1] - 1] + 1;
    const int32_t first =
        window > 0 ? std::max(0, token_position_[query_tiles_[tile]] + 1 - window) : 0;
    return std::pair{first / kKeyChunk, (last - 1) / kKeyChunk + 1};
  };
  const bool spans = window == 0 && !shared_spans_.empty();
  int64_t n_walks = 0;
  for (int64_t tile = 0; tile < n_tiles; ++tile) {
    const auto [begin, end] = chunks(tile);
    n_walks += split ? end - begin : 1;
  }
  const int32_t heads = heads_per_task(n_walks, wanted);
  attend_tasks_.clear();
  chunk_groups_.clear();
  tile_groups_.assign(static_cast<size_t>(n_tiles) * (cfg_.n_head / heads), -1);
  int64_t floats = 0;
  if (spans) plan_shared_tasks(heads, floats);
  for (int64_t tile = 0; tile < n_tiles; ++tile) {
    if (spans && tile_marks_[tile] >= 0) continue;  // planned with the spans
    const auto [begin, end] = chunks(tile);
    for (int32_t head = 0; head < cfg_.n_head; head += heads) {
      if (!split || end - begin == 1) {
        attend_tasks_.push_back({tile, head, heads, begin, end, -1});
        continue;
      }
      const int32_t group = add_chunk_group(tile, begin, end, heads, floats);
      for (int32_t c = begin; c < end; ++c)
        attend_tasks_.push_back({tile, head, heads, c, c + 1, group});
    }
  }
  if (chunk_states_.size() < static_cast<size_t>(floats)) chunk_states_.resize(floats);
}

// The step's shared spans: in each stretch of consecutive one-token tiles (decode rows),
// for each key chunk, the runs of two or more tiles that see the chunk whole and hold it in
// the same blocks. order_rows puts rows with the same blocks side by side. Only the
// layers without a sliding window use them (a window makes rows see different keys), and
// those read every row's global table.
void ForwardPass::plan_shared_spans(std::span<const ForwardRow> rows) {
  const int64_t n_tiles = static_cast<int64_t>(query_tiles_.size()) - 1;
  shared_spans_.clear();
  chunk_shared_.clear();
  tile_marks_.assign(n_tiles, -1);
  auto single = [&](int64_t t) { return query_tiles_[t + 1] - query_tiles_[t] == 1; };
  for (int64_t t = 0; t < n_tiles;) {
    int64_t end = t;
    while (end < n_tiles && single(end)) ++end;
    if (end - t >= 2) shared_spans_of_stretch(rows, t, end);
    t = std::max(end, t + 1);
  }
}

// One stretch's spans, chunk by chunk, each span's tiles given their marks.
void ForwardPass::shared_spans_of_stretch(std::span<const ForwardRow> rows, int64_t first,
                                          int64_t end) {
  const int32_t per_chunk = kKeyChunk / kv_.block_size();
  auto blocks = [&](int64_t t, int32_t c) {
    return rows[token_row_[query_tiles_[t]]].kv_blocks.begin() +
           static_cast<int64_t>(c) * per_chunk;
  };
  // Chunk c is whole for tile t when its last key is t's position or before it.
  auto whole = [&](int64_t t, int32_t c) {
    return (c + 1) * kKeyChunk <= token_position_[query_tiles_[t]] + 1;
  };
  int32_t chunks = 0;
  for (int64_t t = first; t < end; ++t) chunks = std::max(chunks, tile_chunks(t));
  for (int32_t c = 0; c < chunks; ++c) {
    for (int64_t s = first; s < end;) {
      int64_t e = s + 1;
      if (whole(s, c))
        while (e < end && whole(e, c) &&
               std::equal(blocks(s, c), blocks(s, c) + per_chunk, blocks(e, c)))
          ++e;
      if (e - s >= 2) {
        shared_spans_.push_back({s, e, c});
        for (int64_t t = s; t < e; ++t) {
          if (tile_marks_[t] < 0) {
            tile_marks_[t] = static_cast<int64_t>(chunk_shared_.size());
            chunk_shared_.resize(chunk_shared_.size() + tile_chunks(t), 0);
          }
          chunk_shared_[tile_marks_[t] + c] = 1;
        }
      }
      s = e;
    }
  }
}

// A chunk group for a tile's heads (chunks [first_chunk, end_chunk)), its states' floats
// counted into `floats`; returns its index.
int32_t ForwardPass::add_chunk_group(int64_t tile, int32_t first_chunk, int32_t end_chunk,
                                     int32_t heads, int64_t& floats) {
  const int64_t n_queries = query_tiles_[tile + 1] - query_tiles_[tile];
  chunk_groups_.push_back({floats, first_chunk, end_chunk - first_chunk, 0});
  floats += (end_chunk - first_chunk) * n_queries * heads * (cfg_.head_dim + 2);
  return static_cast<int32_t>(chunk_groups_.size() - 1);
}

// The spans' tasks: per query-head group, each spanned tile's chunk group (all its
// chunks), one task per span for its tiles' queries (first, as the longest), then each
// spanned tile's chunks that no span walks, a task each.
void ForwardPass::plan_shared_tasks(int32_t heads, int64_t& floats) {
  const int32_t n_groups = cfg_.n_head / heads;
  const int64_t n_tiles = static_cast<int64_t>(query_tiles_.size()) - 1;
  for (int32_t head = 0; head < cfg_.n_head; head += heads)
    for (int64_t t = 0; t < n_tiles; ++t)
      if (tile_marks_[t] >= 0)
        tile_groups_[t * n_groups + head / heads] =
            add_chunk_group(t, 0, tile_chunks(t), heads, floats);
  for (int32_t head = 0; head < cfg_.n_head; head += heads)
    for (const SharedSpan& span : shared_spans_) {
      const int32_t group = tile_groups_[span.first_tile * n_groups + head / heads];
      attend_tasks_.push_back({span.first_tile, head, heads, span.chunk, span.chunk + 1, group,
                               static_cast<int32_t>(span.end_tile - span.first_tile)});
      ++shared_chunk_walks_;
    }
  for (int32_t head = 0; head < cfg_.n_head; head += heads)
    for (int64_t t = 0; t < n_tiles; ++t) {
      if (tile_marks_[t] < 0) continue;
      const int32_t group = tile_groups_[t * n_groups + head / heads];
      for (int32_t c = 0; c < tile_chunks(t); ++c)
        if (chunk_shared_[tile_marks_[t] + c] == 0)
          attend_tasks_.push_back({t, head, heads, c, c + 1, group});
    }
}

// The chunk group of a task's k-th tile: the task's own, or for a span's task, that
// row's (tile_groups_).
int32_t ForwardPass::group_of(const AttendTask& task, int32_t k) const {
  if (task.n_tiles == 1) return task.group;
  const int32_t n_groups = cfg_.n_head / task.n_heads;
  return tile_groups_[(task.tile + k) * n_groups + task.first_head / task.n_heads];
}

// A chunk task's states in their slots of chunk_states_: per (query, head), max, sum,
// values; a span's task puts each row's in that row's group.
void ForwardPass::store_chunk(const AttendTask& task, const float* max, const float* sum,
                              const float* acc) {
  const int32_t hd = cfg_.head_dim;
  const int64_t first_token = query_tiles_[task.tile];
  for (int32_t k = 0; k < task.n_tiles; ++k) {
    const int64_t tile = task.tile + k;
    const ChunkGroup& g = chunk_groups_[group_of(task, k)];
    const int64_t n_states = (query_tiles_[tile + 1] - query_tiles_[tile]) * task.n_heads;
    const int64_t first = (query_tiles_[tile] - first_token) * task.n_heads;
    float* out =
        &chunk_states_[g.offset + (task.first_chunk - g.first_chunk) * n_states * (hd + 2)];
    for (int64_t s = first; s < first + n_states; ++s, out += hd + 2) {
      out[0] = max[s];
      out[1] = sum[s];
      std::copy(acc + s * hd, acc + (s + 1) * hd, out + 2);
    }
  }
}

// After a chunk task: each of its groups counts the chunk done, and the task that completes
// a group merges it (acquiring the other tasks' states; each releases its own).
void ForwardPass::finish_chunk(const AttendTask& task, std::vector<float>& scratch) {
  for (int32_t k = 0; k < task.n_tiles; ++k) {
    const int64_t tile = task.tile + k;
    const int32_t index = group_of(task, k);
    ChunkGroup& g = chunk_groups_[index];
    if (std::atomic_ref(g.done).fetch_add(1, std::memory_order_acq_rel) + 1 != g.n_chunks) continue;
    const AttendTask row{
        tile, task.first_head, task.n_heads, g.first_chunk, g.first_chunk + g.n_chunks, index};
    merge_chunks(row, scratch);
  }
}

}  // namespace tandem
