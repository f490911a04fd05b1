// The forward pass of a decoder-only transformer (config.h) over one mixed batch: rows that prefill
// a chunk of prompt and rows that decode one token, each at its own position, reading and writing
// the paged KV cache through the row's block table. Every row's result is independent of the other
// rows and of the thread count (the kernels promise it; the norms, RoPE and attention here work row
// by row in a fixed order). Scratch is allocated once and grown only when a larger batch arrives.
// Not thread-safe: one ForwardPass per device worker.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runner/device/kv_cache.h"
#include "runner/model/forward_profile.h"
#include "runner/model/model.h"
#include "runner/util/thread_pool.h"

namespace tandem {

struct ForwardRow {
  std::span<const int32_t> tokens;     // at least one
  int32_t position = 0;                // position of tokens[0]
  std::span<const int32_t> kv_blocks;  // covers positions [0, position + tokens.size())
  bool want_logits = true;             // logits of the row's last token
  bool all_logits = false;             // logits of every token of the row, in order (echo)
  // The local layers' table when the cache has a local group (kv_cache.h), as long; its
  // entries may be kNoBlock (< 0) only for blocks wholly before every query's window.
  std::span<const int32_t> kv_local_blocks = {};
  // Embeddings: the output-normed hidden states the pooling reads from this chunk (every
  // token for mean, the first for cls, the last for last), apart from the logits.
  Pooling pooling = Pooling::kNone;
  // The softmax partials of this row's logits (the log-probabilities' Z and top k, sampler.h,
  // LogitPartials), computed where the output matmul writes them: partials().
  bool logit_partials = false;
  // With logit_partials: a copy of the row's logits kept apart, for a sampler that changes
  // the logits in place (sampler.h, RowHistory::raw): raw_logits().
  bool raw_logits = false;
};

class ForwardPass {
 public:
  // served_context: the longest sequence served (--ctx-size; 0: the model's context). It
  // picks phi3's LongRoPE factors, once, as llama.cpp does, so that a row's result never
  // depends on its own length or its batch.
  ForwardPass(const Model& model, KvCache& kv, ThreadPool& pool, int32_t served_context = 0);

  // Runs the batch and returns the logits of the rows that want them, in row order,
  // n_vocab floats each (all_logits rows: one per token); valid until the next run. Throws
  // std::invalid_argument for a token out of the vocabulary, a position past the context, a
  // short block table, or a dropped local block inside a query's window.
  std::span<float> run(std::span<const ForwardRow> rows);

  // The last run's hidden states of given row r (ForwardRow::pooling), n_embd floats per
  // state, in token order; empty for a row that pools nothing. Valid until the next run.
  std::span<const float> hidden(size_t r) const {
    const auto e = static_cast<size_t>(cfg_.n_embd);
    return {hidden_.data() + hidden_first_[r] * e, hidden_count_[r] * e};
  }

  // The last run's softmax partials of logit row i (run()'s order) where its ForwardRow asked
  // for them: sampler_kernels::Kernels::panel_partials' maxima, then its sums, a panel of
  // sampler_kernels::kLogitPanel logits each; empty for the other rows. Valid until the next
  // run.
  std::span<const float> partials(int64_t logit_row) const;
  // The copy of logit row i of the last run where its ForwardRow asked for one (raw_logits),
  // else empty. Valid until the next run.
  std::span<const float> raw_logits(int64_t logit_row) const {
    if ((partial_rows_[logit_row] & kRawCopy) == 0) return {};
    return {raw_.data() + logit_row * cfg_.n_vocab, static_cast<size_t>(cfg_.n_vocab)};
  }
  // partial_rows_' bits.
  static constexpr uint8_t kPartials = 1, kRawCopy = 2;

  // Times each later run() phase by phase into *profile (forward_profile.h), adding one to
  // its steps; null (the default) times nothing. The profile must outlive its use.
  void set_profile(ForwardProfile* profile) { profile_ = profile; }

  // The last run's key chunks that several decode rows walked together, summed over layers
  // and query-head groups (attention_plan.cpp): rows whose block tables hold the same
  // blocks for a whole chunk (a prefix-cache hit, n choices of one prompt) read it once.
  int64_t shared_chunk_walks() const { return shared_chunk_walks_; }

 private:
  void validate(std::span<const ForwardRow> rows) const;
  void reserve(int64_t n_tokens, int64_t n_logits);
  void embed_and_angles(std::span<const ForwardRow> rows);
  // fn(t) for every token of the step, the tokens in a few contiguous runs over the pool.
  template <class Fn>
  void for_each_token(const Fn& fn);
  void attention_block(int32_t layer, std::span<const ForwardRow> rows);
  void qk_rope_and_store(int32_t layer, int64_t token, std::span<const ForwardRow> rows);
  // attention.cpp: flash-style, over the paged cache block by block with an online softmax.
  void plan_query_tiles();
  void attention(int32_t layer, std::span<const ForwardRow> rows);
  // Tasks per thread the attention plans for (fewer leave a thread idle behind a long one).
  static constexpr int64_t kTasksPerThread = 4;
  // Keys per chunk (attention.cpp): a multiple of the cache's 16-token blocks. A chunk task
  // of three query heads over 128 keys is ~10 us of work on a Zen 5 core, against ~1 us of
  // task overhead.
  static constexpr int32_t kKeyChunk = 128;
  // A tile's query heads first_head .. + n_heads - 1 over key chunks [first_chunk,
  // end_chunk) (attention.cpp: kKeyChunk keys each); group >= 0: one chunk of that group.
  // n_tiles > 1: one chunk that the decode rows of tiles tile .. + n_tiles - 1 share (one
  // token each, so their tokens are consecutive), each row's state going to its own group
  // (tile_groups_).
  struct AttendTask {
    int64_t tile;
    int32_t first_head, n_heads;
    int32_t first_chunk, end_chunk;
    int32_t group;
    int32_t n_tiles = 1;
  };
  // A tile's heads whose chunks are tasks of their own: their states' place in
  // chunk_states_, and how many chunks are done.
  struct ChunkGroup {
    int64_t offset;
    int32_t first_chunk, n_chunks;
    int32_t done;  // through std::atomic_ref
  };
  std::span<const ForwardRow> order_rows(std::span<const ForwardRow> given);
  void plan_attention(int32_t layer);
  int32_t heads_per_task(int64_t n_walks, int64_t wanted) const;
  // attention_plan.cpp: key chunks that consecutive decode tiles hold in the same blocks.
  struct SharedSpan {
    int64_t first_tile, end_tile;
    int32_t chunk;
  };
  void plan_shared_spans(std::span<const ForwardRow> rows);
  void shared_spans_of_stretch(std::span<const ForwardRow> rows, int64_t first, int64_t end);
  void plan_shared_tasks(int32_t heads, int64_t& floats);
  int32_t tile_chunks(int64_t tile) const {  // chunks [0, this) of a one-token tile
    return token_position_[query_tiles_[tile]] / kKeyChunk + 1;
  }
  int32_t add_chunk_group(int64_t tile, int32_t first_chunk, int32_t end_chunk, int32_t heads,
                          int64_t& floats);
  int32_t group_of(const AttendTask& task, int32_t k) const;
  void finish_chunk(const AttendTask& task, std::vector<float>& scratch);
  void prefetch_head_run(int32_t layer, int32_t block, int32_t which, int32_t kv_head) const;
  void attend(int32_t layer, std::span<const ForwardRow> rows, const AttendTask& task,
              std::vector<float>& scratch);
  // One task's view of its tile (attention.cpp), and its walk of one key chunk.
  struct TileWalk {
    int32_t layer;
    std::span<const int32_t> blocks;
    int64_t first_token;
    int32_t n_queries, first_head, n_heads, window;
    float* scores;  // n_queries * n_heads * block size
  };
  void walk_chunk(const TileWalk& w, int32_t chunk, float* max, float* sum, float* acc);
  struct TileBlock;  // attention.cpp: one cache block as a tile's queries see it
  void add_block(const TileWalk& w, const TileBlock& b, float* scores, float* max, float* sum,
                 float* acc, float* scratch);
  bool sees_pair(const TileWalk& w, int32_t j, int32_t end) const;
  int32_t next_block(const TileWalk& w, int32_t key, int32_t last_end) const;
  int32_t walk_pair(const TileWalk& w, int32_t j, int32_t chunk_end, float* max, float* sum,
                    float* acc, float* scratch);
  // A block's values widened for a tile (attention.cpp, widened_values): slot s's values of
  // the task's k-th KV head at rows + s * width + k * head_dim; null rows where they are
  // read from the cache as stored.
  struct WidenedValues {
    const float* rows;
    int64_t width;
  };
  WidenedValues widened_values(const TileWalk& w, int32_t block, int32_t next, int32_t start,
                               const int32_t* from, const int32_t* to) const;
  void gathered_values(const TileWalk& w, const WidenedValues& wide, const float* scores,
                       int32_t slot, int32_t n, float* acc) const;
  void store_chunk(const AttendTask& task, const float* max, const float* sum, const float* acc);
  void merge_chunks(const AttendTask& task, std::vector<float>& scratch);
  void write_attention(const AttendTask& task, const float* sum, const float* merged);
  // The KV head that query head `head` reads (GQA: n_head / n_head_kv query heads each).
  int32_t kv_head_of(int32_t head) const { return head / (cfg_.n_head / cfg_.n_head_kv); }
  // Byte offset, within a stored K or V vector, of that KV head (times the block size: the
  // offset of its rows in a transposed K block).
  size_t kv_head_offset(int32_t head) const {
    return kv_element_offset(kv_.type(), static_cast<int64_t>(kv_head_of(head)) * cfg_.head_dim);
  }
  void block_scores(const TileBlock& b, float* scores) const;
  void row_scores(const TileBlock& b, float* scores) const;
  // The block table `layer` reads and writes through: the local one for a local layer of
  // a cache with a local group.
  std::span<const int32_t> table(const ForwardRow& r, int32_t layer) const {
    return kv_.is_local(layer) ? r.kv_local_blocks : r.kv_blocks;
  }
  void validate_local_table(const ForwardRow& r) const;
  void ffn_block(int32_t layer);
  int64_t output_logits(std::span<const ForwardRow> given);
  // The output matmul, with the partials of the logit rows marked in partial_rows_
  // (output_partials.cpp, which defines partials() too).
  void output_matmul(int64_t n_out);
  void output_hidden(std::span<const ForwardRow> given);

  const Model& model_;
  const ModelConfig& cfg_;
  const std::vector<float>& rope_factors_;  // the model's for the served context
  KvCache& kv_;
  ThreadPool& pool_;

  // Per-token bookkeeping for the current batch.
  std::vector<int32_t> token_row_;       // which row a token belongs to
  std::vector<int32_t> token_position_;  // its position in its sequence
  // RoPE angles, [table][token][n_rot / 2]: table 0 for global layers, 1 for local ones.
  std::vector<float> rope_cos_, rope_sin_;

  // Activations, [token][width].
  std::vector<float> x_, xn_, qkv_, attn_, proj_, gate_up_, ffn_;
  std::vector<float> last_, logits_;                 // [logit row][n_embd | n_vocab]
  std::vector<uint8_t> partial_rows_;                // per logit row: kPartials | kRawCopy
  std::vector<float> partials_;                      // [logit row][maxima | sums]
  std::vector<float> raw_;                           // [logit row][n_vocab]: raw_logits()
  std::vector<float> hidden_;                        // [pooled state][n_embd]
  std::vector<size_t> hidden_first_, hidden_count_;  // per given row: its states in hidden_
  std::vector<std::vector<float>> thread_scores_;    // per pool thread: attention scratch
  std::vector<int64_t> query_tiles_;  // attention's tiles: each one's first token, then n_tokens
  std::vector<AttendTask> attend_tasks_;  // the layer's (attention.cpp: plan_attention)
  std::vector<ChunkGroup> chunk_groups_;
  std::vector<float> chunk_states_;  // chunk tasks' softmax states
  // The step's (attention_plan.cpp), for every layer without a sliding window.
  std::vector<SharedSpan> shared_spans_;
  // Per tile, where its chunks' marks start in chunk_shared_ (-1: a tile in no span); a mark
  // per chunk, set where a span walks it.
  std::vector<int64_t> tile_marks_;
  std::vector<uint8_t> chunk_shared_;
  // [tile][query-head group]: the chunk group of a span's row, for the span's tasks.
  std::vector<int32_t> tile_groups_;
  // The step's rows in the order the pass computes them (decode rows first, by their block
  // tables, so rows sharing blocks sit together: forward.cpp, order_rows), and each given
  // row's first token in that order.
  std::vector<ForwardRow> ordered_rows_;
  std::vector<int32_t> row_order_;
  std::vector<int64_t> given_first_token_;
  int64_t shared_chunk_walks_ = 0;

  ForwardProfile* profile_ = nullptr;
  PhaseClock clock_{nullptr};  // the current run's, on profile_
};

}  // namespace tandem
