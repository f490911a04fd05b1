#include "bench/workload.h"

#include <algorithm>

#include <cmath>
#include <random>
#include <stdexcept>
#include <unordered_set>

namespace tandem::bench {

uint64_t mix_seed(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::vector<double> arrival_offsets(int32_t n, double rate, double burstiness, uint64_t seed) {
  std::vector<double> out(static_cast<size_t>(std::max(n, 0)), 0.0);
  if (!std::isfinite(rate) || rate <= 0) return out;
  // Gamma(shape k, scale theta) has mean k * theta; theta = 1 / (rate * k) keeps the mean
  // gap at 1 / rate whatever the burstiness.
  std::mt19937_64 rng(mix_seed(seed ^ 0xa5a5a5a5ULL));
  std::gamma_distribution<double> gap(burstiness, 1.0 / (rate * burstiness));
  double t = 0;
  for (double& offset : out) {
    t += gap(rng);
    offset = t;
  }
  // As vllm bench serve does: the sum of n gamma gaps misses n / rate by a percent or two
  // from seed to seed, so the offsets are scaled for the last to arrive at n / rate exactly,
  // and runs of different seeds offer the same load.
  if (!out.empty() && out.back() > 0) {
    const double scale = static_cast<double>(out.size()) / rate / out.back();
    for (double& offset : out) offset *= scale;
  }
  return out;
}

std::vector<int32_t> distinct_ids(const std::vector<int32_t>& sample_ids) {
  std::vector<int32_t> out;
  std::unordered_set<int32_t> seen;
  for (int32_t id : sample_ids)
    if (id >= 0 && seen.insert(id).second) out.push_back(id);
  return out;
}

std::string_view pool_passage() {
  // Ordinary prose: every tokenizer turns it into common word pieces, never control tokens.
  return "The river runs past the old mill, where the miller's daughter counts the sacks of "
         "grain each morning before the market opens. Farmers arrive from the hills with "
         "carts of apples, pears, cabbages and wool; they argue about prices, the weather and "
         "the new bridge that the council promised seven years ago. In the afternoon the "
         "children swim near the shallow bank while their grandparents play cards under the "
         "chestnut trees. A traveller from the north once wrote that the town was quiet, "
         "patient and stubborn, like the water that turns its wheel. Numbers matter here too: "
         "1, 2, 3, 10, 42, 100 and 2024 appear on the ledgers, receipts and school boards. "
         "Questions? Answers! Someone always knows the way to the station, the library, the "
         "bakery and the harbour, and everyone has an opinion about music, science, history, "
         "mathematics, engineering, medicine, literature, painting and cooking.";
}

std::vector<PlannedRequest> plan_workload(const WorkloadSpec& spec,
                                          const std::vector<int32_t>& token_pool) {
  if (token_pool.empty()) throw std::invalid_argument("bench: the prompt token pool is empty");
  const std::vector<double> arrivals =
      arrival_offsets(spec.requests, spec.request_rate, spec.burstiness, spec.seed);
  std::vector<PlannedRequest> out(arrivals.size());
  std::vector<int32_t> shared(static_cast<size_t>(std::max(spec.shared_prefix_tokens, 0)));
  {
    std::mt19937_64 rng(mix_seed(spec.seed ^ 0x5368617265645046ULL));  // "SharedPF"
    std::uniform_int_distribution<size_t> pick(0, token_pool.size() - 1);
    for (int32_t& id : shared) id = token_pool[pick(rng)];
  }
  for (size_t i = 0; i < out.size(); ++i) {
    // Each request has its own stream, so request i is the same whatever --requests is.
    std::mt19937_64 rng(mix_seed(spec.seed * 0x100000001b3ULL + i));
    std::uniform_int_distribution<int32_t> length(spec.prompt_tokens_min, spec.prompt_tokens_max);
    std::uniform_int_distribution<size_t> pick(0, token_pool.size() - 1);
    PlannedRequest& r = out[i];
    r.prompt.resize(static_cast<size_t>(length(rng)));
    for (int32_t& id : r.prompt) id = token_pool[pick(rng)];
    r.prompt.insert(r.prompt.begin(), shared.begin(), shared.end());
    r.seed = mix_seed(rng()) & 0x7fffffffu;  // every server takes a 31-bit seed
    r.max_tokens = spec.max_tokens;
    r.arrival_seconds = arrivals[i];
  }
  return out;
}

}  // namespace tandem::bench
