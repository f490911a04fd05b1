// The prefix cache's law on the real tiny model (issue 15): a seeded request gives
// byte-identical text whether its prefix came from the cache, was computed alone, or was
// computed in chunks of any size; and blocks taken on demand, with recompute preemption
// when the pool runs dry, change nothing either. Random prompts sharing random prefixes,
// random arrival orders, small pools (eviction and preemption pressure), chunk sizes,
// overlap on and off, thread counts, for each KV element type the tiny model can hold.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/engine.h"
#include "tests/common/test_models.h"
#include "tests/common/test_support.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

struct Planned {
  std::vector<int32_t> prompt;
  uint64_t seed = 0;
  int32_t max_tokens = 0;
  std::string salt;  // cache_salt
};

// A few shared prefixes (by default 0 to 70 tokens, so some span several blocks and some
// end mid-block), each request one of them plus its own 1 to 20 tokens.
std::vector<Planned> plan(std::mt19937& rng, int32_t vocab, int32_t longest_output,
                          std::pair<int, int> prefix_tokens) {
  std::uniform_int_distribution<int32_t> token(2, vocab - 1);
  std::vector<std::vector<int32_t>> prefixes(3);
  for (auto& p : prefixes)
    p.resize(std::uniform_int_distribution<int>(prefix_tokens.first, prefix_tokens.second)(rng));
  for (auto& p : prefixes)
    for (int32_t& t : p) t = token(rng);
  std::vector<Planned> out(10);
  for (Planned& r : out) {
    r.prompt = prefixes[std::uniform_int_distribution<size_t>(0, 2)(rng)];
    const int own = std::uniform_int_distribution<int>(1, 20)(rng);
    for (int i = 0; i < own; ++i) r.prompt.push_back(token(rng));
    r.seed = rng();
    r.max_tokens = std::uniform_int_distribution<int>(1, longest_output)(rng);
  }
  // Some requests repeat another's whole prompt (a full hit but for the last token).
  out[9].prompt = out[0].prompt;
  return out;
}

std::shared_ptr<RecordingSink> submit(Engine& engine, const Planned& p) {
  auto sink = std::make_shared<RecordingSink>();
  GenerationRequest req;
  req.prompt = p.prompt;
  req.sampling.seed = p.seed;
  req.sampling.temperature = 1.0f;
  req.sampling.ignore_eos = true;
  req.max_tokens = p.max_tokens;
  req.cache_salt = p.salt;
  req.sink = sink;
  EXPECT_TRUE(engine.scheduler().submit(std::move(req)).accepted());
  return sink;
}

// Runs the scheduler on this thread until it has nothing left (deterministic, and the
// metrics are exact when it returns).
void drain(Engine& engine) {
  for (int i = 0; i < 1000000 && !engine.scheduler().drained(); ++i) engine.scheduler().run_once();
  ASSERT_TRUE(engine.scheduler().drained());
}

struct LawCase {
  std::filesystem::path model;
  std::vector<KvType> kv_types;
  uint32_t seeds = 4;
  int32_t longest_output = 12;             // max_tokens is drawn from 1 to this
  std::vector<int64_t> pools;              // kv_tokens of the run with the cache, drawn from these
  bool alone_without_local_group = false;  // the reference keeps local layers in full
  std::pair<int, int> prefix_tokens = {0, 70};  // each shared prefix's length, drawn
  bool salts = false;  // each request's cache_salt drawn from "", "a" and "b"
};

struct LawTotals {
  uint64_t hits = 0, preemptions = 0;
};

LawTotals check_law(const LawCase& c) {
  LawTotals totals;
  for (KvType kv_type : c.kv_types) {
    for (uint32_t seed = 1; seed <= c.seeds; ++seed) {
      std::mt19937 rng(seed * 7919 + static_cast<uint32_t>(kv_type));
      EngineOptions alone_options;
      alone_options.model = c.model;
      alone_options.threads = 1;
      alone_options.kv_type = kv_type;
      alone_options.kv_tokens = 1024;
      alone_options.scheduler.prefix_cache = false;
      alone_options.local_kv_group = !c.alone_without_local_group;
      Engine alone(alone_options);
      std::vector<Planned> requests =
          plan(rng, alone.config().n_vocab, c.longest_output, c.prefix_tokens);
      if (c.salts)
        for (Planned& p : requests) p.salt = std::vector<std::string>{"", "a", "b"}[rng() % 3];
      std::vector<std::string> expected;
      for (const Planned& p : requests) {
        auto sink = submit(alone, p);
        drain(alone);
        expected.push_back(sink->text());
      }

      EngineOptions options = alone_options;
      options.local_kv_group = true;
      options.threads = 1 + static_cast<int>(rng() % 2);
      options.kv_tokens = c.pools[rng() % c.pools.size()];
      options.scheduler.prefix_cache = true;
      options.scheduler.overlap = rng() % 2 == 0;
      options.scheduler.max_step_tokens = std::vector<int32_t>{3, 7, 16, 64}[rng() % 4];
      // At most the step's tokens, as the engine requires.
      options.scheduler.max_batch =
          std::min(1 + static_cast<int32_t>(rng() % 6), options.scheduler.max_step_tokens);
      Engine together(options);
      // Twice over in a random order, arriving between random numbers of steps: later
      // requests find earlier ones' blocks cached, where the pool kept them.
      std::vector<size_t> order(requests.size() * 2);
      for (size_t i = 0; i < order.size(); ++i) order[i] = i % requests.size();
      std::shuffle(order.begin(), order.end(), rng);
      std::vector<std::shared_ptr<RecordingSink>> sinks;
      for (size_t i : order) {
        sinks.push_back(submit(together, requests[i]));
        for (uint32_t turns = rng() % 4; turns > 0; --turns) together.scheduler().run_once();
      }
      drain(together);
      for (size_t k = 0; k < order.size(); ++k) {
        EXPECT_TRUE(sinks[k]->ended());
        EXPECT_EQ(sinks[k]->reason(), FinishReason::kLength) << sinks[k]->error();
        EXPECT_EQ(sinks[k]->text(), expected[order[k]])
            << kv_type_name(kv_type) << " seed " << seed << " request " << order[k];
        EXPECT_LE(sinks[k]->usage().cached_tokens, sinks[k]->usage().prompt_tokens - 1);
      }
      const SchedulerMetrics m = together.scheduler().metrics();
      EXPECT_EQ(m.kv_blocks_used, 0);
      EXPECT_EQ(m.kv_local_blocks_used, 0);
      totals.hits += m.prefix_hit_tokens;
      totals.preemptions += m.preemptions;
    }
  }
  return totals;
}

TEST(PrefixCacheLaw, OutputsEqualComputingAloneWithTheCacheOff) {
  ScratchDir dir;
  const LawTotals t = check_law({write_tiny_llama(dir.path(), gguf::TensorType::kF16, /*seed=*/3),
                                 {KvType::kF16, KvType::kF32, KvType::kBf16},
                                 4,
                                 12,
                                 {112, 160, 256}});
  // The workload must have exercised what it claims to.
  EXPECT_GT(t.hits, 0u);
  EXPECT_GT(t.preemptions, 0u);
  std::cout << "  prefix-cache law: " << t.hits << " tokens from the cache, " << t.preemptions
            << " preemptions\n";
}

// The law with each request's cache_salt drawn from "", "a" and "b": the prefix cache
// serves a request only its salt's blocks, and the outputs stay each request's alone.
TEST(PrefixCacheLaw, SaltedRequestsEqualComputingAlone) {
  ScratchDir dir;
  LawCase c{write_tiny_llama(dir.path(), gguf::TensorType::kF16, /*seed=*/3),
            {KvType::kF16},
            4,
            12,
            {112, 160, 256}};
  c.salts = true;
  const LawTotals t = check_law(c);
  EXPECT_GT(t.hits, 0u);
}

// vLLM's cache_salt: one prompt under salts "a", "b", "a", none, "c" and none. Only the
// second "a" and the second unsalted run find blocks (the first ones', two full blocks
// before the last position); every run gives the same text.
TEST(PrefixCacheLaw, ACacheSaltFindsOnlyItsOwnBlocks) {
  ScratchDir dir;
  EngineOptions options;
  options.model = write_tiny_llama(dir.path(), gguf::TensorType::kF16, /*seed=*/3);
  options.threads = 1;
  options.kv_tokens = 1024;
  Engine engine(options);
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> token(2, engine.config().n_vocab - 1);
  Planned p;
  p.prompt.resize(48);
  for (int32_t& t : p.prompt) t = token(rng);
  p.seed = 5;
  p.max_tokens = 6;
  std::vector<int64_t> cached;
  std::vector<std::string> texts;
  for (const char* salt : {"a", "b", "a", "", "c", ""}) {
    p.salt = salt;
    auto sink = submit(engine, p);
    drain(engine);
    cached.push_back(sink->usage().cached_tokens);
    texts.push_back(sink->text());
  }
  EXPECT_EQ(cached, (std::vector<int64_t>{0, 0, 32, 0, 0, 32}));
  for (const std::string& text : texts) EXPECT_EQ(text, texts[0]);
}

// Prefixes of 130 to 300 tokens: requests decoding side by side on the same cached blocks
// walk each whole 128-key chunk of them together (runner/model/attention_plan.cpp), and
// their outputs stay those of each request alone.
TEST(PrefixCacheLaw, LongSharedPrefixesWalkedTogetherEqualComputingAlone) {
  ScratchDir dir;
  LawCase c{write_tiny_llama(dir.path(), gguf::TensorType::kF16, /*seed=*/5),
            {KvType::kF16, KvType::kBf16},
            3,
            24,
            {400, 640, 1024}};
  c.prefix_tokens = {130, 300};
  const LawTotals t = check_law(c);
  EXPECT_GT(t.hits, 0u);
  std::cout << "  long prefixes: " << t.hits << " tokens from the cache, " << t.preemptions
            << " preemptions\n";
}

// gemma2 and gemma3 (windows of 24 and 40 positions) with their sliding-window layers in
// a block group of their own, prompts and outputs longer than the window: the same law,
// against each request computed alone with every position of every layer kept.
TEST(PrefixCacheLaw, SlidingWindowModelsEqualKeepingEveryPositionAlone) {
  TANDEM_REQUIRE_SHARED();
  for (const char* name : {"gemma2", "gemma3"}) {
    const LawTotals t = check_law(
        {*shared_dir() / "models" / "families" / (std::string(name) + "-tiny-s777-f16.gguf"),
         {KvType::kF16},
         3,
         48,
         {160, 208, 320},
         true});
    EXPECT_GT(t.hits, 0u) << name;
    EXPECT_GT(t.preemptions, 0u) << name;
    std::cout << "  " << name << ": " << t.hits << " tokens from the cache, " << t.preemptions
              << " preemptions\n";
  }
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
