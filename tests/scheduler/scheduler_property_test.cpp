// Randomized properties of the scheduler over many seeds (DESIGN.md laws 1, 2, 4, 5):
// random arrivals, prompt and output lengths, stop strings, EOS and cancellations, run
// turn by turn on the simulated device with overlap on and off. Every request is checked
// against a reference computed one token at a time without any scheduler.
#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "runner/device/simulated_executor.h"
#include "scheduler/scheduler.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using testing::ByteTokenizer;
using testing::kFakeEos;
using testing::RecordingSink;

SimulatedDeviceConfig device_config() {
  SimulatedDeviceConfig c;
  c.vocab_size = 260;
  c.context_length = 96;
  c.kv_block_size = 16;
  c.kv_blocks = 24;
  c.eog_ids = {kFakeEos};
  c.eos_probability = 0.03;
  // Letters that make stop strings likely, a space, the two bytes of "é" (so characters
  // split across tokens) and 0xFF, which is never valid UTF-8.
  c.alphabet = {'a', 'b', 'c', 'a', 'b', ' ', 0xC3, 0xA9, 0xFF};
  return c;
}

const std::vector<std::string> kStopPool = {"ab",  "cc",           "a b", "\xC3\xA9",
                                            "bca", "\xEF\xBF\xBD", "aaa", "b c"};

struct Planned {
  int arrival_turn = 0;
  int cancel_turn = -1;  // -1: never
  GenerationRequest request;
};

struct Expected {
  std::string text;
  FinishReason reason = FinishReason::kStop;
  int32_t completion_tokens = 0;
  // What has been streamed after n tokens, for n below the finishing count: the text so
  // far minus the longest tail that could still begin a stop string.
  std::vector<std::string> streamed_after;
};

size_t earliest_stop(const std::string& text, const std::vector<std::string>& stops) {
  size_t first = std::string::npos;
  for (const auto& s : stops) first = std::min(first, text.find(s));
  return first;
}

Expected reference(const SimulatedExecutor& sim, const Tokenizer& tok, int32_t context,
                   const GenerationRequest& req) {
  Expected e;
  const int32_t prompt_len = static_cast<int32_t>(req.prompt.size());
  const int32_t max_new = std::min(*req.max_tokens, context - prompt_len);
  Detokenizer detok(tok);
  std::string text;
  int32_t last = req.prompt.back();
  int32_t pos = prompt_len - 1;
  auto held_tail = [&](const std::string& t) {
    size_t keep = 0;
    for (const auto& s : req.stop) {
      for (size_t n = std::min(s.size() - 1, t.size()); n > keep; --n) {
        if (t.compare(t.size() - n, n, s, 0, n) == 0) {
          keep = n;
          break;
        }
      }
    }
    return t.substr(0, t.size() - keep);
  };
  auto end = [&](FinishReason reason, int32_t n) {
    const size_t stop_at = earliest_stop(text, req.stop);
    e.text = stop_at == std::string::npos ? text : text.substr(0, stop_at);
    e.reason = stop_at == std::string::npos ? reason : FinishReason::kStop;
    e.completion_tokens = n;
    return e;
  };
  e.streamed_after.push_back("");
  for (int32_t n = 1; n <= max_new; ++n) {
    const int32_t t = sim.next_token(last, pos, req.sampling);
    last = t;
    ++pos;
    if (t == kFakeEos && !req.sampling.ignore_eos) {
      text += detok.flush();
      return end(FinishReason::kStop, n);
    }
    text += detok.push(t);
    if (earliest_stop(text, req.stop) != std::string::npos) return end(FinishReason::kStop, n);
    e.streamed_after.push_back(held_tail(text));
  }
  text += detok.flush();
  return end(FinishReason::kLength, max_new);
}

struct Outcome {
  std::map<int, std::shared_ptr<RecordingSink>> sinks;  // by plan index
  SchedulerMetrics metrics;
};

// A random load: arrivals, prompts, lengths, sampling, stops and cancellations.
std::vector<Planned> random_plan(uint32_t seed, SchedulerOptions& options) {
  std::mt19937 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<>(lo, hi)(rng); };
  std::vector<Planned> plan(uniform(1, 14));
  for (auto& p : plan) {
    p.arrival_turn = uniform(0, 40);
    if (uniform(0, 4) == 0) p.cancel_turn = p.arrival_turn + uniform(0, 30);
    const int prompt_len = uniform(1, 40);
    for (int i = 0; i < prompt_len; ++i) {
      p.request.prompt.push_back(device_config().alphabet[uniform(0, 8)]);
    }
    p.request.max_tokens = uniform(1, 70);
    p.request.sampling.temperature = uniform(0, 1) ? 0.8f : 0.0f;
    p.request.sampling.seed = rng();
    p.request.sampling.ignore_eos = uniform(0, 5) == 0;
    for (int n = uniform(0, 2); n > 0; --n) p.request.stop.push_back(kStopPool[uniform(0, 7)]);
  }
  options.max_batch = uniform(1, 8);
  options.max_step_tokens = uniform(4, 48);
  options.max_queue = 64;
  return plan;
}

Outcome run(const std::vector<Planned>& plan, SchedulerOptions options) {
  ByteTokenizer tokenizer;
  Device device(std::make_unique<SimulatedExecutor>(device_config()));
  Scheduler scheduler(device, tokenizer, options);
  Outcome out;
  std::map<int, uint64_t> ids;
  size_t submitted = 0;
  for (int turn = 0; turn < 100000; ++turn) {
    for (size_t i = 0; i < plan.size(); ++i) {
      if (plan[i].arrival_turn == turn) {
        auto sink = std::make_shared<RecordingSink>();
        GenerationRequest r = plan[i].request;
        r.sink = sink;
        SubmitResult result = scheduler.submit(std::move(r));
        EXPECT_TRUE(result.accepted()) << result.message;
        ids[static_cast<int>(i)] = result.id;
        out.sinks[static_cast<int>(i)] = sink;
        ++submitted;
      }
      if (plan[i].cancel_turn == turn) scheduler.cancel(ids.at(static_cast<int>(i)));
    }
    scheduler.run_once();
    if (submitted == plan.size() && scheduler.drained()) break;
  }
  EXPECT_TRUE(scheduler.drained());
  out.metrics = scheduler.metrics();
  return out;
}

TEST(SchedulerProperties, OutputsMatchTheReferenceAndAreIdenticalWithOverlapOnAndOff) {
  ByteTokenizer tokenizer;
  const SimulatedExecutor sim(device_config());
  const int32_t context = device_config().context_length;
  int cancelled_mid_stream = 0;
  uint64_t discarded = 0, chained = 0;
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    SchedulerOptions options;
    const std::vector<Planned> plan = random_plan(seed, options);
    options.overlap = true;
    const Outcome on = run(plan, options);
    options.overlap = false;
    const Outcome off = run(plan, options);

    for (size_t i = 0; i < plan.size(); ++i) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " request " + std::to_string(i));
      const Expected want = reference(sim, tokenizer, context, plan[i].request);
      for (const Outcome* o : {&on, &off}) {
        const RecordingSink& got = *o->sinks.at(static_cast<int>(i));
        ASSERT_TRUE(got.ended());
        EXPECT_EQ(got.error(), "");
        EXPECT_EQ(got.events_after_end(), 0);
        EXPECT_EQ(got.empty_deltas(), 0);
        EXPECT_EQ(got.usage().prompt_tokens, static_cast<int32_t>(plan[i].request.prompt.size()));
        if (got.reason() == FinishReason::kCancelled) {
          ASSERT_GE(plan[i].cancel_turn, 0);
          const int32_t n = got.usage().completion_tokens;
          ASSERT_LT(n, want.completion_tokens);
          EXPECT_EQ(got.text(), want.streamed_after.at(n));
          cancelled_mid_stream += n > 0;
        } else {
          EXPECT_EQ(got.text(), want.text);
          EXPECT_EQ(got.reason(), want.reason);
          EXPECT_EQ(got.usage().completion_tokens, want.completion_tokens);
        }
      }
      // Law 1: identical in both modes (a cancellation lands where the turns put it, so
      // only requests that ran to their end are compared).
      const RecordingSink& a = *on.sinks.at(static_cast<int>(i));
      const RecordingSink& b = *off.sinks.at(static_cast<int>(i));
      if (a.reason() != FinishReason::kCancelled && b.reason() != FinishReason::kCancelled) {
        EXPECT_EQ(a.text(), b.text());
        EXPECT_EQ(a.usage().completion_tokens, b.usage().completion_tokens);
      }
    }
    for (const Outcome* o : {&on, &off}) {
      EXPECT_EQ(o->metrics.kv_blocks_used, 0);  // law 5
      EXPECT_EQ(o->metrics.requests_finished, plan.size());
      EXPECT_EQ(o->metrics.running, 0);
      EXPECT_EQ(o->metrics.waiting, 0);
    }
    uint64_t breaks = 0;
    for (uint64_t b : on.metrics.chain_breaks) breaks += b;
    EXPECT_EQ(on.metrics.steps, on.metrics.chained_steps + breaks);
    EXPECT_EQ(off.metrics.chained_steps, 0u);
    // Without overlap a token is sampled past a finish only when a cancel lands between a
    // step's finalize and its processing.
    const auto cancels = std::count_if(plan.begin(), plan.end(),
                                       [](const Planned& p) { return p.cancel_turn >= 0; });
    EXPECT_LE(off.metrics.discarded_tokens, static_cast<uint64_t>(cancels));
    discarded += on.metrics.discarded_tokens;
    chained += on.metrics.chained_steps;
  }
  // The seeds must exercise what they claim to.
  EXPECT_GT(cancelled_mid_stream, 3);
  EXPECT_GT(discarded, 10u);
  EXPECT_GT(chained, 500u);
}

TEST(SchedulerProperties, OnItsOwnThreadWithConcurrentClientsOutputsMatchTheReference) {
  ByteTokenizer tokenizer;
  const SimulatedExecutor sim(device_config());
  for (uint32_t seed = 100; seed < 112; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    SchedulerOptions options;
    const std::vector<Planned> plan = random_plan(seed, options);
    options.overlap = seed % 2 == 0;
    Device device(std::make_unique<SimulatedExecutor>(device_config()));
    Scheduler scheduler(device, tokenizer, options);
    scheduler.start();
    std::vector<std::shared_ptr<RecordingSink>> sinks(plan.size());
    std::vector<uint64_t> ids(plan.size());
    // Two clients submit half the requests each while the loop runs; the first also
    // cancels the requests the plan cancels, as soon as it has their ids.
    auto client = [&](size_t first) {
      for (size_t i = first; i < plan.size(); i += 2) {
        sinks[i] = std::make_shared<RecordingSink>();
        GenerationRequest r = plan[i].request;
        r.sink = sinks[i];
        SubmitResult result = scheduler.submit(std::move(r));
        ASSERT_TRUE(result.accepted());
        ids[i] = result.id;
        if (plan[i].cancel_turn >= 0) scheduler.cancel(ids[i]);
      }
    };
    std::thread a(client, 0), b(client, 1);
    a.join();
    b.join();
    for (auto& sink : sinks) sink->wait();
    scheduler.stop();
    for (size_t i = 0; i < plan.size(); ++i) {
      const Expected want =
          reference(sim, tokenizer, device_config().context_length, plan[i].request);
      const RecordingSink& got = *sinks[i];
      EXPECT_EQ(got.events_after_end(), 0);
      if (got.reason() == FinishReason::kCancelled) {
        ASSERT_LT(got.usage().completion_tokens, want.completion_tokens);
        EXPECT_EQ(got.text(), want.streamed_after.at(got.usage().completion_tokens));
      } else {
        EXPECT_EQ(got.text(), want.text);
        EXPECT_EQ(got.reason(), want.reason);
        EXPECT_EQ(got.usage().completion_tokens, want.completion_tokens);
      }
    }
    EXPECT_EQ(scheduler.metrics().kv_blocks_used, 0);
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
