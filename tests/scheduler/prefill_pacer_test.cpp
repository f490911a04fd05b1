// Fair scheduling under long prompts (issue 15): the pacer's arithmetic on given step
// times (the scheduler driving it: fair_prefill_test.cpp).
#include "scheduler/prefill_pacer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "tests/scheduler/scheduler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

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
  EXPECT_EQ(pacer.lone_prompt_budget(true), PrefillPacer::kProbeChunk);
  EXPECT_EQ(pacer.lone_prompt_budget(false), 512);  // nothing decodes now: the whole step
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
  // A window later with no step, nothing is left: 0, never what the sums' rounding leaves
  // (FairPrefill.ThePromptsShareFallsToZeroWhileIdle saw 0.54).
  EXPECT_EQ(pacer.prompt_share(now + PrefillPacer::kSustainWindow + 1), 0);
  EXPECT_FALSE(pacer.sustained(now + PrefillPacer::kSustainWindow + 1));
  EXPECT_LT(now - queue_from, PrefillPacer::kSustainWindow);
  EXPECT_EQ(pacer.prompt_budget(decode, 1, 0, now), 256);
  EXPECT_EQ(pacer.prompt_budget(decode, 1, 0), paced);  // without a clock: never sustained
  EXPECT_EQ(pacer.lone_prompt_budget(true), paced);     // /metrics: the paced budget
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

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
