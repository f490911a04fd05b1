// The device sampler (runner/cuda/sampler_kernel.h) against the CPU Sampler: the same token
// for the same logits and parameters, on random rows of every kind mixed in each launch, and
// the right distribution over many seeds. Skips, saying so, where no GPU is found.
//
// The one allowed difference is a top_p cut within float rounding of p (the CPU sums mass in a
// quickselect's order, the kernel exactly in rank order): rows whose cut lies that close are
// counted apart, and the test requires no mismatch among all the other rows.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "runner/cuda/sampler_kernel.h"
#include "runner/sampler/sampler.h"
#include "tests/cuda/cuda_test_support.h"
#include "tests/runner/sampler/distribution_support.h"
#include "tests/runner/sampler/reference.h"
#include "tests/runner/sampler/sampler_test_support.h"

namespace tandem::cuda::TANDEM_UNITY_ID {
namespace {

using testing::DeviceBuffer;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

bool has_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

#define SKIP_WITHOUT_GPU() \
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device: the device sampler is not run"

void check(cudaError_t err) { ASSERT_EQ(err, cudaSuccess) << cudaGetErrorString(err); }

// One row to sample: what the CPU Sampler takes, and its row of logits.
struct Case {
  int32_t logits_row = 0;
  SamplingParams params;
  bool ban_stop = false;
  int64_t position = 0;
};

// The executor's expansion of a row's edits: logit_bias, then the bans (eog ids for
// ignore_eos, but those stop_token_ids names, or min_tokens; then stop_token_ids for
// min_tokens), in the CPU's order.
std::vector<LogitEdit> edits_of(const Case& c, const std::vector<int32_t>& eog) {
  std::vector<LogitEdit> edits;
  for (const auto& [id, bias] : c.params.logit_bias) edits.push_back({id, bias});
  const auto& stop = c.params.stop_token_ids;
  if (c.params.ignore_eos || c.ban_stop) {
    for (int32_t id : eog)
      if (c.ban_stop || !std::binary_search(stop.begin(), stop.end(), id))
        edits.push_back({id, -100.0f});
  }
  if (c.ban_stop) {
    for (int32_t id : c.params.stop_token_ids) edits.push_back({id, -100.0f});
  }
  return edits;
}

SampleRow row_of(const Case& c) {
  SampleRow row;
  row.logits_row = c.logits_row;
  row.temperature = c.params.temperature;
  row.top_k = c.params.top_k;
  row.top_p = c.params.top_p;
  row.set_min_p(c.params.min_p);
  row.seed = c.params.seed;
  row.position = c.position;
  return row;
}

// Samples every case, in launches of at most kMaxRows; logits holds the rows (vocab each).
constexpr int32_t kMaxRows = 4096;
std::vector<int32_t> sample_on_device(const std::vector<float>& logits, int32_t vocab,
                                      const std::vector<Case>& cases,
                                      const std::vector<int32_t>& eog) {
  std::vector<SampleRow> rows;
  std::vector<LogitEdit> edits;
  for (const Case& c : cases) {
    SampleRow row = row_of(c);
    row.edits_begin = static_cast<int32_t>(edits.size());
    for (const LogitEdit& e : edits_of(c, eog)) edits.push_back(e);
    row.edits_end = static_cast<int32_t>(edits.size());
    rows.push_back(row);
  }
  const auto n = static_cast<int32_t>(cases.size());
  DeviceBuffer d_logits(logits), d_rows(rows), d_edits(edits);
  DeviceBuffer d_tokens(cases.size() * sizeof(int32_t));
  DeviceBuffer d_scratch(sample_scratch_bytes(std::min(n, kMaxRows), vocab));
  for (int32_t first = 0; first < n; first += kMaxRows) {
    launch_sample(d_rows.as<SampleRow>() + first, std::min(kMaxRows, n - first),
                  d_edits.as<LogitEdit>(), d_logits.as<float>(), vocab,
                  d_tokens.as<int32_t>() + first, d_scratch.ptr, nullptr);
  }
  std::vector<int32_t> tokens(cases.size(), -7);
  check(cudaMemcpy(tokens.data(), d_tokens.ptr, tokens.size() * sizeof(int32_t),
                   cudaMemcpyDeviceToHost));
  return tokens;
}

// The row as the CPU sees it before temperature: logit_bias and bans applied.
std::vector<float> biased(std::vector<float> row, const std::vector<LogitEdit>& edits) {
  const auto n = static_cast<int32_t>(row.size());
  for (const LogitEdit& e : edits) {
    if (e.id < 0 || e.id >= n) continue;
    row[e.id] = e.bias <= -100.0f ? -kInf : row[e.id] + e.bias;
  }
  return row;
}

// The masses top_p weighs (sampler.h): exp_shifted(z - z_max) of the tokens min_p and top_k
// leave, in rank order, in double; *total gets their sum, the S top_p takes p of.
std::vector<double> survivor_masses(const std::vector<float>& z, const SamplingParams& params,
                                    double* total) {
  const std::vector<int32_t> survivors = testing::reference_survivors(z, params);
  std::vector<double> e;
  *total = 0.0;
  for (int32_t id : survivors) {
    e.push_back(sampler_kernels::exp_shifted(z[id] - z[survivors.front()]));
    *total += e.back();
  }
  return e;
}

// Whether top_p's cut lies within rounding of p: some rank prefix's exact mass is within
// 5e-5 S of p S (float sums of up to 2^18 terms in another order stay well inside that).
bool top_p_cut_is_close(const std::vector<float>& row, const SamplingParams& params) {
  const float inv_t = 1.0f / params.temperature;
  if (!(params.temperature > 0.0f) || !std::isfinite(inv_t)) return false;
  if (!(params.top_p < 1.0f) || !(params.top_p > 0.0f)) return false;
  const std::vector<float> z = testing::tempered(row, params.temperature);
  double total = 0.0;
  const std::vector<double> e = survivor_masses(z, params, &total);
  if (e.empty()) return false;
  const double target = params.top_p * total;
  double acc = 0.0;
  for (double m : e) {
    acc += m;
    if (std::abs(acc - target) <= 5e-5 * total) return true;
    if (acc > target + 5e-5 * total) return false;
  }
  return false;
}

// A launch captured in a CUDA graph and replayed samples what a plain launch does. First in
// the file, so the capture is the process's first launch: sample_scratch_bytes has readied
// the kernel, and the capture must make no host call of its own.
TEST(CudaSampler, AGraphCapturedFirstReplaysWhatAPlainLaunchSamples) {
  SKIP_WITHOUT_GPU();
  constexpr int32_t kVocab = 128256;
  constexpr int32_t kRows = 8;
  std::vector<float> logits;
  std::vector<SampleRow> rows(kRows);
  for (int32_t r = 0; r < kRows; ++r) {
    const std::vector<float> row = testing::normal_logits(kVocab, 2.0f, 40 + r);
    logits.insert(logits.end(), row.begin(), row.end());
    rows[r].logits_row = r;
    rows[r].top_k = r % 2 == 0 ? 0 : 40;
    rows[r].top_p = r % 3 == 0 ? 0.9f : 1.0f;
    rows[r].seed = 1000u + static_cast<uint64_t>(r);
    rows[r].position = 77;
    rows[r].edits_end = r == 1 ? 1 : 0;
  }
  const std::vector<LogitEdit> edits = {{0, 1.0f}};
  DeviceBuffer d_logits(logits), d_rows(rows), d_edits(edits);
  DeviceBuffer d_tokens(kRows * sizeof(int32_t)), d_scratch(sample_scratch_bytes(kRows, kVocab));
  cudaStream_t stream;
  check(cudaStreamCreate(&stream));
  auto launch = [&] {
    launch_sample(d_rows.as<SampleRow>(), kRows, d_edits.as<LogitEdit>(), d_logits.as<float>(),
                  kVocab, d_tokens.as<int32_t>(), d_scratch.ptr, stream);
  };
  std::vector<int32_t> plain(kRows), replayed(kRows, -1);
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  launch();
  check(cudaStreamEndCapture(stream, &graph));
  check(cudaGraphInstantiate(&exec, graph, 0));
  check(cudaGraphLaunch(exec, stream));
  check(cudaStreamSynchronize(stream));
  check(cudaMemcpy(replayed.data(), d_tokens.ptr, kRows * sizeof(int32_t), cudaMemcpyDeviceToHost));
  check(cudaMemset(d_tokens.ptr, 0xff, kRows * sizeof(int32_t)));
  launch();
  check(cudaStreamSynchronize(stream));
  check(cudaMemcpy(plain.data(), d_tokens.ptr, kRows * sizeof(int32_t), cudaMemcpyDeviceToHost));
  EXPECT_EQ(replayed, plain);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// ---- random rows ----

struct RowMaker {
  std::mt19937_64 rng;
  int32_t vocab;

  float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng); }
  int32_t pick(int32_t n) { return static_cast<int32_t>(rng() % static_cast<uint64_t>(n)); }
  template <typename T>
  T one_of(std::initializer_list<T> list) {
    return list.begin()[pick(static_cast<int32_t>(list.size()))];
  }

  // Normal logits, sometimes quantized (many ties), sometimes with -inf, NaN or +inf entries,
  // sometimes nothing finite at all.
  std::vector<float> logits() {
    std::normal_distribution<float> normal(0.0f, uniform(0.3f, 6.0f));
    std::vector<float> row(vocab);
    const int kind = pick(10);
    const float step = one_of({0.25f, 1.0f, 4.0f});
    for (float& v : row) {
      v = normal(rng);
      if (kind <= 2) v = std::round(v / step) * step;  // ties
    }
    if (kind == 3 || kind == 4) {
      for (int j = pick(50); j > 0; --j) row[pick(vocab)] = one_of({-kInf, kNaN, -kInf});
    }
    if (kind == 5 && pick(3) == 0) row[pick(vocab)] = kInf;
    if (kind == 6 && pick(4) == 0) std::fill(row.begin(), row.end(), one_of({-kInf, kNaN}));
    if (kind == 7) {  // a sharp head over a flat tail: short top-p prefixes
      for (int j = 0; j < 8; ++j) row[pick(vocab)] += uniform(5.0f, 20.0f);
    }
    return row;
  }

  SamplingParams params() {
    SamplingParams p;
    p.temperature = one_of({0.0f, -1.0f, kNaN, 1e-40f, 0.05f, 0.5f, 0.8f, 1.0f, 1.0f, 1.3f, 2.0f});
    if (pick(2)) p.top_k = one_of({1, 2, 5, 40, 1000, vocab - 1, vocab, vocab + 3});
    if (pick(2)) p.top_p = one_of({0.0f, 1e-4f, 0.3f, 0.8f, 0.9f, 0.95f, 0.999f, 1.0f});
    if (pick(2)) p.min_p = one_of({0.001f, 0.01f, 0.05f, 0.2f, 1.0f});
    p.seed = rng();
    for (int j = one_of({0, 0, 1, 3, 6}); j > 0; --j) {
      const int32_t id = pick(4) == 0 ? one_of({-1, vocab, vocab + 9}) : pick(vocab);
      p.logit_bias.push_back({id, one_of({-100.0f, -150.0f, -5.0f, 2.5f, 8.0f, 30.0f})});
    }
    if (!p.logit_bias.empty() && pick(3) == 0) p.logit_bias.push_back(p.logit_bias.front());
    p.ignore_eos = pick(4) == 0;
    if (pick(4) == 0) p.stop_token_ids = {pick(vocab), pick(vocab)};
    return p;
  }
};

struct Tally {
  int compared = 0;
  int close_cuts = 0;        // rows left out: top_p's cut within rounding of p
  int close_mismatches = 0;  // of those, rows whose tokens differ (allowed)
  int mismatches = 0;
};

// One launch of `n_rows` random rows of one vocabulary, each compared with the CPU Sampler.
// many_biases: logit_bias entries added to each row, over a narrow range of ids (so most
// ids are edited several times), past the block's thread count.
void compare_batch(int32_t vocab, int n_rows, uint64_t seed, Tally& tally, int many_biases = 0) {
  RowMaker make{std::mt19937_64(seed), vocab};
  const std::vector<int32_t> eog = {2, vocab - 1};
  const int n_logit_rows = std::max(1, n_rows * 3 / 4);  // some rows share a logits row
  std::vector<float> logits;
  for (int r = 0; r < n_logit_rows; ++r) {
    const std::vector<float> row = make.logits();
    logits.insert(logits.end(), row.begin(), row.end());
  }
  std::vector<Case> cases(n_rows);
  for (Case& c : cases) {
    c.logits_row = make.pick(n_logit_rows);
    c.params = make.params();
    for (int j = 0; j < many_biases; ++j) {
      const float bias = make.pick(20) == 0 ? -100.0f : make.uniform(-3.0f, 3.0f);
      c.params.logit_bias.push_back({make.pick(std::min(vocab, 600)), bias});
    }
    c.ban_stop = make.pick(5) == 0;
    c.position = make.pick(3) == 0 ? static_cast<int64_t>(make.rng() >> 20) : make.pick(4096);
  }
  const std::vector<int32_t> tokens = sample_on_device(logits, vocab, cases, eog);
  Sampler sampler({vocab, eog});
  for (int i = 0; i < n_rows; ++i) {
    const Case& c = cases[i];
    const auto first = logits.begin() + static_cast<ptrdiff_t>(c.logits_row) * vocab;
    std::vector<float> row(first, first + vocab);
    const bool close = top_p_cut_is_close(biased(row, edits_of(c, eog)), c.params);
    RowHistory history;
    history.ban_stop = c.ban_stop;
    const int32_t expected = sampler.sample(row, c.params, c.position, history);
    tally.compared += 1;
    if (close) {
      tally.close_cuts += 1;
      tally.close_mismatches += tokens[i] != expected ? 1 : 0;
      continue;
    }
    if (tokens[i] != expected) {
      tally.mismatches += 1;
      ADD_FAILURE() << "vocab " << vocab << " row " << i << ": device " << tokens[i] << ", CPU "
                    << expected << " (T " << c.params.temperature << ", top_k " << c.params.top_k
                    << ", top_p " << c.params.top_p << ", min_p " << c.params.min_p << ", "
                    << c.params.logit_bias.size() << " biases)";
    }
  }
}

TEST(CudaSampler, TokensEqualTheCpuSamplersOnRandomMixedRows) {
  SKIP_WITHOUT_GPU();
  Tally tally;
  const struct {
    int32_t vocab;
    int rows;
    int launches;
  } sizes[] = {{7, 64, 2},      {1000, 256, 4},  {4099, 256, 4},
               {32000, 192, 3}, {49152, 192, 3}, {128256, 128, 3}};
  uint64_t seed = 1;
  for (const auto& size : sizes) {
    for (int l = 0; l < size.launches; ++l) compare_batch(size.vocab, size.rows, seed++, tally);
  }
  EXPECT_EQ(tally.mismatches, 0);
  std::printf("compared %d rows; %d top_p cuts within rounding of p left out (%d differ)\n",
              tally.compared, tally.close_cuts, tally.close_mismatches);
}

// A few rows of each kind, for a quick look (and for compute-sanitizer, docs/gpu.md).
TEST(CudaSampler, TokensEqualTheCpuSamplersOnASmallBatch) {
  SKIP_WITHOUT_GPU();
  Tally tally;
  compare_batch(4099, 48, 101, tally);
  compare_batch(49152, 16, 102, tally);
  EXPECT_EQ(tally.mismatches, 0);
}

// Rows with 1500 logit_bias entries each, most ids edited several times: edits apply in list
// order whatever their number.
TEST(CudaSampler, TokensEqualTheCpuSamplersWithLongEditLists) {
  SKIP_WITHOUT_GPU();
  Tally tally;
  compare_batch(32000, 24, 103, tally, 1500);
  EXPECT_EQ(tally.mismatches, 0);
}

// Three values over 128256 ids, so each tie group is far past the candidate list: cuts inside
// a group (top_k, top_p) keep its lowest ids, and min_p keeps or drops a group whole. top_p cuts
// inside the top group, whose masses are all 1, so both sides count whole tokens; a target
// within 0.05 of a whole number (float S against the kernel's exact one) is not asked.
TEST(CudaSampler, TiesAtTheCutGoToTheLowestIdsInLargeGroups) {
  SKIP_WITHOUT_GPU();
  constexpr int32_t kVocab = 128256;
  std::vector<float> logits(kVocab);
  for (int32_t i = 0; i < kVocab; ++i) logits[i] = static_cast<float>((i * 7) % 3);
  std::vector<Case> cases;
  for (int32_t k : {0, 2, 100, 42752, 50000, 100000}) {
    for (float p : {1.0f, 0.305f, 0.5525f}) {  // no target a whole number of tokens
      for (float m : {0.0f, 0.2f, 0.5f}) {
        Case c;
        c.params.top_k = k;
        c.params.top_p = p;
        c.params.min_p = m;
        c.params.seed = 7u + cases.size();
        c.position = 5;
        cases.push_back(c);
      }
    }
  }
  const std::vector<int32_t> tokens = sample_on_device(logits, kVocab, cases, {});
  Sampler sampler({kVocab, {}});
  for (size_t i = 0; i < cases.size(); ++i) {
    double total = 0.0;  // what top_p weighs: the survivors of min_p and top_k
    survivor_masses(logits, cases[i].params, &total);
    const double target = cases[i].params.top_p * total;
    if (cases[i].params.top_p < 1.0f && std::abs(target - std::round(target)) < 0.05) continue;
    std::vector<float> row = logits;
    EXPECT_EQ(tokens[i], sampler.sample(row, cases[i].params, cases[i].position))
        << "top_k " << cases[i].params.top_k << ", top_p " << cases[i].params.top_p << ", min_p "
        << cases[i].params.min_p;
  }
}

// ---- the distribution over seeds ----

using Setting = testing::DistributionSetting;

// Total variation between the device's token frequencies over 100,000 seeds (and a few
// positions) and softmax(z) restricted to the kept set (tests/runner/sampler/reference.h).
double total_variation(const std::vector<float>& logits, const Setting& s) {
  const SamplingParams params = s.params();
  constexpr int kDraws = 100000;
  std::vector<Case> cases(kDraws);
  for (int d = 0; d < kDraws; ++d) {
    cases[d].params = params;
    cases[d].params.seed = static_cast<uint64_t>(d) * 0x9E3779B97F4A7C15ull;
    cases[d].position = 11 + d % 5;
  }
  const auto vocab = static_cast<int32_t>(logits.size());
  const std::vector<int32_t> tokens = sample_on_device(logits, vocab, cases, {});
  const std::vector<double> expected = testing::reference_probs(logits, params);
  std::vector<int> hits(logits.size(), 0);
  for (int32_t t : tokens) {
    if (t < 0 || t >= vocab) return 1.0;
    hits[t] += 1;
  }
  return testing::total_variation(hits, kDraws, expected);
}

class CudaSamplerDistribution : public ::testing::TestWithParam<Setting> {};

// The CPU suite's settings (tests/runner/sampler/distribution_test.cpp), on 32 logits.
TEST_P(CudaSamplerDistribution, MatchesTheRenormalizedSoftmaxOfTheKeptSet) {
  SKIP_WITHOUT_GPU();
  EXPECT_LE(total_variation(testing::normal_logits(32, 1.5f, 7), GetParam()), 0.01);
}

INSTANTIATE_TEST_SUITE_P(Settings, CudaSamplerDistribution,
                         ::testing::ValuesIn(testing::distribution_settings()),
                         [](const auto& info) { return "Setting" + std::to_string(info.index); });

// The same 32 logits spread over a 49152-entry row whose other entries are ~e^-30 below: the
// radix select and the Gumbel pass at a real vocabulary's size.
TEST(CudaSamplerDistributionLargeVocabulary, MatchesTheSoftmaxOfTheKeptSet) {
  SKIP_WITHOUT_GPU();
  const std::vector<float> head = testing::normal_logits(32, 1.5f, 7);
  std::vector<float> logits = testing::normal_logits(49152, 1.0f, 3);
  for (float& v : logits) v -= 30.0f;
  for (int j = 0; j < 32; ++j) logits[j * 1531 + 17] = head[j];
  for (const Setting& s : {Setting{1.0f, 0, 1.0f, 0.0f}, Setting{0.7f, 5, 1.0f, 0.0f},
                           Setting{1.3f, 0, 0.8f, 0.0f}, Setting{1.5f, 12, 0.95f, 0.02f}}) {
    EXPECT_LE(total_variation(logits, s), 0.01)
        << "T " << s.temperature << ", top_k " << s.top_k << ", top_p " << s.top_p;
  }
}

}  // namespace
}  // namespace tandem::cuda::TANDEM_UNITY_ID
