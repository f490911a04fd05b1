// Where a GPU step's time goes, for CudaExecutorOptions::profile: an event after each kernel
// group's launch, and the time between consecutive events summed per group. Profiling runs
// every step alone (no graph, the stream drained after each), so the figures are the kernels'
// own; it is a measuring tool (bench_gpu_decode prints it), never on in serving.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "runner/cuda/cuda_check.h"

namespace tandem::cuda {

class KernelTimer {
 public:
  explicit KernelTimer(cudaStream_t stream) : stream_(stream) {}
  ~KernelTimer() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  KernelTimer(const KernelTimer&) = delete;
  KernelTimer& operator=(const KernelTimer&) = delete;

  // Starts a step: the origin of its first group's time.
  void start() {
    used_ = 0;
    names_.clear();
    mark(nullptr);
  }
  // The time since the previous mark belongs to `group`.
  void mark(const char* group) {
    if (used_ == events_.size()) {
      cudaEvent_t e = nullptr;
      TANDEM_CUDA_CHECK(cudaEventCreate(&e));
      events_.push_back(e);
    }
    TANDEM_CUDA_CHECK(cudaEventRecord(events_[used_++], stream_));
    names_.push_back(group);
  }
  // After the stream has drained: adds the step's groups to the totals.
  void settle() {
    for (size_t i = 1; i < used_; ++i) {
      float ms = 0;
      TANDEM_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[i - 1], events_[i]));
      ms_[names_[i]] += ms;
    }
    ++steps_;
  }
  // One line per group: milliseconds per step and share of the step.
  std::string report() const {
    double total = 0;
    for (const auto& [name, ms] : ms_) total += ms;
    std::string out;
    char line[160];
    for (const auto& [name, ms] : ms_) {
      std::snprintf(line, sizeof line, "  %-14s %8.1f us/step  %5.1f%%\n", name.c_str(),
                    1000.0 * ms / static_cast<double>(steps_ ? steps_ : 1),
                    total > 0 ? 100.0 * ms / total : 0.0);
      out += line;
    }
    return out;
  }

 private:
  cudaStream_t stream_;
  std::vector<cudaEvent_t> events_;
  size_t used_ = 0;
  std::vector<const char*> names_;
  std::map<std::string, double> ms_;
  uint64_t steps_ = 0;
};

}  // namespace tandem::cuda
