// Matmul speed on the smollm2-135m shape (hidden 576, 30 layers, QKV 576->960,
// O 576->576, gate+up 576->3072, down 1536->576, head 576->32000).
//
// BM_DecodeStep runs every matmul of one decode step over the whole model's weights
// (about 125M parameters; successive steps use different copies, so batch 1 measures
// weight streaming from DRAM) for M rows, and reports tok/s = M / step time, GB/s of packed weights
// streamed and GFLOP/s. BM_Matmul runs one shape repeatedly (its weights may stay
// in cache). Run with --benchmark_repetitions=5 --benchmark_report_aggregates_only
// for medians; TANDEM_ISA=avx512|avx2 lowers the instruction set.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "runner/kernels/kernels.h"
#include "runner/kernels/quantize_q8.h"
#include "runner/util/float16.h"

namespace {

using tandem::gguf::TensorType;
using tandem::kernels::PackedWeights;
using tandem::kernels::WeightSource;

constexpr int64_t kHidden = 576, kQkv = 960, kFfn = 1536, kVocab = 32000, kLayers = 30;

// Fast deterministic fill: the values only need to be ordinary numbers.
struct Xorshift {
  uint64_t s = 0x9e3779b97f4a7c15ull;
  float next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return static_cast<float>(static_cast<int64_t>(s >> 40) - (1 << 23)) * 0x1p-25f;
  }
};

PackedWeights make_weights(TensorType type, int64_t n_out, int64_t n_in, Xorshift& rng) {
  std::vector<uint8_t> bytes;
  const int64_t n = n_out * n_in;
  switch (type) {
    case TensorType::kF32:
      bytes.resize(n * 4);
      for (int64_t i = 0; i < n; ++i) {
        const float v = rng.next();
        std::memcpy(&bytes[i * 4], &v, 4);
      }
      break;
    case TensorType::kF16:
    case TensorType::kBF16:
      bytes.resize(n * 2);
      for (int64_t i = 0; i < n; ++i) {
        const float v = rng.next();
        const uint16_t h =
            type == TensorType::kF16 ? tandem::half_from_float(v) : tandem::bfloat_from_float(v);
        std::memcpy(&bytes[i * 2], &h, 2);
      }
      break;
    case TensorType::kQ8_0: {
      std::vector<tandem::gguf::BlockQ8_0> blocks(n / 32);
      for (auto& b : blocks) {
        b.d = tandem::half_from_float(0.01f);
        for (auto& q : b.qs) q = static_cast<int8_t>(rng.next() * 200);
      }
      bytes.resize(blocks.size() * sizeof(blocks[0]));
      std::memcpy(bytes.data(), blocks.data(), bytes.size());
      break;
    }
    case TensorType::kQ4_0:
    case TensorType::kQ5_0:
    case TensorType::kQ4_K:
    case TensorType::kQ6_K: {
      // Random bytes with bit 6 of every byte cleared: each F16 scale is finite and below 2
      // (the values do not matter to the speed). n_in must be whole blocks of the type.
      const int64_t block = tandem::gguf::block_elements(type);
      if (n_in % block != 0) std::abort();
      bytes.resize(n / block * tandem::gguf::block_bytes(type));
      for (auto& b : bytes) {
        rng.next();
        b = static_cast<uint8_t>(rng.s >> 56) & 0xbf;
      }
      break;
    }
    default:  // the other quantized types' kernels come with their own cases
      std::abort();
  }
  return PackedWeights::pack(WeightSource{type, bytes.data(), n_out, n_in});
}

struct Model {
  struct Layer {
    PackedWeights qkv, o, gate_up, down;
  };
  std::vector<Layer> layers;
  PackedWeights head;
  size_t bytes = 0;
  double params = 0;
};

// Copies of the model to rotate through, one per step, so that the weights come from
// DRAM even where the host's last-level cache could hold one copy (some AMD hosts
// share hundreds of MiB of L3 with their VMs): at least 1 GiB in all.
constexpr double kWorkingSetBytes = 1024.0 * 1024 * 1024;

// One weight type's copies at a time (the F32 model alone is 0.5 GB).
const std::vector<Model>& models_of(TensorType type) {
  static std::vector<Model> models;
  static TensorType models_type;
  if (models.empty() || models_type != type) {
    models.clear();
    models_type = type;
    Xorshift rng;
    do {
      Model model;
      for (int64_t l = 0; l < kLayers; ++l) {
        Model::Layer layer{
            make_weights(type, kQkv, kHidden, rng), make_weights(type, kHidden, kHidden, rng),
            make_weights(type, 2 * kFfn, kHidden, rng), make_weights(type, kHidden, kFfn, rng)};
        for (const PackedWeights* w : {&layer.qkv, &layer.o, &layer.gate_up, &layer.down}) {
          model.bytes += w->bytes();
          model.params += static_cast<double>(w->n_out()) * w->n_in();
        }
        model.layers.push_back(std::move(layer));
      }
      model.head = make_weights(type, kVocab, kHidden, rng);
      model.bytes += model.head.bytes();
      model.params += static_cast<double>(kVocab) * kHidden;
      models.push_back(std::move(model));
    } while (static_cast<double>(models.size() * models[0].bytes) < kWorkingSetBytes);
  }
  return models;
}

void report(benchmark::State& state, double bytes, double flops, int64_t rows) {
  const double iters = static_cast<double>(state.iterations());
  state.counters["GB/s"] = benchmark::Counter(bytes * iters / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(flops * iters / 1e9, benchmark::Counter::kIsRate);
  state.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(rows) * iters, benchmark::Counter::kIsRate);
}

// Every matmul of one decode step of smollm2-135m (attention and norms excluded).
template <TensorType kType>
void BM_DecodeStep(benchmark::State& state) {
  const int64_t rows = state.range(0);
  tandem::ThreadPool pool(static_cast<int>(state.range(1)));
  const std::vector<Model>& models = models_of(kType);
  std::vector<float> x(rows * kFfn, 0.5f), y(rows * kVocab);
  auto step = [&](const Model& model) {
    for (const Model::Layer& layer : model.layers) {
      tandem::kernels::matmul(pool, layer.qkv, x.data(), rows, y.data());
      tandem::kernels::matmul(pool, layer.o, x.data(), rows, y.data());
      tandem::kernels::matmul(pool, layer.gate_up, x.data(), rows, y.data());
      tandem::kernels::matmul(pool, layer.down, x.data(), rows, y.data());
    }
    tandem::kernels::matmul(pool, model.head, x.data(), rows, y.data());
    benchmark::ClobberMemory();
  };
  // One untimed pass over every copy: on some VMs memory not read for a while is slow to
  // read again (the first timed pass over freshly built copies ran 10-20x slower, Zen 5).
  for (const Model& model : models) step(model);
  size_t next = 0;
  for (auto _ : state) step(models[next++ % models.size()]);
  report(state, static_cast<double>(models[0].bytes), 2.0 * models[0].params * rows, rows);
  state.SetLabel(tandem::kernels::isa_name(tandem::kernels::detected_isa()));
}

void decode_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "threads"})->UseRealTime()->Unit(benchmark::kMillisecond);
  for (int64_t m : {1, 2, 4, 8, 16, 32}) b->Args({m, 2});
  // One thread: its CPU time is a per-core rate that contention on a shared machine
  // distorts less than the wall clock of two.
  b->Args({1, 1})->Args({32, 1});
}
BENCHMARK_TEMPLATE(BM_DecodeStep, TensorType::kBF16)->Apply(decode_args);
BENCHMARK_TEMPLATE(BM_DecodeStep, TensorType::kF16)->Apply(decode_args);
BENCHMARK_TEMPLATE(BM_DecodeStep, TensorType::kQ8_0)->Apply(decode_args);
BENCHMARK_TEMPLATE(BM_DecodeStep, TensorType::kF32)->Apply(decode_args);
// The quantized kernels (quant_vector.h, quant_lanes.h) on the whole model: a Q4_K_M file
// of this shape is mostly Q5_0 (576-wide rows cannot hold 256-value K-quant blocks). Also
// 4 and 6 rows, around where batches switch from the row form to the lane form.
void quant_decode_args(benchmark::internal::Benchmark* b) {
  decode_args(b);
  b->Args({2, 2})->Args({3, 2})->Args({4, 2})->Args({6, 2});
}
BENCHMARK_TEMPLATE(BM_DecodeStep, TensorType::kQ5_0)->Apply(quant_decode_args);
BENCHMARK_TEMPLATE(BM_DecodeStep, TensorType::kQ4_0)->Apply(quant_decode_args);

// One shape, weights possibly cache-resident: the kernel's compute rate.
template <TensorType kType>
void BM_Matmul(benchmark::State& state) {
  const int64_t n_out = state.range(0), n_in = state.range(1), rows = state.range(2);
  tandem::ThreadPool pool(2);
  Xorshift rng;
  const PackedWeights w = make_weights(kType, n_out, n_in, rng);
  std::vector<float> x(rows * n_in, 0.5f), y(rows * n_out);
  for (auto _ : state) {
    tandem::kernels::matmul(pool, w, x.data(), rows, y.data());
    benchmark::ClobberMemory();
  }
  report(state, static_cast<double>(w.bytes()), 2.0 * n_out * n_in * rows, rows);
}

void shape_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n_out", "n_in", "M"})->UseRealTime()->Unit(benchmark::kMicrosecond);
  // 8: the batch of issue 16's n = 8 choices, on the smollm2 shape's FFN matrices.
  for (int64_t m : {1, 8, 32}) b->Args({3072, 576, m})->Args({576, 1536, m});
  for (int64_t m : {1, 2, 3, 5, 8, 16, 32}) b->Args({512, 576, m});
  // A 1024-token prefill's FFN matmuls (issue 15's GEMMs at M >= 64).
  b->Args({3072, 576, 1024})->Args({576, 1536, 1024});
}
BENCHMARK_TEMPLATE(BM_Matmul, TensorType::kBF16)->Apply(shape_args);
BENCHMARK_TEMPLATE(BM_Matmul, TensorType::kF16)->Apply(shape_args);

// Quantized weights (kept in their GGUF blocks, integer dot products against activations
// quantized per row): a 2048 x 2048 matrix (n_in a whole number of 256-blocks), rotating
// through copies worth 256 MiB so that M = 1 streams the weights from DRAM. GB/s counts
// the blocks' bytes, GFLOP/s 2 * n_out * n_in * M. Random bytes with a small F16 scale are
// valid blocks of every type (the values do not matter to the speed). With in_l2:1 the
// matrix is one copy of 512 rows (under 1 MiB in every type but Q8_0, so each thread's
// half stays in its L2): the kernel's own arithmetic speed, which memory hides at M = 1
// when it is below the read bandwidth and exposes when it is not. n_in:576 (legacy types
// only) is smollm2's row, 18 blocks: spans of 8, 8 and 2, as in a Q4_K_M file of that
// shape, with as many rows as make the same million weights.
template <TensorType kType>
void BM_QuantMatmul(benchmark::State& state) {
  const bool in_l2 = state.range(2) != 0;
  const int64_t n_in = state.range(3);
  const int64_t n_out = in_l2 ? 512 * 2048 / n_in / 16 * 16 : 2048;
  const int64_t rows = state.range(0);
  tandem::ThreadPool pool(static_cast<int>(state.range(1)));
  const int64_t row_bytes =
      n_in / tandem::gguf::block_elements(kType) * tandem::gguf::block_bytes(kType);
  const int copies =
      in_l2 ? 1 : static_cast<int>(std::max<int64_t>(1, (256 << 20) / (row_bytes * n_out)));
  std::vector<PackedWeights> weights;
  Xorshift rng;
  std::vector<uint8_t> bytes(row_bytes * n_out);
  for (int c = 0; c < copies; ++c) {
    // Bit 6 of every byte cleared: each F16 scale is finite and below 2.
    for (auto& b : bytes) {
      rng.next();
      b = static_cast<uint8_t>(rng.s >> 56) & 0xbf;
    }
    weights.push_back(PackedWeights::pack(WeightSource{kType, bytes.data(), n_out, n_in}));
  }
  std::vector<float> x(rows * n_in), y(rows * n_out);
  for (auto& v : x) v = rng.next();
  size_t step = 0;
  for (auto _ : state) {
    tandem::kernels::matmul(pool, weights[step++ % weights.size()], x.data(), rows, y.data());
    benchmark::ClobberMemory();
  }
  report(state, static_cast<double>(row_bytes * n_out), 2.0 * n_out * n_in * rows, rows);
  state.SetLabel(tandem::kernels::isa_name(tandem::kernels::detected_isa()));
}

void quant_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "threads", "in_l2", "n_in"})->UseRealTime()->Unit(benchmark::kMicrosecond);
  b->Args({1, 2, 0, 2048})->Args({32, 2, 0, 2048})->Args({1, 2, 1, 2048});
  // Small batches: the streamed form (4 rows; 8 with AVX-512 VNNI).
  b->Args({4, 2, 0, 2048})->Args({8, 2, 0, 2048});
  // The batch kernels' own speed, the matrix in L2 (batches are compute-bound, so these
  // move with the kernel and not with the memory a shared machine lends).
  b->Args({4, 2, 1, 2048})->Args({8, 2, 1, 2048})->Args({32, 2, 1, 2048});
  // The same on one thread (the whole matrix in its L2): the kernel without the pool's
  // hand-offs, the steadiest figure a shared machine gives for a kernel change.
  b->Args({8, 1, 1, 2048})->Args({32, 1, 1, 2048});
  // Batches on AMX-INT8's tiles where the CPU has them: one tile of rows, then a prefill's.
  b->Args({16, 2, 1, 2048})->Args({64, 2, 1, 2048})->Args({512, 2, 1, 2048});
}
void legacy_quant_args(benchmark::internal::Benchmark* b) {
  quant_args(b);
  b->Args({1, 2, 1, 576})->Args({1, 1, 1, 576});
  b->Args({16, 2, 1, 576})->Args({32, 2, 1, 576})->Args({512, 2, 1, 576});
  b->Args({512, 1, 1, 576});
}
BENCHMARK_TEMPLATE(BM_QuantMatmul, TensorType::kQ4_0)->Apply(legacy_quant_args);
BENCHMARK_TEMPLATE(BM_QuantMatmul, TensorType::kQ4_1)->Apply(legacy_quant_args);
BENCHMARK_TEMPLATE(BM_QuantMatmul, TensorType::kQ5_0)->Apply(legacy_quant_args);
BENCHMARK_TEMPLATE(BM_QuantMatmul, TensorType::kQ5_1)->Apply(legacy_quant_args);
BENCHMARK_TEMPLATE(BM_QuantMatmul, TensorType::kQ2_K)->Apply(quant_args);
BENCHMARK_TEMPLATE(BM_QuantMatmul, TensorType::kQ3_K)->Apply(quant_args);
BENCHMARK_TEMPLATE(BM_QuantMatmul, TensorType::kQ4_K)->Apply(quant_args);
BENCHMARK_TEMPLATE(BM_QuantMatmul, TensorType::kQ5_K)->Apply(quant_args);
BENCHMARK_TEMPLATE(BM_QuantMatmul, TensorType::kQ6_K)->Apply(quant_args);
BENCHMARK_TEMPLATE(BM_QuantMatmul, TensorType::kIQ4_NL)->Apply(legacy_quant_args);
BENCHMARK_TEMPLATE(BM_QuantMatmul, TensorType::kIQ4_XS)->Apply(quant_args);
BENCHMARK_TEMPLATE(BM_QuantMatmul, TensorType::kQ8_0)->Apply(quant_args);

// A batch's activations quantized for the integer path, with the lane layout the batch
// kernels read (what each quantized matmul of a 32-row step does first), on one thread:
// rows x n_in values to Q8_0 blocks (legacy weights) or Q8_K (K-quants).
void BM_QuantizeActivations(benchmark::State& state) {
  namespace d = tandem::kernels::detail;
  const int64_t rows = state.range(0), n_in = state.range(1);
  const auto format = state.range(2) != 0 ? d::ActFormat::kQ8_K : d::ActFormat::kQ8_0;
  std::vector<float> x(rows * n_in);
  Xorshift rng;
  for (auto& v : x) v = rng.next();
  d::QuantizedActivations out;
  for (auto _ : state) {
    d::quantize_rows(format, x.data(), rows, n_in, out, true);
    benchmark::ClobberMemory();
  }
  state.counters["ns/block"] = benchmark::Counter(
      static_cast<double>(rows * (n_in / d::act_block(format))) * state.iterations() * 1e-9,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_QuantizeActivations)
    ->ArgNames({"M", "n_in", "q8_k"})
    ->Args({32, 576, 0})
    ->Args({32, 1536, 0})
    ->Args({32, 1536, 1})
    ->Unit(benchmark::kMicrosecond);

// Packing cost at load: GB/s of source weights repacked (one thread).
template <TensorType kType>
void BM_Pack(benchmark::State& state) {
  const int64_t n_out = 3072, n_in = 576;
  Xorshift rng;
  std::vector<uint8_t> bytes(n_out * n_in * 4);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng.next() * 64);  // finite values only
  const size_t source_bytes = kType == TensorType::kF32 ? n_out * n_in * 4 : n_out * n_in * 2;
  for (auto _ : state) {
    benchmark::DoNotOptimize(PackedWeights::pack(WeightSource{kType, bytes.data(), n_out, n_in}));
  }
  state.counters["GB/s"] = benchmark::Counter(
      static_cast<double>(source_bytes) * static_cast<double>(state.iterations()) / 1e9,
      benchmark::Counter::kIsRate);
}
BENCHMARK_TEMPLATE(BM_Pack, TensorType::kBF16)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_Pack, TensorType::kF32)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
