// Embeddings (pooling requests) through the assembled engine on tiny models: the pooled
// states against the double-precision reference (law 7), and law 2 for embeddings: the
// same bits whatever the chunking, the batch, the threads, overlap, the prefix cache and
// KV pressure (preemption), since the states are pooled in fixed point (protocol/pooling.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "scheduler/engine.h"
#include "tests/common/test_models.h"
#include "tests/common/test_support.h"
#include "tests/runner/model/reference_model.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

class EmbeddingSink : public RecordingSink {
 public:
  void on_embedding(std::span<const float> embedding) override {
    std::lock_guard lock(mutex_);
    ++embeddings_sent_;
    embedding_.assign(embedding.begin(), embedding.end());
  }
  std::vector<float> embedding() const {
    std::lock_guard lock(mutex_);
    return embedding_;
  }
  int embeddings_sent() const {
    std::lock_guard lock(mutex_);
    return embeddings_sent_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<float> embedding_;
  int embeddings_sent_ = 0;
};

GenerationRequest pooling_request(std::vector<int32_t> prompt, Pooling pooling,
                                  std::shared_ptr<EmbeddingSink> sink) {
  GenerationRequest req;
  req.prompt = std::move(prompt);
  req.max_tokens = 0;
  req.pooling = pooling;
  req.sink = std::move(sink);
  return req;
}

std::vector<float> embed(Engine& engine, const std::vector<int32_t>& prompt, Pooling pooling) {
  auto sink = std::make_shared<EmbeddingSink>();
  EXPECT_TRUE(engine.scheduler().submit(pooling_request(prompt, pooling, sink)).accepted());
  sink->wait();
  EXPECT_EQ(sink->embeddings_sent(), 1);
  EXPECT_EQ(sink->usage().completion_tokens, 0);
  return sink->embedding();
}

std::vector<int32_t> random_prompt(std::mt19937_64& rng, int32_t length) {
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < length; ++i) prompt.push_back(3 + static_cast<int32_t>(rng() % 250));
  return prompt;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(Embeddings, PooledStatesMatchTheDoublePrecisionReference) {
  ScratchDir dir;
  EngineOptions options;
  options.model = write_tiny_llama(dir.path(), gguf::TensorType::kF32, /*seed=*/7);
  options.threads = 2;
  options.kv_tokens = 1024;
  options.kv_type = KvType::kF32;
  options.scheduler.max_step_tokens = 16;  // the prompt in three chunks
  options.scheduler.max_batch = 16;
  Engine engine(options);
  engine.start();
  ReferenceModel reference(options.model);
  std::mt19937_64 rng(5);
  const std::vector<int32_t> prompt = random_prompt(rng, 40);
  const auto states = reference.hidden_states(prompt);
  for (Pooling pooling : {Pooling::kMean, Pooling::kCls, Pooling::kLast}) {
    SCOPED_TRACE(std::string(pooling_name(pooling)));
    std::vector<double> expected(states[0].size(), 0.0);
    if (pooling == Pooling::kMean) {
      for (const auto& s : states)
        for (size_t i = 0; i < s.size(); ++i)
          expected[i] += s[i] / static_cast<double>(states.size());
    } else {
      expected = pooling == Pooling::kCls ? states.front() : states.back();
    }
    const std::vector<float> got = embed(engine, prompt, pooling);
    ASSERT_EQ(got.size(), expected.size());
    double worst = 0, scale = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, std::abs(got[i] - expected[i]));
      scale = std::max(scale, std::abs(expected[i]));
    }
    // F32 weights and KV: the forward's float rounding only (the logits' bound is 1e-4).
    EXPECT_LT(worst, 1e-4 * std::max(1.0, scale)) << "largest state " << scale;
  }
  // The poolings differ, so a mix-up of them cannot pass.
  EXPECT_FALSE(
      same_bits(embed(engine, prompt, Pooling::kMean), embed(engine, prompt, Pooling::kLast)));
}

// Random prompts sharing random prefixes, pooled three ways, arriving together with
// generating requests on engines of random chunking, threads, overlap, cache and KV
// pressure: every embedding equals the one computed alone, bit for bit.
TEST(Embeddings, SameBitsWhateverTheChunksBatchThreadsCacheAndPressure) {
  ScratchDir dir;
  const auto model = write_tiny_llama(dir.path(), gguf::TensorType::kF16, /*seed=*/4);
  std::mt19937_64 rng(11);
  const std::vector<int32_t> shared = random_prompt(rng, 48);
  struct Case {
    std::vector<int32_t> prompt;
    Pooling pooling;
  };
  std::vector<Case> cases;
  for (int i = 0; i < 9; ++i) {
    std::vector<int32_t> prompt(shared.begin(), shared.begin() + static_cast<int64_t>(rng() % 49));
    const std::vector<int32_t> own = random_prompt(rng, 1 + static_cast<int32_t>(rng() % 40));
    prompt.insert(prompt.end(), own.begin(), own.end());
    cases.push_back(
        {prompt, std::vector<Pooling>{Pooling::kMean, Pooling::kCls, Pooling::kLast}[i % 3]});
  }
  std::vector<std::vector<float>> alone;
  {
    EngineOptions options;
    options.model = model;
    options.threads = 1;
    options.kv_tokens = 1024;
    options.scheduler.prefix_cache = false;
    Engine engine(options);
    engine.start();
    for (const Case& c : cases) alone.push_back(embed(engine, c.prompt, c.pooling));
  }
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    EngineOptions options;
    options.model = model;
    options.threads = 1 + static_cast<int>(rng() % 2);
    options.kv_tokens = std::vector<int64_t>{128, 160, 1024}[rng() % 3];  // 128: preemption
    options.scheduler.overlap = rng() % 2 == 0;
    options.scheduler.max_step_tokens = std::vector<int32_t>{5, 16, 64}[rng() % 3];
    options.scheduler.max_batch =
        std::min(1 + static_cast<int32_t>(rng() % 6), options.scheduler.max_step_tokens);
    Engine engine(options);
    engine.start();
    // Warm the cache with the shared prefix, then send everything at once, in a random
    // order, beside requests that generate.
    embed(engine, shared, Pooling::kLast);
    std::vector<size_t> order(cases.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::shared_ptr<EmbeddingSink>> sinks(cases.size());
    std::vector<std::shared_ptr<RecordingSink>> generating;
    for (size_t k : order) {
      sinks[k] = std::make_shared<EmbeddingSink>();
      ASSERT_TRUE(engine.scheduler()
                      .submit(pooling_request(cases[k].prompt, cases[k].pooling, sinks[k]))
                      .accepted());
      if (rng() % 3 == 0) {
        auto sink = std::make_shared<RecordingSink>();
        GenerationRequest req;
        req.prompt = random_prompt(rng, 20);
        req.max_tokens = 12;
        req.sampling.ignore_eos = true;
        req.sink = sink;
        ASSERT_TRUE(engine.scheduler().submit(std::move(req)).accepted());
        generating.push_back(sink);
      }
    }
    for (size_t k = 0; k < cases.size(); ++k) {
      sinks[k]->wait();
      EXPECT_EQ(sinks[k]->embeddings_sent(), 1) << "case " << k;
      EXPECT_TRUE(same_bits(sinks[k]->embedding(), alone[k]))
          << "case " << k << " (" << pooling_name(cases[k].pooling) << ")";
    }
    for (auto& sink : generating) sink->wait();
  }
}

// A decoding request admitted first, then a 120-token mean-pooled prompt prefilled 12
// tokens a step: in a 9-block pool the prompt's 8 blocks fill it, so the first request's
// second block preempts it mid-prefill, and it recomputes its prompt from position 0. Its
// embedding is still the one a roomy pool gives (the sum starts again; no state counts twice).
TEST(Embeddings, APromptPreemptedMidPrefillPoolsEachPositionOnce) {
  ScratchDir dir;
  const auto model = write_tiny_llama(dir.path(), gguf::TensorType::kF16, /*seed=*/8);
  std::mt19937_64 rng(9);
  const std::vector<int32_t> first = random_prompt(rng, 10), prompt = random_prompt(rng, 120);
  std::vector<float> embeddings[2];
  uint64_t preemptions[2] = {0, 0};
  for (int tight = 0; tight < 2; ++tight) {
    EngineOptions options;
    options.model = model;
    options.threads = 1;
    options.kv_tokens = tight ? 144 : 1024;
    options.scheduler.max_step_tokens = 12;
    options.scheduler.max_batch = 4;
    options.scheduler.prefix_cache = false;
    Engine engine(options);
    engine.start();
    auto decoding = std::make_shared<RecordingSink>();
    GenerationRequest req;
    req.prompt = first;
    req.max_tokens = 40;
    req.sampling.ignore_eos = true;
    req.sink = decoding;
    ASSERT_TRUE(engine.scheduler().submit(std::move(req)).accepted());
    embeddings[tight] = embed(engine, prompt, Pooling::kMean);
    decoding->wait();
    preemptions[tight] = engine.scheduler().metrics().preemptions;
  }
  EXPECT_EQ(preemptions[0], 0u);
  EXPECT_GT(preemptions[1], 0u);
  EXPECT_TRUE(same_bits(embeddings[0], embeddings[1]));
}

TEST(Embeddings, LastPoolingTakesThePrefixFromTheCache) {
  ScratchDir dir;
  EngineOptions options;
  options.model = write_tiny_llama(dir.path(), gguf::TensorType::kF16, /*seed=*/6);
  options.threads = 1;
  options.kv_tokens = 1024;
  Engine engine(options);
  engine.start();
  std::mt19937_64 rng(3);
  const std::vector<int32_t> prompt = random_prompt(rng, 70);
  const std::vector<float> cold = embed(engine, prompt, Pooling::kLast);
  auto sink = std::make_shared<EmbeddingSink>();
  ASSERT_TRUE(engine.scheduler().submit(pooling_request(prompt, Pooling::kLast, sink)).accepted());
  sink->wait();
  EXPECT_EQ(sink->usage().cached_tokens, 64);  // four full blocks; the last position computed
  EXPECT_TRUE(same_bits(sink->embedding(), cold));
  // Mean pools every position's state, which the cache does not hold: it takes nothing.
  embed(engine, prompt, Pooling::kMean);
  auto mean = std::make_shared<EmbeddingSink>();
  ASSERT_TRUE(engine.scheduler().submit(pooling_request(prompt, Pooling::kMean, mean)).accepted());
  mean->wait();
  EXPECT_EQ(mean->usage().cached_tokens, 0);
}

// One embeddings request's inputs count once against --max-queue while any of them waits:
// a 10-input list in a queue of 4 leaves room for three more requests (QA: a 2048-input
// batch had every other client refused until it drained).
TEST(Embeddings, AnInputListCountsOnceAgainstTheQueue) {
  ScratchDir dir;
  EngineOptions options;
  options.model = write_tiny_llama(dir.path(), gguf::TensorType::kF16);
  options.threads = 1;
  options.kv_tokens = 1024;
  options.scheduler.max_queue = 4;
  Engine engine(options);  // not started: everything submitted waits
  std::vector<GenerationRequest> list;
  std::vector<std::shared_ptr<EmbeddingSink>> sinks;
  for (int i = 0; i < 10; ++i) {
    sinks.push_back(std::make_shared<EmbeddingSink>());
    list.push_back(
        pooling_request({5, 6, static_cast<int32_t>(7 + i)}, Pooling::kMean, sinks.back()));
  }
  ASSERT_TRUE(engine.scheduler().submit(std::move(list)).accepted());
  std::vector<std::shared_ptr<RecordingSink>> others;
  const auto submit_one = [&] {
    others.push_back(std::make_shared<RecordingSink>());
    GenerationRequest req;
    req.prompt = {5, 6, 7};
    req.max_tokens = 2;
    req.sink = others.back();
    return engine.scheduler().submit(std::move(req));
  };
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(submit_one().accepted()) << i;
  const SubmitResult full = submit_one();
  ASSERT_FALSE(full.accepted());
  EXPECT_EQ(full.refusal, ErrorKind::kOverloaded);
  others.pop_back();
  engine.start();
  for (auto& sink : sinks) {
    sink->wait();
    EXPECT_EQ(sink->embeddings_sent(), 1);
  }
  for (auto& sink : others) sink->wait();
}

// A model whose states are NaN (a broken file; here its output norm) fails the request
// with an internal error, rather than pooling the NaNs as zeros into a vector that looks
// valid (QA Y), and the engine goes on serving.
TEST(Embeddings, StatesThatAreNotFiniteFailTheRequest) {
  ScratchDir dir;
  const gguf::File tiny =
      gguf::File::open(write_tiny_llama(dir.path(), gguf::TensorType::kF16, /*seed=*/2));
  gguf::Writer w;
  for (const auto& [key, value] : tiny.metadata()) w.add(key, value);
  for (const gguf::TensorInfo& t : tiny.tensors()) {
    if (t.name != "output_norm.weight") {
      w.add_tensor(t.name, t.type, t.dims, std::span<const uint8_t>(t.data, t.n_bytes));
      continue;
    }
    ASSERT_EQ(t.type, gguf::TensorType::kF32);
    std::vector<float> nan(t.n_elements, std::nanf(""));
    w.add_tensor(t.name, t.type, t.dims,
                 std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(nan.data()),
                                          nan.size() * sizeof(float)));
  }
  w.write(dir.file("nan.gguf"));
  EngineOptions options;
  options.model = dir.file("nan.gguf");
  options.threads = 1;
  options.kv_tokens = 256;
  Engine engine(options);
  engine.start();
  for (Pooling pooling : {Pooling::kMean, Pooling::kCls, Pooling::kLast}) {
    auto sink = std::make_shared<EmbeddingSink>();
    ASSERT_TRUE(engine.scheduler().submit(pooling_request({5, 6, 7, 8}, pooling, sink)).accepted());
    sink->wait();
    EXPECT_EQ(sink->error_kind(), ErrorKind::kInternal) << pooling_name(pooling);
    EXPECT_EQ(sink->embeddings_sent(), 0);
  }
  auto after = std::make_shared<RecordingSink>();
  GenerationRequest req;
  req.prompt = {5, 6, 7};
  req.max_tokens = 3;
  req.sampling.ignore_eos = true;
  req.sink = after;
  ASSERT_TRUE(engine.scheduler().submit(std::move(req)).accepted());
  after->wait();
  EXPECT_EQ(after->usage().completion_tokens, 3);  // the engine goes on serving
}

TEST(Embeddings, APoolingRequestThatWouldGenerateIsRefused) {
  ScratchDir dir;
  EngineOptions options;
  options.model = write_tiny_llama(dir.path(), gguf::TensorType::kF16);
  options.threads = 1;
  options.kv_tokens = 256;
  Engine engine(options);
  auto sink = std::make_shared<EmbeddingSink>();
  GenerationRequest req = pooling_request({5, 6, 7}, Pooling::kMean, sink);
  req.max_tokens = 4;
  const SubmitResult refused = engine.scheduler().submit(std::move(req));
  ASSERT_FALSE(refused.accepted());
  EXPECT_EQ(refused.refusal, ErrorKind::kInvalidRequest);
  req = pooling_request({5, 6, 7}, Pooling::kMean, sink);
  req.max_tokens.reset();  // until the context ends: generates too
  EXPECT_FALSE(engine.scheduler().submit(std::move(req)).accepted());
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
