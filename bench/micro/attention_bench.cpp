// Decode attention's walk over a row's cache blocks on one thread, as one decode task does
// it on the smollm2 shape (3 KV heads of 64, 3 query heads each, 16-slot blocks): per
// block, each KV head's scores (dot_keys over the transposed keys), the softmax step
// (scaled_exp_sums), and each head's value sums (axpy_rows_multi). layout:1 holds V by
// heads ([head][slot][head_dim]) as the cache does since 2026-12-02; layout:0 as
// slot-major vectors, as it did before (each head's pass strides through the block).
// ahead: 0 no software prefetch, 1 the next block's lines into
// L1 before each block (what the forward pass did before 2026-12-02's third session), 2 the
// next block read with loads, 3 its lines into L2, 4 each KV head's run of the next block's
// K just before the head's scores and of its V just before the head's value sums (what
// ForwardPass::prefetch_head_run does). keys:1024 is about the size of L2 (the kernels' own
// speed); keys:65536 (48 MiB of f16) comes from memory, beside BM_ReadBlocks, a plain read
// of the same bytes in order: what one thread's memory gives.
//   build-test/bench/bench_attention --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstdint>
#include <random>
#include <vector>

#include "runner/kernels/kernels.h"
#include "runner/util/float16.h"
#include "runner/util/huge_pages.h"

namespace {

using tandem::gguf::TensorType;

constexpr int64_t kHeadDim = 64, kKvHeads = 3, kGroup = 3, kBlock = 16;
constexpr int64_t kKvDim = kKvHeads * kHeadDim, kHeads = kKvHeads * kGroup;

// n_keys keys' blocks of random values, on huge pages as the cache's are: per block K
// transposed ([kv_dim][slot]) then V; their bytes.
struct Blocks {
  tandem::LargeBytes memory;
  int64_t n_blocks, es, k_bytes, block_bytes;
  Blocks(TensorType type, int64_t n_keys)
      : n_blocks(n_keys / kBlock), es(type == TensorType::kF32 ? 4 : 2) {
    k_bytes = kKvDim * kBlock * es;
    block_bytes = 2 * k_bytes;
    memory = tandem::allocate_large(static_cast<size_t>(n_blocks * block_bytes));
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (int64_t i = 0; i < n_blocks * block_bytes; i += es) {
      const float v = dist(rng);
      if (es == 4) {
        __builtin_memcpy(&memory[i], &v, 4);
      } else {
        const uint16_t h =
            type == TensorType::kF16 ? tandem::half_from_float(v) : tandem::bfloat_from_float(v);
        __builtin_memcpy(&memory[i], &h, 2);
      }
    }
  }
  size_t bytes() const { return static_cast<size_t>(n_blocks * block_bytes); }
};

// n bytes read with 32-byte loads every `step` bytes (32: all of them; 64: a load a line),
// summed so the loads are not dropped.
__attribute__((target("avx2"))) int64_t read_bytes(const uint8_t* p, size_t n, size_t step) {
  __m256i sum = _mm256_setzero_si256();
  for (size_t at = 0; at < n; at += step)
    sum = _mm256_add_epi32(sum, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + at)));
  return _mm256_extract_epi64(sum, 0);
}

void BM_DecodeAttentionWalk(benchmark::State& state, TensorType type) {
  const Blocks blocks(type, state.range(0));
  const bool by_heads = state.range(1) != 0;
  const int ahead = static_cast<int>(state.range(2));
  int64_t sink = 0;
  const int64_t es = blocks.es;
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> q(kHeads * kHeadDim), scores(kHeads * kBlock), acc(kHeads * kHeadDim);
  for (float& v : q) v = dist(rng);
  const float* qs[kHeads];
  float* outs[kHeads];
  for (int a = 0; a < kHeads; ++a) {
    qs[a] = &q[a * kHeadDim];
    outs[a] = &scores[a * kBlock];
  }
  float max[kHeads], sums[kHeads];
  // Head h's values of slot 0, and the bytes between its slots.
  const int64_t v_stride = by_heads ? kHeadDim * es : kKvDim * es;
  const int64_t v_head = by_heads ? kBlock * kHeadDim * es : kHeadDim * es;
  for (auto _ : state) {
    for (float& m : max) m = -1e30f;
    for (int64_t b = 0; b < blocks.n_blocks; ++b) {
      const uint8_t* block = &blocks.memory[b * blocks.block_bytes];
      const uint8_t* next = b + 1 < blocks.n_blocks ? block + blocks.block_bytes : nullptr;
      // ahead:4's run of a head (its keys' rows, or by_heads its values) in the next block.
      auto ask_run = [&](int64_t offset) {
        if (ahead != 4 || next == nullptr) return;
        for (int64_t at = 0; at < kHeadDim * kBlock * es; at += 64)
          _mm_prefetch(reinterpret_cast<const char*>(next + offset + at), _MM_HINT_T0);
      };
      if (ahead != 0 && ahead != 4 && next != nullptr) {
        if (ahead == 2) {
          sink += read_bytes(next, static_cast<size_t>(blocks.block_bytes), 64);
        } else {
          for (int64_t at = 0; at < blocks.block_bytes; at += 64) {
            if (ahead == 1) {
              _mm_prefetch(reinterpret_cast<const char*>(next + at), _MM_HINT_T0);
            } else {
              _mm_prefetch(reinterpret_cast<const char*>(next + at), _MM_HINT_T1);
            }
          }
        }
      }
      for (int64_t h = 0; h < kKvHeads; ++h) {
        ask_run(h * kHeadDim * kBlock * es);
        tandem::kernels::dot_keys(type, qs + h * kGroup, kGroup, block + h * kHeadDim * kBlock * es,
                                  kBlock, kBlock, kHeadDim, outs + h * kGroup);
      }
      tandem::kernels::scaled_exp_sums(scores.data(), kBlock, kHeads, kBlock, 0.125f, max, sums);
      for (int64_t h = 0; h < kKvHeads; ++h) {
        if (by_heads) ask_run(blocks.k_bytes + h * v_head);
        tandem::kernels::axpy_rows_multi(type, scores.data() + h * kGroup * kBlock, kBlock, kGroup,
                                         block + blocks.k_bytes + h * v_head, v_stride, kBlock,
                                         kHeadDim, acc.data() + h * kGroup * kHeadDim, kHeadDim);
      }
    }
    benchmark::DoNotOptimize(acc.data());
  }
  benchmark::DoNotOptimize(sink);
  state.counters["GB/s"] =
      benchmark::Counter(static_cast<double>(blocks.bytes()) * state.iterations(),
                         benchmark::Counter::kIsRate, benchmark::Counter::OneK::kIs1000);
}

void BM_ReadBlocks(benchmark::State& state) {
  const Blocks blocks(TensorType::kF16, state.range(0));
  for (auto _ : state)
    benchmark::DoNotOptimize(read_bytes(blocks.memory.get(), blocks.bytes(), 32));
  state.counters["GB/s"] =
      benchmark::Counter(static_cast<double>(blocks.bytes()) * state.iterations(),
                         benchmark::Counter::kIsRate, benchmark::Counter::OneK::kIs1000);
}

void walk_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"keys", "layout", "ahead"})->Unit(benchmark::kMicrosecond);
  for (int64_t keys : {1024, 64 * 1024}) {
    for (int64_t a : {0, 1, 2, 3}) b->Args({keys, 0, a})->Args({keys, 1, a});
    b->Args({keys, 1, 4});  // per-head runs need V held by heads
  }
}
BENCHMARK_CAPTURE(BM_DecodeAttentionWalk, f16, TensorType::kF16)->Apply(walk_args);
BENCHMARK_CAPTURE(BM_DecodeAttentionWalk, bf16, TensorType::kBF16)->Apply(walk_args);
BENCHMARK_CAPTURE(BM_DecodeAttentionWalk, f32, TensorType::kF32)->Apply(walk_args);
BENCHMARK(BM_ReadBlocks)->ArgNames({"keys"})->Arg(64 * 1024)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
