// The fused sampler's penalties (sampler.h, step 1): vLLM's definitions, and llama.cpp's
// over its window. Split from sampler.cpp, which holds the row's path.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "runner/sampler/sampler.h"

namespace tandem {
namespace {

// Sorts `ids` and calls f(id, count) once for each distinct id in [0, n): the penalties'
// counts, whatever order the history lists them in.
template <typename F>
void for_each_count(std::vector<int32_t>& ids, int32_t n, F f) {
  std::sort(ids.begin(), ids.end());
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j < ids.size() && ids[j] == ids[i]) ++j;
    if (ids[i] >= 0 && ids[i] < n) f(ids[i], j - i);
    i = j;
  }
}

}  // namespace

// vLLM's apply_penalties, per token of the row's history: repetition (prompt and output),
// then frequency * count and presence (output). Each token is penalized once, so the
// order in which the history lists tokens does not matter.
void Sampler::apply_penalties(std::span<float> logits, const SamplingParams& params,
                              const RowHistory& history) {
  if (params.penalty_last_n > 0) {
    apply_window_penalties(logits, params, history);
    return;
  }
  const auto n = static_cast<int32_t>(logits.size());
  const float rep = params.repetition_penalty;
  if (rep != 1.0f) {
    if (++stamp_ == 0) {  // the stamps wrapped: start the marks afresh
      std::fill(seen_.begin(), seen_.end(), 0u);
      stamp_ = 1;
    }
    for (std::span<const int32_t> part : {history.prompt, history.output}) {
      for (int32_t id : part) {
        if (id < 0 || id >= n || seen_[id] == stamp_) continue;
        seen_[id] = stamp_;
        const float x = logits[id];
        logits[id] = x > 0.0f ? x / rep : x * rep;
      }
    }
  }
  const float freq = params.frequency_penalty;
  const float presence = params.presence_penalty;
  if ((freq == 0.0f && presence == 0.0f) || history.output.empty()) return;
  counts_.assign(history.output.begin(), history.output.end());
  for_each_count(counts_, n, [&](int32_t id, size_t count) {
    logits[id] -= freq * static_cast<float>(count);
    logits[id] -= presence;
  });
}

// llama.cpp's penalties sampler, over its window of the last penalty_last_n tokens of the
// prompt and the output: per id in the window (each once), repetition on the logit's sign,
// then logit -= count * frequency + presence, as llama.cpp writes it (one subtraction).
void Sampler::apply_window_penalties(std::span<float> logits, const SamplingParams& params,
                                     const RowHistory& history) {
  const auto window = static_cast<size_t>(params.penalty_last_n);
  const size_t from_output = std::min(window, history.output.size());
  const size_t from_prompt = std::min(window - from_output, history.prompt.size());
  counts_.assign(history.prompt.end() - static_cast<std::ptrdiff_t>(from_prompt),
                 history.prompt.end());
  counts_.insert(counts_.end(), history.output.end() - static_cast<std::ptrdiff_t>(from_output),
                 history.output.end());
  const float rep = params.repetition_penalty;
  for_each_count(counts_, static_cast<int32_t>(logits.size()), [&](int32_t id, size_t count) {
    float& x = logits[id];
    x = x <= 0.0f ? x * rep : x / rep;
    x -= static_cast<float>(count) * params.frequency_penalty + params.presence_penalty;
  });
}

}  // namespace tandem
