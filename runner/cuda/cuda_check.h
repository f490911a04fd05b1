// CUDA runtime calls checked: a failure throws std::runtime_error naming the call and the
// runtime's own message, so a step's error reaches its requests and the process survives.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace tandem::cuda {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(status));
}

}  // namespace tandem::cuda

#define TANDEM_CUDA_CHECK(call) ::tandem::cuda::check((call), #call)
