// Sliding-window layers in a KV block group of their own (kv_cache.h): gemma2's and
// gemma3's local layers read and write through a second block table whose blocks, once
// out of the window, are dropped and handed out again. The logits must stay bit-identical
// to a cache that keeps every position in one group (which FamilyFiles checks against
// the double-precision reference), while a sequence never holds more local blocks than
// its window and one chunk need.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "runner/device/cpu_executor.h"
#include "runner/device/device.h"
#include "runner/model/forward.h"
#include "tests/common/test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

std::filesystem::path family(const std::string& name) {
  return *shared_dir() / "models" / "families" / (name + "-tiny-s777-f16.gguf");
}

std::vector<bool> local_layers(const ModelConfig& c) {
  std::vector<bool> out(c.n_layer);
  for (int32_t l = 0; l < c.n_layer; ++l) out[l] = c.is_local_layer(l);
  return out;
}

struct Generation {
  std::vector<std::vector<float>> logits;  // the prompt's last, then each decode step's
  int32_t most_local_held = 0;             // local blocks the sequence held at once
  std::vector<int32_t> tokens;             // the prompt, then the greedy tokens
};

// One sequence: a 50-token prompt prefilled in chunks, then greedy decode steps. With
// `local`, the cache has a local group just big enough for the window and a chunk; each
// step first drops the local blocks wholly before its first query's window, and new ones
// come off a stack, so a dropped block is reused at once: dropping one the window still
// sees would change the logits (or be refused by the forward pass).
Generation generate(const std::string& name, bool local, int32_t chunk, int32_t decode_steps) {
  const std::unique_ptr<Model> model = Model::load(family(name));
  const ModelConfig& c = model->config();
  const int32_t bs = KvCache::kDefaultBlockSize, window = c.sliding_window;
  const int32_t local_blocks = local_blocks_per_sequence(window, chunk, bs);
  ThreadPool pool(2);
  KvCache kv(c.n_layer, c.kv_dim(), 16, KvType::kF16, c.head_dim, bs, local_layers(c),
             local ? local_blocks : 0);
  ForwardPass forward(*model, kv, pool);
  std::vector<int32_t> global(16), table, free_local;
  std::iota(global.begin(), global.end(), 0);
  for (int32_t b = local_blocks - 1; b >= 0; --b) free_local.push_back(b);

  std::vector<int32_t> seq(50);
  for (int32_t i = 0; i < 50; ++i) seq[i] = 1 + (i * 7919) % 31000 % c.n_vocab;
  Generation run;
  int32_t pos = 0;
  auto step = [&](int32_t n, bool want_logits) {
    if (local) {
      for (int32_t b = 0;
           b < static_cast<int32_t>(table.size()) && (b + 1) * bs <= pos - window + 1; ++b)
        if (table[b] != kNoBlock) {
          free_local.push_back(table[b]);
          table[b] = kNoBlock;
        }
      while (static_cast<int32_t>(table.size()) * bs < pos + n) {
        if (free_local.empty()) throw std::runtime_error("the local group ran dry");
        table.push_back(free_local.back());
        free_local.pop_back();
      }
      run.most_local_held =
          std::max(run.most_local_held, local_blocks - int32_t(free_local.size()));
    }
    ForwardRow row{
        std::span<const int32_t>(seq).subspan(pos, n), pos, global, want_logits, false, table};
    std::span<float> out = forward.run({&row, 1});
    pos += n;
    if (want_logits) run.logits.emplace_back(out.begin(), out.end());
  };
  while (pos < 50) {
    const int32_t n = std::min(chunk, 50 - pos);
    step(n, pos + n == 50);
  }
  for (int32_t i = 0; i < decode_steps; ++i) {
    const std::vector<float>& last = run.logits.back();
    seq.push_back(static_cast<int32_t>(std::max_element(last.begin(), last.end()) - last.begin()));
    step(1, true);
  }
  run.tokens = seq;
  return run;
}

class LocalKvGroup : public ::testing::TestWithParam<std::string> {};

TEST_P(LocalKvGroup, LogitsEqualKeepingEveryPositionWhileHoldingOnlyTheWindow) {
  TANDEM_REQUIRE_SHARED();
  const int32_t bs = KvCache::kDefaultBlockSize;
  for (int32_t chunk : {1, 7, 50}) {
    const Generation full = generate(GetParam(), false, chunk, 90);
    const Generation windowed = generate(GetParam(), true, chunk, 90);
    ASSERT_EQ(full.logits.size(), windowed.logits.size());
    for (size_t i = 0; i < full.logits.size(); ++i)
      ASSERT_EQ(full.logits[i], windowed.logits[i]) << "chunk " << chunk << " step " << i;
    const int32_t window = Model::load(family(GetParam()))->config().sliding_window;
    EXPECT_LE(windowed.most_local_held, (window + chunk + bs - 1) / bs + 1) << "chunk " << chunk;
    // 140 positions take 9 blocks: the window must have let most of them go.
    EXPECT_LT(windowed.most_local_held, 140 / bs) << "chunk " << chunk;
  }
}

// Past 128 positions a query's keys span two of attention.cpp's key chunks, and on a local
// layer its window starts inside the first: each decode step alone (the chunks tasks of
// their own on two threads) gives the logits the whole sequence gives in one step (one task
// walking a tile's chunks), position by position.
TEST_P(LocalKvGroup, DecodeStepsEqualTheWholeSequenceInOneStep) {
  TANDEM_REQUIRE_SHARED();
  const Generation decoded = generate(GetParam(), false, 50, 90);
  const std::unique_ptr<Model> model = Model::load(family(GetParam()));
  const ModelConfig& c = model->config();
  ASSERT_LT(c.sliding_window, 128);
  ThreadPool pool(2);
  KvCache kv(c.n_layer, c.kv_dim(), 16, KvType::kF16, c.head_dim);
  ForwardPass forward(*model, kv, pool);
  std::vector<int32_t> blocks(16);
  std::iota(blocks.begin(), blocks.end(), 0);
  const std::span<const int32_t> all(decoded.tokens);
  ForwardRow row{all, 0, blocks, true, /*all_logits=*/true};
  const std::span<float> every = forward.run({&row, 1});
  const size_t v = static_cast<size_t>(c.n_vocab);
  ASSERT_EQ(every.size(), all.size() * v);
  ASSERT_EQ(49 + decoded.logits.size(), all.size());
  for (size_t i = 0; i < decoded.logits.size(); ++i) {
    const size_t position = 49 + i;
    ASSERT_TRUE(std::equal(decoded.logits[i].begin(), decoded.logits[i].end(),
                           every.begin() + position * v))
        << "position " << position;
  }
}

TEST_P(LocalKvGroup, ADroppedBlockInsideTheWindowIsRefused) {
  TANDEM_REQUIRE_SHARED();
  const std::unique_ptr<Model> model = Model::load(family(GetParam()));
  const ModelConfig& c = model->config();
  ThreadPool pool(1);
  KvCache kv(c.n_layer, c.kv_dim(), 8, KvType::kF16, c.head_dim, 16, local_layers(c), 8);
  ForwardPass forward(*model, kv, pool);
  const std::vector<int32_t> global = {0, 1, 2, 3, 4};
  std::vector<int32_t> tokens(64, 3);
  std::vector<int32_t> table = {0, 1, 2, 3};
  ForwardRow fill{tokens, 0, global, false, false, table};
  forward.run({&fill, 1});
  // The next query is at 64: block 2 (positions 32..47) is inside any window above 16.
  table[2] = kNoBlock;
  table.push_back(4);
  const int32_t next = 3;
  ForwardRow decode{{&next, 1}, 64, global, true, false, table};
  EXPECT_THROW(forward.run({&decode, 1}), std::invalid_argument);
  // A table that does not cover the row is refused too.
  table = {0, 1, 2, 3};
  ForwardRow short_table{{&next, 1}, 64, global, true, false, table};
  EXPECT_THROW(forward.run({&short_table, 1}), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(SharedModels, LocalKvGroup, ::testing::Values("gemma2", "gemma3"));

TEST(KvCache, LocalLayersLiveInAGroupOfTheirOwn) {
  // Layers 0 and 2 local: 2 global layers x 8 blocks, 2 local layers x 3 blocks.
  KvCache kv(4, 8, 8, KvType::kF32, 8, 4, {true, false, true, false}, 3);
  ASSERT_TRUE(kv.has_local_group());
  EXPECT_EQ(kv.n_local_layers(), 2);
  EXPECT_EQ(kv.bytes(), (2u * 8 + 2u * 3) * 2 * 4 * 8 * sizeof(float));
  EXPECT_EQ(kv.global_bytes_per_token(), 2u * 2 * 8 * sizeof(float));
  EXPECT_EQ(kv.local_bytes_per_token(), 2u * 2 * 8 * sizeof(float));
  // Every (layer, block, slot) of both groups is its own memory.
  std::vector<float> k(8), v(8);
  for (int32_t l = 0; l < 4; ++l)
    for (int32_t b = 0; b < (kv.is_local(l) ? 3 : 8); ++b)
      for (int32_t s = 0; s < 4; ++s) {
        std::fill(k.begin(), k.end(), static_cast<float>(l * 1000 + b * 10 + s));
        std::fill(v.begin(), v.end(), -static_cast<float>(l * 1000 + b * 10 + s));
        kv.store(l, b, s, k.data(), v.data());
      }
  for (int32_t l = 0; l < 4; ++l)
    for (int32_t b = 0; b < (kv.is_local(l) ? 3 : 8); ++b)
      for (int32_t s = 0; s < 4; ++s) {
        float got_k, got_v;
        kv.read_k(l, b, s, k.data());
        got_k = k[7];
        kv.read_v(l, b, s, v.data());
        got_v = v[7];
        EXPECT_EQ(got_k, static_cast<float>(l * 1000 + b * 10 + s));
        EXPECT_EQ(got_v, -static_cast<float>(l * 1000 + b * 10 + s));
      }
  // No local group: every layer global, as before.
  KvCache plain(4, 8, 8, KvType::kF32, 8, 4, {true, false, true, false}, 0);
  EXPECT_FALSE(plain.has_local_group());
  EXPECT_FALSE(plain.is_local(0));
  EXPECT_EQ(plain.bytes(), 4u * 8 * 2 * 4 * 8 * sizeof(float));
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
