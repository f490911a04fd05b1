// The penalties' history the scheduler hands the device with each sampled row: vLLM's
// definitions get the whole output (and the prompt for repetition); a llama.cpp window gets
// (penalties' or DRY's, the longer of the two) at least its last tokens of prompt and output,
// in order, with overlap on (chained steps append the token they feed) and off.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "scheduler/scheduler.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using testing::ByteTokenizer;
using testing::fake_device_info;
using testing::RecordingSink;

// Token at position p: a letter from p, so the history is known from the positions alone.
int32_t letter(int32_t position) { return 'a' + position % 7; }

struct Seen {
  bool has_prompt = false;
  std::vector<int32_t> prompt, output;
  int32_t position = 0;  // of the token sampled
};

class HistoryRecorder : public StepExecutor {
 public:
  explicit HistoryRecorder(std::vector<Seen>& seen) : seen_(seen) {}
  DeviceInfo info() const override { return fake_device_info(); }
  void execute(const StepPlan& plan, std::span<int32_t> tokens) override {
    for (size_t i = 0; i < plan.rows.size(); ++i) {
      const StepRow& row = plan.rows[i];
      if (!row.sample) continue;
      Seen s;
      s.position = row.position + static_cast<int32_t>(row.tokens.size());
      s.has_prompt = row.penalty_prompt != nullptr;
      if (row.penalty_prompt) s.prompt = *row.penalty_prompt;
      s.output = row.penalty_output;
      seen_.push_back(s);
      tokens[i] = letter(s.position);
    }
  }

 private:
  std::vector<Seen>& seen_;
};

std::vector<Seen> run(const SamplingParams& sampling, const std::vector<int32_t>& prompt,
                      bool overlap) {
  std::vector<Seen> seen;
  ByteTokenizer tokenizer;
  Device device(std::make_unique<HistoryRecorder>(seen));
  SchedulerOptions options;
  options.overlap = overlap;
  Scheduler scheduler(device, tokenizer, options);
  GenerationRequest r;
  r.prompt = prompt;
  r.max_tokens = 24;
  r.sampling = sampling;
  r.sink = std::make_shared<RecordingSink>();
  EXPECT_TRUE(scheduler.submit(std::move(r)).accepted());
  for (int i = 0; i < 10000 && !scheduler.drained(); ++i) scheduler.run_once();
  EXPECT_TRUE(scheduler.drained());
  return seen;
}

// The prompt and the tokens generated before position p.
std::vector<int32_t> full_history(const std::vector<int32_t>& prompt, int32_t position) {
  std::vector<int32_t> out = prompt;
  for (auto p = static_cast<int32_t>(prompt.size()); p < position; ++p) out.push_back(letter(p));
  return out;
}

std::vector<int32_t> last(const std::vector<int32_t>& v, size_t n) {
  return {v.end() - static_cast<std::ptrdiff_t>(std::min(n, v.size())), v.end()};
}

// Each sampled row's history holds the window's last tokens of prompt and output, in order.
void check_window(const std::vector<Seen>& seen, const std::vector<int32_t>& prompt, int32_t last_n,
                  bool overlap) {
  ASSERT_EQ(seen.size(), 24u);
  for (const Seen& s : seen) {
    ASSERT_TRUE(s.has_prompt);
    const std::vector<int32_t> full = full_history(prompt, s.position);
    // The sampler counts the window's tokens from the end of each part.
    const size_t from_output = std::min<size_t>(last_n, s.output.size());
    std::vector<int32_t> counted = last(s.output, from_output);
    counted.insert(counted.begin(),
                   s.prompt.end() -
                       static_cast<std::ptrdiff_t>(std::min(last_n - from_output, s.prompt.size())),
                   s.prompt.end());
    EXPECT_EQ(counted, last(full, last_n))
        << "position " << s.position << " overlap " << overlap << " last_n " << last_n;
    EXPECT_LE(s.prompt.size(), static_cast<size_t>(last_n));
    // Rows the host builds copy the window's tail; a chained step's row is its
    // predecessor's, moved, with the fed token appended (no copy to trim).
    if (!overlap) {
      EXPECT_LE(s.output.size(), static_cast<size_t>(last_n));
    }
  }
}

TEST(PenaltyHistory, AWindowGetsItsLastTokensOfPromptAndOutput) {
  const std::vector<int32_t> prompt = {'p', 'q', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y'};
  for (bool overlap : {true, false}) {
    for (int32_t last_n : {1, 4, 16}) {
      // The window is a penalty's, DRY's, or the longer of the two.
      for (int kind : {0, 1, 2}) {
        SamplingParams sampling;
        if (kind != 1) {
          sampling.presence_penalty = 1.0f;  // no repetition: the window alone asks for the prompt
          sampling.penalty_last_n = kind == 0 ? last_n : 1;
        }
        if (kind != 0) {
          sampling.dry_multiplier = 0.8f;
          sampling.dry_last_n = last_n;
        }
        check_window(run(sampling, prompt, overlap), prompt, last_n, overlap);
      }
    }
  }
}

TEST(PenaltyHistory, VllmsDefinitionsGetTheWholeOutput) {
  const std::vector<int32_t> prompt = {'p', 'q', 'r', 's'};
  for (bool overlap : {true, false}) {
    SamplingParams sampling;
    sampling.frequency_penalty = 0.5f;
    for (const Seen& s : run(sampling, prompt, overlap)) {
      EXPECT_FALSE(s.has_prompt);
      const std::vector<int32_t> full = full_history(prompt, s.position);
      EXPECT_EQ(s.output, std::vector<int32_t>(full.begin() + 4, full.end()));
    }
    sampling.repetition_penalty = 1.2f;
    for (const Seen& s : run(sampling, prompt, overlap)) EXPECT_EQ(s.prompt, prompt);
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
