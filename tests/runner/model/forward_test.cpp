// The CPU forward pass against the double-precision reference (law 7), and the
// batching guarantees the scheduler builds on (law 2): a row's logits do not depend on
// the other rows in its step, on how its prompt was chunked, or on the thread count.
#include "runner/model/forward.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <numeric>

#include "runner/model/quantize_model.h"
#include "tests/common/test_models.h"
#include "tests/common/test_support.h"
#include "tests/runner/model/reference_model.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using gguf::TensorType;

// A model with its own pool and a KV cache whose blocks are handed out in order. The
// weight-type tests keep K and V in F32, so that their bounds measure the weights alone.
struct Harness {
  explicit Harness(const std::filesystem::path& path, int threads = 2, int32_t n_blocks = 64,
                   KvType kv_type = KvType::kF32)
      : model(Model::load(path)),
        pool(threads),
        kv(model->config().n_layer, model->config().kv_dim(), n_blocks, kv_type,
           model->config().head_dim),
        forward(*model, kv, pool) {}

  std::vector<int32_t> take_blocks(int32_t n) {
    std::vector<int32_t> b(n);
    std::iota(b.begin(), b.end(), next_block);
    next_block += n;
    return b;
  }

  std::unique_ptr<Model> model;
  ThreadPool pool;
  KvCache kv;
  ForwardPass forward;
  int32_t next_block = 0;
};

std::vector<float> copy(std::span<float> s) { return {s.begin(), s.end()}; }

int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// Largest |fast - reference| over the vocabulary.
double max_error(const std::vector<float>& fast, const std::vector<double>& ref) {
  double err = 0;
  for (size_t i = 0; i < ref.size(); ++i) err = std::max(err, std::abs(fast[i] - ref[i]));
  return err;
}

struct WeightCase {
  TensorType type;
  // Bound on |logit - reference logit|. Logits of these models are O(1). F32 and F16
  // weights are widened and multiplied in F32, so only F32 rounding remains. BF16 weights
  // multiply BF16-rounded activations (2^-9 relative), and Q8_0 weights activations
  // quantized to Q8_0 per block as ggml does (0.003-0.004 measured), hence the looser bounds.
  double tolerance;
};

class ForwardMatchesReference : public ::testing::TestWithParam<WeightCase> {};

// Returns the largest error seen, for the KV-type tests to print.
double check_against_reference(const std::filesystem::path& path, double tolerance,
                               std::vector<int32_t> tokens = {1, 17, 42, 99, 3, 250, 7},
                               KvType kv_type = KvType::kF32) {
  ReferenceModel reference(path);
  Harness h(path, 2, 64, kv_type);
  double worst = 0;
  auto blocks = h.take_blocks(4);
  // Prefill, then four decode steps feeding back the argmax, each checked.
  ForwardRow row{tokens, 0, blocks, true};
  std::vector<float> logits = copy(h.forward.run({&row, 1}));
  std::vector<int32_t> seq = tokens;
  for (int step = 0; step < 5; ++step) {
    std::vector<double> ref = reference.logits(seq);
    EXPECT_EQ(logits.size(), ref.size());
    if (logits.size() != ref.size()) return worst;
    worst = std::max(worst, max_error(logits, ref));
    EXPECT_LE(max_error(logits, ref), tolerance) << "step " << step;
    const int32_t next = argmax(logits);
    seq.push_back(next);
    ForwardRow decode{{&seq.back(), 1}, static_cast<int32_t>(seq.size() - 1), blocks, true};
    logits = copy(h.forward.run({&decode, 1}));
  }
  return worst;
}

TEST_P(ForwardMatchesReference, LlamaLogitsMatchTheDoublePrecisionReference) {
  ScratchDir dir;
  check_against_reference(write_tiny_llama(dir.path(), GetParam().type), GetParam().tolerance);
}

TEST_P(ForwardMatchesReference, Qwen2LogitsMatchTheDoublePrecisionReference) {
  ScratchDir dir;
  check_against_reference(write_tiny_qwen2(dir.path(), GetParam().type), GetParam().tolerance);
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, ForwardMatchesReference,
                         ::testing::Values(WeightCase{TensorType::kF32, 2e-5},
                                           WeightCase{TensorType::kF16, 2e-5},
                                           WeightCase{TensorType::kQ8_0, 1e-2},
                                           WeightCase{TensorType::kBF16, 2e-2}),
                         [](const auto& info) { return gguf::type_name(info.param.type); });

// The family files in ../shared (llama 3 RoPE factors, mistral's head_dim, qwen3 and
// gemma3 q/k norms, phi3's fused tensors, gemma2's soft-caps, gemma's sliding windows)
// against the reference, over a prompt longer than the sliding windows.
class FamilyFiles : public ::testing::TestWithParam<std::string> {
 protected:
  std::filesystem::path path() const {
    return *shared_dir() / "models" / "families" / (GetParam() + "-tiny-s777-f16.gguf");
  }
};

std::vector<int32_t> long_prompt() {
  std::vector<int32_t> p(45);
  for (int32_t i = 0; i < 45; ++i) p[i] = 1 + (i * 7919) % 31000;
  return p;
}

TEST_P(FamilyFiles, LogitsMatchTheDoublePrecisionReference) {
  TANDEM_REQUIRE_SHARED();
  check_against_reference(path(), 1e-4, long_prompt());
}

// Law 2 on the families: a row's logits do not depend on the rows beside it, on how its
// prompt was chunked, or on the thread count.
TEST_P(FamilyFiles, RowsEqualSoloRunsAcrossBatchesChunksAndThreads) {
  TANDEM_REQUIRE_SHARED();
  const std::vector<int32_t> a = long_prompt(), b = {5, 6, 7, 8, 9};
  Harness solo(path(), 1);
  auto sa = solo.take_blocks(3);
  ForwardRow ra{a, 0, sa, true};
  auto solo_a = copy(solo.forward.run({&ra, 1}));

  Harness mixed(path(), 3);
  auto mb = mixed.take_blocks(1), ma = mixed.take_blocks(3);
  std::span<const int32_t> p(a);
  ForwardRow first{p.subspan(0, 20), 0, ma, false};
  mixed.forward.run({&first, 1});
  ForwardRow rows[] = {{b, 0, mb, true}, {p.subspan(20), 20, ma, true}};
  auto both = copy(mixed.forward.run(rows));
  const size_t v = solo_a.size();
  ASSERT_EQ(both.size(), 2 * v);
  EXPECT_TRUE(std::equal(solo_a.begin(), solo_a.end(), both.begin() + v));
}

INSTANTIATE_TEST_SUITE_P(SharedModels, FamilyFiles,
                         ::testing::Values("llama3", "mistral-nemo", "qwen3", "phi3", "gemma2",
                                           "gemma3"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// The KV cache's element types against the reference (law 7), on a qwen2 with 32-wide
// heads (Q8_0 quantizes a head in blocks of 32) and F32 weights, so the bound measures
// the KV rounding alone. K and V are O(1) here; F16 keeps 11 significant bits (2^-11
// relative), BF16 8 (2^-8), Q8_0 7 bits of each block's largest magnitude; the attention
// sums and the two layers spread that over the logits, which are O(1). Measured: f32
// 1.6e-7, f16 1.8e-5, bf16 1.8e-4, q8_0 6.3e-4; each bound is about five times that.
struct KvCase {
  KvType type;
  double tolerance;
};

class ForwardKvTypes : public ::testing::TestWithParam<KvCase> {};

TEST_P(ForwardKvTypes, LogitsMatchTheDoublePrecisionReference) {
  ScratchDir dir;
  const auto path = write_tiny_qwen2(dir.path(), TensorType::kF32, 2, /*heads=*/2);
  std::vector<int32_t> prompt(40);
  for (int32_t i = 0; i < 40; ++i) prompt[i] = 1 + (i * 37) % 290;
  const double worst = check_against_reference(path, GetParam().tolerance, prompt, GetParam().type);
  std::cout << "  KV " << kv_type_name(GetParam().type) << ": logits within " << worst
            << " of the reference\n";
}

// Law 2 for every KV type: a row's logits do not depend on its neighbours, on how its
// prompt was chunked or on the thread count, whatever the KV cache stores.
TEST_P(ForwardKvTypes, RowsEqualSoloRunsAcrossBatchesChunksAndThreads) {
  ScratchDir dir;
  const auto path = write_tiny_qwen2(dir.path(), TensorType::kF32, 2, /*heads=*/2);
  std::vector<int32_t> a(37), b = {5, 6, 7, 8, 9};
  std::iota(a.begin(), a.end(), 10);
  Harness solo(path, 1, 64, GetParam().type);
  auto sa = solo.take_blocks(3);
  ForwardRow ra{a, 0, sa, true};
  auto solo_a = copy(solo.forward.run({&ra, 1}));

  Harness mixed(path, 3, 64, GetParam().type);
  auto mb = mixed.take_blocks(1), ma = mixed.take_blocks(3);
  std::span<const int32_t> p(a);
  ForwardRow first{p.subspan(0, 13), 0, ma, false};
  mixed.forward.run({&first, 1});
  ForwardRow rows[] = {{b, 0, mb, true}, {p.subspan(13), 13, ma, true}};
  auto both = copy(mixed.forward.run(rows));
  const size_t v = solo_a.size();
  ASSERT_EQ(both.size(), 2 * v);
  EXPECT_TRUE(std::equal(solo_a.begin(), solo_a.end(), both.begin() + v));
}

// Law 2 between prefill and decode for every KV type: a prompt prefilled in one step (its
// tokens in tiles of several queries, which widen a block's stored keys or values once for
// the tile) gives each position the logits of decoding it a token a step (a tile of one,
// which reads the cache as stored), bit for bit.
TEST_P(ForwardKvTypes, PrefillTilesGiveEveryPositionDecodesBits) {
  ScratchDir dir;
  const auto path = write_tiny_qwen2(dir.path(), TensorType::kF32, 2, /*heads=*/2);
  constexpr int32_t kLength = 45;
  std::vector<int32_t> prompt(kLength);
  for (int32_t i = 0; i < kLength; ++i) prompt[i] = 1 + (i * 53) % 290;
  Harness whole(path, 2, 64, GetParam().type);
  const auto wb = whole.take_blocks(3);
  ForwardRow all{prompt, 0, wb, true, /*all_logits=*/true};
  const auto every = copy(whole.forward.run({&all, 1}));
  const size_t v = every.size() / kLength;
  Harness steps(path, 2, 64, GetParam().type);
  const auto sb = steps.take_blocks(3);
  for (int32_t p = 0; p < kLength; ++p) {
    ForwardRow step{{&prompt[p], 1}, p, sb, true};
    const auto logits = copy(steps.forward.run({&step, 1}));
    ASSERT_EQ(logits.size(), v);
    ASSERT_TRUE(std::equal(logits.begin(), logits.end(), every.begin() + p * v))
        << "position " << p;
  }
}

INSTANTIATE_TEST_SUITE_P(AllKvTypes, ForwardKvTypes,
                         ::testing::Values(KvCase{KvType::kF32, 2e-5}, KvCase{KvType::kF16, 1e-4},
                                           KvCase{KvType::kBf16, 1e-3},
                                           KvCase{KvType::kQ8_0, 3e-3}),
                         [](const auto& info) { return kv_type_name(info.param.type); });

// Law 2 where a step's attention tasks take several KV heads each (a step of many rows:
// each task walks its row's blocks once for all its heads) and a row alone takes one head
// per task: every row's prefill and decode logits equal its solo run's, for each KV type
// (tiny's 16-wide heads rule out Q8_0, whose heads go through the same offsets).
TEST(ForwardPass, ManyRowsEqualSoloRunsWhateverTheHeadsPerTask) {
  ScratchDir dir;
  const auto path = write_tiny_llama(dir.path(), TensorType::kF32);
  constexpr int kRows = 12;
  std::vector<std::vector<int32_t>> prompts(kRows);
  for (int r = 0; r < kRows; ++r)
    for (int i = 0; i < 20 + r; ++i) prompts[r].push_back(1 + (r * 31 + i * 17) % 250);
  std::vector<int32_t> next(kRows);
  for (int r = 0; r < kRows; ++r) next[r] = 3 + r;
  for (KvType kv : {KvType::kF32, KvType::kF16, KvType::kBf16}) {
    SCOPED_TRACE(kv_type_name(kv));
    Harness batch(path, 2, 64, kv);
    std::vector<std::vector<int32_t>> tables(kRows);
    std::vector<ForwardRow> rows;
    for (int r = 0; r < kRows; ++r) {
      tables[r] = batch.take_blocks(2);
      rows.push_back({prompts[r], 0, tables[r], true});
    }
    const auto prefilled = copy(batch.forward.run(rows));
    for (int r = 0; r < kRows; ++r)
      rows[r] = {{&next[r], 1}, static_cast<int32_t>(prompts[r].size()), tables[r], true};
    const auto decoded = copy(batch.forward.run(rows));
    for (int r = 0; r < kRows; ++r) {
      Harness solo(path, 1, 64, kv);
      const auto blocks = solo.take_blocks(2);
      ForwardRow prefill{prompts[r], 0, blocks, true};
      const auto solo_prefill = copy(solo.forward.run({&prefill, 1}));
      ForwardRow decode{{&next[r], 1}, static_cast<int32_t>(prompts[r].size()), blocks, true};
      const auto solo_decode = copy(solo.forward.run({&decode, 1}));
      const size_t v = solo_decode.size();
      ASSERT_EQ(prefilled.size(), kRows * v);
      EXPECT_TRUE(std::equal(solo_prefill.begin(), solo_prefill.end(), prefilled.begin() + r * v))
          << "row " << r;
      EXPECT_TRUE(std::equal(solo_decode.begin(), solo_decode.end(), decoded.begin() + r * v))
          << "row " << r;
    }
  }
}

// Where a row's blocks lie in the cache changes nothing: the same 70-token row prefilled and
// then decoded through ascending adjacent blocks, descending ones and scattered ones (the
// walk asks for each next block's runs wherever it lies, attention.cpp's prefetch_head_run)
// gives the same logits bit for bit, for F32, F16 and BF16 KV (tiny's 16-wide heads rule
// out Q8_0).
TEST(ForwardPass, LogitsDoNotDependOnWhereTheRowsBlocksLie) {
  ScratchDir dir;
  const auto path = write_tiny_llama(dir.path(), TensorType::kF32);
  constexpr int32_t kLength = 70, kBlocks = 5;
  std::vector<int32_t> prompt(kLength);
  for (int32_t i = 0; i < kLength; ++i) prompt[i] = 1 + (i * 4099) % 250;
  const std::vector<std::vector<int32_t>> tables = {
      {0, 1, 2, 3, 4}, {40, 31, 22, 13, 4}, {9, 2, 30, 17, 5}, {50, 51, 52, 7, 8}};
  for (KvType kv : {KvType::kF32, KvType::kF16, KvType::kBf16}) {
    SCOPED_TRACE(kv_type_name(kv));
    std::vector<std::vector<float>> first;
    for (const std::vector<int32_t>& table : tables) {
      ASSERT_EQ(table.size(), static_cast<size_t>(kBlocks));
      Harness h(path, 2, 64, kv);
      ForwardRow prefill{std::span<const int32_t>(prompt).first(kLength - 1), 0, table, true};
      std::vector<std::vector<float>> got{copy(h.forward.run({&prefill, 1}))};
      ForwardRow decode{{&prompt[kLength - 1], 1}, kLength - 1, table, true};
      got.push_back(copy(h.forward.run({&decode, 1})));
      if (first.empty()) {
        first = got;
        continue;
      }
      EXPECT_EQ(got, first) << "table starting " << table[0];
    }
  }
}

// Key chunks (attention.cpp: a query's keys split every 128 positions, the chunks' states
// merged in position order). A 300-token row gives every position the same logits
// prefilled in one step (each tile's task walks all its chunks), decoded a token a step
// alone on two threads (each chunk a task, the last to finish merging) and on one (one task
// walks them all), and decoded beside three other rows; and a long prompt stays within
// the double-precision reference, whose softmax is one pass over all the keys.
TEST(ForwardPass, KeyChunksGiveEveryPathTheSameBits) {
  ScratchDir dir;
  const auto path = write_tiny_llama(dir.path(), TensorType::kF32);
  constexpr int32_t kLength = 300, kBlocks = 19, kDecodeFrom = 100, kBeside = 260;
  std::vector<int32_t> prompt(kLength);
  for (int32_t i = 0; i < kLength; ++i) prompt[i] = 1 + (i * 7919) % 250;
  ReferenceModel reference(path);
  for (KvType kv : {KvType::kF32, KvType::kF16}) {
    SCOPED_TRACE(kv_type_name(kv));
    Harness one_step(path, 2, 64, kv);
    const auto blocks = one_step.take_blocks(kBlocks);
    ForwardRow all{prompt, 0, blocks, true, /*all_logits=*/true};
    const auto every = copy(one_step.forward.run({&all, 1}));
    const size_t v = every.size() / kLength;
    auto at = [&](int32_t p) { return every.begin() + static_cast<int64_t>(p) * v; };
    if (kv == KvType::kF32) {  // the bound of ForwardMatchesReference's F32 weights
      for (int32_t p : {127, 128, 200, kLength - 1}) {
        const auto ref = reference.logits({prompt.begin(), prompt.begin() + p + 1});
        EXPECT_LE(max_error({at(p), at(p) + v}, ref), 2e-5) << "position " << p;
      }
    }
    for (int threads : {1, 2}) {
      Harness solo(path, threads, 64, kv);
      const auto b = solo.take_blocks(kBlocks);
      ForwardRow head{std::span<const int32_t>(prompt).first(kDecodeFrom), 0, b, false};
      solo.forward.run({&head, 1});
      for (int32_t p = kDecodeFrom; p < kLength; ++p) {
        ForwardRow step{{&prompt[p], 1}, p, b, true};
        const auto logits = copy(solo.forward.run({&step, 1}));
        ASSERT_TRUE(std::equal(logits.begin(), logits.end(), at(p)))
            << threads << " threads, position " << p;
      }
    }
    Harness batch(path, 2, 4 * kBlocks, kv);
    std::vector<std::vector<int32_t>> tables(4);
    const int32_t lengths[] = {kBeside, 150, 20, 290};
    std::vector<ForwardRow> rows;
    for (int r = 0; r < 4; ++r) {
      tables[r] = batch.take_blocks(kBlocks);
      rows.push_back({std::span<const int32_t>(prompt).first(lengths[r]), 0, tables[r], false});
    }
    batch.forward.run(rows);
    for (int r = 0; r < 4; ++r) rows[r] = {{&prompt[lengths[r]], 1}, lengths[r], tables[r], true};
    const auto decoded = copy(batch.forward.run(rows));
    EXPECT_TRUE(std::equal(decoded.begin(), decoded.begin() + v, at(kBeside)));
  }
}

class ForwardBatching : public ::testing::TestWithParam<TensorType> {};

TEST_P(ForwardBatching, MixedBatchRowsEqualSoloRunsBitForBit) {
  ScratchDir dir;
  auto path = write_tiny_llama(dir.path(), GetParam());
  std::vector<int32_t> a = {5, 6, 7, 8, 9}, b = {100, 101, 102, 103, 104, 105, 106, 107, 108};
  int32_t decode_token = 33;

  // Solo: A's prefill, then B's prefill and one decode step, each in its own step.
  Harness solo(path);
  auto sa = solo.take_blocks(1), sb = solo.take_blocks(1);
  ForwardRow ra{a, 0, sa, true};
  auto solo_a = copy(solo.forward.run({&ra, 1}));
  ForwardRow rb{b, 0, sb, true};
  solo.forward.run({&rb, 1});
  ForwardRow rb2{{&decode_token, 1}, static_cast<int32_t>(b.size()), sb, true};
  auto solo_b = copy(solo.forward.run({&rb2, 1}));

  // Together: B's prefill alone, then B decoding beside A prefilling in one step,
  // with a third row that wants no logits. B's blocks come first this time.
  Harness mixed(path, /*threads=*/3);
  auto mb = mixed.take_blocks(1), ma = mixed.take_blocks(1), mc = mixed.take_blocks(1);
  ForwardRow pb{b, 0, mb, false};
  mixed.forward.run({&pb, 1});
  std::vector<int32_t> c = {1, 2, 3};
  ForwardRow rows[] = {{c, 0, mc, false},
                       {{&decode_token, 1}, static_cast<int32_t>(b.size()), mb, true},
                       {a, 0, ma, true}};
  auto both = copy(mixed.forward.run(rows));
  const size_t v = solo_a.size();
  ASSERT_EQ(both.size(), 2 * v);
  EXPECT_TRUE(std::equal(solo_b.begin(), solo_b.end(), both.begin()));
  EXPECT_TRUE(std::equal(solo_a.begin(), solo_a.end(), both.begin() + v));
}

TEST_P(ForwardBatching, ChunkedPrefillEqualsOneShotPrefill) {
  ScratchDir dir;
  auto path = write_tiny_llama(dir.path(), GetParam());
  std::vector<int32_t> prompt(37);
  std::iota(prompt.begin(), prompt.end(), 10);

  Harness one(path);
  auto b1 = one.take_blocks(3);
  ForwardRow whole{prompt, 0, b1, true};
  auto expected = copy(one.forward.run({&whole, 1}));

  Harness chunked(path, /*threads=*/1);
  auto b2 = chunked.take_blocks(3);
  std::span<const int32_t> p(prompt);
  ForwardRow c1{p.subspan(0, 16), 0, b2, false};
  ForwardRow c2{p.subspan(16, 5), 16, b2, false};
  ForwardRow c3{p.subspan(21), 21, b2, true};
  chunked.forward.run({&c1, 1});
  chunked.forward.run({&c2, 1});
  auto got = copy(chunked.forward.run({&c3, 1}));
  EXPECT_EQ(got, expected);
}

// Attention runs a prefill row's tokens in tiles that walk the cache together; each query
// must still compute exactly as it would alone. Every position's logits from one 37-token
// prefill (tiles of 16, 16, 5) equal those of the same prompt fed one token at a time (tiles
// of one) and in chunks of 5 starting mid-block, bit for bit.
TEST_P(ForwardBatching, EveryPositionsLogitsAreTheSameWhateverTheQueryTiles) {
  ScratchDir dir;
  auto path = write_tiny_llama(dir.path(), GetParam());
  std::vector<int32_t> prompt(37);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(7 + 13 * i % 50);
  Harness whole(path);
  auto bw = whole.take_blocks(3);
  ForwardRow all{prompt, 0, bw, true, /*all_logits=*/true};
  const auto expected = copy(whole.forward.run({&all, 1}));
  const size_t n_vocab = expected.size() / prompt.size();
  std::span<const int32_t> p(prompt);
  for (int32_t chunk : {1, 5}) {
    Harness h(path);
    auto b = h.take_blocks(3);
    for (int32_t at = 0; at < static_cast<int32_t>(prompt.size()); at += chunk) {
      const int32_t n = std::min<int32_t>(chunk, static_cast<int32_t>(prompt.size()) - at);
      ForwardRow row{p.subspan(at, n), at, b, true, /*all_logits=*/true};
      const auto got = copy(h.forward.run({&row, 1}));
      for (int32_t i = 0; i < n; ++i)
        ASSERT_TRUE(std::equal(got.begin() + i * n_vocab, got.begin() + (i + 1) * n_vocab,
                               expected.begin() + (at + i) * n_vocab))
            << "chunk " << chunk << " position " << at + i;
    }
  }
}

// An F16 file converted from a BF16 one (how most published F16 GGUFs are made) holds only
// BF16 values, so its matrices take the BF16 path: the same logits as the BF16 file, bit for
// bit, in one step of several rows.
TEST(ForwardF16FromBf16, AnF16FileConvertedFromBf16GivesTheBf16FilesLogits) {
  ScratchDir dir;
  // BF16 -> F16 rounds the tiniest weights onto F16's subnormal grid, so the F16 file is
  // compared with its own values written back as BF16 (exact: they all are BF16 values).
  const auto original = write_tiny_llama(dir.path(), TensorType::kBF16);
  const auto f16 = dir.file("from-bf16-f16.gguf"), bf16 = dir.file("back-to-bf16.gguf");
  quantize_model::quantize_file(original, f16, *quantize_model::find_target("F16"));
  quantize_model::quantize_file(f16, bf16, *quantize_model::find_target("BF16"));
  std::vector<int32_t> prompt = {4, 8, 15, 16, 23, 42, 7, 9};
  std::vector<std::vector<float>> logits;
  for (const auto& path : {bf16, f16}) {
    Harness h(path);
    auto b = h.take_blocks(1), c = h.take_blocks(1);
    const ForwardRow rows[] = {{prompt, 0, b, true}, {std::span(prompt).first(3), 0, c, true}};
    logits.push_back(copy(h.forward.run(rows)));
  }
  // Without the BF16 path (F16 kept exact, F32 activations) they would differ on a CPU with
  // AVX512-BF16, where the BF16 file rounds its activations to BF16.
  EXPECT_EQ(logits[0], logits[1]);
}

TEST_P(ForwardBatching, ThreadCountDoesNotChangeLogits) {
  ScratchDir dir;
  auto path = write_tiny_llama(dir.path(), GetParam());
  std::vector<int32_t> prompt = {4, 8, 15, 16, 23, 42};
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2, 3}) {
    Harness h(path, threads);
    auto blocks = h.take_blocks(1);
    ForwardRow row{prompt, 0, blocks, true};
    results.push_back(copy(h.forward.run({&row, 1})));
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, ForwardBatching,
                         ::testing::Values(TensorType::kF32, TensorType::kF16, TensorType::kBF16,
                                           TensorType::kQ8_0),
                         [](const auto& info) { return gguf::type_name(info.param); });

// The cache holds V by heads (kv_cache.h), so a cache made for another head size (the
// whole vector as one head, as a cache made without a head size is) would hand attention
// other heads' values: the forward pass refuses it.
TEST(ForwardPass, RejectsAKvCacheOfAnotherHeadSize) {
  ScratchDir dir;
  auto model = Model::load(write_tiny_llama(dir.path(), TensorType::kF32));
  const ModelConfig& c = model->config();
  ASSERT_LT(c.head_dim, c.kv_dim());
  ThreadPool pool(1);
  KvCache whole(c.n_layer, c.kv_dim(), 4, KvType::kF16);
  EXPECT_THROW(ForwardPass(*model, whole, pool), std::invalid_argument);
  KvCache heads(c.n_layer, c.kv_dim(), 4, KvType::kF16, c.head_dim);
  EXPECT_NO_THROW(ForwardPass(*model, heads, pool));
}

TEST(ForwardPass, RejectsTokensOutsideTheVocabulary) {
  ScratchDir dir;
  Harness h(write_tiny_llama(dir.path(), TensorType::kF32));
  auto blocks = h.take_blocks(1);
  std::vector<int32_t> bad = {1, h.model->config().n_vocab};
  ForwardRow row{bad, 0, blocks, true};
  EXPECT_THROW(h.forward.run({&row, 1}), std::invalid_argument);
  std::vector<int32_t> negative = {-1};
  ForwardRow row2{negative, 0, blocks, true};
  EXPECT_THROW(h.forward.run({&row2, 1}), std::invalid_argument);
}

TEST(ForwardPass, RejectsPositionsPastTheContextOrTheBlockTable) {
  ScratchDir dir;
  Harness h(write_tiny_llama(dir.path(), TensorType::kF32));
  auto blocks = h.take_blocks(1);
  std::vector<int32_t> one = {1};
  ForwardRow past_table{one, 16, blocks, true};  // needs a second block
  EXPECT_THROW(h.forward.run({&past_table, 1}), std::invalid_argument);
  const int32_t ctx = h.model->config().context_length;
  std::vector<int32_t> all_blocks(ctx / 16 + 1, 0);
  ForwardRow past_context{one, ctx, all_blocks, true};
  EXPECT_THROW(h.forward.run({&past_context, 1}), std::invalid_argument);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
