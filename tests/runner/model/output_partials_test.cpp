// The output matmul's softmax partials (forward.h, ForwardRow::logit_partials): every path
// that writes the logits gives the bits the sampler's own kernel gives over the finished
// row: the panel loops' epilogue at one row, at two (AVX2's chunked panels) and in tiles of
// a large batch (F16's widened chunks), on every instruction set this CPU runs, and the pass
// after the quantized kernels and after gemma2's soft cap. So a row's log-probabilities do
// not depend on which of them computed its Z (law 2). The raw copy a row may ask for beside
// them holds the row's bits. Rows that ask for neither get neither (a raw copy comes only
// with partials).
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "runner/model/forward.h"
#include "runner/sampler/kernels.h"
#include "tests/common/isa_scope.h"
#include "tests/common/test_models.h"
#include "tests/common/test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using gguf::TensorType;

struct StepSetup {
  explicit StepSetup(const std::filesystem::path& path)
      : model(Model::load(path)),
        pool(2),
        kv(model->config().n_layer, model->config().kv_dim(), 32, KvType::kF32,
           model->config().head_dim),
        forward(*model, kv, pool) {}
  std::vector<int32_t> blocks(int32_t n) {
    std::vector<int32_t> b(n);
    std::iota(b.begin(), b.end(), next);
    next += n;
    return b;
  }
  std::unique_ptr<Model> model;
  ThreadPool pool;
  KvCache kv;
  ForwardPass forward;
  int32_t next = 0;
};

// Runs the rows and checks each logit row: the partials of those that asked, bit for bit
// against the portable kernel over the row, and none for the others. Returns how many rows
// were checked.
int check_run(StepSetup& s, std::span<const ForwardRow> rows) {
  const std::span<float> logits = s.forward.run(rows);
  const auto vocab = static_cast<int32_t>(s.model->config().n_vocab);
  const int32_t panels = sampler_kernels::logit_panels(vocab);
  int64_t i = 0;
  int checked = 0;
  for (const ForwardRow& r : rows) {
    const int64_t count = r.all_logits ? static_cast<int64_t>(r.tokens.size()) : r.want_logits;
    for (int64_t j = 0; j < count; ++j, ++i) {
      const std::span<const float> got = s.forward.partials(i);
      const std::span<const float> raw = s.forward.raw_logits(i);
      if (r.logit_partials && r.raw_logits) {
        EXPECT_EQ(raw.size(), static_cast<size_t>(vocab));
        if (raw.size() != static_cast<size_t>(vocab)) return checked;
        EXPECT_EQ(0, std::memcmp(raw.data(), logits.data() + i * vocab, sizeof(float) * vocab))
            << "row " << i;
      } else {
        EXPECT_TRUE(raw.empty()) << "logit row " << i;
      }
      if (!r.logit_partials) {
        EXPECT_TRUE(got.empty()) << "logit row " << i;
        continue;
      }
      std::vector<float> max(panels), sum(panels);
      sampler_kernels::portable().panel_partials(logits.data() + i * vocab, vocab, max.data(),
                                                 sum.data());
      EXPECT_EQ(got.size(), static_cast<size_t>(2 * panels));
      if (got.size() != static_cast<size_t>(2 * panels)) return checked;
      EXPECT_EQ(0, std::memcmp(got.data(), max.data(), sizeof(float) * panels)) << "row " << i;
      EXPECT_EQ(0, std::memcmp(got.data() + panels, sum.data(), sizeof(float) * panels))
          << "row " << i;
      ++checked;
    }
  }
  return checked;
}

// Steps of 42, 2 and 1 logit rows, some asking for partials.
void check_model(const std::filesystem::path& path) {
  StepSetup s(path);
  std::vector<int32_t> prompt(40);
  std::iota(prompt.begin(), prompt.end(), 3);
  const std::vector<int32_t> a = {7, 8, 9, 10, 11}, b = {20, 21, 22, 23, 24, 25, 26, 27};
  const auto pa = s.blocks(4), pb = s.blocks(4), pc = s.blocks(4);
  ForwardRow many[] = {{prompt, 0, pa, true, true, {}, Pooling::kNone, true, true},
                       {a, 0, pb, true, false, {}, Pooling::kNone, false, true},
                       {b, 0, pc, true, false, {}, Pooling::kNone, true, false}};
  EXPECT_EQ(check_run(s, many), 41);
  const int32_t next_a = 12, next_b = 28;
  ForwardRow two[] = {{{&next_a, 1}, 5, pb, true, false, {}, Pooling::kNone, true, true},
                      {{&next_b, 1}, 8, pc, true, false, {}, Pooling::kNone, true, false}};
  EXPECT_EQ(check_run(s, two), 2);
  const int32_t next = 13;
  ForwardRow one[] = {{{&next, 1}, 6, pb, true, false, {}, Pooling::kNone, true, true}};
  EXPECT_EQ(check_run(s, one), 1);
}

class OutputPartials : public ::testing::TestWithParam<TensorType> {};

TEST_P(OutputPartials, EqualTheSamplersKernelOverTheRowOnEveryIsa) {
  ScratchDir dir;
  const auto path = write_tiny_llama(dir.path(), GetParam());
  for (kernels::Isa isa : runnable_isas()) {
    SCOPED_TRACE(kernels::isa_name(isa));
    IsaScope scope(isa);
    check_model(path);
  }
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, OutputPartials,
                         ::testing::Values(TensorType::kF32, TensorType::kF16, TensorType::kBF16,
                                           TensorType::kQ8_0),
                         [](const auto& info) { return std::string(gguf::type_name(info.param)); });

// gemma2's soft cap changes the logits after the matmul: the partials are those of the
// capped row.
TEST(OutputPartials, FollowGemma2sSoftCap) {
  TANDEM_REQUIRE_SHARED();
  const auto path = *shared_dir() / "models/families/gemma2-tiny-s777-f16.gguf";
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  StepSetup s(path);
  ASSERT_NE(s.model->config().final_softcap, 0.0f);
  const std::vector<int32_t> prompt = {2, 100, 200, 300, 400};
  const auto blocks = s.blocks(1);
  ForwardRow rows[] = {{prompt, 0, blocks, true, true, {}, Pooling::kNone, true, true}};
  EXPECT_EQ(check_run(s, rows), 5);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
