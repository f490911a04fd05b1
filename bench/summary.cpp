#include "bench/summary.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tandem::bench {

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Distribution distribution(std::vector<double> sample) {
  Distribution d;
  if (sample.empty()) return d;
  std::sort(sample.begin(), sample.end());
  d.count = static_cast<int64_t>(sample.size());
  d.mean = std::accumulate(sample.begin(), sample.end(), 0.0) / static_cast<double>(d.count);
  d.p50 = percentile(sample, 50);
  d.p90 = percentile(sample, 90);
  d.p99 = percentile(sample, 99);
  d.min = sample.front();
  d.max = sample.back();
  return d;
}

RunSummary summarize(const std::vector<RequestRecord>& records, double duration_seconds) {
  RunSummary s;
  s.duration_seconds = duration_seconds;
  std::vector<double> ttft, tpot, itl, e2e;
  for (const RequestRecord& r : records) {
    if (!r.ok) {
      ++s.failed;
      if (s.first_error.empty()) s.first_error = r.error;
      continue;
    }
    ++s.completed;
    s.prompt_tokens += r.prompt_tokens;
    s.output_tokens += r.output_tokens;
    if (r.cached_tokens >= 0)
      s.cached_prompt_tokens = std::max<int64_t>(s.cached_prompt_tokens, 0) + r.cached_tokens;
    e2e.push_back(r.e2e * 1e3);
    if (!r.streamed) continue;
    ttft.push_back(r.ttft * 1e3);
    if (r.output_tokens > 1)
      tpot.push_back((r.e2e - r.ttft) / static_cast<double>(r.output_tokens - 1) * 1e3);
    for (double gap : r.itl) itl.push_back(gap * 1e3);
  }
  if (duration_seconds > 0) {
    s.requests_per_second = static_cast<double>(s.completed) / duration_seconds;
    s.output_tokens_per_second = static_cast<double>(s.output_tokens) / duration_seconds;
    s.total_tokens_per_second =
        static_cast<double>(s.prompt_tokens + s.output_tokens) / duration_seconds;
  }
  s.ttft_ms = distribution(std::move(ttft));
  s.tpot_ms = distribution(std::move(tpot));
  s.itl_ms = distribution(std::move(itl));
  s.e2e_ms = distribution(std::move(e2e));
  return s;
}

}  // namespace tandem::bench
