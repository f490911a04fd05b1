#include "runner/sampler/dry.h"

#include <algorithm>

#include "protocol/dry_breakers.h"
#include "runner/sampler/kernels.h"

namespace tandem::sampler_dry {
namespace {

// The longest exponent whose power stays finite: llama.cpp's FLOAT_MAX_LOG / log(base), in
// the sampler's own float log (the same bits on every CPU); 0: no cap.
int32_t max_exponent(float base) {
  if (!(base > 1.000001f)) return 0;
  return static_cast<int32_t>(88.7228391f / sampler_kernels::log_approx(base));
}

// The window h: the last `reach` tokens of prompt then output.
void gather(std::span<const int32_t> prompt, std::span<const int32_t> output, size_t reach,
            std::vector<int32_t>& h) {
  const size_t from_output = std::min(reach, output.size());
  const size_t from_prompt = std::min(reach - from_output, prompt.size());
  h.assign(prompt.end() - static_cast<std::ptrdiff_t>(from_prompt), prompt.end());
  h.insert(h.end(), output.end() - static_cast<std::ptrdiff_t>(from_output), output.end());
}

// z[k] for h read backwards (r[j] = h[L-1-j]): how many tokens ending at h[L-1-k] match the
// ones ending at h[L-1], counting back. The classic Z-algorithm: linear in L.
void reversed_z(std::span<const int32_t> h, std::vector<int32_t>& z) {
  const auto n = static_cast<int32_t>(h.size());
  const auto r = [&](int32_t j) { return h[static_cast<size_t>(n - 1 - j)]; };
  z.assign(h.size(), 0);
  int32_t lo = 0, hi = 0;  // the rightmost match found so far: r[lo, hi) == r[0, hi - lo)
  for (int32_t k = 1; k < n; ++k) {
    int32_t m = k < hi ? std::min(hi - k, z[static_cast<size_t>(k - lo)]) : 0;
    while (k + m < n && r(m) == r(k + m)) ++m;
    z[static_cast<size_t>(k)] = m;
    if (k + m > hi) {
      lo = k;
      hi = k + m;
    }
  }
}

}  // namespace

int32_t repeat_limit(std::span<const int32_t> h, const DryBreakers* breakers) {
  const auto n = static_cast<int32_t>(h.size());
  if (breakers == nullptr || breakers->empty()) return n;
  for (int32_t i = 0; i < n; ++i) {
    const DryBreakers::Tails* tails = breakers->tails_of(h[static_cast<size_t>(n - 1 - i)]);
    if (tails == nullptr) continue;
    int32_t longest = -1;
    for (const std::vector<int32_t>& tail : *tails) {
      const auto len = static_cast<int32_t>(tail.size());
      if (len <= longest || len > i) continue;
      if (std::equal(tail.begin(), tail.end(), h.begin() + (n - i))) longest = len;
    }
    if (longest >= 0) return i - longest;
  }
  return n;
}

float penalty(float multiplier, float base, int32_t exponent) {
  double power = 1.0, square = base;
  for (auto e = static_cast<uint32_t>(std::max(exponent, 0)); e != 0; e >>= 1) {
    if (e & 1u) power *= square;
    square *= square;
  }
  return static_cast<float>(static_cast<double>(multiplier) * power);
}

void apply(std::span<float> logits, const SamplingParams& params, std::span<const int32_t> prompt,
           std::span<const int32_t> output, Scratch& s) {
  const int32_t allowed = params.dry_allowed_length;
  gather(prompt, output, static_cast<size_t>(params.dry_last_n), s.window);
  const auto n = static_cast<int32_t>(s.window.size());
  if (n <= allowed) return;
  const int32_t limit = repeat_limit(s.window, params.dry_breakers.get());
  if (limit < allowed) return;
  reversed_z(s.window, s.z);
  s.ends.clear();
  for (int32_t k = 1; k < n; ++k) {
    const int32_t length = std::min(s.z[static_cast<size_t>(k)], limit);
    // The stretch ending at e = n-1-k repeats the history's end: its next token would
    // extend the repeat.
    if (length >= allowed) s.ends.emplace_back(s.window[static_cast<size_t>(n - k)], length);
  }
  std::sort(s.ends.begin(), s.ends.end());  // by token, the longest repeat last
  const int32_t cap = max_exponent(params.dry_base);
  const auto vocab = static_cast<int32_t>(logits.size());
  for (size_t i = 0; i < s.ends.size(); ++i) {
    const auto [id, length] = s.ends[i];
    if (i + 1 < s.ends.size() && s.ends[i + 1].first == id) continue;
    if (id < 0 || id >= vocab) continue;
    if (params.dry_breakers && params.dry_breakers->single_token(id)) continue;
    int32_t exponent = length - allowed;
    if (cap > 0 && exponent > cap) exponent = cap;
    logits[static_cast<size_t>(id)] -= penalty(params.dry_multiplier, params.dry_base, exponent);
  }
}

}  // namespace tandem::sampler_dry
