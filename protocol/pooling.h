// How an embedding is pooled from a prompt's hidden states (the last layer's, after the
// output norm, as llama.cpp's t_embd and vLLM's poolers read them), and the fixed-point sum
// that pools them chunk by chunk.
//
// Why fixed point: a prompt is prefilled in chunks whose boundaries depend on the load (the
// pacer, the batch, a preemption), and a float or double sum rounds differently for each
// split. Each state is rounded once to a multiple of 2^-28 and summed in 64-bit integers,
// whose addition is associative: any split gives the same bits (law 2 for embeddings). The
// rounding (3.7e-9) is far below a float's 6e-8 relative step for values above ~0.06, and
// a sum stays exact while |value| * tokens < 2^35 (a 128K-token prompt with values up to
// 2^18); values beyond +-2^24 are clamped, which no norm-scaled hidden state reaches.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace tandem {

// GGUF's {arch}.pooling_type values: 0 none, 1 mean, 2 cls, 3 last (4, rank, is a
// reranker's, not served).
enum class Pooling : uint8_t { kNone = 0, kMean = 1, kCls = 2, kLast = 3 };

constexpr std::string_view pooling_name(Pooling p) {
  switch (p) {
    case Pooling::kMean:
      return "mean";
    case Pooling::kCls:
      return "cls";
    case Pooling::kLast:
      return "last";
    case Pooling::kNone:
      break;
  }
  return "none";
}

inline std::optional<Pooling> parse_pooling(std::string_view name) {
  for (Pooling p : {Pooling::kNone, Pooling::kMean, Pooling::kCls, Pooling::kLast})
    if (pooling_name(p) == name) return p;
  return std::nullopt;
}

inline constexpr double kPoolScale = 0x1p28;
inline constexpr double kPoolClamp = 0x1p24;

// Adds one hidden state to a pooled sum (sum.size() == state.size()); returns how many of
// its values were NaN or infinite (added as 0 and the clamp: a broken model's states, which
// the caller refuses rather than pool).
inline int64_t add_to_pooled(std::span<const float> state, std::span<int64_t> sum) {
  int64_t not_finite = 0;
  for (size_t i = 0; i < state.size(); ++i) {
    double v = static_cast<double>(state[i]);
    not_finite += !std::isfinite(v);
    v = std::isnan(v) ? 0.0 : std::fmin(std::fmax(v, -kPoolClamp), kPoolClamp);
    sum[i] += std::llrint(v * kPoolScale);
  }
  return not_finite;
}

// The pooled embedding: the sum over `count` states, divided by count (mean; cls and last
// pool one state).
inline std::vector<float> pooled_embedding(std::span<const int64_t> sum, int64_t count) {
  std::vector<float> out(sum.size());
  const double scale = 1.0 / (kPoolScale * static_cast<double>(count > 0 ? count : 1));
  for (size_t i = 0; i < sum.size(); ++i) out[i] = static_cast<float>(sum[i] * scale);
  return out;
}

}  // namespace tandem
