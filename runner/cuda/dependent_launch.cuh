// Programmatic dependent launch (Hopper): a kernel started with launch_dependent() may begin
// while the kernel before it on the stream still runs, so its launch and its prologue
// (weights fetched into L2, the step's metadata, RoPE angles) hide behind that kernel's
// tail instead of adding to the step. The rules every such kernel keeps:
// - it calls dependents_may_launch() first, so the kernel after it may start in turn;
// - before wait_for_previous_kernels() it reads only what no kernel of the step writes
//   (weights, the step's metadata uploaded before the step's first kernel) and writes
//   nothing: the kernels before it may still be running;
// - after it, every earlier kernel of the stream has finished and its writes are visible.
// A kernel launched without the attribute (or on a GPU before Hopper) runs as usual, and
// both calls do nothing. CUDA code only.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "runner/cuda/cuda_check.h"

namespace tandem::cuda {

__device__ inline void dependents_may_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ inline void wait_for_previous_kernels() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Whether launch_dependent() asks for the overlap (forward_kernels.h's
// set_dependent_launch; on by default).
bool dependent_launch_enabled();

template <typename... Params, typename... Args>
void launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream,
                      Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = dependent_launch_enabled() ? 1 : 0;
  config.attrs = attribute;
  config.numAttrs = 1;
  TANDEM_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

}  // namespace tandem::cuda
