// The GPU backend of the device (issue 19): a StepExecutor that keeps the weights, the paged
// KV cache and the logits on an NVIDIA GPU and runs each step as a stream of kernels, the
// fused sampler included (sampler_kernel.h), so only the sampled token ids come back.
//
// It is asynchronous (device.h's submit/collect): the worker enqueues step N+1 behind step N
// before it reads N's tokens, and a chained decode step takes its input tokens from the
// device memory that N's sampler wrote. A decode step of a given row count is captured once
// as a CUDA graph and replayed. Rows that need their logits on the host (penalties, grammar
// masks, log-probabilities, infill) are sampled there by the CPU Sampler from a copy of their
// logits row, and their successor waits for them (can_chain_on_device is false).
//
// This header needs no CUDA headers: a build without CUDA (TANDEM_HAVE_CUDA unset) links
// cuda_absent.cpp, whose make_cuda_executor throws CudaUnavailable.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "runner/device/device.h"
#include "runner/device/kv_cache.h"
#include "runner/model/model.h"

namespace tandem {

class TokenPieces;

struct CudaExecutorOptions {
  int32_t context_length = 0;                  // --ctx-size; 0: the model's
  int64_t kv_tokens = 0;                       // KV capacity in tokens; 0: kv_budget_bytes
  int64_t kv_budget_bytes = int64_t{4} << 30;  // used when kv_tokens is 0
  KvType kv_type = KvType::kF16;               // f16, bf16 or f32 (q8_0 is CPU-only)
  std::vector<int32_t> eog_ids;                // banned by ignore_eos and min_tokens
  int32_t max_sequences = 64;                  // rows per step, at most (buffers' first size)
  int32_t max_step_tokens = 512;               // tokens per step, at most (likewise)
  bool graphs = true;                          // replay decode steps as CUDA graphs
  // Start each kernel while the one before it finishes (programmatic dependent launch,
  // runner/cuda/dependent_launch.cuh); off only to measure what it gives.
  bool dependent_launch = true;
  // Time each kernel group (every step alone, no graphs) and print the breakdown to
  // stderr when the executor goes: a measuring tool for bench_gpu_decode.
  bool profile = false;
  int device = 0;  // CUDA device ordinal
  // For the host Sampler's infill step (infill rows are sampled on the host): each token's
  // piece (null: no prefix merging) and the end-of-turn id (-1: the first of eog_ids).
  std::shared_ptr<const TokenPieces> token_pieces;
  int32_t eot_id = -1;
};

// Thrown when the process cannot use a GPU: a build without CUDA, no driver, no device.
class CudaUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Why --device cuda cannot run here, in one line; empty when it can.
std::string cuda_unavailable_reason();

// The device's name and memory, for startup lines ("NVIDIA H100 80GB HBM3, 79 GiB").
std::string cuda_device_description(int device = 0);

// Uploads the model and allocates the KV cache on the GPU. Throws CudaUnavailable, or
// std::invalid_argument for an option the GPU executor cannot honour (q8_0 KV, a head size
// over 256), naming it.
std::unique_ptr<StepExecutor> make_cuda_executor(std::shared_ptr<const Model> model,
                                                 CudaExecutorOptions options);

}  // namespace tandem
