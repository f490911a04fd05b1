// The GPU suite's shared helpers: every test skips, saying why, where no GPU can be used
// (a machine without one, such as CI's), and runs on the device machine (docs/gpu.md).
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "runner/cuda/cuda_check.h"
#include "runner/cuda/cuda_executor.h"

#define TANDEM_REQUIRE_GPU()                                                       \
  do {                                                                             \
    if (const std::string why = ::tandem::cuda_unavailable_reason(); !why.empty()) \
      GTEST_SKIP() << "no GPU: " << why;                                           \
  } while (0)

namespace tandem::testing {

// Device memory, freed on scope exit: `bytes` of it, or a copy of a vector's contents.
struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(size_t bytes) {
    TANDEM_CUDA_CHECK(cudaMalloc(&ptr, std::max<size_t>(bytes, 1)));
  }
  template <typename T>
  explicit DeviceBuffer(const std::vector<T>& v) : DeviceBuffer(v.size() * sizeof(T)) {
    TANDEM_CUDA_CHECK(cudaMemcpy(ptr, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
  // The first n elements, copied back.
  template <typename T>
  std::vector<T> read(size_t n) const {
    std::vector<T> host(n);
    TANDEM_CUDA_CHECK(cudaMemcpy(host.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
};

}  // namespace tandem::testing
