// make_cuda_executor in a build without CUDA (TANDEM_HAVE_CUDA unset): --device cuda is
// refused with one line, and the rest of tandem runs on the CPU as before.
#include "runner/cuda/cuda_executor.h"

#if !defined(TANDEM_HAVE_CUDA)

namespace tandem {

std::string cuda_unavailable_reason() {
  return "this tandem was built without CUDA (nvcc was not found when it was configured)";
}

std::string cuda_device_description(int) { return {}; }

std::unique_ptr<StepExecutor> make_cuda_executor(std::shared_ptr<const Model>,
                                                 CudaExecutorOptions) {
  throw CudaUnavailable("--device cuda: " + cuda_unavailable_reason());
}

}  // namespace tandem

#endif
