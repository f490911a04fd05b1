// The GPU executor's decode speed on the smollm2-135m shape (issue 19's targets), printed,
// never asserted:
// - the device's copy bandwidth (cudaMemcpy device to device, bytes read plus written, as
//   ../shared/perf-notes.md and the device notes count it) and the batch-1 floor it sets:
//   bandwidth / bytes of weights streamed per token;
// - decode tok/s at 1, 8, 32 and 64 rows with steps chained on the device (each step's
//   tokens fed from device memory, the next step enqueued before the host reads the last),
//   with the CUDA graph off and on, and with the host feeding every step (a round trip per
//   step), side by side, and chained graphs without programmatic dependent launch (each
//   kernel waiting for the last to end before it starts); and the median device idle gap
//   between chained steps.
// The model: TANDEM_BENCH_MODEL, else make-model's smollm2-135m in BF16 (written once).
//   build-test/bench/bench_gpu_decode [steps]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "runner/cuda/cuda_executor.h"
#include "runner/model/make_model.h"

#if defined(TANDEM_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

#if defined(TANDEM_HAVE_CUDA)
// Device-to-device copy bandwidth, bytes read plus written per second (median of 9).
double copy_bandwidth() {
  const size_t bytes = size_t{1} << 30;
  void *a = nullptr, *b = nullptr;
  if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) return 0;
  cudaEvent_t start, end;
  cudaEventCreate(&start);
  cudaEventCreate(&end);
  cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
  std::vector<float> ms;
  for (int i = 0; i < 9; ++i) {
    cudaEventRecord(start);
    cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(end);
    cudaEventSynchronize(end);
    float t = 0;
    cudaEventElapsedTime(&t, start, end);
    ms.push_back(t);
  }
  cudaFree(a);
  cudaFree(b);
  std::nth_element(ms.begin(), ms.begin() + 4, ms.end());
  return 2.0 * static_cast<double>(bytes) / (ms[4] / 1000.0);
}
#else
double copy_bandwidth() { return 0; }
#endif

std::filesystem::path bench_model() {
  if (const char* env = std::getenv("TANDEM_BENCH_MODEL")) return env;
  tandem::make_model::MakeModelOptions o;
  o.shape = "smollm2-135m";
  o.dtype = tandem::gguf::TensorType::kBF16;
  o.out = std::filesystem::temp_directory_path() / "tandem-bench-smollm2-BF16.gguf";
  if (!std::filesystem::exists(o.out)) tandem::make_model::write_random_model(o);
  return o.out;
}

struct Mode {
  const char* name;
  bool graphs;
  bool device_fed;
  bool profile = false;
  bool dependent_launch = true;
};

// tok/s of `steps` decode steps of `rows` rows after a 32-token prefill each.
double decode_rate(const std::shared_ptr<const tandem::Model>& model, int rows, int steps,
                   const Mode& mode, double* gap_us) {
  tandem::CudaExecutorOptions o;
  o.kv_tokens = int64_t{rows} * 256 + 256;
  o.graphs = mode.graphs;
  o.profile = mode.profile;
  o.dependent_launch = mode.dependent_launch;
  o.max_sequences = rows;
  std::unique_ptr<tandem::StepExecutor> exec = tandem::make_cuda_executor(model, o);
  tandem::StepPlan plan;
  for (int r = 0; r < rows; ++r) {
    tandem::StepRow row;
    row.tokens.resize(32);
    std::iota(row.tokens.begin(), row.tokens.end(), 100 + r);
    row.kv_blocks.resize(16);
    std::iota(row.kv_blocks.begin(), row.kv_blocks.end(), 16 * r);
    row.sampling.seed = 1 + r;
    row.sampling.temperature = 0.8f;
    row.sampling.top_k = 40;
    plan.rows.push_back(row);
  }
  tandem::StepResult result;
  exec->execute_step(plan, result);
  auto advance = [&](bool device_fed) {
    for (int r = 0; r < rows; ++r) {
      tandem::StepRow& row = plan.rows[r];
      row.position += static_cast<int32_t>(row.tokens.size());
      row.tokens.assign(1, device_fed ? tandem::kNoToken : result.tokens[r]);
    }
  };
  const auto start = Clock::now();
  if (mode.device_fed) {  // one step in flight behind another, as the device worker runs them
    advance(true);
    exec->submit(plan, true);
    for (int s = 1; s < steps; ++s) {
      advance(true);
      exec->submit(plan, true);
      exec->collect(result);
    }
    exec->collect(result);
  } else {
    for (int s = 0; s < steps; ++s) {
      advance(false);
      exec->execute_step(plan, result);
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  double busy = 0;
  exec->device_timing(busy, *gap_us);
  return rows * steps / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  if (const std::string why = tandem::cuda_unavailable_reason(); !why.empty()) {
    std::printf("bench_gpu_decode: no GPU here (%s)\n", why.c_str());
    return 0;
  }
  const int steps = argc > 1 ? std::atoi(argv[1]) : 128;
  const std::shared_ptr<const tandem::Model> model = tandem::Model::load(bench_model());
  const double bandwidth = copy_bandwidth();
  const double weight_bytes = static_cast<double>(model->packed_bytes());
  const double floor = bandwidth / weight_bytes;
  std::printf(
      "%s; copy bandwidth %.0f GB/s (read + write); weights %.1f MB per token; batch-1 "
      "floor %.0f tok/s\n",
      tandem::cuda_device_description().c_str(), bandwidth / 1e9, weight_bytes / 1e6, floor);
  const Mode modes[] = {{"host-fed, plain launches", false, false},
                        {"host-fed, graphs", true, false},
                        {"device-fed (chained), plain launches", false, true},
                        {"device-fed (chained), graphs", true, true},
                        {"device-fed, graphs, no dependent launch", true, true, false, false}};
  for (int rows : {1, 64}) {  // where the time goes (printed by the executor, to stderr)
    std::fprintf(stderr, "rows %d, ", rows);
    double gap = -1;
    decode_rate(model, rows, std::min(steps, 32), {"profile", false, false, true}, &gap);
  }
  for (int rows : {1, 8, 32, 64}) {
    for (const Mode& mode : modes) {
      double gap = -1;
      const double rate = decode_rate(model, rows, steps, mode, &gap);
      std::printf("rows %2d  %-38s %9.0f tok/s", rows, mode.name, rate);
      if (rows == 1) std::printf("  (%.2f of the floor)", rate / floor);
      if (mode.device_fed) std::printf("  chained gap p50 %.1f us", gap);
      std::printf("\n");
    }
  }
  return 0;
}
