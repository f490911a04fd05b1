#include "runner/cuda/step_buffers.h"

#include <algorithm>
#include <cstring>

#include "runner/cuda/cuda_check.h"

namespace tandem::cuda {
namespace {

size_t aligned(size_t n) { return (n + 255) / 256 * 256; }

template <typename T>
T* device_alloc(size_t count) {
  void* p = nullptr;
  TANDEM_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(T)));
  return static_cast<T*>(p);
}

int32_t grown(int32_t have, int64_t need) {
  while (have < need) have *= 2;
  return have;
}

}  // namespace

StepBuffers::StepBuffers(const ModelConfig& config, int32_t rows, int32_t tokens)
    : cfg_(config),
      cap_rows_(std::max(rows, 1)),
      cap_tokens_(std::max(tokens, 1)),
      cap_tables_(std::max(rows, 1) * 64) {
  allocate_device();
  for (StagingSlot& s : slots_) {
    TANDEM_CUDA_CHECK(cudaEventCreate(&s.start));
    TANDEM_CUDA_CHECK(cudaEventCreate(&s.end));
  }
}

StepBuffers::~StepBuffers() {
  free_device();
  for (StagingSlot& s : slots_) {
    cudaFreeHost(s.meta);
    cudaFreeHost(s.tokens);
    cudaFreeHost(s.logits);
    cudaEventDestroy(s.start);
    cudaEventDestroy(s.end);
  }
}

StepBuffers::Layout StepBuffers::compute_layout() const {
  Layout l{};
  size_t at = 0;
  auto region = [&](size_t& offset, size_t bytes) {
    offset = at;
    at += aligned(bytes);
  };
  const auto tok = static_cast<size_t>(cap_tokens_);
  region(l.token, tok * 4);
  region(l.position, tok * 4);
  region(l.table_start, tok * 4);
  region(l.logit_source, tok * 4);
  region(l.sample_rows, static_cast<size_t>(cap_rows_) * sizeof(SampleRow));
  region(l.edits, static_cast<size_t>(cap_edits_) * sizeof(LogitEdit));
  region(l.tables, static_cast<size_t>(cap_tables_) * 4);  // last: copied up to its use
  l.bytes = at;
  return l;
}

void StepBuffers::allocate_device() {
  const int64_t t = cap_tokens_, e = cfg_.n_embd;
  layout_ = compute_layout();
  meta_ = device_alloc<char>(layout_.bytes);
  x = device_alloc<float>(t * e);
  qkv = device_alloc<float>(t * (cfg_.q_dim() + 2 * cfg_.kv_dim()));
  attn = device_alloc<float>(t * cfg_.q_dim());
  proj = device_alloc<float>(t * e);
  ffn = device_alloc<float>(t * cfg_.n_ff);
  last = device_alloc<float>(t * e);
  logits = device_alloc<float>(t * cfg_.n_vocab);
  sampled = device_alloc<int32_t>(cap_rows_);
  scratch = device_alloc<char>(sample_scratch_bytes(cap_rows_, cfg_.n_vocab));
}

void StepBuffers::free_device() {
  for (void* p :
       {static_cast<void*>(meta_), static_cast<void*>(x), static_cast<void*>(qkv),
        static_cast<void*>(attn), static_cast<void*>(proj), static_cast<void*>(ffn),
        static_cast<void*>(last), static_cast<void*>(logits), static_cast<void*>(sampled), scratch})
    cudaFree(p);
}

bool StepBuffers::fits(const StepStaging& s) const {
  return s.n_tokens() <= cap_tokens_ && static_cast<int64_t>(s.sample_rows.size()) <= cap_rows_ &&
         static_cast<int64_t>(s.edits.size()) <= cap_edits_ &&
         static_cast<int64_t>(s.tables.size()) <= cap_tables_;
}

void StepBuffers::grow_device(const StepStaging& s) {
  free_device();
  cap_tokens_ = grown(cap_tokens_, s.n_tokens());
  cap_rows_ = grown(cap_rows_, static_cast<int64_t>(s.sample_rows.size()));
  cap_edits_ = grown(cap_edits_, static_cast<int64_t>(s.edits.size()));
  cap_tables_ = grown(cap_tables_, static_cast<int64_t>(s.tables.size()));
  allocate_device();
}

size_t StepBuffers::pack(const StepStaging& s, int i) {
  StagingSlot& slot = slots_[i];
  const Layout& l = layout_;
  if (slot.meta_bytes < l.bytes) {
    cudaFreeHost(slot.meta);
    slot.meta = nullptr;
    TANDEM_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&slot.meta), l.bytes));
    slot.meta_bytes = l.bytes;
  }
  if (slot.token_capacity < cap_rows_) {
    cudaFreeHost(slot.tokens);
    slot.tokens = nullptr;
    TANDEM_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&slot.tokens), cap_rows_ * 4));
    slot.token_capacity = cap_rows_;
  }
  size_t host_logits = 0;
  for (const HostRow& h : s.host_rows) host_logits += static_cast<size_t>(h.logit_rows);
  host_logits *= static_cast<size_t>(cfg_.n_vocab);
  if (slot.logit_capacity < host_logits) {
    cudaFreeHost(slot.logits);
    slot.logits = nullptr;
    TANDEM_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&slot.logits), host_logits * 4));
    slot.logit_capacity = host_logits;
  }
  auto put = [&](size_t offset, const auto& v) {
    if (!v.empty()) std::memcpy(slot.meta + offset, v.data(), v.size() * sizeof(v[0]));
  };
  put(l.token, s.token);
  put(l.position, s.position);
  put(l.table_start, s.table_start);
  put(l.logit_source, s.logit_source);
  put(l.sample_rows, s.sample_rows);
  put(l.edits, s.edits);
  put(l.tables, s.tables);
  return l.tables + s.tables.size() * 4;
}

TokenMeta StepBuffers::token_meta() const {
  const Layout& l = layout_;
  return TokenMeta{reinterpret_cast<const int32_t*>(meta_ + l.token),
                   reinterpret_cast<const int32_t*>(meta_ + l.position),
                   reinterpret_cast<const int32_t*>(meta_ + l.table_start),
                   reinterpret_cast<const int32_t*>(meta_ + l.tables)};
}

const int32_t* StepBuffers::logit_source() const {
  return reinterpret_cast<const int32_t*>(meta_ + layout_.logit_source);
}
const SampleRow* StepBuffers::sample_rows() const {
  return reinterpret_cast<const SampleRow*>(meta_ + layout_.sample_rows);
}
const LogitEdit* StepBuffers::edits() const {
  return reinterpret_cast<const LogitEdit*>(meta_ + layout_.edits);
}

}  // namespace tandem::cuda
