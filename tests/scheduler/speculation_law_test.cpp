// Speculative decoding's law on the real tiny models: a request gives the same tokens,
// text, log-probabilities and finish with drafts verified as without them, whatever the
// drafts, the batch, the pool, overlap, the threads or the KV type. Greedy and seeded
// sampling, penalties (vLLM's and llama.cpp's windows), DRY, XTC, min_tokens, logprobs (the
// model's and post-sampling ones), Mirostat's and adaptive-p's state,
// grammars, n choices and the prefix cache all ride along; small pools preempt. The workload
// must exercise what it claims to: drafts accepted and drafts refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "protocol/dry_breakers.h"
#include "runner/model/make_model.h"
#include "scheduler/engine.h"
#include "tests/common/test_models.h"
#include "tests/common/test_support.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

// Everything a request hears, in a form two runs can compare exactly.
class OutcomeSink final : public RequestSink {
 public:
  void on_text(std::string_view delta) override { text_ += delta; }
  void on_token(int32_t) override { ++tokens_; }
  void on_logprobs(const TokenLogprobs& lp) override {
    chosen_.push_back(lp.chosen.id);
    logprobs_.push_back(lp.chosen.id);
    logprob_values_.push_back(lp.chosen.logprob);
    for (const LogprobEntry& t : lp.top) {
      logprobs_.push_back(t.id);
      logprob_values_.push_back(t.logprob);
    }
  }
  void on_finish(FinishReason reason, const Usage& usage) override {
    finish_ =
        std::to_string(static_cast<int>(reason)) + "/" + std::to_string(usage.completion_tokens);
  }
  void on_error(ErrorKind, std::string_view message) override { finish_ = std::string(message); }
  std::string summary() const {
    return finish_ + " tokens " + std::to_string(tokens_) + ": " + text_;
  }
  const std::vector<int32_t>& logprob_ids() const { return logprobs_; }
  const std::vector<float>& logprob_values() const { return logprob_values_; }
  const std::vector<int32_t>& chosen() const { return chosen_; }  // the tokens, with logprobs

 private:
  std::string text_, finish_;
  int tokens_ = 0;
  std::vector<int32_t> chosen_;
  std::vector<int32_t> logprobs_;
  std::vector<float> logprob_values_;
};

struct Planned {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  int32_t max_tokens = 0;
  bool grammar = false;
  int32_t choices = 1;  // n: seeds sampling.seed, + 1, ...
};

// Prompts that repeat a random phrase (drafts to find from the start) or not, and
// requests drawing each feature at random.
std::vector<Planned> plan(std::mt19937& rng, int32_t vocab) {
  std::uniform_int_distribution<int32_t> token(3, vocab - 1);
  const auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  std::vector<Planned> out(8);
  for (Planned& p : out) {
    std::vector<int32_t> phrase(2 + pick(6));
    for (int32_t& t : phrase) t = token(rng);
    for (int k = pick(4); k >= 0; --k)
      p.prompt.insert(p.prompt.end(), phrase.begin(), phrase.end());
    for (int k = pick(6); k > 0; --k) p.prompt.push_back(token(rng));
    SamplingParams& s = p.sampling;
    s.seed = rng();
    s.temperature = std::vector<float>{0.0f, 0.0f, 0.5f, 1.0f}[pick(4)];
    if (pick(3) == 0) s.top_k = 8;
    if (pick(4) == 0) s.repetition_penalty = 1.3f;
    if (pick(4) == 0) s.frequency_penalty = 0.4f;
    if (pick(4) == 0) s.presence_penalty = -0.5f;  // encourages repeating: drafts that match
    // llama.cpp's definitions over a window of the prompt and the output, chosen from the
    // seed so that the draws after it (the workload) stay as they were.
    if (s.seed % 3 == 0) {
      s.penalty_last_n =
          std::vector<int32_t>{1, 5, 16, SamplingParams::kWholeHistory}[s.seed / 3 % 4];
    }
    if (s.seed % 5 == 1) {  // XTC, from the seed too (the workload's draws stay as they were)
      s.xtc_probability = 0.5f;
      s.xtc_threshold = 0.02f;
    }
    if (s.seed % 7 == 2) {  // DRY over a window, with a breaker (from the seed too)
      s.dry_multiplier = 0.8f;
      s.dry_allowed_length = 1 + static_cast<int32_t>(s.seed / 7 % 3);
      s.dry_last_n = std::vector<int32_t>{6, 24, SamplingParams::kWholeHistory}[s.seed / 21 % 3];
      auto breakers = std::make_shared<DryBreakers>();
      breakers->add(5, {});
      s.dry_breakers = breakers;
    }
    if (pick(2) == 0) s.logprobs = pick(3);
    // The draw's probabilities in their place, from the seed too.
    s.post_sampling_probs = s.logprobs >= 0 && s.seed % 2 == 1;
    // Mirostat's state, carried from token to token on the worker (from the seed too).
    if (s.seed % 11 == 4) {
      s.mirostat = 1 + static_cast<int32_t>(s.seed / 11 % 2);
      s.mirostat_tau = 2.5f;
      s.mirostat_eta = 0.3f;
    }
    if (s.seed % 13 == 6) {  // adaptive-p's running average, from the seed too
      s.adaptive_target = 0.3f;
      s.adaptive_decay = 0.8f;
    }
    s.ignore_eos = pick(3) != 0;
    if (!s.ignore_eos && pick(2) == 0) s.min_tokens = 1 + pick(6);
    p.max_tokens = 1 + pick(40);
    p.grammar = pick(6) == 0;
    p.choices = pick(4) == 0 ? 2 + pick(2) : 1;
  }
  return out;
}

std::vector<GenerationRequest> requests_of(Engine& engine, const Planned& p,
                                           std::vector<std::shared_ptr<OutcomeSink>>& sinks) {
  // Letters and a full stop: a grammar whose outputs repeat, so its drafts get verified.
  static const char* kGrammar = R"(root ::= [a-d]{3,12} "." )";
  std::vector<GenerationRequest> out;
  for (int32_t c = 0; c < p.choices; ++c) {
    GenerationRequest r;
    r.prompt = p.prompt;
    r.sampling = p.sampling;
    r.sampling.seed = p.sampling.seed + static_cast<uint64_t>(c);
    r.max_tokens = p.max_tokens;
    if (p.grammar) r.grammar = engine.grammars().gbnf(kGrammar);
    sinks.push_back(std::make_shared<OutcomeSink>());
    r.sink = sinks.back();
    out.push_back(std::move(r));
  }
  return out;
}

void expect_same(const OutcomeSink& got, const OutcomeSink& want, size_t request) {
  EXPECT_EQ(got.summary(), want.summary()) << "request " << request;
  EXPECT_EQ(got.logprob_ids(), want.logprob_ids()) << "request " << request;
  EXPECT_EQ(got.logprob_values(), want.logprob_values()) << "request " << request;
}

void drain(Engine& engine) {
  for (int i = 0; i < 1000000 && !engine.scheduler().drained(); ++i) engine.scheduler().run_once();
  ASSERT_TRUE(engine.scheduler().drained());
}

struct Totals {
  uint64_t verify_rows = 0, drafted = 0, accepted = 0, preemptions = 0, hits = 0;
};

void check_law(const std::filesystem::path& model, KvType kv_type, uint32_t seed, Totals& totals) {
  std::mt19937 rng(seed * 104729u + static_cast<uint32_t>(kv_type));
  EngineOptions alone_options;
  alone_options.model = model;
  alone_options.threads = 1;
  alone_options.kv_type = kv_type;
  alone_options.kv_tokens = 1024;
  alone_options.scheduler.prefix_cache = false;
  alone_options.scheduler.overlap = false;
  Engine alone(alone_options);
  const std::vector<Planned> planned = plan(rng, alone.config().n_vocab);
  std::vector<std::shared_ptr<OutcomeSink>> expected;
  for (const Planned& p : planned) {
    std::vector<std::shared_ptr<OutcomeSink>> sinks;
    for (GenerationRequest& r : requests_of(alone, p, sinks)) {
      ASSERT_TRUE(alone.scheduler().submit(std::move(r)).accepted());
      drain(alone);
    }
    expected.insert(expected.end(), sinks.begin(), sinks.end());
  }

  EngineOptions options = alone_options;
  options.threads = 1 + static_cast<int>(rng() % 2);
  options.kv_tokens = std::vector<int64_t>{160, 256, 1024}[rng() % 3];
  options.scheduler.prefix_cache = rng() % 2 == 0;
  options.scheduler.overlap = rng() % 2 == 0;
  options.scheduler.max_step_tokens = std::vector<int32_t>{8, 16, 64}[rng() % 3];
  options.scheduler.max_batch =
      std::min(1 + static_cast<int32_t>(rng() % 6), options.scheduler.max_step_tokens);
  options.scheduler.spec_tokens = std::vector<int32_t>{1, 3, 6}[rng() % 3];
  options.scheduler.spec_ngram_min = 1 + static_cast<int32_t>(rng() % 2);
  options.scheduler.spec_ngram_max =
      options.scheduler.spec_ngram_min + static_cast<int32_t>(rng() % 3);
  options.scheduler.spec_max_batch = std::vector<int32_t>{1, 3, 64}[rng() % 3];
  Engine together(options);
  // Twice over in a random order, arriving between random numbers of steps.
  std::vector<size_t> order(planned.size() * 2);
  for (size_t i = 0; i < order.size(); ++i) order[i] = i % planned.size();
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::pair<size_t, std::vector<std::shared_ptr<OutcomeSink>>>> runs;
  for (size_t i : order) {
    std::vector<std::shared_ptr<OutcomeSink>> sinks;
    ASSERT_TRUE(together.scheduler().submit(requests_of(together, planned[i], sinks)).accepted());
    runs.emplace_back(i, std::move(sinks));
    for (uint32_t turns = rng() % 4; turns > 0; --turns) together.scheduler().run_once();
  }
  drain(together);
  for (const auto& [i, sinks] : runs) {
    size_t first = 0;  // planned[i]'s first choice among the expected outcomes
    for (size_t k = 0; k < i; ++k) first += static_cast<size_t>(planned[k].choices);
    for (size_t c = 0; c < sinks.size(); ++c) expect_same(*sinks[c], *expected[first + c], i);
  }
  // The next turn of each conversation whose tokens were heard: its prompt is the last
  // one's and its output, so the prefix cache offers the blocks the verify rows wrote.
  std::vector<Planned> turns;
  for (size_t i = 0, first = 0; i < planned.size(); first += planned[i++].choices) {
    const std::vector<int32_t>& output = expected[first]->chosen();
    if (output.empty() || planned[i].choices != 1) continue;
    Planned next = planned[i];
    next.prompt.insert(next.prompt.end(), output.begin(), output.end());
    next.prompt.push_back(7);
    turns.push_back(std::move(next));
  }
  for (const Planned& p : turns) {
    std::vector<std::shared_ptr<OutcomeSink>> want, got;
    for (GenerationRequest& r : requests_of(alone, p, want))
      ASSERT_TRUE(alone.scheduler().submit(std::move(r)).accepted());
    drain(alone);
    ASSERT_TRUE(together.scheduler().submit(requests_of(together, p, got)).accepted());
    drain(together);
    expect_same(*got[0], *want[0], planned.size());
  }
  const SchedulerMetrics m = together.scheduler().metrics();
  totals.verify_rows += m.spec_verify_rows;
  totals.drafted += m.spec_draft_tokens;
  totals.accepted += m.spec_accepted_tokens;
  totals.preemptions += m.preemptions;
  totals.hits += m.prefix_hit_tokens;
}

// make-model's `shape` in `dtype`, random weights from `seed`.
std::filesystem::path random_model(const ScratchDir& dir, const std::string& shape,
                                   gguf::TensorType dtype, uint64_t seed) {
  make_model::MakeModelOptions options;
  options.shape = shape;
  options.dtype = dtype;
  options.seed = seed;
  options.out = dir.path() / (shape + ".gguf");
  make_model::write_random_model(options);
  return options.out;
}

void report(const char* what, const Totals& t, bool preempted = true) {
  // Both outcomes of a verify row must have been met, and the pools must have pressed.
  EXPECT_GT(t.accepted, 0u);
  EXPECT_GT(t.drafted, t.accepted);
  if (preempted) {
    EXPECT_GT(t.preemptions, 0u);
  }
  EXPECT_GT(t.hits, 0u);
  std::cout << "  speculation law (" << what << "): " << t.verify_rows << " verify rows, "
            << t.accepted << " of " << t.drafted << " drafts accepted, " << t.preemptions
            << " preemptions, " << t.hits << " prefix-cache tokens\n";
}

TEST(SpeculationLaw, OutputsEqualDecodingWithoutDrafts) {
  ScratchDir dir;
  const auto model = write_tiny_llama(dir.path(), gguf::TensorType::kF16, /*seed=*/3);
  Totals totals;
  for (KvType kv_type : {KvType::kF16, KvType::kBf16, KvType::kF32})
    for (uint32_t seed = 1; seed <= 4; ++seed) check_law(model, kv_type, seed, totals);
  report("llama, f16/bf16/f32 KV", totals);
}

TEST(SpeculationLaw, OutputsEqualDecodingWithoutDraftsWithAQ8KvCache) {
  ScratchDir dir;
  // Q8_0 keys need heads of 32 values at least: make-model's demo shape has 64.
  const auto demo = random_model(dir, "demo", gguf::TensorType::kF16, 5);
  Totals totals;
  for (uint32_t seed = 1; seed <= 3; ++seed) check_law(demo, KvType::kQ8_0, seed, totals);
  report("demo shape, q8_0 KV", totals, /*preempted=*/false);  // its blocks are roomier
}

TEST(SpeculationLaw, OutputsEqualDecodingWithoutDraftsWithQuantizedWeights) {
  ScratchDir dir;
  // Q4_0 weights: the one-row walks of a decode row and the tiles of a verify row.
  const auto tiny = random_model(dir, "tiny", gguf::TensorType::kQ4_0, 7);
  Totals totals;
  for (uint32_t seed = 1; seed <= 3; ++seed) check_law(tiny, KvType::kF16, seed, totals);
  report("tiny, q4_0 weights", totals, /*preempted=*/false);
}

// Sliding-window layers keep only the window in their own block group: a verify row's
// queries reach back over it from each of its positions, and blocks drop out of it as
// accepted drafts move the sequence on.
TEST(SpeculationLaw, SlidingWindowModelsEqualDecodingWithoutDrafts) {
  TANDEM_REQUIRE_SHARED();
  for (const char* name : {"gemma2", "gemma3"}) {
    Totals totals;
    for (uint32_t seed = 1; seed <= 2; ++seed)
      check_law(*shared_dir() / "models" / "families" / (std::string(name) + "-tiny-s777-f16.gguf"),
                KvType::kF16, seed, totals);
    report(name, totals, /*preempted=*/false);
  }
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
