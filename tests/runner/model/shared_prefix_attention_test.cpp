// Decode rows that share a prefix's cache blocks walk those key chunks together
// (attention_plan.cpp), the pass ordering a step's rows by their blocks (forward.cpp). Law
// 2 says that changes no bit: every row's logits equal its solo run's, whichever rows share
// its chunks, how many chunks they share, in whatever order they come, on any thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "runner/model/forward.h"
#include "tests/common/test_models.h"
#include "tests/common/test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using gguf::TensorType;

constexpr int32_t kBlock = 16, kChunkBlocks = 8;        // a key chunk is 128 keys
constexpr int32_t kPrefix = 2 * kChunkBlocks * kBlock;  // two whole chunks, 256 tokens

struct Pass {
  Pass(const Model& model, int threads, int32_t n_blocks, KvType kv_type)
      : pool(threads),
        kv(model.config().n_layer, model.config().kv_dim(), n_blocks, kv_type,
           model.config().head_dim),
        forward(model, kv, pool) {}
  std::vector<int32_t> take(int32_t n) {
    std::vector<int32_t> b(n);
    std::iota(b.begin(), b.end(), next);
    next += n;
    return b;
  }
  ThreadPool pool;
  KvCache kv;
  ForwardPass forward;
  int32_t next = 0;
};

std::vector<int32_t> tokens(int32_t n, int32_t seed) {
  std::vector<int32_t> t(n);
  for (int32_t i = 0; i < n; ++i) t[i] = 1 + (i * 7919 + seed * 104729) % 250;
  return t;
}

// Six decode rows in one step, given in this order: rows 0, 2 and 4 on the prefix's blocks,
// rows 1 and 3 on a copy of it in other blocks (so neither set is adjacent as given), and
// row 5 on the prefix's first chunk only (its second chunk holds other tokens, in blocks of
// its own). The pass orders the rows by their blocks, so four spans walk together: the
// prefix's first chunk for rows 0, 2, 4 and 5, its second for 0, 2 and 4, and the copy's
// two chunks for 1 and 3. Each row has its own tokens after the prefix, of its own length,
// and a solo run of its whole sequence in a cache of its own must give its logits bit for
// bit, in the order the rows were given.
TEST(SharedPrefixAttention, RowsSharingAPrefixsBlocksGiveTheirSoloLogits) {
  ScratchDir dir;
  const auto model = Model::load(write_tiny_llama(dir.path(), TensorType::kF32));
  const std::vector<int32_t> prefix = tokens(kPrefix, 0), other = tokens(kPrefix, 9);
  constexpr int kRows = 6;
  constexpr int32_t kHalf = kChunkBlocks * kBlock;  // the first chunk's keys
  for (KvType kv : {KvType::kF32, KvType::kF16, KvType::kBf16}) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(kv_type_name(kv)) + ", " + std::to_string(threads) + " threads");
      Pass batch(*model, threads, 128, kv);
      auto prefill = [&](std::span<const int32_t> t, int32_t position,
                         std::span<const int32_t> table) {
        const ForwardRow row{t, position, table, false};
        batch.forward.run({&row, 1});
      };
      const std::vector<int32_t> shared = batch.take(2 * kChunkBlocks);
      prefill(prefix, 0, shared);
      const std::vector<int32_t> copy = batch.take(2 * kChunkBlocks);
      prefill(prefix, 0, copy);
      std::vector<std::vector<int32_t>> tables(kRows), seqs(kRows);
      for (int r = 0; r < kRows; ++r) {
        tables[r] = r == 1 || r == 3 ? copy : shared;
        seqs[r] = prefix;
        if (r == 5) {  // chunk 1: other tokens, in blocks of its own
          const std::vector<int32_t> own_half = batch.take(kChunkBlocks);
          std::copy(own_half.begin(), own_half.end(), tables[r].begin() + kChunkBlocks);
          std::copy(other.begin() + kHalf, other.end(), seqs[r].begin() + kHalf);
          prefill({seqs[r].data() + kHalf, static_cast<size_t>(kHalf)}, kHalf, tables[r]);
        }
        const std::vector<int32_t> own = tokens(5 + 23 * r, r + 1);  // after the prefix
        const std::vector<int32_t> extra =
            batch.take(static_cast<int32_t>(own.size()) / kBlock + 1);
        tables[r].insert(tables[r].end(), extra.begin(), extra.end());
        prefill({own.data(), own.size() - 1}, kPrefix, tables[r]);
        seqs[r].insert(seqs[r].end(), own.begin(), own.end());
      }
      std::vector<ForwardRow> step;
      for (int r = 0; r < kRows; ++r) {
        const auto last = static_cast<int32_t>(seqs[r].size()) - 1;
        step.push_back({{&seqs[r][last], 1}, last, tables[r], true});
      }
      const std::span<float> all = batch.forward.run(step);
      const std::vector<float> logits(all.begin(), all.end());
      // Four spans per layer and query-head group: one group where one thread takes every
      // head (six rows give one thread tasks enough), one per KV head on two.
      const int32_t n_layer = model->config().n_layer;
      EXPECT_EQ(batch.forward.shared_chunk_walks(), 4 * n_layer * (threads == 1 ? 1 : 2));
      const size_t v = logits.size() / kRows;
      for (int r = 0; r < kRows; ++r) {
        Pass solo(*model, threads, 32, kv);
        const auto last = static_cast<int32_t>(seqs[r].size()) - 1;
        const std::vector<int32_t> table = solo.take(last / kBlock + 1);
        const ForwardRow head{{seqs[r].data(), static_cast<size_t>(last)}, 0, table, false};
        solo.forward.run({&head, 1});
        const ForwardRow one{{&seqs[r][last], 1}, last, table, true};
        const std::span<float> alone = solo.forward.run({&one, 1});
        EXPECT_EQ(solo.forward.shared_chunk_walks(), 0);
        EXPECT_TRUE(std::equal(alone.begin(), alone.end(), logits.begin() + r * v)) << "row " << r;
      }
    }
  }
}

// Rows decoding token `prefix[p]` at position p (positions[r]) through tables[r] in one
// step, each after its own prefill of prefix[0, p) through its table (the tables may share
// blocks: the prefills write the same bits there): every row keeps its solo run's logits,
// and the step walks `walks` chunks together.
void rows_keep_their_solo_logits(const Model& model, const std::vector<int32_t>& prefix,
                                 const std::vector<int32_t>& positions,
                                 const std::vector<std::vector<int32_t>>& tables, int64_t walks) {
  Pass batch(model, 2, 64, KvType::kF16);
  std::vector<ForwardRow> step;
  for (size_t r = 0; r < positions.size(); ++r) {
    const ForwardRow fill{{prefix.data(), static_cast<size_t>(positions[r])}, 0, tables[r], false};
    batch.forward.run({&fill, 1});
    step.push_back({{&prefix[positions[r]], 1}, positions[r], tables[r], true});
  }
  const std::span<float> all = batch.forward.run(step);
  const std::vector<float> logits(all.begin(), all.end());
  EXPECT_EQ(batch.forward.shared_chunk_walks(), walks);
  const size_t v = logits.size() / positions.size();
  for (size_t r = 0; r < positions.size(); ++r) {
    Pass solo(model, 2, 32, KvType::kF16);
    const std::vector<int32_t> t = solo.take(positions[r] / kBlock + 1);
    const ForwardRow head{{prefix.data(), static_cast<size_t>(positions[r])}, 0, t, false};
    solo.forward.run({&head, 1});
    const ForwardRow one{{&prefix[positions[r]], 1}, positions[r], t, true};
    const std::span<float> alone = solo.forward.run({&one, 1});
    EXPECT_TRUE(std::equal(alone.begin(), alone.end(), logits.begin() + r * v)) << "row " << r;
  }
}

std::vector<int32_t> first_blocks(int32_t n) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), 0);
  return t;
}

// Two rows on the same blocks, the second at a position inside the second chunk (it sees
// keys 0 .. 200 of it, the first row all of it and a block more): only the first chunk is
// walked together (once per layer and query-head group: two rows, two KV heads, a group
// each). Walking the second chunk together too would stop the tile's walk at its last
// query's keys and lose the first row's rest.
TEST(SharedPrefixAttention, ARowInsideAChunkSharesOnlyTheChunksBeforeIt) {
  ScratchDir dir;
  const auto model = Model::load(write_tiny_llama(dir.path(), TensorType::kF32));
  const int32_t n_layer = model->config().n_layer;
  // The second row's table runs on to the first row's blocks and one more (unused), so it
  // sorts after the first (order_rows), and the tile's last query is the one at 200.
  std::vector<int32_t> inside = first_blocks(16);
  inside.push_back(63);
  rows_keep_their_solo_logits(*model, tokens(kPrefix + 1, 3), {kPrefix, 200},
                              {first_blocks(17), inside}, 2 * n_layer);
}

// A span's first row whose table ends with the shared chunks (its position the second chunk's
// last key) beside a row further on: both chunks are walked together, the walk reading the
// first row's table, and asks for no block past its end.
TEST(SharedPrefixAttention, ASpansFirstTableMayEndWithTheSharedChunks) {
  ScratchDir dir;
  const auto model = Model::load(write_tiny_llama(dir.path(), TensorType::kF32));
  const int32_t n_layer = model->config().n_layer;
  rows_keep_their_solo_logits(*model, tokens(kPrefix + 50, 4), {kPrefix - 1, kPrefix + 44},
                              {first_blocks(16), first_blocks(19)}, 2 * 2 * n_layer);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
