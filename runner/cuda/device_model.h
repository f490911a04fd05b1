// A Model's weights in GPU memory, uploaded once (cuda_executor.h). F32, F16 and BF16
// matrices keep their stored type; every other GGUF type is widened to F32 exactly at
// upload (the GPU kernels read three element types). Norm vectors and biases are F32,
// the RoPE frequencies F64 (one table for global layers, one for sliding-window ones).
#pragma once

#include <cstdint>
#include <vector>

#include "runner/cuda/forward_kernels.h"
#include "runner/model/model.h"

namespace tandem::cuda {

struct DeviceLayer {
  const float* attn_norm = nullptr;
  DeviceMatrix qkv;  // [q | k | v] rows
  const float* qkv_bias = nullptr;
  const float* q_norm = nullptr;
  const float* k_norm = nullptr;
  DeviceMatrix attn_out;
  const float* post_attn_norm = nullptr;
  const float* ffn_norm = nullptr;
  const float* post_ffn_norm = nullptr;
  DeviceMatrix gate_up;  // [gate | up] rows
  DeviceMatrix down;
};

class DeviceModel {
 public:
  // served_context picks the RoPE factors, as ForwardPass does.
  DeviceModel(const Model& model, int32_t served_context);
  ~DeviceModel();
  DeviceModel(const DeviceModel&) = delete;
  DeviceModel& operator=(const DeviceModel&) = delete;

  const std::vector<DeviceLayer>& layers() const { return layers_; }
  const DeviceMatrix& embedding() const { return embedding_; }
  const DeviceMatrix& output() const { return output_; }
  const float* output_norm() const { return output_norm_; }
  const double* rope_frequencies(bool local) const { return local ? rope_local_ : rope_global_; }
  size_t bytes() const { return bytes_; }

 private:
  void* upload(const void* data, size_t bytes);
  const float* upload_vector(const std::vector<float>& v);
  DeviceMatrix upload_matrix(const std::vector<kernels::WeightSource>& sources);
  DeviceMatrix upload_scaled_int8(const std::vector<kernels::WeightSource>& sources);
  const double* upload_frequencies(const Model& model, const RopeParams& p, int32_t served);

  std::vector<void*> allocations_;
  size_t bytes_ = 0;
  std::vector<DeviceLayer> layers_;
  DeviceMatrix embedding_, output_;
  const float* output_norm_ = nullptr;
  const double* rope_global_ = nullptr;
  const double* rope_local_ = nullptr;
};

}  // namespace tandem::cuda
