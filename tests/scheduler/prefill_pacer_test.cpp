// Fair scheduling under long prompts (issue 15): the pacer's arithmetic on given step
// times, and the scheduler cutting a long prompt into small chunks while other requests
// decode (auto) where a fixed chunk would stall them, with the same texts either way.
#include "scheduler/prefill_pacer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <deque>
#include <iostream>
#include <limits>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "scheduler/scheduler.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using testing::ByteTokenizer;
using testing::fake_device_info;
using testing::RecordingSink;

// Steps of a known cost model: 3 ms + 30 us a decode row + 0.5 us a key the rows read (a
// row at position p reads p + 1), and 30 us a prompt token + 0.2 us a key its tokens read.
double decode_seconds(const StepLoad& load) {
  return 0.003 + 30e-6 * load.decode_rows + 0.5e-6 * load.decode_keys;
}
double model_seconds(const StepLoad& load) {
  return decode_seconds(load) + 30e-6 * load.prompt_tokens + 0.2e-6 * load.prompt_keys;
}

StepLoad decode_load(int32_t rows, int32_t position) {
  StepLoad load;
  for (int32_t i = 0; i < rows; ++i) load.add_decode(position);
  return load;
}

StepLoad mixed_load(int32_t rows, int32_t position, int32_t prompt_first, int32_t prompt_n) {
  StepLoad load = decode_load(rows, position);
  load.add_prompt(prompt_first, prompt_n);
  return load;
}

void record_model_step(PrefillPacer& pacer, const StepLoad& load) {
  pacer.record(model_seconds(load), load);
}

// The largest chunk from `position` whose part of a step stays within the allowance
// (kShare * P * the decode rows' time), by counting up: the reference for prompt_budget's
// quadratic. At least kMinChunk, as the pacer floors it.
int32_t reference_budget(const StepLoad& decode, int32_t waiting, int32_t position) {
  const double allowance = PrefillPacer::kShare * waiting * decode_seconds(decode);
  int32_t n = 0;
  while (30e-6 * (n + 1) + 0.2e-6 * StepLoad::keys_of_chunk(position, n + 1) <= allowance) ++n;
  return std::max(n, PrefillPacer::kMinChunk);
}

// Decode-only steps of varied rows and contexts, then steps with prompt chunks of varied
// sizes and positions beside varied decode rows: enough to determine both models.
void record_varied_steps(PrefillPacer& pacer, int n = 40) {
  record_model_step(pacer, mixed_load(0, 0, 0, 512));  // the first prompt, nobody decoding
  for (int i = 0; i < n; ++i) {
    const int32_t rows = 1 + i % 16, context = 200 + 37 * i;
    record_model_step(pacer, decode_load(rows, context + 50 * (i % 3)));
    record_model_step(pacer, mixed_load(rows, context, 64 * (i % 9), 16 + 23 * (i % 7)));
  }
}

TEST(CostFit, RecoversTheCostsOfVariedSamplesAndSplitsCollinearOnesWithoutGoingNegative) {
  CostFit<3> fit(0.97);
  for (int i = 0; i < 30; ++i) {
    const CostFit<3>::Vec x{1.0, (i % 5) * 0.3, (i % 7) * 0.2};
    fit.record(x, 2 + 3 * x[1] + 5 * x[2]);
  }
  EXPECT_NEAR(fit.cost()[0], 2, 1e-4);
  EXPECT_NEAR(fit.cost()[1], 3, 1e-4);
  EXPECT_NEAR(fit.cost()[2], 5, 1e-4);
  // Features that always move together: the fit predicts their samples and splits the
  // cost between them, neither negative.
  CostFit<2> together(0.97);
  for (int i = 1; i < 10; ++i) together.record({1.0 * i, 2.0 * i}, 10.0 * i);
  EXPECT_NEAR(together.predict({3, 6}), 30, 1e-3);
  EXPECT_GE(together.cost()[0], 0);
  EXPECT_GE(together.cost()[1], 0);
  // Samples that a negative cost would fit best: the best fit of costs >= 0 instead.
  CostFit<2> noisy(1.0);  // nothing forgotten: plain least squares
  for (int i = 1; i < 10; ++i) noisy.record({1.0, 1.0 * i}, 10.0 - i);
  EXPECT_GE(noisy.cost()[1], 0);
  EXPECT_NEAR(noisy.predict({1, 5}), 5, 1e-3);  // the mean: costs (5, 0)
}

TEST(PrefillPacer, TakesTheWholeStepUntilADecodeStepThenProbesUntilAPromptIsPriced) {
  PrefillPacer pacer(512, 0, true);
  EXPECT_EQ(pacer.prompt_budget(decode_load(8, 100)), 512);
  EXPECT_EQ(pacer.prompt_budget(StepLoad{}), 512);
  record_model_step(pacer, mixed_load(0, 0, 0, 64));  // a prompt alone: nothing to subtract
  EXPECT_EQ(pacer.prompt_budget(decode_load(8, 100)), 512);
  record_model_step(pacer, decode_load(8, 100));
  EXPECT_EQ(pacer.prompt_budget(decode_load(8, 100)), PrefillPacer::kProbeChunk);
  EXPECT_EQ(pacer.lone_prompt_budget(), PrefillPacer::kProbeChunk);
  EXPECT_EQ(pacer.prompt_budget(StepLoad{}), 512);  // nobody decodes: nobody waits
  record_model_step(pacer, mixed_load(8, 101, 64, 32));
  EXPECT_GT(pacer.prompt_budget(decode_load(8, 100)), PrefillPacer::kProbeChunk);
}

// A probe step that took no longer than the decode model's time for its rows says nothing
// of the prompt (its part lost in the noise, or the decode model too high): the next probe
// is twice as long, up to the step budget, until one prices the prompt.
TEST(PrefillPacer, AProbeLostInTheNoiseDoublesUntilAPromptIsPriced) {
  PrefillPacer pacer(512, 0, true);
  record_model_step(pacer, decode_load(8, 100));
  const StepLoad decode = decode_load(8, 100);
  int32_t expected = PrefillPacer::kProbeChunk;
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(pacer.prompt_budget(decode), expected);
    StepLoad load = decode;
    load.add_prompt(0, expected);
    pacer.record(model_seconds(decode) * 0.99, load);  // faster than its decode rows alone
    expected = std::min(2 * expected, 512);
  }
  EXPECT_EQ(pacer.prompt_budget(decode), 512);
  StepLoad load = decode;
  load.add_prompt(0, 512);
  record_model_step(pacer, load);  // priced: paced from here
  EXPECT_LT(pacer.prompt_budget(decode), 512);
  EXPECT_GE(pacer.prompt_budget(decode), PrefillPacer::kMinChunk);
}

// A varied run of steps determines both models: their times come back, and the budget
// keeps a mixed step's prompt part within 0.8 of the decode rows' time.
TEST(PrefillPacer, FitsTheStepModelsAndKeepsAMixedStepWithinAboutTwoDecodeSteps) {
  PrefillPacer pacer(4096, 0, true);
  record_varied_steps(pacer);
  for (const StepLoad& load : {decode_load(16, 1000), mixed_load(4, 300, 700, 100),
                               mixed_load(0, 0, 0, 1024), decode_load(1, 50)})
    EXPECT_NEAR(pacer.predict(load), model_seconds(load), 1e-4 * model_seconds(load));
  for (const auto& [rows, context, position] :
       {std::tuple{16, 1000, 0}, {16, 1000, 800}, {1, 50, 0}, {8, 4000, 3000}}) {
    const StepLoad decode = decode_load(rows, context);
    const int32_t budget = pacer.prompt_budget(decode, 1, position);
    EXPECT_NEAR(budget, reference_budget(decode, 1, position), 1) << rows << " " << context;
    StepLoad step = decode;
    step.add_prompt(position, budget);
    EXPECT_LE(model_seconds(step), 1.8 * model_seconds(decode) * (1 + 1e-3));
  }
  EXPECT_EQ(pacer.prompt_budget(StepLoad{}, 1, 0), 4096);
}

// The regression the models replaced: while prompts queue, no step is decode-only, so an
// average over decode-only steps kept their time (a few rows at short contexts) while
// sixteen rows decoded at context 1000, three times dearer. The decode model prices the
// rows the step carries now.
TEST(PrefillPacer, TheDecodeRowsAreThoseOfTheStepNotTheLastDecodeOnlySteps) {
  PrefillPacer pacer(4096, 0, true);
  record_model_step(pacer, mixed_load(0, 0, 0, 512));
  for (int i = 0; i < 12; ++i) record_model_step(pacer, decode_load(1 + i % 4, 100 + 61 * (i % 5)));
  for (int i = 0; i < 60; ++i)
    record_model_step(pacer,
                      mixed_load(4 + i % 13, 900 + 5 * i, 100 * (i % 10), 20 + 30 * (i % 5)));
  const StepLoad sixteen = decode_load(16, 1000);
  EXPECT_NEAR(pacer.predict(sixteen), model_seconds(sixteen), 1e-3 * model_seconds(sixteen));
  EXPECT_NEAR(pacer.prompt_budget(sixteen, 1, 0), reference_budget(sixteen, 1, 0), 1);
  EXPECT_GT(model_seconds(sixteen), 3 * model_seconds(decode_load(4, 344)));
}

// A prompt token reads more keys the deeper it sits in its prompt, so a chunk deep in a
// long prompt is cut shorter than the prompt's first.
TEST(PrefillPacer, AChunkDeepInALongPromptIsShorterThanItsFirst) {
  PrefillPacer pacer(4096, 0, true);
  record_varied_steps(pacer);
  const StepLoad decode = decode_load(16, 2000);
  const int32_t first = pacer.prompt_budget(decode, 1, 0);
  const int32_t deep = pacer.prompt_budget(decode, 1, 3500);
  EXPECT_LT(deep, first * 0.6);
  EXPECT_NEAR(deep, reference_budget(decode, 1, 3500), 1);
}

TEST(PrefillPacer, ClampsToAFloorAndTheStepBudgetAndIgnoresNonsense) {
  PrefillPacer slow(512, 0, true);
  slow.record(0.001, decode_load(4, 10));
  for (int32_t n : {100, 200})  // about 1 ms a token: not one fits in 0.8 ms
    slow.record(0.001 + 0.001 * n, mixed_load(4, 10, 0, n));
  EXPECT_EQ(slow.prompt_budget(decode_load(4, 10)), PrefillPacer::kMinChunk);
  PrefillPacer fast(512, 0, true);
  fast.record(0.001, decode_load(4, 10));
  for (int32_t n : {128, 256, 512})  // 1 us a token beyond the step's cost: ~800 fit
    fast.record(0.001 + 1e-6 * n, mixed_load(4, 10, 0, n));
  EXPECT_EQ(fast.prompt_budget(decode_load(4, 10)), 512);
  const StepLoad probe = mixed_load(4, 10, 0, 100);
  const double before = fast.predict(probe);
  fast.record(std::nan(""), mixed_load(0, 0, 0, 10));
  fast.record(-1, decode_load(4, 10));
  fast.record(0, mixed_load(0, 0, 0, 10));
  fast.record(std::numeric_limits<double>::infinity(), decode_load(4, 10));
  fast.record(0.0005, mixed_load(4, 10, 0, 10));  // faster than its decode rows alone
  EXPECT_EQ(fast.predict(probe), before);
}

// One step far off the model (a page-fault storm, another process on the core) counts as
// within kOutlier of the prediction: a hundred times the time moves the fit by tens of
// percent (the step weighs about 1/20 of the fit, at three times), not a hundredfold.
TEST(PrefillPacer, AStepFarOffTheModelBendsItOnlyALittle) {
  PrefillPacer pacer(4096, 0, true);
  record_varied_steps(pacer);
  const StepLoad decode = decode_load(8, 500), mixed = mixed_load(8, 500, 300, 64);
  const double decode_before = pacer.predict(decode), mixed_before = pacer.predict(mixed);
  pacer.record(100 * model_seconds(decode), decode);
  pacer.record(100 * model_seconds(mixed), mixed);
  EXPECT_LT(pacer.predict(decode), 1.5 * decode_before);
  EXPECT_LT(pacer.predict(mixed), 1.5 * mixed_before);
}

// Each request waiting for its first token (prefilling or queued) adds a share; a queue
// (kQueue or more of them) behind a prompt whose prefill is half the step budget or more
// takes that half at least, wherever the prompt stands (its last chunk too) and before any
// clock's share of the steps says so: pacing would only make each of them wait longer for
// the same cost to the streams. Behind a short prompt (or one of unknown length) the shares
// alone decide, so short prompts are not packed into one long step (prefill_pacer.h). A
// lone prompt stays paced, deeper chunks shorter.
TEST(PrefillPacer, EachWaitingRequestAddsAShareAndAQueueBehindALongPromptTakesHalfTheStep) {
  PrefillPacer pacer(512, 0, true);
  record_varied_steps(pacer, 20);
  const StepLoad decode = decode_load(8, 0);
  constexpr double kOffClock = PrefillPacer::kNoClock;
  const int32_t one = pacer.prompt_budget(decode, 1);
  EXPECT_NEAR(one, reference_budget(decode, 1, 0), 1);                 // 0.8 * 3.24 ms / 30 us: 86
  EXPECT_EQ(pacer.prompt_budget(decode, 0), one);                      // none waiting counts as one
  EXPECT_EQ(pacer.prompt_budget(decode, 1, 0, kOffClock, 4000), one);  // a lone long prompt
  EXPECT_LT(pacer.prompt_budget(decode, 1, 3000), one);
  ASSERT_LT(reference_budget(decode, PrefillPacer::kQueue, 0), 256);  // shares alone: less
  int32_t last = one;
  for (int32_t waiting : {PrefillPacer::kQueue, 4, 8, 12, 16}) {
    const int32_t shares = pacer.prompt_budget(decode, waiting);
    EXPECT_NEAR(shares, std::min(512, reference_budget(decode, waiting, 0)), 1) << waiting;
    EXPECT_GE(shares, last) << waiting;
    last = shares;
    EXPECT_EQ(pacer.prompt_budget(decode, waiting, 0, kOffClock, 255), shares) << waiting;
    EXPECT_EQ(pacer.prompt_budget(decode, waiting, 0, kOffClock, 256), std::max(256, shares))
        << waiting;
    EXPECT_EQ(pacer.prompt_budget(decode, waiting, 0, 100.0, 1000), std::max(256, shares))
        << waiting;  // on a clock
  }
  // The tokens a share buys grow a little slower than the shares, as each chunk's later
  // tokens read more keys.
  const int32_t two = pacer.prompt_budget(decode, 2), four = pacer.prompt_budget(decode, 4);
  EXPECT_GT(two, 1.5 * one);
  EXPECT_GT(four, 1.5 * two);
  EXPECT_GT(pacer.prompt_budget(decode, 16), 300);  // shares past the floor
  EXPECT_EQ(pacer.prompt_budget(decode, 32), 512);  // the step budget caps them
  EXPECT_EQ(pacer.prompt_budget(decode, PrefillPacer::kQueue, 3000, kOffClock, 1000), 256);
  EXPECT_FALSE(pacer.sustained(100.0));
  EXPECT_EQ(pacer.prompt_budget(StepLoad{}, 4), 512);  // nobody decoding: the whole step
  PrefillPacer unpriced(512, 0, true);                 // a decode model, no prompt model yet
  unpriced.record(0.010, decode_load(8, 0));
  EXPECT_EQ(unpriced.prompt_budget(decode, 1), PrefillPacer::kProbeChunk);
  EXPECT_EQ(unpriced.prompt_budget(decode, 2, 0, kOffClock, 1000), 256);
  PrefillPacer fixed(512, 96, true);
  fixed.record(0.010, decode_load(8, 0));
  fixed.record(0.020, mixed_load(8, 0, 0, 64));
  EXPECT_EQ(fixed.prompt_budget(decode, 4, 0, kOffClock, 1000), 96);  // a fixed chunk stays
}

// A short prompt first in line (under half the step budget) after a long cached prefix
// (from half the budget on), whose whole prefill costs more than a lone prompt's share, its
// tokens dear (a chat turn after its cached history; 32-token suffixes after a cached
// 1024-token prefix): taken whole and alone where it costs two shares at most, else at a
// lone prompt's pace; the queue behind it adds no shares, so such prompts are not packed into
// one long step that all of them wait on (prefill_pacer.h). From the start, or within a
// share, a short prompt leaves the shares as they were.
TEST(PrefillPacer, AShortPromptAfterACachedPrefixGoesWholeWithinTwoSharesAndAQueueAddsNothing) {
  PrefillPacer pacer(512, 0, true);
  record_varied_steps(pacer, 20);
  const StepLoad decode = decode_load(8, 0);
  constexpr double kOffClock = PrefillPacer::kNoClock;
  const int32_t eight = pacer.prompt_budget(decode, 8);
  ASSERT_GT(eight, 256);
  // From the start, dear or not: the queue's shares (200 tokens, 10 ms, four shares).
  EXPECT_EQ(pacer.prompt_budget(decode, 8, 0, kOffClock, 200), eight);
  // 16 tokens after 512: 2.2 ms, within a share (2.6 ms): the shares from there.
  EXPECT_EQ(pacer.prompt_budget(decode, 8, 512, kOffClock, 16),
            pacer.prompt_budget(decode, 8, 512));
  // 24 tokens after 600: 3.7 ms, between one and two shares: whole, queue or not, where a
  // lone pace from there is 17.
  const int32_t lone_600 = pacer.prompt_budget(decode, 1, 600);
  ASSERT_LT(lone_600, 24);
  for (int32_t waiting : {1, 2, 8})
    EXPECT_EQ(pacer.prompt_budget(decode, waiting, 600, kOffClock, 24), 24) << waiting;
  // 32 after a 1024-token prefix (7.6 ms, over two shares): a lone pace from there.
  EXPECT_EQ(pacer.prompt_budget(decode, 8, 1024, kOffClock, 32),
            pacer.prompt_budget(decode, 1, 1024));
  EXPECT_LT(pacer.prompt_budget(decode, 1, 1024), 32);
  // A long prompt is not short: the queue's floor and shares.
  EXPECT_EQ(pacer.prompt_budget(decode, 8, 1024, kOffClock, 256),
            std::max(256, pacer.prompt_budget(decode, 8, 1024)));
}

TEST(PrefillPacer, AFixedChunkIsKeptWhileRequestsDecode) {
  PrefillPacer pacer(512, 96, true);
  pacer.record(0.010, decode_load(8, 0));
  pacer.record(0.020, mixed_load(8, 0, 0, 64));
  EXPECT_EQ(pacer.prompt_budget(decode_load(8, 0)), 96);
  EXPECT_EQ(pacer.prompt_budget(StepLoad{}), 512);
  EXPECT_EQ(PrefillPacer(64, 96, true).prompt_budget(decode_load(8, 0)), 64);
}

TEST(PrefillPacer, UnpacedItGivesTheWholeStepWhateverItMeasured) {
  PrefillPacer pacer(512, 0, false);
  pacer.record(0.010, decode_load(8, 0));
  pacer.record(0.020, mixed_load(8, 0, 0, 64));
  EXPECT_EQ(pacer.prompt_budget(decode_load(8, 0)), 512);
}

// Steps on a clock: a lone prompt fed at its pace keeps the prompts' share of the steps at
// about kShare / (1 + kShare) = 0.44, under kSustained, so it stays paced to the end; a
// stretch of steps mostly of prompt tokens (a queue of them) turns pacing off (at least
// half the step budget) until it leaves the window.
TEST(PrefillPacer, ASustainedShareOfPromptTokensTurnsPacingOffUntilItLeavesTheWindow) {
  PrefillPacer pacer(512, 0, true);
  record_varied_steps(pacer);  // the models, off the clock
  double now = 100;
  auto step = [&](const StepLoad& load) {
    now += model_seconds(load);
    pacer.record(model_seconds(load), load, now);
  };
  for (int i = 0; i < 50; ++i) step(decode_load(8, 200 + i));
  EXPECT_EQ(pacer.prompt_share(now), 0);
  const StepLoad decode = decode_load(8, 300);
  const int32_t paced = pacer.prompt_budget(decode, 1, 0, now);
  EXPECT_NEAR(paced, reference_budget(decode, 1, 0), 1);
  EXPECT_LT(paced, 256);
  // A 6000-token prompt alone, each step taking the budget.
  for (int32_t fed = 0; fed < 6000;) {
    const int32_t n = pacer.prompt_budget(decode, 1, fed, now);
    EXPECT_FALSE(pacer.sustained(now)) << fed;
    EXPECT_NEAR(n, reference_budget(decode, 1, fed), 1) << fed;
    StepLoad load = decode;
    load.add_prompt(fed, n);
    step(load);
    fed += n;
  }
  EXPECT_GT(pacer.prompt_share(now), 0.3);
  EXPECT_LT(pacer.prompt_share(now), PrefillPacer::kSustained);
  // Then eight prompts waiting: their shares give prompt tokens 6.4 decode steps' time a
  // step (0.86 of it), and within the window (the lone prompt's stretch still in it) the
  // share passes kSustained.
  const double queue_from = now;
  for (int i = 0; i < 4000 && !pacer.sustained(now); ++i) {
    StepLoad load = decode;
    load.add_prompt(0, pacer.prompt_budget(decode, 8, 0, now));
    step(load);
  }
  EXPECT_GE(pacer.prompt_share(now), PrefillPacer::kSustained);
  EXPECT_LT(now - queue_from, PrefillPacer::kSustainWindow);
  EXPECT_EQ(pacer.prompt_budget(decode, 1, 0, now), 256);
  EXPECT_EQ(pacer.prompt_budget(decode, 1, 0), paced);  // without a clock: never sustained
  EXPECT_EQ(pacer.lone_prompt_budget(), paced);         // /metrics: the paced budget
  EXPECT_EQ(pacer.prompt_budget(StepLoad{}, 1, 0, now), 512);
  // Ten seconds of decoding later the window holds decode steps only.
  const double until = now + PrefillPacer::kSustainWindow;
  while (now <= until) step(decode);
  EXPECT_EQ(pacer.prompt_share(now), 0);
  EXPECT_EQ(pacer.prompt_budget(decode, 1, 0, now), paced);
  // The share is of the window's steps, whatever came before: no clock goes back.
  EXPECT_EQ(pacer.prompt_share(now + 100), 0);
}

// Long prompts that keep arriving one at a time beside the streams (kArrivals of them begun
// in the window) are a stream of prompts, as a queue is: behind a long prompt a step takes
// half the step budget at least, though only one waits, where a lone long prompt, short
// prompts however many, a short remainder, or arrivals out of the window leave it paced.
TEST(PrefillPacer, AStreamOfLongPromptsTakesHalfTheStepLikeAQueue) {
  PrefillPacer pacer(512, 0, true);
  record_varied_steps(pacer, 20);
  const StepLoad decode = decode_load(8, 0);
  const int32_t paced = pacer.prompt_budget(decode, 1, 0, 100, 1024);
  ASSERT_LT(paced, 256);
  for (int i = 0; i < 10; ++i) pacer.prompt_began(99, 255);  // short: not counted
  EXPECT_EQ(pacer.arrivals(100), 0);
  pacer.prompt_began(95, 256);
  pacer.prompt_began(97, 1024);
  EXPECT_EQ(pacer.arrivals(100), 2);
  EXPECT_EQ(pacer.prompt_budget(decode, 1, 0, 100, 1024), paced);
  pacer.prompt_began(99, 4000);
  EXPECT_EQ(pacer.arrivals(100), PrefillPacer::kArrivals);
  EXPECT_EQ(pacer.prompt_budget(decode, 1, 0, 100, 1024), 256);
  EXPECT_EQ(pacer.prompt_budget(decode, 1, 0, 100, 256), 256);
  EXPECT_EQ(pacer.prompt_budget(decode, 1, 900, 100, 1024), 256);  // its last chunk too
  EXPECT_EQ(pacer.prompt_budget(decode, 1, 0, 100, 255), paced);   // a short prompt
  EXPECT_EQ(pacer.prompt_budget(decode, 1, 0, PrefillPacer::kNoClock, 1024), paced);
  // The first arrival leaves the window (at 95 + kSustainWindow): paced again.
  const double later = 95 + PrefillPacer::kSustainWindow;
  EXPECT_EQ(pacer.arrivals(later - 0.01), 3);
  EXPECT_EQ(pacer.arrivals(later), 2);
  EXPECT_EQ(pacer.prompt_budget(decode, 1, 0, later, 1024), paced);
  pacer.prompt_began(PrefillPacer::kNoClock, 1024);  // off the clock: not counted
  EXPECT_EQ(pacer.arrivals(later), 2);
}

// A model whose step takes base + per_token * (tokens fed), as a real step's cost grows
// with its tokens; it records what each step carried of the long request. The time is
// modelled, not spent: each step reports it (StepResult::seconds), and the scheduler's
// pacer reads a clock (SchedulerOptions::clock) that the steps processed so far moved on
// (step_processed, from SchedulerOptions::after_process), so it never depends on how far
// the worker has run ahead. Sleeping it made the pace follow the machine's load (a TSan
// run in CI paced a 274-token chunk where the model gives 83).
class TimedExecutor : public StepExecutor {
 public:
  struct Shape {
    int32_t other_rows = 0;   // rows of the other requests
    int32_t long_prompt = 0;  // prompt tokens of the long request
    int32_t late_prompt = 0;  // of those, the late request's (late_id)
  };
  // Requests long_id .. long_id + n_long - 1 are the long prompts.
  // per_token_us: a token's part of a step (3 ms of base besides).
  TimedExecutor(uint64_t long_id, int32_t n_long, int32_t long_len, int64_t per_token_us = 30)
      : long_id_(long_id), n_long_(n_long), long_len_(long_len), per_token_us_(per_token_us) {}
  DeviceInfo info() const override { return fake_device_info(2048, 512); }
  void execute_step(const StepPlan& plan, StepResult& result) override {
    result.seconds = 1e-6 * static_cast<double>(run(plan, result.tokens));
  }
  void execute(const StepPlan& plan, std::span<int32_t> tokens) override { run(plan, tokens); }
  // The modelled time of the steps processed so far, in seconds (the scheduler's clock).
  double now() const { return 1e-6 * static_cast<double>(clock_us_.load()); }
  // The scheduler processed the oldest step not yet counted (steps are processed in order).
  void step_processed() {
    std::lock_guard lock(mutex_);
    if (ran_us_.empty()) return;
    clock_us_ += ran_us_.front();
    ran_us_.pop_front();
  }
  uint64_t late_id = 0;  // set before the late request is submitted
  std::vector<Shape> shapes() const {
    std::lock_guard lock(mutex_);
    return shapes_;
  }

 private:
  // Runs a step: its tokens, its shape recorded, the clock moved on; its time in us.
  int64_t run(const StepPlan& plan, std::span<int32_t> tokens) {
    Shape shape;
    int64_t fed = 0;
    for (size_t i = 0; i < plan.rows.size(); ++i) {
      const StepRow& row = plan.rows[i];
      fed += static_cast<int64_t>(row.tokens.size());
      const bool is_long = row.request_id >= long_id_ && row.request_id < long_id_ + n_long_;
      if (is_long && row.position < long_len_) {
        shape.long_prompt += static_cast<int32_t>(row.tokens.size());
        if (row.request_id == late_id) shape.late_prompt += static_cast<int32_t>(row.tokens.size());
      } else if (!is_long)
        ++shape.other_rows;
      if (row.sample) tokens[i] = 'x';
    }
    const int64_t us = 3000 + per_token_us_ * fed;
    std::lock_guard lock(mutex_);
    shapes_.push_back(shape);
    ran_us_.push_back(us);
    return us;
  }

  uint64_t long_id_;
  int32_t n_long_;
  int32_t long_len_;
  int64_t per_token_us_;
  mutable std::mutex mutex_;
  std::vector<Shape> shapes_;
  std::deque<int64_t> ran_us_;                // the times of steps run, not yet processed
  std::atomic<int64_t> clock_us_{1'000'000};  // starts past 0: the pacer's clock is >= 0
};

struct LongPromptRun {
  std::vector<TimedExecutor::Shape> shapes;
  std::vector<std::string> texts;
  int32_t chunk_metric = 0;  // SchedulerMetrics::prefill_chunk_tokens at the end
};

constexpr int32_t kLong = 1200;  // the long prompts' tokens

// A scheduler over a TimedExecutor whose long requests are ids 5 .. 5 + n_long - 1: four
// streams (ids 1-4) submitted first, then the long prompts.
struct TimedScheduler {
  ByteTokenizer tokenizer;
  TimedExecutor* timed;
  Device device;
  Scheduler scheduler;
  std::vector<std::shared_ptr<RecordingSink>> sinks;

  TimedScheduler(int32_t n_long, SchedulerOptions options, int64_t per_token_us = 30)
      : TimedScheduler(std::make_unique<TimedExecutor>(5, n_long, kLong, per_token_us), options) {}
  void submit(int32_t prompt, int32_t max_tokens, char fill) {
    auto sink = std::make_shared<RecordingSink>();
    GenerationRequest r;
    r.prompt.assign(prompt, fill);  // distinct long prompts share no cached prefix
    r.max_tokens = max_tokens;
    r.sink = sink;
    EXPECT_TRUE(scheduler.submit(std::move(r)).accepted());
    sinks.push_back(sink);
  }
  // Four streams prefilled, then decoding alone for a dozen steps: the decode model's
  // samples.
  void start_streams(int32_t max_tokens) {
    for (int i = 0; i < 4; ++i) submit(4, max_tokens, 'p');
    for (int i = 0; i < 12; ++i) scheduler.run_once();
  }
  void drain() {
    for (int i = 0; i < 100000 && !scheduler.drained(); ++i) scheduler.run_once();
    EXPECT_TRUE(scheduler.drained());
  }

 private:
  TimedScheduler(std::unique_ptr<TimedExecutor> executor, SchedulerOptions options)
      : timed(executor.get()),
        device(std::move(executor)),
        scheduler(device, tokenizer, with_clock(std::move(options), timed)) {}
  static SchedulerOptions with_clock(SchedulerOptions options, TimedExecutor* timed) {
    options.clock = [timed] { return timed->now(); };
    options.after_process = [timed] { timed->step_processed(); };
    return options;
  }
};

// Four streams start decoding; then n_long 1200-token prompts arrive (requests 5, 6, ...).
LongPromptRun run_long_prompt(bool paced, int32_t prefill_chunk, int32_t n_long = 1,
                              int32_t max_batch = 64) {
  SchedulerOptions options;
  options.paced_prefill = paced;
  options.prefill_chunk = prefill_chunk;
  options.max_batch = max_batch;
  TimedScheduler run(n_long, options);
  run.start_streams(80);
  for (int i = 0; i < n_long; ++i) run.submit(kLong, 2, static_cast<char>('a' + i));
  run.drain();
  LongPromptRun out{run.timed->shapes(), {}, run.scheduler.metrics().prefill_chunk_tokens};
  for (auto& s : run.sinks) out.texts.push_back(s->text());
  return out;
}

// The most prompt tokens of the long requests that one step carried beside other rows, and
// how many steps carried any.
int32_t largest_mixed(const LongPromptRun& run, int& chunks) {
  int32_t largest = 0;
  chunks = 0;
  for (const TimedExecutor::Shape& s : run.shapes) {
    chunks += s.long_prompt > 0;
    if (s.long_prompt > 0 && s.other_rows > 0) largest = std::max(largest, s.long_prompt);
  }
  return largest;
}

// The median of the long requests' chunks beside other rows (0 if none): the pace the
// pacer settled on, whatever its first estimates gave a chunk or two.
int32_t median_mixed(const LongPromptRun& run) {
  std::vector<int32_t> chunks;
  for (const TimedExecutor::Shape& s : run.shapes)
    if (s.long_prompt > 0 && s.other_rows > 0) chunks.push_back(s.long_prompt);
  if (chunks.empty()) return 0;
  std::nth_element(chunks.begin(), chunks.begin() + chunks.size() / 2, chunks.end());
  return chunks[chunks.size() / 2];
}

TEST(FairPrefill, ALongPromptMovesInSmallChunksWhileOthersDecodeAndTheTextsDoNotChange) {
  const LongPromptRun paced = run_long_prompt(true, 0);
  const LongPromptRun fixed = run_long_prompt(false, 512);
  EXPECT_EQ(paced.texts, fixed.texts);
  int paced_chunks = 0, fixed_chunks = 0;
  // Fixed: the streams wait for a 508-token chunk (the step's 512 less their 4 rows; 3 +
  // 30 * 512 us = 18 ms, about six decode steps). Paced: a 32-token probe, then 0.8 * 3.1
  // ms / 30 us = 83 tokens once the models are fitted (the bound leaves room for the fit's
  // rounding).
  EXPECT_EQ(largest_mixed(fixed, fixed_chunks), 508);
  const int32_t paced_largest = largest_mixed(paced, paced_chunks);
  EXPECT_LE(paced_largest, 90);
  std::cout << "  long prompt: paced " << paced_chunks << " chunks (largest beside decode rows "
            << paced_largest << "), fixed " << fixed_chunks << "\n";
  EXPECT_GE(paced_chunks, 1200 / 256);
  EXPECT_LT(fixed_chunks, paced_chunks);
  EXPECT_EQ(fixed.chunk_metric, 512);  // /metrics' tandem_prefill_chunk_tokens
  // Paced, the gauge shows the pacer's budget for a lone prompt: the model's 83. (While
  // this executor slept its steps, a loaded CI run ended at 462.)
  EXPECT_GE(paced.chunk_metric, 76);
  EXPECT_LE(paced.chunk_metric, 90);
}

// Eight long prompts arriving together are eight requests waiting for their first token,
// a queue: each adds a share and the queue takes half the step budget at least, so their
// chunks beside the streams grow to the step's budget (0.8 * 8 * 3.1 ms / 30 us = 660
// tokens, capped at 508) against a lone prompt's 83, where one share fed the whole burst one
// small chunk at a time. The lone prompt's pace is its median chunk (its probes, 32 and 64,
// come first).
TEST(FairPrefill, ABurstOfPromptsTakesAShareForEachWaitingRequest) {
  const LongPromptRun lone = run_long_prompt(true, 0);
  const LongPromptRun burst = run_long_prompt(true, 0, 8);
  const LongPromptRun fixed = run_long_prompt(false, 512, 8);
  EXPECT_EQ(burst.texts, fixed.texts);
  int lone_chunks = 0, burst_chunks = 0;
  const int32_t lone_largest = largest_mixed(lone, lone_chunks);
  const int32_t burst_largest = largest_mixed(burst, burst_chunks);
  const int32_t lone_median = median_mixed(lone), burst_median = median_mixed(burst);
  std::cout << "  chunks beside decode rows, largest and median: lone prompt " << lone_largest
            << ", " << lone_median << "; burst of eight " << burst_largest << ", " << burst_median
            << "\n";
  EXPECT_GE(lone_median, 76);
  EXPECT_LE(lone_median, 90);
  // At most the step's budget beside the four streams (512 - 4); a burst fed with one
  // share would stay near the lone pace, far below it.
  EXPECT_GE(burst_largest, std::min(3 * lone_median, 508));
  EXPECT_GE(burst_median, 256);
  EXPECT_LE(burst_largest, 508);
}

// Requests queued for admission wait for their first token too: with room for one prompt
// beside the four streams (--max-batch 5), the burst's other seven wait in the queue, and
// the prompt being prefilled still takes their shares, half the step budget at least.
TEST(FairPrefill, QueuedRequestsCountAmongThoseWaiting) {
  const LongPromptRun lone = run_long_prompt(true, 0, 1, 5);
  const LongPromptRun queued = run_long_prompt(true, 0, 8, 5);
  int lone_chunks = 0, queued_chunks = 0;
  const int32_t lone_largest = largest_mixed(lone, lone_chunks);
  const int32_t queued_largest = largest_mixed(queued, queued_chunks);
  const int32_t lone_median = median_mixed(lone), queued_median = median_mixed(queued);
  std::cout << "  chunks beside decode rows, one prompt admitted at a time, largest and "
               "median: lone "
            << lone_largest << ", " << lone_median << "; seven more queued " << queued_largest
            << ", " << queued_median << "\n";
  EXPECT_GE(lone_median, PrefillPacer::kMinChunk);
  EXPECT_GE(queued_largest, 3 * lone_median);
  EXPECT_GE(queued_median, 256);
}

// After a burst of long prompts has held the device for a while (the prompts' share of
// the steps past kSustained), a long prompt arriving among the streams is not paced: its
// chunks take half the step budget (256 of 512 here) where a lone prompt's would take ~20, as
// more prompts are likely behind it and pacing would only queue them (prefill_pacer.h).
TEST(FairPrefill, AfterABurstOfPromptsALongPromptIsNotPaced) {
  constexpr int32_t kBurst = 4;
  SchedulerOptions options;
  options.paced_prefill = true;
  // Prompt tokens four times as dear as elsewhere here: a half-budget step is then 0.9
  // prompt time by the executor's model, well past kSustained (0.84 measured at the end of
  // the burst).
  TimedScheduler run(kBurst + 1, options, 120);
  run.start_streams(400);  // streams that outlive the late prompt
  for (int i = 0; i < kBurst; ++i) run.submit(kLong, 2, static_cast<char>('a' + i));
  auto burst_answered = [&] {
    for (int i = 4; i < 4 + kBurst; ++i)
      if (run.sinks[i]->text().empty()) return false;
    return true;
  };
  for (int i = 0; i < 100000 && !burst_answered(); ++i) run.scheduler.run_once();
  ASSERT_TRUE(burst_answered());
  const double share = run.scheduler.metrics().prefill_sustained_share;
  run.timed->late_id = 5 + kBurst;
  run.submit(kLong, 2, 'z');
  run.drain();
  std::vector<int32_t> late;
  for (const TimedExecutor::Shape& s : run.timed->shapes())
    if (s.late_prompt > 0 && s.other_rows > 0) late.push_back(s.late_prompt);
  ASSERT_FALSE(late.empty());
  std::sort(late.begin(), late.end());
  std::cout << "  prompts' share of the steps after the burst " << share
            << "; the late prompt's chunks beside the streams: " << late.size() << ", median "
            << late[late.size() / 2] << "\n";
  EXPECT_GE(share, PrefillPacer::kSustained);
  // Every chunk but the prompt's last (its remainder) takes half the step budget or more.
  EXPECT_GE(late[late.size() / 2], 256);
  EXPECT_LE(late.size(), static_cast<size_t>(kLong / 256 + 1));
}

// Long prompts arriving one at a time among the streams, each after the one before has its
// first token (a closed loop of clients with long prompts): never two waiting, but from the
// kArrivals-th on, a stream of prompts, whose chunks take half the step budget (prefill_pacer.h)
// where the first ones, lone prompts, were paced.
TEST(FairPrefill, LongPromptsArrivingOneAtATimeAreAStreamOfPrompts) {
  constexpr int32_t kLongs = PrefillPacer::kArrivals + 1;
  SchedulerOptions options;
  options.paced_prefill = true;
  TimedScheduler run(kLongs, options);
  run.start_streams(400);
  for (int i = 0; i < kLongs; ++i) {
    if (i == kLongs - 1) run.timed->late_id = 5 + i;
    run.submit(kLong, 2, static_cast<char>('a' + i));
    for (int s = 0; s < 100000 && run.sinks.back()->text().empty(); ++s) run.scheduler.run_once();
    ASSERT_FALSE(run.sinks.back()->text().empty());
  }
  run.drain();
  std::vector<int32_t> first, late;
  bool first_done = false;
  for (const TimedExecutor::Shape& s : run.timed->shapes()) {
    if (s.other_rows == 0) continue;
    if (s.late_prompt > 0) late.push_back(s.late_prompt);
    if (!first_done && s.long_prompt > 0) first.push_back(s.long_prompt);
    first_done = first_done || (!first.empty() && s.long_prompt == 0);
  }
  ASSERT_FALSE(first.empty());
  ASSERT_FALSE(late.empty());
  std::sort(first.begin(), first.end());
  std::sort(late.begin(), late.end());
  std::cout << "  long prompts one at a time: the first's chunks " << first.size() << ", median "
            << first[first.size() / 2] << "; the last's " << late.size() << ", median "
            << late[late.size() / 2] << "\n";
  EXPECT_LT(first[first.size() / 2], 256);
  // Every chunk but the last prompt's remainder takes half the step budget.
  EXPECT_GE(late[late.size() / 2], 256);
  EXPECT_LE(late.size(), static_cast<size_t>(kLong / 256 + 1));
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
